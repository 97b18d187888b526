//! The files a command line touches: the operands of programs that read or
//! write files, and the working directory `cd` moves them to.
//!
//! `cat .env` reads `.env` whatever rule allowed `cat`, so with
//! [`ShellConfig::file_operands`] each operand of a program of [`READS`]
//! or [`WRITES`] becomes a piece of the file tool, checked against its
//! deny and ask rules (spec/shell.md §5.1). An operand the line names
//! only as a pattern (a glob, a tree read recursively, a value known only
//! when the line runs) becomes a **pattern** piece, for the tool that
//! answers whether a rule could match it.
//!
//! Every relative path of a file piece is resolved against the working
//! directories the line could be in when it runs (§5.2): `cd src && cat
//! ../.env` reads `.env`. `cd` can fail, so the directory before it stays
//! possible; a directory that cannot be known (`cd "$d"`, `cd -`, `popd`,
//! a relative `cd` in a loop or a function) makes relative paths after it
//! name anything.

use super::parse::{Out, Res, Word, ARITH, BRACE, COMPUTED, GLOB, PARAM, SUBST, TILDE};
use super::{ErrorKind, Form, Kind, Piece, ShellError};

/// Programs whose operands are files they read.
pub const READS: &[&str] = &[
    "cat", "head", "tail", "less", "more", "tac", "nl", "od", "xxd", "hexdump", "strings",
    "base64", "wc", "sort", "uniq", "cut", "grep", "egrep", "fgrep", "rg", "awk", "sed", "diff",
    "cmp", "file", "stat", "bat", "jq", "source", ".", "cp", "mv", "install", "rsync", "scp",
];

/// Programs whose operands are files they write (or remove).
pub const WRITES: &[&str] = &[
    "tee", "touch", "rm", "rmdir", "mkdir", "truncate", "chmod", "chown", "ln", "shred", "unlink",
    "cp", "mv", "install", "rsync",
];

/// Programs that read or write a directory operand's whole tree with one
/// of these options (`rg` always does).
const RECURSIVE: &[(&str, &[&str])] = &[
    (
        "grep",
        &["-r", "-R", "--recursive", "--dereference-recursive"],
    ),
    ("egrep", &["-r", "-R", "--recursive"]),
    ("fgrep", &["-r", "-R", "--recursive"]),
    ("rg", &[]),
    ("cp", &["-r", "-R", "-a", "--recursive", "--archive"]),
    ("rsync", &["-r", "-a", "--recursive", "--archive"]),
    ("scp", &["-r"]),
    ("rm", &["-r", "-R", "--recursive"]),
    ("chmod", &["-R", "--recursive"]),
    ("chown", &["-R", "--recursive"]),
    ("diff", &["-r", "--recursive"]),
];

/// The most operand pieces one command line may have; more is an error.
pub const MAX_OPERANDS: usize = 256;

/// The most working directories tracked at once; past it the directory is
/// unknown.
const MAX_DIRS: usize = 8;

/// The query naming every path (`path-reach`'s `ANY_PATH`).
pub(super) const ANY: &str = "//**";

/// Whether the analysis of program `w` (a plain name) moves the working
/// directory or, with `operands`, adds file pieces: the quick path leaves
/// those to it.
pub(super) fn touches_files(w: &str, operands: bool) -> bool {
    matches!(w, "cd" | "pushd" | "popd")
        || (operands && (READS.contains(&w) || WRITES.contains(&w)))
}

/// Whether the program (a base name) reads a directory operand's tree.
fn recursive(program: &str, options: &[&str]) -> bool {
    RECURSIVE.iter().any(|(p, opts)| {
        *p == program
            && (opts.is_empty()
                || options.iter().any(|o| {
                    opts.contains(o)
                        || (!o.starts_with("--")
                            && opts.iter().any(|f| {
                                f.len() == 2 && !f.starts_with("--") && o.contains(&f[1..])
                            }))
                }))
    })
}

/// What an operand word names.
enum Named {
    /// One path, as the program receives it.
    Path(String),
    /// The paths a pattern matches.
    Pattern(String),
}

/// Escapes the characters the pattern syntax reads, in a literal part.
fn escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The leading `$HOME`, `${HOME}` or `${HOME%…}` of a word, whose value
/// is the home directory (a suffix removed from it changes nothing a path
/// canonicalises): the length to replace with `~`.
fn home_prefix(v: &str) -> Option<usize> {
    let n = if v.starts_with("${HOME}") {
        7
    } else if let Some(rest) = v.strip_prefix("${HOME%") {
        // `${HOME%/}`, `${HOME%%/}`: up to the closing brace, which must
        // follow a pattern without another expansion.
        let close = rest.find('}')?;
        let pat = rest.get(..close)?;
        if pat.contains(['$', '`', '{']) {
            return None;
        }
        7 + close + 1
    } else if v.starts_with("$HOME") {
        let next = v.as_bytes().get(5);
        if next.is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_') {
            return None;
        }
        5
    } else {
        return None;
    };
    match v.as_bytes().get(n) {
        None | Some(b'/') => Some(n),
        _ => None,
    }
}

