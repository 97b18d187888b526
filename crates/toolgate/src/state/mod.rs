//! State that outlives a decision: the calls a run deferred, the grants
//! made since the policy was built, a reviewer's history and the actions
//! of an Authensor session.
//!
//! The engines are immutable; what a conversation changes lives beside them
//! in a [`Store`]. The store knows nothing of rules or verdicts: it keeps
//! opaque records under keys the state layer chooses, and offers each
//! check-and-update the layer needs as one atomic operation, so that the
//! same code runs on [`MemoryStore`] inside one process and on a shared
//! store across replicas (the server's Redis store implements the same
//! trait, with each operation one script).

mod agent;
mod memory;
mod record;
mod review;
mod sealed;
mod store;

pub use agent::{
    trusted_source, Answer, Discarded, Event, EventKind, GrantOutcome, Hook, HookDecision, Missing,
    Observer, Reply, StateError, Supervisor, HELD_STOPPED,
};
pub use memory::MemoryStore;
pub use record::{decider, record, VERDICT_NAMESPACE};
pub use review::{DenialBound, PolicyReviewer, Review, Reviewer};
pub use sealed::{SealKey, SealKeyError, Sealed};
pub use store::{Appended, Namespace, Pending, Store, StoreError};
