//! The shell splitter against a real bash grammar (brush-parser), shared by
//! `tests/shell_differential.rs` and the `shell` fuzz target.
//!
//! [`list`] writes commands from bash's constructs with a seeded generator;
//! [`check`] parses one with brush, and every simple command brush finds
//! (inside compound commands, function bodies, command and process
//! substitutions too) must be covered by a piece of the splitter, or the
//! splitter must fail closed: an error, or an opaque piece (a program name
//! computed when the command runs: no specifier allows it).
//!
//! "Covered" means a command or constraint piece whose value starts with the
//! program name as brush unquotes it, each piece covering one simple command
//! at most (in order of appearance, so `a; a` needs two).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    dead_code
)]

use crate::workload::Rng;
use brush_parser::ast;
use brush_parser::word::WordPiece;
use brush_parser::{Parser, ParserOptions, SourceInfo};
use toolgate::shell::{split_command, Kind, Piece, ShellConfig};

const PROGRAMS: &[&str] = &[
    "git",
    "ls",
    "rm",
    "echo",
    "cat",
    "grep",
    "/bin/rm",
    "./run",
    "r''m",
    "\"rm\"",
    "\\rm",
    "$'rm'",
    "$'\\x72\\155'",
    "npm",
    "make",
    "$CMD",
    "${CMD}",
    "[",
    "test",
    "true",
];
const WRAPPERS: &[&str] = &[
    "timeout 5",
    "nice -n 1",
    "nohup",
    "sudo",
    "sudo -u root",
    "env",
    "env -i A=1",
    "command",
    "exec",
    "time",
    "stdbuf -oL",
    "xargs",
    "xargs -n1",
    "FOO=1",
    "NODE_ENV=test",
    "A=1 B=2",
];
const ARGS: &[&str] = &[
    "-rf", "/", "x.txt", "-m", "\"a b\"", "'c d'", "a\\ b", "*.rs", "{a,b}", "~/x", "--all",
    "$HOME", "\"$x\"", "''", "a=b", "#x", "a#b", "-", "--", "%s", "\\\n", "1",
];
const REDIRECTS: &[&str] = &[
    "> out",
    ">> log",
    "2>&1",
    "2>/dev/null",
    "< in",
    "&> all",
    ">|f",
    "<<< word",
    "2> err",
];
const SEPARATORS: &[&str] = &[" && ", " || ", " | ", " |& ", "; ", " & ", "\n", " &&\n"];

/// A simple command: assignments, a program from the vocabulary, words
/// and redirects, with substitutions nested `depth` levels at most.
pub fn simple(rng: &mut Rng, depth: u32) -> String {
    let mut s = String::new();
    if rng.below(4) == 0 {
        s.push_str(rng.pick_str(WRAPPERS));
        s.push(' ');
    }
    s.push_str(rng.pick_str(PROGRAMS));
    for _ in 0..rng.below(4) {
        s.push(' ');
        match rng.below(10) {
            0 if depth > 0 => {
                s.push_str("$(");
                s.push_str(&list(rng, depth - 1));
                s.push(')');
            }
            1 if depth > 0 => {
                s.push_str("\"$(");
                s.push_str(&list(rng, depth - 1));
                s.push_str(")\"");
            }
            2 if depth > 0 => {
                s.push_str("<(");
                s.push_str(&list(rng, depth - 1));
                s.push(')');
            }
            3 if depth > 0 => {
                // Backquotes cannot nest without escapes; keep them flat.
                s.push('`');
                s.push_str(rng.pick_str(PROGRAMS));
                s.push_str(" x`");
            }
            4 => s.push_str(rng.pick_str(REDIRECTS)),
            _ => s.push_str(rng.pick_str(ARGS)),
        }
    }
    s
}

