//! The decision case: a policy document, grant sets, revocations, calls, a
//! batch and an offer, generated with a bias towards matches, and printed as
//! a decisions-format conformance file.

use super::run::{Outcome, Ran};
use super::{chance, count, pick};
use arbitrary::{Arbitrary, Result, Unstructured};
use serde_json::{json, Map, Value};
use std::fmt;
use toolgate::decision::Verdict;
use toolgate::engine::Grant;

/// Tools that calls name and rules name.
pub(super) const TOOLS: &[&str] = &["bash", "read", "edit", "mcp__a__b"];
/// Tools only calls name (no rule names them but a glob may).
const OTHER_TOOLS: &[&str] = &["mcp__a__c", "other", "Bash", "BASH"];
/// Tool-name globs.
const GLOBS: &[&str] = &["mcp__*", "*", "mcp__a__*", "b*", "e*t", "*d"];
/// Argument members a matcher reads.
pub(super) const FIELDS: &[&str] = &["command", "path"];
/// The words specifiers and values are made of.
pub(super) const WORDS: &[&str] = &[
    "git", "status", "push", "rm", "-rf", "ls", "a", "b", "./src", "/etc", ".env", "main", "x y",
    "é", "(1)", "a:", "\u{200b}",
];
/// What joins the pieces of a specifier.
pub(super) const JOINS: &[&str] = &[" ", " ", "/", "", ":", "*", " *", "* "];
/// What fills the gaps between the pieces of a value.
pub(super) const FILLERS: &[&str] = &[
    "", "", " ", "x", " --force", "/", "a", "*", ":", " rm", "\t", "é", "; ", " && ", " > ", "$(",
    "'",
];
/// Source names of the policy; `skill:a` is also a grant set's.
const SOURCE_NAMES: &[&str] = &["managed", "project", "team", "skill:a"];
/// Source names of grant sets; `team` and `managed` are also the policy's.
const GRANT_NAMES: &[&str] = &["skill:a", "skill:b", "team", "managed"];
/// Grant scopes; the empty scope is no scope.
const SCOPES: &[Option<&str>] = &[None, None, Some("s1"), Some("s2"), Some("")];
/// Notes written beside rules.
const NOTES: &[&str] = &["use fetch", "why", "", "\"quoted\"\n"];

/// One rule as written: a tool name (or alias, or glob) and a specifier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleDoc {
    /// The tool name as written.
    pub tool: String,
    /// The specifier; `None` for a bare rule. `!` starts a carve-out.
    pub spec: Option<String>,
}

impl RuleDoc {
    /// `tool` or `tool(spec)`.
    pub fn text(&self) -> String {
        match &self.spec {
            Some(s) => format!("{}({s})", self.tool),
            None => self.tool.clone(),
        }
    }
}

/// The three lists of one source (or of the host), with their notes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListsDoc {
    /// Deny rules.
    pub deny: Vec<RuleDoc>,
    /// Ask rules.
    pub ask: Vec<RuleDoc>,
    /// Allow rules.
    pub allow: Vec<RuleDoc>,
    /// Rule text as written → note.
    pub notes: Vec<(String, String)>,
    /// Write the lists as arrays of strings rather than one string.
    pub as_arrays: bool,
}

impl ListsDoc {
    fn lists(&self) -> [(&'static str, &Vec<RuleDoc>); 3] {
        [
            ("deny", &self.deny),
            ("ask", &self.ask),
            ("allow", &self.allow),
        ]
    }

    /// Writes the lists and notes into a document object.
    fn write(&self, obj: &mut Map<String, Value>) {
        for (name, rules) in self.lists() {
            if rules.is_empty() {
                continue;
            }
            let v = if self.as_arrays {
                Value::from(rules.iter().map(RuleDoc::text).collect::<Vec<_>>())
            } else {
                Value::from(join_rules(rules))
            };
            obj.insert(name.into(), v);
        }
        if !self.notes.is_empty() {
            let notes: Map<String, Value> = self
                .notes
                .iter()
                .map(|(k, v)| (k.clone(), Value::from(v.clone())))
                .collect();
            obj.insert("notes".into(), Value::Object(notes));
        }
    }
}

/// A rule list in the grammar: the rules' texts joined by spaces.
pub(super) fn join_rules(rules: &[RuleDoc]) -> String {
    rules
        .iter()
        .map(RuleDoc::text)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A declared source and its rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceDoc {
    /// The name (empty or repeated names do not build).
    pub name: String,
    /// The rank.
    pub rank: i64,
    /// The trust flag.
    pub trusted: bool,
    /// The hash recorded for the source (verdicts carry it).
    pub hash: Option<String>,
    /// The rules.
    pub lists: ListsDoc,
}

/// One entry of the matcher table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatcherEntry {
    /// The tool.
    pub tool: String,
    /// The kind (`glob`, `prefix`, or a name no registry knows).
    pub kind: Option<String>,
    /// The member the kind reads.
    pub field: Option<String>,
    /// The splitter of the tool's calls: `corpus` (the simulated splitter,
    /// answering with the subjects a call lists) or `shell` (the built-in
    /// shell splitter).
    pub split: Option<&'static str>,
}

/// A policy document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyDoc {
    /// `allow`, `ask` or `deny`.
    pub default: &'static str,
    /// The matcher table.
    pub matchers: Vec<MatcherEntry>,
    /// Alias name → tools.
    pub aliases: Vec<(String, Vec<String>)>,
    /// The declared sources.
    pub sources: Vec<SourceDoc>,
    /// The host's own rules.
    pub host: ListsDoc,
}

