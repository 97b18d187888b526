//! Stand-ins for the built-in matcher kinds that take the compiler's other
//! paths: the same answers as `prefix` and `glob`, lowered to callbacks or
//! to regular expressions. Registered under the built-in names, they leave
//! the reference (which implements `prefix` and `glob` itself) unchanged and
//! send the compiled engines through the callback slow path or the DFAs,
//! which the built-in kinds never reach.

use std::sync::Arc;
use toolgate::registry::{Lowering, MatcherKind, Pattern};
use toolgate_reference::{glob_spec_matches, prefix_matches};

/// How a stand-in lowers its specifiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// Every specifier is a callback: the runtime asks the kind.
    Callback,
    /// Every specifier is a regular expression: the tables hold DFAs.
    Regex,
}

/// A stand-in for `prefix` or `glob`.
#[derive(Clone, Copy, Debug)]
pub struct StandIn {
    /// `prefix` or `glob`: the built-in kind it answers as.
    pub kind: &'static str,
    /// The compiler path its specifiers take.
    pub path: Path,
}

impl StandIn {
    /// The stand-ins for both built-in kinds on `path`.
    pub fn both(path: Path) -> Vec<Arc<dyn MatcherKind>> {
        vec![
            Arc::new(StandIn {
                kind: "prefix",
                path,
            }),
            Arc::new(StandIn { kind: "glob", path }),
        ]
    }
}

/// A regular expression matching exactly `s`.
fn literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// agentpolicy's glob as a regular expression: the pieces between stars, in
/// order, with anything between them. Left-most non-overlapping pieces
/// match exactly when such a regular expression does.
fn glob_regex(pattern: &str) -> String {
    let pieces: Vec<String> = pattern.split('*').map(literal).collect();
    format!("(?s){}", pieces.join(".*"))
}

impl MatcherKind for StandIn {
    fn name(&self) -> &str {
        self.kind
    }

    fn lower(&self, spec: &str) -> Result<Lowering, toolgate::error::MatcherError> {
        if self.path == Path::Callback {
            return Ok(Lowering::Callback);
        }
        let patterns = match (self.kind, spec.strip_suffix(":*")) {
            ("prefix", Some(p)) => vec![Pattern::Regex(format!("(?s){}.*", literal(p)))],
            ("prefix", None) => vec![Pattern::Regex(literal(spec))],
            (_, Some("")) => vec![Pattern::Regex("(?s).*".into())],
            (_, Some(p)) => vec![
                Pattern::Regex(glob_regex(p)),
                Pattern::Regex(glob_regex(&format!("{p} *"))),
            ],
            (_, None) => vec![Pattern::Regex(glob_regex(spec))],
        };
        Ok(Lowering::Patterns(patterns))
    }

    fn matches(&self, spec: &str, value: &str) -> bool {
        match self.kind {
            "prefix" => prefix_matches(spec, value),
            _ => glob_spec_matches(spec, value),
        }
    }
}
