//! Decides the Authensor benchmark's workload in a loop, for a profiler
//! (`valgrind --tool=callgrind --toggle-collect='*measured*'`): the
//! benchmark itself spends most of a profile building its workload.
//!
//! `cargo run --release -p toolgate-testing --example authensor_profile -- 1000 20000`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    missing_docs
)]

use std::hint::black_box;
use toolgate::authensor::{AuthensorEngine, AuthensorResult, Envelope, Policies};
use toolgate_testing::authensor::Generator;

#[inline(never)]
fn measured(engine: &AuthensorEngine<'_>, env: &Envelope) -> AuthensorResult {
    engine.decide(env)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rules: usize = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(1000);
    let rounds: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(20_000);
    let (doc, envelopes) = Generator::gateway_workload(rules);
    let policies = Policies::from_value(&doc).unwrap();
    let envelopes: Vec<Envelope> = envelopes
        .into_iter()
        .map(|e| Envelope::from_value(e).unwrap())
        .collect();
    let engine = AuthensorEngine::build(&policies).unwrap();
    let start = std::time::Instant::now();
    for i in 0..rounds {
        black_box(measured(
            &engine,
            black_box(&envelopes[i % envelopes.len()]),
        ));
    }
    eprintln!(
        "{rules} rules: {:?} per decision",
        start.elapsed() / rounds as u32
    );
}
