//! The [`Store`] trait: what the state layer asks of a store, each call one
//! atomic step.

use std::fmt;

/// Where a store keeps one tenant's state for one policy: every key a store
/// writes starts with the namespace, so two tenants, or two artifacts
/// served side by side, never read each other's runs or sessions.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Namespace {
    /// The tenant, `default` when the service has one.
    pub tenant: String,
    /// The policy the state belongs to: an artifact's revision, or a name
    /// the host chooses for state that must survive a policy swap (grants).
    pub scope: String,
}

impl Namespace {
    /// A namespace for `tenant` and `scope`.
    pub fn new(tenant: impl Into<String>, scope: impl Into<String>) -> Namespace {
        Namespace {
            tenant: tenant.into(),
            scope: scope.into(),
        }
    }
}

/// One call a run left pending: its id and the record the state layer
/// wrote for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    /// The call's id, unique within its run.
    pub call_id: String,
    /// What the state layer wrote (the call and the verdict that deferred
    /// it, in a form of its choosing).
    pub record: Vec<u8>,
}

/// What [`Store::append_if`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Appended {
    /// The session had exactly the expected number of actions; the new
    /// one is appended.
    Done,
    /// Another writer appended first: here is the session as it stands,
    /// to decide again.
    Stale(Vec<Vec<u8>>),
}

/// Why a store could not answer. A decision that needs the store and gets
/// one of these is denied, never allowed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// The store could not be reached, or broke off mid-answer.
    Unavailable(String),
    /// The store answered with something this version cannot read.
    Corrupt(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Unavailable(why) => write!(
                f,
                "the state store cannot be reached ({why}); the call is denied until it is back"
            ),
            StoreError::Corrupt(why) => write!(
                f,
                "the state store holds a record this version cannot read ({why}); the calls it bears on are denied until it is removed (or toolgate upgraded, when a newer one wrote it)"
            ),
        }
    }
}

impl std::error::Error for StoreError {}

/// What the state layer keeps, and the atomic steps it takes on it.
///
/// Records are opaque bytes. Every method is one atomic step: two callers,
/// in one process or on two machines sharing the store, never both take
/// the same pending call, and never both append to a session that had the
/// same length. Implementations expire what they keep after a time they
/// are configured with; nothing here depends on a clock.
pub trait Store: Send + Sync {
    /// Remember `call_id` as pending under `run`, after the calls already
    /// there (the model's order). A second `defer` of the same call
    /// replaces its record and keeps its place.
    fn defer(
        &self,
        ns: &Namespace,
        run: &str,
        call_id: &str,
        record: &[u8],
    ) -> Result<(), StoreError>;

    /// The calls pending under `run`, in the order they were deferred.
    fn pending(&self, ns: &Namespace, run: &str) -> Result<Vec<Pending>, StoreError>;

    /// Take the named calls off `run` and return those that were still
    /// there, in the order they were deferred: a call is answered once,
    /// whoever asks first. An empty `call_ids` takes every call of the run.
    fn take(
        &self,
        ns: &Namespace,
        run: &str,
        call_ids: &[&str],
    ) -> Result<Vec<Pending>, StoreError>;

    /// Drop everything `run` left pending; how many calls that was.
    fn forget(&self, ns: &Namespace, run: &str) -> Result<usize, StoreError>;

    /// The runs with at least one pending call, sorted.
    fn runs(&self, ns: &Namespace) -> Result<Vec<String>, StoreError>;

    /// Keep `record` as the grant set of `source` under `scope` (the empty
    /// scope: every conversation), replacing one kept before.
    fn put_grant(
        &self,
        ns: &Namespace,
        scope: &str,
        source: &str,
        record: &[u8],
    ) -> Result<(), StoreError>;

    /// Drop the grant set of `source` under `scope`; whether there was one.
    fn remove_grant(&self, ns: &Namespace, scope: &str, source: &str) -> Result<bool, StoreError>;

    /// Drop the grant record of `source` under `scope` only if it is still
    /// exactly `record`, in one atomic step; whether it was. A repair reads
    /// a record, finds it unreadable and drops it: a replica that wrote a
    /// good one in between keeps it.
    fn remove_grant_if(
        &self,
        ns: &Namespace,
        scope: &str,
        source: &str,
        record: &[u8],
    ) -> Result<bool, StoreError>;

    /// Every grant set kept, as `(scope, source, record)`, sorted by scope
    /// then source.
    fn grants(&self, ns: &Namespace) -> Result<Vec<(String, String, Vec<u8>)>, StoreError>;

    /// Drop every grant record kept under a name this store cannot read
    /// back as a scope and a source (so [`Store::grants`] fails on it),
    /// each only while it still holds what was read with it; the names
    /// dropped, as text. A store that keys grants by scope and source
    /// itself, as the memory store does, has none to drop.
    fn discard_unnamed_grants(&self, ns: &Namespace) -> Result<Vec<String>, StoreError> {
        let _ = ns;
        Ok(Vec::new())
    }

    /// Append one review's outcome (`true`: a refusal) to the reviewer
    /// history under `key` and return the last `window` outcomes, oldest
    /// first, the new one included.
    fn review(
        &self,
        ns: &Namespace,
        key: &str,
        refused: bool,
        window: usize,
    ) -> Result<Vec<bool>, StoreError>;

    /// Forget the reviewer history under `key`.
    fn reset_reviews(&self, ns: &Namespace, key: &str) -> Result<(), StoreError>;

    /// The actions of `session`, oldest first.
    fn history(&self, ns: &Namespace, session: &str) -> Result<Vec<Vec<u8>>, StoreError>;

    /// Append `action` to `session` if it holds exactly `expected` actions
    /// (what the caller decided on); otherwise append nothing and return
    /// the session as it stands. This is how an admission against
    /// `maxActions`, a forbidden sequence or a budget stays atomic across
    /// replicas: decide on a history, then append only if it is still the
    /// history.
    fn append_if(
        &self,
        ns: &Namespace,
        session: &str,
        expected: usize,
        action: &[u8],
    ) -> Result<Appended, StoreError>;

    /// Whether the store answers now (the service's readiness).
    fn ping(&self) -> Result<(), StoreError>;
}

/// A store shows as its kind alone: what it keeps is state, not
/// configuration, and a URL may carry a password.
impl fmt::Debug for dyn Store + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("dyn Store")
    }
}
