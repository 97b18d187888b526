//! Claude Code front end: settings files as a policy, and the PreToolUse
//! hook's payload and answer.
//!
//! [`load`] reads Claude Code settings files as they are (their
//! `permissions` member: `allow`, `ask`, `deny`, `defaultMode`,
//! `additionalDirectories`; every other member is ignored) and lowers them
//! into a [`Policy`]: one ranked source per file in Claude Code's order
//! (managed, command line, local project, shared project, user), the
//! project files untrusted unless the caller trusts them, the tool table of
//! Claude Code's built-in tools with the `claude-bash`, `path` and `domain`
//! kinds ([`crate::kinds`]) and the `claude-shell` splitter
//! ([`ClaudeShellSplitter`]), and a built-in source holding what the
//! permission mode allows and what Claude Code always asks about.
//!
//! Allow rules naming MCP tools by glob (`mcp__github`,
//! `mcp__github__get_*`), which agentpolicy refuses, become the policy's
//! server-bounded globs ([`crate::policy::ServerAllow`]): the last allow
//! rules, which the tables hold like any other. Rules toolgate cannot read
//! are skipped in the allow list and applied to every call of their tool
//! in the deny and ask lists, each with a warning. `spec/claude-code.md` states every rule and every
//! difference from Claude Code.
//!
//! The library does no I/O: the caller reads the files and names the home
//! and project directories. Depends on `policy`, `kinds`, `shell` and
//! `json`.

mod hook;
mod links;
mod rules;
mod shell;

pub use hook::{
    answer, hook_reason, hook_verdict, nested_repository, post_tool_use_answer, prepare_call,
    user_prompt_answer, wrong_host, Payload, LISTED,
};
pub use links::{linked_calls, Link};
pub use rules::{EDIT_FAMILY, READ_FAMILY};
pub use shell::ClaudeShellSplitter;

use crate::decision::Decision;
use crate::diag::DiagnosticKind;
use crate::diag::{Diagnostic, Diagnostics, Location};
use crate::policy::{List, MatcherDecl, Policy, RuleDecl, RuleLists, RuleSet, ServerAllow, Source};
use serde_json::Value;

/// Where a settings file sits in Claude Code's precedence, highest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// `managed-settings.json` and its drop-ins.
    Managed,
    /// A file given on the command line (`--settings`).
    CommandLine,
    /// `.claude/settings.local.json`.
    Local,
    /// `.claude/settings.json`.
    Project,
    /// `~/.claude/settings.json`.
    User,
}

impl Scope {
    /// The source's name and the word messages use.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Managed => "managed",
            Scope::CommandLine => "command-line",
            Scope::Local => "local",
            Scope::Project => "project",
            Scope::User => "user",
        }
    }

    /// The source's rank: managed 50 down to user 10; the built-in source
    /// is 0.
    pub fn rank(self) -> i64 {
        match self {
            Scope::Managed => 50,
            Scope::CommandLine => 40,
            Scope::Local => 30,
            Scope::Project => 20,
            Scope::User => 10,
        }
    }

    /// Whether the file belongs to the project, whose allow rules wait for
    /// the user's trust.
    pub fn is_project(self) -> bool {
        matches!(self, Scope::Local | Scope::Project)
    }

    /// The scope a settings file's path says it has: `…/.claude/settings.json`
    /// is the project's, `…/.claude/settings.local.json` the local one,
    /// `<home>/.claude/settings.json` the user's, `managed-settings.json`
    /// (or a file in `managed-settings.d/`) managed; anything else is a file
    /// given on the command line.
    pub fn of_path(path: &str, home: Option<&str>) -> Scope {
        let p = path.replace('\\', "/");
        if p.ends_with("/managed-settings.json")
            || p == "managed-settings.json"
            || p.contains("/managed-settings.d/")
        {
            return Scope::Managed;
        }
        if let Some(h) = home {
            let h = h.trim_end_matches('/');
            if p == format!("{h}/.claude/settings.json") {
                return Scope::User;
            }
        }
        if p.ends_with(".claude/settings.local.json") {
            Scope::Local
        } else if p.ends_with(".claude/settings.json") {
            Scope::Project
        } else {
            Scope::CommandLine
        }
    }
}

/// Claude Code's permission modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `default` (or `manual`): asks on first use; reads in the working
    /// directories need no approval.
    Default,
    /// `acceptEdits`: also edits in the working directories.
    AcceptEdits,
    /// `plan`: reads only; edits are denied.
    Plan,
    /// `dontAsk`: whatever would ask is denied.
    DontAsk,
    /// `bypassPermissions`: everything runs but what a deny or ask rule
    /// names.
    BypassPermissions,
}

impl Mode {
    /// Reads a mode as settings and hook payloads write it. `auto` (a
    /// classifier toolgate does not have) reads as `default`; the second
    /// member says so.
    pub fn parse(s: &str) -> Option<(Mode, Option<&'static str>)> {
        Some(match s {
            "default" | "manual" => (Mode::Default, None),
            "acceptEdits" => (Mode::AcceptEdits, None),
            "plan" => (Mode::Plan, None),
            "dontAsk" => (Mode::DontAsk, None),
            "bypassPermissions" => (Mode::BypassPermissions, None),
            "auto" => (
                Mode::Default,
                Some("toolgate has no classifier: the mode `auto` is read as `default`"),
            ),
            _ => return None,
        })
    }

    /// The name Claude Code writes.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::AcceptEdits => "acceptEdits",
            Mode::Plan => "plan",
            Mode::DontAsk => "dontAsk",
            Mode::BypassPermissions => "bypassPermissions",
        }
    }

    fn loosens(self) -> bool {
        matches!(self, Mode::AcceptEdits | Mode::BypassPermissions)
    }
}

