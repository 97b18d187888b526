//! The matcher registry: what a specifier means for each tool.
//!
//! A policy names, per tool, a matcher *kind* (`prefix`, `glob`, …), the
//! argument member it reads, and optionally a *splitter* that turns one call
//! into several subjects. The kinds and splitters themselves are code, held in
//! a [`Registry`]: the built-in ones, plus whatever a host registers.
//!
//! A kind says how its specifiers **lower** into the compiler's tables
//! ([`Lowering::Patterns`]: exact literals, prefixes, suffixes, globs,
//! regular expressions), so that deciding a call costs one pass over the
//! value whatever the number of rules. A kind that cannot lower answers
//! [`Lowering::Callback`]; the runtime then calls [`MatcherKind::matches`]
//! for each such rule, a documented slow path.
//!
//! Depends on `call`. The reference evaluator implements the built-in kinds on
//! its own and uses a kind's `matches` only for kinds it does not know.

use crate::call::{Args, Subject};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// One pattern a specifier lowers to. A specifier may lower to several; it
/// matches a value when any of them does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// The value equals the literal.
    Exact(String),
    /// The value starts with the literal.
    Prefix(String),
    /// The value ends with the literal.
    Suffix(String),
    /// agentpolicy's glob: `*` stands for any run of bytes, spaces included;
    /// every other byte is literal. Pieces match left-most, in order, without
    /// overlapping.
    Glob(String),
    /// Every string value.
    Any,
    /// A regular expression (regex-automata syntax) the whole value must
    /// match.
    Regex(String),
}

/// How a kind's specifier becomes table entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lowering {
    /// The specifier matches a value when any of the patterns does.
    Patterns(Vec<Pattern>),
    /// The kind cannot lower this specifier; the runtime calls
    /// [`MatcherKind::matches`] for it.
    Callback,
}

/// A matcher kind: how specifiers are read for the tools that use it.
pub trait MatcherKind: Send + Sync + fmt::Debug {
    /// The kind's name, as policies write it in `matchers.<tool>.match`.
    fn name(&self) -> &str;

    /// How `spec` lowers into the tables. `spec` is never empty and never a
    /// carve-out's `!`: a carve-out's pattern is lowered without it.
    ///
    /// # Errors
    ///
    /// A lowercase message saying why the specifier can never match, which
    /// refuses the policy (`invalid_specifier`).
    fn lower(&self, spec: &str) -> Result<Lowering, String>;

    /// The plain answer: whether `spec` matches the string `value`. The
    /// runtime calls it only for specifiers lowered to
    /// [`Lowering::Callback`]; the reference evaluator calls it for kinds it
    /// does not implement itself.
    fn matches(&self, spec: &str, value: &str) -> bool;

    /// The form of a call's value that this kind's patterns are matched
    /// against: a path made absolute and canonical against the call's
    /// working directory, the host of a URL. The default is the value as it
    /// is. Every engine calls it before matching, so a kind canonicalises in
    /// one place.
    ///
    /// # Errors
    ///
    /// A lowercase message when the value cannot be read as the kind
    /// requires (a URL with no host, a path that escapes the root); the
    /// subject is then denied as one that could not be evaluated, never
    /// merely left unmatched, so that a deny rule cannot be dodged by an
    /// ambiguous spelling.
    fn normalize<'v>(
        &self,
        value: &'v str,
        context: &CallContext<'_>,
    ) -> Result<Cow<'v, str>, String> {
        let _ = context;
        Ok(Cow::Borrowed(value))
    }
}

/// What a matcher kind may read of a call besides the value: its working
/// directory, when the call says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallContext<'c> {
    /// The directory the call runs in.
    pub cwd: Option<&'c str>,
}

/// Splits one call into the subjects it is decided on.
pub trait Splitter: Send + Sync + fmt::Debug {
    /// The subjects of a call of `tool` with `args`.
    ///
    /// # Errors
    ///
    /// A message that becomes the reason of the blocked call:
    /// `bash call could not be evaluated: <message>`. Returning no subjects
    /// blocks the call too.
    fn split(&self, tool: &str, args: &Args) -> Result<Vec<Subject>, String>;
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

    fn lower(&self, spec: &str) -> Result<Lowering, String> {
        Ok(Lowering::Patterns(vec![match spec.strip_suffix(":*") {
            Some(p) => Pattern::Prefix(p.to_string()),
            None => Pattern::Exact(spec.to_string()),
        }]))
    }

    fn matches(&self, spec: &str, value: &str) -> bool {
        crate::reference::prefix_matches(spec, value)
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

    fn lower(&self, spec: &str) -> Result<Lowering, String> {
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
        crate::reference::glob_spec_matches(spec, value)
    }
}

/// The kinds and splitters a policy may name.
///
/// ```
/// use toolgate::Registry;
/// let r = Registry::builtin();
/// assert!(r.kind("prefix").is_some() && r.kind("glob").is_some());
/// assert!(r.kind("path").is_some() && r.kind("domain").is_some());
/// assert!(r.kind("regex").is_none());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Registry {
    kinds: BTreeMap<String, Arc<dyn MatcherKind>>,
    splitters: BTreeMap<String, Arc<dyn Splitter>>,
}

impl Registry {
    /// The built-in kinds, `prefix` and `glob`, Claude Code's
    /// `claude-bash`, `path` (with no home directory) and `domain`
    /// ([`crate::kinds`]); the splitter `shell`
    /// ([`crate::shell::ShellSplitter`] with its default configuration) and
    /// `claude-shell` ([`crate::claude::ClaudeShellSplitter`]), the same
    /// splitter routing redirect targets and the file operands of the
    /// programs it knows to Claude Code's `Edit` and `Read` tools.
    pub fn builtin() -> Registry {
        let mut r = Registry::default();
        r.add_kind(Arc::new(PrefixKind));
        r.add_kind(Arc::new(GlobKind));
        r.add_kind(Arc::new(crate::kinds::ClaudeBashKind));
        r.add_kind(Arc::new(crate::kinds::PathKind::new()));
        r.add_kind(Arc::new(crate::kinds::DomainKind));
        r.add_splitter("shell", Arc::new(crate::shell::ShellSplitter::default()));
        r.add_splitter(
            "claude-shell",
            Arc::new(crate::claude::ClaudeShellSplitter::default()),
        );
        r
    }

    /// Registers a kind under its own name, replacing one of that name.
    pub fn add_kind(&mut self, kind: Arc<dyn MatcherKind>) -> &mut Registry {
        self.kinds.insert(kind.name().to_string(), kind);
        self
    }

    /// Registers a splitter under `name`, replacing one of that name.
    pub fn add_splitter(&mut self, name: &str, splitter: Arc<dyn Splitter>) -> &mut Registry {
        self.splitters.insert(name.to_string(), splitter);
        self
    }

    /// The kind called `name`.
    pub fn kind(&self, name: &str) -> Option<&Arc<dyn MatcherKind>> {
        self.kinds.get(name)
    }

    /// The splitter called `name`.
    pub fn splitter(&self, name: &str) -> Option<&Arc<dyn Splitter>> {
        self.splitters.get(name)
    }

    /// The names of the registered kinds, sorted.
    pub fn kind_names(&self) -> Vec<&str> {
        self.kinds.keys().map(String::as_str).collect()
    }

    /// The names of the registered splitters, sorted.
    pub fn splitter_names(&self) -> Vec<&str> {
        self.splitters.keys().map(String::as_str).collect()
    }
}
