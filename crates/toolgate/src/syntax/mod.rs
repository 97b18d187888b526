//! The rule grammar: parsing a rule list into tokens.
//!
//! This is the only module that sees pest. The grammar is
//! `grammar/rules.pest`; this module runs it and turns its pieces into
//! [`RuleToken`]s, or into a [`GrammarError`] naming the first offending token
//! with its byte span. A list with an error is refused whole.
//!
//! Depends on `diag`, `quote` and `json` (which shows control characters
//! in messages).

use crate::diag::DiagnosticKind;
use crate::diag::{Diagnostic, Span};
use pest::Parser as _;

mod grammar {
    #![allow(missing_docs)]
    #[derive(pest_derive::Parser)]
    #[grammar = "../grammar/rules.pest"]
    pub(super) struct RulesParser;
}
use grammar::{Rule, RulesParser};

/// Parentheses nested deeper than this inside one specifier are refused
/// (`nesting_too_deep`). agentpolicy has no limit; toolgate has one so that
/// parsing never exhausts the stack on hostile input.
pub const MAX_NESTING: usize = 128;

/// One token of a rule list: a tool name, optionally with a specifier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleToken {
    /// The tool name (may be a glob such as `mcp__*`).
    pub tool: String,
    /// The text between the parentheses, `None` for a bare rule.
    pub spec: Option<String>,
    /// The token's byte span in the list.
    pub span: Span,
}

impl RuleToken {
    /// The token as written: `Tool` or `Tool(spec)`.
    pub fn text(&self) -> String {
        match &self.spec {
            Some(s) => format!("{}({s})", self.tool),
            None => self.tool.clone(),
        }
    }
}

/// The kinds of grammar error, as agentpolicy's corpus names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrammarErrorKind {
    /// A `)` at depth zero, or the list ends inside parentheses.
    UnbalancedParentheses,
    /// The token begins with `(`.
    MissingToolName,
    /// Something follows the `)` that closes the specifier.
    TextAfterSpecifier,
    /// `Tool()`.
    EmptySpecifier,
    /// `Tool(!)`.
    EmptyCarveOut,
    /// Parentheses nested deeper than [`MAX_NESTING`] (toolgate only).
    NestingTooDeep,
    /// A NUL byte in the rule, or another ASCII control character (U+0001
    /// to U+001F, U+007F) in its tool name (toolgate only): no call can
    /// carry one (see [`crate::call::tool_name_error`]), so the rule could
    /// never match as written. (C1 controls stay part of a tool name:
    /// agentpolicy's corpus reads `Read\u{85}Edit` as one rule.)
    ControlCharacter,
}

impl GrammarErrorKind {
    /// The stable kind name: `unbalanced_parentheses`, …
    pub fn name(self) -> &'static str {
        match self {
            GrammarErrorKind::UnbalancedParentheses => "unbalanced_parentheses",
            GrammarErrorKind::MissingToolName => "missing_tool_name",
            GrammarErrorKind::TextAfterSpecifier => "text_after_specifier",
            GrammarErrorKind::EmptySpecifier => "empty_specifier",
            GrammarErrorKind::EmptyCarveOut => "empty_carve_out",
            GrammarErrorKind::NestingTooDeep => "nesting_too_deep",
            GrammarErrorKind::ControlCharacter => "control_character",
        }
    }

    /// The diagnostic kind of the same name.
    pub fn diagnostic_kind(self) -> DiagnosticKind {
        match self {
            GrammarErrorKind::UnbalancedParentheses => DiagnosticKind::UnbalancedParentheses,
            GrammarErrorKind::MissingToolName => DiagnosticKind::MissingToolName,
            GrammarErrorKind::TextAfterSpecifier => DiagnosticKind::TextAfterSpecifier,
            GrammarErrorKind::EmptySpecifier => DiagnosticKind::EmptySpecifier,
            GrammarErrorKind::EmptyCarveOut => DiagnosticKind::EmptyCarveOut,
            GrammarErrorKind::NestingTooDeep => DiagnosticKind::NestingTooDeep,
            GrammarErrorKind::ControlCharacter => DiagnosticKind::ControlCharacter,
        }
    }

    /// agentpolicy's wording of the kind, used in [`GrammarError::reference_message`].
    pub fn reference_text(self) -> &'static str {
        match self {
            GrammarErrorKind::UnbalancedParentheses => "unbalanced parentheses",
            GrammarErrorKind::MissingToolName => "missing tool name",
            GrammarErrorKind::TextAfterSpecifier => "text after the specifier",
            GrammarErrorKind::EmptySpecifier => "empty specifier",
            GrammarErrorKind::EmptyCarveOut => "empty carve-out",
            GrammarErrorKind::NestingTooDeep => "parentheses nested too deep",
            GrammarErrorKind::ControlCharacter => "control character",
        }
    }
}

