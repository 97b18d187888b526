//! The command line, run as a subprocess: every subcommand, its output and its
//! exit code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_toolgate"))
}

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn run(args: &[&str], stdin: &str) -> Output {
    let mut child = bin()
        .args(args)
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A command that exits before reading its input closes the pipe first.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolgate-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn check_accepts_the_example_and_points_at_a_bad_rule() {
    let ok = run(&["check", "examples/policy.json"], "");
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));

    let bad = tmp("bad.json");
    std::fs::write(
        &bad,
        "{\n  \"default\": \"ask\",\n  \"deny\": \"Read Bash() Edit\"\n}\n",
    )
    .unwrap();
    let out = run(&["check", bad.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(4));
    let err = text(&out.stderr);
    assert!(
        err.contains("error[empty_specifier]: rule `Bash()` has an empty specifier"),
        "{err}"
    );
    assert!(err.contains("bad.json:3:17 (at `deny`)"), "{err}");
    assert!(err.contains("= help:"), "{err}");
}

#[test]
fn decide_streams_verdicts_and_denies_what_it_cannot_read() {
    let input = concat!(
        "{\"tool\": \"bash\", \"args\": {\"command\": \"git status\"}, \"call_id\": \"a\"}\n",
        "\n",
        "not json\n",
        "[{\"tool\": \"read\", \"args\": {}}, {\"tool\": \"bash\", \"args\": {\"command\": \"git push\"}}]\n",
        "{\"tool_name\": \"bash\", \"tool_input\": {\"command\": \"curl x\"}}\n",
    );
    let out = run(&["decide", "--policy", "examples/policy.json"], input);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines: Vec<String> = text(&out.stdout).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert_eq!(
        lines[0],
        r#"{"decision":"allow","rule":"bash(git status:*)","reason":"allowed by bash(git status:*)","by":"policy","call_id":"a"}"#
    );
    assert!(
        lines[1].starts_with(r#"{"decision":"deny","reason":"the call could not be read: "#),
        "{}",
        lines[1]
    );
    let batch: serde_json::Value = serde_json::from_str(&lines[2]).unwrap();
    assert_eq!(batch[0]["held"], true);
    assert_eq!(batch[1]["decision"], "ask");
    assert!(
        lines[3].contains(
            r#""reason":"denied by bash(curl:*): outbound network is proxied; use fetch""#
        ),
        "{}",
        lines[3]
    );
}

#[test]
fn decide_denies_a_nul_byte_and_a_call_spelt_twice() {
    let input = concat!(
        // `Read` allows every read; `Read(/etc/shadow:*)` is denied.
        "{\"tool\": \"read\", \"args\": {\"path\": \"/etc/shadow\\u0000.txt\"}}\n",
        // `mcp__github__delete_*` is denied; with a NUL it matched nothing.
        "{\"tool\": \"mcp__github__delete_repo\\u0000\", \"args\": {}}\n",
        "{\"tool\": \"bash\", \"args\": {\"command\": \"rm -rf /\"}, \"tool_name\": \"read\", \"tool_input\": {\"path\": \"/tmp/x\"}}\n",
        "[{\"tool\": \"read\", \"args\": {}}, {\"tool_name\": \"read\", \"tool_input\": {}, \"arguments\": {}}]\n",
    );
    for engine in ["compiled", "reference"] {
        let out = run(
            &[
                "decide",
                "--policy",
                "examples/policy.json",
                "--engine",
                engine,
            ],
            input,
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let lines: Vec<serde_json::Value> = text(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 4, "{lines:?}");
        for v in &lines {
            assert_eq!(v["decision"], "deny", "{engine}: {v}");
        }
        let reason = |i: usize| lines[i]["reason"].as_str().unwrap_or("").to_string();
        assert!(
            reason(0).contains("the member `path` holds a NUL byte"),
            "{}",
            reason(0)
        );
        assert!(
            reason(1).contains("holds the control character U+0000"),
            "{}",
            reason(1)
        );
        assert!(
            reason(2).contains("names its tool twice, as `tool` and `tool_name`"),
            "{}",
            reason(2)
        );
        assert!(
            reason(3).contains("the batch holds a call that cannot be read"),
            "{}",
            reason(3)
        );
    }
}

#[test]
fn the_reference_engine_answers_the_same() {
    let calls = std::fs::read_to_string(root().join("examples/calls.jsonl")).unwrap();
    let a = run(&["decide", "--policy", "examples/policy.json"], &calls);
    let b = run(
        &[
            "decide",
            "--policy",
            "examples/policy.json",
            "--engine",
            "reference",
        ],
        &calls,
    );
    assert_eq!(a.status.code(), Some(0));
    assert_eq!(text(&a.stdout), text(&b.stdout));
    assert_eq!(text(&a.stdout).lines().count(), 9);
}

#[test]
fn compile_inspect_and_decide_from_a_bundle() {
    let art = tmp("p.tgb");
    let c = run(
        &[
            "compile",
            "examples/policy.json",
            "-o",
            art.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(c.status.code(), Some(0), "{}", text(&c.stderr));
    assert!(text(&c.stderr).contains("revision "), "{}", text(&c.stderr));

    let i = run(&["inspect", art.to_str().unwrap()], "");
    assert_eq!(i.status.code(), Some(0));
    let shown = text(&i.stdout);
    for want in [
        "format     1.0",
        "revision   ",
        "managed",
        "rank 3",
        "bash",
        "sections",
        "words",
    ] {
        assert!(shown.contains(want), "inspect lacks {want:?}:\n{shown}");
    }
    let j = run(&["inspect", "--format", "json", art.to_str().unwrap()], "");
    let v: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    assert_eq!(v["format"]["major"], 1);
    assert_eq!(v["sources"][0]["name"], "managed");
    assert_eq!(v["revision"].as_str().unwrap().len(), 64);

    let calls = std::fs::read_to_string(root().join("examples/calls.jsonl")).unwrap();
    let from_policy = run(&["decide", "--policy", "examples/policy.json"], &calls);
    let from_bundle = run(&["decide", "--bundle", art.to_str().unwrap()], &calls);
    assert_eq!(text(&from_policy.stdout), text(&from_bundle.stdout));

    // A damaged artifact is refused with the check that failed, not decided with.
    let mut bytes = std::fs::read(&art).unwrap();
    let n = bytes.len();
    bytes[n - 3] ^= 1;
    let damaged = tmp("damaged.tgb");
    std::fs::write(&damaged, &bytes).unwrap();
    let d = run(&["decide", "--bundle", damaged.to_str().unwrap()], &calls);
    assert_eq!(d.status.code(), Some(4));
    assert!(text(&d.stderr).contains("checksum"), "{}", text(&d.stderr));
    assert!(d.stdout.is_empty());
}

#[test]
fn test_runs_conformance_files_and_ends_with_the_counts() {
    let out = run(
        &[
            "test",
            "testdata/policy/precedence.json",
            "testdata/grammar/edges.json",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let last = text(&out.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();
    assert!(last.ends_with(" passed, 0 failed"), "{last}");

    let broken = tmp("broken.json");
    std::fs::write(
        &broken,
        r#"{"cases": [{"name": "x", "input": "Bash()", "rules": []}]}"#,
    )
    .unwrap();
    let out = run(&["test", broken.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("FAIL"), "{stdout}");
    assert_eq!(stdout.lines().last(), Some("0 passed, 1 failed"));
}

#[test]
fn usage_errors_exit_64() {
    assert_eq!(run(&["decide"], "").status.code(), Some(64));
    assert_eq!(run(&["frobnicate"], "").status.code(), Some(64));
    assert_eq!(run(&["--help"], "").status.code(), Some(0));
}

#[test]
fn format_forces_the_policy_shape() {
    // The example policy is a toolgate document: read as a Rubric bundle it is
    // refused, read as what it is it checks.
    let forced = run(&["check", "--format", "rubric", "examples/policy.json"], "");
    assert_eq!(forced.status.code(), Some(4), "{}", text(&forced.stderr));
    let ok = run(
        &["check", "--format", "toolgate", "examples/policy.json"],
        "",
    );
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    // Claude Code settings read as a toolgate document name the member the
    // document format does not know.
    let settings = tmp("settings.json");
    std::fs::write(&settings, r#"{"permissions": {"deny": ["Bash(rm:*)"]}}"#).unwrap();
    let wrong = run(
        &["check", "--format", "toolgate", settings.to_str().unwrap()],
        "",
    );
    assert_eq!(wrong.status.code(), Some(4));
    assert!(
        text(&wrong.stderr).contains("unknown member `permissions`"),
        "{}",
        text(&wrong.stderr)
    );
    let right = run(&["check", settings.to_str().unwrap()], "");
    assert_eq!(right.status.code(), Some(0), "{}", text(&right.stderr));
}
