//! One simple command: the forms it is decided on, and what it runs.
//!
//! A simple command is assignments, a program and its arguments. Its
//! **ordinary** form, the one every list sees and an allow rule must match,
//! is the command as written with the assignments of safe-listed variables
//! left out. Its **constraint** forms, which deny and ask rules see and
//! allow rules never do, are the liberal readings: every assignment
//! stripped, the program's base name, the assignments kept, and each of
//! those with invisible characters removed. So `FOO=1 /bin/rm x` is denied
//! by `bash(rm:*)` but allowed only by a rule that spells it.
//!
//! Then the program itself is looked at: a wrapper's wrapped command, the
//! script of `bash -c`, `eval`'s string, an alias's value, a trap's action
//! and the commands `find -exec` runs are subjects of their own, analysed
//! the same way. What cannot be known from the text (a computed program
//! name, a computed script, a shell fed by a here-document or a pipe, an
//! option of a wrapper this module does not know) is an opaque piece, which
//! no specifier matches.

use super::parse::{
    is_assign_lhs, snippet, Parser, Res, Word, ARITH, ASSIGN, BRACE, COMPUTED, GLOB, INVIS, LITSUB,
    ODD, PARAM, QUOTED, SUBST,
};
use super::{subcommand, Kind, Piece};
use toolgate_core::quote::is_invisible_or_bidi;

/// Programs whose arguments the analysis looks into.
///
/// These lookups match bytes, not strings: a match on a byte slice is
/// decided on the length and then byte by byte, where string patterns are
/// compared one after another (the quick path asks this of every program).
#[inline]
pub(super) fn is_special(name: &str) -> bool {
    wrapper(name).is_some()
        || is_shell(name)
        || matches!(
            name.as_bytes(),
            b"env"
                | b"sudo"
                | b"doas"
                | b"xargs"
                | b"find"
                | b"watch"
                | b"eval"
                | b"trap"
                | b"alias"
                | b"source"
                | b"."
                | b"set"
                | b"setopt"
                | b"unsetopt"
                | b"shopt"
                | b"compgen"
                | b"hash"
                | b"emulate"
                | b"enable"
                | b"fc"
        )
        || super::programs::is_wrapper(name)
        || evaluates(name).is_some()
}

/// Which arguments a builtin evaluates again after the shell read them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Evaluates {
    /// Every argument is an arithmetic expression (`let`).
    Arithmetic,
    /// Arguments are variable names, whose subscripts are arithmetic.
    Names,
    /// Only the operand of `-v` is a name (`printf -v`, `test -v`).
    OptionV,
}

#[inline]
fn evaluates(name: &str) -> Option<Evaluates> {
    Some(match name.as_bytes() {
        b"let" => Evaluates::Arithmetic,
        b"declare" | b"typeset" | b"local" | b"export" | b"readonly" | b"unset" | b"read"
        | b"mapfile" | b"readarray" | b"wait" | b"getopts" => Evaluates::Names,
        // zsh's builtins that assign the names they are given.
        b"private" | b"getln" | b"vared" | b"zparseopts" => Evaluates::Names,
        b"printf" | b"test" | b"[" | b"print" => Evaluates::OptionV,
        _ => return None,
    })
}

#[inline]
fn is_shell(name: &str) -> bool {
    matches!(
        name.as_bytes(),
        b"sh"
            | b"bash"
            | b"zsh"
            | b"dash"
            | b"ksh"
            | b"mksh"
            | b"ash"
            | b"yash"
            | b"posh"
            | b"rbash"
    )
}

/// The text of a value as prompts show it: invisible and bidirectional
/// characters written as `\u{…}`.
pub(super) fn display(v: &str, flags: u16) -> String {
    if flags & INVIS == 0 {
        return v.to_string();
    }
    let mut s = String::with_capacity(v.len() + 8);
    for c in v.chars() {
        if is_invisible_or_bidi(c) {
            s.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            s.push(c);
        }
    }
    s
}

/// What a reader sees: invisible characters dropped, non-ASCII spaces and
/// controls read as spaces, blanks folded.
fn visible(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    let mut space = false;
    for c in v.chars() {
        let c = if is_invisible_or_bidi(c) {
            if c.is_whitespace() {
                ' '
            } else {
                continue;
            }
        } else {
            c
        };
        if c == ' ' {
            space = true;
            continue;
        }
        if space && !s.is_empty() {
            s.push(' ');
        }
        space = false;
        s.push(c);
    }
    s
}

pub(super) fn basename(v: &str) -> &str {
    match v.rsplit_once('/') {
        Some((_, b)) if !b.is_empty() => b,
        _ => v,
    }
}

/// Which assignments a form keeps.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keep {
    All,
    Unsafe,
    None,
}

/// What a program does with its arguments.
pub(super) enum Plan {
    /// Nothing the analysis looks into.
    Plain,
    /// It runs the command in `words[start..end]`; `by_value` when leading
    /// `NAME=value` arguments are assignments for it (`env`, `sudo`).
    Inner {
        start: usize,
        end: usize,
        by_value: bool,
        transparent: bool,
    },
    /// `find` with one or more `-exec`.
    Inners(Vec<(usize, usize)>),
    /// It runs shell scripts written literally.
    Scripts {
        scripts: Vec<String>,
        transparent: bool,
    },
    /// It runs something the text does not show.
    Opaque(String),
}

/// The options of a wrapper, for finding the command it wraps.
struct Spec {
    /// Short options without an argument.
    flags: &'static str,
    /// Short options with an argument.
    args: &'static str,
    /// Short options after which nothing is run.
    no_cmd: &'static str,
    /// Long options without an argument (or with an optional `=value`).
    long_flags: &'static [&'static str],
    /// Long options with an argument (`--x=y` or `--x y`).
    long_args: &'static [&'static str],
    /// Words before the command that are not options (`timeout`'s
    /// duration).
    positional: usize,
    /// `NAME=value` words between the options and the command are
    /// assignments for it.
    assigns: bool,
    /// The wrapper changes nothing about what its command may do, so its
    /// own form is a constraint and an allow rule judges the command alone.
    transparent: bool,
    /// A number as an option (`nice -10`).
    numeric: bool,
}