/// Reads an operand word.
fn named(value: &str, flags: u16) -> Named {
    let (value, flags) = match home_prefix(value) {
        Some(n) => {
            let rest = value.get(n..).unwrap_or("");
            let v = format!("~{rest}");
            // The home directory was the only expansion unless more follow.
            let more = rest.contains('$') || rest.contains('`');
            let f = if more { flags } else { flags & !(PARAM) };
            return named_plain(&v, f);
        }
        None => (value, flags),
    };
    named_plain(value, flags)
}

fn named_plain(value: &str, flags: u16) -> Named {
    // A value computed when the line runs can be any path, `..` and `/`
    // included; so can a brace expansion (`{..,x}/.env`), which this
    // reading does not expand. `{}` is `find -exec`'s and `xargs -I`'s
    // stand-in for a file found at run time.
    if flags & (PARAM | SUBST | ARITH | BRACE) != 0 || value.contains("{}") {
        return Named::Pattern(ANY.to_string());
    }
    if value.starts_with('~') && flags & TILDE != 0 {
        let user = value.get(1..).unwrap_or("");
        if !(user.is_empty() || user.starts_with('/')) {
            // `~user`: another home directory, unknown here.
            return Named::Pattern(ANY.to_string());
        }
    }
    if flags & GLOB != 0 {
        // Quoted glob characters cannot be told from the others in the
        // value: every one is read as a wildcard, which names more paths.
        return Named::Pattern(value.to_string());
    }
    Named::Path(value.to_string())
}

