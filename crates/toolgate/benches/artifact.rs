//! Loading an artifact (with the revision verified, the default, and
//! without) beside compiling the same policy from source, at 1k, 10k and
//! 100k rules; and deciding from a loaded artifact beside deciding
//! from a freshly compiled engine.
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

fn load_and_compile(c: &mut Criterion) {
    let mut g = c.benchmark_group("artifact");
    for n in [1_000usize, 10_000, 100_000] {
        let w = Workload::generate(n, 256, 42);
        let policy = w.policy();
        let engine = Engine::build(&policy).unwrap();
        let bytes = engine.to_bytes();
        // An artifact read into a Vec<u8> is usually 8-byte aligned; a
        // Vec<u64> makes sure of it here.
        let aligned: Vec<u64> = bytes
            .chunks(8)
            .map(|c| {
                let mut b = [0u8; 8];
                b[..c.len()].copy_from_slice(c);
                u64::from_le_bytes(b)
            })
            .collect();
        let view: &[u8] = &bytemuck::cast_slice(&aligned)[..bytes.len()];
        eprintln!("{n} rules: artifact {} bytes", bytes.len());
        if n >= 100_000 {
            g.sample_size(10);
        }
        g.bench_with_input(BenchmarkId::new("load", n), &view, |b, v| {
            b.iter(|| black_box(Engine::from_bytes(v).unwrap()))
        });
        let unverified = toolgate::artifact::LoadOptions::default().verify_revision(false);
        let registry = toolgate::builtins::registry();
        g.bench_with_input(BenchmarkId::new("load_unverified", n), &view, |b, v| {
            b.iter(|| black_box(Engine::load(v, &registry, &unverified).unwrap()))
        });
        g.bench_with_input(BenchmarkId::new("compile", n), &policy, |b, p| {
            b.iter(|| black_box(Engine::build(p).unwrap()))
        });
        let loaded = Engine::from_bytes(view).unwrap();
        g.bench_with_input(
            BenchmarkId::new("decide_loaded", n),
            &w.calls,
            |b, calls| {
                let mut i = 0;
                b.iter(|| {
                    i = (i + 1) % calls.len();
                    black_box(loaded.decide_result(&calls[i]))
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new("decide_compiled", n),
            &w.calls,
            |b, calls| {
                let mut i = 0;
                b.iter(|| {
                    i = (i + 1) % calls.len();
                    black_box(engine.decide_result(&calls[i]))
                })
            },
        );
    }
    g.finish();
}

criterion_group!(benches, load_and_compile);
criterion_main!(benches);
