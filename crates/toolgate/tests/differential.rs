//! The differential property on stable Rust, without the fuzzer: generated
//! cases from fixed seeds, each run on every engine, every answer compared
//! (see `toolgate_testing::agentpolicy`). A failure prints the case as a conformance
//! file to paste into `testdata/regressions/`.
//!
//! `DIFFERENTIAL_CASES` sets the number of decision cases (default 20000
//! in an optimised build, 5000 in a debug build, where the grammar's parser
//! dominates); `DIFFERENTIAL_SEED` moves the seeds.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use toolgate_reference::conformance::{run_file, EngineKind};
use toolgate_testing::agentpolicy::{
    check_case, check_matcher, check_parse, check_policy_json, generate, Case, MatcherCase,
    Outcome, PolicyValue, Rng,
};

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn base_seed() -> u64 {
    env_number("DIFFERENTIAL_SEED", 0x746f_6f6c_6761_7465)
}

#[test]
fn decisions_agree() {
    let default = if cfg!(debug_assertions) {
        5_000
    } else {
        20_000
    };
    let n = env_number("DIFFERENTIAL_CASES", default);
    let seed = base_seed();
    let (mut built, mut refused, mut verdicts) = (0usize, 0usize, 0usize);
    for i in 0..n {
        let case: Case = match generate(seed.wrapping_add(i), 2048) {
            Ok(c) => c,
            Err(_) => continue,
        };
        match check_case(&case) {
            Ok(Outcome::Ran(r)) => {
                built += 1;
                verdicts += r.calls.len() + r.batch.len();
            }
            Ok(Outcome::Refused { kind, message }) => {
                refused += 1;
                if std::env::var("DIFFERENTIAL_SHOW_REFUSED").is_ok() {
                    eprintln!("refused: {kind}: {}", message.lines().next().unwrap_or(""));
                }
            }
            Err(_) => {
                let small = case.minimize(|c| check_case(c).is_err());
                let m = check_case(&small).unwrap_err();
                panic!("seed {}, minimized: {m}", seed.wrapping_add(i))
            }
        }
    }
    eprintln!("{n} cases: {built} built ({verdicts} verdicts compared), {refused} refused");
    // The generator must mostly make policies that build.
    assert!(built * 10 >= n as usize * 7, "only {built} of {n} built");
}

/// A case printed by `to_case_json` is a conformance file the harness runs
/// and passes on every engine: a finding pasted into `testdata/` is a test.
#[test]
fn printed_cases_replay_in_the_harness() {
    let seed = base_seed() ^ 0x5eed;
    let mut replayed = 0;
    for i in 0..600 {
        let case: Case = match generate(seed.wrapping_add(i), 2048) {
            Ok(c) => c,
            Err(_) => continue,
        };
        let outcome = check_case(&case).unwrap_or_else(|m| panic!("{m}"));
        let json = case.to_case_json(&format!("seed {i}"), &outcome);
        let text = serde_json::to_string_pretty(&json).unwrap();
        let report = run_file("generated.json", &text, &EngineKind::ALL).unwrap();
        assert_eq!(
            report.failed, 0,
            "{:?}\nthe printed case:\n{text}",
            report.failures
        );
        replayed += report.passed;
    }
    assert!(replayed >= 590);
}

#[test]
fn claude_kinds_agree_with_the_reference() {
    use toolgate_testing::claude_kinds::{check_kind, KindCase, KindName};
    let seed = base_seed() ^ 0x6b69_6e64;
    let mut counts = std::collections::BTreeMap::new();
    for i in 0..24_000u64 {
        let c: KindCase = match generate(seed.wrapping_add(i), 128) {
            Ok(c) => c,
            Err(_) => continue,
        };
        let got = check_kind(&c).unwrap_or_else(|e| panic!("{e}"));
        let slot = counts.entry((format!("{:?}", c.kind), got)).or_insert(0u32);
        *slot += 1;
    }
    eprintln!("claude kind cases (kind, answer): {counts:?}");
    // Every kind, and both answers of each, must be common.
    for kind in [
        KindName::Path,
        KindName::PathFold,
        KindName::Domain,
        KindName::Bash,
    ] {
        for answer in [true, false] {
            let n = counts
                .get(&(format!("{kind:?}"), Some(answer)))
                .copied()
                .unwrap_or(0);
            assert!(
                n >= 300,
                "only {n} cases of ({kind:?}, {answer}): {counts:?}"
            );
        }
    }
}

