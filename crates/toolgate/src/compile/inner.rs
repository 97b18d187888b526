//! Writing the `Inner` strategy's tables: one inner record per field
//! matcher, for its globs with floating middle pieces.
//!
//! The distinct middle pieces are the needles of one automaton the runtime
//! builds at first use (`runtime::inner`). Each rule is anchored on its
//! rarest needle (the one the fewest rules of the matcher name; the longer
//! on a tie), so that a needle which occurs offers only the rules that are
//! unlikely to be offered by another, and a common piece such as `--`
//! does not make every rule that names it a candidate.

use super::Writer;
use crate::runtime::inner::ENTRY_WORDS;

/// A glob `P*M1*…*Mk*S` with at least one non-empty middle piece.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct InnerRule {
    pub id: u32,
    pub prefix: Vec<u8>,
    pub suffix: Vec<u8>,
    pub pieces: Vec<Vec<u8>>,
}

/// Writes the inner record of `rules` (not empty) for automaton slot
/// `automaton`; returns its word offset.
pub(crate) fn write(w: &mut Writer, mut rules: Vec<InnerRule>, automaton: u32) -> u32 {
    rules.sort();
    rules.dedup();
    let mut needles: Vec<&[u8]> = rules
        .iter()
        .flat_map(|r| r.pieces.iter().map(Vec::as_slice))
        .collect();
    needles.sort_unstable();
    needles.dedup();
    let index = |p: &[u8]| needles.binary_search(&p).map_or(0, |i| i as u32);
    // How many rules name each needle, each rule counted once.
    let mut uses = vec![0u32; needles.len()];
    for r in &rules {
        let mut mine: Vec<u32> = r.pieces.iter().map(|p| index(p)).collect();
        mine.sort_unstable();
        mine.dedup();
        for k in mine {
            if let Some(u) = uses.get_mut(k as usize) {
                *u += 1;
            }
        }
    }
    // Pieces, entries and postings; entries are in id order, so each
    // posting list is too.
    let mut postings: Vec<Vec<u32>> = vec![Vec::new(); needles.len()];
    let mut entries: Vec<[u32; ENTRY_WORDS as usize]> = Vec::with_capacity(rules.len());
    for (e, r) in rules.iter().enumerate() {
        let ks: Vec<u32> = r.pieces.iter().map(|p| index(p)).collect();
        let anchor = ks.iter().copied().min_by_key(|&k| {
            let uses = uses.get(k as usize).copied().unwrap_or(0);
            let len = needles.get(k as usize).map_or(0, |n| n.len());
            (uses, std::cmp::Reverse(len))
        });
        if let Some(list) = anchor.and_then(|k| postings.get_mut(k as usize)) {
            list.push(e as u32);
        }
        let pieces_at = w.here();
        w.words.extend_from_slice(&ks);
        let p = w.raw(&r.prefix);
        let s = w.raw(&r.suffix);
        entries.push([r.id, p.0, p.1, s.0, s.1, pieces_at, ks.len() as u32]);
    }
    let needle_pairs: Vec<(u32, u32)> = needles.iter().map(|n| w.raw(n)).collect();
    let needles_at = w.here();
    for (o, l) in &needle_pairs {
        w.words.extend_from_slice(&[*o, *l]);
    }
    let mut lists = Vec::with_capacity(postings.len());
    for list in &postings {
        lists.push((w.here(), list.len() as u32));
        w.words.extend_from_slice(list);
    }
    let postings_at = w.here();
    for (o, n) in lists {
        w.words.extend_from_slice(&[o, n]);
    }
    let entries_at = w.here();
    for e in &entries {
        w.words.extend_from_slice(e);
    }
    let at = w.here();
    w.words.extend_from_slice(&[
        automaton,
        needles_at,
        needles.len() as u32,
        postings_at,
        entries_at,
        entries.len() as u32,
    ]);
    at
}
