//! A decision on an Authensor session kept in Redis on loopback (a
//! redis-server of the bench's own): the criterion median, then a bounded
//! run of 5,000 decisions for the median, the 99th percentile and the
//! store calls (round trips) per decision, printed. Without redis-server
//! the bench says so and measures nothing.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    missing_docs
)]

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use std::time::{Duration, Instant};
use toolgate::authensor::{AuthensorEngine, Envelope, KeptSessions, Policies};
use toolgate::state::Namespace;
use toolgate_redis::{RedisOptions, RedisStore};
use toolgate_testing::redis::Server;

const POLICY: &str = r#"{"id": "p", "version": 1, "rules": [{"effect": "allow"}],
  "sessionRules": {"maxActions": 100000000, "riskThreshold": 1000000,
    "forbiddenSequences": [{"actions": ["secret.read", "network.send"], "lookbackActions": 8}]}}"#;

fn bench(c: &mut Criterion) {
    let Some(server) = Server::start_in_memory() else {
        return;
    };
    let engine = AuthensorEngine::build(&Policies::from_json(POLICY).unwrap()).unwrap();
    let store = RedisStore::open(&server.url(), RedisOptions::default()).unwrap();
    let kept = KeptSessions::new();
    let ns = Namespace::new("bench", "p");
    let env = |s: usize| {
        Envelope::from_json(&format!(
            r#"{{"action": "file.read", "resource": "/tmp/x", "principalId": "agent-1",
                "session": {{"sessionId": "s{s}"}}}}"#
        ))
        .unwrap()
    };
    // Sessions of about 16 actions: 64 sessions, each decided in turn.
    let envs: Vec<Envelope> = (0..64).map(env).collect();
    for _ in 0..16 {
        for e in &envs {
            kept.decide(&engine, &store, &ns, e);
        }
    }
    let mut i = 0;
    c.bench_function("authensor_session/redis_loopback", |b| {
        b.iter(|| {
            i += 1;
            kept.decide(&engine, &store, &ns, black_box(&envs[i % envs.len()]))
        })
    });
    // The bounded run: 5,000 decisions, at most 60 s.
    let (mut times, mut calls) = (Vec::with_capacity(5000), 0usize);
    let deadline = Instant::now() + Duration::from_secs(60);
    for k in 0..5000 {
        if Instant::now() > deadline {
            break;
        }
        let t = Instant::now();
        let (_, trips) = kept.decide_counted(&engine, &store, &ns, &envs[k % envs.len()]);
        times.push(t.elapsed());
        calls += trips.store_calls;
    }
    times.sort();
    let n = times.len().max(1);
    println!(
        "redis loopback: {} decisions, median {:?}, p99 {:?}, {:.3} store round trips per decision",
        times.len(),
        times.get(n / 2).copied().unwrap_or_default(),
        times.get(n * 99 / 100).copied().unwrap_or_default(),
        calls as f64 / n as f64
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
