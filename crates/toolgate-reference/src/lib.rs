//! toolgate's reference evaluators and its conformance harness: each
//! specification written as plainly as possible, and the harness that holds
//! every engine to them.
//!
//! * the crate root: agentpolicy's reference ([`Reference`]), with its own
//!   reading of the built-in Claude Code kinds ([`kinds`]) and its walk for
//!   explanations ([`Explanation`]);
//! * [`rubric`]: Rubric's ([`rubric::RubricReference`]);
//! * [`authensor`]: Authensor's ([`authensor::AuthensorReference`]);
//! * [`conformance`]: the harness that runs conformance files and test
//!   files on the references, the compiled tables and the tables loaded from
//!   their artifact.
//!
//! The crate depends on `toolgate` for the document models, the grammar,
//! the intake of calls and requests, `check` (the build errors), the result
//! types and texts, and the `Evaluator` trait; never on its compiler, its
//! walkers or its built-in kinds, which `.ci/layering.sh` checks on the paths
//! this crate names. Production code in `toolgate` cannot call it at all:
//! the dependency runs the other way.
//!
//! ## agentpolicy
//!
//! It reads the policy document model directly, merges the sources, expands
//! the aliases and decides calls with loops over the rules and a
//! straightforward glob matcher. It shares no matching code with `compile`
//! or `runtime`: it is the oracle the conformance harness and the
//! differential tests hold the compiled runtime to.
//!
//! The normative text is agentpolicy's RFC 0001 (draft 0.2) as written out in
//! `agentpolicy.md`; section numbers in the comments below refer to it.
//!
//! * [`Reference::build`] validates the policy with `check` (so that the two
//!   engines refuse the same policies with the same diagnostics), then merges
//!   the sources and expands the aliases itself.
//! * `decide` (deciding one call: subjects, precedence, fold, reasons, the
//!   batch hold) and `grants` (grant sets, revocation, offer filtering) hold
//!   the rest.
//!
//! Everything here favours being obviously right over being fast: every
//! decision walks every rule of every list.

#![forbid(unsafe_code)]
#![cfg_attr(
    test,
    allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

mod decide;
mod explain;
mod grants;
pub mod kinds;

#[cfg(test)]
mod tests;

pub mod authensor;
pub mod conformance;
pub mod guards;
pub mod rubric;

pub use explain::{Explanation, Outcome, RuleTrace, SubjectTrace};

use toolgate::check;
use toolgate::decision::Decision;
use toolgate::diag::DiagnosticKind;
use toolgate::diag::{Diagnostic, Diagnostics};
use toolgate::ir::Ir;
use toolgate::policy::{List, Policy, RuleDecl, Source};
use toolgate::registry::Registry;

/// agentpolicy's PrefixMatcher on one string: `P:*` matches values starting
/// with `P`; any other specifier matches the value exactly.
pub fn prefix_matches(spec: &str, value: &str) -> bool {
    match spec.strip_suffix(":*") {
        Some(prefix) => value.starts_with(prefix),
        None => value == spec,
    }
}

/// agentpolicy's GlobMatcher on one string: a trailing `:*` is a wildcard at
/// a word boundary (`P:*` is `P` or `P *`; `:*` alone is everything), and
/// otherwise the specifier is a glob.
pub fn glob_spec_matches(spec: &str, value: &str) -> bool {
    match spec.strip_suffix(":*") {
        Some("") => true,
        Some(p) => glob(p, value) || glob(&format!("{p} *"), value),
        None => glob(spec, value),
    }
}

