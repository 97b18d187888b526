//! Deciding one subject over one or more programs.
//!
//! The cost of a decision is a walk over the bytes of the value a tool's
//! matcher reads, not a loop over rules:
//!
//! 1. The tool's record is found by hash.
//! 2. The carve-out matcher is walked once; each carve-out that matches
//!    raises its list's threshold to its source's rank.
//! 3. The rule matcher is walked once. Every candidate is a rule id; ids are
//!    assigned in list order (deny, then ask, then allow), so "the first
//!    firing rule of a list" is the smallest accepted id of that list, and a
//!    candidate no smaller than the best found so far is skipped before it is
//!    verified. A candidate is accepted unless a carve-out reached it (its
//!    source's rank is at most the threshold), a grant set shadows it, or it
//!    is a bare ask skipped for a confined call.
//! 4. Precedence is read off the three bests: deny, ask, confined, allow,
//!    default.
//!
//! A field matcher is a forward trie over the value's bytes whose nodes carry
//! the rules whose literal equals the path (exact) and, for patterns with a
//! `*`, a reverse trie over the value's last bytes keyed by the literal after
//! the last `*`. Globs with middle pieces are the field matcher's inner
//! record, searched once by one automaton (`inner`). Patterns that lower to
//! regular expressions are DFAs walked once each.

//!
//! Public only for the condition programs the compiler crate evaluates over
//! the same walkers and budget; the items are that crate's interface, not an
//! embedder's, so the doc-comment lint is lifted here.
#![allow(missing_docs)]

use super::program::*;
use regex_automata::dfa::Automaton;
use regex_automata::{Anchored, Input};

/// What receives the candidates of a walk.
pub trait Sink {
    /// Whether a candidate `id` could still change the result; `false` skips
    /// its verification.
    fn wants(&self, id: u32) -> bool;
    /// A candidate whose pattern matched.
    fn offer(&mut self, id: u32);
    /// Spends `units` of work; `false` when the budget is gone, which stops
    /// the walk. Sinks without a budget never run out.
    fn spend(&mut self, _units: u64) -> bool {
        true
    }
    /// Given an id the sink does not want, the smallest larger id it might
    /// want, or `None` when it wants no larger id. Payload lists are sorted
    /// by id, so a walk skips to it by binary search instead of visiting
    /// every candidate of a list whose first rule is already found.
    fn next_wanted(&self, id: u32) -> Option<u32> {
        id.checked_add(1)
    }
}

