//! Rubric bundles through the artifact: determinism, the program-kind
//! check both ways, refusal of damaged files, and decisions that never
//! panic on tables damaged behind valid checksums.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use reseal::reseal;
use toolgate::artifact::{self, LoadErrorKind};
use toolgate::rubric::{Bundle, Code, Request, RubricEngine};
use toolgate::{Engine, Policy};
use toolgate_testing::reseal;
use toolgate_testing::rubric::{Generator, Shape};

/// Where an artifact's words section starts and ends.
fn words_section(bytes: &[u8]) -> (usize, usize) {
    let h = artifact::header(bytes).unwrap();
    let words = h
        .sections
        .iter()
        .find(|s| s.kind == artifact::SECTION_WORDS)
        .unwrap();
    (words.offset as usize, (words.offset + words.len) as usize)
}

fn sample() -> (Bundle, Vec<Request>) {
    let mut g = Generator::new(99);
    let shape = Shape {
        all_types: true,
        invalid_patterns: false,
        empty_bundles: false,
        ..Shape::shared()
    };
    let mut doc = g.gateway_bundle(3, 20);
    // Some of every operator, and a matches pattern.
    let extra = g.sized_bundle(&shape, 2, 6);
    let mut more = extra["policies"].as_array().unwrap().clone();
    for (i, p) in more.iter_mut().enumerate() {
        p["policyId"] = serde_json::json!(format!("extra-{i}"));
    }
    doc["policies"].as_array_mut().unwrap().extend(more);
    doc["mcpAccess"] = serde_json::json!({"approvedServers": ["github"]});
    let b = Bundle::from_value(&doc).unwrap();
    let reqs = (0..40)
        .map(|i| {
            let v = if i % 2 == 0 {
                g.gateway_request()
            } else {
                g.request(&shape)
            };
            Request::from_value(v).unwrap()
        })
        .collect();
    (b, reqs)
}

#[test]
fn artifacts_are_deterministic_and_decide_as_compiled() {
    let (b, reqs) = sample();
    let e = RubricEngine::build(&b).unwrap();
    let bytes = e.to_bytes().unwrap();
    assert_eq!(bytes, RubricEngine::build(&b).unwrap().to_bytes().unwrap());
    let h = artifact::header(&bytes).unwrap();
    assert_eq!((h.major, h.minor), (artifact::FORMAT_MAJOR, 1));
    assert_eq!(h.kind, artifact::ProgramKind::Conditions);
    // Needles and patterns are stored as text and built at load: a bundle
    // holds no DFA section, and its artifact does not depend on
    // regex-automata's DFA format.
    assert_eq!(h.required, artifact::FEATURE_SCANS);
    assert!(!h.sections.iter().any(|s| s.kind == artifact::SECTION_DFA));
    let loaded = RubricEngine::from_bytes(&bytes).unwrap();
    // An unaligned copy loads too.
    let mut shifted = vec![0u8];
    shifted.extend_from_slice(&bytes);
    let unaligned = RubricEngine::from_bytes(&shifted[1..]).unwrap();
    for r in &reqs {
        let want = e.decide_untimed(r);
        assert_eq!(loaded.decide_untimed(r), want);
        assert_eq!(unaligned.decide_untimed(r), want);
    }
}

