//! Programs that run, write or read something through their own
//! arguments: `git -c core.pager=…`, `rg --pre`, `sort -o`, `tar
//! --to-command`, `ssh -o ProxyCommand=…`, sed's `e` and `w`, awk's
//! `system()`, `dd of=`, `git diff --no-index`.
//!
//! An allow rule for `git diff` says nothing about the file `git diff
//! --output=.env` writes or the key `git diff --no-index /dev/null
//! ~/.ssh/id_rsa` prints. So each such option (or subcommand, or script
//! command) becomes a piece of its own, pushed beside the program's forms
//! (`spec/shell.md` §6.4):
//!
//! * a command it runs is read as a `bash -c` script when written
//!   literally, so its commands are ordinary subjects; when it is computed,
//!   or is in a language of the program's own (a vim command, a less
//!   command), it is an opaque ordinary piece;
//! * a file it writes is a [`Kind::Write`] piece and a file it reads a
//!   [`Kind::Read`] piece, built as redirect targets are, so the file
//!   tools' rules decide them; a path with an expansion is an opaque piece
//!   of the same kind.
//!
//! The table ([`PROGRAMS`]) is data: per program, the options that do one
//! of these things and the options that take a value (so a cluster such as
//! `-nro out` and a value such as `-e -o` read right). The few programs
//! whose effects are not options (git's configuration keys and some
//! subcommands, sed and awk scripts, `dd`'s operands, `ssh host command`,
//! less's and vim's `+command`) have readers below. Each entry's source is
//! the program's manual (and GTFOBins for which of them developers are
//! caught by).
//!
//! A wrong guess here can only add a piece, never take one away: an option
//! read where the program would not read one asks where it need not, so
//! long options are matched by their unambiguous prefixes too, as
//! `getopt_long` and git's option parser accept them.

use super::analyse::{basename, Plan};
use super::parse::{snippet, Parser, Res, ARITH, BRACE, COMPUTED, GLOB, PARAM, SUBST};
use super::{subcommand, Kind, Piece};

/// What an option's value (or the option itself) makes the program do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Does {
    /// Runs the value as a command.
    Runs,
    /// Writes the file the value names.
    Writes,
    /// Reads the file the value names.
    Reads,
    /// Runs what the text does not show (a directory of programs, a
    /// configuration file that names commands, a command language of the
    /// program's own): an opaque piece, with the reason.
    Hides(&'static str),
    /// The program's operands are files it reads (`git diff --no-index`).
    OperandsRead,
    /// A git configuration `key=value` (`git -c`, `git clone --config`).
    GitConfig,
    /// A git configuration key whose value comes from the environment
    /// (`git --config-env=key=VAR`).
    GitConfigEnv,
    /// An ssh configuration `Key=Value` or `Key Value` (`ssh -o`).
    SshOption,
    /// tar's `--checkpoint-action`, which runs the command of `exec=`.
    TarAction,
}

/// How an option takes its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Takes {
    /// The next word, or joined (`-ofile`, `--output=file`).
    Value,
    /// Only joined (`-O<pager>`, `--html=<browser>`): without one the
    /// option does nothing this table is about.
    Joined,
    /// No value.
    Nothing,
}

/// One option of [`Program::opts`].
pub(super) struct Opt {
    /// Its spellings: `-o`, `--output`; a one-dash word of more than one
    /// letter (`-fprint`, `-TT`) is matched whole.
    pub(super) names: &'static [&'static str],
    pub(super) takes: Takes,
    pub(super) does: &'static [Does],
}

/// What a `+word` argument is to the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Plus {
    /// An operand like any other.
    Operand,
    /// A less command run at start-up (`less +F`, `less +'!sh'`).
    Less,
    /// A vim command run at start-up (`vim +42`, `vim '+!sh'`).
    Vim,
}

/// One program (or one group of a program's subcommands).
pub(super) struct Program {
    /// The base names it is called by.
    pub(super) names: &'static [&'static str],
    /// For git, the subcommands these options belong to.
    pub(super) subs: &'static [&'static str],
    /// The options that run, write or read something.
    pub(super) opts: &'static [Opt],
    /// Short options that take a value, whatever they do, so a cluster
    /// reads right (`sort -nro out`: `out` is `-o`'s).
    pub(super) short_values: &'static str,
    /// Long options that take the next word as their value.
    pub(super) long_values: &'static [&'static str],
    /// Long options without a value that are a prefix of one of `opts`
    /// (`--checkpoint`, `--checkpoint-action`), so they are not read as an
    /// abbreviation of it.
    pub(super) long_flags: &'static [&'static str],
    /// A first argument without a dash is a cluster of short options (tar's
    /// old style: `tar xIf prog a.tar`).
    pub(super) old_style: bool,
    pub(super) plus: Plus,
}

const NO: Program = Program {
    names: &[],
    subs: &[],
    opts: &[],
    short_values: "",
    long_values: &[],
    long_flags: &[],
    old_style: false,
    plus: Plus::Operand,
};

const fn runs(names: &'static [&'static str]) -> Opt {
    Opt {
        names,
        takes: Takes::Value,
        does: &[Does::Runs],
    }
}

const fn writes(names: &'static [&'static str]) -> Opt {
    Opt {
        names,
        takes: Takes::Value,
        does: &[Does::Writes],
    }
}

const fn reads(names: &'static [&'static str]) -> Opt {
    Opt {
        names,
        takes: Takes::Value,
        does: &[Does::Reads],
    }
}

/// An option whose value makes the program run what the text does not
/// show (a macro, so the slice is a constant).
macro_rules! hides {
    ($names:expr, $why:expr $(,)?) => {
        Opt {
            names: $names,
            takes: Takes::Value,
            does: &[Does::Hides($why)],
        }
    };
}

const CONFIG_FILE: &str = "reads a configuration file, which can name commands to run";

const LIST_FILE: &str =
    "reads the files a list names, which the command does not show: any file may be among them";

/// An option whose value is a file naming the files the program reads.
const fn reads_list(names: &'static [&'static str]) -> Opt {
    Opt {
        names,
        takes: Takes::Value,
        does: &[Does::Reads, Does::Hides(LIST_FILE)],
    }
}

const SSH_OPTS: &[Opt] = &[
    Opt {
        names: &["-o"],
        takes: Takes::Value,
        does: &[Does::SshOption],
    },
    Opt {
        names: &["-F"],
        takes: Takes::Value,
        does: &[Does::Reads, Does::Hides(CONFIG_FILE)],
    },
];

