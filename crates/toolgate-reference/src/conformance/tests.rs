//! Test files: the format people write to test their own policy
//! (`spec/testing.md`).
//!
//! ```json
//! {
//!   "policy": {"default": "ask", "allow": "bash(git status:*)", "deny": "bash(rm:*)",
//!              "matchers": {"bash": {"match": "glob", "field": "command", "split": "shell"}}},
//!   "dialect": "toolgate",
//!   "tests": [
//!     {"name": "status runs", "tool": "bash", "args": {"command": "git status"}, "decision": "allow"},
//!     {"tool": "bash", "args": {"command": "rm -rf /"}, "decision": "deny", "rule": "bash(rm:*)"}
//!   ]
//! }
//! ```
//!
//! The policy is the document itself (a toolgate policy, or Claude Code
//! settings with `"dialect": "claude-code"`); a caller that allows a path
//! there reads the file and puts its document in its place ([`prepare`]),
//! since the harness does no I/O. Each test is one call, run on every engine as a
//! conformance case is, and compared only on what it gives: `decision`
//! always, `rule`, `reason` and `subject` when present.

use super::cases::{run_decisions, DecisionsFile, EngineKind};
use super::claude::ClaudeFile;
use super::Report;
use serde::Deserialize;
use serde_json::{json, Value};

/// Sets `key` of `v` when `v` is an object (every caller built it as one).
fn set(v: &mut Value, key: &str, x: Value) {
    if let Some(o) = v.as_object_mut() {
        o.insert(key.to_string(), x);
    }
}

/// Whether `v` is a test file: `tests` beside a `policy`, no `cases`.
pub(super) fn is_test_file(v: &Value) -> bool {
    v.get("tests").is_some() && v.get("cases").is_none()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TestFile {
    policy: Value,
    dialect: Option<String>,
    /// Claude Code: the permission mode the calls run in.
    mode: Option<String>,
    /// Claude Code: the project directory (`/repo` when left out).
    project_dir: Option<String>,
    tests: Vec<Test>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Test {
    name: Option<String>,
    tool: String,
    #[serde(default)]
    args: Value,
    cwd: Option<String>,
    decision: String,
    rule: Option<String>,
    reason: Option<String>,
    subject: Option<String>,
}

pub(super) fn run(name: &str, v: Value, engines: &[EngineKind]) -> Result<Report, String> {
    let f: TestFile = serde_json::from_value(v).map_err(|e| format!("{name}: {e}"))?;
    if f.policy.is_string() {
        return Err(format!(
            "{name}: the policy `{}` is a path: give it to `toolgate test`, which reads it, or write the policy inline",
            f.policy.as_str().unwrap_or_default()
        ));
    }
    let dialect = f.dialect.as_deref().unwrap_or("toolgate");
    let cases: Vec<Value> = f
        .tests
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut want = json!({ "decision": t.decision });
            for (k, v) in [
                ("rule", &t.rule),
                ("reason", &t.reason),
                ("subject", &t.subject),
            ] {
                if let Some(v) = v {
                    set(&mut want, k, json!(v));
                }
            }
            let mut call = json!({ "tool": t.tool, "args": t.args, "want": want });
            if let Some(cwd) = &t.cwd {
                set(&mut call, "cwd", json!(cwd));
            }
            let case_name = t
                .name
                .clone()
                .unwrap_or_else(|| format!("test {} ({})", i + 1, t.tool));
            (case_name, call)
        })
        .map(|(case_name, call)| match dialect {
            "claude-code" => {
                let mut c = json!({
                    "name": case_name,
                    "settings": [{ "settings": f.policy }],
                    "calls": [call],
                });
                if let Some(m) = &f.mode {
                    set(&mut c, "mode", json!(m));
                }
                if let Some(p) = &f.project_dir {
                    set(&mut c, "project_dir", json!(p));
                }
                c
            }
            _ => json!({ "name": case_name, "policy": f.policy, "calls": [call] }),
        })
        .collect();
    let doc = json!({ "cases": cases });
    match dialect {
        "toolgate" => {
            if f.mode.is_some() || f.project_dir.is_some() {
                return Err(format!(
                    "{name}: `mode` and `project_dir` are Claude Code's: set `\"dialect\": \"claude-code\"` or remove them"
                ));
            }
            let mut d: DecisionsFile =
                serde_json::from_value(doc).map_err(|e| format!("{name}: {e}"))?;
            d.loosen();
            Ok(run_decisions(name, &d, engines))
        }
        "claude-code" => {
            let mut d: ClaudeFile =
                serde_json::from_value(doc).map_err(|e| format!("{name}: {e}"))?;
            d.loosen();
            Ok(super::claude::run(name, &d, engines))
        }
        other => Err(format!(
            "{name}: unknown dialect `{other}`: use `toolgate` or `claude-code`"
        )),
    }
}

