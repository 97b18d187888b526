//! Decides calls already read, in a loop, for a profiler: only `measured`
//! is worth collecting
//! (`valgrind --tool=callgrind --toggle-collect='*measured*'`), since
//! generating the workload and building the engine are not the cost in
//! question. The first round decides every call once outside `measured`,
//! so that what is built at first use (the automata) is not counted.
//!
//! `cargo run --release -p toolgate-testing --example decide_profile -- mixed 1000 20000 [GROUP]`
//! (`mixed` for the workload of `toolgate_testing::workload`, or a class of
//! `toolgate_testing::classes` by name; rules; decisions; optionally the
//! compiler's `inner_group`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    missing_docs
)]

use std::hint::black_box;
use toolgate::runtime::CallResult;
use toolgate::{Call, Engine, Policy};
use toolgate_testing::classes::{Class, ClassWorkload};
use toolgate_testing::workload::Workload;

#[inline(never)]
fn measured(engine: &Engine, call: &Call) -> CallResult {
    engine.decide_result(call)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let class = args.get(1).map_or("mixed", String::as_str);
    let rules: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(1000);
    let rounds: usize = args.get(3).and_then(|n| n.parse().ok()).unwrap_or(20_000);
    let (policy, calls): (Policy, Vec<Call>) = if class == "mixed" {
        let w = Workload::generate(rules, 4096, 42);
        (w.policy(), w.calls)
    } else {
        let c = Class::ALL
            .into_iter()
            .find(|c| c.name() == class)
            .expect("a class name");
        let w = ClassWorkload::generate(c, rules, 4096, 42);
        (w.policy(), w.calls)
    };
    let mut limits = toolgate::compile::Limits::default();
    if let Some(g) = args.get(4).and_then(|n| n.parse().ok()) {
        limits.inner_group = g;
    }
    let registry = toolgate::builtins::registry();
    let engine = Engine::build_limited(&policy, &registry, limits).unwrap();
    eprintln!("{} bytes of artifact", engine.to_bytes().len());
    for c in &calls {
        black_box(engine.decide_result(c));
    }
    let mut denied = 0usize;
    for i in 0..rounds {
        let r = measured(&engine, black_box(&calls[i % calls.len()]));
        denied += usize::from(r.decision == toolgate::Decision::Deny);
    }
    println!("{rounds} decisions, {denied} denied");
}