const NONE: Spec = Spec {
    flags: "",
    args: "",
    no_cmd: "",
    long_flags: &[],
    long_args: &[],
    positional: 0,
    assigns: false,
    transparent: true,
    numeric: false,
};

#[inline]
fn wrapper(name: &str) -> Option<Spec> {
    Some(match name.as_bytes() {
        b"timeout" => Spec {
            flags: "v",
            args: "sk",
            long_flags: &["--preserve-status", "--foreground", "--verbose"],
            long_args: &["--signal", "--kill-after"],
            positional: 1,
            ..NONE
        },
        // At the start of a pipeline `time` is bash's keyword, and what
        // follows is a whole simple command, assignments included:
        // `time FOO=1 rm -rf /` runs `rm`. (The program `time`, after a
        // `|`, would run `FOO=1`; reading the assignment there too is only
        // more cautious.)
        b"time" => Spec {
            flags: "pvaq",
            args: "fo",
            long_flags: &["--portability", "--verbose", "--append", "--quiet"],
            long_args: &["--format", "--output"],
            assigns: true,
            ..NONE
        },
        b"nice" => Spec {
            args: "n",
            long_args: &["--adjustment"],
            numeric: true,
            ..NONE
        },
        b"nohup" | b"builtin" | b"noglob" | b"nocorrect" => NONE,
        b"stdbuf" => Spec {
            args: "ioe",
            long_args: &["--input", "--output", "--error"],
            ..NONE
        },
        b"command" => Spec {
            flags: "p",
            no_cmd: "vV",
            ..NONE
        },
        b"exec" => Spec {
            flags: "cl",
            args: "a",
            ..NONE
        },
        b"setsid" => Spec {
            flags: "cfw",
            long_flags: &["--ctty", "--fork", "--wait"],
            ..NONE
        },
        b"ionice" => Spec {
            flags: "t",
            args: "cn",
            no_cmd: "pPu",
            long_flags: &["--ignore"],
            long_args: &["--class", "--classdata"],
            ..NONE
        },
        // The command runs with another root directory, so the paths it
        // names are not the ones rules see: ordinary.
        b"chroot" => Spec {
            long_flags: &["--skip-chdir"],
            long_args: &["--userspec", "--groups"],
            positional: 1,
            transparent: false,
            ..NONE
        },
        // strace(1); `-E` (set a variable for the command) is left out, so
        // it is an option the splitter does not know (opaque).
        b"strace" => Spec {
            flags: "cCdDfFhiqrtTvVwxyzZkn",
            args: "abeIoOPsSuUX",
            no_cmd: "p",
            long_flags: &[
                "--follow-forks",
                "--output-separately",
                "--summary-only",
                "--quiet",
            ],
            long_args: &[
                "--output",
                "--trace",
                "--signal",
                "--status",
                "--user",
                "--string-limit",
            ],
            transparent: false,
            ..NONE
        },
        _ => return None,
    })
}

const ENV: Spec = Spec {
    flags: "i0v",
    args: "uC",
    long_flags: &[
        "--ignore-environment",
        "--null",
        "--debug",
        "--default-signal",
        "--ignore-signal",
        "--block-signal",
        "--list-signal-handling",
    ],
    long_args: &["--unset", "--chdir"],
    assigns: true,
    transparent: false,
    ..NONE
};

const SUDO: Spec = Spec {
    flags: "AbEHnPSiskB",
    args: "ugCDprtTUh",
    no_cmd: "elvVK",
    long_flags: &[
        "--askpass",
        "--background",
        "--bell",
        "--preserve-env",
        "--set-home",
        "--non-interactive",
        "--preserve-groups",
        "--stdin",
        "--login",
        "--shell",
        "--reset-timestamp",
    ],
    long_args: &[
        "--user",
        "--group",
        "--close-from",
        "--chdir",
        "--prompt",
        "--role",
        "--type",
        "--command-timeout",
        "--other-user",
        "--host",
    ],
    assigns: true,
    transparent: false,
    ..NONE
};

const DOAS: Spec = Spec {
    flags: "nsL",
    args: "uC",
    transparent: false,
    ..NONE
};

const XARGS: Spec = Spec {
    flags: "0rtpxoeil",
    args: "adEILnPs",
    long_flags: &[
        "--null",
        "--no-run-if-empty",
        "--verbose",
        "--interactive",
        "--exit",
        "--open-tty",
        "--show-limits",
        "--replace",
        "--eof",
        "--max-lines",
    ],
    long_args: &[
        "--arg-file",
        "--delimiter",
        "--max-args",
        "--max-procs",
        "--max-chars",
        "--process-slot-var",
    ],
    transparent: false,
    ..NONE
};

const WATCH: Spec = Spec {
    flags: "bcdegtxpwr",
    args: "nq",
    long_flags: &[
        "--beep",
        "--color",
        "--no-color",
        "--differences",
        "--errexit",
        "--chgexit",
        "--no-title",
        "--exec",
        "--precise",
        "--no-wrap",
        "--no-rerun",
    ],
    long_args: &["--interval", "--equexit"],
    transparent: false,
    ..NONE
};

/// The outcome of reading a wrapper's options.
enum Opts {
    /// The command starts at this word.
    At(usize),
    /// The options say nothing is run.
    NoCommand,
    /// An option this module does not know, or a computed one.
    Unknown(String),
}

