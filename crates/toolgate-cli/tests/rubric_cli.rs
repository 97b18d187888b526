//! The command line on Rubric bundles: `check`, `compile` and `decide`
//! recognise a bundle by its shape, on every engine and through an artifact.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use serde_json::Value;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

const BUNDLE: &str = r#"{"policies": [{"policyId": "p1", "policyVersion": 2, "document": {"spec": {
  "defaultEffect": "allow", "rules": [
    {"id": "no-rm", "description": "no recursive deletes", "effect": "deny", "conditions": [
      {"field": "tool_name", "operator": "eq", "value": "Bash"},
      {"field": "input.command", "operator": "matches", "value": "rm\\s+-rf"}]},
    {"id": "odd", "effect": "deny", "conditions": [{"field": "x", "operator": "contains", "value": 5}]}]}}}],
  "frozenAgentIds": ["Bad-Agent"]}"#;

const REQUESTS: &str = "{\"tool_name\":\"Bash\",\"input\":{\"command\":\"sudo rm -rf /\"}}\n\
{\"tool_name\":\"Read\"}\n\
\n\
{\"tool_name\":\"Read\",\"agent_id\":\"bad-agent\"}\n\
not json\n";

fn run(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    child.wait_with_output().unwrap()
}

fn tmp(name: &str, contents: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolgate-rubric-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, contents).unwrap();
    p
}

/// The results, without `latencyMs`.
fn results(o: &Output) -> Vec<Value> {
    String::from_utf8(o.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            assert!(v["latencyMs"].as_f64().unwrap() >= 0.0);
            v.as_object_mut().unwrap().remove("latencyMs");
            v
        })
        .collect()
}

#[test]
fn check_compile_and_decide_a_bundle() {
    let bundle = tmp("bundle.json", BUNDLE);
    let b = bundle.to_str().unwrap();
    let check = run(&["check", b], "");
    assert!(check.status.success());
    let err = String::from_utf8_lossy(&check.stderr);
    assert!(err.contains("a Rubric bundle"), "{err}");
    assert!(err.contains("warning[non_string_value]"), "{err}");

    let mut all = Vec::new();
    for engine in ["compiled", "reference", "artifact"] {
        let o = run(&["decide", "--policy", b, "--engine", engine], REQUESTS);
        assert!(o.status.success(), "{engine}");
        all.push(results(&o));
    }
    let artifact = tmp("bundle.tgb", "");
    let a = artifact.to_str().unwrap();
    assert!(run(&["compile", b, "-o", a], "").status.success());
    let o = run(&["decide", "--bundle", a], REQUESTS);
    assert!(o.status.success());
    all.push(results(&o));

    let want = &all[0];
    assert_eq!(want.len(), 5, "every line is answered, a blank one too");
    assert_eq!(want[0]["matchedRuleId"], "no-rm");
    assert_eq!(want[0]["reason"], "no recursive deletes");
    assert_eq!(want[1]["decision"], "allow");
    assert!(want[1]["matchedPolicyId"].is_null());
    assert_eq!(want[2]["code"], "INVALID_REQUEST");
    assert_eq!(want[2]["decision"], "deny");
    assert_eq!(want[3]["code"], "AGENT_FROZEN");
    assert_eq!(want[4]["code"], "INVALID_REQUEST");
    for got in &all[1..] {
        assert_eq!(got, want);
    }

    // An artifact of a bundle is inspected as one: its header and sections.
    let o = run(&["inspect", a], "");
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("holds      a Rubric bundle"), "{text}");
    assert!(text.contains("format     3.1"), "{text}");
    let o = run(&["inspect", "--format", "json", a], "");
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["holds"], "rubric");
    assert!(!v["sections"].as_array().unwrap().is_empty());
    // A damaged one is refused, naming the file.
    let mut bytes = std::fs::read(a).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    let bad = tmp("damaged.tgb", "");
    std::fs::write(&bad, &bytes).unwrap();
    let o = run(&["inspect", bad.to_str().unwrap()], "");
    assert_eq!(o.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not a usable artifact"));
}

#[test]
fn an_invalid_bundle_exits_4_naming_policy_rule_and_condition() {
    let bad = BUNDLE.replace("\"eq\"", "\"equals\"");
    let p = tmp("bad.json", &bad);
    for args in [
        vec!["check", p.to_str().unwrap()],
        vec!["decide", "--policy", p.to_str().unwrap()],
    ] {
        let o = run(&args, "");
        assert_eq!(o.status.code(), Some(4));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(
                "policy `p1`, rule `no-rm`, condition 1: the operator `equals` is not one of"
            ),
            "{err}"
        );
    }
}
