//! The PreToolUse hook's payload and answer, and the call intake Claude
//! Code's tools need.

use crate::call::{Args, Call};
use crate::decision::{Decision, Verdict};
use crate::runtime::Program;
use serde_json::{json, Value};

/// A PreToolUse payload, read.
#[derive(Clone, Debug, PartialEq)]
pub struct Payload {
    /// The call: `tool_name`, `tool_input`, `tool_use_id` and `cwd`.
    pub call: Call,
    /// `permission_mode`, when the payload names one.
    pub mode: Option<String>,
    /// `session_id`, when the payload names one.
    pub session: Option<String>,
}

impl Payload {
    /// Reads a payload: a JSON object with `tool_name` (a string),
    /// `tool_input`, and optionally `cwd`, `permission_mode`, `session_id`,
    /// `tool_use_id` and `hook_event_name` (which must be `PreToolUse`);
    /// other members are ignored (`transcript_path` among them), except
    /// those that name the tool or its arguments another way (`tool`,
    /// `args`, `name`, `arguments`, `input`, `parameters`, `function`, …:
    /// [`crate::call::one_spelling`]), which are refused. Duplicate keys
    /// are refused at every level.
    ///
    /// ```
    /// use toolgate::claude::Payload;
    /// let p = Payload::from_json(r#"{"session_id": "s", "cwd": "/repo", "hook_event_name": "PreToolUse",
    ///     "tool_name": "Bash", "tool_input": {"command": "ls"}, "permission_mode": "default"}"#)?;
    /// assert_eq!(p.call.tool, "Bash");
    /// assert_eq!(p.call.cwd.as_deref(), Some("/repo"));
    /// # Ok::<(), toolgate::error::IntakeError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A message naming what is missing or malformed.
    pub fn from_json(text: &str) -> Result<Payload, crate::error::IntakeError> {
        Payload::read(text).map_err(crate::error::IntakeError::from)
    }

    fn read(text: &str) -> Result<Payload, String> {
        let v = crate::json::parse_strict(text)
            .map_err(|e| format!("the hook input is not JSON: {e}"))?;
        let Value::Object(mut m) = v else {
            return Err("the hook input is not a JSON object".into());
        };
        crate::call::one_spelling(m.keys().map(String::as_str), "tool_name", "tool_input")?;
        let text_member = |m: &mut serde_json::Map<String, Value>, k: &str| match m.remove(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(format!(
                "`{k}` in the hook input must be a string, not `{other}`"
            )),
        };
        if let Some(ev) = text_member(&mut m, "hook_event_name")? {
            if ev != "PreToolUse" {
                return Err(format!(
                    "the hook input is a `{ev}` event; install `toolgate hook claude-code` under `PreToolUse`"
                ));
            }
        }
        let mode = text_member(&mut m, "permission_mode")?;
        let session = text_member(&mut m, "session_id")?;
        let tool = match m.remove("tool_name") {
            Some(Value::String(s)) if !s.is_empty() => s,
            Some(_) => {
                return Err("`tool_name` in the hook input must be a non-empty string".into())
            }
            None => return Err("the hook input has no `tool_name`".into()),
        };
        let args = match m.remove("tool_input") {
            Some(v) => Args::from_value(v),
            None => return Err("the hook input has no `tool_input`".into()),
        };
        let call = Call {
            tool,
            args,
            run_id: String::new(),
            call_id: text_member(&mut m, "tool_use_id")?.unwrap_or_default(),
            confined: None,
            scope: None,
            cwd: text_member(&mut m, "cwd")?,
        };
        Ok(Payload {
            call: prepare_call(call),
            mode,
            session,
        })
    }
}