/// One settings file: where it is, what it holds, and its scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingsFile {
    /// Its place in the precedence.
    pub scope: Scope,
    /// Its path, for the record and for anchors: `/path` rules resolve
    /// against the project directory for project, local and managed files,
    /// and against the file's own directory for user and command-line
    /// files.
    pub path: String,
    /// Its text.
    pub text: String,
}

/// What loading needs besides the files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Environment {
    /// The home directory: `~/` rules, `~` in calls.
    pub home: Option<String>,
    /// The project directory, where Claude Code started: the working
    /// directory the mode's rules cover, and the anchor of `/path` rules in
    /// project, local and managed files.
    pub project_dir: Option<String>,
    /// Whether the project's own files (shared and local) are trusted: their
    /// allow rules, `additionalDirectories` and loosening modes apply.
    pub trust_project: bool,
    /// The session's permission mode, when the caller knows it (a hook
    /// payload's `permission_mode`); otherwise the files' `defaultMode`.
    pub mode: Option<String>,
    /// Whether the project's file system ignores case and Unicode
    /// normalisation (macOS, Windows): path rules and paths are then read
    /// folded (`path-fold`), so `Read(./.env)` also meets `.ENV`.
    pub fold_paths: bool,
}

/// Settings files lowered into a policy.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The policy: build it with any engine.
    pub policy: Policy,
    /// The permission mode in force.
    pub mode: Mode,
    /// The working directories (the project directory and the trusted
    /// `additionalDirectories`), absolute.
    pub working_dirs: Vec<String>,
    /// What the reader should know: rules skipped or read more strictly,
    /// settings withheld from untrusted files.
    pub warnings: Vec<String>,
    /// Deny and ask rules naming a tool Claude Code does not have, which
    /// never apply: `toolgate check` refuses them, the hook warns.
    pub unknown_tools: Vec<String>,
}

/// Claude Code's built-in tools: (tool, kind, field, splitter).
pub const TOOLS: &[(&str, &str, &str, Option<&str>)] = &[
    ("Bash", "claude-bash", "command", Some("claude-shell")),
    ("Read", "path", "file_path", None),
    ("Edit", "path", "file_path", None),
    ("Write", "path", "file_path", None),
    ("MultiEdit", "path", "file_path", None),
    ("NotebookEdit", "path", "notebook_path", None),
    ("NotebookRead", "path", "notebook_path", None),
    ("Glob", "path", "path", None),
    ("Grep", "path", "path", None),
    ("LS", "path", "path", None),
    ("LSP", "path", "filePath", None),
    ("WebFetch", "domain", "url", None),
    ("Agent", "claude-bash", "subagent_type", None),
    ("Task", "claude-bash", "subagent_type", None),
    ("Skill", "claude-bash", "skill", None),
    (shell::READ_REACH, "path-reach", "file_path", None),
    (shell::EDIT_REACH, "path-reach", "file_path", None),
];

/// Claude Code's other built-in tools, which take bare rules only.
pub const OTHER_TOOLS: &[&str] = &[
    "WebSearch",
    "ExitPlanMode",
    "SlashCommand",
    "PowerShell",
    "Monitor",
];

/// The built-in tool named `name` up to case, when `name` is not itself
/// one (`bash` is `Bash`).
pub fn builtin_tool(name: &str) -> Option<&'static str> {
    TOOLS
        .iter()
        .map(|t| t.0)
        .filter(|t| !t.contains('.'))
        .chain(NO_PERMISSION.iter().copied())
        .chain(OTHER_TOOLS.iter().copied())
        .find(|t| t.eq_ignore_ascii_case(name))
}

/// Tools Claude Code runs without asking in every mode.
pub const NO_PERMISSION: &[&str] = &[
    "Agent",
    "Task",
    "AskUserQuestion",
    "BashOutput",
    "CronCreate",
    "CronDelete",
    "CronList",
    "EnterPlanMode",
    "EnterWorktree",
    "ExitWorktree",
    "KillShell",
    "ListMcpResourcesTool",
    "ReadMcpResourceTool",
    "TaskCreate",
    "TaskGet",
    "TaskList",
    "TaskOutput",
    "TaskStop",
    "TaskUpdate",
    "TodoRead",
    "TodoWrite",
    "ToolSearch",
];

/// `.claude`, protected but for `.claude/worktrees`.
const PROTECTED_CLAUDE: &str = "//**/.claude";

/// Directories and files Claude Code never auto-approves writes to, in any
/// mode.
const PROTECTED: &[&str] = &[
    "//**/.git",
    "//**/.config/git",
    "//**/.vscode",
    "//**/.idea",
    "//**/.husky",
    "//**/.cargo",
    "//**/.devcontainer",
    "//**/.yarn",
    "//**/.mvn",
    PROTECTED_CLAUDE,
    "//**/.bashrc",
    "//**/.bash_profile",
    "//**/.bash_login",
    "//**/.profile",
    "//**/.zshrc",
    "//**/.zshenv",
    "//**/.zprofile",
    "//**/.gitconfig",
    "//**/.npmrc",
    "//**/.mcp.json",
    "//**/.claude.json",
];

/// Programs that run another command in a way Claude Code never approves
/// by a prefix rule.
const EXEC_ASKS: &[(&str, &str)] = &[
    (
        "watch *",
        "`watch` runs its command repeatedly; Claude Code always asks",
    ),
    (
        "setsid *",
        "`setsid` runs its command detached; Claude Code always asks",
    ),
    (
        "ionice *",
        "`ionice` runs another command; Claude Code always asks",
    ),
    (
        "flock *",
        "`flock` runs another command; Claude Code always asks",
    ),
    (
        "find -delete*",
        "`find -delete` removes files; Claude Code always asks",
    ),
    (
        "find * -delete*",
        "`find -delete` removes files; Claude Code always asks",
    ),
    (
        "find * -fprint*",
        "`find -fprint` writes files; Claude Code always asks",
    ),
    (
        "find * -fls *",
        "`find -fls` writes files; Claude Code always asks",
    ),
    // With no starting path too (a review found these allowed).
    (
        "find -fprint*",
        "`find -fprint` writes files; Claude Code always asks",
    ),
    (
        "find -fls *",
        "`find -fls` writes files; Claude Code always asks",
    ),
];

