//! `path-reach`: whether a path rule could match a path a command names
//! only as a pattern.
//!
//! A shell command does not always say which file it reads: `cat ~/.ss?/id_rsa`
//! is a glob, `grep -r KEY ~` reads a whole tree, `cat $(echo .env)` is known
//! only when it runs. The shell splitter hands such a path over as a
//! **query**, a pattern in the syntax of [`PathKind`](super::PathKind)'s
//! specifiers (`*`, `?`, `[…]` within a segment, `**` for any number of
//! segments). This kind answers "could a file this rule covers be among
//! the files the query names?", so that a Read or Edit deny or ask rule
//! that could apply makes the command ask, and one that cannot (the query
//! `src/*.rs` against `Read(./.env)`) stays silent. The answer may be yes
//! where no such file exists (it is a question about patterns, not about
//! the file system), never no where one could.

use super::path::{clean, shown, tok_matches, tokens, Anchor, PathKind, PathPattern, Seg, Tok};
use crate::error::MatcherError;
use crate::registry::{CallContext, Lowering, MatcherKind};
use std::borrow::Cow;

/// The `path-reach` kind: specifiers are `path` specifiers, values are
/// queries.
///
/// A value is normalised to the query made absolute (against the call's
/// working directory, `~` against the home directory the kind was told),
/// then a NUL and the working directory, which anchors the rules written
/// relative to it. It never lowers into tables: its rules are the Read
/// and Edit deny and ask rules of a Claude Code policy, few by nature, and
/// each is asked in turn.
///
/// ```
/// use toolgate::kinds::PathReachKind;
/// use toolgate::{CallContext, MatcherKind};
/// let k = PathReachKind::with_home("/home/u");
/// let cx = CallContext { cwd: Some("/repo") };
/// let q = k.normalize("~/.ss?/id_rsa", &cx).unwrap();
/// assert!(k.matches("//home/u/.ssh/**", &q));
/// assert!(!k.matches("//home/u/.aws/**", &q));
/// let q = k.normalize("src/*.rs", &cx).unwrap();
/// assert!(!k.matches("//repo/.env", &q) && !k.matches(".env", &q));
/// assert!(k.matches("src/**", &q));
/// ```
#[derive(Clone, Debug, Default)]
pub struct PathReachKind {
    path: PathKind,
}

impl PathReachKind {
    /// The kind with no home directory: a query starting with `~` is an
    /// error.
    pub fn new() -> PathReachKind {
        PathReachKind::default()
    }

    /// The kind expanding a query's `~` to `home` (an absolute path).
    pub fn with_home(home: impl Into<String>) -> PathReachKind {
        PathReachKind {
            path: PathKind::with_home(home),
        }
    }
}

/// The query that names every path: what a command names with a value
/// known only when it runs.
pub const ANY_PATH: &str = "//**";

impl MatcherKind for PathReachKind {
    fn name(&self) -> &str {
        "path-reach"
    }

    fn lower(&self, spec: &str) -> Result<Lowering, MatcherError> {
        PathPattern::parse(spec)?;
        Ok(Lowering::Callback)
    }

    fn matches(&self, spec: &str, value: &str) -> bool {
        let Ok(p) = PathPattern::parse(spec) else {
            return false;
        };
        let (query, cwd) = value.split_once('\0').unwrap_or((value, ""));
        let q = segments(query);
        let mut segs: Vec<Seg> = Vec::new();
        if p.anchor == Anchor::Cwd {
            if cwd.is_empty() {
                // A rule relative to a working directory the call does not
                // name: it could be anywhere.
                segs.push(Seg::Any);
            } else {
                segs.extend(literal_segments(cwd));
            }
            if p.any_depth {
                segs.push(Seg::Any);
            }
        }
        segs.extend(p.segs.iter().cloned());
        reaches(&segs, &q)
    }

