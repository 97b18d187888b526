//! What `toolgate check` prints for the mistakes people make most, pinned
//! as snapshots: a change to any message, position or order shows as a
//! diff to review (`cargo insta review`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Writes `text` as `name` in a directory of its own and checks it with
/// `args`, from that directory, so the snapshot holds no machine's paths.
fn check(name: &str, text: &str, args: &[&str]) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "toolgate-diagnostics-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .arg("check")
        .args(args)
        .arg(name)
        .current_dir(&dir)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    // Settings name their file by its absolute path, the place that
    // decides their source.
    format!(
        "exit {}\n{}",
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr)
    )
    .replace(&format!("{}/", dir.display()), "")
}

fn example(name: &str) -> String {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples"));
    std::fs::read_to_string(root.join(name)).unwrap()
}

#[test]
fn a_misspelt_list_points_at_the_member() {
    let policy = "{\n  \"default\": \"ask\",\n  \"alow\": [\"Read\"]\n}\n";
    insta::assert_snapshot!(check("policy.json", policy, &[]));
}

#[test]
fn a_misspelt_source_member_points_at_the_member() {
    let policy = "{\n  \"default\": \"ask\",\n  \"sources\": [\n    {\"name\": \"project\", \"rank\": 1, \"trusted\": false, \"deni\": [\"Read\"]}\n  ]\n}\n";
    insta::assert_snapshot!(check("policy.json", policy, &[]));
}

/// TOML too: each misspelt key is found in the table its path names.
#[test]
fn misspelt_toml_keys_point_at_their_lines() {
    let policy = "default = \"ask\"\nalow = \"read\"\n\n[[sources]]\nname = \"a\"\nrank = 2\ntrusted = true\n\n[[sources]]\nname = \"b\"\nrank = 1\ntrusted = false\ndeni = \"read\"\n\n[matchers.bash]\nmatch = \"glob\"\nfeild = \"command\"\n";
    insta::assert_snapshot!(check("policy.toml", policy, &[]));
}

#[test]
fn a_trailing_comma_is_a_json_error_with_its_line() {
    let policy = "{\n  \"default\": \"ask\",\n  \"deny\": [\"Read\",],\n}\n";
    insta::assert_snapshot!(check("policy.json", policy, &[]));
}

/// The errors come in the order of the document, whatever order the
/// lists are checked in.
#[test]
fn errors_come_in_document_order() {
    let policy = "{\n  \"default\": \"ask\",\n  \"matchers\": {\"bash\": {\"match\": \"glob\", \"field\": \"command\", \"split\": \"shell\"}},\n  \"deny\": [\"bash(rm:*\"],\n  \"allow\": [\"bash(ls:*\"]\n}\n";
    insta::assert_snapshot!(check("policy.json", policy, &[]));
}

#[test]
fn a_specifier_on_a_misspelt_tool_suggests_the_tool() {
    let policy = "{\n  \"default\": \"ask\",\n  \"matchers\": {\"bash\": {\"match\": \"glob\", \"field\": \"command\", \"split\": \"shell\"}},\n  \"deny\": [\"bahs(rm -rf:*)\"]\n}\n";
    insta::assert_snapshot!(check("policy.json", policy, &[]));
}

#[test]
fn a_bare_typo_fails_under_strict() {
    let policy = "{\n  \"default\": \"ask\",\n  \"matchers\": {\"bash\": {\"match\": \"glob\", \"field\": \"command\", \"split\": \"shell\"}},\n  \"deny\": [\"Bahs\"]\n}\n";
    insta::assert_snapshot!(check("policy.json", policy, &["--strict"]));
}

#[test]
fn a_command_line_without_a_splitter_is_warned_of() {
    let policy = "{\n  \"default\": \"ask\",\n  \"matchers\": {\"bash\": {\"match\": \"prefix\", \"field\": \"command\"}},\n  \"allow\": [\"bash(git status:*)\"]\n}\n";
    insta::assert_snapshot!(check("policy.json", policy, &[]));
}

/// The README's policy, read by Claude Code: every tool is spelt in
/// lower case, so none of its rules would see a call.
#[test]
fn a_policy_for_bash_checked_for_claude_code() {
    let policy = example("policy.json");
    insta::assert_snapshot!(check("policy.json", &policy, &["--host", "claude-code"]));
}

#[test]
fn a_broken_claude_code_rule() {
    let settings =
        "{\n  \"permissions\": {\n    \"deny\": [\"Bash(rm -rf:*\"],\n    \"alow\": []\n  }\n}\n";
    insta::assert_snapshot!(check("settings.json", settings, &[]));
}

#[test]
fn rubric_mistakes_point_at_the_condition() {
    let bundle = example("bundle.json")
        .replacen(
            "\"operator\": \"contains\"",
            "\"operator\": \"containz\"",
            1,
        )
        .replacen("\"effect\": \"deny\"", "\"efect\": \"deny\"", 1);
    insta::assert_snapshot!(check("bundle.json", &bundle, &[]));
}

#[test]
fn an_authensor_rule_with_an_unknown_effect() {
    let policies =
        example("authensor.json").replacen("\"effect\": \"deny\"", "\"effect\": \"block\"", 1);
    insta::assert_snapshot!(check("authensor.json", &policies, &[]));
}

#[test]
fn a_missing_file() {
    let out = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["check", "no-such-policy.json"])
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    insta::assert_snapshot!(format!(
        "exit {}\n{}",
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr)
    ));
}
