//! Matcher kinds a host registers: canonicalising the value before matching
//! (and failing closed when it cannot), lowering to regular expressions, and
//! the callback path, on every engine.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::borrow::Cow;
use std::sync::Arc;
use toolgate::{
    Call, CallContext, Decision, Engine, Evaluator, Lowering, MatcherKind, Pattern, Policy,
    Registry,
};
use toolgate_reference::Reference;

/// Paths: made absolute against the call's working directory, `.` and `..`
/// resolved, a path that climbs above the root refused.
#[derive(Debug)]
struct Paths;

impl MatcherKind for Paths {
    fn name(&self) -> &str {
        "abs"
    }
    fn lower(&self, spec: &str) -> Result<Lowering, toolgate::error::MatcherError> {
        Ok(Lowering::Patterns(vec![Pattern::Glob(spec.to_string())]))
    }
    fn matches(&self, spec: &str, value: &str) -> bool {
        toolgate_reference::glob(spec, value)
    }
    fn normalize<'v>(
        &self,
        value: &'v str,
        cx: &CallContext<'_>,
    ) -> Result<Cow<'v, str>, toolgate::error::MatcherError> {
        let joined = if value.starts_with('/') {
            value.to_string()
        } else {
            format!(
                "{}/{value}",
                cx.cwd.ok_or("the call has no working directory")?
            )
        };
        let mut parts: Vec<&str> = Vec::new();
        for p in joined.split('/') {
            match p {
                "" | "." => {}
                ".." => {
                    if parts.pop().is_none() {
                        return Err(format!("`{value}` climbs above the root").into());
                    }
                }
                p => parts.push(p),
            }
        }
        let out = format!("/{}", parts.join("/"));
        Ok(if out == value {
            Cow::Borrowed(value)
        } else {
            Cow::Owned(out)
        })
    }
}

fn registry() -> Registry {
    let mut r = common::registry();
    r.add_kind(Arc::new(Paths));
    r
}

const POLICY: &str = r#"{
  "default": "allow",
  "matchers": {
    "read": {"match": "abs", "field": "path"},
    "bash": {"match": "contains", "field": "command"},
    "fetch": {"match": "regex", "field": "url"}
  },
  "deny": "read(/repo/.env) read(/etc/*) bash(sudo) fetch(https?://([a-z]+\\.)*evil\\.com(/.*)?)",
  "ask": "read(/repo/secrets/*) bash(!sudo -n)",
  "allow": "read(/repo/*)"
}"#;

fn engines() -> Vec<(&'static str, Box<dyn Evaluator>)> {
    let policy = Policy::from_json(POLICY).unwrap();
    let compiled = Engine::build_with(&policy, &registry()).unwrap();
    let bytes = compiled.to_bytes();
    let loaded = Engine::from_bytes_with(&bytes, &registry())
        .unwrap()
        .into_owned();
    vec![
        (
            "reference",
            Box::new(Reference::build(&policy, &registry()).unwrap()),
        ),
        ("compiled", Box::new(compiled.into_session())),
        ("artifact", Box::new(loaded.into_session())),
    ]
}

fn call(tool: &str, args: &str, cwd: Option<&str>) -> Call {
    let mut c = Call::new(tool, args);
    c.cwd = cwd.map(str::to_string);
    c
}

#[test]
fn every_engine_reads_the_value_the_kind_canonicalises() {
    let cases: Vec<(Call, Decision, &str)> = vec![
        (
            call("read", r#"{"path": "./src/../.env"}"#, Some("/repo")),
            Decision::Deny,
            "denied by read(/repo/.env)",
        ),
        (
            call("read", r#"{"path": "/repo/x/../../etc/passwd"}"#, None),
            Decision::Deny,
            "denied by read(/etc/*)",
        ),
        (
            call("read", r#"{"path": "secrets/key"}"#, Some("/repo")),
            Decision::Ask,
            "approval required by read(/repo/secrets/*)",
        ),
        (
            call("read", r#"{"path": "main.rs"}"#, Some("/repo/src")),
            Decision::Allow,
            "allowed by read(/repo/*)",
        ),
        (
            call("read", r#"{"path": "../../../x"}"#, Some("/repo")),
            Decision::Deny,
            "read call could not be evaluated: `../../../x` climbs above the root",
        ),
        (
            call("read", r#"{"path": "x"}"#, None),
            Decision::Deny,
            "read call could not be evaluated: the call has no working directory",
        ),
        (
            call("bash", r#"{"command": "x; sudo rm"}"#, None),
            Decision::Deny,
            "denied by bash(sudo)",
        ),
        (
            call("fetch", r#"{"url": "http://a.b.evil.com/x"}"#, None),
            Decision::Deny,
            "denied by fetch(https?://([a-z]+\\.)*evil\\.com(/.*)?)",
        ),
        (
            call("fetch", r#"{"url": "http://evil.com.example.org/"}"#, None),
            Decision::Allow,
            "allowed by default",
        ),
    ];
    for (name, e) in engines() {
        for (c, d, reason) in &cases {
            let v = e.would(c);
            assert_eq!(
                (v.decision, v.reason.as_str()),
                (*d, *reason),
                "{name}: {} {}",
                c.tool,
                c.args.raw()
            );
        }
    }
}