/// The built-in read-only commands Claude Code runs without asking in every
/// mode, as `claude-bash` patterns (a trailing ` *` also matches the bare
/// program). What they run, write or read through their options is a
/// subject of its own (`spec/shell.md` §6.4) and needs its own allow, so
/// `git diff --output=f` still asks for the write; [`AUTO_CARVES`] keeps
/// their operands inside the working directory. `git` is read-only only in
/// these subcommands, and only without global options before them.
const READ_ONLY: &[&str] = &[
    "ls *",
    "cat *",
    "echo *",
    "pwd *",
    "head *",
    "tail *",
    "grep *",
    "find *",
    "wc *",
    "which *",
    "diff *",
    "stat *",
    "du *",
    "cd *",
    "lsof *",
    "pgrep *",
    "tput *",
    "ss *",
    "git status *",
    "git diff *",
    "git log *",
    "git show *",
    "git blame *",
    "git rev-parse *",
    "git ls-files *",
    "git describe *",
    "git shortlog *",
    "git branch",
    "git branch -a",
    "git branch -r",
    "git branch -v",
    "git branch -vv",
    "git branch --show-current",
    "git branch --list *",
    "git remote",
    "git remote -v",
    "git tag",
    "git tag -l *",
    "git tag --list *",
];

/// The file commands `acceptEdits` runs without asking on paths inside the
/// working directories.
const EDIT_COMMANDS: &[&str] = &[
    "mkdir *", "touch *", "mv *", "cp *", "rm *", "rmdir *", "sed *",
];

/// Carve-outs from the built-in command approvals (rank 0, so they never
/// reach the user's rules): an operand that may lie outside the working
/// directory (absolute, under `~`, through `..`, zsh's `=cmd`, which names
/// the program's file on `PATH`, or known only when the command runs), a bare `cd` or `cd -` (the home or the previous
/// directory), the `find` actions Claude Code asks about, `git diff
/// --no-index` (which reads any two files), and `ss` killing sockets
/// (`-K`, `--kill` and its abbreviations) or dumping them to a file.
const AUTO_CARVES: &[&str] = &[
    "* /*",
    "* ~*",
    "*=/*",
    "*=~*",
    "*..*",
    "* =*",
    "*$*",
    "*`*",
    "cd",
    "cd -*",
    "find * -exec*",
    "find * -ok*",
    "find -exec*",
    "find -ok*",
    "git diff *--no-index*",
    // `git branch --list --no-list -D b` deletes `b`: after `--list`, an
    // option is not a pattern (found by a review against git).
    "git branch --list -*",
    "git branch --list * -*",
    "ss *K*",
    "ss *D*",
    "ss *--k*",
];

/// The value of the constraint subject the `claude-shell` splitter adds
/// to a command that runs `git` after `cd`, which the built-in source asks
/// about: no simple command has this value, since `&&` ends one.
pub const CD_THEN_GIT: &str = "cd && git";

/// Targets whose removal Claude Code asks about in every mode.
/// Spelled as the splitter writes them; a glob (`/*`) cannot be spelled,
/// since a `*` in a `Bash` pattern is a wildcard.
const CRITICAL: &[&str] = &[
    "/",
    "//",
    "/.",
    "/./",
    "~",
    "~/",
    "~/.",
    "$HOME",
    "$HOME/",
    "$HOME/.",
    "${HOME}",
    "${HOME}/",
    "${HOME}/.",
    ".",
    "..",
    "./",
    "../",
    "./.",
];

/// Top-level directories of the systems Claude Code runs on, whose
/// removal it asks about in every mode as it does the root's.
const TOP_LEVEL: &[&str] = &[
    "bin",
    "boot",
    "dev",
    "etc",
    "home",
    "lib",
    "lib32",
    "lib64",
    "media",
    "mnt",
    "nix",
    "opt",
    "proc",
    "root",
    "run",
    "sbin",
    "snap",
    "srv",
    "sys",
    "tmp",
    "usr",
    "var",
    "Applications",
    "Library",
    "System",
    "Users",
    "Volumes",
    "private",
    "cores",
];

/// What `rm` and `rmdir` must not be allowed to remove without a prompt:
/// [`CRITICAL`], the top-level directories, and the project directory and
/// each of its parents, each also with a trailing `/`.
fn critical_targets(project: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = CRITICAL.iter().map(|t| t.to_string()).collect();
    for t in TOP_LEVEL {
        out.push(format!("/{t}"));
        out.push(format!("/{t}/"));
    }
    let mut dir = project
        .filter(|p| p.starts_with('/'))
        .map(|p| p.trim_end_matches('/'));
    while let Some(d) = dir.filter(|d| !d.is_empty()) {
        if !out.iter().any(|t| t == d) {
            out.push(d.to_string());
            out.push(format!("{d}/"));
        }
        dir = d.rfind('/').and_then(|i| d.get(..i));
    }
    out
}

