//! The `Inner` strategy: globs whose literal pieces float between `*`s.
//!
//! A glob `P*M1*…*Mk*S` with at least one non-empty middle piece is not a
//! path in a trie: its middle pieces may sit anywhere in the window that
//! `P` and `S` leave. Verifying such rules one at a time costs a scan of the
//! value per rule, so on a policy with hundreds of `git *force*`-shaped
//! rules a decision would grow with the rules. Instead every distinct middle
//! piece (a *needle*) of one field matcher's rules is put in one
//! Aho-Corasick automaton, run once over the value with overlapping matches,
//! which yields every occurrence of every needle. Each rule is anchored on
//! one of its needles (its rarest, chosen by the compiler); only the rules
//! anchored on a needle that occurred are looked at, and each is checked on
//! the occurrences already found: every piece present, in order, left-most,
//! without overlapping, inside the window, and `P` and `S` at the ends. The
//! value is never scanned again.
//!
//! The automata do not serialise. The tables store the needles; the
//! automaton of an inner record is built the first time a decision needs it
//! and kept in the [`Program`]'s [`Automata`].
//!
//! Layout (word offsets from the record, `spec/artifact.md`):
//!
//! * inner record, [`INNER_WORDS`] words: the automaton's index in the
//!   program's [`Automata`], the needles (offset of `[bytes offset, length]`
//!   pairs and their count), the postings (offset of one `[offset, count]`
//!   pair per needle, each a list of entry indexes sorted by rule id), the
//!   entries (offset and count);
//! * entry, [`ENTRY_WORDS`] words: rule id, `P` and `S` (bytes offset and
//!   length each), the pieces (offset and count of needle indexes, in the
//!   order the glob names them).
//!
//! [`Program`]: super::program::Program

use super::eval::Sink;
use super::program::{View, NONE};
use aho_corasick::{AhoCorasick, MatchKind};
use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

/// Words in an inner record.
pub const INNER_WORDS: u32 = 6;
/// The automaton's index in the program's [`Automata`].
pub const I_AUTOMATON: u32 = 0;
/// The needle pairs: offset and count.
pub const I_NEEDLES: u32 = 1;
/// The posting pairs, one per needle: offset.
pub const I_POSTINGS: u32 = 3;
/// The entries: offset and count.
pub const I_ENTRIES: u32 = 4;
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

/// The automata of a program's inner records, built at first use.
#[derive(Clone, Default)]
pub struct Automata {
    slots: Vec<OnceLock<Option<Arc<AhoCorasick>>>>,
}

impl std::fmt::Debug for Automata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let built = self.slots.iter().filter(|s| s.get().is_some()).count();
        write!(f, "Automata({} slots, {built} built)", self.slots.len())
    }
}

impl Automata {
    /// Room for `n` automata, none built yet.
    pub fn new(n: usize) -> Automata {
        Automata {
            slots: (0..n).map(|_| OnceLock::new()).collect(),
        }
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
    fn get<'n>(&self, i: u32, needles: impl FnOnce() -> Vec<&'n [u8]>) -> Option<&AhoCorasick> {
        let slot = self.slots.get(i as usize)?;
        slot.get_or_init(|| build(&needles()).map(Arc::new))
            .as_deref()
    }
}

/// An overlapping automaton over `needles`, or `None` if it cannot be built.
pub fn build(needles: &[&[u8]]) -> Option<AhoCorasick> {
    AhoCorasick::builder()
        .match_kind(MatchKind::Standard)
        .build(needles)
        .ok()
}

