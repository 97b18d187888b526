//! `path`: gitignore-style path patterns with Claude Code's anchors.

use crate::error::MatcherError;
use crate::registry::{CallContext, Lowering, MatcherKind, Pattern};
use std::borrow::Cow;

/// Claude Code's Read and Edit path patterns (`spec/claude-code.md` §4).
///
/// A specifier is a gitignore-style pattern under an anchor:
///
/// | specifier | anchor |
/// | --- | --- |
/// | `//path` | the file-system root |
/// | `path`, `./path` | the call's working directory |
/// | `~/path`, `/path` | refused: they depend on the home directory or on the settings file, so the Claude Code front end rewrites them to `//` before they reach a matcher |
///
/// `*` and `?` stay within a segment, `[…]` is a class, `**` as a whole
/// segment crosses segments, `\` escapes the next character. A pattern
/// with no `/` but a trailing one matches at any depth under its anchor
/// (`.env` is `**/.env`); any other pattern is anchored. A pattern matches
/// a path when it matches the path or one of its parent directories, so
/// `secrets` and `secrets/**` both cover everything inside `secrets`.
///
/// The call's path is canonicalised first, lexically: made absolute
/// against the call's working directory, `~` expanded when the kind knows
/// the home directory, `.`, `..`, repeated and trailing slashes removed.
/// A relative path with no working directory, `~` with no home, `~user`
/// and a NUL byte are errors, which deny the call.
///
/// ```
/// use toolgate::kinds::PathKind;
/// use toolgate::{CallContext, MatcherKind};
/// let k = PathKind::new();
/// let cx = CallContext { cwd: Some("/repo") };
/// let v = k.normalize("./src/../.env", &cx).unwrap();
/// assert!(k.matches(".env", &v));
/// assert!(k.matches("//repo/.env", &v));
/// assert!(!k.matches("src/**", &v));
/// ```
#[derive(Clone, Debug, Default)]
pub struct PathKind {
    home: Option<String>,
}

impl PathKind {
    /// The kind with no home directory: a call's `~` is an error.
    pub fn new() -> PathKind {
        PathKind::default()
    }

    /// The kind expanding a call's `~` to `home` (an absolute path).
    pub fn with_home(home: impl Into<String>) -> PathKind {
        PathKind {
            home: Some(home.into()),
        }
    }
}

/// The canonical form `normalize` gives a path: the absolute path and,
/// when it lies in the call's working directory, the rest of it after that
/// directory (empty for the directory itself, otherwise starting with
/// `/`). It is written as the absolute path, then a NUL and the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathValue<'v> {
    /// The absolute, lexically clean path.
    pub abs: &'v str,
    /// The path relative to the working directory, when it is inside it.
    pub rel: Option<&'v str>,
}

