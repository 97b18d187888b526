//! Reading bash's grammar: lists, pipelines, compound commands, words,
//! redirects and here-documents.
//!
//! One [`Parser`] reads one source (the command line, the text of a
//! backquoted substitution, a here-document body, the script of `bash -c`);
//! they all write into one [`Out`], which holds the pieces found so far, the
//! counters the limits are checked against, and two stacks: the decoded
//! values of words (`buf`) and the words of the simple commands being read.
//! A nested construct pushes onto the stacks and truncates them back when it
//! is done, so the words of the command around it stay where they were.
//!
//! The parser never expands anything. A word's value is what the shell
//! passes after quote removal when the word has no expansion; an expansion
//! is kept as it was written and flags the word, and the analysis treats a
//! flagged word in a place that decides what runs as unanalysable.

use super::{ErrorKind, Kind, Piece, ShellConfig, ShellError};
use toolgate_core::quote::is_invisible_or_bidi;

pub(super) type Res<T> = Result<T, ShellError>;

// Word flags.
/// Quotes or backslashes were removed.
pub(super) const QUOTED: u16 = 1;
/// A parameter expansion: `$x`, `${x}`, `$1`.
pub(super) const PARAM: u16 = 1 << 1;
/// A command or process substitution.
pub(super) const SUBST: u16 = 1 << 2;
/// An arithmetic expansion.
pub(super) const ARITH: u16 = 1 << 3;
/// An unquoted glob character (`*`, `?`, `[…]`).
pub(super) const GLOB: u16 = 1 << 4;
/// An unquoted brace expansion (`{a,b}`, `{1..3}`).
pub(super) const BRACE: u16 = 1 << 5;
/// An unquoted leading `~`.
pub(super) const TILDE: u16 = 1 << 6;
/// A character outside printable ASCII in the value.
pub(super) const ODD: u16 = 1 << 7;
/// An invisible or bidirectional character in the value.
pub(super) const INVIS: u16 = 1 << 8;
/// An assignment in the place of one (`NAME=value` before the program).
pub(super) const ASSIGN: u16 = 1 << 9;
/// The word is exactly one process substitution (`>(tee log)`).
pub(super) const PSUB: u16 = 1 << 10;
/// A `$` or backquote in the value came from quoted or escaped text: a
/// builtin that evaluates the value as arithmetic or as a subscripted name
/// expands it then (`let 'a[$(rm x)]'` runs `rm x`).
pub(super) const LITSUB: u16 = 1 << 11;
/// An unquoted `=` starting the word: zsh replaces `=name` with the path
/// of the program `name` (`=rm -rf x` runs `rm`), bash passes it on.
pub(super) const EQUALS: u16 = 1 << 12;
/// What makes a word's value differ from what the shell will pass.
pub(super) const COMPUTED: u16 = PARAM | SUBST | ARITH | GLOB | BRACE | EQUALS;

/// A word read: its decoded value in `Out::buf` and its flags.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Word {
    pub v0: usize,
    pub v1: usize,
    pub flags: u16,
}

/// Redirect operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    Out,
    Append,
    Clobber,
    OutErr,
    OutErrAppend,
    In,
    InOut,
    DupOut,
    DupIn,
    HereDoc,
    HereStr,
}

impl Op {
    fn text(self) -> &'static str {
        match self {
            Op::Out => ">",
            Op::Append => ">>",
            Op::Clobber => ">|",
            Op::OutErr => "&>",
            Op::OutErrAppend => "&>>",
            Op::In => "<",
            Op::InOut => "<>",
            Op::DupOut => ">&",
            Op::DupIn => "<&",
            Op::HereDoc => "<<",
            Op::HereStr => "<<<",
        }
    }
}

/// A redirect of the simple command being read.
#[derive(Clone, Copy, Debug)]
pub(super) struct Redir {
    /// The descriptor written before the operator (`2>`), if any.
    pub fd: Option<u32>,
    pub op: Op,
    pub target: Word,
}

/// A here-document whose body starts after the next newline.
#[derive(Debug)]
struct HereDoc {
    delim: String,
    strip_tabs: bool,
    quoted: bool,
}

/// How quotes read inside the body of an expansion.
#[derive(Clone, Copy, Debug)]
struct Quotes {
    /// Inside double quotes (or a context read as they are): `$'…'` is a
    /// `$` and a quote.
    dq: bool,
    /// Single-quoted text is expanded (arithmetic, subscripts, the word of
    /// `${x:-…}` inside double quotes).
    sq_live: bool,
}

impl Quotes {
    /// Arithmetic: read as double-quoted text, single quotes ordinary.
    const LIVE: Quotes = Quotes {
        dq: true,
        sq_live: true,
    };
}

/// What every parser of one command line writes into.
pub(super) struct Out<'c> {
    pub cfg: &'c ShellConfig,
    pub pieces: Vec<Piece>,
    /// Subjects counted against `max_subjects`.
    pub units: usize,
    pub depth: usize,
    pub buf: String,
    pub words: Vec<Word>,
    pub redirs: Vec<Redir>,
    /// The assignments in the environment of the script being read: those
    /// before the program that runs it (`FOO=1 bash -c '…'`), which every
    /// command of the script inherits.
    pub env: Vec<Word>,
    /// The working directories the line could be in, relative to the
    /// call's (`""` for it, `None` for one known only when the line
    /// runs): `files` resolves relative file pieces against each.
    pub dirs: Vec<Option<String>>,
    /// How many loop bodies and function bodies enclose what is read: a
    /// relative `cd` there may run any number of times.
    pub loops: u32,
    /// How many times a `cd` made the directory unknown: a loop or a
    /// function that made none leaves the line's directories as they were.
    pub unknown_cds: u32,
    /// Where the last word that changes directory starts in the text being
    /// read (known by its address and length; nested scripts are other
    /// texts), found once per text.
    pub last_cd: Option<(usize, usize, Option<usize>)>,
    /// How many programs that add operands at run time (`xargs`) enclose
    /// the command being analysed.
    pub fed: u32,
    /// Operand pieces so far, against `files::MAX_OPERANDS`.
    pub operands: usize,
}

impl Out<'_> {
    pub fn val(&self, w: Word) -> &str {
        self.buf.get(w.v0..w.v1).unwrap_or("")
    }

    pub fn word(&self, i: usize) -> Word {
        self.words.get(i).copied().unwrap_or_default()
    }

    /// Adds a piece, counting it against the limit unless it is a
    /// constraint form; a file piece relative to a directory `cd` may have
    /// left is added once per directory the line could be in.
    pub fn push(&mut self, p: Piece) -> Res<()> {
        if self.moves(&p) {
            for q in self.resolved(&p) {
                self.push_one(q)?;
            }
            return Ok(());
        }
        self.push_one(p)
    }

    fn push_one(&mut self, p: Piece) -> Res<()> {
        if matches!(p.kind, Kind::ReadOperand | Kind::WriteOperand) {
            // The same file read twice is one subject, whichever command
            // reads it.
            if self
                .pieces
                .iter()
                .any(|q| q.kind == p.kind && q.form == p.form)
            {
                return Ok(());
            }
            self.operands += 1;
            if self.operands > super::files::MAX_OPERANDS {
                return Err(super::files::too_many());
            }
            self.pieces.push(p);
            return Ok(());
        }
        if p.kind != Kind::Constraint {
            self.units += 1;
            if self.units > self.cfg.max_subjects {
                return Err(ShellError::new(
                    ErrorKind::TooManySubjects,
                    format!(
                        "the command has more than {} subjects",
                        self.cfg.max_subjects
                    ),
                ));
            }
        }
        self.pieces.push(p);
        Ok(())
    }
}

/// Tokens at the start of which the parser decides what comes next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tok {
    Eof,
    Newline,
    Semi,
    DSemi,
    SemiAmp,
    DSemiAmp,
    Amp,
    AndIf,
    Pipe,
    PipeAmp,
    OrIf,
    LParen,
    RParen,
    Redir,
    Word,
}

/// Reserved words, recognised only where a command starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rw {
    LBrace,
    RBrace,
    If,
    Then,
    Elif,
    Else,
    Fi,
    While,
    Until,
    Do,
    Done,
    For,
    Select,
    Case,
    Esac,
    In,
    Function,
    DBrack,
    Bang,
    Time,
    Coproc,
}

impl Rw {
    fn from(w: &[u8]) -> Option<Rw> {
        Some(match w {
            b"{" => Rw::LBrace,
            b"}" => Rw::RBrace,
            b"if" => Rw::If,
            b"then" => Rw::Then,
            b"elif" => Rw::Elif,
            b"else" => Rw::Else,
            b"fi" => Rw::Fi,
            b"while" => Rw::While,
            b"until" => Rw::Until,
            b"do" => Rw::Do,
            b"done" => Rw::Done,
            b"for" => Rw::For,
            b"select" => Rw::Select,
            b"case" => Rw::Case,
            b"esac" => Rw::Esac,
            b"in" => Rw::In,
            b"function" => Rw::Function,
            b"[[" => Rw::DBrack,
            b"!" => Rw::Bang,
            b"time" => Rw::Time,
            b"coproc" => Rw::Coproc,
            _ => return None,
        })
    }

    /// The stop this word is, when it ends a list.
    fn stop(self) -> Option<u16> {
        Some(match self {
            Rw::RBrace => S_RBRACE,
            Rw::Then => S_THEN,
            Rw::Elif => S_ELIF,
            Rw::Else => S_ELSE,
            Rw::Fi => S_FI,
            Rw::Do => S_DO,
            Rw::Done => S_DONE,
            Rw::Esac => S_ESAC,
            _ => return None,
        })
    }

    fn text(self) -> &'static str {
        match self {
            Rw::LBrace => "{",
            Rw::RBrace => "}",
            Rw::If => "if",
            Rw::Then => "then",
            Rw::Elif => "elif",
            Rw::Else => "else",
            Rw::Fi => "fi",
            Rw::While => "while",
            Rw::Until => "until",
            Rw::Do => "do",
            Rw::Done => "done",
            Rw::For => "for",
            Rw::Select => "select",
            Rw::Case => "case",
            Rw::Esac => "esac",
            Rw::In => "in",
            Rw::Function => "function",
            Rw::DBrack => "[[",
            Rw::Bang => "!",
            Rw::Time => "time",
            Rw::Coproc => "coproc",
        }
    }
}

// What ends a list (a bit set).
const S_EOF: u16 = 1;
const S_RPAREN: u16 = 1 << 1;
const S_RBRACE: u16 = 1 << 2;
const S_THEN: u16 = 1 << 3;
const S_ELIF: u16 = 1 << 4;
const S_ELSE: u16 = 1 << 5;
const S_FI: u16 = 1 << 6;
const S_DO: u16 = 1 << 7;
const S_DONE: u16 = 1 << 8;
const S_ESAC: u16 = 1 << 9;
const S_CASE_END: u16 = 1 << 10;

/// How a word is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// An argument.
    Arg,
    /// Where an assignment may stand (before the program).
    Assign,
    /// Inside `[[ … ]]`, where `<`, `>`, `(`, `)`, `&` and `|` are
    /// operators of the test, not of the shell.
    Cond,
}

// Byte classes, looked up in one table so that scanning costs no call per
// byte.
/// A blank: space or tab.
const C_BLANK: u8 = 1;
/// Ends an unquoted word: blanks, newline, `;&|<>()`.
const C_META: u8 = 1 << 1;
/// No meaning to the shell anywhere in an unquoted word.
const C_PLAIN: u8 = 1 << 2;
/// Copied as is by the quick path in an argument (plain, `,`, `=`, and the
/// glob and tilde characters, which matter only in the program's place,
/// but for a glob that may match `..`, which the quick path declines). An
/// argument's `{` is the parser's: its braces may reach other paths.
const C_QUICK: u8 = 1 << 3;
/// Accepted by the quick path in a program name or redirect target.
const C_NAME: u8 = 1 << 4;
/// Accepted by the quick path inside single quotes: printable ASCII.
const C_SQ: u8 = 1 << 5;
/// Accepted by the quick path inside double quotes: printable ASCII that
/// neither expands nor escapes.
const C_DQ: u8 = 1 << 6;

