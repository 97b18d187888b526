//! `toolgate hook claude-code` answers deny on every fault of its own:
//! Claude Code runs the call when a hook crashes, hangs or exits with a code
//! other than 0 or 2. Each fault is injected into the decider of a test
//! build (`TOOLGATE_HOOK_FAULT`), and the supervisor must answer deny.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

const PAYLOAD: &str = r#"{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"cwd":"/tmp"}"#;

fn settings() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolgate-faults-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("settings.json");
    std::fs::write(&f, r#"{"permissions": {"allow": ["Bash(ls:*)"]}}"#).unwrap();
    f
}

fn hook(env: &[(&str, &str)], payload: &[u8], wrap: &[&str]) -> Output {
    let s = settings();
    let mut cmd = match wrap.split_first() {
        Some((w, rest)) => {
            let mut c = Command::new(w);
            c.args(rest).arg(env!("CARGO_BIN_EXE_toolgate"));
            c
        }
        None => Command::new(env!("CARGO_BIN_EXE_toolgate")),
    };
    let mut child = cmd
        .args(["hook", "claude-code", "--settings", s.to_str().unwrap()])
        .envs(env.iter().copied())
        .env_remove("CLAUDE_PROJECT_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(payload);
    child.wait_with_output().unwrap()
}

fn decision(o: &Output) -> (String, String) {
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)));
    let h = &v["hookSpecificOutput"];
    (
        h["permissionDecision"].as_str().unwrap().to_string(),
        h["permissionDecisionReason"].as_str().unwrap().to_string(),
    )
}

#[test]
fn without_a_fault_the_decider_answers() {
    let o = hook(&[], PAYLOAD.as_bytes(), &[]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(decision(&o).0, "allow", "{:?}", decision(&o));
}

#[test]
#[cfg_attr(
    not(debug_assertions),
    ignore = "faults are compiled into debug builds only"
)]
fn every_injected_fault_is_answered_with_a_deny() {
    for (fault, why) in [
        ("panic", "exit code 101"),
        ("abort", "signal 6"),
        ("alloc", "killed"),
        ("stack", "killed"),
        ("hang", "took longer than 800 ms"),
        ("exit3", "exit code 3"),
        ("garbage", "without a well-formed answer"),
    ] {
        // Only the hang needs a short limit; on a loaded machine a decider
        // that faults can take longer than that to start.
        let limit = if fault == "hang" { "800" } else { "15000" };
        let o = hook(
            &[
                ("TOOLGATE_HOOK_FAULT", fault),
                ("TOOLGATE_HOOK_TIMEOUT_MS", limit),
            ],
            PAYLOAD.as_bytes(),
            &[],
        );
        assert_eq!(o.status.code(), Some(0), "{fault}");
        let (d, reason) = decision(&o);
        assert_eq!(d, "deny", "{fault}: {reason}");
        assert!(reason.contains(why), "{fault}: {reason}");
    }
}

/// A payload of millions of tiny values is refused before it is parsed,
/// and one that fits the value cap is still decided within a memory cap.
#[test]
fn payloads_at_the_bounds_are_answered_within_bounded_memory() {
    let wide = |n: usize| {
        format!(
            r#"{{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{{"command":"ls","x":[{}]}},"cwd":"/tmp"}}"#,
            vec!["[]"; n].join(",")
        )
    };
    let o = hook(&[], wide(5_000_000).as_bytes(), &[]);
    let (d, reason) = decision(&o);
    assert_eq!(d, "deny");
    assert!(reason.contains("more than 1000000 JSON values"), "{reason}");
    // Just under the cap: parsed and decided within a 1 GiB address-space
    // limit (supervisor and decider each).
    let o = hook(
        &[],
        wide(490_000).as_bytes(),
        &["prlimit", "--as=1073741824", "--"],
    );
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        decision(&o),
        (
            "allow".into(),
            "toolgate: allowed by Bash(ls:*) (command-line settings)".into()
        )
    );
    // Past the input cap.
    let big = format!(
        r#"{{"tool_name":"Bash","tool_input":{{"command":"ls","x":"{}"}}}}"#,
        "a".repeat(17 << 20)
    );
    let (d, reason) = decision(&hook(&[], big.as_bytes(), &[]));
    assert_eq!(d, "deny");
    assert!(reason.contains("longer than"), "{reason}");
}
