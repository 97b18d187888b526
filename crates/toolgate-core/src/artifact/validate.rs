//! The structural checks of rule-list tables, run once at load after the
//! checksums: every count agrees with the others, every record the header
//! declares lies inside the words, every string inside the bytes, every rule
//! id, source index and DFA index in range, and every rule's list is the one
//! its position gives it.
//!
//! The runtime reads the tables through bounds-checked accessors under a
//! work budget, so damage these checks miss still cannot make it panic or
//! hang; what the checks add is that the tables mean one thing. A rule's
//! list is read in two places (its flags for the verdict, the header's
//! boundaries for the precedence walk), and a header count that disagrees
//! with the records would let a rule decide under a list it does not
//! belong to. One pass, linear in the words.

use super::{layout_error, LoadError};
use crate::runtime::inner::{
    ENTRY_WORDS, E_ID, E_PIECES, E_PREFIX, E_SUFFIX, GROUP_WORDS, INNER_WORDS, I_AUTOMATON,
    I_ENTRIES, I_GROUPS, I_NEEDLES, I_POSTINGS, POSTING_WORDS,
};
use crate::runtime::program::{
    Dfa, Program, ALIAS_WORDS, FM_CB, FM_DFA, F_BARE, F_CARVE, F_GLOB, F_LIST_MASK, F_SERVER,
    HDR_WORDS, H_ALIASES, H_DEFAULT, H_NAME_FM, H_N_ALIASES, H_N_ASK, H_N_DENY, H_N_FIRE,
    H_N_RULES, H_N_SOURCES, H_N_TOOLS, H_N_WITHHELD, H_RULES, H_SOURCES, H_TOOLS, H_TOOL_HASH,
    H_WITHHELD, NONE, RULE_WORDS, R_NOTE, R_SOURCE, R_TEXT, R_TOOL, SOURCE_WORDS, S_HASH, S_NAME,
    S_PATH, TOOL_WORDS, T_ALWAYS, T_CARVE_FM, T_FIELD, T_KIND, T_NAME, T_RULES_FM, T_SPLIT,
};
use crate::runtime::program::{FM_INNER, FM_WORDS, H_N_INNER};
use regex_automata::dfa::Automaton as _;
use std::cell::RefCell;

