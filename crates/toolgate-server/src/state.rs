//! The state endpoints: decisions that remember what they deferred, their
//! release, grant sets and the runs left pending, through a
//! [`Supervisor`] over the rule-list artifact in force and the configured
//! [`Store`]. Replicas sharing a store share all of it.

use std::sync::{Arc, Mutex};

use arc_swap::ArcSwapOption;

use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};
use toolgate::state::{Answer, HookDecision, Namespace, Reply, StateError, Store, Supervisor};
use toolgate::{Call, RuleLists, RuleSet, Source};

use crate::decide::Intake;
use crate::http::{authorised_admin, json_response, read_body, Shared};
use crate::loaded::{Decider, Loaded};

/// The store and the supervisor over the artifact in force, rebuilt when a
/// reload swaps the artifact (the state stays in the store, under a
/// namespace that does not change with the revision, so grants and
/// pending calls outlive a reload).
pub(crate) struct StateHub {
    store: Arc<dyn Store>,
    /// Where the rule lists' state is kept: the configured tenant, so two
    /// services sharing a store never apply each other's grants, and a
    /// scope that does not change with the revision.
    ns: Namespace,
    /// The supervisor and the revision it was built for, read on every
    /// decision without a lock: a mutex here was taken by every request on
    /// every worker.
    sup: ArcSwapOption<(String, Arc<Supervisor>)>,
    /// Held while a supervisor is built, so that a reload builds one.
    building: Mutex<()>,
}

impl StateHub {
    pub(crate) fn new(store: Arc<dyn Store>, tenant: &str) -> StateHub {
        StateHub {
            store,
            ns: Namespace::new(tenant, "rules"),
            sup: ArcSwapOption::empty(),
            building: Mutex::new(()),
        }
    }

    /// The supervisor over `loaded`, when it is a rule-list artifact.
    fn supervisor(&self, loaded: &Loaded) -> Option<Arc<Supervisor>> {
        let Decider::Rules(engine) = &loaded.decider else {
            return None;
        };
        let current = |rev: &str| {
            self.sup
                .load()
                .as_ref()
                .filter(|slot| slot.0 == rev)
                .map(|slot| Arc::clone(&slot.1))
        };
        if let Some(s) = current(&loaded.revision) {
            return Some(s);
        }
        let _building = self.building.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = current(&loaded.revision) {
            return Some(s);
        }
        let mut s = Supervisor::new(
            Arc::new(engine.clone()),
            Arc::clone(&self.store),
            self.ns.clone(),
        );
        if let Some(g) = &loaded.guards {
            s = s.with_hook(guards_hook(Arc::clone(g)));
        }
        let s = Arc::new(s);
        self.sup
            .store(Some(Arc::new((loaded.revision.clone(), Arc::clone(&s)))));
        Some(s)
    }
}

/// The guards as the supervisor's hook: folded in before the hold, as
/// `Guarded` folds them, naming the guard's rule.
fn guards_hook(guards: Arc<toolgate::guards::Guards>) -> impl toolgate::state::Hook {
    move |c: &Call| {
        guards.verdict(c).map(|v| HookDecision {
            decision: v.decision,
            reason: v.reason,
            by: v.by,
            rule: v.rule,
        })
    }
}

/// Decides a body through the supervisor, so grant sets apply and the
/// deferred calls of a body with `run_id` and `call_id` are remembered;
/// `None` for what the stateless path answers (another dialect, or an
/// explanation, which reads the engine's rules directly).
pub(crate) fn decide(state: &Shared, loaded: &Loaded, text: &str, intake: Intake) -> Option<Value> {
    if intake.explain {
        return None;
    }
    let sup = state.hub.supervisor(loaded)?;
    let batch = text.trim_start().starts_with('[');
    let calls: Vec<Call> = if batch {
        let raws: Vec<&serde_json::value::RawValue> = serde_json::from_str(text).ok()?;
        if raws.len() > intake.max_batch {
            return None;
        }
        raws.iter()
            .map(|r| Call::from_json(r.get()).ok())
            .collect::<Option<Vec<Call>>>()?
    } else {
        vec![Call::from_json(text).ok()?]
    };
    // Unreadable bodies and oversized batches are the stateless path's to
    // refuse, with its own texts.
    // Read again only for a body that can hold it: a whole parse into a
    // value cost more than the decision. A key spelled with escapes still
    // has a `\u`.
    let turn = if !batch && (text.contains("turn") || text.contains("\\u")) {
        serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|v| v.get("turn").and_then(Value::as_u64))
            .unwrap_or(0)
    } else {
        0
    };
    let verdicts = sup.decide_batch(turn, &calls);
    let mut out: Vec<Value> = verdicts.iter().map(toolgate::Verdict::to_json).collect();
    if batch {
        Some(Value::Array(out))
    } else {
        out.pop()
    }
}

