//! Deciding Authensor envelopes against 1,000 and 10,000 rules: the
//! compiled engine, the same engine loaded from its artifact, and the
//! reference interpreter, side by side in one run over the same rotating
//! stream of 1,024 envelopes. Envelopes are read before the timing: what
//! is measured is the decision.
//!
//! The workload is `Generator::gateway_policies`: policies of 50 rules
//! each over about sixty services and eight verbs (exact actions, `svc.*`,
//! `svc.**` and `*.verb` globs; resource globs and regular expressions,
//! principal `notIn` lists, environment `in` lists, budgets), half of them
//! scoped to a service group, some with a default, a fifth with session
//! rules (an action limit, a forbidden sequence with a look-back window,
//! risk weights). Its envelopes carry a session of up to sixteen earlier
//! actions; a quarter here carry none. Before anything is timed, every
//! engine's result is checked against the reference's on every envelope.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    missing_docs
)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::hint::black_box;
use std::time::Instant;
use toolgate::authensor::{AuthensorEngine, AuthensorEvaluator, Envelope, Policies};
use toolgate_reference::authensor::AuthensorReference;
use toolgate_testing::authensor::Generator;

fn workload(rules: usize) -> (Policies, Vec<Envelope>) {
    let (doc, envelopes) = Generator::gateway_workload(rules);
    let policies = Policies::from_value(&doc).unwrap();
    let envelopes = envelopes
        .into_iter()
        .map(|e| Envelope::from_value(e).unwrap())
        .collect();
    (policies, envelopes)
}

fn decide(c: &mut Criterion) {
    // Times come from the command line (`--warm-up-time`,
    // `--measurement-time`), criterion's defaults otherwise.
    let mut group = c.benchmark_group("authensor");
    for rules in [1_000, 10_000] {
        let (policies, envelopes) = workload(rules);
        let start = Instant::now();
        let engine = AuthensorEngine::build(&policies).unwrap();
        let built = start.elapsed();
        let bytes = engine.to_bytes();
        let loaded = AuthensorEngine::from_bytes(&bytes).unwrap();
        let reference = AuthensorReference::new(&policies);
        let (mut by_rule, mut by_default, mut by_session, mut denied) = (0, 0, 0, 0);
        for e in &envelopes {
            let want = reference.decide(e);
            assert_eq!(engine.decide(e), want, "{:?}", e.value());
            assert_eq!(loaded.decide(e), want, "{:?}", e.value());
            by_rule += usize::from(want.rule.is_some());
            by_session += usize::from(want.session_violation.is_some());
            by_default += usize::from(
                want.policy_id.is_some() && want.rule.is_none() && want.session_violation.is_none(),
            );
            denied += usize::from(want.outcome.as_str() == "deny");
        }
        eprintln!(
            "authensor {rules} rules: built in {built:.1?}, artifact {} bytes; of {} envelopes \
             {by_rule} decided by a rule, {by_default} by a default, {by_session} by a session rule, \
             {} by none; {denied} denied",
            bytes.len(),
            envelopes.len(),
            envelopes.len() - by_rule - by_default - by_session,
        );

        let mut i = 0;
        group.bench_function(BenchmarkId::new("compiled", rules), |b| {
            b.iter(|| {
                i = (i + 1) % envelopes.len();
                black_box(engine.decide(&envelopes[i]))
            })
        });
        group.bench_function(BenchmarkId::new("artifact", rules), |b| {
            b.iter(|| {
                i = (i + 1) % envelopes.len();
                black_box(loaded.decide(&envelopes[i]))
            })
        });
        group.bench_function(BenchmarkId::new("reference", rules), |b| {
            b.iter(|| {
                i = (i + 1) % envelopes.len();
                black_box(reference.decide(&envelopes[i]))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, decide);
criterion_main!(benches);
