//! Programs whose rules name a subcommand (`git push`, `npm publish`,
//! `kubectl delete`): the readings of a command that put the subcommand
//! and its flags where such a rule expects them.
//!
//! `git -C . push --force` runs `git push --force`, and `git reset -q
//! --hard` resets as hard as `git reset --hard`; a deny rule written for
//! the plain spelling would miss both. For the programs of [`PROGRAMS`]
//! two readings are added to a command's constraint forms (deny and ask
//! rules see them, allow rules never do, `spec/shell.md` §4.5):
//!
//! * **G**: the command with the program's global options left out (the
//!   options it documents before its subcommand, and their values, and any
//!   word there with an expansion, which may stand for options);
//! * **M**: for each flag word after the subcommand, G with that word moved
//!   right after the subcommand, and right after the second word when that
//!   word is not a flag (`gh pr merge 12 --admin` is also read as
//!   `gh pr merge --admin 12`).
//!
//! Both only add forms, so a wrong guess about an option can make a deny
//! or an ask fire where it need not, never an allow: an option the table
//! does not know ends G where it stands, and the command keeps its other
//! forms.

/// One program: the options it reads before its subcommand.
pub(super) struct Program {
    pub(super) name: &'static str,
    /// Options that take no value.
    pub(super) flags: &'static [&'static str],
    /// Options whose value is the next word; a long one also as
    /// `--name=value`, a short one also joined (`-nprod`) when `joined`.
    pub(super) args: &'static [&'static str],
    /// Options written only as `name=value` in one word (`-chdir=DIR`).
    pub(super) prefixes: &'static [&'static str],
    /// Whether a short option's value may be joined to it (`-nprod`).
    pub(super) joined: bool,
    /// Whether a first word `+name` selects a toolchain (`cargo +nightly`).
    pub(super) toolchain: bool,
    /// How many leading subcommand words the options may come between
    /// (`gh pr -R o/r merge`: 2).
    pub(super) levels: usize,
}

const NO: Program = Program {
    name: "",
    flags: &[],
    args: &[],
    prefixes: &[],
    joined: false,
    toolchain: false,
    levels: 1,
};

/// The programs and their global options, each from the program's own
/// documentation (`git help git`, `npm help config`, `cargo --help`,
/// `docker --help`, `kubectl options`, `terraform -help`, pnpm's and
/// yarn's CLI pages, gh's manual pages). `spec/shell.md` §4.5 shows it.
pub(super) const PROGRAMS: &[Program] = &[
    Program {
        name: "git",
        flags: &[
            "-p",
            "--paginate",
            "-P",
            "--no-pager",
            "--bare",
            "--no-replace-objects",
            "--literal-pathspecs",
            "--glob-pathspecs",
            "--noglob-pathspecs",
            "--icase-pathspecs",
            "--no-optional-locks",
            "--no-lazy-fetch",
            "--no-advice",
        ],
        args: &[
            "-C",
            "-c",
            "--git-dir",
            "--work-tree",
            "--namespace",
            "--config-env",
        ],
        prefixes: &["--exec-path=", "--super-prefix="],
        ..NO
    },
    Program {
        name: "npm",
        flags: &[
            "-g",
            "--global",
            "--local",
            "-s",
            "--silent",
            "-q",
            "--quiet",
            "-d",
            "--dd",
            "--ddd",
            "--verbose",
            "--workspaces",
            "--ws",
            "--include-workspace-root",
            "--iwr",
            "--no-color",
            "-y",
            "--yes",
            "--no-yes",
        ],
        args: &[
            "-w",
            "--workspace",
            "-C",
            "--prefix",
            "--loglevel",
            "--userconfig",
            "--registry",
            "--reg",
        ],
        ..NO
    },
    Program {
        name: "pnpm",
        flags: &[
            "-w",
            "--workspace-root",
            "-r",
            "--recursive",
            "-s",
            "--silent",
            "--color",
            "--no-color",
            "--stream",
            "--parallel",
            "--aggregate-output",
            "--use-stderr",
            "--no-bail",
        ],
        args: &[
            "-C",
            "--dir",
            "-F",
            "--filter",
            "--filter-prod",
            "--loglevel",
            "--reporter",
            "--workspace-concurrency",
        ],
        ..NO
    },
    Program {
        name: "yarn",
        flags: &[
            "-s",
            "--silent",
            "--verbose",
            "--offline",
            "--non-interactive",
            "--no-progress",
            "--no-default-rc",
        ],
        args: &["--cwd", "--registry", "--use-yarnrc", "--modules-folder"],
        ..NO
    },
    Program {
        name: "cargo",
        flags: &[
            "-v",
            "-vv",
            "--verbose",
            "-q",
            "--quiet",
            "--frozen",
            "--locked",
            "--offline",
        ],
        args: &["-C", "--color", "--config", "-Z"],
        toolchain: true,
        ..NO
    },
    Program {
        name: "docker",
        flags: &["-D", "--debug", "--tls", "--tlsverify"],
        args: &[
            "-H",
            "--host",
            "-c",
            "--context",
            "--config",
            "-l",
            "--log-level",
            "--tlscacert",
            "--tlscert",
            "--tlskey",
        ],
        joined: true,
        ..NO
    },
    Program {
        name: "kubectl",
        flags: &[
            "--insecure-skip-tls-verify",
            "--match-server-version",
            "--disable-compression",
            "--warnings-as-errors",
        ],
        args: &[
            "-n",
            "--namespace",
            "--context",
            "--kubeconfig",
            "--cluster",
            "--user",
            "-s",
            "--server",
            "--as",
            "--as-group",
            "--as-uid",
            "--token",
            "--username",
            "--password",
            "--certificate-authority",
            "--client-certificate",
            "--client-key",
            "--cache-dir",
            "--request-timeout",
            "--tls-server-name",
            "-v",
            "--v",
            "--vmodule",
            "--profile",
            "--profile-output",
            "--log-flush-frequency",
        ],
        joined: true,
        levels: 2,
        ..NO
    },
    Program {
        name: "gh",
        args: &["-R", "--repo"],
        joined: true,
        levels: 2,
        ..NO
    },
    Program {
        name: "terraform",
        prefixes: &["-chdir="],
        ..NO
    },
];

