//! Diagnostics: spans into the text a user wrote, error kinds, and rendering.
//!
//! Every error toolgate reports about a policy is a [`Diagnostic`]: a stable
//! [`DiagnosticKind`] (`empty_specifier`, `no_matcher`, …) with its
//! [`Severity`], a lowercase message that names
//! what the user wrote in backticks, an optional help line saying what to do,
//! and where it is: the file, the place in the document (`sources[1].deny`),
//! and a byte span that [`Diagnostic::render`] turns into line and column.
//! A diagnostic is also a [`miette::Diagnostic`] (code, severity, help and a
//! label on its span), so a host renders it with miette's handlers once it
//! attaches the file's text ([`Diagnostic::report`]).
//! Depends on nothing else in the crate.

use std::fmt;

/// A half-open byte range `[start, end)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// A span from `start` to `end`.
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// The place a JSON syntax error names (`… at line 4 column 3`, as the
    /// parser says it) in `text`, as a span of the character there (empty
    /// at the end of the text); `None` when the message names no place.
    ///
    /// ```
    /// use toolgate::Span;
    /// let text = "{\n  \"a\": 1\n  \"b\": 2\n}";
    /// let s = Span::of_json_error(text, "expected `,` or `}` at line 3 column 3").unwrap();
    /// assert_eq!(&text[s.start..s.end], "\"");
    /// ```
    pub fn of_json_error(text: &str, message: &str) -> Option<Span> {
        let (_, place) = message.rsplit_once(" at line ")?;
        let (line, column) = place.split_once(" column ")?;
        let line: usize = line.trim().parse().ok()?;
        let column: usize = column.trim().parse().ok()?;
        let start_of_line = if line <= 1 {
            0
        } else {
            text.match_indices('\n').nth(line - 2)?.0 + 1
        };
        // Columns count bytes from 1; 0 is the line's start (the parser says
        // so at the end of the input).
        let at = (start_of_line + column.saturating_sub(1)).min(text.len());
        let at = (0..=at)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        let end = text
            .get(at..)
            .and_then(|r| r.chars().next())
            .map_or(at, |c| at + c.len_utf8());
        Some(Span::new(at, end))
    }

    /// The same span moved `by` bytes to the right.
    pub fn shift(self, by: usize) -> Span {
        Span::new(self.start.saturating_add(by), self.end.saturating_add(by))
    }
}

/// Where a piece of a policy came from: the file, the place inside the
/// document, and a span into the file's text when toolgate could find one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Location {
    /// The file name as the user gave it; empty for text given in memory.
    pub file: String,
    /// The place in the document: `deny`, `sources[1].allow[0]`.
    pub path: String,
    /// A span into the file's text.
    pub span: Option<Span>,
}

/// How serious a diagnostic is: an error stops the build, a warning is
/// reported beside the engine it did not stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Severity {
    /// Reported; the build goes on.
    Warning,
    /// The build stops.
    Error,
}