/// Checks the rule-list tables of `p` (see the module's comment).
///
/// # Errors
///
/// A `Layout` refusal naming the first inconsistency found.
pub(super) fn rule_lists(p: &Program<'_>) -> Result<(), LoadError> {
    let n_inner = p.h(H_N_INNER);
    if n_inner > p.n_words() {
        return Err(layout_error(format!(
            "the tables number {n_inner} inner records in {} words",
            p.n_words()
        )));
    }
    let v = Check {
        p,
        slots: RefCell::new(vec![false; n_inner as usize]),
    };
    let n_rules = p.h(H_N_RULES);
    let (n_fire, n_deny, n_ask) = (p.h(H_N_FIRE), p.h(H_N_DENY), p.h(H_N_ASK));
    if u64::from(n_deny) + u64::from(n_ask) > u64::from(n_fire) || n_fire > n_rules {
        return Err(layout_error(format!(
            "the rule counts disagree: {n_deny} deny and {n_ask} ask rules among {n_fire} firing rules of {n_rules}"
        )));
    }
    if p.h(H_DEFAULT) > 2 {
        return Err(layout_error(
            "the default decision is not one of the three".into(),
        ));
    }
    let n_sources = p.h(H_N_SOURCES);
    v.records("source", p.h(H_SOURCES), n_sources, SOURCE_WORDS)?;
    for i in 0..n_sources {
        let at = p.h(H_SOURCES) + i * SOURCE_WORDS;
        for f in [S_NAME, S_PATH, S_HASH] {
            v.string("source", at + f)?;
        }
    }
    let rules_at = p.h(H_RULES);
    v.records("rule", rules_at, n_rules, RULE_WORDS)?;
    for id in 0..n_rules {
        let at = rules_at + id * RULE_WORDS;
        v.rule(at, n_sources)?;
        let flags = p.w(at + RULE_WORDS - 1);
        let want = if id < n_deny {
            0
        } else if id - n_deny < n_ask {
            1
        } else {
            2
        };
        let carve = flags & F_CARVE != 0;
        if (id < n_fire && (carve || flags & F_LIST_MASK != want))
            || (id >= n_fire && (!carve || flags & F_LIST_MASK > 2))
        {
            return Err(layout_error(format!(
                "rule {id} is not in the list its place in the rule table gives it"
            )));
        }
        if flags & F_SERVER != 0 && !server_rule(flags) {
            return Err(layout_error(format!(
                "rule {id} is server-bounded but not a bare allow glob"
            )));
        }
        // An untrusted source only restricts: its carve-outs are left out
        // when a policy is compiled. One in the tables was compiled by a
        // toolgate that let it cancel other sources' deny and ask rules.
        if carve && !p.source_trusted(p.w(at + RULE_WORDS - 2)) {
            return Err(LoadError::new(
                super::LoadErrorKind::Version,
                format!(
                    "rule {id} is a carve-out of an untrusted source, which an earlier toolgate compiled and this one leaves out: compile the policy again with this toolgate (`toolgate compile`)"
                ),
            ));
        }
    }
    let withheld_at = p.h(H_WITHHELD);
    let n_withheld = p.h(H_N_WITHHELD);
    v.records("withheld rule", withheld_at, n_withheld, RULE_WORDS)?;
    for i in 0..n_withheld {
        let at = withheld_at + i * RULE_WORDS;
        v.rule(at, n_sources)?;
        let flags = p.w(at + RULE_WORDS - 1);
        if flags & F_SERVER != 0 && !server_rule(flags) {
            return Err(layout_error(format!(
                "withheld rule {i} is server-bounded but not a bare allow glob"
            )));
        }
    }
    let aliases_at = p.h(H_ALIASES);
    let n_aliases = p.h(H_N_ALIASES);
    v.records("alias", aliases_at, n_aliases, ALIAS_WORDS)?;
    for i in 0..n_aliases {
        let at = aliases_at + i * ALIAS_WORDS;
        v.string("alias", at)?;
        let (list, n) = (p.w(at + 2), p.w(at + 3));
        v.records("alias", list, n, 2)?;
        for k in 0..n {
            v.string("alias", list + 2 * k)?;
        }
    }
    let tools_at = p.h(H_TOOLS);
    let n_tools = p.h(H_N_TOOLS);
    v.records("tool", tools_at, n_tools, TOOL_WORDS)?;
    v.matcher(p.h(H_NAME_FM), n_rules)?;
    for t in 0..n_tools {
        let at = tools_at + t * TOOL_WORDS;
        v.string("tool", at + T_NAME)?;
        for f in [T_FIELD, T_KIND, T_SPLIT] {
            v.optional_string("tool", at + f)?;
        }
        let (list, n) = (p.w(at + T_ALWAYS), p.w(at + T_ALWAYS + 1));
        v.records("tool", list, n, 1)?;
        for k in 0..n {
            v.rule_id(p.w(list + k), n_rules)?;
        }
        for f in [T_RULES_FM, T_CARVE_FM] {
            v.matcher(p.w(at + f), n_rules)?;
        }
    }
    // The hash table holds each tool once and nothing else.
    let hash_at = p.h(H_TOOL_HASH);
    let cap = p.w(hash_at);
    if n_tools > 0 && (cap == NONE || !cap.is_power_of_two() || cap < n_tools) {
        return Err(layout_error("the tool hash table is malformed".into()));
    }
    v.records("tool hash", hash_at, cap.saturating_add(1), 1)?;
    let mut filled = 0u32;
    for k in 0..cap {
        let slot = p.w(hash_at + 1 + k);
        if slot > n_tools {
            return Err(layout_error(format!(
                "the tool hash table names tool {slot} of {n_tools}"
            )));
        }
        filled += u32::from(slot != 0);
    }
    if filled != n_tools {
        return Err(layout_error(format!(
            "the tool hash table holds {filled} tools, the tool table {n_tools}"
        )));
    }
    // Every tool is found under its own name: a hash table that lost one
    // would let its calls fall through to the default.
    for t in 0..n_tools {
        if p.find_tool(p.tool_name(t)) != Some(t) {
            return Err(layout_error(format!(
                "tool {t} is not found under its name in the tool hash table"
            )));
        }
    }
    Ok(())
}

struct Check<'p, 'a> {
    p: &'p Program<'a>,
    /// The automaton slots an inner record already claimed.
    slots: RefCell<Vec<bool>>,
}