/// A conformance or test file's text made ready for [`super::run_file`]:
/// TOML (`toml`) read into JSON; a test file's `policy` given as a path
/// replaced by the document the file holds, read by `read` (TOML when the
/// path ends in `.toml`); and, with `only`, just the cases or tests whose
/// name contains it (a test without a name is named `test N (tool)` first,
/// so its number does not change).
///
/// # Errors
///
/// The file or the policy does not read, or a TOML file is not a test
/// file.
///
/// ```
/// use toolgate_reference::conformance::prepare;
/// let test = "policy = \"p.json\"\n[[tests]]\ntool = \"bash\"\ndecision = \"ask\"\n";
/// let read = |path: &str| {
///     assert_eq!(path, "p.json");
///     Ok(r#"{"default": "ask"}"#.to_string())
/// };
/// let json = prepare(test, true, None, &read).unwrap();
/// assert!(json.contains(r#""policy":{"default":"ask"}"#));
/// ```
pub fn prepare(
    text: &str,
    toml: bool,
    only: Option<&str>,
    read: &dyn Fn(&str) -> Result<String, String>,
) -> Result<String, String> {
    let mut v: Value = if toml {
        toml::from_str(text).map_err(|e| format!("not TOML: {e}"))?
    } else {
        serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?
    };
    let test_file = is_test_file(&v);
    if toml && !test_file {
        return Err("only a test file (`policy` and `tests`) may be TOML".into());
    }
    if test_file {
        if let Some(path) = v.get("policy").and_then(Value::as_str).map(str::to_string) {
            let doc = read(&path)?;
            let policy: Value = if path.ends_with(".toml") {
                toml::from_str(&doc).map_err(|e| format!("`{path}`: not TOML: {e}"))?
            } else {
                serde_json::from_str(&doc).map_err(|e| format!("`{path}`: not JSON: {e}"))?
            };
            set(&mut v, "policy", policy);
        }
    }
    if let Some(pattern) = only {
        let key = if test_file { "tests" } else { "cases" };
        if let Some(list) = v.get_mut(key).and_then(Value::as_array_mut) {
            for (i, t) in list.iter_mut().enumerate() {
                if test_file && t.get("name").is_none() {
                    let tool = t
                        .get("tool")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string();
                    set(t, "name", json!(format!("test {} ({tool})", i + 1)));
                }
            }
            list.retain(|t| {
                t.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| n.contains(pattern))
            });
        }
    }
    Ok(v.to_string())
}

#[cfg(test)]
mod unit {
    use super::super::{run_file, EngineKind};

    const POLICY: &str = r#""policy": {"default": "ask",
        "matchers": {"bash": {"match": "glob", "field": "command", "split": "shell"}},
        "allow": "bash(git status:*)", "deny": "bash(rm:*)"}"#;

    fn run(tests: &str) -> super::Report {
        let text = format!(r#"{{{POLICY}, "tests": [{tests}]}}"#);
        run_file("t.json", &text, &EngineKind::ALL).unwrap()
    }

    #[test]
    fn only_what_a_test_gives_is_compared() {
        let r = run(
            r#"{"tool": "bash", "args": {"command": "git status"}, "decision": "allow"},
               {"tool": "bash", "args": {"command": "rm -rf /"}, "decision": "deny", "rule": "bash(rm:*)"}"#,
        );
        assert_eq!((r.passed, r.failed), (2, 0), "{:?}", r.failures);
    }

    #[test]
    fn a_failure_is_one_line_naming_every_engine() {
        let r = run(
            r#"{"name": "wrong", "tool": "bash", "args": {"command": "rm x"}, "decision": "allow"}"#,
        );
        assert_eq!((r.passed, r.failed), (0, 1));
        assert_eq!(
            r.failures,
            ["t.json: wrong [decisions]: [reference, compiled, artifact] call 1 (bash): decision deny, want allow"]
        );
    }

    #[test]
    fn a_wrong_rule_or_reason_fails() {
        let r = run(
            r#"{"tool": "bash", "args": {"command": "rm x"}, "decision": "deny", "rule": "bash(rm -rf:*)"},
               {"tool": "bash", "args": {"command": "rm x"}, "decision": "deny", "reason": "nope"}"#,
        );
        assert_eq!((r.passed, r.failed), (0, 2), "{:?}", r.failures);
    }

    #[test]
    fn claude_code_settings_are_a_dialect() {
        let text = r#"{"dialect": "claude-code", "policy": {"permissions": {"deny": ["Bash(rm:*)"]}},
            "tests": [{"tool": "Bash", "args": {"command": "rm -rf build"}, "decision": "deny"},
                      {"tool": "Bash", "args": {"command": "ls"}, "decision": "allow"}]}"#;
        let r = run_file("c.json", text, &EngineKind::ALL).unwrap();
        assert_eq!((r.passed, r.failed), (2, 0), "{:?}", r.failures);
    }

    #[test]
    fn a_policy_path_or_unknown_member_is_an_error() {
        let path = r#"{"policy": "p.json", "tests": []}"#;
        let e = run_file("t.json", path, &EngineKind::ALL).unwrap_err();
        assert!(e.to_string().contains("`p.json` is a path"), "{e}");
        let typo = format!(
            r#"{{{POLICY}, "tests": [{{"tool": "bash", "args": {{}}, "decison": "allow"}}]}}"#
        );
        let e = run_file("t.json", &typo, &EngineKind::ALL).unwrap_err();
        assert!(e.to_string().contains("decison"), "{e}");
    }
}
