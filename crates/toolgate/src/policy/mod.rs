//! The policy model: what a policy document says, parsed and located.
//!
//! A [`Policy`] is a document after reading: every rule list parsed by the
//! grammar into [`RuleDecl`]s that know where they were written, the sources
//! with their ranks and trust, the matcher table, the aliases and the
//! default. Nothing is merged, expanded or checked against the registry yet;
//! that is `check`'s job (and, independently, the reference evaluator's).
//!
//! The document format (JSON or TOML) is read in [`doc`]. Depends on
//! `syntax`, `diag` and `decision`.

pub mod doc;

use crate::decision::Decision;
pub use crate::decision::{List, Source};
use crate::diag::{Diagnostics, Location};

/// One rule as written: a tool name (possibly an alias or a glob) and an
/// optional specifier, with the note written beside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleDecl {
    /// The tool name as written.
    pub tool: String,
    /// The specifier, `None` for a bare rule. A carve-out's specifier starts
    /// with `!`.
    pub spec: Option<String>,
    /// Why the rule exists, when the document says.
    pub note: Option<String>,
    /// Where the rule was written.
    pub location: Location,
}

impl RuleDecl {
    /// A rule with no note and no location.
    pub fn new(tool: impl Into<String>, spec: Option<&str>) -> RuleDecl {
        RuleDecl {
            tool: tool.into(),
            spec: spec.map(str::to_string),
            note: None,
            location: Location::default(),
        }
    }

    /// The rule's string form: `Tool` or `Tool(spec)`. A rule built by hand
    /// with an empty specifier is bare.
    pub fn text(&self) -> String {
        match self.spec.as_deref() {
            Some(s) if !s.is_empty() => format!("{}({s})", self.tool),
            _ => self.tool.clone(),
        }
    }

    /// The carve-out's pattern, when the rule is one.
    pub fn carve_out(&self) -> Option<&str> {
        self.spec.as_deref().and_then(|s| s.strip_prefix('!'))
    }

    /// Whether the tool name is a glob over tool names.
    pub fn is_glob(&self) -> bool {
        self.tool.contains('*')
    }
}

/// The three lists of one source (or of the host).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleLists {
    /// Deny rules, in order.
    pub deny: Vec<RuleDecl>,
    /// Ask rules, in order.
    pub ask: Vec<RuleDecl>,
    /// Allow rules, in order.
    pub allow: Vec<RuleDecl>,
}

impl RuleLists {
    /// The list `l`.
    pub fn get(&self, l: List) -> &[RuleDecl] {
        match l {
            List::Deny => &self.deny,
            List::Ask => &self.ask,
            List::Allow => &self.allow,
        }
    }

    /// The list `l`, mutably.
    pub fn get_mut(&mut self, l: List) -> &mut Vec<RuleDecl> {
        match l {
            List::Deny => &mut self.deny,
            List::Ask => &mut self.ask,
            List::Allow => &mut self.allow,
        }
    }

    /// Parses three rule lists written in the grammar.
    ///
    /// # Errors
    ///
    /// The first list's grammar error.
    pub fn parse(allow: &str, deny: &str, ask: &str) -> Result<RuleLists, Diagnostics> {
        let mut out = RuleLists::default();
        for (l, text) in [(List::Allow, allow), (List::Deny, deny), (List::Ask, ask)] {
            let rules = crate::syntax::parse_rules(text).map_err(|e| {
                let mut d = e.to_diagnostic();
                d.location.path = l.name().to_string();
                Diagnostics::one(d)
            })?;
            out.get_mut(l).extend(rules.into_iter().map(|t| RuleDecl {
                tool: t.tool,
                spec: t.spec,
                note: None,
                location: Location {
                    file: String::new(),
                    path: l.name().to_string(),
                    span: Some(t.span),
                },
            }));
        }
        Ok(out)
    }

    /// Whether all three lists are empty.
    pub fn is_empty(&self) -> bool {
        self.deny.is_empty() && self.ask.is_empty() && self.allow.is_empty()
    }
}

