//! Running a [`Case`] on every engine and comparing what they answer.

use super::case::{ArgsDoc, Case, SplitDoc};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use toolgate::call::{Args, Call, Subject};
use toolgate::decision::Verdict;
use toolgate::diag::Diagnostics;
use toolgate::engine::{Engine, Evaluator, Grant};
use toolgate::policy::{Policy, RuleLists, RuleSet, Source};
use toolgate::registry::{Registry, Splitter};
use toolgate_reference::conformance::EngineKind;
use toolgate_reference::Reference;

/// Builds one engine for a policy.
pub type Build = fn(&Policy, &Registry) -> Result<Box<dyn Evaluator>, Diagnostics>;

fn build_reference(p: &Policy, r: &Registry) -> Result<Box<dyn Evaluator>, Diagnostics> {
    Ok(Box::new(Reference::build(p, r)?))
}

fn build_compiled(p: &Policy, r: &Registry) -> Result<Box<dyn Evaluator>, Diagnostics> {
    Ok(Box::new(Engine::build_with(p, r)?.into_session()))
}

/// The compiled policy written to an artifact and loaded back with the same
/// registry (the harness's [`EngineKind::Artifact`]).
fn build_artifact(p: &Policy, r: &Registry) -> Result<Box<dyn Evaluator>, Diagnostics> {
    EngineKind::Artifact.build(p, r)
}

/// The engines a case runs on, the oracle first, one line each. Every
/// other engine's answers are compared with the first's.
#[rustfmt::skip]
pub const ENGINES: &[(&str, Build)] = &[
    ("reference", build_reference),
    ("compiled", build_compiled),
    ("artifact", build_artifact),
];

/// The simulated splitter of the conformance harness (`split: "corpus"`):
/// the subjects a case lists for a call, found by tool and the arguments'
/// text; a call it has no answer for is one subject without text.
#[derive(Debug, Default)]
pub struct SimSplitter {
    answers: HashMap<(String, String), Result<Vec<Subject>, String>>,
}

impl SimSplitter {
    /// The answers of every call of `case` (singles, then the batch; a later
    /// call with the same tool and arguments replaces an earlier answer, as
    /// in the harness).
    pub fn for_case(case: &Case) -> SimSplitter {
        let mut s = SimSplitter::default();
        for c in case.calls.iter().chain(&case.batch) {
            let key = (c.tool.clone(), args_of(&c.args).raw().to_string());
            match &c.split {
                None => {}
                Some(SplitDoc::Error(e)) => {
                    s.answers.insert(key, Err(e.clone()));
                }
                Some(SplitDoc::Subjects(list)) => {
                    let subjects = list
                        .iter()
                        .map(|sd| Subject {
                            args: Args::from_value(sd.args.clone()),
                            tool: sd.tool.clone(),
                            text: sd.text.clone().unwrap_or_default(),
                            constrain: sd.constrain,
                        })
                        .collect();
                    s.answers.insert(key, Ok(subjects));
                }
            }
        }
        s
    }
}

impl Splitter for SimSplitter {
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

fn args_of(a: &ArgsDoc) -> Args {
    match a {
        ArgsDoc::Value(v) => Args::from_value(v.clone()),
        ArgsDoc::Raw(r) => Args::from_bytes(r.as_bytes()),
    }
}

/// Everything one engine answered for a case that built.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ran {
    /// What each grant set activated and refused.
    pub grants: Vec<Grant>,
    /// How many rules each revocation removed.
    pub revokes: Vec<usize>,
    /// The verdict of each single call (a batch of one).
    pub calls: Vec<Verdict>,
    /// The verdicts of the batch.
    pub batch: Vec<Verdict>,
    /// The tools the offer keeps.
    pub offer: Vec<String>,
}

/// What an engine made of a case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The policy did not build (or the document did not read, kind
    /// `invalid_document`).
    Refused {
        /// The first diagnostic's kind.
        kind: String,
        /// Every diagnostic, rendered.
        message: String,
    },
    /// The policy built, and this is what the engine answered.
    Ran(Ran),
}

/// Engines that disagreed on a case: what differed, and the case as a
/// decisions-format conformance file with the oracle's answers.
#[derive(Clone, Debug)]
pub struct Mismatch {
    /// One line per difference.
    pub diffs: Vec<String>,
    /// The case, ready for `testdata/regressions/`.
    pub case_json: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "the engines disagree:")?;
        for d in &self.diffs {
            writeln!(f, "  {d}")?;
        }
        writeln!(
            f,
            "the case, with the reference's answers (paste into testdata/regressions/):"
        )?;
        f.write_str(&self.case_json)
    }
}

