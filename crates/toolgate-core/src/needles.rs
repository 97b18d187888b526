//! Every occurrence of a set of literal needles, as one flat DFA table.
//!
//! Two walks need every occurrence of many literals, overlapping ones
//! included: the `Inner` strategy's needles (`runtime::inner`) and the
//! guards' anchors. Both take the unanchored Aho-Corasick DFA of the
//! `aho-corasick` crate (`MatchKind::Standard`, whose match states list
//! every needle ending there) and copy it into a table walked a byte at a
//! time: the byte's class, then one load.
//!
//! States are numbered so that the match states come last, and each is
//! stored premultiplied by the number of classes: the next state is
//! `trans[state + class[byte]]`, and a state is a match state when it is at
//! or past [`NeedleDfa::first_match`]. The crate's own search asks more of
//! each step (its bounds, its special-state ranges, a prefilter that on a
//! value of a few dozen bytes costs more than it skips), and a step is all
//! the walk does.

use aho_corasick::automaton::Automaton as _;
use aho_corasick::{Anchored, MatchKind, StartKind};
use std::collections::HashMap;

/// Why a needle table was not built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NeedleError {
    /// The states times the classes do not fit a `u32` index.
    TooLarge,
    /// The automaton builder refused the needles.
    Build(String),
}

impl std::fmt::Display for NeedleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NeedleError::TooLarge => write!(f, "the needles make too large an automaton"),
            NeedleError::Build(e) => write!(f, "the needles do not build an automaton: {e}"),
        }
    }
}

impl std::error::Error for NeedleError {}

/// The flat DFA of a set of needles (needle id: index).
///
/// ```
/// use toolgate_core::needles::NeedleDfa;
/// let dfa = NeedleDfa::build(&[b"ab".as_slice(), b"b".as_slice()]).unwrap();
/// let mut found = Vec::new();
/// let (hay, mut sid, mut at) = (b"xab", dfa.start(), 0);
/// while at < hay.len() {
///     (sid, at) = dfa.advance(sid, hay, at);
///     for &(needle, len) in dfa.ends(sid) {
///         found.push((at - len as usize, needle));
///     }
/// }
/// found.sort();
/// assert_eq!(found, [(1, 0), (2, 1)]);
/// ```
#[derive(Clone, Debug)]
pub struct NeedleDfa {
    /// Next states, premultiplied, `stride` per state.
    trans: Vec<u32>,
    /// Each byte's class: bytes in no needle share class 0.
    classes: [u32; 256],
    stride: u32,
    start: u32,
    first_match: u32,
    /// Per match state (from `first_match`, in order), its range of `ends`.
    match_ranges: Vec<(u32, u32)>,
    /// The needles ending at a match state: (needle id, length).
    ends: Vec<(u32, u32)>,
    longest: usize,
}