/// The table's entry for a program's base name.
pub(super) fn program(name: &str) -> Option<&'static Program> {
    PROGRAMS.iter().find(|p| p.name == name)
}

/// The most flag words M moves, per command.
const MAX_MOVED: usize = 8;

/// How many words the option at the head of `rest` spans (its value
/// included), or `None` when it is not one of the program's options.
pub(super) fn option_len(p: &Program, rest: &[&str]) -> Option<usize> {
    let w = *rest.first()?;
    if p.flags.contains(&w) || p.prefixes.iter().any(|x| w.starts_with(x)) {
        return Some(1);
    }
    if p.args.contains(&w) {
        // The value is the next word; an option with none runs nothing.
        return (rest.len() > 1).then_some(2);
    }
    if let Some((name, _)) = w.split_once('=') {
        if name.starts_with("--") && p.args.contains(&name) {
            return Some(1);
        }
        // Boolean flags in pflag's `--flag=false` spelling.
        if p.joined && name.starts_with("--") && p.flags.contains(&name) {
            return Some(1);
        }
    }
    if p.joined && w.len() > 2 && !w.starts_with("--") {
        let short = w.get(..2)?;
        if p.args.contains(&short) {
            return Some(1);
        }
    }
    None
}

fn is_flag(w: &str) -> bool {
    w.len() > 1 && w.starts_with('-') && w != "--"
}

/// The G and M readings of `words` (the program's base name first), not
/// counting `words` itself. Empty for a program not in the table.
/// `computed(i)` says whether word `i` has an expansion: such a word before
/// the subcommand may stand for any options (`git $opts push --force`), so
/// G leaves it out too.
pub(super) fn forms(words: &[&str], computed: impl Fn(usize) -> bool) -> Vec<String> {
    let Some((&name, _)) = words.split_first() else {
        return Vec::new();
    };
    let Some(p) = program(name) else {
        return Vec::new();
    };
    // G: the program, then the words that are not global options.
    let mut g: Vec<&str> = Vec::with_capacity(words.len());
    g.push(name);
    let mut i = 1;
    let mut subs = 0;
    if p.toolchain && words.get(1).is_some_and(|w| w.starts_with('+')) {
        i = 2;
    }
    while let Some(rest) = words.get(i..) {
        let Some(&w) = rest.first() else { break };
        if subs >= p.levels || w == "--" {
            g.extend_from_slice(rest);
            break;
        }
        if computed(i) {
            i += 1;
            continue;
        }
        if let Some(n) = option_len(p, rest) {
            i += n;
            continue;
        }
        if is_flag(w) {
            // An option the table does not know: where the subcommand
            // starts is not known, so G ends here.
            g.extend_from_slice(rest);
            break;
        }
        g.push(w);
        subs += 1;
        i += 1;
    }
    let mut out: Vec<String> = Vec::new();
    if g.len() != words.len() {
        out.push(g.join(" "));
    }
    // M: the subcommand's flags, one at a time, right after it (and after
    // a second subcommand word).
    if g.get(1).is_none_or(|w| is_flag(w)) {
        return out;
    }
    let second_is_word = g.get(2).is_some_and(|w| !is_flag(w) && *w != "--");
    let mut moved = 0;
    for (j, &w) in g.iter().enumerate().skip(2) {
        if w == "--" || moved >= MAX_MOVED {
            break;
        }
        if !is_flag(w) {
            continue;
        }
        moved += 1;
        for at in [2, 3] {
            if at == 3 && !second_is_word {
                continue;
            }
            if j <= at {
                continue;
            }
            let mut m: Vec<&str> = Vec::with_capacity(g.len());
            for (k, &x) in g.iter().enumerate() {
                if k == at {
                    m.push(w);
                }
                if k != j {
                    m.push(x);
                }
            }
            out.push(m.join(" "));
        }
    }
    out
}