    fn normalize<'v>(
        &self,
        value: &'v str,
        context: &CallContext<'_>,
    ) -> Result<Cow<'v, str>, MatcherError> {
        if value == ANY_PATH {
            return Ok(Cow::Borrowed(value));
        }
        // `..` after `**` climbs out of every directory the `**` could be:
        // the query names anything.
        let mut after_any = false;
        for s in value.split('/') {
            if s == ".." && after_any {
                return Ok(Cow::Borrowed(ANY_PATH));
            }
            after_any |= s == "**";
        }
        let abs = if let Some(rest) = value.strip_prefix("//") {
            clean(&format!("/{rest}"))
        } else {
            self.path.absolute(value, context.cwd)?
        };
        let cwd = match context.cwd {
            Some(c) if c.starts_with('/') => clean(c),
            Some(c) => {
                return Err(MatcherError::new(format!(
                    "the working directory `{}` is not an absolute path",
                    shown(c)
                )))
            }
            None => String::new(),
        };
        Ok(Cow::Owned(format!("{abs}\0{cwd}")))
    }
}

/// The segments of an absolute query.
fn segments(query: &str) -> Vec<Seg> {
    query
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| match s {
            "**" => Seg::Any,
            s => Seg::Glob(tokens(s)),
        })
        .collect()
}

/// The segments of an absolute directory, each literal.
fn literal_segments(dir: &str) -> impl Iterator<Item = Seg> + '_ {
    dir.split('/')
        .filter(|s| !s.is_empty())
        .map(|s| Seg::Glob(s.chars().map(Tok::Lit).collect()))
}

/// Whether some path the query `q` names is covered by the rule whose
/// absolute segments are `p`: a rule covers the paths it matches and
/// everything below them, so it is enough that `p` matches the first
/// segments of a path of `q`.
fn reaches(p: &[Seg], q: &[Seg]) -> bool {
    if p.is_empty() {
        return true;
    }
    // A state (i, j): p[..i] and q[..j] can match the same segments.
    explore(p.len(), q.len(), |(i, j), stack| {
        if i == p.len() {
            return true;
        }
        let (Some(ps), qs) = (p.get(i), q.get(j)) else {
            return false;
        };
        match (ps, qs) {
            (Seg::Any, None) => stack.push((i + 1, j)),
            (Seg::Glob(_), None) => {}
            (Seg::Any, Some(Seg::Any)) => {
                stack.push((i + 1, j));
                stack.push((i, j + 1));
            }
            (Seg::Any, Some(Seg::Glob(_))) => {
                stack.push((i + 1, j));
                stack.push((i, j + 1));
            }
            (Seg::Glob(_), Some(Seg::Any)) => {
                stack.push((i, j + 1));
                stack.push((i + 1, j));
            }
            (Seg::Glob(a), Some(Seg::Glob(b))) => {
                if meet(a, b) {
                    stack.push((i + 1, j + 1));
                }
            }
        }
        false
    })
}

/// Whether some segment name matches both token lists. Two classes are
/// taken to overlap: the answer may be yes where none does, never no where
/// one does.
fn meet(a: &[Tok], b: &[Tok]) -> bool {
    explore(a.len(), b.len(), |(i, j), stack| {
        let (x, y) = (a.get(i), b.get(j));
        match (x, y) {
            (None, None) => return true,
            (Some(Tok::Star), _) | (_, Some(Tok::Star)) => {
                // A star matches nothing, or takes the character the other
                // side needs next.
                if x == Some(&Tok::Star) {
                    stack.push((i + 1, j));
                    if y.is_some() {
                        stack.push((i, j + 1));
                    }
                }
                if y == Some(&Tok::Star) {
                    stack.push((i, j + 1));
                    if x.is_some() {
                        stack.push((i + 1, j));
                    }
                }
            }
            (Some(s), Some(t)) => {
                let both = match (s, t) {
                    (Tok::Lit(c), t) | (t, Tok::Lit(c)) => tok_matches(t, *c),
                    _ => true,
                };
                if both {
                    stack.push((i + 1, j + 1));
                }
            }
            _ => {}
        }
        false
    })
}