/// What a [`Diagnostic`] is about: a stable, machine-readable kind whose
/// [`name`](DiagnosticKind::name) never changes (tests, conformance files and
/// hosts match on it), and its usual [`Severity`].
///
/// ```
/// use toolgate::diag::{DiagnosticKind, Severity};
/// let k = DiagnosticKind::from_name("no_matcher");
/// assert_eq!(k, Some(DiagnosticKind::NoMatcher));
/// assert_eq!(DiagnosticKind::NoMatcher.severity(), Severity::Error);
/// assert_eq!(DiagnosticKind::DuplicateRule.severity(), Severity::Warning);
/// assert_eq!(DiagnosticKind::DuplicateRule.to_string(), "duplicate_rule");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DiagnosticKind {
    /// Grammar: a rule's parentheses do not balance.
    UnbalancedParentheses,
    /// Grammar: a rule has no tool name before its specifier.
    MissingToolName,
    /// Grammar: text follows a rule's closing parenthesis.
    TextAfterSpecifier,
    /// Grammar: `Tool()`, a specifier with nothing in it.
    EmptySpecifier,
    /// Grammar: `Tool(!)`, a carve-out with nothing after the `!`.
    EmptyCarveOut,
    /// Grammar: parentheses nested past the grammar's limit.
    NestingTooDeep,
    /// A control character or NUL in a rule or a name.
    ControlCharacter,
    /// A rule that cannot be built: a tool glob with a specifier, a name that is not a tool.
    InvalidRule,
    /// A specifier the tool's matcher kind refuses.
    InvalidSpecifier,
    /// A rule with a specifier for a tool that has no matcher.
    NoMatcher,
    /// A policy that says no default decision.
    NoDefault,
    /// A tool-name glob where the list does not allow one.
    ToolGlob,
    /// A matcher kind no registry entry provides.
    UnknownKind,
    /// A splitter no registry entry provides.
    UnknownSplitter,
    /// A splitter that reads another argument member than its tool's
    /// matcher: the matcher would see the line unsplit.
    SplitterField,
    /// A rule written more than once, folded into one.
    DuplicateRule,
    /// A bare deny or ask rule whose tool is one typo from a declared tool.
    UnknownTool,
    /// A command-line tool read as one string, without a splitter.
    NoSplitter,
    /// A carve-out that reaches no rule of its list.
    UnreachableCarveOut,
    /// A rule that never decides: an earlier rule of its list covers it.
    ShadowedRule,
    /// A tool the host never sends under that name (`bash` for Claude
    /// Code's `Bash`).
    HostMismatch,
    /// A pattern whose automaton exceeds the compile limits.
    TooComplex,
    /// A document or table past its size limit.
    TooLarge,
    /// A policy document that does not read: bad JSON or TOML, a member of the wrong type.
    InvalidDocument,
    /// A member the document format does not define.
    UnknownMember,
    /// A Claude Code settings file that does not read.
    InvalidSettings,
    /// A Rubric bundle that does not read or validate.
    InvalidBundle,
    /// A condition value that must be a string and is not.
    NonStringValue,
    /// A `matches` pattern outside the syntax the dialect defines.
    InvalidPattern,
    /// An Authensor policy that does not read or validate.
    InvalidPolicy,
    /// Authensor: risk rules with no weights to add up.
    NoRiskWeights,
    /// Authensor: a sequence rule shorter than it can match.
    ShortSequence,
    /// A compiled artifact that does not load.
    Artifact,
    /// Something toolgate itself got wrong; please report it.
    Internal,
}

