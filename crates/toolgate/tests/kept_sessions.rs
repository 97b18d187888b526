//! Authensor sessions kept by toolgate, on the memory store: the history
//! comes from the store, an allowed action is appended with its decision,
//! budgets and risk add up over the session, replicas racing on one
//! session admit exactly what the rules allow, and a store that cannot be
//! reached denies.

use std::sync::Arc;
use toolgate::authensor::{AuthensorEngine, Effect, Envelope, KeptSessions, Policies};
use toolgate::state::{Appended, MemoryStore, Namespace, Pending, Store, StoreError};

type R = Result<(), Box<dyn std::error::Error>>;

fn engine(policies: &str) -> Result<AuthensorEngine<'static>, Box<dyn std::error::Error>> {
    Ok(AuthensorEngine::build(&Policies::from_json(policies)?)?)
}

fn env(action: &str, session: &str, extra: &str) -> Result<Envelope, Box<dyn std::error::Error>> {
    Ok(Envelope::from_json(&format!(
        r#"{{"action": "{action}", "resource": "/tmp/x", "principalId": "agent-1",
            "session": {{"sessionId": "{session}"}}{extra}}}"#
    ))?)
}

#[test]
fn max_actions_counts_the_actions_the_store_kept() -> R {
    let e = engine(
        r#"{"id": "p", "rules": [{"effect": "allow"}], "sessionRules": {"maxActions": 3}}"#,
    )?;
    let (store, ns, s) = (
        MemoryStore::new(),
        Namespace::new("t", "p"),
        KeptSessions::new(),
    );
    let a = env("file.read", "s1", "")?;
    let got: Vec<Effect> = (0..5)
        .map(|_| s.decide(&e, &store, &ns, &a).outcome)
        .collect();
    assert_eq!(
        got,
        [
            Effect::Allow,
            Effect::Allow,
            Effect::Allow,
            Effect::Deny,
            Effect::Deny
        ]
    );
    let r = s.decide(&e, &store, &ns, &a);
    assert_eq!(
        r.session_violation.map(|v| v.violation.kind()),
        Some("max_actions")
    );
    // Only the allowed actions are kept; another session is untouched.
    assert_eq!(store.history(&ns, "s1")?.len(), 3);
    assert_eq!(
        s.decide(&e, &store, &ns, &env("file.read", "s2", "")?)
            .outcome,
        Effect::Allow
    );
    Ok(())
}

#[test]
fn a_forbidden_sequence_spans_envelopes() -> R {
    let e = engine(
        r#"{"id": "p", "rules": [{"effect": "allow"}], "sessionRules": {"forbiddenSequences":
            [{"actions": ["file.read", "network.send"], "reason": "Read then exfil pattern"}]}}"#,
    )?;
    let (store, ns, s) = (
        MemoryStore::new(),
        Namespace::new("t", "p"),
        KeptSessions::new(),
    );
    assert_eq!(
        s.decide(&e, &store, &ns, &env("network.send", "s", "")?)
            .outcome,
        Effect::Allow
    );
    assert_eq!(
        s.decide(&e, &store, &ns, &env("file.read", "s", "")?)
            .outcome,
        Effect::Allow
    );
    let r = s.decide(&e, &store, &ns, &env("network.send", "s", "")?);
    assert_eq!(r.outcome, Effect::Deny);
    assert_eq!(r.reason.as_deref(), Some("Read then exfil pattern"));
    Ok(())
}