/// The glob of agentpolicy: split the pattern at every `*`; the value must
/// start with the first piece, end with the last, and contain each middle
/// piece in order, each found left-most after the previous one, with no two
/// pieces overlapping. Without a `*` the value must equal the pattern.
pub fn glob(pattern: &str, value: &str) -> bool {
    let pieces: Vec<&str> = pattern.split('*').collect();
    if pieces.len() == 1 {
        return pattern == value;
    }
    let first = pieces.first().copied().unwrap_or("");
    let last = pieces.last().copied().unwrap_or("");
    let Some(mut rest) = value.strip_prefix(first) else {
        return false;
    };
    for middle in pieces.iter().skip(1).take(pieces.len() - 2) {
        match rest.find(middle) {
            Some(i) => rest = rest.get(i + middle.len()..).unwrap_or(""),
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Whether a server-bounded allow glob names `tool`
/// (`spec/claude-code.md` §2): the glob matches, and when the glob is
/// written `mcp__<server>__…`, the tool is one of that server's, so the part
/// after `mcp__<server>__` holds no `__` of its own.
fn in_server(pattern: &str, tool: &str) -> bool {
    if !glob(pattern, tool) {
        return false;
    }
    let parts: Vec<&str> = pattern.splitn(3, "__").collect();
    let (Some(&"mcp"), Some(server), Some(_)) = (parts.first(), parts.get(1), parts.get(2)) else {
        return true;
    };
    match tool.strip_prefix(format!("mcp__{server}__").as_str()) {
        Some(name) => !name.contains("__"),
        None => false,
    }
}

/// Where a rule came from, as much of its source as deciding needs.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Origin {
    /// The source's name; empty for the host's own rules.
    name: String,
    /// The source's rank.
    rank: i64,
    /// Whether the source is trusted.
    trusted: bool,
    /// The source's hash, for the verdict's record.
    hash: String,
}

impl Origin {
    fn of(source: &Source) -> Origin {
        Origin {
            name: source.name.clone(),
            rank: source.rank,
            trusted: source.trusted,
            hash: source.hash.clone(),
        }
    }

    /// The host's own rules: the empty name, rank 0, trusted.
    fn host() -> Origin {
        Origin {
            name: String::new(),
            rank: 0,
            trusted: true,
            hash: String::new(),
        }
    }

    /// Whether a rule's note may be read to the model (§5.3): the host's own
    /// rules (the empty name) and trusted sources only.
    fn cites_notes(&self) -> bool {
        self.name.is_empty() || self.trusted
    }
}

/// One rule after the merge and the alias expansion.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Rule {
    /// The tool name (after expansion), or a glob over tool names.
    tool: String,
    /// The specifier; `None` for a bare rule. A carve-out's starts with `!`.
    spec: Option<String>,
    /// The string form as evaluated: `tool` or `tool(spec)`.
    text: String,
    /// The note written beside the rule, if any.
    note: Option<String>,
    /// The rule's source.
    origin: Origin,
    /// Whether the rule is a server-bounded allow glob
    /// ([`toolgate::policy::ServerAllow`]).
    bound: bool,
}

impl Rule {
    /// Whether the rule has no specifier.
    fn is_bare(&self) -> bool {
        self.spec.is_none()
    }

    /// The carve-out's pattern (the specifier without its `!`), when the
    /// rule is a carve-out.
    fn carve_out(&self) -> Option<&str> {
        self.spec.as_deref().and_then(|s| s.strip_prefix('!'))
    }

    /// Whether the tool name is a glob over tool names.
    fn is_glob(&self) -> bool {
        self.tool.contains('*')
    }

    /// Whether the rule's tool name names `tool`: equal, or a glob matching
    /// it (§3).
    fn names(&self, tool: &str) -> bool {
        if self.bound {
            return in_server(&self.tool, tool);
        }
        self.tool == tool || (self.is_glob() && glob(&self.tool, tool))
    }

    /// The rule as a reason cites it: `R`, or `R: note` when the note may be
    /// read to the model.
    fn cited(&self) -> String {
        match &self.note {
            Some(note) if !note.is_empty() && self.origin.cites_notes() => {
                format!("{}: {note}", self.text)
            }
            _ => self.text.clone(),
        }
    }
}

/// The deny, ask and allow lists of the policy or of one grant set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Lists {
    deny: Vec<Rule>,
    ask: Vec<Rule>,
    allow: Vec<Rule>,
}

impl Lists {
    fn get_mut(&mut self, l: List) -> &mut Vec<Rule> {
        match l {
            List::Deny => &mut self.deny,
            List::Ask => &mut self.ask,
            List::Allow => &mut self.allow,
        }
    }

    /// How many rules the three lists hold.
    fn len(&self) -> usize {
        self.deny.len() + self.ask.len() + self.allow.len()
    }
}

/// A grant set in force.
#[derive(Clone, Debug)]
struct ActiveSet {
    /// The set's source.
    source: Source,
    /// The grant scope it was activated under; `None` for no scope.
    scope: Option<String>,
    /// The rules it activated.
    lists: Lists,
}

/// The reference evaluator: a policy, merged and alias-expanded, and the
/// grant sets in force.
///
/// ```
/// use toolgate_reference::Reference;
/// use toolgate::{Call, Decision, Evaluator, Policy};
/// let policy = Policy::from_json(r#"{
///     "default": "ask",
///     "matchers": {"bash": {"match": "glob", "field": "command"}},
///     "allow": "read bash(git status:*)",
///     "deny": "bash(rm:*)"
/// }"#)?;
/// let r = Reference::build(&policy, &toolgate::builtins::registry())?;
/// let v = r.would(&Call::new("bash", r#"{"command": "rm -rf /"}"#));
/// assert_eq!(v.decision, Decision::Deny);
/// assert_eq!(v.reason, "denied by bash(rm:*)");
/// # Ok::<(), toolgate::Diagnostics>(())
/// ```
#[derive(Clone, Debug)]
pub struct Reference {
    /// The policy as given: the matcher table and the aliases are read from
    /// it while deciding and granting.
    policy: Policy,
    /// The matcher kinds and splitters.
    registry: Registry,
    /// What applies when no rule fires.
    default: Decision,
    /// The policy's lists after the merge (§5.2) and the alias expansion (§4).
    lists: Lists,
    /// The grant sets in force, in activation order.
    sets: Vec<ActiveSet>,
}

