//! The case shapes and how each is run.

use super::{expect_text, Report};
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use toolgate::call::{Args, Call, Subject};
use toolgate::decision::{Decision, Verdict};
use toolgate::diag::DiagnosticKind;
use toolgate::engine::{Engine, Evaluator};
use toolgate::policy::{Policy, RuleLists, RuleSet, Source};
use toolgate::registry::{Registry, Splitter};

/// An engine the harness can run cases on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EngineKind {
    /// The reference evaluator.
    Reference,
    /// The compiled runtime.
    Compiled,
    /// The compiled runtime written to an artifact and loaded back.
    Artifact,
}

impl EngineKind {
    /// Every engine.
    pub const ALL: [EngineKind; 3] = [
        EngineKind::Reference,
        EngineKind::Compiled,
        EngineKind::Artifact,
    ];

    /// `reference` or `compiled`.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Reference => "reference",
            EngineKind::Compiled => "compiled",
            EngineKind::Artifact => "artifact",
        }
    }

    /// Builds this engine for a policy.
    ///
    /// # Errors
    ///
    /// The policy's diagnostics.
    pub fn build(
        self,
        policy: &Policy,
        registry: &Registry,
    ) -> Result<Box<dyn Evaluator>, toolgate::Diagnostics> {
        match self {
            EngineKind::Reference => Ok(Box::new(crate::Reference::build(policy, registry)?)),
            EngineKind::Compiled => Ok(Box::new(
                Engine::build_with(policy, registry)?.into_session(),
            )),
            EngineKind::Artifact => {
                let bytes = Engine::build_with(policy, registry)?.to_bytes();
                let loaded = Engine::from_bytes_with(&bytes, registry).map_err(|e| {
                    toolgate::Diagnostics::one(toolgate::Diagnostic::new(
                        DiagnosticKind::Artifact,
                        e.to_string(),
                    ))
                })?;
                Ok(Box::new(loaded.into_owned().into_session()))
            }
        }
    }
}

/// The shapes of conformance file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// Rule lists and what they parse to.
    Grammar,
    /// One specifier against one call's arguments.
    Matchers,
    /// Policies, calls and verdicts.
    Decisions,
    /// Claude Code settings files, calls and verdicts.
    ClaudeCode,
    /// Rubric bundles, requests and results.
    Rubric,
    /// Authensor policies, envelopes and results.
    Authensor,
}

/// Recognises a file's shape from its first case.
pub fn kind_of(v: &Value) -> Option<FileKind> {
    let first = v.get("cases")?.as_array()?.first()?;
    if first.get("input").is_some() {
        Some(FileKind::Grammar)
    } else if first.get("matcher").is_some() {
        Some(FileKind::Matchers)
    } else if first.get("policy").is_some() {
        Some(FileKind::Decisions)
    } else if first.get("settings").is_some() {
        Some(FileKind::ClaudeCode)
    } else if super::rubric::is_rubric(first) {
        Some(FileKind::Rubric)
    } else if super::authensor::is_authensor(first) {
        Some(FileKind::Authensor)
    } else {
        None
    }
}

pub(super) fn run(name: &str, text: &str, engines: &[EngineKind]) -> Result<Report, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("{name}: not JSON: {e}"))?;
    if super::tests::is_test_file(&v) {
        return super::tests::run(name, v, engines);
    }
    match kind_of(&v) {
        Some(FileKind::Grammar) => {
            let f: GrammarFile = serde_json::from_value(v).map_err(|e| format!("{name}: {e}"))?;
            Ok(run_grammar(name, &f))
        }
        Some(FileKind::Matchers) => {
            let f: MatchersFile = serde_json::from_value(v).map_err(|e| format!("{name}: {e}"))?;
            Ok(run_matchers(name, &f, engines))
        }
        Some(FileKind::Decisions) => {
            let f: DecisionsFile = serde_json::from_value(v).map_err(|e| format!("{name}: {e}"))?;
            Ok(run_decisions(name, &f, engines))
        }
        Some(FileKind::ClaudeCode) => {
            let f: super::claude::ClaudeFile =
                serde_json::from_value(v).map_err(|e| format!("{name}: {e}"))?;
            Ok(super::claude::run(name, &f, engines))
        }
        Some(FileKind::Rubric) => {
            let f: super::rubric::RubricFile =
                serde_json::from_value(v).map_err(|e| format!("{name}: {e}"))?;
            Ok(super::rubric::run(name, &f, engines))
        }
        Some(FileKind::Authensor) => {
            let f: super::authensor::AuthensorFile =
                serde_json::from_value(v).map_err(|e| format!("{name}: {e}"))?;
            Ok(super::authensor::run(name, &f, engines))
        }
        None => Err(format!(
            "{name}: not a conformance or test file: expected `tests` beside a `policy`, or `cases` whose entries have `input`, `matcher`, `policy`, `settings`, `bundle` or `policies`"
        )),
    }
}