impl DiagnosticKind {
    /// Every kind, in the order declared.
    pub const ALL: &'static [DiagnosticKind] = &[
        DiagnosticKind::UnbalancedParentheses,
        DiagnosticKind::MissingToolName,
        DiagnosticKind::TextAfterSpecifier,
        DiagnosticKind::EmptySpecifier,
        DiagnosticKind::EmptyCarveOut,
        DiagnosticKind::NestingTooDeep,
        DiagnosticKind::ControlCharacter,
        DiagnosticKind::InvalidRule,
        DiagnosticKind::InvalidSpecifier,
        DiagnosticKind::NoMatcher,
        DiagnosticKind::NoDefault,
        DiagnosticKind::ToolGlob,
        DiagnosticKind::UnknownKind,
        DiagnosticKind::UnknownSplitter,
        DiagnosticKind::SplitterField,
        DiagnosticKind::DuplicateRule,
        DiagnosticKind::UnknownTool,
        DiagnosticKind::NoSplitter,
        DiagnosticKind::UnreachableCarveOut,
        DiagnosticKind::ShadowedRule,
        DiagnosticKind::HostMismatch,
        DiagnosticKind::TooComplex,
        DiagnosticKind::TooLarge,
        DiagnosticKind::InvalidDocument,
        DiagnosticKind::UnknownMember,
        DiagnosticKind::InvalidSettings,
        DiagnosticKind::InvalidBundle,
        DiagnosticKind::NonStringValue,
        DiagnosticKind::InvalidPattern,
        DiagnosticKind::InvalidPolicy,
        DiagnosticKind::NoRiskWeights,
        DiagnosticKind::ShortSequence,
        DiagnosticKind::Artifact,
        DiagnosticKind::Internal,
    ];

    /// The stable name: `unbalanced_parentheses`, `no_matcher`, …
    pub fn name(self) -> &'static str {
        match self {
            DiagnosticKind::UnbalancedParentheses => "unbalanced_parentheses",
            DiagnosticKind::MissingToolName => "missing_tool_name",
            DiagnosticKind::TextAfterSpecifier => "text_after_specifier",
            DiagnosticKind::EmptySpecifier => "empty_specifier",
            DiagnosticKind::EmptyCarveOut => "empty_carve_out",
            DiagnosticKind::NestingTooDeep => "nesting_too_deep",
            DiagnosticKind::ControlCharacter => "control_character",
            DiagnosticKind::InvalidRule => "invalid_rule",
            DiagnosticKind::InvalidSpecifier => "invalid_specifier",
            DiagnosticKind::NoMatcher => "no_matcher",
            DiagnosticKind::NoDefault => "no_default",
            DiagnosticKind::ToolGlob => "tool_glob",
            DiagnosticKind::UnknownKind => "unknown_kind",
            DiagnosticKind::UnknownSplitter => "unknown_splitter",
            DiagnosticKind::SplitterField => "splitter_field",
            DiagnosticKind::DuplicateRule => "duplicate_rule",
            DiagnosticKind::UnknownTool => "unknown_tool",
            DiagnosticKind::NoSplitter => "no_splitter",
            DiagnosticKind::UnreachableCarveOut => "unreachable_carve_out",
            DiagnosticKind::ShadowedRule => "shadowed_rule",
            DiagnosticKind::HostMismatch => "host_mismatch",
            DiagnosticKind::TooComplex => "too_complex",
            DiagnosticKind::TooLarge => "too_large",
            DiagnosticKind::InvalidDocument => "invalid_document",
            DiagnosticKind::UnknownMember => "unknown_member",
            DiagnosticKind::InvalidSettings => "invalid_settings",
            DiagnosticKind::InvalidBundle => "invalid_bundle",
            DiagnosticKind::NonStringValue => "non_string_value",
            DiagnosticKind::InvalidPattern => "invalid_pattern",
            DiagnosticKind::InvalidPolicy => "invalid_policy",
            DiagnosticKind::NoRiskWeights => "no_risk_weights",
            DiagnosticKind::ShortSequence => "short_sequence",
            DiagnosticKind::Artifact => "artifact",
            DiagnosticKind::Internal => "internal",
        }
    }

    /// The kind of that name.
    pub fn from_name(name: &str) -> Option<DiagnosticKind> {
        DiagnosticKind::ALL
            .iter()
            .copied()
            .find(|k| k.name() == name)
    }

    /// The severity a diagnostic of this kind has unless it says otherwise.
    pub fn severity(self) -> Severity {
        match self {
            DiagnosticKind::DuplicateRule
            | DiagnosticKind::UnknownTool
            | DiagnosticKind::NoSplitter
            | DiagnosticKind::UnreachableCarveOut
            | DiagnosticKind::ShadowedRule
            | DiagnosticKind::HostMismatch
            | DiagnosticKind::NoRiskWeights
            | DiagnosticKind::ShortSequence => Severity::Warning,
            _ => Severity::Error,
        }
    }
}

impl fmt::Display for DiagnosticKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl PartialEq<str> for DiagnosticKind {
    fn eq(&self, other: &str) -> bool {
        self.name() == other
    }
}

impl PartialEq<&str> for DiagnosticKind {
    fn eq(&self, other: &&str) -> bool {
        self.name() == *other
    }
}

