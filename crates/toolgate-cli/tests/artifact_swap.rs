//! Artifacts replaced under running deciders: rewritten in place (as `cp`
//! does), renamed over, and truncated. A decider reads the artifact into
//! memory and validates the copy once, so it never dies of the file
//! changing under it (no `SIGBUS`) and never answers with tables that are
//! neither version (no torn verdicts): each run decides as the old policy,
//! as the new one, or refuses a half-written file.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("toolgate-swap-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A policy whose `git status` and `ls` verdicts are `first` and `second`,
/// with enough filler rules that writing the artifact takes many writes.
fn compile(dir: &Path, name: &str, default: &str, allow: &str, deny: &str) -> Vec<u8> {
    let filler: Vec<String> = (0..3_000)
        .map(|i| format!("bash(tool{i} --flag:*)"))
        .collect();
    let policy = serde_json::json!({
        "default": default,
        "matchers": {"bash": {"match": "prefix", "field": "command"}},
        "allow": format!("{allow} {}", filler.join(" ")),
        "deny": deny,
    });
    let src = dir.join(format!("{name}.json"));
    std::fs::write(&src, policy.to_string()).unwrap();
    let out = dir.join(format!("{name}.tgb"));
    let st = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args([
            "compile",
            src.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    std::fs::read(out).unwrap()
}

/// Runs the binary with `args`, `stdin` on its standard input.
fn toolgate(args: &[&str], stdin: &[u8]) -> std::process::Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _ = c.stdin.take().unwrap().write_all(stdin);
    c.wait_with_output().unwrap()
}

const CALLS: &str = "{\"tool\":\"bash\",\"args\":{\"command\":\"git status\"}}\n{\"tool\":\"bash\",\"args\":{\"command\":\"ls\"}}\n";

fn decisions(stdout: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["decision"].as_str().unwrap_or("?").to_string()
        })
        .collect()
}

/// Writes `bytes` over `path` in place, in small writes, as `cp` onto an
/// existing file does.
fn write_in_place(path: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .unwrap();
    for chunk in bytes.chunks(4096) {
        f.write_all(chunk).unwrap();
        f.flush().unwrap();
    }
}

#[test]
fn deciders_never_crash_or_tear_while_the_artifact_is_rewritten() {
    let d = dir();
    let a = compile(&d, "a", "deny", "bash(git status:*)", "");
    let b = compile(&d, "b", "allow", "", "bash(git status:*)");
    let live = d.join("live.tgb");
    std::fs::write(&live, &a).unwrap();
    let want_a = vec!["allow".to_string(), "deny".to_string()];
    let want_b = vec!["deny".to_string(), "allow".to_string()];

    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (stop, live, a, b, d) = (stop.clone(), live.clone(), a.clone(), b.clone(), d.clone());
        std::thread::spawn(move || {
            let mut rewrites = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let bytes = if rewrites % 2 == 0 { &b } else { &a };
                if rewrites % 5 == 4 {
                    let tmp = d.join("live.tmp");
                    std::fs::write(&tmp, bytes).unwrap();
                    std::fs::rename(&tmp, &live).unwrap();
                } else {
                    write_in_place(&live, bytes);
                }
                rewrites += 1;
            }
            rewrites
        })
    };

    // Bounded in count and in time.
    let deadline = Instant::now() + Duration::from_secs(20);
    let (mut runs, mut crashes, mut torn, mut refused) = (0, 0, 0, 0);
    let (mut saw_a, mut saw_b) = (0, 0);
    while runs < 240 && Instant::now() < deadline {
        let children: Vec<_> = (0..6)
            .map(|_| {
                let mut c = Command::new(env!("CARGO_BIN_EXE_toolgate"))
                    .args(["decide", "--bundle", live.to_str().unwrap()])
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap();
                let _ = c.stdin.take().unwrap().write_all(CALLS.as_bytes());
                c
            })
            .collect();
        for c in children {
            let o = c.wait_with_output().unwrap();
            runs += 1;
            if o.status.signal().is_some() {
                crashes += 1;
            } else if o.status.success() {
                let got = decisions(&o.stdout);
                if got == want_a {
                    saw_a += 1;
                } else if got == want_b {
                    saw_b += 1;
                } else {
                    torn += 1;
                }
            } else {
                refused += 1;
                let err = String::from_utf8_lossy(&o.stderr);
                assert!(
                    err.contains("not a usable artifact") || err.contains("cannot"),
                    "{err}"
                );
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let rewrites = writer.join().unwrap();
    eprintln!(
        "{runs} runs over {rewrites} rewrites: {saw_a} decided as a, {saw_b} as b, {refused} refused a half-written file, {crashes} crashed, {torn} torn"
    );
    assert_eq!(crashes, 0);
    assert_eq!(torn, 0);
    assert!(saw_a + saw_b > 0, "no run decided at all");
    assert!(rewrites > 0);
}

#[test]
fn a_running_decider_keeps_its_copy_when_the_file_is_truncated_or_replaced() {
    let d = dir();
    let a = compile(&d, "keep-a", "deny", "bash(git status:*)", "");
    let b = compile(&d, "keep-b", "allow", "", "bash(git status:*)");
    let live = d.join("keep.tgb");
    std::fs::write(&live, &a).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["decide", "--bundle", live.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let call = "{\"tool\":\"bash\",\"args\":{\"command\":\"git status\"}}\n";
    let mut ask = |stdin: &mut std::process::ChildStdin| {
        stdin.write_all(call.as_bytes()).unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        decisions(line.as_bytes())
    };
    assert_eq!(ask(&mut stdin), vec!["allow"]);
    // Truncated to nothing: a mapping would fault on the next read.
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&live)
        .unwrap();
    assert_eq!(ask(&mut stdin), vec!["allow"]);
    // Rewritten in place with the other policy: still the copy it loaded.
    write_in_place(&live, &b);
    assert_eq!(ask(&mut stdin), vec!["allow"]);
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

#[test]
fn the_command_line_verifies_the_revision_and_caps_the_length() {
    let d = dir();
    let good = compile(&d, "verify", "ask", "", "bash(git status:*)");
    let path = d.join("tampered.tgb");
    // The default, ask, made allow, with the checksums recomputed.
    let words = toolgate::artifact::header(&good)
        .unwrap()
        .sections
        .iter()
        .find(|s| s.kind == toolgate::artifact::SECTION_WORDS)
        .unwrap()
        .offset as usize;
    let mut bad = good.clone();
    bad[words + 48..words + 52].copy_from_slice(&0u32.to_le_bytes());
    toolgate_testing::reseal::reseal_checksums(&mut bad);
    std::fs::write(&path, &bad).unwrap();
    let run = |args: &[&str]| toolgate(args, CALLS.as_bytes());
    let p = path.to_str().unwrap();
    for args in [vec!["decide", "--bundle", p], vec!["inspect", p]] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(4), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("revision id does not match"),
            "{args:?}: {err}"
        );
    }
    let payload = r#"{"tool_name":"Bash","tool_input":{"command":"ls"},"cwd":"/tmp"}"#;
    let o = toolgate(&["hook", "claude-code", "--bundle", p], payload.as_bytes());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("\"deny\"") && out.contains("revision id"),
        "{out}"
    );
    // Told not to verify, the tampered default decides: the documented trade.
    let o = run(&["decide", "--bundle", p, "--no-verify"]);
    assert!(o.status.success());
    assert_eq!(decisions(&o.stdout), vec!["deny", "allow"]);

    let g = d.join("capped.tgb");
    std::fs::write(&g, &good).unwrap();
    let g = g.to_str().unwrap();
    let len = good.len().to_string();
    let under = (good.len() - 1).to_string();
    let o = run(&["decide", "--bundle", g, "--max-artifact-bytes", &len]);
    assert!(o.status.success());
    assert_eq!(decisions(&o.stdout), vec!["deny", "ask"]);
    let o = run(&["decide", "--bundle", g, "--max-artifact-bytes", &under]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("over the limit"));
}