impl PolicyDoc {
    /// The document as JSON.
    pub fn to_json(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("default".into(), self.default.into());
        if !self.matchers.is_empty() {
            let mut m = Map::new();
            for e in &self.matchers {
                let mut entry = Map::new();
                if let Some(k) = &e.kind {
                    entry.insert("match".into(), k.clone().into());
                }
                if let Some(f) = &e.field {
                    entry.insert("field".into(), f.clone().into());
                }
                if let Some(split) = e.split {
                    entry.insert("split".into(), split.into());
                }
                m.insert(e.tool.clone(), Value::Object(entry));
            }
            obj.insert("matchers".into(), Value::Object(m));
        }
        if !self.aliases.is_empty() {
            let a: Map<String, Value> = self
                .aliases
                .iter()
                .map(|(k, v)| (k.clone(), Value::from(v.clone())))
                .collect();
            obj.insert("aliases".into(), Value::Object(a));
        }
        if !self.sources.is_empty() {
            let sources: Vec<Value> = self
                .sources
                .iter()
                .map(|s| {
                    let mut o = Map::new();
                    o.insert("name".into(), s.name.clone().into());
                    o.insert("rank".into(), s.rank.into());
                    o.insert("trusted".into(), s.trusted.into());
                    if let Some(h) = &s.hash {
                        o.insert("hash".into(), h.clone().into());
                    }
                    s.lists.write(&mut o);
                    Value::Object(o)
                })
                .collect();
            obj.insert("sources".into(), Value::from(sources));
        }
        self.host.write(&mut obj);
        Value::Object(obj)
    }

    /// The entry of `tool`, if the table has one.
    pub fn matcher(&self, tool: &str) -> Option<&MatcherEntry> {
        self.matchers.iter().find(|m| m.tool == tool)
    }

    /// Every specifier of the policy, for values to be built from.
    fn specs(&self) -> Vec<String> {
        let mut out = Vec::new();
        for l in std::iter::once(&self.host).chain(self.sources.iter().map(|s| &s.lists)) {
            for (_, rules) in l.lists() {
                out.extend(rules.iter().filter_map(|r| r.spec.clone()));
            }
        }
        out
    }
}

/// A grant set activated under a scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrantStep {
    /// The set's source name.
    pub name: String,
    /// Its rank.
    pub rank: i64,
    /// Its trust flag.
    pub trusted: bool,
    /// Allow rules.
    pub allow: Vec<RuleDoc>,
    /// Deny rules.
    pub deny: Vec<RuleDoc>,
    /// Ask rules.
    pub ask: Vec<RuleDoc>,
    /// The grant scope.
    pub scope: Option<String>,
}

/// A revocation: of one source's set under a scope, or of a whole scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RevokeStep {
    /// The source; `None` revokes the whole scope.
    pub source: Option<String>,
    /// The scope.
    pub scope: Option<String>,
}

/// A call's arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgsDoc {
    /// JSON arguments.
    Value(Value),
    /// Raw text, which may not read (invalid JSON, duplicate keys).
    Raw(String),
}

/// One subject the simulated splitter returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubjectDoc {
    /// Its arguments.
    pub args: Value,
    /// Its text.
    pub text: Option<String>,
    /// The tool it is decided against, when not the called one.
    pub tool: Option<String>,
    /// A constraint subject.
    pub constrain: bool,
}

/// What the simulated splitter answers for a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SplitDoc {
    /// These subjects (possibly none, which blocks the call).
    Subjects(Vec<SubjectDoc>),
    /// The splitter fails with this message.
    Error(String),
}

/// One call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallStep {
    /// The tool called.
    pub tool: String,
    /// The arguments.
    pub args: ArgsDoc,
    /// The splitter's answer; `None` is one subject, the call itself,
    /// without text.
    pub split: Option<SplitDoc>,
    /// `Some(name)` for a confined call.
    pub confined: Option<String>,
    /// The grant scope.
    pub scope: Option<String>,
}

/// A decision case: everything one run of the engines needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// The policy.
    pub policy: PolicyDoc,
    /// Grant sets, activated in order.
    pub grants: Vec<GrantStep>,
    /// Revocations, after the grants.
    pub revokes: Vec<RevokeStep>,
    /// Calls decided one by one, after the revocations.
    pub calls: Vec<CallStep>,
    /// Calls decided as one batch.
    pub batch: Vec<CallStep>,
    /// Tools offered to the model.
    pub offer: Vec<String>,
}