impl Out<'_> {
    /// Adds the operand pieces of the simple command `words[prog..b]`
    /// (program at `prog`, its base name `base`, shown as `text`); `fed`
    /// when the program also gets operands at run time (`xargs cat`).
    pub(super) fn operands(
        &mut self,
        (base, text): (&str, &str),
        prog: usize,
        b: usize,
        fed: bool,
    ) -> Res<()> {
        let reads = READS.contains(&base);
        let writes = WRITES.contains(&base);
        if !self.cfg.file_operands || !(reads || writes) {
            return Ok(());
        }
        let words: Vec<Word> = (prog + 1..b).map(|i| self.word(i)).collect();
        let in_place = base == "sed"
            && words.iter().any(|w| {
                let v = self.val(*w);
                v.starts_with("-i") || v == "--in-place"
            });
        let mut options: Vec<&str> = Vec::new();
        let mut operands: Vec<(String, u16)> = Vec::new();
        let mut opts = true;
        for w in &words {
            let v = self.val(*w);
            if opts && v == "--" {
                opts = false;
                continue;
            }
            if v.is_empty() {
                continue;
            }
            if opts && v.starts_with('-') && v.len() > 1 {
                options.push(v);
                continue;
            }
            operands.push((v.to_string(), w.flags));
        }
        let tree = recursive(base, &options);
        let mut names: Vec<Named> = Vec::new();
        for (v, f) in &operands {
            match named(v, *f) {
                // A tree read recursively: the directory itself, which the
                // rules on it and above it cover, and every file below it.
                Named::Path(p) if tree => {
                    names.push(Named::Pattern(format!("{}/**", escaped(&p))));
                    names.push(Named::Path(p));
                }
                Named::Pattern(q) if tree && q != ANY => {
                    names.push(Named::Pattern(format!("{q}/**")));
                }
                n => names.push(n),
            }
        }
        if fed {
            names.push(Named::Pattern(ANY.to_string()));
        }
        for n in names {
            for (on, kind) in [
                (reads, Kind::ReadOperand),
                (writes || in_place, Kind::WriteOperand),
            ] {
                if !on {
                    continue;
                }
                let piece = match &n {
                    Named::Path(p) => Piece::with_value(kind, text.to_string(), p.clone()),
                    Named::Pattern(q) => Piece::of_pattern(kind, text.to_string(), q.clone()),
                };
                self.push(piece)?;
            }
        }
        Ok(())
    }

    /// Follows `cd`, `pushd` and `popd` (`args` are the words after the
    /// program): the directories the line could be in afterwards.
    pub(super) fn change_dir(&mut self, program: &str, args: &[Word], in_loop: bool) {
        let mut target: Option<Option<String>> = None;
        let mut opts = true;
        for (i, w) in args.iter().enumerate() {
            let v = self.val(*w);
            if opts && v == "--" {
                opts = false;
                continue;
            }
            if opts && v.starts_with('-') && v.len() > 1 && !v.starts_with("-/") {
                continue;
            }
            if opts && (v.starts_with('+') || (v.starts_with('-') && v.len() > 1)) {
                // `pushd +2`, `popd -1`: a place in the directory stack.
                target = Some(None);
                break;
            }
            // A computed target, `cd -` and `~user` are known only when
            // the line runs.
            let other_home = v.starts_with('~') && !(v == "~" || v.starts_with("~/"));
            // zsh's `cd OLD NEW` goes to the working directory with OLD
            // replaced by NEW (`cd proj .ssh` from `~/proj` is `~/.ssh`;
            // bash refuses it): a second operand makes the target known
            // only when the line runs.
            let second = args.get(i + 1..).is_some_and(|rest| !rest.is_empty());
            let unknown =
                w.flags & COMPUTED != 0 || v == "-" || v.is_empty() || other_home || second;
            target = Some(if unknown { None } else { Some(v.to_string()) });
            break;
        }
        let target = match (program, target) {
            ("popd", _) => None,
            ("pushd", None) => None,
            (_, None) => Some("~".to_string()),
            (_, Some(t)) => t,
        };
        let absolute = target
            .as_deref()
            .is_some_and(|t| t.starts_with('/') || t == "~" || t.starts_with("~/"));
        let mut next: Vec<Option<String>> = Vec::new();
        match target {
            None => {
                self.unknown_cds += 1;
                next.push(None);
            }
            Some(_) if in_loop && !absolute => {
                self.unknown_cds += 1;
                next.push(None);
            }
            Some(t) if absolute => next.push(Some(t)),
            Some(t) => {
                for d in &self.dirs {
                    next.push(d.as_ref().map(|d| join(d, &t)));
                }
            }
        }
        for d in next {
            if !self.dirs.contains(&d) {
                if self.dirs.len() >= MAX_DIRS {
                    if !self.dirs.contains(&None) {
                        self.dirs.push(None);
                    }
                    break;
                }
                self.dirs.push(d);
            }
        }
    }

    /// Whether piece `p` names a file relative to a directory `cd` may
    /// have moved from.
    pub(super) fn moves(&self, p: &Piece) -> bool {
        let file = matches!(
            p.kind,
            Kind::Read | Kind::Write | Kind::ReadOperand | Kind::WriteOperand
        );
        let path = match &p.form {
            Form::Text => &p.text,
            Form::Own(v) | Form::Pattern(v) => v,
            Form::Opaque(_) => return false,
        };
        file && !path.starts_with('/')
            && !path.starts_with('~')
            && self.dirs.iter().any(|d| d.as_deref() != Some(""))
    }

    /// The file pieces `p` stands for once its relative path is resolved
    /// against every directory the line could be in ([`Out::moves`]).
    pub(super) fn resolved(&self, p: &Piece) -> Vec<Piece> {
        let (path, pattern) = match &p.form {
            Form::Text => (p.text.as_str(), false),
            Form::Own(v) => (v.as_str(), false),
            Form::Pattern(q) => (q.as_str(), true),
            Form::Opaque(_) => return vec![p.clone()],
        };
        let operand = matches!(p.kind, Kind::ReadOperand | Kind::WriteOperand);
        let mut out = Vec::new();
        for d in &self.dirs {
            let q = match d {
                Some(d) if pattern => Piece::of_pattern(p.kind, p.text.clone(), joined_pattern(d, path)),
                Some(d) => Piece::with_value(p.kind, p.text.clone(), join(d, path)),
                None if operand => Piece::of_pattern(p.kind, p.text.clone(), ANY.to_string()),
                None => Piece::opaque(
                    p.kind,
                    p.text.clone(),
                    format!(
                        "`{path}` is relative to a working directory known only when the command runs"
                    ),
                ),
            };
            if !out.contains(&q) {
                out.push(q);
            }
        }
        out
    }
}

/// `dir/path`, with `dir` empty for the call's own working directory.
fn join(dir: &str, path: &str) -> String {
    if dir.is_empty() {
        path.to_string()
    } else {
        format!("{}/{path}", dir.trim_end_matches('/'))
    }
}

/// `dir/pattern`, the directory's own characters escaped.
fn joined_pattern(dir: &str, pattern: &str) -> String {
    if dir.is_empty() {
        pattern.to_string()
    } else {
        format!("{}/{pattern}", escaped(dir.trim_end_matches('/')))
    }
}

/// The error for a line with more operand pieces than [`MAX_OPERANDS`].
pub(super) fn too_many() -> ShellError {
    ShellError::new(
        ErrorKind::TooManySubjects,
        format!("the command has more than {MAX_OPERANDS} file operands"),
    )
}
