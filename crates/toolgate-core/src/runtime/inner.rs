//! The `Inner` strategy: globs whose literal pieces float between `*`s.
//!
//! A glob `P*M1*…*Mk*S` with at least one non-empty middle piece is not a
//! path in a trie: its middle pieces may sit anywhere in the window that
//! `P` and `S` leave. Verifying such rules one at a time costs a scan of the
//! value per rule, so on a policy with hundreds of `git *force*`-shaped
//! rules a decision would grow with the rules. Instead every distinct middle
//! piece (a *needle*) of one field matcher's rules is put in one
//! Aho-Corasick automaton, run once over the value with overlapping matches,
//! which yields every occurrence of every needle.
//!
//! Rules are grouped by their anchored prefix `P` (the compiler splits the
//! prefixes until a group is small or of one prefix; an entry's `P` always
//! starts with its group's), and the groups' prefixes
//! form a trie walked over the start of the value: only the groups whose
//! prefix the value starts with are looked at, so `git *force*` is never a
//! candidate for an `npm …` call, however many `git` rules share the needle.
//! When no group's prefix matches, the value is not scanned at all. When
//! the groups reached hold few rules ([`DIRECT_LIMIT`]) and the value is
//! short ([`DIRECT_BYTES`]), each of those rules is checked by searching
//! for its pieces in turn, and the automaton is not needed. Inside
//! a group each rule is anchored on one of its needles (its rarest in the
//! group, chosen by the compiler); a needle's postings are split by group,
//! so a needle that occurred leads straight to its lists in the groups the
//! walk offered, and only the rules anchored there are looked at. Each is
//! checked on the occurrences already
//! found: every piece present, in order, left-most, without overlapping,
//! inside the window, and `P` and `S` at the ends. The value is never
//! scanned again.
//!
//! The automata do not serialise. The tables store the needles; the
//! automaton of an inner record is built the first time a decision needs it
//! and kept in the [`Program`]'s [`Automata`].
//!
//! Layout (word offsets from the record, `spec/artifact.md`):
//!
//! * inner record, [`INNER_WORDS`] words: the automaton's index in the
//!   program's [`Automata`], the needles (offset of `[bytes offset, length]`
//!   pairs and their count), the root of the groups' trie (whose payload
//!   ids are group indexes), the groups (offset and count), the postings
//!   (offset of one `[offset, count]` pair per needle, each naming that
//!   needle's `[group, list offset, list count]` triples, sorted by group;
//!   each list holds entry indexes sorted by rule id), the entries (offset
//!   and count);
//! * group, [`GROUP_WORDS`] words: its prefix (bytes offset and length);
//! * entry, [`ENTRY_WORDS`] words: rule id, `P` and `S` (bytes offset and
//!   length each), the pieces (offset and count of needle indexes, in the
//!   order the glob names them).
//!
//! [`Program`]: super::program::Program

use super::eval::{seek, Sink};
use super::program::{View, NONE};
use crate::needles::{dfa_bytes, NeedleDfa};
use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

/// Words in an inner record.
pub const INNER_WORDS: u32 = 9;
/// The automaton's index in the program's [`Automata`].
pub const I_AUTOMATON: u32 = 0;
/// The needle pairs: offset and count.
pub const I_NEEDLES: u32 = 1;
/// The root node of the trie of the groups' prefixes.
pub const I_GROUP_ROOT: u32 = 3;
/// The group records: offset and count.
pub const I_GROUPS: u32 = 4;
/// The postings: offset of one `[offset, count]` pair per needle.
pub const I_POSTINGS: u32 = 6;
/// The entries: offset and count.
pub const I_ENTRIES: u32 = 7;
/// Words in a group record: its prefix's bytes offset and length.
pub const GROUP_WORDS: u32 = 2;
/// Words in a posting triple: group, list offset, list count.
pub const POSTING_WORDS: u32 = 3;
/// Words in an entry.
pub const ENTRY_WORDS: u32 = 7;
/// The entry's rule id.
pub const E_ID: u32 = 0;
/// The literal before the first `*`: bytes offset and length.
pub const E_PREFIX: u32 = 1;
/// The literal after the last `*`: bytes offset and length.
pub const E_SUFFIX: u32 = 3;
/// The pieces: offset and count of needle indexes.
pub const E_PIECES: u32 = 5;

