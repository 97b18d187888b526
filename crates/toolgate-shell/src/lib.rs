//! The shell splitter: one subject per program a command line would run.
//!
//! agentpolicy leaves splitting a shell command to the host, and every
//! coding agent that wrote its own splitter has been bypassed through it:
//! the matcher and the shell disagreed about what would run, or a limit
//! ended in "allowed". This crate is toolgate's splitter, registered as
//! `"shell"` (`{"match": "glob", "field": "command", "split": "shell"}`).
//! `spec/shell.md` states every rule; this is the map.
//!
//! * [`split_command`] is the pure entry point: a command line in, a list of
//!   [`Piece`]s out, or a [`ShellError`] when the line cannot be analysed.
//! * [`ShellSplitter`] wraps it as a [`Splitter`], turning pieces into
//!   [`Subject`]s for the engine.
//!
//! The parser (`parse`) reads bash's grammar once, left to right: lists,
//! pipelines, compound commands, words with every kind of quoting and
//! expansion, redirects and here-documents. Each substitution is parsed
//! where it stands, so the commands inside it become subjects too. The
//! analysis of one simple command (`analyse`) strips assignments, sees
//! through wrappers and nested shells, and emits the forms deny rules see
//! beside the one allow rules must match; for programs whose rules name a
//! subcommand (`git push`, `npm publish`), `subcommand` holds the table of
//! their global options and gives the readings without them; `programs`
//! holds the table of the options (and scripts) through which a program
//! runs a command, writes a file or reads one (`git -c core.pager=…`,
//! `sort -o`, sed's `w`), each of which becomes a piece of its own.
//! `files` makes the operands of programs that read or write files into
//! pieces of the file tools and follows `cd`, so relative paths resolve
//! where the command runs.
//! The line may run under zsh as well as bash (Claude Code runs the
//! user's shell): `zsh` holds what the reader refuses because the two
//! shells read it differently, and says why.
//!
//! Nothing here panics, loops without consuming input, or grows without a
//! bound: the length, the number of subjects and the depth of nesting are
//! capped, and every cap ends in an error, which blocks the call.
//!
//! Depends on `toolgate-core` alone: `call`, `registry` (the trait it
//! implements) and `quote`. It can be used without the compiler.

#![forbid(unsafe_code)]
#![cfg_attr(
    test,
    allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

mod analyse;
mod expand;
mod files;
mod parse;
mod programs;
mod subcommand;
#[cfg(test)]
mod tests;
mod zsh;

use serde_json::{Map, Value};
use std::fmt;
use toolgate_core::call::{Args, Subject};
use toolgate_core::error::SplitError;

/// Why a [`ShellConfig`] was refused: the first problem found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}
use toolgate_core::registry::Splitter;

/// How a [`ShellSplitter`] reads commands and where it routes redirects.
///
/// ```
/// use toolgate_shell::{split_command, ShellConfig};
/// let cfg = ShellConfig::default();
/// let pieces = split_command("git status && rm -rf /", &cfg).unwrap();
/// let values: Vec<_> = pieces.iter().filter_map(|p| p.value()).collect();
/// assert_eq!(values, ["git status", "rm -rf /"]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellConfig {
    /// The argument member holding the command line (`command`).
    pub field: String,
    /// The tool output-redirect targets are decided against (`edit`);
    /// `None` leaves them unchecked.
    pub redirect_write: Option<String>,
    /// The tool input-redirect targets are decided against (`read`); `None`
    /// leaves them unchecked.
    pub redirect_read: Option<String>,
    /// The member a redirect subject carries its target in (`path`): the
    /// field the file tools' matchers read.
    pub redirect_field: String,
    /// Whether the operands of the programs that read or write files
    /// ([`READS`], [`WRITES`]: `cat .env`, `rm x`) are pieces of the file
    /// tools too, checked against their deny and ask rules (off).
    pub file_operands: bool,
    /// The tool a file the command names only as a pattern (`cat *.env`,
    /// `grep -r x ~`, `cat $f`) is read through: its deny and ask rules
    /// say whether they could match one of the files (`path-reach`).
    /// `None` leaves such reads unchecked.
    pub reach_read: Option<String>,
    /// As [`ShellConfig::reach_read`], for files written.
    pub reach_write: Option<String>,
    /// The longest command analysed, in bytes (10,000); a longer one is an
    /// error.
    pub max_len: usize,
    /// The most subjects a command may have (64), constraint forms not
    /// counted; more is an error.
    pub max_subjects: usize,
    /// The deepest nesting analysed (50 levels of substitutions, compound
    /// commands, nested shells and wrappers); deeper is an error.
    pub max_depth: usize,
    /// Variables whose leading assignment an allow rule may ignore
    /// (`NODE_ENV=test npm test` is allowed by `bash(npm test:*)`). Names
    /// that change what a program loads or runs (`PATH`, `LD_*`, `GIT_*`,
    /// …; see [`never_safe`]) are ignored here.
    pub safe_env: Vec<String>,
}