/// The position in the sorted id list `ids(k)`, `k < n`, of the first id no
/// smaller than `target`, searching from `from`.
pub(super) fn seek(from: u32, n: u32, target: u32, ids: impl Fn(u32) -> u32) -> u32 {
    let (mut lo, mut hi) = (from, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if ids(mid) < target {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The work a decision may do before it gives up and fails closed.
///
/// On tables the compiler wrote, a decision visits each payload, edge and
/// verification piece at most once per forward node of the walk, so its work
/// is bounded by the size of the tables plus the square of the value's
/// length; the budget is a multiple of that. Only tables that were damaged
/// and resealed (overlapping lists) can exhaust it, and then the subject is
/// denied rather than decided on a walk of unbounded cost.
#[derive(Debug)]
pub struct Budget {
    left: std::cell::Cell<u64>,
    out: std::cell::Cell<bool>,
}

impl Budget {
    pub fn new(words: u64, value_len: u64) -> Budget {
        let v = value_len.saturating_add(1);
        Budget {
            left: std::cell::Cell::new(
                words
                    .saturating_mul(8)
                    .saturating_add(v.saturating_mul(v).saturating_mul(4))
                    .saturating_add(4096),
            ),
            out: std::cell::Cell::new(false),
        }
    }

    pub fn spend(&self, units: u64) -> bool {
        let left = self.left.get();
        if left < units {
            self.left.set(0);
            self.out.set(true);
            return false;
        }
        self.left.set(left - units);
        true
    }

    /// Whether the budget ran out.
    pub fn exhausted(&self) -> bool {
        self.out.get()
    }
}

/// Calls a matcher kind for a specifier the compiler could not lower.
pub type Callback<'c> = &'c dyn Fn(u32, &str, &str) -> bool;

impl Program<'_> {
    /// Walks the field matcher at `fm` over `value`.
    pub fn walk(&self, fm: u32, tool: u32, value: &str, sink: &mut impl Sink, cb: Callback<'_>) {
        self.view().walk(&self.dfas, fm, tool, value, sink, cb);
    }

    /// Offers every id of the always-firing list of tool record `tool`.
    pub fn offer_always(&self, tool: u32, sink: &mut impl Sink) {
        self.view().offer_always(tool, sink);
    }
}

/// A node record, as laid out in `program`.
type Node = [u32; NODE_WORDS as usize];

// The destructuring in `fields` follows the layout constants.
const _: () = assert!(
    NODE_WORDS == 8 && N_EDGES == 0 && N_TARGETS == 2 && N_PAY == 3 && N_SUB == 5 && N_TAIL == 6
);

/// A node record's fields.
#[derive(Clone, Copy)]
struct Fields {
    labels: u32,
    n_edges: u32,
    targets: u32,
    pay: u32,
    n_pay: u32,
    sub: u32,
    tail: u32,
    n_tail: u32,
}

#[inline]
fn fields(node: &Node) -> Fields {
    let [labels, n_edges, targets, pay, n_pay, sub, tail, n_tail] = *node;
    Fields {
        labels,
        n_edges,
        targets,
        pay,
        n_pay,
        sub,
        tail,
        n_tail,
    }
}

impl<'p> View<'p> {
    /// Walks the field matcher at `fm` over `value`: its trie, its callbacks
    /// and its DFAs.
    pub fn walk(
        &self,
        dfas: &[Dfa<'_>],
        fm: u32,
        tool: u32,
        value: &str,
        sink: &mut impl Sink,
        cb: Callback<'_>,
    ) {
        let at = fm as usize;
        let Some(rec) = self.words.get(at..at.wrapping_add(FM_WORDS as usize)) else {
            return;
        };
        let v = value.as_bytes();
        let field = |i: u32| rec.get(i as usize).copied().unwrap_or(NONE);
        let root = field(FM_ROOT);
        if root != NONE {
            self.walk_trie(root, v, sink);
        }
        let inner = field(FM_INNER);
        if inner != NONE {
            self.walk_inner(inner, v, sink);
        }
        let (cb_off, cb_len) = (field(FM_CB), field(FM_CB + 1));
        if cb_len != 0 && cb_len != NONE {
            for k in 0..cb_len.min(self.words.len() as u32) {
                if !sink.spend(1) {
                    return;
                }
                let at = cb_off.wrapping_add(k.wrapping_mul(3));
                let id = self.w(at);
                if sink.wants(id) {
                    let spec = std::str::from_utf8(
                        self.b(self.w(at.wrapping_add(1)), self.w(at.wrapping_add(2))),
                    )
                    .unwrap_or("");
                    if cb(tool, spec, value) {
                        sink.offer(id);
                    }
                }
            }
        }
        let (dfa_off, dfa_len) = (field(FM_DFA), field(FM_DFA + 1));
        if dfa_len != 0 && dfa_len != NONE {
            for k in 0..dfa_len.min(self.words.len() as u32) {
                if !sink.spend(v.len() as u64 + 1) {
                    return;
                }
                let at = dfa_off.wrapping_add(k.wrapping_mul(2));
                let map = self.w(at.wrapping_add(1));
                match dfas.get(self.w(at) as usize) {
                    Some(Dfa::Owned(d)) => self.run_dfa(d, map, v, sink),
                    Some(Dfa::Borrowed(d)) => self.run_dfa(d, map, v, sink),
                    None => {}
                }
            }
        }
    }

    fn run_dfa<A: Automaton>(&self, dfa: &A, map: u32, v: &[u8], sink: &mut impl Sink) {
        let input = Input::new(v).anchored(Anchored::Yes);
        let Ok(mut state) = dfa.start_state_forward(&input) else {
            return;
        };
        for &b in v {
            state = dfa.next_state(state, b);
            if dfa.is_dead_state(state) || dfa.is_quit_state(state) {
                return;
            }
        }
        state = dfa.next_eoi_state(state);
        if !dfa.is_match_state(state) {
            return;
        }
        for i in 0..dfa.match_len(state) {
            if !sink.spend(1) {
                return;
            }
            let pid = dfa.match_pattern(state, i).as_u32();
            let id = self.w(map.wrapping_add(pid));
            if sink.wants(id) {
                sink.offer(id);
            }
        }
    }

    /// Offers every id of the always-firing list of tool record `tool`.
    pub fn offer_always(&self, tool: u32, sink: &mut impl Sink) {
        let Some(rec) = self.tool(tool) else { return };
        let (off, n) = match rec.get(T_ALWAYS as usize..T_ALWAYS as usize + 2) {
            Some(&[off, n]) => (off as usize, n as usize),
            _ => return,
        };
        if n == 0 {
            return;
        }
        let Some(ids) = self.words.get(off..off.saturating_add(n)) else {
            return;
        };
        let mut k = 0;
        while let Some(&id) = ids.get(k) {
            if !sink.spend(1) {
                return;
            }
            k += 1;
            if sink.wants(id) {
                sink.offer(id);
            } else {
                match sink.next_wanted(id) {
                    Some(target) => {
                        k = k + ids
                            .get(k..)
                            .unwrap_or_default()
                            .partition_point(|&x| x < target)
                    }
                    None => return,
                }
            }
        }
    }

    #[inline]
    fn node(&self, n: u32) -> Option<&'p Node> {
        let at = n as usize;
        self.words
            .get(at..at.checked_add(NODE_WORDS as usize)?)?
            .try_into()
            .ok()
    }

    /// The target of the edge labelled `byte`, or `None`.
    #[inline]
    fn child(&self, node: &Node, byte: u8) -> Option<&'p Node> {
        let f = fields(node);
        if f.n_edges == 0 {
            return None;
        }
        let labels = self.b(f.labels, f.n_edges);
        // Labels are bytes, so a short list is one tight scan and a long one
        // a vectorised search.
        let k = if labels.len() <= 16 {
            labels.iter().position(|&l| l == byte)?
        } else {
            memchr::memchr(byte, labels)?
        };
        let target = self.words.get((f.targets as usize).checked_add(k)?)?;
        self.node(*target)
    }

    /// The bytes a walk consumes after the edge that led to `node`.
    #[inline]
    fn tail(&self, node: &Node) -> &'p [u8] {
        let f = fields(node);
        if f.n_tail == 0 {
            return &[];
        }
        self.b(f.tail, f.n_tail)
    }

    pub(super) fn walk_trie(&self, root: u32, v: &[u8], sink: &mut impl Sink) {
        let Some(mut node) = self.node(root) else {
            return;
        };
        self.visit_sub(node, v, 0, sink);
        let mut i = 0;
        while let Some(&b) = v.get(i) {
            if !sink.spend(1) {
                return;
            }
            let Some(next) = self.child(node, b) else {
                return;
            };
            node = next;
            i += 1;
            let tail = self.tail(node);
            if !tail.is_empty() {
                if v.get(i..i + tail.len()) != Some(tail) || !sink.spend(tail.len() as u64) {
                    return;
                }
                i += tail.len();
            }
            self.visit_sub(node, v, i, sink);
        }
        self.emit(node, v, 0, 0, sink);
    }

    /// The patterns with a `*` whose literal before the first `*` is
    /// `v[..plen]`: walk their reverse trie over the end of `v`.
    #[inline]
    fn visit_sub(&self, node: &Node, v: &[u8], plen: usize, sink: &mut impl Sink) {
        let sub = fields(node).sub;
        if sub == NONE {
            return;
        }
        let Some(mut r) = self.node(sub) else { return };
        self.emit(r, v, plen, 0, sink);
        let mut j = v.len();
        while j > plen {
            if !sink.spend(1) {
                return;
            }
            j -= 1;
            let Some(&b) = v.get(j) else { return };
            let Some(next) = self.child(r, b) else { return };
            r = next;
            let tail = self.tail(r);
            if !tail.is_empty() {
                // The tail is in the order the walk consumes it: backwards.
                if j < plen + tail.len() || !sink.spend(tail.len() as u64) {
                    return;
                }
                let before = v.get(j - tail.len()..j).unwrap_or_default();
                if !before.iter().rev().eq(tail.iter()) {
                    return;
                }
                j -= tail.len();
            }
            self.emit(r, v, plen, v.len() - j, sink);
        }
    }

    /// Offers the payloads of `node`; `v[plen..len - slen]` is the window
    /// their middle pieces must be found in. Most nodes carry none, so the
    /// check stays inline and the walk over payloads does not.
    #[inline(always)]
    fn emit(&self, node: &Node, v: &[u8], plen: usize, slen: usize, sink: &mut impl Sink) {
        let Fields {
            pay: off, n_pay: n, ..
        } = fields(node);
        if n != 0 {
            self.emit_payloads(off, n, v, plen, slen, sink);
        }
    }

    #[inline(never)]
    fn emit_payloads(
        &self,
        off: u32,
        n: u32,
        v: &[u8],
        plen: usize,
        slen: usize,
        sink: &mut impl Sink,
    ) {
        let at = off as usize;
        let Some(pay) = (n as usize)
            .checked_mul(2)
            .and_then(|l| self.words.get(at..at.checked_add(l)?))
        else {
            return;
        };
        let mut k = 0;
        while let (Some(&id), Some(&verify)) = (pay.get(2 * k), pay.get(2 * k + 1)) {
            if !sink.spend(1) {
                return;
            }
            k += 1;
            if !sink.wants(id) {
                match sink.next_wanted(id) {
                    Some(target) => {
                        k = seek(k as u32, n, target, |x| {
                            pay.get(2 * x as usize).copied().unwrap_or(NONE)
                        }) as usize
                    }
                    None => return,
                }
                continue;
            }
            if verify != NONE {
                let window = v.get(plen..v.len().saturating_sub(slen)).unwrap_or(&[]);
                match self.verify(verify, window, sink) {
                    Some(true) => {}
                    Some(false) => continue,
                    None => return,
                }
            }
            sink.offer(id);
        }
    }

    /// Whether the middle pieces at `rec` occur in `window`, in order,
    /// left-most, without overlapping; `None` when the budget ran out. Each
    /// search is charged the bytes it may scan.
    fn verify(&self, rec: u32, window: &[u8], sink: &mut impl Sink) -> Option<bool> {
        let at = rec as usize;
        let Some(&n) = self.words.get(at) else {
            return Some(false);
        };
        let Some(list) = (n as usize)
            .checked_mul(2)
            .and_then(|l| self.words.get(at + 1..at.checked_add(1 + l)?))
        else {
            return Some(false);
        };
        let mut pos = 0usize;
        for piece in list.chunks_exact(2) {
            let (off, len) = (
                piece.first().copied().unwrap_or(0),
                piece.get(1).copied().unwrap_or(0),
            );
            let piece = self.b(off, len);
            let Some(rest) = window.get(pos..) else {
                return Some(false);
            };
            if !sink.spend(rest.len() as u64 + 1) {
                return None;
            }
            match memchr::memmem::find(rest, piece) {
                Some(i) => pos += i + piece.len(),
                None => return Some(false),
            }
        }
        Some(true)
    }
}