#[test]
fn a_budget_is_a_running_total_over_the_session_in_its_currency() -> R {
    let e = engine(
        r#"{"id": "p", "rules": [
            {"effect": "deny", "conditions": {"constraints": {"maxCost": 10, "currency": "USD"}},
             "reason": "Budget exceeded"},
            {"effect": "allow"}]}"#,
    )?;
    let (store, ns, s) = (
        MemoryStore::new(),
        Namespace::new("t", "p"),
        KeptSessions::new(),
    );
    let usd = |n: u32| {
        env(
            "pay",
            "s",
            &format!(r#", "constraints": {{"maxAmount": {n}, "currency": "USD"}}"#),
        )
    };
    let eur = env(
        "pay",
        "s",
        r#", "constraints": {"maxAmount": 9, "currency": "EUR"}"#,
    )?;
    assert_eq!(s.decide(&e, &store, &ns, &usd(4)?).outcome, Effect::Allow);
    assert_eq!(s.decide(&e, &store, &ns, &usd(4)?).outcome, Effect::Allow);
    // Euros are not counted toward a budget in dollars (and are refused
    // by it, as the engine refuses a cost in another currency).
    assert_eq!(s.decide(&e, &store, &ns, &eur).outcome, Effect::Deny);
    let over = s.decide(&e, &store, &ns, &usd(4)?);
    assert_eq!(over.outcome, Effect::Deny, "4 + 4 + 4 is above 10");
    assert_eq!(over.reason.as_deref(), Some("Budget exceeded"));
    // Each envelope alone is within the budget.
    assert_eq!(
        e.decide(&usd(4)?).outcome,
        Effect::Deny,
        "a stored session is never decided without the store"
    );
    assert_eq!(
        s.decide(&e, &store, &ns, &usd(2)?).outcome,
        Effect::Allow,
        "4 + 4 + 2 is not above 10"
    );
    Ok(())
}

#[test]
fn risk_scores_add_up_to_the_seeds_threshold() -> R {
    let e = engine(
        r#"{"id": "session-policy", "version": 1, "rules": [{"effect": "allow", "conditions": {}}],
            "sessionRules": {"maxActions": 50, "riskThreshold": 0.8}}"#,
    )?;
    let (store, ns, s) = (
        MemoryStore::new(),
        Namespace::new("t", "p"),
        KeptSessions::new(),
    );
    let scored = |x: f64| env("file.read", "s", &format!(r#", "riskScore": {x}"#));
    assert_eq!(
        s.decide(&e, &store, &ns, &scored(0.5)?).outcome,
        Effect::Allow
    );
    assert_eq!(
        s.decide(&e, &store, &ns, &env("file.read", "s", "")?)
            .outcome,
        Effect::Allow
    );
    let r = s.decide(&e, &store, &ns, &scored(0.4)?);
    assert_eq!(r.outcome, Effect::Deny);
    assert_eq!(
        r.session_violation.map(|v| v.violation.kind()),
        Some("risk_threshold")
    );
    assert_eq!(
        s.decide(&e, &store, &ns, &scored(0.3)?).outcome,
        Effect::Allow,
        "0.5 + 0.3 is not above 0.8"
    );
    Ok(())
}

#[test]
fn replicas_racing_on_one_session_admit_exactly_max_actions() -> R {
    const MAX: usize = 17;
    let e = Arc::new(engine(&format!(
        r#"{{"id": "p", "rules": [{{"effect": "allow"}}], "sessionRules": {{"maxActions": {MAX}}}}}"#
    ))?);
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let ns = Namespace::new("t", "p");
    let replicas = (Arc::new(KeptSessions::new()), Arc::new(KeptSessions::new()));
    let a = Arc::new(env("file.read", "race", "")?);
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let (e, store, ns, a) = (e.clone(), store.clone(), ns.clone(), a.clone());
            let s = if t % 2 == 0 { &replicas.0 } else { &replicas.1 }.clone();
            std::thread::spawn(move || {
                (0..10)
                    .filter(|_| s.decide(&e, store.as_ref(), &ns, &a).outcome == Effect::Allow)
                    .count()
            })
        })
        .collect();
    let mut allowed = 0;
    for h in handles {
        allowed += h.join().map_err(|_| "a deciding thread panicked")?;
    }
    assert_eq!(allowed, MAX);
    assert_eq!(store.history(&ns, "race")?.len(), MAX);
    Ok(())
}