impl serde::Serialize for DiagnosticKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// One error (or warning) about a policy, a call or an artifact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// A stable, machine-readable kind: `unbalanced_parentheses`,
    /// `no_matcher`, `invalid_document`, …
    pub kind: DiagnosticKind,
    /// Whether it stops the build; the kind's own severity unless a front
    /// end says otherwise ([`Diagnostic::as_warning`]).
    pub severity: Severity,
    /// The lowercase message, naming what the user wrote in backticks.
    pub message: String,
    /// What to do about it.
    pub help: Option<String>,
    /// Where it is.
    pub location: Location,
    /// The offending text, when there is one: the rule token for a grammar
    /// error, the rule's string form for a build error.
    pub token: String,
}

impl Diagnostic {
    /// A diagnostic of `kind` with `message` and nowhere in particular.
    pub fn new(kind: DiagnosticKind, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            kind,
            severity: kind.severity(),
            message: message.into(),
            help: None,
            location: Location::default(),
            token: String::new(),
        }
    }

    /// Adds a help line.
    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// Sets the offending token.
    pub fn with_token(mut self, token: impl Into<String>) -> Diagnostic {
        self.token = token.into();
        self
    }

    /// Sets the location.
    pub fn at(mut self, location: Location) -> Diagnostic {
        self.location = location;
        self
    }

    /// Points a diagnostic that has a document path and no span at what
    /// the path names in the JSON `text`: the member named by its token
    /// when it has one (an unknown member's name), else the whole value.
    /// Text that is not a JSON document leaves it as it was.
    ///
    /// ```
    /// use toolgate::diag::{Diagnostic, DiagnosticKind, Location};
    /// let text = "{\n  \"sources\": [{\"alow\": []}]\n}";
    /// let mut d = Diagnostic::new(DiagnosticKind::UnknownMember, "unknown member `alow`")
    ///     .with_token("alow")
    ///     .at(Location { file: String::new(), path: "sources[0]".into(), span: None });
    /// d.locate(text);
    /// let span = d.location.span.unwrap();
    /// assert_eq!(&text[span.start..span.end], "\"alow\"");
    /// ```
    pub fn locate(&mut self, text: &str) {
        if is_json(text) {
            self.locate_json(text);
        }
    }

    fn locate_json(&mut self, text: &str) {
        let loc = &mut self.location;
        if loc.span.is_some() || loc.path.is_empty() && self.token.is_empty() {
            return;
        }
        let Some((start, end)) = crate::json::locate(text, &loc.path) else {
            return;
        };
        loc.span = Some(member_key(text, start, end, &self.token).unwrap_or(Span::new(start, end)));
    }

    /// The same diagnostic reported as a warning: what an error of this
    /// kind is where the front end goes on (an unknown tool in a hook).
    pub fn as_warning(mut self) -> Diagnostic {
        self.severity = Severity::Warning;
        self
    }

    /// The diagnostic as one JSON object, for tools: `severity`, `code`,
    /// `message`, `file`, `path` (the place in the document), `line` and
    /// `column` (1-based, when `source` is the file's text and the
    /// diagnostic has a span), `help` and `token`.
    ///
    /// ```
    /// use toolgate::{Diagnostic, DiagnosticKind};
    /// let d = Diagnostic::new(DiagnosticKind::NoDefault, "the policy has no default");
    /// let v = d.to_json(None);
    /// assert_eq!((v["severity"].as_str(), v["code"].as_str()), (Some("error"), Some("no_default")));
    /// assert!(v["line"].is_null());
    /// ```
    pub fn to_json(&self, source: Option<&str>) -> serde_json::Value {
        let at = match (source, self.location.span) {
            (Some(src), Some(span)) => Some(line_col(src, span.start)),
            _ => None,
        };
        serde_json::json!({
            "severity": match self.severity {
                Severity::Warning => "warning",
                _ => "error",
            },
            "code": self.kind.name(),
            "message": self.message,
            "file": self.location.file,
            "path": self.location.path,
            "line": at.map(|(l, _)| l),
            "column": at.map(|(_, c)| c),
            "help": self.help,
            "token": self.token,
        })
    }

    /// The diagnostic with the text of the file it points into, as a
    /// [`miette::Report`] that miette's handlers render with the span
    /// labelled.
    ///
    /// ```
    /// use toolgate::{Engine, Policy};
    /// let text = r#"{"default": "ask", "allow": "Read Bash() Edit"}"#;
    /// let err = Policy::from_json(text).and_then(|p| Engine::build(&p).map(|_| ()));
    /// let d = err.err().map(|d| d.first().clone());
    /// let report = d.map(|d| d.report(text));
    /// let code = report.as_ref().and_then(|r| r.code()).map(|c| c.to_string());
    /// assert_eq!(code.as_deref(), Some("empty_specifier"));
    /// ```
    pub fn report(self, source: &str) -> miette::Report {
        let name = if self.location.file.is_empty() {
            "<policy>".to_string()
        } else {
            self.location.file.clone()
        };
        miette::Report::new(self)
            .with_source_code(miette::NamedSource::new(name, source.to_string()))
    }

    /// Renders the diagnostic for a terminal: the message, `--> file:line:col`
    /// with the document path, the line of `source` with the span underlined,
    /// and the help. `source` is the whole text of the file the location
    /// points into, when it is at hand.
    pub fn render(&self, source: Option<&str>) -> String {
        let level = match self.severity {
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        let mut out = format!("{level}[{}]: {}\n", self.kind, self.message);
        let loc = &self.location;
        let line_col = match (source, loc.span) {
            (Some(src), Some(span)) => Some(line_col(src, span.start)),
            _ => None,
        };
        let file = if loc.file.is_empty() {
            "<policy>"
        } else {
            loc.file.as_str()
        };
        match line_col {
            Some((line, col)) => out.push_str(&format!("  --> {file}:{line}:{col}")),
            None => out.push_str(&format!("  --> {file}")),
        }
        if !loc.path.is_empty() {
            out.push_str(&format!(" (at `{}`)", loc.path));
        }
        out.push('\n');
        if let (Some(src), Some(span), Some((line, col))) = (source, loc.span, line_col) {
            if let Some(text) = src.lines().nth(line.saturating_sub(1)) {
                let gutter = line.to_string();
                let pad = " ".repeat(gutter.len());
                let width = span
                    .end
                    .saturating_sub(span.start)
                    .min(text.len().saturating_sub(col - 1))
                    .max(1);
                // A long line (a policy written on one line, a rule list of
                // thousands) is shown as a window around the span.
                let chars: Vec<char> = text.chars().collect();
                let at = col.saturating_sub(1);
                let (from, to) = if chars.len() > 160 {
                    (
                        at.saturating_sub(40),
                        chars.len().min(at + width.min(80) + 40),
                    )
                } else {
                    (0, chars.len())
                };
                let mut shown: String = chars.get(from..to).unwrap_or_default().iter().collect();
                let mut lead: String = chars
                    .get(from..at.max(from))
                    .unwrap_or_default()
                    .iter()
                    .map(|&c| if c == '\t' { '\t' } else { ' ' })
                    .collect();
                if from > 0 {
                    shown.insert(0, '…');
                    lead.insert(0, ' ');
                }
                if to < chars.len() {
                    shown.push('…');
                }
                out.push_str(&format!("{pad} |\n{gutter} | {shown}\n{pad} | {lead}"));
                out.push_str(&"^".repeat(width.min(80)));
                out.push('\n');
            }
        }
        if let Some(help) = &self.help {
            out.push_str(&format!("  = help: {help}\n"));
        }
        out
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if !self.location.path.is_empty() {
            write!(f, " (at `{}`)", self.location.path)?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostic {}

impl miette::Diagnostic for Diagnostic {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.kind))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.severity {
            Severity::Warning => miette::Severity::Warning,
            Severity::Error => miette::Severity::Error,
        })
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display + 'a>)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let span = self.location.span?;
        let label = if self.token.is_empty() {
            None
        } else {
            Some(format!("`{}`", self.token))
        };
        let len = span.end.saturating_sub(span.start);
        Some(Box::new(std::iter::once(miette::LabeledSpan::new(
            label, span.start, len,
        ))))
    }
}