fn error_response(e: &StateError) -> Response {
    let status = match e {
        StateError::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
        StateError::Unanswered { .. } | StateError::DenialBound { .. } => StatusCode::CONFLICT,
        StateError::NoPolicy | StateError::BadScope(_) => StatusCode::BAD_REQUEST,
    };
    let mut body = serde_json::Map::new();
    body.insert("error".into(), e.to_string().into());
    if let StateError::Unanswered { missing, answers }
    | StateError::DenialBound { missing, answers } = e
    {
        body.insert(
            "missing".into(),
            missing
                .iter()
                .map(|m| json!({"call_id": m.call_id, "tool": m.tool}))
                .collect(),
        );
        body.insert("answers".into(), answers.iter().map(answer_json).collect());
    }
    json_response(status, &Value::Object(body))
}

fn bad(why: &str) -> Response {
    json_response(StatusCode::BAD_REQUEST, &json!({ "error": why }))
}

fn answer_json(a: &Answer) -> Value {
    let mut v = serde_json::Map::new();
    v.insert("call_id".into(), a.call_id.clone().into());
    v.insert("answer".into(), a.reply.as_str().into());
    v.insert("by".into(), a.by.into());
    if !a.note.is_empty() {
        v.insert("note".into(), a.note.clone().into());
    }
    if !a.reason.is_empty() {
        v.insert("reason".into(), a.reason.clone().into());
    }
    Value::Object(v)
}

/// Reads one answer: `{"call_id", "answer": "approve"|"refuse"|"refuse_and_end",
/// "note"?}`, or the reply as a member set to `true` (`{"call_id", "approve": true}`).
fn read_answer(v: &Value) -> Result<Answer, String> {
    let id = v.get("call_id").and_then(Value::as_str).ok_or(
        "an answer has no `call_id`; write {\"call_id\": \"c1\", \"answer\": \"approve\"}",
    )?;
    let reply = match v.get("answer").and_then(Value::as_str) {
        Some(s) => Reply::parse(s).ok_or(format!(
            "`{s}` is not an answer; write `approve`, `refuse` or `refuse_and_end`"
        ))?,
        None => [Reply::Approve, Reply::Refuse, Reply::RefuseAndEnd]
            .into_iter()
            .find(|r| v.get(r.as_str()).and_then(Value::as_bool) == Some(true))
            .ok_or(format!(
                "the answer to `{id}` says neither `approve`, `refuse` nor `refuse_and_end`"
            ))?,
    };
    let a = match reply {
        Reply::Approve => Answer::approve(id),
        Reply::Refuse => Answer::refuse(id),
        Reply::RefuseAndEnd => Answer::refuse_and_end(id),
    };
    Ok(match v.get("note").and_then(Value::as_str) {
        Some(n) => a.with_note(n),
        None => a,
    })
}

/// Reads an authorised request's JSON body, and the supervisor.
async fn open(state: &Shared, req: Request) -> Result<(Arc<Supervisor>, Value), Response> {
    let loaded = state.current.load_full();
    if !authorised_admin(state, req.headers()) {
        return Err(json_response(
            StatusCode::UNAUTHORIZED,
            &json!({"error": "the request carries no valid token: send `Authorization: Bearer TOKEN`"}),
        ));
    }
    let Some(sup) = state.hub.supervisor(&loaded) else {
        return Err(bad(
            "the policy in force is not a rule list; deferred calls and grants need one",
        ));
    };
    let text = read_body(state, req)
        .await
        .map_err(|f| json_response(f.status(), &json!({"error": f.why(state)})))?;
    let body = if text.trim().is_empty() {
        Value::Object(serde_json::Map::new())
    } else {
        serde_json::from_str(&text).map_err(|e| bad(&format!("the body is not JSON: {e}")))?
    };
    Ok((sup, body))
}

