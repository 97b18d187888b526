//! The files a command line reads, against bash itself: each command runs
//! under `/bin/bash` in a scratch sandbox whose `cat`, `grep`, `head` and
//! `rm` are stand-ins logging their working directory and arguments, and
//! every argument that names an existing file or directory there must be
//! covered by a file subject of Claude Code's splitter: a path that
//! resolves to it (through `cd`, `~` and `$HOME`), or a pattern the
//! `path-reach` kind finds could name it. Nothing real is read or removed.
//!
//! Without `/bin/bash` the test prints a notice and passes.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use toolgate::kinds::PathReachKind;
use toolgate::shell::{split_command, Kind, Piece, ShellConfig};
use toolgate::{CallContext, MatcherKind};

const STAND_INS: &[&str] = &["cat", "grep", "head", "rm"];
const SYSTEM: &[&str] = &["find", "xargs", "printf", "echo"];

struct Sandbox {
    root: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let root =
            std::env::temp_dir().join(format!("toolgate-shell-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for d in ["bin", "home/.ssh", "work/src/deep"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in [
            "home/.ssh/id_rsa",
            "home/notes.txt",
            "work/.env",
            "work/src/main.rs",
            "work/src/.env",
            "work/src/deep/x.rs",
        ] {
            std::fs::write(root.join(f), "x\n").unwrap();
        }
        // One record a run, written at once: `cwd<TAB>arg<TAB>arg…`.
        let script = "#!/bin/sh\nr=$(printf '%s' \"$PWD\"; for a in \"$@\"; do printf '\\t%s' \"$a\"; done)\nprintf '%s\\n' \"$r\" >> \"$SBX_LOG\"\n";
        let stand = root.join("stand");
        std::fs::write(&stand, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&stand, std::fs::Permissions::from_mode(0o755)).unwrap();
        for p in STAND_INS {
            std::os::unix::fs::symlink(&stand, root.join("bin").join(p)).unwrap();
        }
        for p in SYSTEM {
            if let Some(real) = ["/usr/bin", "/bin"]
                .iter()
                .map(|d| Path::new(d).join(p))
                .find(|f| f.exists())
            {
                std::os::unix::fs::symlink(real, root.join("bin").join(p)).unwrap();
            }
        }
        Sandbox { root }
    }

    fn home(&self) -> String {
        self.root.join("home").display().to_string()
    }

    fn work(&self) -> String {
        self.root.join("work").display().to_string()
    }

    /// Runs `cmd`: for each stand-in run, its working directory and
    /// arguments.
    fn run(&self, cmd: &str) -> Vec<(String, Vec<String>)> {
        let log = self.root.join("log");
        std::fs::write(&log, "").unwrap();
        let _ = Command::new("/bin/bash")
            .arg("-c")
            .arg(cmd)
            .env_clear()
            .env("PATH", self.root.join("bin"))
            .env("HOME", self.home())
            .env("SBX_LOG", &log)
            .current_dir(self.work())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(|l| {
                let mut parts = l.split('\t').map(str::to_string);
                let cwd = parts.next().unwrap_or_default();
                (cwd, parts.collect())
            })
            .collect()
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// `path` made absolute against `cwd` and lexically clean.
fn absolute(path: &str, cwd: &str, home: &str) -> String {
    let full = if let Some(rest) = path.strip_prefix('~') {
        format!("{home}{rest}")
    } else if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{cwd}/{path}")
    };
    let mut parts: Vec<&str> = Vec::new();
    for p in full.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Whether a file piece covers the file `abs`.
fn covers(p: &Piece, abs: &str, sbx: &Sandbox) -> bool {
    let reach = PathReachKind::with_home(sbx.home());
    let work = sbx.work();
    let cx = CallContext { cwd: Some(&work) };
    if let Some(q) = p.pattern() {
        return reach
            .normalize(q, &cx)
            .is_ok_and(|v| reach.matches(&format!("/{abs}"), &v));
    }
    p.value()
        .is_some_and(|v| absolute(v, &work, &sbx.home()) == abs)
}

/// Commands that each run a stand-in on at least one existing file.
const CASES: &[&str] = &[
    // Class 4: operands named by globs, the home directory, substitutions.
    "cat ~/.ss?/id_rsa",
    "cat ${HOME%/}/.ssh/id_rsa",
    "cat \"$HOME\"/.ssh/id_rsa",
    "cat $(echo .env)",
    "cat `printf .env`",
    "X=.env; cat $X",
    "cat .e{n,x}v",
    "cat src/*",
    "cat src/.e*",
    "for f in src/*.rs; do cat \"$f\"; done",
    "find . -name .env -exec cat {} +",
    "find . -name .env -exec cat {} ';'",
    "find . -name '*.env' | xargs cat",
    "grep -r PRIVATE ~",
    "head -n 1 ~/notes.txt",
    "rm -rf src/deep",
    // Class 5: cd, pushd, popd and subshells.
    "cd ~/.ssh && cat id_rsa",
    "cd src && cat ../.env",
    "cd src; cd ..; cat .env",
    "cd && cat .ssh/id_rsa",
    "cd src && cd deep && cat ../../.env",
    "pushd src >/dev/null && cat .env",
    "pushd src >/dev/null; pushd ~ >/dev/null; popd >/dev/null; cat .env",
    "(cd src && cat .env); cat .env",
    "D=src; cd \"$D\" && cat .env",
    "cd ~/.ssh; cd -; cd -; cat id_rsa",
    "for d in src deep; do cd $d; cat x.rs; done",
    "f() { cd src; }; f; cat .env",
    "cd ~ && cat .ssh/id_rsa | head -n 1",
];

#[test]
fn every_file_bash_reads_is_a_subject() {
    if !Path::new("/bin/bash").exists() {
        eprintln!("no /bin/bash: the files are not compared with bash");
        return;
    }
    let sbx = Sandbox::new();
    let cfg = ShellConfig {
        redirect_write: Some("Edit".into()),
        redirect_read: Some("Read".into()),
        file_operands: true,
        reach_read: Some("Read.reach".into()),
        reach_write: Some("Edit.reach".into()),
        ..ShellConfig::default()
    };
    let mut failures = Vec::new();
    for cmd in CASES {
        let runs = sbx.run(cmd);
        let pieces = split_command(cmd, &cfg).unwrap();
        let files: Vec<&Piece> = pieces
            .iter()
            .filter(|p| !matches!(p.kind, Kind::Command | Kind::Constraint))
            .collect();
        let mut checked = 0;
        for (cwd, args) in &runs {
            for a in args {
                let abs = absolute(a, cwd, &sbx.home());
                if a.starts_with('-') || !Path::new(&abs).exists() {
                    continue;
                }
                checked += 1;
                if !files.iter().any(|p| covers(p, &abs, &sbx)) {
                    failures.push(format!(
                        "{cmd:?}: bash ran a program on {abs} (in {cwd}), and no file subject covers it: {files:?}"
                    ));
                }
            }
        }
        assert!(
            checked > 0,
            "{cmd:?}: bash named no existing file (ran {runs:?}), so the case tests nothing"
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
