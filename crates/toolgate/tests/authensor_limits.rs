//! Work limits that must hold for sound policies: a decision's budget only
//! runs out on tables damaged behind valid checksums, never on a policy
//! set that is merely large.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use serde_json::json;
use toolgate::authensor::{AuthensorEngine, AuthensorEvaluator, Effect, Envelope, Policies};
use toolgate_reference::authensor::AuthensorReference;

#[test]
fn many_sequences_over_a_long_session_stay_within_the_budget() {
    // Ten policies of a thousand forbidden sequences each, none of which
    // occurs, ahead of a policy that allows everything: 10,000 sequences
    // stepped through a window of two hundred actions.
    let sequences: Vec<_> = (0..1000).map(|_| json!({"actions": ["x", "y"]})).collect();
    let mut policies: Vec<_> = (0..10)
        .map(|i| {
            json!({"id": format!("s{i}"), "priority": 100, "rules": [],
                   "sessionRules": {"forbiddenSequences": sequences}})
        })
        .collect();
    policies.push(json!({"id": "allow-all", "rules": [{"effect": "allow"}]}));
    let policies = Policies::from_json(&json!(policies).to_string()).unwrap();
    let actions: Vec<_> = (0..199).map(|_| json!({"actionType": "a"})).collect();
    let envelope = Envelope::from_json(
        &json!({"id": "e", "action": "a", "resource": "r", "principalId": "p",
                "session": {"sessionId": "s", "actions": actions}})
        .to_string(),
    )
    .unwrap();

    let compiled = AuthensorEngine::build(&policies).unwrap();
    let bytes = compiled.to_bytes();
    let loaded = AuthensorEngine::from_bytes(&bytes).unwrap();
    let reference = AuthensorReference::new(&policies);
    let engines: [(&str, &dyn AuthensorEvaluator); 3] = [
        ("reference", &reference),
        ("compiled", &compiled),
        ("artifact", &loaded),
    ];
    for (name, e) in engines {
        let r = e.decide(&envelope);
        assert_eq!(r.outcome, Effect::Allow, "{name}: {:?}", r.reason);
    }
}

#[test]
fn a_glob_too_large_for_the_tables_is_refused_at_load_naming_its_place() {
    let glob = "ab*".repeat(20_000);
    for (policy, place) in [
        (
            json!({"id": "p", "rules": [{"effect": "allow",
                   "conditions": {"action": {"pattern": glob}}}]}),
            "rules[0].conditions.action.pattern",
        ),
        (
            json!({"id": "p", "scope": {"actions": ["x", glob]},
                   "rules": [{"effect": "allow"}]}),
            "scope.actions[1]",
        ),
    ] {
        let Err(errors) = Policies::from_json(&json!([policy]).to_string()) else {
            panic!("a {}-byte glob loaded", glob.len());
        };
        let text = errors.to_string();
        assert!(text.contains("is too large to compile"), "{text}");
        assert!(text.contains(place), "{text}");
        // The message shows the glob's start, not 60 KB of it.
        assert!(text.len() < 2_000, "{} bytes of message", text.len());
    }
    // Long globs that fit still load.
    let fits = format!("{}*", "a".repeat(1_000));
    let policy = json!([{"id": "p", "rules": [{"effect": "allow",
                          "conditions": {"action": {"pattern": fits}}}]}]);
    assert!(Policies::from_json(&policy.to_string()).is_ok());
}

/// The engine shares the tokens and the weight of actions of one type, for
/// the first 16 types of a session, and walks the rest one by one: past 16
/// types, with types repeated, types that match no weight, exact keys and
/// globs, and sequences over them, it decides as the reference does.
#[test]
fn sessions_of_many_action_types_weigh_as_the_reference_does() {
    let policies = Policies::from_json(
        &json!([{"id": "risk", "rules": [{"effect": "allow"}],
            "sessionRules": {
                "riskThreshold": 3.9,
                "riskWeights": {"net.send": 0.5, "net.*": 0.25, "t7": 0.125, "t1*": 0.0625},
                "forbiddenSequences": [{"actions": ["t3", "net.*", "t19"]}]}}])
        .to_string(),
    )
    .unwrap();
    let compiled = AuthensorEngine::build(&policies).unwrap();
    let reference = AuthensorReference::new(&policies);
    let types: Vec<String> = (0..24)
        .map(|i| format!("t{i}"))
        .chain(["net.send", "net.get", "other"].map(String::from))
        .collect();
    let mut outcomes = std::collections::BTreeSet::new();
    for n in 0..60usize {
        // Types in an order that revisits early ones after the first 16.
        let history: Vec<_> = (0..n)
            .map(|i| json!({"actionType": types[(i * 7 + n) % types.len()]}))
            .collect();
        for action in ["net.send", "t7", "t12", "other", "t19"] {
            let envelope = Envelope::from_json(
                &json!({"action": action, "resource": "r", "principalId": "p",
                        "session": {"sessionId": "s", "actions": history}})
                .to_string(),
            )
            .unwrap();
            let got = compiled.decide(&envelope);
            let want = reference.decide(&envelope);
            assert_eq!(got.to_json(), want.to_json(), "{n} actions, then {action}");
            outcomes.insert(format!("{:?}", got.outcome));
        }
    }
    // Both answers occur, so the threshold and the sequence were reached.
    assert_eq!(outcomes.len(), 2, "{outcomes:?}");
}