/// The most occurrences a decision records per byte of the value (plus a
/// fixed allowance). Only needle sets that are suffixes of one another by
/// the dozen reach it; a decision that does fails closed rather than hold
/// memory in proportion to the value times the needles.
pub const OCCURRENCES_PER_BYTE: usize = 16;
const OCCURRENCES_BASE: usize = 1 << 16;

/// The most entries the groups a value reaches may hold for them to be
/// checked one by one, without the automaton (see [`with_direct_limit`]).
pub const DIRECT_LIMIT: u32 = 32;

/// The longest value whose few reached entries are checked one by one; a
/// longer one is scanned once by the automaton, as a search per piece per
/// rule would read it many times over.
pub const DIRECT_BYTES: usize = 1024;

thread_local! {
    static DIRECT: std::cell::Cell<u32> = const { std::cell::Cell::new(DIRECT_LIMIT) };
}

fn direct_limit() -> u32 {
    DIRECT.with(std::cell::Cell::get)
}

/// Runs `f` with `limit` in place of [`DIRECT_LIMIT`] on this thread, then
/// puts the limit back: with 0 every decision of `f` takes the automaton,
/// with `u32::MAX` every value of at most [`DIRECT_BYTES`] bytes is checked
/// rule by rule. Both must decide alike, which the differential tests
/// check; an embedder has no reason to call it.
///
/// ```
/// use toolgate_core::runtime::inner::with_direct_limit;
/// assert_eq!(with_direct_limit(0, || 1 + 1), 2);
/// ```
pub fn with_direct_limit<R>(limit: u32, f: impl FnOnce() -> R) -> R {
    struct Restore(u32);
    impl Drop for Restore {
        fn drop(&mut self) {
            DIRECT.with(|d| d.set(self.0));
        }
    }
    let _restore = Restore(DIRECT.with(|d| d.replace(limit)));
    f()
}

/// The automata of a program's inner records, and the rules of each
/// group, built at first use.
#[derive(Clone, Default)]
pub struct Automata {
    slots: Vec<Slot>,
}

/// What one inner record builds: each apart, since a decision that checks
/// a few rules directly never needs the automaton.
#[derive(Clone, Default)]
struct Slot {
    automaton: OnceLock<Option<Arc<Searcher>>>,
    members: OnceLock<Option<Arc<Members>>>,
}

/// The entries of each group, gathered from the postings (which split
/// them by needle): group `g`'s are `entries[starts[g]..starts[g + 1]]`,
/// sorted by rule id.
#[derive(Debug, Default)]
struct Members {
    starts: Vec<u32>,
    entries: Vec<u32>,
}

impl Members {
    fn of(&self, g: u32) -> &[u32] {
        let at = |i: u32| self.starts.get(i as usize).map_or(0, |&s| s as usize);
        self.entries
            .get(at(g)..at(g.wrapping_add(1)))
            .unwrap_or_default()
    }
}

impl std::fmt::Debug for Automata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Automata({} slots, {} built)",
            self.slots.len(),
            self.built()
        )
    }
}

impl Automata {
    /// Room for `n` automata, none built yet.
    pub fn new(n: usize) -> Automata {
        Automata {
            slots: (0..n).map(|_| Slot::default()).collect(),
        }
    }

    /// How many automata have been built: a decision that reaches few
    /// rules builds none.
    pub fn built(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| s.automaton.get().is_some())
            .count()
    }

    /// The number of slots.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there are no slots.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The automaton in slot `i`, built from `needles` the first time;
    /// `None` when there is no such slot or the automaton cannot be built.
    fn get<'n>(&self, i: u32, needles: impl FnOnce() -> Vec<&'n [u8]>) -> Option<&Searcher> {
        let slot = self.slots.get(i as usize)?;
        slot.automaton
            .get_or_init(|| build(&needles()).map(Arc::new))
            .as_deref()
    }

    /// The members of slot `i`'s groups, gathered by `gather` the first
    /// time; `None` when there is no such slot or the tables are damaged.
    fn members(&self, i: u32, gather: impl FnOnce() -> Option<Members>) -> Option<&Members> {
        let slot = self.slots.get(i as usize)?;
        slot.members
            .get_or_init(|| gather().map(Arc::new))
            .as_deref()
    }
}