/// A search over the pairs (i, j), i ≤ `rows`, j ≤ `cols`, from (0, 0):
/// `step` is given each pair once, pushes the pairs it leads to, and says
/// whether the pair is a goal. Whether a goal is reached.
fn explore(
    rows: usize,
    cols: usize,
    mut step: impl FnMut((usize, usize), &mut Vec<(usize, usize)>) -> bool,
) -> bool {
    let w = cols + 1;
    let mut seen = vec![false; (rows + 1) * w];
    let mut stack = vec![(0usize, 0usize)];
    while let Some((i, j)) = stack.pop() {
        if i > rows || j > cols {
            continue;
        }
        let Some(slot) = seen.get_mut(i * w + j) else {
            continue;
        };
        if *slot {
            continue;
        }
        *slot = true;
        if step((i, j), &mut stack) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reach(spec: &str, query: &str, cwd: &str) -> bool {
        let k = PathReachKind::with_home("/home/u");
        let v = k.normalize(query, &CallContext { cwd: Some(cwd) }).unwrap();
        k.matches(spec, &v)
    }

    #[test]
    fn globs_against_rules() {
        let c = "/repo";
        assert!(reach("//home/u/.ssh/**", "~/.ss?/id_rsa", c));
        assert!(reach("//home/u/.ssh/**", "~/.ssh", c));
        assert!(reach("//home/u/.ssh/**", "~/**", c));
        assert!(reach("//home/u/.ssh/**", "/home/*/.ssh/*", c));
        assert!(!reach("//home/u/.ssh/**", "~/.aws/*", c));
        assert!(!reach("//home/u/.ssh/**", "~/*.txt", c));
        // A bare name is at any depth under the working directory.
        assert!(reach(".env", "src/**", c));
        assert!(reach(".env", "*", c));
        assert!(!reach(".env", "src/*.rs", c));
        assert!(reach(".env", "/**", c));
        assert!(!reach(".env", "/tmp/**", c));
        // `./.env` is at any depth too; a path with a `/` is anchored.
        assert!(reach("./.env", "src/**", c));
        assert!(!reach("//repo/.env", "src/**", c));
        assert!(!reach("./x/.env", "src/**", c));
        assert!(reach("./x/.env", "*/.e*", c));
        assert!(reach("//repo/.env", "src/../.e[nm]v", c));
        assert!(reach("./.git/**", "*/hooks/*", c));
        assert!(reach("src/**", "s*/x", c));
        assert!(!reach("src/**", "lib/*", c));
        // An ancestor of the working directory holds it.
        assert!(reach("./.env", "/**", c));
        assert!(reach(ANY_PATH, ANY_PATH, c));
        assert!(reach("//etc/shadow", ANY_PATH, c));
    }

    #[test]
    fn segments_meet() {
        let m = |a: &str, b: &str| meet(&tokens(a), &tokens(b));
        assert!(m("*.rs", "main.*"));
        assert!(m("a*b", "*"));
        assert!(m("?", "x"));
        assert!(!m("*.rs", "*.env"));
        assert!(!m("a?", "abc"));
        assert!(m("[a-c]x", "bx"));
        assert!(!m("[a-c]x", "dx"));
        assert!(m(".ss?", ".ssh"));
        assert!(!m(".ss?", ".ssh2"));
    }

    #[test]
    fn climbing_out_of_any_names_everything() {
        let k = PathReachKind::with_home("/home/u");
        let cx = CallContext { cwd: Some("/repo") };
        assert_eq!(k.normalize("src/**/../x", &cx).unwrap(), ANY_PATH);
        assert!(reach("//etc/passwd", "/tmp/**/../../etc/x", "/repo"));
    }

    #[test]
    fn unreadable_values_are_errors() {
        let k = PathReachKind::new();
        assert!(k
            .normalize("~/x", &CallContext { cwd: Some("/r") })
            .is_err());
        assert!(k.normalize("x/*", &CallContext { cwd: None }).is_err());
        assert!(PathReachKind::new().lower("~/x").is_err());
    }
}
