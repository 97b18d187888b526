//! The state layer on a sealed memory store: every behaviour of
//! `toolgate_testing::supervisor` holds with the seal in between, and
//! `toolgate_testing::sealed` shows what a writer without the key can no
//! longer make the engine allow. `toolgate-redis` runs both on Redis.

mod through_the_seal {
    use std::sync::Arc;
    use toolgate::state::{MemoryStore, SealKey, Sealed, Store};

    /// One memory store behind one key, each handle another replica's.
    fn sealed_memory() -> Option<(impl Fn() -> Arc<dyn Store>, ())> {
        let inner: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let open = move || -> Arc<dyn Store> {
            Arc::new(Sealed::new(
                Arc::clone(&inner),
                SealKey::from_bytes([9; 32]),
            ))
        };
        Some((open, ()))
    }

    toolgate_testing::supervisor_suite!(sealed_memory());
}

mod behind_the_seal {
    use std::sync::Arc;
    use toolgate::state::{MemoryStore, Store};

    /// Handles on one unsealed memory store, as a writer behind the
    /// service's back holds them.
    fn memory() -> Option<(impl Fn() -> Arc<dyn Store>, ())> {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        Some((move || Arc::clone(&store), ()))
    }

    toolgate_testing::sealed_suite!(memory());
}