/// The most memory one inner record's automaton may take as a DFA. A DFA
/// follows one transition per byte where the NFA chases failure links, so
/// it is several times faster on large needle sets; past this size the
/// needles stay a contiguous NFA, whose memory grows with their bytes alone.
pub const DFA_BYTES: usize = 4 << 20;

/// Every occurrence of an inner record's needles: the flat table of their
/// DFA ([`NeedleDfa`]) when it fits [`DFA_BYTES`], else the crate's
/// contiguous NFA.
// Built once per record and kept behind an `Arc`: the size of the table's
// class map inline costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Searcher {
    /// The flat DFA table, walked a byte at a time.
    Dfa(NeedleDfa),
    /// The crate's overlapping search, for needle sets too large for a DFA.
    Nfa(AhoCorasick),
}

/// The searcher of `needles`, or `None` if it cannot be built.
pub fn build(needles: &[&[u8]]) -> Option<Searcher> {
    if dfa_bytes(needles) <= DFA_BYTES {
        return NeedleDfa::build(needles).ok().map(Searcher::Dfa);
    }
    AhoCorasick::builder()
        .match_kind(MatchKind::Standard)
        .kind(Some(AhoCorasickKind::ContiguousNFA))
        .build(needles)
        .ok()
        .map(Searcher::Nfa)
}

/// What a decision keeps between walks to spare allocations: the
/// occurrences, a second buffer and the counts for sorting them, and the
/// needles that occurred.
#[derive(Default)]
struct Scratch {
    occ: Vec<u64>,
    tmp: Vec<u64>,
    counts: Vec<u32>,
    /// The needles that occurred, in order.
    seen: Vec<u32>,
}

impl Scratch {
    /// Drops what a hostile value made grow.
    fn trim(&mut self) {
        if self.occ.capacity() > OCCURRENCES_BASE || self.tmp.capacity() > OCCURRENCES_BASE {
            self.occ = Vec::new();
            self.tmp = Vec::new();
        }
        if self.counts.capacity() > OCCURRENCES_BASE || self.seen.capacity() > OCCURRENCES_BASE {
            self.counts = Vec::new();
            self.seen = Vec::new();
        }
    }
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// The groups a walk of the groups' trie offered: the few whose prefix the
/// value starts with, at most one per prefix length. Spending goes to the
/// decision's sink, so the walk is charged like any other.
struct Groups<'s, S: Sink> {
    sink: &'s mut S,
    n_groups: u32,
    few: [u32; 16],
    n: usize,
    more: Vec<u32>,
    /// An id out of range, or more groups than the value has prefixes:
    /// damaged tables.
    damaged: bool,
    cap: usize,
}

impl<S: Sink> Sink for Groups<'_, S> {
    fn wants(&self, _id: u32) -> bool {
        true
    }

    fn offer(&mut self, id: u32) {
        if id >= self.n_groups || self.n >= self.cap {
            self.damaged = true;
            return;
        }
        match self.few.get_mut(self.n) {
            Some(slot) => *slot = id,
            None => self.more.push(id),
        }
        self.n += 1;
    }

    fn spend(&mut self, units: u64) -> bool {
        !self.damaged && self.sink.spend(units)
    }
}

/// An inner record's entries and needles, as the offers read them.
struct Inner<'n, F: Fn(u32) -> (u32, u32)> {
    entries: u32,
    n_entries: u32,
    postings: u32,
    n_needles: u32,
    needle: &'n F,
}

