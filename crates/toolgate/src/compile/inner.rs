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
/// `automaton`, putting the groups' prefixes (see [`homes`]: at most
/// `max_group` rules each, unless they share one prefix) in `trie` under a
/// new root;
/// returns the record's word offset and the root, whose written offset the
/// caller patches into word [`I_GROUP_ROOT`] once the nodes are laid out.
///
/// [`I_GROUP_ROOT`]: crate::runtime::inner::I_GROUP_ROOT
pub(crate) fn write(
    w: &mut Writer,
    trie: &mut Trie,
    mut rules: Vec<InnerRule>,
    automaton: u32,
    max_group: usize,
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
    let homes = homes(&rules, max_group);
    let mut prefixes: Vec<&[u8]> = homes.iter().map(Vec::as_slice).collect();
    prefixes.sort_unstable();
    prefixes.dedup();
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

/// The prefix of each rule's group, in the order of `rules`.
///
/// The rules' anchored prefixes, sorted, are split from the top: a set of
/// at most `max_group` rules, or of rules that all have one prefix, is a
/// group whose prefix is the longest one its rules share; a larger set
/// keeps the rules whose prefix is exactly that shared one as a group and
/// splits the rest by the byte that follows it. So a group is never larger
/// than it must be, a value reaches at most one group per length of its
/// own prefixes, and a value that starts like no rule (`kill …` among
/// `kubectl …` rules) reaches none: the decision then neither scans the
/// value nor looks at a rule. The number of groups is at most the number
/// of distinct prefixes.
fn homes(rules: &[InnerRule], max_group: usize) -> Vec<Vec<u8>> {
    let mut order: Vec<usize> = (0..rules.len()).collect();
    order.sort_by(|&a, &b| {
        let (pa, pb) = (rules.get(a), rules.get(b));
        pa.map(|r| &r.prefix).cmp(&pb.map(|r| &r.prefix))
    });
    let prefix = |i: usize| -> &[u8] {
        order
            .get(i)
            .and_then(|&r| rules.get(r))
            .map_or(&[][..], |r| r.prefix.as_slice())
    };
    let mut homes = vec![Vec::new(); rules.len()];
    let mut home = |from: usize, to: usize, p: &[u8]| {
        for &r in order.get(from..to).unwrap_or_default() {
            if let Some(h) = homes.get_mut(r) {
                *h = p.to_vec();
            }
        }
    };
    // Sets of rules `order[lo..hi]` whose prefixes share their first `d`
    // bytes; a stack, as prefixes may be long.
    let mut sets = vec![(0usize, rules.len(), 0usize)];
    while let Some((lo, hi, d)) = sets.pop() {
        if lo >= hi {
            continue;
        }
        // Sorted, the set's shared prefix is what its first and last share.
        let (first, last) = (prefix(lo), prefix(hi - 1));
        let shared = first.iter().zip(last).take_while(|(a, b)| a == b).count();
        let stem = first.get(..shared.max(d)).unwrap_or(first);
        if hi - lo <= max_group.max(1) || first == last {
            home(lo, hi, stem);
            continue;
        }
        // The rules whose prefix is the stem itself sort first.
        let exact = (lo..hi)
            .take_while(|&i| prefix(i).len() == stem.len())
            .count();
        if exact > 0 {
            home(lo, lo + exact, stem);
        }
        let mut i = lo + exact;
        while i < hi {
            let byte = prefix(i).get(stem.len());
            let j = (i..hi)
                .find(|&j| prefix(j).get(stem.len()) != byte)
                .unwrap_or(hi);
            sets.push((i, j, stem.len() + 1));
            i = j;
        }
    }
    homes
}