/// The variables on the default safe list: they change how a program
/// reports, never what it loads or runs.
pub const DEFAULT_SAFE_ENV: &[&str] = &[
    "CI",
    "DEBUG",
    "FORCE_COLOR",
    "LANG",
    "LC_ALL",
    "NODE_ENV",
    "NO_COLOR",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONUNBUFFERED",
    "RUST_BACKTRACE",
    "RUST_LOG",
    "TERM",
    "TZ",
];

impl Default for ShellConfig {
    fn default() -> ShellConfig {
        ShellConfig {
            field: "command".into(),
            redirect_write: Some("edit".into()),
            redirect_read: Some("read".into()),
            redirect_field: "path".into(),
            file_operands: false,
            reach_read: None,
            reach_write: None,
            max_len: 10_000,
            max_subjects: 64,
            max_depth: 50,
            safe_env: DEFAULT_SAFE_ENV.iter().map(|s| s.to_string()).collect(),
        }
    }
}

impl ShellConfig {
    /// Whether an assignment to `name` may be ignored by allow rules: it is
    /// on the safe list and not [`never_safe`].
    pub fn is_safe_env(&self, name: &str) -> bool {
        !never_safe(name) && self.safe_env.iter().any(|s| s == name)
    }

    /// Checks the configuration: a safe-list entry that is never safe is
    /// reported (it would be ignored), as are limits of zero.
    ///
    /// # Errors
    ///
    /// A lowercase message naming the first problem.
    pub fn check(&self) -> Result<(), ConfigError> {
        self.check_text().map_err(ConfigError)
    }

    fn check_text(&self) -> Result<(), String> {
        if let Some(bad) = self.safe_env.iter().find(|s| never_safe(s)) {
            return Err(format!(
                "`{bad}` can change what a program loads or runs, so it is never on the safe list"
            ));
        }
        if self.max_len == 0 || self.max_subjects == 0 || self.max_depth == 0 {
            return Err(
                "the limits `max_len`, `max_subjects` and `max_depth` must be above 0".into(),
            );
        }
        Ok(())
    }
}

/// Variables an assignment prefix to which always needs an allow rule that
/// spells it: they change which program runs, what it loads, or what it
/// executes on the side.
pub fn never_safe(name: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "LD_",
        "DYLD_",
        "GIT_",
        "BASH_FUNC_",
        "NPM_CONFIG_",
        "CARGO_",
    ];
    const NAMES: &[&str] = &[
        "BASHOPTS",
        "BASH_ENV",
        "BROWSER",
        "CDPATH",
        "EDITOR",
        "ENV",
        "GLOBIGNORE",
        "GOFLAGS",
        "HOME",
        "IFS",
        "JAVA_TOOL_OPTIONS",
        "LESSOPEN",
        "MANPAGER",
        "NODE_OPTIONS",
        "PAGER",
        "PATH",
        "PERL5LIB",
        "PERL5OPT",
        "PROMPT_COMMAND",
        "PS4",
        "PYTHONHOME",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "RUBYLIB",
        "RUBYOPT",
        "RUSTC_WRAPPER",
        "RUSTFLAGS",
        "SHELL",
        "SHELLOPTS",
        "VISUAL",
        "_JAVA_OPTIONS",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p)) || NAMES.contains(&name)
}

