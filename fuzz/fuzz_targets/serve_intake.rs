//! `toolgate serve`'s intake without a network: arbitrary bytes as the body
//! of `/v1/decide`, of OPA's `/v1/data/toolgate/decision`, of Claude Code's
//! hook, or as the HTTP request an Envoy `ext_authz` check describes, each
//! decided by one of four artifacts compiled once from `examples/` (a rule
//! list, Claude Code settings, a Rubric bundle, Authensor policies).
//!
//! What the service promises, checked on every input:
//! - no panic, and bounded work (libFuzzer's time limit);
//! - the answer is JSON with a decision in every verdict; a body that is
//!   not a readable call (over the size cap, not UTF-8, not JSON, not the
//!   artifact's shape, an array past the batch cap, a batch holding a call
//!   that cannot be read) is denied, never allowed or asked;
//! - for the rule-list kinds, a readable call (or batch) gets exactly the
//!   verdict the library gives it (`Engine::decide`, `decide_batch`, with
//!   the completion `toolgate decide --policy settings.json` applies): the
//!   intake cannot change a verdict;
//! - the hook answers one line of Claude Code's hook answer, a deny for a
//!   payload that does not read (and for the kinds that do not answer
//!   hooks);
//! - `ext_authz`: a body the proxy cut short or one over the cap is never
//!   a call, and its check is denied.
//!
//! Input: the first byte picks the kind (bits 0-1: rules, claude-code,
//! rubric, authensor), the surface (bits 2-3: decide, OPA, hook,
//! ext_authz) and the limits (bit 4: a 256-byte body cap and a batch of
//! 3, else the defaults). For `ext_authz` the second byte says how the
//! request is built (see [`envoy_request`]). The rest is the body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::OnceLock;
use toolgate::open::{EngineBuilder, Format, Opened};
use toolgate::{Call, Engine};
use toolgate_server::fuzzing::{self, HttpRequest, Limits};
use toolgate_server::{hook, Loaded, Source};

const KINDS: [&str; 4] = [
    "policy.json",
    "settings.json",
    "bundle.json",
    "authensor.json",
];
const KIND_NAMES: [&str; 4] = ["rules", "claude-code", "rubric", "authensor"];

fn example(name: &str) -> (std::path::PathBuf, Vec<u8>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("examples")
        .join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (path, bytes)
}

/// The server's artifact of kind `k`, loaded once as `toolgate serve
/// --policy examples/<file>` loads it.
fn loaded(k: usize) -> &'static Loaded {
    static CELLS: [OnceLock<Loaded>; 4] = [
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
    ];
    CELLS[k].get_or_init(|| {
        let (path, bytes) = example(KINDS[k]);
        let l = Loaded::from_bytes(&Source::Policy(path), &bytes, &Default::default())
            .unwrap_or_else(|e| panic!("examples/{} does not load: {e}", KINDS[k]));
        assert_eq!(
            l.kind, KIND_NAMES[k],
            "examples/{} loads as {}",
            KINDS[k], l.kind
        );
        l
    })
}

/// The working directory the server and `decide` give a Claude Code call
/// that names none: the project of `examples/settings.json`, which is not
/// in a `.claude` directory, so the current directory.
fn project() -> Option<String> {
    std::env::current_dir()
        .ok()
        .map(|d| d.display().to_string())
}