/// `POST /v1/release`: `{"run_id", "answers": [...]}`.
pub(crate) async fn release_handler(State(state): State<Arc<Shared>>, req: Request) -> Response {
    let (sup, body) = match open(&state, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let Some(run) = body.get("run_id").and_then(Value::as_str) else {
        return bad("the release has no `run_id`");
    };
    let mut answers = Vec::new();
    for a in body
        .get("answers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        match read_answer(a) {
            Ok(a) => answers.push(a),
            Err(why) => return bad(&why),
        }
    }
    match sup.release(run, &answers) {
        Ok(out) => json_response(
            StatusCode::OK,
            &json!({"run_id": run, "answers": out.iter().map(answer_json).collect::<Vec<_>>()}),
        ),
        Err(e) => error_response(&e),
    }
}

/// `POST /v1/grants`: `{"source", "rank"?, "trusted"?, "scope"?, "allow"?,
/// "deny"?, "ask"?}`, a grant set activated under its source and scope.
pub(crate) async fn grant_handler(State(state): State<Arc<Shared>>, req: Request) -> Response {
    let (sup, body) = match open(&state, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let Some(source) = body.get("source").and_then(Value::as_str) else {
        return bad("the grant has no `source`; name the skill or settings file it comes from");
    };
    let text = |k: &str| body.get(k).and_then(Value::as_str).unwrap_or("");
    let lists = match RuleLists::parse(text("allow"), text("deny"), text("ask")) {
        Ok(l) => l,
        Err(d) => return bad(&d.to_string()),
    };
    let set = RuleSet {
        source: Source {
            name: source.to_string(),
            rank: body.get("rank").and_then(Value::as_i64).unwrap_or(0),
            trusted: body.get("trusted").and_then(Value::as_bool).unwrap_or(true),
            ..Source::default()
        },
        lists,
        ..RuleSet::default()
    };
    let scope = body.get("scope").and_then(Value::as_str);
    match sup.grant_set(&set, scope) {
        Ok(g) => json_response(
            StatusCode::OK,
            &json!({
                "source": source,
                "granted": g.granted,
                "refused": g.refused.iter().map(|r| json!({"rule": r.rule, "reason": r.reason})).collect::<Vec<_>>(),
            }),
        ),
        Err(e) => error_response(&e),
    }
}

/// `DELETE /v1/grants/{source}`: `{"scope"?}`.
pub(crate) async fn revoke_handler(
    State(state): State<Arc<Shared>>,
    Path(source): Path<String>,
    req: Request,
) -> Response {
    let (sup, body) = match open(&state, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let scope = body.get("scope").and_then(Value::as_str);
    match sup.revoke(&source, scope) {
        Ok(n) => json_response(StatusCode::OK, &json!({"source": source, "revoked": n})),
        Err(e) => error_response(&e),
    }
}

/// `POST /v1/state/discard-unreadable`: removes the grant records this
/// version cannot read, which deny every call until they go; answers which.
pub(crate) async fn discard_handler(State(state): State<Arc<Shared>>, req: Request) -> Response {
    let (sup, _) = match open(&state, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    match sup.discard_unreadable() {
        Ok(gone) => json_response(
            StatusCode::OK,
            &json!({
                "discarded": gone
                    .iter()
                    .map(|d| json!({
                        "scope": d.scope,
                        "source": d.source,
                        "always": d.always,
                        "why": d.why,
                    }))
                    .collect::<Vec<_>>(),
            }),
        ),
        Err(e) => error_response(&e),
    }
}

/// `GET /v1/runs`: the runs holding pending calls.
pub(crate) async fn runs_handler(State(state): State<Arc<Shared>>, req: Request) -> Response {
    let (sup, _) = match open(&state, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    match sup.runs() {
        Ok(runs) => json_response(StatusCode::OK, &json!({ "runs": runs })),
        Err(e) => error_response(&e),
    }
}