/// A non-empty list of diagnostics; its `Display` shows the first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostics {
    first: Box<Diagnostic>,
    rest: Vec<Diagnostic>,
}

impl Diagnostics {
    /// One diagnostic.
    pub fn one(d: Diagnostic) -> Diagnostics {
        Diagnostics {
            first: Box::new(d),
            rest: Vec::new(),
        }
    }

    /// The list, or `None` when it is empty.
    pub fn from_vec(mut v: Vec<Diagnostic>) -> Option<Diagnostics> {
        if v.is_empty() {
            return None;
        }
        let first = v.remove(0);
        Some(Diagnostics {
            first: Box::new(first),
            rest: v,
        })
    }

    /// The first diagnostic, the one that decides the error kind.
    pub fn first(&self) -> &Diagnostic {
        &self.first
    }

    /// Every diagnostic, in the order found.
    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        std::iter::once(&*self.first).chain(self.rest.iter())
    }

    /// How many there are (at least one).
    pub fn len(&self) -> usize {
        1 + self.rest.len()
    }

    /// Always false: the list is never empty.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Sets the file name on every diagnostic that has none.
    pub fn in_file(mut self, file: &str) -> Diagnostics {
        for d in std::iter::once(&mut *self.first).chain(self.rest.iter_mut()) {
            if d.location.file.is_empty() {
                d.location.file = file.to_string();
            }
        }
        self
    }

    /// Renders every diagnostic (see [`Diagnostic::render`]), in document
    /// order.
    pub fn render(&self, source: Option<&str>) -> String {
        self.in_document_order()
            .into_iter()
            .map(|d| d.render(source))
            .collect()
    }

    /// Points each diagnostic at what its path names in the JSON `text`
    /// (see [`Diagnostic::locate`]). Each search is linear in the text, so
    /// past the first thousand diagnostics only the paths are kept.
    pub fn locate(mut self, text: &str) -> Diagnostics {
        locate_all(
            std::iter::once(&mut *self.first).chain(self.rest.iter_mut()),
            text,
        );
        self
    }

    /// Every diagnostic in the order a reader meets them: by file, then by
    /// position; those without a position follow their file's, in the
    /// order found. [`first`](Diagnostics::first) is unchanged: it is the
    /// one that decides the error kind.
    pub fn in_document_order(&self) -> Vec<&Diagnostic> {
        let mut all: Vec<&Diagnostic> = self.iter().collect();
        all.sort_by_key(|d| {
            (
                d.location.file.as_str(),
                d.location.span.map_or(usize::MAX, |s| s.start),
            )
        });
        all
    }
}