// Evaluated at compile time, where `c < 256` holds by the loop's bound.
#[allow(clippy::indexing_slicing)]
const fn classes() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut c = 0usize;
    while c < 256 {
        let b = c as u8;
        let mut k = 0;
        if b == b' ' || b == b'\t' {
            k |= C_BLANK;
        }
        if matches!(
            b,
            b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')'
        ) {
            k |= C_META;
        }
        if b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'_' | b'.' | b'/' | b':' | b'+' | b'@' | b'%' | b'^'
            )
        {
            k |= C_PLAIN | C_QUICK;
            if b != b'/' {
                k |= C_NAME;
            }
        }
        if matches!(b, b',' | b'=' | b'*' | b'?' | b'[' | b']' | b'}' | b'~') {
            k |= C_QUICK;
        }
        if b >= 0x20 && b < 0x7f {
            k |= C_SQ;
            if !matches!(b, b'$' | b'`' | b'\\') {
                k |= C_DQ;
            }
        }
        t[c] = k;
        c += 1;
    }
    t
}

static CLASS: [u8; 256] = classes();

#[inline(always)]
fn class(c: u8) -> u8 {
    CLASS.get(usize::from(c)).copied().unwrap_or(0)
}

#[inline(always)]
fn is_blank(c: u8) -> bool {
    class(c) & C_BLANK != 0
}

/// Bytes that end an unquoted word.
#[inline(always)]
fn is_meta(c: u8) -> bool {
    class(c) & C_META != 0
}

/// Bytes with no meaning to the shell anywhere in an unquoted word, copied
/// as they are.
#[inline(always)]
fn is_plain(c: u8) -> bool {
    class(c) & C_PLAIN != 0
}

#[inline(always)]
fn is_quick(c: u8) -> bool {
    class(c) & C_QUICK != 0
}

/// Bytes of a program name or redirect target the quick path accepts.
#[inline(always)]
fn is_quick_name(c: u8) -> bool {
    class(c) & C_NAME != 0
}

/// Sets the flags a piece of value earns.
fn flag_text(s: &str, f: &mut u16) {
    if !s.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        *f |= ODD;
        if s.chars().any(is_invisible_or_bidi) {
            *f |= INVIS;
        }
    }
}