/// Whether Claude Code's own record of workspace trust (the text of
/// `~/.claude.json`) says the trust dialog was accepted for one of `dirs`
/// (the project directory, its git root, the working directory): its
/// `projects[<dir>].hasTrustDialogAccepted` is `true`. A record that is not
/// a JSON object, or one with duplicate keys, trusts nothing.
///
/// ```
/// use toolgate::claude::trust_recorded;
/// let record = r#"{"projects": {"/repo": {"hasTrustDialogAccepted": true}}}"#;
/// assert!(trust_recorded(record, &["/repo/sub", "/repo"]));
/// assert!(!trust_recorded(record, &["/other"]));
/// assert!(!trust_recorded("not json", &["/repo"]));
/// ```
pub fn trust_recorded(record: &str, dirs: &[&str]) -> bool {
    let Ok(v) = crate::json::parse_document(record) else {
        return false;
    };
    let Some(projects) = v.get("projects").and_then(Value::as_object) else {
        return false;
    };
    dirs.iter().any(|d| {
        let d = d.trim_end_matches('/');
        let d = if d.is_empty() { "/" } else { d };
        projects
            .get(d)
            .and_then(|p| p.get("hasTrustDialogAccepted"))
            .and_then(Value::as_bool)
            == Some(true)
    })
}

fn invalid(path: &str, message: String, help: &str) -> Diagnostic {
    Diagnostic::new(DiagnosticKind::InvalidSettings, message)
        .with_help(help)
        .at(Location {
            file: path.to_string(),
            path: String::new(),
            span: None,
        })
}

/// The directory part of `path` (`/` for a file at the root, `.` for a
/// bare name).
fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) => "/",
        Some(i) => path.get(..i).unwrap_or("."),
        None => ".",
    }
}

/// A directory written in `additionalDirectories`, made absolute.
fn resolve_dir(dir: &str, env: &Environment) -> Option<String> {
    let d = dir.trim();
    if d.is_empty() {
        return None;
    }
    if let Some(rest) = d.strip_prefix('~') {
        if rest.is_empty() || rest.starts_with('/') {
            return env
                .home
                .as_ref()
                .map(|h| format!("{}{rest}", h.trim_end_matches('/')));
        }
        return None;
    }
    if d.starts_with('/') {
        return Some(d.to_string());
    }
    env.project_dir
        .as_ref()
        .map(|p| format!("{}/{d}", p.trim_end_matches('/')))
}

/// A directory as a `path` pattern covering it and everything inside.
fn dir_pattern(dir: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for p in dir.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    // Characters the pattern syntax would read are escaped.
    let mut out = String::from("/");
    for p in parts {
        out.push('/');
        for c in p.chars() {
            if matches!(c, '*' | '?' | '[' | ']' | '\\') {
                out.push('\\');
            }
            out.push(c);
        }
    }
    // The root itself: `//` is the absolute `/` (a lone `/` would be the
    // project root, and as a directory pattern names nothing).
    if out == "/" {
        out.push('/');
    }
    out
}

/// The members of `permissions`, in the order `fmt` writes them.
pub(crate) const PERMISSIONS: &[&str] = &[
    "allow",
    "ask",
    "deny",
    "defaultMode",
    "additionalDirectories",
    "disableBypassPermissionsMode",
    "disableAutoMode",
    "allowManagedPermissionRulesOnly",
];

/// One file read.
struct Read {
    scope: Scope,
    path: String,
    hash: String,
    permissions: serde_json::Map<String, Value>,
}

