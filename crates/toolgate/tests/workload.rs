//! The generated workloads the benchmarks use, decided by every engine: the
//! compiled runtime, the runtime loaded from its artifact and the reference
//! must agree on every verdict, at sizes where the tables' shortcuts matter.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use toolgate::{Engine, Evaluator};
use toolgate_reference::Reference;
use toolgate_testing::workload::Workload;

fn agree(rules: usize, calls: usize, seed: u64) {
    agree_on(Workload::generate(rules, calls, seed));
}

fn agree_on(w: Workload) {
    let policy = w.policy();
    let compiled = Engine::build(&policy).unwrap();
    let bytes = compiled.to_bytes();
    let loaded = Engine::from_bytes(&bytes).unwrap();
    let reference = Reference::build(&policy, &toolgate::builtins::registry()).unwrap();
    for (i, c) in w.calls.iter().enumerate() {
        let want = reference.would(c);
        assert_eq!(
            compiled.would(c),
            want,
            "call {i} {:?} {}",
            c.tool,
            c.args.raw()
        );
        assert_eq!(loaded.would(c), want, "call {i} (artifact)");
    }
    // Batches of three hold allowed calls when another asks.
    for chunk in w.calls.chunks(3).take(200) {
        assert_eq!(compiled.decide_batch(chunk), reference.decide_batch(chunk));
    }
}

#[test]
fn small_workloads_agree() {
    for seed in 0..8 {
        agree(300, 400, seed);
    }
}

#[test]
fn a_larger_workload_agrees() {
    agree(3_000, 1_500, 99);
}

#[test]
fn a_shell_workload_agrees() {
    for seed in 0..3 {
        agree_on(Workload::generate(400, 400, seed).with_shell(seed));
    }
}
