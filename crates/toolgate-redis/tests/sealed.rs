//! The sealed store on a real Redis: the supervisor's behaviour through
//! the seal, and what a writer of the Redis keys without the state key can
//! no longer make the engine allow (`toolgate_testing::sealed`), each check
//! on a `redis-server` of its own.
#![allow(
    clippy::panic,
    reason = "a URL of the test's own server that does not parse is a broken test"
)]

use std::sync::Arc;
use std::time::Duration;
use toolgate::state::{SealKey, Sealed, Store};
use toolgate_redis::{RedisOptions, RedisStore};
use toolgate_testing::redis::Server;

fn open_on(url: &str) -> Arc<dyn Store> {
    let options = RedisOptions {
        connect_timeout: Duration::from_millis(500),
        io_timeout: Duration::from_secs(2),
        ..RedisOptions::default()
    };
    match RedisStore::open(url, options) {
        Ok(s) => Arc::new(s),
        Err(e) => panic!("{e}"),
    }
}

/// Unsealed handles on a fresh server, as a writer of its keys holds them.
fn redis() -> Option<(impl Fn() -> Arc<dyn Store>, Server)> {
    let server = Server::start_in_memory()?;
    let url = server.url();
    Some((move || open_on(&url), server))
}

/// Sealed handles on a fresh server, as the service's replicas hold them.
fn sealed_redis() -> Option<(impl Fn() -> Arc<dyn Store>, Server)> {
    let server = Server::start_in_memory()?;
    let url = server.url();
    let open = move || -> Arc<dyn Store> {
        Arc::new(Sealed::new(open_on(&url), SealKey::from_bytes([9; 32])))
    };
    Some((open, server))
}

mod through_the_seal {
    use super::sealed_redis;
    toolgate_testing::supervisor_suite!(sealed_redis());
}

mod behind_the_seal {
    use super::redis;
    toolgate_testing::sealed_suite!(redis());
}
