//! The constructs zsh reads differently from bash, and what the reader
//! does with each.
//!
//! A line is read once, with bash's grammar (`parse`), and the reading must
//! be safe whichever of the two shells runs it: Claude Code's Bash tool
//! runs the line in the user's shell, which is zsh by default on macOS.
//! Where the two shells would run different programs or write different
//! files, the reader either takes the union (every program either would
//! run is a subject: a subscript after `$name` is read for substitutions
//! as zsh reads it) or refuses the line with the error made here. Nothing
//! refused here is something bash would run usefully: bash writes a file
//! named `!`, reports a bad substitution, or runs a program named `-` or
//! `repeat`, which does not exist. `spec/shell.md` §7.1 lists them.

use super::parse::snippet;
use super::{ErrorKind, ShellError};

fn refuse(what: &str, zsh: &str, fix: &str) -> ShellError {
    ShellError::new(
        ErrorKind::Syntax,
        format!(
            "`{}` {zsh}, where bash reads it otherwise; {fix}",
            snippet(what)
        ),
    )
}

/// `>!`, `>>!`, `&>!`, `>&!`: zsh's clobbering redirects write the next
/// word, bash writes a file named `!` and passes the next word on.
pub(super) fn bang_target(op: &str) -> ShellError {
    refuse(
        &format!("{op}!"),
        "is a clobbering redirect in zsh, which writes the word after it",
        "write `>|` (or quote the `!`)",
    )
}

/// `&!`: zsh runs the list in the background and disowns it, so a word
/// right after it is a command (`ls &!rm x` runs `rm x`); bash reads `!rm`.
pub(super) fn amp_bang() -> ShellError {
    refuse(
        "&!",
        "is one operator in zsh (run in the background, disowned)",
        "write `&` and a blank before `!`",
    )
}

/// Whether `c`, the byte after `${` (and after a `#` or `!` there), may
/// start a parameter bash knows. zsh reads more (`${(e)…}` evaluates the
/// value, `${~x}` globs it, `${${x}}` nests); bash refuses them all as a
/// bad substitution. A `{` is let through: both shells refuse `${{…}` when
/// they expand it (zsh 5.9: "bad substitution"), and where zsh's reader
/// ends it, nesting the braces, is never before bash's first `}`, so zsh
/// only takes in text bash reads as code, whose commands are subjects.
pub(super) fn is_bash_param_start(c: Option<u8>) -> bool {
    match c {
        Some(c) => c.is_ascii_alphanumeric() || c == b'_' || b"@*#?-$!}{".contains(&c),
        None => true,
    }
}

/// Whether `c`, after `${$`, makes the `$` the start of a nested
/// expansion (zsh's `${${x}}`, `${$(cmd)}`) rather than the parameter `$$`.
pub(super) fn is_nested_after_dollar(c: Option<u8>) -> bool {
    c.is_some_and(|c| c.is_ascii_alphanumeric() || b"_{($'\"`".contains(&c))
}

/// A `${` whose head bash does not know.
pub(super) fn braced_head(text: &str) -> ShellError {
    ShellError::new(
        ErrorKind::Syntax,
        format!(
            "`{}` is not a parameter expansion bash reads (it reports a bad substitution), and zsh may read one whose flags run code (`${{(e)…}}`); write the expansion bash's way",
            snippet(text)
        ),
    )
}

/// Whether `c`, the byte after `$`, is one of zsh's prefixes of a bare
/// parameter (`$~x` globs the value, which runs glob qualifiers, `$=x`
/// splits it, `$^x` distributes it, `$+x` tests it), given the byte after
/// it, `next`. bash reads a literal `$` there.
pub(super) fn is_param_prefix(c: u8, next: Option<u8>) -> bool {
    matches!(c, b'~' | b'=' | b'^' | b'+')
        && next.is_some_and(|n| n.is_ascii_alphabetic() || b"_{~=^+#@*".contains(&n))
}

/// A `$~x`, `$=x`, `$^x` or `$+x`.
pub(super) fn param_prefix(text: &str) -> ShellError {
    refuse(
        text,
        "is a zsh expansion of the parameter (`$~x` globs its value, which can run code)",
        "write `${x}`",
    )
}

/// A `}` standing alone as an argument: zsh ends the brace group there
/// (or refuses the line), bash passes it to the program.
pub(super) fn lone_rbrace() -> ShellError {
    refuse(
        "}",
        "ends a brace group in zsh even as an argument",
        "put `;` before it to end the group, or quote it to pass it on",
    )
}