impl<'a> Arbitrary<'a> for Case {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Case> {
        gen_case(u)
    }
}

/// What the generator knows of the policy while it writes rules.
struct Ctx {
    /// Tools with a matcher kind.
    kinded: Vec<String>,
    /// Aliases.
    aliases: Vec<(String, Vec<String>)>,
    /// Specifiers written so far, for values and for reuse.
    specs: Vec<String>,
}

impl Ctx {
    /// Rule names a specifier may go with without breaking the build: tools
    /// with a kind and aliases whose tools all have one.
    fn spec_names(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .kinded
            .iter()
            .filter(|t| !self.aliases.iter().any(|(a, _)| a == *t))
            .cloned()
            .collect();
        for (a, tools) in &self.aliases {
            if tools.iter().all(|t| self.kinded.contains(t)) {
                out.push(a.clone());
            }
        }
        out
    }
}

fn gen_case(u: &mut Unstructured<'_>) -> Result<Case> {
    // The matcher table.
    let mut matchers = Vec::new();
    for &tool in TOOLS {
        let has_kind = match tool {
            "mcp__a__b" => chance(u, 1, 4)?,
            _ => chance(u, 7, 8)?,
        };
        if !has_kind && !chance(u, 1, 8)? {
            continue;
        }
        let kind = if has_kind {
            Some(if chance(u, 1, 250)? {
                "regex".to_string()
            } else {
                pick(u, &["glob", "prefix"])?.to_string()
            })
        } else {
            None
        };
        let field = if kind.is_some() && chance(u, 1, 250)? {
            None
        } else {
            Some(
                match tool {
                    "bash" if chance(u, 7, 8)? => "command",
                    "read" | "edit" if chance(u, 7, 8)? => "path",
                    _ => pick(u, FIELDS)?,
                }
                .to_string(),
            )
        };
        let split = match tool {
            "bash" if chance(u, 1, 6)? => Some("shell"),
            "bash" if chance(u, 2, 5)? => Some("corpus"),
            "bash" => None,
            _ if chance(u, 1, 10)? => Some("corpus"),
            _ => None,
        };
        matchers.push(MatcherEntry {
            tool: tool.to_string(),
            kind,
            field,
            split,
        });
    }
    let kinded: Vec<String> = matchers
        .iter()
        .filter(|m| m.kind.as_deref().is_some_and(|k| k != "regex"))
        .map(|m| m.tool.clone())
        .collect();

    // Aliases.
    let mut aliases = Vec::new();
    if chance(u, 1, 2)? {
        aliases.push(("Bash".to_string(), vec!["bash".to_string()]));
    }
    if chance(u, 1, 3)? {
        let tools = pick(
            u,
            &[&["read", "edit"][..], &["read"], &["edit", "read", "bash"]],
        )?;
        aliases.push((
            "Read".to_string(),
            tools.iter().map(|t| t.to_string()).collect(),
        ));
    }
    if chance(u, 1, 16)? {
        // An alias named like a tool: expansion is one level.
        aliases.push(("bash".to_string(), vec!["bash".into(), "edit".into()]));
    }
    if chance(u, 1, 100)? {
        let bad = pick(
            u,
            &[
                ("X*", &["bash"][..]),
                ("Y", &[]),
                ("Z", &[""]),
                ("", &["read"]),
            ],
        )?;
        aliases.push((
            bad.0.to_string(),
            bad.1.iter().map(|t| t.to_string()).collect(),
        ));
    }

    let mut ctx = Ctx {
        kinded,
        aliases: aliases.clone(),
        specs: Vec::new(),
    };

    // Most policies are small; some are long, so that tables share
    // prefixes and suffixes among many rules.
    let max = if chance(u, 1, 8)? { 12 } else { 3 };

    // Sources.
    let n_sources = count(u, 0, 3)?;
    let mut sources = Vec::new();
    let mut used = Vec::new();
    for _ in 0..n_sources {
        let mut name = pick(u, SOURCE_NAMES)?.to_string();
        if used.contains(&name) && !chance(u, 1, 100)? {
            continue;
        }
        if chance(u, 1, 250)? {
            name.clear();
        }
        used.push(name.clone());
        let trusted = chance(u, 2, 3)?;
        sources.push(SourceDoc {
            name,
            rank: u.int_in_range(-1..=3)?,
            trusted,
            hash: if chance(u, 1, 4)? {
                Some(format!("sha256:{}", used.len()))
            } else {
                None
            },
            lists: gen_lists(u, &mut ctx, !trusted, max)?,
        });
    }
    let host = gen_lists(u, &mut ctx, false, max)?;
    let default = pick(u, &["allow", "ask", "deny"])?;
    let policy = PolicyDoc {
        default,
        matchers,
        aliases,
        sources,
        host,
    };

    // Grant sets and revocations.
    let mut grants = Vec::new();
    for _ in 0..count(u, 0, 3)? {
        grants.push(GrantStep {
            name: pick(u, GRANT_NAMES)?.to_string(),
            rank: u.int_in_range(-1..=3)?,
            trusted: chance(u, 5, 6)?,
            allow: gen_rules(u, &mut ctx, RuleUse::GrantAllow, 3)?,
            deny: gen_rules(u, &mut ctx, RuleUse::GrantRestrict, 1)?,
            ask: gen_rules(u, &mut ctx, RuleUse::GrantRestrict, 1)?,
            scope: pick(u, SCOPES)?.map(str::to_string),
        });
    }
    let mut revokes = Vec::new();
    if !grants.is_empty() {
        for _ in 0..count(u, 0, 2)? {
            revokes.push(RevokeStep {
                source: if chance(u, 3, 4)? {
                    Some(pick(u, GRANT_NAMES)?.to_string())
                } else {
                    None
                },
                scope: pick(u, SCOPES)?.map(str::to_string),
            });
        }
    }

    // Calls.
    let mut specs = policy.specs();
    specs.extend(ctx.specs.iter().cloned());
    let mut calls = Vec::new();
    for _ in 0..count(u, 1, 5)? {
        calls.push(gen_call(u, &policy, &specs)?);
    }
    let mut batch = Vec::new();
    if chance(u, 1, 2)? {
        for _ in 0..count(u, 1, 4)? {
            batch.push(gen_call(u, &policy, &specs)?);
        }
    }
    let mut offer = Vec::new();
    if chance(u, 1, 2)? {
        for _ in 0..count(u, 1, 5)? {
            let t = if chance(u, 2, 3)? {
                pick(u, TOOLS)?
            } else {
                pick(u, OTHER_TOOLS)?
            };
            offer.push(t.to_string());
        }
    }
    Ok(Case {
        policy,
        grants,
        revokes,
        calls,
        batch,
        offer,
    })
}

