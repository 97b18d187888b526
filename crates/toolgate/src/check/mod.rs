//! Checking a policy: merge, aliases, the registry, and the checked form.
//!
//! `check` turns an [`Ir`] into a [`Checked`] policy, the compiler's only
//! input: sources merged by rank (unnamed and duplicate sources refused,
//! untrusted allow rules withheld), aliases validated and expanded once,
//! and every rule checked against the matcher registry. Every problem is
//! collected, each naming its rule and where it was written.
//!
//! Depends on `ir`, `registry`, `policy`, `diag` and `decision`.

use crate::decision::Decision;
use crate::diag::DiagnosticKind;
use crate::diag::{Diagnostic, Diagnostics, Location};
use crate::ir::{Combining, Ir, IrRule, RuleClass, Target};
use crate::policy::List;
use crate::registry::{Lowering, MatcherKind, Registry, Splitter};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

mod host;
mod lint;
pub use host::{host_mismatches, Host};
pub use lint::did_you_mean;

/// A source after the merge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceInfo {
    /// The name; empty for the host.
    pub name: String,
    /// Authority.
    pub rank: i64,
    /// Whether its allow rules apply (and its notes are cited).
    pub trusted: bool,
    /// Where it lives.
    pub path: String,
    /// Its hash.
    pub hash: String,
}

/// A rule after alias expansion: one tool (or a glob), in one list.
#[derive(Clone, Copy, Debug)]
pub struct CRule<'a> {
    /// The tool name, or the glob.
    pub tool: &'a str,
    /// Whether `tool` is a glob over tool names.
    pub glob: bool,
    /// Whether the glob is one MCP server bounds (a bare allow rule that
    /// [`crate::glob::server_bounded`] reads).
    pub bound: bool,
    /// The specifier (a carve-out's pattern, without the `!`).
    pub spec: Option<&'a str>,
    /// Whether the rule is a carve-out.
    pub carve: bool,
    /// Index into [`Checked::sources`].
    pub source: u32,
    /// The note written beside the rule.
    pub note: Option<&'a str>,
    /// The string form as evaluated: `bash(git status:*)` for a rule written
    /// `Bash(git status:*)` under the alias `Bash → [bash]`.
    pub text: &'a str,
    /// Index into the IR's locations.
    pub location: u32,
}

/// How one tool's calls are read.
#[derive(Clone, Debug)]
pub struct ToolInfo {
    /// The tool.
    pub name: String,
    /// The argument member the matcher reads.
    pub field: Option<String>,
    /// The matcher kind, by name and implementation.
    pub kind: Option<(String, Arc<dyn MatcherKind>)>,
    /// The splitter, by name and implementation.
    pub split: Option<(String, Arc<dyn Splitter>)>,
}

/// A checked policy: what the compiler compiles.
#[derive(Clone, Debug)]
pub struct Checked<'a> {
    /// What applies when no rule fires.
    pub default: Decision,
    /// The sources in merge order (highest rank first), then the host.
    pub sources: Vec<SourceInfo>,
    /// The deny, ask and allow lists, carve-outs in place.
    pub lists: [Vec<CRule<'a>>; 3],
    /// Allow rules of untrusted sources: kept for the record, never evaluated.
    pub withheld: Vec<CRule<'a>>,
    /// The matcher table, sorted by tool name.
    pub tools: Vec<ToolInfo>,
    /// The alias table, sorted by rule name.
    pub aliases: Vec<(String, Vec<String>)>,
    /// What check found worth saying that does not stop the build: rules
    /// written more than once, folded into one (`duplicate_rule`).
    pub warnings: Vec<Diagnostic>,
}

impl Checked<'_> {
    /// The list `l`.
    pub fn list(&self, l: List) -> &[CRule<'_>] {
        self.lists.get(l.index()).map_or(&[], Vec::as_slice)
    }

    /// The matcher table entry of `tool`.
    pub fn tool(&self, tool: &str) -> Option<&ToolInfo> {
        self.tools
            .binary_search_by(|t| t.name.as_str().cmp(tool))
            .ok()
            .and_then(|i| self.tools.get(i))
    }
}

