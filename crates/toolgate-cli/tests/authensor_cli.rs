//! The command line on Authensor policies: `check`, `compile`, `decide` and
//! `inspect` recognise them by their shape, decide envelopes with their
//! sessions on every engine and through an artifact, and deny what they
//! cannot read.
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

fn run(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(stdin);
    child.wait_with_output().unwrap()
}

fn tmp(name: &str, contents: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolgate-authensor-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, contents).unwrap();
    p
}

fn example(name: &str) -> String {
    format!("{}/../../examples/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn results(o: &Output) -> Vec<Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Outcome, policy and rule of a result; `-` where there is none.
fn brief(r: &Value) -> String {
    let d = &r["decision"];
    format!(
        "{} {} {}",
        d["outcome"].as_str().unwrap(),
        d["policyId"].as_str().unwrap_or("-"),
        d["matchedRules"][0]["ruleId"]
            .as_str()
            .or(r["sessionViolation"]["type"].as_str())
            .unwrap_or("-")
    )
}

#[test]
fn check_says_ok_and_counts_the_policies() {
    let o = run(&["check", &example("authensor.json")], b"");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("ok (Authensor policies: 3 policies, 6 rules)"),
        "{}",
        stderr(&o)
    );
    // One policy object, in a file whose name says nothing, is recognised
    // too.
    let one = tmp(
        "one.txt",
        br#"{"id": "p", "rules": [{"effect": "allow"}], "defaultEffect": "deny"}"#,
    );
    let o = run(&["check", one.to_str().unwrap()], b"");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("1 policy, 1 rule"), "{}", stderr(&o));
}

