//! Warnings about tool names a host never sends: a policy written for
//! `bash` reads nothing of Claude Code, which names the tool `Bash`, so
//! every call of it falls to the default.
//!
//! Like lint, this only reads the policy: it never changes what is
//! compiled. It is asked for (`toolgate check --host claude-code`), since a
//! policy alone does not say which host will feed it.

use crate::diag::{Diagnostic, DiagnosticKind, Location};
use crate::policy::{List, Policy, RuleDecl};

/// A host whose tool names are fixed, so that a policy's names can be
/// checked against them.
///
/// ```
/// use toolgate::check::Host;
/// assert_eq!(Host::from_name("claude-code"), Some(Host::ClaudeCode));
/// assert_eq!(Host::ClaudeCode.tool("bash"), Some("Bash"));
/// assert_eq!(Host::ClaudeCode.tool("Bash"), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Host {
    /// Claude Code: `Bash`, `Read`, `Edit`, `WebFetch`, …
    ClaudeCode,
}

impl Host {
    /// The name a command line gives the host: `claude-code`.
    pub fn name(self) -> &'static str {
        match self {
            Host::ClaudeCode => "claude-code",
        }
    }

    /// The host called `name`.
    pub fn from_name(name: &str) -> Option<Host> {
        [Host::ClaudeCode].into_iter().find(|h| h.name() == name)
    }

    /// The host's own spelling of `tool`, when the host sends a tool whose
    /// name differs from `tool` in case only.
    pub fn tool(self, tool: &str) -> Option<&'static str> {
        match self {
            Host::ClaudeCode => crate::claude::builtin_tool(tool).filter(|t| *t != tool),
        }
    }

    fn title(self) -> &'static str {
        match self {
            Host::ClaudeCode => "Claude Code",
        }
    }
}

/// One warning per tool of `policy` that `host` never sends because it
/// spells the name otherwise, unless the policy covers the host's spelling
/// too. Each points at the matcher that declares the tool, or at the first
/// rule that names it.
///
/// ```
/// use toolgate::check::{host_mismatches, Host};
/// let p = toolgate::Policy::from_json(r#"{"default": "ask", "deny": ["bash"]}"#)?;
/// let w = host_mismatches(&p, Host::ClaudeCode);
/// assert_eq!(w.len(), 1);
/// assert!(w[0].message.contains("`Bash`"));
/// # Ok::<(), toolgate::Diagnostics>(())
/// ```
pub fn host_mismatches(policy: &Policy, host: Host) -> Vec<Diagnostic> {
    let is_alias = |name: &str| policy.aliases.iter().any(|(a, _)| a == name);
    // Every tool the policy decides, with where it is first named: a
    // declared matcher, an alias's tool, or a rule's tool that is no alias.
    let mut named: Vec<(&str, Location, Named<'_>)> = Vec::new();
    for m in &policy.matchers {
        note(&mut named, &m.tool, &m.location, Named::Declared);
    }
    for ((alias, tools), at) in policy.aliases.iter().zip(&policy.alias_locations) {
        for t in tools {
            note(&mut named, t, at, Named::InAlias(alias, tools));
        }
    }
    let rules = policy
        .sources
        .iter()
        .map(|s| &s.lists)
        .chain([&policy.host])
        .flat_map(|l| List::ALL.into_iter().flat_map(move |k| l.get(k)));
    for r in rules.filter(|r: &&RuleDecl| !is_alias(&r.tool)) {
        note(&mut named, &r.tool, &r.location, Named::InRule);
    }
    let decided: Vec<&str> = named.iter().map(|n| n.0).collect();
    let mut out = Vec::new();
    for (tool, at, how) in &named {
        let Some(theirs) = host.tool(tool) else {
            continue;
        };
        if decided.contains(&theirs) {
            continue;
        }
        let widened = |alias: &str, tools: &[String]| {
            format!(
                "`\"{alias}\": [{}, \"{theirs}\"]`",
                tools
                    .iter()
                    .map(|t| format!("\"{t}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let help = match how {
            Named::Declared => {
                let alias = policy
                    .aliases
                    .iter()
                    .find(|(_, ts)| ts.iter().any(|t| t == tool));
                match alias {
                    Some((a, ts)) => format!(
                        "declare `{theirs}` under `matchers` as `{tool}` is, and add it to the alias `{a}` ({}) so its rules cover both",
                        widened(a, ts)
                    ),
                    None => format!(
                        "declare `{theirs}` under `matchers` as `{tool}` is, and add the alias `\"{theirs}\": [\"{tool}\", \"{theirs}\"]` so rules written `{theirs}(…)` cover both"
                    ),
                }
            }
            Named::InAlias(a, ts) => format!(
                "add `{theirs}` to the alias `{a}` ({}) so its rules cover both",
                widened(a, ts)
            ),
            Named::InRule => format!("write `{theirs}`, the name {} sends", host.title()),
        };
        let d = Diagnostic::new(
            DiagnosticKind::HostMismatch,
            format!(
                "{} names this tool `{theirs}`, so the rules on `{tool}` never see its calls and the default decides them",
                host.title()
            ),
        )
        .with_help(help)
        .at(at.clone())
        .with_token(*tool);
        out.push(d.as_warning());
    }
    out
}

/// Where a policy first names a tool, which decides the fix a warning
/// suggests.
#[derive(Clone, Copy)]
enum Named<'p> {
    /// Under `matchers`.
    Declared,
    /// Among an alias's tools (the alias, and all its tools).
    InAlias(&'p str, &'p [String]),
    /// As a rule's tool.
    InRule,
}

/// Adds `tool` to `named` unless it is there already: the first place a
/// tool is named is the one a warning points at.
fn note<'p>(
    named: &mut Vec<(&'p str, Location, Named<'p>)>,
    tool: &'p str,
    at: &Location,
    how: Named<'p>,
) {
    if !named.iter().any(|n| n.0 == tool) {
        named.push((tool, at.clone(), how));
    }
}
