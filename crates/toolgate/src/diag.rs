//! Diagnostics: spans into the text a user wrote, error kinds, and rendering.
//!
//! Every error toolgate reports about a policy is a [`Diagnostic`]: a stable
//! kind (`empty_specifier`, `no_matcher`, …), a lowercase message that names
//! what the user wrote in backticks, an optional help line saying what to do,
//! and where it is: the file, the place in the document (`sources[1].deny`),
//! and a byte span that [`Diagnostic::render`] turns into line and column.
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

/// One error (or warning) about a policy, a call or an artifact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// A stable, machine-readable kind: `unbalanced_parentheses`,
    /// `no_matcher`, `invalid_document`, …
    pub kind: &'static str,
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
    pub fn new(kind: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            kind,
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

    /// Renders the diagnostic for a terminal: the message, `--> file:line:col`
    /// with the document path, the line of `source` with the span underlined,
    /// and the help. `source` is the whole text of the file the location
    /// points into, when it is at hand.
    pub fn render(&self, source: Option<&str>) -> String {
        let mut out = format!("error[{}]: {}\n", self.kind, self.message);
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

    /// Renders every diagnostic (see [`Diagnostic::render`]).
    pub fn render(&self, source: Option<&str>) -> String {
        self.iter().map(|d| d.render(source)).collect()
    }
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
    fn render_points_at_the_span() {
        let src = "{\n  \"allow\": \"Read Bash() Edit\"\n}\n";
        let start = src.find("Bash()").unwrap_or(0);
        let d = Diagnostic::new("empty_specifier", "rule `Bash()` has an empty specifier")
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
