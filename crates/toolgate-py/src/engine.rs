//! `toolgate.Engine`, `toolgate.Verdict`, `toolgate.check` and
//! `toolgate.scan`.

use crate::convert::{self, Given};
use crate::policy_error;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;
use serde_json::Value;
use std::io::Read;
use toolgate::artifact::{self, LoadOptions};
use toolgate::authensor::{AuthensorEngine, AuthensorResult, Envelope};
use toolgate::open::{EngineBuilder, Format, OpenError, Opened};
use toolgate::rubric::{Request, RubricEngine, RubricResult};
use toolgate::{Call, Decision, Verdict as CoreVerdict};

/// The engine of one dialect, owned.
enum Decider {
    Rules(toolgate::Engine<'static>),
    ClaudeCode(toolgate::Engine<'static>),
    Rubric {
        engine: RubricEngine<'static>,
        /// The bundle reads `dlp_*` fields: requests are scanned first, as
        /// `toolgate decide` does for such a bundle.
        dlp: bool,
    },
    Authensor(AuthensorEngine<'static>),
}

/// A compiled policy of any dialect: agentpolicy documents (JSON or TOML),
/// Claude Code settings, Rubric bundles, Authensor policies, or a compiled
/// artifact of any of them. Immutable; share it between threads freely.
///
/// >>> import toolgate
/// >>> e = toolgate.Engine.from_policy({"default": "ask", "allow": "read", "deny": "bash"})
/// >>> e.decide({"tool": "bash", "args": {"command": "ls"}}).decision
/// 'deny'
#[pyclass(frozen, module = "toolgate")]
pub struct Engine {
    decider: Decider,
    revision: String,
    kind: &'static str,
}

/// Reads a `format` name into the front door's format.
fn format_of(name: Option<&str>) -> PyResult<Format> {
    Ok(match name {
        None | Some("detect") => Format::Detect,
        Some("policy") | Some("json") => Format::PolicyJson,
        Some("toml") => Format::PolicyToml,
        Some("claude-code") => Format::ClaudeCode,
        Some("rubric") => Format::Rubric,
        Some("authensor") => Format::Authensor,
        Some("artifact") => Format::Artifact,
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "unknown format `{other}`: use one of detect, policy, toml, claude-code, rubric, authensor, artifact"
            )))
        }
    })
}

/// The error a refused document raises: every diagnostic, located in
/// `text`, in file `file`.
fn open_error(py: Python<'_>, e: OpenError, bytes: &[u8], file: &str) -> PyErr {
    let text = std::str::from_utf8(bytes).ok();
    match e {
        OpenError::Document(d) => {
            let mut d = d.in_file(file);
            if let Some(t) = text {
                d = d.locate(t);
            }
            let json: Vec<Value> = d
                .in_document_order()
                .into_iter()
                .map(|x| x.to_json(text))
                .collect();
            let message = d.render(text);
            policy_error(py, message.trim_end().to_string(), &json)
        }
        other => {
            let d = toolgate::open::diagnostic(&other);
            let d = toolgate::Diagnostics::one(d).in_file(file);
            let json: Vec<Value> = d.iter().map(|x| x.to_json(None)).collect();
            let at = if file.is_empty() {
                String::new()
            } else {
                format!("`{file}`: ")
            };
            policy_error(py, format!("{at}{other}"), &json)
        }
    }
}

/// FNV-1a, the revision of a document that compiles to no artifact (as the
/// server names it).
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A document's revision is its compiled artifact's, so the same policy
/// opened as a document or as its artifact names one revision.
fn revision(compiled: Option<&[u8]>, given: &[u8]) -> String {
    match compiled.unwrap_or(given) {
        b if b.starts_with(&artifact::MAGIC) => artifact::header(b)
            .map(|h| h.revision_hex())
            .unwrap_or_else(|_| format!("document-{:016x}", fnv(b))),
        b => format!("document-{:016x}", fnv(b)),
    }
}