impl<'p> View<'p> {
    /// Walks the inner record at `rec` over `v`, offering every rule whose
    /// glob matches.
    pub(super) fn walk_inner(&self, rec: u32, v: &[u8], sink: &mut impl Sink) {
        let at = rec as usize;
        let Some(r) = self.words.get(at..at.saturating_add(INNER_WORDS as usize)) else {
            return;
        };
        let field = |i: u32| r.get(i as usize).copied().unwrap_or(NONE);
        let (needles, n_needles) = (field(I_NEEDLES), field(I_NEEDLES + 1));
        let n_groups = field(I_GROUPS + 1);
        if n_needles == 0 || n_needles == NONE || n_groups == 0 || n_groups == NONE {
            return;
        }
        // The groups whose prefix the value starts with; none, and the
        // value need not be scanned.
        let mut groups = Groups {
            sink: &mut *sink,
            n_groups,
            few: [0; 16],
            n: 0,
            more: Vec::new(),
            damaged: false,
            cap: v.len().saturating_add(1),
        };
        self.walk_trie(field(I_GROUP_ROOT), v, &mut groups);
        let (damaged, few, n_few, more) = (
            groups.damaged,
            groups.few,
            groups.n.min(groups.few.len()),
            std::mem::take(&mut groups.more),
        );
        // Sorted, for the search in each needle's triples; past the few a
        // value's prefixes reach on real policies, on the heap.
        let mut few = few;
        let mut many: Vec<u32> = Vec::new();
        let reached: &[u32] = if more.is_empty() {
            let r = few.get_mut(..n_few).unwrap_or_default();
            r.sort_unstable();
            r
        } else {
            many.extend_from_slice(&few);
            many.extend_from_slice(&more);
            many.sort_unstable();
            &many
        };
        if damaged {
            sink.spend(u64::MAX);
            return;
        }
        if n_few == 0 {
            return;
        }
        let needle = |k: u32| {
            let p = needles.wrapping_add(k.wrapping_mul(2));
            (self.w(p), self.w(p.wrapping_add(1)))
        };
        let slot = field(I_AUTOMATON);
        let (entries, n_entries) = (field(I_ENTRIES), field(I_ENTRIES + 1));
        let inner = Inner {
            entries,
            n_entries,
            postings: field(I_POSTINGS),
            n_needles,
            needle: &needle,
        };
        // Tables whose postings do not gather into groups fail closed.
        let Some(members) = self
            .automata
            .members(slot, || self.gather(&inner, n_groups))
        else {
            sink.spend(u64::MAX);
            return;
        };
        let reach: usize = reached.iter().map(|&g| members.of(g).len()).sum();
        if reach == 0 {
            return;
        }
        // A few rules are checked one by one, each piece found in place:
        // cheaper on a short value than a pass of the automaton, and the
        // work stays bounded by the limit whatever the number of rules.
        if reach <= direct_limit() as usize && v.len() <= DIRECT_BYTES {
            for &g in reached {
                let holds = |at: u32, sink: &mut _| self.direct_holds(at, v, &needle, sink);
                if !self.offer_each(&inner, members.of(g), sink, holds) {
                    return;
                }
            }
            return;
        }
        let ac = self.automata.get(slot, || {
            (0..n_needles.min(self.words.len() as u32))
                .map(|k| {
                    let (o, l) = needle(k);
                    self.b(o, l)
                })
                .collect()
        });
        // An automaton that cannot be had, or a search it refuses, fails
        // closed: the budget is spent, and the subject denied.
        let Some(ac) = ac else {
            sink.spend(u64::MAX);
            return;
        };
        // Occurrences are packed as `needle << 32 | start`.
        if u32::try_from(v.len()).is_err() || !sink.spend(v.len() as u64 + 1) {
            sink.spend(u64::MAX);
            return;
        }
        SCRATCH.with(|s| {
            let mut own = Scratch::default();
            let mut guard = s.try_borrow_mut();
            let scratch: &mut Scratch = match guard {
                Ok(ref mut g) => g,
                Err(_) => &mut own,
            };
            scratch.occ.clear();
            if self.inner_search(ac, v, n_needles, scratch, sink) {
                let seen = &mut scratch.seen;
                seen.clear();
                for &x in &scratch.occ {
                    let k = (x >> 32) as u32;
                    if seen.last() != Some(&k) {
                        seen.push(k);
                    }
                }
                for &k in &scratch.seen {
                    if !self.inner_offer(&inner, k, reached, v, &scratch.occ, sink) {
                        break;
                    }
                }
            }
            scratch.trim();
        });
    }