impl NeedleDfa {
    /// The table of `needles`.
    ///
    /// # Errors
    ///
    /// When the automaton cannot be built, or its table cannot be indexed
    /// by a `u32`. The caller bounds its size beforehand ([`dfa_bytes`]).
    pub fn build<N: AsRef<[u8]>>(needles: &[N]) -> Result<NeedleDfa, NeedleError> {
        let built = |e: &dyn std::fmt::Display| NeedleError::Build(e.to_string());
        let dfa = aho_corasick::dfa::DFA::builder()
            .match_kind(MatchKind::Standard)
            .start_kind(StartKind::Unanchored)
            .prefilter(false)
            .build(needles)
            .map_err(|e| built(&e))?;
        let no = Anchored::No;
        // A class per byte some needle holds; every other byte moves every
        // state alike, so they share class 0, whose representative is one
        // of them (when every byte is in some needle, class 0 has none).
        let mut classes = [0u32; 256];
        let mut used = [false; 256];
        for &b in needles.iter().flat_map(|n| n.as_ref()) {
            if let Some(u) = used.get_mut(usize::from(b)) {
                *u = true;
            }
        }
        let mut reps: Vec<u8> = Vec::new();
        if let Some((b, _)) = (0..=255u8).zip(used).find(|&(_, u)| !u) {
            reps.push(b);
        }
        for ((b, u), class) in (0..=255u8).zip(used).zip(classes.iter_mut()) {
            if u {
                *class = u32::try_from(reps.len()).map_err(|_| NeedleError::TooLarge)?;
                reps.push(b);
            }
        }
        let stride = u32::try_from(reps.len()).map_err(|_| NeedleError::TooLarge)?;
        // Every state reachable from the start, breadth first.
        let start = dfa.start_state(no).map_err(|e| built(&e))?;
        let mut seen = HashMap::new();
        let mut order = vec![start];
        seen.insert(start, 0usize);
        let mut i = 0;
        while let Some(&sid) = order.get(i) {
            for &b in &reps {
                let next = dfa.next_state(no, sid, b);
                if let std::collections::hash_map::Entry::Vacant(e) = seen.entry(next) {
                    e.insert(order.len());
                    order.push(next);
                }
            }
            i += 1;
        }
        // Match states last.
        let mut renumbered: Vec<usize> = (0..order.len()).collect();
        renumbered.sort_by_key(|&k| order.get(k).is_some_and(|&sid| dfa.is_match(sid)));
        let premultiplied = |k: usize| -> Result<u32, NeedleError> {
            u32::try_from(k)
                .ok()
                .and_then(|k| k.checked_mul(stride))
                .ok_or(NeedleError::TooLarge)
        };
        // Every state, premultiplied, must fit a `u32`.
        premultiplied(order.len())?;
        let mut number = vec![0u32; order.len()];
        for (new, &old) in renumbered.iter().enumerate() {
            if let Some(n) = number.get_mut(old) {
                *n = premultiplied(new)?;
            }
        }
        let n_plain = order.iter().filter(|&&sid| !dfa.is_match(sid)).count();
        let size = order
            .len()
            .checked_mul(reps.len())
            .ok_or(NeedleError::TooLarge)?;
        let mut trans = vec![0u32; size];
        let mut match_ranges = Vec::new();
        let mut ends = Vec::new();
        let small = |n: usize| u32::try_from(n).map_err(|_| NeedleError::TooLarge);
        for (new, &old) in renumbered.iter().enumerate() {
            let Some(&sid) = order.get(old) else { continue };
            let row = new * reps.len();
            for (c, &b) in reps.iter().enumerate() {
                let next = dfa.next_state(no, sid, b);
                let to = seen.get(&next).and_then(|&k| number.get(k)).copied();
                if let (Some(slot), Some(to)) = (trans.get_mut(row + c), to) {
                    *slot = to;
                }
            }
            if dfa.is_match(sid) {
                let from = small(ends.len())?;
                for k in 0..dfa.match_len(sid) {
                    let pid = dfa.match_pattern(sid, k);
                    ends.push((small(pid.as_usize())?, small(dfa.pattern_len(pid))?));
                }
                match_ranges.push((from, small(ends.len())?));
            }
        }
        Ok(NeedleDfa {
            trans,
            classes,
            stride,
            // The start is the first state the walk found.
            start: number.first().copied().unwrap_or(0),
            first_match: premultiplied(n_plain)?,
            match_ranges,
            ends,
            longest: needles.iter().map(|n| n.as_ref().len()).max().unwrap_or(0),
        })
    }

    /// The start state.
    pub fn start(&self) -> u32 {
        self.start
    }

    /// The first match state: a state at or past it ends some needle.
    pub fn first_match(&self) -> u32 {
        self.first_match
    }

    /// The longest needle, in bytes.
    pub fn longest(&self) -> usize {
        self.longest
    }

    /// The bytes the table holds.
    pub fn heap_bytes(&self) -> usize {
        self.trans.len() * 4 + self.ends.len() * 8 + self.match_ranges.len() * 8
    }

    /// The state after `sid` reads `b`.
    #[inline(always)]
    pub fn next(&self, sid: u32, b: u8) -> u32 {
        // A byte always indexes 256 classes: the check compiles away.
        let class = self.classes.get(usize::from(b)).copied().unwrap_or(0);
        // Every entry is a state of the table, so the fallback is never
        // taken; it keeps a bad state from reading out of bounds.
        self.trans
            .get(sid.wrapping_add(class) as usize)
            .copied()
            .unwrap_or(self.start)
    }