impl Engine {
    fn open(py: Python<'_>, bytes: &[u8], format: Format, file: &str) -> PyResult<Engine> {
        let builder = EngineBuilder::new().load_options(LoadOptions::default());
        let opened = builder
            .open(bytes, format)
            .map_err(|e| open_error(py, e, bytes, file))?;
        let is_artifact = bytes.starts_with(&artifact::MAGIC);
        let (decider, kind, compiled) = match opened {
            Opened::Rules(e) => {
                let b = (!is_artifact).then(|| e.to_bytes());
                (Decider::Rules(e.into_owned()), "rules", b)
            }
            Opened::ClaudeCode(e) => {
                let b = Some(e.to_bytes());
                (Decider::ClaudeCode(e.into_owned()), "claude-code", b)
            }
            Opened::Rubric(e) => {
                let b = if is_artifact { None } else { e.to_bytes() };
                let dlp = e.reads_dlp() || (!is_artifact && reads_dlp(bytes));
                (
                    Decider::Rubric {
                        engine: e.into_owned(),
                        dlp,
                    },
                    "rubric",
                    b,
                )
            }
            Opened::Authensor(e) => {
                let b = (!is_artifact).then(|| e.to_bytes());
                (Decider::Authensor(e.into_owned()), "authensor", b)
            }
            other => {
                return Err(policy_error(
                    py,
                    format!("{other:?} is not a dialect this package decides"),
                    &[],
                ))
            }
        };
        Ok(Engine {
            decider,
            revision: revision(compiled.as_deref(), bytes),
            kind,
        })
    }
}

/// Whether a Rubric bundle document reads the DLP fields.
fn reads_dlp(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|t| toolgate::rubric::Bundle::from_json(t).ok())
        .is_some_and(|b| b.reads_dlp())
}

/// Reads a file whole, refusing it past the artifact length cap.
pub(crate) fn read_file(path: &str) -> PyResult<Vec<u8>> {
    let max = LoadOptions::default().limit();
    let file = std::fs::File::open(path)
        .map_err(|e| PyOSError::new_err(format!("cannot read `{path}`: {e}")))?;
    let mut bytes = Vec::new();
    file.take(max as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| PyOSError::new_err(format!("cannot read `{path}`: {e}")))?;
    if bytes.len() > max {
        return Err(PyOSError::new_err(format!(
            "`{path}` is larger than {max} bytes: give a smaller policy or artifact"
        )));
    }
    Ok(bytes)
}

/// The format a file's name says, for TOML, which has no shape to detect
/// when it is also read as JSON.
fn format_of_path(path: &str, format: Option<&str>) -> PyResult<Format> {
    match format {
        None if path.ends_with(".toml") => Ok(Format::PolicyToml),
        f => format_of(f),
    }
}

#[pymethods]
impl Engine {
    /// Opens a policy file of any dialect, or a compiled artifact, by its
    /// contents (`format` forces one: `policy`, `toml`, `claude-code`,
    /// `rubric`, `authensor`, `artifact`).
    ///
    /// Raises `toolgate.PolicyError` when it does not build, `OSError` when
    /// it cannot be read.
    #[staticmethod]
    #[pyo3(signature = (path, format=None))]
    fn from_file(py: Python<'_>, path: &str, format: Option<&str>) -> PyResult<Engine> {
        let format = format_of_path(path, format)?;
        let bytes = read_file(path)?;
        Engine::open(py, &bytes, format, path)
    }

    /// Builds an engine from a policy given as text, bytes, or a dict or
    /// list (read as JSON), of any dialect.
    #[staticmethod]
    #[pyo3(signature = (policy, format=None))]
    fn from_policy(
        py: Python<'_>,
        policy: &Bound<'_, PyAny>,
        format: Option<&str>,
    ) -> PyResult<Engine> {
        let format = format_of(format)?;
        let text = match convert::given(policy)? {
            Given::Text(t) => t,
            Given::Value(v) => v.to_string(),
        };
        Engine::open(py, text.as_bytes(), format, "")
    }

