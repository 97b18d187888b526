//! The shell splitter against the real shells, shared by
//! `tests/shell_bash.rs` and the `shell` fuzz target.
//!
//! A command runs under bash (`/bin/bash -c`) and under zsh (`zsh -f -c`,
//! the grammar and default options of the shell Claude Code's Bash tool
//! runs when the user's shell is zsh) in a scratch sandbox whose programs
//! are stand-ins that log their name, their arguments and the variables
//! that change what a program loads or runs. Wrappers (`nice`, `timeout`,
//! `env`, …) are the system's own, which run their command through the
//! sandbox's `PATH`. Nothing real is removed and nothing reaches the
//! network: `rm`, `curl` and the rest are the stand-in. The files a run
//! creates in its working directory are what it wrote.
//!
//! [`uncovered`] then says what the shell did that no subject covers: every
//! program it ran must have a subject carrying every such variable that
//! reached it, and every file it wrote a redirect subject, unless the
//! splitter refused the line.

use crate::workload::Rng;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use toolgate::shell::{Kind, Piece};

/// Variables the stand-in reports when they are set.
const WATCHED: &[&str] = &[
    "LD_PRELOAD",
    "BASH_ENV",
    "ENV",
    "NODE_OPTIONS",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_KEY_0",
    "GIT_CONFIG_VALUE_0",
    "GIT_EXTERNAL_DIFF",
    "PAGER",
    "EDITOR",
    "PYTHONSTARTUP",
    "PERL5OPT",
];

const STAND_INS: &[&str] = &["rm", "curl", "git", "ls", "cat", "npm"];

/// The system programs linked into the sandbox, when they exist: wrappers,
/// and programs that run a command through their arguments.
const WRAPPERS: &[&str] = &[
    "nice", "nohup", "timeout", "env", "stdbuf", "setsid", "xargs", "find", "sed", "awk", "tar",
];

/// A shell the commands run under.
#[derive(Clone, Debug)]
pub struct Shell {
    /// `bash` or `zsh`.
    pub name: &'static str,
    path: PathBuf,
    args: &'static [&'static str],
}

/// bash, when `/bin/bash` exists.
pub fn bash() -> Option<Shell> {
    let path = PathBuf::from("/bin/bash");
    path.exists().then_some(Shell {
        name: "bash",
        path,
        args: &["-c"],
    })
}

/// zsh, where a system installs it, without its startup files (`-f`).
pub fn zsh() -> Option<Shell> {
    [
        "/bin/zsh",
        "/usr/bin/zsh",
        "/usr/local/bin/zsh",
        "/opt/homebrew/bin/zsh",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
    .map(|path| Shell {
        name: "zsh",
        path,
        args: &["-f", "-c"],
    })
}

/// A scratch directory with the stand-ins on its `PATH`.
pub struct Sandbox {
    root: PathBuf,
    stand_in: String,
    /// The longest a run may take before it is killed.
    pub timeout: Duration,
}

/// What one run did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// One entry a program a stand-in saw run.
    pub runs: Vec<Run>,
    /// The files the run created in its working directory, relative to it,
    /// and in its home, as `~/…`.
    pub written: Vec<String>,
    /// Whether the run was killed at the timeout.
    pub timed_out: bool,
}

