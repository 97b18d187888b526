//! Deciding, at 100, 1k, 10k and 100k rules, over the workload's calls in
//! turn: on a call already read (`Engine::decide_result`, the decision and
//! what it rests on; `Engine::decide`, the verdict with its text), and from a
//! JSON line to a verdict line (`Call::from_json`, decide,
//! `Verdict::to_json().to_string()`), the work `toolgate decide` does per
//! line; and, up to 10k rules, with the shell tool split by the shell
//! splitter and a quarter of its calls compound commands.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    missing_docs
)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use toolgate::{Call, Engine};
use toolgate_testing::workload::Workload;

/// Rule counts measured.
const SIZES: [usize; 4] = [100, 1_000, 10_000, 100_000];
/// Calls cycled through: enough that the branch predictor cannot learn them.
const CALLS: usize = 4_096;
/// The workload's seed, shared with the other benchmarks and the comparison.
const SEED: u64 = 42;

fn decide(c: &mut Criterion) {
    let mut g = c.benchmark_group("decide");
    g.throughput(Throughput::Elements(1));
    for n in SIZES {
        let w = Workload::generate(n, CALLS, SEED);
        let engine = Engine::build(&w.policy()).unwrap();
        let lines: Vec<String> = w.calls_jsonl().lines().map(str::to_string).collect();
        g.bench_with_input(BenchmarkId::new("result", n), &w.calls, |b, calls| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) % calls.len();
                black_box(engine.decide_result(black_box(&calls[i])))
            })
        });
        g.bench_with_input(BenchmarkId::new("verdict", n), &w.calls, |b, calls| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) % calls.len();
                black_box(engine.decide(black_box(&calls[i])))
            })
        });
        g.bench_with_input(BenchmarkId::new("json_line", n), &lines, |b, lines| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) % lines.len();
                let call = Call::from_json(black_box(&lines[i])).unwrap();
                black_box(engine.decide(&call).to_json().to_string())
            })
        });
        if n <= 10_000 {
            // The same rules with the shell tool split into subjects, a
            // quarter of its calls compound commands.
            let shell = Workload::generate(n, CALLS, SEED).with_shell(SEED);
            let split = Engine::build(&shell.policy()).unwrap();
            g.bench_with_input(
                BenchmarkId::new("shell_result", n),
                &shell.calls,
                |b, calls| {
                    let mut i = 0;
                    b.iter(|| {
                        i = (i + 1) % calls.len();
                        black_box(split.decide_result(black_box(&calls[i])))
                    })
                },
            );
        }
    }
    g.finish();
}

criterion_group!(benches, decide);
criterion_main!(benches);
