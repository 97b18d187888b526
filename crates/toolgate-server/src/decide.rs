//! Deciding a request body with a loaded artifact: the same intake and the
//! same answers as `toolgate decide` gives a line, for every artifact kind.
//! Every way a body can fail to be read answers deny, in the artifact's
//! own result shape.

use crate::loaded::{Decider, Loaded};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use toolgate::authensor::{AuthensorResult, Envelope, KeptSessions};
use toolgate::rubric::Request;
use toolgate::state::{Namespace, Store};
use toolgate::{Call, Decision, Verdict};

/// Unique ids for answers: a prefix fixed for the process (its start time
/// and process id) and a counter.
pub(crate) struct Ids {
    prefix: String,
    next: AtomicU64,
}

impl Ids {
    pub(crate) fn new() -> Ids {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Ids {
            prefix: format!("{:x}-{:x}", nanos & 0xffff_ffff_ffff, std::process::id()),
            next: AtomicU64::new(1),
        }
    }

    pub(crate) fn next(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("{}-{n:x}", self.prefix)
    }
}

/// The bounds of a body's intake, and whether to explain.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Intake {
    pub(crate) max_batch: usize,
    pub(crate) max_values: usize,
    /// `?explain=true`: each rule-list verdict gains an `explain` member.
    pub(crate) explain: bool,
}

/// What `?explain=true` adds to a rule-list verdict, from the compiled
/// tables ([`toolgate::consulted`]): every rule of the call's tool with
/// what became of it (`consulted`), those that matched, those that did not
/// decide and why (`skipped`), the rule that decided (or the default), the
/// allow rules withheld from untrusted sources, and why the fold ended
/// where it did. `toolgate explain` says more (each subject of a split
/// command), walking the policy document with the reference evaluator.
fn explanation(e: &toolgate::Engine<'_>, call: &Call, v: &Verdict) -> Value {
    e.consulted(call, v).to_json(v)
}

fn explained(e: &toolgate::Engine<'_>, call: &Call, v: &Verdict, explain: bool) -> Value {
    let mut j = v.to_json();
    if explain {
        if let Value::Object(m) = &mut j {
            m.insert("explain".into(), explanation(e, call, v));
        }
    }
    j
}

/// The state a decision may need: the store, the namespace's parts, and
/// the Authensor sessions this replica remembers.
pub(crate) struct Stateful {
    pub(crate) store: std::sync::Arc<dyn Store>,
    pub(crate) tenant: String,
    /// `None`: the artifact's revision.
    pub(crate) scope: Option<String>,
    pub(crate) sessions: KeptSessions,
}

impl Stateful {
    fn namespace(&self, loaded: &Loaded) -> Namespace {
        let scope = self.scope.as_deref().unwrap_or(&loaded.revision);
        Namespace::new(self.tenant.clone(), scope)
    }
}

/// Decides `text` (one call, or a JSON array decided as one batch): the
/// verdict JSON (an array of them for a batch), unstamped. Without state:
/// an Authensor session kept by the store is denied.
pub(crate) fn decide(loaded: &Loaded, text: &str, intake: Intake) -> Value {
    decide_stateful(loaded, text, intake, None)
}

/// As [`decide`], with the state store: Authensor envelopes whose session
/// names a `sessionId` and no `actions` are decided on the store's history
/// and appended to it when allowed.
pub(crate) fn decide_stateful(
    loaded: &Loaded,
    text: &str,
    intake: Intake,
    state: Option<&Stateful>,
) -> Value {
    if toolgate::json::values_over(text, intake.max_values) {
        return unreadable(
            loaded,
            &format!(
                "the body holds more than {} JSON values: split it",
                intake.max_values
            ),
        );
    }
    let batch = text.trim_start().starts_with('[');
    match &loaded.decider {
        Decider::Rules(e) => decide_calls(text, batch, intake, &|c| c, e, loaded.guards.as_deref()),
        Decider::ClaudeCode(e, project) => {
            let prep = |mut c: Call| {
                if c.cwd.is_none() {
                    c.cwd.clone_from(project);
                }
                toolgate::claude::prepare_call(c)
            };
            decide_calls(text, batch, intake, &prep, e, loaded.guards.as_deref())
        }
        Decider::Rubric(e) => each(text, batch, intake, &|one| {
            let mut request = match one {
                Ok(t) => {
                    Request::from_json(t).unwrap_or_else(|e| Request::unreadable(e.to_string()))
                }
                Err(why) => Request::unreadable(why),
            };
            // A bundle that reads `dlp_…` is given the scan's fields, not
            // the caller's, as `decide` gives them.
            if e.reads_dlp() {
                match toolgate::guards::Guards::builtin() {
                    Ok(g) => request.add_dlp(g),
                    Err(why) => {
                        request = Request::unreadable(format!("the DLP scan cannot run: {why}"));
                    }
                }
            }
            e.decide(&request).to_json()
        }),
        Decider::Authensor(e) => each(text, batch, intake, &|one| {
            let envelope = match one.map(toolgate::json::parse_strict) {
                Ok(Ok(v)) => {
                    Envelope::from_value(v).unwrap_or_else(|e| Envelope::unreadable(e.to_string()))
                }
                Ok(Err(e)) => Envelope::unreadable(format!("the body is not JSON: {e}")),
                Err(why) => Envelope::unreadable(why),
            };
            match state {
                Some(st) if KeptSessions::uses_store(&envelope) => st
                    .sessions
                    .decide(e, st.store.as_ref(), &st.namespace(loaded), &envelope)
                    .to_json(),
                _ => e.decide(&envelope).to_json(),
            }
        }),
    }
}