/// A source with its rules, the input to a merge or a grant set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleSet {
    /// Where the rules came from.
    pub source: Source,
    /// The rules.
    pub lists: RuleLists,
    /// Where the source was declared.
    pub location: Location,
}

/// An allow rule whose tool-name glob one MCP server bounds: Claude Code's
/// `mcp__github` or `mcp__github__*` (`spec/claude-code.md`). The glob
/// matches as a tool-name glob does, and a tool past the glob's literal
/// `mcp__<server>__` may hold no further `__`
/// ([`crate::glob::server_bounded`]). No agentpolicy document can write
/// one, since agentpolicy refuses tool-name globs in the allow list; a
/// front end adds them. They are the last allow rules: a call another
/// allow rule names is allowed by that rule.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerAllow {
    /// The tool-name glob (`mcp__github__*`).
    pub glob: String,
    /// The rule as written (`mcp__github`), which verdicts name.
    pub text: String,
    /// The name of the source it belongs to (one of [`Policy::sources`]);
    /// empty, or a name no source has, for the host's own rules.
    pub source: String,
    /// Where the rule was written.
    pub location: Location,
}

/// The matcher a policy declares for one tool.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MatcherDecl {
    /// The tool.
    pub tool: String,
    /// The kind's name (`prefix`, `glob`, …); `None` registers no matcher, so
    /// the tool takes bare rules only.
    pub kind: Option<String>,
    /// The argument member the kind reads.
    pub field: Option<String>,
    /// The splitter's name, when calls of the tool are split into subjects.
    pub split: Option<String>,
    /// Where the entry was written.
    pub location: Location,
}

/// A policy: the sources and the host's rules, the matcher table, the
/// aliases and the default.
///
/// ```
/// use toolgate::Policy;
/// let p = Policy::from_json(r#"{
///     "default": "ask",
///     "matchers": {"bash": {"match": "prefix", "field": "command"}},
///     "allow": "read bash(git status:*)",
///     "deny": ["bash(rm:*)"]
/// }"#)?;
/// assert_eq!(p.host.allow.len(), 2);
/// assert_eq!(p.host.deny[0].text(), "bash(rm:*)");
/// # Ok::<(), toolgate::Diagnostics>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// What applies to a subject no rule matches. Must be set.
    pub default: Option<Decision>,
    /// The matcher table, in the order written.
    pub matchers: Vec<MatcherDecl>,
    /// Rule names that stand for several tools, in the order written.
    pub aliases: Vec<(String, Vec<String>)>,
    /// Where each alias entry was written (parallel to `aliases`).
    pub alias_locations: Vec<Location>,
    /// The sources, in the order written (the merge sorts them by rank).
    pub sources: Vec<RuleSet>,
    /// The host's own rules: the empty-named source, appended after the
    /// merged sources' rules.
    pub host: RuleLists,
    /// Server-bounded allow globs, in order: the last allow rules, after
    /// the host's.
    pub server_allows: Vec<ServerAllow>,
    /// The file the policy was read from, for diagnostics.
    pub file: String,
    /// The `guards` member as written (`spec/guards.md`), checked to build
    /// when the document was read; whoever decides calls with this policy
    /// builds it with [`crate::guards::Document::from_value`] and applies it
    /// to the calls' arguments ([`crate::guards::Guarded`]).
    pub guards: Option<serde_json::Value>,
}

impl Policy {
    /// Reads a policy document in JSON (see [`doc`] and `spec/policy.md`).
    ///
    /// # Errors
    ///
    /// Every problem found, each with its place in the document.
    pub fn from_json(text: &str) -> Result<Policy, Diagnostics> {
        doc::from_json(text)
    }

    /// Reads a policy document in TOML.
    ///
    /// # Errors
    ///
    /// As [`Policy::from_json`].
    pub fn from_toml(text: &str) -> Result<Policy, Diagnostics> {
        doc::from_toml(text)
    }

    /// The matcher declared for `tool`.
    pub fn matcher(&self, tool: &str) -> Option<&MatcherDecl> {
        self.matchers.iter().find(|m| m.tool == tool)
    }
}