impl Check<'_, '_> {
    /// `n` records of `size` words from word `at` lie inside the words, after
    /// the header. Once this holds, `at + i * size + f` cannot overflow for
    /// `i < n` and `f < size`.
    fn records(&self, what: &str, at: u32, n: u32, size: u32) -> Result<(), LoadError> {
        let end = u64::from(at) + u64::from(n) * u64::from(size);
        if n > 0 && (at < HDR_WORDS || end > u64::from(self.p.n_words())) {
            return Err(layout_error(format!(
                "the {what} records run past the table words"
            )));
        }
        Ok(())
    }

    /// The string whose offset and length are words `at` and `at + 1` lies
    /// inside the bytes.
    fn string(&self, what: &str, at: u32) -> Result<(), LoadError> {
        let (off, len) = (self.p.w(at), self.p.w(at.saturating_add(1)));
        if u64::from(off) + u64::from(len) > self.p.bytes.len() as u64 {
            return Err(layout_error(format!(
                "a {what} string runs past the string bytes"
            )));
        }
        Ok(())
    }

    fn optional_string(&self, what: &str, at: u32) -> Result<(), LoadError> {
        if self.p.w(at.saturating_add(1)) == NONE {
            return Ok(());
        }
        self.string(what, at)
    }

    fn rule(&self, at: u32, n_sources: u32) -> Result<(), LoadError> {
        self.string("rule", at + R_TEXT)?;
        self.string("rule", at + R_TOOL)?;
        self.optional_string("rule", at + R_TOOL + 2)?;
        self.optional_string("rule", at + R_NOTE)?;
        if self.p.w(at + R_SOURCE) >= n_sources {
            return Err(layout_error(
                "a rule names a source the tables do not hold".into(),
            ));
        }
        Ok(())
    }

    fn rule_id(&self, id: u32, n_rules: u32) -> Result<(), LoadError> {
        if id >= n_rules {
            return Err(layout_error(format!(
                "the tables name rule {id} of {n_rules}"
            )));
        }
        Ok(())
    }

    /// A field matcher record (or `NONE`): its callback and DFA lists inside
    /// the words, their rule ids and DFA indexes in range. The trie it roots
    /// is read through bounds-checked accessors under the work budget.
    fn matcher(&self, fm: u32, n_rules: u32) -> Result<(), LoadError> {
        if fm == NONE {
            return Ok(());
        }
        let p = self.p;
        self.records("field matcher", fm, 1, FM_WORDS)?;
        let inner = p.w(fm + FM_INNER);
        if inner != NONE {
            self.inner(inner, n_rules)?;
        }
        let (cb, n_cb) = (p.w(fm + FM_CB), p.w(fm + FM_CB + 1));
        self.records("callback", cb, n_cb, 3)?;
        for k in 0..n_cb {
            self.rule_id(p.w(cb + 3 * k), n_rules)?;
            self.string("callback", cb + 3 * k + 1)?;
        }
        let (dl, n_dl) = (p.w(fm + FM_DFA), p.w(fm + FM_DFA + 1));
        self.records("DFA list", dl, n_dl, 2)?;
        for k in 0..n_dl {
            let patterns = match p.dfas.get(p.w(dl + 2 * k) as usize) {
                Some(Dfa::Owned(d)) => d.pattern_len(),
                Some(Dfa::Borrowed(d)) => d.pattern_len(),
                None => {
                    return Err(layout_error(
                        "a field matcher names a DFA the artifact does not hold".into(),
                    ))
                }
            };
            let map = p.w(dl + 2 * k + 1);
            let n = u32::try_from(patterns).unwrap_or(NONE);
            self.records("DFA pattern map", map, n, 1)?;
            for pid in 0..n {
                self.rule_id(p.w(map + pid), n_rules)?;
            }
        }
        Ok(())
    }