/// Rule lists: one call through `would`, a batch through `batch` (so that
/// an ask holds the batch's allows), as `decide` answers a line; with
/// `guards` folded in as `decide --guards` folds them.
fn decide_calls(
    text: &str,
    batch: bool,
    intake: Intake,
    prep: &dyn Fn(Call) -> Call,
    e: &toolgate::Engine<'_>,
    guards: Option<&toolgate::guards::Guards>,
) -> Value {
    let would = |c: &Call| match guards {
        Some(g) => g.fold_would(c, &|c| e.would(c)),
        None => e.would(c),
    };
    if !batch {
        return match Call::from_json(text).map(prep) {
            Ok(call) => explained(e, &call, &would(&call), intake.explain),
            Err(e) => call_unreadable(&format!("the body is not a JSON call: {e}")),
        };
    }
    let raws = match items(text, intake.max_batch) {
        Ok(r) => r,
        Err(why) => return call_unreadable(&why),
    };
    let mut calls = Vec::with_capacity(raws.len());
    for raw in raws {
        match Call::from_json(raw.get()) {
            Ok(c) => calls.push(prep(c)),
            Err(e) => {
                return call_unreadable(&format!("the batch holds a call that cannot be read: {e}"))
            }
        }
    }
    let verdicts = match guards {
        Some(g) => g.fold_batch(&calls, &|cs| e.decide_batch(cs), &|c| e.would(c)),
        None => e.decide_batch(&calls),
    };
    Value::Array(
        verdicts
            .iter()
            .zip(&calls)
            .map(|(v, c)| explained(e, c, v, intake.explain))
            .collect(),
    )
}

/// Rubric requests and Authensor envelopes: one, or each of an array.
fn each(
    text: &str,
    batch: bool,
    intake: Intake,
    one: &dyn Fn(Result<&str, &str>) -> Value,
) -> Value {
    if !batch {
        return one(Ok(text));
    }
    match items(text, intake.max_batch) {
        Ok(raws) => Value::Array(raws.iter().map(|r| one(Ok(r.get()))).collect()),
        Err(why) => one(Err(&why)),
    }
}

/// The members of a JSON array, unparsed, refused past `max`.
fn items(text: &str, max: usize) -> Result<Vec<&serde_json::value::RawValue>, String> {
    let raws: Vec<&serde_json::value::RawValue> = serde_json::from_str(text)
        .map_err(|e| format!("the body is not a JSON array of calls: {e}"))?;
    if raws.len() > max {
        return Err(format!(
            "the batch holds {} calls, more than {max}: split it",
            raws.len()
        ));
    }
    Ok(raws)
}

fn call_unreadable(why: &str) -> Value {
    Verdict::new(Decision::Deny, format!("the call could not be read: {why}")).to_json()
}

/// A deny for a body that could not be read, in the artifact's result
/// shape, decided as `decide` decides an unreadable line.
pub(crate) fn unreadable(loaded: &Loaded, why: &str) -> Value {
    match &loaded.decider {
        Decider::Rules(_) | Decider::ClaudeCode(..) => call_unreadable(why),
        Decider::Rubric(e) => e.decide(&Request::unreadable(why)).to_json(),
        Decider::Authensor(e) => e.decide(&Envelope::unreadable(why)).to_json(),
    }
}

/// A deny that does not touch the engine, for when deciding panicked.
pub(crate) fn fault(loaded: &Loaded, why: &str) -> Value {
    match &loaded.decider {
        Decider::Rules(_) | Decider::ClaudeCode(..) => {
            Verdict::new(Decision::Deny, why.to_string()).to_json()
        }
        Decider::Rubric(_) => toolgate::rubric::invalid_result(why).to_json(),
        Decider::Authensor(_) => AuthensorResult::unreadable(why).to_json(),
    }
}

/// Adds `revision` and a fresh `decision_id` to each verdict of `answer`.
pub(crate) fn stamp(answer: &mut Value, revision: &str, ids: &Ids) {
    let one = |v: &mut Value| {
        if let Value::Object(m) = v {
            m.insert("revision".into(), Value::String(revision.to_string()));
            m.insert("decision_id".into(), Value::String(ids.next()));
        }
    };
    match answer {
        Value::Array(vs) => vs.iter_mut().for_each(one),
        v => one(v),
    }
}

/// The outcome a verdict names: `allow`, `deny`, or `ask` for anything
/// that waits for somebody (`ask`, `require_approval`). toolgate's and
/// Rubric's verdicts say `"decision": "deny"`, Authensor's
/// `"decision": {"outcome": "deny"}`.
pub(crate) fn outcome(v: &Value) -> &'static str {
    let d = match v.get("decision") {
        Some(Value::String(s)) => s.as_str(),
        Some(Value::Object(m)) => m.get("outcome").and_then(Value::as_str).unwrap_or(""),
        _ => "",
    };
    match d {
        "allow" => "allow",
        "deny" | "" => "deny",
        _ => "ask",
    }
}

/// Each verdict's outcome, one for a single answer.
pub(crate) fn outcomes(answer: &Value) -> Vec<&'static str> {
    match answer {
        Value::Array(vs) => vs.iter().map(outcome).collect(),
        v => vec![outcome(v)],
    }
}
