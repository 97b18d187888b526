//! What the compiled engine says it considered for a call
//! (`Engine::consulted`, the service's `?explain=true`): each rule of the
//! tool and what became of it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use toolgate::consulted::Outcome;
use toolgate::{Call, Engine, List, Policy};

fn outcomes(engine: &Engine<'_>, command: &str) -> (Vec<(String, Outcome)>, String) {
    let call = Call::new(
        "bash",
        &serde_json::json!({ "command": command }).to_string(),
    );
    let v = engine.would(&call);
    let c = engine.consulted(&call, &v);
    (
        c.rules
            .into_iter()
            .map(|r| (r.rule.text, r.outcome))
            .collect(),
        c.fold,
    )
}

fn o(rule: &str, outcome: Outcome) -> (String, Outcome) {
    (rule.to_string(), outcome)
}

#[test]
fn each_rule_of_the_tool_says_why_it_did_or_did_not_decide() {
    let engine = Engine::build(
        &Policy::from_json(
            r#"{"default": "deny", "matchers": {"bash": {"match": "prefix", "field": "command"}},
                "deny": "bash(rm:*)", "ask": "bash(git push:*) bash(git push --force:*)",
                "allow": "bash(git:*) bash(ls:*)",
                "sources": [{"name": "repo", "trusted": true, "allow": "bash(!git status:*)"}]}"#,
        )
        .unwrap(),
    )
    .unwrap();
    let (got, fold) = outcomes(&engine, "git push --force");
    assert_eq!(
        got,
        [
            o("bash(rm:*)", Outcome::NoMatch),
            o("bash(git push:*)", Outcome::Decided),
            o("bash(git push --force:*)", Outcome::Earlier),
            o("bash(git:*)", Outcome::Outranked(List::Ask)),
            o("bash(ls:*)", Outcome::NoMatch),
            o("bash(!git status:*)", Outcome::NoMatch),
        ]
    );
    assert!(
        fold.starts_with("the ask list decided with `bash(git push:*)`"),
        "{fold}"
    );
    // A carve-out that matches cancels the allow rule it reaches, and the
    // default decides.
    let (got, fold) = outcomes(&engine, "git status");
    assert!(
        got.contains(&o("bash(!git status:*)", Outcome::CarveOut)),
        "{got:?}"
    );
    assert!(
        got.contains(&o(
            "bash(git:*)",
            Outcome::CarvedOut("bash(!git status:*)".into())
        )),
        "{got:?}"
    );
    assert!(fold.starts_with("no rule decided"), "{fold}");
}

#[test]
fn untrusted_allow_rules_of_the_tool_are_reported_withheld() {
    let engine = Engine::build(
        &Policy::from_json(
            r#"{"default": "ask", "matchers": {"bash": {"match": "prefix", "field": "command"}},
                "sources": [{"name": "repo", "trusted": false, "allow": "bash(make:*) read"}]}"#,
        )
        .unwrap(),
    )
    .unwrap();
    let call = Call::new("bash", r#"{"command": "make"}"#);
    let c = engine.consulted(&call, &engine.would(&call));
    let withheld: Vec<&str> = c.withheld.iter().map(|r| r.text.as_str()).collect();
    assert_eq!(withheld, ["bash(make:*)"]);
    assert!(c.rules.is_empty());
}
