//! `claude-shell`: the shell splitter with Claude Code's tool names, and
//! the file operands of the programs it knows checked against the file
//! tools' deny and ask rules.

use crate::call::{Args, Subject};
use crate::registry::Splitter;
use crate::shell::{ShellConfig, ShellSplitter};

/// The shell splitter for Claude Code's `Bash` tool.
///
/// It is [`ShellSplitter`] with redirect targets routed to `Edit` (writes)
/// and `Read` (reads) in their `file_path` member, and the file operands
/// of the programs that read or write files as **constraint** subjects
/// (`cat .env` is checked against `Read`'s deny and ask rules, `rm x`
/// against `Edit`'s, `cp a b` against both; `spec/shell.md` §5.1). Claude
/// Code applies Read and Edit denies to `cat`, `head`, `tail` and `sed`;
/// toolgate to every program of its lists. A file the command names only
/// as a pattern (`cat ~/.ss?/id_rsa`, `grep -r x ~`, `cat $f`) is a
/// subject of `READ_REACH` or `EDIT_REACH`, whose rules (the Read and
/// Edit deny and ask rules, as asks) say whether one of its files could be
/// covered. Relative paths follow `cd` (§5.2).
///
/// ```
/// use toolgate::claude::ClaudeShellSplitter;
/// use toolgate::{Args, Splitter};
/// let s = ClaudeShellSplitter::default();
/// let subjects = s.split("Bash", &Args::from_json(r#"{"command": "cat .env > out"}"#)).unwrap();
/// let tools: Vec<_> = subjects.iter().map(|s| s.tool.as_deref().unwrap_or("Bash")).collect();
/// assert_eq!(tools, ["Bash", "Read", "Edit"]);
/// ```
#[derive(Clone, Debug)]
pub struct ClaudeShellSplitter {
    inner: ShellSplitter,
}

/// The tool a read the command names only as a pattern is decided as.
pub const READ_REACH: &str = "Read.reach";

/// The tool a write the command names only as a pattern is decided as.
pub const EDIT_REACH: &str = "Edit.reach";

impl Default for ClaudeShellSplitter {
    fn default() -> ClaudeShellSplitter {
        ClaudeShellSplitter {
            inner: ShellSplitter::new(ShellConfig {
                redirect_write: Some("Edit".into()),
                redirect_read: Some("Read".into()),
                redirect_field: "file_path".into(),
                file_operands: true,
                reach_read: Some(READ_REACH.into()),
                reach_write: Some(EDIT_REACH.into()),
                ..ShellConfig::default()
            }),
        }
    }
}

impl Splitter for ClaudeShellSplitter {
    fn split(&self, tool: &str, args: &Args) -> Result<Vec<Subject>, crate::error::SplitError> {
        let mut subjects = self.inner.split(tool, args)?;
        fed_by_xargs(&mut subjects);
        if let Some(marker) = cd_then_git(&subjects) {
            subjects.push(marker);
        }
        Ok(subjects)
    }

    fn field(&self) -> Option<&str> {
        self.inner.field()
    }
}

/// The operand a bare `xargs` adds to its command, named only when it
/// runs: any path, absolute included.
pub const XARGS_OPERANDS: &str = "//**";

/// Gives the command a bare `xargs` runs (`xargs cat`, decided as `cat`
/// for allow rules, as Claude Code strips the `xargs`) the operands xargs
/// adds, as [`XARGS_OPERANDS`]: `cat` alone reads standard input, but
/// `xargs cat <<< ~/.ssh/id_rsa` reads the key. An allow rule written for
/// the program with any arguments (`Bash(cat:*)`) still covers it; the
/// built-in read-only approval, which covers operands inside the working
/// directory only, no longer does.
fn fed_by_xargs(subjects: &mut [Subject]) {
    let command = |s: &Subject| {
        (s.tool.is_none())
            .then(|| s.args.str_member("command").map(str::to_string))
            .flatten()
    };
    let mut fed: Vec<String> = Vec::new();
    for s in subjects.iter_mut() {
        let Some(v) = command(s) else { continue };
        if s.constrain {
            if let Some(inner) = v.strip_prefix("xargs ") {
                fed.push(inner.to_string());
            }
            continue;
        }
        if let Some(i) = fed.iter().position(|f| *f == v) {
            fed.swap_remove(i);
            let mut m = serde_json::Map::new();
            m.insert(
                "command".into(),
                serde_json::Value::String(format!("{v} {XARGS_OPERANDS}")),
            );
            s.args = Args::from_value(serde_json::Value::Object(m));
        }
    }
}

/// A constraint subject of value [`CD_THEN_GIT`](super::CD_THEN_GIT) when
/// the command changes directory and runs `git`: git reads the
/// configuration of the repository it finds there, and a repository's
/// configuration can name commands (`core.fsmonitor`), so Claude Code asks
/// about the pair even where each command alone is read-only. The order of
/// the two is not checked: a loop or a function can run the `cd` first.
fn cd_then_git(subjects: &[Subject]) -> Option<Subject> {
    let commands = || {
        subjects
            .iter()
            .filter(|s| s.tool.is_none())
            .filter_map(|s| s.args.str_member("command"))
    };
    let runs = |v: &str, names: &[&str]| {
        v.split(' ').any(|w| {
            let base = w.rsplit('/').next().unwrap_or(w);
            names.contains(&base)
        })
    };
    let cd = commands().any(|v| {
        let first = v.split(' ').next().unwrap_or(v);
        matches!(first, "cd" | "pushd" | "popd")
    });
    if !cd || !commands().any(|v| runs(v, &["git"])) {
        return None;
    }
    let mut m = serde_json::Map::new();
    m.insert(
        "command".into(),
        serde_json::Value::String(super::CD_THEN_GIT.into()),
    );
    Some(Subject {
        args: Args::from_value(serde_json::Value::Object(m)),
        tool: None,
        text: super::CD_THEN_GIT.into(),
        constrain: true,
    })
}
