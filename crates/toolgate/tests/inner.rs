//! The `Inner` strategy (globs whose pieces float between `*`s): its
//! bound on occurrences, and the per-strategy counts `inspect` reads back.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    missing_docs
)]

use toolgate::artifact;
use toolgate::{Call, Decision, Engine, Policy};

fn bash_policy(deny: &[String], allow: &[String]) -> Policy {
    let doc = serde_json::json!({
        "default": "ask",
        "matchers": {"bash": {"match": "glob", "field": "command"}},
        "deny": deny.iter().map(|s| format!("bash({s})")).collect::<Vec<_>>(),
        "allow": allow.iter().map(|s| format!("bash({s})")).collect::<Vec<_>>(),
    });
    toolgate::policy::doc::from_value(&doc, None).unwrap()
}

fn command(v: &str) -> Call {
    Call::new("bash", &serde_json::json!({ "command": v }).to_string())
}

/// Needles that are suffixes of one another by the dozen occur at every
/// byte many times over; past the bound on occurrences per byte the
/// decision fails closed (deny), where a short value decides normally.
#[test]
fn occurrences_past_the_bound_fail_closed() {
    let allow: Vec<String> = (1..=40).map(|n| format!("*{}*", "a".repeat(n))).collect();
    let e = Engine::build(&bash_policy(&[], &allow)).unwrap();
    assert_eq!(
        e.decide(&command(&"a".repeat(100))).decision,
        Decision::Allow
    );
    let v = e.decide(&command(&"a".repeat(20_000)));
    assert_eq!(v.decision, Decision::Deny, "{}", v.reason);
    assert!(v.rule.is_none(), "{v:?}");
}

/// A loaded artifact decides floating-piece rules as the compiled engine
/// does, with its automaton built at first use.
#[test]
fn a_loaded_artifact_builds_its_automaton_at_first_use() {
    let deny = ["git *--force*".to_string(), "* --no-verify*".to_string()];
    let allow = ["git *".to_string()];
    let built = Engine::build(&bash_policy(&deny, &allow)).unwrap();
    let bytes = built.to_bytes();
    let loaded = Engine::from_bytes(&bytes).unwrap();
    for c in [
        "git push --force",
        "git commit --no-verify",
        "git status",
        "npm --no-verify",
    ] {
        assert_eq!(loaded.decide(&command(c)), built.decide(&command(c)), "{c}");
    }
    assert_eq!(
        loaded.decide(&command("git push --force")).reason,
        "denied by bash(git *--force*)"
    );
}

/// `inspect` counts each tool's patterns per strategy.
#[test]
fn inspect_counts_patterns_per_strategy() {
    let deny = [
        "git *--force*".to_string(),
        "* --no-verify*".to_string(),
        "rm -rf /".to_string(),
        "* --force".to_string(),
        "git * main".to_string(),
        "*".to_string(),
    ];
    let allow = [
        "git status:*".to_string(),
        "!git push --force-with-lease *".to_string(),
    ];
    let bytes = Engine::build(&bash_policy(&deny, &allow))
        .unwrap()
        .to_bytes();
    let info = artifact::inspect(&bytes).unwrap();
    let bash = info.tools.iter().find(|t| t.name == "bash").unwrap();
    let s = bash.strategies;
    assert_eq!(
        (s.inner, s.exact, s.suffix, s.prefix_suffix, s.any),
        (2, 2, 1, 1, 1),
        "{s:?}"
    );
    // `git status:*` is `git status` and `git status *`; the carve-out a prefix.
    assert_eq!(s.prefix, 2, "{s:?}");
}

/// A value that reaches few rules has them checked one by one: the
/// automaton is not built. Rules are grouped by prefix, so `kill …` reaches
/// none of the `kubectl …` rules, and `kubectl apply …` only a few; a value
/// that reaches more rules than the direct limit is scanned by the
/// automaton, and decides as the rule-by-rule check does.
#[test]
fn a_value_that_reaches_few_rules_is_decided_without_the_automaton() {
    let mut deny: Vec<String> = (0..40)
        .map(|n| format!("kubectl verb{n:02} *--flag{n:02}*"))
        .collect();
    deny.extend((0..40).map(|n| format!("git *--force{n:02}*")));
    let e = Engine::build(&bash_policy(&deny, &["*".to_string()])).unwrap();
    let automata = &e.program().automata;
    for (c, want) in [
        ("kill -9 1", Decision::Allow),
        ("kubectl verb07 x --flag07 y", Decision::Deny),
        ("kubectl verb07 x --flag08 y", Decision::Allow),
        ("npm install --force01", Decision::Allow),
    ] {
        assert_eq!(e.decide(&command(c)).decision, want, "{c}");
    }
    assert_eq!(automata.built(), 0, "{automata:?}");
    // Forty rules share the prefix `git `: more than the direct limit.
    let v = e.decide(&command("git push --force13"));
    assert_eq!(v.decision, Decision::Deny, "{v:?}");
    assert_eq!(v.reason, "denied by bash(git *--force13*)");
    assert_eq!(automata.built(), 1, "{automata:?}");
    for c in ["git push --force13", "kubectl verb07 x --flag07 y", "kill"] {
        let call = command(c);
        let scanned = toolgate::runtime::inner::with_direct_limit(0, || e.decide(&call));
        let direct = toolgate::runtime::inner::with_direct_limit(u32::MAX, || e.decide(&call));
        assert_eq!(scanned, direct, "{c}");
    }
}

/// Rules of many floating pieces are checked one by one within the
/// decision's budget: each piece is spent as the bytes its search read, so
/// a rule costs about the value once however many pieces it has, and a
/// group of long globs that all fail late is decided (here by the default),
/// not denied for running out of work.
#[test]
fn many_pieces_checked_one_by_one_stay_within_the_budget() {
    let value = vec!["x"; 500].join(" ");
    let xs = vec!["x"; 480].join("*");
    // Thirty-two rules that every x satisfies and a last piece fails.
    let allow: Vec<String> = (0..32)
        .map(|r| format!("{}*{xs}*q{r:02}*", &value[..r]))
        .collect();
    let e = Engine::build(&bash_policy(&[], &allow)).unwrap();
    let call = command(&value);
    let direct = toolgate::runtime::inner::with_direct_limit(u32::MAX, || e.decide(&call));
    assert_eq!(direct.decision, Decision::Ask, "{direct:?}");
    assert_eq!(e.program().automata.built(), 0);
    let scanned = toolgate::runtime::inner::with_direct_limit(0, || e.decide(&call));
    assert_eq!(direct, scanned);
}