/// Runs `case` on every engine of [`ENGINES`] and compares their answers
/// with the first's: build errors, grants (granted and refused, with
/// reasons), revocations, every verdict member for member, the batch and
/// the offer; and on each engine, that `would` agrees with a batch of one.
///
/// # Errors
///
/// A [`Mismatch`] naming every difference.
pub fn check_case(case: &Case) -> Result<Outcome, Mismatch> {
    check_case_with(case, &[])
}

/// As [`check_case`], with `kinds` registered over the built-in ones of the
/// same names (see [`super::StandIn`]): the reference keeps its own
/// `prefix` and `glob`, the compiled engines use `kinds`.
///
/// # Errors
///
/// As [`check_case`].
pub fn check_case_with(
    case: &Case,
    kinds: &[Arc<dyn toolgate::registry::MatcherKind>],
) -> Result<Outcome, Mismatch> {
    let (policy, mut registry) = match setup(case) {
        Ok(x) => x,
        // Every engine reads the same document: nothing to compare.
        Err(refused) => return Ok(refused),
    };
    for k in kinds {
        registry.add_kind(Arc::clone(k));
    }

    let mut outcomes: Vec<(&str, Outcome)> = Vec::new();
    let mut diffs = Vec::new();
    for (name, build) in ENGINES {
        let outcome = match build(&policy, &registry) {
            Err(d) => Outcome::Refused {
                kind: d.first().kind.to_string(),
                message: d.to_string(),
            },
            Ok(mut engine) => {
                let (ran, own) = run_on(case, engine.as_mut());
                diffs.extend(own.into_iter().map(|d| format!("[{name}] {d}")));
                Outcome::Ran(ran)
            }
        };
        outcomes.push((name, outcome));
    }
    let Some(((oracle_name, oracle), rest)) = outcomes.split_first() else {
        return Err(Mismatch {
            diffs: vec!["no engine".into()],
            case_json: String::new(),
        });
    };
    for (name, o) in rest {
        diffs.extend(compare(oracle_name, oracle, name, o));
    }
    if diffs.is_empty() {
        Ok(oracle.clone())
    } else {
        let json = case.to_case_json("differential finding", oracle);
        Err(Mismatch {
            diffs,
            case_json: serde_json::to_string_pretty(&json).unwrap_or_default(),
        })
    }
}

/// The policy of a case, read from its document as the harness reads it,
/// and the registry its engines are built with: the built-in kinds and the
/// simulated splitter under the name `corpus`.
///
/// # Errors
///
/// The document does not read: [`Outcome::Refused`] with kind
/// `invalid_document`.
pub fn setup(case: &Case) -> Result<(Policy, Registry), Outcome> {
    let doc = case.policy.to_json();
    let policy = toolgate::policy::doc::from_value(&doc, None).map_err(|d| Outcome::Refused {
        kind: "invalid_document".into(),
        message: d.to_string(),
    })?;
    let mut registry = toolgate::builtins::registry();
    registry.add_splitter("corpus", Arc::new(SimSplitter::for_case(case)));
    Ok((policy, registry))
}

/// Runs the steps of a case on one engine built from [`setup`]'s policy, in
/// the harness's order: grants, revocations, single calls, the batch, the
/// offer.
pub fn run_engine(case: &Case, engine: &mut dyn Evaluator) -> Ran {
    run_on(case, engine).0
}