/// What Claude Code's tools do with a call before running it, applied
/// before deciding: `Grep`, `Glob` and `LS` without a `path` search the
/// working directory, so they are decided as calls with `path` `.`; a
/// `Skill`'s name is trimmed and loses a leading `/`, as Claude Code names
/// the skill it runs; an `Agent` or `Task` call without `subagent_type`
/// starts the `general-purpose` subagent; a `Glob` pattern that leaves its
/// directory (absolute, under `~`, through `..`) searches where its
/// literal directories lead, which becomes the call's `path`.
///
/// ```
/// use toolgate::claude::prepare_call;
/// use toolgate::Call;
/// let c = prepare_call(Call::new("Grep", r#"{"pattern": "TODO"}"#));
/// assert_eq!(c.args.str_member("path"), Some("."));
/// let c = prepare_call(Call::new("Skill", r#"{"skill": " /deploy"}"#));
/// assert_eq!(c.args.str_member("skill"), Some("deploy"));
/// let c = prepare_call(Call::new("Glob", r#"{"pattern": "/home/u/.ssh/*"}"#));
/// assert_eq!(c.args.str_member("path"), Some("/home/u/.ssh"));
/// let c = prepare_call(Call::new("Glob", r#"{"pattern": "../x/*.rs", "path": "src"}"#));
/// assert_eq!(c.args.str_member("path"), Some("src/../x"));
/// let c = prepare_call(Call::new("Agent", r#"{"prompt": "x"}"#));
/// assert_eq!(c.args.str_member("subagent_type"), Some("general-purpose"));
/// ```
pub fn prepare_call(mut call: Call) -> Call {
    // The arguments with `key` set to `value`, when they are an object.
    fn set(call: &mut Call, key: &str, value: String) {
        if let Some(Value::Object(m)) = call.args.value() {
            let mut m = m.clone();
            m.insert(key.into(), Value::String(value));
            call.args = Args::from_value(Value::Object(m));
        }
    }
    if call.tool == "Skill" {
        // Claude Code runs `/deploy` and ` deploy ` as the skill `deploy`
        // and matches its rules against that name.
        if let Some(name) = call.args.str_member("skill") {
            let t = name.trim();
            let t = t.strip_prefix('/').unwrap_or(t);
            if t != name {
                let t = t.to_string();
                set(&mut call, "skill", t);
            }
        }
    }
    if matches!(call.tool.as_str(), "Agent" | "Task") {
        // A call that names no subagent starts the general-purpose one, so
        // `Agent(general-purpose)` rules meet it.
        if let Some(Value::Object(m)) = call.args.value() {
            if matches!(m.get("subagent_type"), None | Some(Value::Null)) {
                set(&mut call, "subagent_type", "general-purpose".into());
            }
        }
    }
    if call.tool == "Glob" {
        // A pattern that leaves the search directory (`/home/u/.ssh/*`,
        // `~/x/*`, `../*`) searches where its literal directories lead:
        // that directory is the call's path, as Read rules read it (a
        // review listed `~/.ssh` under a deny of it).
        if let Some(pattern) = call.args.str_member("pattern") {
            let leaves = pattern.starts_with('/')
                || pattern.starts_with('~')
                || pattern.split('/').any(|c| c == "..");
            if leaves {
                let cut = pattern.find(['*', '?', '[', '{']).unwrap_or(pattern.len());
                let dir = pattern
                    .get(..cut)
                    .and_then(|h| h.rfind('/').map(|i| h.get(..i.max(1)).unwrap_or("/")))
                    .unwrap_or(".");
                let base = match call.args.str_member("path") {
                    Some(p) if !dir.starts_with('/') && !dir.starts_with('~') => {
                        format!("{}/{dir}", p.trim_end_matches('/'))
                    }
                    _ => dir.to_string(),
                };
                set(&mut call, "path", base);
            }
        }
    }
    if matches!(call.tool.as_str(), "Grep" | "Glob" | "LS") {
        if let Some(Value::Object(m)) = call.args.value() {
            if matches!(m.get("path"), None | Some(Value::Null)) {
                set(&mut call, "path", ".".into());
            }
        }
    }
    call
}