/// Programs that are zsh keywords or precommand modifiers and, in bash,
/// programs that do not exist: `repeat N cmd` runs `cmd` N times, `- cmd`
/// runs `cmd`.
pub(super) fn is_keyword_program(v: &str) -> bool {
    matches!(v, "repeat" | "-")
}

/// A `repeat` or `-` where a program stands.
pub(super) fn keyword_program(v: &str) -> ShellError {
    refuse(
        v,
        "runs the command after it in zsh (`repeat N cmd` loops, `- cmd` runs cmd)",
        "write the command itself",
    )
}

#[cfg(test)]
mod tests {
    use crate::{split_command, ErrorKind, Kind, ShellConfig};

    /// The pieces as `kind:value`, `kind!text` for an opaque piece.
    fn show(cmd: &str) -> Vec<String> {
        let ps = split_command(cmd, &ShellConfig::default())
            .unwrap_or_else(|e| panic!("{cmd:?}: refused: {}", e.message));
        ps.iter()
            .map(|p| {
                let k = match p.kind {
                    Kind::Command => "cmd",
                    Kind::Constraint => "con",
                    Kind::Write => "w",
                    Kind::Read => "r",
                    _ => "op",
                };
                match p.value() {
                    Some(v) => format!("{k}:{v}"),
                    None => format!("{k}!{}", p.text),
                }
            })
            .collect()
    }

    #[track_caller]
    fn refused(cmd: &str, says: &str) {
        match split_command(cmd, &ShellConfig::default()) {
            Err(e) => {
                assert_eq!(e.kind, ErrorKind::Syntax, "{cmd:?}");
                assert!(e.message.contains(says), "{cmd:?}: {}", e.message);
            }
            Ok(p) => panic!("{cmd:?}: split into {p:?}, want it refused"),
        }
    }

    #[test]
    fn clobbering_redirects_are_refused() {
        refused(
            "echo 'rm -rf ~' >! .git/hooks/pre-commit",
            "`>!` is a clobbering redirect in zsh",
        );
        for op in [">>!", "&>!", ">&!", "&>>!", "2>!", "> !", ">|!"] {
            refused(&format!("echo x {op}f"), "clobbering redirect");
        }
        // A quoted `!` is a file named `!` in both shells, and an input
        // redirect or a here-document delimiter has no clobbering form.
        assert_eq!(show("echo x > '!'"), ["cmd:echo x", "w:!"]);
        assert_eq!(show("cat < !x"), ["cmd:cat", "r:!x"]);
        assert_eq!(show("cat <<!\nhi\n!"), ["cmd:cat"]);
        assert_eq!(show("ls >| f"), ["cmd:ls", "w:f"]);
    }

    #[test]
    fn zsh_parameter_expansions_are_refused() {
        refused(
            "echo ${(e):-'$(rm -rf ~)'}",
            "`${(e):-'$(rm -rf ~)'}` is not a parameter expansion bash reads",
        );
        for c in [
            "echo ${~x}",
            "echo ${=x}",
            "echo ${^x}",
            "echo ${+x}",
            "echo ${${x}}",
            "echo ${$(rm a)}",
            "echo \"${(P)x}\"",
            "echo ${#(e)x}",
            "cat <<E\n${(e)x}\nE",
        ] {
            refused(c, "is not a parameter expansion bash reads");
        }
        for c in [
            "echo $~x",
            "echo $=x",
            "echo \"$^x\"",
            "echo $+x",
            "echo $~{x}",
        ] {
            refused(c, "is a zsh expansion of the parameter");
        }
        // `${{` is read as bash reads it, to its first `}`: zsh nests the
        // braces, so it reads no less of the line as the expansion.
        assert_eq!(show("x${{}\nrm -rf /"), ["cmd!x${{}", "cmd:rm -rf /"]);
        // bash's own forms read as before.
        assert_eq!(
            show("echo ${#x} ${!x} ${#} ${x:-y} $# $- $= $~"),
            ["cmd!${!x}", "cmd:echo ${#x} ${!x} ${#} ${x:-y} $# $- $= $~"]
        );
    }

