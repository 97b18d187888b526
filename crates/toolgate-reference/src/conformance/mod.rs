//! The conformance harness: one runner for every conformance file and every
//! engine.
//!
//! A conformance file is JSON, recognised by its shape:
//!
//! * **grammar**: `{"cases": [{"name", "input", "rules" | "error"}]}`;
//! * **matchers**: `{"cases": [{"matcher", "spec", "args" | "raw", "match"}]}`;
//! * **decisions**: `{"matchers"?, "cases": [{"name", "policy", ...}]}`,
//!   agentpolicy's `decisions.json` and toolgate's own cases alike;
//! * **claude-code**: `{"cases": [{"name", "settings", ...}]}`: Claude Code
//!   settings files read by the front end ([`toolgate::claude`]), then calls
//!   decided as the decision cases decide them.
//! * **rubric**: `{"cases": [{"name", "bundle", "requests", ...}]}`, Rubric
//!   bundles and the results their requests get (see `rubric.rs`).
//! * **authensor**: `{"cases": [{"name", "policies", "envelopes", ...}]}`,
//!   Authensor policies and the results their envelopes get (see
//!   `authensor.rs`).
//!
//! A **test file** is the format for people writing tests of their own
//! policy (`spec/testing.md`): `{"policy", "dialect"?, "tests": [{"tool",
//! "args", "decision", "rule"?, "reason"?}]}`, where only what a test gives
//! is compared and each test counts as one case.
//!
//! Grammar cases run once (parsing is shared); matcher and decision cases
//! run on every engine given, and a case passes when it passes on all of
//! them. Unknown members are refused at every level, so a misspelt
//! expectation cannot pass by being ignored.
//!
//! **The one loosened comparison.** Where agentpolicy's corpus expects a text
//! that quotes one of its own errors (a grant refusal such as
//! `agentpolicy: cannot grant a carve-out: …`), toolgate prints `toolgate:`
//! instead; [`expect_text`] maps that prefix, and nothing else in the
//! harness loosens a comparison.
//!
//! The harness does no I/O: callers hand it file names and contents.

mod authensor;
mod cases;
mod claude;
mod rubric;
mod tests;

pub use cases::{EngineKind, FileKind};
pub use tests::prepare;

/// The outcome of running conformance files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Cases that passed on every engine.
    pub passed: usize,
    /// Cases that failed on at least one engine.
    pub failed: usize,
    /// One line per failure: file, case, engines, what differed (a
    /// message several engines share is one line naming them all).
    pub failures: Vec<String>,
    /// One line per case that passed: file, case.
    pub passes: Vec<String>,
}

impl Report {
    /// Adds another report's counts and failures.
    pub fn merge(&mut self, other: Report) {
        self.passed += other.passed;
        self.failed += other.failed;
        self.failures.extend(other.failures);
        self.passes.extend(other.passes);
    }

    /// The summary line: `N passed, N failed`.
    pub fn summary(&self) -> String {
        format!("{} passed, {} failed", self.passed, self.failed)
    }
}

/// Runs one conformance file on `engines`.
///
/// # Errors
///
/// A message when the file is not JSON or has no recognisable shape, or has
/// members the harness does not know.
pub fn run_file(name: &str, text: &str, engines: &[EngineKind]) -> Result<Report, CaseFileError> {
    cases::run(name, text, engines).map_err(CaseFileError)
}

/// A conformance file the harness cannot read: not JSON, no recognisable
/// shape, or members it does not know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseFileError(String);

impl std::fmt::Display for CaseFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CaseFileError {}

/// Maps agentpolicy's error prefix in an expected text to toolgate's (see
/// the module documentation).
pub fn expect_text(expected: &str) -> String {
    match expected.strip_prefix("agentpolicy:") {
        Some(rest) => format!("toolgate:{rest}"),
        None => expected.to_string(),
    }
}