/// A command: simple, compound (`if`, `for`, `case`, groups, subshells,
/// functions) or negated, nested `depth` levels at most.
pub fn command(rng: &mut Rng, depth: u32) -> String {
    if depth == 0 {
        return simple(rng, 0);
    }
    let d = depth - 1;
    match rng.below(14) {
        0 => format!("( {} )", list(rng, d)),
        1 => format!("{{ {}; }}", list(rng, d)),
        2 => format!(
            "if {}; then {}; else {}; fi",
            list(rng, d),
            list(rng, d),
            list(rng, d)
        ),
        3 => format!("while {}; do {}; done", list(rng, d), list(rng, d)),
        4 => format!("for f in a $(ls) b; do {}; done", list(rng, d)),
        5 => format!(
            "case $x in a|b) {};; *) {};; esac",
            list(rng, d),
            list(rng, d)
        ),
        6 => format!("f() {{ {}; }}", list(rng, d)),
        7 => format!("bash -c '{}'", list(rng, d).replace('\'', "")),
        8 => format!("{} > out", command(rng, d)),
        9 => format!("[[ -f x ]] && {}", simple(rng, d)),
        10 => format!("! {}", simple(rng, d)),
        _ => simple(rng, depth),
    }
}

/// A list of commands joined by the separators and operators bash reads.
pub fn list(rng: &mut Rng, depth: u32) -> String {
    let mut s = command(rng, depth);
    for _ in 0..rng.below(3) {
        s.push_str(rng.pick_str(SEPARATORS));
        s.push_str(&command(rng, depth));
    }
    s
}

/// A simple command brush found: its program as brush unquotes it, and
/// whether the program word has an expansion or pattern.
struct Found {
    program: String,
    computed: bool,
}

/// Runs brush, which panics on some inputs (an fd number past `i32` in a
/// redirect unwraps a `ParseIntError`): a panic there is brush refusing the
/// command, not a finding. The panic hook is silenced meanwhile, since the
/// fuzzer's hook aborts the process before unwinding reaches here.
fn quietly<T>(f: impl FnOnce() -> Option<T>) -> Option<T> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(hook);
    r.ok().flatten()
}

fn parse(src: &str) -> Option<ast::Program> {
    quietly(|| {
        let mut p = Parser::new(
            std::io::BufReader::new(src.as_bytes()),
            &ParserOptions::default(),
            &SourceInfo::default(),
        );
        p.parse_program().ok()
    })
}

fn walk_program(p: &ast::Program, out: &mut Vec<Found>) {
    for c in &p.complete_commands {
        walk_list(c, out);
    }
}

fn walk_list(l: &ast::CompoundList, out: &mut Vec<Found>) {
    for item in &l.0 {
        let ao = &item.0;
        walk_pipeline(&ao.first, out);
        for next in &ao.additional {
            match next {
                ast::AndOr::And(p) | ast::AndOr::Or(p) => walk_pipeline(p, out),
            }
        }
    }
}

fn walk_pipeline(p: &ast::Pipeline, out: &mut Vec<Found>) {
    for c in &p.seq {
        walk_command(c, out);
    }
}

fn walk_word(w: &str, out: &mut Vec<Found>) {
    if let Some(pieces) = quietly(|| brush_parser::word::parse(w, &ParserOptions::default()).ok()) {
        walk_pieces(&pieces, out);
    }
}

fn walk_pieces(pieces: &[brush_parser::word::WordPieceWithSource], out: &mut Vec<Found>) {
    for p in pieces {
        match &p.piece {
            WordPiece::CommandSubstitution(s) => {
                if let Some(p) = parse(s) {
                    walk_program(&p, out);
                }
            }
            WordPiece::BackquotedCommandSubstitution(s) => {
                // Between backquotes, `\\`, `\`` and `\$` lose their backslash
                // before the command is parsed; brush hands the text over
                // as written.
                let mut inner = String::new();
                let mut it = s.chars().peekable();
                while let Some(c) = it.next() {
                    if c == '\\' && matches!(it.peek(), Some('\\' | '`' | '$')) {
                        inner.extend(it.next());
                    } else {
                        inner.push(c);
                    }
                }
                if let Some(p) = parse(&inner) {
                    walk_program(&p, out);
                }
            }
            WordPiece::DoubleQuotedSequence(inner) => walk_pieces(inner, out),
            _ => {}
        }
    }
}

fn walk_items(items: &[ast::CommandPrefixOrSuffixItem], out: &mut Vec<Found>) {
    for item in items {
        match item {
            ast::CommandPrefixOrSuffixItem::Word(w)
            | ast::CommandPrefixOrSuffixItem::AssignmentWord(_, w) => walk_word(&w.value, out),
            ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => walk_list(&sub.0, out),
            ast::CommandPrefixOrSuffixItem::IoRedirect(_) => {}
        }
    }
}