/// The hook's answer: `hookSpecificOutput` with the decision and the reason.
///
/// ```
/// use toolgate::claude::answer;
/// use toolgate::Decision;
/// let a = answer(Decision::Deny, "denied by Bash(rm *)");
/// assert_eq!(a["hookSpecificOutput"]["permissionDecision"], "deny");
/// ```
pub fn answer(decision: Decision, reason: &str) -> Value {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision.as_str(),
            "permissionDecisionReason": format!("toolgate: {reason}"),
        }
    })
}

/// The hook's reason for a verdict: the verdict's, and the settings file
/// behind its rule (Claude Code's own rules name no file).
pub fn hook_reason(v: &Verdict) -> String {
    match v.rule.as_ref().map(|r| r.source.as_str()) {
        Some(s) if !s.is_empty() && s != "claude-code" => format!("{} ({s} settings)", v.reason),
        _ => v.reason.clone(),
    }
}

/// Why `tool`, a name Claude Code sent, cannot be decided by `program`: the
/// policy declares the tool under another case (`bash` for `Bash`), a
/// policy written for another host. Its rules would never apply and the
/// call would get the default, which may be allow.
pub fn wrong_host(program: &Program<'_>, tool: &str) -> Option<String> {
    if program.find_tool(tool).is_some() {
        return None;
    }
    let declared = (0..program.n_tools())
        .map(|i| program.tool_name(i))
        .find(|n| n.eq_ignore_ascii_case(tool))?;
    Some(format!(
        "the policy declares `{declared}`, which never matches Claude Code's `{tool}`: declare the matcher as `{tool}` (or compile Claude Code settings) so its rules apply"
    ))
}

/// The hook's decision and reason for `call`: its verdict, or, when a path
/// it names is a symbolic link (`resolve` follows links; the library does
/// no I/O, so its caller does), the strictest verdict of the files the
/// links lead to; `home` expands `~` as the rules expand it. A `git` that
/// would be allowed in a repository nested in `project` asks
/// ([`nested_repository`]). The command hook and the server's `http` hook
/// both answer with this, so the two cannot drift apart.
pub fn hook_verdict(
    would: &dyn Fn(&Call) -> Verdict,
    call: &Call,
    home: Option<&str>,
    project: Option<&str>,
    resolve: &dyn Fn(&str) -> Option<String>,
    list: &dyn Fn(&str) -> Vec<String>,
) -> (Decision, String) {
    let v = would(call);
    let mut out = (v.decision, hook_reason(&v));
    // Every link is decided: the strictest answer stands, not the first
    // stricter one (an ask for one link must not hide a deny for another).
    for link in super::linked_calls(call, home, resolve, list) {
        let w = would(&link.call);
        if w.decision > out.0 {
            let why = format!(
                "`{}` is a symbolic link to `{}`: {}",
                link.named,
                link.target,
                hook_reason(&w)
            );
            out = (w.decision, why);
        }
    }
    if out.0 == Decision::Allow {
        if let Some(why) = nested_repository(call, project, list) {
            return (Decision::Ask, why);
        }
    }
    out
}

/// The most names of a directory the hook's checks look at; a listing
/// longer than this (its caller returns one more) is not read as complete.
pub const LISTED: usize = 4096;