/// A short, single-line excerpt of the command for an error message.
pub(super) fn snippet(s: &str) -> String {
    let mut out = String::new();
    for (n, c) in s.chars().enumerate() {
        if n >= 24 {
            out.push('…');
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '`' => out.push_str("\\`"),
            c if is_invisible_or_bidi(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Whether `s` is a name followed by an optional subscript and `+`: what
/// may stand before the `=` of an assignment.
pub(super) fn is_assign_lhs(s: &[u8]) -> bool {
    let s = s.strip_suffix(b"+").unwrap_or(s);
    let name = match s.iter().position(|&c| c == b'[') {
        Some(i) if s.last() == Some(&b']') => s.get(..i).unwrap_or(&[]),
        Some(_) => return false,
        None => s,
    };
    match name.split_first() {
        Some((first, rest)) => {
            (first.is_ascii_alphabetic() || *first == b'_')
                && rest.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
        }
        None => false,
    }
}

/// Why arithmetic that names a variable is opaque.
const EVALUATED_AGAIN: &str =
    "is evaluated as arithmetic, where a variable's value is evaluated again and can run commands";

/// Whether arithmetic text names a variable or expands one: a `$`, a
/// backquote, or a letter or `_` that starts a word (not the `x` of
/// `0x1f`; the digits of `16#ff` after the `#` are read as a name, which
/// only asks more).
pub(super) fn names_a_variable(text: &str) -> bool {
    let b = text.as_bytes();
    b.iter().enumerate().any(|(i, &c)| {
        let after_word = i
            .checked_sub(1)
            .and_then(|k| b.get(k))
            .is_some_and(|p| p.is_ascii_alphanumeric() || *p == b'_');
        c == b'$' || c == b'`' || ((c.is_ascii_alphabetic() || c == b'_') && !after_word)
    })
}

/// Programs and words that the fast path leaves to the parser: keywords,
/// wrappers, shells and builtins that run strings. (Matched on bytes, as
/// `analyse::is_special` explains.)
fn is_special_program(w: &str) -> bool {
    matches!(
        w.as_bytes(),
        b"if"
            | b"then"
            | b"else"
            | b"elif"
            | b"fi"
            | b"do"
            | b"done"
            | b"case"
            | b"esac"
            | b"while"
            | b"until"
            | b"for"
            | b"select"
            | b"function"
            | b"time"
            | b"coproc"
            | b"in"
            | b"repeat"
            | b"-"
    ) || super::analyse::is_special(w)
}

/// The text of the command the quick path is reading: `built`, then the
/// command line's bytes `from..to`. Most commands are written with single
/// spaces and no quotes, so their text is a slice of the line: it is kept
/// as a range while it stays one, and copied once when the piece is made.
struct QuickText {
    built: String,
    from: usize,
    to: usize,
}

impl QuickText {
    /// Appends the line's bytes `a..z`.
    #[inline(always)]
    fn range(&mut self, cmd: &str, a: usize, z: usize) -> Option<()> {
        if a != self.to {
            self.flush(cmd)?;
            self.from = a;
        }
        self.to = z;
        Some(())
    }

    /// Appends text the line does not hold where it is needed.
    fn literal(&mut self, cmd: &str, s: &str) -> Option<()> {
        self.flush(cmd)?;
        self.built.push_str(s);
        Some(())
    }

    fn flush(&mut self, cmd: &str) -> Option<()> {
        if self.built.capacity() == 0 {
            // Once, for the whole line: no command's text is longer.
            self.built.reserve(cmd.len());
        }
        if self.from < self.to {
            self.built.push_str(cmd.get(self.from..self.to)?);
        }
        self.from = self.to;
        Some(())
    }

    /// The text, in a string of its own size; the builder is kept for the
    /// next command.
    fn take(&mut self, cmd: &str) -> Option<String> {
        let s = if self.built.is_empty() {
            String::from(cmd.get(self.from..self.to)?)
        } else {
            self.flush(cmd)?;
            let s = String::from(self.built.as_str());
            self.built.clear();
            s
        };
        self.from = 0;
        self.to = 0;
        Some(s)
    }
}

/// The quick path, one pass over the bytes for the commands agents send
/// most: plain and simply quoted words (no expansion, escape or control
/// character inside the quotes), the operators `&&`, `||`, `|`, `|&`, `;`,
/// `&` and newlines, descriptor duplications (`2>&1`) and redirects to plain
/// targets; each command's program a plain name that is not a keyword,
/// wrapper, shell or path. It gives exactly what the parser would (a unit
/// test checks it), and `None` for anything else, which the parser reads.
pub(super) fn quick_path(cmd: &str, cfg: &ShellConfig) -> Option<Vec<Piece>> {
    let b = cmd.as_bytes();
    // Most lines hold a handful of commands: one allocation, not a regrowth.
    let mut pieces: Vec<Piece> = Vec::with_capacity(8);
    let mut units = 0usize;
    let mut text = QuickText {
        built: String::new(),
        from: 0,
        to: 0,
    };
    let mut words = 0usize;
    // Redirects of the current command: (write, op start, op end, target
    // start, target end) in `cmd`.
    let mut redirs: Vec<(bool, usize, usize, usize, usize)> = Vec::new();
    let mut need_cmd = false;
    // Whether the current command's program is one of `subcommand`'s.
    let mut sub_prog = false;
    // Whether it is git, some of whose subcommands run a command.
    let mut git = false;
    let mut i = 0usize;
    loop {
        let c = b.get(i).copied();
        match c {
            Some(b' ' | b'\t') => {
                i += 1;
                continue;
            }
            None | Some(b'\n' | b';' | b'&' | b'|') => {
                let sep = match c {
                    None => 0,
                    Some(b'\n') => 1,
                    Some(b'&') if b.get(i + 1) == Some(&b'&') => 3,
                    Some(b'|') if matches!(b.get(i + 1), Some(b'|' | b'&')) => 3,
                    Some(b'|') => 4,
                    Some(b';') if b.get(i + 1) == Some(&b';') => return None,
                    Some(b'&') if b.get(i + 1) == Some(&b'>') => return None,
                    _ => 2,
                };
                if words == 0 {
                    // An empty command is fine only at a newline or the end,
                    // and not where an operator wants one.
                    if !redirs.is_empty() || (sep != 1 && (sep != 0 || need_cmd)) {
                        return None;
                    }
                    if sep == 0 {
                        break;
                    }
                    i += 1;
                    continue;
                }
                units += 1 + redirs.len();
                if units > cfg.max_subjects {
                    return None;
                }
                pieces.push(Piece::new(Kind::Command, text.take(cmd)?));
                for (write, o0, o1, t0, t1) in redirs.drain(..) {
                    let target = cmd.get(t0..t1)?;
                    let tool = if write {
                        &cfg.redirect_write
                    } else {
                        &cfg.redirect_read
                    };
                    if target == "/dev/null" || tool.is_none() {
                        units -= 1;
                        continue;
                    }
                    let kind = if write { Kind::Write } else { Kind::Read };
                    let shown = format!("{} {target}", cmd.get(o0..o1)?);
                    pieces.push(Piece::with_value(kind, shown, target.to_string()));
                }
                words = 0;
                match sep {
                    0 => break,
                    1 => i += 1,
                    3 => {
                        i += 2;
                        need_cmd = true;
                    }
                    4 => {
                        i += 1;
                        need_cmd = true;
                    }
                    _ => {
                        i += 1;
                        need_cmd = false;
                    }
                }
                continue;
            }
            // A comment, or a brace that may open a group or name a
            // descriptor (`{fd}>f`): the parser's.
            Some(b'#' | b'{') => return None,
            _ => {}
        }
        // A redirect: digits then `<` or `>`, or `<` or `>`.
        let mut d = i;
        while b.get(d).is_some_and(u8::is_ascii_digit) {
            d += 1;
        }
        if let Some(&op) = b.get(d).filter(|&&o| o == b'<' || o == b'>') {
            let o0 = i;
            let mut j = d + 1;
            let next = b.get(j).copied();
            let dup = next == Some(b'&');
            let write = op == b'>';
            match next {
                Some(b'&') => j += 1,
                Some(b'>') if write => j += 1,
                Some(b'<' | b'>' | b'|' | b'(') => return None,
                _ => {}
            }
            let o1 = j;
            while b.get(j).is_some_and(|&c| is_blank(c)) {
                j += 1;
            }
            let t0 = j;
            // A plain target: the bytes of a name and `/`.
            while b.get(j).is_some_and(|&c| is_plain(c)) {
                j += 1;
            }
            let t1 = j;
            if t1 == t0 || b.get(j).is_some_and(|&c| !is_meta(c)) {
                return None;
            }
            if dup {
                let t = b.get(t0..t1)?;
                if t != b"-" && !t.iter().all(u8::is_ascii_digit) {
                    return None;
                }
            } else {
                redirs.push((write, o0, o1, t0, t1));
            }
            i = j;
            continue;
        }
        // A word.
        let first = words == 0;
        if !first {
            // The blank before it, from the line when it is a space, so
            // that a run of words stays one slice.
            if i > 0 && b.get(i - 1) == Some(&b' ') {
                text.range(cmd, i - 1, i)?;
            } else {
                text.literal(cmd, " ")?;
            }
        }
        let i0 = i;
        if b.get(i0) == Some(&b'=') {
            // zsh's `=name` expansion (`EQUALS`): the parser's.
            return None;
        }
        let mut quoted = false;
        let mut len = 0usize;
        while let Some(&c) = b.get(i) {
            let k = class(c);
            if k & C_QUICK != 0 {
                let r0 = i;
                i += 1;
                while b.get(i).is_some_and(|&c| is_quick(c)) {
                    i += 1;
                }
                text.range(cmd, r0, i)?;
                len += i - r0;
            } else if c == b'"' || c == b'\'' {
                // Quotes around printable ASCII, with nothing expanded
                // or escaped inside.
                quoted = true;
                let ok = if c == b'\'' { C_SQ } else { C_DQ };
                let q0 = i + 1;
                let mut j = q0;
                loop {
                    let n = *b.get(j)?;
                    if n == c {
                        break;
                    }
                    if class(n) & ok == 0 {
                        return None;
                    }
                    j += 1;
                }
                if j > q0 {
                    text.range(cmd, q0, j)?;
                    len += j - q0;
                }
                i = j + 1;
            } else if k & C_META != 0 {
                break;
            } else {
                return None;
            }
        }
        if b.get(i0..i)?
            .windows(2)
            .any(|p| matches!(p, [b'.', b'*' | b'?' | b'[']))
        {
            // A glob that may match `..`: the analysis's (`expand`).
            return None;
        }
        if i == i0 || b.get(i0..i) == Some(b"}") {
            // `(`, `)`: not a word the quick path reads; `}` alone is
            // refused by the parser (zsh ends a brace group there).
            return None;
        }
        if len == 0 {
            text.literal(cmd, "''")?;
        }
        if first {
            // The program: a plain name the analysis has nothing to say
            // about; anything else is the parser's, so there is no need to
            // read further.
            let w = cmd.get(i0..i)?;
            if quoted
                || !w.bytes().all(is_quick_name)
                || is_special_program(w)
                || super::files::touches_files(w, cfg.file_operands)
            {
                return None;
            }
            if super::programs::reads_operands(w) {
                return None;
            }
            git = w == "git";
            sub_prog = super::subcommand::program(w).is_some() || super::programs::has_options(w);
        } else if sub_prog
            && (cmd.get(i0..i)?.bytes().any(|c| c == b'-' || c == b'+')
                || matches!(cmd.get(i0..i)?.bytes().next(), Some(b'*' | b'?' | b'[')))
        {
            // A glob at the start of a word may expand to an option, too.
            // An option of a program with subcommands (its readings,
            // `subcommand`) or of one that runs, writes or reads through
            // its options (`programs`): the analysis's.
            return None;
        } else if git && super::programs::git_word_declines(cmd.get(i0..i)?) {
            return None;
        }
        words += 1;
        need_cmd = false;
    }
    if need_cmd || pieces.is_empty() {
        return None;
    }
    Some(pieces)
}

/// Splits a command that did not take the fast path.
pub(super) fn split(cmd: &str, cfg: &ShellConfig) -> Res<Vec<Piece>> {
    let mut out = Out {
        cfg,
        pieces: Vec::new(),
        units: 0,
        depth: 0,
        buf: String::with_capacity(cmd.len() + 16),
        words: Vec::with_capacity(16),
        redirs: Vec::new(),
        env: Vec::new(),
        dirs: vec![Some(String::new())],
        loops: 0,
        unknown_cds: 0,
        last_cd: None,
        fed: 0,
        operands: 0,
    };
    Parser::new(cmd, &mut out).program()?;
    if out.pieces.is_empty() {
        // Nothing runs a program (an empty line, a comment, `[[ … ]]`,
        // `(( … ))`): the line itself is the one subject.
        let mut text = String::with_capacity(cmd.len());
        for w in cmd.split_ascii_whitespace() {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(w);
        }
        out.pieces.push(Piece::new(Kind::Command, text));
    }
    Ok(out.pieces)
}

/// The parser of one source.
pub(super) struct Parser<'s, 'o, 'c> {
    src: &'s str,
    b: &'s [u8],
    pos: usize,
    pub(super) out: &'o mut Out<'c>,
    heredocs: Vec<HereDoc>,
    /// How many `$( … )` and `<( … )` the reader is inside: there bash
    /// ends a here-document at a line `DELIM)` too.
    subst: usize,
    /// Reading a subscript on past a closing quote for zsh
    /// ([`Self::bare_subscript`]): a subscript met there stops at its
    /// quote, so no text is read ahead twice over.
    zsh_ahead: bool,
}

impl<'s, 'o, 'c> Parser<'s, 'o, 'c> {
    pub(super) fn new(src: &'s str, out: &'o mut Out<'c>) -> Parser<'s, 'o, 'c> {
        Parser {
            src,
            b: src.as_bytes(),
            pos: 0,
            out,
            heredocs: Vec::new(),
            subst: 0,
            zsh_ahead: false,
        }
    }

    /// Reads the whole source as a list of commands.
    pub(super) fn program(&mut self) -> Res<()> {
        self.list(S_EOF)?;
        Ok(())
    }

    // ------------------------------------------------------------ errors

    fn syntax(&self, msg: String) -> ShellError {
        ShellError::new(ErrorKind::Syntax, msg)
    }

    fn unterminated(&self, what: &str, from: usize) -> ShellError {
        let s = self.src.get(from..).unwrap_or("");
        self.syntax(format!("unterminated {what}: `{}`", snippet(s)))
    }

    fn unexpected(&self) -> ShellError {
        let rest = self.src.get(self.pos..).unwrap_or("");
        if rest.is_empty() {
            // The end of what was written, from a word's start.
            let n = self.src.chars().count();
            let tail = if n <= 24 {
                snippet(self.src)
            } else {
                let from = self.src.char_indices().rev().nth(23).map_or(0, |(i, _)| i);
                let from = self
                    .src
                    .get(from..)
                    .and_then(|t| t.find(' ').map(|k| from + k + 1))
                    .unwrap_or(from);
                format!("…{}", snippet(self.src.get(from..).unwrap_or("")))
            };
            return self.syntax(format!("the command ends too early: `{tail}`"));
        }
        let tok: String = rest
            .chars()
            .take_while(|c| !c.is_ascii_whitespace())
            .take(12)
            .collect();
        let tok = if tok.is_empty() {
            rest.chars().take(1).collect()
        } else {
            tok
        };
        self.syntax(format!("unexpected `{}`", snippet(&tok)))
    }

    pub(super) fn enter(&mut self) -> Res<()> {
        self.out.depth += 1;
        if self.out.depth > self.out.cfg.max_depth {
            let s = self.src.get(self.pos..).unwrap_or("");
            return Err(ShellError::new(
                ErrorKind::TooDeep,
                format!(
                    "the command nests deeper than {} levels at `{}`",
                    self.out.cfg.max_depth,
                    snippet(s)
                ),
            ));
        }
        Ok(())
    }

    pub(super) fn leave(&mut self) {
        self.out.depth = self.out.depth.saturating_sub(1);
    }

    // ------------------------------------------------------------ bytes

    /// The index of the first byte at or after `i` that is not part of a
    /// line continuation (`\` newline), which the shell removes before
    /// anything else.
    fn skip_lc(&self, mut i: usize) -> usize {
        while self.b.get(i) == Some(&b'\\') && self.b.get(i + 1) == Some(&b'\n') {
            i += 2;
        }
        i
    }

    fn peek(&mut self) -> Option<u8> {
        self.pos = self.skip_lc(self.pos);
        self.b.get(self.pos).copied()
    }

    /// The byte at `i` after line continuations, and where it is.
    fn at(&self, i: usize) -> (Option<u8>, usize) {
        let j = self.skip_lc(i);
        (self.b.get(j).copied(), j)
    }

    /// The character at `pos` (the source is UTF-8 and `pos` always on a
    /// boundary).
    fn char_at(&self, i: usize) -> Option<char> {
        self.src.get(i..).and_then(|s| s.chars().next())
    }

    fn push_char(&mut self, c: char, f: &mut u16) {
        if !(' '..='~').contains(&c) {
            *f |= ODD;
            if is_invisible_or_bidi(c) {
                *f |= INVIS;
            }
        }
        self.out.buf.push(c);
    }

    /// Copies the character at `pos` into the value and moves past it.
    fn take_char(&mut self, f: &mut u16) {
        if let Some(c) = self.char_at(self.pos) {
            self.pos += c.len_utf8();
            self.push_char(c, f);
        } else {
            self.pos += 1;
        }
    }

    /// Moves past the character at `pos`.
    fn skip_char(&mut self) {
        self.pos += self.char_at(self.pos).map_or(1, char::len_utf8);
    }

    fn push_raw(&mut self, from: usize) {
        let raw = self.src.get(from..self.pos).unwrap_or("");
        self.out.buf.push_str(raw);
    }

    fn skip_blanks(&mut self) {
        loop {
            match self.peek() {
                Some(b' ' | b'\t') => self.pos += 1,
                Some(b'#') => {
                    // A comment: to the end of the line, the newline kept.
                    let rest = self.b.get(self.pos..).unwrap_or(&[]);
                    self.pos += memchr::memchr(b'\n', rest).unwrap_or(rest.len());
                }
                _ => return,
            }
        }
    }

    /// Skips blanks, comments and newlines.
    fn skip_space(&mut self) -> Res<()> {
        loop {
            self.skip_blanks();
            if self.peek() == Some(b'\n') {
                self.newline()?;
            } else {
                return Ok(());
            }
        }
    }

    /// Consumes a newline token; the bodies of pending here-documents start
    /// after it.
    fn newline(&mut self) -> Res<()> {
        self.pos += 1;
        if !self.heredocs.is_empty() {
            self.read_heredocs()?;
        }
        Ok(())
    }

    // ------------------------------------------------------------ tokens

    fn peek_tok(&mut self) -> (Tok, usize) {
        let Some(c) = self.peek() else {
            return (Tok::Eof, self.pos);
        };
        let p = self.pos;
        let (n, j) = self.at(p + 1);
        match c {
            b'\n' => (Tok::Newline, p + 1),
            b';' => match n {
                Some(b';') => match self.at(j + 1) {
                    (Some(b'&'), k) => (Tok::DSemiAmp, k + 1),
                    _ => (Tok::DSemi, j + 1),
                },
                Some(b'&') => (Tok::SemiAmp, j + 1),
                _ => (Tok::Semi, p + 1),
            },
            b'&' => match n {
                Some(b'&') => (Tok::AndIf, j + 1),
                Some(b'>') => (Tok::Redir, p),
                _ => (Tok::Amp, p + 1),
            },
            b'|' => match n {
                Some(b'|') => (Tok::OrIf, j + 1),
                Some(b'&') => (Tok::PipeAmp, j + 1),
                _ => (Tok::Pipe, p + 1),
            },
            b'(' => (Tok::LParen, p + 1),
            b')' => (Tok::RParen, p + 1),
            b'<' | b'>' => {
                if n == Some(b'(') {
                    (Tok::Word, p)
                } else {
                    (Tok::Redir, p)
                }
            }
            b'0'..=b'9' => {
                let mut k = p;
                while self.b.get(k).is_some_and(u8::is_ascii_digit) {
                    k += 1;
                }
                match (self.b.get(k), self.b.get(k + 1)) {
                    (Some(b'<' | b'>'), Some(b'(')) => (Tok::Word, p),
                    (Some(b'<' | b'>'), _) => (Tok::Redir, p),
                    _ => (Tok::Word, p),
                }
            }
            b'{' => {
                // `{name}>file`: a redirect that allocates a descriptor.
                let mut k = p + 1;
                while self
                    .b
                    .get(k)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
                {
                    k += 1;
                }
                // `{a[…]}>file`: the same with an element (bash). The
                // subscript may hold `}` (`{a[${x}'$(cmd)']}>f`): any `]}`
                // glued to a redirect later on the line will do.
                if k > p + 1 && self.b.get(k) == Some(&b'[') {
                    let rest = self.b.get(k..).unwrap_or(&[]);
                    let glued = rest.windows(3).position(|w| {
                        w.first() == Some(&b']')
                            && w.get(1) == Some(&b'}')
                            && matches!(w.get(2), Some(b'<' | b'>' | b'&'))
                    });
                    if let Some(at) = glued {
                        k += at + 1;
                    }
                }
                // zsh reads `{NAME}&>f` and `{NAME}&>>f` so too.
                let amp = usize::from(self.b.get(k + 1) == Some(&b'&'));
                if k > p + 1
                    && self.b.get(k) == Some(&b'}')
                    && matches!(self.b.get(k + 1 + amp), Some(b'<' | b'>'))
                    && self.b.get(k + 2 + amp) != Some(&b'(')
                {
                    (Tok::Redir, p)
                } else {
                    (Tok::Word, p)
                }
            }
            _ => (Tok::Word, p),
        }
    }

    /// The reserved word at `pos`, if the word there is one, and where it
    /// ends.
    fn peek_reserved(&mut self) -> Option<(Rw, usize)> {
        let mut i = self.skip_lc(self.pos);
        let mut w = [0u8; 8];
        let mut n = 0;
        loop {
            i = self.skip_lc(i);
            match self.b.get(i) {
                None => break,
                Some(&c) if is_meta(c) => break,
                Some(&c) => {
                    if n >= w.len() {
                        return None;
                    }
                    if let Some(slot) = w.get_mut(n) {
                        *slot = c;
                    }
                    n += 1;
                    i += 1;
                }
            }
        }
        let rw = Rw::from(w.get(..n)?)?;
        Some((rw, i))
    }

    fn expect_reserved(&mut self, want: Rw) -> Res<()> {
        match self.peek_reserved() {
            Some((rw, end)) if rw == want => {
                self.pos = end;
                Ok(())
            }
            _ => Err(self.unexpected_expecting(want.text())),
        }
    }

    fn unexpected_expecting(&self, want: &str) -> ShellError {
        let e = self.unexpected();
        self.syntax(format!("{}, where `{want}` belongs", e.message))
    }

    // ------------------------------------------------------------ grammar

    /// A list of and-or lists up to one of `stops`, which is left unread.
    fn list(&mut self, stops: u16) -> Res<u16> {
        self.enter()?;
        let r = self.list_inner(stops);
        self.leave();
        r
    }

    fn list_inner(&mut self, stops: u16) -> Res<u16> {
        loop {
            self.skip_space()?;
            let (t, _) = self.peek_tok();
            match t {
                Tok::Eof => {
                    return if stops & S_EOF != 0 {
                        Ok(S_EOF)
                    } else {
                        Err(self.unexpected())
                    }
                }
                Tok::RParen => {
                    return if stops & S_RPAREN != 0 {
                        Ok(S_RPAREN)
                    } else {
                        Err(self.unexpected())
                    }
                }
                Tok::DSemi | Tok::SemiAmp | Tok::DSemiAmp => {
                    return if stops & S_CASE_END != 0 {
                        Ok(S_CASE_END)
                    } else {
                        Err(self.unexpected())
                    }
                }
                Tok::Word => {
                    if let Some(stop) = self.peek_reserved().and_then(|(rw, _)| rw.stop()) {
                        return if stops & stop != 0 {
                            Ok(stop)
                        } else {
                            Err(self.unexpected())
                        };
                    }
                }
                Tok::LParen | Tok::Redir => {}
                _ => return Err(self.unexpected()),
            }
            self.and_or()?;
            self.skip_blanks();
            let (t, end) = self.peek_tok();
            if t == Tok::Amp && self.at(end).0 == Some(b'!') {
                return Err(super::zsh::amp_bang());
            }
            match t {
                Tok::Semi | Tok::Amp => self.pos = end,
                Tok::Newline
                | Tok::Eof
                | Tok::RParen
                | Tok::DSemi
                | Tok::SemiAmp
                | Tok::DSemiAmp => {}
                Tok::Word
                    if self
                        .peek_reserved()
                        .is_some_and(|(rw, _)| rw.stop().is_some()) => {}
                _ => return Err(self.unexpected()),
            }
        }
    }

    fn and_or(&mut self) -> Res<()> {
        self.pipeline()?;
        loop {
            self.skip_blanks();
            let (t, end) = self.peek_tok();
            if matches!(t, Tok::AndIf | Tok::OrIf) {
                self.pos = end;
                self.skip_space()?;
                self.pipeline()?;
            } else {
                return Ok(());
            }
        }
    }

    fn pipeline(&mut self) -> Res<()> {
        self.skip_blanks();
        // `!` and `time` may come in any order and number before a pipeline
        // (`time ! rm x` runs `rm x`). The keyword `time` before a compound
        // command, `!` or another `time` is a keyword; before a simple
        // command it is read as the wrapper it also is.
        loop {
            match self.peek_reserved() {
                Some((Rw::Bang, end)) => {
                    self.pos = end;
                    self.skip_blanks();
                }
                Some((Rw::Time, end)) => {
                    let save = self.pos;
                    self.pos = end;
                    self.skip_blanks();
                    if self.word_is("-p") {
                        self.pos += 2;
                        self.skip_blanks();
                    }
                    let keyword = self.at_compound()
                        || matches!(self.peek_reserved(), Some((Rw::Bang | Rw::Time, _)));
                    if !keyword {
                        self.pos = save;
                        break;
                    }
                }
                _ => break,
            }
        }
        self.command(false)?;
        loop {
            self.skip_blanks();
            let (t, end) = self.peek_tok();
            if matches!(t, Tok::Pipe | Tok::PipeAmp) {
                self.pos = end;
                self.skip_space()?;
                self.command(true)?;
            } else {
                return Ok(());
            }
        }
    }

    /// Whether the plain word `w` stands at `pos`.
    fn word_is(&self, w: &str) -> bool {
        let end = self.pos + w.len();
        self.b.get(self.pos..end) == Some(w.as_bytes())
            && self.b.get(end).is_none_or(|&c| is_meta(c))
    }

    /// Whether a compound command starts at `pos`.
    fn at_compound(&mut self) -> bool {
        match self.peek_tok().0 {
            Tok::LParen => true,
            Tok::Word => matches!(
                self.peek_reserved(),
                Some((
                    Rw::LBrace
                        | Rw::If
                        | Rw::While
                        | Rw::Until
                        | Rw::For
                        | Rw::Select
                        | Rw::Case
                        | Rw::DBrack
                        | Rw::Function,
                    _
                ))
            ),
            _ => false,
        }
    }

    fn command(&mut self, piped: bool) -> Res<()> {
        self.skip_blanks();
        let (t, end) = self.peek_tok();
        match t {
            Tok::LParen => {
                let (n, k) = self.at(end);
                if n == Some(b'(') && self.looks_arith(k + 1) {
                    // `(( … ))`: an arithmetic command.
                    self.pos = k + 1;
                    let mark = self.out.buf.len();
                    let mut f = 0;
                    self.arith_body(&mut f, self.pos)?;
                    self.out.buf.truncate(mark);
                } else {
                    self.pos = end;
                    self.list(S_RPAREN)?;
                    self.expect_rparen()?;
                }
                self.compound_redirects()
            }
            Tok::Word => match self.peek_reserved() {
                Some((Rw::LBrace, e)) => {
                    self.pos = e;
                    self.list(S_RBRACE)?;
                    self.expect_reserved(Rw::RBrace)?;
                    self.compound_redirects()
                }
                Some((Rw::If, e)) => {
                    self.pos = e;
                    self.if_clause()?;
                    self.compound_redirects()
                }
                Some((Rw::While | Rw::Until, e)) => {
                    self.pos = e;
                    let added = self.directory_unknown_if_it_moves();
                    self.out.loops += 1;
                    let r = self.while_body();
                    self.out.loops -= 1;
                    r?;
                    self.directory_known_again(added);
                    self.compound_redirects()
                }
                Some((Rw::For | Rw::Select, e)) => {
                    self.pos = e;
                    let added = self.directory_unknown_if_it_moves();
                    self.out.loops += 1;
                    let r = self.for_clause();
                    self.out.loops -= 1;
                    r?;
                    self.directory_known_again(added);
                    self.compound_redirects()
                }
                Some((Rw::Case, e)) => {
                    self.pos = e;
                    self.case_clause()?;
                    self.compound_redirects()
                }
                Some((Rw::Function, e)) => {
                    self.pos = e;
                    self.skip_blanks();
                    if self.peek_tok().0 != Tok::Word {
                        return Err(self.unexpected());
                    }
                    self.discard_word(Mode::Arg)?;
                    self.skip_blanks();
                    if self.peek_tok().0 == Tok::LParen {
                        self.function_parens()?;
                    }
                    self.function_body()
                }
                Some((Rw::DBrack, e)) => {
                    self.pos = e;
                    self.cond()?;
                    self.compound_redirects()
                }
                Some((Rw::Coproc, e)) => {
                    self.pos = e;
                    self.skip_blanks();
                    // `coproc NAME compound`: the name is not a command.
                    let save = self.pos;
                    let mut k = self.pos;
                    while self
                        .b
                        .get(k)
                        .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
                    {
                        k += 1;
                    }
                    if k > self.pos && self.b.get(k).is_some_and(|&c| is_blank(c)) {
                        self.pos = k;
                        self.skip_blanks();
                        if !self.at_compound() {
                            self.pos = save;
                        }
                    }
                    self.command(piped)
                }
                Some((rw, _)) if rw.stop().is_some() => Err(self.unexpected()),
                _ => self.simple_command(piped),
            },
            Tok::Redir => self.simple_command(piped),
            _ => Err(self.unexpected()),
        }
    }

    fn expect_rparen(&mut self) -> Res<()> {
        self.skip_blanks();
        match self.peek_tok() {
            (Tok::RParen, end) => {
                self.pos = end;
                Ok(())
            }
            _ => Err(self.unexpected_expecting(")")),
        }
    }

    fn function_parens(&mut self) -> Res<()> {
        let (_, end) = self.peek_tok();
        self.pos = end;
        self.expect_rparen()
    }

    /// A loop runs its body again after a `cd` later in its text, and a
    /// function runs wherever it is called: when the rest of the line may
    /// change directory (`cd`, `pushd`, `popd` anywhere after here), the
    /// directory the body's relative paths start from is unknown too.
    /// `until sed -i … config; do cd .git; done` edits `.git/config` on its
    /// second turn (a review found it allowed in acceptEdits).
    fn directory_unknown_if_it_moves(&mut self) -> Option<u32> {
        let key = (self.src.as_ptr() as usize, self.src.len());
        let last = match self.out.last_cd {
            Some((p, n, last)) if (p, n) == key => last,
            _ => {
                let last = last_cd_word(self.src);
                self.out.last_cd = Some((key.0, key.1, last));
                last
            }
        };
        let moves = last.is_some_and(|at| at >= self.pos);
        if moves && !self.out.dirs.contains(&None) {
            self.out.dirs.push(None);
            return Some(self.out.unknown_cds);
        }
        None
    }

    /// After the body: the unknown directory added for it goes when the body
    /// made no directory unknown itself (`for …; do cd /tmp; done; cat x`
    /// reads `x` or `/tmp/x`, nothing else).
    fn directory_known_again(&mut self, added: Option<u32>) {
        if added == Some(self.out.unknown_cds) {
            self.out.dirs.retain(Option::is_some);
        }
    }

    fn function_body(&mut self) -> Res<()> {
        self.skip_space()?;
        if !self.at_compound() {
            return Err(self.unexpected_expecting("{"));
        }
        // A function may be called any number of times, from anywhere.
        let added = self.directory_unknown_if_it_moves();
        self.out.loops += 1;
        let r = self.command(false);
        self.out.loops -= 1;
        r?;
        self.directory_known_again(added);
        Ok(())
    }

    /// `while` or `until` after the keyword: the condition and the body.
    fn while_body(&mut self) -> Res<()> {
        self.list(S_DO)?;
        self.expect_reserved(Rw::Do)?;
        self.list(S_DONE)?;
        self.expect_reserved(Rw::Done)
    }

    fn if_clause(&mut self) -> Res<()> {
        self.list(S_THEN)?;
        self.expect_reserved(Rw::Then)?;
        loop {
            let stop = self.list(S_ELIF | S_ELSE | S_FI)?;
            match stop {
                S_ELIF => {
                    self.expect_reserved(Rw::Elif)?;
                    self.list(S_THEN)?;
                    self.expect_reserved(Rw::Then)?;
                }
                S_ELSE => {
                    self.expect_reserved(Rw::Else)?;
                    self.list(S_FI)?;
                    return self.expect_reserved(Rw::Fi);
                }
                _ => return self.expect_reserved(Rw::Fi),
            }
        }
    }

    fn for_clause(&mut self) -> Res<()> {
        self.skip_blanks();
        let (t, end) = self.peek_tok();
        if t == Tok::LParen && self.at(end).0 == Some(b'(') {
            // `for (( init; test; step ))`.
            let (_, k) = self.at(end);
            self.pos = k + 1;
            let mark = self.out.buf.len();
            let mut f = 0;
            self.arith_body(&mut f, self.pos)?;
            self.out.buf.truncate(mark);
            self.skip_blanks();
            if self.peek_tok().0 == Tok::Semi {
                self.pos += 1;
            }
        } else {
            if t != Tok::Word {
                return Err(self.unexpected());
            }
            let src: &'s str = self.src;
            let at = self.pos;
            self.discard_word(Mode::Arg)?;
            let name = src.get(at..self.pos).unwrap_or("");
            self.skip_space()?;
            if let Some((Rw::In, e)) = self.peek_reserved() {
                self.pos = e;
                loop {
                    self.skip_blanks();
                    match self.peek_tok() {
                        (Tok::Word, _) => {
                            let at = self.pos;
                            self.discard_word(Mode::Arg)?;
                            let word = src.get(at..self.pos).unwrap_or("");
                            self.loop_assignment(name, word)?;
                        }
                        (Tok::Semi, e) => {
                            self.pos = e;
                            break;
                        }
                        (Tok::Newline, _) => break,
                        _ => return Err(self.unexpected()),
                    }
                }
            } else {
                self.loop_assignment(name, "\"$@\"")?;
                if let (Tok::Semi, e) = self.peek_tok() {
                    self.pos = e;
                }
            }
        }
        self.skip_space()?;
        match self.peek_reserved() {
            Some((Rw::Do, e)) => {
                self.pos = e;
                self.list(S_DONE)?;
                self.expect_reserved(Rw::Done)
            }
            Some((Rw::LBrace, e)) => {
                self.pos = e;
                self.list(S_RBRACE)?;
                self.expect_reserved(Rw::RBrace)
            }
            _ => Err(self.unexpected_expecting("do")),
        }
    }

    /// `for NAME in … WORD …` assigns WORD to NAME before each pass: a
    /// subject as `NAME=WORD` written alone is, so that allow rules cover
    /// it only when they say so (`for PATH in /tmp/evil; do ls; done` runs
    /// another `ls`), unless the name is on the safe list.
    fn loop_assignment(&mut self, name: &str, word: &str) -> Res<()> {
        if self.out.cfg.is_safe_env(name) {
            return Ok(());
        }
        self.out
            .push(super::Piece::new(Kind::Command, format!("{name}={word}")))
    }

    fn case_clause(&mut self) -> Res<()> {
        self.skip_blanks();
        if self.peek_tok().0 != Tok::Word {
            return Err(self.unexpected());
        }
        self.discard_word(Mode::Arg)?;
        self.skip_space()?;
        self.expect_reserved(Rw::In)?;
        loop {
            self.skip_space()?;
            if let Some((Rw::Esac, e)) = self.peek_reserved() {
                self.pos = e;
                return Ok(());
            }
            if let (Tok::LParen, e) = self.peek_tok() {
                self.pos = e;
            }
            loop {
                self.skip_blanks();
                if self.peek_tok().0 != Tok::Word {
                    return Err(self.unexpected());
                }
                self.discard_word(Mode::Arg)?;
                self.skip_blanks();
                match self.peek_tok() {
                    (Tok::Pipe, e) => self.pos = e,
                    (Tok::RParen, e) => {
                        self.pos = e;
                        break;
                    }
                    _ => return Err(self.unexpected_expecting(")")),
                }
            }
            match self.list(S_CASE_END | S_ESAC)? {
                S_CASE_END => {
                    let (_, e) = self.peek_tok();
                    self.pos = e;
                }
                _ => {
                    self.expect_reserved(Rw::Esac)?;
                    return Ok(());
                }
            }
        }
    }

    /// `[[ … ]]`: the words are read for their substitutions; the test
    /// itself runs no program. The operands of `-eq`, `-ne`, `-lt`, `-le`,
    /// `-gt`, `-ge` and `-v` are evaluated again ([`Self::evaluated`]).
    fn cond(&mut self) -> Res<()> {
        let start = self.pos;
        let mut prev: Option<(String, u16)> = None;
        let mut next_evaluated = false;
        let mut next_arith = false;
        loop {
            self.skip_blanks();
            match self.peek() {
                None => return Err(self.unterminated("`[[`", start.saturating_sub(2))),
                Some(b'\n') => self.newline()?,
                Some(b';') => return Err(self.unexpected()),
                Some(b']')
                    if self.b.get(self.pos + 1) == Some(&b']')
                        && self.b.get(self.pos + 2).is_none_or(|&c| is_meta(c)) =>
                {
                    self.pos += 2;
                    return Ok(());
                }
                Some(_) => {
                    let mark = self.out.buf.len();
                    let w = self.word(Mode::Cond)?;
                    let v = self.out.val(w).to_string();
                    self.out.buf.truncate(mark);
                    let plain = w.flags & QUOTED == 0;
                    if plain && matches!(v.as_str(), "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge")
                    {
                        // Both operands are arithmetic expressions.
                        if let Some((pv, pf)) = prev.take() {
                            self.arithmetic(&pv, pf)?;
                        }
                        next_arith = true;
                    } else if plain && v == "-v" {
                        // A name, whose subscript is arithmetic.
                        next_evaluated = true;
                    } else {
                        if next_arith {
                            self.arithmetic(&v, w.flags)?;
                            next_arith = false;
                        } else if next_evaluated {
                            self.evaluated(&v, w.flags)?;
                            // `-v a[…]`: the subscript is arithmetic, and a
                            // variable named there is evaluated again.
                            if let Some((_, sub)) = v.split_once('[') {
                                let sub = sub.strip_suffix(']').unwrap_or(sub);
                                // (`[[ ]]` does not glob: its brackets are
                                // the subscript's.)
                                if w.flags & (PARAM | SUBST | ARITH) != 0 || names_a_variable(sub) {
                                    self.opaque_expansion(
                                        &v,
                                        "names a subscript evaluated as arithmetic, where a variable's value is evaluated again and can run commands",
                                    )?;
                                }
                            }
                            next_evaluated = false;
                        }
                        prev = Some((v, w.flags));
                    }
                }
            }
        }
    }

    /// A word whose value bash evaluates again, as an arithmetic
    /// expression or a subscripted name: a substitution that quoting kept
    /// from running when the word was read runs then, so the value is read
    /// for it. When the rest of the value is computed it cannot be read,
    /// and the word is an opaque piece.
    pub(super) fn evaluated(&mut self, v: &str, flags: u16) -> Res<()> {
        if flags & LITSUB == 0 {
            return Ok(());
        }
        if flags & COMPUTED != 0 {
            return self.out.push(Piece::opaque(
                Kind::Command,
                super::analyse::display(v, flags),
                format!(
                    "`{}` is evaluated as arithmetic, and part of it is computed when the command runs",
                    snippet(v)
                ),
            ));
        }
        self.expand_text(v)
    }

    /// A word bash evaluates as an arithmetic expression. There a
    /// variable's value is evaluated again, and a subscript in it runs its
    /// substitutions (`x='a[$(rm y)]'; echo $((x))` runs `rm y`), and a
    /// name can be assigned (`[[ PATH=0 -eq 0 ]]`). So an expression that
    /// names a variable, or whose text is computed, is an opaque piece;
    /// one of numbers and operators is read for its substitutions only.
    pub(super) fn arithmetic(&mut self, v: &str, flags: u16) -> Res<()> {
        // The substitutions that run when it is evaluated stay subjects, so
        // deny rules still see them (or, computed, it is opaque already).
        self.evaluated(v, flags)?;
        let opaque = flags & LITSUB != 0 && flags & COMPUTED != 0;
        if !opaque && (flags & COMPUTED != 0 || names_a_variable(v)) {
            return self.out.push(Piece::opaque(
                Kind::Command,
                super::analyse::display(v, flags),
                format!("`{}` {EVALUATED_AGAIN}", snippet(v)),
            ));
        }
        Ok(())
    }

    /// An opaque piece for an expansion whose result runs what no text
    /// shows: `what` says which.
    fn opaque_expansion(&mut self, text: &str, what: &str) -> Res<()> {
        self.out.push(Piece::opaque(
            Kind::Command,
            text.to_string(),
            format!("`{}` {what}", snippet(text)),
        ))
    }

    /// Redirects after a compound command.
    fn compound_redirects(&mut self) -> Res<()> {
        loop {
            self.skip_blanks();
            if self.peek_tok().0 != Tok::Redir {
                return Ok(());
            }
            let mark = self.out.buf.len();
            let r = self.redirect()?;
            let res = self.emit_redirect(r);
            self.out.buf.truncate(mark);
            res?;
        }
    }

    fn discard_word(&mut self, mode: Mode) -> Res<()> {
        let mark = self.out.buf.len();
        self.word(mode)?;
        self.out.buf.truncate(mark);
        Ok(())
    }

    fn simple_command(&mut self, piped: bool) -> Res<()> {
        let wf = self.out.words.len();
        let rf = self.out.redirs.len();
        let bf = self.out.buf.len();
        let res = self.simple_command_in(piped, wf, rf);
        self.out.words.truncate(wf);
        self.out.redirs.truncate(rf);
        self.out.buf.truncate(bf);
        res
    }

    fn simple_command_in(&mut self, piped: bool, wf: usize, rf: usize) -> Res<()> {
        let mut stdin_fed = piped;
        loop {
            self.skip_blanks();
            match self.peek_tok().0 {
                Tok::Redir => {
                    let r = self.redirect()?;
                    if matches!(r.op, Op::HereDoc | Op::HereStr) && r.fd.is_none_or(|fd| fd == 0) {
                        stdin_fed = true;
                    }
                    self.out.redirs.push(r);
                }
                Tok::Word => {
                    let words = self.out.words.get(wf..).unwrap_or(&[]);
                    let first = words.is_empty();
                    let mode = if words.iter().all(|w| w.flags & ASSIGN != 0) {
                        Mode::Assign
                    } else {
                        Mode::Arg
                    };
                    let w = self.word(mode)?;
                    self.out.words.push(w);
                    if w.flags & QUOTED == 0 {
                        let v = self.out.val(w);
                        if v == "}" {
                            return Err(super::zsh::lone_rbrace());
                        }
                        if mode == Mode::Assign
                            && w.flags & ASSIGN == 0
                            && super::zsh::is_keyword_program(v)
                        {
                            return Err(super::zsh::keyword_program(v));
                        }
                    }
                    if first && w.flags & ASSIGN == 0 {
                        self.skip_blanks();
                        if self.peek_tok().0 == Tok::LParen {
                            // `name () compound`: a function definition; its
                            // body is judged where it is written.
                            self.out.words.truncate(wf);
                            self.function_parens()?;
                            return self.function_body();
                        }
                    }
                }
                Tok::LParen => return Err(self.unexpected()),
                _ => break,
            }
        }
        let we = self.out.words.len();
        self.emit_simple(wf, we, stdin_fed)?;
        let re = self.out.redirs.len();
        for i in rf..re {
            if let Some(r) = self.out.redirs.get(i).copied() {
                self.emit_redirect(r)?;
            }
        }
        Ok(())
    }

    // ------------------------------------------------------------ redirects

    fn redirect(&mut self) -> Res<Redir> {
        let start = self.pos;
        let mut fd = None;
        if self.b.get(self.pos).is_some_and(u8::is_ascii_digit) {
            let mut n: u32 = 0;
            while let Some(d) = self.b.get(self.pos).filter(|c| c.is_ascii_digit()) {
                n = n.saturating_mul(10).saturating_add(u32::from(d - b'0'));
                self.pos += 1;
            }
            fd = Some(n);
        } else if self.b.get(self.pos) == Some(&b'{') {
            // `{HOME}>/dev/null` sets HOME to the descriptor's number (a
            // relative directory a cloned repository can hold), and
            // `{a[$(cmd)]}>f` runs `cmd` as bash reads the subscript: both
            // shells assign the name, which no piece shows.
            return Err(self.syntax(
                "a redirect that stores its descriptor in a variable (`{NAME}>`) is refused: it assigns NAME for the rest of the line".into(),
            ));
        }
        let c = self.peek();
        let (n, j) = self.at(self.pos + 1);
        let (op, end) = match (c, n) {
            (Some(b'<'), Some(b'<')) => match self.at(j + 1) {
                (Some(b'<'), k) => (Op::HereStr, k + 1),
                (Some(b'-'), k) => (Op::HereDoc, k + 1),
                _ => (Op::HereDoc, j + 1),
            },
            (Some(b'<'), Some(b'&')) => (Op::DupIn, j + 1),
            (Some(b'<'), Some(b'>')) => (Op::InOut, j + 1),
            (Some(b'<'), _) => (Op::In, self.pos + 1),
            (Some(b'>'), Some(b'>')) => (Op::Append, j + 1),
            (Some(b'>'), Some(b'|')) => (Op::Clobber, j + 1),
            (Some(b'>'), Some(b'&')) => (Op::DupOut, j + 1),
            (Some(b'>'), _) => (Op::Out, self.pos + 1),
            (Some(b'&'), Some(b'>')) => match self.at(j + 1) {
                (Some(b'>'), k) => (Op::OutErrAppend, k + 1),
                _ => (Op::OutErr, j + 1),
            },
            _ => return Err(self.unexpected()),
        };
        let strip_tabs = op == Op::HereDoc && self.b.get(end.saturating_sub(1)) == Some(&b'-');
        self.pos = end;
        self.skip_blanks();
        // The target is a word even where it looks like a redirect
        // (`2>&1>f` is `2>&1` then `>f`).
        let word_here = match self.peek() {
            None => false,
            Some(b'<' | b'>') => self.at(self.pos + 1).0 == Some(b'('),
            Some(c) => !is_meta(c),
        };
        if !word_here {
            let what = self.src.get(start..end).unwrap_or("");
            if self.pos >= self.b.len() {
                return Err(self.syntax(format!("a redirect has no target: `{}`", snippet(what))));
            }
            return Err(self.unexpected());
        }
        if self.b.get(self.pos) == Some(&b'!')
            && !matches!(op, Op::HereDoc | Op::HereStr | Op::In | Op::DupIn)
        {
            return Err(super::zsh::bang_target(
                self.src.get(start..end).unwrap_or(""),
            ));
        }
        let target = self.word(Mode::Arg)?;
        if op == Op::HereDoc {
            self.heredocs.push(HereDoc {
                delim: self.out.val(target).to_string(),
                strip_tabs,
                quoted: target.flags & QUOTED != 0,
            });
        }
        Ok(Redir { fd, op, target })
    }

    fn emit_redirect(&mut self, r: Redir) -> Res<()> {
        let target = self.out.val(r.target);
        let dup =
            target == "-" || (!target.is_empty() && target.bytes().all(|c| c.is_ascii_digit()));
        let (write, read) = match r.op {
            Op::HereDoc | Op::HereStr => (false, false),
            Op::DupOut | Op::DupIn if dup => (false, false),
            Op::DupIn | Op::In => (false, true),
            Op::InOut => (true, true),
            _ => (true, false),
        };
        if (!write && !read) || target == "/dev/null" || r.target.flags & PSUB != 0 {
            return Ok(());
        }
        let fd = r.fd.map(|n| n.to_string()).unwrap_or_default();
        let shown = super::analyse::display(target, r.target.flags);
        let text = format!("{fd}{} {shown}", r.op.text());
        let computed = r.target.flags & COMPUTED != 0;
        let value = target.to_string();
        let cfg = self.out.cfg;
        for (on, kind, tool) in [
            (write, Kind::Write, &cfg.redirect_write),
            (read, Kind::Read, &cfg.redirect_read),
        ] {
            if !on || tool.is_none() {
                continue;
            }
            let p = if computed {
                Piece::opaque(
                    kind,
                    text.clone(),
                    format!("the redirect target `{}` is computed", snippet(&value)),
                )
            } else {
                Piece::with_value(kind, text.clone(), value.clone())
            };
            self.out.push(p)?;
        }
        Ok(())
    }

    /// Reads the bodies of the pending here-documents, which start at
    /// `pos`, just after a newline.
    fn read_heredocs(&mut self) -> Res<()> {
        let pending = std::mem::take(&mut self.heredocs);
        for h in pending {
            let body_start = self.pos;
            let body_end;
            loop {
                // The line as the shell compares it with the delimiter: in
                // an unquoted body a backslash-newline joins the next line
                // first (`ls\` then an empty line ends a body at `ls`).
                let (line, line_len) = self.heredoc_line(h.quoted);
                let cmp = if h.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    &line
                };
                if cmp == h.delim {
                    body_end = self.pos;
                    self.pos = (self.pos + line_len + 1).min(self.b.len());
                    break;
                }
                if self.subst > 0
                    && cmp
                        .strip_prefix(h.delim.as_str())
                        .is_some_and(|rest| rest.starts_with(')'))
                {
                    return Err(self.syntax(format!(
                        "the here-document line `{}` inside a substitution: bash ends the document and the substitution there, so the lines after it are commands; end the document on a line of its own",
                        snippet(cmp)
                    )));
                }
                if self.pos + line_len >= self.b.len() {
                    // The shell runs a body the end of input closes.
                    body_end = self.b.len();
                    self.pos = self.b.len();
                    break;
                }
                self.pos += line_len + 1;
            }
            if !h.quoted {
                let body = self.src.get(body_start..body_end).unwrap_or("");
                let mark = self.out.buf.len();
                let r = Parser::new(body, &mut *self.out).expansions_only();
                self.out.buf.truncate(mark);
                r?;
            }
        }
        Ok(())
    }

    /// The here-document line at `pos` and how many bytes it spans: with
    /// `quoted` the physical line; otherwise physical lines joined while
    /// one ends in an odd run of backslashes (the last one and the newline
    /// removed), as bash and zsh join them before they compare the line
    /// with the delimiter.
    fn heredoc_line(&self, quoted: bool) -> (std::borrow::Cow<'s, str>, usize) {
        let mut at = self.pos;
        let mut line = std::borrow::Cow::Borrowed("");
        loop {
            let rest = self.b.get(at..).unwrap_or(&[]);
            let n = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
            let part = self.src.get(at..at + n).unwrap_or("");
            let slashes = part.bytes().rev().take_while(|&c| c == b'\\').count();
            let joined = !quoted && slashes % 2 == 1 && at + n < self.b.len();
            // A line that joins none is borrowed: the common case.
            if joined {
                line.to_mut()
                    .push_str(part.get(..part.len() - 1).unwrap_or(""));
                at += n + 1;
            } else {
                if line.is_empty() && at == self.pos {
                    line = std::borrow::Cow::Borrowed(part);
                } else {
                    line.to_mut().push_str(part);
                }
                return (line, at + n - self.pos);
            }
        }
    }

    /// Reads a here-document body for the substitutions the shell runs in
    /// it.
    fn expansions_only(&mut self) -> Res<()> {
        let mut f = 0;
        while let Some(c) = self.peek() {
            match c {
                b'\\' => {
                    self.pos += 1;
                    self.skip_char();
                }
                b'$' => self.dollar(&mut f, true)?,
                b'`' => self.backquote(&mut f)?,
                _ => self.skip_char(),
            }
        }
        Ok(())
    }

    // ------------------------------------------------------------ words

    /// Reads one word at `pos` (which is not a blank or an operator).
    fn word(&mut self, mode: Mode) -> Res<Word> {
        let v0 = self.out.buf.len();
        let r0 = self.pos;
        let mut f: u16 = 0;
        let mut eq_seen = false;
        let mut bracket = false;
        let mut brace_open = false;
        let mut brace_sep = false;
        while let Some(c) = self.peek() {
            match c {
                b' ' | b'\t' | b'\n' => break,
                b';' if mode == Mode::Cond => break,
                b'<' | b'>' if self.at(self.pos + 1).0 == Some(b'(') => {
                    let at_start = self.pos == r0;
                    self.process_subst(&mut f)?;
                    if at_start && self.peek().is_none_or(is_meta) {
                        f |= PSUB;
                    }
                }
                b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')' => {
                    if mode == Mode::Cond {
                        self.out.buf.push(c as char);
                        self.pos += 1;
                    } else {
                        break;
                    }
                }
                b'\'' => {
                    let from = self.pos + 1;
                    let rest = self.b.get(from..).unwrap_or(&[]);
                    let Some(len) = memchr::memchr(b'\'', rest) else {
                        return Err(self.unterminated("quote", self.pos));
                    };
                    let s = self.src.get(from..from + len).unwrap_or("");
                    flag_text(s, &mut f);
                    if s.contains(['$', '`']) {
                        f |= LITSUB;
                    }
                    self.out.buf.push_str(s);
                    self.pos = from + len + 1;
                    f |= QUOTED;
                }
                b'"' => self.dquote(&mut f)?,
                b'\\' => {
                    f |= QUOTED;
                    self.pos += 1;
                    if matches!(self.b.get(self.pos), Some(b'$' | b'`')) {
                        f |= LITSUB;
                    }
                    if self.pos >= self.b.len() {
                        self.out.buf.push('\\');
                    } else {
                        self.take_char(&mut f);
                    }
                }
                b'$' => self.dollar(&mut f, false)?,
                b'`' => self.backquote(&mut f)?,
                b'*' | b'?' => {
                    f |= GLOB;
                    self.out.buf.push(c as char);
                    self.pos += 1;
                }
                b'[' => {
                    bracket = true;
                    self.out.buf.push('[');
                    self.pos += 1;
                }
                b']' => {
                    if bracket {
                        f |= GLOB;
                    }
                    self.out.buf.push(']');
                    self.pos += 1;
                }
                b'{' => {
                    brace_open = true;
                    self.out.buf.push('{');
                    self.pos += 1;
                }
                b',' => {
                    brace_sep |= brace_open;
                    self.out.buf.push(',');
                    self.pos += 1;
                }
                b'}' => {
                    if brace_open && brace_sep {
                        f |= BRACE;
                    }
                    self.out.buf.push('}');
                    self.pos += 1;
                }
                b'.' => {
                    if brace_open && self.b.get(self.pos + 1) == Some(&b'.') {
                        brace_sep = true;
                    }
                    self.out.buf.push('.');
                    self.pos += 1;
                }
                b'~' => {
                    if self.pos == r0 {
                        f |= TILDE;
                    }
                    self.out.buf.push('~');
                    self.pos += 1;
                }
                b'=' => {
                    // The name is judged on the value, not the source: bash
                    // removes line continuations before it looks for an
                    // assignment (`FO\⏎O=1 rm` runs `rm`), and with no quote
                    // or expansion the value is the source without them.
                    let lhs = self.out.buf.as_bytes().get(v0..).unwrap_or(&[]);
                    let assign =
                        !eq_seen && f & (QUOTED | PARAM | SUBST | ARITH) == 0 && is_assign_lhs(lhs);
                    if self.pos == r0 && self.at(self.pos + 1).0.is_some_and(|c| !is_meta(c)) {
                        f |= EQUALS;
                    }
                    eq_seen = true;
                    self.out.buf.push('=');
                    self.pos += 1;
                    if assign {
                        // A subscript's brackets are not a glob, and an
                        // assignment's value is never globbed.
                        f &= !(GLOB | BRACE);
                        if mode == Mode::Assign {
                            f |= ASSIGN;
                        }
                        if let (Some(b'('), open) = self.at(self.pos) {
                            self.pos = open;
                            self.array(&mut f, v0, r0)?;
                            // Text glued after the `)`: bash 5.2 reads it as
                            // more of the assignment's text, zsh 5.9 as the
                            // program (`A=(x)rm -rf y` runs `rm -rf y`).
                            if self.peek().is_some_and(|c| !is_meta(c)) {
                                return Err(self.syntax(format!(
                                    "text glued after the array assignment `{}`: bash reads it as the assignment's text and zsh as the program, so put a blank or `;` after the `)`",
                                    snippet(self.src.get(r0..self.pos).unwrap_or(""))
                                )));
                            }
                        }
                    }
                }
                c if c < 0x80 => {
                    // Plain bytes: copy the run at once.
                    let rest = self.b.get(self.pos..).unwrap_or(&[]);
                    let n = rest.iter().take_while(|&&c| is_plain(c)).count().max(1);
                    let s = self.src.get(self.pos..self.pos + n).unwrap_or("");
                    flag_text(s, &mut f);
                    self.out.buf.push_str(s);
                    self.pos += n;
                }
                _ => self.take_char(&mut f),
            }
        }
        if self.pos == r0 {
            return Err(self.unexpected());
        }
        Ok(Word {
            v0,
            v1: self.out.buf.len(),
            flags: f,
        })
    }

    /// `name=( … )`: an array assignment; its elements are words (their
    /// substitutions run), its value the text as written.
    fn array(&mut self, f: &mut u16, v0: usize, r0: usize) -> Res<()> {
        let open = self.pos;
        self.pos += 1;
        self.enter()?;
        let r = self.array_elements(f, open);
        self.leave();
        r?;
        self.out.buf.truncate(v0);
        self.push_raw(r0);
        Ok(())
    }

    fn array_elements(&mut self, f: &mut u16, open: usize) -> Res<()> {
        loop {
            self.skip_space()?;
            match self.peek_tok() {
                (Tok::RParen, e) => {
                    self.pos = e;
                    return Ok(());
                }
                (Tok::Eof, _) => return Err(self.unterminated("array", open)),
                (Tok::Word, _) => {
                    let w = self.word(Mode::Arg)?;
                    *f |= w.flags & (COMPUTED | ODD | INVIS);
                }
                _ => return Err(self.unexpected()),
            }
        }
    }

    fn process_subst(&mut self, f: &mut u16) -> Res<()> {
        let start = self.pos;
        let (_, j) = self.at(self.pos + 1);
        self.pos = j + 1;
        self.subst_list(start)?;
        self.push_raw(start);
        *f |= SUBST;
        Ok(())
    }

    /// The list of a `$( … )` or `<( … )` from `pos` through its `)`.
    /// A here-document opened inside it whose body has not begun when it
    /// closes (`echo <(cat <<E)`, body on the next lines) is refused: bash
    /// reads the next lines as its body, zsh as commands.
    fn subst_list(&mut self, start: usize) -> Res<()> {
        let pending = self.heredocs.len();
        self.subst += 1;
        let r = self.list(S_RPAREN).and_then(|_| self.expect_rparen());
        self.subst -= 1;
        r?;
        if self.heredocs.len() > pending {
            return Err(self.syntax(format!(
                "a here-document opened in `{}` whose body starts after it closes: bash reads the next lines as its body and zsh as commands, so write the body inside the substitution",
                snippet(self.src.get(start..self.pos).unwrap_or(""))
            )));
        }
        Ok(())
    }

    fn dquote(&mut self, f: &mut u16) -> Res<()> {
        let start = self.pos;
        self.pos += 1;
        *f |= QUOTED;
        loop {
            let Some(c) = self.peek() else {
                return Err(self.unterminated("quote", start));
            };
            match c {
                b'"' => {
                    self.pos += 1;
                    return Ok(());
                }
                b'\\' => match self.b.get(self.pos + 1) {
                    Some(&n @ (b'$' | b'`' | b'"' | b'\\')) => {
                        if matches!(n, b'$' | b'`') {
                            *f |= LITSUB;
                        }
                        self.out.buf.push(n as char);
                        self.pos += 2;
                    }
                    _ => {
                        self.out.buf.push('\\');
                        self.pos += 1;
                    }
                },
                b'$' => self.dollar(f, true)?,
                b'`' => self.backquote(f)?,
                _ => self.take_char(f),
            }
        }
    }

    /// A `$` at `pos`: an expansion, ANSI-C quoting, or a literal `$`.
    fn dollar(&mut self, f: &mut u16, in_dq: bool) -> Res<()> {
        let start = self.pos;
        let (n, j) = self.at(start + 1);
        match n {
            Some(b'(') => {
                let (n2, k) = self.at(j + 1);
                let mark = self.out.buf.len();
                if n2 == Some(b'(') && self.looks_arith(k + 1) {
                    *f |= ARITH;
                    self.pos = k + 1;
                    self.enter()?;
                    let r = self.arith_body(f, start);
                    self.leave();
                    r?;
                } else {
                    // The list counts the level.
                    *f |= SUBST;
                    self.pos = j + 1;
                    self.subst_list(start)?;
                }
                self.out.buf.truncate(mark);
                self.push_raw(start);
            }
            Some(b'{') => {
                *f |= PARAM;
                self.pos = j + 1;
                let mark = self.out.buf.len();
                self.enter()?;
                let r = self.braced(f, start, in_dq);
                self.leave();
                r?;
                // zsh globs the word of `${x:-…}` (and the other operators)
                // when the value is used, so `*(e:cmd:)` there runs `cmd`
                // and `=(cmd)` is a process substitution; bash reads both
                // as text. A `(` that opens no substitution is refused (a
                // second review ran `echo ${x:-*(e:pwned:)}` under zsh 5.9).
                // Inside double quotes zsh globs nothing, and a quoted `(`
                // is text.
                let text = self.src.get(start..self.pos).unwrap_or("");
                if !in_dq && bare_paren(text) {
                    return Err(self.syntax(format!(
                        "`{}`: a `(` in a parameter expansion that opens no substitution is refused: zsh reads it as a glob qualifier or `=(…)`, which run commands",
                        snippet(text)
                    )));
                }
                self.out.buf.truncate(mark);
                self.push_raw(start);
            }
            Some(b'[') => {
                *f |= ARITH;
                self.pos = j + 1;
                let mark = self.out.buf.len();
                self.enter()?;
                let r = self.bracket_arith(f, start);
                self.leave();
                r?;
                self.out.buf.truncate(mark);
                self.push_raw(start);
            }
            Some(b'\'') if !in_dq => {
                self.pos = j + 1;
                *f |= QUOTED;
                self.ansi_c(f, start)?;
            }
            Some(b'"') if !in_dq => {
                self.pos = j;
                self.dquote(f)?;
            }
            Some(c) if super::zsh::is_param_prefix(c, self.at(j + 1).0) => {
                return Err(super::zsh::param_prefix(self.written(start, b' ')));
            }
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                *f |= PARAM;
                self.pos = j;
                self.name_tail();
                self.bare_subscript(f, start, in_dq)?;
                self.push_raw(start);
            }
            Some(c) if c.is_ascii_digit() || b"@*#?-$!".contains(&c) => {
                *f |= PARAM;
                self.pos = j + 1;
                if c == b'#'
                    && self
                        .b
                        .get(self.pos)
                        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
                {
                    // zsh reads `$#name` as `${#name}`.
                    self.name_tail();
                }
                self.bare_subscript(f, start, in_dq)?;
                self.push_raw(start);
            }
            _ => {
                self.out.buf.push('$');
                self.pos += 1;
            }
        }
        Ok(())
    }

    /// The source from `start` through the first `close` after it (or to
    /// the end), for an error message.
    fn written(&self, start: usize, close: u8) -> &'s str {
        let rest = self.src.get(start..).unwrap_or("");
        match memchr::memchr(close, rest.as_bytes()) {
            Some(i) if close == b' ' => rest.get(..i).unwrap_or(rest),
            Some(i) => rest.get(..=i).unwrap_or(rest),
            None => rest,
        }
    }

    /// Moves past the rest of a parameter's name.
    fn name_tail(&mut self) {
        while self
            .b
            .get(self.pos)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
        {
            self.pos += 1;
        }
    }

    /// A `[` right after a bare parameter (`$a[…]`): zsh reads a subscript
    /// there, quoted or not, and evaluates it as arithmetic, where a
    /// substitution between single quotes runs (`ls $a['$(rm x)']`); bash
    /// reads a glob or text. The union of the two: the subscript is read
    /// for substitutions as zsh reads it, brackets nesting, up to its `]` or
    /// the first blank or operator, where zsh's word (and bash's) ends.
    /// Inside double quotes, bash's word goes on after the `"` that closes
    /// them (`"$*["&" "` runs a program named ` ` in both shells), while zsh
    /// reads the subscript on through it (`echo "$a["'$(rm x)'"]"` runs
    /// `rm x` in zsh): the subscript is read to its end for zsh's
    /// substitutions, and the line goes on from that `"` for bash's.
    fn bare_subscript(&mut self, f: &mut u16, start: usize, in_dq: bool) -> Res<()> {
        if self.b.get(self.pos) != Some(&b'[') {
            return Ok(());
        }
        self.pos += 1;
        let mark = self.out.buf.len();
        let mut bash_end = None;
        let mut depth = 0usize;
        let outer = self.zsh_ahead;
        while let Some(c) = self.peek() {
            if c == b'"' && in_dq && bash_end.is_none() {
                bash_end = Some(self.pos);
                if outer {
                    // Already reading ahead for an enclosing subscript:
                    // what follows is read by that reading.
                    break;
                }
                self.zsh_ahead = true;
            }
            match c {
                b']' if depth == 0 => {
                    self.pos += 1;
                    break;
                }
                b']' => {
                    depth -= 1;
                    self.pos += 1;
                }
                b'[' => {
                    depth += 1;
                    self.pos += 1;
                }
                c if is_meta(c) => break,
                _ => {
                    if let Err(e) = self.expansion_char(f, start, Quotes::LIVE) {
                        self.zsh_ahead = outer;
                        return Err(e);
                    }
                }
            }
        }
        self.zsh_ahead = outer;
        if let Some(end) = bash_end {
            self.out.buf.truncate(mark);
            self.pos = end;
        }
        Ok(())
    }

    /// Whether `$((` or `((` whose body starts at `i` is arithmetic: its
    /// first unbalanced `)` is followed by another. Otherwise it is a
    /// command substitution or subshell whose first command is a subshell.
    fn looks_arith(&self, mut i: usize) -> bool {
        let mut depth = 0usize;
        loop {
            match self.b.get(i) {
                None => return true,
                Some(b'\\') => i += 2,
                Some(b'\'') => {
                    let rest = self.b.get(i + 1..).unwrap_or(&[]);
                    match memchr::memchr(b'\'', rest) {
                        Some(n) => i += n + 2,
                        None => return true,
                    }
                }
                Some(b'"') => {
                    i += 1;
                    while let Some(&c) = self.b.get(i) {
                        i += 1;
                        match c {
                            b'\\' => i += 1,
                            b'"' => break,
                            _ => {}
                        }
                    }
                }
                Some(b'(') => {
                    depth += 1;
                    i += 1;
                }
                Some(b')') => {
                    if depth == 0 {
                        return self.at(i + 1).0 == Some(b')');
                    }
                    depth -= 1;
                    i += 1;
                }
                Some(_) => i += 1,
            }
        }
    }

    /// The body of `$(( … ))` or `(( … ))` from `pos` through the closing
    /// `))`: its substitutions run.
    fn arith_body(&mut self, f: &mut u16, start: usize) -> Res<()> {
        let body = self.pos;
        let mut depth = 0usize;
        loop {
            let Some(c) = self.peek() else {
                return Err(self.unterminated("arithmetic", start));
            };
            match c {
                b'(' => {
                    depth += 1;
                    self.pos += 1;
                }
                b')' => {
                    if depth == 0 {
                        let (n, k) = self.at(self.pos + 1);
                        if n != Some(b')') {
                            return Err(self.unexpected());
                        }
                        let text = self.src.get(body..self.pos).unwrap_or("");
                        self.pos = k + 1;
                        return self.arith_text(text);
                    }
                    depth -= 1;
                    self.pos += 1;
                }
                _ => self.expansion_char(f, start, Quotes::LIVE)?,
            }
        }
    }

    /// `$[ … ]`, the old arithmetic expansion.
    fn bracket_arith(&mut self, f: &mut u16, start: usize) -> Res<()> {
        let body = self.pos;
        let mut depth = 0usize;
        loop {
            let Some(c) = self.peek() else {
                return Err(self.unterminated("arithmetic", start));
            };
            match c {
                b'[' => {
                    depth += 1;
                    self.pos += 1;
                }
                b']' => {
                    self.pos += 1;
                    if depth == 0 {
                        let text = self.src.get(body..self.pos - 1).unwrap_or("");
                        return self.arith_text(text);
                    }
                    depth -= 1;
                }
                _ => self.expansion_char(f, start, Quotes::LIVE)?,
            }
        }
    }

    /// An arithmetic body already read for its substitutions: opaque when
    /// it names a variable ([`Self::arithmetic`]).
    fn arith_text(&mut self, text: &'s str) -> Res<()> {
        if names_a_variable(text) {
            return self.opaque_expansion(text, EVALUATED_AGAIN);
        }
        Ok(())
    }

    /// `${ … }` from `pos` through its closing brace. A plain `{` inside
    /// does not nest, as in bash (`${x:-{a}b}` is `{ab}`, and `${{}` ends at
    /// its first `}`, so a newline after it starts the next command); a
    /// nested `${ … }` is read whole by [`Self::expansion_char`]. A head
    /// bash does not know (`${(e)x}`, `${~x}`) is refused: zsh reads it
    /// otherwise ([`super::zsh::is_bash_param_start`]).
    ///
    /// Where the expansion ends is found as bash's reader finds it, with
    /// single quotes quoting; what runs is decided as bash expands it. A
    /// subscript (`${a[…]}`) and a substring's offset and length
    /// (`${x:…:…}`) are arithmetic, where a single quote is an ordinary
    /// character, so a substitution between single quotes there runs. So
    /// does one in the word of `-`, `=`, `+` and `?` (with or without `:`)
    /// when the expansion is inside double quotes or a here-document body:
    /// bash expands that word as double-quoted text. The patterns of `#`,
    /// `%`, `/`, `^` and `,` keep their quotes.
    fn braced(&mut self, f: &mut u16, start: usize, in_dq: bool) -> Res<()> {
        let outer = Quotes {
            dq: in_dq,
            sq_live: false,
        };
        // The head: `!` or `#`, then a name, a number or a special
        // parameter.
        let indirect = self.peek() == Some(b'!');
        if matches!(self.peek(), Some(b'!' | b'#')) {
            self.pos += 1;
        }
        let nested = self.peek() == Some(b'$')
            && super::zsh::is_nested_after_dollar(self.at(self.pos + 1).0);
        if nested || !super::zsh::is_bash_param_start(self.peek()) {
            return Err(super::zsh::braced_head(self.written(start, b'}')));
        }
        match self.peek() {
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
                {
                    self.pos += 1;
                }
            }
            Some(c) if c.is_ascii_digit() => {
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.pos += 1;
                }
            }
            Some(b'@' | b'*' | b'#' | b'?' | b'-' | b'$' | b'!') => self.pos += 1,
            _ => {}
        }
        let mut all_elements = false;
        if self.peek() == Some(b'[') {
            // The subscript, up to its `]`; a `}` still ends the expansion,
            // as bash's reader ends it there.
            self.pos += 1;
            let sub = self.pos;
            loop {
                match self.peek() {
                    None => return Err(self.unterminated("parameter expansion", start)),
                    Some(b']') => {
                        let text = self.src.get(sub..self.pos).unwrap_or("");
                        self.pos += 1;
                        all_elements = matches!(text, "@" | "*");
                        self.arith_text(text)?;
                        break;
                    }
                    Some(b'}') => break,
                    Some(_) => self.expansion_char(f, start, Quotes::LIVE)?,
                }
            }
        }
        let (op, j) = self.at(self.pos);
        let (next, k) = self.at(j + 1);
        let (third, _) = self.at(k + 1);
        // `${!name}` expands the variable `name` names, subscript and
        // all (`${!prefix*}`, `${!prefix@}` and `${!a[@]}` list names or
        // keys instead). `${x@P}` expands x's value as a prompt, which
        // runs its substitutions. `${x=…}` and `${x:=…}` assign x.
        let names_only = all_elements || (matches!(op, Some(b'*' | b'@')) && next == Some(b'}'));
        let why = if indirect && !names_only {
            Some("expands the variable another one names, whose value can run commands")
        } else if op == Some(b'@') && next == Some(b'P') {
            Some("expands a value as a prompt, which runs its commands")
        } else if op == Some(b'=')
            || (op == Some(b':') && next == Some(b'='))
            || (op == Some(b':') && next == Some(b':') && third == Some(b'='))
        {
            // zsh's `${x::=v}` assigns unconditionally (bash refuses it).
            Some("assigns a variable")
        } else {
            None
        };
        if let Some(why) = why {
            self.opaque_expansion(self.written(start, b'}'), why)?;
        }
        let rest = match (op, next) {
            (Some(b':'), Some(b'-' | b'=' | b'+' | b'?'))
            | (Some(b'-' | b'=' | b'+' | b'?'), _) => Quotes {
                dq: in_dq,
                sq_live: in_dq,
            },
            (Some(b':'), _) => Quotes::LIVE,
            _ => outer,
        };
        let mut rest = rest;
        // `${x/pattern/replacement}`: zsh expands the replacement as
        // double-quoted text inside double quotes and a here-document body,
        // single quotes ordinary (bash keeps them), so from the `/` that
        // ends the pattern it is read as the word of `-` is.
        let mut pattern = op == Some(b'/');
        if pattern {
            self.pos = j + 1;
            if matches!(self.peek(), Some(b'/' | b'#' | b'%')) {
                self.pos += 1;
            }
        }
        let offset = op == Some(b':') && !matches!(next, Some(b'-' | b'=' | b'+' | b'?'));
        let rest_at = self.pos;
        loop {
            let Some(c) = self.peek() else {
                return Err(self.unterminated("parameter expansion", start));
            };
            if c == b'}' {
                if offset {
                    // `${x:offset:length}`: both are arithmetic.
                    let text = self.src.get(rest_at + 1..self.pos).unwrap_or("");
                    self.pos += 1;
                    return self.arith_text(text);
                }
                self.pos += 1;
                return Ok(());
            }
            if pattern && c == b'/' {
                self.pos += 1;
                pattern = false;
                rest = Quotes {
                    dq: in_dq,
                    sq_live: in_dq,
                };
                continue;
            }
            self.expansion_char(f, start, rest)?;
        }
    }

    /// One character inside an expansion's body: quotes and nested
    /// expansions are read (their substitutions run), anything else is
    /// skipped. With `q.sq_live`, single quotes still delimit (bash's
    /// reader pairs them) but the text between them is expanded.
    fn expansion_char(&mut self, f: &mut u16, start: usize, q: Quotes) -> Res<()> {
        let Some(c) = self.peek() else {
            return Err(self.unterminated("expansion", start));
        };
        match c {
            b'\\' => {
                self.pos += 1;
                self.skip_char();
            }
            b'\'' => {
                let from = self.pos + 1;
                let rest = self.b.get(from..).unwrap_or(&[]);
                match memchr::memchr(b'\'', rest) {
                    Some(n) => {
                        self.pos = from + n + 1;
                        if q.sq_live {
                            let src: &'s str = self.src;
                            self.expand_text(src.get(from..from + n).unwrap_or(""))?;
                        }
                    }
                    None => return Err(self.unterminated("quote", self.pos)),
                }
            }
            b'"' => self.dquote(f)?,
            b'$' => self.dollar(f, q.dq)?,
            b'`' => self.backquote(f)?,
            _ => self.skip_char(),
        }
        Ok(())
    }

    /// Reads `text` for the substitutions bash runs when it expands it as
    /// double-quoted text (single quotes are ordinary characters there).
    pub(super) fn expand_text(&mut self, text: &str) -> Res<()> {
        if !text.contains(['$', '`']) {
            return Ok(());
        }
        self.enter()?;
        let mark = self.out.buf.len();
        let r = Parser::new(text, &mut *self.out).expansions_only();
        self.out.buf.truncate(mark);
        self.leave();
        r
    }

    /// `$'…'` from `pos` (after the quote): the escapes decoded as bash
    /// decodes them.
    fn ansi_c(&mut self, f: &mut u16, start: usize) -> Res<()> {
        let mut bytes: Vec<u8> = Vec::new();
        let mut nul = false;
        loop {
            let Some(&c) = self.b.get(self.pos) else {
                return Err(self.unterminated("quote", start));
            };
            self.pos += 1;
            let decoded: Option<u32> = match c {
                b'\'' => break,
                b'\\' => {
                    let Some(&e) = self.b.get(self.pos) else {
                        return Err(self.unterminated("quote", start));
                    };
                    self.pos += 1;
                    match e {
                        b'a' => Some(7),
                        b'b' => Some(8),
                        b'e' | b'E' => Some(27),
                        b'f' => Some(12),
                        b'n' => Some(10),
                        b'r' => Some(13),
                        b't' => Some(9),
                        b'v' => Some(11),
                        b'\\' | b'\'' | b'"' | b'?' => Some(u32::from(e)),
                        b'0'..=b'7' => {
                            let mut v = u32::from(e - b'0');
                            for _ in 0..2 {
                                match self.b.get(self.pos) {
                                    Some(&d @ b'0'..=b'7') => {
                                        v = v * 8 + u32::from(d - b'0');
                                        self.pos += 1;
                                    }
                                    _ => break,
                                }
                            }
                            bytes.push((v & 0xff) as u8);
                            nul |= v & 0xff == 0;
                            None
                        }
                        b'x' | b'u' | b'U' => {
                            let max = match e {
                                b'x' => 2,
                                b'u' => 4,
                                _ => 8,
                            };
                            let mut v: u32 = 0;
                            let mut n = 0;
                            while n < max {
                                match self.b.get(self.pos).and_then(|d| (*d as char).to_digit(16)) {
                                    Some(d) => {
                                        v = v.saturating_mul(16).saturating_add(d);
                                        self.pos += 1;
                                        n += 1;
                                    }
                                    None => break,
                                }
                            }
                            if n == 0 {
                                bytes.push(b'\\');
                                bytes.push(e);
                            } else if e == b'x' {
                                bytes.push((v & 0xff) as u8);
                                nul |= v == 0;
                            } else {
                                let ch = char::from_u32(v).unwrap_or('\u{fffd}');
                                nul |= v == 0;
                                let mut tmp = [0u8; 4];
                                bytes.extend_from_slice(ch.encode_utf8(&mut tmp).as_bytes());
                            }
                            None
                        }
                        b'c' => match self.b.get(self.pos) {
                            Some(&x) => {
                                self.pos += 1;
                                let v = u32::from(x & 0x1f);
                                nul |= v == 0;
                                Some(v)
                            }
                            None => return Err(self.unterminated("quote", start)),
                        },
                        other => {
                            bytes.push(b'\\');
                            Some(u32::from(other))
                        }
                    }
                }
                other => Some(u32::from(other)),
            };
            if let Some(v) = decoded {
                bytes.push((v & 0xff) as u8);
            }
        }
        if nul {
            // bash ends the string at a NUL; the rest was still read.
            if let Some(i) = bytes.iter().position(|&b| b == 0) {
                bytes.truncate(i);
            }
        }
        let s = String::from_utf8_lossy(&bytes);
        flag_text(&s, f);
        if s.contains(['$', '`']) {
            *f |= LITSUB;
        }
        self.out.buf.push_str(&s);
        Ok(())
    }

    /// A backquoted substitution at `pos`: its text, with `\$`, `` \` ``
    /// and `\\` unescaped, is parsed as a source of its own.
    fn backquote(&mut self, f: &mut u16) -> Res<()> {
        let start = self.pos;
        let mut i = start + 1;
        let mut inner: Vec<u8> = Vec::new();
        loop {
            match self.b.get(i) {
                None => return Err(self.unterminated("backquote", start)),
                Some(b'`') => break,
                Some(b'\\') => match self.b.get(i + 1) {
                    Some(&n @ (b'$' | b'`' | b'\\')) => {
                        inner.push(n);
                        i += 2;
                    }
                    _ => {
                        inner.push(b'\\');
                        i += 1;
                    }
                },
                Some(&c) => {
                    inner.push(c);
                    i += 1;
                }
            }
        }
        self.pos = i + 1;
        *f |= SUBST;
        let text = String::from_utf8(inner).map_err(|_| self.unterminated("backquote", start))?;
        let mark = self.out.buf.len();
        Parser::new(&text, &mut *self.out).program()?;
        self.out.buf.truncate(mark);
        self.push_raw(start);
        Ok(())
    }

    /// Parses `text` (the script of `bash -c`, `eval`, an alias, a trap) as
    /// a source of its own, each of its commands in the environment `env`.
    pub(super) fn nested(&mut self, text: &str, env: Vec<Word>) -> Res<()> {
        let mark = self.out.buf.len();
        let saved = std::mem::replace(&mut self.out.env, env);
        let r = Parser::new(text, &mut *self.out).program();
        self.out.env = saved;
        self.out.buf.truncate(mark);
        r
    }
}

