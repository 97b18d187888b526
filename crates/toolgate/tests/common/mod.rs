//! Matcher kinds the integration tests register beside the built-in ones.
#![allow(dead_code)]

use std::sync::Arc;
use toolgate::{Lowering, MatcherKind, Pattern, Registry};

/// A matcher kind whose specifiers are regular expressions the whole value
/// must match: it makes the compiler write DFA sections.
#[derive(Debug)]
pub struct RegexKind;

impl MatcherKind for RegexKind {
    fn name(&self) -> &str {
        "regex"
    }
    fn lower(&self, spec: &str) -> Result<Lowering, toolgate::error::MatcherError> {
        Ok(Lowering::Patterns(vec![Pattern::Regex(spec.to_string())]))
    }
    fn matches(&self, spec: &str, value: &str) -> bool {
        regex_automata::dfa::regex::Regex::new(&format!("^(?:{spec})$"))
            .is_ok_and(|r| r.is_match(value))
    }
}

/// A matcher kind that never lowers: every specifier takes the callback
/// path.
#[derive(Debug)]
pub struct CallbackKind;

impl MatcherKind for CallbackKind {
    fn name(&self) -> &str {
        "contains"
    }
    fn lower(&self, _spec: &str) -> Result<Lowering, toolgate::error::MatcherError> {
        Ok(Lowering::Callback)
    }
    fn matches(&self, spec: &str, value: &str) -> bool {
        value.contains(spec)
    }
}

/// The built-in kinds with `regex` and `contains`.
pub fn registry() -> Registry {
    let mut r = toolgate::builtins::registry();
    r.add_kind(Arc::new(RegexKind));
    r.add_kind(Arc::new(CallbackKind));
    r
}