/// Why `git` in a `Bash` call may run another repository's configuration:
/// the working directory lies inside the project, in a directory (or below
/// one) that holds a repository of its own, a `.git` or a bare one
/// (`HEAD` beside `objects`, `refs` or `commondir`), whose
/// `core.fsmonitor` and the like run commands. A cloned project can ship
/// one, and `cd` persists between
/// calls, so `cd evil` and then `git status` ran `evil/config`'s command (a
/// review); Claude Code asks about `git` after `cd` in one command for the
/// same reason.
pub fn nested_repository(
    call: &Call,
    project: Option<&str>,
    list: &dyn Fn(&str) -> Vec<String>,
) -> Option<String> {
    if call.tool != "Bash" {
        return None;
    }
    // Quotes and backslashes dropped first: `g''it` is `git` to the shell.
    let command: String = call
        .args
        .str_member("command")?
        .chars()
        .filter(|c| !matches!(c, '\'' | '"' | '\\'))
        .collect();
    let runs_git = command
        .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-')))
        .any(|w| w == "git" || w.ends_with("/git"));
    if !runs_git {
        return None;
    }
    let project = project?.trim_end_matches('/');
    let cwd = call.cwd.as_deref()?.trim_end_matches('/');
    let mut dir = cwd.strip_prefix(project).filter(|r| r.starts_with('/'))?;
    loop {
        let here = format!("{project}{dir}");
        let names = list(&here);
        let has = |n: &str| names.iter().any(|x| x == n);
        // A gitdir needs `HEAD` and its objects and refs, or a `commondir`
        // naming where they are; a directory too large to list is taken
        // for one (a review hid `.git` past the listing's end).
        let gitdir = has("HEAD") && (has("objects") || has("refs") || has("commondir"));
        if has(".git") || gitdir || names.len() > LISTED {
            return Some(format!(
                "`git` runs in `{cwd}`, inside `{here}`, a repository of its own within the project: its configuration can run commands, so this asks as `git` after `cd` does"
            ));
        }
        match dir.rfind('/') {
            Some(0) | None => return None,
            Some(i) => dir = dir.get(..i)?,
        }
    }
}

/// Claude Code's answer to a PostToolUse hook: `{}` when there is nothing
/// to say; with a `block` reason, the tool's output is withheld and the
/// reason (and `context`, as additional context) goes to the model instead.
pub fn post_tool_use_answer(block: Option<&str>, context: Option<&str>) -> Value {
    match block {
        None => json!({}),
        Some(reason) => {
            let mut v = serde_json::Map::new();
            v.insert("decision".into(), json!("block"));
            v.insert("reason".into(), json!(reason));
            if let Some(c) = context {
                v.insert(
                    "hookSpecificOutput".into(),
                    json!({"hookEventName": "PostToolUse", "additionalContext": c}),
                );
            }
            Value::Object(v)
        }
    }
}

/// Claude Code's answer to a UserPromptSubmit hook: `{}`, or a block that
/// keeps the prompt from the model and shows the reason to the user.
pub fn user_prompt_answer(block: Option<&str>) -> Value {
    match block {
        None => json!({}),
        Some(reason) => json!({"decision": "block", "reason": reason}),
    }
}

#[cfg(test)]
mod tests {
    use super::Payload;

    #[test]
    fn a_payload_naming_the_tool_or_its_input_twice_is_refused() {
        let base = r#""session_id": "s", "transcript_path": "/t", "cwd": "/repo", "hook_event_name": "PreToolUse", "permission_mode": "default", "tool_name": "Read", "tool_input": {"file_path": "/repo/a"}"#;
        assert!(Payload::from_json(&format!("{{{base}}}")).is_ok());
        for extra in [
            r#""tool": "Bash""#,
            r#""args": {"command": "rm -rf /"}"#,
            r#""name": "Bash""#,
            r#""arguments": "{}""#,
            r#""input": {}"#,
            r#""parameters": {}"#,
            r#""function": {"name": "Bash"}"#,
        ] {
            let e = Payload::from_json(&format!("{{{base}, {extra}}}"))
                .err()
                .map(|e| e.to_string());
            assert!(
                e.as_deref()
                    .is_some_and(|e| e.starts_with("the call names its ")),
                "{extra}: {e:?}"
            );
        }
        // A NUL in the input leaves the arguments unreadable: the call is
        // denied when it is decided.
        let p = Payload::from_json(
            r#"{"tool_name": "Read", "tool_input": {"file_path": "/etc/shadow\u0000.txt"}}"#,
        );
        assert!(p.is_ok_and(|p| p.call.intake_error().is_some()));
    }
}