/// Reads settings files into a policy (see the module documentation).
///
/// ```
/// use toolgate::claude::{load, Environment, Scope, SettingsFile};
/// use toolgate::{Call, Decision, Engine};
/// let files = [SettingsFile {
///     scope: Scope::User,
///     path: "/home/u/.claude/settings.json".into(),
///     text: r#"{"permissions": {"allow": ["Bash(npm test *)"], "deny": ["Read(.env)"]},
///               "model": "opus"}"#.into(),
/// }];
/// let env = Environment { home: Some("/home/u".into()), project_dir: Some("/repo".into()), ..Environment::default() };
/// let loaded = load(&files, &env)?;
/// let engine = Engine::build(&loaded.policy)?;
/// let mut call = Call::new("Bash", r#"{"command": "npm test -- --watch"}"#);
/// call.cwd = Some("/repo".into());
/// assert_eq!(engine.decide(&call).decision, Decision::Allow);
/// let mut call = Call::new("Read", r#"{"file_path": "/repo/.env"}"#);
/// call.cwd = Some("/repo".into());
/// assert_eq!(engine.decide(&call).reason, "denied by Read(.env)");
/// # Ok::<(), toolgate::Diagnostics>(())
/// ```
///
/// # Errors
///
/// A file that is not a JSON object, a `permissions` member that is not an
/// object or holds an unknown member, a list that is not an array of
/// strings, and a deny or ask rule that is not a rule at all. Every problem
/// is reported, each naming its file.
pub fn load(files: &[SettingsFile], env: &Environment) -> Result<Loaded, Diagnostics> {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let mut unknown_tools = Vec::new();
    let mut read: Vec<Read> = Vec::new();
    for f in files {
        let v = match crate::json::parse_document(&f.text) {
            Ok(v) => v,
            Err(e) => {
                let mut d = invalid(
                    &f.path,
                    format!("`{}` is not valid JSON: {e}", f.path),
                    "fix the JSON syntax; duplicate keys are refused",
                );
                let bom = if f.text.starts_with('\u{feff}') { 3 } else { 0 };
                d.location.span = crate::diag::Span::of_json_error(
                    f.text.get(bom..).unwrap_or(&f.text),
                    &e.to_string(),
                )
                .map(|s| s.shift(bom));
                errors.push(d);
                continue;
            }
        };
        // A NUL byte anywhere (a rule, a directory, a mode) is refused: a
        // host ends the string there, so the rule would not say what it
        // seems to.
        if let Some((at, key)) = crate::json::find_nul(&v) {
            let mut d = invalid(
                &f.path,
                crate::json::nul_refusal(&crate::json::nul_place(&at, key)),
                "a settings file holds no NUL byte: remove it",
            );
            d.location.span =
                crate::json::locate(&f.text, &at).map(|(s, e)| crate::diag::Span::new(s, e));
            d.location.path = at;
            errors.push(d);
            continue;
        }
        let Value::Object(mut obj) = v else {
            errors.push(invalid(
                &f.path,
                format!("`{}` is not a JSON object", f.path),
                "a settings file is an object such as `{\"permissions\": {\"allow\": []}}`",
            ));
            continue;
        };
        let permissions = match obj.remove("permissions") {
            None => serde_json::Map::new(),
            Some(Value::Object(p)) => p,
            Some(other) => {
                errors.push(invalid(
                    &f.path,
                    format!(
                        "`permissions` in `{}` must be an object, not `{other}`",
                        f.path
                    ),
                    "write `\"permissions\": {\"allow\": [...], \"deny\": [...]}`",
                ));
                continue;
            }
        };
        for k in permissions.keys() {
            if !PERMISSIONS.contains(&k.as_str()) {
                let hint = crate::policy::doc::suggest(k, PERMISSIONS)
                    .map(|s| format!("did you mean `{s}`? "))
                    .unwrap_or_default();
                let mut d = invalid(
                    &f.path,
                    format!("`permissions.{k}` in `{}` is not a permission setting", f.path),
                    &format!(
                        "{hint}`permissions` holds `allow`, `ask`, `deny`, `defaultMode` and `additionalDirectories`"
                    ),
                )
                .with_token(k.as_str());
                d.location.path = "permissions".into();
                errors.push(d);
            }
        }
        read.push(Read {
            scope: f.scope,
            path: f.path.clone(),
            hash: blake3::hash(f.text.as_bytes())
                .to_hex()
                .get(..16)
                .unwrap_or("")
                .to_string(),
            permissions,
        });
    }
    // Claude Code's order: managed first, then command line, local, project,
    // user; files of one scope in the order given.
    read.sort_by_key(|r| r.scope);

    let trusted = |s: Scope| !s.is_project() || env.trust_project;
    let managed_only = read.iter().any(|r| {
        r.scope == Scope::Managed
            && r.permissions.get("allowManagedPermissionRulesOnly") == Some(&Value::Bool(true))
    });
    if managed_only {
        warnings.push(
            "managed settings set `allowManagedPermissionRulesOnly`: only managed rules apply"
                .to_string(),
        );
    }

    // The mode: the session's, else the highest file's `defaultMode`.
    let mut mode = Mode::Default;
    let mut mode_set = false;
    if let Some(m) = env.mode.as_deref() {
        match Mode::parse(m) {
            Some((md, note)) => {
                mode = md;
                mode_set = true;
                warnings.extend(note.map(str::to_string));
            }
            None => warnings.push(format!(
                "the permission mode `{m}` is not one toolgate knows; the settings' mode applies"
            )),
        }
    }
    for r in &read {
        if mode_set {
            break;
        }
        let Some(v) = r.permissions.get("defaultMode") else {
            continue;
        };
        let Some((md, note)) = v.as_str().and_then(Mode::parse) else {
            warnings.push(format!(
                "`defaultMode` {v} in `{}` is not a mode; it is ignored",
                r.path
            ));
            continue;
        };
        // Claude Code 2.1.257 and later start such a session in the
        // default mode: a file the project ships cannot switch prompts off.
        if md == Mode::BypassPermissions && r.scope.is_project() {
            warnings.push(format!(
                "`defaultMode` `bypassPermissions` in `{}` does not take effect from project or local settings; set it in user or managed settings, or pass the mode in the payload",
                r.path
            ));
            continue;
        }
        if md.loosens() && !trusted(r.scope) {
            warnings.push(format!(
                "`defaultMode` `{}` in `{}` is withheld: the project is not trusted",
                md.name(),
                r.path
            ));
            continue;
        }
        warnings.extend(note.map(str::to_string));
        mode = md;
        mode_set = true;
    }
    let bypass_disabled = read.iter().any(|r| {
        r.permissions.get("disableBypassPermissionsMode") == Some(&Value::String("disable".into()))
    });
    if mode == Mode::BypassPermissions && bypass_disabled {
        warnings.push(
            "`disableBypassPermissionsMode` is set: `bypassPermissions` is read as `default`"
                .to_string(),
        );
        mode = Mode::Default;
    }

    // Working directories.
    let mut working_dirs: Vec<String> = env.project_dir.iter().cloned().collect();
    for r in &read {
        let Some(v) = r.permissions.get("additionalDirectories") else {
            continue;
        };
        let Some(items) = v.as_array() else {
            errors.push(invalid(
                &r.path,
                format!(
                    "`permissions.additionalDirectories` in `{}` must be an array of directories",
                    r.path
                ),
                "write `\"additionalDirectories\": [\"../docs\"]`",
            ));
            continue;
        };
        if !trusted(r.scope) {
            if !items.is_empty() {
                warnings.push(format!(
                    "`additionalDirectories` in `{}` are withheld: the project is not trusted",
                    r.path
                ));
            }
            continue;
        }
        for d in items {
            match d.as_str().and_then(|s| resolve_dir(s, env)) {
                Some(dir) => working_dirs.push(dir),
                None => warnings.push(format!(
                    "the additional directory {d} in `{}` cannot be resolved; it is ignored",
                    r.path
                )),
            }
        }
    }

    // Sources.
    let mut policy = Policy {
        default: Some(match mode {
            Mode::Default | Mode::AcceptEdits => Decision::Ask,
            Mode::Plan | Mode::DontAsk => Decision::Deny,
            Mode::BypassPermissions => Decision::Allow,
        }),
        ..Policy::default()
    };
    for (tool, kind, field, split) in TOOLS {
        let kind = match *kind {
            "path" if env.fold_paths => "path-fold",
            "path-reach" if env.fold_paths => "path-reach-fold",
            k => k,
        };
        policy.matchers.push(MatcherDecl {
            tool: (*tool).to_string(),
            kind: Some(kind.to_string()),
            field: Some((*field).to_string()),
            split: split.map(str::to_string),
            location: Location::default(),
        });
    }
    let mut names: Vec<String> = Vec::new();
    for r in &read {
        if managed_only && r.scope != Scope::Managed {
            continue;
        }
        let mut name = r.scope.name().to_string();
        let mut n = 1;
        while names.contains(&name) {
            n += 1;
            name = format!("{}#{n}", r.scope.name());
        }
        names.push(name.clone());
        let root = match r.scope {
            Scope::User | Scope::CommandLine => Some(parent(&r.path).to_string()),
            Scope::Project => env
                .project_dir
                .clone()
                .or_else(|| Some(parent(parent(&r.path)).to_string())),
            Scope::Local | Scope::Managed => env.project_dir.clone(),
        };
        let mut lists = RuleLists::default();
        for list in List::ALL {
            let Some(v) = r.permissions.get(list.name()) else {
                continue;
            };
            let Some(items) = v.as_array() else {
                errors.push(invalid(
                    &r.path,
                    format!(
                        "`permissions.{}` in `{}` must be an array of rules",
                        list.name(),
                        r.path
                    ),
                    "write `[\"Bash(git status)\", \"Read(./src/**)\"]`",
                ));
                continue;
            };
            for (i, item) in items.iter().enumerate() {
                let place = format!("permissions.{}[{i}] of {}", list.name(), r.path);
                let Some(text) = item.as_str() else {
                    errors.push(invalid(
                        &r.path,
                        format!("`{place}` must be a string, not `{item}`"),
                        "write the rule as a string, as in `\"Bash(npm test *)\"`",
                    ));
                    continue;
                };
                let cx = rules::Context {
                    root: root.as_deref(),
                    home: env.home.as_deref(),
                    project: env.project_dir.as_deref(),
                    place,
                };
                let t = rules::translate(text, list, &cx);
                warnings.extend(t.warnings);
                unknown_tools.extend(t.unknown_tool);
                if let Some(e) = t.error {
                    let mut d = invalid(
                        &r.path,
                        e,
                        "fix the rule; a deny or ask rule toolgate cannot read refuses the settings",
                    );
                    d.location.path = format!("permissions.{}[{i}]", list.name());
                    errors.push(d);
                }
                if let Some((glob, rule)) = t.mcp_allow {
                    if trusted(r.scope) {
                        policy.server_allows.push(ServerAllow {
                            glob,
                            text: rule,
                            source: name.clone(),
                            location: Location {
                                file: r.path.clone(),
                                path: format!("permissions.{}[{i}]", list.name()),
                                span: None,
                            },
                        });
                    } else {
                        warnings.push(format!(
                            "`{rule}` in `{}` is withheld: the project is not trusted",
                            r.path
                        ));
                    }
                }
                let target = if list == List::Ask && mode == Mode::DontAsk {
                    List::Deny
                } else {
                    list
                };
                lists.get_mut(target).extend(t.rules);
            }
        }
        if r.scope.is_project() && !trusted(r.scope) && !lists.allow.is_empty() {
            warnings.push(format!(
                "{} allow rule(s) of `{}` are withheld: the project is not trusted (pass `--trust-project` to apply them)",
                lists.allow.len(),
                r.path
            ));
        }
        policy.sources.push(RuleSet {
            source: Source {
                name,
                rank: r.scope.rank(),
                trusted: trusted(r.scope),
                path: r.path.clone(),
                hash: r.hash.clone(),
            },
            lists,
            location: Location::default(),
        });
    }
    policy.sources.extend(builtin(mode, &working_dirs, env));
    for set in &mut policy.sources {
        reach_rules(&mut set.lists, mode);
    }

    for d in errors.iter_mut().take(1000) {
        if let Some(f) = files.iter().find(|f| f.path == d.location.file) {
            d.locate(&f.text);
        }
    }
    match Diagnostics::from_vec(errors) {
        Some(d) => Err(d),
        None => Ok(Loaded {
            policy,
            mode,
            working_dirs,
            warnings,
            unknown_tools,
        }),
    }
}