    /// An inner record: its automaton slot in range and its own, every
    /// needle a non-empty string, every entry's rule id, strings and pieces
    /// in range, every group's prefix a string, each needle's posting
    /// triples sorted by group, strictly, and every entry in exactly one
    /// posting list, of a needle it names, in a group whose prefix its own
    /// starts with, each list sorted
    /// by rule id (the walk skips ahead by binary search, and a rule left
    /// out of every list could never fire). The groups' trie is read
    /// through bounds-checked accessors under the work budget, as the
    /// field matcher's is.
    fn inner(&self, rec: u32, n_rules: u32) -> Result<(), LoadError> {
        let p = self.p;
        self.records("inner", rec, 1, INNER_WORDS)?;
        let slot = p.w(rec + I_AUTOMATON);
        match self.slots.borrow_mut().get_mut(slot as usize) {
            Some(used) if !*used => *used = true,
            _ => {
                return Err(layout_error(format!(
                    "an inner record names automaton {slot}, which is out of range or another's"
                )))
            }
        }
        let (needles, n_needles) = (p.w(rec + I_NEEDLES), p.w(rec + I_NEEDLES + 1));
        self.records("needle", needles, n_needles, 2)?;
        for k in 0..n_needles {
            self.string("needle", needles + 2 * k)?;
            if p.w(needles + 2 * k + 1) == 0 {
                return Err(layout_error("an inner record holds an empty needle".into()));
            }
        }
        let (entries, n_entries) = (p.w(rec + I_ENTRIES), p.w(rec + I_ENTRIES + 1));
        self.records("inner entry", entries, n_entries, ENTRY_WORDS)?;
        for e in 0..n_entries {
            let at = entries + e * ENTRY_WORDS;
            self.rule_id(p.w(at + E_ID), n_rules)?;
            self.string("inner entry", at + E_PREFIX)?;
            self.string("inner entry", at + E_SUFFIX)?;
            let (pieces, n) = (p.w(at + E_PIECES), p.w(at + E_PIECES + 1));
            if n == 0 {
                return Err(layout_error("an inner entry has no pieces".into()));
            }
            self.records("inner piece", pieces, n, 1)?;
            for i in 0..n {
                if p.w(pieces + i) >= n_needles {
                    return Err(layout_error(
                        "an inner entry names a needle its record does not hold".into(),
                    ));
                }
            }
        }
        let bytes = |at: u32| {
            let (off, len) = (p.w(at) as usize, p.w(at + 1) as usize);
            p.bytes
                .get(off..off.saturating_add(len))
                .unwrap_or_default()
        };
        let (groups, n_groups) = (p.w(rec + I_GROUPS), p.w(rec + I_GROUPS + 1));
        self.records("inner group", groups, n_groups, GROUP_WORDS)?;
        for gi in 0..n_groups {
            self.string("inner group", groups + gi * GROUP_WORDS)?;
        }
        let postings = p.w(rec + I_POSTINGS);
        self.records("posting", postings, n_needles, 2)?;
        let mut seen = vec![false; n_entries as usize];
        for k in 0..n_needles {
            let (triples, n_triples) = (p.w(postings + 2 * k), p.w(postings + 2 * k + 1));
            self.records("inner posting", triples, n_triples, POSTING_WORDS)?;
            let mut last_group = None;
            for i in 0..n_triples {
                let at = triples + i * POSTING_WORDS;
                let g = p.w(at);
                let bad =
                    || layout_error(format!("posting list {k} of an inner record is malformed"));
                // The walk finds a group's list by binary search.
                if g >= n_groups || last_group.is_some_and(|l| l >= g) {
                    return Err(bad());
                }
                last_group = Some(g);
                let prefix = bytes(groups + g * GROUP_WORDS);
                let (list, n) = (p.w(at + 1), p.w(at + 2));
                self.records("posting", list, n, 1)?;
                let mut last = 0;
                for j in 0..n {
                    let e = p.w(list + j);
                    let Some(s) = seen.get_mut(e as usize) else {
                        return Err(bad());
                    };
                    let at = entries + e * ENTRY_WORDS;
                    let id = p.w(at + E_ID);
                    let (pieces, np) = (p.w(at + E_PIECES), p.w(at + E_PIECES + 1));
                    // An entry filed under a group whose prefix its own
                    // does not start with would be looked at for values it
                    // cannot match, and never for those it can.
                    if *s
                        || id < last
                        || !(0..np).any(|j| p.w(pieces + j) == k)
                        || !bytes(at + E_PREFIX).starts_with(prefix)
                    {
                        return Err(bad());
                    }
                    *s = true;
                    last = id;
                }
            }
        }
        if seen.iter().any(|s| !s) {
            return Err(layout_error(
                "an inner entry is in no posting list: its rule could never fire".into(),
            ));
        }
        Ok(())
    }
}

/// Whether rule flags holding `F_SERVER` are a bare allow glob, the only
/// rule a server bound may be put on.
fn server_rule(flags: u32) -> bool {
    flags & F_LIST_MASK == 2 && flags & (F_GLOB | F_BARE) == F_GLOB | F_BARE && flags & F_CARVE == 0
}
