//! toolgate's runtime: what a host needs to decide tool calls from a
//! compiled artifact, and nothing more.
//!
//! The compiler (`toolgate`) reads policies in four dialects and lowers
//! them into flat tables; this crate holds the layout of those tables
//! ([`runtime::program`]), the validating reader of the binary artifact
//! that carries them ([`artifact`]), the walkers that decide a call over
//! them ([`runtime`]), the work budget that bounds every decision, and the
//! types every engine answers with ([`Decision`], [`Verdict`]). It has no
//! grammar, no compiler and no front end, so that an embedder that only
//! loads artifacts compiles a handful of crates.
//!
//! ```
//! use toolgate_core::{Call, Decision, List};
//!
//! let call = Call::new("bash", r#"{"command": "git status"}"#);
//! assert_eq!(call.tool, "bash");
//! assert_eq!(List::ALL, [List::Deny, List::Ask, List::Allow]);
//! assert!(Decision::Deny > Decision::Allow);
//! ```
//!
//! `ARCHITECTURE.md` at the repository root is the map of the crates and
//! their invariants; `spec/artifact.md` is the byte format.

#![forbid(unsafe_code)]
#![cfg_attr(
    test,
    allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

pub mod artifact;
pub mod call;
pub mod decision;
pub mod error;
pub mod glob;
pub mod json;
pub mod needles;
pub mod quote;
pub mod registry;
pub mod runtime;

pub use call::{Args, Call, Subject};
pub use decision::{Decision, List, RuleRef, Source, Verdict};
pub use error::{IntakeError, JsonError, MatcherError, SplitError};
pub use registry::{CallContext, Lowering, MatcherKind, Pattern, Registry, Splitter};
