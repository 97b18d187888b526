//! The server in process, on loopback port 0 and unix sockets only: every
//! endpoint, the fault paths, and reload under load. Every loop is bounded
//! in count and in time.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use serde_json::Value;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolgate::open::{open, Format, Opened};
use toolgate_server::client;
use toolgate_server::{Addr, Config, Running, Source};

const T: Duration = Duration::from_secs(5);

fn examples(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// A scratch directory, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("tg-server-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The artifact of a policy document of any dialect.
fn artifact(doc: &[u8]) -> Vec<u8> {
    match open(doc, Format::Detect).unwrap() {
        Opened::Rules(e) | Opened::ClaudeCode(e) => e.to_bytes(),
        Opened::Rubric(e) => e.to_bytes().unwrap(),
        Opened::Authensor(e) => e.to_bytes(),
        other => panic!("{other:?}"),
    }
}

fn revision(bytes: &[u8]) -> String {
    toolgate::artifact::header(bytes).unwrap().revision_hex()
}

const POLICY: &str = r#"{"default": "ask", "matchers": {"bash": {"match": "prefix", "field": "command"}},
    "allow": "bash(ls:*)", "deny": "bash(rm:*)"}"#;
const POLICY_B: &str = r#"{"default": "deny", "matchers": {"bash": {"match": "prefix", "field": "command"}},
    "allow": "bash(ls:*) bash(cat:*)", "deny": "bash(rm:*)"}"#;

struct Server {
    rt: tokio::runtime::Runtime,
    running: Option<Running>,
}

impl Server {
    fn start(config: Config) -> Server {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let running = rt.block_on(toolgate_server::start(config)).unwrap();
        Server {
            rt,
            running: Some(running),
        }
    }
    fn addr(&self) -> Addr {
        self.running.as_ref().unwrap().listening[0].clone()
    }
    fn admin(&self) -> Addr {
        self.running.as_ref().unwrap().admin.clone().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(r) = self.running.take() {
            self.rt.block_on(r.shutdown());
        }
    }
}

/// A server for `bytes` written to `dir`, on loopback port 0, not watched.
fn serve(s: &Scratch, bytes: &[u8], tweak: impl FnOnce(&mut Config)) -> Server {
    let path = s.path("served.tgb");
    std::fs::write(&path, bytes).unwrap();
    let mut c = Config::new(Source::Bundle(path));
    c.listen = vec![Addr::parse("127.0.0.1:0").unwrap()];
    c.admin_listen = Some(Addr::parse("127.0.0.1:0").unwrap());
    c.watch = false;
    tweak(&mut c);
    Server::start(c)
}

fn post(addr: &Addr, path: &str, body: &str) -> (u16, Value) {
    post_token(addr, path, body, None)
}

fn post_token(addr: &Addr, path: &str, body: &str, token: Option<&str>) -> (u16, Value) {
    let (status, body) = client::post(addr, path, body.as_bytes(), token, T).unwrap();
    (status, serde_json::from_slice(&body).unwrap())
}

fn get(addr: &Addr, path: &str) -> (u16, String) {
    let (status, body) = client::get(addr, path, None, T).unwrap();
    (status, String::from_utf8(body).unwrap())
}

fn status(addr: &Addr) -> Value {
    serde_json::from_str(&get(addr, "/v1/status").1).unwrap()
}

/// The verdict without the members the server adds.
fn bare(mut v: Value) -> Value {
    if let Value::Object(m) = &mut v {
        m.remove("revision");
        m.remove("decision_id");
        m.remove("latencyMs");
    }
    v
}

#[test]
fn decide_answers_one_call_and_a_batch_with_the_revision_and_unique_ids() {
    let s = Scratch::new("decide");
    let bytes = artifact(POLICY.as_bytes());
    let server = serve(&s, &bytes, |_| {});
    let engine = match open(&bytes, Format::Artifact).unwrap() {
        Opened::Rules(e) => e,
        _ => unreachable!(),
    };
    let call = r#"{"tool": "bash", "args": {"command": "rm -rf /"}, "call_id": "c1"}"#;
    let (code, v) = post(&server.addr(), "/v1/decide", call);
    assert_eq!(code, 200);
    assert_eq!(v["revision"], revision(&bytes));
    let want = engine
        .would(&toolgate::Call::from_json(call).unwrap())
        .to_json();
    assert_eq!(bare(v.clone()), want);
    // A batch: each verdict stamped, the ask holds the allow.
    let batch = r#"[{"tool": "bash", "args": {"command": "ls"}}, {"tool": "bash", "args": {"command": "make"}}]"#;
    let (code, vs) = post(&server.addr(), "/v1/decide", batch);
    assert_eq!(code, 200);
    let calls: Vec<toolgate::Call> = serde_json::from_str::<Vec<Value>>(batch)
        .unwrap()
        .iter()
        .map(|c| toolgate::Call::from_json(&c.to_string()).unwrap())
        .collect();
    let want: Vec<Value> = engine
        .decide_batch(&calls)
        .iter()
        .map(toolgate::Verdict::to_json)
        .collect();
    let got: Vec<Value> = vs.as_array().unwrap().iter().cloned().map(bare).collect();
    assert_eq!(got, want);
    let mut ids: Vec<&str> = vs
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["decision_id"].as_str().unwrap())
        .collect();
    ids.push(v["decision_id"].as_str().unwrap());
    let n = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), n, "decision ids repeat");
}