impl<'v> PathValue<'v> {
    /// Reads a canonical value.
    pub fn parse(value: &'v str) -> PathValue<'v> {
        match value.split_once('\0') {
            Some((abs, rel)) => PathValue {
                abs,
                rel: Some(rel),
            },
            None => PathValue {
                abs: value,
                rel: None,
            },
        }
    }
}

/// `path` with `.`, `..` and empty segments removed; `path` starts with
/// `/`. `..` at the root stays at the root, as the file system reads it.
pub(crate) fn clean(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    let mut out = String::with_capacity(path.len());
    for p in &parts {
        out.push('/');
        out.push_str(p);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

pub(super) fn shown(value: &str) -> String {
    let mut s: String = value.chars().take(200).collect();
    if s.len() < value.len() {
        s.push('…');
    }
    s
}

impl PathKind {
    pub(super) fn absolute(&self, value: &str, cwd: Option<&str>) -> Result<String, String> {
        if value.contains('\0') {
            return Err(format!("the path `{}` holds a NUL byte", shown(value)));
        }
        // The canonical form separates the path from the working directory
        // with a NUL, so one inside the directory would move that boundary
        // (a claude_kinds fuzz finding: the tables and the kind disagreed).
        if let Some(c) = cwd.filter(|c| c.contains('\0')) {
            return Err(format!(
                "the working directory `{}` holds a NUL byte",
                shown(c)
            ));
        }
        if value.is_empty() {
            return Err("the path is empty".to_string());
        }
        if let Some(rest) = value.strip_prefix('~') {
            if !(rest.is_empty() || rest.starts_with('/')) {
                return Err(format!(
                    "`{}` names another user's home directory, which toolgate cannot resolve; write the path absolute",
                    shown(value)
                ));
            }
            let home = match self.home.as_deref() {
                Some(h) if h.starts_with('/') => h,
                _ => {
                    return Err(format!(
                        "`{}` is in the home directory, which toolgate was not told; write the path absolute",
                        shown(value)
                    ))
                }
            };
            return Ok(clean(&format!("{home}/{rest}")));
        }
        if value.starts_with('/') {
            return Ok(clean(value));
        }
        match cwd {
            Some(c) if c.starts_with('/') => Ok(clean(&format!("{c}/{value}"))),
            Some(c) => Err(format!(
                "the working directory `{}` is not an absolute path",
                shown(c)
            )),
            None => Err(format!(
                "`{}` is relative and the call names no working directory; send the call's `cwd`",
                shown(value)
            )),
        }
    }
}

impl MatcherKind for PathKind {
    fn name(&self) -> &str {
        "path"
    }

    fn lower(&self, spec: &str) -> Result<Lowering, crate::error::MatcherError> {
        Ok(PathPattern::parse(spec)?.lowering())
    }

    fn matches(&self, spec: &str, value: &str) -> bool {
        PathPattern::parse(spec).is_ok_and(|p| p.matches(PathValue::parse(value)))
    }

    fn normalize<'v>(
        &self,
        value: &'v str,
        context: &CallContext<'_>,
    ) -> Result<Cow<'v, str>, crate::error::MatcherError> {
        let abs = self.absolute(value, context.cwd)?;
        let cwd = match context.cwd {
            Some(c) if c.starts_with('/') => Some(clean(c)),
            Some(c) => {
                return Err(MatcherError::new(format!(
                    "the working directory `{}` is not an absolute path",
                    shown(c)
                )))
            }
            None => None,
        };
        let rel = cwd.and_then(|c| {
            if abs == c {
                Some(String::new())
            } else if c == "/" {
                Some(abs.clone())
            } else {
                abs.strip_prefix(c.as_str())
                    .filter(|r| r.starts_with('/'))
                    .map(str::to_string)
            }
        });
        let out = match rel {
            Some(r) => format!("{abs}\0{r}"),
            None => abs,
        };
        Ok(if out == value {
            Cow::Borrowed(value)
        } else {
            Cow::Owned(out)
        })
    }
}

/// Where a pattern is anchored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Anchor {
    /// `//`: the root.
    Root,
    /// Bare or `./`: the call's working directory.
    Cwd,
}

/// One character test within a segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Tok {
    Lit(char),
    /// `*`: any run within the segment.
    Star,
    /// `?`: one character.
    One,
    /// `[…]`: ranges, negated or not.
    Class(bool, Vec<(char, char)>),
}

/// One segment of a pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Seg {
    /// `**`: zero or more whole segments.
    Any,
    Glob(Vec<Tok>),
}

/// A parsed specifier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct PathPattern {
    pub(super) anchor: Anchor,
    /// A pattern with no `/` but a trailing one: a segment at any depth.
    pub(super) any_depth: bool,
    /// The segments; empty covers everything under the anchor.
    pub(super) segs: Vec<Seg>,
}

