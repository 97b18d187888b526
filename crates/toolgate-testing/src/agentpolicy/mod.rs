//! Generators and differential checks, shared by `tests/differential.rs`
//! and the fuzz targets in `fuzz/` (feature `arbitrary`).
//!
//! The compiled tables are only trustworthy if the plain reference evaluator
//! agrees with them on everything a generator can reach. This module makes
//! the inputs and states the properties; the callers only feed bytes:
//!
//! * [`Case`]: a policy document (sources, ranks, trust, carve-outs,
//!   tool-name globs, aliases, notes, matchers with a simulated splitter),
//!   grant sets with scopes, revocations, calls, a batch and an offer.
//!   [`check_case`] runs it on every engine of [`ENGINES`] and compares
//!   everything they answer. A failing case prints as a decisions-format
//!   conformance file ([`Case::to_case_json`]), the format of
//!   `testdata/policy/*.json`: a finding becomes a regression case by
//!   copy-paste into `testdata/regressions/`.
//! * [`MatcherCase`]: one specifier of a built-in kind against one value,
//!   compiled against the reference matchers ([`check_matcher`]).
//! * [`check_parse`]: any text as a rule list and as a policy document.
//! * [`PolicyValue`]: JSON values shaped like policy documents, mutated
//!   ([`check_policy_json`]).
//!
//! Generation is biased towards the interesting: a handful of tool names
//! (`bash`, `read`, `edit`, `mcp__a__b`, the aliases `Bash` and `Read`),
//! specifiers built from a few words, `*`, `:*` and `!`, values built from
//! the specifiers' own pieces so that matches are common, ranks in -1..3.
//!
//! [`Rng`] turns a seed into bytes for [`arbitrary::Unstructured`], so that
//! the same generators run deterministically on stable Rust.

mod case;
mod grammar;
mod kinds;
mod matchers;
mod policy_json;
mod run;

pub use case::{
    ArgsDoc, CallStep, Case, GrantStep, ListsDoc, MatcherEntry, PolicyDoc, RevokeStep, RuleDoc,
    SourceDoc, SplitDoc, SubjectDoc,
};
pub use grammar::check_parse;
pub use kinds::{Path, StandIn};
pub use matchers::{check_matcher, MatcherCase};
pub use policy_json::{check_policy_json, PolicyValue};
pub use run::{
    check_case, check_case_with, run_engine, setup, Build, Mismatch, Outcome, Ran, SimSplitter,
    ENGINES,
};

/// A small deterministic generator (SplitMix64): seeds in, bytes out, the
/// same on every machine.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator started at `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// `n` bytes, to feed an [`arbitrary::Unstructured`].
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(n + 8);
        while out.len() < n {
            out.extend_from_slice(&self.next_u64().to_le_bytes());
        }
        out.truncate(n);
        out
    }
}

/// Generates a `T` from `n` bytes of the generator seeded with `seed`.
///
/// # Errors
///
/// The generator's error, when the bytes cannot make a `T`.
pub fn generate<T>(seed: u64, n: usize) -> arbitrary::Result<T>
where
    T: for<'a> arbitrary::Arbitrary<'a>,
{
    let bytes = Rng::new(seed).bytes(n);
    let mut u = arbitrary::Unstructured::new(&bytes);
    T::arbitrary(&mut u)
}

/// One of `xs`, chosen by the input.
fn pick<T: Copy>(u: &mut arbitrary::Unstructured<'_>, xs: &[T]) -> arbitrary::Result<T> {
    u.choose(xs).copied()
}

/// Whether to do something, `n` times in `d`.
fn chance(u: &mut arbitrary::Unstructured<'_>, n: u8, d: u8) -> arbitrary::Result<bool> {
    u.ratio(n, d)
}

/// How many, between `lo` and `hi`.
fn count(u: &mut arbitrary::Unstructured<'_>, lo: usize, hi: usize) -> arbitrary::Result<usize> {
    u.int_in_range(lo..=hi)
}