/// `keygen`, `compile --sign` and `--require-signature` on every loader: a
/// signed artifact decides; one signed by another key, a missing or
/// damaged signature, and an artifact changed behind its recomputed
/// revision (which the signature does not cover) are refused.
#[test]
fn signed_artifacts_are_required_where_asked() {
    let d = dir();
    let key = d.join("signing.key");
    let other = d.join("other.key");
    let _ = std::fs::remove_file(&key);
    let _ = std::fs::remove_file(&other);
    for k in [&key, &other] {
        let o = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["keygen", k.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    // An existing key is never overwritten.
    let again = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["keygen", key.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!again.status.success());
    let pubkey = format!("{}.pub", key.display());
    let other_pub = format!("{}.pub", other.display());

    let src = d.join("signed.json");
    std::fs::write(
        &src,
        r#"{"default": "ask", "matchers": {"bash": {"match": "prefix", "field": "command"}}, "deny": "bash(rm:*)"}"#,
    )
    .unwrap();
    let art = d.join("signed.tgb");
    let a = art.to_str().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args([
            "compile",
            src.to_str().unwrap(),
            "-o",
            a,
            "--sign",
            key.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(d.join("signed.tgb.sig").exists());

    let call = "{\"tool\":\"bash\",\"args\":{\"command\":\"rm -rf /\"}}\n";
    let decide = |extra: &[&str]| {
        let args: Vec<&str> = ["decide", "--bundle", a]
            .iter()
            .chain(extra)
            .copied()
            .collect();
        toolgate(&args, call.as_bytes())
    };
    let ok = decide(&["--require-signature", &pubkey]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert_eq!(decisions(&ok.stdout), vec!["deny"]);
    let wrong = decide(&["--require-signature", &other_pub]);
    assert_eq!(wrong.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("not made by the required key"));
    let missing = decide(&[
        "--require-signature",
        &pubkey,
        "--signature",
        "/nonexistent.sig",
    ]);
    assert_ne!(missing.status.code(), Some(0));
    let inspect = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["inspect", a, "--require-signature", &other_pub])
        .output()
        .unwrap();
    assert_eq!(inspect.status.code(), Some(4));

    // The same bytes with the default made allow and the revision
    // restamped: structurally sound, signed by nobody.
    let mut bytes = std::fs::read(&art).unwrap();
    let words = toolgate::artifact::header(&bytes)
        .unwrap()
        .sections
        .iter()
        .find(|s| s.kind == toolgate::artifact::SECTION_WORDS)
        .unwrap()
        .offset as usize;
    bytes[words + 48..words + 52].copy_from_slice(&0u32.to_le_bytes());
    toolgate_testing::reseal::reseal(&mut bytes);
    std::fs::write(&art, &bytes).unwrap();
    let forged = decide(&["--require-signature", &pubkey]);
    assert_eq!(forged.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&forged.stderr).contains("not made by the required key"));
    // Without the requirement it loads (the revision agrees with itself).
    assert!(decide(&[]).status.success());

    let payload = r#"{"tool_name":"bash","tool_input":{"command":"ls"},"cwd":"/tmp"}"#;
    let o = toolgate(
        &[
            "hook",
            "claude-code",
            "--bundle",
            a,
            "--require-signature",
            &pubkey,
        ],
        payload.as_bytes(),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("\"deny\"") && out.contains("required key"),
        "{out}"
    );
}