impl PathPattern {
    pub(super) fn parse(spec: &str) -> Result<PathPattern, String> {
        if spec.contains('\0') {
            return Err("a path pattern cannot hold a NUL byte".into());
        }
        let (anchor, body) = if let Some(rest) = spec.strip_prefix("//") {
            (Anchor::Root, rest.trim_start_matches('/'))
        } else if spec == "~" || spec.starts_with("~/") {
            return Err(format!(
                "`{spec}` is relative to the home directory, which a matcher is not told; write the absolute path after `//` (the Claude Code front end does this when it reads settings)"
            ));
        } else if spec.starts_with('/') {
            return Err(format!(
                "in Claude Code settings `{spec}` is relative to the settings file's project root; write `//` and the absolute path, or `./` for the working directory"
            ));
        } else {
            let mut b = spec;
            while let Some(rest) = b.strip_prefix("./") {
                b = rest.trim_start_matches('/');
            }
            (Anchor::Cwd, b)
        };
        let trimmed = body.trim_end_matches('/');
        let any_depth = anchor == Anchor::Cwd && !trimmed.contains('/');
        let mut segs: Vec<Seg> = Vec::new();
        for raw in trimmed.split('/') {
            match raw {
                "" | "." => {}
                ".." => match segs.pop() {
                    Some(Seg::Glob(_)) => {}
                    _ => {
                        return Err(format!(
                            "`{spec}` climbs above its anchor with `..`; write the path it means"
                        ))
                    }
                },
                "**" => segs.push(Seg::Any),
                s => segs.push(Seg::Glob(tokens(s))),
            }
        }
        while matches!(segs.last(), Some(Seg::Any)) {
            segs.pop();
        }
        if any_depth && segs.len() > 1 {
            // `..` removed every segment but one, or none: not reachable
            // for a body without `/`, kept for safety.
            return Err(format!("`{spec}` cannot be read"));
        }
        Ok(PathPattern {
            anchor,
            any_depth: any_depth && !segs.is_empty(),
            segs,
        })
    }

    /// The patterns over the canonical value (see [`PathValue`]), when the
    /// pattern's segments are literal; [`Lowering::Callback`] otherwise.
    ///
    /// The value holds one NUL at most (paths hold none), so a piece
    /// starting with NUL is found in the part after the working directory,
    /// and a literal piece found there is also in the absolute path before
    /// it. Patterns with wildcards inside segments, or with `**` anywhere
    /// but first, take the callback: a set of regular expressions with
    /// "and anything below" tails would make a DFA tracking every subset of
    /// matched patterns.
    fn lowering(&self) -> Lowering {
        let mut lead_any = false;
        let mut lits: Vec<String> = Vec::new();
        for (i, s) in self.segs.iter().enumerate() {
            match s {
                Seg::Any if i == 0 => lead_any = true,
                Seg::Any => return Lowering::Callback,
                Seg::Glob(toks) => {
                    let mut lit = String::new();
                    for t in toks {
                        match t {
                            Tok::Lit(c) if *c != '*' => lit.push(*c),
                            _ => return Lowering::Callback,
                        }
                    }
                    lits.push(lit);
                }
            }
        }
        let mut path = String::new();
        for l in &lits {
            path.push('/');
            path.push_str(l);
        }
        let pats = match (self.anchor, lead_any || self.any_depth) {
            (Anchor::Root, _) if lits.is_empty() => vec![Pattern::Any],
            (Anchor::Root, false) => vec![
                Pattern::Exact(path.clone()),
                Pattern::Prefix(format!("{path}/")),
                Pattern::Prefix(format!("{path}\0")),
            ],
            (Anchor::Root, true) => vec![
                Pattern::Suffix(path.clone()),
                Pattern::Glob(format!("*{path}/*")),
                Pattern::Glob(format!("*{path}\0*")),
            ],
            (Anchor::Cwd, _) if lits.is_empty() => vec![Pattern::Glob("*\0*".into())],
            (Anchor::Cwd, false) => vec![
                Pattern::Suffix(format!("\0{path}")),
                Pattern::Glob(format!("*\0{path}/*")),
            ],
            (Anchor::Cwd, true) => vec![
                Pattern::Glob(format!("*\0*{path}")),
                Pattern::Glob(format!("*\0*{path}/*")),
            ],
        };
        Lowering::Patterns(pats)
    }