#[test]
fn the_common_case_is_one_call_to_the_store() -> R {
    let e = engine(
        r#"{"id": "p", "rules": [{"effect": "allow"}], "sessionRules": {"maxActions": 10}}"#,
    )?;
    let store = MemoryStore::new();
    let ns = Namespace::new("t", "p");
    let (one, two) = (KeptSessions::new(), KeptSessions::new());
    let a = env("file.read", "s", "")?;
    assert_eq!(
        one.decide_counted(&e, &store, &ns, &a).1.store_calls,
        1,
        "a new session"
    );
    assert_eq!(
        one.decide_counted(&e, &store, &ns, &a).1.store_calls,
        1,
        "a session this replica saw last"
    );
    // The other replica's copy is stale: the append answers with the
    // history, and the decision is made again on it.
    let (r, trips) = two.decide_counted(&e, &store, &ns, &a);
    assert_eq!(
        (r.outcome, trips.store_calls, trips.decisions),
        (Effect::Allow, 2, 2)
    );
    assert_eq!(store.history(&ns, "s")?.len(), 3);
    Ok(())
}

#[test]
fn a_deny_on_a_remembered_history_is_checked_against_the_store() -> R {
    // With a look-back window, a longer history can allow what a shorter
    // one denied: the sequence slid out of the window.
    let e = engine(
        r#"{"id": "p", "rules": [{"effect": "allow"}], "sessionRules": {"forbiddenSequences":
            [{"actions": ["a", "b"], "lookbackActions": 2}]}}"#,
    )?;
    let store = MemoryStore::new();
    let ns = Namespace::new("t", "p");
    let (one, two) = (KeptSessions::new(), KeptSessions::new());
    assert_eq!(
        one.decide(&e, &store, &ns, &env("a", "s", "")?).outcome,
        Effect::Allow
    );
    assert_eq!(
        two.decide(&e, &store, &ns, &env("c", "s", "")?).outcome,
        Effect::Allow
    );
    // `one` remembers [a]; on [a] the action b is denied, but the store
    // holds [a, c], whose window of 2 with b is [c, b]: allowed.
    assert_eq!(
        one.decide(&e, &store, &ns, &env("b", "s", "")?).outcome,
        Effect::Allow
    );
    Ok(())
}

/// A store that cannot be reached.
struct Down;

impl Store for Down {
    fn defer(&self, _: &Namespace, _: &str, _: &str, _: &[u8]) -> Result<(), StoreError> {
        Err(down())
    }
    fn pending(&self, _: &Namespace, _: &str) -> Result<Vec<Pending>, StoreError> {
        Err(down())
    }
    fn take(&self, _: &Namespace, _: &str, _: &[&str]) -> Result<Vec<Pending>, StoreError> {
        Err(down())
    }
    fn forget(&self, _: &Namespace, _: &str) -> Result<usize, StoreError> {
        Err(down())
    }
    fn runs(&self, _: &Namespace) -> Result<Vec<String>, StoreError> {
        Err(down())
    }
    fn put_grant(&self, _: &Namespace, _: &str, _: &str, _: &[u8]) -> Result<(), StoreError> {
        Err(down())
    }
    fn remove_grant(&self, _: &Namespace, _: &str, _: &str) -> Result<bool, StoreError> {
        Err(down())
    }
    fn remove_grant_if(
        &self,
        _: &Namespace,
        _: &str,
        _: &str,
        _: &[u8],
    ) -> Result<bool, StoreError> {
        Err(down())
    }
    fn grants(&self, _: &Namespace) -> Result<Vec<(String, String, Vec<u8>)>, StoreError> {
        Err(down())
    }
    fn review(&self, _: &Namespace, _: &str, _: bool, _: usize) -> Result<Vec<bool>, StoreError> {
        Err(down())
    }
    fn reset_reviews(&self, _: &Namespace, _: &str) -> Result<(), StoreError> {
        Err(down())
    }
    fn history(&self, _: &Namespace, _: &str) -> Result<Vec<Vec<u8>>, StoreError> {
        Err(down())
    }
    fn append_if(
        &self,
        _: &Namespace,
        _: &str,
        _: usize,
        _: &[u8],
    ) -> Result<Appended, StoreError> {
        Err(down())
    }
    fn ping(&self) -> Result<(), StoreError> {
        Err(down())
    }
}

fn down() -> StoreError {
    StoreError::Unavailable("connection refused".into())
}