/// Where a rule is written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RuleUse {
    /// A deny or ask list of the policy.
    Restrict,
    /// An allow list of a trusted source or the host.
    Allow,
    /// An allow list of an untrusted source: never checked, anything goes.
    Withheld,
    /// An allow list of a grant set: refusals are part of the answer.
    GrantAllow,
    /// A deny or ask list of a grant set: a rule that could never fire is
    /// refused, not fatal.
    GrantRestrict,
}

fn gen_lists(
    u: &mut Unstructured<'_>,
    ctx: &mut Ctx,
    untrusted: bool,
    max: usize,
) -> Result<ListsDoc> {
    let deny = gen_rules(u, ctx, RuleUse::Restrict, max)?;
    let ask = gen_rules(u, ctx, RuleUse::Restrict, max)?;
    let allow_use = if untrusted {
        RuleUse::Withheld
    } else {
        RuleUse::Allow
    };
    let allow = gen_rules(u, ctx, allow_use, max)?;
    let mut notes: Vec<(String, String)> = Vec::new();
    for r in deny.iter().chain(&ask).chain(&allow) {
        if chance(u, 1, 6)? {
            let key = r.text();
            if !notes.iter().any(|(k, _)| *k == key) {
                notes.push((key, pick(u, NOTES)?.to_string()));
            }
        }
    }
    Ok(ListsDoc {
        deny,
        ask,
        allow,
        notes,
        as_arrays: chance(u, 1, 4)?,
    })
}

fn gen_rules(
    u: &mut Unstructured<'_>,
    ctx: &mut Ctx,
    usage: RuleUse,
    max: usize,
) -> Result<Vec<RuleDoc>> {
    let mut out = Vec::new();
    for _ in 0..count(u, 0, max)? {
        out.push(gen_rule(u, ctx, usage)?);
    }
    Ok(out)
}

fn gen_rule(u: &mut Unstructured<'_>, ctx: &mut Ctx, usage: RuleUse) -> Result<RuleDoc> {
    // Rules that may not build: rare in the policy, common in grant sets
    // (where they are refused, not fatal) and in withheld lists.
    let lax = match usage {
        RuleUse::Restrict | RuleUse::Allow => chance(u, 1, 200)?,
        RuleUse::GrantAllow | RuleUse::GrantRestrict => chance(u, 1, 5)?,
        RuleUse::Withheld => chance(u, 1, 2)?,
    };
    let bare = chance(u, 1, 3)?;
    if bare {
        let glob_ok = usage != RuleUse::Allow || lax;
        let tool = if glob_ok && chance(u, 1, 5)? {
            pick(u, GLOBS)?.to_string()
        } else if chance(u, 1, 4)? && !ctx.aliases.is_empty() {
            u.choose(&ctx.aliases)?.0.clone()
        } else {
            pick(u, TOOLS)?.to_string()
        };
        return Ok(RuleDoc { tool, spec: None });
    }
    let names = ctx.spec_names();
    let tool = if lax || names.is_empty() {
        let all: Vec<&str> = TOOLS.iter().copied().chain(["Bash", "Read"]).collect();
        if chance(u, 1, 6)? {
            pick(u, GLOBS)?.to_string()
        } else {
            pick(u, &all)?.to_string()
        }
    } else {
        u.choose(&names)?.clone()
    };
    let spec = if !ctx.specs.is_empty() && chance(u, 1, 4)? {
        // The same specifier again, or its carve-out twin.
        let s = u.choose(&ctx.specs)?.clone();
        match s.strip_prefix('!') {
            Some(p) if chance(u, 1, 2)? => p.to_string(),
            Some(_) => s,
            None if chance(u, 1, 2)? => format!("!{s}"),
            None => s,
        }
    } else {
        let carve = chance(u, 1, 4)? && usage != RuleUse::Withheld || chance(u, 1, 40)?;
        let s = gen_spec(u)?;
        if carve {
            format!("!{s}")
        } else {
            s
        }
    };
    ctx.specs.push(spec.clone());
    Ok(RuleDoc {
        tool,
        spec: Some(spec),
    })
}