/// As [`Diagnostics::locate`], over any diagnostics.
pub fn locate_all<'d>(ds: impl IntoIterator<Item = &'d mut Diagnostic>, text: &str) {
    // The path walk reads any text as far as it looks like JSON, so TOML
    // would be given a place that is not the one meant.
    if !is_json(text) {
        return;
    }
    for d in ds.into_iter().take(1000) {
        d.locate_json(text);
    }
}

fn is_json(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.first, f)?;
        if !self.rest.is_empty() {
            write!(f, " (and {} more)", self.rest.len())?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Diagnostics {
        Diagnostics::one(d)
    }
}

/// Where the member key `token` is written in the object `text[start..end]`:
/// the quoted name followed by its colon.
fn member_key(text: &str, start: usize, end: usize, token: &str) -> Option<Span> {
    if token.is_empty() {
        return None;
    }
    let quoted = serde_json::to_string(token).ok()?;
    let object = text.get(start..end)?;
    let mut from = 0;
    while let Some(i) = object.get(from..).and_then(|o| o.find(&quoted)) {
        let at = from + i;
        let after = object.get(at + quoted.len()..)?;
        if after.trim_start().starts_with(':') {
            return Some(Span::new(start + at, start + at + quoted.len()));
        }
        from = at + quoted.len();
    }
    None
}