    /// Every occurrence of every needle in `v`, as `needle << 32 | start`,
    /// sorted, in `scratch.occ`; `false` when the walk must stop.
    fn inner_search(
        &self,
        searcher: &Searcher,
        v: &[u8],
        n_needles: u32,
        scratch: &mut Scratch,
        sink: &mut impl Sink,
    ) -> bool {
        let cap = v
            .len()
            .saturating_mul(OCCURRENCES_PER_BYTE)
            .saturating_add(OCCURRENCES_BASE);
        let occ = &mut scratch.occ;
        let mut record = |k: u32, start: usize| -> bool {
            if !sink.spend(1) {
                return false;
            }
            if occ.len() >= cap {
                sink.spend(u64::MAX);
                return false;
            }
            occ.push((u64::from(k) << 32) | start as u64);
            true
        };
        match searcher {
            Searcher::Dfa(dfa) => {
                let (mut sid, mut at) = (dfa.start(), 0);
                while at < v.len() {
                    (sid, at) = dfa.advance(sid, v, at);
                    for &(k, len) in dfa.ends(sid) {
                        if !record(k, at.saturating_sub(len as usize)) {
                            return false;
                        }
                    }
                }
            }
            Searcher::Nfa(ac) => {
                let Ok(found) = ac.try_find_overlapping_iter(v) else {
                    sink.spend(u64::MAX);
                    return false;
                };
                for m in found {
                    if !record(m.pattern().as_u32(), m.start()) {
                        return false;
                    }
                }
            }
        }
        let occ = &mut scratch.occ;
        // The automaton reports matches by their end, so one needle's
        // occurrences, all of one length, come in the order of their start:
        // a stable counting sort by needle orders them fully, in time linear
        // in the occurrences and the needles, where a comparison sort of a
        // megabyte's hundred thousand occurrences took most of a decision.
        // Few occurrences are sorted in place.
        let n = n_needles as usize;
        if occ.len() < 256 || n > occ.len().saturating_mul(4) {
            occ.sort_unstable();
            return true;
        }
        if !sink.spend(n as u64) {
            return false;
        }
        let counts = &mut scratch.counts;
        counts.clear();
        counts.resize(n + 1, 0);
        for &x in occ.iter() {
            if let Some(c) = counts.get_mut(((x >> 32) as usize).saturating_add(1)) {
                *c += 1;
            }
        }
        let mut sum = 0u32;
        for c in counts.iter_mut() {
            sum += *c;
            *c = sum;
        }
        let tmp = &mut scratch.tmp;
        tmp.clear();
        tmp.resize(occ.len(), 0);
        for &x in occ.iter() {
            let Some(c) = counts.get_mut((x >> 32) as usize) else {
                sink.spend(u64::MAX);
                return false;
            };
            if let Some(slot) = tmp.get_mut(*c as usize) {
                *slot = x;
            }
            *c += 1;
        }
        std::mem::swap(occ, tmp);
        true
    }

    /// Offers the rules anchored on needle `k`, which occurred, in the
    /// groups `reached` (sorted); `false` when the walk must stop. A short
    /// list of triples is read through, a long one searched for each group.
    fn inner_offer(
        &self,
        inner: &Inner<'_, impl Fn(u32) -> (u32, u32)>,
        k: u32,
        reached: &[u32],
        v: &[u8],
        occ: &[u64],
        sink: &mut impl Sink,
    ) -> bool {
        if k >= inner.n_needles {
            return true;
        }
        let p = inner.postings.wrapping_add(k.wrapping_mul(2));
        let (triples, n) = (self.w(p), self.w(p.wrapping_add(1)));
        if n == NONE {
            return true;
        }
        let triple = |i: u32| triples.wrapping_add(i.wrapping_mul(POSTING_WORDS));
        if n as usize <= 2 * reached.len() + 2 {
            for i in 0..n.min(self.words.len() as u32) {
                if !sink.spend(1) {
                    return false;
                }
                let at = triple(i);
                if reached.binary_search(&self.w(at)).is_ok()
                    && !self.inner_list(inner, at, v, occ, sink)
                {
                    return false;
                }
            }
            return true;
        }
        let mut lo = 0u32;
        for &g in reached {
            if !sink.spend(1) {
                return false;
            }
            lo = seek(lo, n, g, |i| self.w(triple(i)));
            if lo >= n {
                break;
            }
            let at = triple(lo);
            if self.w(at) == g && !self.inner_list(inner, at, v, occ, sink) {
                return false;
            }
        }
        true
    }

