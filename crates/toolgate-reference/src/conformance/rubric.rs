//! Rubric cases: a bundle (or none), requests and the results they get, run
//! on the reference interpreter, the compiled engine and the engine loaded
//! back from its artifact.
//!
//! ```json
//! {"cases": [{"name": "...", "about": "...",
//!   "bundle": {...} | null,
//!   "load_error": "text the first diagnostic's message contains",
//!   "compile_errors": [{"policyId": "...", "ruleId": "...", "field": "..."}],
//!   "requests": [{"request": {...} | "raw": "text",
//!                 "want": {"decision", "matchedPolicyId", "matchedPolicyVersion",
//!                          "matchedRuleId", "code", "reason"}}]}]}
//! ```
//!
//! A member of `want` left out must be `null` in the result; `latencyMs` is
//! never compared.

use super::cases::record;
use super::{EngineKind, Report};
use crate::rubric::RubricReference;
use serde::Deserialize;
use serde_json::Value;
use toolgate::rubric::{Bundle, Request, RubricEngine, RubricEvaluator, RubricResult};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RubricFile {
    cases: Vec<RubricCase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RubricCase {
    name: String,
    #[serde(deserialize_with = "super::cases::present")]
    bundle: Option<Value>,
    about: Option<String>,
    load_error: Option<String>,
    compile_errors: Option<Vec<WantCompileError>>,
    #[serde(default)]
    requests: Vec<RequestCase>,
}

#[derive(Deserialize, PartialEq, Eq, Debug)]
#[serde(deny_unknown_fields)]
struct WantCompileError {
    #[serde(rename = "policyId")]
    policy_id: String,
    #[serde(rename = "ruleId")]
    rule_id: String,
    field: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestCase {
    request: Option<Value>,
    raw: Option<String>,
    want: WantResult,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WantResult {
    decision: String,
    #[serde(rename = "matchedPolicyId")]
    matched_policy_id: Option<String>,
    #[serde(rename = "matchedPolicyVersion")]
    matched_policy_version: Option<u64>,
    #[serde(rename = "matchedRuleId")]
    matched_rule_id: Option<String>,
    code: Option<String>,
    reason: Option<String>,
}

/// Whether a file's first case has the Rubric shape.
pub(super) fn is_rubric(first: &Value) -> bool {
    first.get("bundle").is_some()
}

fn build(bundle: Option<&Bundle>, e: EngineKind) -> Result<Box<dyn RubricEvaluator>, String> {
    let Some(b) = bundle else {
        return Ok(match e {
            EngineKind::Reference => Box::new(RubricReference::none()),
            _ => Box::new(RubricEngine::none()),
        });
    };
    match e {
        EngineKind::Reference => Ok(Box::new(RubricReference::new(b))),
        EngineKind::Compiled => RubricEngine::build(b)
            .map(|x| Box::new(x) as Box<dyn RubricEvaluator>)
            .map_err(|d| d.to_string()),
        EngineKind::Artifact => {
            let built = RubricEngine::build(b).map_err(|d| d.to_string())?;
            let bytes = built.to_bytes().unwrap_or_default();
            let loaded = RubricEngine::from_bytes(&bytes).map_err(|e| e.to_string())?;
            Ok(Box::new(loaded.into_owned()))
        }
    }
}

fn request_of(c: &RequestCase) -> Request {
    let parsed = match (&c.request, &c.raw) {
        (Some(v), None) => Request::from_value(v.clone()),
        (None, Some(raw)) => Request::from_json(raw),
        _ => Err("a request case has exactly one of `request` and `raw`".into()),
    };
    parsed.unwrap_or_else(|e| Request::unreadable(e.to_string()))
}

fn compare(got: &RubricResult, want: &WantResult) -> Vec<String> {
    let mut out = Vec::new();
    let mut eq = |what: &str, g: Option<String>, w: Option<String>| {
        if g != w {
            out.push(format!("{what} {g:?}, want {w:?}"));
        }
    };
    eq(
        "decision",
        Some(got.decision.as_str().to_string()),
        Some(want.decision.clone()),
    );
    eq(
        "matchedPolicyId",
        got.matched_policy_id.clone(),
        want.matched_policy_id.clone(),
    );
    eq(
        "matchedPolicyVersion",
        got.matched_policy_version.map(|v| v.to_string()),
        want.matched_policy_version.map(|v| v.to_string()),
    );
    eq(
        "matchedRuleId",
        got.matched_rule_id.clone(),
        want.matched_rule_id.clone(),
    );
    eq(
        "code",
        got.code.map(|c| c.as_str().to_string()),
        want.code.clone(),
    );
    eq("reason", got.reason.clone(), want.reason.clone());
    out
}

pub(super) fn run(file: &str, f: &RubricFile, engines: &[EngineKind]) -> Report {
    let mut r = Report::default();
    for case in &f.cases {
        let _ = &case.about;
        let mut failures = Vec::new();
        let bundle = match &case.bundle {
            None | Some(Value::Null) => Ok(None),
            Some(v) => Bundle::from_value(v).map(Some),
        };
        match (bundle, &case.load_error) {
            (Err(d), Some(want)) => {
                if !d.iter().any(|x| x.message.contains(want.as_str())) {
                    failures.push(format!(
                        "[load] refused with {d}, want a message containing {want:?}"
                    ));
                }
            }
            (Err(d), None) => failures.push(format!("[load] the bundle does not load: {d}")),
            (Ok(_), Some(want)) => {
                failures.push(format!("[load] loaded, want an error containing {want:?}"))
            }
            (Ok(bundle), None) => {
                let got_errors: Vec<WantCompileError> = bundle
                    .iter()
                    .flat_map(|b| b.compile_errors())
                    .map(|e| WantCompileError {
                        policy_id: e.policy_id.clone(),
                        rule_id: e.rule_id.clone(),
                        field: e.field.clone(),
                    })
                    .collect();
                let want_errors = case.compile_errors.as_deref().unwrap_or_default();
                if got_errors != want_errors {
                    failures.push(format!(
                        "[load] compile errors {got_errors:?}, want {want_errors:?}"
                    ));
                }
                for &e in engines {
                    let ev = match build(bundle.as_ref(), e) {
                        Ok(ev) => ev,
                        Err(msg) => {
                            failures.push(format!("[{}] did not build: {msg}", e.name()));
                            continue;
                        }
                    };
                    for (i, rc) in case.requests.iter().enumerate() {
                        let got = ev.decide(&request_of(rc));
                        for m in compare(&got, &rc.want) {
                            failures.push(format!("[{}] request {}: {m}", e.name(), i + 1));
                        }
                    }
                }
            }
        }
        record(&mut r, file, &case.name, "rubric", failures);
    }
    r
}