/// The table. `spec/shell.md` §6.4 lists it.
pub(super) const PROGRAMS: &[Program] = &[
    // git: the options of its subcommands (its global options and
    // configuration keys are read by `git` below).
    Program {
        names: &["git"],
        subs: &[
            "diff",
            "log",
            "show",
            "whatchanged",
            "diff-tree",
            "diff-index",
            "diff-files",
            "format-patch",
            "range-diff",
        ],
        opts: &[
            writes(&["--output"]),
            reads(&["-O"]),
            Opt {
                names: &["--no-index"],
                takes: Takes::Nothing,
                does: &[Does::OperandsRead],
            },
        ],
        short_values: "nO",
        long_flags: &["--output-indicator-new", "--output-indicator-old"],
        ..NO
    },
    Program {
        names: &["git"],
        subs: &["shortlog", "blame"],
        opts: &[writes(&["--output"])],
        ..NO
    },
    Program {
        names: &["git"],
        subs: &["format-patch"],
        opts: &[writes(&["-o", "--output-directory"])],
        ..NO
    },
    Program {
        names: &["git"],
        subs: &["archive"],
        opts: &[writes(&["-o", "--output"]), runs(&["--exec"])],
        short_values: "o",
        long_values: &["--remote", "--prefix", "--format"],
        ..NO
    },
    Program {
        names: &["git"],
        subs: &["fetch", "pull", "ls-remote"],
        opts: &[runs(&["--upload-pack", "--exec"])],
        ..NO
    },
    Program {
        names: &["git"],
        subs: &["clone"],
        opts: &[
            runs(&["-u", "--upload-pack"]),
            Opt {
                names: &["-c", "--config"],
                takes: Takes::Value,
                does: &[Does::GitConfig],
            },
            hides!(
                &["--template"],
                "installs the hooks of a template directory, which git then runs",
            ),
        ],
        short_values: "obcju",
        long_values: &[
            "--origin",
            "--branch",
            "--depth",
            "--reference",
            "--separate-git-dir",
        ],
        ..NO
    },
    Program {
        names: &["git"],
        subs: &["init"],
        opts: &[hides!(
            &["--template"],
            "installs the hooks of a template directory, which git then runs",
        )],
        ..NO
    },
    Program {
        names: &["git"],
        subs: &["push", "send-pack"],
        opts: &[runs(&["--receive-pack", "--exec"])],
        short_values: "o",
        long_values: &["--repo", "--push-option"],
        ..NO
    },
    Program {
        names: &["git"],
        subs: &["difftool"],
        opts: &[runs(&["-x", "--extcmd"])],
        short_values: "tx",
        long_values: &["--tool"],
        ..NO
    },
    Program {
        names: &["git"],
        subs: &["grep"],
        opts: &[
            Opt {
                names: &["-O", "--open-files-in-pager"],
                takes: Takes::Joined,
                does: &[Does::Runs],
            },
            reads(&["-f"]),
        ],
        short_values: "efABCm",
        ..NO
    },
    Program {
        names: &["git"],
        subs: &["rebase"],
        opts: &[runs(&["-x", "--exec"])],
        short_values: "sXx",
        long_values: &["--onto", "--strategy", "--strategy-option"],
        ..NO
    },
    Program {
        names: &["git"],
        subs: &["commit", "tag", "merge", "notes"],
        opts: &[reads(&["-F", "--file"]), reads(&["-t", "--template"])],
        short_values: "mFtCcu",
        long_values: &[
            "--message",
            "--reuse-message",
            "--reedit-message",
            "--author",
        ],
        ..NO
    },
    Program {
        names: &["git"],
        subs: &["blame"],
        opts: &[reads(&["--contents"]), reads(&["-S", "--ignore-revs-file"])],
        short_values: "LS",
        ..NO
    },
    Program {
        names: &["git"],
        subs: &["config"],
        opts: &[writes(&["-f", "--file"])],
        short_values: "f",
        long_values: &["--blob", "--type", "--default", "--comment", "--value"],
        ..NO
    },
    Program {
        names: &["git"],
        subs: &["filter-branch"],
        opts: &[runs(&[
            "--env-filter",
            "--tree-filter",
            "--index-filter",
            "--parent-filter",
            "--msg-filter",
            "--commit-filter",
            "--tag-name-filter",
        ])],
        long_values: &["--subdirectory-filter", "--prune-empty", "-d", "--original"],
        ..NO
    },
    Program {
        names: &["git"],
        subs: &["send-email"],
        opts: &[runs(&[
            "--to-cmd",
            "--cc-cmd",
            "--header-cmd",
            "--sendmail-cmd",
            "--smtp-server",
        ])],
        ..NO
    },
    Program {
        names: &["rg"],
        opts: &[
            runs(&["--pre"]),
            runs(&["--hostname-bin"]),
            reads(&["-f", "--file"]),
            reads(&["--ignore-file"]),
        ],
        short_values: "ABCdEefgjmMrtT",
        long_values: &[
            "--regexp",
            "--glob",
            "--iglob",
            "--type",
            "--type-not",
            "--type-add",
            "--replace",
            "--max-count",
            "--max-depth",
            "--context",
            "--after-context",
            "--before-context",
            "--encoding",
            "--colors",
            "--pre-glob",
            "--sort",
            "--sortr",
            "--threads",
            "--max-filesize",
            "--max-columns",
            "--engine",
        ],
        long_flags: &["--pre-glob"],
        ..NO
    },
    // diff reads the files these options name beside its operands (a
    // review read a linked secret through `--from-file=`).
    Program {
        names: &["diff"],
        opts: &[reads(&["--from-file", "--to-file", "--exclude-from", "-X"])],
        short_values: "CUFIXSx",
        long_values: &[
            "--context",
            "--unified",
            "--label",
            "--ignore-matching-lines",
            "--exclude",
            "--starting-file",
            "--width",
            "--tabsize",
            "--line-format",
            "--show-function-line",
            "--horizon-lines",
            "--palette",
            "--color",
        ],
        ..NO
    },
    Program {
        names: &["grep", "egrep", "fgrep"],
        opts: &[reads(&["-f", "--file"]), reads(&["--exclude-from"])],
        short_values: "ABCDdefmX",
        long_values: &["--regexp", "--max-count", "--label", "--context"],
        ..NO
    },
    Program {
        names: &["sort"],
        opts: &[
            writes(&["-o", "--output"]),
            runs(&["--compress-program"]),
            reads_list(&["--files0-from"]),
            reads(&["--random-source"]),
        ],
        short_values: "kotST",
        long_values: &[
            "--key",
            "--field-separator",
            "--buffer-size",
            "--temporary-directory",
        ],
        ..NO
    },
    Program {
        names: &["tar", "gtar", "bsdtar"],
        opts: &[
            runs(&["--to-command"]),
            runs(&["-I", "--use-compress-program"]),
            Opt {
                names: &["--checkpoint-action"],
                takes: Takes::Value,
                does: &[Does::TarAction],
            },
            runs(&["--rsh-command"]),
            runs(&["--rmt-command"]),
            runs(&["-F", "--info-script", "--new-volume-script"]),
            reads_list(&["-T", "--files-from"]),
            reads(&["-X", "--exclude-from"]),
            writes(&["-g", "--listed-incremental"]),
            writes(&["--index-file"]),
        ],
        short_values: "bCfFgHIKLNTVX",
        long_values: &["--file", "--directory", "--exclude"],
        long_flags: &["--checkpoint", "--to-stdout"],
        old_style: true,
        ..NO
    },
    Program {
        names: &["zip"],
        opts: &[
            runs(&["-TT", "--unzip-command"]),
            writes(&["-O", "--output-file"]),
        ],
        short_values: "bnOPtZ",
        ..NO
    },
    Program {
        names: &["rsync"],
        opts: &[
            runs(&["-e", "--rsh"]),
            runs(&["--rsync-path"]),
            reads_list(&["--files-from"]),
            reads(&["--exclude-from"]),
            reads(&["--include-from"]),
            reads(&["--password-file"]),
            reads(&["--read-batch"]),
            writes(&["--log-file"]),
            writes(&["--write-batch", "--only-write-batch"]),
        ],
        short_values: "eBfTM",
        ..NO
    },
    Program {
        names: &["ssh"],
        opts: SSH_OPTS,
        short_values: "BbcDEeFIiJLlmOopQRSWw",
        ..NO
    },
    Program {
        names: &["ssh"],
        opts: &[writes(&["-E"])],
        ..NO
    },
    Program {
        names: &["scp", "sftp"],
        opts: SSH_OPTS,
        short_values: "BbcDFiJlOoPRSX",
        ..NO
    },
    Program {
        names: &["scp", "sftp"],
        opts: &[
            runs(&["-S"]),
            runs(&["-D"]),
            Opt {
                names: &["-b"],
                takes: Takes::Value,
                does: &[
                    Does::Reads,
                    Does::Hides("reads a batch file, whose `!` lines run commands"),
                ],
            },
        ],
        ..NO
    },
    Program {
        names: &["man"],
        opts: &[
            runs(&["-P", "--pager"]),
            Opt {
                names: &["-H", "--html"],
                takes: Takes::Joined,
                does: &[Does::Runs],
            },
            Opt {
                names: &["-C", "--config-file"],
                takes: Takes::Value,
                does: &[Does::Reads, Does::Hides(CONFIG_FILE)],
            },
        ],
        short_values: "CMPSemLprRTE",
        ..NO
    },
    Program {
        names: &["less"],
        opts: &[
            writes(&["-o", "--log-file"]),
            writes(&["-O", "--LOG-FILE"]),
            Opt {
                names: &["-k", "--lesskey-file", "--lesskey-src"],
                takes: Takes::Value,
                does: &[Does::Reads, Does::Hides(CONFIG_FILE)],
            },
        ],
        short_values: "bhjkoOpPtTxyzD#",
        plus: Plus::Less,
        ..NO
    },
    Program {
        names: &["vi", "vim", "nvim", "view", "vimdiff", "ex", "rvim", "gvim"],
        opts: &[
            hides!(
                &["-c", "--cmd"],
                "runs an editor command, which may run a shell"
            ),
            Opt {
                names: &["-S", "-u", "-U"],
                takes: Takes::Value,
                does: &[
                    Does::Reads,
                    Does::Hides("sources an editor script, which may run a shell"),
                ],
            },
            hides!(&["-s"], "replays editor keystrokes, which may run a shell"),
            writes(&["-w", "-W"]),
        ],
        short_values: "cSuUswWirTtq",
        plus: Plus::Vim,
        ..NO
    },
    Program {
        names: &["find"],
        opts: &[
            writes(&["-fprint", "-fprint0", "-fls", "-fprintf"]),
            reads_list(&["-files0-from"]),
        ],
        ..NO
    },
    Program {
        names: &["ss"],
        opts: &[writes(&["-D", "--diag"]), reads(&["-F", "--filter"])],
        short_values: "DFfAN",
        long_values: &["--family", "--query", "--net"],
        ..NO
    },
    Program {
        names: &["wc"],
        opts: &[reads_list(&["--files0-from"])],
        ..NO
    },
    Program {
        names: &["du"],
        opts: &[
            reads_list(&["--files0-from"]),
            reads(&["-X", "--exclude-from"]),
        ],
        short_values: "BdtX",
        long_values: &[
            "--block-size",
            "--max-depth",
            "--threshold",
            "--exclude",
            "--time-style",
        ],
        ..NO
    },
    Program {
        names: &["touch"],
        opts: &[reads(&["-r", "--reference"])],
        short_values: "drt",
        long_values: &["--date", "--time"],
        ..NO
    },
    // `mv` and `cp` write into the directory of `-t` whatever their
    // operands say.
    // A backup suffix names the backups after the files plus the suffix:
    // `mv -T -b -S e empty .claud` renames `.claud` to `.claude` (a review
    // planted `.claude/settings.json` so in acceptEdits). Opaque.
    Program {
        names: &["mv", "cp", "ln", "install"],
        opts: &[
            writes(&["-t", "--target-directory"]),
            Opt {
                names: &["-S", "--suffix"],
                takes: Takes::Value,
                does: &[Does::Hides(
                    "names the backups it writes: each takes a file's name plus the suffix, which may make a protected name",
                )],
            },
        ],
        short_values: "St",
        long_values: &["--suffix"],
        ..NO
    },
    Program {
        names: &["strace"],
        opts: &[writes(&["-o", "--output"])],
        ..NO
    },
    Program {
        names: &["script"],
        opts: &[
            writes(&["-O", "--log-out"]),
            writes(&["-B", "--log-io"]),
            writes(&["-I", "--log-in"]),
            writes(&["-T", "--log-timing"]),
        ],
        short_values: "cEomOBIT",
        ..NO
    },
    Program {
        names: &["at", "batch"],
        opts: &[reads(&["-f"])],
        short_values: "qftb",
        ..NO
    },
];

/// The programs that run a command given in their arguments or their
/// input, beyond the wrappers of `analyse` (`spec/shell.md` §6.1).
#[inline]
pub(super) fn is_wrapper(name: &str) -> bool {
    matches!(
        name.as_bytes(),
        b"busybox" | b"toybox" | b"su" | b"script" | b"at" | b"batch" | b"parallel"
    )
}

/// Whether words added to `name`'s arguments (by `xargs`) may make it run,
/// write or hide something: a program with a reader of its own or a row
/// of the table that does more than read.
pub(super) fn acts_through_arguments(name: &str) -> bool {
    matches!(
        name,
        "git" | "sed" | "gsed" | "awk" | "gawk" | "mawk" | "nawk" | "dd" | "ssh" | "find"
    ) || PROGRAMS.iter().any(|p| {
        p.names.contains(&name)
            && p.opts.iter().any(|o| {
                o.does
                    .iter()
                    .any(|d| !matches!(d, Does::Reads | Does::OperandsRead))
            })
    })
}

/// Whether `name` (a base name) has an entry in the table, for the quick
/// path, which leaves such a program's options to the analysis.
#[inline]
pub(super) fn has_options(name: &str) -> bool {
    matches!(
        name.as_bytes(),
        b"rg"
            | b"diff"
            | b"ln"
            | b"install"
            | b"grep"
            | b"egrep"
            | b"fgrep"
            | b"sort"
            | b"zip"
            | b"rsync"
            | b"scp"
            | b"sftp"
            | b"man"
            | b"less"
            | b"vi"
            | b"vim"
            | b"nvim"
            | b"view"
            | b"vimdiff"
            | b"ex"
            | b"rvim"
            | b"gvim"
            | b"strace"
            | b"ss"
            | b"wc"
            | b"du"
            | b"touch"
            | b"mv"
            | b"cp"
    )
}

/// Whether the pieces of `name` depend on words that need not start with
/// `-` or `+` (a script, an operand, tar's old-style options, ssh's remote
/// command): the quick path leaves every such command to the analysis.
#[inline]
pub(super) fn reads_operands(name: &str) -> bool {
    matches!(
        name.as_bytes(),
        b"sed"
            | b"gsed"
            | b"awk"
            | b"gawk"
            | b"mawk"
            | b"nawk"
            | b"dd"
            | b"ssh"
            | b"tar"
            | b"gtar"
            | b"bsdtar"
    )
}

/// Whether a word after `git` may be a subcommand whose operands run a
/// command or set one (`bisect run`, `submodule foreach`, `config`): the
/// quick path leaves the command to the analysis.
#[inline]
pub(super) fn git_word_declines(word: &str) -> bool {
    matches!(word.as_bytes(), b"bisect" | b"submodule" | b"config")
}

/// Something an argument makes the program do, found before any piece is
/// pushed (the words are borrowed while they are read).
enum Effect {
    /// A command written literally, read as a script.
    Runs { script: String },
    /// A command the text does not show.
    Hides { text: String, why: String },
    /// A file written or read; `computed` when the path has an expansion.
    File {
        kind: Kind,
        text: String,
        path: String,
        computed: bool,
    },
    /// `words[start..end]` is a command (`git bisect run cmd …`).
    Command { start: usize, end: usize },
}

/// Where an option's value is.
#[derive(Clone, Copy)]
struct Val<'v> {
    text: &'v str,
    /// The word it is in.
    word: usize,
    /// The option's first word, for the piece's text.
    from: usize,
}