/// The 1-based line and column (in characters) of byte `offset` in `src`.
pub fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(src.len());
    let mut line = 1;
    let mut line_start = 0;
    for (i, b) in src.bytes().enumerate() {
        if i >= offset {
            break;
        }
        if b == b'\n' {
            line += 1;
            line_start = i + 1;
        }
    }
    let col = src
        .get(line_start..offset)
        .map_or(1, |s| s.chars().count() + 1);
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_characters() {
        let src = "a\nbé(c\n";
        assert_eq!(line_col(src, 0), (1, 1));
        assert_eq!(line_col(src, 2), (2, 1));
        assert_eq!(line_col(src, 5), (2, 3));
    }

    #[test]
    fn kind_names_are_unique_and_read_back() {
        let mut seen = std::collections::HashSet::new();
        for &k in DiagnosticKind::ALL {
            assert!(seen.insert(k.name()), "{} twice", k.name());
            assert_eq!(DiagnosticKind::from_name(k.name()), Some(k));
            assert!(k
                .name()
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'_'));
        }
        assert_eq!(DiagnosticKind::from_name("no_such_kind"), None);
    }

    #[test]
    fn a_warning_renders_as_one() {
        let d = Diagnostic::new(
            DiagnosticKind::DuplicateRule,
            "rule `Read` is written twice",
        );
        assert_eq!(d.severity, Severity::Warning);
        assert!(d.render(None).starts_with("warning[duplicate_rule]: "));
        let e = Diagnostic::new(DiagnosticKind::NoMatcher, "an error that says error");
        assert!(e.render(None).starts_with("error[no_matcher]: "));
        let w = e.as_warning();
        assert!(w
            .render(None)
            .starts_with("warning[no_matcher]: an error that says error"));
    }

    #[test]
    fn miette_renders_the_code_the_help_and_the_span() {
        let src = "{\n  \"allow\": \"Read Bash() Edit\"\n}\n";
        let start = src.find("Bash()").unwrap_or(0);
        let d = Diagnostic::new(
            DiagnosticKind::EmptySpecifier,
            "rule `Bash()` has an empty specifier",
        )
        .with_help("write `Bash` for every call")
        .with_token("Bash()")
        .at(Location {
            file: "p.json".into(),
            path: "allow".into(),
            span: Some(Span::new(start, start + 6)),
        });
        let report = d.report(src);
        let mut out = String::new();
        let handler = miette::NarratableReportHandler::new();
        let shown = handler.render_report(&mut out, report.as_ref());
        assert!(shown.is_ok());
        assert!(
            out.contains("rule `Bash()` has an empty specifier"),
            "{out}"
        );
        assert!(out.contains("empty_specifier"), "{out}");
        assert!(out.contains("write `Bash` for every call"), "{out}");
        assert!(out.contains("p.json"), "{out}");
        assert!(
            out.contains("label at line 2, columns 18 to 23: `Bash()`"),
            "{out}"
        );
    }

    #[test]
    fn render_points_at_the_span() {
        let src = "{\n  \"allow\": \"Read Bash() Edit\"\n}\n";
        let start = src.find("Bash()").unwrap_or(0);
        let d = Diagnostic::new(
            DiagnosticKind::EmptySpecifier,
            "rule `Bash()` has an empty specifier",
        )
        .with_help("write `Bash` for every call")
        .at(Location {
            file: "p.json".into(),
            path: "allow".into(),
            span: Some(Span::new(start, start + 6)),
        });
        let text = d.render(Some(src));
        assert!(text.contains("--> p.json:2:18 (at `allow`)"), "{text}");
        assert!(text.contains("^^^^^^\n"), "{text}");
        assert!(
            text.contains("= help: write `Bash` for every call"),
            "{text}"
        );
    }
}
