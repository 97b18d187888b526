//! Authensor sessions kept by the service: on the default memory store,
//! and on one real Redis shared by two replicas, stopped and restarted
//! mid-run. Loopback only; every loop bounded in count and time.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolgate::open::{open, Format, Opened};
use toolgate::state::{Namespace, Store};
use toolgate_server::client;
use toolgate_server::{Addr, Config, Running, Source};
use toolgate_testing::redis::Server as Redis;

const T: Duration = Duration::from_secs(5);

struct Replica {
    rt: tokio::runtime::Runtime,
    running: Option<Running>,
}

impl Replica {
    fn start(path: &std::path::Path, store: Arc<dyn Store>) -> Replica {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let mut c = Config::new(Source::Bundle(path.to_path_buf()));
        c.listen = vec![Addr::parse("127.0.0.1:0").unwrap()];
        c.watch = false;
        c.store = store;
        c.tenant = "acme".into();
        c.store_scope = Some("sessions".into());
        let running = rt.block_on(toolgate_server::start(c)).unwrap();
        Replica {
            rt,
            running: Some(running),
        }
    }
    fn addr(&self) -> Addr {
        self.running.as_ref().unwrap().listening[0].clone()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if let Some(r) = self.running.take() {
            self.rt.block_on(r.shutdown());
        }
    }
}

/// The artifact of Authensor policies with `maxActions: max`, written to a
/// file of its own.
fn policy_file(name: &str, max: usize) -> PathBuf {
    let doc = format!(
        r#"{{"id": "p", "version": 1, "rules": [{{"effect": "allow"}}],
            "sessionRules": {{"maxActions": {max}}}}}"#
    );
    let bytes = match open(doc.as_bytes(), Format::Detect).unwrap() {
        Opened::Authensor(e) => e.to_bytes(),
        other => panic!("{other:?}"),
    };
    let path = std::env::temp_dir().join(format!("tg-store-{name}-{}.tgb", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    path
}

fn envelope(session: &str) -> String {
    format!(
        r#"{{"action": "file.read", "resource": "/tmp/x", "principalId": "agent-1",
            "session": {{"sessionId": "{session}"}}}}"#
    )
}

fn decide(addr: &Addr, session: &str) -> Value {
    let (status, body) =
        client::post(addr, "/v1/decide", envelope(session).as_bytes(), None, T).unwrap();
    assert_eq!(status, 200);
    serde_json::from_slice(&body).unwrap()
}

fn outcome(v: &Value) -> &str {
    v["decision"]["outcome"].as_str().unwrap_or("")
}

fn ready(addr: &Addr) -> u16 {
    client::get(addr, "/health/ready", None, T).unwrap().0
}

#[test]
fn the_memory_store_keeps_a_session_across_requests() {
    let path = policy_file("memory", 2);
    let r = Replica::start(&path, Arc::new(toolgate::state::MemoryStore::new()));
    let got: Vec<String> = (0..3)
        .map(|_| outcome(&decide(&r.addr(), "s")).to_string())
        .collect();
    assert_eq!(got, ["allow", "allow", "deny"]);
    assert_eq!(ready(&r.addr()), 200);
    let _ = std::fs::remove_file(path);
}

#[test]
fn two_replicas_on_one_redis_admit_exactly_max_actions() {
    let Some(redis) = Redis::start() else {
        return;
    };
    const MAX: usize = 23;
    let path = policy_file("race", MAX);
    let open_store = || toolgate_server::open_store(&redis.url(), None).unwrap();
    let replicas = [
        Replica::start(&path, open_store()),
        Replica::start(&path, open_store()),
    ];
    let addrs: Vec<Addr> = replicas.iter().map(Replica::addr).collect();
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let addr = addrs[t % 2].clone();
            std::thread::spawn(move || {
                (0..12)
                    .filter(|_| outcome(&decide(&addr, "race")) == "allow")
                    .count()
            })
        })
        .collect();
    let allowed: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(allowed, MAX, "96 requests over two replicas");
    let store = open_store();
    let kept = store
        .history(&Namespace::new("acme", "sessions"), "race")
        .unwrap();
    assert_eq!(kept.len(), MAX);
    let _ = std::fs::remove_file(path);
}

#[test]
fn redis_stopped_mid_run_denies_and_reports_not_ready_then_recovers() {
    let Some(mut redis) = Redis::start() else {
        return;
    };
    const MAX: usize = 10;
    let path = policy_file("restart", MAX);
    let store = toolgate_server::open_store(&redis.url(), None).unwrap();
    let r = Replica::start(&path, store.clone());
    let mut allowed = 0;
    for _ in 0..4 {
        if outcome(&decide(&r.addr(), "s")) == "allow" {
            allowed += 1;
        }
    }
    assert_eq!(allowed, 4);
    assert_eq!(ready(&r.addr()), 200);

    redis.stop();
    for _ in 0..5 {
        let v = decide(&r.addr(), "s");
        assert_eq!(outcome(&v), "deny", "{v}");
        let reason = v["decision"]["reason"].as_str().unwrap_or("");
        assert!(reason.contains("state store cannot be reached"), "{reason}");
    }
    assert_eq!(ready(&r.addr()), 503);

    redis.restart();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut back = false;
    for _ in 0..100 {
        if Instant::now() > deadline {
            break;
        }
        if ready(&r.addr()) == 200 {
            back = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(back, "ready again without a restart");
    // The four admitted actions were kept, once each: exactly six more.
    for _ in 0..10 {
        if outcome(&decide(&r.addr(), "s")) == "allow" {
            allowed += 1;
        }
    }
    assert_eq!(allowed, MAX);
    let kept = store
        .history(&Namespace::new("acme", "sessions"), "s")
        .unwrap();
    assert_eq!(kept.len(), MAX);
    let _ = std::fs::remove_file(path);
}
