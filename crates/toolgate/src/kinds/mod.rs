//! Matcher kinds for Claude Code's permission rules: `claude-bash`, `path`,
//! `path-reach` (whether a path rule could match a path known only as a
//! pattern) and `domain`.
//!
//! Each kind lowers its specifiers into the compiler's patterns (exact,
//! prefix, suffix, glob, regular expression) and answers
//! [`MatcherKind::matches`](crate::registry::MatcherKind::matches) on its
//! own, without the lowering, so that the reference evaluator holds the
//! tables to an independent reading. `path` and `domain` canonicalise the
//! call's value first ([`MatcherKind::normalize`](crate::registry::MatcherKind::normalize)):
//! a path made absolute and lexically clean against the call's working
//! directory, the host of a URL as a browser reads it. A value they cannot
//! read unambiguously is an error, which denies the call.
//!
//! `spec/claude-code.md` states every rule and every difference from
//! Claude Code. Depends on `registry` (and `reference` for the plain glob).

mod claude_bash;
#[cfg(feature = "domain")]
mod domain;
mod path;
mod reach;

pub use claude_bash::ClaudeBashKind;
#[cfg(feature = "domain")]
pub use domain::DomainKind;
pub use path::{PathKind, PathValue};
pub use reach::{PathReachKind, ANY_PATH};