/// Adds to `lists` the rules of the reach tools ([`shell::READ_REACH`],
/// [`shell::EDIT_REACH`]): each Read or Edit deny or ask rule, as an ask,
/// so that a command naming its files only by a pattern asks when one of
/// them could be covered. Carve-outs are left out: whether a pattern's
/// files all fall inside one is not what the reach kind answers, and
/// without them the reach rules only ask more.
fn reach_rules(lists: &mut RuleLists, mode: Mode) {
    let target = if mode == Mode::DontAsk {
        List::Deny
    } else {
        List::Ask
    };
    let mut added = Vec::new();
    for list in [List::Deny, List::Ask] {
        for r in lists.get_mut(list).iter() {
            let reach = match r.tool.as_str() {
                "Read" => shell::READ_REACH,
                "Edit" => shell::EDIT_REACH,
                _ => continue,
            };
            if r.spec.as_deref().is_some_and(|s| s.starts_with('!')) {
                continue;
            }
            let written = r.note.as_deref().unwrap_or("");
            let note = format!(
                "a file the command names by a pattern, or relative to a directory known only when it runs, could fall under {}{}{}",
                r.text(),
                if written.is_empty() { "" } else { ", " },
                written
            );
            added.push(noted(reach, r.spec.as_deref(), &note));
        }
    }
    lists.get_mut(target).extend(added);
}

fn noted(tool: &str, spec: Option<&str>, note: &str) -> RuleDecl {
    let mut r = RuleDecl::new(tool, spec);
    r.note = Some(note.to_string());
    r
}