/// A specifier: a few words joined by spaces, slashes and stars, perhaps
/// ending in `:*`; never empty, never starting with `!`.
pub(super) fn gen_spec(u: &mut Unstructured<'_>) -> Result<String> {
    if chance(u, 1, 10)? {
        return Ok(pick(u, &["*", ":*", "**", "a:*b", "* *", "*:*", "ls *", "*a*a*"])?.to_string());
    }
    let mut s = String::new();
    for i in 0..count(u, 1, 3)? {
        if i > 0 {
            s.push_str(pick(u, JOINS)?);
        }
        if chance(u, 1, 6)? {
            s.push('*');
        } else {
            s.push_str(pick(u, WORDS)?);
        }
    }
    if chance(u, 1, 3)? {
        s.push_str(":*");
    } else if chance(u, 1, 8)? {
        s.push('*');
    }
    if s.is_empty() {
        s.push('*');
    }
    if s.starts_with('!') {
        s.insert(0, 'x');
    }
    Ok(s)
}

/// A value built from a specifier's own pieces, so that it often matches:
/// the pieces between the stars, joined by fillers, sometimes cut short or
/// lengthened at the word boundary.
pub(super) fn value_from_spec(u: &mut Unstructured<'_>, spec: &str) -> Result<String> {
    let spec = spec.strip_prefix('!').unwrap_or(spec);
    let (body, colon) = match spec.strip_suffix(":*") {
        Some(b) => (b, true),
        None => (spec, false),
    };
    let mut v = String::new();
    let pieces: Vec<&str> = body.split('*').collect();
    let n = pieces.len();
    for (i, p) in pieces.into_iter().enumerate() {
        if chance(u, 1, 12)? {
            // A piece left out or cut.
            let cut = p.char_indices().nth(1).map_or(0, |(i, _)| i);
            v.push_str(p.get(..cut).unwrap_or(""));
        } else {
            v.push_str(p);
        }
        if i + 1 < n {
            v.push_str(pick(u, FILLERS)?);
        }
    }
    if colon {
        match u.int_in_range(0..=4)? {
            0 => {}
            1 => v.push(' '),
            2 => v.push_str(" --all"),
            3 => v.push_str(pick(u, FILLERS)?),
            _ => v.push_str(":x"),
        }
    } else if chance(u, 1, 8)? {
        v.push_str(pick(u, FILLERS)?);
    }
    if chance(u, 1, 16)? {
        v.insert_str(0, pick(u, FILLERS)?);
    }
    Ok(v)
}

/// A value: from a specifier most of the time, else a few words.
fn gen_value(u: &mut Unstructured<'_>, specs: &[String]) -> Result<String> {
    if !specs.is_empty() && chance(u, 4, 5)? {
        let s = u.choose(specs)?.clone();
        return value_from_spec(u, &s);
    }
    let mut v = String::new();
    for i in 0..count(u, 0, 3)? {
        if i > 0 {
            v.push(' ');
        }
        v.push_str(pick(u, WORDS)?);
    }
    Ok(v)
}

/// Arguments for a call of `tool`: the member its matcher reads, mostly.
fn gen_args(
    u: &mut Unstructured<'_>,
    policy: &PolicyDoc,
    tool: &str,
    specs: &[String],
) -> Result<Value> {
    let field = match policy.matcher(tool).and_then(|m| m.field.clone()) {
        Some(f) if chance(u, 7, 8)? => f,
        _ => pick(u, FIELDS)?.to_string(),
    };
    let value = match u.int_in_range(0..=40)? {
        0 => Value::Null,
        1 => json!(7),
        2 => json!(["ls"]),
        3 => return Ok(Value::Null),
        4 => return Ok(json!("ls")),
        _ => Value::from(gen_value(u, specs)?),
    };
    let mut obj = Map::new();
    if chance(u, 1, 10)? {
        obj.insert("extra".into(), json!({"command": "rm -rf /"}));
    }
    obj.insert(field, value);
    Ok(Value::Object(obj))
}