    /// Loads a compiled artifact (`toolgate compile`'s output), verifying
    /// its revision.
    #[staticmethod]
    fn from_bundle(py: Python<'_>, bundle: &[u8]) -> PyResult<Engine> {
        Engine::open(py, bundle, Format::Artifact, "")
    }

    /// The revision: the compiled artifact's content id (hex), the same
    /// for a document and its artifact.
    #[getter]
    fn revision(&self) -> &str {
        &self.revision
    }

    /// The dialect: `rules`, `claude-code`, `rubric` or `authensor`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.kind
    }

    /// The compiled artifact's bytes (`from_bundle` loads them), or None
    /// for a Rubric engine loaded from an artifact or with no bundle.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Option<Bound<'py, pyo3::types::PyBytes>> {
        let b = match &self.decider {
            Decider::Rules(e) | Decider::ClaudeCode(e) => Some(e.to_bytes()),
            Decider::Rubric { engine, .. } => engine.to_bytes(),
            Decider::Authensor(e) => Some(e.to_bytes()),
        };
        b.map(|b| pyo3::types::PyBytes::new(py, &b))
    }

    /// Decides one input: a call (`{"tool", "args"}`, or Claude Code's
    /// `{"tool_name", "tool_input"}`) for rules and Claude Code settings, a
    /// request for a Rubric bundle, an envelope (with an optional
    /// `session`) for Authensor policies. A dict, or JSON text.
    ///
    /// Never raises: an input that cannot be read is denied, saying why.
    fn decide(&self, input: &Bound<'_, PyAny>) -> Verdict {
        match &self.decider {
            Decider::Rules(e) | Decider::ClaudeCode(e) => {
                match call_of(input, matches!(self.decider, Decider::ClaudeCode(_))) {
                    (_, Some(why)) => Verdict::rules(unreadable(&why)),
                    (call, None) => Verdict::rules(e.decide(&call)),
                }
            }
            Decider::Rubric { engine, dlp } => {
                Verdict::rubric(engine.decide(&request_of(input, *dlp)))
            }
            Decider::Authensor(e) => Verdict::authensor(e.decide(&envelope_of(input))),
        }
    }

    /// Decides a list of inputs. For rules and Claude Code settings the
    /// calls are one batch: a call the policy allows is held (asked) when
    /// another call of the batch asks, and when one call cannot be read
    /// every call of the batch is denied. For the other dialects each
    /// input is decided on its own.
    fn decide_batch(&self, inputs: &Bound<'_, PyAny>) -> PyResult<Vec<Verdict>> {
        let items: Vec<Bound<'_, PyAny>> = inputs
            .try_iter()
            .map_err(|_| PyValueError::new_err("`decide_batch` takes a list of calls"))?
            .collect::<PyResult<_>>()?;
        Ok(match &self.decider {
            Decider::Rules(e) | Decider::ClaudeCode(e) => {
                let claude = matches!(self.decider, Decider::ClaudeCode(_));
                let read: Vec<(Call, Option<String>)> =
                    items.iter().map(|x| call_of(x, claude)).collect();
                if let Some(why) = read.iter().find_map(|(_, w)| w.clone()) {
                    let v = unreadable(&format!(
                        "the batch holds a call that cannot be read: {why}"
                    ));
                    return Ok(items.iter().map(|_| Verdict::rules(v.clone())).collect());
                }
                let calls: Vec<Call> = read.into_iter().map(|(c, _)| c).collect();
                e.decide_batch(&calls)
                    .into_iter()
                    .map(Verdict::rules)
                    .collect()
            }
            _ => items.iter().map(|x| self.decide(x)).collect(),
        })
    }

    fn __repr__(&self) -> String {
        format!("<toolgate.Engine {} {}>", self.kind, self.revision)
    }
}

/// A deny for a call that could not be read, worded as `toolgate decide`
/// words it.
fn unreadable(why: &str) -> CoreVerdict {
    CoreVerdict::new(Decision::Deny, format!("the call could not be read: {why}"))
}

