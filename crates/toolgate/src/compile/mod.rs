//! The compiler: a checked policy into the runtime's tables.
//!
//! Each specifier is lowered by its tool's matcher kind into patterns, and
//! each pattern is classified into the cheapest exact strategy, as globset
//! does: an exact literal, a prefix, a suffix, a prefix and a suffix, any
//! value, a glob with floating middle pieces (`Inner`), or a regular
//! expression. The anchored ones become paths in one trie per tool (a
//! forward trie over the value, and off each forward node a reverse trie
//! over the value's end); the floating pieces of a field matcher's globs
//! become the needles of one automaton (`inner`). So a decision costs a walk
//! over the value whatever the number of rules, and the tables grow with the
//! total length of the patterns, never exponentially. Regular
//! expressions go to DFAs built with explicit size limits; a chunk that
//! exceeds them is split, and a single pattern that exceeds them is refused
//! with a clear error.
//!
//! Depends on `check`, `registry`, `runtime::program` (the layout it writes)
//! and `decision`. It is the only writer of the layout.

mod inner;
pub(crate) mod regex;
pub(crate) mod trie;

use crate::check::{CRule, Checked, ToolInfo};
use crate::decision::Decision;
use crate::diag::DiagnosticKind;
use crate::diag::{Diagnostic, Diagnostics};
use crate::policy::List;
use crate::registry::{Lowering, Pattern};
use crate::runtime::inner::I_GROUP_ROOT;
use crate::runtime::program::*;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use trie::Trie;

/// Limits that keep compilation bounded.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The most bytes one DFA may take; a chunk of regular expressions over
    /// it is split, and a single one over it is refused.
    pub dfa_bytes: usize,
    /// The most floating-piece globs (`Inner`) of one field a group holds,
    /// unless they all have one prefix: a larger set is split by the byte
    /// after the prefix its rules share. A value that reaches few rules
    /// has them checked one by one, without the automaton; lower makes
    /// more, smaller groups and larger tables.
    pub inner_group: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            dfa_bytes: 4 << 20,
            inner_group: 4,
        }
    }
}

