//! Decides Authensor envelopes on a session kept in the memory store, in a
//! loop, for a profiler: only `measured` is worth collecting
//! (`valgrind --tool=callgrind --toggle-collect='*measured*'`), since
//! building each round's store of 16 actions is not the cost in question.
//!
//! `cargo run --release -p toolgate-testing --example session_profile -- stored 2000`
//! (`stored`, `inline` or `none`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    missing_docs
)]

use std::hint::black_box;
use toolgate::authensor::{AuthensorEngine, AuthensorResult, Envelope, KeptSessions, Policies};
use toolgate::state::{MemoryStore, Namespace};
use toolgate_testing::authensor::{session_envelope, SessionOf, SESSION_POLICY};

#[inline(never)]
fn measured(
    engine: &AuthensorEngine<'_>,
    kept: &KeptSessions,
    store: &MemoryStore,
    ns: &Namespace,
    env: &Envelope,
    stored: bool,
) -> AuthensorResult {
    if stored {
        kept.decide(engine, store, ns, env)
    } else {
        engine.decide(env)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map_or("stored", String::as_str);
    let rounds: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(2000);
    let engine = AuthensorEngine::build(&Policies::from_json(SESSION_POLICY).unwrap()).unwrap();
    let session = match mode {
        "none" => SessionOf::None,
        "inline" => SessionOf::Inline(16),
        _ => SessionOf::Stored,
    };
    let env = Envelope::from_json(&session_envelope(session)).unwrap();
    let ns = Namespace::new("t", "p");
    for _ in 0..rounds {
        let (store, kept) = (MemoryStore::new(), KeptSessions::new());
        if session == SessionOf::Stored {
            for _ in 0..16 {
                kept.decide(&engine, &store, &ns, &env);
            }
        }
        black_box(measured(
            &engine,
            &kept,
            &store,
            &ns,
            black_box(&env),
            session == SessionOf::Stored,
        ));
    }
}