    fn matches(&self, v: PathValue<'_>) -> bool {
        let target = match self.anchor {
            Anchor::Root => v.abs,
            Anchor::Cwd => match v.rel {
                Some(r) => r,
                None => return false,
            },
        };
        let parts: Vec<&str> = target.split('/').filter(|p| !p.is_empty()).collect();
        if self.segs.is_empty() {
            return true;
        }
        if self.any_depth {
            return match self.segs.first() {
                Some(Seg::Glob(toks)) => parts.iter().any(|p| seg_matches(toks, p)),
                _ => true,
            };
        }
        // dp[j]: the segments so far match parts[..j] exactly.
        let n = parts.len();
        let mut dp = vec![false; n + 1];
        if let Some(first) = dp.first_mut() {
            *first = true;
        }
        for s in &self.segs {
            let mut next = vec![false; n + 1];
            match s {
                Seg::Any => {
                    let mut seen = false;
                    for (slot, &d) in next.iter_mut().zip(&dp) {
                        seen |= d;
                        *slot = seen;
                    }
                }
                Seg::Glob(toks) => {
                    for (j, part) in parts.iter().enumerate() {
                        if dp.get(j).copied().unwrap_or(false) && seg_matches(toks, part) {
                            if let Some(slot) = next.get_mut(j + 1) {
                                *slot = true;
                            }
                        }
                    }
                }
            }
            dp = next;
        }
        // A match of the path or of one of its parent directories.
        dp.iter().skip(1).any(|&d| d)
    }
}

pub(super) fn tokens(seg: &str) -> Vec<Tok> {
    let chars: Vec<char> = seg.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        i += 1;
        match c {
            '*' => {
                if out.last() != Some(&Tok::Star) {
                    out.push(Tok::Star);
                }
            }
            '?' => out.push(Tok::One),
            '\\' => match chars.get(i) {
                Some(&n) => {
                    out.push(Tok::Lit(n));
                    i += 1;
                }
                None => out.push(Tok::Lit('\\')),
            },
            '[' => match class(&chars, i) {
                Some((tok, next)) => {
                    out.push(tok);
                    i = next;
                }
                None => out.push(Tok::Lit('[')),
            },
            c => out.push(Tok::Lit(c)),
        }
    }
    out
}

/// A class starting after its `[` at `i`: the token and the index after
/// its `]`, or `None` when it is not closed.
fn class(chars: &[char], mut i: usize) -> Option<(Tok, usize)> {
    let neg = matches!(chars.get(i), Some('!' | '^'));
    if neg {
        i += 1;
    }
    let mut items: Vec<(char, char)> = Vec::new();
    let mut first = true;
    loop {
        let c = *chars.get(i)?;
        i += 1;
        if c == ']' && !first {
            return Some((Tok::Class(neg, items), i));
        }
        first = false;
        let c = if c == '\\' {
            let e = *chars.get(i)?;
            i += 1;
            e
        } else {
            c
        };
        if chars.get(i) == Some(&'-') && chars.get(i + 1).is_some_and(|&n| n != ']') {
            let mut hi = *chars.get(i + 1)?;
            i += 2;
            if hi == '\\' {
                hi = *chars.get(i)?;
                i += 1;
            }
            if c <= hi {
                items.push((c, hi));
            }
        } else {
            items.push((c, c));
        }
    }
}

pub(super) fn tok_matches(t: &Tok, c: char) -> bool {
    match t {
        Tok::Lit(l) => *l == c,
        Tok::Star => true,
        Tok::One => c != '/',
        Tok::Class(neg, items) => {
            c != '/' && c != '\0' && (items.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *neg)
        }
    }
}