thread_local! {
    /// The occurrences of the last walk, kept to spare an allocation per
    /// decision.
    static SCRATCH: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

impl View<'_> {
    /// Walks the inner record at `rec` over `v`, offering every rule whose
    /// glob matches.
    pub(super) fn walk_inner(&self, rec: u32, v: &[u8], sink: &mut impl Sink) {
        let at = rec as usize;
        let Some(r) = self.words.get(at..at.saturating_add(INNER_WORDS as usize)) else {
            return;
        };
        let field = |i: u32| r.get(i as usize).copied().unwrap_or(NONE);
        let (needles, n_needles) = (field(I_NEEDLES), field(I_NEEDLES + 1));
        if n_needles == 0 || n_needles == NONE {
            return;
        }
        let needle = |k: u32| {
            let p = needles.wrapping_add(k.wrapping_mul(2));
            (self.w(p), self.w(p.wrapping_add(1)))
        };
        let ac = self.automata.get(field(I_AUTOMATON), || {
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
            let mut own = Vec::new();
            let mut guard = s.try_borrow_mut();
            let occ: &mut Vec<u64> = match guard {
                Ok(ref mut g) => g,
                Err(_) => &mut own,
            };
            occ.clear();
            if self.inner_search(ac, v, occ, sink) {
                self.inner_offer(r, v, occ, &needle, sink);
            }
            // A hostile value may have grown the scratch: do not keep it.
            if occ.capacity() > OCCURRENCES_BASE {
                *occ = Vec::new();
            }
        });
    }

    /// Every occurrence of every needle in `v`, as `needle << 32 | start`,
    /// sorted; `false` when the walk must stop.
    fn inner_search(
        &self,
        ac: &AhoCorasick,
        v: &[u8],
        occ: &mut Vec<u64>,
        sink: &mut impl Sink,
    ) -> bool {
        let Ok(found) = ac.try_find_overlapping_iter(v) else {
            sink.spend(u64::MAX);
            return false;
        };
        let cap = v
            .len()
            .saturating_mul(OCCURRENCES_PER_BYTE)
            .saturating_add(OCCURRENCES_BASE);
        for m in found {
            if !sink.spend(1) {
                return false;
            }
            if occ.len() >= cap {
                sink.spend(u64::MAX);
                return false;
            }
            occ.push((u64::from(m.pattern().as_u32()) << 32) | m.start() as u64);
        }
        occ.sort_unstable();
        true
    }

    /// Offers the rules anchored on the needles that occurred; `false` when
    /// the walk must stop.
    fn inner_offer(
        &self,
        r: &[u32],
        v: &[u8],
        occ: &[u64],
        needle: &impl Fn(u32) -> (u32, u32),
        sink: &mut impl Sink,
    ) -> bool {
        let field = |i: u32| r.get(i as usize).copied().unwrap_or(NONE);
        let postings = field(I_POSTINGS);
        let (entries, n_entries) = (field(I_ENTRIES), field(I_ENTRIES + 1));
        let entry_at = |e: u32| -> Option<u32> {
            (e < n_entries).then(|| entries.wrapping_add(e.wrapping_mul(ENTRY_WORDS)))
        };
        let mut g = 0;
        while let Some(&first) = occ.get(g) {
            let k = (first >> 32) as u32;
            // The next needle's occurrences start where this one's end.
            g += occ
                .get(g..)
                .unwrap_or_default()
                .partition_point(|&x| (x >> 32) as u32 == k);
            let p = postings.wrapping_add(k.wrapping_mul(2));
            let (list, n) = (self.w(p) as usize, self.w(p.wrapping_add(1)) as usize);
            let Some(list) = self.words.get(list..list.saturating_add(n)) else {
                continue;
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
                        // No larger id is wanted, but the lists of other
                        // needles may still hold smaller ones.
                        None => break,
                    }
                    continue;
                }
                let Some(at) = entry_at(e) else { continue };
                if self.inner_holds(at, v, occ, needle, sink) {
                    sink.offer(id);
                }
            }
        }
        true
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
        let Some(pieces) = self.words.get(pieces..pieces.saturating_add(n)) else {
            return false;
        };
        let (prefix, suffix) = (self.b(po, pl), self.b(so, sl));
        // A comparison of an end reads no more of it than the value holds.
        let ends = prefix.len().min(v.len()) + suffix.len().min(v.len());
        if !sink.spend((ends + pieces.len()) as u64) {
            return false;
        }
        let Some(end) = v.len().checked_sub(prefix.len() + suffix.len()) else {
            return false;
        };
        let end = end + prefix.len();
        if !v.starts_with(prefix) || !v.ends_with(suffix) {
            return false;
        }
        let mut pos = prefix.len();
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