/// What a piece is decided as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A simple command, decided against the shell tool's rules: deny, ask,
    /// allow, default.
    Command,
    /// Another form of a simple command (assignments stripped, the program's
    /// base name, invisible characters removed, a transparent wrapper):
    /// decided against the shell tool's deny and ask rules only.
    Constraint,
    /// The target of an output redirect, decided against the file-writing
    /// tool.
    Write,
    /// The target of an input redirect, decided against the file-reading
    /// tool.
    Read,
    /// A file a program reads as its operand (`cat .env`): decided against
    /// the file-reading tool's deny and ask rules only.
    ReadOperand,
    /// A file a program writes or removes as its operand (`rm x`): decided
    /// against the file-writing tool's deny and ask rules only.
    WriteOperand,
}

pub use files::{MAX_OPERANDS, READS, WRITES};

/// What a piece's matchers read.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Form {
    /// The same as the text.
    Text,
    /// A value of its own.
    Own(String),
    /// Nothing: the construct could not be analysed, so no specifier can
    /// match it and only a bare rule or the default decides it.
    Opaque(String),
    /// The files a pattern names (spec/shell.md §5.1), for the reach tool.
    Pattern(String),
}

/// One thing a command line is decided on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    /// How it is decided.
    pub kind: Kind,
    /// What a prompt shows and a reason quotes: the simple command as it
    /// would run (quotes removed, blanks folded), with invisible and
    /// bidirectional characters written as `\u{…}`; for a redirect, the
    /// operator and its target (`> out.txt`).
    pub text: String,
    form: Form,
}

impl Piece {
    pub(crate) fn new(kind: Kind, text: String) -> Piece {
        Piece {
            kind,
            text,
            form: Form::Text,
        }
    }

    pub(crate) fn with_value(kind: Kind, text: String, value: String) -> Piece {
        let form = if value == text {
            Form::Text
        } else {
            Form::Own(value)
        };
        Piece { kind, text, form }
    }

    pub(crate) fn opaque(kind: Kind, text: String, why: String) -> Piece {
        Piece {
            kind,
            text,
            form: Form::Opaque(why),
        }
    }

    pub(crate) fn of_pattern(kind: Kind, text: String, query: String) -> Piece {
        Piece {
            kind,
            text,
            form: Form::Pattern(query),
        }
    }

    /// What the matchers read: the command form, or the file's path.
    /// `None` for a piece that could not be analysed or names its files by
    /// a pattern.
    pub fn value(&self) -> Option<&str> {
        match &self.form {
            Form::Text => Some(&self.text),
            Form::Own(v) => Some(v),
            Form::Opaque(_) | Form::Pattern(_) => None,
        }
    }

    /// The pattern naming a file piece's files, when the line names them
    /// only so: `~/.ss?/id_rsa`, `src/**` for a tree read recursively,
    /// `//**` for a value known only when the line runs.
    pub fn pattern(&self) -> Option<&str> {
        match &self.form {
            Form::Pattern(q) => Some(q),
            _ => None,
        }
    }

    /// Why the piece could not be analysed, when it could not.
    pub fn opaque_reason(&self) -> Option<&str> {
        match &self.form {
            Form::Opaque(why) => Some(why),
            _ => None,
        }
    }
}

/// Why a command line could not be analysed at all. The splitter turns it
/// into an error, which blocks the call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellError {
    /// The class of failure.
    pub kind: ErrorKind,
    /// A lowercase message naming what the command wrote, in backticks.
    pub message: String,
}

/// The classes of [`ShellError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The command is not valid shell syntax (an unterminated quote or
    /// substitution, an unexpected token).
    Syntax,
    /// The command is longer than [`ShellConfig::max_len`].
    TooLong,
    /// The command has more subjects than [`ShellConfig::max_subjects`].
    TooManySubjects,
    /// The command nests deeper than [`ShellConfig::max_depth`].
    TooDeep,
    /// The command holds a NUL byte, which no shell passes on.
    Nul,
}

impl fmt::Display for ShellError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ShellError {}

impl ShellError {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> ShellError {
        ShellError {
            kind,
            message: message.into(),
        }
    }
}

