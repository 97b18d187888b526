//! The supervisor's behaviour on a real Redis: the same checks the
//! library's tests run on the memory store (`toolgate_testing::supervisor`),
//! each on a `redis-server` of its own, with every replica of a check on a
//! connection pool of its own.
#![allow(
    clippy::panic,
    reason = "a URL of the test's own server that does not parse is a broken test"
)]

use std::sync::Arc;
use std::time::Duration;
use toolgate::state::Store;
use toolgate_redis::{RedisOptions, RedisStore};
use toolgate_testing::redis::Server;

/// A fresh server and a way to open stores on it; `None` where
/// `redis-server` is missing outside CI.
fn redis() -> Option<(impl Fn() -> Arc<dyn Store>, Server)> {
    let server = Server::start_in_memory()?;
    let url = server.url();
    let open = move || -> Arc<dyn Store> {
        let options = RedisOptions {
            connect_timeout: Duration::from_millis(500),
            io_timeout: Duration::from_secs(2),
            ..RedisOptions::default()
        };
        match RedisStore::open(&url, options) {
            Ok(s) => Arc::new(s),
            Err(e) => panic!("{e}"),
        }
    };
    Some((open, server))
}

toolgate_testing::supervisor_suite!(redis());
