//! The unanchored searches of one field: every `contains` needle and every
//! `matches` (Rubric) or `regex` (Authensor) pattern that occurs in its
//! value, found in one pass per automaton.
//!
//! Neither automaton serialises. The tables list the field's needles and
//! its translated patterns; the first decision that reads the field builds
//! them and keeps them with the program:
//!
//! * the needles go into one Aho-Corasick automaton (`MatchKind::Standard`,
//!   whose match states hold every needle ending there), a few milliseconds
//!   for tens of thousands of needles;
//! * the patterns go into lazy DFAs (`MatchKind::All`) of at most [`CHUNK`]
//!   patterns each, a chunk whose NFA exceeds the limit split in halves.
//!   Only the NFAs are built ahead of a search; states are computed as
//!   values need them and kept in per-thread caches. A dense DFA of the same
//!   set is determinised whole, which for patterns such as `a.*b` grows
//!   exponentially with the patterns.
//!
//! A search walks the automaton byte by byte and offers the predicates of a
//! match state the first time it reaches that state, so its work is the
//! value's length plus each reached match state's list once, however often
//! the needles and patterns overlap in the value.
//!
//! A field whose automata cannot be built (damaged tables, or a pattern the
//! front end did not check against the limit) fails closed: every decision
//! that reads it is damaged.

use super::layout::*;
use crate::runtime::eval::Sink;
use crate::runtime::program::{Program, NONE};
use aho_corasick::automaton::Automaton as _;
use aho_corasick::nfa::contiguous;
use aho_corasick::Anchored;
use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::hybrid::LazyStateID;
use regex_automata::util::pool::Pool;
use regex_automata::Input;
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::sync::Arc;

/// The match states a search has reported. PERF: one insert per match
/// state entered; SipHash cost a third of a dense Rubric decision. A search
/// reports few distinct states, so they are compared in a short list first;
/// past it, a set hashed by multiplication (a state id is a number the
/// automaton chose, and a text enters at most one state per byte, which
/// bounds the set whatever the ids).
#[derive(Debug, Default)]
pub(crate) struct StateSet<T> {
    few: Vec<T>,
    many: HashSet<T, BuildHasherDefault<StateHasher>>,
}

/// States kept in the short list before the set takes over.
const FEW_STATES: usize = 16;

impl<T: Copy + Eq + std::hash::Hash> StateSet<T> {
    fn clear(&mut self) {
        self.few.clear();
        self.many.clear();
    }

    /// Whether `x` is new (and now kept).
    fn insert(&mut self, x: T) -> bool {
        if self.few.contains(&x) {
            return false;
        }
        if self.few.len() < FEW_STATES {
            self.few.push(x);
            return true;
        }
        self.many.insert(x)
    }
}

/// Fibonacci hashing of the state id's words.
#[derive(Default)]
pub(crate) struct StateHasher(u64);

impl Hasher for StateHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u32(u32::from(b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0.rotate_left(5) ^ u64::from(n)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u32(n as u32);
        self.write_u32((n as u64 >> 32) as u32);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Patterns per lazy DFA before any split: a search runs every chunk over
/// the value, so fewer, larger chunks are faster, while a chunk's states
/// grow with the patterns alive in it at once.
pub(crate) const CHUNK: usize = 256;

type MakeCaches = Box<dyn Fn() -> Vec<Cache> + Send + Sync + UnwindSafe + RefUnwindSafe>;

/// The built automata of one field.
pub(crate) struct FieldScan {
    /// The needles' automaton and each needle's predicate.
    needles: Option<(contiguous::NFA, Vec<u32>)>,
    /// The patterns' lazy DFAs, each with its patterns' predicates.
    chunks: Arc<Vec<(DFA, Vec<u32>)>>,
    /// One cache per DFA, per thread.
    caches: Pool<Vec<Cache>, MakeCaches>,
}

impl std::fmt::Debug for FieldScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FieldScan")
            .field("needles", &self.needles.as_ref().map_or(0, |n| n.1.len()))
            .field("chunks", &self.chunks.len())
            .finish()
    }
}

