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
    split_build(patterns, CHUNK, limits, &mut |dfa, ids| out.push((dfa, ids))).map_err(
        |TooLarge { pattern: p, message: msg }| {
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
            Diagnostic::new(
                kind,
                format!("the regular expression `{p}` cannot be compiled within the limits: {msg}"),
            )
            .with_token(p.as_str())
            .with_help(help)
        },
    )?;
    Ok(out)
}

/// A single pattern whose DFA does not fit the limits, with the first line
/// of the builder's message.
pub(crate) struct TooLarge {
    /// The pattern.
    pub pattern: String,
    /// Why it did not build.
    pub message: String,
}

/// Builds `patterns` (pattern, id) into anchored DFAs that report every
/// pattern matching the whole value, `chunk` patterns at a time; a chunk
/// whose DFA exceeds `limits` is split in halves until it fits. `out`
/// receives each DFA with the id of each of its patterns, by pattern
/// index. Rule lists' regular expressions and condition programs'
/// anchored globs are both built here, so both are bounded alike.
///
/// # Errors
///
/// The first single pattern that does not fit.
pub(crate) fn split_build(
    patterns: &[(String, u32)],
    chunk: usize,
    limits: Limits,
    out: &mut dyn FnMut(dense::DFA<Vec<u32>>, Vec<u32>),
) -> Result<(), TooLarge> {
    for c in patterns.chunks(chunk.max(1)) {
        build_chunk(c, limits, out)?;
    }
    Ok(())
}

fn build_chunk(
    chunk: &[(String, u32)],
    limits: Limits,
    out: &mut dyn FnMut(dense::DFA<Vec<u32>>, Vec<u32>),
) -> Result<(), TooLarge> {
    if chunk.is_empty() {
        return Ok(());
    }
    let pats: Vec<&str> = chunk.iter().map(|(p, _)| p.as_str()).collect();
    match anchored_dfa(&pats, limits.dfa_bytes) {
        Ok(dfa) => {
            out(dfa, chunk.iter().map(|(_, id)| *id).collect());
            Ok(())
        }
        Err(_) if chunk.len() > 1 => {
            let (a, b) = chunk.split_at(chunk.len() / 2);
            build_chunk(a, limits, out)?;
            build_chunk(b, limits, out)
        }
        Err(message) => Err(TooLarge {
            pattern: pats.first().copied().unwrap_or("").to_string(),
            message,
        }),
    }
}

/// One anchored DFA over `patterns`, `MatchKind::All`, every size (NFA,
/// determinisation, DFA) bounded by `limit` bytes; the first line of the
/// builder's message when it does not fit.
///
/// # Errors
///
/// Why the DFA could not be built.
pub(crate) fn anchored_dfa(
    patterns: &[&str],
    limit: usize,
) -> Result<dense::DFA<Vec<u32>>, String> {
    dense::Builder::new()
        .configure(
            dense::DFA::config()
                .match_kind(MatchKind::All)
                .start_kind(StartKind::Anchored)
                .dfa_size_limit(Some(limit))
                .determinize_size_limit(Some(limit)),
        )
        .syntax(syntax::Config::new().utf8(true))
        .thompson(thompson::Config::new().nfa_size_limit(Some(limit)))
        .build_many(patterns)
        .map_err(|e| first_line(&e.to_string()).to_string())
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}
