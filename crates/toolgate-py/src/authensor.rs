//! `toolgate.authensor`: a drop-in for `@authensor/engine`'s `PolicyEngine`.
//!
//! `PolicyEngine().evaluate(envelope, policies, session=None)` returns the
//! seed's result as a dict: `{"decision": {"outcome", "policyId",
//! "policyVersion", "reason", "matchedRules"}, "sessionViolation"?}`.

use crate::convert;
use crate::engine::envelope_of;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::Value;
use toolgate::authensor::{AuthensorEngine, AuthensorResult, Policies};

/// Evaluates action envelopes against policies, compiled on toolgate's
/// tables. The policies of the last call are kept compiled, so a host that
/// passes the same list each time compiles it once.
#[pyclass(module = "toolgate.authensor")]
pub struct PolicyEngine {
    /// The last policies given and what they compiled to (or why they did
    /// not).
    cached: Option<(Value, Result<AuthensorEngine<'static>, String>)>,
}

#[pymethods]
impl PolicyEngine {
    #[new]
    fn new() -> PolicyEngine {
        PolicyEngine { cached: None }
    }

    /// Decides `envelope` (a dict: `action`, `resource`, `principalId`, …)
    /// against `policies` (a list of policy dicts, or JSON text), with the
    /// session's earlier actions (`{"sessionId", "actions": [{"actionType",
    /// "timestamp"}]}`) when given. Never raises: an envelope or policies
    /// that cannot be read are denied, saying why.
    #[pyo3(signature = (envelope, policies, session=None))]
    fn evaluate<'py>(
        &mut self,
        py: Python<'py>,
        envelope: &Bound<'py, PyAny>,
        policies: &Bound<'py, PyAny>,
        session: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let result = self.decide(py, envelope, policies, session);
        convert::to_py(py, &result.to_json())
    }
}

impl PolicyEngine {
    fn decide<'py>(
        &mut self,
        py: Python<'py>,
        envelope: &Bound<'py, PyAny>,
        policies: &Bound<'py, PyAny>,
        session: Option<&Bound<'py, PyAny>>,
    ) -> AuthensorResult {
        let policies = match convert::given(policies) {
            Ok(convert::Given::Value(v)) => v,
            Ok(convert::Given::Text(t)) => match toolgate::json::parse_document(&t) {
                Ok(v) => v,
                Err(e) => return cannot_use(&format!("they are not JSON: {e}")),
            },
            Err(e) => return cannot_use(&e.0),
        };
        let fresh = !matches!(&self.cached, Some((v, _)) if *v == policies);
        if fresh {
            let built = Policies::from_value(&policies)
                .and_then(|p| AuthensorEngine::build(&p))
                .map_err(|d| d.first().message.clone());
            self.cached = Some((policies, built));
        }
        let engine = match &self.cached {
            Some((_, Ok(e))) => e,
            Some((_, Err(why))) => return cannot_use(why),
            None => return cannot_use("none were given"),
        };
        let envelope = match session {
            Some(s) if !s.is_none() => {
                let with = PyDict::new(py);
                let joined = with
                    .call_method1("update", (envelope,))
                    .and_then(|_| with.set_item("session", s));
                match joined {
                    Ok(()) => envelope_of(with.as_any()),
                    Err(e) => toolgate::authensor::Envelope::unreadable(format!(
                        "the envelope is not a dict: {e}"
                    )),
                }
            }
            _ => envelope_of(envelope),
        };
        engine.decide(&envelope)
    }
}

fn cannot_use(why: &str) -> AuthensorResult {
    AuthensorResult::fail_closed(format!("the policies cannot be used: {why} (fail-closed)"))
}