fn walk_command(c: &ast::Command, out: &mut Vec<Found>) {
    match c {
        ast::Command::Simple(s) => {
            if let Some(prefix) = &s.prefix {
                walk_items(&prefix.0, out);
            }
            if let Some(w) = &s.word_or_name {
                walk_word(&w.value, out);
            }
            if let Some(suffix) = &s.suffix {
                walk_items(&suffix.0, out);
            }
            if let Some(w) = &s.word_or_name {
                // brush's `unquote_str` drops every quote character (a
                // single-quoted `"` too) and leaves ANSI-C quoting alone,
                // so words are unquoted here.
                let (program, plain) = unquote(&w.value);
                let computed = plain.contains(['$', '`', '*', '?', '[', '{'])
                    || !plain.is_ascii()
                    || program.chars().any(|c| !(' '..='~').contains(&c));
                out.push(Found { program, computed });
            }
        }
        ast::Command::Compound(cc, _) => walk_compound(cc, out),
        ast::Command::Function(f) => walk_compound(&f.body.0, out),
        ast::Command::ExtendedTest(_) => {}
    }
}

fn walk_compound(c: &ast::CompoundCommand, out: &mut Vec<Found>) {
    match c {
        ast::CompoundCommand::BraceGroup(b) => walk_list(&b.0, out),
        ast::CompoundCommand::Subshell(s) => walk_list(&s.0, out),
        ast::CompoundCommand::ForClause(f) => {
            for w in f.values.iter().flatten() {
                walk_word(&w.value, out);
            }
            walk_list(&f.body.0, out);
        }
        ast::CompoundCommand::ArithmeticForClause(f) => walk_list(&f.body.0, out),
        ast::CompoundCommand::CaseClause(c) => {
            walk_word(&c.value.value, out);
            for item in &c.cases {
                if let Some(l) = &item.cmd {
                    walk_list(l, out);
                }
            }
        }
        ast::CompoundCommand::IfClause(i) => {
            walk_list(&i.condition, out);
            walk_list(&i.then, out);
            for e in i.elses.iter().flatten() {
                if let Some(c) = &e.condition {
                    walk_list(c, out);
                }
                walk_list(&e.body, out);
            }
        }
        ast::CompoundCommand::WhileClause(w) | ast::CompoundCommand::UntilClause(w) => {
            walk_list(&w.0, out);
            walk_list(&w.1 .0, out);
        }
        ast::CompoundCommand::Arithmetic(_) => {}
    }
}

/// A word unquoted as bash would (`r''m`, `"rm"`, `\rm` and `$'\x72m'` are
/// `rm`), and the word with its quoted parts taken out but for double
/// quotes' (what is left may still expand). Written apart from the splitter's decoder on purpose.
fn unquote(word: &str) -> (String, String) {
    let mut out = String::new();
    let mut plain = String::new();
    let mut it = word.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '$' if it.peek() == Some(&'\'') => {
                it.next();
                let mut bytes = Vec::new();
                while let Some(c) = it.next() {
                    match c {
                        '\'' => break,
                        '\\' => ansi_escape(&mut it, &mut bytes),
                        c => bytes.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
                    }
                }
                // bash ends the string at a NUL byte.
                let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
                out.push_str(&String::from_utf8_lossy(&bytes[..end]));
            }
            // `$"…"` is a string for translation: in the C locale, "…".
            '$' if it.peek() == Some(&'"') => {}
            '\'' => {
                for c in it.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    out.push(c);
                }
            }
            '"' => {
                while let Some(c) = it.next() {
                    match c {
                        '"' => break,
                        '\\' if matches!(it.peek(), Some('"' | '\\' | '$' | '`')) => {
                            out.extend(it.next());
                        }
                        c => {
                            plain.push(c);
                            out.push(c);
                        }
                    }
                }
            }
            '\\' => out.extend(it.next()),
            c => {
                plain.push(c);
                out.push(c);
            }
        }
    }
    (out, plain)
}