    /// Offers the matching rules of the posting list whose triple is at
    /// `at`; `false` when the walk must stop.
    fn inner_list(
        &self,
        inner: &Inner<'_, impl Fn(u32) -> (u32, u32)>,
        at: u32,
        v: &[u8],
        occ: &[u64],
        sink: &mut impl Sink,
    ) -> bool {
        let (list, n) = (
            self.w(at.wrapping_add(1)) as usize,
            self.w(at.wrapping_add(2)) as usize,
        );
        let Some(list) = self.words.get(list..list.saturating_add(n)) else {
            return true;
        };
        let holds = |at: u32, sink: &mut _| self.inner_holds(at, v, occ, inner.needle, sink);
        self.offer_each(inner, list, sink, holds)
    }

    /// Offers the entries of `list` (sorted by rule id) that `holds`, in
    /// id order under the sink's pruning; `false` when the walk must stop.
    fn offer_each<S: Sink>(
        &self,
        inner: &Inner<'_, impl Fn(u32) -> (u32, u32)>,
        list: &[u32],
        sink: &mut S,
        holds: impl Fn(u32, &mut S) -> bool,
    ) -> bool {
        let entry_at = |e: u32| -> Option<u32> {
            (e < inner.n_entries).then(|| inner.entries.wrapping_add(e.wrapping_mul(ENTRY_WORDS)))
        };
        let id_of = |e: u32| entry_at(e).map_or(NONE, |at| self.w(at.wrapping_add(E_ID)));
        let mut i = 0;
        while let Some(&e) = list.get(i) {
            if !sink.spend(1) {
                return false;
            }
            i += 1;
            let id = id_of(e);
            if !sink.wants(id) {
                match sink.next_wanted(id) {
                    Some(target) => {
                        i += list
                            .get(i..)
                            .unwrap_or_default()
                            .partition_point(|&x| id_of(x) < target);
                    }
                    // No larger id is wanted, but other lists may still
                    // hold smaller ones.
                    None => break,
                }
                continue;
            }
            let Some(at) = entry_at(e) else { continue };
            if holds(at, sink) {
                sink.offer(id);
            }
        }
        true
    }

