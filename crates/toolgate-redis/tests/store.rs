//! The store suite on a real Redis, and Redis going away and coming back.

use std::sync::Arc;
use std::time::Duration;
use toolgate::state::{Appended, MemoryStore, Namespace, Store, StoreError};
use toolgate_redis::{RedisOptions, RedisStore};
use toolgate_testing::redis::Server;

fn options() -> RedisOptions {
    RedisOptions {
        connect_timeout: Duration::from_millis(300),
        io_timeout: Duration::from_millis(500),
        ..RedisOptions::default()
    }
}

#[test]
fn the_memory_store_passes_the_suite() -> Result<(), StoreError> {
    let s: Arc<dyn Store> = Arc::new(MemoryStore::new());
    toolgate_testing::store::suite(&s)
}

#[test]
fn the_redis_store_passes_the_suite() -> Result<(), Box<dyn std::error::Error>> {
    let Some(server) = Server::start() else {
        return Ok(());
    };
    let s: Arc<dyn Store> = Arc::new(RedisStore::open(&server.url(), options())?);
    toolgate_testing::store::suite(&s)?;
    Ok(())
}

#[test]
fn redis_down_is_unavailable_and_redis_back_is_used_again_with_its_data(
) -> Result<(), Box<dyn std::error::Error>> {
    let Some(mut server) = Server::start() else {
        return Ok(());
    };
    let s = RedisStore::open(&server.url(), options())?;
    let ns = Namespace::new("t", "p");
    assert_eq!(s.append_if(&ns, "s", 0, b"a")?, Appended::Done);
    server.stop();
    assert!(matches!(s.ping(), Err(StoreError::Unavailable(_))));
    let e = s.append_if(&ns, "s", 1, b"b");
    assert!(matches!(e, Err(StoreError::Unavailable(_))), "{e:?}");
    let shown = e.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        shown.starts_with("the state store cannot be reached"),
        "{shown}"
    );
    server.restart();
    // The pool's dead connections are dropped as they fail: bounded tries.
    let mut back = false;
    for _ in 0..20 {
        if s.ping().is_ok() {
            back = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(back, "the store answers again after Redis restarts");
    assert_eq!(s.history(&ns, "s")?, vec![b"a".to_vec()]);
    assert_eq!(s.append_if(&ns, "s", 1, b"b")?, Appended::Done);
    Ok(())
}

#[test]
fn keys_expire_after_the_configured_time() -> Result<(), Box<dyn std::error::Error>> {
    let Some(server) = Server::start() else {
        return Ok(());
    };
    let s = RedisStore::open(
        &server.url(),
        RedisOptions {
            expiry: Some(Duration::from_secs(1)),
            ..options()
        },
    )?;
    let ns = Namespace::new("t", "p");
    s.append_if(&ns, "s", 0, b"a")?;
    s.defer(&ns, "r", "c", b"")?;
    assert_eq!(s.history(&ns, "s")?.len(), 1);
    // Bounded wait: expiry is 1 s; Redis expires lazily on access.
    let mut gone = false;
    for _ in 0..40 {
        std::thread::sleep(Duration::from_millis(100));
        if s.history(&ns, "s")?.is_empty() && s.runs(&ns)?.is_empty() {
            gone = true;
            break;
        }
    }
    assert!(gone, "the session and the run expired");
    Ok(())
}