impl Parser<'_, '_, '_> {
    pub(super) fn w(&self, i: usize) -> Word {
        self.out.word(i)
    }

    pub(super) fn v(&self, i: usize) -> &str {
        self.out.val(self.out.word(i))
    }

    /// Whether word `i` is an assignment: flagged as one by the parser, or,
    /// for the arguments of `env` and `sudo`, shaped like one.
    fn is_assign(&self, i: usize, by_value: bool) -> bool {
        let w = self.w(i);
        if w.flags & ASSIGN != 0 {
            return true;
        }
        if !by_value {
            return false;
        }
        let v = self.v(i);
        v.split_once('=')
            .is_some_and(|(lhs, _)| is_assign_lhs(lhs.as_bytes()))
    }

    /// Whether allow rules may ignore the assignment in word `i`.
    fn is_safe(&self, i: usize) -> bool {
        let w = self.w(i);
        if w.flags & COMPUTED != 0 {
            return false;
        }
        let v = self.v(i);
        let name = v.split_once('=').map_or(v, |(l, _)| l);
        self.out.cfg.is_safe_env(name)
    }

    fn form(&self, a: usize, prog: usize, b: usize, keep: Keep, base: bool) -> String {
        let len = self
            .out
            .word(b.saturating_sub(1))
            .v1
            .saturating_sub(self.out.word(a).v0);
        let mut s = String::with_capacity(len + 8);
        let mut first = true;
        for i in a..b {
            if i < prog {
                match keep {
                    Keep::All => {}
                    Keep::Unsafe if !self.is_safe(i) => {}
                    _ => continue,
                }
            }
            let v = self.v(i);
            let v = if i == prog && base { basename(v) } else { v };
            if !first {
                s.push(' ');
            }
            first = false;
            if v.is_empty() {
                s.push_str("''");
            } else {
                s.push_str(v);
            }
        }
        s
    }

    /// The text shown for `words[a..b]`.
    pub(super) fn shown(&self, a: usize, b: usize) -> String {
        let flags = (a..b).fold(0, |f, i| f | self.w(i).flags);
        display(&self.form(a, a, b, Keep::All, false), flags)
    }

    /// Emits the pieces of the simple command `words[a..b]` and of what it
    /// runs. `stdin_fed` when its standard input is a here-document, a
    /// here-string or a pipe.
    pub(super) fn emit_simple(&mut self, a: usize, b: usize, stdin_fed: bool) -> Res<()> {
        if self.out.env.is_empty() || a >= b {
            return self.analyse(a, b, false, stdin_fed);
        }
        // A command of a script run with assignments: they are its own.
        let env = std::mem::take(&mut self.out.env);
        let base = self.out.words.len();
        self.out.words.extend(env.iter().copied());
        self.out.env = env;
        let r = self.with_words(base, a, b, false, stdin_fed, false);
        self.out.words.truncate(base);
        r
    }

    /// Analyses the words `a..b` after the assignments already pushed at
    /// `base..`: an assignment before a wrapper or a shell is in the
    /// environment of the command it runs, so it is that command's
    /// assignment too (`LD_PRELOAD=x nice npm test` runs `npm test` with
    /// `LD_PRELOAD=x`, as `LD_PRELOAD=x npm test` does).
    fn with_words(
        &mut self,
        base: usize,
        a: usize,
        b: usize,
        by_value: bool,
        stdin_fed: bool,
        nest: bool,
    ) -> Res<()> {
        for i in a..b {
            let w = self.w(i);
            self.out.words.push(w);
        }
        let end = self.out.words.len();
        if nest {
            self.inner(base, end, by_value, stdin_fed)
        } else {
            self.analyse(base, end, by_value, stdin_fed)
        }
    }

    /// The assignments `words[a..prog]`, marked as assignments.
    pub(super) fn assignments(&self, a: usize, prog: usize) -> Vec<Word> {
        (a..prog)
            .map(|i| {
                let mut w = self.w(i);
                w.flags |= ASSIGN;
                w
            })
            .collect()
    }

    /// The wrapped command `words[start..end]` with the assignments
    /// `words[a..prog]` before it.
    pub(super) fn wrapped_command(
        &mut self,
        (a, prog): (usize, usize),
        start: usize,
        end: usize,
        by_value: bool,
        stdin_fed: bool,
    ) -> Res<()> {
        if a == prog {
            return self.inner(start, end, by_value, stdin_fed);
        }
        if start >= end {
            return Ok(());
        }
        let base = self.out.words.len();
        let env = self.assignments(a, prog);
        self.out.words.extend(env);
        let r = self.with_words(base, start, end, by_value, stdin_fed, true);
        self.out.words.truncate(base);
        r
    }

    fn analyse(&mut self, a: usize, b: usize, by_value: bool, stdin_fed: bool) -> Res<()> {
        let mut prog = a;
        while prog < b && self.is_assign(prog, by_value) {
            prog += 1;
        }
        if prog == b {
            if a < b {
                // Assignments alone change the shell's state for what
                // follows (`PATH=…`): an allow rule must spell them.
                let text = self.shown(a, b);
                let value = self.form(a, b, b, Keep::All, false);
                self.out
                    .push(Piece::with_value(Kind::Command, text, value))?;
            }
            return Ok(());
        }
        let pw = self.w(prog);
        if pw.flags & COMPUTED != 0 {
            let text = self.shown(a, b);
            let why = format!(
                "the program name `{}` is computed when the command runs",
                snippet(self.v(prog))
            );
            self.out
                .push(Piece::opaque(Kind::Command, text.clone(), why))?;
            // A name built by braces or `$IFS` alone is expanded as bash
            // expands it, for deny and ask rules only (`expand`).
            let plain = pw.flags & !(BRACE | PARAM) == 0;
            if let Some(mut words) = plain.then(|| super::expand::words(self.v(prog))).flatten() {
                if let Some(first) = words.first_mut() {
                    *first = basename(first).to_string();
                }
                words.extend((prog + 1..b).map(|i| self.v(i).to_string()));
                let form = words.join(" ");
                return self
                    .out
                    .push(Piece::with_value(Kind::Constraint, text, form));
            }
            return Ok(());
        }
        let plan = if pw.flags & ODD != 0 {
            Plan::Plain
        } else {
            self.plan(prog, b, stdin_fed)
        };
        let own = match &plan {
            Plan::Inner {
                transparent: true, ..
            }
            | Plan::Scripts {
                transparent: true, ..
            } => Kind::Constraint,
            _ => Kind::Command,
        };
        self.emit_forms(a, prog, b, own)?;
        self.expanded_form(a, prog, b, own)?;
        self.evaluated_args(prog, b)?;
        if pw.flags & ODD == 0 {
            self.option_effects(a, prog, b)?;
        }
        let name = basename(self.v(prog)).to_string();
        if matches!(name.as_str(), "cd" | "pushd" | "popd") {
            let args: Vec<Word> = (prog + 1..b).map(|i| self.w(i)).collect();
            let in_loop = self.out.loops > 0;
            self.out.change_dir(&name, &args, in_loop);
        }
        let fed = self.out.fed > 0;
        if self.out.cfg.file_operands {
            let text = self.shown(a, b);
            self.out.operands((&name, &text), prog, b, fed)?;
        }
        let feeds = name == "xargs";
        // The keyword `time` takes no option but bash's `-p`: bash and zsh
        // run `time -o x ls` as the program `-o`, and zsh `time -p ls` as
        // `-p`. And the shell alone says what is an assignment there: a
        // quoted `"c="` is the program `c=` (the wrapper's reading takes it
        // by its shape). Those readings are read beside the wrapper's.
        if self.v(prog) == "time" && prog + 1 < b {
            let dash = self.v(prog + 1).starts_with('-');
            let quoted = (prog + 1..b)
                .take_while(|&i| self.is_assign(i, true))
                .any(|i| self.w(i).flags & QUOTED != 0);
            if dash || quoted {
                self.wrapped_command((a, prog), prog + 1, b, !quoted, stdin_fed)?;
            }
        }
        match plan {
            Plan::Plain => Ok(()),
            Plan::Opaque(why) => {
                let text = self.shown(a, b);
                self.out.push(Piece::opaque(Kind::Command, text, why))
            }
            Plan::Inner {
                start,
                end,
                by_value,
                ..
            } => {
                // `xargs` gives the command operands read at run time.
                self.out.fed += u32::from(feeds);
                let r = self.wrapped_command((a, prog), start, end, by_value, stdin_fed);
                self.out.fed -= u32::from(feeds);
                r
            }
            Plan::Inners(list) => {
                for (start, end) in list {
                    self.wrapped_command((a, prog), start, end, false, stdin_fed)?;
                }
                Ok(())
            }
            Plan::Scripts { scripts, .. } => {
                for s in scripts {
                    let env = self.assignments(a, prog);
                    self.nested(&s, env)?;
                }
                Ok(())
            }
        }
    }

    /// The arguments of a builtin that evaluates them again (`let`,
    /// `declare`, `unset`, `read`, `printf -v`, `test -v`, …): a
    /// substitution that quoting kept from running when the word was read
    /// runs when a subscript or an arithmetic expression is evaluated
    /// (`unset 'a[$(rm x)]'` runs `rm x`).
    fn evaluated_args(&mut self, prog: usize, b: usize) -> Res<()> {
        let Some(how) = evaluates(basename(self.v(prog))) else {
            return Ok(());
        };
        // zsh's `print -v NAME` assigns as bash's `printf -v` does (a second
        // review: `print -v 'functions[ls]' pwned; ls`, `print -v HOME 13`).
        let printf = matches!(basename(self.v(prog)), "printf" | "print");
        // `-v` alone or closing a cluster of flags (`-rv`, `-nv`).
        let ends_in_v = |v: &str| {
            v.strip_prefix('-')
                .filter(|f| !f.starts_with('-'))
                .is_some_and(|f| f.ends_with('v') && f.bytes().all(|c| c.is_ascii_alphabetic()))
        };
        for i in prog + 1..b {
            let w = self.w(i);
            // The operand of `-v`, apart (`-v NAME`) or attached (`-vNAME`).
            let after_v = i > prog + 1 && ends_in_v(self.v(i - 1));
            let attached = self
                .v(i)
                .strip_prefix('-')
                .filter(|f| !f.starts_with('-'))
                .and_then(|f| {
                    let at = f.find('v')?;
                    let (flags, rest) = f.split_at(at);
                    flags
                        .bytes()
                        .all(|c| c.is_ascii_alphabetic())
                        .then_some(rest.get(1..)?)
                })
                .filter(|n| !n.is_empty());
            let name = if after_v { Some(self.v(i)) } else { attached }.map(str::to_string);
            let name = name.as_deref();
            if let (true, Some(name)) = (printf, name) {
                // `printf -v NAME …` assigns NAME as `NAME=…` would, and
                // `printf -v PATH /tmp/evil; ls` runs another `ls`.
                let v = display(name, w.flags);
                let prog_name = basename(self.v(prog)).to_string();
                self.out.push(Piece::opaque(
                    Kind::Command,
                    format!("{prog_name} -v {v}"),
                    format!("`{prog_name} -v {}` assigns a variable", snippet(&v)),
                ))?;
            }
            if w.flags & LITSUB == 0 {
                continue;
            }
            let v = self.v(i);
            // A subscript (`a[…]`, also in `declare -i x='a[…]'`, whose
            // value is arithmetic).
            let name_like = v.contains('[');
            let (take, text) = match how {
                Evaluates::Arithmetic => (true, v),
                Evaluates::Names => (name_like, v),
                Evaluates::OptionV => (name.is_some() && name_like, name.unwrap_or(v)),
            };
            if take {
                let text = text.to_string();
                self.evaluated(&text, w.flags)?;
            }
        }
        Ok(())
    }

    fn inner(&mut self, a: usize, b: usize, by_value: bool, stdin_fed: bool) -> Res<()> {
        if a >= b {
            return Ok(());
        }
        self.enter()?;
        let r = self.analyse(a, b, by_value, stdin_fed);
        self.leave();
        r
    }

    /// The ordinary form of `words[a..b]` (program at `prog`) and its
    /// constraint forms, deduplicated.
    fn emit_forms(&mut self, a: usize, prog: usize, b: usize, own: Kind) -> Res<()> {
        let flags = (a..b).fold(0, |f, i| f | self.w(i).flags);
        let has_assign = prog > a;
        let has_path = self.v(prog).contains('/');
        let readings = self.subcommand_forms(prog, b);
        if !has_assign && !has_path && readings.is_empty() && flags & (INVIS | ODD) == 0 {
            // The common case: one form, which is also the text.
            let text = self.form(a, prog, b, Keep::All, false);
            return self.out.push(Piece::new(own, text));
        }
        let any_safe = has_assign && (a..prog).any(|i| self.is_safe(i));
        let full = self.form(a, prog, b, Keep::All, false);
        let text = display(&full, flags);
        let ordinary = if any_safe {
            self.form(a, prog, b, Keep::Unsafe, false)
        } else {
            full.clone()
        };
        let mut forms: Vec<String> = Vec::new();
        if has_assign {
            forms.push(self.form(a, prog, b, Keep::None, false));
        }
        if has_path {
            forms.push(self.form(a, prog, b, Keep::None, true));
        }
        if any_safe {
            forms.push(full);
        }
        forms.extend(readings);
        if flags & INVIS != 0 {
            let seen: Vec<String> = std::iter::once(&ordinary)
                .chain(forms.iter())
                .map(|f| visible(f))
                .collect();
            forms.extend(seen);
        }
        if self.w(prog).flags & ODD != 0 {
            let why = format!(
                "the program name `{}` has characters outside printable ASCII",
                snippet(self.v(prog))
            );
            self.out.push(Piece::opaque(own, text.clone(), why))?;
        } else {
            self.out
                .push(Piece::with_value(own, text.clone(), ordinary.clone()))?;
        }
        for (k, f) in forms.iter().enumerate() {
            let earlier = forms.get(..k).unwrap_or(&[]);
            if f.is_empty() || *f == ordinary || earlier.contains(f) {
                continue;
            }
            self.out
                .push(Piece::with_value(Kind::Constraint, text.clone(), f.clone()))?;
        }
        Ok(())
    }

    /// The command as the shell runs it when an argument's braces or globs
    /// make its words other than they are written: an ordinary piece of its
    /// own, so an allow rule must cover what `cat {,/}etc/passwd` or `cat
    /// .*/x` reaches (`/etc/passwd`, `../x`) as well as what it shows, and a
    /// deny rule sees it. Past the most words braces may make, the command
    /// is opaque.
    fn expanded_form(&mut self, a: usize, prog: usize, b: usize, own: Kind) -> Res<()> {
        if (prog + 1..b).all(|i| self.w(i).flags & (BRACE | GLOB) == 0) {
            return Ok(());
        }
        let mut words: Vec<String> = Vec::new();
        let mut changed = false;
        for i in a..b {
            if i < prog && self.is_safe(i) {
                continue;
            }
            let (w, v) = (self.w(i), self.v(i));
            if i <= prog || w.flags & (BRACE | GLOB) == 0 {
                words.push(if v.is_empty() { "''".into() } else { v.into() });
                continue;
            }
            let alts = if w.flags & BRACE != 0 {
                super::expand::alternatives(v)
            } else {
                Some(vec![v.to_string()])
            };
            let Some(alts) = alts else {
                let why = format!(
                    "the braces of `{}` expand into more words than are read",
                    snippet(v)
                );
                let text = self.shown(a, b);
                return self.out.push(Piece::opaque(Kind::Command, text, why));
            };
            changed |= alts.len() != 1;
            for alt in alts {
                let reached = if w.flags & GLOB != 0 {
                    super::expand::parent_reach(&alt)
                } else {
                    alt
                };
                changed |= reached != v;
                words.push(reached);
            }
        }
        if !changed {
            return Ok(());
        }
        let text = self.shown(a, b);
        self.out.push(Piece::with_value(own, text, words.join(" ")))
    }

    /// The readings of `words[prog..b]` with a subcommand program's global
    /// options left out and its flags moved (`subcommand`), program as its
    /// base name, no assignments.
    fn subcommand_forms(&self, prog: usize, b: usize) -> Vec<String> {
        let name = basename(self.v(prog));
        if subcommand::program(name).is_none() || prog + 1 >= b {
            return Vec::new();
        }
        let words: Vec<&str> = std::iter::once(name)
            .chain((prog + 1..b).map(|i| match self.v(i) {
                "" => "''",
                v => v,
            }))
            .collect();
        // Word `i` of `words` is word `prog + i` of the command. A glob
        // names files, not options: it is read as written.
        let expands = PARAM | SUBST | ARITH | BRACE;
        subcommand::forms(&words, |i| self.w(prog + i).flags & expands != 0)
    }

    /// What the program at `prog` runs.
    fn plan(&self, prog: usize, b: usize, stdin_fed: bool) -> Plan {
        let name = basename(self.v(prog));
        if let Some(spec) = wrapper(name) {
            return self.wrapped(name, &spec, prog, b);
        }
        match name {
            "env" => {
                if (prog + 1..b).any(|i| {
                    let v = self.v(i);
                    v == "-S"
                        || v.starts_with("--split-string")
                        || (v.starts_with("-S") && !v.starts_with("--"))
                }) {
                    return Plan::Opaque("`env -S` splits a string into a command".into());
                }
                let options = prog + 1 < b && self.v(prog + 1).starts_with('-');
                match self.wrapped(name, &ENV, prog, b) {
                    Plan::Inner {
                        start,
                        end,
                        by_value,
                        ..
                    } => Plan::Inner {
                        start,
                        end,
                        by_value,
                        transparent: !options,
                    },
                    other => other,
                }
            }
            "sudo" => self.wrapped(name, &SUDO, prog, b),
            "doas" => self.wrapped(name, &DOAS, prog, b),
            "xargs" => {
                // A bare `xargs` is left out for allow rules, as Claude
                // Code leaves it out (`xargs grep foo` is judged as `grep
                // foo`), unless the words it adds may make its command run
                // or write something: its command is a wrapper, a shell or
                // a program acting through its options, or `xargs` has
                // options of its own (`-I`, `-a`).
                let bare = prog + 1 < b && !self.v(prog + 1).starts_with('-');
                match self.wrapped(name, &XARGS, prog, b) {
                    Plan::Inner {
                        start,
                        end,
                        by_value,
                        ..
                    } => {
                        let inner = basename(self.v(start));
                        // The files it adds are still read: a reading
                        // program fed by `xargs` names every path (`files`).
                        let plain = matches!(self.plan(start, end, false), Plan::Plain)
                            && !super::programs::acts_through_arguments(inner);
                        Plan::Inner {
                            start,
                            end,
                            by_value,
                            transparent: bare && plain,
                        }
                    }
                    other => other,
                }
            }
            "find" => self.find(prog, b),
            "watch" => self.watch(prog, b),
            "eval" => {
                let mut i = prog + 1;
                if self.v(i) == "--" && i < b {
                    i += 1;
                }
                self.script_of(name, i, b, true)
            }
            "trap" => self.trap(prog, b),
            "busybox" | "toybox" => self.applet(name, prog, b),
            "su" => self.su(prog, b, stdin_fed),
            "script" => self.script_command(prog, b, stdin_fed),
            "at" | "batch" => self.at_job(name, prog, b, stdin_fed),
            "parallel" => self.parallel(prog, b),
            "alias" => self.alias(prog, b),
            "set" | "setopt" | "unsetopt" | "shopt" => self.shell_options(name, prog, b),
            "compgen" | "hash" | "emulate" | "enable" | "fc" => self.runs_through(name, prog, b),
            "source" | "." => {
                let mut i = prog + 1;
                if self.v(i) == "--" && i < b {
                    i += 1;
                }
                self.script_file(name, i, b, stdin_fed)
            }
            n if is_shell(n) => self.shell(n, prog, b, stdin_fed),
            _ => Plan::Plain,
        }
    }

    /// Reads options by `spec` from `words[i..b]`.
    fn options(&self, name: &str, spec: &Spec, mut i: usize, b: usize) -> Opts {
        while i < b {
            let w = self.w(i);
            let v = self.v(i);
            if w.flags & COMPUTED != 0 && v.starts_with('-') {
                return Opts::Unknown(format!(
                    "an option of `{name}` is computed when the command runs"
                ));
            }
            if v == "--" {
                return Opts::At(i + 1);
            }
            if v == "-" && name == "env" {
                // `env -` is `env -i`.
                i += 1;
                continue;
            }
            if let Some(long) = v.strip_prefix("--").filter(|l| !l.is_empty()) {
                let (key, has_value) = match long.split_once('=') {
                    Some((k, _)) => (k, true),
                    None => (long, false),
                };
                let dashed = format!("--{key}");
                if spec.long_args.contains(&dashed.as_str()) {
                    i += if has_value { 1 } else { 2 };
                } else if spec.long_flags.contains(&dashed.as_str()) {
                    i += 1;
                } else {
                    return Opts::Unknown(format!(
                        "`{name}` has an option this splitter does not know: `{}`",
                        snippet(v)
                    ));
                }
                continue;
            }
            let Some(cluster) = v.strip_prefix('-').filter(|c| !c.is_empty()) else {
                break;
            };
            if spec.numeric && cluster.bytes().all(|c| c.is_ascii_digit()) {
                i += 1;
                continue;
            }
            let mut step = 1;
            for (k, c) in cluster.char_indices() {
                if spec.no_cmd.contains(c) {
                    return Opts::NoCommand;
                }
                if spec.flags.contains(c) {
                    continue;
                }
                if spec.args.contains(c) {
                    if k + c.len_utf8() == cluster.len() {
                        step = 2;
                    }
                    break;
                }
                return Opts::Unknown(format!(
                    "`{name}` has an option this splitter does not know: `-{c}`"
                ));
            }
            i += step;
        }
        Opts::At(i)
    }

    fn wrapped(&self, name: &str, spec: &Spec, prog: usize, b: usize) -> Plan {
        match self.options(name, spec, prog + 1, b) {
            Opts::NoCommand => Plan::Plain,
            Opts::Unknown(why) => Plan::Opaque(why),
            Opts::At(i) => {
                let start = (i + spec.positional).min(b);
                let mut cmd = start;
                if spec.assigns {
                    while cmd < b && self.is_assign(cmd, true) {
                        cmd += 1;
                    }
                }
                if cmd >= b {
                    return Plan::Plain;
                }
                Plan::Inner {
                    start,
                    end: b,
                    by_value: spec.assigns,
                    transparent: spec.transparent,
                }
            }
        }
    }

    fn find(&self, prog: usize, b: usize) -> Plan {
        let mut list = Vec::new();
        let mut i = prog + 1;
        while i < b {
            if matches!(self.v(i), "-exec" | "-execdir" | "-ok" | "-okdir") {
                let start = i + 1;
                let end = self.exec_end(start, b);
                list.push((start, end));
                i = end + 1;
            } else {
                i += 1;
            }
        }
        if list.is_empty() {
            Plan::Plain
        } else {
            Plan::Inners(list)
        }
    }

    /// Where the command of a `find -exec` starting at word `start` ends:
    /// its `;`, or the `+` after a `{}`, or `b`.
    pub(super) fn exec_end(&self, start: usize, b: usize) -> usize {
        let mut end = start;
        while end < b {
            let v = self.v(end);
            if v == ";" || (v == "+" && end > start && self.v(end - 1) == "{}") {
                break;
            }
            end += 1;
        }
        end
    }

    fn watch(&self, prog: usize, b: usize) -> Plan {
        let exec = (prog + 1..b)
            .take_while(|&i| self.v(i).starts_with('-'))
            .any(|i| {
                let v = self.v(i);
                v == "--exec" || (!v.starts_with("--") && v.contains('x'))
            });
        match self.options("watch", &WATCH, prog + 1, b) {
            Opts::NoCommand => Plan::Plain,
            Opts::Unknown(why) => Plan::Opaque(why),
            Opts::At(i) if i >= b => Plan::Plain,
            Opts::At(i) if exec => Plan::Inner {
                start: i,
                end: b,
                by_value: false,
                transparent: false,
            },
            // Without `-x`, watch joins its arguments and runs them with
            // `sh -c`.
            Opts::At(i) => self.script_of("watch", i, b, false),
        }
    }

    /// The script made of `words[i..b]` joined by spaces, which must be
    /// written literally.
    pub(super) fn script_of(&self, name: &str, i: usize, b: usize, transparent: bool) -> Plan {
        if i >= b {
            return Plan::Plain;
        }
        if (i..b).any(|k| self.w(k).flags & COMPUTED != 0) {
            return Plan::Opaque(format!(
                "the string `{name}` runs is computed when the command runs"
            ));
        }
        let mut s = String::new();
        for k in i..b {
            if k > i {
                s.push(' ');
            }
            s.push_str(self.v(k));
        }
        Plan::Scripts {
            scripts: vec![s],
            transparent,
        }
    }

    /// A shell or `source` given a script file at word `i`.
    fn script_file(&self, name: &str, i: usize, b: usize, stdin_fed: bool) -> Plan {
        if i >= b {
            return Plan::Plain;
        }
        if self.w(i).flags & COMPUTED != 0 {
            return Plan::Opaque(format!(
                "the script `{name}` runs is computed when the command runs"
            ));
        }
        if stdin_fed && matches!(self.v(i), "/dev/stdin" | "-" | "/dev/fd/0") {
            return Plan::Opaque(format!(
                "`{name}` reads its commands from a here-document or a pipe"
            ));
        }
        Plan::Plain
    }

    fn shell(&self, name: &str, prog: usize, b: usize, stdin_fed: bool) -> Plan {
        let mut i = prog + 1;
        let mut has_c = false;
        let mut reads_stdin = false;
        let mut clean = true;
        while i < b {
            let w = self.w(i);
            let v = self.v(i);
            if w.flags & COMPUTED != 0 {
                return Plan::Opaque(format!(
                    "the arguments of `{name}` are computed when the command runs"
                ));
            }
            if v == "--" || v == "-" {
                i += 1;
                break;
            }
            if let Some(long) = v.strip_prefix("--") {
                match long {
                    "rcfile" | "init-file" => {
                        clean = false;
                        i += 2;
                    }
                    "norc" | "noprofile" | "posix" => i += 1,
                    _ => {
                        clean = false;
                        i += 1;
                    }
                }
                continue;
            }
            let Some(cluster) = v
                .strip_prefix('-')
                .or_else(|| v.strip_prefix('+'))
                .filter(|c| !c.is_empty())
            else {
                break;
            };
            let mut takes = 0;
            for c in cluster.chars() {
                match c {
                    'c' => has_c = true,
                    's' => reads_stdin = true,
                    'o' | 'O' => takes += 1,
                    'e' | 'u' | 'x' | 'v' | 'f' | 'n' | 'a' | 'b' | 'h' | 'k' | 'm' | 'p' | 't'
                    | 'B' | 'C' | 'E' | 'H' | 'P' | 'T' => {}
                    _ => clean = false,
                }
            }
            i += 1 + takes;
        }
        if has_c {
            if i >= b {
                return Plan::Plain;
            }
            if self.w(i).flags & COMPUTED != 0 {
                return Plan::Opaque(format!(
                    "the script of `{name} -c` is computed when the command runs"
                ));
            }
            return Plan::Scripts {
                scripts: vec![self.v(i).to_string()],
                transparent: clean,
            };
        }
        if reads_stdin || i >= b {
            return if stdin_fed {
                Plan::Opaque(format!(
                    "`{name}` reads its commands from a here-document or a pipe"
                ))
            } else {
                Plan::Plain
            };
        }
        self.script_file(name, i, b, stdin_fed)
    }

    fn trap(&self, prog: usize, b: usize) -> Plan {
        let mut i = prog + 1;
        if i < b {
            match self.v(i) {
                "--" => i += 1,
                v if v.starts_with('-') && v.len() > 1 => return Plan::Plain,
                _ => {}
            }
        }
        // One operand is a signal to reset; with more, the first is the
        // action, run when a signal (or EXIT) comes.
        if b.saturating_sub(i) < 2 || matches!(self.v(i), "-" | "") {
            return Plan::Plain;
        }
        self.script_of("trap", i, i + 1, false)
    }

    /// `set`, zsh's `setopt`/`unsetopt` and bash's `shopt`: plain when
    /// every option they change is one that changes neither how the rest
    /// of the line is read nor what it runs; otherwise opaque (a review
    /// found `set -k` made later words environment for `git`, `set -H`
    /// turned a quoted `!!` into a command, zsh's `set -A path .` ran
    /// `./ls`, and `set -o globsubst` ran a glob qualifier).
    fn shell_options(&self, name: &str, prog: usize, b: usize) -> Plan {
        // Letters of `set` that only stop, trace or check.
        // Safe in bash and in zsh alike: zsh reads `-T` as CDABLE_VARS
        // (`cd HOME` goes to `$HOME`), `-P` as RC_EXPAND_PARAM and `-E` as
        // PUSHD_SILENT (a second review).
        const SAFE_LETTERS: &str = "euxvfnCbmth";
        const SAFE_NAMES: &[&str] = &[
            "errexit",
            "nounset",
            "xtrace",
            "verbose",
            "pipefail",
            "noglob",
            "noexec",
            "noclobber",
            "errtrace",
            "functrace",
            "physical",
            "notify",
            "monitor",
            "hashall",
            "ignoreeof",
            "emacs",
            "vi",
            "errreturn",
            "printexitvalue",
            "nullglob",
            "failglob",
            "checkwinsize",
            "histappend",
            "cmdhist",
            "lithist",
            "checkhash",
        ];
        // zsh ignores case and underscores in option names, and `no`
        // before one turns it off (which, for these, is just as safe).
        let safe_name = |n: &str| {
            let n: String = n
                .chars()
                .filter(|c| *c != '_')
                .collect::<String>()
                .to_ascii_lowercase();
            let n = n
                .strip_prefix("no")
                .filter(|r| SAFE_NAMES.contains(r))
                .unwrap_or(&n);
            SAFE_NAMES.contains(&n)
        };
        let opaque = |what: &str| {
            Plan::Opaque(format!(
                "`{name}` changes {what}, which can change how the rest of the line is read or what it runs"
            ))
        };
        let mut i = prog + 1;
        while i < b {
            let w = self.w(i);
            let v = self.v(i);
            if w.flags & COMPUTED != 0 {
                return opaque("an option computed when the line runs");
            }
            match name {
                "set" => {
                    if v == "--" || v == "-" || !(v.starts_with('-') || v.starts_with('+')) {
                        // Positional parameters from here on.
                        return Plan::Plain;
                    }
                    let letters = v.get(1..).unwrap_or("");
                    for c in letters.chars() {
                        if c == 'o' {
                            i += 1;
                            if i >= b {
                                return Plan::Plain;
                            }
                            if !safe_name(self.v(i)) {
                                return opaque(&format!("the option `{}`", self.v(i)));
                            }
                        } else if !SAFE_LETTERS.contains(c) {
                            return opaque(&format!(
                                "the option `{}{c}`",
                                v.get(..1).unwrap_or("")
                            ));
                        }
                    }
                }
                "shopt" => {
                    if matches!(v, "-s" | "-u" | "-o" | "-p" | "-q") || safe_name(v) {
                        // `-p`, `-q` and a lone name only print or test.
                    } else {
                        return opaque(&format!("the option `{v}`"));
                    }
                }
                _ => {
                    let n = v.trim_start_matches(['-', '+']);
                    if !n.is_empty() && !safe_name(n) {
                        return opaque(&format!("the option `{v}`"));
                    }
                }
            }
            i += 1;
        }
        Plan::Plain
    }

    /// Builtins that run text, or change what a name runs, through some of
    /// their options (a review ran each under an allow of the builtin):
    /// `compgen -W` expands its word list (substitutions run) and `-C`/`-F`
    /// run a command or function; `hash -p PATH NAME` and zsh's `hash
    /// NAME=PATH` make a later `NAME` run PATH; `emulate … -c` runs a
    /// script; `enable -f` loads a builtin from a shared object; `fc`
    /// runs commands from the history.
    fn runs_through(&self, name: &str, prog: usize, b: usize) -> Plan {
        let args: Vec<&str> = (prog + 1..b).map(|i| self.v(i)).collect();
        let has = |o: char| {
            args.iter()
                .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains(o))
        };
        let why = match name {
            "compgen" if has('W') || has('C') || has('F') => {
                "runs or expands the text of an option (`-W`, `-C`, `-F`)"
            }
            "hash" if has('p') || args.iter().any(|a| a.contains('=')) => {
                "makes a later command of that name run another program"
            }
            // Any emulation but zsh's own, or an option it sets, changes
            // how the rest of the line is read (`emulate zsh -o cdablevars`).
            "emulate"
                if has('c')
                    || has('o')
                    || args
                        .iter()
                        .any(|a| !matches!(*a, "-L" | "-R" | "-LR" | "-RL" | "zsh")) =>
            {
                "runs a script (`-c`), sets options, or emulates another shell"
            }
            "enable" if has('f') => "loads a builtin from a shared object (`-f`)",
            "fc" if !(has('l') && !has('s') && !has('e')) => "runs commands from the history",
            _ => return Plan::Plain,
        };
        Plan::Opaque(format!("`{name}` {why}"))
    }

    fn alias(&self, prog: usize, b: usize) -> Plan {
        let mut scripts = Vec::new();
        for i in prog + 1..b {
            let v = self.v(i);
            let Some((_, body)) = v.split_once('=') else {
                continue;
            };
            if self.w(i).flags & (PARAM | SUBST | super::parse::ARITH) != 0 {
                return Plan::Opaque(
                    "the value of an alias is computed when the command runs".into(),
                );
            }
            // With alias expansion on, a later line's command is replaced
            // by the body and keeps its arguments: an empty body makes its
            // first argument the program (`alias ls=` then `ls pwned -rf ~`
            // ran `pwned`), and a body ending in a program that runs its
            // arguments (`eval`, `bash -c`, `sudo`) or in a blank (which
            // expands the next word too) runs them. Those are opaque; any
            // other body is read as a script, as before.
            let last = body.split_whitespace().last().map(basename);
            let runs_arguments = last.is_some_and(|l| is_special(l) || l == "-c" || l == "exec");
            // A body that ends a command (`echo x;`, `echo x&`, a newline)
            // makes the words after the alias a command of their own.
            let ends_command = body.trim_end().ends_with([';', '&', '|', '\n'])
                || body.contains('\n')
                || body.ends_with(['\r', '\u{b}', '\u{c}']);
            if body.trim().is_empty()
                || body.ends_with([' ', '\t'])
                || runs_arguments
                || ends_command
            {
                return Plan::Opaque(
                    "an alias whose body takes the words after it as a command: a later line that names the alias runs them".into(),
                );
            }
            scripts.push(body.to_string());
        }
        if scripts.is_empty() {
            Plan::Plain
        } else {
            Plan::Scripts {
                scripts,
                transparent: false,
            }
        }
    }
}
