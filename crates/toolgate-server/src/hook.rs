//! Claude Code's PreToolUse hook answered from a loaded artifact, byte for
//! byte as `toolgate hook claude-code --bundle` answers it: the command
//! line calls the same functions, so the two cannot drift apart.

use crate::loaded::{Decider, Loaded};
use toolgate::claude::{answer, hook_verdict, wrong_host, Payload};
use toolgate::Decision;

/// The most JSON values a payload may hold, so the parsed payload stays a
/// small multiple of its length (the command hook's bound).
pub const VALUE_LIMIT: usize = 1_000_000;

/// A hook answer as the command hook prints it: the JSON and a newline.
pub fn answer_line(decision: Decision, reason: &str) -> String {
    format!("{}\n", answer(decision, reason))
}

/// Why `guards` block the `tool_input` of the hook payload `text`, if they
/// do: checked before the policy, as `hook claude-code --guards` checks
/// it. A payload that is not JSON is blocked, saying so.
pub fn blocked_arguments(guards: &toolgate::guards::Guards, text: &str) -> Option<String> {
    let args = match toolgate::json::parse_strict(text) {
        Ok(v) => v
            .get("tool_input")
            .map(ToString::to_string)
            .unwrap_or_default(),
        Err(e) => return Some(format!("the hook input is not JSON: {e}")),
    };
    let o = guards.check_args(&toolgate::Args::from_json(&args));
    (!o.allowed()).then_some(o.reason)
}

/// The answer to a hook payload: a deny for anything that cannot be read
/// or decided.
pub fn answer_payload(loaded: &Loaded, text: &str) -> String {
    if toolgate::json::values_over(text, VALUE_LIMIT) {
        return answer_line(
            Decision::Deny,
            &format!("the hook input holds more than {VALUE_LIMIT} JSON values"),
        );
    }
    if let Some(why) = loaded
        .guards
        .as_deref()
        .and_then(|g| blocked_arguments(g, text))
    {
        return answer_line(Decision::Deny, &why);
    }
    let payload = match Payload::from_json(text) {
        Ok(p) => p,
        Err(e) => return answer_line(Decision::Deny, &e.to_string()),
    };
    let home = crate::loaded::home();
    let project = project_dir(payload.call.cwd.as_deref(), home.as_deref());
    let mut call = payload.call;
    if call.cwd.is_none() {
        call.cwd = project;
    }
    // Settings served as a document are lowered under the payload's mode,
    // as the command hook lowers them; an artifact was lowered when it was
    // compiled, and answers as `hook --bundle` does.
    // A mode Claude Code does not have reads as the default, as the command
    // hook reads it; only the five real modes reach the cache.
    let mode = payload
        .mode
        .as_deref()
        .and_then(toolgate::claude::Mode::parse)
        .map(|(m, _)| m)
        .filter(|m| *m != toolgate::claude::Mode::Default);
    if let (Some(mode), Some(modes)) = (mode, &loaded.modes) {
        return match modes.engine(mode) {
            Ok(e) => {
                if let Some(why) = wrong_host(e.program(), &call.tool) {
                    return answer_line(Decision::Deny, &why);
                }
                let (d, reason) = hook_verdict(&|c| e.would(c), &call, &resolve_link);
                answer_line(d, &reason)
            }
            Err(why) => answer_line(Decision::Deny, &why),
        };
    }
    match &loaded.decider {
        Decider::Rules(e) | Decider::ClaudeCode(e, _) => {
            if let Some(why) = wrong_host(e.program(), &call.tool) {
                return answer_line(Decision::Deny, &why);
            }
            let (d, reason) = hook_verdict(&|c| e.would(c), &call, &resolve_link);
            answer_line(d, &reason)
        }
        Decider::Rubric(_) | Decider::Authensor(_) => answer_line(
            Decision::Deny,
            &format!(
                "the server decides with a {} artifact, which does not answer Claude Code's hooks: serve Claude Code settings or a rule-list artifact",
                loaded.kind
            ),
        ),
    }
}

/// The project directory of a hook call: `$CLAUDE_PROJECT_DIR`, else the
/// nearest directory from `cwd` up (below `home`) that holds Claude Code
/// project settings, else `cwd`.
pub fn project_dir(cwd: Option<&str>, home: Option<&str>) -> Option<String> {
    if let Some(d) = std::env::var("CLAUDE_PROJECT_DIR")
        .ok()
        .filter(|d| d.starts_with('/'))
    {
        return Some(d);
    }
    let cwd = cwd?;
    let mut dir = Some(std::path::Path::new(cwd));
    while let Some(d) = dir {
        if home.is_some_and(|h| std::path::Path::new(h) == d) {
            break;
        }
        let c = d.join(".claude");
        if c.join("settings.json").exists() || c.join("settings.local.json").exists() {
            return Some(d.display().to_string());
        }
        dir = d.parent();
    }
    Some(cwd.to_string())
}

/// The file `path` (absolute) is, every symbolic link followed: the whole
/// path when it exists, else its directory's with the last name joined
/// (a file about to be written). `None` when neither resolves.
pub fn resolve_link(path: &str) -> Option<String> {
    let p = std::path::Path::new(path);
    let real = match std::fs::canonicalize(p) {
        Ok(r) => r,
        Err(_) => {
            let dir = std::fs::canonicalize(p.parent()?).ok()?;
            dir.join(p.file_name()?)
        }
    };
    real.to_str().map(str::to_string)
}
