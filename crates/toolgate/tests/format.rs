//! `format::format_document` over every policy of the decision corpora:
//! the layout is a fixed point, and the formatted policy decides every
//! call of its cases as the policy written did, on the compiled engine.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use serde_json::Value;
use toolgate::format::{format_document, Dialect};
use toolgate::{Call, Engine, Policy};

fn corpus() -> Vec<std::path::PathBuf> {
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let mut files = Vec::new();
    for dir in [
        "testdata/policy",
        "testdata/regressions",
        "../shared/conformance/agentpolicy/testdata/policy",
    ] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for e in entries.flatten() {
            if e.path().extension().is_some_and(|x| x == "json") {
                files.push(e.path());
            }
        }
    }
    files.sort();
    files
}

#[test]
fn formatting_is_a_fixed_point_and_never_changes_a_decision() {
    let (mut policies, mut calls) = (0, 0);
    for path in corpus() {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let Some(cases) = doc["cases"].as_array() else {
            continue;
        };
        for case in cases {
            let Some(policy) = case.get("policy").filter(|p| p.is_object()) else {
                continue;
            };
            let text = policy.to_string();
            let Ok(formatted) = format_document(&text, Dialect::Toolgate) else {
                // A list that does not parse is refused, never reformatted;
                // the policy must then be refused too.
                assert!(
                    Policy::from_json(&text)
                        .and_then(|p| Engine::build(&p))
                        .is_err(),
                    "{}",
                    path.display()
                );
                continue;
            };
            assert_eq!(
                format_document(&formatted, Dialect::Toolgate).unwrap(),
                formatted
            );
            let (a, b) = (
                Policy::from_json(&text).and_then(|p| Engine::build(&p)),
                Policy::from_json(&formatted).and_then(|p| Engine::build(&p)),
            );
            let (Ok(a), Ok(b)) = (a, b.as_ref()) else {
                assert!(
                    b.is_err(),
                    "{}: only the formatted policy builds",
                    path.display()
                );
                continue;
            };
            policies += 1;
            for c in case["calls"].as_array().into_iter().flatten() {
                // The case's expectations beside the call are not the call's.
                let mut c = c.clone();
                if let Some(o) = c.as_object_mut() {
                    const CALL: [&str; 7] = [
                        "tool", "args", "run_id", "call_id", "confined", "scope", "cwd",
                    ];
                    o.retain(|k, _| CALL.contains(&k.as_str()));
                }
                // Calls refused at intake (a NUL in the tool name) have no
                // decision to compare.
                let Ok(call) = Call::from_value(c) else {
                    continue;
                };
                assert_eq!(
                    a.would(&call),
                    b.would(&call),
                    "{}: {call:?}\n{formatted}",
                    path.display()
                );
                calls += 1;
            }
        }
    }
    // agentpolicy's corpus sits beside the checkout, not in it: a clone
    // elsewhere runs toolgate's own cases alone (55 policies, 62 calls).
    let shared = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("../shared/conformance/agentpolicy/testdata/policy")
        .exists();
    let (at_least_policies, at_least_calls) = if shared { (60, 70) } else { (50, 55) };
    assert!(
        policies > at_least_policies && calls > at_least_calls,
        "{policies} policies, {calls} calls"
    );
}
