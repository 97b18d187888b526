//! Compiling the workload's policy, at 100, 1k, 10k and 100k rules: `check`
//! and the table compiler, from a policy already read (`Engine::build`).
//! Loading compiled tables instead is measured in `artifact.rs`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    missing_docs
)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::hint::black_box;
use toolgate::Engine;
use toolgate_testing::workload::Workload;

fn compile(c: &mut Criterion) {
    let mut g = c.benchmark_group("compile");
    for n in [100usize, 1_000, 10_000, 100_000] {
        let policy = Workload::generate(n, 0, 42).policy();
        if n >= 10_000 {
            g.sample_size(10);
        }
        g.bench_with_input(BenchmarkId::from_parameter(n), &policy, |b, p| {
            b.iter(|| black_box(Engine::build(p).unwrap()))
        });
    }
    g.finish();
}

criterion_group!(benches, compile);
criterion_main!(benches);