fn is_bool(v: &str) -> bool {
    matches!(
        v.to_ascii_lowercase().as_str(),
        "" | "true" | "false" | "yes" | "no" | "on" | "off" | "1" | "0"
    )
}

/// What git does with the configuration `key=value`, as `(does, value)`
/// pairs: the keys whose value is a command (git-config(1): the `core`
/// hooks and pagers, aliases with `!`, drivers, helpers, …), a file, or
/// something that makes git run what the text does not show.
fn git_config(kv: &str) -> Vec<(Does, String)> {
    let (key, value) = kv.split_once('=').unwrap_or((kv, "true"));
    let parts: Vec<&str> = key.split('.').collect();
    let section = parts
        .first()
        .map(|s| s.to_ascii_lowercase())
        .unwrap_or_default();
    let var = parts
        .last()
        .map(|s| s.to_ascii_lowercase())
        .unwrap_or_default();
    let sub = parts.len() > 2;
    let sub_name = if sub {
        parts
            .get(1..parts.len() - 1)
            .map(|m| m.join("."))
            .unwrap_or_default()
    } else {
        String::new()
    };
    let run = |v: &str| vec![(Does::Runs, v.to_string())];
    let hide = |why: &'static str| vec![(Does::Hides(why), String::new())];
    match (section.as_str(), sub, var.as_str()) {
        // Any subsection too: newer gits read `alias.NAME.command`.
        ("alias", _, _) => match value.strip_prefix('!') {
            Some(script) => run(script),
            None => run(&format!("git {value}")),
        },
        (
            "core",
            false,
            "pager" | "editor" | "sshcommand" | "askpass" | "gitproxy" | "alternaterefscommand",
        )
        | ("sequence", false, "editor")
        | ("diff", false, "external")
        | ("diff", true, "textconv" | "command")
        | ("merge", true, "driver")
        | ("mergetool" | "difftool", true, "cmd" | "path")
        | ("filter", true, "clean" | "smudge" | "process")
        | ("gpg", _, "program" | "defaultkeycommand")
        | ("uploadpack", false, "packobjectshook")
        | ("remote", true, "uploadpack" | "receivepack")
        | ("web", false, "browser")
        | ("browser" | "man", true, "cmd" | "path")
        | ("interactive", false, "difffilter")
        | ("sendemail", _, "tocmd" | "cccmd" | "headercmd" | "sendmailcmd")
        | ("trailer", true, "command" | "cmd")
        // `git imap-send` runs the tunnel, `git archive --format=X` runs
        // `tar.X.command` (a review ran both through real git).
        | ("imap", false, "tunnel")
        | ("tar", true, "command")
        | ("instaweb", false, "httpd" | "browser")
        | ("guitool", true, "cmd") => run(value),
        ("sendemail", _, "smtpserver") if value.contains('/') => run(value),
        ("core", false, "fsmonitor") | ("pager", false, _) => {
            if is_bool(value) {
                Vec::new()
            } else {
                run(value)
            }
        }
        ("credential", _, "helper") => match value.strip_prefix('!') {
            Some(script) => run(script),
            None if value.is_empty() => Vec::new(),
            None if value.starts_with('/') => run(value),
            None => run(&format!("git credential-{value}")),
        },
        ("submodule", true, "update") => match value.strip_prefix('!') {
            Some(script) => run(script),
            None => Vec::new(),
        },
        ("core", false, "hookspath") => hide("names the directory git runs its hooks from"),
        ("init", false, "templatedir") => {
            hide("names the template directory whose hooks git installs")
        }
        ("remote", true, "vcs") => hide("makes git run a remote helper the text does not show"),
        ("protocol", _, "allow") => {
            let ext = !sub || sub_name.eq_ignore_ascii_case("ext");
            if ext && !value.eq_ignore_ascii_case("never") && !value.eq_ignore_ascii_case("user") {
                hide("allows the `ext::` transport, which runs any command")
            } else {
                Vec::new()
            }
        }
        ("include", false, "path") | ("includeif", true, "path") => vec![
            (Does::Reads, value.to_string()),
            (Does::Hides(CONFIG_FILE), String::new()),
        ],
        ("core", false, "attributesfile" | "excludesfile")
        | ("commit", false, "template")
        | ("blame", false, "ignorerevsfile")
        | ("mailmap", false, "file") => vec![(Does::Reads, value.to_string())],
        _ => Vec::new(),
    }
}

/// What ssh does with the option `Key=Value` (or `Key Value`):
/// ssh_config(5)'s keys whose value is a command.
fn ssh_option(opt: &str) -> Option<(Does, String)> {
    let cut = opt.find(['=', ' ', '\t']).unwrap_or(opt.len());
    let key = opt.get(..cut).unwrap_or("").to_ascii_lowercase();
    let value = opt
        .get(cut..)
        .unwrap_or("")
        .trim_start_matches([' ', '\t'])
        .strip_prefix('=')
        .map_or_else(
            || opt.get(cut..).unwrap_or("").trim_start(),
            |v| v.trim_start(),
        );
    match key.as_str() {
        "proxycommand" | "localcommand" | "knownhostscommand" | "remotecommand" => {
            if value.eq_ignore_ascii_case("none") || value.is_empty() {
                None
            } else {
                Some((Does::Runs, value.to_string()))
            }
        }
        "include" | "match" | "permitlocalcommand" => Some((
            Does::Hides("sets an ssh option that can run commands"),
            String::new(),
        )),
        _ => None,
    }
}

/// Whether a less command given as `+cmd` only moves or searches: a line
/// number, `F`, `G`, `g`, or a search without `!`, `|` or a control
/// character. Anything else may run a shell (`!`), pipe (`|`), start an
/// editor (`v`) or save (`s`).
fn less_command_is_harmless(cmd: &str) -> bool {
    let cmd = cmd.strip_prefix('+').unwrap_or(cmd);
    let digits = cmd.trim_start_matches(|c: char| c.is_ascii_digit());
    if matches!(digits, "" | "F" | "G" | "g" | "%" | "p") {
        return true;
    }
    match cmd.strip_prefix(['/', '?']) {
        Some(pat) => !pat.contains(['!', '|']) && !pat.chars().any(|c| c.is_control()),
        None => false,
    }
}

/// Whether a vim command given as `+cmd` only moves: none, a line number or
/// a search.
fn vim_command_is_harmless(cmd: &str) -> bool {
    cmd.is_empty()
        || cmd.bytes().all(|c| c.is_ascii_digit())
        || (cmd.starts_with('/') && !cmd.chars().any(|c| c.is_control()))
}