    /// The entry at `at`'s pieces and the window `[start, end)` of `v`
    /// they must fall in, when its anchored ends match; the work of the
    /// ends and one unit per piece is spent.
    fn entry_window<'v>(
        &self,
        at: u32,
        v: &'v [u8],
        sink: &mut impl Sink,
    ) -> Option<(&'p [u32], usize, usize)> {
        let (po, pl) = (
            self.w(at.wrapping_add(E_PREFIX)),
            self.w(at.wrapping_add(E_PREFIX + 1)),
        );
        let (so, sl) = (
            self.w(at.wrapping_add(E_SUFFIX)),
            self.w(at.wrapping_add(E_SUFFIX + 1)),
        );
        let (pieces, n) = (
            self.w(at.wrapping_add(E_PIECES)) as usize,
            self.w(at.wrapping_add(E_PIECES + 1)) as usize,
        );
        let pieces = self.words.get(pieces..pieces.saturating_add(n))?;
        let (prefix, suffix) = (self.b(po, pl), self.b(so, sl));
        // A comparison of an end reads no more of it than the value holds.
        let ends = prefix.len().min(v.len()) + suffix.len().min(v.len());
        if !sink.spend((ends + pieces.len()) as u64) {
            return None;
        }
        let end = v.len().checked_sub(prefix.len() + suffix.len())? + prefix.len();
        if !v.starts_with(prefix) || !v.ends_with(suffix) {
            return None;
        }
        Some((pieces, prefix.len(), end))
    }

    /// Whether the entry at `at` matches `v`, each piece searched for in
    /// the value past the one before: the bytes read are spent.
    fn direct_holds(
        &self,
        at: u32,
        v: &[u8],
        needle: &impl Fn(u32) -> (u32, u32),
        sink: &mut impl Sink,
    ) -> bool {
        let Some((pieces, mut pos, end)) = self.entry_window(at, v, sink) else {
            return false;
        };
        for &k in pieces {
            let (o, l) = needle(k);
            let piece = self.b(o, l);
            let Some(window) = v.get(pos..end) else {
                return false;
            };
            // The bytes read up to the piece's end (or the whole window when
            // it is not there) are spent: the pieces of one rule then cost
            // at most the value once, however many there are.
            let found = memchr::memmem::find(window, piece);
            let read = found.map_or(window.len(), |i| i + piece.len());
            if !sink.spend(read as u64 + 1) {
                return false;
            }
            let Some(i) = found else {
                return false;
            };
            pos += i + piece.len();
        }
        true
    }

    /// The entries of each group, gathered from the postings; `None` when
    /// the postings name a group or entry out of range, or one entry
    /// twice, which validated tables never do.
    fn gather(
        &self,
        inner: &Inner<'_, impl Fn(u32) -> (u32, u32)>,
        n_groups: u32,
    ) -> Option<Members> {
        let entry_id = |e: u32| {
            let at = inner.entries.wrapping_add(e.wrapping_mul(ENTRY_WORDS));
            self.w(at.wrapping_add(E_ID))
        };
        let mut seen = vec![false; inner.n_entries as usize];
        let mut all: Vec<(u32, u32, u32)> = Vec::new();
        for k in 0..inner.n_needles.min(self.words.len() as u32) {
            let p = inner.postings.wrapping_add(k.wrapping_mul(2));
            let (triples, n) = (self.w(p), self.w(p.wrapping_add(1)));
            if n == NONE {
                continue;
            }
            for i in 0..n.min(self.words.len() as u32) {
                let at = triples.wrapping_add(i.wrapping_mul(POSTING_WORDS));
                let (g, list, count) = (
                    self.w(at),
                    self.w(at.wrapping_add(1)) as usize,
                    self.w(at.wrapping_add(2)) as usize,
                );
                let list = self.words.get(list..list.saturating_add(count))?;
                for &e in list {
                    let once = seen.get_mut(e as usize).filter(|s| !**s)?;
                    *once = true;
                    if g >= n_groups {
                        return None;
                    }
                    all.push((g, entry_id(e), e));
                }
            }
        }
        all.sort_unstable();
        let mut starts = vec![0u32; n_groups as usize + 1];
        for &(g, _, _) in &all {
            if let Some(c) = starts.get_mut(g as usize + 1) {
                *c += 1;
            }
        }
        for i in 1..starts.len() {
            let before = starts.get(i - 1).copied().unwrap_or(0);
            if let Some(c) = starts.get_mut(i) {
                *c += before;
            }
        }
        Some(Members {
            starts,
            entries: all.into_iter().map(|(_, _, e)| e).collect(),
        })
    }

    /// Whether the entry at `at` matches `v`, checked on the occurrences:
    /// the ends compared in place, each piece at its first occurrence past
    /// the previous one, inside the window.
    fn inner_holds(
        &self,
        at: u32,
        v: &[u8],
        occ: &[u64],
        needle: &impl Fn(u32) -> (u32, u32),
        sink: &mut impl Sink,
    ) -> bool {
        let Some((pieces, mut pos, end)) = self.entry_window(at, v, sink) else {
            return false;
        };
        for &k in pieces {
            let key = (u64::from(k) << 32) | pos as u64;
            let Some(&x) = occ.get(occ.partition_point(|&o| o < key)) else {
                return false;
            };
            if (x >> 32) as u32 != k {
                return false;
            }
            let start = (x & 0xffff_ffff) as usize;
            let stop = start.saturating_add(needle(k).1 as usize);
            if stop > end {
                return false;
            }
            pos = stop;
        }
        true
    }
}