/// The carve-out pass: the highest rank of a matching carve-out, per list.
pub struct CarveSink<'p, 'b> {
    pub view: View<'p>,
    pub max: &'b mut [Option<i64>; 3],
    pub budget: &'b Budget,
}

impl Sink for CarveSink<'_, '_> {
    fn wants(&self, id: u32) -> bool {
        id >= self.view.n_fire
    }
    fn spend(&mut self, units: u64) -> bool {
        self.budget.spend(units)
    }
    fn offer(&mut self, id: u32) {
        let r = self.view.rule(id);
        if r.flags & F_CARVE == 0 {
            return;
        }
        let rank = self.view.source_rank(r.source);
        if let Some(m) = self.max.get_mut(r.list().index()) {
            *m = Some(m.map_or(rank, |x| x.max(rank)));
        }
    }
}

/// A grant set whose allow list fires for the subject: its rank and source
/// name, which shadow the ask rules of other sources ranked no higher.
#[derive(Clone, Copy, Debug)]
pub struct Allowing<'s> {
    pub rank: i64,
    pub name: &'s str,
}

/// The rule pass: the first accepted rule of each list.
pub struct RuleSink<'p, 'b> {
    pub view: View<'p>,
    /// The call's tool, which a server-bounded glob's bound is checked on.
    pub tool: &'b str,
    pub budget: &'b Budget,
    pub carve: &'b [Option<i64>; 3],
    pub allowing: &'b [Allowing<'b>],
    pub confined: bool,
    pub want: [bool; 3],
    pub best: [u32; 3],
    pub confined_skip: u32,
}