impl Reference {
    /// Validates `policy` with `check` (the same build errors as the
    /// compiled engine), then keeps the policy, its merged lists and the
    /// registry.
    ///
    /// # Errors
    ///
    /// Every problem `check` found.
    pub fn build(policy: &Policy, registry: &Registry) -> Result<Reference, Diagnostics> {
        let arena = bumpalo::Bump::new();
        let ir = Ir::from_policy(&arena, policy);
        check::check(&ir, registry).map_err(|d| d.in_file(&policy.file))?;
        // `check` refuses a policy without a default; this is only a guard.
        let Some(default) = policy.default else {
            return Err(Diagnostics::one(Diagnostic::new(
                DiagnosticKind::NoDefault,
                "the policy has no default",
            )));
        };
        Ok(Reference {
            policy: policy.clone(),
            registry: registry.clone(),
            default,
            lists: merge(policy),
            sets: Vec::new(),
        })
    }

    /// Expands one rule through the alias table (§4): one rule per tool the
    /// alias lists, in order, with the same specifier, note and source; or
    /// the rule itself when its name is no alias. One level only.
    fn expand(&self, rule: &RuleDecl, origin: &Origin) -> Vec<Rule> {
        expand(&self.policy.aliases, rule, origin)
    }
}

/// Merges the policy's sources (§5.2): stable-sorted by rank, highest
/// first; untrusted sources' allow rules and carve-outs withheld (left
/// out); the host's own
/// rules appended after every source's.
fn merge(policy: &Policy) -> Lists {
    let mut sources: Vec<_> = policy.sources.iter().collect();
    // `sort_by_key` is stable: sources of equal rank keep the order written.
    sources.sort_by_key(|set| std::cmp::Reverse(set.source.rank));
    let mut lists = Lists::default();
    for l in List::ALL {
        for set in &sources {
            if l == List::Allow && !set.source.trusted {
                continue;
            }
            let origin = Origin::of(&set.source);
            for r in set.lists.get(l) {
                // An untrusted source only restricts: its carve-outs are
                // left out with its allow rules.
                if !set.source.trusted && r.spec.as_deref().is_some_and(|s| s.starts_with('!')) {
                    continue;
                }
                lists.get_mut(l).extend(expand(&policy.aliases, r, &origin));
            }
        }
        let host = Origin::host();
        for r in policy.host.get(l) {
            lists.get_mut(l).extend(expand(&policy.aliases, r, &host));
        }
    }
    // Server-bounded globs: the last allow rules, in the order written, of
    // their source (withheld with an untrusted one's allow rules) or the
    // host's.
    for a in &policy.server_allows {
        let source = policy
            .sources
            .iter()
            .find(|set| !a.source.is_empty() && set.source.name == a.source);
        let origin = match source {
            Some(set) if !set.source.trusted => continue,
            Some(set) => Origin::of(&set.source),
            None => Origin::host(),
        };
        lists.allow.push(Rule {
            tool: a.glob.clone(),
            spec: None,
            text: a.text.clone(),
            note: None,
            origin,
            bound: true,
        });
    }
    lists
}

/// See [`Reference::expand`].
fn expand(aliases: &[(String, Vec<String>)], rule: &RuleDecl, origin: &Origin) -> Vec<Rule> {
    // A hand-built empty specifier is a bare rule (§1.4).
    let spec = rule.spec.clone().filter(|s| !s.is_empty());
    let make = |tool: &str| Rule {
        tool: tool.to_string(),
        spec: spec.clone(),
        text: match &spec {
            Some(s) => format!("{tool}({s})"),
            None => tool.to_string(),
        },
        note: rule.note.clone(),
        origin: origin.clone(),
        bound: false,
    };
    match aliases.iter().find(|(name, _)| *name == rule.tool) {
        Some((_, tools)) => tools.iter().map(|t| make(t)).collect(),
        None => vec![make(&rule.tool)],
    }
}

/// An empty scope is no scope.
fn normal_scope(scope: Option<&str>) -> Option<&str> {
    scope.filter(|s| !s.is_empty())
}

impl toolgate::engine::Evaluator for Reference {
    fn decide_batch(&self, calls: &[toolgate::call::Call]) -> Vec<toolgate::decision::Verdict> {
        self.decide_batch_plain(calls)
    }

    fn would(&self, call: &toolgate::call::Call) -> toolgate::decision::Verdict {
        self.decide_call(call).verdict
    }

    fn grant_set(
        &mut self,
        set: &toolgate::policy::RuleSet,
        scope: Option<&str>,
    ) -> toolgate::engine::Grant {
        self.activate(set, scope)
    }

    fn revoke(&mut self, source: &str, scope: Option<&str>) -> usize {
        self.revoke_source(source, scope)
    }

    fn revoke_scope(&mut self, scope: Option<&str>) -> usize {
        self.revoke_all_of_scope(scope)
    }

    fn filter(&self, tools: &[String]) -> Vec<String> {
        self.offer(tools)
    }
}