impl Sandbox {
    /// A sandbox in a directory of its own under the system's temporary
    /// directory, removed when it is dropped.
    pub fn new() -> Sandbox {
        static N: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "toolgate-real-shell-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&root);
        for d in ["bin", "home"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        let mut script = String::from(
            "#!/bin/sh\nr=$({ printf '%s' \"${0##*/}\"; for a in \"$@\"; do printf ' [%s]' \"$a\"; done\n",
        );
        for v in WATCHED {
            script.push_str(&format!(
                "  if [ -n \"${{{v}+set}}\" ]; then printf ' {{{v}=%s}}' \"${v}\"; fi\n"
            ));
        }
        script.push_str(&format!(
            // One write per record: the programs of a pipeline log at once,
            // and separate writes of theirs would interleave.
            "  if [ \"$PATH\" != '{}' ]; then printf ' {{PATH=%s}}' \"$PATH\"; fi; }})\nprintf '%s\\n' \"$r\" >> \"$SBX_LOG\"\n",
            root.join("bin").display()
        ));
        for p in WRAPPERS {
            if let Some(real) = ["/usr/bin", "/bin"]
                .iter()
                .map(|d| Path::new(d).join(p))
                .find(|f| f.exists())
            {
                std::os::unix::fs::symlink(real, root.join("bin").join(p)).unwrap();
            }
        }
        for p in ["bash", "sh"] {
            std::os::unix::fs::symlink("/bin/bash", root.join("bin").join(p)).unwrap();
        }
        if let Some(z) = zsh() {
            std::os::unix::fs::symlink(z.path, root.join("bin").join("zsh")).unwrap();
        }
        Sandbox {
            root,
            stand_in: script,
            timeout: Duration::from_secs(10),
        }
    }

    /// Whether `program` is on the sandbox's `PATH` (a wrapper the system
    /// lacks is not).
    pub fn has(&self, program: &str) -> bool {
        self.root.join("bin").join(program).exists()
    }

    fn work(&self) -> PathBuf {
        self.root.join("work")
    }

    /// A fresh working directory (`src/payload.sh`, what `BASH_ENV` may
    /// name, and an empty `.git/hooks`), an empty home, and the
    /// stand-ins written again, one copy each: a run may have written over
    /// one (zsh's `> =rm` writes the file `=rm` names).
    fn reset(&self) {
        for p in STAND_INS {
            let f = self.root.join("bin").join(p);
            let _ = std::fs::remove_file(&f);
            std::fs::write(&f, &self.stand_in).unwrap();
            chmod_x(&f);
        }
        let home = self.root.join("home");
        let _ = std::fs::remove_dir_all(&home);
        std::fs::create_dir_all(&home).unwrap();
        let work = self.work();
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(work.join("src")).unwrap();
        std::fs::create_dir_all(work.join(".git/hooks")).unwrap();
        std::fs::write(work.join("src/payload.sh"), "rm -rf ~ from-bash-env\n").unwrap();
    }

    /// Runs `cmd` under `shell` and returns what it did. The shell runs in
    /// a process group of its own, which is killed when the shell exits or
    /// at the timeout, so that nothing it left in the background runs on;
    /// each run logs to a file of its own, so that nothing an earlier run
    /// left could write into this one's.
    pub fn run(&self, shell: &Shell, cmd: &str) -> Outcome {
        use std::os::unix::process::CommandExt;
        static RUN: AtomicUsize = AtomicUsize::new(0);
        self.reset();
        let log = self
            .root
            .join(format!("log-{}", RUN.fetch_add(1, Ordering::Relaxed)));
        std::fs::write(&log, "").unwrap();
        let mut child = Command::new(&shell.path)
            .process_group(0)
            .args(shell.args)
            .arg(cmd)
            .env_clear()
            .env("PATH", self.root.join("bin"))
            .env("HOME", self.root.join("home"))
            .env("SBX_LOG", &log)
            .current_dir(self.work())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + self.timeout;
        let mut timed_out = false;
        loop {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            if Instant::now() >= deadline {
                timed_out = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        kill_group(child.id());
        let _ = child.wait();
        let runs = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(Run::parse)
            .collect();
        let _ = std::fs::remove_file(&log);
        let mut written = Vec::new();
        files(&self.work(), "", &mut written);
        written.retain(|f| f != "src/payload.sh");
        files(&self.root.join("home"), "~/", &mut written);
        Outcome {
            runs,
            written,
            timed_out,
        }
    }
}

impl Default for Sandbox {
    fn default() -> Sandbox {
        Sandbox::new()
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Kills the process group `pgid` (std has no call for it; `kill` does).
fn kill_group(pgid: u32) {
    for kill in ["/bin/kill", "/usr/bin/kill"] {
        if Path::new(kill).exists() {
            let _ = Command::new(kill)
                .args(["-KILL", "--", &format!("-{pgid}")])
                .stderr(Stdio::null())
                .status();
            return;
        }
    }
}

fn files(dir: &Path, prefix: &str, out: &mut Vec<String>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let name = format!("{prefix}{}", e.file_name().to_string_lossy());
        match e.file_type() {
            Ok(t) if t.is_dir() => files(&e.path(), &format!("{name}/"), out),
            Ok(_) => out.push(name),
            Err(_) => {}
        }
    }
}

fn chmod_x(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// One program a stand-in saw run.
#[derive(Debug)]
pub struct Run {
    /// The name it ran under.
    pub program: String,
    /// The watched variables that reached it.
    pub vars: Vec<String>,
    /// Whether it ran with no argument.
    pub bare: bool,
    /// Its arguments, as the shell passed them (read back from the log, so
    /// an argument holding `] [` reads as two).
    pub args: Vec<String>,
}

impl Run {
    fn parse(line: &str) -> Run {
        let program = line.split(' ').next().unwrap_or("").to_string();
        let vars = line
            .split(" {")
            .skip(1)
            .filter_map(|v| v.split_once('=').map(|(n, _)| n.to_string()))
            .collect();
        let logged = line.split(" {").next().unwrap_or("");
        let args = logged
            .strip_prefix(program.as_str())
            .and_then(|r| r.strip_prefix(" ["))
            .and_then(|r| r.strip_suffix(']'))
            .map(|r| r.split("] [").map(str::to_string).collect())
            .unwrap_or_default();
        Run {
            bare: !line.contains(' '),
            program,
            vars,
            args,
        }
    }
}

/// Whether a piece's value runs `program` (a word of it, by base name;
/// word boundaries are not marked, so this is a reading, not a parse) and
/// sets each of `vars` before it.
fn runs(value: &str, program: &str, vars: &[String]) -> bool {
    let named = value
        .split(' ')
        .any(|w| w.rsplit('/').next() == Some(program));
    named && carries(value, vars)
}

fn carries(value: &str, vars: &[String]) -> bool {
    vars.iter().all(|n| {
        let a = format!("{n}=");
        value.starts_with(&a) || value.contains(&format!(" {a}"))
    })
}

/// Whether some piece is a subject for `run`: an ordinary piece of its
/// program that carries every watched variable that reached it, or an
/// opaque piece (which no allow rule's specifier matches). A program the
/// line does not name (the file `BASH_ENV` names ran it) is covered by an
/// ordinary piece carrying the variables that made it run.
///
/// Only variables the line assigns count: `stdbuf` sets `LD_PRELOAD` for
/// its command itself.
pub fn covered(cmd: &str, pieces: &[Piece], run: &Run) -> bool {
    let named = cmd.contains(&run.program);
    let vars: Vec<String> = run
        .vars
        .iter()
        .filter(|n| cmd.contains(&format!("{n}=")))
        .cloned()
        .collect();
    pieces.iter().any(|p| {
        if p.kind != Kind::Command {
            return false;
        }
        let Some(v) = p.value() else {
            return true;
        };
        // A program spelt another way (`r''m`, `$'\x72m'`) is named by
        // its piece's value.
        runs(v, &run.program, &vars) || (!named && !vars.is_empty() && carries(v, &vars))
    })
}

/// Whether some redirect piece is a subject for the file `path` a run
/// wrote: one naming it, or an opaque one.
pub fn write_covered(pieces: &[Piece], path: &str) -> bool {
    pieces.iter().any(|p| {
        p.kind == Kind::Write
            && p.value()
                .is_none_or(|v| v.strip_prefix("./").unwrap_or(v) == path)
    })
}

/// Whether the splitter claims `program` runs.
pub fn claims(pieces: &[Piece], program: &str) -> bool {
    pieces
        .iter()
        .any(|p| p.kind == Kind::Command && p.value().is_some_and(|v| runs(v, program, &[])))
}

/// What `shell` did running `cmd` that no piece covers, one line each.
pub fn uncovered(shell: &Shell, cmd: &str, pieces: &[Piece], did: &Outcome) -> Vec<String> {
    let mut out = Vec::new();
    // A command of redirects alone makes zsh run `$NULLCMD` (`cat`) with
    // them; the redirects are its subjects.
    let redirects = pieces
        .iter()
        .any(|p| matches!(p.kind, Kind::Write | Kind::Read));
    for r in &did.runs {
        let nullcmd = shell.name == "zsh" && r.program == "cat" && r.bare && redirects;
        if !nullcmd && !covered(cmd, pieces, r) {
            out.push(format!(
                "{cmd:?}: {} ran {r:?}, and no subject has it: {pieces:?}",
                shell.name
            ));
        }
    }
    for f in &did.written {
        if !write_covered(pieces, f) {
            out.push(format!(
                "{cmd:?}: {} wrote {f:?}, and no subject has it: {pieces:?}",
                shell.name
            ));
        }
    }
    out
}

/// Programs of the generated lines: stand-ins and builtins only, never a
/// path, so that a generated line cannot run a real program.
const Z_PROGRAMS: &[&str] = &[
    "rm",
    "ls",
    "cat",
    "git",
    "curl",
    "npm",
    "echo",
    "true",
    ":",
    "r''m",
    "\\rm",
    "=rm",
    "repeat 2 rm",
    "- rm",
    "noglob rm",
    "nocorrect ls",
    "command rm",
    "builtin echo",
];

/// Words of the generated lines: where bash and zsh read a word
/// differently (flags, bare subscripts, `=` expansion, glob qualifiers,
/// replacements inside double quotes), and plain ones.
const Z_WORDS: &[&str] = &[
    "x",
    "'a b'",
    "$x",
    "${x}",
    "${(e)x}",
    "${(e):-'$(rm e)'}",
    "${~x}",
    "$~x",
    "$=x",
    "$^x",
    "$+x",
    "${+x}",
    "$a['$(rm s)']",
    "\"$a['$(rm s)']\"",
    "$#a['$(rm s)']",
    "$a[1]",
    "${a[1]}['$(rm s)']",
    "=ls",
    "==",
    "*(e:rm:)",
    "f(+rm)",
    "\"${x/a/'$(rm r)'}\"",
    "${x/a/'$(rm r)'}",
    "\"${x:-'$(rm d)'}\"",
    "${x:-'$(rm d)'}",
    "$(( '$(rm m)' ))",
    "'$(rm q)'",
    "$(rm c)",
    "{a,b}",
    "}",
    "{",
    "'}'",
    "!",
    "#x",
    "a#b",
    "^x",
    "x~y",
    "**/f",
];

const Z_REDIRECTS: &[&str] = &[
    "> f",
    ">! g",
    ">>! h",
    ">| i",
    "&>! j",
    ">&! k",
    "> '!'",
    "2>&1",
    "< /dev/null",
    "> =rm",
    "<<< x",
];

const Z_SEPARATORS: &[&str] = &[
    "; ", " && ", " || ", " | ", " & ", " &! ", " &!", "\n", " &| ",
];

/// A simple command of the vocabulary above.
fn z_simple(rng: &mut Rng) -> String {
    let mut s = String::new();
    if rng.below(5) == 0 {
        s.push_str("x=a ");
    }
    s.push_str(rng.pick_str(Z_PROGRAMS));
    for _ in 0..rng.below(4) {
        s.push(' ');
        if rng.below(5) == 0 {
            s.push_str(rng.pick_str(Z_REDIRECTS));
        } else {
            s.push_str(rng.pick_str(Z_WORDS));
        }
    }
    s
}

/// A command: simple, or one of the compound forms both shells have, or a
/// form only zsh has (short loops, `always`, `{ … }` without `;`).
fn z_command(rng: &mut Rng, depth: u32) -> String {
    if depth == 0 {
        return z_simple(rng);
    }
    let d = depth - 1;
    match rng.below(12) {
        0 => format!("{{ {}; }}", z_list(rng, d)),
        1 => format!("{{ {} }}", z_list(rng, d)),
        2 => format!("{{ {} }} always {{ {} }}", z_list(rng, d), z_list(rng, d)),
        3 => format!("for v in a b; do {}; done", z_list(rng, d)),
        4 => format!("for v (a b) {}", z_simple(rng)),
        5 => format!("if [[ -n x ]] {}", z_simple(rng)),
        6 => format!("( {} )", z_list(rng, d)),
        7 => format!("echo $({})", z_list(rng, d)),
        8 => format!("cat <<E\n{}\nE", rng.pick_str(Z_WORDS)),
        9 => format!("zsh -c '{}'", z_simple(rng).replace('\'', "")),
        _ => z_simple(rng),
    }
}

fn z_list(rng: &mut Rng, depth: u32) -> String {
    let mut s = z_command(rng, depth);
    for _ in 0..rng.below(3) {
        s.push_str(rng.pick_str(Z_SEPARATORS));
        s.push_str(&z_command(rng, depth));
    }
    s
}

/// A line mixing the constructs bash and zsh read differently, from a
/// vocabulary whose programs are the sandbox's stand-ins and builtins:
/// safe to run under [`Sandbox::run`], which is why the real shells are
/// only ever given generated lines, never a fuzzer's bytes (those could
/// name `/bin/rm` itself).
pub fn zsh_line(rng: &mut Rng) -> String {
    let depth = rng.below(3) as u32;
    let mut s = String::from("a=(1 2); : > f; ");
    s.push_str(&z_list(rng, depth));
    s
}