/// A rule list that does not parse: the kind, the offending token and its
/// byte span in the list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrammarError {
    /// What is wrong.
    pub kind: GrammarErrorKind,
    /// The offending token, as the reference names it.
    pub token: String,
    /// The token's byte span in the list.
    pub span: Span,
}

impl GrammarError {
    /// The reference's message with toolgate's prefix:
    /// `toolgate: rule "Bash()": empty specifier`.
    pub fn reference_message(&self) -> String {
        format!(
            "toolgate: rule {}: {}",
            crate::quote::go_quote(&self.token),
            self.kind.reference_text()
        )
    }

    /// The error as a diagnostic, its span relative to the list.
    pub fn to_diagnostic(&self) -> Diagnostic {
        let t = &self.token;
        let (message, help) = match self.kind {
            GrammarErrorKind::UnbalancedParentheses => (
                format!("rule `{t}` has unbalanced parentheses"),
                "close every `(` with a `)` in the same rule; parentheses inside a specifier must balance",
            ),
            GrammarErrorKind::MissingToolName => (
                format!("rule `{t}` has no tool name"),
                "write the tool's name before the parenthesis, as in `Bash(git status:*)`",
            ),
            GrammarErrorKind::TextAfterSpecifier => (
                format!("rule `{t}` has text after its specifier"),
                "a rule ends at the `)` that closes its specifier; separate the next rule with a space",
            ),
            GrammarErrorKind::EmptySpecifier => (
                format!("rule `{t}` has an empty specifier"),
                "write the bare tool name to cover every call of the tool, or put a pattern between the parentheses",
            ),
            GrammarErrorKind::EmptyCarveOut => (
                format!("rule `{t}` is a carve-out with no pattern"),
                "write the pattern to exempt after the `!`, as in `Read(!.env.example)`",
            ),
            GrammarErrorKind::NestingTooDeep => (
                format!("rule `{}` nests parentheses more than {MAX_NESTING} deep", abbreviate(t)),
                "simplify the specifier; no matcher needs parentheses nested this deep",
            ),
            GrammarErrorKind::ControlCharacter => (
                if t.contains('\0') {
                    format!("rule `{}` holds a NUL byte", crate::json::shown(t))
                } else {
                    format!(
                        "the tool name of rule `{}` holds a control character",
                        crate::json::shown(t)
                    )
                },
                "remove it: a host ends a string at a NUL, so no call carries one, and a tool name holds no control character, so the rule could never match as written",
            ),
        };
        let token = match self.kind {
            GrammarErrorKind::NestingTooDeep => abbreviate(t),
            GrammarErrorKind::ControlCharacter => crate::json::shown(t),
            _ => t.clone(),
        };
        Diagnostic::new(self.kind.diagnostic_kind(), message)
            .with_help(help)
            .with_token(token)
    }
}

fn abbreviate(s: &str) -> String {
    if s.chars().count() <= 40 {
        return s.to_string();
    }
    let head: String = s.chars().take(37).collect();
    format!("{head}...")
}

