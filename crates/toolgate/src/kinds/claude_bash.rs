//! `claude-bash`: Claude Code 2.1's Bash command patterns.

use crate::registry::{Lowering, MatcherKind, Pattern};

/// Claude Code 2.1's Bash patterns (`spec/claude-code.md` §3):
///
/// * a pattern without `*` matches the command exactly;
/// * `*` anywhere matches any run of characters, spaces included
///   (`git * main`, `* install`);
/// * a trailing ` *` that is the pattern's only wildcard is a word boundary
///   that also matches the bare prefix (`ls *` matches `ls` and `ls -la`,
///   not `lsof`); with other wildcards it is an ordinary `*`;
/// * a trailing `:*` is the legacy spelling of a trailing ` *`; anywhere
///   else the colon is literal;
/// * a pattern of stars alone matches every command.
///
/// ```
/// use toolgate::kinds::ClaudeBashKind;
/// use toolgate::MatcherKind;
/// let k = ClaudeBashKind;
/// assert!(k.matches("ls *", "ls") && k.matches("ls *", "ls -la") && !k.matches("ls *", "lsof"));
/// assert!(k.matches("ls*", "lsof"));
/// assert!(k.matches("git * main", "git push origin main"));
/// assert!(!k.matches("ssh * uptime *", "ssh host uptime"));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct ClaudeBashKind;

/// The pattern with the legacy `:*` read as a trailing ` *`.
fn canonical(spec: &str) -> String {
    match spec.strip_suffix(":*") {
        Some(p) => {
            let p = p.trim_end_matches(' ');
            if p.is_empty() {
                "*".to_string()
            } else {
                format!("{p} *")
            }
        }
        None => spec.to_string(),
    }
}

/// How a canonical pattern reads.
enum Shape<'s> {
    /// Stars alone: every command.
    Any,
    /// No star: this command exactly.
    Exact(&'s str),
    /// A trailing ` *`, the only star: the prefix alone or followed by a
    /// space.
    Word(&'s str),
    /// Stars anywhere.
    Glob(&'s str),
}

fn shape(s: &str) -> Shape<'_> {
    let stars = s.bytes().filter(|&b| b == b'*').count();
    if stars == 0 {
        return Shape::Exact(s);
    }
    if stars == s.len() {
        return Shape::Any;
    }
    match s.strip_suffix(" *") {
        Some(prefix) if stars == 1 => Shape::Word(prefix),
        _ => Shape::Glob(s),
    }
}

impl MatcherKind for ClaudeBashKind {
    fn name(&self) -> &str {
        "claude-bash"
    }

    fn lower(&self, spec: &str) -> Result<Lowering, crate::error::MatcherError> {
        let s = canonical(spec);
        Ok(Lowering::Patterns(match shape(&s) {
            Shape::Any => vec![Pattern::Any],
            Shape::Exact(e) => vec![Pattern::Exact(e.to_string())],
            Shape::Word(p) => vec![
                Pattern::Exact(p.to_string()),
                Pattern::Prefix(format!("{p} ")),
            ],
            Shape::Glob(g) => vec![Pattern::Glob(g.to_string())],
        }))
    }

    fn matches(&self, spec: &str, value: &str) -> bool {
        let s = canonical(spec);
        match shape(&s) {
            Shape::Any => true,
            Shape::Exact(e) => value == e,
            Shape::Word(p) => {
                value == p || value.strip_prefix(p).is_some_and(|r| r.starts_with(' '))
            }
            Shape::Glob(g) => crate::glob::matches(g, value),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(spec: &str, value: &str) -> bool {
        ClaudeBashKind.matches(spec, value)
    }

    #[test]
    fn the_documented_examples() {
        assert!(m("npm run build", "npm run build"));
        assert!(!m("npm run build", "npm run build --prod"));
        assert!(m("git * main", "git push origin main"));
        assert!(m("* install", "npm install"));
        assert!(!m("* install", "npm install x"));
        assert!(m("ls *", "ls") && m("ls *", "ls -la") && !m("ls *", "lsof"));
        assert!(m("ls*", "lsof"));
        assert!(m("ls:*", "ls") && m("ls:*", "ls -la") && !m("ls:*", "lsof"));
        assert!(m("git:* push", "git:x push") && !m("git:* push", "git x push"));
        assert!(!m("npm run test:*", "npm run test:unit"));
        assert!(m("npm run test:*", "npm run test -- --watch"));
        assert!(!m("ssh * uptime *", "ssh host uptime"));
        assert!(m("ssh * uptime *", "ssh host uptime -p"));
        assert!(m("*", "") && m("*", "anything at all") && m(":*", "x"));
    }

    #[test]
    fn lowering_agrees_with_matches() {
        let specs = [
            "ls",
            "ls *",
            "ls:*",
            "ls*",
            "* install",
            "git * main",
            "a*b*c",
            "*",
            "**",
            ":*",
            "ls :*",
            "x *",
        ];
        let values = [
            "",
            "ls",
            "ls ",
            "ls -la",
            "lsof",
            "npm install",
            "git push main",
            "abc",
            "a b c",
            "x",
            "x y",
            "ls :x",
        ];
        for s in specs {
            let Ok(Lowering::Patterns(ps)) = ClaudeBashKind.lower(s) else {
                panic!("{s} does not lower");
            };
            for v in values {
                let lowered = ps.iter().any(|p| match p {
                    Pattern::Any => true,
                    Pattern::Exact(e) => v == e,
                    Pattern::Prefix(p) => v.starts_with(p.as_str()),
                    Pattern::Glob(g) => crate::glob::matches(g, v),
                    _ => false,
                });
                assert_eq!(lowered, m(s, v), "{s:?} on {v:?}");
            }
        }
    }
}