#[test]
fn each_engine_refuses_the_other_kind_of_artifact() {
    let (b, _) = sample();
    let rubric = RubricEngine::build(&b).unwrap().to_bytes().unwrap();
    let err = Engine::from_bytes(&rubric).err().unwrap();
    assert_eq!(err.kind(), LoadErrorKind::ProgramKind);
    assert!(err.to_string().contains("Rubric bundle"), "{err}");
    assert_eq!(
        artifact::inspect(&rubric).err().unwrap().kind(),
        LoadErrorKind::ProgramKind
    );
    let policy = Policy::from_json(r#"{"default": "deny", "allow": "read"}"#).unwrap();
    let rules = Engine::build(&policy).unwrap().to_bytes();
    let err = RubricEngine::from_bytes(&rules).err().unwrap();
    assert_eq!(err.kind(), LoadErrorKind::ProgramKind);
    assert!(err.to_string().contains("rule lists"), "{err}");
}

#[test]
fn truncations_and_bit_flips_are_refused() {
    let (b, _) = sample();
    let bytes = RubricEngine::build(&b).unwrap().to_bytes().unwrap();
    for len in (0..bytes.len()).step_by(97) {
        assert!(RubricEngine::from_bytes(&bytes[..len]).is_err(), "{len}");
    }
    let mut flipped = bytes.clone();
    for bit in (0..bytes.len() * 8).step_by(61) {
        flipped[bit / 8] ^= 1 << (bit % 8);
        assert!(RubricEngine::from_bytes(&flipped).is_err(), "bit {bit}");
        flipped[bit / 8] ^= 1 << (bit % 8);
    }
}

#[test]
fn a_condition_program_of_format_3_0_is_refused_with_a_message_to_compile_again() {
    // 3.0 serialised each field's needles and patterns as DFAs under the
    // table magic `TGC1`; those words mean something else now.
    let (b, _) = sample();
    let mut bytes = RubricEngine::build(&b).unwrap().to_bytes().unwrap();
    let (at, _) = words_section(&bytes);
    assert_eq!(&bytes[at..at + 4], b"TGC2");
    bytes[at..at + 4].copy_from_slice(b"TGC1");
    reseal(&mut bytes);
    let e = RubricEngine::from_bytes(&bytes).unwrap_err();
    assert_eq!(e.kind(), LoadErrorKind::Layout);
    assert!(e.to_string().contains("artifact format 3.0"), "{e}");
    assert!(e.to_string().contains("compile the bundle"), "{e}");
}

#[test]
fn patterns_that_cannot_be_built_at_load_deny() {
    let doc = serde_json::json!({"policies": [{"policyId": "p", "policyVersion": 1,
        "document": {"spec": {"defaultEffect": "allow", "rules": [
            {"id": "r", "effect": "deny",
             "conditions": [{"field": "f", "operator": "matches", "value": "rm\\s+-rf"}]}]}}}]});
    let b = Bundle::from_value(&doc).unwrap();
    let mut bytes = RubricEngine::build(&b).unwrap().to_bytes().unwrap();
    let req = Request::from_value(serde_json::json!({"tool_name": "t", "f": "ls"})).unwrap();
    let e = RubricEngine::from_bytes(&bytes).unwrap();
    assert_eq!(e.decide_untimed(&req).decision.as_str(), "allow");
    // Word 24 of the tables is the NFA size limit the patterns are built
    // with: one byte fits no pattern.
    let at = words_section(&bytes).0 + 24 * 4;
    bytes[at..at + 4].copy_from_slice(&1u32.to_le_bytes());
    reseal(&mut bytes);
    let e = RubricEngine::from_bytes(&bytes).unwrap();
    let got = e.decide_untimed(&req);
    assert_eq!(got.decision.as_str(), "deny", "{got:?}");
    // A request that does not reach the field is decided as before.
    let other = Request::from_value(serde_json::json!({"tool_name": "t"})).unwrap();
    assert_eq!(e.decide_untimed(&other).decision.as_str(), "allow");
}

#[test]
fn damaged_tables_behind_valid_checksums_never_panic() {
    let (b, reqs) = sample();
    let good = RubricEngine::build(&b).unwrap().to_bytes().unwrap();
    let (start, end) = words_section(&good);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut loaded, mut codes) = (0, std::collections::BTreeMap::new());
    for round in 0..2_000 {
        let mut bytes = good.clone();
        for _ in 0..1 + next() % 6 {
            let w = start + 4 + (next() as usize % ((end - start - 4) / 4)) * 4;
            let v: u32 = match round % 3 {
                0 => next() as u32,
                1 => u32::MAX - (next() % 4) as u32,
                _ => (next() % 64) as u32,
            };
            bytes[w..w + 4].copy_from_slice(&v.to_le_bytes());
        }
        reseal(&mut bytes);
        if let Ok(e) = RubricEngine::from_bytes(&bytes) {
            loaded += 1;
            for r in &reqs {
                let got = e.decide_untimed(r);
                *codes.entry(got.code.map_or("-", Code::as_str)).or_insert(0) += 1;
            }
        }
    }
    eprintln!("{loaded} of 2000 damaged artifacts loaded; results by code {codes:?}");
    assert!(loaded > 0, "no damaged table reached the evaluator");
}