#[test]
fn matchers_agree() {
    let seed = base_seed() ^ 0x6d61_7463;
    let (mut matched, mut n) = (0, 0);
    for i in 0..20_000u64 {
        let c: MatcherCase = match generate(seed.wrapping_add(i), 256) {
            Ok(c) => c,
            Err(_) => continue,
        };
        n += 1;
        if check_matcher(&c).unwrap_or_else(|e| panic!("{e}")) {
            matched += 1;
        }
    }
    eprintln!("{n} matcher cases, {matched} matched");
    // Values are built from the specifiers: matches must be common.
    assert!(matched * 4 >= n, "only {matched} of {n} matched");
}

#[test]
fn parsing_round_trips() {
    let mut rng = Rng::new(base_seed() ^ 0x7061_7273);
    let alphabet: &[&str] = &[
        "bash", "(", ")", "!", "*", ":*", " ", "\t", "x", "\u{a0}", "\u{85}", "{", "}", "\"", ":",
        "[", "]", "=", ",", "\n", "default", "deny", "é",
    ];
    for _ in 0..20_000 {
        let len = (rng.next_u64() % 12) as usize;
        let text: String = (0..len)
            .map(|_| alphabet[(rng.next_u64() % alphabet.len() as u64) as usize])
            .collect();
        check_parse(&text).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn policy_documents_never_panic_and_build_alike() {
    let seed = base_seed() ^ 0x6a73_6f6e;
    for i in 0..3_000u64 {
        let v: PolicyValue = match generate(seed.wrapping_add(i), 1024) {
            Ok(v) => v,
            Err(_) => continue,
        };
        check_policy_json(&v.0).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// Damaged artifacts the fuzzer found (`testdata/regressions/artifacts/`,
/// written by the artifact target with `TOOLGATE_ARTIFACT_DUMP`): each
/// loads or is refused, and an engine that loads answers every question
/// without a panic, an abort or a hang.
#[test]
fn damaged_artifacts_never_panic() {
    use std::sync::Arc;
    use toolgate::{Args, Call, Engine, RuleLists, RuleSet, Source};
    use toolgate_testing::agentpolicy::SimSplitter;

    let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("testdata/regressions/artifacts");
    let mut registry = toolgate::builtins::registry();
    registry.add_splitter("corpus", Arc::new(SimSplitter::default()));
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "tgb") {
            continue;
        }
        n += 1;
        let bytes = std::fs::read(&path).unwrap();
        let loaded = Engine::from_bytes_with(&bytes, &registry);
        // A count that runs past the words is refused by the structural
        // checks at load (since format 2), before any decision reads it.
        if path.to_string_lossy().contains("past_the_words") {
            let kind = loaded.as_ref().err().map(|e| e.kind());
            assert_eq!(
                kind,
                Some(toolgate::artifact::LoadErrorKind::Layout),
                "{}",
                path.display()
            );
        }
        let Ok(e) = loaded else {
            continue;
        };
        let _ = e.sources();
        let _ = e.withheld();
        let tools: Vec<String> = ["bash", "read", "edit", "mcp__a__b", "other"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let _ = e.filter(&tools);
        let calls = [
            Call::new("bash", r#"{"command": "git status"}"#),
            Call::new("read", r#"{"path": ".env"}"#),
            Call::new("mcp__a__c", "{}").confined_by(""),
        ];
        let _ = e.decide_batch(&calls);
        let _ = e.matching_rules("bash", &Args::from_json(r#"{"command": "ls"}"#));
        let set = RuleSet {
            source: Source {
                name: "skill:a".into(),
                rank: 1,
                trusted: true,
                ..Source::default()
            },
            lists: RuleLists::parse("bash read(x)", "edit", "mcp__*").unwrap(),
            location: Default::default(),
        };
        let mut session = e.session();
        let _ = session.grant_set(&set, Some("s1"));
        let _ = session.decide_batch(&calls);
        let _ = session.withheld();
    }
    assert!(n >= 1, "no artifact in {}", dir.display());
}

/// A splitter that returns a subject whose arguments cannot be read (the
/// conformance format cannot say this: its subjects' arguments are JSON
/// values). Every engine blocks the whole call, before any subject is
/// decided, with no subject and no block suffix, whatever the other
/// subjects would get.
#[test]
fn unreadable_subject_arguments_block_the_call_alike() {
    use std::sync::Arc;
    use toolgate::{Args, Call, Decision, Policy, Splitter, Subject};
    use toolgate_testing::agentpolicy::ENGINES;

    #[derive(Debug)]
    struct Unreadable;
    impl Splitter for Unreadable {
        fn split(&self, _: &str, args: &Args) -> Result<Vec<Subject>, toolgate::error::SplitError> {
            Ok(vec![
                Subject::new(args.clone(), "rm x"),
                Subject::new(Args::from_json(r#"{"command": "a", "command": "b"}"#), "b"),
            ])
        }
    }
    let policy = Policy::from_json(
        r#"{"default": "allow", "deny": "bash(rm:*)",
            "matchers": {"bash": {"match": "glob", "field": "command", "split": "u"}}}"#,
    )
    .unwrap();
    let mut registry = toolgate::builtins::registry();
    registry.add_splitter("u", Arc::new(Unreadable));
    let call = Call::new("bash", r#"{"command": "rm x; b"}"#);
    for (name, build) in ENGINES {
        let engine = build(&policy, &registry).unwrap();
        let v = engine.would(&call);
        assert_eq!(v.decision, Decision::Deny, "{name}");
        assert_eq!(
            v.reason,
            "bash call could not be evaluated: its arguments could not be read: \
             duplicate key `command` at line 1 column 26",
            "{name}"
        );
        assert_eq!(v.subject, "", "{name}");
        assert!(v.rule.is_none(), "{name}");
        // It holds the other calls of its batch, like any unevaluable call.
        let batch = engine.decide_batch(&[call.clone(), Call::new("read", "{}")]);
        assert!(batch[1].held, "{name}");
    }
}

/// The same cases with `prefix` and `glob` lowered to callbacks, then to
/// regular expressions (DFAs): paths of the compiler and the runtime the
/// built-in kinds never take, against the unchanged reference.
#[test]
fn callback_and_regex_paths_agree() {
    use toolgate_testing::agentpolicy::{check_case_with, Path, StandIn};
    let n = if cfg!(debug_assertions) { 300 } else { 5_000 };
    for path in [Path::Callback, Path::Regex] {
        let kinds = StandIn::both(path);
        let seed = base_seed() ^ 0x6b69_6e64 ^ path as u64;
        for i in 0..n {
            let case: Case = match generate(seed.wrapping_add(i), 2048) {
                Ok(c) => c,
                Err(_) => continue,
            };
            if check_case_with(&case, &kinds).is_err() {
                let small = case.minimize(|c| check_case_with(c, &kinds).is_err());
                let m = check_case_with(&small, &kinds).unwrap_err();
                panic!("{path:?}, seed {}, minimized: {m}", seed.wrapping_add(i));
            }
        }
    }
}

/// Every match strategy against the reference on generated glob
/// specifiers (`toolgate_testing::strategies`): overlapping, repeated and
/// empty pieces, pieces over the anchored ends, multi-byte characters at
/// piece boundaries, many rules on one field. `STRATEGY_CASES` sets the
/// number of cases.
#[test]
fn strategies_agree_with_the_reference() {
    use toolgate_testing::strategies::{check_strategies, StrategyCase};
    let n = env_number(
        "STRATEGY_CASES",
        if cfg!(debug_assertions) {
            1_500
        } else {
            10_000
        },
    );
    let mut rng = toolgate_testing::workload::Rng::new(base_seed() ^ 0x57a7);
    let (mut ran, mut inner) = (0usize, 0usize);
    for i in 0..n {
        let mut data = vec![0u8; 64 + rng.below(448)];
        rng.fill(&mut data);
        let Some(case) = StrategyCase::from_bytes(&data) else {
            continue;
        };
        if let Err(e) = check_strategies(&case) {
            panic!("case {i}: {e}");
        }
        ran += 1;
        inner += usize::from(case.rules.iter().any(|(_, s)| {
            let pieces: Vec<&str> = s.trim_start_matches('!').split('*').collect();
            pieces.len() > 2 && pieces[1..pieces.len() - 1].iter().any(|p| !p.is_empty())
        }));
    }
    eprintln!("{ran} strategy cases, {inner} with floating pieces");
    assert!(
        inner * 2 >= ran,
        "only {inner} of {ran} cases have floating pieces"
    );
}

/// Server-bounded allow globs (Claude Code's MCP allow rules) on every
/// engine: generated globs and tool names over a small alphabet of server
/// and tool pieces, so that `__` inside a tool's name, prefixes shared by
/// two servers and globs over the server part all occur, beside deny and
/// ask globs and exact allow rules that must win over them.
#[test]
fn server_bounded_globs_agree_on_every_engine() {
    use toolgate::{Call, ServerAllow};
    use toolgate_testing::workload::Rng;
    let pieces = ["gh", "g", "h", "_", "__", "x", "get_", "*", "a"];
    let mut rng = Rng::new(base_seed() ^ 0x5e4f);
    let name = |rng: &mut Rng, star: bool| {
        let mut s = String::from("mcp__");
        for _ in 0..1 + rng.below(4) {
            let p = *rng.pick(&pieces).unwrap();
            if p != "*" || star {
                s.push_str(p);
            }
        }
        s
    };
    let registry = toolgate::builtins::registry();
    let cases = env_number("DIFFERENTIAL_CASES", 2000) / 4;
    for case in 0..cases {
        let mut deny = Vec::new();
        let mut ask = Vec::new();
        let mut allow = Vec::new();
        for _ in 0..rng.below(3) {
            deny.push(name(&mut rng, true));
        }
        for _ in 0..rng.below(2) {
            ask.push(name(&mut rng, true));
        }
        for _ in 0..rng.below(2) {
            allow.push(name(&mut rng, false));
        }
        let doc = serde_json::json!({
            "default": if rng.chance(50) { "ask" } else { "deny" },
            "sources": [{"name": "user", "rank": 1, "trusted": true, "allow": allow.join(" ")},
                        {"name": "project", "rank": 2, "trusted": rng.chance(70)}],
            "deny": deny.join(" "),
            "ask": ask.join(" "),
        });
        let Ok(mut policy) = toolgate::Policy::from_json(&doc.to_string()) else {
            continue;
        };
        for _ in 0..1 + rng.below(3) {
            let glob = format!("{}*", name(&mut rng, true));
            policy.server_allows.push(ServerAllow {
                text: glob.clone(),
                glob,
                source: rng.pick_str(&["user", "project", ""]).to_string(),
                ..Default::default()
            });
        }
        let engines: Vec<_> = EngineKind::ALL
            .iter()
            .map(|e| (e.name(), e.build(&policy, &registry)))
            .collect();
        let built: Vec<bool> = engines.iter().map(|(_, e)| e.is_ok()).collect();
        assert!(
            built.iter().all(|&b| b == built[0]),
            "case {case}: {doc} {policy:?}"
        );
        let engines: Vec<_> = engines
            .into_iter()
            .filter_map(|(n, e)| Some((n, e.ok()?)))
            .collect();
        for _ in 0..8 {
            let tool = name(&mut rng, false);
            let call = Call::new(tool.as_str(), "{}");
            let want = engines[0].1.would(&call);
            for (n, e) in &engines[1..] {
                let got = e.would(&call);
                assert_eq!(
                    (got.decision, &got.reason, got.rule_text()),
                    (want.decision, &want.reason, want.rule_text()),
                    "case {case}, {n} against the reference on {tool}: {doc} {:?}",
                    policy.server_allows
                );
            }
        }
    }
}