/// Whether a segment's tokens match `part` (no `/` in it): the classic
/// wildcard walk, backtracking to the last `*`.
fn seg_matches(toks: &[Tok], part: &str) -> bool {
    let s: Vec<char> = part.chars().collect();
    let (mut ti, mut si) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        let c = s.get(si).copied().unwrap_or('\0');
        match toks.get(ti) {
            Some(Tok::Star) => {
                star = Some((ti, si));
                ti += 1;
            }
            Some(t) if tok_matches(t, c) => {
                ti += 1;
                si += 1;
            }
            _ => match star {
                Some((st, ss)) => {
                    ti = st + 1;
                    si = ss + 1;
                    star = Some((st, ss + 1));
                }
                None => return false,
            },
        }
    }
    toks.iter().skip(ti).all(|t| *t == Tok::Star)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(k: &PathKind, v: &str, cwd: Option<&str>) -> Result<String, String> {
        k.normalize(v, &CallContext { cwd })
            .map(Cow::into_owned)
            .map_err(|e| e.to_string())
    }

    fn lowered_matches(spec: &str, value: &str) -> bool {
        match PathKind::new().lower(spec) {
            Ok(Lowering::Patterns(ps)) => ps.iter().any(|p| match p {
                Pattern::Any => true,
                Pattern::Exact(e) => value == e,
                Pattern::Prefix(x) => value.starts_with(x.as_str()),
                Pattern::Suffix(x) => value.ends_with(x.as_str()),
                Pattern::Glob(g) => crate::glob::matches(g, value),
                Pattern::Regex(r) => panic!("{spec} lowered to the regex {r}"),
            }),
            Ok(Lowering::Callback) => PathKind::new().matches(spec, value),
            Err(e) => panic!("{spec} does not lower: {e}"),
        }
    }

    /// Both readings of `spec` against `path` in `cwd`, which must agree.
    fn m(spec: &str, path: &str, cwd: &str) -> bool {
        let k = PathKind::with_home("/home/u");
        let v = norm(&k, path, Some(cwd)).unwrap();
        let a = k.matches(spec, &v);
        let b = lowered_matches(spec, &v);
        assert_eq!(
            a, b,
            "{spec:?} on {path:?} in {cwd:?}: matches {a}, regex {b}"
        );
        a
    }

    #[test]
    fn canonicalises_lexically() {
        let k = PathKind::with_home("/home/u");
        let c = Some("/repo");
        assert_eq!(norm(&k, "./src/../.env", c).unwrap(), "/repo/.env\0/.env");
        for v in ["(", "/etc/passwd"] {
            let e = norm(&k, v, Some("/\0t")).unwrap_err();
            assert!(e.contains("working directory") && e.contains("NUL"), "{e}");
        }
        assert_eq!(
            norm(&k, "/repo//src///a/", c).unwrap(),
            "/repo/src/a\0/src/a"
        );
        assert_eq!(norm(&k, "/repo", c).unwrap(), "/repo\0");
        assert_eq!(
            norm(&k, "/etc/../../../etc/passwd", c).unwrap(),
            "/etc/passwd"
        );
        assert_eq!(norm(&k, "~/.ssh/id_rsa", c).unwrap(), "/home/u/.ssh/id_rsa");
        assert_eq!(norm(&k, "~", None).unwrap(), "/home/u");
        assert_eq!(norm(&k, "/repository/x", c).unwrap(), "/repository/x");
        assert_eq!(norm(&k, "x", Some("/")).unwrap(), "/x\0/x");
        assert!(norm(&k, "~root/x", c).is_err());
        assert!(norm(&PathKind::new(), "~/x", c).is_err());
        assert!(norm(&k, "x", None).is_err());
        assert!(norm(&k, "x", Some("rel")).is_err());
        assert!(norm(&k, "a\0b", c).is_err());
        assert!(norm(&k, "", c).is_err());
    }

    #[test]
    fn anchors_and_depth() {
        // A bare name matches at any depth under the working directory, not above it.
        assert!(m(".env", "/repo/.env", "/repo"));
        assert!(m(".env", "/repo/a/b/.env", "/repo"));
        assert!(m("./.env", "./src/../.env", "/repo"));
        assert!(!m(".env", "/.env", "/repo"));
        assert!(!m(".env", "/repo/.envrc", "/repo"));
        // Anchored relative patterns.
        assert!(m("src/**", "/repo/src/a/b.rs", "/repo"));
        assert!(m("src/**", "/repo/src", "/repo"));
        assert!(!m("src/**", "/repo/lib/src/a.rs", "/repo"));
        assert!(m("**/src/**", "/repo/lib/src/a.rs", "/repo"));
        assert!(m("src/*.rs", "/repo/src/a.rs", "/repo"));
        assert!(!m("src/*.rs", "/repo/src/x/a.rs", "/repo"));
        assert!(m("src/**/*.rs", "/repo/src/x/y/a.rs", "/repo"));
        assert!(m("src/**/*.rs", "/repo/src/a.rs", "/repo"));
        // Absolute patterns.
        assert!(m("//etc/passwd", "/etc/passwd", "/repo"));
        assert!(m("//etc/**", "/etc/ssh/sshd_config", "/repo"));
        assert!(m("//home/u/.ssh/**", "~/.ssh/id_rsa", "/repo"));
        assert!(!m("//etc/passwd", "/etc/passwd.bak", "/repo"));
        assert!(m("//**/.env", "/x/y/.env", "/repo"));
        assert!(m("//", "/anything", "/repo"));
        // Parent directories and trailing slashes.
        assert!(m("secrets", "/repo/a/secrets/key", "/repo"));
        assert!(m("secrets/", "/repo/secrets/key", "/repo"));
        assert!(m("secrets/", "/repo/secrets/", "/repo"));
        // Traversal.
        assert!(m("//etc/passwd", "/repo/../etc/passwd", "/repo"));
        assert!(!m("src/**", "/repo/src/../.env", "/repo"));
        assert!(m(".", "/repo/x", "/repo") && !m(".", "/tmp/x", "/repo"));
        // Classes, `?`, escapes.
        assert!(m("*.[ch]", "/repo/a.c", "/repo") && !m("*.[ch]", "/repo/a.o", "/repo"));
        assert!(m("*.[!ch]", "/repo/a.o", "/repo") && !m("*.[!ch]", "/repo/a.c", "/repo"));
        assert!(m("?.rs", "/repo/a.rs", "/repo") && !m("?.rs", "/repo/ab.rs", "/repo"));
        assert!(m(r"a\*b", "/repo/a*b", "/repo") && !m(r"a\*b", "/repo/axb", "/repo"));
        assert!(m(
            "Finance (2024)/**",
            "/repo/Finance (2024)/q1.xlsx",
            "/repo"
        ));
        assert!(m("*", "/repo/x", "/repo"));
        assert!(m("[", "/repo/[", "/repo"));
        assert!(m("d/é*", "/repo/d/été", "/repo"));
        // The cheap lowerings, which must not match across the NUL.
        assert!(m("//**/.git", "/repo/.git/config", "/repo"));
        assert!(m("//**/.git", "/x/.git", "/repo"));
        assert!(!m("//**/.git", "/x/.gitignore", "/repo"));
        assert!(m("//repo", "/repo", "/repo") && m("//repo", "/repo/a", "/"));
        assert!(!m("//repo", "/repository", "/"));
        assert!(!m("//a/**/a/**", "/a/x", "/"));
        assert!(!m("a/b", "/a/x", "/") && m("a/b", "/a/b/c", "/"));
        assert!(m("**/src/**", "/repo/src", "/repo") && !m("**/src/**", "/src", "/repo"));
    }

    #[test]
    fn refuses_what_a_matcher_cannot_anchor() {
        let k = PathKind::new();
        assert!(k.lower("~/x").is_err());
        assert!(k.lower("/x").is_err());
        assert!(k.lower("../x").is_err());
        assert!(k.lower("a/../../x").is_err());
        assert!(k.lower("a/../x").is_ok());
    }
}