/// The library's own engine for the rule-list kinds (0 and 1), built from
/// the same file apart from the server.
fn library(k: usize) -> &'static Engine<'static> {
    static CELLS: [OnceLock<Engine<'static>>; 2] = [OnceLock::new(), OnceLock::new()];
    CELLS[k].get_or_init(|| {
        let (_, bytes) = example(KINDS[k]);
        let env = toolgate::claude::Environment {
            home: std::env::var("HOME").ok().filter(|h| h.starts_with('/')),
            project_dir: project(),
            trust_project: false,
            mode: None,
            fold_paths: false,
        };
        let opened = EngineBuilder::new()
            .registry(toolgate_server::registry())
            .claude_environment(env)
            .open(&bytes, Format::Detect)
            .unwrap_or_else(|e| panic!("examples/{} does not open: {e}", KINDS[k]));
        match opened {
            Opened::Rules(e) | Opened::ClaudeCode(e) => e.into_owned(),
            other => panic!("examples/{} opens as {other:?}", KINDS[k]),
        }
    })
}

/// A call as the library's front ends complete it for kind `k`.
fn prepared(k: usize, mut c: Call) -> Call {
    if k == 1 {
        if c.cwd.is_none() {
            c.cwd = project();
        }
        c = toolgate::claude::prepare_call(c);
    }
    c
}

/// A verdict's outcome, read from the JSON alone: toolgate's and Rubric's
/// `"decision": "…"`, Authensor's `"decision": {"outcome": "…"}`.
fn outcome(v: &Value) -> &str {
    let d = match v.get("decision") {
        Some(Value::String(s)) => s.as_str(),
        Some(Value::Object(m)) => m.get("outcome").and_then(Value::as_str).unwrap_or(""),
        _ => "",
    };
    assert!(!d.is_empty(), "a verdict without a decision: {v}");
    d
}

fn assert_deny(answer: &Value, why: &str) {
    assert!(
        !answer.is_array(),
        "{why}: answered as a batch, not one deny: {answer}"
    );
    assert_eq!(outcome(answer), "deny", "{why}: not denied: {answer}");
}

/// Every verdict of `answer` holds a decision, and so does the answer read
/// back from its text (the same decisions: a float such as Rubric's
/// `latencyMs` may not survive the round trip to the last bit).
fn assert_well_formed(answer: &Value) {
    let text = answer.to_string();
    let back: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("the answer is not JSON ({e}): {text}"));
    let outcomes = |v: &Value| -> Vec<String> {
        match v {
            Value::Array(vs) => vs.iter().map(|v| outcome(v).to_string()).collect(),
            v => vec![outcome(v).to_string()],
        }
    };
    assert_eq!(outcomes(&back), outcomes(answer), "{text}");
}

