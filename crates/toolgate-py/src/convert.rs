//! Python objects to JSON values and back.
//!
//! Every engine reads JSON: a call, a request, an envelope, a policy. A
//! Python caller hands over dicts (or pydantic models, or JSON text), so
//! they are walked into `serde_json::Value`s here, without going through
//! `json.dumps`, which would cost more than the decision.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};
use serde_json::{Map, Number, Value};

/// How deep a Python object may nest before it is refused: a cycle (a list
/// that holds itself) would otherwise recurse until the stack ran out.
pub const MAX_DEPTH: usize = 128;

/// Why a Python object is not a JSON value.
#[derive(Debug)]
pub struct NotJson(pub String);

impl From<NotJson> for PyErr {
    fn from(e: NotJson) -> PyErr {
        PyValueError::new_err(e.0)
    }
}

/// What a JSON-shaped argument was given as: text to parse, or a value.
pub enum Given {
    /// JSON text (a `str`, or UTF-8 `bytes`).
    Text(String),
    /// A value already walked out of Python objects.
    Value(Value),
}

/// Reads an argument that may be JSON text, bytes of JSON text, or a
/// Python object (dict, list, pydantic model) that is walked into a value.
pub fn given(obj: &Bound<'_, PyAny>) -> Result<Given, NotJson> {
    if let Ok(s) = obj.downcast::<PyString>() {
        return s
            .to_str()
            .map(|t| Given::Text(t.to_string()))
            .map_err(|e| NotJson(format!("the text cannot be read: {e}")));
    }
    if let Ok(b) = obj.downcast::<PyBytes>() {
        return std::str::from_utf8(b.as_bytes())
            .map(|t| Given::Text(t.to_string()))
            .map_err(|_| NotJson("the bytes are not UTF-8 text".into()));
    }
    to_value(obj).map(Given::Value)
}

/// Walks a Python object into a JSON value: `dict` (string keys), `list`
/// and `tuple`, `str`, `int`, `float` (finite), `bool`, `None`, and any
/// object with pydantic's `model_dump()`, whose result is walked.
///
/// # Errors
///
/// What cannot be JSON, and where.
pub fn to_value(obj: &Bound<'_, PyAny>) -> Result<Value, NotJson> {
    walk(obj, 0)
}

fn walk(obj: &Bound<'_, PyAny>, depth: usize) -> Result<Value, NotJson> {
    if depth > MAX_DEPTH {
        return Err(NotJson(format!(
            "the value nests deeper than {MAX_DEPTH} levels (does it hold itself?)"
        )));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(s) = obj.downcast::<PyString>() {
        return s
            .to_str()
            .map(|t| Value::String(t.to_string()))
            .map_err(|e| NotJson(format!("a string cannot be read: {e}")));
    }
    if let Ok(d) = obj.downcast::<PyDict>() {
        let mut m = Map::with_capacity(d.len());
        for (k, v) in d.iter() {
            let Ok(key) = k.downcast::<PyString>() else {
                return Err(NotJson(format!(
                    "a dict key is not a string: `{}`",
                    shown(&k)
                )));
            };
            let key = key
                .to_str()
                .map_err(|e| NotJson(format!("a key cannot be read: {e}")))?;
            m.insert(key.to_string(), walk(&v, depth + 1)?);
        }
        return Ok(Value::Object(m));
    }
    // `bool` is a subclass of `int`: ask first.
    if let Ok(b) = obj.downcast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.downcast::<PyInt>().is_ok() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::Number(i.into()));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::Number(u.into()));
        }
        // Past 64 bits, as JSON readers do: the nearest double.
        let f: f64 = obj
            .extract()
            .map_err(|_| NotJson(format!("the integer `{}` is too large", shown(obj))))?;
        return number(f, obj);
    }
    if let Ok(f) = obj.downcast::<PyFloat>() {
        return number(f.value(), obj);
    }
    if let Ok(l) = obj.downcast::<PyList>() {
        return l.iter().map(|x| walk(&x, depth + 1)).collect();
    }
    if let Ok(t) = obj.downcast::<PyTuple>() {
        return t.iter().map(|x| walk(&x, depth + 1)).collect();
    }
    // A pydantic model (rubric-app's `Bundle`, `EvaluationRequest`): its
    // `model_dump()` is a dict of plain values.
    if let Ok(dump) = obj.getattr("model_dump") {
        if let Some(v) = rubric_request(obj, depth) {
            return Ok(v);
        }
        if dump.is_callable() {
            // JSON mode, and without the members left at None: rubric-app's
            // models dump every optional member, which a document leaves
            // out (a missing field and a None one resolve alike).
            let kwargs = PyDict::new(obj.py());
            let _ = kwargs.set_item("mode", "json");
            let _ = kwargs.set_item("exclude_none", true);
            let dumped = dump
                .call((), Some(&kwargs))
                .map_err(|e| NotJson(format!("`model_dump()` failed: {e}")))?;
            return walk(&dumped, depth + 1);
        }
    }
    Err(NotJson(format!(
        "a value of type `{}` is not JSON: give dicts, lists, strings, numbers, booleans and None",
        type_name(obj)
    )))
}