#[test]
fn the_compile_error_hook_sees_every_failing_pattern() {
    let b = Bundle::from_json(
        r#"{"policies": [
          {"policyId": "a", "policyVersion": 1, "document": {"spec": {"defaultEffect": "allow", "rules": [
            {"id": "r1", "effect": "deny", "conditions": [{"field": "x", "operator": "matches", "value": "(?!x)"}]},
            {"id": "r2", "effect": "deny", "conditions": [{"field": "y", "operator": "matches", "value": "ok"},
                                                          {"field": "z", "operator": "matches", "value": "\\1"}]}]}}}]}"#,
    )
    .unwrap();
    let mut seen = Vec::new();
    let e = RubricEngine::build_with_hook(&b, &mut |err| {
        seen.push((
            err.policy_id.clone(),
            err.rule_id.clone(),
            err.field.clone(),
        ))
    })
    .unwrap();
    assert_eq!(
        seen,
        [
            ("a".into(), "r1".into(), "x".into()),
            ("a".into(), "r2".into(), "z".into())
        ]
    );
    let r = e.decide(&Request::from_json(r#"{"tool_name": "t"}"#).unwrap());
    assert_eq!(r.code, Some(Code::PolicyCompileError));
    assert_eq!(r.matched_policy_id.as_deref(), Some("a"));
    assert!(b.compile_errors()[0].to_string().contains("`(?!x)`"));
}

#[test]
fn overlapping_needles_and_patterns_on_a_long_field_stay_linear() {
    // Every needle and pattern occurs at almost every position of the
    // field: reporting each occurrence would cost length x patterns.
    let mut rules = Vec::new();
    for k in 1..=200 {
        rules.push(serde_json::json!({"id": format!("c{k}"), "effect": "allow",
            "conditions": [{"field": "f", "operator": "contains", "value": "a".repeat(k)}]}));
        rules.push(serde_json::json!({"id": format!("m{k}"), "effect": "allow",
            "conditions": [{"field": "f", "operator": "matches", "value": format!("a{{{k}}}")}]}));
    }
    rules.push(serde_json::json!({"id": "last", "effect": "deny",
        "conditions": [{"field": "f", "operator": "contains", "value": "b"}]}));
    let doc = serde_json::json!({"policies": [{"policyId": "p", "policyVersion": 1,
        "document": {"spec": {"defaultEffect": "deny", "rules": rules}}}]});
    let b = Bundle::from_value(&doc).unwrap();
    let e = RubricEngine::build(&b).unwrap();
    let long = "a".repeat(200_000);
    let start = std::time::Instant::now();
    let r = e.decide_untimed(
        &Request::from_value(serde_json::json!({"tool_name": "t", "f": long})).unwrap(),
    );
    let took = start.elapsed();
    assert_eq!(r.code, None);
    assert_eq!(r.matched_rule_id.as_deref(), Some("m200"));
    let r = e.decide_untimed(
        &Request::from_value(serde_json::json!({"tool_name": "t", "f": format!("{long}b")}))
            .unwrap(),
    );
    assert_eq!(r.matched_rule_id.as_deref(), Some("last"));
    assert!(took.as_secs() < 5, "took {took:?}");
}
