//! `matches` patterns: RE2's syntax and meaning, built as bounded DFAs.
//!
//! Rubric's `matches` is RE2: linear time, an unanchored search, no
//! lookaround and no backreferences. toolgate parses a pattern with
//! regex-syntax, refuses what RE2 would not read the same way, and rewrites
//! what RE2 reads differently before it is built:
//!
//! * refused: the flags `x`, `u` and `R` (RE2 knows `i`, `m`, `s`, `U`);
//!   class set operations (`&&`, `--`, `~~`) and nested classes (RE2 reads
//!   `[` and `&&` inside a class as literals); `\<`, `\>` and `\b{…}`;
//!   `\u`/`\U` escapes; `\p{name=value}`; `x{,n}`; counted repetitions above
//!   1000 (RE2's limit);
//! * rewritten: `\d`, `\w`, `\s` and their negations are ASCII classes in
//!   RE2, and `\b`, `\B` ASCII word boundaries.
//!
//! Everything regex-syntax itself refuses (lookaround, backreferences,
//! RE2-only `\C`, `\Q…\E`) is a compile failure too. A pattern that passes
//! is built alone into a lazy DFA whose NFA must fit the compiler's size
//! limit; a pattern over it is a compile failure as well, and the tables
//! build the same lazy DFAs (over chunks of patterns, split until each fits)
//! with the same limit, so the front end and the compiled tables always
//! agree on which patterns failed.
//!
//! Depends on regex-syntax and regex-automata.

use regex_automata::hybrid;
use regex_automata::nfa::thompson;
use regex_automata::util::syntax;
use regex_automata::MatchKind;
use regex_syntax::ast::{self, Ast, ClassPerlKind, ClassSetItem, Visitor};

/// Counted repetitions above this are refused, as RE2 refuses them.
const MAX_REPEAT: u32 = 1000;

/// Why a `matches` pattern was refused: what in it RE2 would not accept, or
/// that its DFA exceeds the limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternError(String);

impl std::fmt::Display for PatternError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PatternError {}

impl From<String> for PatternError {
    fn from(s: String) -> PatternError {
        PatternError(s)
    }
}

impl From<PatternError> for String {
    fn from(e: PatternError) -> String {
        e.0
    }
}

/// Checks `pattern` against RE2's syntax and rewrites it into a pattern the
/// DFA builder reads with RE2's meaning.
///
/// # Errors
///
/// A lowercase message saying what in the pattern RE2 would not accept.
pub fn translate(pattern: &str) -> Result<String, PatternError> {
    translate_text(pattern).map_err(PatternError)
}

fn translate_text(pattern: &str) -> Result<String, String> {
    let parsed = ast::parse::Parser::new()
        .parse(pattern)
        .map_err(|e| first_line(&e.kind().to_string()))?;
    let v = Re2 {
        src: pattern,
        edits: Vec::new(),
        in_class: 0,
        counts: Vec::new(),
    };
    let mut edits = ast::visit(&parsed, v)?;
    edits.sort_by_key(|e| e.0);
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut at = 0;
    for (start, end, text) in &edits {
        out.push_str(pattern.get(at..*start).unwrap_or(""));
        out.push_str(text);
        at = *end;
    }
    out.push_str(pattern.get(at..).unwrap_or(""));
    // The rewritten pattern must still parse; it always does, but a
    // failure here is a compile failure, never a panic.
    syntax::parse_with(&out, &syntax_config()).map_err(|e| first_line(&e.to_string()))?;
    Ok(out)
}

/// The syntax configuration every `matches` pattern is built with. UTF-8
/// mode is off only so that the ASCII word boundaries the rewrite inserts
/// (`(?-u:\B)`) are accepted; every other construct still reads UTF-8.
/// The references build their PikeVMs with it too.
pub fn syntax_config() -> syntax::Config {
    syntax::Config::new().utf8(false)
}

/// The most bytes one lazy DFA's cache holds per thread before it is
/// cleared and refilled: a search stays correct after a clear, only slower.
pub(crate) const LAZY_CACHE_BYTES: usize = 1 << 20;

