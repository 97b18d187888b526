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
    let project_of_call = project.clone();
    let payload_mode = payload.mode.clone();
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
    // The answer of an engine's verdicts, with its links and the nested
    // repository checked.
    let decide = |would: &dyn Fn(&toolgate::Call) -> toolgate::Verdict| {
        let (d, reason) = hook_verdict(
            would,
            &call,
            home.as_deref(),
            project_of_call.as_deref(),
            &resolve_link,
            &list_dir,
        );
        answer_line(d, &reason)
    };
    if let (Some(mode), Some(modes)) = (mode, &loaded.modes) {
        return match modes.engine(mode) {
            Ok(e) => {
                if let Some(why) = wrong_host(e.program(), &call.tool) {
                    return answer_line(Decision::Deny, &why);
                }
                decide(&|c| e.would(c))
            }
            Err(why) => answer_line(Decision::Deny, &why),
        };
    }
    match &loaded.decider {
        Decider::Rules(e) | Decider::ClaudeCode(e, _) => {
            if let Some(why) = wrong_host(e.program(), &call.tool) {
                return answer_line(Decision::Deny, &why);
            }
            // An artifact compiled from settings answers only sessions of
            // the mode, project and home it was lowered for, as the
            // command hook's `--bundle` does.
            if loaded.modes.is_none() {
                if let Some(why) = toolgate::claude::Lowered::refuses_session(
                    &e.sources(),
                    payload_mode.as_deref(),
                    project_of_call.as_deref(),
                    home.as_deref(),
                ) {
                    return answer_line(Decision::Deny, &why);
                }
            }
            decide(&|c| e.would(c))
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

/// Symbolic links followed in one path before it is given up on, as the
/// kernel's `ELOOP` limit.
const MAX_LINKS: usize = 40;

/// The names in the directory `dir`, at most one more than
/// [`toolgate::claude::LISTED`] (so that a caller can tell a listing it
/// must not read as complete) and none when it cannot be read: what a glob
/// in a path the hook decides may match, and where a repository may be.
pub fn list_dir(dir: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .take(toolgate::claude::LISTED + 1)
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The file `path` (absolute) is, walked as the kernel walks it: name by
/// name from the root, a symbolic link replaced by its target (relative to
/// the directory holding it) even when that target does not exist, `..`
/// taken on what is resolved so far, so `lnk/../x` is beside the link's
/// target. A name that does not exist is kept as written, and the names
/// after it too (a file about to be written, or directories `mkdir -p`
/// would make). `None` for a relative path, a loop of links, or a name
/// that is not UTF-8.
///
/// ```
/// # use toolgate_server::hook::resolve_link;
/// assert_eq!(resolve_link("/no/such/dir/../file").as_deref(), Some("/no/such/file"));
/// assert_eq!(resolve_link("relative"), None);
/// ```
pub fn resolve_link(path: &str) -> Option<String> {
    use std::path::{Component, PathBuf};
    let p = std::path::Path::new(path);
    if !p.is_absolute() {
        return None;
    }
    // The names of a path, its root left out.
    let names = |p: &std::path::Path| -> Vec<std::ffi::OsString> {
        p.components()
            .filter(|c| !matches!(c, Component::RootDir | Component::Prefix(_)))
            .map(|c| c.as_os_str().to_owned())
            .collect()
    };
    let mut pending: std::collections::VecDeque<std::ffi::OsString> = names(p).into();
    let mut out = PathBuf::from("/");
    let mut links = 0;
    while let Some(name) = pending.pop_front() {
        if name == "." {
            continue;
        }
        if name == ".." {
            out.pop();
            continue;
        }
        let next = out.join(&name);
        match std::fs::symlink_metadata(&next) {
            Ok(m) if m.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return None;
                }
                let target = std::fs::read_link(&next).ok()?;
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                for n in names(&target).into_iter().rev() {
                    pending.push_front(n);
                }
            }
            _ => out = next,
        }
    }
    out.to_str().map(str::to_string)
}

#[cfg(all(test, unix))]
mod tests {
    use super::resolve_link;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_path_is_walked_as_the_kernel_walks_it() {
        let dir = std::env::temp_dir().join(format!("tg-resolve-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let Ok(()) = std::fs::create_dir_all(dir.join("repo/src")) else {
            return;
        };
        let Some(root) = std::fs::canonicalize(&dir)
            .ok()
            .and_then(|d| d.to_str().map(str::to_string))
        else {
            return;
        };
        let made = [
            symlink(
                format!("{root}/repo/.git/hooks/pre-commit"),
                dir.join("repo/src/dangle"),
            ),
            symlink("../.claude", dir.join("repo/src/cl")),
            symlink(format!("{root}/home/.ssh"), dir.join("repo/src/keys")),
            symlink("loop", dir.join("repo/src/loop")),
        ];
        assert!(made.iter().all(Result::is_ok), "{made:?}");
        let r = |p: &str| resolve_link(&format!("{root}/{p}"));
        let at = |p: &str| Some(format!("{root}/{p}"));
        // A dangling last link: the file a write through it creates.
        assert_eq!(r("repo/src/dangle"), at("repo/.git/hooks/pre-commit"));
        // A relative link to a directory, names below it not made yet.
        assert_eq!(
            r("repo/src/cl/commands/x.md"),
            at("repo/.claude/commands/x.md")
        );
        // `..` after a link is taken beside its target.
        assert_eq!(r("repo/src/keys/../.ssh/id_rsa"), at("home/.ssh/id_rsa"));
        // No link: the path as written, cleaned.
        assert_eq!(r("repo/./src//a/../b"), at("repo/src/b"));
        assert_eq!(r("repo/src/loop"), None);
        assert_eq!(resolve_link("repo/src"), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