/// Checks a policy.
///
/// # Errors
///
/// Every problem found: `invalid_rule` (an unnamed or duplicate source, a bad
/// alias), `no_default`, `unknown_kind`, `unknown_splitter`, `tool_glob`,
/// `no_matcher`, `invalid_specifier`. The first is the one a conformance case
/// compares.
pub fn check<'a>(ir: &Ir<'a>, registry: &Registry) -> Result<Checked<'a>, Diagnostics> {
    let mut errors = Vec::new();

    // Sources: named, unique; merged by rank, highest first, host last.
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, s) in ir.sources.iter().enumerate() {
        if s.host {
            continue;
        }
        if s.name.is_empty() {
            errors.push(
                Diagnostic::new(DiagnosticKind::InvalidRule, "a source has no name")
                    .with_help("name every source; the name keys grants and names the file its rules persist to")
                    .at(ir.location(s.location)),
            );
        } else if seen.insert(s.name, i).is_some() {
            errors.push(
                Diagnostic::new(
                    DiagnosticKind::InvalidRule,
                    format!("two sources are named `{}`", s.name),
                )
                .with_help(format!(
                    "give each source its own name, `{}:<name>` for one skill of several",
                    s.name
                ))
                .at(ir.location(s.location))
                .with_token(s.name),
            );
        }
    }
    let mut order: Vec<usize> = (0..ir.sources.len())
        .filter(|&i| ir.sources.get(i).is_some_and(|s| !s.host))
        .collect();
    order.sort_by(|&a, &b| {
        let ra = ir.sources.get(a).map_or(0, |s| s.rank);
        let rb = ir.sources.get(b).map_or(0, |s| s.rank);
        rb.cmp(&ra)
    });
    order.extend((0..ir.sources.len()).filter(|&i| ir.sources.get(i).is_some_and(|s| s.host)));
    let mut merged_index = vec![0u32; ir.sources.len()];
    let mut sources = Vec::with_capacity(order.len());
    for (k, &i) in order.iter().enumerate() {
        if let (Some(slot), Some(s)) = (merged_index.get_mut(i), ir.sources.get(i)) {
            *slot = k as u32;
            sources.push(SourceInfo {
                name: s.name.to_string(),
                rank: s.rank,
                trusted: s.trusted,
                path: s.path.to_string(),
                hash: s.hash.to_string(),
            });
        }
    }

    // Aliases, checked in a fixed order so that the error is deterministic.
    let mut aliases: Vec<(String, Vec<String>)> = Vec::new();
    let mut alias_sorted: Vec<_> = ir.aliases.iter().collect();
    alias_sorted.sort_by(|a, b| a.name.cmp(b.name));
    for a in alias_sorted {
        let loc = ir.location(a.location);
        if let Err(d) = check_alias(a.name, a.tools) {
            errors.push(d.at(loc));
            continue;
        }
        aliases.push((
            a.name.to_string(),
            a.tools.iter().map(|t| t.to_string()).collect(),
        ));
    }

    let default = match ir.combining {
        Combining::Precedence { default: Some(d) } => d,
        Combining::Precedence { default: None } => {
            errors.push(
                Diagnostic::new(DiagnosticKind::NoDefault, "the policy has no default")
                    .with_help("set `\"default\"` to `allow`, `ask` or `deny`: what applies to a call no rule names"),
            );
            Decision::Ask
        }
        // A guard: the front ends that combine otherwise compile their IR
        // through `conditions::compile`, never through `check`.
        Combining::FirstDenyLastAllow { .. } | Combining::FirstMatch { .. } => {
            errors.push(Diagnostic::new(
                DiagnosticKind::Internal,
                "the policy's rules combine as a condition program, not as rule lists",
            ));
            Decision::Deny
        }
    };

    // The matcher table, resolved against the registry.
    let mut tools: Vec<ToolInfo> = Vec::new();
    // Tools whose matcher names an unknown kind: their rules' `no_matcher`
    // would only repeat that error.
    let mut broken: Vec<String> = Vec::new();
    for m in &ir.matchers {
        let name = ir.names.name(m.tool).to_string();
        let loc = ir.location(m.location);
        let kind = match m.kind {
            None => None,
            Some(k) => match registry.kind(k) {
                Some(imp) => Some((k.to_string(), Arc::clone(imp))),
                None => {
                    let known = registry.kind_names();
                    let hint = crate::policy::doc::suggest(k, &known)
                        .map(|s| format!("did you mean `{s}`? "))
                        .unwrap_or_default();
                    errors.push(
                        Diagnostic::new(
                            DiagnosticKind::UnknownKind,
                            format!("`{k}` is not a matcher kind"),
                        )
                        .with_help(format!("{hint}the kinds are {}", quoted(&known)))
                        .at(loc.clone()),
                    );
                    broken.push(name.clone());
                    None
                }
            },
        };
        let split = match m.split {
            None => None,
            Some(s) => match registry.splitter(s) {
                Some(imp)
                    if imp
                        .field()
                        .is_some_and(|f| m.field.is_some_and(|mf| mf != f)) =>
                {
                    let reads = imp.field().unwrap_or_default();
                    errors.push(
                        Diagnostic::new(
                            DiagnosticKind::SplitterField,
                            format!(
                                "the splitter `{s}` reads `{reads}`, and the matcher of `{name}` reads `{}`: the splitter would never find the text and the rules would see the whole line unsplit",
                                m.field.unwrap_or_default()
                            ),
                        )
                        .with_help(format!("write `\"field\": \"{reads}\"` for `{name}`, or drop `split`"))
                        .at(loc),
                    );
                    None
                }
                Some(imp) => Some((s.to_string(), Arc::clone(imp))),
                None => {
                    let known = registry.splitter_names();
                    errors.push(
                        Diagnostic::new(
                            DiagnosticKind::UnknownSplitter,
                            format!("`{s}` is not a splitter"),
                        )
                        .with_help(if known.is_empty() {
                            "no splitter is registered".to_string()
                        } else {
                            format!("the splitters are {}", quoted(&known))
                        })
                        .at(loc),
                    );
                    None
                }
            },
        };
        tools.push(ToolInfo {
            name,
            field: m.field.map(str::to_string),
            kind,
            split,
        });
    }
    tools.sort_by(|a, b| a.name.cmp(&b.name));

    // Rules: merged order, aliases expanded, each checked. Deny, ask, allow.
    // A rule written again (same list, tool, specifier, source and note)
    // decides nothing the first copy does not, so the copies fold into the
    // first, with one warning per rule saying how many there were: a
    // million copies must not make a million table entries.
    let mut lists: [Vec<CRule<'a>>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    let mut withheld = Vec::new();
    type Key<'k> = (
        usize,
        &'k str,
        bool,
        Option<&'k str>,
        bool,
        u32,
        Option<&'k str>,
    );
    let mut firsts: HashMap<Key<'a>, (u32, usize, &'a str)> = HashMap::new();
    for l in List::ALL {
        for &si in &order {
            let Some(src) = ir.sources.get(si) else {
                continue;
            };
            let merged = merged_index.get(si).copied().unwrap_or(0);
            for r in ir.rules.iter().filter(|r| {
                r.list == l
                    && r.source.0 as usize == si
                    && !matches!(r.target, Target::ServerGlob(_))
            }) {
                for c in expand(ir, r, merged, &aliases) {
                    let key = (l.index(), c.tool, c.glob, c.spec, c.carve, c.source, c.note);
                    match firsts.entry(key) {
                        std::collections::hash_map::Entry::Occupied(mut e) => {
                            e.get_mut().1 += 1;
                            continue;
                        }
                        std::collections::hash_map::Entry::Vacant(e) => {
                            e.insert((c.location, 1, c.text));
                        }
                    }
                    if l == List::Allow && !src.trusted {
                        withheld.push(c);
                        continue;
                    }
                    // An untrusted source only restricts: its carve-outs,
                    // which would cancel deny and ask rules (another
                    // source's of equal rank too), are left out with its
                    // allow rules (`spec/policy.md` §5.2).
                    if c.carve && !src.trusted {
                        continue;
                    }
                    if let Err(mut d) = check_rule(&c, l, &tools, true) {
                        if d.kind == DiagnosticKind::NoMatcher && broken.iter().any(|b| b == c.tool)
                        {
                            continue;
                        }
                        if c.text != r.text {
                            d.message = format!(
                                "{} (`{}` expands to it through the alias `{}`)",
                                d.message,
                                r.text,
                                ir.target_name(r.target)
                            );
                        }
                        errors.push(d.at(ir.location(c.location)));
                        continue;
                    }
                    if let Some(list) = lists.get_mut(l.index()) {
                        list.push(c);
                    }
                }
            }
        }
    }

    // Server-bounded globs are the last allow rules, in the order written.
    for r in ir
        .rules
        .iter()
        .filter(|r| matches!(r.target, Target::ServerGlob(_)))
    {
        let si = r.source.0 as usize;
        let trusted = ir.sources.get(si).is_some_and(|s| s.trusted);
        let merged = merged_index.get(si).copied().unwrap_or(0);
        for c in expand(ir, r, merged, &aliases) {
            let key = (
                List::Allow.index(),
                c.tool,
                c.glob,
                c.spec,
                c.carve,
                c.source,
                c.note,
            );
            if let Some(e) = firsts.get_mut(&key) {
                e.1 += 1;
                continue;
            }
            firsts.insert(key, (c.location, 1, c.text));
            if !trusted {
                withheld.push(c);
            } else if let Err(d) = check_rule(&c, List::Allow, &tools, true) {
                errors.push(d.at(ir.location(c.location)));
            } else if let Some(list) = lists.get_mut(List::Allow.index()) {
                list.push(c);
            }
        }
    }

    let mut folded: Vec<(u32, usize, &str, &str)> = firsts
        .into_iter()
        .filter(|(_, (_, n, _))| *n > 1)
        .map(|((l, ..), (loc, n, text))| {
            let list = List::from_index(l).map_or("", List::name);
            (loc, n, list, text)
        })
        .collect();
    folded.sort_unstable();
    let mut warnings: Vec<(u32, Diagnostic)> = folded
        .into_iter()
        .map(|(loc, n, list, text)| {
            let d = Diagnostic::new(
                DiagnosticKind::DuplicateRule,
                format!("the {list} rule `{text}` is written {n} times in one source; the copies are folded into one"),
            )
            .with_help("remove the copies")
            .at(ir.location(loc))
            .with_token(text);
            (loc, d)
        })
        .collect();
    warnings.extend(lint::lint(ir, &lists, &tools, &sources));
    // In the order the rules were written, as errors are.
    warnings.sort_by_key(|(loc, _)| *loc);
    let warnings = warnings.into_iter().map(|(_, d)| d).collect();
    match Diagnostics::from_vec(errors) {
        Some(d) => Err(d),
        None => Ok(Checked {
            default,
            sources,
            lists,
            withheld,
            tools,
            aliases,
            warnings,
        }),
    }
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks one alias entry; the message carries agentpolicy's text as help.
pub fn check_alias(name: &str, tools: &[&str]) -> Result<(), Diagnostic> {
    if name.is_empty() {
        return Err(
            Diagnostic::new(DiagnosticKind::InvalidRule, "an alias has no rule name")
                .with_help("name the rule the alias stands for, as in `\"Bash\": [\"bash\"]`"),
        );
    }
    if name.contains('*') {
        return Err(Diagnostic::new(
            DiagnosticKind::InvalidRule,
            format!("the alias `{name}` is a glob, and a glob names no tool"),
        )
        .with_token(name)
        .with_help("write the rule name an alias stands for exactly"));
    }
    if tools.is_empty() {
        return Err(Diagnostic::new(
            DiagnosticKind::InvalidRule,
            format!("the alias `{name}` names no tool"),
        )
        .with_token(name)
        .with_help("list the tools the rule name stands for, or remove the alias"));
    }
    for t in tools {
        if t.is_empty() || t.contains('*') || t.contains(char::is_control) {
            return Err(Diagnostic::new(
                DiagnosticKind::InvalidRule,
                format!(
                    "the alias `{}` lists `{}`, which is not a tool name",
                    crate::json::shown(name),
                    crate::json::shown(t)
                ),
            )
            .with_token(crate::json::shown(name))
            .with_help("list tools by their exact names, which hold no control character"));
        }
    }
    Ok(())
}