fn gen_call(u: &mut Unstructured<'_>, policy: &PolicyDoc, specs: &[String]) -> Result<CallStep> {
    let tool = if chance(u, 6, 7)? {
        pick(u, TOOLS)?
    } else {
        pick(u, OTHER_TOOLS)?
    }
    .to_string();
    let args = if chance(u, 1, 30)? {
        ArgsDoc::Raw(
            pick(
                u,
                &[
                    r#"{"command": "ls", "command": "rm -rf /"}"#,
                    r#"{"path": "\ud800"}"#,
                    "not json",
                    r#"{"command": "ls""#,
                    r#"{"command": "ls"}"#,
                ],
            )?
            .to_string(),
        )
    } else {
        ArgsDoc::Value(gen_args(u, policy, &tool, specs)?)
    };
    let split = match policy.matcher(&tool) {
        Some(m) if m.split == Some("corpus") => match u.int_in_range(0..=12)? {
            0 => None,
            1 => Some(SplitDoc::Error("unterminated quote".into())),
            2 => Some(SplitDoc::Subjects(Vec::new())),
            _ => {
                let mut subjects = Vec::new();
                for _ in 0..count(u, 1, 4)? {
                    let sub_tool = match u.int_in_range(0..=8)? {
                        0 => Some("edit".to_string()),
                        1 => Some("read".to_string()),
                        2 => Some(String::new()),
                        3 => Some(pick(u, TOOLS)?.to_string()),
                        _ => None,
                    };
                    let routed = sub_tool.as_deref().filter(|t| !t.is_empty());
                    let args = gen_args(u, policy, routed.unwrap_or(&tool), specs)?;
                    let text = match u.int_in_range(0..=5)? {
                        0 => None,
                        1 => Some(String::new()),
                        2 => Some(pick(u, &["ls", "rm x", "echo \"hi\"\t", "é\u{200b}"])?.into()),
                        _ => args
                            .as_object()
                            .and_then(|o| o.values().next_back())
                            .and_then(Value::as_str)
                            .map(str::to_string),
                    };
                    subjects.push(SubjectDoc {
                        args,
                        text,
                        tool: sub_tool,
                        constrain: chance(u, 1, 4)?,
                    });
                }
                Some(SplitDoc::Subjects(subjects))
            }
        },
        _ => None,
    };
    let confined = match u.int_in_range(0..=5)? {
        0 => Some(String::new()),
        1 => Some("sandbox".to_string()),
        _ => None,
    };
    let scope = pick(u, SCOPES)?.map(str::to_string);
    Ok(CallStep {
        tool,
        args,
        split,
        confined,
        scope,
    })
}

// ---------------------------------------------------------------- printing

impl CallStep {
    /// The call as a decisions-format call, with the verdict it should get.
    fn to_json(&self, want: Option<&Verdict>) -> Value {
        let mut o = Map::new();
        o.insert("tool".into(), self.tool.clone().into());
        match &self.args {
            ArgsDoc::Value(v) => {
                o.insert("args".into(), v.clone());
            }
            ArgsDoc::Raw(r) => {
                o.insert("args".into(), Value::Null);
                o.insert("raw_args".into(), r.clone().into());
            }
        }
        match &self.split {
            None => {}
            Some(SplitDoc::Error(e)) => {
                o.insert("subjects_error".into(), e.clone().into());
            }
            Some(SplitDoc::Subjects(list)) => {
                let subjects: Vec<Value> = list
                    .iter()
                    .map(|s| {
                        let mut so = Map::new();
                        so.insert("args".into(), s.args.clone());
                        if let Some(t) = &s.text {
                            so.insert("text".into(), t.clone().into());
                        }
                        if let Some(t) = &s.tool {
                            so.insert("tool".into(), t.clone().into());
                        }
                        if s.constrain {
                            so.insert("constrain".into(), true.into());
                        }
                        Value::Object(so)
                    })
                    .collect();
                o.insert("subjects".into(), Value::from(subjects));
            }
        }
        if let Some(c) = &self.confined {
            o.insert("confined".into(), c.clone().into());
        }
        if let Some(s) = &self.scope {
            o.insert("scope".into(), s.clone().into());
        }
        if let Some(v) = want {
            o.insert("want".into(), want_json(v));
        }
        Value::Object(o)
    }
}

/// A verdict as a decisions-format `want`.
fn want_json(v: &Verdict) -> Value {
    let mut w = Map::new();
    w.insert("action".into(), v.decision.as_str().into());
    if v.held {
        w.insert("held".into(), true.into());
    }
    if let Some(r) = &v.rule {
        w.insert("rule".into(), r.text.clone().into());
        if !r.source.is_empty() {
            w.insert("source".into(), r.source.clone().into());
        }
    }
    w.insert("reason".into(), v.reason.clone().into());
    if !v.subject.is_empty() {
        w.insert("subject".into(), v.subject.clone().into());
    }
    if !v.confined.is_empty() {
        w.insert("confined".into(), v.confined.clone().into());
    }
    Value::Object(w)
}