/// What the body should get, decided apart from the server.
enum Expect {
    /// One deny.
    Deny(&'static str),
    /// The verdict(s) of the library's engine (rule-list kinds).
    Same(Value),
    /// A batch of Rubric requests or Authensor envelopes: an array as long
    /// as the body's, with a deny wherever the member does not read.
    Each(Vec<bool>),
    /// One Rubric request or Authensor envelope that reads: any verdict.
    Any,
}

/// Whether one member reads as kind `k` reads it.
fn reads(k: usize, text: &str) -> bool {
    match k {
        0 | 1 => Call::from_json(text).is_ok(),
        2 => toolgate::rubric::Request::from_json(text).is_ok(),
        _ => toolgate::json::parse_strict(text)
            .ok()
            .is_some_and(|v| toolgate::authensor::Envelope::from_value(v).is_ok()),
    }
}

/// What a call's text (after the size cap and UTF-8) should get.
fn expect(k: usize, text: &str, limits: Limits) -> Expect {
    if serde_json::from_str::<serde::de::IgnoredAny>(text).is_err() {
        return Expect::Deny("a body that is not JSON");
    }
    if !text.trim_start().starts_with('[') {
        if !reads(k, text) {
            return Expect::Deny("a body that does not read as the artifact's input");
        }
        return match Call::from_json(text) {
            Ok(c) if k <= 1 => Expect::Same(library(k).decide(&prepared(k, c)).to_json()),
            _ => Expect::Any,
        };
    }
    let Ok(raws) = serde_json::from_str::<Vec<&serde_json::value::RawValue>>(text) else {
        return Expect::Deny("a batch that is not an array");
    };
    if raws.len() > limits.max_batch {
        return Expect::Deny("a batch past the cap");
    }
    if k >= 2 {
        return Expect::Each(raws.iter().map(|r| reads(k, r.get())).collect());
    }
    let mut calls = Vec::with_capacity(raws.len());
    for r in raws {
        match Call::from_json(r.get()) {
            Ok(c) => calls.push(prepared(k, c)),
            Err(_) => return Expect::Deny("a batch holding a call that does not read"),
        }
    }
    Expect::Same(Value::Array(
        library(k)
            .decide_batch(&calls)
            .iter()
            .map(toolgate::Verdict::to_json)
            .collect(),
    ))
}

fn check(answer: &Value, expected: Expect, what: &str) {
    assert_well_formed(answer);
    match expected {
        Expect::Deny(why) => assert_deny(answer, &format!("{what}: {why}")),
        Expect::Same(v) => assert_eq!(
            answer, &v,
            "{what}: the server's verdict is not the library's"
        ),
        Expect::Each(readable) => {
            let Value::Array(vs) = answer else {
                panic!("{what}: a batch answered with one verdict: {answer}");
            };
            assert_eq!(vs.len(), readable.len(), "{what}: a verdict per member");
            for (v, r) in vs.iter().zip(readable) {
                if !r {
                    assert_eq!(
                        outcome(v),
                        "deny",
                        "{what}: a member that does not read: {v}"
                    );
                }
            }
        }
        Expect::Any => assert!(!answer.is_array(), "{what}: one call, an array: {answer}"),
    }
}

/// What a body should get before its text is read: a deny past the cap or
/// when it is not UTF-8.
fn text_of(body: &[u8], limits: Limits) -> Result<&str, &'static str> {
    if body.len() > limits.max_body {
        return Err("a body over the cap");
    }
    std::str::from_utf8(body).map_err(|_| "a body that is not UTF-8")
}

fn decide(k: usize, body: &[u8], limits: Limits) {
    let answer = fuzzing::decide_body(loaded(k), body, limits);
    let expected = match text_of(body, limits) {
        Ok(text) => expect(k, text, limits),
        Err(why) => Expect::Deny(why),
    };
    check(&answer, expected, "/v1/decide");
}

fn opa(k: usize, body: &[u8], limits: Limits) {
    let answer = fuzzing::opa_body(loaded(k), body, limits);
    let expected = match text_of(body, limits) {
        Err(why) => Expect::Deny(why),
        Ok(text) => match toolgate::json::parse_strict(text) {
            Ok(Value::Object(m)) => match m.get("input") {
                Some(input) => expect(k, &input.to_string(), limits),
                None => Expect::Deny("an OPA body with no input"),
            },
            _ => Expect::Deny("an OPA body that is not an object"),
        },
    };
    check(&answer, expected, "/v1/data/toolgate/decision");
}

fn hook(k: usize, body: &[u8]) {
    let text = String::from_utf8_lossy(body);
    let line = hook::answer_payload(loaded(k), &text);
    let Some(json) = line.strip_suffix('\n') else {
        panic!("the hook answer is not one line: {line:?}");
    };
    assert!(
        !json.contains('\n'),
        "the hook answer spans lines: {line:?}"
    );
    let v: Value = serde_json::from_str(json)
        .unwrap_or_else(|e| panic!("the hook answer is not JSON ({e}): {line:?}"));
    let out = v
        .get("hookSpecificOutput")
        .unwrap_or_else(|| panic!("no hookSpecificOutput: {v}"));
    assert_eq!(out["hookEventName"], "PreToolUse", "{v}");
    assert!(out["permissionDecisionReason"].is_string(), "{v}");
    let d = out["permissionDecision"].as_str().unwrap_or("");
    assert!(
        matches!(d, "allow" | "deny" | "ask"),
        "the hook answer's decision is {d:?}: {v}"
    );
    let readable = !toolgate::json::values_over(&text, hook::VALUE_LIMIT)
        && toolgate::claude::Payload::from_json(&text).is_ok();
    if !readable || k >= 2 {
        assert_eq!(d, "deny", "a hook payload that cannot be decided: {v}");
    }
}