/// Whether `b` is one of the six ASCII whitespace bytes that separate tokens.
pub fn is_separator(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Parses a rule list.
///
/// The empty string, and a string of whitespace only, is zero rules. Any error
/// refuses the whole list and names the first offending token.
///
/// # Errors
///
/// A [`GrammarError`] naming the kind, the token and its span.
///
/// # Example
///
/// ```
/// use toolgate::syntax::parse_rules;
/// let rules = parse_rules("read bash(git status:*) Edit(./Finance (2024)/**)")?;
/// assert_eq!(rules.len(), 3);
/// assert_eq!(rules[1].spec.as_deref(), Some("git status:*"));
/// assert_eq!(rules[2].spec.as_deref(), Some("./Finance (2024)/**"));
///
/// let err = parse_rules("Read Bash() Edit").unwrap_err();
/// assert_eq!((err.kind.name(), err.token.as_str()), ("empty_specifier", "Bash()"));
/// # Ok::<(), toolgate::syntax::GrammarError>(())
/// ```
pub fn parse_rules(list: &str) -> Result<Vec<RuleToken>, GrammarError> {
    check_parentheses(list)?;
    let pairs = match RulesParser::parse(Rule::list, list) {
        Ok(p) => p,
        // The scan above accepts exactly the lists the grammar accepts; should
        // they ever disagree, the list is refused rather than misread.
        Err(_) => {
            return Err(GrammarError {
                kind: GrammarErrorKind::UnbalancedParentheses,
                token: list.to_string(),
                span: Span::new(0, list.len()),
            })
        }
    };
    let mut out = Vec::new();
    for list_pair in pairs {
        for token in list_pair.into_inner() {
            if token.as_rule() != Rule::token {
                continue;
            }
            out.push(lower_token(token)?);
        }
    }
    Ok(out)
}

/// Parses a list that must hold exactly one rule, as an entry of a JSON array
/// of rules does.
///
/// # Errors
///
/// The list's grammar error, or a diagnostic when it holds no rule or several.
pub fn parse_one(entry: &str) -> Result<RuleToken, Diagnostic> {
    let mut rules = parse_rules(entry).map_err(|e| {
        let mut d = e.to_diagnostic();
        d.location.span = Some(e.span);
        d
    })?;
    match rules.len() {
        1 => Ok(rules.remove(0)),
        0 => Err(Diagnostic::new(
            DiagnosticKind::InvalidRule,
            "an entry of a rule list is empty",
        )
        .with_help("remove the empty string, or write a rule such as `Bash(git status:*)`")),
        n => Err(Diagnostic::new(
            DiagnosticKind::InvalidRule,
            format!("the entry `{entry}` holds {n} rules where one was expected"),
        )
        .with_token(entry)
        .with_help("give each rule its own entry, or write the whole list as one string")),
    }
}

fn lower_token(token: pest::iterators::Pair<'_, Rule>) -> Result<RuleToken, GrammarError> {
    let span = Span::new(token.as_span().start(), token.as_span().end());
    let text = token.as_str();
    let err = |kind| GrammarError {
        kind,
        token: text.to_string(),
        span,
    };
    let mut pieces = token.into_inner();
    let Some(first) = pieces.next() else {
        return Err(err(GrammarErrorKind::MissingToolName));
    };
    if first.as_rule() == Rule::group {
        return Err(err(GrammarErrorKind::MissingToolName));
    }
    let tool = first.as_str().to_string();
    let Some(group) = pieces.next() else {
        if tool.contains(|c: char| c.is_ascii_control()) {
            return Err(err(GrammarErrorKind::ControlCharacter));
        }
        return Ok(RuleToken {
            tool,
            spec: None,
            span,
        });
    };
    if pieces.next().is_some() {
        return Err(err(GrammarErrorKind::TextAfterSpecifier));
    }
    let body = group.into_inner().next().map_or("", |b| b.as_str());
    if body.is_empty() {
        return Err(err(GrammarErrorKind::EmptySpecifier));
    }
    if body == "!" {
        return Err(err(GrammarErrorKind::EmptyCarveOut));
    }
    if tool.contains(|c: char| c.is_ascii_control()) || body.contains('\0') {
        return Err(err(GrammarErrorKind::ControlCharacter));
    }
    Ok(RuleToken {
        tool,
        spec: Some(body.to_string()),
        span,
    })
}

/// The scan the reference makes before any token is parsed: a `)` at depth
/// zero names the token it ends (from the token's first byte through the
/// `)`), and a list that ends above depth zero names its unclosed token (from
/// its first byte to the end of the list).
fn check_parentheses(list: &str) -> Result<(), GrammarError> {
    let bytes = list.as_bytes();
    let mut depth = 0usize;
    let mut token_start: Option<usize> = None;
    for (i, &b) in bytes.iter().enumerate() {
        if depth == 0 && is_separator(b) {
            token_start = None;
            continue;
        }
        let start = *token_start.get_or_insert(i);
        match b {
            b'(' => {
                depth += 1;
                if depth > MAX_NESTING {
                    let end = token_end(bytes, start);
                    return Err(GrammarError {
                        kind: GrammarErrorKind::NestingTooDeep,
                        token: token_at(list, start, end),
                        span: Span::new(start, end),
                    });
                }
            }
            b')' => {
                if depth == 0 {
                    return Err(GrammarError {
                        kind: GrammarErrorKind::UnbalancedParentheses,
                        token: token_at(list, start, i + 1),
                        span: Span::new(start, i + 1),
                    });
                }
                depth -= 1;
            }
            _ => {}
        }
    }
    if depth > 0 {
        let start = token_start.unwrap_or(0);
        return Err(GrammarError {
            kind: GrammarErrorKind::UnbalancedParentheses,
            token: token_at(list, start, bytes.len()),
            span: Span::new(start, bytes.len()),
        });
    }
    Ok(())
}

fn token_at(list: &str, start: usize, end: usize) -> String {
    list.get(start..end).unwrap_or_default().to_string()
}

/// The end of the token starting at `start`, for a span when scanning stopped
/// inside it.
fn token_end(bytes: &[u8], start: usize) -> usize {
    let mut depth = 0usize;
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        match b {
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            b if depth == 0 && is_separator(b) => return i,
            _ => {}
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(s: &str) -> (&'static str, String) {
        match parse_rules(s) {
            Ok(r) => (
                "ok",
                r.iter().map(RuleToken::text).collect::<Vec<_>>().join("|"),
            ),
            Err(e) => (e.kind.name(), e.token),
        }
    }

    #[test]
    fn tokens_and_errors() {
        assert_eq!(kinds("Bash()x"), ("text_after_specifier", "Bash()x".into()));
        assert_eq!(kinds("(!)"), ("missing_tool_name", "(!)".into()));
        assert_eq!(kinds("a(b) c)"), ("unbalanced_parentheses", "c)".into()));
        assert_eq!(kinds("x ) y"), ("unbalanced_parentheses", ")".into()));
        assert_eq!(kinds("a((b)) c"), ("ok", "a((b))|c".into()));
        assert_eq!(kinds("Read(a b\tc)"), ("ok", "Read(a b\tc)".into()));
        assert_eq!(kinds("Read(!x)"), ("ok", "Read(!x)".into()));
        assert_eq!(kinds("Read(!!)"), ("ok", "Read(!!)".into()));
    }

    #[test]
    fn a_nul_byte_or_a_control_character_in_a_tool_name_is_refused() {
        assert_eq!(
            kinds("read(/etc/shadow\0)"),
            ("control_character", "read(/etc/shadow\0)".into())
        );
        assert_eq!(kinds("read bash\0"), ("control_character", "bash\0".into()));
        assert_eq!(
            kinds("ba\u{1}sh"),
            ("control_character", "ba\u{1}sh".into())
        );
        assert_eq!(
            kinds("ba\u{7f}sh(x)"),
            ("control_character", "ba\u{7f}sh(x)".into())
        );
        // NEL belongs to a token, as agentpolicy's corpus has it.
        assert_eq!(kinds("ba\u{85}sh(x)"), ("ok", "ba\u{85}sh(x)".into()));
        // Other controls are part of a specifier like any character.
        assert_eq!(kinds("bash(a\u{1}b)"), ("ok", "bash(a\u{1}b)".into()));
        // The earlier kinds come first.
        assert_eq!(kinds("bash\0()"), ("empty_specifier", "bash\0()".into()));
        let e = parse_rules("x read(a\0)").unwrap_err();
        assert_eq!(e.span, Span::new(2, 10));
        let d = e.to_diagnostic();
        assert_eq!(d.message, "rule `read(a\\u0000)` holds a NUL byte");
        assert_eq!(
            e.reference_message(),
            "toolgate: rule \"read(a\\x00)\": control character"
        );
    }

    #[test]
    fn spans_point_at_tokens() {
        let r = parse_rules("  a b(c d)").unwrap_or_default();
        assert_eq!(
            r.iter().map(|t| t.span).collect::<Vec<_>>(),
            vec![Span::new(2, 3), Span::new(4, 10)]
        );
        let e = parse_rules("a Bash(x").err();
        assert_eq!(e.map(|e| e.span), Some(Span::new(2, 8)));
    }

    #[test]
    fn deep_nesting_is_refused_not_a_crash() {
        let deep = format!(
            "a{}{}",
            "(".repeat(MAX_NESTING + 1),
            ")".repeat(MAX_NESTING + 1)
        );
        assert_eq!(
            parse_rules(&deep).map_err(|e| e.kind),
            Err(GrammarErrorKind::NestingTooDeep)
        );
        let ok = format!("a{}x{}", "(".repeat(MAX_NESTING), ")".repeat(MAX_NESTING));
        assert!(parse_rules(&ok).is_ok());
        let unclosed = "(".repeat(100_000);
        assert!(parse_rules(&unclosed).is_err());
    }

    #[test]
    fn one_rule_per_entry() {
        assert!(parse_one("Bash(git status:*)").is_ok());
        assert_eq!(
            parse_one("Read Edit").map_err(|d| d.kind),
            Err(DiagnosticKind::InvalidRule)
        );
        assert_eq!(
            parse_one(" ").map_err(|d| d.kind),
            Err(DiagnosticKind::InvalidRule)
        );
        assert_eq!(
            parse_one("Bash(").map_err(|d| d.kind),
            Err(DiagnosticKind::UnbalancedParentheses)
        );
    }
}
