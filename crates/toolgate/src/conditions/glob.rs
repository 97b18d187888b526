//! Segment globs, classified for the tables.
//!
//! A segment glob reads `*` as any run of characters without the segment
//! separator, `**` (or any longer run of stars) as any run at all, and
//! every other character as itself: nothing else is special, so `+`, `?`,
//! `(`, `[`, `\` match themselves. A glob matches the whole value.
//!
//! [`shape`] classifies a glob into the cheapest exact strategy, as the
//! rule-list compiler classifies its patterns:
//!
//! * no star: an exact value (a trie path);
//! * only `**`: the literal pieces between them, first and last anchored
//!   and the middle ones found in order between them (a trie path, a
//!   reverse-trie path and middle pieces verified in the window), which is
//!   exactly what `.*` between literals means;
//! * a single `*` anywhere: a regular expression, built into an anchored
//!   DFA with the compiler's size limits.
//!
//! Depends on regex-syntax (escaping) only. The reference interpreters have
//! their own matcher.

/// How a glob is compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// No star: the value must equal this.
    Exact(String),
    /// Only `**`: the literal pieces between them (at least two; the first
    /// and last may be empty).
    Pieces(Vec<String>),
    /// A single `*` somewhere: the regular expression (without anchors) an
    /// anchored DFA matches against the whole value.
    Regex(String),
}

/// One lexical piece of a glob.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Lit(String),
    /// `*`: any run without the separator.
    Star,
    /// `**` or more: any run.
    Globstar,
}

fn tokens(glob: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut lit = String::new();
    let mut stars = 0usize;
    let flush_stars = |stars: &mut usize, out: &mut Vec<Token>| {
        match *stars {
            0 => {}
            1 => out.push(Token::Star),
            _ => out.push(Token::Globstar),
        }
        *stars = 0;
    };
    for c in glob.chars() {
        if c == '*' {
            if !lit.is_empty() {
                out.push(Token::Lit(std::mem::take(&mut lit)));
            }
            stars += 1;
        } else {
            flush_stars(&mut stars, &mut out);
            lit.push(c);
        }
    }
    flush_stars(&mut stars, &mut out);
    if !lit.is_empty() {
        out.push(Token::Lit(lit));
    }
    out
}

/// Classifies `glob` with segment separator `sep`.
pub fn shape(glob: &str, sep: char) -> Shape {
    let toks = tokens(glob);
    if toks.iter().all(|t| matches!(t, Token::Lit(_))) {
        return Shape::Exact(glob.to_string());
    }
    if toks.contains(&Token::Star) {
        return Shape::Regex(regex(&toks, sep));
    }
    let mut pieces = vec![String::new()];
    for t in toks {
        match t {
            Token::Lit(s) => {
                if let Some(last) = pieces.last_mut() {
                    last.push_str(&s);
                }
            }
            Token::Globstar => pieces.push(String::new()),
            Token::Star => {}
        }
    }
    Shape::Pieces(pieces)
}

fn regex(toks: &[Token], sep: char) -> String {
    let class = format!("[^{}]*", regex_syntax::escape(&sep.to_string()));
    let mut out = String::new();
    for t in toks {
        match t {
            Token::Lit(s) => out.push_str(&regex_syntax::escape(s)),
            Token::Star => out.push_str(&class),
            Token::Globstar => out.push_str("(?s:.)*"),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(v: &[&str]) -> Shape {
        Shape::Pieces(v.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn globs_take_the_cheapest_shape() {
        assert_eq!(shape("file.read", '.'), Shape::Exact("file.read".into()));
        assert_eq!(shape("a+b?(c)", '.'), Shape::Exact("a+b?(c)".into()));
        assert_eq!(shape("file.**", '.'), pieces(&["file.", ""]));
        assert_eq!(shape("**/rm", '/'), pieces(&["", "/rm"]));
        assert_eq!(shape("**", '/'), pieces(&["", ""]));
        assert_eq!(shape("a***b", '.'), pieces(&["a", "b"]));
        assert_eq!(shape("**a**b**", '.'), pieces(&["", "a", "b", ""]));
        assert_eq!(shape("file.*", '.'), Shape::Regex(r"file\.[^\.]*".into()));
        assert_eq!(
            shape("**/rm*", '/'),
            Shape::Regex(r"(?s:.)*/rm[^/]*".into())
        );
        assert_eq!(
            shape("a.(b)+*", '.'),
            Shape::Regex(r"a\.\(b\)\+[^\.]*".into())
        );
    }
}
