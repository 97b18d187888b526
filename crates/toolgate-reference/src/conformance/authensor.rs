//! Authensor cases: policies, envelopes (with their sessions) and the
//! results they get, run on the reference interpreter, the compiled engine
//! and the engine loaded back from its artifact.
//!
//! ```json
//! {"cases": [{"name": "...", "about": "...",
//!   "policies": {...} | [...],
//!   "load_error": "text the first diagnostic's message contains",
//!   "warnings": ["no_risk_weights", ...],
//!   "envelopes": [{"envelope": {..., "session": {...}} | "raw": "text",
//!                  "want": {"outcome", "reason", "policyId", "policyVersion",
//!                           "ruleId", "violation", "details"}}]}]}
//! ```
//!
//! A member of `want` left out must be absent from the result, but
//! `details` (the session violation's figures), which is compared only when
//! given. `violation` is the session violation's type. The matched rule's
//! effect is not written: it must equal the outcome.

use super::cases::record;
use super::{EngineKind, Report};
use crate::authensor::AuthensorReference;
use serde::Deserialize;
use serde_json::Value;
use toolgate::authensor::{
    AuthensorEngine, AuthensorEvaluator, AuthensorResult, Envelope, Policies,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AuthensorFile {
    cases: Vec<AuthensorCase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AuthensorCase {
    name: String,
    policies: Value,
    about: Option<String>,
    load_error: Option<String>,
    #[serde(default)]
    warnings: Vec<String>,
    #[serde(default)]
    envelopes: Vec<EnvelopeCase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EnvelopeCase {
    envelope: Option<Value>,
    raw: Option<String>,
    want: Want,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Want {
    outcome: String,
    reason: Option<String>,
    #[serde(rename = "policyId")]
    policy_id: Option<String>,
    #[serde(rename = "policyVersion")]
    policy_version: Option<Value>,
    #[serde(rename = "ruleId")]
    rule_id: Option<String>,
    violation: Option<String>,
    details: Option<Value>,
}

/// Whether a file's first case has the Authensor shape.
pub(super) fn is_authensor(first: &Value) -> bool {
    first.get("policies").is_some()
}

fn build(p: &Policies, e: EngineKind) -> Result<Box<dyn AuthensorEvaluator>, String> {
    match e {
        EngineKind::Reference => Ok(Box::new(AuthensorReference::new(p))),
        EngineKind::Compiled => AuthensorEngine::build(p)
            .map(|x| Box::new(x) as Box<dyn AuthensorEvaluator>)
            .map_err(|d| d.to_string()),
        EngineKind::Artifact => {
            let bytes = AuthensorEngine::build(p)
                .map_err(|d| d.to_string())?
                .to_bytes();
            let loaded = AuthensorEngine::from_bytes(&bytes).map_err(|e| e.to_string())?;
            Ok(Box::new(loaded.into_owned()))
        }
    }
}

fn envelope_of(c: &EnvelopeCase) -> Envelope {
    let parsed = match (&c.envelope, &c.raw) {
        (Some(v), None) => Envelope::from_value(v.clone()),
        (None, Some(raw)) => Envelope::from_json(raw),
        _ => Err("an envelope case has exactly one of `envelope` and `raw`".into()),
    };
    parsed.unwrap_or_else(|e| Envelope::unreadable(e.to_string()))
}

fn compare(got: &AuthensorResult, want: &Want) -> Vec<String> {
    let mut out = Vec::new();
    let mut eq = |what: &str, g: Option<String>, w: Option<String>| {
        if g != w {
            out.push(format!("{what} {g:?}, want {w:?}"));
        }
    };
    eq(
        "outcome",
        Some(got.outcome.as_str().into()),
        Some(want.outcome.clone()),
    );
    eq("reason", got.reason.clone(), want.reason.clone());
    eq("policyId", got.policy_id.clone(), want.policy_id.clone());
    let json = got.to_json();
    eq(
        "policyVersion",
        json.pointer("/decision/policyVersion")
            .map(Value::to_string),
        want.policy_version.as_ref().map(Value::to_string),
    );
    eq(
        "ruleId",
        got.rule.as_ref().map(|r| r.id.clone()),
        want.rule_id.clone(),
    );
    eq(
        "violation",
        got.session_violation
            .as_ref()
            .map(|v| v.violation.kind().into()),
        want.violation.clone(),
    );
    if let Some(d) = &want.details {
        eq(
            "details",
            json.pointer("/sessionViolation/details")
                .map(Value::to_string),
            Some(d.to_string()),
        );
    }
    if let Some(r) = &got.rule {
        if r.effect != got.outcome {
            out.push(format!(
                "the matched rule's effect {} is not the outcome {}",
                r.effect.as_str(),
                got.outcome.as_str()
            ));
        }
    }
    out
}

pub(super) fn run(file: &str, f: &AuthensorFile, engines: &[EngineKind]) -> Report {
    let mut r = Report::default();
    for case in &f.cases {
        let _ = &case.about;
        let mut failures = Vec::new();
        match (Policies::from_value(&case.policies), &case.load_error) {
            (Err(d), Some(want)) => {
                if !d.iter().any(|x| x.message.contains(want.as_str())) {
                    failures.push(format!(
                        "[load] refused with {d}, want a message containing {want:?}"
                    ));
                }
            }
            (Err(d), None) => failures.push(format!("[load] the policies do not load: {d}")),
            (Ok(_), Some(want)) => {
                failures.push(format!("[load] loaded, want an error containing {want:?}"))
            }
            (Ok(p), None) => {
                let kinds: Vec<&str> = p.warnings.iter().map(|w| w.kind.name()).collect();
                if kinds != case.warnings {
                    failures.push(format!(
                        "[load] warnings {kinds:?}, want {:?}",
                        case.warnings
                    ));
                }
                for &e in engines {
                    let ev = match build(&p, e) {
                        Ok(ev) => ev,
                        Err(msg) => {
                            failures.push(format!("[{}] did not build: {msg}", e.name()));
                            continue;
                        }
                    };
                    for (i, c) in case.envelopes.iter().enumerate() {
                        let got = ev.decide(&envelope_of(c));
                        for m in compare(&got, &c.want) {
                            failures.push(format!("[{}] envelope {}: {m}", e.name(), i + 1));
                        }
                    }
                }
            }
        }
        record(&mut r, file, &case.name, "authensor", failures);
    }
    r
}
