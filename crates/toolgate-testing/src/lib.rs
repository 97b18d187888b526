//! What toolgate's tests, benchmarks and fuzz targets share, kept out of
//! the library so that no embedder compiles it: seeded workloads, the
//! generators for every dialect, the differential checks that hold the
//! compiled engines to their references, the shell splitter's comparison
//! with a real bash grammar, and the artifact reseal helper.
//!
//! * [`agentpolicy`]: generated agentpolicy documents, grant sets and calls,
//!   run on every engine and compared ([`agentpolicy::check_case`]).
//! * [`workload`]: policies of any size and call streams, and the [`Rng`]
//!   every generator draws from.
//! * [`rubric`] and [`authensor`]: generated Rubric bundles and Authensor
//!   policies with their requests and envelopes.
//! * [`classes`]: single-strategy policies whose rules share program
//!   prefixes, for the per-strategy benchmarks and differential tests.
//! * [`brush`]: the shell splitter against brush-parser.
//! * [`claude_kinds`]: the `path` and `domain` kinds, their compiled
//!   tables and the reference's own reading of them, on generated cases.
//! * [`reach`]: the `path-reach` kind held to its promise, that no path a
//!   query names and a rule covers goes unseen.
//! * [`real_shell`]: the shell splitter against bash and zsh themselves,
//!   run in a sandbox of stand-in programs.
//! * [`strategies`]: every match strategy against the reference on
//!   generated glob specifiers ([`strategies::check_strategies`]).
//! * [`reseal`]: rewrites an artifact's checksums after damage made on
//!   purpose, so that the damage reaches the structural checks.
//!
//! * [`store`]: the suite every state store passes; [`supervisor`]: the
//!   supervisor's behaviour on any store, one test each through
//!   [`supervisor_suite!`]; [`redis`]: a `redis-server` of a test's own on
//!   loopback.
//!
//! Not published: its API follows the tests.
//!
//! [`Rng`]: workload::Rng

#![forbid(unsafe_code)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "test support: a broken invariant here should stop the test loudly"
)]

pub mod agentpolicy;
pub mod authensor;
pub mod brush;
pub mod classes;
pub mod claude_kinds;
pub mod reach;
pub mod real_shell;
pub mod redis;
pub mod reseal;
pub mod rubric;
pub mod sealed;
pub mod store;
pub mod strategies;
pub mod supervisor;
pub mod workload;

/// What a differential check found: the engines disagreed, or one of them
/// refused what the other took, in words a failing test prints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch(pub String);

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Mismatch {}