/// The built-in sources, trusted: `claude-code-protected` (rank 1), the
/// protected paths but `.claude`, and `claude-code` (rank 0), what the mode
/// allows, what Claude Code always asks about, and plan mode's denies.
fn builtin(mode: Mode, dirs: &[String], env: &Environment) -> [RuleSet; 2] {
    let mut l = RuleLists::default();
    let ask_list = if mode == Mode::DontAsk {
        List::Deny
    } else {
        List::Ask
    };
    for t in NO_PERMISSION {
        l.allow
            .push(noted(t, None, "Claude Code runs it without asking"));
    }
    for d in dirs {
        let p = dir_pattern(d);
        for t in READ_FAMILY {
            l.allow.push(noted(
                t,
                Some(&p),
                "reads in a working directory need no approval",
            ));
        }
        if mode == Mode::AcceptEdits {
            for t in EDIT_FAMILY {
                l.allow.push(noted(
                    t,
                    Some(&p),
                    "acceptEdits: edits in a working directory are accepted",
                ));
            }
        }
    }
    // The protected paths other than `.claude` are a source of their own,
    // ranked above this one, so that the carve-out for `.claude/worktrees`
    // (a carve-out reaches the rules of its list up to its own rank) spares
    // `.claude` alone: `.claude/worktrees/x/.git` stays protected.
    let mut protected = RuleLists::default();
    // Protected paths ask in every mode, `bypassPermissions` included:
    // Claude Code's documentation of the modes says writes to them are the
    // only actions that still prompt there.
    for t in EDIT_FAMILY {
        for p in PROTECTED {
            let list = if *p == PROTECTED_CLAUDE {
                &mut l
            } else {
                &mut protected
            };
            list.get_mut(ask_list).push(noted(
                t,
                Some(p),
                "a protected path: Claude Code never approves writes here without asking",
            ));
        }
        l.get_mut(ask_list)
            .push(RuleDecl::new(*t, Some("!//**/.claude/worktrees")));
        // A worktree's own `.claude` is a project's settings too.
        protected.get_mut(ask_list).push(noted(
            t,
            Some("//**/.claude/worktrees/**/.claude"),
            "a protected path: Claude Code never approves writes here without asking",
        ));
    }
    if mode != Mode::BypassPermissions {
        for (p, note) in EXEC_ASKS {
            l.get_mut(ask_list).push(noted("Bash", Some(p), note));
        }
        l.get_mut(ask_list).push(noted(
            "Bash",
            Some(CD_THEN_GIT),
            "`git` after `cd` in one command: the directory may hold another repository, whose configuration can run commands; Claude Code asks",
        ));
    }
    for p in READ_ONLY {
        l.allow.push(noted(
            "Bash",
            Some(p),
            "a read-only command: Claude Code runs it without asking",
        ));
    }
    if mode == Mode::AcceptEdits {
        for p in EDIT_COMMANDS {
            l.allow.push(noted(
                "Bash",
                Some(p),
                "acceptEdits: file commands in a working directory are accepted",
            ));
        }
    }
    for p in AUTO_CARVES {
        l.allow.push(RuleDecl::new("Bash", Some(&format!("!{p}"))));
    }
    let critical = critical_targets(env.project_dir.as_deref());
    for prog in ["rm", "rmdir"] {
        for t in &critical {
            for p in [
                format!("{prog} {t}"),
                format!("{prog} {t} *"),
                format!("{prog} * {t}"),
                format!("{prog} * {t} *"),
            ] {
                l.get_mut(ask_list).push(noted(
                    "Bash",
                    Some(&p),
                    "removing a critical path: Claude Code asks in every mode",
                ));
            }
        }
    }
    if mode == Mode::Plan {
        l.ask.push(noted(
            "ExitPlanMode",
            None,
            "plan mode: the plan needs approval",
        ));
        let plans = env
            .home
            .as_deref()
            .map(|h| dir_pattern(&format!("{}/.claude/plans", h.trim_end_matches('/'))));
        for t in EDIT_FAMILY {
            l.deny.push(noted(t, None, "plan mode allows reads only"));
            if let Some(p) = &plans {
                l.deny.push(RuleDecl::new(*t, Some(&format!("!{p}"))));
                l.ask.push(RuleDecl::new(*t, Some(&format!("!{p}"))));
                l.allow
                    .push(noted(t, Some(p), "plan mode writes its plan here"));
            }
        }
    }
    // What the rules were lowered for, kept as the built-in source's path so
    // that an artifact carries it (§8: a hook deciding with one refuses a
    // session it was not lowered for).
    let context = Lowered {
        mode: mode.name().to_string(),
        project: env.project_dir.clone(),
        home: env.home.clone(),
    }
    .to_path();
    let set = |name: &str, rank, lists, path: &str| RuleSet {
        source: Source {
            name: name.into(),
            rank,
            trusted: true,
            path: path.to_string(),
            hash: String::new(),
        },
        lists,
        location: Location::default(),
    };
    [
        set("claude-code-protected", 1, protected, ""),
        set("claude-code", 0, l, &context),
    ]
}

/// What Claude Code settings were lowered for: the mode, the project
/// directory and the home directory, which the built-in rules and the
/// `~/…` and working-directory rules hold. An artifact compiled from
/// settings answers only sessions of the same three.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lowered {
    /// The mode's name, as Claude Code writes it.
    pub mode: String,
    /// The project directory, when one was known.
    pub project: Option<String>,
    /// The home directory, when one was known.
    pub home: Option<String>,
}

/// The prefix of the built-in source's path that records a [`Lowered`].
const LOWERED_FOR: &str = "lowered for ";

impl Lowered {
    fn to_path(&self) -> String {
        let v = serde_json::json!({"mode": self.mode, "project": self.project, "home": self.home});
        format!("{LOWERED_FOR}{v}")
    }

