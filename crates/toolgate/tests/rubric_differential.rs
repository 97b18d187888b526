//! Rubric bundles against rubric-app 0.1.0, the published Python engine.
//!
//! Generated bundles and requests (`toolgate_testing::rubric`, restricted
//! to the ground the seed and rubric-app agree on: string values, object
//! paths, ASCII text without newlines, patterns read alike by RE2 and
//! Python's `regex`) are decided by rubric-app's pure-Python evaluator, by
//! toolgate's compiled engine and by its reference interpreter. Every
//! member is compared but `latencyMs`, and `reason` only where a code is
//! set (rubric-app fills no reason on a rule's deny; toolgate gives the
//! rule's description, as seed 001 says).
//!
//! Runs when `python3` can import `rubric` (CI installs it with
//! `python3 -m pip install rubric-app==0.1.0`); otherwise prints a notice
//! and passes. `RUBRIC_DIFF_BUNDLES` sets the number of bundles.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use serde_json::{json, Value};
use std::process::Command;
use toolgate::rubric::{Bundle, Request, RubricEngine, RubricEvaluator, RubricResult};
use toolgate_reference::rubric::RubricReference;
use toolgate_testing::rubric::{Generator, Shape};

const PEER: &str = r#"
import json, logging, sys
logging.disable(logging.CRITICAL)
from rubric.evaluator import Evaluator
from rubric.types import Bundle, EvaluationRequest
for line in open(sys.argv[1]):
    case = json.loads(line)
    ev = Evaluator()
    ev.update_bundle(Bundle.model_validate(case["bundle"]))
    out = []
    for r in case["requests"]:
        x = ev.evaluate(EvaluationRequest(**r))
        out.append({"decision": x.decision, "matchedPolicyId": x.matchedPolicyId,
                    "matchedPolicyVersion": x.matchedPolicyVersion,
                    "matchedRuleId": x.matchedRuleId, "code": x.code, "reason": x.reason})
    print(json.dumps(out))
"#;

fn peer_available() -> bool {
    Command::new("python3")
        .args(["-c", "import rubric.evaluator, rubric.types"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The members compared: everything but latency, and the reason of coded
/// results only.
fn comparable(v: &Value) -> Value {
    let coded = !v["code"].is_null();
    json!({
        "decision": v["decision"],
        "matchedPolicyId": v["matchedPolicyId"],
        "matchedPolicyVersion": v["matchedPolicyVersion"],
        "matchedRuleId": v["matchedRuleId"],
        "code": v["code"],
        "reason": if coded { v["reason"].clone() } else { Value::Null },
    })
}

fn ours(r: &RubricResult) -> Value {
    comparable(&r.to_json())
}

#[test]
fn agrees_with_rubric_app() {
    if !peer_available() {
        eprintln!(
            "notice: python3 cannot import `rubric`: the differential test against rubric-app 0.1.0 was not run (python3 -m pip install rubric-app==0.1.0)"
        );
        return;
    }
    let n_bundles: usize = std::env::var("RUBRIC_DIFF_BUNDLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let per_bundle = 10;
    let shape = Shape::shared();
    let mut g = Generator::new(20_260_510);
    let mut cases = Vec::new();
    let mut lines = String::new();
    for _ in 0..n_bundles {
        let bundle = g.bundle(&shape);
        let requests: Vec<Value> = (0..per_bundle).map(|_| g.request(&shape)).collect();
        lines.push_str(&json!({"bundle": bundle, "requests": requests}).to_string());
        lines.push('\n');
        cases.push((bundle, requests));
    }
    let dir = std::env::temp_dir().join(format!("toolgate-rubric-diff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("cases.jsonl");
    std::fs::write(&input, &lines).unwrap();
    let out = Command::new("python3")
        .args(["-c", PEER, input.to_str().unwrap()])
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "the peer failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let peer: Vec<Vec<Value>> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(peer.len(), cases.len());

    let (mut decisions, mut disagreements, mut denies, mut coded, mut errored) = (0, 0, 0, 0, 0);
    let (mut by_rule, mut by_default) = (0, 0);
    for (i, ((bundle, requests), theirs)) in cases.iter().zip(&peer).enumerate() {
        let b = Bundle::from_value(bundle)
            .unwrap_or_else(|d| panic!("bundle {i} does not load: {d}\n{bundle}"));
        if !b.compile_errors().is_empty() {
            errored += 1;
        }
        let compiled = RubricEngine::build(&b).unwrap();
        let reference = RubricReference::new(&b);
        for (k, (req, t)) in requests.iter().zip(theirs).enumerate() {
            let r = Request::from_value(req.clone()).unwrap();
            let want = comparable(t);
            let got_c = ours(&compiled.decide(&r));
            let got_r = ours(&reference.decide(&r));
            decisions += 1;
            if want["decision"] == "deny" {
                denies += 1;
            }
            if !want["code"].is_null() {
                coded += 1;
            } else if want["matchedRuleId"].is_null() {
                by_default += 1;
            } else {
                by_rule += 1;
            }
            if got_c != want || got_r != want {
                disagreements += 1;
                if disagreements <= 5 {
                    eprintln!(
                        "bundle {i} request {k}:\n  bundle {bundle}\n  request {req}\n  rubric-app {want}\n  compiled   {got_c}\n  reference  {got_r}"
                    );
                }
            }
        }
    }
    eprintln!(
        "rubric-app 0.1.0: {n_bundles} bundles ({errored} with a failing pattern), {decisions} decisions ({denies} deny; {by_rule} by a rule, {by_default} by a default, {coded} coded), {disagreements} disagreements"
    );
    assert!(by_rule > decisions / 3, "too few decisions rest on a rule");
    assert_eq!(disagreements, 0);
    assert!(
        denies > decisions / 10 && denies < decisions * 9 / 10,
        "the generator is unbalanced"
    );
}

/// The generator's wider shape (numbers, booleans, arrays) has no peer that
/// shares the seed's stringification; the compiled engine and the
/// reference must still agree on it.
#[test]
fn compiled_and_reference_agree_on_every_type() {
    let shape = Shape {
        all_types: true,
        ..Shape::shared()
    };
    let mut g = Generator::new(7);
    let mut decisions = 0;
    for i in 0..1500 {
        let bundle = g.bundle(&shape);
        let b = Bundle::from_value(&bundle).unwrap_or_else(|d| panic!("bundle {i}: {d}"));
        let compiled = RubricEngine::build(&b).unwrap();
        let bytes = compiled.to_bytes().unwrap();
        let loaded = RubricEngine::from_bytes(&bytes).unwrap();
        let reference = RubricReference::new(&b);
        for _ in 0..10 {
            let req = g.request(&shape);
            let r = Request::from_value(req.clone()).unwrap();
            let want = ours(&reference.decide(&r));
            assert_eq!(
                ours(&compiled.decide(&r)),
                want,
                "bundle {bundle}\nrequest {req}"
            );
            assert_eq!(
                ours(&loaded.decide(&r)),
                want,
                "bundle {bundle}\nrequest {req}"
            );
            decisions += 1;
        }
    }
    eprintln!("{decisions} decisions: compiled, loaded and reference agree");
}
