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
//! the last `*`; middle pieces, when a glob has any, are verified. Patterns
//! that lower to regular expressions are DFAs walked once each.

use super::program::*;
use regex_automata::dfa::Automaton;
use regex_automata::{Anchored, Input};

/// What receives the candidates of a walk.
pub(crate) trait Sink {
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
fn seek(from: u32, n: u32, target: u32, ids: impl Fn(u32) -> u32) -> u32 {
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
pub(crate) struct Budget {
    left: std::cell::Cell<u64>,
    out: std::cell::Cell<bool>,
}

impl Budget {
    pub(crate) fn new(words: u64, value_len: u64) -> Budget {
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

    pub(crate) fn spend(&self, units: u64) -> bool {
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
    pub(crate) fn exhausted(&self) -> bool {
        self.out.get()
    }
}

/// Calls a matcher kind for a specifier the compiler could not lower.
pub(crate) type Callback<'c> = &'c dyn Fn(u32, &str, &str) -> bool;

impl Program<'_> {
    /// Walks the field matcher at `fm` over `value`.
    pub(crate) fn walk(
        &self,
        fm: u32,
        tool: u32,
        value: &str,
        sink: &mut impl Sink,
        cb: Callback<'_>,
    ) {
        if fm == NONE {
            return;
        }
        let v = value.as_bytes();
        let root = self.w(fm.wrapping_add(FM_ROOT));
        if root != NONE {
            self.walk_trie(root, v, sink);
        }
        let cb_off = self.w(fm.wrapping_add(FM_CB));
        let cb_len = self.w(fm.wrapping_add(FM_CB + 1));
        for k in 0..cb_len.min(self.n_words()) {
            if !sink.spend(1) {
                return;
            }
            let at = cb_off.wrapping_add(k.wrapping_mul(3));
            let id = self.w(at);
            if sink.wants(id) {
                let spec = self.s(self.w(at.wrapping_add(1)), self.w(at.wrapping_add(2)));
                if cb(tool, spec, value) {
                    sink.offer(id);
                }
            }
        }
        let dfa_off = self.w(fm.wrapping_add(FM_DFA));
        let dfa_len = self.w(fm.wrapping_add(FM_DFA + 1));
        for k in 0..dfa_len.min(self.n_words()) {
            if !sink.spend(v.len() as u64 + 1) {
                return;
            }
            let at = dfa_off.wrapping_add(k.wrapping_mul(2));
            let map = self.w(at.wrapping_add(1));
            match self.dfas.get(self.w(at) as usize) {
                Some(Dfa::Owned(d)) => self.run_dfa(d, map, v, sink),
                Some(Dfa::Borrowed(d)) => self.run_dfa(d, map, v, sink),
                None => {}
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

    #[inline]
    fn child(&self, node: u32, byte: u8) -> u32 {
        let off = self.w(node.wrapping_add(N_EDGES));
        let n = self.w(node.wrapping_add(N_EDGES + 1));
        let b = u32::from(byte);
        if n <= 8 {
            for k in 0..n {
                let at = off.wrapping_add(k.wrapping_mul(2));
                let label = self.w(at);
                if label == b {
                    return self.w(at.wrapping_add(1));
                }
                if label > b {
                    return NONE;
                }
            }
            return NONE;
        }
        let (mut lo, mut hi) = (0u32, n.min(256));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let at = off.wrapping_add(mid.wrapping_mul(2));
            let label = self.w(at);
            if label == b {
                return self.w(at.wrapping_add(1));
            }
            if label < b {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        NONE
    }

    fn walk_trie(&self, root: u32, v: &[u8], sink: &mut impl Sink) {
        let mut node = root;
        self.visit_sub(node, v, 0, sink);
        for (i, &b) in v.iter().enumerate() {
            if !sink.spend(1) {
                return;
            }
            node = self.child(node, b);
            if node == NONE {
                return;
            }
            self.visit_sub(node, v, i + 1, sink);
        }
        self.emit(node, v, 0, 0, sink);
    }

    /// The patterns with a `*` whose literal before the first `*` is
    /// `v[..plen]`: walk their reverse trie over the end of `v`.
    #[inline]
    fn visit_sub(&self, node: u32, v: &[u8], plen: usize, sink: &mut impl Sink) {
        let sub = self.w(node.wrapping_add(N_SUB));
        if sub == NONE {
            return;
        }
        self.emit(sub, v, plen, 0, sink);
        let mut r = sub;
        let mut j = v.len();
        while j > plen {
            if !sink.spend(1) {
                return;
            }
            j -= 1;
            let Some(&b) = v.get(j) else { return };
            r = self.child(r, b);
            if r == NONE {
                return;
            }
            self.emit(r, v, plen, v.len() - j, sink);
        }
    }

    /// Offers the payloads of `node`; `v[plen..len - slen]` is the window
    /// their middle pieces must be found in.
    #[inline]
    fn emit(&self, node: u32, v: &[u8], plen: usize, slen: usize, sink: &mut impl Sink) {
        let off = self.w(node.wrapping_add(N_PAY));
        let n = self.w(node.wrapping_add(N_PAY + 1)).min(self.n_words());
        let id_at = |k: u32| self.w(off.wrapping_add(k.wrapping_mul(2)));
        let mut k = 0;
        while k < n {
            if !sink.spend(1) {
                return;
            }
            let at = off.wrapping_add(k.wrapping_mul(2));
            let id = self.w(at);
            k += 1;
            if !sink.wants(id) {
                match sink.next_wanted(id) {
                    Some(target) => k = seek(k, n, target, id_at),
                    None => return,
                }
                continue;
            }
            let verify = self.w(at.wrapping_add(1));
            if verify != NONE {
                let window = v.get(plen..v.len().saturating_sub(slen)).unwrap_or(&[]);
                if !sink.spend(u64::from(self.w(verify).min(self.n_words())))
                    || !self.verify(verify, window)
                {
                    continue;
                }
            }
            sink.offer(id);
        }
    }

    /// Whether the middle pieces at `rec` occur in `window`, in order,
    /// left-most, without overlapping.
    fn verify(&self, rec: u32, window: &[u8]) -> bool {
        let n = self.w(rec);
        let mut pos = 0usize;
        for k in 0..n.min(self.n_words()) {
            let at = rec.wrapping_add(1).wrapping_add(k.wrapping_mul(2));
            let piece = self.b(self.w(at), self.w(at.wrapping_add(1)));
            let Some(rest) = window.get(pos..) else {
                return false;
            };
            match memchr::memmem::find(rest, piece) {
                Some(i) => pos += i + piece.len(),
                None => return false,
            }
        }
        true
    }

    /// Offers every id of the always-firing list of tool record `tool`.
    pub(crate) fn offer_always(&self, tool: u32, sink: &mut impl Sink) {
        let at = self.tool_at(tool).wrapping_add(T_ALWAYS);
        let off = self.w(at);
        let n = self.w(at.wrapping_add(1)).min(self.n_words());
        let id_at = |k: u32| self.w(off.wrapping_add(k));
        let mut k = 0;
        while k < n {
            if !sink.spend(1) {
                return;
            }
            let id = id_at(k);
            k += 1;
            if sink.wants(id) {
                sink.offer(id);
            } else {
                match sink.next_wanted(id) {
                    Some(target) => k = seek(k, n, target, id_at),
                    None => return,
                }
            }
        }
    }
}

/// The carve-out pass: the highest rank of a matching carve-out, per list.
pub(crate) struct CarveSink<'p, 'a> {
    pub prog: &'p Program<'a>,
    pub max: &'p mut [Option<i64>; 3],
    pub budget: &'p Budget,
}

impl Sink for CarveSink<'_, '_> {
    fn wants(&self, id: u32) -> bool {
        id >= self.prog.n_fire() && id < self.prog.n_rules()
    }
    fn spend(&mut self, units: u64) -> bool {
        self.budget.spend(units)
    }
    fn offer(&mut self, id: u32) {
        let r = self.prog.rule(id);
        let rank = self.prog.source_rank(r.source);
        if let Some(m) = self.max.get_mut(r.list().index()) {
            *m = Some(m.map_or(rank, |x| x.max(rank)));
        }
    }
}

/// A grant set whose allow list fires for the subject: its rank and source
/// name, which shadow the ask rules of other sources ranked no higher.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Allowing<'s> {
    pub rank: i64,
    pub name: &'s str,
}

/// The rule pass: the first accepted rule of each list.
pub(crate) struct RuleSink<'p, 'a> {
    pub prog: &'p Program<'a>,
    pub budget: &'p Budget,
    pub carve: &'p [Option<i64>; 3],
    pub allowing: &'p [Allowing<'p>],
    pub confined: bool,
    pub want: [bool; 3],
    pub best: [u32; 3],
    pub confined_skip: u32,
}

impl<'p, 'a> RuleSink<'p, 'a> {
    pub(crate) fn new(
        prog: &'p Program<'a>,
        budget: &'p Budget,
        carve: &'p [Option<i64>; 3],
        allowing: &'p [Allowing<'p>],
        confined: bool,
        want: [bool; 3],
    ) -> RuleSink<'p, 'a> {
        RuleSink {
            prog,
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
        let rank = self.prog.source_rank(source);
        let name = self.prog.source_name(source);
        self.allowing
            .iter()
            .any(|a| a.name != name && a.rank >= rank)
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
        let nd = self.prog.h(H_N_DENY);
        let na = self.prog.h(H_N_ASK);
        let starts = [0, nd, nd.saturating_add(na)];
        let l = if id >= self.prog.n_fire() {
            3
        } else {
            self.prog.list_of(id)
        };
        (l + 1..3).find_map(|m| {
            let start = *starts.get(m)?;
            let wanted = self.want.get(m).copied().unwrap_or(false)
                && self.best.get(m).is_some_and(|&b| b > start);
            wanted.then_some(start.max(id.saturating_add(1)))
        })
    }

    #[inline]
    fn wants(&self, id: u32) -> bool {
        if id >= self.prog.n_fire() {
            return false;
        }
        let l = self.prog.list_of(id);
        matches!((self.want.get(l), self.best.get(l)), (Some(true), Some(&b)) if id < b)
    }

    #[inline]
    fn offer(&mut self, id: u32) {
        let r = self.prog.rule(id);
        let l = self.prog.list_of(id);
        if r.carvable() {
            if let Some(Some(threshold)) = self.carve.get(l) {
                if self.prog.source_rank(r.source) <= *threshold {
                    return;
                }
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
