//! `toolgate.rubric`: a drop-in for rubric-app's `Evaluator`.
//!
//! rubric-app's evaluator is `Evaluator(options=None)`, `update_bundle(bundle)`
//! and `evaluate(request) -> EvaluationResult`; this one has the same calls
//! and a result with the same fields, so a host changes its import and
//! nothing else. Bundles and requests may be rubric-app's pydantic models,
//! dicts, or JSON text.

use crate::convert;
use crate::engine::request_of;
use crate::policy_error;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use toolgate::rubric::{Bundle, CompileError, RubricEngine, RubricResult};

/// Evaluates tool-call requests against the current bundle, as rubric-app's
/// `Evaluator` does, on toolgate's compiled tables. With no bundle loaded
/// every request is denied `NO_POLICIES`.
#[pyclass(module = "toolgate.rubric")]
pub struct Evaluator {
    engine: RubricEngine<'static>,
    /// rubric-app's `EvaluatorOptions.on_compile_error`, when given.
    on_compile_error: Option<PyObject>,
}

#[pymethods]
impl Evaluator {
    /// `options`: rubric-app's `EvaluatorOptions` (or anything with an
    /// `on_compile_error` attribute), called once per `matches` pattern that
    /// fails to compile when a bundle is loaded.
    #[new]
    #[pyo3(signature = (options=None))]
    fn new(options: Option<&Bound<'_, PyAny>>) -> PyResult<Evaluator> {
        let on_compile_error = match options {
            Some(o) if !o.is_none() => match o.getattr("on_compile_error") {
                Ok(f) if !f.is_none() => Some(f.unbind()),
                _ => None,
            },
            _ => None,
        };
        Ok(Evaluator {
            engine: RubricEngine::none(),
            on_compile_error,
        })
    }

    /// Compiles `bundle` (rubric-app's `Bundle`, a dict, or JSON text) and
    /// decides with it from now on. Raises `toolgate.PolicyError` when the
    /// bundle is not one, leaving the previous bundle in place.
    fn update_bundle(&mut self, py: Python<'_>, bundle: &Bound<'_, PyAny>) -> PyResult<()> {
        let (value, text) = match convert::given(bundle)? {
            convert::Given::Text(t) => (
                toolgate::json::parse_document(&t)
                    .map_err(|e| policy_error(py, format!("the bundle is not JSON: {e}"), &[]))?,
                Some(t),
            ),
            convert::Given::Value(v) => (v, None),
        };
        let refused = |d: toolgate::Diagnostics| {
            let d = match &text {
                Some(t) => d.locate(t),
                None => d,
            };
            let json: Vec<serde_json::Value> = d
                .in_document_order()
                .into_iter()
                .map(|x| x.to_json(text.as_deref()))
                .collect();
            policy_error(py, d.render(text.as_deref()).trim_end().to_string(), &json)
        };
        let b = Bundle::from_value(&value).map_err(refused)?;
        let mut errors: Vec<CompileError> = Vec::new();
        let engine =
            RubricEngine::build_with_hook(&b, &mut |e| errors.push(e.clone())).map_err(refused)?;
        self.engine = engine;
        if let Some(hook) = &self.on_compile_error {
            for e in &errors {
                let info = PyDict::new(py);
                info.set_item("policy_id", &e.policy_id)?;
                info.set_item("rule_id", &e.rule_id)?;
                info.set_item("field", &e.field)?;
                info.set_item("pattern", &e.pattern)?;
                info.set_item(
                    "cause",
                    pyo3::exceptions::PyValueError::new_err(e.cause.clone()).into_value(py),
                )?;
                let ns = py
                    .import("types")?
                    .getattr("SimpleNamespace")?
                    .call((), Some(&info))?;
                // As rubric-app does: a hook that raises is ignored, the
                // policy still fails closed.
                let _ = hook.call1(py, (ns,));
            }
        }
        Ok(())
    }

    /// Decides one request (rubric-app's `EvaluationRequest`, a dict with
    /// `tool_name`, or JSON text). Never raises: a request that cannot be
    /// read is denied `INVALID_REQUEST`.
    fn evaluate(&self, request: &Bound<'_, PyAny>) -> EvaluationResult {
        EvaluationResult {
            result: self.engine.decide(&request_of(request, false)),
        }
    }
}

/// The result of `Evaluator.evaluate`, with rubric-app's `EvaluationResult`
/// fields: `decision`, `reason`, `code`, `matchedPolicyId`,
/// `matchedPolicyVersion`, `matchedRuleId`, `latencyMs`.
#[pyclass(frozen, module = "toolgate.rubric")]
pub struct EvaluationResult {
    result: RubricResult,
}

#[pymethods]
#[allow(non_snake_case)]
impl EvaluationResult {
    /// `allow` or `deny`.
    #[getter]
    fn decision(&self) -> &'static str {
        self.result.decision.as_str()
    }

    /// Why: the fixed text of a coded deny, or the matched deny rule's
    /// description.
    #[getter]
    fn reason(&self) -> Option<&str> {
        self.result.reason.as_deref()
    }

    /// The stable code of a deny that is not a rule's (`NO_POLICIES`,
    /// `AGENT_FROZEN`, …).
    #[getter]
    fn code(&self) -> Option<&'static str> {
        self.result.code.map(|c| c.as_str())
    }

    /// The policy of the matched rule, or the errored policy.
    #[getter]
    fn matchedPolicyId(&self) -> Option<&str> {
        self.result.matched_policy_id.as_deref()
    }

    /// Its version.
    #[getter]
    fn matchedPolicyVersion(&self) -> Option<u64> {
        self.result.matched_policy_version
    }

    /// The matched rule.
    #[getter]
    fn matchedRuleId(&self) -> Option<&str> {
        self.result.matched_rule_id.as_deref()
    }

    /// Wall-clock time of the decision, in milliseconds.
    #[getter]
    fn latencyMs(&self) -> f64 {
        self.result.latency_ms
    }

    /// Every field, as pydantic's `model_dump()` gives them.
    #[pyo3(signature = (**_kwargs))]
    fn model_dump<'py>(
        &self,
        py: Python<'py>,
        _kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, &self.result.to_json())
    }

    /// Every field, as `toolgate decide` prints the result.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, &self.result.to_json())
    }

    fn __repr__(&self) -> String {
        format!("EvaluationResult({})", self.result.to_json())
    }
}
