//! One specifier of a built-in matcher kind against one value: the compiled
//! tables against the reference matchers.

use super::case::{gen_spec, value_from_spec, FILLERS, WORDS};
use super::kinds::{Path, StandIn};
use super::{chance, pick};
use arbitrary::{Arbitrary, Result, Unstructured};
use serde_json::json;
use std::fmt;
use std::sync::Arc;
use toolgate::call::Args;
use toolgate::decision::Decision;
use toolgate::engine::Engine;
use toolgate::policy::{MatcherDecl, Policy, RuleDecl};
use toolgate_reference::{glob_spec_matches, prefix_matches};

/// The longest specifier the matcher cases lower to a regular expression.
const MAX_REGEX_SPEC: usize = 48;

/// A specifier of kind `kind` (`prefix` or `glob`) and a value, most often
/// built from the specifier's own pieces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatcherCase {
    /// `prefix` or `glob`.
    pub kind: &'static str,
    /// The specifier (never empty, never a carve-out).
    pub spec: String,
    /// The value of the member the matcher reads.
    pub value: String,
    /// The compiler path of the compiled side: `None` for the built-in
    /// kind, or a [`StandIn`] lowering to callbacks or DFAs.
    pub path: Option<Path>,
}

impl<'a> Arbitrary<'a> for MatcherCase {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<MatcherCase> {
        let kind = pick(u, &["prefix", "glob"])?;
        let spec = if chance(u, 1, 5)? {
            // Anything at all, from the input.
            let s: String = u.arbitrary()?;
            s
        } else {
            gen_spec(u)?
        };
        let spec = normal_spec(spec);
        let value = match u.int_in_range(0..=9)? {
            0 => u.arbitrary()?,
            1 => {
                let mut v = String::new();
                for _ in 0..u.int_in_range(0..=4)? {
                    v.push_str(pick(u, WORDS)?);
                    v.push_str(pick(u, FILLERS)?);
                }
                v
            }
            _ => value_from_spec(u, &spec)?,
        };
        let path = match u.int_in_range(0..=7)? {
            0 => Some(Path::Callback),
            1 => Some(Path::Regex),
            _ => None,
        };
        Ok(MatcherCase {
            kind,
            spec,
            value,
            path,
        })
    }
}

/// A specifier a one-rule policy can hold as a firing rule: not empty (that
/// would be a bare rule) and not starting with `!` (a carve-out).
fn normal_spec(mut spec: String) -> String {
    while let Some(rest) = spec.strip_prefix('!') {
        spec = rest.to_string();
    }
    if spec.is_empty() {
        spec.push('*');
    }
    spec
}

impl MatcherCase {
    /// The case as a matchers-format conformance file.
    pub fn to_case_json(&self, want: bool) -> serde_json::Value {
        json!({"cases": [{
            "matcher": self.kind,
            "spec": self.spec,
            "field": "v",
            "args": {"v": self.value},
            "match": want,
        }]})
    }
}

impl fmt::Display for MatcherCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_case_json(false))
    }
}

/// Whether the compiled tables and the reference matcher agree on `c`:
/// the compiled side is a one-rule policy (`deny t(spec)`, the kind, or its
/// stand-in on `c.path`, reading member `v`) and [`Engine::matching_rules`]; the reference side is
/// [`prefix_matches`] or [`glob_spec_matches`]. Returns the answer.
///
/// # Errors
///
/// A message naming both answers, with the case as a matchers-format
/// conformance file holding the reference's answer; or the build error.
pub fn check_matcher(c: &MatcherCase) -> std::result::Result<bool, crate::Mismatch> {
    check_matcher_inner(c).map_err(crate::Mismatch)
}

fn check_matcher_inner(c: &MatcherCase) -> std::result::Result<bool, String> {
    let spec = normal_spec(c.spec.clone());
    // Arguments holding a NUL byte are unreadable, and unreadable arguments
    // match no specifier.
    let want = !c.value.contains('\0')
        && match c.kind {
            "prefix" => prefix_matches(&spec, &c.value),
            _ => glob_spec_matches(&spec, &c.value),
        };
    let mut policy = Policy {
        default: Some(Decision::Allow),
        ..Policy::default()
    };
    policy.matchers.push(MatcherDecl {
        tool: "t".into(),
        kind: Some(c.kind.to_string()),
        field: Some("v".into()),
        split: None,
        location: Default::default(),
    });
    policy.host.deny.push(RuleDecl::new("t", Some(&spec)));
    let case = MatcherCase {
        kind: c.kind,
        spec,
        value: c.value.clone(),
        path: c.path,
    };
    // A long specifier as a regular expression makes a DFA that takes
    // seconds to build (or to refuse as too complex): such a case runs on
    // the built-in kind.
    let path = c
        .path
        .filter(|p| *p != Path::Regex || case.spec.len() <= MAX_REGEX_SPEC);
    let mut registry = toolgate::builtins::registry();
    if let Some(path) = path {
        registry.add_kind(Arc::new(StandIn { kind: c.kind, path }));
    }
    let engine = match Engine::build_with(&policy, &registry) {
        Ok(e) => e,
        // The DFA builder may refuse a regular expression (`too_complex`),
        // as documented; the reference compiles nothing to compare.
        Err(d) if path == Some(Path::Regex) && d.first().kind == "too_complex" => return Ok(want),
        Err(d) => {
            return Err(format!(
                "the one-rule policy did not build ({path:?}): {d}\n{case}"
            ))
        }
    };
    let args = Args::from_value(json!({ "v": c.value }));
    let got = !engine.matching_rules("t", &args).is_empty();
    if got == want {
        Ok(want)
    } else {
        Err(format!(
            "{} {:?} on {:?} (compiled path {:?}): compiled {got}, reference {want}\n{}",
            c.kind,
            case.spec,
            c.value,
            path,
            case.to_case_json(want)
        ))
    }
}
