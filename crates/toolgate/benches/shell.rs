//! The shell splitter's cost: the pure split of a compound command, of a
//! command that takes the fast path, and the whole splitter (subjects with
//! their JSON arguments, as the engine receives them).
//!
//! `cargo bench --bench shell -- --warm-up-time 1 --measurement-time 3`
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use toolgate::shell::{split_command, ShellConfig, ShellSplitter};
use toolgate::{Args, Splitter};

/// A 100-byte compound command of the kind agents send.
const COMPOUND: &str =
    "cd src && git add -A && git commit -m \"fix: the parser\" && cargo test --all 2>&1 | tail -n 20 | cat ";

/// A command with no shell metacharacter: the fast path.
const PLAIN: &str = "cargo test --workspace --all-features --no-fail-fast -- --test-threads 2";

/// Wrappers, assignments, a path, a substitution and a nested shell.
const HARD: &str =
    "FOO=1 timeout 5 /usr/bin/env -i sudo -u root bash -c 'rm -rf \"$(pwd)/x\"; echo `date`'";

fn bench(c: &mut Criterion) {
    assert_eq!(COMPOUND.len(), 100);
    let cfg = ShellConfig::default();
    let mut g = c.benchmark_group("shell");
    g.bench_function("split_compound_100b", |b| {
        b.iter(|| split_command(black_box(COMPOUND), &cfg).unwrap())
    });
    g.bench_function("split_plain_fast_path", |b| {
        b.iter(|| split_command(black_box(PLAIN), &cfg).unwrap())
    });
    g.bench_function("split_hard", |b| {
        b.iter(|| split_command(black_box(HARD), &cfg).unwrap())
    });
    let splitter = ShellSplitter::default();
    let args = Args::from_json(&serde_json::json!({ "command": COMPOUND }).to_string());
    g.bench_function("splitter_compound_100b_subjects", |b| {
        b.iter(|| splitter.split("bash", black_box(&args)).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
