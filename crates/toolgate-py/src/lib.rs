//! toolgate for Python: the extension module `toolgate._native`, which the
//! package `toolgate` (python/toolgate) re-exports.
//!
//! Everything here is a thin layer over the library's front door
//! ([`toolgate::open`]): Python objects are read as JSON values
//! ([`convert`]), handed to the engine the document opened to, and the
//! answer is given back as a [`Verdict`] whose `to_dict()` is the object
//! `toolgate decide` prints for the same input. The drop-ins for Rubric's
//! and Authensor's SDKs are [`rubric`] and [`authensor`].
//!
//! A decision never raises: what cannot be read is denied, saying why, as
//! the command line answers such a line. Building raises
//! `toolgate.PolicyError` with the diagnostics. The GIL is held during a
//! decision, which is far shorter than releasing and taking it back.

mod authensor;
mod convert;
mod engine;
mod rubric;

use pyo3::prelude::*;

pyo3::create_exception!(
    toolgate,
    PolicyError,
    pyo3::exceptions::PyValueError,
    "A policy, bundle or artifact that cannot be used. `diagnostics` holds one dict per problem: severity, code, message, file, path, line, column, help, token."
);

/// Builds a `PolicyError` whose `diagnostics` attribute is `diagnostics`
/// (JSON objects, as `toolgate check --format json` writes them).
pub(crate) fn policy_error(
    py: Python<'_>,
    message: String,
    diagnostics: &[serde_json::Value],
) -> PyErr {
    let err = PolicyError::new_err(message);
    let list = convert::to_py(py, &serde_json::Value::Array(diagnostics.to_vec()));
    // Setting an attribute on a fresh exception does not fail; if it ever
    // did, the error is still raised, without the list.
    if let Ok(list) = list {
        let _ = err.value(py).setattr("diagnostics", list);
    }
    err
}

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("PolicyError", m.py().get_type::<PolicyError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<engine::Engine>()?;
    m.add_class::<engine::Verdict>()?;
    m.add_function(wrap_pyfunction!(engine::check, m)?)?;
    m.add_function(wrap_pyfunction!(engine::scan, m)?)?;
    m.add_class::<rubric::Evaluator>()?;
    m.add_class::<rubric::EvaluationResult>()?;
    m.add_class::<authensor::PolicyEngine>()?;
    Ok(())
}