/// Splits a command line into the pieces it is decided on: one per simple
/// command it would run (at every depth), the other forms deny rules see,
/// and one per redirect target.
///
/// ```
/// use toolgate_shell::{split_command, Kind, ShellConfig};
/// let cfg = ShellConfig::default();
/// let p = split_command("FOO=1 /bin/rm -rf / > log", &cfg).unwrap();
/// let got: Vec<_> = p.iter().map(|p| (p.kind, p.value().unwrap_or("?"))).collect();
/// assert_eq!(got, [
///     (Kind::Command, "FOO=1 /bin/rm -rf /"),
///     (Kind::Constraint, "/bin/rm -rf /"),
///     (Kind::Constraint, "rm -rf /"),
///     (Kind::Write, "log"),
/// ]);
/// ```
///
/// # Errors
///
/// A [`ShellError`] when the line is not valid shell syntax or exceeds a
/// limit of `cfg`; `spec/shell.md` lists every case.
pub fn split_command(command: &str, cfg: &ShellConfig) -> Result<Vec<Piece>, ShellError> {
    if command.len() > cfg.max_len {
        return Err(ShellError::new(
            ErrorKind::TooLong,
            format!(
                "the command is {} bytes long, over the limit of {}",
                command.len(),
                cfg.max_len
            ),
        ));
    }
    // The quick path reads every byte and takes none that is NUL, so the
    // search for one is left to the lines it does not take.
    if let Some(pieces) = parse::quick_path(command, cfg) {
        return Ok(pieces);
    }
    if memchr::memchr(0, command.as_bytes()).is_some() {
        return Err(ShellError::new(
            ErrorKind::Nul,
            "the command holds a NUL byte, which no shell would pass on",
        ));
    }
    parse::split(command, cfg)
}

/// The shell splitter: [`split_command`] as a [`Splitter`].
///
/// A piece becomes a [`Subject`]: a command or constraint form carries
/// `{field: value}` for the called tool; a redirect target carries
/// `{redirect_field: path}` for the file tool; a piece that could not be
/// analysed carries `{"unanalysed": why}`, which no specifier matches.
/// A call whose field is missing or not a string is one subject, its own
/// arguments, as if the tool had no splitter.
#[derive(Clone, Debug, Default)]
pub struct ShellSplitter {
    cfg: ShellConfig,
}

impl ShellSplitter {
    /// A splitter with `cfg`.
    pub fn new(cfg: ShellConfig) -> ShellSplitter {
        ShellSplitter { cfg }
    }

    /// The configuration.
    pub fn config(&self) -> &ShellConfig {
        &self.cfg
    }

    fn subject(&self, p: Piece) -> Option<Subject> {
        let cfg = &self.cfg;
        let (target, field, constrain) = match (p.kind, &p.form) {
            (Kind::Command, _) => (None, cfg.field.as_str(), false),
            (Kind::Constraint, _) => (None, cfg.field.as_str(), true),
            (Kind::Write | Kind::WriteOperand, Form::Pattern(_)) => (
                Some(cfg.reach_write.clone()?),
                cfg.redirect_field.as_str(),
                true,
            ),
            (Kind::Read | Kind::ReadOperand, Form::Pattern(_)) => (
                Some(cfg.reach_read.clone()?),
                cfg.redirect_field.as_str(),
                true,
            ),
            (Kind::Write | Kind::WriteOperand, _) => (
                Some(cfg.redirect_write.clone()?),
                cfg.redirect_field.as_str(),
                p.kind == Kind::WriteOperand,
            ),
            (Kind::Read | Kind::ReadOperand, _) => (
                Some(cfg.redirect_read.clone()?),
                cfg.redirect_field.as_str(),
                p.kind == Kind::ReadOperand,
            ),
        };
        let mut m = Map::new();
        match &p.form {
            Form::Opaque(why) => {
                if field != "unanalysed" {
                    m.insert("unanalysed".into(), Value::String(why.clone()));
                }
            }
            Form::Own(v) | Form::Pattern(v) => {
                m.insert(field.into(), Value::String(v.clone()));
            }
            Form::Text => {
                m.insert(field.into(), Value::String(p.text.clone()));
            }
        }
        Some(Subject {
            args: Args::from_value(Value::Object(m)),
            tool: target,
            text: p.text,
            constrain,
        })
    }
}

impl Splitter for ShellSplitter {
    fn split(&self, _tool: &str, args: &Args) -> Result<Vec<Subject>, SplitError> {
        let Some(command) = args.str_member(&self.cfg.field) else {
            return Ok(vec![Subject::new(args.clone(), "")]);
        };
        let pieces = split_command(command, &self.cfg).map_err(|e| SplitError::new(e.message))?;
        Ok(pieces.into_iter().filter_map(|p| self.subject(p)).collect())
    }

    fn field(&self) -> Option<&str> {
        Some(&self.cfg.field)
    }
}