/// Builds one lazy DFA (`MatchKind::All`) reporting every pattern of
/// `patterns` (already translated) that occurs in a value. Only its
/// Thompson NFA is built here, within `limit` bytes; states are computed
/// during searches and kept in a per-thread cache, so no set of patterns
/// can make the build exponential.
pub(crate) fn build_lazy(patterns: &[&str], limit: usize) -> Result<hybrid::dfa::DFA, String> {
    hybrid::dfa::Builder::new()
        .configure(
            hybrid::dfa::DFA::config()
                .match_kind(MatchKind::All)
                .cache_capacity(LAZY_CACHE_BYTES),
        )
        .syntax(syntax_config())
        // PERF: only which patterns occur matters, never where an empty
        // match falls, so empty matches need not be kept off UTF-8
        // boundaries (the search reports match states at character
        // boundaries only, as RE2 tests assertions).
        .thompson(
            thompson::Config::new()
                .utf8(false)
                .nfa_size_limit(Some(limit)),
        )
        .build_many(patterns)
        .map_err(|e| first_line(&e.to_string()))
}

/// Checks a `matches` pattern as the compiled tables will build it: RE2's
/// syntax, then a lazy DFA of its own whose NFA fits in `limit` bytes.
///
/// # Errors
///
/// Why the pattern does not compile.
pub fn check(pattern: &str, limit: usize) -> Result<String, PatternError> {
    check_text(pattern, limit).map_err(PatternError)
}

fn check_text(pattern: &str, limit: usize) -> Result<String, String> {
    let t = translate_text(pattern)?;
    build_lazy(&[t.as_str()], limit).map_err(|e| {
        format!("the pattern cannot be compiled within the limits ({limit} bytes): {e}")
    })?;
    Ok(t)
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or(s).to_string()
}

struct Re2<'s> {
    src: &'s str,
    /// Byte ranges of the pattern and their replacements.
    edits: Vec<(usize, usize, String)>,
    in_class: u32,
    /// For each repetition being visited, the product of the counts of
    /// the counted repetitions around it and of its own: RE2 refuses a
    /// nesting whose product passes [`MAX_REPEAT`].
    counts: Vec<u32>,
}

impl Re2<'_> {
    fn perl(&mut self, c: &ast::ClassPerl) {
        let (pos, neg) = match c.kind {
            ClassPerlKind::Digit => ("0-9", "[^0-9]"),
            ClassPerlKind::Word => ("0-9A-Za-z_", "[^0-9A-Za-z_]"),
            ClassPerlKind::Space => ("\\t\\n\\f\\r ", "[^\\t\\n\\f\\r ]"),
        };
        let text = match (c.negated, self.in_class > 0) {
            (false, true) => pos.to_string(),
            (false, false) => format!("[{pos}]"),
            (true, _) => neg.to_string(),
        };
        self.edits
            .push((c.span.start.offset, c.span.end.offset, text));
    }
}

