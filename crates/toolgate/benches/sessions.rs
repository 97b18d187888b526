//! The added cost of an Authensor session kept in the memory store: one
//! decision on a stored session of 16 actions (read from the store,
//! decided, appended) against the same decision with no session, and with
//! the same 16 actions sent inline in the envelope. Target: the stored
//! session within 2x of no session.
//!
//! `memory_store_16` times the 17th action alone, the one at which every
//! history's vectors are full and grow: the worst case of a growing
//! session. `memory_store_16_to_32` times the sixteen decisions after it
//! in a row and counts them as sixteen elements, so the growth is spread
//! over them as it is in a session that runs on.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    missing_docs
)]

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use std::hint::black_box;
use toolgate::authensor::{AuthensorEngine, Envelope, KeptSessions, Policies};
use toolgate::state::{MemoryStore, Namespace};
use toolgate_testing::authensor::{session_envelope, SessionOf, SESSION_POLICY};

fn envelope(session: SessionOf) -> Envelope {
    Envelope::from_json(&session_envelope(session)).unwrap()
}

fn bench(c: &mut Criterion) {
    let engine = AuthensorEngine::build(&Policies::from_json(SESSION_POLICY).unwrap()).unwrap();
    let none = envelope(SessionOf::None);
    let inline = envelope(SessionOf::Inline(16));
    let stored = envelope(SessionOf::Stored);
    let ns = Namespace::new("t", "p");
    // A store holding 16 actions, this replica having decided the last
    // (the common case): made outside the timing.
    let sixteen = || {
        let (store, kept) = (MemoryStore::new(), KeptSessions::new());
        for _ in 0..16 {
            kept.decide(&engine, &store, &ns, &stored);
        }
        (store, kept)
    };
    let mut g = c.benchmark_group("authensor_session");
    g.bench_function("no_session", |b| b.iter(|| engine.decide(black_box(&none))));
    g.bench_function("inline_16", |b| {
        b.iter(|| engine.decide(black_box(&inline)))
    });
    g.bench_function("memory_store_16", |b| {
        // By reference, so that dropping the store and the remembered
        // sessions after each decision is not timed with it.
        b.iter_batched_ref(
            sixteen,
            |(store, kept)| kept.decide(&engine, store, &ns, black_box(&stored)),
            BatchSize::SmallInput,
        )
    });
    g.throughput(Throughput::Elements(16));
    g.bench_function("memory_store_16_to_32", |b| {
        b.iter_batched_ref(
            sixteen,
            |(store, kept)| {
                for _ in 0..16 {
                    black_box(kept.decide(&engine, store, &ns, black_box(&stored)));
                }
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
