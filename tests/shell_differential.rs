//! The shell splitter against a real bash grammar (brush-parser).
//!
//! A seeded generator writes commands from bash's constructs; brush-parser
//! parses each, and every simple command it finds (inside compound commands,
//! function bodies, command and process substitutions too) must be covered
//! by a piece of the splitter, or the splitter must fail closed: an error,
//! or an opaque piece where the program name is computed.
//!
//! "Covered" means a command or constraint piece whose value starts with the
//! program name as brush unquotes it, each piece covering one simple command
//! at most (in order of appearance, so `a; a` needs two).
//!
//! The splitter refuses about 1% of what brush accepts. Those are commands
//! where a comment or a line continuation leaves a substitution or a
//! `bash -c` script unterminated: bash refuses them too (a `#` inside
//! `$( … )` starts a comment), while brush only balances the parentheses of a
//! substitution and never parses its body. `SHOW_ERRORS=1` lists them.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use brush_parser::ast;
use brush_parser::word::WordPiece;
use brush_parser::{Parser, ParserOptions, SourceInfo};
use toolgate::shell::{split_command, Kind, Piece, ShellConfig};
use toolgate::workload::Rng;

const PROGRAMS: &[&str] = &[
    "git", "ls", "rm", "echo", "cat", "grep", "/bin/rm", "./run", "r''m", "\"rm\"", "\\rm",
    "$'rm'", "npm", "make", "$CMD", "${CMD}", "[", "test", "true",
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

fn simple(rng: &mut Rng, depth: u32) -> String {
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

fn command(rng: &mut Rng, depth: u32) -> String {
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

fn list(rng: &mut Rng, depth: u32) -> String {
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

fn parse(src: &str) -> Option<ast::Program> {
    let mut p = Parser::new(
        std::io::BufReader::new(src.as_bytes()),
        &ParserOptions::default(),
        &SourceInfo::default(),
    );
    p.parse_program().ok()
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
    if let Ok(pieces) = brush_parser::word::parse(w, &ParserOptions::default()) {
        walk_pieces(&pieces, out);
    }
}

fn walk_pieces(pieces: &[brush_parser::word::WordPieceWithSource], out: &mut Vec<Found>) {
    for p in pieces {
        match &p.piece {
            WordPiece::CommandSubstitution(s) | WordPiece::BackquotedCommandSubstitution(s) => {
                if let Some(p) = parse(s) {
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
                // brush's `unquote_str` leaves ANSI-C quoting alone; the
                // generator's `$'…'` words hold no escape, so they read as
                // single quotes.
                let v = w.value.replace("$'", "'");
                let computed = v.contains(['$', '`', '*', '?', '[', '{']) || !v.is_ascii();
                out.push(Found {
                    program: brush_parser::unquote_str(&v),
                    computed,
                });
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

/// Whether the piece's value starts with `program` as a whole word (the
/// splitter writes an empty word as `''`; a program name may hold a space).
fn starts_with_program(p: &Piece, program: &str) -> bool {
    let program = if program.is_empty() { "''" } else { program };
    p.value().is_some_and(|v| {
        v.strip_prefix(program)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
    })
}

/// Which simple commands brush found that no piece covers.
fn uncovered(found: &[Found], pieces: &[Piece]) -> Vec<String> {
    let mut used = vec![false; pieces.len()];
    let mut missing = Vec::new();
    for f in found {
        let hit = pieces.iter().enumerate().position(|(i, p)| {
            !used[i]
                && matches!(p.kind, Kind::Command | Kind::Constraint)
                && (starts_with_program(p, &f.program) || (f.computed && p.value().is_none()))
        });
        match hit {
            Some(i) => used[i] = true,
            None => missing.push(f.program.clone()),
        }
    }
    missing
}

#[test]
fn every_simple_command_brush_finds_is_a_subject() {
    let cfg = ShellConfig::default();
    let mut rng = Rng::new(0x05ee_d0f5_be11_u64);
    let n = 20_000;
    let (mut parsed, mut errors, mut brush_rejects, mut commands) = (0, 0, 0, 0);
    let mut failures = Vec::new();
    for _ in 0..n {
        let depth = rng.below(3) as u32;
        let cmd = list(&mut rng, depth);
        let Some(program) = parse(&cmd) else {
            brush_rejects += 1;
            continue;
        };
        parsed += 1;
        let mut found = Vec::new();
        walk_program(&program, &mut found);
        commands += found.len();
        match split_command(&cmd, &cfg) {
            Err(e) => {
                errors += 1;
                if std::env::var("SHOW_ERRORS").is_ok() {
                    eprintln!("{cmd:?}: {}", e.message);
                }
            }
            Ok(pieces) => {
                let missing = uncovered(&found, &pieces);
                if !missing.is_empty() && failures.len() < 20 {
                    failures.push(format!("{cmd:?}: no subject for {missing:?}"));
                }
            }
        }
    }
    eprintln!(
        "{n} commands: {parsed} parsed by brush ({commands} simple commands), {brush_rejects} rejected by brush; the splitter failed closed with an error on {errors}"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(parsed > n / 2, "brush parsed only {parsed} of {n}");
    assert!(
        errors < parsed / 20,
        "the splitter refused {errors} of {parsed}"
    );
}