/// Expands a rule through the alias table: one rule per tool its name
/// stands for, in order, or the rule itself. One level only.
pub fn expand<'a>(
    ir: &Ir<'a>,
    r: &IrRule<'a>,
    source: u32,
    aliases: &[(String, Vec<String>)],
) -> Vec<CRule<'a>> {
    let name = ir.target_name(r.target);
    let bound = matches!(r.target, Target::ServerGlob(_));
    let glob = bound || matches!(r.target, Target::Glob(_));
    let spec = r.spec();
    let carve = r.class == RuleClass::CarveOut;
    let make = |tool: &'a str, text: &'a str| CRule {
        tool,
        glob,
        bound,
        spec,
        carve,
        source,
        note: r.note,
        text,
        location: r.location,
    };
    match aliases.iter().find(|(n, _)| n == name && !bound) {
        Some((_, tools)) => tools
            .iter()
            .map(|t| {
                let tool: &'a str = ir.arena.alloc_str(t);
                let text: &'a str = match r.conds.first() {
                    Some(_) => ir.arena.alloc_str(&format!(
                        "{t}({})",
                        r.text
                            .get(name.len() + 1..r.text.len().saturating_sub(1))
                            .unwrap_or("")
                    )),
                    None => tool,
                };
                make(tool, text)
            })
            .collect(),
        None => vec![make(name, r.text)],
    }
}

