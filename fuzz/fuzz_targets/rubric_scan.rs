//! The unanchored searches of a condition program: many `contains` needles
//! and `matches` patterns on one field, drawn from the value itself so that
//! most of them occur, often inside one another. The compiled engine (its
//! Aho-Corasick automaton and lazy DFAs), the engine loaded from its
//! artifact and the reference interpreter (one regex per pattern, one
//! substring search per needle) give the same result.
//!
//! Input: byte 0 the number of rules (1..=64), byte 1 the share of patterns
//! among them, byte 2 the default effect and the effect pattern, then a
//! value of at most 512 bytes (read as UTF-8, lossily); the bytes after the
//! value's first 512 choose where each needle or pattern is cut from it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::json;
use toolgate_reference::rubric::RubricReference;
use toolgate::rubric::{Bundle, Request, RubricEngine, RubricEvaluator, RubricResult};

fn comparable(r: &RubricResult) -> serde_json::Value {
    let mut v = r.to_json();
    if let Some(m) = v.as_object_mut() {
        m.remove("latencyMs");
    }
    v
}

/// Pieces of RE2 syntax a pattern is built from around the cut literal.
const AROUND: [&str; 12] = [
    "", ".*", "[a-z]+", "\\b", "\\B", "^", "$", "(?i)", "\\d*", "\\s?", "(?s:.)", "x|",
];

fuzz_target!(|data: &[u8]| {
    let (Some(&n), Some(&share), Some(&effects)) = (data.first(), data.get(1), data.get(2)) else {
        return;
    };
    let rest = data.get(3..).unwrap_or_default();
    let (value, cuts) = rest.split_at(rest.len().min(512));
    let value = String::from_utf8_lossy(value).into_owned();
    let chars: Vec<char> = value.chars().collect();
    let mut cut = cuts.iter().copied().cycle().chain(std::iter::repeat(7));
    let mut next = move || usize::from(cut.next().unwrap_or(7));

    let mut rules = Vec::new();
    for i in 0..usize::from(n % 64) + 1 {
        let start = if chars.is_empty() {
            0
        } else {
            next() % chars.len()
        };
        let len = 1 + next() % 6;
        let piece: String = chars.iter().skip(start).take(len).collect();
        let piece = if piece.is_empty() {
            "a".to_string()
        } else {
            piece
        };
        let pattern = i * 256 / (usize::from(n % 64) + 1) < usize::from(share);
        let (op, v) = if pattern {
            let (a, b) = (AROUND[next() % AROUND.len()], AROUND[next() % AROUND.len()]);
            ("matches", format!("{a}{}{b}", regex_syntax::escape(&piece)))
        } else {
            ("contains", piece)
        };
        let effect = if effects >> (i % 7) & 1 == 1 {
            "deny"
        } else {
            "allow"
        };
        rules.push(json!({"id": format!("r{i}"), "effect": effect,
            "conditions": [{"field": "f", "operator": op, "value": v}]}));
    }
    let default = if effects & 0x80 != 0 { "deny" } else { "allow" };
    let doc = json!({"policies": [{"policyId": "p", "policyVersion": 1,
        "document": {"spec": {"defaultEffect": default, "rules": rules}}}]});
    let Ok(b) = Bundle::from_value(&doc) else {
        return;
    };
    let Ok(compiled) = RubricEngine::build(&b) else {
        return;
    };
    let bytes = compiled
        .to_bytes()
        .expect("a compiled bundle writes an artifact");
    let loaded = RubricEngine::from_bytes(&bytes).expect("an artifact just written loads");
    let reference = RubricReference::new(&b);
    for f in [
        value.as_str(),
        "",
        chars.iter().rev().collect::<String>().as_str(),
    ] {
        let Ok(r) = Request::from_value(json!({"tool_name": "t", "f": f})) else {
            continue;
        };
        let want = comparable(&reference.decide(&r));
        assert_eq!(
            comparable(&compiled.decide(&r)),
            want,
            "compiled\nbundle {doc}\nvalue {f:?}"
        );
        assert_eq!(
            comparable(&loaded.decide(&r)),
            want,
            "artifact\nbundle {doc}\nvalue {f:?}"
        );
    }
});
