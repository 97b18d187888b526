//! `Reference::explain` against the verdicts: on generated policies and
//! calls, the subject the explanation says the fold kept carries the
//! verdict's decision, and the rule it says decided is the verdict's rule.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use toolgate::Engine;
use toolgate_reference::{Outcome, Reference};
use toolgate_testing::workload::Workload;

#[test]
fn the_kept_subject_and_its_deciding_rule_are_the_verdicts() {
    let registry = toolgate::builtins::registry();
    let (mut by_rule, mut by_default) = (0, 0);
    for seed in 0..4 {
        let w = Workload::generate(200, 300, seed);
        let policy = w.policy();
        let reference = Reference::build(&policy, &registry).unwrap();
        let engine = Engine::build_with(&policy, &registry).unwrap();
        for call in &w.calls {
            let e = reference.explain(call);
            assert_eq!(e.verdict, engine.would(call), "{call:?}");
            if e.subjects.is_empty() {
                continue;
            }
            let kept: Vec<_> = e.subjects.iter().filter(|s| s.kept).collect();
            assert_eq!(kept.len(), 1, "{call:?}: {}", e.to_text());
            assert_eq!(
                kept[0].decision,
                Some(e.verdict.decision),
                "{}",
                e.to_text()
            );
            let decided: Vec<_> = kept[0]
                .rules
                .iter()
                .filter(|r| r.outcome == Outcome::Decided)
                .collect();
            match (&e.verdict.rule, decided.as_slice()) {
                (Some(rule), [r]) => {
                    assert_eq!(rule.text, r.rule, "{}", e.to_text());
                    by_rule += 1;
                }
                (None, []) => {
                    assert!(kept[0].by_default, "{}", e.to_text());
                    by_default += 1;
                }
                // A confined call cites the bare ask rule it skipped.
                (Some(_), []) if call.confined.is_some() => {}
                _ => panic!("{call:?}: {}", e.to_text()),
            }
        }
    }
    assert!(
        by_rule > 100 && by_default > 10,
        "{by_rule} by a rule, {by_default} by default"
    );
}

/// A server-bounded glob (Claude Code's MCP allow rule) is explained like
/// any allow rule: it decides when it covers the tool, is listed as
/// withheld when its source is untrusted, and is not consulted for a tool
/// past its server's bound.
#[test]
fn server_bounded_globs_are_explained() {
    let registry = toolgate::builtins::registry();
    let mut policy = toolgate::Policy::from_json(
        r#"{"default": "ask", "sources": [{"name": "user", "rank": 1, "trusted": true},
            {"name": "project", "rank": 2, "trusted": false}]}"#,
    )
    .unwrap();
    for (glob, source) in [("mcp__gh__*", "user"), ("mcp__gl__*", "project")] {
        policy.server_allows.push(toolgate::ServerAllow {
            glob: glob.into(),
            text: glob.trim_end_matches("__*").into(),
            source: source.into(),
            ..Default::default()
        });
    }
    let reference = Reference::build(&policy, &registry).unwrap();
    let e = reference.explain(&toolgate::Call::new("mcp__gh__list", "{}"));
    let decided: Vec<_> = e.subjects[0]
        .rules
        .iter()
        .filter(|r| r.outcome == Outcome::Decided)
        .map(|r| r.rule.as_str())
        .collect();
    assert_eq!(decided, ["mcp__gh"], "{}", e.to_text());
    let e = reference.explain(&toolgate::Call::new("mcp__gh__x__y", "{}"));
    assert!(
        e.subjects[0].rules.is_empty() && e.subjects[0].by_default,
        "{}",
        e.to_text()
    );
    let e = reference.explain(&toolgate::Call::new("mcp__gl__list", "{}"));
    assert_eq!(e.withheld, [("mcp__gl".to_string(), "project".to_string())]);
}
