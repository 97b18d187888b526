//! toolgate: a policy compiler and evaluator for AI-agent tool calls.
//!
//! An agent asks to run `bash` with `git push --force`, `read` on `.env`,
//! `mcp__github__delete_repo`: toolgate answers **allow**, **ask** or
//! **deny**, names the rule that decided and why, and does it in a walk over
//! the call's bytes, whatever the number of rules.
//!
//! ```
//! use toolgate::{Call, Decision, Engine, Policy};
//!
//! let policy = Policy::from_json(r#"{
//!     "default": "ask",
//!     "matchers": {"bash": {"match": "glob", "field": "command"}},
//!     "allow": "read bash(git status:*) bash(npm test:*)",
//!     "deny": "bash(rm:*) bash(curl:*)",
//!     "ask": "bash(git push:*) edit"
//! }"#)?;
//! let engine = Engine::build(&policy)?;
//!
//! let v = engine.decide(&Call::new("bash", r#"{"command": "git push --force"}"#));
//! assert_eq!(v.decision, Decision::Ask);
//! assert_eq!(v.rule_text(), "bash(git push:*)");
//! assert_eq!(v.reason, "approval required by bash(git push:*)");
//! # Ok::<(), toolgate::Diagnostics>(())
//! ```
//!
//! # Map
//!
//! * [`Policy`]: a policy document (JSON or TOML), parsed ([`syntax`] holds
//!   the rule grammar).
//! * [`Engine`]: checks and compiles a policy, decides calls
//!   ([`Engine::decide`], [`Engine::decide_batch`], [`Engine::would`]),
//!   activates grant sets and filters offered tools.
//! * The reference evaluators, the plain oracles the engines are tested
//!   against, and the conformance harness are the crate
//!   `toolgate-reference`, which depends on this one: nothing here can
//!   call them.
//! * [`Registry`]: matcher kinds and splitters.
//! * [`rubric`]: Rubric bundles (policies of rules that AND conditions over
//!   dot-path fields), compiled by [`conditions`] into the same tables.
//! * [`authensor`]: Authensor policies (prioritised, scoped, first-match,
//!   with session rules), compiled by [`conditions`] as first-match
//!   programs.
//!
//! `ARCHITECTURE.md` is the map of the modules and their invariants;
//! `spec/policy.md` is the normative semantics.

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
pub mod authensor;
pub mod builtins;
pub mod check;
pub mod claude;
pub mod compile;
pub mod conditions;
pub mod consulted;
pub mod diag;
pub mod engine;
pub mod format;
pub mod guards;
pub mod ir;
pub mod kinds;
pub mod open;
pub mod policy;
pub mod rubric;
pub mod state;
pub mod syntax;

// The runtime's modules, at the paths they had before the runtime became a
// crate of its own: the compiler writes what they read.
pub use toolgate_core::{call, decision, error, glob, json, quote, registry, runtime};
/// The shell splitter, a crate of its own (`toolgate-shell`).
pub use toolgate_shell as shell;

pub use call::{Args, Call, Subject};
pub use decision::{Decision, RuleRef, Verdict};
pub use diag::{Diagnostic, DiagnosticKind, Diagnostics, Location, Severity, Span};
pub use engine::{Engine, Evaluator, Grant, Grants, Refusal, Session};
pub use policy::{List, Policy, RuleDecl, RuleLists, RuleSet, ServerAllow, Source};
pub use registry::{CallContext, Lowering, MatcherKind, Pattern, Registry, Splitter};