#[test]
fn check_points_at_each_error_by_line_column_and_path() {
    let bad = tmp(
        "bad.json",
        b"[\n  {\"id\": \"p\", \"rules\": [{\"effect\": \"deny\"},\n    {\"effect\": \"permit\"}]}\n]\n",
    );
    let b = bad.to_str().unwrap();
    for args in [
        vec!["check", b],
        vec!["compile", b, "-o", "/nonexistent/never-written.tgb"],
        vec!["decide", "--policy", b],
    ] {
        let o = run(&args, b"");
        assert_eq!(o.status.code(), Some(4), "{args:?}");
        let err = stderr(&o);
        assert!(
            err.contains(&format!("--> {b}:3:16 (at `[0].rules[1].effect`)")),
            "{err}"
        );
        assert!(
            err.contains("`allow`, `deny` or `require_approval`"),
            "{err}"
        );
        assert!(stdout(&o).is_empty());
    }
    // Text that is not JSON, named as Authensor policies.
    let broken = tmp("broken.json", b"[{\"id\": \"p\",\n");
    let o = run(
        &["check", "--format", "authensor", broken.to_str().unwrap()],
        b"",
    );
    assert_eq!(o.status.code(), Some(4));
    assert!(
        stderr(&o).contains("the policies are not JSON") && stderr(&o).contains("line 2"),
        "{}",
        stderr(&o)
    );
    // toolgate's own policy, forced through the Authensor reader, is refused
    // rather than read as something else.
    let o = run(
        &["check", "--format", "authensor", &example("policy.json")],
        b"",
    );
    assert_eq!(o.status.code(), Some(4));
    assert!(
        stderr(&o).contains("the policy has no `rules`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn decide_gives_the_same_results_from_the_policies_and_from_an_artifact() {
    let policies = example("authensor.json");
    let envelopes = std::fs::read(example("envelopes.jsonl")).unwrap();
    let mut outputs = Vec::new();
    for engine in ["compiled", "reference", "artifact"] {
        let o = run(
            &["decide", "--policy", &policies, "--engine", engine],
            &envelopes,
        );
        assert!(o.status.success(), "{engine}: {}", stderr(&o));
        outputs.push(stdout(&o));
    }
    let artifact = tmp("policies.tgb", b"");
    let a = artifact.to_str().unwrap();
    let o = run(&["compile", &policies, "-o", a], b"");
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["decide", "--bundle", a, &example("envelopes.jsonl")], b"");
    assert!(o.status.success(), "{}", stderr(&o));
    outputs.push(stdout(&o));
    for got in &outputs[1..] {
        assert_eq!(got, &outputs[0]);
    }

    let all: Vec<Value> = outputs[0]
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let briefs: Vec<String> = all.iter().map(brief).collect();
    assert_eq!(
        briefs,
        [
            "deny block-destructive 0",
            "allow agents read-tmp",
            "deny agents no-secrets",
            "allow agents 2",
            "deny agents forbidden_sequence",
            "deny budget-cap over-budget",
            "require_approval budget-cap small-payments",
            "deny agents -",
            "deny - -",
        ]
    );
    // The seed's shape: the reason, the policy's version as written, the
    // rule and its effect.
    assert_eq!(
        all[0],
        serde_json::json!({"decision": {"outcome": "deny", "policyId": "block-destructive",
            "policyVersion": 1, "reason": "Destructive shell commands blocked",
            "matchedRules": [{"ruleId": "0", "effect": "deny"}]}})
    );
    assert_eq!(all[1]["decision"]["policyVersion"], "1.2.0");
    assert_eq!(all[7]["decision"]["reason"], "Default policy effect: deny");
}

#[test]
fn unreadable_envelopes_are_denied_saying_why() {
    let lines: &[u8] = b"not json\n\
\xff\xfe\n\
\n\
[{\"action\": \"file.read\"}]\n\
{\"action\": \"file.read\", \"principalId\": \"agent-1\"}\n\
{\"action\": \"file.read\", \"resource\": \"/tmp/x\", \"principalId\": \"agent-1\", \"session\": {\"actions\": [{\"actionType\": 7}]}}\n\
{\"action\": \"file.read\", \"resource\": \"/tmp/x\", \"principalId\": \"agent-1\", \"action\": \"shell.execute\"}\n\
{\"action\": \"file.read\", \"resource\": \"/tmp/x\", \"principalId\": \"agent-1\"}\n";
    let policies = example("authensor.json");
    let artifact = tmp("unreadable.tgb", b"");
    let a = artifact.to_str().unwrap();
    assert!(run(&["compile", &policies, "-o", a], b"").status.success());
    for args in [
        vec!["decide", "--policy", policies.as_str()],
        vec![
            "decide",
            "--policy",
            policies.as_str(),
            "--engine",
            "reference",
        ],
        vec!["decide", "--bundle", a],
    ] {
        let o = run(&args, lines);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let all = results(&o);
        assert_eq!(all.len(), 8, "every line is answered, a blank one too");
        let why: Vec<&str> = all
            .iter()
            .map(|r| r["decision"]["reason"].as_str().unwrap_or(""))
            .collect();
        for (r, w) in all.iter().zip(&why).take(7) {
            assert_eq!(r["decision"]["outcome"], "deny", "{w}");
            assert!(r["decision"].get("policyId").is_none(), "{w}");
            assert!(w.starts_with("the envelope could not be read: "), "{w}");
            assert!(w.ends_with("(fail-closed)"), "{w}");
        }
        assert!(why[0].contains("the line is not JSON"), "{}", why[0]);
        assert!(why[1].contains("not UTF-8"), "{}", why[1]);
        assert!(why[2].contains("the line is empty"), "{}", why[2]);
        assert!(why[3].contains("not a JSON object"), "{}", why[3]);
        assert!(why[4].contains("`resource` is missing"), "{}", why[4]);
        assert!(
            why[5].contains("`session.actions[0].actionType`"),
            "{}",
            why[5]
        );
        // A duplicate key could be read two ways: it is not read at all.
        assert!(why[6].contains("duplicate key `action`"), "{}", why[6]);
        // The line after them is decided as usual.
        assert_eq!(brief(&all[7]), "allow agents read-tmp");
    }
}

#[test]
fn the_session_history_decides() {
    let policies = example("authensor.json");
    let send = |session: &str| {
        format!(
            "{{\"action\": \"network.send\", \"resource\": \"https://example.com\", \"principalId\": \"agent-1\"{session}}}\n"
        )
    };
    let earlier = |actions: &[&str]| {
        let list: Vec<String> = actions
            .iter()
            .map(|a| {
                format!("{{\"actionType\": \"{a}\", \"timestamp\": \"2026-01-01T00:00:00Z\"}}")
            })
            .collect();
        format!(
            ", \"session\": {{\"sessionId\": \"s1\", \"actions\": [{}]}}",
            list.join(", ")
        )
    };
    let fifty: Vec<&str> = vec!["file.list"; 50];
    let input = [
        send(""),
        send(&earlier(&[])),
        send(&earlier(&["network.send"])),
        send(&earlier(&["file.read", "file.write"])),
        send(&earlier(&fifty[..49])),
        send(&earlier(&fifty)),
    ]
    .concat();
    let artifact = tmp("session.tgb", b"");
    let a = artifact.to_str().unwrap();
    assert!(run(&["compile", &policies, "-o", a], b"").status.success());
    for args in [
        vec!["decide", "--policy", policies.as_str()],
        vec![
            "decide",
            "--policy",
            policies.as_str(),
            "--engine",
            "reference",
        ],
        vec!["decide", "--bundle", a],
    ] {
        let o = run(&args, input.as_bytes());
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let all = results(&o);
        let briefs: Vec<String> = all.iter().map(brief).collect();
        assert_eq!(
            briefs,
            [
                // No session, an empty one, one without the sequence.
                "allow agents 2",
                "allow agents 2",
                "allow agents 2",
                // `file.read` earlier, then `network.send`: the forbidden
                // sequence, whatever came between.
                "deny agents forbidden_sequence",
                // 49 earlier actions and this one: at the limit of 50.
                "allow agents 2",
                "deny agents max_actions",
            ],
            "{args:?}"
        );
        assert_eq!(
            all[3]["sessionViolation"]["details"],
            serde_json::json!({"detectedSequence": ["file.read", "network.send"], "sequenceRuleId": "exfil"})
        );
        assert_eq!(
            all[5]["sessionViolation"]["details"],
            serde_json::json!({"actionCount": 51, "maxActions": 50})
        );
    }
}

#[test]
fn inspect_summarises_an_artifact_of_policies() {
    let artifact = tmp("inspect.tgb", b"");
    let a = artifact.to_str().unwrap();
    assert!(run(&["compile", &example("authensor.json"), "-o", a], b"")
        .status
        .success());
    let o = run(&["inspect", a], b"");
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("holds      Authensor policies, 3 in decision order"),
        "{text}"
    );
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip_while(|l| *l != "policies")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows,
        [
            "block-destructive version 1 rules 1 default - session rules no",
            "budget-cap version 1 rules 2 default - session rules no",
            "agents version 1.2.0 rules 3 default deny session rules yes",
        ]
        .map(|r| r.split_whitespace().collect::<Vec<_>>())
    );

    let o = run(&["inspect", a, "--format", "json"], b"");
    assert!(o.status.success());
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["holds"], "authensor");
    assert_eq!(v["format"], serde_json::json!({"major": 3, "minor": 1}));
    assert_eq!(
        v["policies"][2],
        serde_json::json!({"id": "agents", "version": "1.2.0", "rules": 3,
            "default": "deny", "session_rules": true})
    );
    assert_eq!(v["policies"][0]["version"], 1);
    assert!(v["sections"].as_array().unwrap().len() >= 2);

    // A damaged artifact is refused, by `inspect` and by `decide`.
    let mut bytes = std::fs::read(&artifact).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x55;
    let damaged = tmp("damaged.tgb", &bytes);
    let d = damaged.to_str().unwrap();
    for args in [vec!["inspect", d], vec!["decide", "--bundle", d]] {
        let o = run(&args, b"{}\n");
        assert_eq!(o.status.code(), Some(4), "{args:?}");
        assert!(
            stderr(&o).contains("is not a usable artifact"),
            "{}",
            stderr(&o)
        );
        assert!(stdout(&o).is_empty());
    }
}

#[test]
fn a_format_flag_overrides_the_shape() {
    // A list is Authensor policies by its shape; `--format toolgate` reads
    // it as toolgate's document, which it is not.
    let o = run(
        &["check", "--format", "toolgate", &example("authensor.json")],
        b"",
    );
    assert_eq!(o.status.code(), Some(4));
    assert!(!stderr(&o).contains("Authensor"), "{}", stderr(&o));
    let o = run(
        &["check", "--format", "authensor", &example("authensor.json")],
        b"",
    );
    assert!(o.status.success(), "{}", stderr(&o));
}