#[test]
fn a_store_that_cannot_be_reached_denies_saying_so() -> R {
    let e = engine(r#"{"id": "p", "rules": [{"effect": "allow"}]}"#)?;
    let ns = Namespace::new("t", "p");
    let s = KeptSessions::new();
    let r = s.decide(&e, &Down, &ns, &env("file.read", "s", "")?);
    assert_eq!(r.outcome, Effect::Deny);
    let reason = r.reason.unwrap_or_default();
    assert!(
        reason.starts_with("the state store cannot be reached"),
        "{reason}"
    );
    // An envelope that carries its actions needs no store.
    let inline = Envelope::from_json(
        r#"{"action": "file.read", "resource": "/tmp/x", "principalId": "agent-1",
            "session": {"sessionId": "s", "actions": []}}"#,
    )?;
    assert_eq!(s.decide(&e, &Down, &ns, &inline).outcome, Effect::Allow);
    Ok(())
}

#[test]
fn the_memory_store_passes_the_store_suite() -> Result<(), StoreError> {
    let s: Arc<dyn Store> = Arc::new(MemoryStore::new());
    toolgate_testing::store::suite(&s)
}

/// Generated policies and sessions: the engine and the reference agree
/// with each action's `riskScore` counted, and a session kept in the store
/// decides as the reference does on the allowed actions written inline.
#[test]
fn kept_sessions_decide_as_the_reference_on_the_same_history() -> R {
    use serde_json::{json, Value};
    use toolgate::authensor::AuthensorEvaluator;
    use toolgate_reference::authensor::AuthensorReference;
    use toolgate_testing::authensor::{Generator, Shape};
    let shape = Shape::small();
    let (mut risk_fired, mut compared) = (0, 0);
    for seed in 0..300u64 {
        let mut g = Generator::new(seed);
        let Ok(policies) = Policies::from_value(&g.policies(&shape)) else {
            continue;
        };
        let Ok(e) = AuthensorEngine::build(&policies) else {
            continue;
        };
        let reference = AuthensorReference::new(&policies);
        let store = MemoryStore::new();
        let ns = Namespace::new("t", format!("seed-{seed}"));
        let kept = KeptSessions::new();
        // The model: the allowed actions so far, as the envelope's session.
        let mut allowed: Vec<Value> = Vec::new();
        for _ in 0..12 {
            let mut v = g.envelope(&shape);
            let Some(obj) = v.as_object_mut() else {
                continue;
            };
            // Budgets add up over a kept session, and not inline: leave
            // costs out of this comparison (tests above cover them).
            obj.remove("constraints");
            let inline_env = {
                let mut w = obj.clone();
                w.insert(
                    "session".into(),
                    json!({"sessionId": "s", "actions": allowed.clone()}),
                );
                Envelope::from_value(Value::Object(w))
            };
            obj.insert("session".into(), json!({"sessionId": "s"}));
            let (Ok(stored_env), Ok(inline_env)) = (Envelope::from_value(v.clone()), inline_env)
            else {
                continue;
            };
            let want = reference.decide(&inline_env);
            assert_eq!(
                e.decide(&inline_env).to_json(),
                want.to_json(),
                "seed {seed}"
            );
            let got = kept.decide(&e, &store, &ns, &stored_env);
            assert_eq!(got.to_json(), want.to_json(), "seed {seed}: {v}");
            compared += 1;
            if want
                .session_violation
                .as_ref()
                .is_some_and(|s| s.violation.kind() == "risk_threshold")
                && (inline_env.risk_score() > 0.0
                    || inline_env.history_risk().iter().any(|r| *r > 0.0))
            {
                risk_fired += 1;
            }
            if got.outcome == Effect::Allow {
                let mut a = serde_json::Map::new();
                a.insert("actionType".into(), json!(stored_env.action()));
                if let Some(r) = v.get("riskScore") {
                    a.insert("riskScore".into(), r.clone());
                }
                allowed.push(Value::Object(a));
            }
        }
    }
    assert!(compared > 1000, "only {compared} envelopes compared");
    assert!(
        risk_fired > 0,
        "no generated session crossed a threshold with riskScores"
    );
    Ok(())
}