/// One escape of `$'…'`, its backslash read, as bytes.
fn ansi_escape(it: &mut std::iter::Peekable<std::str::Chars<'_>>, bytes: &mut Vec<u8>) {
    let digits = |it: &mut std::iter::Peekable<std::str::Chars<'_>>, radix: u32, max: usize| {
        let mut n = 0u32;
        let mut k = 0;
        while k < max {
            match it.peek().and_then(|c| c.to_digit(radix)) {
                Some(d) => {
                    n = n * radix + d;
                    it.next();
                    k += 1;
                }
                None => break,
            }
        }
        (n, k)
    };
    let simple = |b: u8, bytes: &mut Vec<u8>| bytes.push(b);
    match it.next() {
        Some('a') => simple(7, bytes),
        Some('b') => simple(8, bytes),
        Some('e' | 'E') => simple(27, bytes),
        Some('f') => simple(12, bytes),
        Some('n') => simple(b'\n', bytes),
        Some('r') => simple(b'\r', bytes),
        Some('t') => simple(b'\t', bytes),
        Some('v') => simple(11, bytes),
        Some(c @ ('\\' | '\'' | '"' | '?')) => simple(c as u8, bytes),
        Some('x') => match digits(it, 16, 2) {
            (_, 0) => bytes.extend_from_slice(b"\\x"),
            (n, _) => bytes.push(n as u8),
        },
        Some(c @ ('u' | 'U')) => match digits(it, 16, if c == 'u' { 4 } else { 8 }) {
            (_, 0) => {
                bytes.push(b'\\');
                bytes.push(c as u8);
            }
            (n, _) => {
                let ch = char::from_u32(n).unwrap_or('\u{fffd}');
                bytes.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
            }
        },
        Some('c') => match it.next() {
            Some(c) => bytes.push((c as u32 & 0x1f) as u8),
            None => bytes.extend_from_slice(b"\\c"),
        },
        Some(c @ '0'..='7') => {
            let (n, k) = digits(it, 8, 2);
            let first = c.to_digit(8).unwrap_or(0);
            bytes.push((first * 8u32.pow(k as u32) + n) as u8);
        }
        Some(c) => {
            bytes.push(b'\\');
            bytes.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
        }
        None => bytes.push(b'\\'),
    }
}

/// Whether the piece's value starts with `program` as a whole word (the
/// splitter writes an empty word as `''`; a program name may hold a space;
/// invisible characters are written `\u{…}`, read back here).
fn starts_with_program(p: &Piece, program: &str) -> bool {
    let program = if program.is_empty() { "''" } else { program };
    let starts = |v: &str| {
        v.strip_prefix(program)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
    };
    p.value()
        .is_some_and(|v| starts(v) || starts(&shown_as_written(v)))
}