impl<'p, 'b> RuleSink<'p, 'b> {
    pub fn new(
        view: View<'p>,
        tool: &'b str,
        budget: &'b Budget,
        carve: &'b [Option<i64>; 3],
        allowing: &'b [Allowing<'b>],
        confined: bool,
        want: [bool; 3],
    ) -> RuleSink<'p, 'b> {
        RuleSink {
            view,
            tool,
            budget,
            carve,
            allowing,
            confined,
            want,
            best: [NONE; 3],
            confined_skip: NONE,
        }
    }

    fn shadowed(&self, source: u32) -> bool {
        if self.allowing.is_empty() {
            return false;
        }
        let rank = self.view.source_rank(source);
        let name = self.view.source_name(source);
        self.allowing
            .iter()
            .any(|a| a.name.as_bytes() != name && a.rank >= rank)
    }
}

impl Sink for RuleSink<'_, '_> {
    #[inline]
    fn spend(&mut self, units: u64) -> bool {
        self.budget.spend(units)
    }

    fn next_wanted(&self, id: u32) -> Option<u32> {
        // Ids run deny, ask, allow: past the best of a list, the next id
        // worth a look is the first of a later list still wanted.
        let v = &self.view;
        let starts = [0, v.n_deny, v.n_deny.saturating_add(v.n_ask)];
        let l = if id >= v.n_fire { 3 } else { v.list_of(id) };
        (l + 1..3).find_map(|m| {
            let start = *starts.get(m)?;
            let wanted = self.want.get(m).copied().unwrap_or(false)
                && self.best.get(m).is_some_and(|&b| b > start);
            wanted.then_some(start.max(id.saturating_add(1)))
        })
    }

    #[inline]
    fn wants(&self, id: u32) -> bool {
        if id >= self.view.n_fire {
            return false;
        }
        let l = self.view.list_of(id);
        matches!((self.want.get(l), self.best.get(l)), (Some(true), Some(&b)) if id < b)
    }

    #[inline]
    fn offer(&mut self, id: u32) {
        let r = self.view.rule(id);
        let l = self.view.list_of(id);
        if r.carvable() {
            if let Some(Some(threshold)) = self.carve.get(l) {
                if self.view.source_rank(r.source) <= *threshold {
                    return;
                }
            }
        }
        // Only an allow rule is bounded: a flag on a damaged deny or ask
        // rule must not make it skip a call.
        if l == 2 && r.flags & F_SERVER != 0 {
            let glob = std::str::from_utf8(self.view.rule_tool(id)).unwrap_or("");
            if !crate::glob::server_bounded(glob, self.tool) {
                return;
            }
        }
        if l == 1 {
            if self.shadowed(r.source) {
                return;
            }
            if self.confined && r.bare() {
                self.confined_skip = self.confined_skip.min(id);
                return;
            }
        }
        if let Some(b) = self.best.get_mut(l) {
            *b = (*b).min(id);
        }
    }
}