/// The entries of the needle or pattern list at word `at` of a field
/// record: `(text, predicate)`; `None` when the list runs past the words.
fn entries<'p>(p: &'p Program<'_>, rec: &[u32], at: u32) -> Option<Vec<(&'p str, u32)>> {
    let off = *rec.get(at as usize)? as usize;
    let n = *rec.get(at as usize + 1)? as usize;
    let words = p
        .words
        .get(off..off.checked_add(n.checked_mul(SCAN_WORDS as usize)?)?)?;
    Some(
        words
            .chunks_exact(SCAN_WORDS as usize)
            .map(|e| match e {
                [o, l, pred] => (p.s(*o, *l), *pred),
                _ => ("", NONE),
            })
            .collect(),
    )
}

/// Whether the field record `rec` lists any needle or pattern.
pub(crate) fn has_scan(rec: &[u32]) -> bool {
    let count = |i: u32| rec.get(i as usize + 1).copied().unwrap_or(0);
    count(F_NEEDLES) != 0 || count(F_PATTERNS) != 0
}

impl FieldScan {
    /// Builds the automata of field record `rec`; `None` when the lists run
    /// past the tables or a pattern does not build within the limit.
    pub(crate) fn build(p: &Program<'_>, rec: &[u32]) -> Option<FieldScan> {
        let needles = entries(p, rec, F_NEEDLES)?;
        let patterns = entries(p, rec, F_PATTERNS)?;
        let needles = if needles.is_empty() {
            None
        } else {
            let nfa = contiguous::NFA::builder()
                .match_kind(aho_corasick::MatchKind::Standard)
                .prefilter(false)
                .build(needles.iter().map(|(n, _)| n))
                .ok()?;
            Some((nfa, needles.iter().map(|(_, pred)| *pred).collect()))
        };
        let limit = p.h(H_PATTERN_LIMIT).min(MAX_PATTERN_LIMIT) as usize;
        let mut chunks = Vec::new();
        for chunk in patterns.chunks(CHUNK) {
            build_chunk(chunk, limit, &mut chunks)?;
        }
        let chunks = Arc::new(chunks);
        let for_caches = Arc::clone(&chunks);
        let make: MakeCaches =
            Box::new(move || for_caches.iter().map(|(d, _)| d.create_cache()).collect());
        Some(FieldScan {
            needles,
            chunks,
            caches: Pool::new(make),
        })
    }

    /// Offers the predicate of every needle and pattern that occurs in
    /// `text`. `visited` and `lazy` are scratch, for the match states
    /// already reported.
    pub(crate) fn run(
        &self,
        text: &str,
        visited: &mut StateSet<u32>,
        lazy: &mut StateSet<LazyStateID>,
        sink: &mut impl Sink,
    ) {
        if let Some((nfa, preds)) = &self.needles {
            if !sink.spend(text.len() as u64 + 1) {
                return;
            }
            run_needles(nfa, preds, text.as_bytes(), visited, sink);
        }
        if self.chunks.is_empty() {
            return;
        }
        let mut caches = self.caches.get();
        for ((dfa, preds), cache) in self.chunks.iter().zip(caches.iter_mut()) {
            if !sink.spend(text.len() as u64 + 1) {
                return;
            }
            run_lazy(dfa, cache, preds, text, lazy, sink);
        }
    }
}

/// Builds the lazy DFAs of `chunk`, splitting it in halves while its NFA
/// exceeds `limit`; `None` when a single pattern does.
fn build_chunk(chunk: &[(&str, u32)], limit: usize, out: &mut Vec<(DFA, Vec<u32>)>) -> Option<()> {
    if chunk.is_empty() {
        return Some(());
    }
    let pats: Vec<&str> = chunk.iter().map(|(p, _)| *p).collect();
    match super::pattern::build_lazy(&pats, limit) {
        Ok(dfa) => {
            out.push((dfa, chunk.iter().map(|(_, pred)| *pred).collect()));
            Some(())
        }
        Err(_) if chunk.len() > 1 => {
            let (a, b) = chunk.split_at(chunk.len() / 2);
            build_chunk(a, limit, out)?;
            build_chunk(b, limit, out)
        }
        Err(_) => None,
    }
}