/// Reads a call; one that cannot be read is a call that decides to a deny
/// (an unknown tool name cannot be allowed), with the reason beside it.
fn call_of(input: &Bound<'_, PyAny>, claude: bool) -> (Call, Option<String>) {
    let read = match convert::given(input) {
        Ok(Given::Text(t)) => Call::from_json(&t).map_err(|e| e.to_string()),
        Ok(Given::Value(v)) => Call::from_value(v).map_err(|e| e.to_string()),
        Err(e) => Err(e.0),
    };
    match read {
        Ok(c) if claude => (toolgate::claude::prepare_call(c), None),
        Ok(c) => (c, None),
        Err(why) => {
            let why = format!("the line is not a JSON call: {why}");
            (Call::new("", "null"), Some(why))
        }
    }
}

/// Reads a Rubric request; one that cannot be read is denied.
pub(crate) fn request_of(input: &Bound<'_, PyAny>, dlp: bool) -> Request {
    let mut request = match convert::given(input) {
        Ok(Given::Text(t)) => Request::from_json(&t),
        Ok(Given::Value(v)) => Request::from_value(v),
        Err(e) => Err(e.0.into()),
    }
    .unwrap_or_else(|e| Request::unreadable(e.to_string()));
    if dlp {
        match toolgate::guards::Guards::builtin() {
            Ok(g) => request.add_dlp(g),
            Err(e) => request = Request::unreadable(format!("the DLP scan cannot run: {e}")),
        }
    }
    request
}

/// Reads an Authensor envelope (its session in `session`); one that cannot
/// be read is denied.
pub(crate) fn envelope_of(input: &Bound<'_, PyAny>) -> Envelope {
    let read = match convert::given(input) {
        Ok(Given::Text(t)) => match toolgate::json::parse_strict(&t) {
            Ok(v) => Envelope::from_value(v).map_err(|e| e.to_string()),
            Err(e) => Err(format!("the line is not JSON: {e}")),
        },
        Ok(Given::Value(v)) => Envelope::from_value(v).map_err(|e| e.to_string()),
        Err(e) => Err(e.0),
    };
    read.unwrap_or_else(Envelope::unreadable)
}

/// What an engine answered: the decision, the reason, the rule, and the
/// whole answer as `to_dict()`, the object `toolgate decide` prints.
#[pyclass(frozen, module = "toolgate")]
pub struct Verdict {
    decision: &'static str,
    reason: Option<String>,
    rule: Option<String>,
    answer: Answer,
    /// The answer as JSON, written the first time it is asked for: most
    /// callers read `decision` and never `to_dict()`, and writing it costs
    /// more than the decision.
    json: std::sync::OnceLock<Value>,
}

/// The engine's own answer, kept until its JSON is asked for.
enum Answer {
    Rules(CoreVerdict),
    Rubric(RubricResult),
    Authensor(AuthensorResult),
}

impl Verdict {
    fn rules(v: CoreVerdict) -> Verdict {
        Verdict {
            decision: v.decision.as_str(),
            reason: (!v.reason.is_empty()).then(|| v.reason.clone()),
            rule: v.rule.as_ref().map(|r| r.text.to_string()),
            answer: Answer::Rules(v),
            json: std::sync::OnceLock::new(),
        }
    }

    fn rubric(r: RubricResult) -> Verdict {
        Verdict {
            decision: r.decision.as_str(),
            reason: r.reason.clone(),
            rule: r.matched_rule_id.clone(),
            answer: Answer::Rubric(r),
            json: std::sync::OnceLock::new(),
        }
    }

    fn authensor(r: AuthensorResult) -> Verdict {
        Verdict {
            decision: r.outcome.as_str(),
            reason: r.reason.clone(),
            rule: r.rule.as_ref().map(|x| x.id.clone()),
            answer: Answer::Authensor(r),
            json: std::sync::OnceLock::new(),
        }
    }