impl Parser<'_, '_, '_> {
    /// Pushes the pieces of what the program at `prog` runs, writes or
    /// reads through its arguments `words[prog + 1..b]` (`a..prog` are its
    /// assignments, which a command it runs inherits).
    pub(super) fn option_effects(&mut self, a: usize, prog: usize, b: usize) -> Res<()> {
        let name = basename(self.v(prog)).to_string();
        let mut fx: Vec<Effect> = Vec::new();
        let known = matches!(
            name.as_str(),
            "git" | "sed" | "gsed" | "awk" | "gawk" | "mawk" | "nawk" | "dd" | "ssh" | "find"
        ) || PROGRAMS.iter().any(|p| p.names.contains(&name.as_str()));
        if known {
            self.glob_options(prog, b, &mut fx);
        }
        match name.as_str() {
            "git" => self.git(prog, b, &mut fx),
            "sed" | "gsed" => self.sed(prog, b, &mut fx),
            "awk" | "gawk" | "mawk" | "nawk" => self.awk(prog, b, &mut fx),
            "dd" => self.dd(prog, b, &mut fx),
            "ssh" => self.ssh(prog, b, &mut fx),
            "find" => self.find_effects(prog, b, &mut fx),
            n => {
                let entries: Vec<&Program> =
                    PROGRAMS.iter().filter(|p| p.names.contains(&n)).collect();
                if entries.is_empty() {
                    return Ok(());
                }
                self.scan(&entries, prog + 1, b, None, &mut fx);
            }
        }
        for e in fx {
            match e {
                Effect::Runs { script } => {
                    let env = self.assignments(a, prog);
                    self.nested(&script, env)?;
                }
                Effect::Hides { text, why } => {
                    self.out.push(Piece::opaque(Kind::Command, text, why))?;
                }
                Effect::File {
                    kind,
                    text,
                    path,
                    computed,
                } => self.push_file(kind, text, &path, computed)?,
                Effect::Command { start, end } => {
                    self.wrapped_command((a, prog), start, end, false, false)?;
                }
            }
        }
        Ok(())
    }

    /// A file piece, as a redirect target's: nothing for the null device,
    /// the standard streams and the devices that only produce bytes
    /// (`/dev/zero`, `/dev/urandom`), or when the file tool is not
    /// configured; opaque when the path is computed.
    fn push_file(&mut self, kind: Kind, text: String, path: &str, computed: bool) -> Res<()> {
        let tool = match kind {
            Kind::Write => &self.out.cfg.redirect_write,
            _ => &self.out.cfg.redirect_read,
        };
        let stream = match kind {
            Kind::Write => matches!(path, "/dev/stdout" | "/dev/stderr" | "-"),
            _ => matches!(
                path,
                "/dev/stdin" | "-" | "/dev/zero" | "/dev/urandom" | "/dev/random"
            ),
        };
        if tool.is_none() || path.is_empty() || path == "/dev/null" || stream {
            return Ok(());
        }
        let p = if computed {
            Piece::opaque(
                kind,
                text,
                format!(
                    "the file `{}` is computed when the command runs",
                    snippet(path)
                ),
            )
        } else {
            Piece::with_value(kind, text, path.to_string())
        };
        self.out.push(p)
    }

    /// The text shown for an option's words `from..=to`.
    fn opt_text(&self, from: usize, to: usize) -> String {
        self.shown(from, to + 1)
    }

    /// Records what `does` does with the value `val`.
    fn effect(&self, does: Does, val: Val<'_>, fx: &mut Vec<Effect>) {
        let computed = self.w(val.word).flags & COMPUTED != 0;
        let text = self.opt_text(val.from, val.word);
        match does {
            Does::Runs => {
                if computed {
                    fx.push(Effect::Hides {
                        why: format!(
                            "the command `{}` runs is computed when the command runs",
                            snippet(&text)
                        ),
                        text,
                    });
                } else {
                    fx.push(Effect::Runs {
                        script: val.text.to_string(),
                    });
                }
            }
            Does::Writes | Does::Reads => fx.push(Effect::File {
                kind: if does == Does::Writes {
                    Kind::Write
                } else {
                    Kind::Read
                },
                text,
                path: val.text.to_string(),
                computed,
            }),
            Does::Hides(why) => fx.push(Effect::Hides {
                why: format!("`{}` {why}", snippet(&text)),
                text,
            }),
            Does::OperandsRead => {}
            Does::GitConfig | Does::GitConfigEnv => {
                let env = does == Does::GitConfigEnv;
                let effects = git_config(val.text);
                if effects.is_empty() {
                    return;
                }
                if computed || env {
                    let why = if env {
                        "takes the value of a git setting that can run commands from the environment"
                    } else {
                        "sets a git setting that can run commands, to a value computed when the command runs"
                    };
                    fx.push(Effect::Hides {
                        why: format!("`{}` {why}", snippet(&text)),
                        text,
                    });
                    return;
                }
                for (d, v) in effects {
                    self.effect(d, Val { text: &v, ..val }, fx);
                }
            }
            Does::SshOption => {
                if let Some((d, v)) = ssh_option(val.text) {
                    if computed {
                        fx.push(Effect::Hides {
                            why: format!(
                                "`{}` sets an ssh option computed when the command runs",
                                snippet(&text)
                            ),
                            text,
                        });
                    } else {
                        self.effect(d, Val { text: &v, ..val }, fx);
                    }
                }
            }
            Does::TarAction => {
                if let Some(cmd) = val.text.strip_prefix("exec=") {
                    self.effect(Does::Runs, Val { text: cmd, ..val }, fx);
                }
            }
        }
    }

    fn effects_of(
        &self,
        opt: &Opt,
        val: Option<Val<'_>>,
        ops_read: &mut bool,
        fx: &mut Vec<Effect>,
    ) {
        for &d in opt.does {
            if d == Does::OperandsRead {
                *ops_read = true;
            } else if let Some(v) = val {
                self.effect(d, v, fx);
            }
        }
    }

    /// Reads `words[i..b]` by the options of `entries`, recording what they
    /// do; the operands (words that are not options or their values) are
    /// returned, and with `stop`, reading ends at operand number `stop`
    /// (counted from 0), whose index is returned as the second value.
    fn scan(
        &self,
        entries: &[&Program],
        mut i: usize,
        b: usize,
        stop: Option<usize>,
        fx: &mut Vec<Effect>,
    ) -> (Vec<usize>, usize) {
        let mut operands = Vec::new();
        let mut ops_read = false;
        let first = i;
        let mut ended = false;
        let effectful = entries.iter().any(|p| {
            p.opts.iter().any(|o| {
                o.does
                    .iter()
                    .any(|d| !matches!(d, Does::Reads | Does::OperandsRead))
            })
        });
        while i < b {
            let v = self.v(i);
            if ended || v == "-" || !(v.starts_with('-') || v.starts_with('+')) || v == "--" {
                if v == "--" && !ended {
                    ended = true;
                    i += 1;
                    continue;
                }
                if !ended && effectful && self.may_become_option(i) {
                    // `find . $P` with `P='-exec rm -rf ~ ;'`, or `tar czf
                    // a.tgz *` beside a file named `--checkpoint-action=…`:
                    // the shell makes the word an option the text does not
                    // show.
                    let text = self.opt_text(i, i);
                    fx.push(Effect::Hides {
                        why: format!(
                            "`{}` is expanded when the command runs and could become an option that runs or writes something",
                            snippet(&text)
                        ),
                        text,
                    });
                }
                let old = i == first && !ended && entries.iter().any(|p| p.old_style);
                if old && !v.is_empty() {
                    i = self.cluster(entries, v, i, b, fx);
                    continue;
                }
                if stop == Some(operands.len()) {
                    break;
                }
                operands.push(i);
                i += 1;
                continue;
            }
            if let Some(cmd) = v.strip_prefix('+') {
                let plus = entries.first().map_or(Plus::Operand, |p| p.plus);
                let harmless = match plus {
                    Plus::Operand => {
                        if stop == Some(operands.len()) {
                            break;
                        }
                        operands.push(i);
                        i += 1;
                        continue;
                    }
                    Plus::Less => less_command_is_harmless(cmd),
                    Plus::Vim => vim_command_is_harmless(cmd),
                };
                if !harmless {
                    let text = self.opt_text(i, i);
                    fx.push(Effect::Hides {
                        why: format!(
                            "`{}` runs a command of the program's own, which may run a shell",
                            snippet(&text)
                        ),
                        text,
                    });
                }
                i += 1;
                continue;
            }
            if let Some(long) = v.strip_prefix("--") {
                let (key, joined) = match long.split_once('=') {
                    Some((k, val)) => (k, Some(val)),
                    None => (long, None),
                };
                let dashed = format!("--{key}");
                let exact = |n: &&str| *n == dashed;
                let found = entries
                    .iter()
                    .flat_map(|p| p.opts.iter())
                    .find(|o| o.names.iter().any(exact));
                let known = entries
                    .iter()
                    .any(|p| p.long_values.iter().any(exact) || p.long_flags.iter().any(exact));
                let found = match found {
                    Some(o) => Some(o),
                    None if known => None,
                    // An unambiguous prefix is the option (`--compress-prog`).
                    None => entries.iter().flat_map(|p| p.opts.iter()).find(|o| {
                        o.names.iter().any(|n| {
                            n.starts_with("--") && n.len() > dashed.len() && n.starts_with(&dashed)
                        })
                    }),
                };
                let takes_next = entries.iter().any(|p| p.long_values.iter().any(exact));
                match found {
                    Some(o) => {
                        let val = match (o.takes, joined) {
                            (Takes::Nothing, _) => None,
                            (_, Some(j)) => Some(Val {
                                text: j,
                                word: i,
                                from: i,
                            }),
                            (Takes::Joined, None) => None,
                            (Takes::Value, None) if i + 1 < b => {
                                i += 1;
                                Some(Val {
                                    text: self.v(i),
                                    word: i,
                                    from: i - 1,
                                })
                            }
                            (Takes::Value, None) => None,
                        };
                        self.effects_of(o, val, &mut ops_read, fx);
                    }
                    None if takes_next && joined.is_none() => i += 1,
                    None => {}
                }
                i += 1;
                continue;
            }
            // A one-dash word matched whole (`-fprint`, `-TT`).
            if let Some(o) = entries
                .iter()
                .flat_map(|p| p.opts.iter())
                .find(|o| o.names.iter().any(|n| n.len() > 2 && *n == v))
            {
                let val = match o.takes {
                    Takes::Value if i + 1 < b => {
                        i += 1;
                        Some(Val {
                            text: self.v(i),
                            word: i,
                            from: i - 1,
                        })
                    }
                    _ => None,
                };
                self.effects_of(o, val, &mut ops_read, fx);
                i += 1;
                continue;
            }
            let cluster = v.get(1..).unwrap_or("");
            if entries.iter().any(|p| p.names.contains(&"find")) {
                // find's words are one-dash names, not clusters.
                i += 1;
                continue;
            }
            i = self.cluster_at(entries, cluster, i, b, &mut ops_read, fx);
        }
        if ops_read {
            for &k in &operands {
                let text = self.opt_text(k, k);
                fx.push(Effect::File {
                    kind: Kind::Read,
                    text,
                    path: self.v(k).to_string(),
                    computed: self.w(k).flags & COMPUTED != 0,
                });
            }
        }
        (operands, i)
    }

    /// Whether word `k` may expand to a word starting with `-` or `+`: an
    /// expansion or an unquoted glob at its start (`$P`, `"$P"`, `$(…)`,
    /// `*`, `?x`, `[-]*`, `{-a,b}`). A word with a literal first character
    /// cannot.
    /// An option spelled with an unquoted glob (`-exe?`, `--o*`) becomes
    /// whatever file name in the directory matches it: `find . -exe? cmd
    /// {} \;` beside a file named `-exec` runs `cmd`, and `git log --o*`
    /// beside `--output=x` writes `x` (a review ran both). Opaque, as a
    /// word that may become an option is.
    fn glob_options(&self, prog: usize, b: usize, fx: &mut Vec<Effect>) {
        for k in prog + 1..b {
            let v = self.v(k);
            if v == "--" {
                break;
            }
            if v.len() > 1
                && (v.starts_with('-') || v.starts_with('+'))
                && self.w(k).flags & (GLOB | BRACE) != 0
            {
                let text = self.opt_text(k, k);
                fx.push(Effect::Hides {
                    why: format!(
                        "`{}` is an option spelled with a glob or braces: it becomes what they expand to (a file name that matches, several options) when the command runs",
                        snippet(&text)
                    ),
                    text,
                });
            }
        }
    }

    fn may_become_option(&self, k: usize) -> bool {
        let flags = self.w(k).flags;
        let first = self.v(k).bytes().next();
        (flags & (PARAM | SUBST | ARITH) != 0 && matches!(first, Some(b'$' | b'`')))
            || (flags & GLOB != 0 && matches!(first, Some(b'*' | b'?' | b'[')))
            || (flags & BRACE != 0 && first == Some(b'{'))
    }

    /// tar's old style: the first word's letters are options, whose values
    /// are the next words in order. Returns the index after them.
    fn cluster(
        &self,
        entries: &[&Program],
        v: &str,
        i: usize,
        b: usize,
        fx: &mut Vec<Effect>,
    ) -> usize {
        let mut next = i + 1;
        for c in v.chars() {
            let short = format!("-{c}");
            let takes = entries.iter().any(|p| p.short_values.contains(c));
            let opt = entries
                .iter()
                .flat_map(|p| p.opts.iter())
                .find(|o| o.names.contains(&short.as_str()));
            if takes && next < b {
                if let Some(o) = opt {
                    let val = Val {
                        text: self.v(next),
                        word: next,
                        from: i,
                    };
                    let mut unused = false;
                    self.effects_of(o, Some(val), &mut unused, fx);
                }
                next += 1;
            }
        }
        next
    }

    /// A cluster of short options (`-nro out`, `-oout`) at word `i`.
    /// Returns the index after it (and its value).
    fn cluster_at(
        &self,
        entries: &[&Program],
        cluster: &str,
        i: usize,
        b: usize,
        ops_read: &mut bool,
        fx: &mut Vec<Effect>,
    ) -> usize {
        for (k, c) in cluster.char_indices() {
            let short = format!("-{c}");
            let rest = cluster.get(k + c.len_utf8()..).unwrap_or("");
            let opt = entries
                .iter()
                .flat_map(|p| p.opts.iter())
                .find(|o| o.names.contains(&short.as_str()));
            let takes = entries.iter().any(|p| p.short_values.contains(c))
                || opt.is_some_and(|o| o.takes != Takes::Nothing);
            if !takes {
                if let Some(o) = opt {
                    self.effects_of(o, None, ops_read, fx);
                }
                continue;
            }
            let joined = !rest.is_empty();
            let val = if joined {
                Some(Val {
                    text: rest,
                    word: i,
                    from: i,
                })
            } else if opt.is_some_and(|o| o.takes == Takes::Joined) || i + 1 >= b {
                None
            } else {
                Some(Val {
                    text: self.v(i + 1),
                    word: i + 1,
                    from: i,
                })
            };
            if let Some(o) = opt {
                self.effects_of(o, val, ops_read, fx);
            }
            let joined_only = opt.is_some_and(|o| o.takes == Takes::Joined);
            return if joined || joined_only || i + 1 >= b {
                i + 1
            } else {
                i + 2
            };
        }
        i + 1
    }

    /// git: the global options (`-c`, `--config-env`, `--exec-path=`), the
    /// subcommand's options, and the subcommands that run a command
    /// (`bisect run`, `submodule foreach`) or set a configuration key
    /// (`config`).
    fn git(&self, prog: usize, b: usize, fx: &mut Vec<Effect>) {
        let Some(globals) = subcommand::program("git") else {
            return;
        };
        let words: Vec<&str> = (prog..b).map(|i| self.v(i)).collect();
        let mut i = prog + 1;
        let mut sub = None;
        while i < b {
            let v = self.v(i);
            if self.w(i).flags & COMPUTED != 0 {
                break;
            }
            let val = |k: usize, text| Val {
                text,
                word: k,
                from: i,
            };
            if (v == "-c" || v == "--config-env") && i + 1 < b {
                let d = if v == "-c" {
                    Does::GitConfig
                } else {
                    Does::GitConfigEnv
                };
                self.effect(d, val(i + 1, self.v(i + 1)), fx);
                i += 2;
                continue;
            }
            if let Some(kv) = v.strip_prefix("--config-env=") {
                self.effect(Does::GitConfigEnv, val(i, kv), fx);
            }
            if let Some(dir) = v.strip_prefix("--exec-path=") {
                self.effect(
                    Does::Hides("names the directory git runs its commands from"),
                    val(i, dir),
                    fx,
                );
            }
            match subcommand::option_len(globals, words.get(i - prog..).unwrap_or(&[])) {
                Some(n) => i += n,
                None if v.starts_with('-') => break,
                None => {
                    sub = Some(i);
                    break;
                }
            }
        }
        let Some(s) = sub else {
            // Where the subcommand starts is not known: every subcommand's
            // options are read.
            let all: Vec<&Program> = PROGRAMS.iter().filter(|p| p.names == ["git"]).collect();
            self.scan(&all, i, b, None, fx);
            return;
        };
        let name = self.v(s);
        let entries: Vec<&Program> = PROGRAMS
            .iter()
            .filter(|p| p.names == ["git"] && p.subs.contains(&name))
            .collect();
        let (operands, _) = self.scan(&entries, s + 1, b, None, fx);
        match name {
            "bisect" if s + 2 < b && self.v(s + 1) == "run" => fx.push(Effect::Command {
                start: s + 2,
                end: b,
            }),
            "submodule" => {
                let Some(f) = (s + 1..b).find(|&k| self.v(k) == "foreach") else {
                    return;
                };
                let mut k = f + 1;
                while k < b && self.v(k).starts_with("--") {
                    k += 1;
                }
                self.joined_script(f, k, b, fx);
            }
            "config" => {
                let ops: Vec<usize> = match operands.as_slice() {
                    [first, rest @ ..] if self.v(*first) == "set" => rest.to_vec(),
                    _ => operands.clone(),
                };
                if let [key, value, ..] = ops.as_slice() {
                    let kv = format!("{}={}", self.v(*key), self.v(*value));
                    let flags = self.w(*key).flags | self.w(*value).flags;
                    let mut effects = Vec::new();
                    self.effect(
                        Does::GitConfig,
                        Val {
                            text: &kv,
                            word: *value,
                            from: *key,
                        },
                        &mut effects,
                    );
                    if flags & COMPUTED != 0 && !git_config(&kv).is_empty() {
                        let text = self.opt_text(*key, *value);
                        fx.push(Effect::Hides {
                            why: format!(
                                "`{}` sets a git setting that can run commands, to a value computed when the command runs",
                                snippet(&text)
                            ),
                            text,
                        });
                    } else {
                        fx.extend(effects);
                    }
                }
            }
            _ => {}
        }
    }

    /// The script made of `words[k..b]` joined by spaces (what `sh -c`
    /// is given by `git submodule foreach`, `ssh host …`); opaque when any
    /// word is computed.
    fn joined_script(&self, from: usize, k: usize, b: usize, fx: &mut Vec<Effect>) {
        if k >= b {
            return;
        }
        if (k..b).any(|j| self.w(j).flags & COMPUTED != 0) {
            let text = self.shown(from, b);
            fx.push(Effect::Hides {
                why: format!(
                    "the command `{}` runs is computed when the command runs",
                    snippet(&text)
                ),
                text,
            });
            return;
        }
        let script = (k..b).map(|j| self.v(j)).collect::<Vec<_>>().join(" ");
        fx.push(Effect::Runs { script });
    }

    /// ssh: its options, then the destination, then more options, then the
    /// command the remote shell runs (`ssh host rm -rf ~`).
    fn ssh(&self, prog: usize, b: usize, fx: &mut Vec<Effect>) {
        let entries: Vec<&Program> = PROGRAMS
            .iter()
            .filter(|p| p.names.contains(&"ssh"))
            .collect();
        let (_, at) = self.scan(&entries, prog + 1, b, Some(1), fx);
        let no_command = (prog + 1..at).any(|k| {
            let v = self.v(k);
            v.starts_with('-') && !v.starts_with("--") && v.contains('N')
        });
        if at < b && !no_command {
            self.joined_script(prog, at, b, fx);
        }
    }

    /// find: its `-fprint`-family actions, outside the commands of `-exec`.
    fn find_effects(&self, prog: usize, b: usize, fx: &mut Vec<Effect>) {
        let entries: Vec<&Program> = PROGRAMS
            .iter()
            .filter(|p| p.names.contains(&"find"))
            .collect();
        let mut i = prog + 1;
        let mut from = i;
        while i < b {
            if matches!(self.v(i), "-exec" | "-execdir" | "-ok" | "-okdir") {
                self.scan(&entries, from, i, None, fx);
                let end = self.exec_end(i + 1, b);
                i = end + 1;
                from = i;
            } else {
                i += 1;
            }
        }
        if from < b {
            self.scan(&entries, from, b, None, fx);
        }
    }

    /// dd: `if=FILE` is read and `of=FILE` written.
    fn dd(&self, prog: usize, b: usize, fx: &mut Vec<Effect>) {
        for i in prog + 1..b {
            let v = self.v(i);
            let (kind, path) = if let Some(p) = v.strip_prefix("if=") {
                (Kind::Read, p)
            } else if let Some(p) = v.strip_prefix("of=") {
                (Kind::Write, p)
            } else {
                continue;
            };
            fx.push(Effect::File {
                kind,
                text: self.opt_text(i, i),
                path: path.to_string(),
                computed: self.w(i).flags & COMPUTED != 0,
            });
        }
    }

    /// sed: the script (`-e`, `--expression`, or the first operand) is read
    /// for the `e` command and the `e` flag of `s` (run), `w`/`W` and the
    /// `w` flag (write) and `r`/`R` (read); a script file (`-f`) is read and
    /// its commands are not known.
    fn sed(&self, prog: usize, b: usize, fx: &mut Vec<Effect>) {
        let mut scripts: Vec<usize> = Vec::new();
        let mut parts: Vec<String> = Vec::new();
        let mut sandbox = false;
        let mut file = false;
        let mut first_operand = None;
        let mut operands: Vec<usize> = Vec::new();
        let mut suffix: Option<(usize, String)> = None;
        let mut i = prog + 1;
        let mut ended = false;
        while i < b {
            let v = self.v(i);
            if ended || !v.starts_with('-') || v == "-" {
                if first_operand.is_none() {
                    first_operand = Some(i);
                }
                operands.push(i);
                i += 1;
                continue;
            }
            if v == "--" {
                ended = true;
                i += 1;
                continue;
            }
            if let Some(long) = v.strip_prefix("--") {
                let (key, joined) = match long.split_once('=') {
                    Some((k, val)) => (k, Some(val)),
                    None => (long, None),
                };
                let is = |full: &str| !key.is_empty() && full.starts_with(key);
                if is("sandbox") && key.len() >= 2 {
                    sandbox = true;
                } else if is("expression") {
                    // `--e` is `--expression`: GNU sed takes any unique
                    // prefix, and no other long option starts with `e` (a
                    // review ran `sed --e='1e pwned' f`).
                    match joined {
                        Some(j) => {
                            scripts.push(i);
                            parts.push(j.to_string());
                        }
                        None if i + 1 < b => {
                            i += 1;
                            scripts.push(i);
                            parts.push(self.v(i).to_string());
                        }
                        None => {}
                    }
                } else if is("file") && key.len() >= 2 {
                    let from = i;
                    let k = if joined.is_some() { i } else { i + 1 };
                    if k < b {
                        file = true;
                        let path = joined.map_or_else(|| self.v(k).to_string(), str::to_string);
                        self.sed_file(from, k, &path, fx);
                    }
                    i = k;
                } else if is("in-place") {
                    self.sed_backup(i, joined.unwrap_or(""), fx);
                    suffix = Some((i, joined.unwrap_or("").to_string()));
                } else if is("line-length") && joined.is_none() {
                    i += 1;
                }
                i += 1;
                continue;
            }
            let cluster = v.get(1..).unwrap_or("");
            let mut step = 1;
            for (k, c) in cluster.char_indices() {
                let rest = cluster.get(k + 1..).unwrap_or("");
                match c {
                    'e' | 'f' | 'l' => {
                        let (val, word) = if rest.is_empty() {
                            step = 2;
                            (self.v(i + 1).to_string(), i + 1)
                        } else {
                            (rest.to_string(), i)
                        };
                        if word < b {
                            if c == 'e' {
                                scripts.push(word);
                                parts.push(val);
                            } else if c == 'f' {
                                file = true;
                                self.sed_file(i, word, &val, fx);
                            }
                        }
                        break;
                    }
                    // `-i[SUFFIX]`: the rest of the cluster is the suffix.
                    'i' => {
                        self.sed_backup(i, rest, fx);
                        suffix = Some((i, rest.to_string()));
                        break;
                    }
                    _ => {}
                }
            }
            i += step;
        }
        if scripts.is_empty() && !file {
            if let Some(k) = first_operand {
                scripts.push(k);
                parts.push(self.v(k).to_string());
                operands.retain(|&o| o != k);
            }
        }
        // `-i SUFFIX` keeps each file's old text beside it, under its name
        // plus the suffix (`*` in the suffix is the file's base name):
        // `sed -i.json s/x/x/ .mcp` writes `.mcp.json` (a review). A
        // suffix with a `/` is a write anywhere (`sed_backup`).
        if let Some((word, sfx)) = suffix.filter(|(_, s)| !s.is_empty() && !s.contains('/')) {
            for &o in &operands {
                let file = self.v(o);
                // GNU sed 4.9 puts the operand as written, directories
                // and all, in place of `*` (`-i'x*' … sub/f` renames to
                // `xsub/f`; a review planted `.git/config` with `-i'.*'`).
                let path = if sfx.contains('*') {
                    sfx.replace('*', file)
                } else {
                    format!("{file}{sfx}")
                };
                fx.push(Effect::File {
                    kind: Kind::Write,
                    text: self.opt_text(word, word),
                    path,
                    computed: self.w(o).flags & COMPUTED != 0,
                });
            }
        }
        if sandbox || scripts.is_empty() {
            return;
        }
        let from = scripts.first().copied().unwrap_or(prog);
        let last = scripts.last().copied().unwrap_or(prog);
        let text = self.opt_text(from.min(last), last);
        if scripts.iter().any(|&k| self.w(k).flags & COMPUTED != 0) {
            fx.push(Effect::Hides {
                why: "the sed script is computed when the command runs, and sed's `e`, `w` and `r` run, write and read".into(),
                text,
            });
            return;
        }
        let script = parts.join("\n");
        match sed_script(&script) {
            Ok(effects) => {
                for e in effects {
                    match e {
                        SedEffect::Runs(cmd) => fx.push(Effect::Runs { script: cmd }),
                        SedEffect::RunsData => fx.push(Effect::Hides {
                            why: "sed's `e` runs the text it edits as a command".into(),
                            text: text.clone(),
                        }),
                        SedEffect::File(kind, path) => fx.push(Effect::File {
                            kind,
                            text: text.clone(),
                            path,
                            computed: false,
                        }),
                    }
                }
            }
            Err(why) => fx.push(Effect::Hides {
                why: format!("the sed script cannot be read ({why}), and its commands may run, write or read"),
                text,
            }),
        }
    }

    /// `sed -i` with a backup suffix holding a `/`: GNU sed writes each
    /// backup to that path (a `*` in it is the file's base name), which
    /// may be anywhere, so it is a write whose path is known only when the
    /// command runs.
    fn sed_backup(&self, word: usize, suffix: &str, fx: &mut Vec<Effect>) {
        if suffix.contains('/') {
            fx.push(Effect::File {
                kind: Kind::Write,
                text: self.opt_text(word, word),
                path: suffix.to_string(),
                computed: true,
            });
        }
    }

    /// A script file sed (or awk, at) reads: a read of it, and commands
    /// that are not known.
    fn sed_file(&self, from: usize, word: usize, path: &str, fx: &mut Vec<Effect>) {
        let text = self.opt_text(from, word);
        fx.push(Effect::File {
            kind: Kind::Read,
            text: text.clone(),
            path: path.to_string(),
            computed: self.w(word).flags & COMPUTED != 0,
        });
        fx.push(Effect::Hides {
            why: format!(
                "`{}` reads a script whose commands are not known",
                snippet(&text)
            ),
            text,
        });
    }

    /// awk: the program (`-e`/`--source`, or the first operand) is opaque
    /// when it runs a command (`system(`, a pipe) or opens a file (`print
    /// > f`, `getline < f`); `-f`, `-i` and `-E` read a program whose text
    /// is not known; gawk's `-o`, `-p`, `-d` write.
    fn awk(&self, prog: usize, b: usize, fx: &mut Vec<Effect>) {
        let mut program: Vec<usize> = Vec::new();
        let mut file = false;
        let mut sandbox = false;
        let mut first_operand = None;
        let mut i = prog + 1;
        let mut ended = false;
        while i < b {
            let v = self.v(i);
            if ended || !v.starts_with('-') || v == "-" {
                // The program, or the first file: options end here.
                first_operand = Some(i);
                break;
            }
            if v == "--" {
                ended = true;
                i += 1;
                continue;
            }
            if let Some(long) = v.strip_prefix("--") {
                let (key, joined) = match long.split_once('=') {
                    Some((k, val)) => (k, Some(val)),
                    None => (long, None),
                };
                let is = |full: &str| key.len() >= 2 && full.starts_with(key);
                let value = |i: &mut usize| -> Option<usize> {
                    if joined.is_some() {
                        Some(*i)
                    } else if *i + 1 < b {
                        *i += 1;
                        Some(*i)
                    } else {
                        None
                    }
                };
                if is("sandbox") {
                    sandbox = true;
                } else if is("source") {
                    if let Some(k) = value(&mut i) {
                        program.push(k);
                    }
                } else if is("file") || is("include") || is("exec") || is("load") {
                    let from = i;
                    if let Some(k) = value(&mut i) {
                        file = true;
                        let path = joined.map_or_else(|| self.v(k).to_string(), str::to_string);
                        self.sed_file(from, k, &path, fx);
                    }
                } else if is("pretty-print") || is("profile") || is("dump-variables") {
                    if let Some(path) = joined {
                        fx.push(Effect::File {
                            kind: Kind::Write,
                            text: self.opt_text(i, i),
                            path: path.to_string(),
                            computed: self.w(i).flags & COMPUTED != 0,
                        });
                    }
                } else if (is("field-separator") || is("assign")) && joined.is_none() {
                    i += 1;
                }
                i += 1;
                continue;
            }
            let cluster = v.get(1..).unwrap_or("");
            let mut step = 1;
            for (k, c) in cluster.char_indices() {
                let rest = cluster.get(k + 1..).unwrap_or("");
                let (val, word) = if rest.is_empty() {
                    (self.v(i + 1).to_string(), i + 1)
                } else {
                    (rest.to_string(), i)
                };
                match c {
                    'F' | 'v' | 'W' => {
                        step = if rest.is_empty() { 2 } else { 1 };
                        break;
                    }
                    'S' => sandbox = true,
                    'e' => {
                        step = if rest.is_empty() { 2 } else { 1 };
                        if word < b {
                            program.push(word);
                        }
                        break;
                    }
                    'f' | 'i' | 'E' | 'l' => {
                        step = if rest.is_empty() { 2 } else { 1 };
                        if word < b {
                            file = true;
                            self.sed_file(i, word, &val, fx);
                        }
                        break;
                    }
                    'o' | 'p' | 'd' => {
                        // An optional file, joined only.
                        if !rest.is_empty() {
                            fx.push(Effect::File {
                                kind: Kind::Write,
                                text: self.opt_text(i, i),
                                path: rest.to_string(),
                                computed: self.w(i).flags & COMPUTED != 0,
                            });
                        }
                        break;
                    }
                    _ => {}
                }
            }
            i += step;
        }
        if program.is_empty() && !file {
            if let Some(k) = first_operand {
                program.push(k);
            }
        }
        if sandbox {
            return;
        }
        for k in program {
            let text = self.opt_text(k, k);
            if self.w(k).flags & COMPUTED != 0 {
                fx.push(Effect::Hides {
                    why: "the awk program is computed when the command runs, and awk can run commands and open files".into(),
                    text,
                });
            } else if let Some(what) = awk_opens(self.v(k)) {
                fx.push(Effect::Hides {
                    why: format!("the awk program {what}, which the splitter cannot analyse"),
                    text,
                });
            }
        }
    }
}