impl Visitor for Re2<'_> {
    type Output = Vec<(usize, usize, String)>;
    type Err = String;

    fn finish(self) -> Result<Self::Output, String> {
        Ok(self.edits)
    }

    fn visit_pre(&mut self, a: &Ast) -> Result<(), String> {
        match a {
            Ast::Flags(f) => flags(&f.flags)?,
            Ast::Group(g) => {
                if let ast::GroupKind::NonCapturing(f) = &g.kind {
                    flags(f)?;
                }
            }
            Ast::ClassPerl(c) => self.perl(c),
            Ast::ClassBracketed(_) => self.in_class += 1,
            Ast::ClassUnicode(u) => unicode(u)?,
            Ast::Literal(l) => literal(l)?,
            Ast::Assertion(x) => match x.kind {
                ast::AssertionKind::WordBoundary => {
                    self.edits
                        .push((x.span.start.offset, x.span.end.offset, "(?-u:\\b)".into()))
                }
                ast::AssertionKind::NotWordBoundary => {
                    self.edits
                        .push((x.span.start.offset, x.span.end.offset, "(?-u:\\B)".into()))
                }
                ast::AssertionKind::StartLine
                | ast::AssertionKind::EndLine
                | ast::AssertionKind::StartText
                | ast::AssertionKind::EndText => {}
                _ => {
                    return Err(format!(
                        "the assertion `{}` is not RE2 syntax",
                        self.src
                            .get(x.span.start.offset..x.span.end.offset)
                            .unwrap_or("")
                    ))
                }
            },
            Ast::Repetition(r) => {
                // RE2 refuses a repetition operator right after another
                // (`a**`, `a+*`, `x{2}{3}`, `a*?*`): "bad repetition
                // operator". A group between them (`(?:a*)*`) is fine.
                if let Ast::Repetition(_) = &*r.ast {
                    let op = self
                        .src
                        .get(r.op.span.start.offset..r.op.span.end.offset)
                        .unwrap_or("");
                    return Err(format!(
                        "the repetition `{op}` follows another repetition, which is not RE2 syntax: put the inner one in a group (`(?:…)`)"
                    ));
                }
                let own = match &r.op.kind {
                    ast::RepetitionKind::Range(
                        ast::RepetitionRange::Exactly(n) | ast::RepetitionRange::AtLeast(n),
                    ) => *n,
                    ast::RepetitionKind::Range(ast::RepetitionRange::Bounded(a, b)) => (*a).max(*b),
                    _ => 1,
                };
                let outer = self.counts.last().copied().unwrap_or(1);
                let product = outer.saturating_mul(own.max(1));
                if product > MAX_REPEAT {
                    return Err(format!(
                        "counted repetitions nested to more than {MAX_REPEAT} in all are not RE2 syntax"
                    ));
                }
                self.counts.push(product);
                if let ast::RepetitionKind::Range(range) = &r.op.kind {
                    let (lo, hi) = match *range {
                        ast::RepetitionRange::Exactly(n) => (n, n),
                        ast::RepetitionRange::AtLeast(n) => (n, n),
                        ast::RepetitionRange::Bounded(a, b) => (a, b),
                    };
                    if lo > MAX_REPEAT || hi > MAX_REPEAT {
                        return Err(format!(
                            "a counted repetition above {MAX_REPEAT} is not RE2 syntax"
                        ));
                    }
                    let op = self
                        .src
                        .get(r.op.span.start.offset..r.op.span.end.offset)
                        .unwrap_or("");
                    if op.starts_with("{,") {
                        return Err(format!(
                            "the repetition `{op}` is not RE2 syntax: write `{{0,n}}`"
                        ));
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn visit_class_set_item_pre(&mut self, item: &ClassSetItem) -> Result<(), String> {
        match item {
            ClassSetItem::Perl(c) => self.perl(c),
            ClassSetItem::Unicode(u) => unicode(u)?,
            ClassSetItem::Literal(l) => literal(l)?,
            ClassSetItem::Range(r) => {
                literal(&r.start)?;
                literal(&r.end)?;
            }
            ClassSetItem::Bracketed(_) => {
                return Err(
                    "a class inside a class is not RE2 syntax (RE2 reads `[` there as a literal): escape it as `\\[`"
                        .into(),
                );
            }
            _ => {}
        }
        Ok(())
    }

    fn visit_post(&mut self, a: &Ast) -> Result<(), String> {
        match a {
            Ast::ClassBracketed(_) => self.in_class = self.in_class.saturating_sub(1),
            Ast::Repetition(_) => {
                self.counts.pop();
            }
            _ => {}
        }
        Ok(())
    }

    fn visit_class_set_binary_op_pre(&mut self, _op: &ast::ClassSetBinaryOp) -> Result<(), String> {
        Err("class set operations (`&&`, `--`, `~~`) are not RE2 syntax: RE2 reads them as literal characters".into())
    }
}

/// The flags RE2 knows: `i`, `m`, `s`, `U`.
fn flags(f: &ast::Flags) -> Result<(), String> {
    for item in &f.items {
        if let ast::FlagsItemKind::Flag(flag) = &item.kind {
            let name = match flag {
                ast::Flag::CaseInsensitive
                | ast::Flag::MultiLine
                | ast::Flag::DotMatchesNewLine
                | ast::Flag::SwapGreed => continue,
                ast::Flag::Unicode => "u",
                ast::Flag::CRLF => "R",
                ast::Flag::IgnoreWhitespace => "x",
            };
            return Err(format!(
                "the flag `{name}` is not RE2 syntax: RE2 knows `i`, `m`, `s` and `U`"
            ));
        }
    }
    Ok(())
}

fn unicode(u: &ast::ClassUnicode) -> Result<(), String> {
    match &u.kind {
        ast::ClassUnicodeKind::NamedValue { .. } => {
            Err("`\\p{name=value}` is not RE2 syntax: write `\\p{Name}`".into())
        }
        _ => Ok(()),
    }
}

fn literal(l: &ast::Literal) -> Result<(), String> {
    match &l.kind {
        ast::LiteralKind::HexFixed(ast::HexLiteralKind::UnicodeShort)
        | ast::LiteralKind::HexFixed(ast::HexLiteralKind::UnicodeLong)
        | ast::LiteralKind::HexBrace(ast::HexLiteralKind::UnicodeShort)
        | ast::LiteralKind::HexBrace(ast::HexLiteralKind::UnicodeLong) => {
            Err("`\\u` and `\\U` escapes are not RE2 syntax: write `\\x{…}`".into())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_perl_classes_and_word_boundaries_to_ascii() {
        assert_eq!(translate(r"\d+").unwrap(), "[0-9]+");
        assert_eq!(translate(r"[\dx]").unwrap(), "[0-9x]");
        assert_eq!(translate(r"[^\W]").unwrap(), "[^[^0-9A-Za-z_]]");
        assert_eq!(translate(r"\bfoo\B").unwrap(), r"(?-u:\b)foo(?-u:\B)");
        assert_eq!(translate(r"\S").unwrap(), r"[^\t\n\f\r ]");
        assert_eq!(translate("a(?i:b)c").unwrap(), "a(?i:b)c");
    }

    #[test]
    fn refuses_what_re2_does_not_read_the_same_way() {
        for p in [
            "(?=a)",
            "(?!a)",
            "(a)\\1",
            "(?x)a b",
            "(?u)a",
            "[a&&b]",
            "[a--b]",
            "[[a]]",
            "\\<a",
            "\\b{start}",
            "\\u0041",
            "\\p{Script=Greek}",
            "a{,3}",
            "a{1001}",
            "\\Qa\\E",
            "\\C",
            "(",
            "a{2,1}",
            "[z-a]",
            // RE2: "bad repetition operator" (a review compared 24,000
            // patterns with RE2; these are the two kinds toolgate took).
            "curl.**\\|\\s*sh",
            "a**",
            "a+*",
            "a*?*",
            "x{2}{3}",
            "k{2,}+",
            "(a{1000}){2}",
            "(?:a{1,2}){600}",
            "((a{10}){10}){11}",
        ] {
            assert!(translate(p).is_err(), "{p} should be refused");
        }
        for p in [
            "[[:alpha:]]",
            "\\pL",
            "\\p{Greek}",
            "(?P<n>a)",
            "(?<n>a)",
            "a{2,1000}",
            "(?imsU)a",
            "^a$",
            "\\Aa\\z",
            "[\\[\\]]",
            "(?:a*)*",
            "(a+)?",
            "a*?",
            "((a{10}){10}){10}",
            "(a{500}){2}",
        ] {
            assert!(translate(p).is_ok(), "{p} should be accepted");
        }
    }

    #[test]
    fn a_pattern_over_the_limits_is_refused() {
        // The NFA of a thousand Unicode letters is megabytes.
        let e = check(r"\pL{1000}", 1 << 16).unwrap_err().to_string();
        assert!(e.contains("cannot be compiled within the limits"), "{e}");
        assert!(check("ab+c", 1 << 16).is_ok());
        // A pattern whose DFA explodes is not refused: only its NFA is
        // built ahead of a search.
        assert!(check("[a-z]{30}x[a-z]{30}", 1 << 16).is_ok());
    }
}