/// Offers `preds[pattern(i)]` for the `n` patterns of a match state;
/// `false` when the budget is spent.
fn report(n: usize, pattern: impl Fn(usize) -> usize, preds: &[u32], sink: &mut impl Sink) -> bool {
    if !sink.spend(n as u64) {
        return false;
    }
    for i in 0..n {
        let pred = preds.get(pattern(i)).copied().unwrap_or(NONE);
        if sink.wants(pred) {
            sink.offer(pred);
        }
    }
    true
}

fn run_needles(
    nfa: &contiguous::NFA,
    preds: &[u32],
    text: &[u8],
    visited: &mut StateSet<u32>,
    sink: &mut impl Sink,
) {
    visited.clear();
    let mut last = None;
    let Ok(mut sid) = nfa.start_state(Anchored::No) else {
        sink.spend(u64::MAX);
        return;
    };
    for &b in text {
        sid = nfa.next_state(Anchored::No, sid, b);
        if nfa.is_special(sid) {
            if nfa.is_dead(sid) {
                return;
            }
            // A run of bytes that stays in one match state is common; the
            // set is asked only when the state changes.
            if nfa.is_match(sid)
                && Some(sid) != last
                && {
                    last = Some(sid);
                    visited.insert(sid.as_u32())
                }
                && !report(
                    nfa.match_len(sid),
                    |i| nfa.match_pattern(sid, i).as_usize(),
                    preds,
                    sink,
                )
            {
                return;
            }
        }
    }
}

fn run_lazy(
    dfa: &DFA,
    cache: &mut Cache,
    preds: &[u32],
    text: &str,
    visited: &mut StateSet<LazyStateID>,
    sink: &mut impl Sink,
) {
    visited.clear();
    // State ids name other states once the cache is cleared: the reported
    // set starts again then.
    let mut clears = cache.clear_count();
    let mut last: Option<LazyStateID> = None;
    let Ok(mut sid) = dfa.start_state_forward(cache, &Input::new(text)) else {
        sink.spend(u64::MAX);
        return;
    };
    let at_match = |sid: LazyStateID,
                    cache: &Cache,
                    visited: &mut StateSet<LazyStateID>,
                    clears: &mut usize,
                    sink: &mut _| {
        if cache.clear_count() != *clears {
            *clears = cache.clear_count();
            visited.clear();
        }
        !visited.insert(sid)
            || report(
                dfa.match_len(cache, sid),
                |i| dfa.match_pattern(cache, sid, i).as_usize(),
                preds,
                sink,
            )
    };
    for &b in text.as_bytes() {
        sid = match dfa.next_state(cache, sid, b) {
            Ok(sid) => sid,
            Err(_) => {
                sink.spend(u64::MAX);
                return;
            }
        };
        if sid.is_tagged() {
            if sid.is_match() {
                // A match state entered on byte `b` reports matches that end
                // just before it. Patterns read characters, so only an
                // empty-width match can end inside one, and RE2 tests
                // assertions at character boundaries only: `\B` does not
                // hold between the two bytes of `é`.
                // The set is asked only when the match state changes (or
                // the cache was cleared, which renames states).
                if b & 0xC0 != 0x80 && (Some(sid) != last || cache.clear_count() != clears) {
                    last = Some(sid);
                    if !at_match(sid, cache, visited, &mut clears, sink) {
                        return;
                    }
                }
            } else if sid.is_dead() {
                return;
            } else if sid.is_quit() {
                sink.spend(u64::MAX);
                return;
            }
        }
    }
    match dfa.next_eoi_state(cache, sid) {
        Ok(sid) if sid.is_match() => {
            at_match(sid, cache, visited, &mut clears, sink);
        }
        Ok(_) => {}
        Err(_) => {
            sink.spend(u64::MAX);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_is_new_once_in_the_short_list_and_past_it() {
        let mut s = StateSet::default();
        for round in 0..2 {
            for x in 0..100u32 {
                assert_eq!(s.insert(x * 7), round == 0, "{x}");
            }
        }
        s.clear();
        assert!(s.insert(7));
        assert!(s.insert(699));
    }
}
