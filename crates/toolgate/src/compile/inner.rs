//! Writing the `Inner` strategy's tables: one inner record per field
//! matcher, for its globs with floating middle pieces.
//!
//! The distinct middle pieces are the needles of one automaton the runtime
//! builds at first use (`runtime::inner`). Rules are grouped by their
//! anchored prefix, and the prefixes become `P*` paths of a trie of their
//! own, so a decision looks only at the groups whose prefix the value
//! starts with. Inside its group each rule is anchored on its rarest needle
//! (the one the fewest rules of the group name; the longer on a tie), so
//! that a needle which occurs offers only the rules that are unlikely to be
//! offered by another, and a common piece such as `--` does not make every
//! rule that names it a candidate.

use super::trie::Trie;
use super::Writer;
use crate::runtime::inner::ENTRY_WORDS;
use crate::runtime::program::NONE;
use std::collections::{BTreeMap, HashMap};

/// A glob `P*M1*…*Mk*S` with at least one non-empty middle piece.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct InnerRule {
    pub id: u32,
    pub prefix: Vec<u8>,
    pub suffix: Vec<u8>,
    pub pieces: Vec<Vec<u8>>,
}

/// Writes the inner record of `rules` (not empty) for automaton slot
/// `automaton`, putting the groups' prefixes (those at least `min_group`
/// rules share, and the empty one) in `trie` under a new root;
/// returns the record's word offset and the root, whose written offset the
/// caller patches into word [`I_GROUP_ROOT`] once the nodes are laid out.
///
/// [`I_GROUP_ROOT`]: crate::runtime::inner::I_GROUP_ROOT
pub(crate) fn write(
    w: &mut Writer,
    trie: &mut Trie,
    mut rules: Vec<InnerRule>,
    automaton: u32,
    min_group: usize,
) -> (u32, usize) {
    rules.sort();
    rules.dedup();
    let mut needles: Vec<&[u8]> = rules
        .iter()
        .flat_map(|r| r.pieces.iter().map(Vec::as_slice))
        .collect();
    needles.sort_unstable();
    needles.dedup();
    let index = |p: &[u8]| needles.binary_search(&p).map_or(0, |i| i as u32);
    // The groups: one per distinct prefix, in prefix order.
    // The groups: the prefixes that at least `min_group` rules share, and
    // the empty one. A rule whose own prefix is rarer joins the group of
    // the longest of them its prefix starts with, so that a policy of
    // thousands of one-rule prefixes (`git kalomi *a*`) does not pay a
    // group record and trie nodes per rule, and a decision does not visit
    // as many groups.
    let mut count: HashMap<&[u8], usize> = HashMap::new();
    for r in &rules {
        *count.entry(r.prefix.as_slice()).or_insert(0) += 1;
    }
    let mut prefixes: Vec<&[u8]> = count
        .iter()
        .filter(|(p, &n)| n >= min_group || p.is_empty())
        .map(|(p, _)| *p)
        .collect();
    let home = |p: &[u8]| -> Vec<u8> {
        (0..=p.len())
            .rev()
            .filter_map(|l| p.get(..l))
            .find(|q| q.is_empty() || count.get(q).is_some_and(|&n| n >= min_group))
            .unwrap_or_default()
            .to_vec()
    };
    let homes: Vec<Vec<u8>> = rules.iter().map(|r| home(&r.prefix)).collect();
    if homes.iter().any(Vec::is_empty) && !prefixes.contains(&&[][..]) {
        prefixes.push(&[]);
    }
    prefixes.retain(|p| homes.iter().any(|h| h.as_slice() == *p));
    prefixes.sort_unstable();
    let group_of = |e: usize| {
        homes
            .get(e)
            .and_then(|h| prefixes.binary_search(&h.as_slice()).ok())
            .unwrap_or(0)
    };
    // How many rules of its group name each needle, each rule counted once.
    let mut uses: HashMap<(usize, u32), u32> = HashMap::new();
    for (e, r) in rules.iter().enumerate() {
        let mut mine: Vec<u32> = r.pieces.iter().map(|p| index(p)).collect();
        mine.sort_unstable();
        mine.dedup();
        let g = group_of(e);
        for k in mine {
            *uses.entry((g, k)).or_insert(0) += 1;
        }
    }
    // Pieces and entries; entries are in id order, so each posting list is
    // too. Postings are keyed by needle, then group.
    let mut postings: Vec<BTreeMap<u32, Vec<u32>>> = vec![BTreeMap::new(); needles.len()];
    let mut entries: Vec<[u32; ENTRY_WORDS as usize]> = Vec::with_capacity(rules.len());
    for (e, r) in rules.iter().enumerate() {
        let ks: Vec<u32> = r.pieces.iter().map(|p| index(p)).collect();
        let g = group_of(e);
        let anchor = ks.iter().copied().min_by_key(|&k| {
            let uses = uses.get(&(g, k)).copied().unwrap_or(0);
            let len = needles.get(k as usize).map_or(0, |n| n.len());
            (uses, std::cmp::Reverse(len))
        });
        if let Some(by_group) = anchor.and_then(|k| postings.get_mut(k as usize)) {
            by_group.entry(g as u32).or_default().push(e as u32);
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
    // Each needle's lists, then its triples, then the pairs naming them.
    let mut pairs = Vec::with_capacity(postings.len());
    for by_group in &postings {
        let lists: Vec<(u32, u32, u32)> = by_group
            .iter()
            .map(|(&g, list)| {
                let at = w.here();
                w.words.extend_from_slice(list);
                (g, at, list.len() as u32)
            })
            .collect();
        pairs.push((w.here(), lists.len() as u32));
        for (g, at, n) in &lists {
            w.words.extend_from_slice(&[*g, *at, *n]);
        }
    }
    let postings_at = w.here();
    for (o, n) in &pairs {
        w.words.extend_from_slice(&[*o, *n]);
    }
    let group_words: Vec<(u32, u32)> = prefixes.iter().map(|p| w.raw(p)).collect();
    let groups_at = w.here();
    for (o, l) in &group_words {
        w.words.extend_from_slice(&[*o, *l]);
    }
    let entries_at = w.here();
    for e in &entries {
        w.words.extend_from_slice(e);
    }
    // The groups' prefixes as `P*` paths: a walk offers each group whose
    // prefix the value starts with.
    let root = trie.node();
    for (g, prefix) in prefixes.iter().enumerate() {
        let n = trie.forward(root, prefix);
        let sub = trie.sub(n);
        trie.pay(sub, g as u32, Vec::new());
    }
    let at = w.here();
    w.words.extend_from_slice(&[
        automaton,
        needles_at,
        needles.len() as u32,
        NONE,
        groups_at,
        group_words.len() as u32,
        postings_at,
        entries_at,
        entries.len() as u32,
    ]);
    (at, root)
}
