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

/// A grant record kept under a field name that is not `LEN:SCOPESOURCE`
/// (only another writer can leave one) fails the listing of every grant,
/// so every call is denied, naming the field and the repair;
/// `discard_unreadable` removes such fields, and decisions recover with the
/// readable sets in force. The memory store cannot hold such a name, so
/// this lives here rather than in the shared suite.
#[test]
fn a_grant_field_whose_name_does_not_read_is_discarded_and_decisions_recover(
) -> Result<(), Box<dyn std::error::Error>> {
    use toolgate::state::Namespace;
    use toolgate::{Decision, RuleLists, RuleSet, Source};
    use toolgate_testing::supervisor::{bash, on};

    let Some((open, server)) = redis() else {
        return Ok(());
    };
    let sup = on(open(), Namespace::new("t", "names"))?;
    let commit = RuleSet {
        source: Source {
            name: "commit".into(),
            rank: 5,
            trusted: true,
            ..Source::default()
        },
        lists: RuleLists::parse("bash(git push:*)", "", "")?,
        ..RuleSet::default()
    };
    sup.grant_set(&commit, Some("c1"))?;
    let push = bash("r", "p", "git push").in_scope("c1");
    assert_eq!(sup.would(&push)?.decision, Decision::Allow);

    // Write beside the set, into the same hash, as another writer would.
    let client = redis::Client::open(server.url())?;
    let mut c = client.get_connection()?;
    let keys: Vec<String> = redis::cmd("KEYS").arg("*grants").query(&mut c)?;
    let [hash] = keys.as_slice() else {
        return Err(format!("one grants hash, not {keys:?}").into());
    };
    for field in ["garbage", "9:ab"] {
        redis::cmd("HSET")
            .arg(hash)
            .arg(field)
            .arg("x")
            .query::<i64>(&mut c)?;
    }

    let v = sup.decide_batch(1, std::slice::from_ref(&push));
    let [denied] = v.as_slice() else {
        return Err(format!("one verdict, not {v:?}").into());
    };
    assert_eq!(denied.decision, Decision::Deny);
    assert!(
        denied.reason.contains("not `LEN:SCOPESOURCE`")
            && denied
                .reason
                .contains("discard the unreadable grant records"),
        "{}",
        denied.reason
    );

    let mut gone: Vec<(Option<String>, String)> = sup
        .discard_unreadable()?
        .into_iter()
        .map(|d| (d.scope, d.source))
        .collect();
    gone.sort();
    assert_eq!(
        gone,
        [(None, "9:ab".to_string()), (None, "garbage".to_string())]
    );
    assert_eq!(
        sup.would(&push)?.decision,
        Decision::Allow,
        "the readable set is in force again"
    );
    assert!(
        sup.discard_unreadable()?.is_empty(),
        "nothing left to discard"
    );
    Ok(())
}
