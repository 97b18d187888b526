//! The added cost of an Authensor session kept in the memory store: one
//! decision on a stored session of 16 actions (read from the store,
//! decided, appended) against the same decision with no session, and with
//! the same 16 actions sent inline in the envelope. Target: the stored
//! session within 2x of no session.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    missing_docs
)]

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use std::hint::black_box;
use toolgate::authensor::{AuthensorEngine, Envelope, KeptSessions, Policies};
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

fn bench(c: &mut Criterion) {
    let engine = AuthensorEngine::build(&Policies::from_json(POLICY).unwrap()).unwrap();
    let actions: Vec<String> = (0..16)
        .map(|i| {
            format!(
                r#"{{"actionType": "{}"}}"#,
                ["file.read", "network.get", "file.write"][i % 3]
            )
        })
        .collect();
    let none = envelope("");
    let inline = envelope(&format!(
        r#", "session": {{"sessionId": "s", "actions": [{}]}}"#,
        actions.join(",")
    ));
    let stored = envelope(r#", "session": {"sessionId": "s"}"#);
    let ns = Namespace::new("t", "p");
    let mut g = c.benchmark_group("authensor_session");
    g.bench_function("no_session", |b| b.iter(|| engine.decide(black_box(&none))));
    g.bench_function("inline_16", |b| {
        b.iter(|| engine.decide(black_box(&inline)))
    });
    g.bench_function("memory_store_16", |b| {
        // By reference, so that dropping the store and the remembered
        // sessions after each decision is not timed with it.
        b.iter_batched_ref(
            || {
                // A store holding 16 actions, this replica having decided
                // the last (the common case): excluded from the timing.
                let (store, kept) = (MemoryStore::new(), KeptSessions::new());
                for _ in 0..16 {
                    kept.decide(&engine, &store, &ns, &stored);
                }
                (store, kept)
            },
            |(store, kept)| kept.decide(&engine, store, &ns, black_box(&stored)),
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
