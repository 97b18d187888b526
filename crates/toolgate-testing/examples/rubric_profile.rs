//! Decides the Rubric benchmark's workloads in a loop, for a profiler
//! (`valgrind --tool=callgrind --toggle-collect='*decide_ref*'`): the
//! benchmark itself spends most of a profile building its workloads.
//!
//! `cargo run --release -p toolgate-testing --example rubric_profile -- dense 20000`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    missing_docs
)]

use serde_json::Value;
use std::hint::black_box;
use toolgate::rubric::{Bundle, Request, RubricEngine};
use toolgate_testing::rubric::{Generator, Shape};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map_or("dense", String::as_str);
    let rounds: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(10_000);
    let mut g = Generator::new(1000);
    let shape = Shape {
        max_conditions: 3,
        invalid_patterns: false,
        ..Shape::shared()
    };
    let (doc, requests): (Value, Vec<Value>) = if name == "gateway" {
        let doc = g.gateway_bundle(10, 100);
        (doc, (0..512).map(|_| g.gateway_request()).collect())
    } else {
        let doc = g.sized_bundle(&shape, 10, 100);
        (doc, (0..512).map(|_| g.request(&shape)).collect())
    };
    let bundle = Bundle::from_value(&doc).unwrap();
    let requests: Vec<Request> = requests
        .into_iter()
        .map(|r| Request::from_value(r).unwrap())
        .collect();
    let engine = RubricEngine::build(&bundle).unwrap();
    let start = std::time::Instant::now();
    for i in 0..rounds {
        black_box(engine.decide_ref(black_box(&requests[i % requests.len()])));
    }
    eprintln!("{name}: {:?} per decision", start.elapsed() / rounds as u32);
}