    fn json(&self) -> &Value {
        self.json.get_or_init(|| match &self.answer {
            Answer::Rules(v) => serde_json::to_value(v).unwrap_or_else(|_| {
                serde_json::json!({"decision": "deny", "reason": "the verdict could not be written", "by": "policy"})
            }),
            Answer::Rubric(r) => r.to_json(),
            Answer::Authensor(r) => r.to_json(),
        })
    }
}

#[pymethods]
impl Verdict {
    /// `allow`, `ask` or `deny` (Rubric: `allow` or `deny`; Authensor: the
    /// outcome, which may also be `require_approval`).
    #[getter]
    fn decision(&self) -> &'static str {
        self.decision
    }

    /// Why, when there is a reason.
    #[getter]
    fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// The rule that decided: its text, or its id (Rubric, Authensor).
    #[getter]
    fn rule(&self) -> Option<&str> {
        self.rule.as_deref()
    }

    /// The dialect that decided: `rules`, `rubric` or `authensor`.
    #[getter]
    fn kind(&self) -> &'static str {
        match self.answer {
            Answer::Rules(_) => "rules",
            Answer::Rubric(_) => "rubric",
            Answer::Authensor(_) => "authensor",
        }
    }

    /// Whether the decision lets the call run.
    #[getter]
    fn allowed(&self) -> bool {
        self.decision == "allow"
    }

    /// The whole answer, as `toolgate decide` prints it.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, self.json())
    }

    /// A member of `to_dict()`.
    fn __getitem__<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Bound<'py, PyAny>> {
        match self.json().get(key) {
            Some(v) => convert::to_py(py, v),
            None => Err(pyo3::exceptions::PyKeyError::new_err(key.to_string())),
        }
    }

    fn __repr__(&self) -> String {
        format!("Verdict({})", self.json())
    }
}

/// Checks a policy file of any dialect (or an artifact): returns its
/// warnings (dicts), raises `toolgate.PolicyError` with every diagnostic
/// (file, line, column, help) when it does not build.
#[pyfunction]
#[pyo3(signature = (path, format=None))]
pub fn check<'py>(
    py: Python<'py>,
    path: &str,
    format: Option<&str>,
) -> PyResult<Bound<'py, PyList>> {
    let format = format_of_path(path, format)?;
    let bytes = read_file(path)?;
    let opened = EngineBuilder::new()
        .open(&bytes, format)
        .map_err(|e| open_error(py, e, &bytes, path))?;
    let warnings = match &opened {
        Opened::Rules(e) | Opened::ClaudeCode(e) => e.warnings().to_vec(),
        _ => Vec::new(),
    };
    let text = std::str::from_utf8(&bytes).ok();
    let json: Vec<Value> = warnings
        .into_iter()
        .map(|mut d| {
            if d.location.file.is_empty() {
                d.location.file = path.to_string();
            }
            if let Some(t) = text {
                d.locate(t);
            }
            d.as_warning().to_json(text)
        })
        .collect();
    let list = PyList::empty(py);
    for v in &json {
        list.append(convert::to_py(py, v)?)?;
    }
    Ok(list)
}

/// Scans text (or bytes) with the built-in content guards: one dict per
/// finding, `{"type", "severity", "start", "end", "rule"}` (byte offsets).
/// The matched text itself is never returned.
#[pyfunction]
pub fn scan<'py>(py: Python<'py>, text: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
    let bytes: Vec<u8> = if let Ok(s) = text.downcast::<pyo3::types::PyString>() {
        s.to_cow()?.as_bytes().to_vec()
    } else if let Ok(b) = text.downcast::<pyo3::types::PyBytes>() {
        b.as_bytes().to_vec()
    } else {
        return Err(PyValueError::new_err("`scan` takes a str or bytes"));
    };
    let findings = toolgate::guards::scan(&bytes)
        .map_err(|e| PyValueError::new_err(format!("the guards cannot run: {e}")))?;
    let list = PyList::empty(py);
    for f in &findings {
        list.append(convert::to_py(py, &f.to_json())?)?;
    }
    Ok(list)
}
