//! Matcher kinds for Claude Code's permission rules: `claude-bash`, `path`,
//! `path-reach` (whether a path rule could match a path known only as a
//! pattern), their folded forms `path-fold` and `path-reach-fold` (for a
//! file system that ignores case and Unicode normalisation) and `domain`.
//!
//! Each kind lowers its specifiers into the compiler's patterns (exact,
//! prefix, suffix, glob, regular expression) and answers
//! [`MatcherKind::matches`] on its
//! own, without the lowering, so that the reference evaluator holds the
//! tables to an independent reading. `path` and `domain` canonicalise the
//! call's value first ([`MatcherKind::normalize`]):
//! a path made absolute and lexically clean against the call's working
//! directory, the host of a URL as a browser reads it. A value they cannot
//! read unambiguously is an error, which denies the call.
//!
//! `spec/claude-code.md` states every rule and every difference from
//! Claude Code. Depends on `registry` (and `reference` for the plain glob).

mod claude_bash;
#[cfg(feature = "domain")]
mod domain;
mod fold;
mod path;
mod reach;

pub use claude_bash::ClaudeBashKind;
#[cfg(feature = "domain")]
pub use domain::DomainKind;
pub use fold::{fold, FoldKind};
pub(crate) use path::clean;
pub use path::{PathKind, PathValue};
pub use reach::{PathReachKind, ANY_PATH};

use crate::registry::MatcherKind;
use std::sync::Arc;

/// The path kinds, told the home directory when there is one: `path`,
/// `path-reach`, and their folded forms `path-fold` and `path-reach-fold`.
/// What a host registers so that `~` in calls resolves (the built-in
/// registry has them with no home).
pub fn path_kinds(home: Option<&str>) -> [Arc<dyn MatcherKind>; 4] {
    let kinds = |home: Option<&str>| match home {
        Some(h) => (PathKind::with_home(h), PathReachKind::with_home(h)),
        None => (PathKind::new(), PathReachKind::new()),
    };
    let (path, reach) = kinds(home);
    // The folded kinds expand `~` to the folded home, so that a path under
    // it is inside a folded working directory there.
    let (fold_path, fold_reach) = kinds(home.map(fold).as_deref());
    [
        Arc::new(path),
        Arc::new(reach),
        Arc::new(FoldKind::new("path-fold", Arc::new(fold_path))),
        Arc::new(FoldKind::new("path-reach-fold", Arc::new(fold_reach))),
    ]
}