/// The HTTP request of an `ext_authz` check, from the flags byte:
/// bit 0 the body as `raw_body` (else `body`, as text); bit 1 the
/// `x-envoy-auth-partial-body` header, `true` (bit 2: spelled `TRUE`), or
/// with bit 1 clear and bit 2 set `false`; bit 3 an `x-mcp-tool-name`
/// header, the first line of the rest; bit 4 with it an
/// `x-mcp-tool-arguments` header, the second line; bit 5 a body repeated
/// to just past the cap; all bits set: no HTTP request at all.
fn envoy_request(flags: u8, rest: &[u8], max: usize) -> Option<HttpRequest> {
    if flags == 0xff {
        return None;
    }
    let mut headers = HashMap::new();
    match (flags & 2 != 0, flags & 4 != 0) {
        (true, false) => headers.insert("x-envoy-auth-partial-body".into(), "true".into()),
        (true, true) => headers.insert("x-envoy-auth-partial-body".into(), "TRUE".into()),
        (false, true) => headers.insert("x-envoy-auth-partial-body".into(), "false".into()),
        (false, false) => None,
    };
    let mut rest = rest;
    let line = |rest: &mut &[u8]| {
        let (l, r) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (*rest, &[][..]),
        };
        *rest = r;
        String::from_utf8_lossy(l).into_owned()
    };
    if flags & 8 != 0 {
        headers.insert("x-mcp-tool-name".into(), line(&mut rest));
        if flags & 16 != 0 {
            headers.insert("x-mcp-tool-arguments".into(), line(&mut rest));
        }
    }
    let mut body = rest.to_vec();
    if flags & 32 != 0 && !body.is_empty() {
        while body.len() <= max {
            body.extend_from_slice(rest);
        }
    }
    let mut http = HttpRequest {
        headers,
        ..Default::default()
    };
    if flags & 1 != 0 {
        http.raw_body = body;
    } else {
        http.body = String::from_utf8_lossy(&body).into_owned();
    }
    Some(http)
}

fn ext_authz(k: usize, data: &[u8], limits: Limits) {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let http = envoy_request(flags, rest, limits.max_body);
    let call = fuzzing::ext_authz_call(http.as_ref(), limits.max_body);
    let answer = fuzzing::ext_authz_verdict(loaded(k), http.as_ref(), limits);
    assert_well_formed(&answer);
    let Some(http) = &http else {
        assert!(call.is_err(), "a check with no HTTP request gave a call");
        return assert_deny(&answer, "ext_authz: no HTTP request");
    };
    let body_len = if http.raw_body.is_empty() {
        http.body.len()
    } else {
        http.raw_body.len()
    };
    let partial = http
        .headers
        .get("x-envoy-auth-partial-body")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if partial || body_len > limits.max_body {
        assert!(
            call.is_err(),
            "ext_authz: a cut-short or oversized body gave a call: {call:?}"
        );
    }
    match call {
        Err(why) => assert_deny(&answer, &format!("ext_authz: no call ({why})")),
        Ok(call) => {
            let expected = expect(k, &call, limits);
            assert!(
                !matches!(expected, Expect::Each(_)),
                "ext_authz: a call that is a batch: {call}"
            );
            check(&answer, expected, "ext_authz");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, body)) = data.split_first() else {
        return;
    };
    let k = usize::from(first & 3);
    let limits = if first & 16 != 0 {
        Limits {
            max_body: 256,
            max_batch: 3,
        }
    } else {
        Limits {
            max_body: toolgate_server::DEFAULT_MAX_BODY,
            max_batch: 10_000,
        }
    };
    match (first >> 2) & 3 {
        0 => decide(k, body, limits),
        1 => opa(k, body, limits),
        2 => hook(k, body),
        _ => ext_authz(k, body, limits),
    }
});