// The wrappers of `is_wrapper`: what each runs, as `analyse` plans it.
impl Parser<'_, '_, '_> {
    /// `busybox APPLET …`, `toybox APPLET …`: the applet is the command.
    pub(super) fn applet(&self, name: &str, prog: usize, b: usize) -> Plan {
        let i = prog + 1;
        if i >= b {
            return Plan::Plain;
        }
        let v = self.v(i);
        if self.w(i).flags & COMPUTED != 0 {
            return Plan::Opaque(format!(
                "the applet `{name}` runs is computed when the command runs"
            ));
        }
        if v.starts_with('-') {
            return match v {
                "--list" | "--list-full" | "--help" | "--version" => Plan::Plain,
                _ => Plan::Opaque(format!(
                    "`{name}` has an option this splitter does not know: `{}`",
                    snippet(v)
                )),
            };
        }
        Plan::Inner {
            start: i,
            end: b,
            by_value: false,
            transparent: false,
        }
    }

    /// `su [options] [user] -c command`: the command is a script for the
    /// user's shell; without one, su runs a shell that reads its input.
    pub(super) fn su(&self, prog: usize, b: usize, stdin_fed: bool) -> Plan {
        let mut i = prog + 1;
        let mut script: Option<usize> = None;
        let mut joined: Option<String> = None;
        let mut user = false;
        while i < b {
            let v = self.v(i);
            if self.w(i).flags & COMPUTED != 0 {
                return Plan::Opaque(
                    "the arguments of `su` are computed when the command runs".into(),
                );
            }
            match v {
                "-"
                | "-l"
                | "--login"
                | "-m"
                | "-p"
                | "--preserve-environment"
                | "-f"
                | "--fast"
                | "-P"
                | "--pty" => i += 1,
                "-c" | "--command" | "--session-command" => {
                    script = Some(i + 1);
                    i += 2;
                }
                "-s"
                | "--shell"
                | "-g"
                | "--group"
                | "-G"
                | "--supp-group"
                | "-w"
                | "--whitelist-environment" => i += 2,
                _ => {
                    if let Some(c) = v
                        .strip_prefix("--command=")
                        .or_else(|| v.strip_prefix("--session-command="))
                    {
                        joined = Some(c.to_string());
                        i += 1;
                    } else if [
                        "--shell=",
                        "--group=",
                        "--supp-group=",
                        "--whitelist-environment=",
                    ]
                    .iter()
                    .any(|p| v.starts_with(p))
                    {
                        i += 1;
                    } else if v.starts_with('-') || user {
                        return Plan::Opaque(format!(
                            "`su` has an argument this splitter does not read: `{}`",
                            snippet(v)
                        ));
                    } else {
                        user = true;
                        i += 1;
                    }
                }
            }
        }
        if let Some(c) = joined {
            return Plan::Scripts {
                scripts: vec![c],
                transparent: false,
            };
        }
        match script {
            Some(k) if k < b => self.script_of("su -c", k, k + 1, false),
            _ if stdin_fed => Plan::Opaque(
                "`su` runs a shell that reads its commands from a here-document or a pipe".into(),
            ),
            _ => Plan::Plain,
        }
    }

    /// `script [options] [file]` with `-c command`: the command is a
    /// script for the shell; without one, script runs a shell that reads
    /// its input.
    pub(super) fn script_command(&self, prog: usize, b: usize, stdin_fed: bool) -> Plan {
        let mut i = prog + 1;
        while i < b {
            let v = self.v(i);
            if self.w(i).flags & COMPUTED != 0 && v.starts_with('-') {
                return Plan::Opaque(
                    "an option of `script` is computed when the command runs".into(),
                );
            }
            if v == "-c" || v == "--command" {
                return self.script_of("script -c", i + 1, (i + 2).min(b), false);
            }
            if let Some(c) = v.strip_prefix("--command=") {
                return Plan::Scripts {
                    scripts: vec![c.to_string()],
                    transparent: false,
                };
            }
            let takes = matches!(
                v,
                "-E" | "--echo"
                    | "-o"
                    | "--output-limit"
                    | "-T"
                    | "--log-timing"
                    | "-I"
                    | "--log-in"
                    | "-O"
                    | "--log-out"
                    | "-B"
                    | "--log-io"
                    | "-m"
                    | "--logging-format"
            );
            i += if takes { 2 } else { 1 };
        }
        if stdin_fed {
            Plan::Opaque(
                "`script` runs a shell that reads its commands from a here-document or a pipe"
                    .into(),
            )
        } else {
            Plan::Plain
        }
    }

    /// `at`, `batch`: the commands come from `-f FILE` or the input, which
    /// the splitter does not see; listing and removing jobs runs nothing.
    pub(super) fn at_job(&self, name: &str, prog: usize, b: usize, stdin_fed: bool) -> Plan {
        let words: Vec<&str> = (prog + 1..b).map(|i| self.v(i)).collect();
        let flag = |c: char| {
            words
                .iter()
                .any(|w| w.starts_with('-') && !w.starts_with("--") && w.contains(c))
        };
        if flag('l') || flag('r') || flag('d') || flag('c') {
            return Plan::Plain;
        }
        if flag('f') {
            return Plan::Opaque(format!("`{name} -f` runs the commands of a file"));
        }
        if stdin_fed {
            return Plan::Opaque(format!(
                "`{name}` runs the commands of a here-document or a pipe"
            ));
        }
        Plan::Plain
    }

    /// GNU `parallel [options] command ::: arguments`: the command is
    /// joined and run by a shell, as `watch` does; with no command, the
    /// input lines are the commands.
    pub(super) fn parallel(&self, prog: usize, b: usize) -> Plan {
        const FLAGS: &[&str] = &[
            "-k",
            "--keep-order",
            "-u",
            "--ungroup",
            "-0",
            "--null",
            "-q",
            "--quote",
            "-v",
            "--verbose",
            "--tag",
            "--bar",
            "--progress",
            "--eta",
            "-X",
            "-m",
            "--xargs",
            "--dry-run",
            "--line-buffer",
            "--lb",
            "-g",
            "--group",
            "-r",
            "--no-run-if-empty",
        ];
        const VALUES: &[&str] = &[
            "-j",
            "--jobs",
            "-n",
            "--max-args",
            "-N",
            "--max-replace-args",
            "-I",
            "-d",
            "--delimiter",
            "--colsep",
            "-C",
            "--halt",
            "--timeout",
            "--delay",
            "-L",
            "--max-lines",
        ];
        let mut i = prog + 1;
        while i < b {
            let v = self.v(i);
            if !v.starts_with('-') {
                break;
            }
            if self.w(i).flags & COMPUTED != 0 {
                return Plan::Opaque(
                    "an option of `parallel` is computed when the command runs".into(),
                );
            }
            let key = v.split_once('=').map_or(v, |(k, _)| k);
            if FLAGS.contains(&v) {
                i += 1;
            } else if VALUES.contains(&v) {
                i += 2;
            } else if (v.contains('=') && VALUES.contains(&key))
                || (v.len() > 2
                    && !v.starts_with("--")
                    && v.get(..2).is_some_and(|s| VALUES.contains(&s)))
            {
                i += 1;
            } else {
                return Plan::Opaque(format!(
                    "`parallel` has an option this splitter does not know: `{}`",
                    snippet(v)
                ));
            }
        }
        let end = (i..b)
            .find(|&k| matches!(self.v(k), ":::" | "::::" | ":::+" | "::::+"))
            .unwrap_or(b);
        if i >= end {
            return Plan::Opaque("`parallel` runs the lines of its input as commands".into());
        }
        self.script_of("parallel", i, end, false)
    }
}