fn grant_json(g: &GrantStep, got: Option<&Grant>) -> Value {
    let mut o = Map::new();
    o.insert(
        "source".into(),
        json!({"name": g.name, "rank": g.rank, "trusted": g.trusted}),
    );
    for (k, rules) in [("allow", &g.allow), ("deny", &g.deny), ("ask", &g.ask)] {
        if !rules.is_empty() {
            o.insert(k.into(), join_rules(rules).into());
        }
    }
    if let Some(s) = &g.scope {
        o.insert("scope".into(), s.clone().into());
    }
    if let Some(got) = got {
        if !got.granted.is_empty() {
            o.insert("granted".into(), Value::from(got.granted.clone()));
        }
        if !got.refused.is_empty() {
            let refused: Vec<Value> = got
                .refused
                .iter()
                .map(|r| json!({"rule": r.rule, "reason": r.reason}))
                .collect();
            o.insert("refused".into(), Value::from(refused));
        }
    }
    Value::Object(o)
}

impl Case {
    /// The case as a decisions-format conformance file, `{"cases": [...]}`,
    /// with the answers of `outcome` (the reference's) as the expectations:
    /// paste it into `testdata/regressions/` and the conformance test runs
    /// it on every engine.
    pub fn to_case_json(&self, name: &str, outcome: &Outcome) -> Value {
        let mut c = Map::new();
        c.insert("name".into(), name.into());
        c.insert("policy".into(), self.policy.to_json());
        match outcome {
            Outcome::Refused { kind, .. } => {
                c.insert("build_error".into(), kind.clone().into());
            }
            Outcome::Ran(ran) => self.write_steps(&mut c, Some(ran)),
        }
        json!({ "cases": [Value::Object(c)] })
    }

    /// The case without expectations, as JSON (what [`fmt::Display`] prints).
    pub fn to_json(&self) -> Value {
        let mut c = Map::new();
        c.insert("policy".into(), self.policy.to_json());
        self.write_steps(&mut c, None);
        Value::Object(c)
    }

    fn write_steps(&self, c: &mut Map<String, Value>, ran: Option<&Ran>) {
        if !self.grants.is_empty() {
            let grants: Vec<Value> = self
                .grants
                .iter()
                .enumerate()
                .map(|(i, g)| grant_json(g, ran.and_then(|r| r.grants.get(i))))
                .collect();
            c.insert("grants".into(), Value::from(grants));
        }
        if !self.revokes.is_empty() {
            let revokes: Vec<Value> = self
                .revokes
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let mut o = Map::new();
                    if let Some(s) = &r.source {
                        o.insert("source".into(), s.clone().into());
                    }
                    if let Some(s) = &r.scope {
                        o.insert("scope".into(), s.clone().into());
                    }
                    let removed = ran.and_then(|x| x.revokes.get(i)).copied().unwrap_or(0);
                    o.insert("removed".into(), removed.into());
                    Value::Object(o)
                })
                .collect();
            c.insert("revoke".into(), Value::from(revokes));
        }
        if !self.calls.is_empty() {
            let calls: Vec<Value> = self
                .calls
                .iter()
                .enumerate()
                .map(|(i, s)| s.to_json(ran.and_then(|r| r.calls.get(i))))
                .collect();
            c.insert("calls".into(), Value::from(calls));
        }
        if !self.batch.is_empty() {
            let batch: Vec<Value> = self
                .batch
                .iter()
                .enumerate()
                .map(|(i, s)| s.to_json(ran.and_then(|r| r.batch.get(i))))
                .collect();
            c.insert("batch".into(), Value::from(batch));
        }
        if !self.offer.is_empty() {
            let mut o = Map::new();
            o.insert("tools".into(), Value::from(self.offer.clone()));
            if let Some(r) = ran {
                o.insert("want".into(), Value::from(r.offer.clone()));
            }
            c.insert("offer".into(), Value::Object(o));
        }
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match serde_json::to_string_pretty(&self.to_json()) {
            Ok(s) => f.write_str(&s),
            Err(_) => write!(f, "{self:?}"),
        }
    }
}

// ---------------------------------------------------------------- shrinking

impl ListsDoc {
    fn shrinks(&self) -> Vec<ListsDoc> {
        let mut out = Vec::new();
        for l in 0..3 {
            let n = match l {
                0 => self.deny.len(),
                1 => self.ask.len(),
                _ => self.allow.len(),
            };
            for i in 0..n {
                let mut s = self.clone();
                let list = match l {
                    0 => &mut s.deny,
                    1 => &mut s.ask,
                    _ => &mut s.allow,
                };
                let removed = list.remove(i);
                let key = removed.text();
                let still = s
                    .deny
                    .iter()
                    .chain(&s.ask)
                    .chain(&s.allow)
                    .any(|r| r.text() == key);
                if !still {
                    s.notes.retain(|(k, _)| *k != key);
                }
                out.push(s);
            }
        }
        for i in 0..self.notes.len() {
            let mut s = self.clone();
            s.notes.remove(i);
            out.push(s);
        }
        if self.as_arrays {
            let mut s = self.clone();
            s.as_arrays = false;
            out.push(s);
        }
        out
    }
}

