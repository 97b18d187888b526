//! How many patterns of a field matcher each match strategy holds, read
//! back from the tables for `inspect`: the compiler's classification made
//! visible, so that a policy whose rules all fell to one strategy shows it.

use crate::runtime::inner::I_ENTRIES;
use crate::runtime::program::{
    Dfa, Program, FM_CB, FM_DFA, FM_INNER, FM_ROOT, NONE, N_EDGES, N_PAY, N_SUB, N_TARGETS,
};
use regex_automata::dfa::Automaton as _;

/// Patterns per strategy. A rule may lower to more than one pattern
/// (`git:*` is `git` and `git *`), so these count patterns, not rules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StrategyCounts {
    /// The whole value: a forward trie node's payload.
    pub exact: usize,
    /// `P*`: the root of a forward node's reverse trie.
    pub prefix: usize,
    /// `*S`: the reverse trie off the root.
    pub suffix: usize,
    /// `P*S`: a reverse trie off a forward node.
    pub prefix_suffix: usize,
    /// Floating middle pieces: entries of the inner record.
    pub inner: usize,
    /// `*`: the root of the root's reverse trie.
    pub any: usize,
    /// Regular expressions: DFA patterns.
    pub regex: usize,
    /// Specifiers only the matcher kind can answer.
    pub callback: usize,
}

impl StrategyCounts {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &StrategyCounts) {
        self.exact += other.exact;
        self.prefix += other.prefix;
        self.suffix += other.suffix;
        self.prefix_suffix += other.prefix_suffix;
        self.inner += other.inner;
        self.any += other.any;
        self.regex += other.regex;
        self.callback += other.callback;
    }
}

/// The counts of the field matcher at `fm` (`NONE` for none). The trie is
/// walked with at most as many steps as the tables have words, so damaged
/// tables give wrong counts, never a hang.
pub(super) fn count(p: &Program<'_>, fm: u32) -> StrategyCounts {
    let mut c = StrategyCounts::default();
    if fm == NONE {
        return c;
    }
    c.callback = p.w(fm.wrapping_add(FM_CB + 1)).min(p.n_words()) as usize;
    let (dl, n_dl) = (
        p.w(fm.wrapping_add(FM_DFA)),
        p.w(fm.wrapping_add(FM_DFA + 1)),
    );
    for k in 0..n_dl.min(p.n_words()) {
        c.regex += match p.dfas.get(p.w(dl.wrapping_add(2 * k)) as usize) {
            Some(Dfa::Owned(d)) => d.pattern_len(),
            Some(Dfa::Borrowed(d)) => d.pattern_len(),
            None => 0,
        };
    }
    let inner = p.w(fm.wrapping_add(FM_INNER));
    if inner != NONE {
        c.inner = p.w(inner.wrapping_add(I_ENTRIES + 1)).min(p.n_words()) as usize;
    }
    let root = p.w(fm.wrapping_add(FM_ROOT));
    if root == NONE {
        return c;
    }
    // (node, in the forward trie, the root of a reverse trie, the forward
    // path so far is empty)
    let mut todo = vec![(root, true, false, true)];
    let mut steps = p.n_words();
    while let Some((n, forward, sub_root, empty)) = todo.pop() {
        if steps == 0 {
            break;
        }
        steps -= 1;
        let pays = p.w(n.wrapping_add(N_PAY + 1)).min(p.n_words()) as usize;
        match (forward, sub_root, empty) {
            (true, _, _) => c.exact += pays,
            (false, true, true) => c.any += pays,
            (false, true, false) => c.prefix += pays,
            (false, false, true) => c.suffix += pays,
            (false, false, false) => c.prefix_suffix += pays,
        }
        let sub = p.w(n.wrapping_add(N_SUB));
        if forward && sub != NONE {
            todo.push((sub, false, true, empty));
        }
        let targets = p.w(n.wrapping_add(N_TARGETS));
        let n_edges = p.w(n.wrapping_add(N_EDGES + 1));
        for k in 0..n_edges.min(steps) {
            let child = p.w(targets.wrapping_add(k));
            todo.push((child, forward, false, empty && !forward));
        }
    }
    c
}
