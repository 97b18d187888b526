//! Deciding Rubric requests against 1,000-rule bundles (10 policies of 100
//! rules): the compiled engine, the same engine loaded from its artifact,
//! and the reference interpreter, over the same rotating stream of 512
//! requests. Requests are parsed before the timing: what is measured is
//! the decision (`compiled` and `loaded` return an owned result and read
//! the clock for `latencyMs`; `compiled_ref` is the allocation-free
//! `decide_ref`).
//!
//! Two workloads:
//!
//! * `gateway`: each rule names a tool among about forty and constrains
//!   its command, path, environment or agent with values from a large
//!   vocabulary; a request meets a few rules.
//! * `dense`: the differential test's small vocabulary, where most
//!   conditions hold for most requests and every request matches a rule
//!   early, which is the reference interpreter's best case.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    missing_docs
)]

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::Value;
use std::hint::black_box;
use std::time::Duration;
use toolgate::rubric::reference::RubricReference;
use toolgate::rubric::{Bundle, Request, RubricEngine, RubricEvaluator};
use toolgate_testing::rubric::{Generator, Shape};

fn workload(name: &str) -> (Bundle, Vec<Request>) {
    let mut g = Generator::new(1000);
    let shape = Shape {
        max_conditions: 3,
        invalid_patterns: false,
        ..Shape::shared()
    };
    let (doc, requests): (Value, Vec<Value>) = match name {
        "gateway" => {
            let doc = g.gateway_bundle(10, 100);
            (doc, (0..512).map(|_| g.gateway_request()).collect())
        }
        _ => {
            let doc = g.sized_bundle(&shape, 10, 100);
            (doc, (0..512).map(|_| g.request(&shape)).collect())
        }
    };
    let bundle = Bundle::from_value(&doc).unwrap();
    assert!(bundle.compile_errors().is_empty());
    let requests = requests
        .into_iter()
        .map(|r| Request::from_value(r).unwrap())
        .collect();
    (bundle, requests)
}

fn decide(c: &mut Criterion) {
    for name in ["gateway", "dense"] {
        let (bundle, requests) = workload(name);
        let rules: usize = bundle.policies.iter().map(|p| p.rules.len()).sum();
        let engine = RubricEngine::build(&bundle).unwrap();
        let bytes = engine.to_bytes().unwrap();
        let loaded = RubricEngine::from_bytes(&bytes).unwrap();
        let reference = RubricReference::new(&bundle);
        let mut by_rule = 0;
        let mut denied = 0;
        for r in &requests {
            let got = engine.decide_untimed(r);
            assert_eq!(got, reference.decide(r).clone_untimed(), "{:?}", r.value());
            by_rule += usize::from(got.matched_rule_id.is_some());
            denied += usize::from(got.decision.as_str() == "deny");
        }
        eprintln!(
            "{name}: {rules} rules, artifact {} bytes; of {} requests {by_rule} decided by a rule, {denied} denied",
            bytes.len(),
            requests.len()
        );

        let mut group = c.benchmark_group(format!("rubric_{name}_1000_rules"));
        group
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3))
            .sample_size(30);
        let mut i = 0;
        group.bench_function("compiled", |b| {
            b.iter(|| {
                i = (i + 1) % requests.len();
                black_box(engine.decide(&requests[i]))
            })
        });
        group.bench_function("compiled_ref", |b| {
            b.iter(|| {
                i = (i + 1) % requests.len();
                black_box(engine.decide_ref(&requests[i]).decision)
            })
        });
        group.bench_function("loaded", |b| {
            b.iter(|| {
                i = (i + 1) % requests.len();
                black_box(loaded.decide(&requests[i]))
            })
        });
        group.bench_function("reference", |b| {
            b.iter(|| {
                i = (i + 1) % requests.len();
                black_box(reference.decide(&requests[i]))
            })
        });
        group.finish();
    }
}

criterion_group!(benches, decide);
criterion_main!(benches);