pub(super) fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

// ---------------------------------------------------------------- grammar

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GrammarFile {
    cases: Vec<GrammarCase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GrammarCase {
    name: String,
    input: String,
    rules: Option<Vec<RuleOut>>,
    error: Option<ErrOut>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleOut {
    tool: String,
    spec: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ErrOut {
    kind: String,
    token: String,
    message: Option<String>,
}

fn run_grammar(file: &str, f: &GrammarFile) -> Report {
    let mut r = Report::default();
    for c in &f.cases {
        let got = toolgate::syntax::parse_rules(&c.input);
        let failure = match (&c.rules, &c.error, got) {
            (Some(want), None, Ok(rules)) => {
                let got: Vec<(String, Option<String>)> = rules
                    .iter()
                    .map(|t| (t.tool.clone(), t.spec.clone()))
                    .collect();
                let want: Vec<(String, Option<String>)> = want
                    .iter()
                    .map(|t| (t.tool.clone(), t.spec.clone()))
                    .collect();
                (got != want).then(|| format!("parsed to {got:?}, want {want:?}"))
            }
            (None, Some(want), Err(e)) => {
                if e.kind.name() != want.kind || e.token != want.token {
                    Some(format!(
                        "error {} naming {:?}, want {} naming {:?}",
                        e.kind.name(),
                        e.token,
                        want.kind,
                        want.token
                    ))
                } else if let Some(m) = &want.message {
                    let m = expect_text(m);
                    (e.reference_message() != m)
                        .then(|| format!("message {:?}, want {m:?}", e.reference_message()))
                } else {
                    None
                }
            }
            (Some(_), None, Err(e)) => Some(format!(
                "error {} naming {:?}, want rules",
                e.kind.name(),
                e.token
            )),
            (None, Some(w), Ok(_)) => Some(format!("parsed, want error {}", w.kind)),
            _ => Some("a grammar case has exactly one of `rules` and `error`".into()),
        };
        record(
            &mut r,
            file,
            &c.name,
            "grammar",
            failure.into_iter().collect(),
        );
    }
    r
}

pub(super) fn record(r: &mut Report, file: &str, case: &str, engine: &str, failures: Vec<String>) {
    if failures.is_empty() {
        r.passed += 1;
        r.passes.push(format!("{file}: {case} [{engine}]"));
    } else {
        r.failed += 1;
        for f in one_line_each(failures) {
            r.failures.push(format!("{file}: {case} [{engine}]: {f}"));
        }
    }
}

/// The failures with the same message on several engines (`[reference]
/// m`, `[compiled] m`) folded into one line (`[reference, compiled] m`),
/// in the order each message first appears.
fn one_line_each(failures: Vec<String>) -> Vec<String> {
    let mut folded: Vec<(Vec<String>, String)> = Vec::new();
    for f in failures {
        let (engine, msg) = match f.strip_prefix('[').and_then(|r| r.split_once("] ")) {
            Some((e, m)) if !e.contains(' ') => (Some(e.to_string()), m.to_string()),
            _ => (None, f),
        };
        match folded.iter_mut().find(|(_, m)| *m == msg) {
            Some((engines, _)) => engines.extend(engine),
            None => folded.push((engine.into_iter().collect(), msg)),
        }
    }
    folded
        .into_iter()
        .map(|(engines, msg)| {
            if engines.is_empty() {
                msg
            } else {
                format!("[{}] {msg}", engines.join(", "))
            }
        })
        .collect()
}

// ---------------------------------------------------------------- matchers

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MatchersFile {
    cases: Vec<MatcherCase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MatcherCase {
    matcher: String,
    spec: String,
    #[serde(default, deserialize_with = "present")]
    args: Option<Value>,
    raw: Option<String>,
    #[serde(rename = "match")]
    want: bool,
    /// toolgate extension: the argument member read (agentpolicy's corpus
    /// always reads `command`).
    field: Option<String>,
    /// toolgate extension: a name for the case.
    name: Option<String>,
}

fn run_matchers(file: &str, f: &MatchersFile, engines: &[EngineKind]) -> Report {
    let mut r = Report::default();
    for (i, c) in f.cases.iter().enumerate() {
        let field = c.field.clone().unwrap_or_else(|| "command".into());
        let args = match (&c.args, &c.raw) {
            (Some(v), None) => Args::from_value(v.clone()),
            (None, Some(raw)) => Args::from_bytes(raw.as_bytes()),
            _ => {
                record(
                    &mut r,
                    file,
                    &format!("case {i}"),
                    "harness",
                    vec!["a matcher case has exactly one of `args` and `raw`".into()],
                );
                continue;
            }
        };
        let label = c
            .name
            .clone()
            .unwrap_or_else(|| format!("{} {:?} on {}", c.matcher, c.spec, args.raw()));
        let mut failures = Vec::new();
        // One deny rule, `t(spec)`, on a tool whose matcher is the kind under
        // test: the engines' matching rules say whether the specifier matched.
        let mut policy = Policy {
            default: Some(Decision::Allow),
            ..Policy::default()
        };
        policy.matchers.push(toolgate::policy::MatcherDecl {
            tool: "t".into(),
            kind: Some(c.matcher.clone()),
            field: Some(field.clone()),
            split: None,
            location: Default::default(),
        });
        policy
            .host
            .deny
            .push(toolgate::policy::RuleDecl::new("t", Some(&c.spec)));
        for &e in engines {
            let got = match e {
                EngineKind::Reference => reference_spec_matches(&c.matcher, &c.spec, &field, &args),
                EngineKind::Compiled => Engine::build(&policy)
                    .map(|eng| !eng.matching_rules("t", &args).is_empty())
                    .map_err(|d| d.to_string()),
                EngineKind::Artifact => {
                    Engine::build(&policy)
                        .map_err(|d| d.to_string())
                        .and_then(|eng| {
                            let bytes = eng.to_bytes();
                            Engine::from_bytes(&bytes)
                                .map(|e| !e.matching_rules("t", &args).is_empty())
                                .map_err(|e| e.to_string())
                        })
                }
            };
            match got {
                Ok(m) if m == c.want => {}
                Ok(m) => failures.push(format!("[{}] matched {m}, want {}", e.name(), c.want)),
                Err(msg) => failures.push(format!("[{}] did not build: {msg}", e.name())),
            }
        }
        record(&mut r, file, &label, "matchers", failures);
    }
    r
}

/// The reference's answer for one specifier: its own reading of the member
/// (the arguments parsed again, plainly) and its own matchers.
fn reference_spec_matches(
    kind: &str,
    spec: &str,
    field: &str,
    args: &Args,
) -> Result<bool, String> {
    let value: Option<String> = serde_json::from_str::<Value>(args.raw())
        .ok()
        .filter(|_| args.error().is_none())
        .and_then(|v| v.get(field).and_then(Value::as_str).map(str::to_string));
    let Some(value) = value else { return Ok(false) };
    match kind {
        "prefix" => Ok(crate::prefix_matches(spec, &value)),
        "glob" => Ok(crate::glob_spec_matches(spec, &value)),
        other => match toolgate::builtins::registry().kind(other) {
            Some(k) => Ok(k.matches(spec, &value)),
            None => Err(format!("no matcher kind `{other}`")),
        },
    }
}

// ---------------------------------------------------------------- decisions

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DecisionsFile {
    matchers: Option<BTreeMap<String, MatcherEntry>>,
    cases: Vec<DecisionCase>,
}

impl DecisionsFile {
    /// Marks every call's expectation loose (a test file's).
    pub(super) fn loosen(&mut self) {
        for c in &mut self.cases {
            for call in c.calls.iter_mut().flatten() {
                call.want.loose = true;
            }
        }
    }
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct MatcherEntry {
    #[serde(rename = "match")]
    kind: Option<String>,
    field: Option<String>,
    split: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DecisionCase {
    name: String,
    policy: Value,
    matchers: Option<BTreeMap<String, MatcherEntry>>,
    aliases: Option<BTreeMap<String, Vec<String>>>,
    build_error: Option<String>,
    grants: Option<Vec<GrantCase>>,
    calls: Option<Vec<CallCase>>,
    batch: Option<Vec<CallCase>>,
    offer: Option<Offer>,
    /// toolgate extension: revocations after the grants, before the calls.
    revoke: Option<Vec<RevokeCase>>,
    /// toolgate extension: what the case is about.
    about: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GrantCase {
    source: SourceCase,
    allow: Option<String>,
    deny: Option<String>,
    ask: Option<String>,
    granted: Option<Vec<String>>,
    refused: Option<Vec<RefusedCase>>,
    /// toolgate extension: the grant scope.
    scope: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SourceCase {
    name: String,
    rank: i64,
    trusted: bool,
}

#[derive(Deserialize, PartialEq, Eq, Debug)]
#[serde(deny_unknown_fields)]
struct RefusedCase {
    rule: String,
    reason: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RevokeCase {
    /// The source to revoke; absent revokes the whole scope.
    source: Option<String>,
    scope: Option<String>,
    removed: usize,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct CallCase {
    /// The tool; may be left out when `call` gives the call.
    #[serde(default)]
    pub(super) tool: String,
    /// The arguments; `null` when left out (a case with `raw_args` or
    /// `call` need not give them).
    #[serde(default, deserialize_with = "present")]
    args: Option<Value>,
    subjects: Option<Vec<SubjectCase>>,
    subjects_error: Option<String>,
    confined: Option<String>,
    pub(super) want: Want,
    /// toolgate extension: the grant scope the call is decided under.
    scope: Option<String>,
    /// toolgate extension: the arguments as raw text (may be invalid).
    raw_args: Option<String>,
    /// toolgate extension: the directory the call runs in.
    cwd: Option<String>,
    /// toolgate extension: the call object as a host sends it, read by
    /// [`Call::from_value`] (toolgate's shape or Claude Code's) instead of
    /// being assembled from the members above. A call that does not read
    /// is not decided: its verdict is the deny `decide` answers such a line
    /// with, `the call could not be read: E`. Not in a batch.
    pub(super) call: Option<Value>,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct SubjectCase {
    #[serde(deserialize_with = "present")]
    args: Option<Value>,
    text: Option<String>,
    tool: Option<String>,
    constrain: Option<bool>,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct Want {
    /// `decision` too, the name `decide` prints.
    #[serde(alias = "decision")]
    pub(super) action: String,
    held: Option<bool>,
    pub(super) rule: Option<String>,
    source: Option<String>,
    /// Required in a conformance file; a test file may leave it out.
    pub(super) reason: Option<String>,
    pub(super) subject: Option<String>,
    confined: Option<String>,
    /// Set for a test file's calls (`super::tests`): only what the test
    /// gives is compared. A conformance file's expectation is compared
    /// whole, a member left out meaning empty.
    #[serde(skip)]
    pub(super) loose: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Offer {
    pub(super) tools: Vec<String>,
    pub(super) want: Vec<String>,
}

/// The simulated splitter of the corpus: the subjects a case lists for a
/// call, found by tool and compact arguments.
#[derive(Debug, Default)]
struct CorpusSplitter {
    answers: HashMap<(String, String), Result<Vec<Subject>, String>>,
}

impl Splitter for CorpusSplitter {
    fn split(&self, tool: &str, args: &Args) -> Result<Vec<Subject>, toolgate::error::SplitError> {
        match self
            .answers
            .get(&(tool.to_string(), args.raw().to_string()))
        {
            Some(a) => a.clone().map_err(toolgate::error::SplitError::from),
            None => Ok(vec![Subject::new(args.clone(), "")]),
        }
    }
}

fn call_args(c: &CallCase) -> Args {
    match (&c.raw_args, &c.args) {
        (Some(raw), _) => Args::from_bytes(raw.as_bytes()),
        (None, Some(v)) => Args::from_value(v.clone()),
        (None, None) => Args::from_value(Value::Null),
    }
}

fn splitter_for(case: &DecisionCase) -> CorpusSplitter {
    let mut s = CorpusSplitter::default();
    for c in case
        .calls
        .iter()
        .flatten()
        .chain(case.batch.iter().flatten())
    {
        let key = (c.tool.clone(), call_args(c).raw().to_string());
        if let Some(e) = &c.subjects_error {
            s.answers.insert(key, Err(e.clone()));
        } else if let Some(subjects) = &c.subjects {
            let list = subjects
                .iter()
                .map(|sc| Subject {
                    args: Args::from_value(sc.args.clone().unwrap_or(Value::Null)),
                    tool: sc.tool.clone(),
                    text: sc.text.clone().unwrap_or_default(),
                    constrain: sc.constrain.unwrap_or(false),
                })
                .collect();
            s.answers.insert(key, Ok(list));
        }
    }
    s
}

fn policy_for(file: &DecisionsFile, case: &DecisionCase) -> Result<Policy, String> {
    let mut doc = case.policy.clone();
    let Some(obj) = doc.as_object_mut() else {
        return Err("`policy` must be an object".into());
    };
    let table = case.matchers.as_ref().or(file.matchers.as_ref());
    if let Some(table) = table {
        if obj.contains_key("matchers") {
            return Err("the matchers are given both beside the policy and in it".into());
        }
        let mut m = serde_json::Map::new();
        for (tool, e) in table {
            let mut entry = serde_json::Map::new();
            if let Some(k) = &e.kind {
                entry.insert("match".into(), k.clone().into());
            }
            if let Some(f) = &e.field {
                entry.insert("field".into(), f.clone().into());
            }
            match &e.split {
                Some(Value::Bool(true)) => {
                    entry.insert("split".into(), "corpus".into());
                }
                Some(Value::String(s)) => {
                    entry.insert("split".into(), s.clone().into());
                }
                _ => {}
            }
            m.insert(tool.clone(), Value::Object(entry));
        }
        obj.insert("matchers".into(), Value::Object(m));
    }
    if let Some(aliases) = &case.aliases {
        let a: serde_json::Map<String, Value> = aliases
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.clone())))
            .collect();
        obj.insert("aliases".into(), Value::Object(a));
    }
    toolgate::policy::doc::from_value(&doc, None)
        .map_err(|d| format!("the policy does not read: {d}"))
}

pub(super) fn run_decisions(file: &str, f: &DecisionsFile, engines: &[EngineKind]) -> Report {
    let mut r = Report::default();
    for case in &f.cases {
        let mut failures = Vec::new();
        let _ = &case.about;
        match policy_for(f, case) {
            Err(msg) => {
                if case.build_error.as_deref() != Some("invalid_document") {
                    failures.push(format!("[harness] {msg}"));
                }
            }
            Ok(policy) => {
                for &e in engines {
                    for msg in run_case(case, &policy, e) {
                        failures.push(format!("[{}] {msg}", e.name()));
                    }
                }
            }
        }
        record(&mut r, file, &case.name, "decisions", failures);
    }
    r
}

fn run_case(case: &DecisionCase, policy: &Policy, e: EngineKind) -> Vec<String> {
    let mut out = Vec::new();
    let mut registry = toolgate::builtins::registry();
    registry.add_splitter("corpus", Arc::new(splitter_for(case)));
    let built = e.build(policy, &registry);
    let mut engine = match (built, &case.build_error) {
        (Err(d), Some(want)) => {
            if d.first().kind != want.as_str() {
                out.push(format!(
                    "build failed with {}, want {want}: {d}",
                    d.first().kind
                ));
            }
            return out;
        }
        (Ok(_), Some(want)) => {
            out.push(format!("built, want build error {want}"));
            return out;
        }
        (Err(d), None) => {
            out.push(format!("did not build: {d}"));
            return out;
        }
        (Ok(eng), None) => eng,
    };
    for g in case.grants.iter().flatten() {
        let lists = match RuleLists::parse(
            g.allow.as_deref().unwrap_or(""),
            g.deny.as_deref().unwrap_or(""),
            g.ask.as_deref().unwrap_or(""),
        ) {
            Ok(l) => l,
            Err(d) => {
                out.push(format!(
                    "grant set of {} does not parse: {d}",
                    g.source.name
                ));
                continue;
            }
        };
        let set = RuleSet {
            source: Source {
                name: g.source.name.clone(),
                rank: g.source.rank,
                trusted: g.source.trusted,
                ..Source::default()
            },
            lists,
            location: Default::default(),
        };
        let got = engine.grant_set(&set, g.scope.as_deref());
        let want_granted = g.granted.clone().unwrap_or_default();
        if got.granted != want_granted {
            out.push(format!(
                "grant {} granted {:?}, want {want_granted:?}",
                g.source.name, got.granted
            ));
        }
        let want_refused: Vec<(String, String)> = g
            .refused
            .iter()
            .flatten()
            .map(|x| (x.rule.clone(), expect_text(&x.reason)))
            .collect();
        let got_refused: Vec<(String, String)> = got
            .refused
            .iter()
            .map(|x| (x.rule.clone(), x.reason.clone()))
            .collect();
        if got_refused != want_refused {
            out.push(format!(
                "grant {} refused {got_refused:?}, want {want_refused:?}",
                g.source.name
            ));
        }
    }
    for rv in case.revoke.iter().flatten() {
        let removed = match &rv.source {
            Some(s) => engine.revoke(s, rv.scope.as_deref()),
            None => engine.revoke_scope(rv.scope.as_deref()),
        };
        if removed != rv.removed {
            out.push(format!(
                "revoke removed {removed} rules, want {}",
                rv.removed
            ));
        }
    }
    for (turn, c) in case.calls.iter().flatten().enumerate() {
        let got = match read_call(c, 1) {
            Ok(call) => {
                let got = engine.decide_batch(std::slice::from_ref(&call));
                let again = engine.decide_batch(std::slice::from_ref(&call));
                if got != again {
                    out.push(format!("call {} decided twice differently", turn + 1));
                }
                got
            }
            Err(v) => vec![v],
        };
        match got.first() {
            Some(v) => out.extend(
                compare(v, &c.want)
                    .into_iter()
                    .map(|m| format!("call {} ({}): {m}", turn + 1, c.tool)),
            ),
            None => out.push(format!("call {}: no verdict", turn + 1)),
        }
    }
    if let Some(batch) = &case.batch {
        if batch.iter().any(|c| c.call.is_some()) {
            out.push("a batch call cannot be given as `call`".into());
        }
        let calls: Vec<Call> = batch
            .iter()
            .enumerate()
            .map(|(i, c)| make_call(c, i + 1))
            .collect();
        let got = engine.decide_batch(&calls);
        if got.len() != batch.len() {
            out.push(format!(
                "batch of {} gave {} verdicts",
                batch.len(),
                got.len()
            ));
        }
        for (i, (v, c)) in got.iter().zip(batch).enumerate() {
            out.extend(
                compare(v, &c.want)
                    .into_iter()
                    .map(|m| format!("batch call {} ({}): {m}", i + 1, c.tool)),
            );
        }
    }
    if let Some(o) = &case.offer {
        let got = engine.filter(&o.tools);
        if got != o.want {
            out.push(format!("offer {got:?}, want {:?}", o.want));
        }
    }
    out
}

/// The call a case decides: read from its `call` object when it has one
/// (the deny a call that does not read gets, as the error), or else
/// assembled by [`make_call`].
pub(super) fn read_call(c: &CallCase, n: usize) -> Result<Call, Verdict> {
    match &c.call {
        Some(v) => Call::from_value(v.clone())
            .map_err(|e| Verdict::new(Decision::Deny, format!("the call could not be read: {e}"))),
        None => Ok(make_call(c, n)),
    }
}

pub(super) fn make_call(c: &CallCase, n: usize) -> Call {
    Call {
        tool: c.tool.clone(),
        args: call_args(c),
        run_id: "run_1".into(),
        call_id: format!("call_{n}"),
        confined: c.confined.clone(),
        scope: c.scope.clone(),
        cwd: c.cwd.clone(),
    }
}

pub(super) fn compare(v: &Verdict, w: &Want) -> Vec<String> {
    let mut out = Vec::new();
    match Decision::from_any_name(&w.action) {
        Some(d) if d == v.decision => {}
        Some(d) => out.push(format!("decision {}, want {}", v.decision, d)),
        None => out.push(format!("unknown action `{}`", w.action)),
    }
    let mut eq = |what: &str, got: &str, want: &str| {
        if got != want {
            out.push(format!("{what} {got:?}, want {want:?}"));
        }
    };
    if w.loose {
        let given = [
            ("rule", v.rule_text(), &w.rule),
            ("reason", v.reason.as_str(), &w.reason),
            ("subject", v.subject.as_str(), &w.subject),
        ];
        for (what, got, want) in given {
            if let Some(want) = want {
                eq(what, got, want);
            }
        }
        return out;
    }
    eq("rule", v.rule_text(), w.rule.as_deref().unwrap_or(""));
    eq("source", v.source_name(), w.source.as_deref().unwrap_or(""));
    match &w.reason {
        Some(reason) => eq("reason", &v.reason, &expect_text(reason)),
        None => eq("reason given", "no", "yes"),
    }
    eq("subject", &v.subject, w.subject.as_deref().unwrap_or(""));
    eq("confined", &v.confined, w.confined.as_deref().unwrap_or(""));
    if v.held != w.held.unwrap_or(false) {
        out.push(format!("held {}, want {}", v.held, w.held.unwrap_or(false)));
    }
    if v.by != "policy" {
        out.push(format!("by {:?}, want \"policy\"", v.by));
    }
    out
}
