//! Regular-expression patterns into bounded DFAs.
//!
//! Patterns are compiled in chunks into anchored DFAs reporting every
//! pattern that matches the whole value (`MatchKind::All`). Every build has
//! explicit size limits: a chunk whose DFA would exceed them is split in
//! two, and a single pattern that exceeds them is refused as `too_complex`.
//! Nothing ever falls back to an unbounded build.

use super::Limits;
use crate::diag::Diagnostic;
use crate::diag::DiagnosticKind;
use regex_automata::dfa::{dense, StartKind};
use regex_automata::nfa::thompson;
use regex_automata::util::syntax;
use regex_automata::MatchKind;

/// A built DFA and the rule id of each of its patterns, by pattern index.
pub(super) type Built = (dense::DFA<Vec<u32>>, Vec<u32>);

/// Patterns per DFA before any split.
const CHUNK: usize = 32;

/// Builds the DFAs for `patterns` (pattern, rule id). Each DFA comes with the
/// rule id of each of its patterns, by pattern index.
pub(super) fn build(patterns: &[(String, u32)], limits: Limits) -> Result<Vec<Built>, Diagnostic> {
    for (p, _) in patterns {
        if let Err(e) = syntax::parse(p) {
            return Err(Diagnostic::new(
                DiagnosticKind::InvalidSpecifier,
                format!("the regular expression `{p}` does not compile: {}", first_line(&e.to_string())),
            )
            .with_token(p.as_str())
            .with_help("write a regular expression in RE2 syntax; lookaround and backreferences are not supported"));
        }
    }
    let mut out = Vec::new();
    for chunk in patterns.chunks(CHUNK) {
        build_chunk(chunk, limits, &mut out)?;
    }
    Ok(out)
}

fn build_chunk(
    chunk: &[(String, u32)],
    limits: Limits,
    out: &mut Vec<Built>,
) -> Result<(), Diagnostic> {
    if chunk.is_empty() {
        return Ok(());
    }
    let pats: Vec<&str> = chunk.iter().map(|(p, _)| p.as_str()).collect();
    match dense::Builder::new()
        .configure(
            dense::DFA::config()
                .match_kind(MatchKind::All)
                .start_kind(StartKind::Anchored)
                .dfa_size_limit(Some(limits.dfa_bytes))
                .determinize_size_limit(Some(limits.dfa_bytes)),
        )
        .syntax(syntax::Config::new().utf8(true))
        .thompson(thompson::Config::new().nfa_size_limit(Some(limits.dfa_bytes)))
        .build_many(&pats)
    {
        Ok(dfa) => {
            out.push((dfa, chunk.iter().map(|(_, id)| *id).collect()));
            Ok(())
        }
        Err(e) if chunk.len() > 1 => {
            let _ = e;
            let (a, b) = chunk.split_at(chunk.len() / 2);
            build_chunk(a, limits, out)?;
            build_chunk(b, limits, out)
        }
        Err(e) => {
            let p = pats.first().copied().unwrap_or("");
            let msg = e.to_string();
            let (kind, help) = if msg.contains("word boundar") {
                (
                    DiagnosticKind::InvalidSpecifier,
                    "write the ASCII word boundary `(?-u:\\b)` instead",
                )
            } else {
                (
                    DiagnosticKind::TooComplex,
                    "simplify the pattern: bounded repetitions of large classes make DFAs grow exponentially",
                )
            };
            Err(Diagnostic::new(
                kind,
                format!(
                    "the regular expression `{p}` cannot be compiled within the limits: {}",
                    first_line(&msg)
                ),
            )
            .with_token(p)
            .with_help(help))
        }
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}