/// Whether `text` (a `${…}`) holds, outside quotes, a `(` that opens no
/// substitution (`$(`, `<(`, `>(`, `((`).
fn bare_paren(text: &str) -> bool {
    let b = text.as_bytes();
    let (mut sq, mut dq) = (false, false);
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'\\' if !sq => i += 1,
            b'\'' if !dq => sq = !sq,
            b'"' if !sq => dq = !dq,
            b'(' if !sq && !dq => {
                let before = i.checked_sub(1).and_then(|k| b.get(k));
                if !matches!(before, Some(b'$' | b'<' | b'>' | b'(')) {
                    return true;
                }
            }
            _ => {}
        }
        i += 1;
    }
    false
}

/// Where the last word `cd`, `pushd`, `popd` or `chdir` starts in `src`,
/// quotes and backslashes dropped first (`c''d` and `c\d` are `cd` to the
/// shell; a review).
fn last_cd_word(src: &str) -> Option<usize> {
    let mut last = None;
    let mut word = String::new();
    let mut start = 0;
    for (i, c) in src.char_indices().chain(std::iter::once((src.len(), ' '))) {
        if matches!(c, '\'' | '"' | '\\') {
            continue;
        }
        if c.is_ascii_alphanumeric() || c == '_' {
            if word.is_empty() {
                start = i;
            }
            word.push(c);
            continue;
        }
        if matches!(word.as_str(), "cd" | "pushd" | "popd" | "chdir") {
            last = Some(start);
        }
        word.clear();
    }
    last
}