/// `v` with each `\u{hex}` replaced by its character.
fn shown_as_written(v: &str) -> String {
    let mut out = String::new();
    let mut rest = v;
    while let Some(at) = rest.find("\\u{") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 3..];
        let decoded = after.find('}').and_then(|end| {
            let c = char::from_u32(u32::from_str_radix(&after[..end], 16).ok()?)?;
            Some((c, end))
        });
        match decoded {
            Some((c, end)) => {
                out.push(c);
                rest = &after[end + 1..];
            }
            None => {
                out.push_str("\\u{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Which simple commands brush found that no piece covers, and how many
/// plain program names (no expansion in brush's reading) were covered only
/// by an opaque piece: the splitter failing closed where brush saw no need.
///
/// Pieces are matched by program name first; an opaque piece (its program
/// computed, so no specifier allows it) then covers any one command left,
/// since nothing it stands for can be allowed.
fn uncovered(found: &[Found], pieces: &[Piece]) -> (Vec<String>, usize) {
    let mut used = vec![false; pieces.len()];
    let mut left = Vec::new();
    for f in found {
        let hit = pieces.iter().enumerate().position(|(i, p)| {
            !used[i]
                && matches!(p.kind, Kind::Command | Kind::Constraint)
                && starts_with_program(p, &f.program)
        });
        match hit {
            Some(i) => used[i] = true,
            None => left.push(f),
        }
    }
    // brush reads `time` after `!` (`! time ! rm x`) as a program with
    // arguments; bash reads a keyword, and the splitter a keyword or the
    // wrapper it also is. The pipeline it times is checked by the unit
    // cases, so a `time` left over needs no piece of its own.
    let left: Vec<&Found> = left.into_iter().filter(|f| f.program != "time").collect();
    let opaque = |p: &Piece| p.kind == Kind::Command && p.value().is_none();
    // Any opaque piece covers any one command, so how many are missing does
    // not depend on the pairing; an opaque piece is first paired with the
    // command its text names, so that the one reported missing is the one
    // the splitter has no piece for (`add` in `r\⏎m=it add -A &&\u{feff}`,
    // not the `\u{feff}` whose opaque piece `add` took).
    let mut paired = vec![None; left.len()];
    for (k, f) in left.iter().enumerate() {
        let names = |p: &Piece| {
            let text = shown_as_written(&p.text);
            [p.text.as_str(), text.as_str()].iter().any(|t| {
                t.strip_prefix(f.program.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
            })
        };
        let hit = pieces
            .iter()
            .enumerate()
            .position(|(i, p)| !used[i] && opaque(p) && names(p));
        if let Some(i) = hit {
            used[i] = true;
            paired[k] = Some(i);
        }
    }
    let mut missing = Vec::new();
    let mut cautious = 0;
    for (f, hit) in left.iter().zip(paired) {
        let hit = hit.or_else(|| {
            let i = pieces
                .iter()
                .enumerate()
                .position(|(i, p)| !used[i] && opaque(p))?;
            used[i] = true;
            Some(i)
        });
        match hit {
            Some(_) => cautious += usize::from(!f.computed),
            None => missing.push(f.program.clone()),
        }
    }
    (missing, cautious)
}

/// What [`check`] saw for one command.
pub enum Outcome {
    /// brush did not parse it; nothing to compare.
    BrushRejects,
    /// The splitter refused it (fails closed), with its message.
    SplitterRefuses(String),
    /// Both parsed it; brush found this many simple commands, and these
    /// programs had no subject (empty when the splitter covers them all).
    Compared {
        /// The simple commands brush found.
        commands: usize,
        /// The programs no piece of the splitter covers.
        missing: Vec<String>,
        /// Plain programs covered only by an opaque piece.
        cautious: usize,
    },
}

/// Whether `cmd` has a `<<` that is not a here-string's `<<<`.
fn has_here_document(cmd: &str) -> bool {
    // A run of `<` that is not exactly the three of a here-string holds a
    // `<<` (`<<<<<` is `<<<` and `<<` to brush: a 224-byte line of such
    // runs took it past 2 GiB, a shell fuzz finding).
    cmd.split(|c| c != '<')
        .any(|run| run.len() == 2 || run.len() > 3)
}

/// Whether some `=( … )` in `cmd` has text glued after its `)` (bash's
/// blanks are space, tab and newline only: a carriage return is glued).
fn glued_array_assignment(cmd: &str) -> bool {
    cmd.match_indices("=(").any(|(at, _)| {
        cmd[at..].find(')').is_some_and(|close| {
            cmd[at + close + 1..]
                .chars()
                .next()
                .is_some_and(|c| !" \t\n;|&)<>".contains(c))
        })
    })
}

/// Whether a line continuation in `cmd` is followed, after blanks, by a
/// `#`: the start of a comment for bash, a word for brush.
pub fn comment_after_continuation(cmd: &str) -> bool {
    cmd.match_indices("\\\n").any(|(at, m)| {
        cmd[at + m.len()..]
            .trim_start_matches([' ', '\t'])
            .starts_with('#')
    })
}

/// Whether a `case` stands after a `$(` in `cmd`.
pub fn case_in_substitution(cmd: &str) -> bool {
    cmd.find("$(").is_some_and(|at| {
        cmd[at..]
            .match_indices("case")
            .any(|(i, _)| cmd[at + i + 4..].starts_with([' ', '\t', '\n']))
    })
}

/// Whether a `${` in `cmd` holds, where a parameter's name ends (a name,
/// or one special parameter such as `?`), a quote, a `)` or another
/// character bash does not read there (`${x)+…}`, `${'…'}`, `${?'…'}`,
/// `${x\u{a0}:-…}`): bash and zsh refuse the command as a bad substitution
/// and run nothing of it, where brush reads on. A `{` there (`${{}`) stays
/// compared: such an input once led to a real bypass on a later line.
pub fn bad_substitution(cmd: &str) -> bool {
    cmd.match_indices("${").any(|(at, m)| {
        let rest = cmd[at + m.len()..].trim_start_matches(['!', '#']);
        let name = match rest.chars().next() {
            Some(c) if c.is_ascii_alphanumeric() || c == '_' => rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len()),
            Some('?' | '@' | '*' | '$' | '-') => 1,
            _ => 0,
        };
        let Some(c) = rest.get(name..).and_then(|r| r.chars().next()) else {
            return false;
        };
        if name > 0 && c != '{' {
            // After a name, only an operator bash knows may follow (`~` is
            // bash's undocumented case toggle): `${x;'$(h)'}` and
            // `${x.…}` are bad substitutions in bash 5.2 and zsh 5.9 (a
            // shell fuzz finding; checked with a stand-in `h`, which never
            // ran).
            return !"}:-=?+#%/^,@[~\n".contains(c);
        }
        "'\")".contains(c) || !(c.is_ascii() || c == '{')
    })
}

/// Whether a process substitution in `cmd` (`<( … )`, `>( … )`) is glued
/// to what follows it (`><(l)?`): bash reads one word, `/dev/fd/63?`, and
/// runs only the substitution's command (checked under bash 5.2 with a
/// stand-in program named `?` on `PATH`: it never ran), where brush ends the
/// word at the `)` and takes the rest for a program.
pub fn glued_process_substitution(cmd: &str) -> bool {
    let bytes = cmd.as_bytes();
    ["<(", ">("].iter().any(|open| {
        cmd.match_indices(open).any(|(at, _)| {
            let mut depth = 0usize;
            for (k, &b) in bytes.iter().enumerate().skip(at + 1) {
                match b {
                    b'(' => depth += 1,
                    b')' if depth <= 1 => {
                        return bytes
                            .get(k + 1)
                            .is_some_and(|c| !b" \t\n;|&()<>".contains(c));
                    }
                    b')' => depth -= 1,
                    _ => {}
                }
            }
            false
        })
    })
}

/// Whether a word of `cmd` that starts like an element assignment
/// (`name[`) has a quote before its `]` (`a[']=' b`): bash 5.2 reads the
/// quote as part of the subscript and refuses the line ("unexpected EOF
/// while looking for matching `]`"), zsh refuses it as a bad pattern, and
/// neither runs anything; brush reads an assignment and a program `b`.
pub fn quote_in_subscript(cmd: &str) -> bool {
    cmd.split(|c: char| c.is_whitespace() || ";|&()".contains(c))
        .any(|w| {
            let Some(open) = w.find('[') else {
                return false;
            };
            let name = &w[..open];
            let is_name = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            let inside = w[open..].split(']').next().unwrap_or("");
            is_name && inside.contains(['\'', '"'])
        })
}

/// Whether `cmd` holds `{name}` glued to a redirection operator
/// (`{a}<file`): bash (5.2, checked) stores the descriptor it opens in
/// `a` and runs no program `{a}`, where brush takes `{a}` for a program
/// (a shell fuzz finding, ` {a}<\u{100b}aRrval `).
pub fn descriptor_variable(cmd: &str) -> bool {
    cmd.match_indices('{').any(|(at, _)| {
        let rest = &cmd[at + 1..];
        let name = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        name > 0 && rest[name..].starts_with('}') && rest[name + 1..].starts_with(['<', '>'])
    })
}

/// Compares the splitter with brush on `cmd`.
pub fn check(cmd: &str, cfg: &ShellConfig) -> Outcome {
    if descriptor_variable(cmd) {
        return Outcome::BrushRejects;
    }
    // brush has no `$[ … ]`, bash's old arithmetic expansion, and splits
    // `r$[1|2]` at the `|` that bash reads inside it.
    if cmd.contains("$[") {
        return Outcome::BrushRejects;
    }
    // bash reads `A=(x y)B` as one assignment of the text `(x y)B`, and
    // the next word as the program; brush takes `B` for the program.
    if glued_array_assignment(cmd) {
        return Outcome::BrushRejects;
    }
    // brush grows without bound on some here-documents (`o<<""<# <#`
    // took it past 2 GiB); the splitter's are pinned by its unit cases.
    if has_here_document(cmd) {
        return Outcome::BrushRejects;
    }
    // brush reads extended globs (`!( … )`, `@( … )`, …) as words where
    // bash, with `extglob` off as in a script, reads `!` and a subshell.
    // (Also across a line continuation: bash 5.2 and zsh 5.9 refuse
    // `!\⏎()` as a syntax error, brush finds a command `!()`; a shell fuzz
    // finding.)
    let joined = cmd.replace("\\\n", "");
    if ["!(", "@(", "?(", "*(", "+("]
        .iter()
        .any(|g| joined.contains(g))
    {
        return Outcome::BrushRejects;
    }
    // An element assignment with brackets inside its subscript: bash reads
    // `a[[x]]=1 rm y` as an assignment and runs `rm y`, and refuses
    // `f[a[b][c]=1` as unbalanced; brush takes either word for a program.
    let nested_subscript = cmd.match_indices("]=").any(|(at, _)| {
        let word = cmd[..at].rsplit(char::is_whitespace).next().unwrap_or("");
        word.matches('[').count() > 1
    });
    if nested_subscript {
        return Outcome::BrushRejects;
    }
    // bash reads `${A<newline>1}` as one (bad) expansion, to its `}`;
    // brush ends the word at the newline and finds a command `1}`.
    // A `}` inside single quotes does not end it (`${x:'}'<newline>x}x`: bash
    // 5.2 ran `x`, brush found `x}x`; a shell fuzz finding).
    let newline_in_braces = cmd.match_indices("${").any(|(at, _)| {
        let mut quoted = false;
        for c in cmd[at..].chars() {
            match c {
                '\'' => quoted = !quoted,
                '}' if !quoted => return false,
                '\n' => return true,
                _ => {}
            }
        }
        false
    });
    if newline_in_braces {
        return Outcome::BrushRejects;
    }
    // bash removes a line continuation before it reads a `#`, so in
    // `$(a \<newline> #x)` the `#x` and the rest of its line are a comment
    // (checked against bash 5: in the finding, the `xargs` after it never
    // ran); brush reads the text after the `#` as words and commands.
    if comment_after_continuation(cmd) {
        return Outcome::BrushRejects;
    }
    // A `case` inside `$( … )`: brush ends the substitution at a pattern's
    // `)` or misplaces what follows it, where bash reads the whole `case`
    // (checked against bash 5: in the finding, `echo 'c d' $(… case … esac) -`
    // printed `c d -`; brush took `-` for a program).
    if case_in_substitution(cmd) {
        return Outcome::BrushRejects;
    }
    // A bad substitution (checked against bash 5.2: `x=1; ls "${x)+'$(rm -rf ~)'}"`
    // printed "bad substitution" and ran no `rm`); brush found an `rm`.
    if bad_substitution(cmd) {
        return Outcome::BrushRejects;
    }
    if glued_process_substitution(cmd) {
        return Outcome::BrushRejects;
    }
    if quote_in_subscript(cmd) {
        return Outcome::BrushRejects;
    }
    // An arithmetic command whose text is no arithmetic: bash 5.2 and zsh
    // 5.9 read `(([a; b]))` to its `))` and refuse it, running nothing;
    // brush reads two subshells and runs `b]` (a shell fuzz finding).
    if separator_in_arithmetic_command(cmd) {
        return Outcome::BrushRejects;
    }
    // bash and zsh join a line continuation after `$` first: `$\⏎{x|x}` is
    // the bad substitution `${x|x}` in both (nothing runs), where brush
    // reads a `$` and then runs `x` (a shell fuzz finding).
    if cmd.contains("$\\\n") {
        return Outcome::BrushRejects;
    }
    let Some(program) = parse(cmd) else {
        return Outcome::BrushRejects;
    };
    let mut found = Vec::new();
    walk_program(&program, &mut found);
    match split_command(cmd, cfg) {
        Err(e) => Outcome::SplitterRefuses(e.message),
        Ok(pieces) => {
            let (missing, cautious) = uncovered(&found, &pieces);
            Outcome::Compared {
                commands: found.len(),
                missing,
                cautious,
            }
        }
    }
}

/// Whether an arithmetic command `(( … ))` (not `$(( … ))`) holds a `;`,
/// `&`, `|` or newline before its `))`.
pub fn separator_in_arithmetic_command(cmd: &str) -> bool {
    cmd.match_indices("((").any(|(at, _)| {
        if cmd[..at].ends_with('$') {
            return false;
        }
        let rest = &cmd[at + 2..];
        let end = rest.find("))").unwrap_or(rest.len());
        rest[..end].contains([';', '&', '|', '\n'])
    })
}