/// What makes a rule unable to fire: its kind and agentpolicy's text for it
/// (as a grant refusal quotes it, with toolgate's prefix).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleError {
    /// The diagnostic.
    pub diagnostic: Diagnostic,
    /// agentpolicy's wording: `toolgate: tool-name glob: mcp__* is not
    /// honoured in the allow list`.
    pub reference_text: String,
}

/// Checks one expanded rule of list `l` against the matcher table.
/// `lower` also lowers the specifier, to refuse one the kind cannot read.
///
/// # Errors
///
/// The diagnostic, with agentpolicy's wording as the reference text.
pub fn check_rule(
    c: &CRule<'_>,
    l: List,
    tools: &[ToolInfo],
    lower: bool,
) -> Result<(), Diagnostic> {
    check_rule_detailed(c, l, tools, lower).map_err(|e| e.diagnostic)
}

/// As [`check_rule`], with agentpolicy's wording beside the diagnostic.
///
/// # Errors
///
/// See [`check_rule`].
pub fn check_rule_detailed(
    c: &CRule<'_>,
    l: List,
    tools: &[ToolInfo],
    lower: bool,
) -> Result<(), RuleError> {
    let text = c.text;
    if c.tool.is_empty() {
        return Err(RuleError {
            diagnostic: Diagnostic::new(
                DiagnosticKind::InvalidRule,
                format!("rule `{text}` has no tool name"),
            )
            .with_token(text)
            .with_help("write the tool's name before the parenthesis"),
            reference_text: format!(
                "toolgate: rule {}: missing tool name",
                crate::quote::go_quote(text)
            ),
        });
    }
    if c.glob {
        if l == List::Allow && !c.bound {
            return Err(RuleError {
                diagnostic: Diagnostic::new(
                    DiagnosticKind::ToolGlob,
                    format!("the tool-name glob `{text}` is not honoured in the allow list"),
                )
                .with_token(text)
                .with_help("an allow rule names its tool exactly; move the glob to the deny or ask list, or list the tools"),
                reference_text: format!("toolgate: tool-name glob: {text} is not honoured in the allow list"),
            });
        }
        if c.spec.is_some() {
            return Err(RuleError {
                diagnostic: Diagnostic::new(
                    DiagnosticKind::ToolGlob,
                    format!("the tool-name glob `{text}` takes no specifier"),
                )
                .with_token(text)
                .with_help("a glob names no matcher; write the bare glob, or name the tool"),
                reference_text: format!("toolgate: tool-name glob: {text} takes no specifier"),
            });
        }
        return Ok(());
    }
    let Some(spec) = c.spec else { return Ok(()) };
    let entry = tools
        .binary_search_by(|t| t.name.as_str().cmp(c.tool))
        .ok()
        .and_then(|i| tools.get(i));
    let Some((kind_name, kind)) = entry.and_then(|t| t.kind.as_ref()) else {
        let near = tools
            .iter()
            .filter(|t| t.kind.is_some() && t.name.eq_ignore_ascii_case(c.tool))
            .map(|t| t.name.as_str())
            .min();
        let reference_text = match near {
            Some(n) => {
                format!("toolgate: no matcher for the rule's tool: {text}; did you mean {n}?")
            }
            None => format!("toolgate: no matcher for the rule's tool: {text}"),
        };
        let declared: Vec<&str> = tools
            .iter()
            .filter(|t| t.kind.is_some())
            .map(|t| t.name.as_str())
            .collect();
        let typo = did_you_mean(c.tool, &declared);
        let help = match (near, typo) {
            (Some(n), _) => format!("did you mean `{n}`? tool names are case-sensitive"),
            (None, Some(n)) => format!(
                "did you mean `{n}`? or declare a matcher for `{}` under `matchers`",
                c.tool
            ),
            (None, None) => format!(
                "declare a matcher for `{}` under `matchers`, or write the bare rule `{}` to cover every call",
                c.tool, c.tool
            ),
        };
        return Err(RuleError {
            diagnostic: Diagnostic::new(
                DiagnosticKind::NoMatcher,
                format!(
                    "rule `{text}` has a specifier, but no matcher is declared for `{}`",
                    c.tool
                ),
            )
            .with_token(text)
            .with_help(help),
            reference_text,
        });
    };
    if lower {
        if let Err(msg) = kind.lower(spec) {
            return Err(RuleError {
                diagnostic: Diagnostic::new(
                    DiagnosticKind::InvalidSpecifier,
                    format!(
                        "the `{kind_name}` matcher cannot read the specifier of `{text}`: {msg}"
                    ),
                )
                .with_token(text)
                .with_help("fix the specifier, or use a matcher kind that reads it"),
                reference_text: format!("toolgate: rule {}: {msg}", crate::quote::go_quote(text)),
            });
        }
    }
    Ok(())
}

/// The lowering of a specifier by its tool's kind, for the compiler.
pub fn lowering(tool: &ToolInfo, spec: &str) -> Option<Lowering> {
    tool.kind.as_ref().and_then(|(_, k)| k.lower(spec).ok())
}

/// The location of a rule, for a diagnostic built outside `check`.
pub fn rule_location(ir: &Ir<'_>, c: &CRule<'_>) -> Location {
    ir.location(c.location)
}