    /// What the built-in source `claude-code` of `sources` records, when
    /// the rules were lowered from Claude Code settings.
    ///
    /// ```
    /// use toolgate::claude::{load, Environment, Lowered, SettingsFile, Scope};
    /// let files = [SettingsFile { scope: Scope::User, path: "/home/u/.claude/settings.json".into(),
    ///     text: r#"{"permissions": {"defaultMode": "acceptEdits"}}"#.into() }];
    /// let env = Environment { home: Some("/home/u".into()), project_dir: Some("/repo".into()), ..Default::default() };
    /// let loaded = load(&files, &env).unwrap();
    /// let sources: Vec<_> = loaded.policy.sources.iter().map(|s| s.source.clone()).collect();
    /// let l = Lowered::of(&sources).unwrap();
    /// assert_eq!((l.mode.as_str(), l.project.as_deref()), ("acceptEdits", Some("/repo")));
    /// ```
    pub fn of(sources: &[Source]) -> Option<Lowered> {
        let s = sources.iter().find(|s| s.name == "claude-code")?;
        let v: Value = serde_json::from_str(s.path.strip_prefix(LOWERED_FOR)?).ok()?;
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        Some(Lowered {
            mode: text("mode")?,
            project: text("project"),
            home: text("home"),
        })
    }

    /// Why rules compiled into an artifact with `sources` must not decide a
    /// session in `mode`, with project `project` and home `home`: none
    /// when they were not lowered from Claude Code settings; a refusal when
    /// they were but carry no record of what for (an artifact an earlier
    /// toolgate compiled, a second review found answering any session);
    /// else [`Lowered::refuses`].
    pub fn refuses_session(
        sources: &[Source],
        mode: Option<&str>,
        project: Option<&str>,
        home: Option<&str>,
    ) -> Option<String> {
        if !sources.iter().any(|s| s.name == "claude-code") {
            return None;
        }
        match Lowered::of(sources) {
            Some(l) => l.refuses(mode, project, home),
            None => Some(
                "the artifact was compiled from Claude Code settings by an earlier toolgate, which did not record the mode, project and home it was lowered for: compile the settings again with this toolgate".to_string(),
            ),
        }
    }

    /// Why a session in `mode` (the payload's; `None`: not given), with
    /// project directory `project` and home directory `home`, must not be
    /// decided by rules lowered for `self`; `None` when it may.
    pub fn refuses(
        &self,
        mode: Option<&str>,
        project: Option<&str>,
        home: Option<&str>,
    ) -> Option<String> {
        let fix = "compile the settings for this session (`toolgate compile` where it runs, with its mode as `defaultMode`), or give the hook the settings instead of an artifact";
        if let Some(m) = mode {
            let m = Mode::parse(m).map_or(Mode::Default, |(m, _)| m);
            if m.name() != self.mode {
                return Some(format!(
                    "the artifact was compiled for the mode `{}` and the session is in `{}`: {fix}",
                    self.mode,
                    m.name()
                ));
            }
        }
        let differs = |a: Option<&str>, b: Option<&str>| {
            let norm = |x: Option<&str>| x.map(|x| x.trim_end_matches('/').to_string());
            norm(a) != norm(b)
        };
        if differs(self.project.as_deref(), project) {
            return Some(format!(
                "the artifact was compiled for the project `{}` and the session's is `{}`: {fix}",
                self.project.as_deref().unwrap_or("(none)"),
                project.unwrap_or("(none)")
            ));
        }
        if differs(self.home.as_deref(), home) {
            return Some(format!(
                "the artifact was compiled for the home directory `{}` and the session's is `{}`: {fix}",
                self.home.as_deref().unwrap_or("(none)"),
                home.unwrap_or("(none)")
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_follow_paths() {
        let h = Some("/home/u");
        assert_eq!(
            Scope::of_path("/home/u/.claude/settings.json", h),
            Scope::User
        );
        assert_eq!(
            Scope::of_path("/repo/.claude/settings.json", h),
            Scope::Project
        );
        assert_eq!(
            Scope::of_path("/repo/.claude/settings.local.json", h),
            Scope::Local
        );
        assert_eq!(
            Scope::of_path("/etc/claude-code/managed-settings.json", h),
            Scope::Managed
        );
        assert_eq!(
            Scope::of_path("/etc/claude-code/managed-settings.d/10-x.json", h),
            Scope::Managed
        );
        assert_eq!(Scope::of_path("/opt/ci.json", h), Scope::CommandLine);
        assert!(Scope::Managed < Scope::User && Scope::Managed.rank() > Scope::User.rank());
    }

    #[test]
    fn modes_and_errors() {
        assert_eq!(Mode::parse("manual").map(|m| m.0), Some(Mode::Default));
        assert!(Mode::parse("auto").is_some_and(|m| m.1.is_some()));
        assert!(Mode::parse("yolo").is_none());
        let file = |text: &str| SettingsFile {
            scope: Scope::User,
            path: "/home/u/.claude/settings.json".into(),
            text: text.into(),
        };
        let env = Environment::default();
        for bad in [
            "[]",
            "{\"permissions\": []}",
            "{\"permissions\": {\"allow\": \"Bash\"}}",
            "{\"permissions\": {\"deny\": [3]}}",
            "{\"permissions\": {\"deny\": [\"(x)\"]}}",
            "{\"a\": 1, \"a\": 2}",
        ] {
            let r = load(&[file(bad)], &env);
            assert_eq!(
                r.err().map(|d| d.first().kind),
                Some(DiagnosticKind::InvalidSettings),
                "{bad}"
            );
        }
        let ok = load(&[file("{\"permissions\": {\"allow\": [\"(x)\"]}}")], &env);
        assert!(ok.is_ok_and(|l| l.warnings.iter().any(|w| w.contains("is not a rule"))));
    }
}