/// rubric-app's `EvaluationRequest`, read from its attributes: its
/// `model_dump()` costs twice the whole decision. The class is known (two
/// declared fields, `tool_name` and `agent_id`, extra members allowed, no
/// serializers), so its dump in JSON mode without `None` members is its
/// fields then its extras, each value as it is, the top-level `None`s left
/// out. `None` (read it with `model_dump()`) for any other object, or when
/// a value is not plain JSON and needs pydantic's conversion.
fn rubric_request(obj: &Bound<'_, PyAny>, depth: usize) -> Option<Value> {
    static REQUEST: GILOnceCell<Option<Py<PyType>>> = GILOnceCell::new();
    let py = obj.py();
    let class = REQUEST.get_or_init(py, || {
        // Only asked once a pydantic model arrives: a caller with dicts
        // never imports rubric-app.
        py.import("rubric.types")
            .and_then(|m| m.getattr("EvaluationRequest"))
            .and_then(|c| c.downcast_into::<PyType>().map_err(Into::into))
            .map(Bound::unbind)
            .ok()
    });
    if !obj.get_type().is(class.as_ref()?.bind(py)) {
        return None;
    }
    let mut m = Map::new();
    let fields = obj
        .getattr("__dict__")
        .ok()?
        .downcast_into::<PyDict>()
        .ok()?;
    let extra = obj.getattr("__pydantic_extra__").ok()?;
    let extra = if extra.is_none() {
        None
    } else {
        Some(extra.downcast_into::<PyDict>().ok()?)
    };
    for d in std::iter::once(fields).chain(extra) {
        for (k, v) in d.iter() {
            if v.is_none() {
                continue;
            }
            let key = k.downcast::<PyString>().ok()?.to_str().ok()?;
            m.insert(key.to_string(), walk(&v, depth + 1).ok()?);
        }
    }
    Some(Value::Object(m))
}

fn number(f: f64, obj: &Bound<'_, PyAny>) -> Result<Value, NotJson> {
    Number::from_f64(f)
        .map(Value::Number)
        .ok_or_else(|| NotJson(format!("the number `{}` is not JSON", shown(obj))))
}

fn shown(obj: &Bound<'_, PyAny>) -> String {
    let s = obj.repr().map(|r| r.to_string()).unwrap_or_default();
    let mut out: String = s.chars().take(60).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// A JSON value as Python objects: dicts (in the value's member order),
/// lists, strings, ints, floats, bools and None.
pub fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN)).into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(a) => {
            let l = PyList::empty(py);
            for x in a {
                l.append(to_py(py, x)?)?;
            }
            l.into_any()
        }
        Value::Object(m) => {
            let d = PyDict::new(py);
            for (k, x) in m {
                d.set_item(k, to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}