fn without<T: Clone>(xs: &[T]) -> Vec<Vec<T>> {
    (0..xs.len())
        .map(|i| {
            let mut v = xs.to_vec();
            v.remove(i);
            v
        })
        .collect()
}

impl CallStep {
    fn shrinks(&self) -> Vec<CallStep> {
        let mut out = Vec::new();
        if let Some(SplitDoc::Subjects(list)) = &self.split {
            for l in without(list) {
                let mut c = self.clone();
                c.split = Some(SplitDoc::Subjects(l));
                out.push(c);
            }
            for (i, s) in list.iter().enumerate() {
                let mut variants = Vec::new();
                if s.constrain {
                    variants.push(SubjectDoc {
                        constrain: false,
                        ..s.clone()
                    });
                }
                if s.tool.is_some() {
                    variants.push(SubjectDoc {
                        tool: None,
                        ..s.clone()
                    });
                }
                for v in variants {
                    let mut l = list.clone();
                    if let Some(slot) = l.get_mut(i) {
                        *slot = v;
                    }
                    let mut c = self.clone();
                    c.split = Some(SplitDoc::Subjects(l));
                    out.push(c);
                }
            }
        }
        if self.split.is_some() {
            out.push(CallStep {
                split: None,
                ..self.clone()
            });
        }
        if self.confined.is_some() {
            out.push(CallStep {
                confined: None,
                ..self.clone()
            });
        }
        if self.scope.is_some() {
            out.push(CallStep {
                scope: None,
                ..self.clone()
            });
        }
        out
    }
}

impl Case {
    /// Smaller cases: one step, rule, note, alias, matcher, source or
    /// subject fewer, or one flag cleared.
    pub fn shrinks(&self) -> Vec<Case> {
        let mut out = Vec::new();
        let with = |f: &dyn Fn(&mut Case)| {
            let mut c = self.clone();
            f(&mut c);
            c
        };
        for v in without(&self.calls) {
            out.push(with(&|c| c.calls = v.clone()));
        }
        for v in without(&self.batch) {
            out.push(with(&|c| c.batch = v.clone()));
        }
        for v in without(&self.grants) {
            out.push(with(&|c| c.grants = v.clone()));
        }
        for v in without(&self.revokes) {
            out.push(with(&|c| c.revokes = v.clone()));
        }
        for v in without(&self.offer) {
            out.push(with(&|c| c.offer = v.clone()));
        }
        for v in without(&self.policy.sources) {
            out.push(with(&|c| c.policy.sources = v.clone()));
        }
        for v in without(&self.policy.aliases) {
            out.push(with(&|c| c.policy.aliases = v.clone()));
        }
        for v in without(&self.policy.matchers) {
            out.push(with(&|c| c.policy.matchers = v.clone()));
        }
        for l in self.policy.host.shrinks() {
            out.push(with(&|c| c.policy.host = l.clone()));
        }
        for (i, s) in self.policy.sources.iter().enumerate() {
            for l in s.lists.shrinks() {
                out.push(with(&|c| {
                    if let Some(src) = c.policy.sources.get_mut(i) {
                        src.lists = l.clone();
                    }
                }));
            }
        }
        for (i, g) in self.grants.iter().enumerate() {
            for (k, list) in [&g.allow, &g.deny, &g.ask].into_iter().enumerate() {
                for v in without(list) {
                    out.push(with(&|c| {
                        if let Some(g) = c.grants.get_mut(i) {
                            match k {
                                0 => g.allow = v.clone(),
                                1 => g.deny = v.clone(),
                                _ => g.ask = v.clone(),
                            }
                        }
                    }));
                }
            }
        }
        for (which, steps) in [(0, &self.calls), (1, &self.batch)] {
            for (i, s) in steps.iter().enumerate() {
                for v in s.shrinks() {
                    out.push(with(&|c| {
                        let list = if which == 0 {
                            &mut c.calls
                        } else {
                            &mut c.batch
                        };
                        if let Some(slot) = list.get_mut(i) {
                            *slot = v.clone();
                        }
                    }));
                }
            }
        }
        out
    }

    /// The smallest case found by removing parts one at a time while
    /// `keep` still holds (greedy; `keep` is true of `self`).
    pub fn minimize(&self, keep: impl Fn(&Case) -> bool) -> Case {
        let mut best = self.clone();
        'outer: loop {
            for c in best.shrinks() {
                if keep(&c) {
                    best = c;
                    continue 'outer;
                }
            }
            return best;
        }
    }
}