#[test]
fn explain_names_the_matching_rules_and_the_deciding_one() {
    let s = Scratch::new("explain");
    let server = serve(&s, &artifact(POLICY.as_bytes()), |_| {});
    let call = r#"{"tool": "bash", "args": {"command": "rm -rf /"}}"#;
    let (_, plain) = post(&server.addr(), "/v1/decide", call);
    assert!(plain.get("explain").is_none());
    let (code, v) = post(&server.addr(), "/v1/decide?explain=true", call);
    assert_eq!(code, 200);
    assert_eq!(v["explain"]["decided_by"]["rule"], "bash(rm:*)");
    assert_eq!(v["explain"]["matched"][0]["rule"], "bash(rm:*)");
    // Every rule of the tool is consulted; the one that did not decide is
    // skipped with why, and the fold says which list ended it.
    let consulted: Vec<&str> = v["explain"]["consulted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["rule"].as_str().unwrap())
        .collect();
    assert_eq!(consulted, ["bash(rm:*)", "bash(ls:*)"]);
    assert_eq!(v["explain"]["skipped"][0]["rule"], "bash(ls:*)");
    assert!(v["explain"]["skipped"][0]["why"]
        .as_str()
        .unwrap()
        .starts_with("no match"));
    assert!(v["explain"]["fold"]
        .as_str()
        .unwrap()
        .starts_with("the deny list decided with `bash(rm:*)`"));
    let (_, v) = post(
        &server.addr(),
        "/v1/decide?explain=true",
        r#"[{"tool": "bash", "args": {"command": "make"}}]"#,
    );
    assert_eq!(v[0]["explain"]["matched"], serde_json::json!([]));
    assert_eq!(v[0]["explain"]["decided_by"], "the default (no rule fired)");
}

#[test]
fn rubric_and_authensor_artifacts_answer_in_their_own_shapes() {
    let s = Scratch::new("kinds");
    let rubric = artifact(&std::fs::read(examples("bundle.json")).unwrap());
    let server = serve(&s, &rubric, |_| {});
    assert_eq!(status(&server.addr())["kind"], "rubric");
    let request = std::fs::read_to_string(examples("requests.jsonl")).unwrap();
    let first = request.lines().next().unwrap();
    let (code, v) = post(&server.addr(), "/v1/decide", first);
    assert_eq!(code, 200);
    assert_eq!(v["decision"], "deny");
    assert_eq!(v["matchedRuleId"], "no-force-delete");
    drop(server);

    let s = Scratch::new("kinds-authensor");
    let authensor = artifact(&std::fs::read(examples("authensor.json")).unwrap());
    let server = serve(&s, &authensor, |_| {});
    assert_eq!(status(&server.addr())["kind"], "authensor");
    let envelopes = std::fs::read_to_string(examples("envelopes.jsonl")).unwrap();
    let (code, v) = post(
        &server.addr(),
        "/v1/decide",
        envelopes.lines().next().unwrap(),
    );
    assert_eq!(code, 200);
    assert_eq!(v["decision"]["outcome"], "deny");
    // Claude Code's hook needs rule lists: a deny, with 200.
    let (code, v) = post(
        &server.addr(),
        "/v1/hooks/claude-code",
        r#"{"tool_name": "Bash", "tool_input": {"command": "ls"}}"#,
    );
    assert_eq!(code, 200);
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
}

/// A Rubric artifact whose rules read `dlp_…` gets the scan's fields, not
/// the caller's: a key in the input is found though the request says
/// `dlp_detected: false` (a review found the caller's fields decided).
#[test]
fn a_rubric_artifact_that_reads_dlp_fields_is_given_the_scan() {
    let s = Scratch::new("dlp");
    let bundle = r#"{"policies": [{"policyId": "p1", "policyVersion": 1, "document": {"spec": {
      "defaultEffect": "allow", "rules": [
        {"id": "no-secrets", "description": "a secret in the call", "effect": "deny", "conditions": [
          {"field": "dlp_detected", "operator": "eq", "value": true}]}]}}}]}"#;
    let server = serve(&s, &artifact(bundle.as_bytes()), |_| {});
    let key = format!("AKIA{}", "Q7W2E9R4T6Y1U3I8");
    let with_key =
        serde_json::json!({"tool_name": "Bash", "input": {"command": format!("echo {key}")},
        "dlp_detected": false})
        .to_string();
    let (code, v) = post(&server.addr(), "/v1/decide", &with_key);
    assert_eq!(code, 200);
    assert_eq!(v["decision"], "deny", "{v}");
    let clean = r#"{"tool_name": "Bash", "input": {"command": "ls"}, "dlp_detected": true}"#;
    let (_, v) = post(&server.addr(), "/v1/decide", clean);
    assert_eq!(v["decision"], "allow", "{v}");
}