    /// Walks from `sid` at `i` to just past the next byte that enters a
    /// match state, or to the end of `hay`: a loop of its own, so that the
    /// state and the position stay in registers.
    #[inline(never)]
    pub fn advance(&self, mut sid: u32, hay: &[u8], mut i: usize) -> (u32, usize) {
        while let Some(&b) = hay.get(i) {
            sid = self.next(sid, b);
            i += 1;
            if sid >= self.first_match {
                break;
            }
        }
        (sid, i)
    }

    /// The needles that end when the walk is in state `sid`, as (needle
    /// id, length); none for a state that is not a match state.
    #[inline]
    pub fn ends(&self, sid: u32) -> &[(u32, u32)] {
        if sid < self.first_match {
            return &[];
        }
        let m = (sid - self.first_match) / self.stride.max(1);
        let Some(&(from, to)) = self.match_ranges.get(m as usize) else {
            return &[];
        };
        self.ends
            .get(from as usize..to as usize)
            .unwrap_or_default()
    }
}

/// The size of the transition table of the DFA of `needles`: a state per
/// node of the trie of the needles (one per distinct prefix, counted on the
/// needles in sorted order as the bytes each adds past what it shares with
/// the one before), times the byte classes rounded up to a power of two,
/// times a state id. An estimate made before building, to choose between
/// the DFA and the crate's NFA.
pub fn dfa_bytes<N: AsRef<[u8]>>(needles: &[N]) -> usize {
    let mut sorted: Vec<&[u8]> = needles.iter().map(AsRef::as_ref).collect();
    sorted.sort_unstable();
    let mut seen = [false; 256];
    let mut states = 1usize;
    let mut last: &[u8] = &[];
    for n in sorted {
        let shared = n.iter().zip(last).take_while(|(a, b)| a == b).count();
        states = states.saturating_add(n.len() - shared);
        last = n;
        for &b in n {
            if let Some(s) = seen.get_mut(usize::from(b)) {
                *s = true;
            }
        }
    }
    let classes = seen.iter().filter(|&&s| s).count() + 1;
    states
        .saturating_mul(classes.next_power_of_two())
        .saturating_mul(4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aho_corasick::AhoCorasick;

    /// Every occurrence the table's walk finds, as (start, needle), sorted.
    fn walk(dfa: &NeedleDfa, hay: &[u8]) -> Vec<(usize, u32)> {
        let (mut sid, mut at, mut found) = (dfa.start(), 0, Vec::new());
        while at < hay.len() {
            (sid, at) = dfa.advance(sid, hay, at);
            for &(k, len) in dfa.ends(sid) {
                found.push((at - len as usize, k));
            }
        }
        found.sort_unstable();
        found
    }

    #[test]
    fn the_walk_finds_what_the_crate_finds_overlapping() {
        let sets: [&[&str]; 4] = [
            &["a", "aa", "aaa"],
            &["he", "she", "his", "hers"],
            &["--force", "--force-with-lease", "force", "-f"],
            &["ü", "üb", "\u{0}x", "\u{ff}"],
        ];
        let hays = [
            "aaaaa",
            "ushers and his hers",
            "git push --force-with-lease -f",
            "xüb\u{0}x\u{ff}ü",
            "",
        ];
        for set in sets {
            let dfa = NeedleDfa::build(set).unwrap();
            let ac = AhoCorasick::builder()
                .match_kind(aho_corasick::MatchKind::Standard)
                .build(set)
                .unwrap();
            for hay in hays {
                let mut want: Vec<(usize, u32)> = ac
                    .find_overlapping_iter(hay)
                    .map(|m| (m.start(), m.pattern().as_u32()))
                    .collect();
                want.sort_unstable();
                assert_eq!(walk(&dfa, hay.as_bytes()), want, "{set:?} in {hay:?}");
            }
        }
    }

    #[test]
    fn a_bad_state_reads_nothing_out_of_bounds() {
        let dfa = NeedleDfa::build(&["ab"]).unwrap();
        assert_eq!(dfa.next(u32::MAX, b'a'), dfa.start());
        assert!(dfa.ends(u32::MAX).is_empty());
    }
}
