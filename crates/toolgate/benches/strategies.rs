//! Deciding on policies of one match strategy each, at 1k, 10k and 100k
//! rules that share program prefixes as real policies do (hundreds of
//! `git …`, `npm …`, `docker …` rules, `toolgate_testing::classes`), beside
//! the mixed workload of `decide.rs` at the same sizes. A strategy whose
//! cost grows with the rules of a prefix shows here as a ratio between the
//! sizes; the mixed workload hides it among the other classes.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    missing_docs
)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use toolgate::{Call, Engine};
use toolgate_testing::classes::{Class, ClassWorkload};
use toolgate_testing::workload::Workload;

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];
const CALLS: usize = 4_096;
const SEED: u64 = 42;

fn run(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    n: usize,
    engine: &Engine,
    calls: &[Call],
) {
    g.bench_with_input(BenchmarkId::new(name, n), calls, |b, calls| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % calls.len();
            black_box(engine.decide_result(black_box(&calls[i])))
        })
    });
}

fn strategies(c: &mut Criterion) {
    let mut g = c.benchmark_group("strategies");
    g.throughput(Throughput::Elements(1));
    // `STRATEGY_CLASSES=inner,mixed` narrows the run.
    let only = std::env::var("STRATEGY_CLASSES").ok();
    let wanted = |name: &str| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|x| x == name))
    };
    for n in SIZES {
        for class in Class::ALL {
            if !wanted(class.name()) {
                continue;
            }
            let w = ClassWorkload::generate(class, n, CALLS, SEED);
            let engine = Engine::build(&w.policy()).unwrap();
            run(&mut g, class.name(), n, &engine, &w.calls);
        }
        if wanted("mixed") {
            let w = Workload::generate(n, CALLS, SEED);
            let engine = Engine::build(&w.policy()).unwrap();
            run(&mut g, "mixed", n, &engine, &w.calls);
        }
    }
    g.finish();
}

/// 20,000 deny rules `**x<n>**` against a 1 MB value in which every one of
/// their pieces occurs many times: one decision, which verified every rule
/// with its own scan of the value before the pieces shared one automaton.
fn hostile(c: &mut Criterion) {
    if std::env::var("STRATEGY_CLASSES").is_ok_and(|o| !o.split(',').any(|x| x == "hostile")) {
        return;
    }
    let mut g = c.benchmark_group("strategies_hostile");
    g.sample_size(10);
    let rules: Vec<serde_json::Value> = (0..20_000)
        .map(|i| serde_json::Value::String(format!("bash(**x{i:05}**)")))
        .collect();
    let doc = serde_json::json!({
        "default": "allow",
        "matchers": {"bash": {"match": "glob", "field": "command"}},
        "deny": rules,
    });
    let policy = toolgate::policy::doc::from_value(&doc, None).unwrap();
    let engine = Engine::build(&policy).unwrap();
    // Every needle several times over, the last rule's first.
    let mut value = String::with_capacity(1 << 20);
    let mut i = 0u32;
    while value.len() < (1 << 20) - 16 {
        value.push_str(&format!("x{:05} ", 19_999 - i % 20_000));
        i += 1;
    }
    let call = Call::new("bash", &serde_json::json!({ "command": value }).to_string());
    assert_eq!(engine.decide(&call).decision, toolgate::Decision::Deny);
    g.bench_function("20k_rules_1mb_value", |b| {
        b.iter(|| black_box(engine.decide_result(black_box(&call))))
    });
    g.finish();
}

criterion_group!(benches, strategies, hostile);
criterion_main!(benches);