/// What a sed script does beyond editing its input.
#[derive(Debug, PartialEq, Eq)]
enum SedEffect {
    /// `e command`: runs the command.
    Runs(String),
    /// `e` alone or `s///e`: runs the pattern space.
    RunsData,
    /// `w`, `W`, the `w` flag (write); `r`, `R` (read).
    File(Kind, String),
}

/// Reads a sed script (GNU sed's grammar) for the commands that run,
/// write or read.
///
/// # Errors
///
/// A short description of where the script could not be read.
/// Whether a line of sed text goes on to the next: it ends in an odd run
/// of backslashes.
fn continues(line: &str) -> bool {
    line.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1
}

fn sed_script(s: &str) -> Result<Vec<SedEffect>, String> {
    let b = s.as_bytes();
    let mut i = 0usize;
    let mut out = Vec::new();
    let at = |i: usize| b.get(i).copied();
    // The rest of the line from `i`, and the index after its newline.
    let to_eol = |i: usize| -> (String, usize) {
        let rest = s.get(i..).unwrap_or("");
        let end = rest.find('\n').unwrap_or(rest.len());
        (rest.get(..end).unwrap_or("").to_string(), i + end + 1)
    };
    // A delimited part (regex or replacement) from `i`, after its opening
    // delimiter; returns the index after the closing one.
    let part = |mut i: usize, d: u8| -> Result<usize, String> {
        loop {
            match at(i) {
                None => return Err("an unterminated `s`, `y` or address".into()),
                Some(b'\\') => i += 2,
                Some(c) if c == d => return Ok(i + 1),
                Some(_) => i += 1,
            }
        }
    };
    // A regular expression from `i`, after its opening delimiter: as a
    // part, but a bracket expression (`[/]`, `[]x]`, `[[:alpha:]/]`) runs
    // to its `]` whatever it holds, the delimiter and `\` included, as
    // GNU sed 4.9 reads it (`s/[/]/;p;/;e cmd #/x` runs `cmd`; a review
    // found the reader ending the regex inside the brackets).
    let regex = |mut i: usize, d: u8| -> Result<usize, String> {
        loop {
            match at(i) {
                None => return Err("an unterminated regular expression".into()),
                Some(b'\\') => i += 2,
                Some(b'[') => {
                    let mut k = i + 1;
                    if at(k) == Some(b'^') {
                        k += 1;
                    }
                    if at(k) == Some(b']') {
                        k += 1;
                    }
                    loop {
                        match (at(k), at(k + 1)) {
                            (None, _) => return Err("an unterminated bracket expression".into()),
                            (Some(b'['), Some(c @ (b':' | b'.' | b'='))) => {
                                k += 2;
                                while !(at(k) == Some(c) && at(k + 1) == Some(b']')) {
                                    if at(k).is_none() {
                                        return Err("an unterminated bracket expression".into());
                                    }
                                    k += 1;
                                }
                                k += 2;
                            }
                            (Some(b']'), _) => break,
                            _ => k += 1,
                        }
                    }
                    i = k + 1;
                }
                Some(c) if c == d => return Ok(i + 1),
                Some(_) => i += 1,
            }
        }
    };
    let skip_blank = |mut i: usize| {
        while matches!(at(i), Some(b' ' | b'\t')) {
            i += 1;
        }
        i
    };
    let address = |mut i: usize| -> Result<usize, String> {
        match at(i) {
            Some(c) if c.is_ascii_digit() => {
                while at(i).is_some_and(|c| c.is_ascii_digit() || c == b'~') {
                    i += 1;
                }
            }
            Some(b'$') => i += 1,
            Some(b'/') => {
                i = regex(i + 1, b'/')?;
                while matches!(at(i), Some(b'I' | b'M')) {
                    i += 1;
                }
            }
            Some(b'\\') => {
                let d = at(i + 1).ok_or("an unterminated address")?;
                i = regex(i + 2, d)?;
                while matches!(at(i), Some(b'I' | b'M')) {
                    i += 1;
                }
            }
            Some(b'+' | b'~') => {
                i += 1;
                while at(i).is_some_and(|c| c.is_ascii_digit()) {
                    i += 1;
                }
            }
            _ => {}
        }
        Ok(i)
    };
    let mut steps = 0usize;
    loop {
        steps += 1;
        if steps > s.len() + 2 {
            return Err("a script the reader loops on".into());
        }
        while matches!(at(i), Some(b' ' | b'\t' | b'\n' | b';' | b'\r')) {
            i += 1;
        }
        let Some(_) = at(i) else { break };
        let before = i;
        i = address(i)?;
        if i > before && at(i) == Some(b',') {
            i = address(skip_blank(i + 1))?;
        }
        i = skip_blank(i);
        while at(i) == Some(b'!') {
            i = skip_blank(i + 1);
        }
        let Some(c) = at(i) else {
            return Err("an address without a command".into());
        };
        i += 1;
        // Whether the command read its line to the end.
        let mut eol = false;
        match c {
            // A block's commands follow `{` without a separator.
            b'{' => eol = true,
            b'}' | b'=' | b'd' | b'D' | b'g' | b'G' | b'h' | b'H' | b'n' | b'N' | b'p' | b'P'
            | b'x' | b'z' | b'F' => {}
            b'#' => {
                i = to_eol(i).1;
                eol = true;
            }
            // GNU sed 4.9 ends a label (and `v`'s version) at a blank or a
            // `;` and reads a command after it: `:x;e cmd`, `:x e cmd` and
            // `v 4.2 e cmd` run `cmd` (checked with sed 4.9). Reading the
            // label so is the strictest reading: older seds that take the
            // line as the label run nothing more.
            b':' | b'b' | b't' | b'T' | b'v' => {
                i = skip_blank(i);
                let start = i;
                while at(i).is_some_and(|c| !matches!(c, b';' | b'\n' | b' ' | b'\t' | b'}')) {
                    i += 1;
                }
                if c == b':' && i == start {
                    return Err("`:` without a label".into());
                }
                // No separator is needed before the next command.
                eol = true;
            }
            b'q' | b'Q' | b'l' | b'L' => {
                i = skip_blank(i);
                while at(i).is_some_and(|c| c.is_ascii_digit()) {
                    i += 1;
                }
            }
            b'a' | b'i' | b'c' => {
                // Text to the end of the line; a line ending in an odd run
                // of `\` goes on (`a x\\` ends there, and the next line is
                // a command, as GNU sed 4.9 reads it).
                loop {
                    let (line, next) = to_eol(i);
                    i = next;
                    if !continues(&line) || i > s.len() {
                        break;
                    }
                }
                eol = true;
            }
            b'r' | b'R' | b'w' | b'W' => {
                let (name, next) = to_eol(skip_blank(i));
                i = next;
                eol = true;
                let kind = if matches!(c, b'r' | b'R') {
                    Kind::Read
                } else {
                    Kind::Write
                };
                if name.is_empty() {
                    return Err(format!("`{}` without a file name", c as char));
                }
                out.push(SedEffect::File(kind, name));
            }
            b'e' => {
                // Read as `a`'s text is: a line ending in an odd run of `\`
                // goes on (`1e echo \⏎i;pwned` runs `echo i;pwned`).
                let (mut cmd, mut next) = to_eol(skip_blank(i));
                while continues(&cmd) && next <= s.len() {
                    let (more, after) = to_eol(next);
                    cmd.pop();
                    cmd.push('\n');
                    cmd.push_str(&more);
                    next = after;
                }
                i = next;
                eol = true;
                if cmd.trim().is_empty() {
                    out.push(SedEffect::RunsData);
                } else {
                    out.push(SedEffect::Runs(cmd));
                }
            }
            b's' | b'y' => {
                let d = at(i).ok_or("an unterminated `s` or `y`")?;
                if d == b'\n' || d == b'\\' {
                    return Err("a delimiter sed does not take".into());
                }
                // `s`'s first part is a regular expression; `y`'s are lists.
                i = if c == b's' {
                    regex(i + 1, d)?
                } else {
                    part(i + 1, d)?
                };
                i = part(i, d)?;
                if c == b's' {
                    loop {
                        match at(i) {
                            Some(b'g' | b'p' | b'i' | b'I' | b'm' | b'M') => i += 1,
                            Some(c) if c.is_ascii_digit() => i += 1,
                            Some(b'e') => {
                                out.push(SedEffect::RunsData);
                                i += 1;
                            }
                            Some(b'w') => {
                                let (name, next) = to_eol(skip_blank(i + 1));
                                i = next;
                                eol = true;
                                if name.is_empty() {
                                    return Err("the `w` flag without a file name".into());
                                }
                                out.push(SedEffect::File(Kind::Write, name));
                                break;
                            }
                            _ => break,
                        }
                    }
                }
            }
            other => {
                return Err(format!(
                    "an unknown command `{}`",
                    (other as char).escape_default()
                ));
            }
        }
        if eol {
            continue;
        }
        i = skip_blank(i);
        match at(i) {
            None | Some(b';' | b'\n' | b'}' | b'#' | b'\r') => {}
            Some(_) => return Err("extra characters after a command".into()),
        }
    }
    Ok(out)
}