    #[test]
    fn a_bare_subscript_is_read_as_zsh_reads_it() {
        // zsh evaluates `$a[…]` as a subscript, where single quotes do
        // not quote.
        assert_eq!(
            show("ls $a['$(rm a)']"),
            ["cmd:rm a", "cmd:ls $a['$(rm a)']"]
        );
        assert_eq!(
            show("ls $#a['$(rm a)'] $@['$(rm b)']"),
            [
                "cmd:rm a",
                "cmd:rm b",
                "cmd:ls $#a['$(rm a)'] $@['$(rm b)']"
            ]
        );
        assert_eq!(
            show("ls $a[b[1]'$(rm a)']"),
            ["cmd:rm a", "cmd:ls $a[b[1]'$(rm a)']"]
        );
        // The subscript ends at a blank, as zsh's word does; what follows
        // is an ordinary word.
        assert_eq!(show("ls $a[ '$(rm a)' ]"), ["cmd:ls $a[ $(rm a) ]"]);
        // Only the first bracket after the name is a subscript.
        assert_eq!(show("ls ${a}['$(rm a)']"), ["cmd:ls ${a}[$(rm a)]"]);
        // Inside double quotes zsh reads the subscript through the closing
        // quote (zsh 5.9 runs `rm x`), while bash's word goes on from it:
        // `"$*["&" "` runs a program named ` ` in both shells (found by the
        // shell fuzz target).
        assert!(show(r#"echo "$a["'$(rm x)'"]""#).contains(&"cmd:rm x".to_string()));
        assert_eq!(show(r#""$*["&" ""#), ["cmd!$*[", "cmd: "]);
    }

    #[test]
    fn a_replacement_is_expanded_inside_double_quotes() {
        assert_eq!(
            show(r#"ls "${x/a/'$(rm a)'}""#),
            ["cmd:rm a", "cmd:ls ${x/a/'$(rm a)'}"]
        );
        assert_eq!(
            show("cat <<E\n${x//a/'$(rm a)'}\nE"),
            ["cmd:cat", "cmd:rm a"]
        );
        // The pattern keeps its quotes in both shells, and so does an
        // unquoted replacement.
        assert_eq!(
            show(r#"ls "${x/'$(rm a)'/b}""#),
            ["cmd:ls ${x/'$(rm a)'/b}"]
        );
        assert_eq!(show("ls ${x/a/'$(rm a)'}"), ["cmd:ls ${x/a/'$(rm a)'}"]);
    }

    #[test]
    fn equals_expansion_makes_a_word_computed() {
        assert_eq!(show("=rm -rf x"), ["cmd!=rm -rf x"]);
        assert_eq!(show("echo x > =git"), ["cmd:echo x", "w!> =git"]);
        assert_eq!(show("nice =rm x"), ["con:nice =rm x", "cmd!=rm x"]);
        // Not at the start of the word, or quoted: text in both shells.
        assert_eq!(show("ls a==b '=rm' \\=rm"), ["cmd:ls a==b =rm =rm"]);
        assert_eq!(show("[ a == b ]"), ["cmd:[ a == b ]"]);
        // `=(…)` is zsh's process substitution; bash refuses the `(`.
        assert!(split_command("cat =(rm a)", &ShellConfig::default()).is_err());
    }

    #[test]
    fn zsh_keywords_and_operators_are_refused() {
        refused("repeat 3 rm x", "`repeat` runs the command after it in zsh");
        refused("true; - rm x", "`-` runs the command after it in zsh");
        refused("FOO=1 repeat 3 rm x", "`repeat` runs");
        refused("ls &!rm x", "`&!` is one operator in zsh");
        refused("ls &! rm x", "`&!` is one operator in zsh");
        refused(
            "{ git status }; rm -rf ~; }",
            "`}` ends a brace group in zsh",
        );
        refused("echo }", "`}` ends a brace group");
        // As arguments, or quoted, they are words in both shells.
        assert_eq!(
            show("echo repeat - '}' \\} {} x}"),
            ["cmd:echo repeat - } } {} x}"]
        );
        assert_eq!(show("{ ls; }"), ["cmd:ls"]);
        assert_eq!(show("ls & ! rm x"), ["cmd:ls", "cmd:rm x"]);
    }

    #[test]
    fn zsh_forms_bash_refuses_stay_refused() {
        // Glob qualifiers, short loops, `always`, `foreach`, anonymous
        // functions: bash reads a syntax error, and so does the splitter.
        for c in [
            "ls *(e:'rm a':)",
            "ls *(+rm)",
            "ls f(:e:'rm a':)",
            "for x in *(e:'rm a':); do ls; done",
            "a=(*(e:'rm a':))",
            "for x (a b) rm $x",
            "for x in a b; rm $x",
            "if [[ -n x ]] rm x",
            "{ ls } always { rm x }",
            "foreach x (a b) rm $x; end",
            "() { rm x }",
            "function { rm x }",
            "ls >>| f",
            "ls &| rm x",
        ] {
            assert!(
                split_command(c, &ShellConfig::default()).is_err(),
                "{c:?} was not refused"
            );
        }
    }
}
