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
/// subject of [`READ_REACH`] or [`EDIT_REACH`], whose rules (the Read and
/// Edit deny and ask rules, as asks) say whether one of its files could be
/// covered. Relative paths follow `cd` (§5.2).
///
/// ```
/// use toolgate::claude::ClaudeShellSplitter;
/// use toolgate::{Args, Splitter};
/// let s = ClaudeShellSplitter::default();
/// let subjects = s.split("Bash", &Args::from_json(r#"{"command": "cat .env > out"}"#)).unwrap();
/// let tools: Vec<_> = subjects.iter().map(|s| s.tool.as_deref().unwrap_or("Bash")).collect();
/// assert_eq!(tools, ["Bash", "Edit", "Read"]);
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
        self.inner.split(tool, args)
    }
}