/// Runs the steps of a case on one engine, in the harness's order: grants,
/// revocations, single calls, the batch, the offer. Also returns the
/// engine's disagreements with itself (`would` against a batch of one).
fn run_on(case: &Case, engine: &mut dyn Evaluator) -> (Ran, Vec<String>) {
    let mut ran = Ran::default();
    let mut own = Vec::new();
    for g in &case.grants {
        let lists = RuleLists::parse(
            &super::case::join_rules(&g.allow),
            &super::case::join_rules(&g.deny),
            &super::case::join_rules(&g.ask),
        );
        let set = RuleSet {
            source: Source {
                name: g.name.clone(),
                rank: g.rank,
                trusted: g.trusted,
                ..Source::default()
            },
            lists: lists.unwrap_or_default(),
            location: Default::default(),
        };
        ran.grants.push(engine.grant_set(&set, g.scope.as_deref()));
    }
    for r in &case.revokes {
        ran.revokes.push(match &r.source {
            Some(s) => engine.revoke(s, r.scope.as_deref()),
            None => engine.revoke_scope(r.scope.as_deref()),
        });
    }
    // One verdict every call is rendered into in turn, starting with every
    // member set: a member `would_into` failed to overwrite would show.
    let mut reused = stale_verdict();
    for (i, c) in case.calls.iter().enumerate() {
        let call = make_call(c, 1);
        let got = engine.decide_batch(std::slice::from_ref(&call));
        let v = got.into_iter().next();
        let would = engine.would(&call);
        if v.as_ref() != Some(&would) {
            own.push(format!(
                "call {}: would {} differs from a batch of one {}",
                i + 1,
                show(Some(&would)),
                show(v.as_ref())
            ));
        }
        engine.would_into(&call, &mut reused);
        if reused != would {
            own.push(format!(
                "call {}: would_into {} differs from would {}",
                i + 1,
                show(Some(&reused)),
                show(Some(&would))
            ));
        }
        ran.calls.push(v.unwrap_or(would));
    }
    if !case.batch.is_empty() {
        let calls: Vec<Call> = case
            .batch
            .iter()
            .enumerate()
            .map(|(i, c)| make_call(c, i + 1))
            .collect();
        ran.batch = engine.decide_batch(&calls);
    }
    if !case.offer.is_empty() {
        ran.offer = engine.filter(&case.offer);
    }
    (ran, own)
}

/// A verdict with every member set to what no engine answers.
fn stale_verdict() -> Verdict {
    let mut v = Verdict::new(toolgate::Decision::Allow, "a stale reason");
    v.rule = Some(toolgate::RuleRef {
        text: "stale(rule)".into(),
        source: "stale source".into(),
        source_hash: "stale hash".into(),
        note: "stale note".into(),
    });
    v.subject = "stale subject".into();
    v.held = true;
    v.confined = "stale sandbox".into();
    v.by = "stale";
    v.run_id = "stale run".into();
    v.call_id = "stale call".into();
    v
}

fn make_call(c: &super::case::CallStep, n: usize) -> Call {
    Call {
        tool: c.tool.clone(),
        args: args_of(&c.args),
        run_id: "run_1".into(),
        call_id: format!("call_{n}"),
        confined: c.confined.clone(),
        scope: c.scope.clone(),
        cwd: None,
    }
}

fn show(v: Option<&Verdict>) -> String {
    match v {
        Some(v) => {
            let mut j = v.to_json();
            if let (Some(o), Some(r)) = (j.as_object_mut(), &v.rule) {
                if !r.note.is_empty() {
                    o.insert("note".into(), Value::from(r.note.clone()));
                }
                if !r.source_hash.is_empty() {
                    o.insert("source_hash".into(), Value::from(r.source_hash.clone()));
                }
            }
            j.to_string()
        }
        None => "nothing".into(),
    }
}

fn compare(an: &str, a: &Outcome, bn: &str, b: &Outcome) -> Vec<String> {
    let mut out = Vec::new();
    match (a, b) {
        (Outcome::Refused { kind: ka, .. }, Outcome::Refused { kind: kb, .. }) => {
            if ka != kb {
                out.push(format!("build error: {an} {ka}, {bn} {kb}"));
            }
        }
        (Outcome::Refused { message, .. }, Outcome::Ran(_)) => {
            out.push(format!(
                "{an} refused the policy ({message}), {bn} built it"
            ));
        }
        (Outcome::Ran(_), Outcome::Refused { message, .. }) => {
            out.push(format!(
                "{an} built the policy, {bn} refused it ({message})"
            ));
        }
        (Outcome::Ran(x), Outcome::Ran(y)) => {
            let n = x.grants.len().max(y.grants.len());
            for i in 0..n {
                let (gx, gy) = (x.grants.get(i), y.grants.get(i));
                if gx != gy {
                    out.push(format!("grant {}: {an} {gx:?}, {bn} {gy:?}", i + 1));
                }
            }
            if x.revokes != y.revokes {
                out.push(format!(
                    "revocations removed: {an} {:?}, {bn} {:?}",
                    x.revokes, y.revokes
                ));
            }
            for (what, vx, vy) in [
                ("call", &x.calls, &y.calls),
                ("batch call", &x.batch, &y.batch),
            ] {
                let n = vx.len().max(vy.len());
                for i in 0..n {
                    let (p, q) = (vx.get(i), vy.get(i));
                    if p != q {
                        out.push(format!(
                            "{what} {}: {an} {}, {bn} {}",
                            i + 1,
                            show(p),
                            show(q)
                        ));
                    }
                }
            }
            if x.offer != y.offer {
                out.push(format!("offer: {an} {:?}, {bn} {:?}", x.offer, y.offer));
            }
        }
    }
    out
}
