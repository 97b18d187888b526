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
//! Depends on `call` only. The table of what is registered lives here; the
//! built-in kinds and splitters are the compiler crate's (`toolgate::builtins`),
//! so that this crate knows no implementation. The reference evaluator
//! implements the built-in kinds on its own and uses a kind's `matches` only
//! for kinds it does not know.

use crate::call::{Args, Subject};
use crate::error::{MatcherError, SplitError};
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
    fn lower(&self, spec: &str) -> Result<Lowering, MatcherError>;

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
    ) -> Result<Cow<'v, str>, MatcherError> {
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
    fn split(&self, tool: &str, args: &Args) -> Result<Vec<Subject>, SplitError>;

    /// The argument member the splitter reads, when it reads one: a policy
    /// whose matcher reads another is refused, since the splitter would
    /// never find its text and the matcher would see the line unsplit.
    fn field(&self) -> Option<&str> {
        None
    }
}

/// The kinds and splitters a policy may name.
///
/// This crate registers nothing itself: the built-in kinds and splitters
/// live with the compiler (`toolgate::builtins::registry()`), and a host
/// that decides from an artifact registers the ones its tables name.
///
/// ```
/// use toolgate_core::Registry;
/// let r = Registry::default();
/// assert!(r.kind("prefix").is_none() && r.kind_names().is_empty());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Registry {
    kinds: BTreeMap<String, Arc<dyn MatcherKind>>,
    splitters: BTreeMap<String, Arc<dyn Splitter>>,
}

impl Registry {
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
