//! `claude-shell`: the shell splitter with Claude Code's tool names, and
//! the file arguments of the programs it recognises checked against the
//! file tools' deny and ask rules.

use crate::call::{Args, Subject};
use crate::error::SplitError;
use crate::registry::Splitter;
use crate::shell::{ShellConfig, ShellSplitter};
use serde_json::{Map, Value};

/// Programs whose operands are files they read.
const READS: &[&str] = &[
    "cat", "head", "tail", "less", "more", "tac", "nl", "od", "xxd", "hexdump", "strings",
    "base64", "wc", "sort", "uniq", "cut", "grep", "egrep", "fgrep", "rg", "awk", "sed", "diff",
    "cmp", "file", "stat", "bat", "jq", "source", ".", "cp", "mv", "install", "rsync", "scp",
];

/// The most file-operand subjects one command may add; more is an error,
/// which blocks the call.
const MAX_OPERANDS: usize = 256;

/// Programs whose operands are files they write (or remove).
const WRITES: &[&str] = &[
    "tee", "touch", "rm", "rmdir", "mkdir", "truncate", "chmod", "chown", "ln", "shred", "unlink",
    "cp", "mv", "install", "rsync",
];

/// The shell splitter for Claude Code's `Bash` tool.
///
/// It is [`ShellSplitter`] with redirect targets routed to `Edit` (writes)
/// and `Read` (reads) in their `file_path` member, plus one **constraint**
/// subject per operand of a program that reads or writes files (`cat .env`
/// is checked against `Read`'s deny and ask rules, `rm x` against `Edit`'s,
/// `cp a b` against both). Claude Code applies Read and Edit denies to
/// `cat`, `head`, `tail` and `sed`; toolgate to every program of its lists.
/// A leading `$HOME` or `${HOME}` in an operand is read as `~`. Operands
/// with globs or variables are checked as written. More than 256 operands
/// is an error, which blocks the call.
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

impl Default for ClaudeShellSplitter {
    fn default() -> ClaudeShellSplitter {
        ClaudeShellSplitter {
            inner: ShellSplitter::new(ShellConfig {
                redirect_write: Some("Edit".into()),
                redirect_read: Some("Read".into()),
                redirect_field: "file_path".into(),
                ..ShellConfig::default()
            }),
        }
    }
}

fn file_subject(tool: &str, path: &str, text: &str) -> Subject {
    let mut m = Map::new();
    m.insert("file_path".into(), Value::String(path.to_string()));
    Subject {
        args: Args::from_value(Value::Object(m)),
        tool: Some(tool.to_string()),
        text: text.to_string(),
        constrain: true,
    }
}

/// The file operands of one command value: (tool, path).
fn operands(value: &str) -> Vec<(&'static str, String)> {
    let mut words = value
        .split(' ')
        .skip_while(|w| {
            w.split_once('=').is_some_and(|(n, _)| {
                !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
        })
        .peekable();
    let Some(program) = words.next() else {
        return Vec::new();
    };
    let base = program.rsplit('/').next().unwrap_or(program);
    let reads = READS.contains(&base);
    let writes = WRITES.contains(&base);
    let args: Vec<&str> = words.collect();
    let in_place = base == "sed"
        && args
            .iter()
            .any(|a| a.starts_with("-i") || *a == "--in-place");
    let mut out = Vec::new();
    let mut options = true;
    for a in args {
        if options && a == "--" {
            options = false;
            continue;
        }
        if a.is_empty() || (options && a.starts_with('-')) {
            continue;
        }
        let path = if let Some(rest) = a
            .strip_prefix("$HOME")
            .or_else(|| a.strip_prefix("${HOME}"))
        {
            if rest.is_empty() || rest.starts_with('/') {
                format!("~{rest}")
            } else {
                a.to_string()
            }
        } else {
            a.to_string()
        };
        if reads {
            out.push(("Read", path.clone()));
        }
        if writes || in_place {
            out.push(("Edit", path));
        }
    }
    out
}

impl Splitter for ClaudeShellSplitter {
    fn split(&self, tool: &str, args: &Args) -> Result<Vec<Subject>, crate::error::SplitError> {
        let subjects = self.inner.split(tool, args)?;
        let mut extra: Vec<Subject> = Vec::new();
        for s in &subjects {
            if s.tool.is_some() {
                continue;
            }
            let Some(value) = s.args.str_member(&self.inner.config().field) else {
                continue;
            };
            for (t, path) in operands(value) {
                let dup = extra.iter().any(|e| {
                    e.tool.as_deref() == Some(t) && e.args.str_member("file_path") == Some(&path)
                });
                if !dup {
                    if extra.len() >= MAX_OPERANDS {
                        return Err(SplitError::new(format!(
                            "the command has more than {MAX_OPERANDS} file operands"
                        )));
                    }
                    extra.push(file_subject(t, &path, &s.text));
                }
            }
        }
        let mut out = subjects;
        out.extend(extra);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operands_of_file_programs() {
        assert_eq!(operands("cat -n .env"), [("Read", ".env".to_string())]);
        assert_eq!(
            operands("FOO=1 /bin/rm -rf -- -x"),
            [("Edit", "-x".to_string())]
        );
        assert_eq!(
            operands("cp a b"),
            [
                ("Read", "a".to_string()),
                ("Edit", "a".to_string()),
                ("Read", "b".to_string()),
                ("Edit", "b".to_string())
            ]
        );
        assert_eq!(
            operands("cat $HOME/.ssh/id_rsa"),
            [("Read", "~/.ssh/id_rsa".to_string())]
        );
        assert!(operands("python x.py").is_empty());
        assert_eq!(operands("sed -i s/a/b/ f").len(), 4);
    }
}