/// Compiles a checked policy into tables.
///
/// # Errors
///
/// `invalid_specifier` for a regular expression that does not compile, and
/// `too_complex` for one whose DFA exceeds the limits.
pub fn compile(c: &Checked<'_>, limits: Limits) -> Result<Program<'static>, Diagnostics> {
    let mut w = Writer::default();
    w.words.resize(HDR_WORDS as usize, 0);

    // Sources.
    let sources_at = w.here();
    for s in &c.sources {
        let name = w.str(&s.name);
        let path = w.str(&s.path);
        let hash = w.str(&s.hash);
        w.words
            .extend_from_slice(&[name.0, name.1, path.0, path.1, hash.0, hash.1]);
        w.words.push(s.rank as u64 as u32);
        w.words.push(((s.rank as u64) >> 32) as u32);
        w.words.push(if s.trusted { SF_TRUSTED } else { 0 });
    }

    // Rules: firing rules deny, ask, allow; then carve-outs in the same order.
    let mut fire: Vec<(List, &CRule<'_>)> = Vec::new();
    let mut carve: Vec<(List, &CRule<'_>)> = Vec::new();
    for l in List::ALL {
        for r in c.list(l) {
            if r.carve {
                carve.push((l, r));
            } else {
                fire.push((l, r));
            }
        }
    }
    let n_deny = c.list(List::Deny).iter().filter(|r| !r.carve).count() as u32;
    let n_ask = c.list(List::Ask).iter().filter(|r| !r.carve).count() as u32;
    let n_fire = fire.len() as u32;
    let all: Vec<(List, &CRule<'_>)> = fire.iter().chain(carve.iter()).copied().collect();
    let rules_at = w.here();
    for (l, r) in &all {
        w.rule(*l, r, c);
    }
    let withheld_at = w.here();
    for r in &c.withheld {
        w.rule(List::Allow, r, c);
    }

    // Aliases.
    let mut alias_tools = Vec::new();
    for (name, tools) in &c.aliases {
        let n = w.str(name);
        let list: Vec<(u32, u32)> = tools.iter().map(|t| w.str(t)).collect();
        alias_tools.push((n, list));
    }
    let aliases_at = w.here();
    let mut alias_patch = Vec::new();
    for (n, list) in &alias_tools {
        w.words.extend_from_slice(&[n.0, n.1]);
        alias_patch.push(w.words.len());
        w.words.extend_from_slice(&[0, list.len() as u32]);
    }
    for ((_, list), at) in alias_tools.iter().zip(alias_patch) {
        let here = w.here();
        if let Some(slot) = w.words.get_mut(at) {
            *slot = here;
        }
        for (o, l) in list {
            w.words.extend_from_slice(&[*o, *l]);
        }
    }

    // Tools: every tool the matcher table declares or a rule names.
    let mut names: Vec<&str> = c.tools.iter().map(|t| t.name.as_str()).collect();
    names.extend(all.iter().filter(|(_, r)| !r.glob).map(|(_, r)| r.tool));
    names.sort_unstable();
    names.dedup();

    let mut trie = Trie::default();
    let mut fms: Vec<FmBuild> = Vec::new();
    let mut errors = Vec::new();

    // The tool-name matcher for tools no rule names: the glob rules.
    let mut name_fm = FmBuild::default();
    for (id, (_, r)) in all.iter().enumerate() {
        if r.glob && !r.carve {
            name_fm.add(&mut trie, &Pattern::Glob(r.tool.to_string()), id as u32);
        }
    }
    fms.push(name_fm);

    struct ToolBuild {
        name: (u32, u32),
        field: (u32, u32),
        kind: (u32, u32),
        split: (u32, u32),
        always: Vec<u32>,
        rules_fm: usize,
        carve_fm: usize,
        kind_impl: Option<Arc<dyn crate::registry::MatcherKind>>,
        split_impl: Option<Arc<dyn crate::registry::Splitter>>,
    }
    // The rules of each tool, and the bare tool-name globs that name it: a
    // glob is tried only on the names that start with its first piece, a
    // range of the sorted names.
    let mut by_tool: HashMap<&str, Vec<u32>> = HashMap::new();
    let mut globs: HashMap<&str, Vec<u32>> = HashMap::new();
    for (id, (_, r)) in all.iter().enumerate() {
        if r.glob {
            if !r.carve && r.spec.is_none() {
                globs.entry(r.tool).or_default().push(id as u32);
            }
        } else {
            by_tool.entry(r.tool).or_default().push(id as u32);
        }
    }
    let mut named_by_glob: Vec<Vec<u32>> = vec![Vec::new(); names.len()];
    for (pattern, ids) in &globs {
        let first = pattern.split('*').next().unwrap_or("");
        let from = names.partition_point(|n| *n < first);
        for (k, name) in names.iter().enumerate().skip(from) {
            if !name.starts_with(first) {
                break;
            }
            if crate::glob::matches(pattern, name) {
                if let Some(v) = named_by_glob.get_mut(k) {
                    // A server-bounded glob names only its server's tools.
                    v.extend(ids.iter().copied().filter(|&id| {
                        all.get(id as usize).is_none_or(|(_, r)| {
                            !r.bound || crate::glob::server_bounded(pattern, name)
                        })
                    }));
                }
            }
        }
    }

    let absent = (0, NONE);
    let mut tools: Vec<ToolBuild> = Vec::new();
    for (k, name) in names.iter().enumerate() {
        let info: Option<&ToolInfo> = c.tool(name);
        let mut always = named_by_glob.get(k).cloned().unwrap_or_default();
        let mut rules_fm = FmBuild::default();
        let mut carve_fm = FmBuild::default();
        for &id in by_tool.get(name).map(Vec::as_slice).unwrap_or_default() {
            let Some((_, r)) = all.get(id as usize) else {
                continue;
            };
            let target = if r.carve {
                &mut carve_fm
            } else {
                &mut rules_fm
            };
            let Some(spec) = r.spec else {
                if !r.carve {
                    always.push(id);
                }
                continue;
            };
            let lowering = info
                .and_then(|t| t.kind.as_ref())
                .map(|(_, k)| k.lower(spec));
            match lowering {
                Some(Ok(Lowering::Patterns(ps))) => {
                    for p in &ps {
                        target.add(&mut trie, p, id);
                    }
                }
                Some(Ok(Lowering::Callback)) => target.callbacks.push((id, spec.to_string())),
                Some(Err(msg)) => errors.push(
                    Diagnostic::new(
                        DiagnosticKind::InvalidSpecifier,
                        format!("the specifier of `{}` cannot be read: {msg}", r.text),
                    )
                    .with_token(r.text),
                ),
                // `check` refuses a specifier with no matcher; a rule that
                // reaches here anyway can never fire, which for a deny would
                // fail open, so it is an error too.
                None => errors.push(
                    Diagnostic::new(
                        DiagnosticKind::NoMatcher,
                        format!("rule `{}` has no matcher", r.text),
                    )
                    .with_token(r.text),
                ),
            }
        }
        always.sort_unstable();
        always.dedup();
        let rules_i = fms.len();
        fms.push(rules_fm);
        let carve_i = fms.len();
        fms.push(carve_fm);
        let opt = |w: &mut Writer, s: Option<&str>| s.map_or(absent, |s| w.str(s));
        tools.push(ToolBuild {
            name: w.str(name),
            field: opt(&mut w, info.and_then(|t| t.field.as_deref())),
            kind: opt(
                &mut w,
                info.and_then(|t| t.kind.as_ref().map(|k| k.0.as_str())),
            ),
            split: opt(
                &mut w,
                info.and_then(|t| t.split.as_ref().map(|s| s.0.as_str())),
            ),
            always,
            rules_fm: rules_i,
            carve_fm: carve_i,
            kind_impl: info.and_then(|t| t.kind.as_ref().map(|k| Arc::clone(&k.1))),
            split_impl: info.and_then(|t| t.split.as_ref().map(|s| Arc::clone(&s.1))),
        });
    }

    // Regular expressions: DFAs.
    let mut dfas = Vec::new();
    let mut dfa_lists: Vec<Vec<(u32, Vec<u32>)>> = Vec::new();
    for fm in &fms {
        match regex::build(&fm.regexes, limits) {
            Ok(built) => {
                let mut list = Vec::new();
                for (dfa, ids) in built {
                    list.push((dfas.len() as u32, ids));
                    dfas.push(Dfa::Owned(dfa));
                }
                dfa_lists.push(list);
            }
            Err(d) => {
                errors.push(d);
                dfa_lists.push(Vec::new());
            }
        }
    }
    if let Some(d) = Diagnostics::from_vec(errors) {
        return Err(d);
    }

    // Tool records, then their always lists.
    let tools_at = w.here();
    let mut always_patch = Vec::new();
    let mut fm_patch = Vec::new();
    for t in &tools {
        w.words.extend_from_slice(&[
            t.name.0, t.name.1, t.field.0, t.field.1, t.kind.0, t.kind.1, t.split.0, t.split.1,
        ]);
        always_patch.push(w.words.len());
        w.words.extend_from_slice(&[0, t.always.len() as u32]);
        fm_patch.push((w.words.len(), t.rules_fm));
        w.words.push(0);
        fm_patch.push((w.words.len(), t.carve_fm));
        w.words.push(0);
    }
    for (t, at) in tools.iter().zip(always_patch) {
        let here = w.here();
        w.patch(at, here);
        w.words.extend_from_slice(&t.always);
    }

    // The tool hash table.
    let hash_at = w.here();
    let cap = (tools.len() * 2).max(1).next_power_of_two();
    w.words.push(cap as u32);
    let slots_at = w.words.len();
    w.words.resize(slots_at + cap, 0);
    for (i, name) in names.iter().enumerate() {
        let mut slot = (name_hash(name.as_bytes()) as usize) & (cap - 1);
        while w.words.get(slots_at + slot).copied().unwrap_or(0) != 0 {
            slot = (slot + 1) & (cap - 1);
        }
        w.patch(slots_at + slot, i as u32 + 1);
    }

    // Field matcher records; their roots are patched once the nodes are laid out.
    let mut fm_at = Vec::new();
    let mut root_patch = Vec::new();
    let mut n_inner = 0u32;
    for (fm, dl) in fms.iter_mut().zip(&dfa_lists) {
        fm_at.push(w.here());
        root_patch.push((w.words.len(), fm.root));
        w.words.push(NONE);
        let cb_at = w.words.len();
        w.words
            .extend_from_slice(&[0, fm.callbacks.len() as u32, 0, dl.len() as u32, NONE]);
        if !fm.inner.is_empty() {
            let (rec, root) = inner::write(
                &mut w,
                &mut trie,
                std::mem::take(&mut fm.inner),
                n_inner,
                limits.inner_group,
            );
            w.patch(cb_at + FM_INNER as usize - 1, rec);
            root_patch.push(((rec + I_GROUP_ROOT) as usize, Some(root)));
            n_inner += 1;
        }
        let cbs: Vec<(u32, (u32, u32))> =
            fm.callbacks.iter().map(|(id, s)| (*id, w.str(s))).collect();
        let here = w.here();
        w.patch(cb_at, here);
        for (id, (o, l)) in cbs {
            w.words.extend_from_slice(&[id, o, l]);
        }
        let here = w.here();
        w.patch(cb_at + 2, here);
        let list_at = w.words.len();
        w.words.resize(list_at + dl.len() * 2, 0);
        for (k, (dfa, ids)) in dl.iter().enumerate() {
            let map = w.here();
            w.words.extend_from_slice(ids);
            w.patch(list_at + 2 * k, *dfa);
            w.patch(list_at + 2 * k + 1, map);
        }
    }
    for (at, fm) in fm_patch {
        let off = fm_at.get(fm).copied().unwrap_or(NONE);
        w.patch(at, off);
    }

    // The trie nodes.
    let node_at = trie.write(&mut w);
    for (at, root) in root_patch {
        if let Some(r) = root {
            w.patch(at, node_at(r));
        }
    }

    // The header.
    let header = [
        (H_MAGIC, PROGRAM_MAGIC),
        (H_N_RULES, all.len() as u32),
        (H_RULES, rules_at),
        (H_N_FIRE, n_fire),
        (H_N_DENY, n_deny),
        (H_N_ASK, n_ask),
        (H_N_SOURCES, c.sources.len() as u32),
        (H_SOURCES, sources_at),
        (H_N_TOOLS, tools.len() as u32),
        (H_TOOLS, tools_at),
        (H_TOOL_HASH, hash_at),
        (H_NAME_FM, fm_at.first().copied().unwrap_or(NONE)),
        (
            H_DEFAULT,
            match c.default {
                Decision::Allow => 0,
                Decision::Ask => 1,
                Decision::Deny => 2,
            },
        ),
        (H_N_ALIASES, c.aliases.len() as u32),
        (H_ALIASES, aliases_at),
        (H_N_WITHHELD, c.withheld.len() as u32),
        (H_WITHHELD, withheld_at),
        (H_N_DFAS, dfas.len() as u32),
        (H_N_INNER, n_inner),
    ];
    for (h, v) in header {
        w.patch(h as usize, v);
    }

    w.words.shrink_to_fit();
    w.bytes.shrink_to_fit();
    Ok(Program {
        words: Cow::Owned(w.words),
        bytes: Cow::Owned(w.bytes),
        dfas,
        automata: Automata::new(n_inner as usize),
        kinds: tools.iter().map(|t| t.kind_impl.clone()).collect(),
        splitters: tools.iter().map(|t| t.split_impl.clone()).collect(),
    })
}

/// The words and bytes being written.
#[derive(Default)]
pub(crate) struct Writer {
    pub words: Vec<u32>,
    pub bytes: Vec<u8>,
    strings: HashMap<Vec<u8>, u32>,
}

impl Writer {
    pub fn here(&self) -> u32 {
        self.words.len() as u32
    }

    pub fn patch(&mut self, at: usize, v: u32) {
        if let Some(slot) = self.words.get_mut(at) {
            *slot = v;
        }
    }

    /// Interns `s` in the byte blob: its offset and length.
    pub fn str(&mut self, s: &str) -> (u32, u32) {
        self.raw(s.as_bytes())
    }

    pub fn raw(&mut self, s: &[u8]) -> (u32, u32) {
        if let Some(&off) = self.strings.get(s) {
            return (off, s.len() as u32);
        }
        let off = self.bytes.len() as u32;
        self.bytes.extend_from_slice(s);
        self.strings.insert(s.to_vec(), off);
        (off, s.len() as u32)
    }

    fn rule(&mut self, l: List, r: &CRule<'_>, c: &Checked<'_>) {
        let text = self.str(r.text);
        let tool = self.str(r.tool);
        let spec = match r.spec {
            Some(s) => self.str(s),
            None => (0, NONE),
        };
        let note = match r.note {
            Some(s) => self.str(s),
            None => (0, NONE),
        };
        let trusted = c.sources.get(r.source as usize).is_some_and(|s| s.trusted);
        let mut flags = l.index() as u32;
        if r.spec.is_none() {
            flags |= F_BARE;
        }
        if r.carve {
            flags |= F_CARVE;
        }
        if r.glob {
            flags |= F_GLOB;
        }
        if r.bound {
            flags |= F_SERVER;
        }
        if let Some(n) = r.note {
            flags |= F_HAS_NOTE;
            // An empty note is no note to cite: the reason is `R`, not `R: `.
            if trusted && !n.is_empty() {
                flags |= F_CITE_NOTE;
            }
        }
        self.words.extend_from_slice(&[
            text.0, text.1, tool.0, tool.1, spec.0, spec.1, note.0, note.1, r.source, flags,
        ]);
    }
}

/// One field matcher being built.
#[derive(Default)]
struct FmBuild {
    root: Option<usize>,
    callbacks: Vec<(u32, String)>,
    regexes: Vec<(String, u32)>,
    /// The globs with floating middle pieces: the `Inner` strategy.
    inner: Vec<inner::InnerRule>,
}

impl FmBuild {
    fn add(&mut self, trie: &mut Trie, p: &Pattern, id: u32) {
        let root = *self.root.get_or_insert_with(|| trie.node());
        match p {
            Pattern::Exact(s) => {
                let n = trie.forward(root, s.as_bytes());
                trie.pay(n, id, Vec::new());
            }
            Pattern::Prefix(s) => {
                let n = trie.forward(root, s.as_bytes());
                let sub = trie.sub(n);
                trie.pay(sub, id, Vec::new());
            }
            Pattern::Suffix(s) => {
                let sub = trie.sub(root);
                let n = trie.reverse(sub, s.as_bytes());
                trie.pay(n, id, Vec::new());
            }
            Pattern::Any => {
                let sub = trie.sub(root);
                trie.pay(sub, id, Vec::new());
            }
            Pattern::Glob(g) => {
                let pieces: Vec<&str> = g.split('*').collect();
                match pieces.as_slice() {
                    [] => {}
                    [only] => {
                        let n = trie.forward(root, only.as_bytes());
                        trie.pay(n, id, Vec::new());
                    }
                    [first, mids @ .., last] => {
                        let mids: Vec<Vec<u8>> = mids
                            .iter()
                            .filter(|m| !m.is_empty())
                            .map(|m| m.as_bytes().to_vec())
                            .collect();
                        if mids.is_empty() {
                            let n = trie.forward(root, first.as_bytes());
                            let sub = trie.sub(n);
                            let r = trie.reverse(sub, last.as_bytes());
                            trie.pay(r, id, Vec::new());
                        } else {
                            self.inner.push(inner::InnerRule {
                                id,
                                prefix: first.as_bytes().to_vec(),
                                suffix: last.as_bytes().to_vec(),
                                pieces: mids,
                            });
                        }
                    }
                }
            }
            Pattern::Regex(r) => self.regexes.push((r.clone(), id)),
        }
    }
}
