//! The built-in matcher kinds and splitters, and the registry that holds
//! them.
//!
//! The traits and the table live in `toolgate_core::registry`, which knows
//! no implementation; this module is the one place that names every
//! built-in one, so that the layering runs one way: kinds and splitters
//! depend on the traits, and only this constructor depends on them all.
//!
//! The kinds' plain answers ([`MatcherKind::matches`]) use the production
//! glob (`toolgate_core::glob`), never the reference evaluator's.

use crate::registry::{Lowering, MatcherKind, Pattern, Registry};
use std::sync::Arc;
use toolgate_core::glob;

/// The built-in kinds, `prefix` and `glob`, Claude Code's `claude-bash`,
/// `path` and `path-reach` (with no home directory) and `domain` ([`crate::kinds`]); the
/// splitter `shell` ([`crate::shell::ShellSplitter`] with its default
/// configuration) and `claude-shell` ([`crate::claude::ClaudeShellSplitter`]),
/// the same splitter routing redirect targets and the file operands of the
/// programs it knows to Claude Code's `Edit` and `Read` tools.
///
/// ```
/// let r = toolgate::builtins::registry();
/// assert!(r.kind("prefix").is_some() && r.kind("glob").is_some());
/// assert!(r.kind("path").is_some() && r.kind("domain").is_some());
/// assert!(r.kind("regex").is_none());
/// assert_eq!(r.splitter_names(), ["claude-shell", "shell"]);
/// ```
pub fn registry() -> Registry {
    let mut r = Registry::default();
    r.add_kind(Arc::new(PrefixKind));
    r.add_kind(Arc::new(GlobKind));
    r.add_kind(Arc::new(crate::kinds::ClaudeBashKind));
    for k in crate::kinds::path_kinds(None) {
        r.add_kind(k);
    }
    #[cfg(feature = "domain")]
    r.add_kind(Arc::new(crate::kinds::DomainKind));
    r.add_splitter("shell", Arc::new(crate::shell::ShellSplitter::default()));
    r.add_splitter(
        "claude-shell",
        Arc::new(crate::claude::ClaudeShellSplitter::default()),
    );
    r
}

/// [`registry()`] with the path kinds reading `~` as `home` (the user's
/// home directory, absolute), as the command line and the service read
/// Claude Code's `Read(~/.ssh/**)`; without a home, `~` stays unresolved
/// and the rules that name it match nothing.
pub fn registry_at_home(home: Option<&str>) -> Registry {
    let mut r = registry();
    if let Some(h) = home.filter(|h| h.starts_with('/')) {
        for k in crate::kinds::path_kinds(Some(h)) {
            r.add_kind(k);
        }
    }
    r
}

/// agentpolicy's PrefixMatcher: `<prefix>:*` matches values starting with the
/// prefix; any other specifier matches the value exactly (a `*` elsewhere is
/// literal).
#[derive(Debug, Default, Clone, Copy)]
pub struct PrefixKind;

impl MatcherKind for PrefixKind {
    fn name(&self) -> &str {
        "prefix"
    }

    fn lower(&self, spec: &str) -> Result<Lowering, crate::error::MatcherError> {
        Ok(Lowering::Patterns(vec![match spec.strip_suffix(":*") {
            Some(p) => Pattern::Prefix(p.to_string()),
            None => Pattern::Exact(spec.to_string()),
        }]))
    }

    fn matches(&self, spec: &str, value: &str) -> bool {
        match spec.strip_suffix(":*") {
            Some(prefix) => value.starts_with(prefix),
            None => value == spec,
        }
    }
}

/// agentpolicy's GlobMatcher: `*` is any run of characters, and a trailing
/// `:*` is a wildcard at a word boundary (`ls:*` is `ls` or `ls *`).
#[derive(Debug, Default, Clone, Copy)]
pub struct GlobKind;

impl MatcherKind for GlobKind {
    fn name(&self) -> &str {
        "glob"
    }

    fn lower(&self, spec: &str) -> Result<Lowering, crate::error::MatcherError> {
        let patterns = match spec.strip_suffix(":*") {
            Some("") => vec![Pattern::Any],
            Some(p) => vec![
                Pattern::Glob(p.to_string()),
                Pattern::Glob(format!("{p} *")),
            ],
            None => vec![Pattern::Glob(spec.to_string())],
        };
        Ok(Lowering::Patterns(patterns))
    }

    fn matches(&self, spec: &str, value: &str) -> bool {
        match spec.strip_suffix(":*") {
            Some("") => true,
            Some(p) => glob::matches(p, value) || glob::matches(&format!("{p} *"), value),
            None => glob::matches(spec, value),
        }
    }
}
