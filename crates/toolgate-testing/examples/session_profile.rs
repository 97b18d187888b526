//! Decides Authensor envelopes on a session kept in the memory store, in a
//! loop, for a profiler: only `measured` is worth collecting
//! (`valgrind --tool=callgrind --toggle-collect='*measured*'`), since
//! building each round's store of 16 actions is not the cost in question.
//!
//! `cargo run --release -p toolgate-testing --example session_profile -- stored 2000`
//! (`stored`, `inline` or `none`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    missing_docs
)]

use std::hint::black_box;
use toolgate::authensor::{AuthensorEngine, AuthensorResult, Envelope, KeptSessions, Policies};
use toolgate::state::{MemoryStore, Namespace};

const POLICY: &str = r#"{"id": "p", "version": 1,
  "rules": [{"effect": "deny", "conditions": {"action": {"pattern": "shell.*"}}},
            {"effect": "allow"}],
  "sessionRules": {"maxActions": 1000000, "riskThreshold": 1000000,
    "riskWeights": {"network.*": 0.5, "file.write": 0.2},
    "forbiddenSequences": [{"actions": ["secret.read", "network.send"], "lookbackActions": 8}]}}"#;

fn envelope(session: &str) -> Envelope {
    Envelope::from_json(&format!(
        r#"{{"action": "file.read", "resource": "/tmp/x", "principalId": "agent-1"{session}}}"#
    ))
    .unwrap()
}

#[inline(never)]
fn measured(
    engine: &AuthensorEngine<'_>,
    kept: &KeptSessions,
    store: &MemoryStore,
    ns: &Namespace,
    env: &Envelope,
    stored: bool,
) -> AuthensorResult {
    if stored {
        kept.decide(engine, store, ns, env)
    } else {
        engine.decide(env)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map_or("stored", String::as_str);
    let rounds: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(2000);
    let engine = AuthensorEngine::build(&Policies::from_json(POLICY).unwrap()).unwrap();
    let actions: Vec<String> = (0..16)
        .map(|i| {
            format!(
                r#"{{"actionType": "{}"}}"#,
                ["file.read", "network.get", "file.write"][i % 3]
            )
        })
        .collect();
    let env = match mode {
        "none" => envelope(""),
        "inline" => envelope(&format!(
            r#", "session": {{"sessionId": "s", "actions": [{}]}}"#,
            actions.join(",")
        )),
        _ => envelope(r#", "session": {"sessionId": "s"}"#),
    };
    let ns = Namespace::new("t", "p");
    for _ in 0..rounds {
        let (store, kept) = (MemoryStore::new(), KeptSessions::new());
        if mode == "stored" {
            for _ in 0..16 {
                kept.decide(&engine, &store, &ns, &env);
            }
        }
        black_box(measured(
            &engine,
            &kept,
            &store,
            &ns,
            black_box(&env),
            mode == "stored",
        ));
    }
}