/// What in an awk program runs a command or opens a file, if anything:
/// `system(`, a pipe (`|`, not `||`), `getline` with `<`, or `>` inside a
/// `print` or `printf` statement outside parentheses. Strings, regular
/// expressions and comments are skipped; a `/` after an operand is a
/// division.
fn awk_opens(p: &str) -> Option<&'static str> {
    let b = p.as_bytes();
    let mut i = 0usize;
    // Whether the last token was an operand (so `/` divides).
    let mut operand = false;
    let mut getline = false;
    // The parenthesis depth a `print` started at, while in one.
    let mut print_at: Option<usize> = None;
    let mut depth = 0usize;
    while let Some(&c) = b.get(i) {
        match c {
            b'"' => {
                i += 1;
                while let Some(&d) = b.get(i) {
                    if d == b'\\' {
                        i += 1;
                    } else if d == b'"' {
                        break;
                    }
                    i += 1;
                }
                operand = true;
            }
            b'/' if !operand => {
                i += 1;
                let mut bracket = false;
                while let Some(&d) = b.get(i) {
                    match d {
                        b'\\' => i += 1,
                        b'[' => bracket = true,
                        b']' => bracket = false,
                        b'/' if !bracket => break,
                        b'\n' => break,
                        _ => {}
                    }
                    i += 1;
                }
                operand = true;
            }
            b'#' => {
                while b.get(i).is_some_and(|&d| d != b'\n') {
                    i += 1;
                }
                continue;
            }
            b'|' => {
                if b.get(i + 1) == Some(&b'|') {
                    i += 2;
                    operand = false;
                    continue;
                }
                return Some("pipes to or from a command (`|`)");
            }
            b'<' if getline => return Some("reads a file (`getline <`)"),
            b'>' if print_at == Some(depth) => return Some("writes a file (`print >`)"),
            b'(' => {
                depth += 1;
                operand = false;
            }
            b')' => {
                depth = depth.saturating_sub(1);
                operand = true;
            }
            // A subscript's `]` ends an operand: `a[1] / 2` divides (a
            // review found `x = a[1] / 2; system("pwned"); y = 1 / 1` read
            // as a regular expression, hiding the `system(` mawk ran).
            b']' => operand = true,
            // A postfix `++` or `--` leaves an operand: `i++ / 2` divides.
            b'+' | b'-' if operand && b.get(i + 1) == Some(&c) => {
                i += 2;
                continue;
            }
            b';' | b'\n' | b'{' | b'}' => {
                print_at = None;
                getline = false;
                operand = false;
            }
            b'@' => return Some("loads or includes code (`@`)"),
            c if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' => {
                let start = i;
                while b.get(i).is_some_and(|&d| {
                    d.is_ascii_alphanumeric() || d == b'_' || d == b'$' || d == b'.'
                }) {
                    i += 1;
                }
                let word = p.get(start..i).unwrap_or("");
                match word {
                    "system" => return Some("runs a command (`system(`)"),
                    "print" | "printf" => print_at = Some(depth),
                    "getline" => getline = true,
                    _ => {}
                }
                operand = !matches!(
                    word,
                    "print" | "printf" | "return" | "in" | "getline" | "if" | "while" | "for"
                );
                continue;
            }
            // Blanks, and a line continuation, leave the operand as it was
            // (`x = 4 \⏎/ 2` divides; a second review).
            b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c' => {}
            b'\\' if b.get(i + 1) == Some(&b'\n') => {
                i += 2;
                continue;
            }
            _ => operand = false,
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sed_scripts() {
        assert_eq!(sed_script("s/a/b/g"), Ok(vec![]));
        assert_eq!(sed_script("s/a/e/"), Ok(vec![]));
        assert_eq!(sed_script("s/a/b/e"), Ok(vec![SedEffect::RunsData]));
        assert_eq!(
            sed_script("1e rm -rf ~"),
            Ok(vec![SedEffect::Runs("rm -rf ~".into())])
        );
        assert_eq!(
            sed_script("s/x/y/w out.txt"),
            Ok(vec![SedEffect::File(Kind::Write, "out.txt".into())])
        );
        assert_eq!(
            sed_script("/k/w .env\np"),
            Ok(vec![SedEffect::File(Kind::Write, ".env".into())])
        );
        assert_eq!(
            sed_script("1r ~/.ssh/id_rsa"),
            Ok(vec![SedEffect::File(Kind::Read, "~/.ssh/id_rsa".into())])
        );
        assert_eq!(sed_script("$!N;P;D"), Ok(vec![]));
        assert_eq!(sed_script("/^#/d; s|a|b|"), Ok(vec![]));
        assert_eq!(sed_script("1,/x/{s/a/b/;p}"), Ok(vec![]));
        assert_eq!(sed_script("y/abc/xyz/"), Ok(vec![]));
        assert_eq!(sed_script("a hello; e x"), Ok(vec![]));
        // A bracket expression holds the delimiter (GNU sed 4.9).
        assert_eq!(
            sed_script("s/[/]/;p;/;e pwned #/x"),
            Ok(vec![SedEffect::Runs("pwned #/x".into())])
        );
        assert_eq!(
            sed_script("s/[/]/;p;/w .git/config"),
            Ok(vec![SedEffect::File(Kind::Write, ".git/config".into())])
        );
        assert_eq!(sed_script("s/[]/]/x/g; s/[[:alpha:]/]/y/"), Ok(vec![]));
        assert_eq!(sed_script(r"s/[\/]/X/g"), Ok(vec![]));
        assert!(sed_script("s/[/x/").is_err());
        // A second review: `a x\\` ends its text, and `e`'s text goes on
        // after an odd `\` as `a`'s does (GNU sed 4.9 ran both).
        assert_eq!(
            sed_script("a x\\\\\ne pwned"),
            Ok(vec![SedEffect::Runs("pwned".into())])
        );
        assert_eq!(
            sed_script("1e echo \\\ni;pwned"),
            Ok(vec![SedEffect::Runs("echo \ni;pwned".into())])
        );
        // Labels end at a blank or `;` in GNU sed 4.9 (found by a review).
        for script in [
            ":x;e pwned",
            ": x;e pwned",
            ":x e pwned",
            ":a;N;e pwned",
            "v 4.2 e pwned",
            "b x e pwned",
        ] {
            assert_eq!(
                sed_script(script),
                Ok(vec![SedEffect::Runs("pwned".into())]),
                "{script}"
            );
        }
        assert_eq!(
            sed_script(":x;w out"),
            Ok(vec![SedEffect::File(Kind::Write, "out".into())])
        );
        assert_eq!(sed_script(":a\nN;$!ba;s/\n/ /g"), Ok(vec![]));
        assert!(sed_script("s/a/b").is_err());
        assert!(sed_script("k").is_err());
    }

    #[test]
    fn awk_programs() {
        assert_eq!(awk_opens("{print $1}"), None);
        assert_eq!(awk_opens("$3 > 100 {print $1}"), None);
        assert_eq!(awk_opens("/a|b/ {print}"), None);
        assert_eq!(
            awk_opens(r#"BEGIN { a[1]=4; x = a[1] / 2; system("pwned"); y = 1 / 1 }"#),
            Some("runs a command (`system(`)")
        );
        assert_eq!(
            awk_opens(r#"{ i++ / 2; system("pwned"); j = 1 / 1 }"#),
            Some("runs a command (`system(`)")
        );
        assert_eq!(awk_opens("{ a[$1]++ } END { for (k in a) print k }"), None);
        for p in [
            "BEGIN { x = 4 \\\n/ 2; system(\"pwned\"); y = 1 / 1 }",
            "BEGIN { x = 4\r/ 2; system(\"pwned\"); y = 1 / 1 }",
            "BEGIN { x = 4\x0c/ 2; system(\"pwned\"); y = 1 / 1 }",
        ] {
            assert_eq!(awk_opens(p), Some("runs a command (`system(`)"), "{p:?}");
        }
        assert_eq!(awk_opens("{ if (a || b) print }"), None);
        assert_eq!(awk_opens("{ x = a / b; y = c / d }"), None);
        assert_eq!(awk_opens("{ print (a > b) }"), None);
        assert_eq!(awk_opens("{ print \"system(\" }"), None);
        assert!(awk_opens("BEGIN { system(\"rm -rf ~\") }").is_some());
        assert!(awk_opens("{ print | \"sh\" }").is_some());
        assert!(awk_opens("{ \"date\" | getline d }").is_some());
        assert!(awk_opens("{ print > \".env\" }").is_some());
        assert!(awk_opens("{ printf(\"%s\", $0) > \"f\" }").is_some());
        assert!(awk_opens("{ getline line < \"/etc/passwd\" }").is_some());
        assert!(awk_opens("@load \"x\"").is_some());
    }

    #[test]
    fn git_config_keys() {
        assert_eq!(
            git_config("core.pager=less -R"),
            [(Does::Runs, "less -R".to_string())]
        );
        assert_eq!(
            git_config("Core.SSHCommand=ssh -i k"),
            [(Does::Runs, "ssh -i k".to_string())]
        );
        assert_eq!(git_config("core.fsmonitor=true"), []);
        for (key, value) in [
            ("imap.tunnel", "pwned tun"),
            ("tar.x.command", "pwned"),
            ("guitool.t.cmd", "pwned"),
        ] {
            assert_eq!(
                git_config(&format!("{key}={value}")),
                [(Does::Runs, value.to_string())],
                "{key}"
            );
        }
        assert_eq!(
            git_config("core.fsmonitor=./x"),
            [(Does::Runs, "./x".to_string())]
        );
        assert_eq!(
            git_config("alias.x=!rm -rf ~"),
            [(Does::Runs, "rm -rf ~".to_string())]
        );
        assert_eq!(
            git_config("alias.x.command=!rm x"),
            [(Does::Runs, "rm x".to_string())]
        );
        assert_eq!(
            git_config("alias.x=log --oneline"),
            [(Does::Runs, "git log --oneline".to_string())]
        );
        assert_eq!(git_config("pager.diff=false"), []);
        assert_eq!(
            git_config("diff.x.textconv=sh"),
            [(Does::Runs, "sh".to_string())]
        );
        assert_eq!(
            git_config("credential.helper=store"),
            [(Does::Runs, "git credential-store".to_string())]
        );
        assert_eq!(git_config("include.path=x").len(), 2);
        assert_eq!(git_config("protocol.ext.allow=always").len(), 1);
        assert_eq!(git_config("protocol.https.allow=always"), []);
        assert_eq!(git_config("user.name=x"), []);
        assert_eq!(git_config("color.ui"), []);
    }

    #[test]
    fn ssh_options() {
        assert_eq!(
            ssh_option("ProxyCommand=nc %h %p"),
            Some((Does::Runs, "nc %h %p".to_string()))
        );
        assert_eq!(
            ssh_option("proxycommand sh -c x"),
            Some((Does::Runs, "sh -c x".to_string()))
        );
        assert_eq!(ssh_option("ProxyCommand=none"), None);
        assert_eq!(ssh_option("StrictHostKeyChecking=no"), None);
        assert!(ssh_option("PermitLocalCommand=yes").is_some());
    }

    #[test]
    fn plus_commands() {
        for ok in ["F", "G", "42", "/pattern", "?x", "+G"] {
            assert!(less_command_is_harmless(ok), "{ok}");
        }
        for bad in ["!sh", "v", "|x", "/a\n!sh", "s out"] {
            assert!(!less_command_is_harmless(bad), "{bad:?}");
        }
        assert!(vim_command_is_harmless("42"));
        assert!(vim_command_is_harmless(""));
        assert!(!vim_command_is_harmless("!sh"));
        assert!(!vim_command_is_harmless(":call system('x')"));
    }

    #[test]
    fn every_table_program_is_known_to_the_quick_path() {
        for p in PROGRAMS {
            for n in p.names {
                assert!(
                    has_options(n)
                        || reads_operands(n)
                        || super::super::analyse::is_special(n)
                        || *n == "git",
                    "the quick path would take `{n}`"
                );
            }
        }
    }
}