#[test]
fn bad_bodies_are_denied_with_their_status() {
    let s = Scratch::new("bad");
    let server = serve(&s, &artifact(POLICY.as_bytes()), |c| c.max_body = 1024);
    let (code, v) = post(&server.addr(), "/v1/decide", "{not json");
    assert_eq!(code, 400);
    assert_eq!(v["decision"], "deny");
    assert!(v["reason"].as_str().unwrap().contains("not a JSON call"));
    let big = format!(
        r#"{{"tool": "bash", "args": {{"command": "ls {}"}}}}"#,
        "a".repeat(2048)
    );
    let (code, v) = post(&server.addr(), "/v1/decide", &big);
    assert_eq!(code, 413);
    assert_eq!(v["decision"], "deny");
    assert!(v["reason"].as_str().unwrap().contains("longer than 1024"));
    // JSON that is not a call is a decision: a deny, with 200.
    let (code, v) = post(&server.addr(), "/v1/decide", r#"{"tool": 3}"#);
    assert_eq!((code, v["decision"].as_str()), (200, Some("deny")));
    let (code, v) = post(&server.addr(), "/v1/hooks/claude-code", &big);
    assert_eq!(
        code, 200,
        "a hook answer is always 200: anything else lets the call run"
    );
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
    let metrics = get(&server.addr(), "/metrics").1;
    assert!(
        metrics.contains(r#"toolgate_bad_requests_total{reason="too_large"} 2"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"toolgate_bad_requests_total{reason="malformed"} 1"#),
        "{metrics}"
    );
}

#[test]
fn a_panic_while_deciding_is_a_deny_and_the_server_keeps_serving() {
    let s = Scratch::new("panic");
    let server = serve(&s, &artifact(POLICY.as_bytes()), |c| {
        c.panic_marker = Some("PANIC-HERE".into());
    });
    let (code, v) = post(
        &server.addr(),
        "/v1/decide",
        r#"{"tool": "bash", "args": {"command": "ls PANIC-HERE"}}"#,
    );
    assert_eq!(code, 500);
    assert_eq!(v["decision"], "deny");
    assert!(v["revision"].is_string());
    let (code, v) = post(
        &server.addr(),
        "/v1/hooks/claude-code",
        r#"{"tool_name": "bash", "tool_input": {"command": "ls PANIC-HERE"}}"#,
    );
    assert_eq!(code, 200);
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
    let (code, v) = post(
        &server.addr(),
        "/v1/decide",
        r#"{"tool": "bash", "args": {"command": "ls"}}"#,
    );
    assert_eq!((code, v["decision"].as_str()), (200, Some("allow")));
    assert!(get(&server.addr(), "/metrics")
        .1
        .contains("toolgate_panics_total 2"));
}

#[test]
fn a_listener_off_loopback_needs_a_token() {
    let s = Scratch::new("loopback");
    let path = s.path("p.tgb");
    std::fs::write(&path, artifact(POLICY.as_bytes())).unwrap();
    let mut c = Config::new(Source::Bundle(path));
    // Refused before anything is bound.
    c.listen = vec![Addr::parse("0.0.0.0:0").unwrap()];
    c.watch = false;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let e = rt
        .block_on(toolgate_server::start(c.clone()))
        .err()
        .unwrap();
    assert!(matches!(e, toolgate_server::ServeError::NeedsToken { .. }));
    assert!(e.to_string().contains("--token-file"));
    // So is an admin listener, which an admin token alone may guard.
    c.listen = vec![Addr::parse("127.0.0.1:0").unwrap()];
    c.admin_listen = Some(Addr::parse("0.0.0.0:0").unwrap());
    let e = rt.block_on(toolgate_server::start(c)).err().unwrap();
    assert!(e
        .to_string()
        .contains("`0.0.0.0:0` is not a loopback address"));
}

#[test]
fn the_token_guards_everything_but_health() {
    let s = Scratch::new("token");
    let server = serve(&s, &artifact(POLICY.as_bytes()), |c| {
        c.token = Some("sesame".into());
        c.admin_listen = Some(Addr::parse("127.0.0.1:0").unwrap());
    });
    let call = r#"{"tool": "bash", "args": {"command": "ls"}}"#;
    let (code, v) = post(&server.addr(), "/v1/decide", call);
    assert_eq!((code, v["decision"].as_str()), (401, Some("deny")));
    let (code, v) = post_token(&server.addr(), "/v1/decide", call, Some("sesamE"));
    assert_eq!((code, v["decision"].as_str()), (401, Some("deny")));
    let (code, v) = post_token(&server.addr(), "/v1/decide", call, Some("sesame"));
    assert_eq!((code, v["decision"].as_str()), (200, Some("allow")));
    assert_eq!(get(&server.addr(), "/health/live").0, 200);
    assert_eq!(get(&server.addr(), "/health/ready").0, 200);
    assert_eq!(get(&server.addr(), "/v1/status").0, 401);
    assert_eq!(get(&server.addr(), "/metrics").0, 401);
    let (code, _) = post(&server.admin(), "/v1/reload", "");
    assert_eq!(code, 401);
    let (code, v) = post_token(&server.admin(), "/v1/reload", "", Some("sesame"));
    assert_eq!((code, v["reloaded"].as_bool()), (200, Some(true)));
}

#[test]
fn a_unix_socket_serves_the_same_answers() {
    let s = Scratch::new("unix");
    let sock = s.path("tg.sock");
    let server = serve(&s, &artifact(POLICY.as_bytes()), |c| {
        c.listen = vec![
            Addr::parse("127.0.0.1:0").unwrap(),
            Addr::Unix(sock.clone()),
        ];
    });
    let unix = server.running.as_ref().unwrap().listening[1].clone();
    assert_eq!(unix, Addr::Unix(sock.clone()));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let call = r#"{"tool": "bash", "args": {"command": "rm x"}}"#;
    let (c1, a) = post(&server.addr(), "/v1/decide", call);
    let (c2, b) = post(&unix, "/v1/decide", call);
    assert_eq!((c1, bare(a)), (c2, bare(b)));
    // A second server does not take the socket of a live one.
    let mut c = Config::new(Source::Bundle(s.path("served.tgb")));
    c.listen = vec![Addr::Unix(sock.clone())];
    c.watch = false;
    let e = server.rt.block_on(toolgate_server::start(c)).err().unwrap();
    assert!(matches!(e, toolgate_server::ServeError::Bind { .. }), "{e}");
    let (c3, _) = post(&unix, "/v1/decide", call);
    assert_eq!(c3, 200);
}

#[test]
fn opa_clients_get_the_verdict_under_result() {
    let s = Scratch::new("opa");
    let server = serve(&s, &artifact(POLICY.as_bytes()), |_| {});
    let (code, v) = post(
        &server.addr(),
        "/v1/data/toolgate/decision",
        r#"{"input": {"tool": "bash", "args": {"command": "rm -rf /"}}}"#,
    );
    assert_eq!(code, 200);
    assert_eq!(v["result"]["decision"], "deny");
    assert_eq!(v["decision_id"], v["result"]["decision_id"]);
    let (code, v) = post(
        &server.addr(),
        "/v1/data/toolgate/decision",
        r#"{"inptu": {}}"#,
    );
    assert_eq!(
        (code, v["result"]["decision"].as_str()),
        (400, Some("deny"))
    );
}

#[test]
fn slow_and_abandoned_clients_are_cut_and_the_server_keeps_serving() {
    let s = Scratch::new("slow");
    let server = serve(&s, &artifact(POLICY.as_bytes()), |c| {
        c.header_timeout = Duration::from_millis(300);
        c.body_timeout = Duration::from_millis(300);
    });
    let Addr::Tcp(a) = server.addr() else {
        unreachable!()
    };
    // Headers that never end: the connection is closed.
    let started = Instant::now();
    let mut slow = std::net::TcpStream::connect(a).unwrap();
    slow.set_read_timeout(Some(T)).unwrap();
    slow.write_all(b"POST /v1/decide HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let mut buf = Vec::new();
    let _ = slow.read_to_end(&mut buf);
    assert!(started.elapsed() < Duration::from_secs(4), "not cut");
    // A body that stops short: 408 and a deny.
    let mut slow = std::net::TcpStream::connect(a).unwrap();
    slow.set_read_timeout(Some(T)).unwrap();
    slow.write_all(b"POST /v1/decide HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"tool\"")
        .unwrap();
    let mut buf = [0u8; 4096];
    let n = slow.read(&mut buf).unwrap();
    let text = String::from_utf8_lossy(&buf[..n]);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains(r#""decision":"deny""#), "{text}");
    // A client that goes away mid-body.
    for _ in 0..20 {
        let mut gone = std::net::TcpStream::connect(a).unwrap();
        gone.write_all(
            b"POST /v1/decide HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{\"tool\":",
        )
        .unwrap();
    }
    let (code, v) = post(
        &server.addr(),
        "/v1/decide",
        r#"{"tool": "bash", "args": {"command": "ls"}}"#,
    );
    assert_eq!((code, v["decision"].as_str()), (200, Some("allow")));
}

#[test]
fn connections_past_the_cap_are_closed_at_once() {
    let s = Scratch::new("cap");
    let server = serve(&s, &artifact(POLICY.as_bytes()), |c| c.max_connections = 2);
    let Addr::Tcp(a) = server.addr() else {
        unreachable!()
    };
    let held: Vec<_> = (0..2)
        .map(|_| std::net::TcpStream::connect(a).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    let mut third = std::net::TcpStream::connect(a).unwrap();
    third.set_read_timeout(Some(T)).unwrap();
    let _ = third.write_all(b"GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut buf = Vec::new();
    let _ = third.read_to_end(&mut buf);
    assert!(buf.is_empty(), "{}", String::from_utf8_lossy(&buf));
    drop(held);
    // The slots come back once the held connections are gone.
    let deadline = Instant::now() + T;
    loop {
        if let Ok((200, _)) = client::get(&server.addr(), "/health/live", None, T) {
            break;
        }
        assert!(Instant::now() < deadline, "the slots never came back");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn status_and_metrics_report_without_argument_values() {
    let s = Scratch::new("metrics");
    let bytes = artifact(POLICY.as_bytes());
    let server = serve(&s, &bytes, |_| {});
    let st = status(&server.addr());
    assert_eq!(st["revision"], revision(&bytes));
    assert_eq!(st["kind"], "rules");
    assert_eq!(st["rules"], 2);
    assert_eq!(st["reloads"], 0);
    assert!(st["loaded_at"].as_u64().unwrap() > 0);
    post(
        &server.addr(),
        "/v1/decide",
        r#"{"tool": "bash", "args": {"command": "rm secret-value-xyz"}}"#,
    );
    let m = get(&server.addr(), "/metrics").1;
    assert!(
        m.contains(r#"toolgate_decisions_total{outcome="deny"} 1"#),
        "{m}"
    );
    assert!(
        m.contains("toolgate_decision_latency_seconds_bucket{le=\"1e-7\"}"),
        "{m}"
    );
    assert!(!m.contains("secret-value-xyz"));
}

#[test]
fn the_decision_log_masks_values_and_the_shadow_is_logged_not_enforced() {
    let s = Scratch::new("log");
    let shadow = s.path("shadow.tgb");
    std::fs::write(&shadow, artifact(POLICY_B.as_bytes())).unwrap();
    let log = s.path("decisions.jsonl");
    let server = serve(&s, &artifact(POLICY.as_bytes()), |c| {
        c.decision_log = Some(log.clone());
        c.mask = vec!["/args/command".into()];
        c.shadow = Some(Source::Bundle(shadow.clone()));
    });
    // `make` asks here and is denied by the shadow's default.
    let (_, v) = post(
        &server.addr(),
        "/v1/decide",
        r#"{"tool": "bash", "args": {"command": "make secret-value-xyz"}}"#,
    );
    assert_eq!(v["decision"], "ask");
    let (_, _) = post(
        &server.addr(),
        "/v1/decide",
        r#"{"tool": "bash", "args": {"command": "ls"}}"#,
    );
    let deadline = Instant::now() + T;
    let text = loop {
        let t = std::fs::read_to_string(&log).unwrap_or_default();
        if t.lines().count() >= 2 || Instant::now() > deadline {
            break t;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!text.contains("secret-value-xyz"), "{text}");
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["call"]["args"]["command"], "***");
    assert_eq!(first["verdict"]["decision"], "ask");
    assert_eq!(first["decision_id"], v["decision_id"]);
    assert_eq!(first["revision"], v["revision"]);
    assert_eq!(first["shadow"]["verdict"]["decision"], "deny");
    assert!(first["latency_ns"].as_u64().is_some());
    let m = get(&server.addr(), "/metrics").1;
    assert!(m.contains("toolgate_shadow_differences_total 1"), "{m}");
}

/// Clients decide without pause while a new artifact is renamed in, then
/// a corrupt one is written in place, then a truncated one renamed in:
/// no request fails, the revision changes once and never goes back, and
/// both bad files are refused.
#[test]
fn reload_under_load_drops_nothing_and_refuses_bad_files() {
    let s = Scratch::new("reload");
    let a = artifact(POLICY.as_bytes());
    let b = artifact(POLICY_B.as_bytes());
    let path = s.path("served.tgb");
    std::fs::write(&path, &a).unwrap();
    let mut c = Config::new(Source::Bundle(path.clone()));
    c.listen = vec![Addr::parse("127.0.0.1:0").unwrap()];
    c.debounce = Duration::from_millis(50);
    let server = Server::start(c);
    let addr = server.addr();
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..2)
        .map(|_| {
            let addr = addr.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut seen: Vec<String> = Vec::new();
                let mut failures = 0;
                let deadline = Instant::now() + Duration::from_secs(30);
                for _ in 0..20_000 {
                    if stop.load(Ordering::Relaxed) || Instant::now() > deadline {
                        break;
                    }
                    match client::post(
                        &addr,
                        "/v1/decide",
                        br#"{"tool": "bash", "args": {"command": "cat x"}}"#,
                        None,
                        T,
                    ) {
                        Ok((200, body)) => {
                            let v: Value = serde_json::from_slice(&body).unwrap();
                            let r = v["revision"].as_str().unwrap().to_string();
                            if seen.last() != Some(&r) {
                                seen.push(r);
                            }
                        }
                        _ => failures += 1,
                    }
                }
                (seen, failures)
            })
        })
        .collect();
    let wait = |what: &str, ok: &dyn Fn(&Value) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let st = status(&addr);
            if ok(&st) {
                return st;
            }
            assert!(Instant::now() < deadline, "{what}: {st}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    std::thread::sleep(Duration::from_millis(200));
    let tmp = s.path("served.tgb.new");
    std::fs::write(&tmp, &b).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    let rev_b = revision(&b);
    wait("the new artifact", &|st| st["revision"] == rev_b.as_str());
    std::thread::sleep(Duration::from_millis(200));
    let mut corrupt = b.clone();
    let mid = corrupt.len() / 2;
    corrupt[mid] ^= 0xff;
    std::fs::write(&path, &corrupt).unwrap();
    wait("the corrupt artifact refused", &|st| {
        st["failed_reloads"].as_u64() >= Some(1)
    });
    std::thread::sleep(Duration::from_millis(200));
    let failed = status(&addr)["failed_reloads"].as_u64().unwrap();
    std::fs::write(&tmp, &b[..b.len() / 2]).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    wait("the truncated artifact refused", &|st| {
        st["failed_reloads"].as_u64() > Some(failed)
    });
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    let rev_a = revision(&a);
    for c in clients {
        let (seen, failures) = c.join().unwrap();
        assert_eq!(failures, 0);
        // Never back: A then B (a client may have started after the swap).
        assert!(
            seen == vec![rev_a.clone(), rev_b.clone()] || seen == vec![rev_b.clone()],
            "{seen:?}"
        );
    }
    let st = status(&addr);
    assert_eq!(st["revision"], rev_b.as_str());
    assert_eq!(st["reloads"], 1);
    assert_eq!(st["generation"], 2);
}

/// The artifact behind a chain of symbolic links, swapped as a Kubernetes
/// volume swaps it: a new directory, then `..data` renamed over to point at
/// it. The file's own name sees no event; the watcher still reloads.
#[test]
fn a_symbolic_link_swapped_beside_the_artifact_is_followed() {
    let s = Scratch::new("symlink-swap");
    let a = artifact(POLICY.as_bytes());
    let b = artifact(POLICY_B.as_bytes());
    for (dir, bytes) in [("..v1", &a), ("..v2", &b)] {
        std::fs::create_dir_all(s.path(dir)).unwrap();
        std::fs::write(s.path(dir).join("bundle.tgb"), bytes).unwrap();
    }
    std::os::unix::fs::symlink("..v1", s.path("..data")).unwrap();
    std::os::unix::fs::symlink("..data/bundle.tgb", s.path("bundle.tgb")).unwrap();
    let mut c = Config::new(Source::Bundle(s.path("bundle.tgb")));
    c.listen = vec![Addr::parse("127.0.0.1:0").unwrap()];
    c.debounce = Duration::from_millis(50);
    let server = Server::start(c);
    assert_eq!(status(&server.addr())["revision"], revision(&a));
    std::os::unix::fs::symlink("..v2", s.path("..data_tmp")).unwrap();
    std::fs::rename(s.path("..data_tmp"), s.path("..data")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while status(&server.addr())["revision"] != revision(&b).as_str() {
        assert!(Instant::now() < deadline, "the swap was not followed");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(status(&server.addr())["reloads"], 1);
}

#[test]
fn a_reload_that_does_not_validate_keeps_the_last_good_artifact() {
    let s = Scratch::new("admin-reload");
    let a = artifact(POLICY.as_bytes());
    let server = serve(&s, &a, |c| {
        c.admin_listen = Some(Addr::parse("127.0.0.1:0").unwrap());
    });
    std::fs::write(s.path("served.tgb"), b"TGB not an artifact").unwrap();
    let (code, v) = post(&server.admin(), "/v1/reload", "");
    assert_eq!(code, 422);
    assert_eq!(v["reloaded"], false);
    assert_eq!(v["revision"], revision(&a));
    let b = artifact(POLICY_B.as_bytes());
    std::fs::write(s.path("served.tgb"), &b).unwrap();
    let (code, v) = post(&server.admin(), "/v1/reload", "");
    assert_eq!(
        (code, v["revision"].as_str()),
        (200, Some(revision(&b).as_str()))
    );
    let st = status(&server.addr());
    assert_eq!(
        (st["reloads"].as_u64(), st["failed_reloads"].as_u64()),
        (Some(1), Some(1))
    );
    // The decision listener has no reload.
    assert_eq!(
        client::post(&server.addr(), "/v1/reload", b"", None, T)
            .unwrap()
            .0,
        404
    );
}

/// `POST /v1/scan`: the built-in catalogue over the body, for the place the
/// query names: a key in it is a deny naming the rule and the span, never
/// the key; clean text is allowed; an unknown place or an oversized body is
/// a deny.
#[test]
fn scan_finds_a_secret_by_its_span_and_never_echoes_it() {
    let s = Scratch::new("scan");
    let bytes = artifact(POLICY.as_bytes());
    let server = serve(&s, &bytes, |c| c.max_body = 4096);
    let key = "AKIAIOSFODNN7EXAMPLQ";
    let body = format!("deploy with {key} now");
    let (code, v) = post(&server.addr(), "/v1/scan?place=output", &body);
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["decision"], "deny", "{v}");
    let f = &v["findings"][0];
    assert_eq!(f["start"], 12, "{v}");
    assert_eq!(f["end"], 12 + key.len(), "{v}");
    assert!(v["rule"].as_str().unwrap().starts_with("secrets/"), "{v}");
    assert!(
        !v.to_string().contains(key),
        "the answer echoes the key: {v}"
    );
    let (code, v) = post(&server.addr(), "/v1/scan", "nothing to see here");
    assert_eq!((code, v["decision"].as_str()), (200, Some("allow")), "{v}");
    assert_eq!(v["findings"], serde_json::json!([]));
    let (code, v) = post(&server.addr(), "/v1/scan?place=elsewhere", "x");
    assert_eq!((code, v["decision"].as_str()), (400, Some("deny")), "{v}");
    let (code, v) = post(&server.addr(), "/v1/scan", &"a".repeat(8192));
    assert_eq!((code, v["decision"].as_str()), (413, Some("deny")), "{v}");
}

/// A damaged grant record denies every call through the service, naming
/// the repair; `POST /v1/state/discard-unreadable` removes it and answers
/// what it removed, and decisions recover.
#[test]
fn an_unreadable_grant_record_is_discarded_through_the_service() {
    let s = Scratch::new("discard");
    let store = memory();
    let server = serve(&s, &artifact(STATEFUL.as_bytes()), |c| c.store = store());
    let ls = r#"{"tool": "bash", "args": {"command": "ls"}}"#;
    assert_eq!(
        post(&server.addr(), "/v1/decide", ls).1["decision"],
        "allow"
    );
    let ns = toolgate::state::Namespace::new("default", "rules");
    store()
        .put_grant(&ns, "conv1", "skill", b"damaged")
        .unwrap();
    let (_, v) = post(&server.addr(), "/v1/decide", ls);
    assert_eq!(v["decision"], "deny", "{v}");
    assert!(
        v["reason"]
            .as_str()
            .unwrap()
            .contains("discard the unreadable grant records"),
        "{v}"
    );
    let (code, v) = post(&server.admin(), "/v1/state/discard-unreadable", "");
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["discarded"][0]["scope"], "conv1", "{v}");
    assert_eq!(v["discarded"][0]["source"], "skill", "{v}");
    assert_eq!(v["discarded"].as_array().map(Vec::len), Some(1), "{v}");
    assert_eq!(
        post(&server.addr(), "/v1/decide", ls).1["decision"],
        "allow"
    );
    let (code, v) = post(&server.admin(), "/v1/state/discard-unreadable", "");
    assert_eq!(
        (code, v["discarded"].as_array().map(Vec::len)),
        (200, Some(0))
    );
}

const STATEFUL: &str = r#"{"default": "ask", "matchers": {"bash": {"match": "prefix", "field": "command"}},
    "allow": "bash(ls:*)", "deny": "bash(rm:*)", "ask": "bash(git push:*)"}"#;

/// Hands out handles on one store, each one a replica's.
type Open<'a> = &'a dyn Fn() -> Arc<dyn toolgate::state::Store>;

/// One memory store shared by every replica of a test.
fn memory() -> impl Fn() -> Arc<dyn toolgate::state::Store> {
    let store: Arc<dyn toolgate::state::Store> = Arc::new(toolgate::state::MemoryStore::new());
    move || Arc::clone(&store)
}

#[test]
fn deferred_calls_are_remembered_and_released_through_a_replica_on_the_same_store() {
    deferred_then_released_through_the_other_replica("state", &memory());
}

#[test]
fn a_grant_set_made_through_one_replica_is_in_force_on_the_other() {
    granted_through_one_replica_in_force_on_the_other("grants", &memory());
}

/// The two checks above on one real Redis, each replica with a store of
/// its own opened as `--store redis://…` opens it.
#[test]
fn two_replicas_on_one_redis_release_and_grant_through_each_other() {
    let Some(redis) = toolgate_testing::redis::Server::start() else {
        return;
    };
    let open = || toolgate_server::open_store(&redis.url(), None).unwrap();
    deferred_then_released_through_the_other_replica("redis-state", &open);
    granted_through_one_replica_in_force_on_the_other("redis-grants", &open);
}

fn deferred_then_released_through_the_other_replica(name: &str, open: Open<'_>) {
    let s = Scratch::new(name);
    let bytes = artifact(STATEFUL.as_bytes());
    let one = serve(&s, &bytes, |c| c.store = open());
    let two = serve(&s, &bytes, |c| c.store = open());
    let batch = r#"[{"tool": "bash", "args": {"command": "ls"}, "run_id": "r1", "call_id": "a"},
                   {"tool": "bash", "args": {"command": "git push"}, "run_id": "r1", "call_id": "b"}]"#;
    let (code, v) = post(&one.addr(), "/v1/decide", batch);
    assert_eq!(code, 200);
    assert_eq!(v[0]["held"], true);
    assert_eq!(v[1]["decision"], "ask");
    let (_, runs) = get(&two.admin(), "/v1/runs");
    assert_eq!(
        serde_json::from_str::<Value>(&runs).unwrap()["runs"][0],
        "r1"
    );
    // A release missing the asked call names it.
    let (code, v) = post(
        &two.admin(),
        "/v1/release",
        r#"{"run_id": "r1", "answers": []}"#,
    );
    assert_eq!(code, 409);
    assert_eq!(v["missing"][0]["call_id"], "b");
    let (code, v) = post(
        &two.admin(),
        "/v1/release",
        r#"{"run_id": "r1", "answers": [{"call_id": "b", "answer": "refuse_and_end", "note": "no"}]}"#,
    );
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["answers"][0]["call_id"], "a");
    assert_eq!(v["answers"][0]["answer"], "refuse");
    assert_eq!(
        v["answers"][0]["reason"],
        "not released: the turn was stopped"
    );
    assert_eq!(v["answers"][1]["answer"], "refuse_and_end");
    let (_, runs) = get(&one.admin(), "/v1/runs");
    assert_eq!(
        serde_json::from_str::<Value>(&runs).unwrap()["runs"],
        serde_json::json!([])
    );
}

fn granted_through_one_replica_in_force_on_the_other(name: &str, open: Open<'_>) {
    let s = Scratch::new(name);
    let bytes = artifact(STATEFUL.as_bytes());
    let one = serve(&s, &bytes, |c| c.store = open());
    let two = serve(&s, &bytes, |c| c.store = open());
    let push = r#"{"tool": "bash", "args": {"command": "git push"}, "scope": "conv1"}"#;
    assert_eq!(post(&two.addr(), "/v1/decide", push).1["decision"], "ask");
    let (code, g) = post(
        &one.admin(),
        "/v1/grants",
        r#"{"source": "commit", "rank": 1, "scope": "conv1", "allow": "bash(git push:*)", "deny": ""}"#,
    );
    assert_eq!(code, 200, "{g}");
    assert_eq!(g["granted"][0], "bash(git push:*)");
    assert_eq!(post(&two.addr(), "/v1/decide", push).1["decision"], "allow");
    let other = r#"{"tool": "bash", "args": {"command": "git push"}, "scope": "conv2"}"#;
    assert_eq!(post(&two.addr(), "/v1/decide", other).1["decision"], "ask");
    let (code, g) = post(&one.admin(), "/v1/grants", r#"{"allow": "read"}"#);
    assert_eq!(code, 400);
    assert!(g["error"].as_str().unwrap().contains("`source`"));
}

/// A DELETE with a JSON body over loopback TCP (the client has no DELETE):
/// the status and the body.
fn delete(addr: &Addr, path: &str, body: &str) -> (u16, Value) {
    let Addr::Tcp(a) = addr else {
        panic!("tcp only")
    };
    let mut s = std::net::TcpStream::connect_timeout(a, T).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    write!(
        s,
        "DELETE {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let code: u16 = out[9..12].parse().unwrap();
    let json = &out[out.find("\r\n\r\n").unwrap() + 4..];
    (code, serde_json::from_str(json).unwrap())
}

#[test]
fn a_grant_set_is_revoked_by_source_and_scope() {
    let s = Scratch::new("revoke");
    let server = serve(&s, &artifact(STATEFUL.as_bytes()), |_| {});
    let push = r#"{"tool": "bash", "args": {"command": "git push"}, "scope": "conv1"}"#;
    let grant = r#"{"source": "commit", "rank": 1, "scope": "conv1", "allow": "bash(git push:*)"}"#;
    assert_eq!(post(&server.admin(), "/v1/grants", grant).0, 200);
    assert_eq!(
        post(&server.addr(), "/v1/decide", push).1["decision"],
        "allow"
    );
    // Another scope's revoke leaves it.
    let (code, v) = delete(
        &server.admin(),
        "/v1/grants/commit",
        r#"{"scope": "conv2"}"#,
    );
    assert_eq!((code, v["revoked"].as_u64()), (200, Some(0)));
    assert_eq!(
        post(&server.addr(), "/v1/decide", push).1["decision"],
        "allow"
    );
    let (code, v) = delete(
        &server.admin(),
        "/v1/grants/commit",
        r#"{"scope": "conv1"}"#,
    );
    assert_eq!((code, v["revoked"].as_u64()), (200, Some(1)));
    assert_eq!(
        post(&server.addr(), "/v1/decide", push).1["decision"],
        "ask"
    );
}

/// A policy document's `guards` member applies to `/v1/decide` as it does
/// to `decide --policy` (`spec/guards.md` §5.1): on the state path and the
/// explained one alike, the blocked call is denied naming the guard's rule,
/// holds none of its siblings, and a policy deny keeps its own rule.
#[test]
fn a_policys_guards_member_is_folded_into_every_decision() {
    let s = Scratch::new("policy-guards");
    let doc = r#"{"default": "ask", "matchers": {"bash": {"match": "prefix", "field": "command"}},
        "allow": "bash(ls:*)", "deny": "bash(rm:*)",
        "guards": {"deny": [{"name": "pipe", "literal": "| sh"}]}}"#;
    let path = s.path("policy.json");
    std::fs::write(&path, doc).unwrap();
    let mut c = Config::new(Source::Policy(path));
    c.listen = vec![Addr::parse("127.0.0.1:0").unwrap()];
    c.watch = false;
    let server = Server::start(c);
    let st = status(&server.addr());
    let rev = st["revision"].as_str().unwrap().to_string();
    assert!(rev.contains("+guards-"), "{rev}");
    for path in ["/v1/decide", "/v1/decide?explain=true"] {
        let (code, v) = post(
            &server.addr(),
            path,
            r#"{"tool": "bash", "args": {"command": "ls | sh"}}"#,
        );
        assert_eq!(code, 200, "{path}");
        assert_eq!(v["decision"], "deny", "{path}: {v}");
        assert_eq!(v["rule"], "guards/deny/pipe", "{path}: {v}");
        assert_eq!(v["by"], "guard", "{path}: {v}");
        assert_eq!(v["revision"], rev.as_str());
        let (_, v) = post(
            &server.addr(),
            path,
            r#"{"tool": "bash", "args": {"command": "rm x | sh"}}"#,
        );
        assert_eq!(v["rule"], "bash(rm:*)", "{path}: {v}");
        // A blocked call asks nothing: the allowed sibling is held by the
        // asked one alone, and without the asked one nothing is held.
        let (_, v) = post(
            &server.addr(),
            path,
            r#"[{"tool": "bash", "args": {"command": "ls"}},
                {"tool": "bash", "args": {"command": "ls | sh"}}]"#,
        );
        assert_eq!(v[0]["decision"], "allow", "{path}: {v}");
        assert_eq!(v[0]["held"], Value::Null, "{path}: {v}");
        assert_eq!(v[1]["rule"], "guards/deny/pipe", "{path}: {v}");
        let (_, v) = post(
            &server.addr(),
            path,
            r#"[{"tool": "bash", "args": {"command": "ls"}},
                {"tool": "bash", "args": {"command": "ls | sh"}},
                {"tool": "bash", "args": {"command": "make"}}]"#,
        );
        assert_eq!(v[0]["held"], true, "{path}: {v}");
        assert_eq!(v[1]["decision"], "deny", "{path}: {v}");
        assert_eq!(v[2]["decision"], "ask", "{path}: {v}");
    }
}

/// The guard file is watched as the artifact is: a new one renamed over it
/// is served under a new revision without a signal or an admin call, and
/// one that does not read is refused and the last good guards keep
/// deciding.
#[test]
fn a_changed_guard_file_is_reloaded_by_the_watcher() {
    let s = Scratch::new("watch-guards");
    let path = s.path("served.tgb");
    std::fs::write(&path, artifact(POLICY.as_bytes())).unwrap();
    let guards = s.path("guards.json");
    std::fs::write(
        &guards,
        r#"{"deny": [{"name": "curl", "literal": "curl "}]}"#,
    )
    .unwrap();
    let mut c = Config::new(Source::Bundle(path));
    c.listen = vec![Addr::parse("127.0.0.1:0").unwrap()];
    c.debounce = Duration::from_millis(50);
    c.guards = Some(guards.clone());
    let server = Server::start(c);
    let addr = server.addr();
    let first = status(&addr)["revision"].as_str().unwrap().to_string();
    let wget = r#"{"tool": "bash", "args": {"command": "ls; wget x"}}"#;
    assert_eq!(post(&addr, "/v1/decide", wget).1["decision"], "allow");
    let tmp = s.path("guards.json.new");
    std::fs::write(&tmp, r#"{"deny": [{"name": "wget", "literal": "wget "}]}"#).unwrap();
    std::fs::rename(&tmp, &guards).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let second = loop {
        let st = status(&addr);
        if st["revision"] != first.as_str() {
            break st["revision"].as_str().unwrap().to_string();
        }
        assert!(
            Instant::now() < deadline,
            "the new guards were not loaded: {st}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let (_, v) = post(&addr, "/v1/decide", wget);
    assert_eq!(v["rule"], "guards/deny/wget", "{v}");
    std::fs::write(&guards, b"{not json").unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while status(&addr)["failed_reloads"].as_u64() < Some(1) {
        assert!(
            Instant::now() < deadline,
            "the bad guard file was not refused"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(status(&addr)["revision"], second.as_str());
    assert_eq!(
        post(&addr, "/v1/decide", wget).1["rule"],
        "guards/deny/wget"
    );
}

/// `--guards FILE` replaces the policy's member, applies to an artifact
/// (which holds no guards), reaches Claude Code's hook before the policy,
/// and is read again at a reload, which names a new revision; an artifact
/// kind that takes no guards is refused at start.
#[test]
fn guards_given_to_the_server_apply_to_an_artifact_and_reload_with_it() {
    let s = Scratch::new("serve-guards");
    let bytes = artifact(POLICY.as_bytes());
    let guards = s.path("guards.json");
    std::fs::write(
        &guards,
        r#"{"deny": [{"name": "curl", "literal": "curl "}]}"#,
    )
    .unwrap();
    let g = guards.clone();
    let server = serve(&s, &bytes, |c| {
        c.guards = Some(g);
        c.admin_listen = Some(Addr::parse("127.0.0.1:0").unwrap());
    });
    let first = status(&server.addr())["revision"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(first.starts_with(&revision(&bytes)), "{first}");
    assert_ne!(first, revision(&bytes));
    let call = r#"{"tool": "bash", "args": {"command": "ls; curl x"}}"#;
    let (_, v) = post(&server.addr(), "/v1/decide", call);
    assert_eq!(v["rule"], "guards/deny/curl", "{v}");
    let payload = r#"{"hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "curl x"}, "cwd": "/tmp"}"#;
    let (_, h) = post(&server.addr(), "/v1/hooks/claude-code", payload);
    let out = &h["hookSpecificOutput"];
    assert_eq!(out["permissionDecision"], "deny", "{h}");
    assert!(
        out["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("deny/curl"),
        "{h}"
    );
    std::fs::write(
        &guards,
        r#"{"deny": [{"name": "wget", "literal": "wget "}]}"#,
    )
    .unwrap();
    let (code, v) = post(&server.admin(), "/v1/reload", "");
    assert_eq!(code, 200, "{v}");
    let second = v["revision"].as_str().unwrap().to_string();
    assert_ne!(second, first);
    let (_, v) = post(&server.addr(), "/v1/decide", call);
    assert_eq!(v["decision"], "allow", "{v}");
    let (_, v) = post(
        &server.addr(),
        "/v1/decide",
        r#"{"tool": "bash", "args": {"command": "ls; wget x"}}"#,
    );
    assert_eq!(v["rule"], "guards/deny/wget", "{v}");
    drop(server);

    let rubric = artifact(&std::fs::read(examples("bundle.json")).unwrap());
    let path = s.path("rubric.tgb");
    std::fs::write(&path, rubric).unwrap();
    let mut c = Config::new(Source::Bundle(path));
    c.listen = vec![Addr::parse("127.0.0.1:0").unwrap()];
    c.watch = false;
    c.guards = Some(guards);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let err = rt
        .block_on(toolgate_server::start(c))
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("guards.json") && err.contains("rubric"),
        "{err}"
    );
}

/// The command line hands a shadow over as a document that may be a
/// compiled artifact (`--shadow b.tgb`): an artifact read that way holds no
/// guards member to read, and is served as it is.
#[test]
fn an_artifact_named_as_a_document_is_served_as_an_artifact() {
    let s = Scratch::new("artifact-as-policy");
    let bytes = artifact(POLICY.as_bytes());
    let path = s.path("policy.tgb");
    std::fs::write(&path, &bytes).unwrap();
    let mut c = Config::new(Source::Policy(path.clone()));
    c.listen = vec![Addr::parse("127.0.0.1:0").unwrap()];
    c.watch = false;
    c.shadow = Some(Source::Policy(path));
    let server = Server::start(c);
    assert_eq!(status(&server.addr())["revision"], revision(&bytes));
    let (_, v) = post(
        &server.addr(),
        "/v1/decide",
        r#"{"tool": "bash", "args": {"command": "ls"}}"#,
    );
    assert_eq!(v["decision"], "allow", "{v}");
}

/// Two services on one store under different tenants share nothing of the
/// rule lists' state: a grant set made through one is not in force on the
/// other, and a run one deferred is not the other's to list or release.
#[test]
fn tenants_on_one_store_never_see_each_others_grants_or_runs() {
    let s = Scratch::new("tenants");
    let bytes = artifact(STATEFUL.as_bytes());
    let open = memory();
    let acme = serve(&s, &bytes, |c| {
        c.store = open();
        c.tenant = "acme".into();
    });
    let globex = serve(&s, &bytes, |c| {
        c.store = open();
        c.tenant = "globex".into();
    });
    let push = r#"{"tool": "bash", "args": {"command": "git push"}}"#;
    let grant = r#"{"source": "commit", "rank": 1, "allow": "bash(git push:*)"}"#;
    assert_eq!(post(&acme.admin(), "/v1/grants", grant).0, 200);
    assert_eq!(
        post(&acme.addr(), "/v1/decide", push).1["decision"],
        "allow"
    );
    assert_eq!(
        post(&globex.addr(), "/v1/decide", push).1["decision"],
        "ask"
    );

    let batch = r#"[{"tool": "bash", "args": {"command": "ls"}, "run_id": "r1", "call_id": "a"},
                   {"tool": "bash", "args": {"command": "git push"}, "run_id": "r1", "call_id": "b"}]"#;
    assert_eq!(
        post(&globex.addr(), "/v1/decide", batch).1[1]["decision"],
        "ask"
    );
    let runs = |server: &Server| {
        serde_json::from_str::<Value>(&get(&server.admin(), "/v1/runs").1).unwrap()["runs"].clone()
    };
    assert_eq!(runs(&globex), serde_json::json!(["r1"]));
    assert_eq!(runs(&acme), serde_json::json!([]));
}

/// What changes or lists the state is served on the admin listener alone,
/// under the admin token when one is given: the decision listener, which
/// a hook's agent can reach, answers 404 to a release or a grant, and the
/// decision token does not open the admin routes. Status and metrics take
/// either token.
#[test]
fn the_state_endpoints_are_the_admin_listeners_under_its_own_token() {
    let s = Scratch::new("admin-state");
    let server = serve(&s, &artifact(STATEFUL.as_bytes()), |c| {
        c.token = Some("decide-token".into());
        c.admin_token = Some("admin-token".into());
    });
    let (agent, admin) = (server.addr(), server.admin());
    let batch = r#"[{"tool": "bash", "args": {"command": "ls"}, "run_id": "r1", "call_id": "a"},
                   {"tool": "bash", "args": {"command": "git push"}, "run_id": "r1", "call_id": "b"}]"#;
    let (code, v) = post_token(&agent, "/v1/decide", batch, Some("decide-token"));
    assert_eq!((code, v[1]["decision"].as_str()), (200, Some("ask")));

    let release = r#"{"run_id": "r1", "answers": [{"call_id": "b", "answer": "approve"}]}"#;
    let grant = r#"{"source": "me", "rank": 9, "allow": "bash(*)"}"#;
    for (path, body) in [("/v1/release", release), ("/v1/grants", grant)] {
        let (code, _) =
            client::post(&agent, path, body.as_bytes(), Some("decide-token"), T).unwrap();
        assert_eq!(code, 404, "{path} on the decision listener");
        let (code, _) =
            client::post(&admin, path, body.as_bytes(), Some("decide-token"), T).unwrap();
        assert_eq!(code, 401, "{path} with the decision token");
    }
    let (code, _) = client::get(&agent, "/v1/runs", Some("decide-token"), T).unwrap();
    assert_eq!(code, 404);
    let (code, _) = client::get(&admin, "/v1/runs", Some("decide-token"), T).unwrap();
    assert_eq!(code, 401);
    let (code, _) = client::post(&admin, "/v1/reload", b"", Some("decide-token"), T).unwrap();
    assert_eq!(code, 401);

    let (code, v) = post_token(&admin, "/v1/release", release, Some("admin-token"));
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["answers"][1]["answer"], "approve");
    for token in ["decide-token", "admin-token"] {
        for path in ["/v1/status", "/metrics"] {
            let (code, _) = client::get(&admin, path, Some(token), T).unwrap();
            assert_eq!(code, 200, "{path} with {token}");
        }
    }
}
