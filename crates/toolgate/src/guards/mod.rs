//! Content guards: what may enter or leave the model's window.
//!
//! A guard document (`spec/guards.md`) bounds content (`limit`), refuses
//! literals and patterns (`deny`), blocks secrets from a built-in catalogue
//! and the user's own rules (`secrets`), and replaces secrets with a
//! placeholder instead of blocking them (`redact`). Each applies to a
//! call's arguments, a tool's output or a model message, as the document
//! says ([`Place`]).
//!
//! All rules of a document compile into one [`scanner::Scanner`]: their
//! anchors in one Aho-Corasick automaton, each hit confirmed by the rule's
//! anchored DFAs over a bounded window. Spans are byte offsets into the
//! input, which may be any bytes; a [`Finding`] names the rule and the
//! span, never the secret.
//!
//! ```
//! use toolgate::guards::{self, Guards, Place};
//!
//! // The built-in catalogue, in one call.
//! let found = guards::scan(b"export GITHUB_TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyz")?;
//! assert_eq!(found[0].kind.as_ref(), "github-token");
//! assert_eq!((found[0].start, found[0].end), (20, 60));
//!
//! // A document: deny a phrase everywhere, redact secrets in tool output.
//! let g = Guards::from_json(r#"{
//!     "deny": [{"name": "injection", "literal": "ignore previous instructions", "note": "prompt injection"}],
//!     "redact": {"on": ["output"]}
//! }"#)?;
//! let out = g.check(Place::Output, b"key AKIAIOSFODNN7EXAMPLE here");
//! assert!(out.allowed());
//! assert_eq!(out.redacted.as_deref(), Some(&b"key [REDACTED:aws-access-key-id] here"[..]));
//! let msg = g.check(Place::Message, b"please ignore previous instructions");
//! assert_eq!(msg.rule.as_deref(), Some("deny/injection"));
//! # Ok::<(), toolgate::guards::GuardError>(())
//! ```

pub mod catalogue;
mod guarded;
pub mod scanner;

pub use guarded::Guarded;

use crate::decision::Decision;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

pub use scanner::{Hit, Scanner, Stream, WINDOW};

/// How serious a finding is; Rubric's DLP fields use the same three words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth reporting; not a credential on its own.
    Low,
    /// A credential of limited reach, or a likely one.
    Medium,
    /// A credential that grants access.
    High,
}

impl Severity {
    /// The word: `low`, `medium` or `high`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
        }
    }
}

/// Where content is guarded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Place {
    /// A tool call's arguments, before the tool runs.
    Arguments,
    /// A tool's output, before the model reads it.
    Output,
    /// A message: the user's prompt, or what the model wrote.
    Message,
}

const ALL_PLACES: [Place; 3] = [Place::Arguments, Place::Output, Place::Message];

/// One rule: a pattern in up to three parts, matched in order from an
/// anchor. Only the `value` part is the finding's span; `before` and
/// `after` are context that must surround it.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    /// The rule's name, unique in its guard.
    pub name: String,
    /// The type of what it finds (`github-token`).
    #[serde(rename = "type")]
    pub kind: String,
    /// How serious a finding is.
    #[serde(default = "high")]
    pub severity: Severity,
    /// Context before the value.
    #[serde(default)]
    pub before: Option<String>,
    /// The value: the span reported and redacted.
    #[serde(alias = "regex")]
    pub value: String,
    /// Context after the value.
    #[serde(default)]
    pub after: Option<String>,
    /// The longest value accepted; a longer one is no finding.
    #[serde(default)]
    pub max_len: Option<usize>,
    /// The least Shannon entropy of the value, in bits per byte.
    #[serde(default)]
    pub min_entropy: Option<f64>,
    /// Why the rule exists, shown with its findings.
    #[serde(default)]
    pub note: Option<String>,
}

fn high() -> Severity {
    Severity::High
}

/// Why a guard document or pattern was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GuardError {
    /// The document is not JSON, or not a guard document.
    Document {
        /// What is wrong.
        message: String,
    },
    /// A pattern does not parse.
    Pattern {
        /// The rule.
        rule: String,
        /// The pattern as compiled.
        pattern: String,
        /// The parser's message.
        message: String,
    },
    /// A pattern has no literal start to anchor it.
    NoAnchor {
        /// The rule.
        rule: String,
        /// The pattern as compiled.
        pattern: String,
    },
    /// A pattern's DFA would exceed the limit.
    TooComplex {
        /// The rule.
        rule: String,
        /// The pattern.
        pattern: String,
    },
}

impl fmt::Display for GuardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GuardError::Document { message } => write!(f, "{message}"),
            GuardError::Pattern { rule, pattern, message } => write!(
                f,
                "the pattern `{pattern}` of guard rule `{rule}` does not compile: {message}; write it in RE2 syntax over bytes"
            ),
            GuardError::NoAnchor { rule, pattern } => write!(
                f,
                "the pattern `{pattern}` of guard rule `{rule}` has no literal start of at least {} bytes; begin it with a literal (such as `ghp_`) so it can be found in one pass",
                scanner::MIN_ANCHOR
            ),
            GuardError::TooComplex { rule, pattern } => write!(
                f,
                "the pattern `{pattern}` of guard rule `{rule}` would build a DFA over {} bytes; simplify it (bounded repetitions of large classes grow exponentially)",
                scanner::DFA_LIMIT
            ),
        }
    }
}

impl std::error::Error for GuardError {}

/// A guard document (`spec/guards.md` §2).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Document {
    /// The largest content accepted.
    #[serde(default)]
    pub limit: Option<Limit>,
    /// Literals and patterns that block.
    #[serde(default)]
    pub deny: Vec<DenyEntry>,
    /// Secrets that block (unless redacted).
    #[serde(default)]
    pub secrets: Option<Secrets>,
    /// Secrets replaced by a placeholder instead.
    #[serde(default)]
    pub redact: Option<Redact>,
}

/// `limit`: content longer than `bytes` is blocked, and so is a call whose
/// argument named in `fields` is longer than the bytes given for it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limit {
    /// The most bytes of the content as a whole.
    #[serde(default)]
    pub bytes: Option<u64>,
    /// The most bytes of one member of a call's arguments, by the member's
    /// name: a string by its own bytes, any other value by its JSON text.
    /// Only arguments have members, so these apply to arguments alone.
    #[serde(default)]
    pub fields: BTreeMap<String, u64>,
    /// Where it applies (all three places when absent).
    #[serde(default)]
    pub on: Option<Vec<Place>>,
}

/// One `deny` entry: a literal or a pattern.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DenyEntry {
    /// Its name, in the verdict's rule (`deny/<name>`).
    pub name: String,
    /// A literal, matched byte for byte.
    #[serde(default)]
    pub literal: Option<String>,
    /// A pattern (RE2 syntax over bytes) with a literal start.
    #[serde(default)]
    pub regex: Option<String>,
    /// Why it is denied: the verdict's reason.
    #[serde(default)]
    pub note: Option<String>,
    /// Where it applies (all three places when absent).
    #[serde(default)]
    pub on: Option<Vec<Place>>,
}

/// `secrets`: the catalogue and the user's own rules.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Secrets {
    /// Whether the built-in catalogue is scanned (default true).
    #[serde(default = "yes")]
    pub builtin: bool,
    /// Only these types of the catalogue (all when absent).
    #[serde(default)]
    pub types: Option<Vec<String>>,
    /// Findings below this severity are ignored (default `low`).
    #[serde(default)]
    pub min_severity: Option<Severity>,
    /// The user's own rules.
    #[serde(default)]
    pub rules: Vec<RuleSpec>,
    /// Where it applies (all three places when absent).
    #[serde(default)]
    pub on: Option<Vec<Place>>,
}

fn yes() -> bool {
    true
}

/// `redact`: secrets of these types are replaced, not blocked.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Redact {
    /// The types redacted (every secret type when absent).
    #[serde(default)]
    pub types: Option<Vec<String>>,
    /// The placeholder; `<type>` is replaced by the finding's type.
    #[serde(default = "placeholder")]
    pub placeholder: String,
    /// Where it applies (all three places when absent).
    #[serde(default)]
    pub on: Option<Vec<Place>>,
}

/// The default placeholder.
pub const PLACEHOLDER: &str = "[REDACTED:<type>]";

fn placeholder() -> String {
    PLACEHOLDER.to_string()
}

impl Document {
    /// Reads a guard document, or the `guards` member of a policy document.
    ///
    /// # Errors
    ///
    /// The text is not JSON or not a guard document.
    pub fn from_json(text: &str) -> Result<Document, GuardError> {
        let v: Value = serde_json::from_str(text).map_err(|e| GuardError::Document {
            message: format!("the guard document is not JSON: {e}"),
        })?;
        Document::from_value(v)
    }

    /// As [`Document::from_json`], from a parsed value.
    ///
    /// # Errors
    ///
    /// The value is not a guard document.
    pub fn from_value(mut v: Value) -> Result<Document, GuardError> {
        if let Some(g) = v.get_mut("guards") {
            v = g.take();
        }
        serde_json::from_value(v).map_err(|e| GuardError::Document {
            message: format!(
                "the guard document is not valid: {e}; its members are `limit`, `deny`, `secrets` and `redact` (spec/guards.md)"
            ),
        })
    }
}

/// What a guard does about a finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// The content is refused.
    Block,
    /// The span is replaced by the placeholder.
    Redact,
}

/// One thing a guard found: its rule, type, severity and byte span. The
/// matched bytes themselves are never kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The rule: `secrets/<name>`, `deny/<name>` or `limit`.
    pub rule: Arc<str>,
    /// The type (`github-token`, `deny`, `limit`).
    pub kind: Arc<str>,
    /// How serious it is.
    pub severity: Severity,
    /// The span's first byte.
    pub start: u64,
    /// One past the span's last byte.
    pub end: u64,
}

impl Finding {
    /// `{"type", "severity", "start", "end", "rule"}`.
    pub fn to_json(&self) -> Value {
        json!({
            "type": self.kind.as_ref(),
            "severity": self.severity.as_str(),
            "start": self.start,
            "end": self.end,
            "rule": self.rule.as_ref(),
        })
    }
}

/// What a rule is, beside its pattern.
#[derive(Clone, Debug)]
struct Meta {
    rule: Arc<str>,
    kind: Arc<str>,
    dlp: Arc<str>,
    severity: Severity,
    note: Option<Arc<str>>,
    secret: bool,
    on: Vec<Place>,
}

/// A compiled guard document.
#[derive(Debug)]
pub struct Guards {
    scanner: Scanner,
    specs: Vec<RuleSpec>,
    meta: Vec<Meta>,
    limit: Option<(u64, Vec<Place>)>,
    field_limits: Vec<(String, u64)>,
    redact: Option<(Option<Vec<String>>, String, Vec<Place>)>,
}

/// The verdict of the guards over one piece of content.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// `Deny` when a blocking guard fired, else `Allow`.
    pub decision: Decision,
    /// The deciding rule (the first blocking finding's), when denied.
    pub rule: Option<String>,
    /// Why, naming the rule and the type, never the content.
    pub reason: String,
    /// The deciding finding's span.
    pub span: Option<(u64, u64)>,
    /// Every finding, in order.
    pub findings: Vec<Finding>,
    /// The content with redacted spans replaced, when something was
    /// redacted and nothing blocked.
    pub redacted: Option<Vec<u8>>,
}

impl Outcome {
    /// Whether the content may pass (possibly redacted).
    pub fn allowed(&self) -> bool {
        self.decision == Decision::Allow
    }
}

fn places(on: &Option<Vec<Place>>) -> Vec<Place> {
    on.clone().unwrap_or_else(|| ALL_PLACES.to_vec())
}

static BUILTIN: OnceLock<Result<Guards, GuardError>> = OnceLock::new();

/// Scans `input` with the built-in catalogue: every finding, in order.
///
/// # Errors
///
/// Only if the catalogue itself failed to build (a test guards against it).
pub fn scan(input: &[u8]) -> Result<Vec<Finding>, GuardError> {
    Ok(Guards::builtin()?.findings(input))
}

impl Guards {
    /// The built-in catalogue on every place, blocking; built once.
    ///
    /// # Errors
    ///
    /// Only if the catalogue failed to build.
    pub fn builtin() -> Result<&'static Guards, GuardError> {
        BUILTIN
            .get_or_init(|| Guards::build(&Document::default()))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Reads and compiles a guard document.
    ///
    /// # Errors
    ///
    /// The document is invalid, or one of its patterns cannot be compiled
    /// (the error names the rule).
    pub fn from_json(text: &str) -> Result<Guards, GuardError> {
        Guards::build(&Document::from_json(text)?)
    }

    /// Compiles a document. A document without `secrets` still scans the
    /// built-in catalogue everywhere: `"secrets": {"builtin": false}` turns
    /// it off.
    ///
    /// # Errors
    ///
    /// As [`Guards::from_json`].
    pub fn build(doc: &Document) -> Result<Guards, GuardError> {
        let mut specs = Vec::new();
        let mut meta = Vec::new();
        for d in &doc.deny {
            let value = match (&d.literal, &d.regex) {
                (Some(l), None) => regex_syntax::escape(l),
                (None, Some(r)) => r.clone(),
                _ => {
                    return Err(GuardError::Document {
                        message: format!(
                            "the deny entry `{}` needs exactly one of `literal` and `regex`",
                            d.name
                        ),
                    })
                }
            };
            let rule: Arc<str> = format!("deny/{}", d.name).into();
            specs.push(RuleSpec {
                name: rule.to_string(),
                kind: "deny".into(),
                severity: Severity::High,
                before: None,
                value,
                after: None,
                max_len: None,
                min_entropy: None,
                note: d.note.clone(),
            });
            meta.push(Meta {
                rule,
                kind: "deny".into(),
                dlp: "DENY".into(),
                severity: Severity::High,
                note: d.note.as_deref().map(Into::into),
                secret: false,
                on: places(&d.on),
            });
        }
        let default_secrets = Secrets {
            builtin: true,
            types: None,
            min_severity: None,
            rules: Vec::new(),
            on: None,
        };
        let s = doc.secrets.as_ref().unwrap_or(&default_secrets);
        let on = places(&s.on);
        let floor = s.min_severity.unwrap_or(Severity::Low);
        if s.builtin {
            let known = catalogue::types();
            if let Some(ts) = &s.types {
                if let Some(t) = ts.iter().find(|t| !known.contains(&t.as_str())) {
                    return Err(GuardError::Document {
                        message: format!(
                            "the secrets type `{t}` is not in the catalogue; write one of {}",
                            known.join(", ")
                        ),
                    });
                }
            }
            for (spec, dlp) in catalogue::rules() {
                if spec.severity < floor
                    || s.types.as_ref().is_some_and(|ts| !ts.contains(&spec.kind))
                {
                    continue;
                }
                meta.push(Meta {
                    rule: format!("secrets/{}", spec.name).into(),
                    kind: spec.kind.as_str().into(),
                    dlp: dlp.into(),
                    severity: spec.severity,
                    note: None,
                    secret: true,
                    on: on.clone(),
                });
                specs.push(spec);
            }
        }
        for r in &s.rules {
            if r.severity < floor {
                continue;
            }
            meta.push(Meta {
                rule: format!("secrets/{}", r.name).into(),
                kind: r.kind.as_str().into(),
                dlp: r.kind.to_ascii_uppercase().replace('-', "_").into(),
                severity: r.severity,
                note: r.note.as_deref().map(Into::into),
                secret: true,
                on: on.clone(),
            });
            specs.push(r.clone());
        }
        if let Some(l) = &doc.limit {
            if l.bytes.is_none() && l.fields.is_empty() {
                return Err(GuardError::Document {
                    message: "the `limit` sets neither `bytes` nor `fields`: give the most bytes of the content, or of named arguments".into(),
                });
            }
        }
        let scanner = Scanner::build(&specs)?;
        Ok(Guards {
            scanner,
            specs,
            meta,
            limit: doc
                .limit
                .as_ref()
                .and_then(|l| l.bytes.map(|b| (b, places(&l.on)))),
            field_limits: doc
                .limit
                .as_ref()
                .map(|l| l.fields.iter().map(|(k, v)| (k.clone(), *v)).collect())
                .unwrap_or_default(),
            redact: doc
                .redact
                .as_ref()
                .map(|r| (r.types.clone(), r.placeholder.clone(), places(&r.on))),
        })
    }

    /// The content limit in `place`, if any.
    pub fn limit(&self, place: Place) -> Option<u64> {
        self.limit
            .as_ref()
            .filter(|(_, on)| on.contains(&place))
            .map(|(max, _)| *max)
    }

    /// The compiled rules' specifications, by rule id.
    pub fn specs(&self) -> &[RuleSpec] {
        &self.specs
    }

    /// The scanner.
    pub fn scanner(&self) -> &Scanner {
        &self.scanner
    }

    /// The finding a hit reports.
    pub fn finding(&self, hit: &Hit) -> Option<Finding> {
        let m = self.meta.get(hit.rule as usize)?;
        Some(Finding {
            rule: Arc::clone(&m.rule),
            kind: Arc::clone(&m.kind),
            severity: m.severity,
            start: hit.start,
            end: hit.end,
        })
    }

    /// Every finding of every rule in `input`, wherever it applies, in
    /// order of span; of findings with the same span, the first rule's.
    pub fn findings(&self, input: &[u8]) -> Vec<Finding> {
        self.findings_in(None, input)
    }

    fn findings_in(&self, place: Option<Place>, input: &[u8]) -> Vec<Finding> {
        let mut hits = Vec::new();
        let mut dedup = Dedup::default();
        self.scanner.scan_with(input, &mut |h| {
            if self.applies(place, &h) {
                dedup.push(h, &mut |h| hits.push(h));
            }
        });
        dedup.release(u64::MAX, &mut |h| hits.push(h));
        hits.iter().filter_map(|h| self.finding(h)).collect()
    }

    fn applies(&self, place: Option<Place>, h: &Hit) -> bool {
        self.meta
            .get(h.rule as usize)
            .is_some_and(|m| place.is_none_or(|p| m.on.contains(&p)))
    }

    /// A stream of findings over input in chunks, for `place` (every
    /// place when `None`).
    pub fn stream(&self, place: Option<Place>) -> GuardStream<'_> {
        GuardStream {
            g: self,
            place,
            inner: self.scanner.stream(),
            dedup: Dedup::default(),
            len: 0,
        }
    }

    fn redacts(&self, place: Place, f: &Finding) -> bool {
        let secret = self
            .meta
            .iter()
            .find(|m| m.rule == f.rule)
            .is_some_and(|m| m.secret);
        secret
            && self.redact.as_ref().is_some_and(|(types, _, on)| {
                on.contains(&place)
                    && types
                        .as_ref()
                        .is_none_or(|ts| ts.iter().any(|t| t.as_str() == f.kind.as_ref()))
            })
    }

    /// The guards' verdict on `input` in `place`: blocked by the first
    /// blocking finding (or the limit), else allowed, with the redacted
    /// copy when a span was redacted.
    pub fn check(&self, place: Place, input: &[u8]) -> Outcome {
        if let Some((max, on)) = &self.limit {
            if on.contains(&place) && input.len() as u64 > *max {
                return Outcome {
                    decision: Decision::Deny,
                    rule: Some("limit".into()),
                    reason: format!(
                        "the content is {} bytes, over the guard limit of {max}",
                        input.len()
                    ),
                    span: Some((*max, input.len() as u64)),
                    findings: vec![Finding {
                        rule: "limit".into(),
                        kind: "limit".into(),
                        severity: Severity::High,
                        start: *max,
                        end: input.len() as u64,
                    }],
                    redacted: None,
                };
            }
        }
        let findings = self.findings_in(Some(place), input);
        let blocking = findings.iter().find(|f| !self.redacts(place, f));
        if let Some(b) = blocking {
            let note = self
                .meta
                .iter()
                .find(|m| m.rule == b.rule)
                .and_then(|m| m.note.clone());
            let what = if b.kind.as_ref() == "deny" {
                "a denied pattern".to_string()
            } else {
                format!("a secret of type {}", b.kind)
            };
            let mut reason = format!(
                "{what} at bytes {}..{}, found by guard rule {}",
                b.start, b.end, b.rule
            );
            if let Some(n) = note {
                reason.push_str(": ");
                reason.push_str(&n);
            }
            return Outcome {
                decision: Decision::Deny,
                rule: Some(b.rule.to_string()),
                reason,
                span: Some((b.start, b.end)),
                findings,
                redacted: None,
            };
        }
        let redacted = if findings.is_empty() {
            None
        } else {
            let ph = self.redact.as_ref().map_or(PLACEHOLDER, |r| r.1.as_str());
            Some(redact(input, &findings, ph))
        };
        Outcome {
            decision: Decision::Allow,
            rule: None,
            reason: if findings.is_empty() {
                "no guard fired".into()
            } else {
                format!("{} secret(s) redacted", findings.len())
            },
            span: None,
            findings,
            redacted,
        }
    }

    /// The guards' verdict on a call's arguments: each member `limit`'s
    /// `fields` names is held to its bytes first (the span is then within
    /// that member's value), then the arguments' JSON text is checked as
    /// [`Place::Arguments`] content.
    ///
    /// ```
    /// use toolgate::guards::Guards;
    /// use toolgate::Args;
    ///
    /// let g = Guards::from_json(r#"{"limit": {"fields": {"content": 4}}}"#)?;
    /// let o = g.check_args(&Args::from_json(r#"{"path": "a", "content": "hello"}"#));
    /// assert_eq!(o.rule.as_deref(), Some("limit/content"));
    /// assert!(g.check_args(&Args::from_json(r#"{"content": "hi"}"#)).allowed());
    /// # Ok::<(), toolgate::guards::GuardError>(())
    /// ```
    pub fn check_args(&self, args: &crate::Args) -> Outcome {
        if !self.field_limits.is_empty() {
            let members = args.value().and_then(Value::as_object);
            for (field, max) in &self.field_limits {
                let Some(v) = members.and_then(|m| m.get(field)) else {
                    continue;
                };
                let len = match v {
                    Value::String(s) => s.len(),
                    other => other.to_string().len(),
                } as u64;
                if len > *max {
                    let rule = format!("limit/{field}");
                    return Outcome {
                        decision: Decision::Deny,
                        rule: Some(rule.clone()),
                        reason: format!(
                            "the argument `{field}` is {len} bytes, over the guard limit of {max}"
                        ),
                        span: Some((*max, len)),
                        findings: vec![Finding {
                            rule: rule.into(),
                            kind: "limit".into(),
                            severity: Severity::High,
                            start: *max,
                            end: len,
                        }],
                        redacted: None,
                    };
                }
            }
        }
        // An escape can spell what a guard looks for (`\u007c` is `|`),
        // and the policy reads the decoded value: text with an escape is
        // scanned as its value written again, without the escapes JSON
        // does not need, as the hook's re-written `tool_input` is.
        let raw = args.raw();
        if raw.contains('\\') {
            if let Some(v) = args.value() {
                return self.check(Place::Arguments, &crate::json::to_bytes(v));
            }
        }
        self.check(Place::Arguments, raw.as_bytes())
    }

    /// The findings in a Rubric request's `input`, `args` and `kwargs`
    /// members, each scanned as its JSON text (a string as itself).
    pub fn request_findings(&self, request: &Value) -> Vec<Finding> {
        let mut out = Vec::new();
        for k in ["input", "args", "kwargs"] {
            match request.get(k) {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) => out.extend(self.findings(s.as_bytes())),
                Some(v) => {
                    out.extend(self.findings(&crate::json::to_bytes(v)));
                }
            }
        }
        out
    }

    /// The DLP fields Rubric's SDK adds to a request, for `findings`:
    /// `dlp_detected`, and when something was found `dlp_severity` (the
    /// highest) and `dlp_types` (sorted, each once).
    pub fn dlp_fields(&self, findings: &[Finding]) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        m.insert("dlp_detected".into(), Value::Bool(!findings.is_empty()));
        if findings.is_empty() {
            return m;
        }
        let mut types: Vec<&str> = findings
            .iter()
            .filter_map(|f| self.meta.iter().find(|x| x.rule == f.rule))
            .map(|x| x.dlp.as_ref())
            .collect();
        types.sort_unstable();
        types.dedup();
        let sev = findings
            .iter()
            .map(|f| f.severity)
            .max()
            .unwrap_or(Severity::Low);
        m.insert("dlp_severity".into(), Value::from(sev.as_str()));
        m.insert(
            "dlp_types".into(),
            Value::Array(types.into_iter().map(Value::from).collect()),
        );
        m
    }
}

/// Replaces each finding's span in `input` by `placeholder` (with
/// `<type>` replaced), in one copy; overlapping spans merge into the
/// first's placeholder.
pub fn redact(input: &[u8], findings: &[Finding], placeholder: &str) -> Vec<u8> {
    let mut spans: Vec<(usize, usize, &str)> = findings
        .iter()
        .filter_map(|f| {
            Some((
                usize::try_from(f.start).ok()?,
                usize::try_from(f.end).ok()?,
                f.kind.as_ref(),
            ))
        })
        .collect();
    spans.sort_by_key(|s| (s.0, std::cmp::Reverse(s.1)));
    let mut out = Vec::with_capacity(input.len());
    let mut at = 0usize;
    for (s, e, kind) in spans {
        let e = e.min(input.len());
        if e <= at {
            continue;
        }
        let s = s.max(at);
        out.extend_from_slice(input.get(at..s).unwrap_or_default());
        out.extend_from_slice(placeholder.replace("<type>", kind).as_bytes());
        at = e;
    }
    out.extend_from_slice(input.get(at..).unwrap_or_default());
    out
}

/// Of hits with the same span, the one of the first rule (specific rules
/// come before generic ones), released in order of span once no later hit
/// can have the same span: a hit's span starts no earlier than its anchor,
/// and anchors arrive in order.
#[derive(Debug, Default)]
struct Dedup {
    held: std::collections::BTreeMap<(u64, u64), Hit>,
}

impl Dedup {
    fn push(&mut self, h: Hit, out: &mut dyn FnMut(Hit)) {
        self.release(h.at, out);
        let slot = self.held.entry((h.start, h.end)).or_insert(h);
        if h.rule < slot.rule {
            *slot = h;
        }
    }

    /// Releases the hits whose span starts before `before`.
    fn release(&mut self, before: u64, out: &mut dyn FnMut(Hit)) {
        while let Some(e) = self.held.first_entry() {
            if e.key().0 >= before {
                break;
            }
            out(e.remove());
        }
    }
}

/// Findings over input that arrives in chunks (`toolgate scan`).
#[derive(Debug)]
pub struct GuardStream<'g> {
    g: &'g Guards,
    place: Option<Place>,
    inner: Stream<'g>,
    dedup: Dedup,
    len: u64,
}

impl GuardStream<'_> {
    /// Reads a chunk, reporting the findings it settles, in order of span.
    pub fn feed(&mut self, chunk: &[u8], out: &mut dyn FnMut(Finding)) {
        self.len += chunk.len() as u64;
        let (g, place, dedup) = (self.g, self.place, &mut self.dedup);
        let mut emit = |h: Hit| {
            if let Some(f) = g.finding(&h) {
                out(f);
            }
        };
        self.inner.feed(chunk, &mut |h| {
            if g.applies(place, &h) {
                dedup.push(h, &mut emit);
            }
        });
        dedup.release(self.inner.settled(), &mut emit);
    }

    /// Ends the input, reporting the rest.
    pub fn finish(&mut self, out: &mut dyn FnMut(Finding)) {
        let (g, place, dedup) = (self.g, self.place, &mut self.dedup);
        let mut emit = |h: Hit| {
            if let Some(f) = g.finding(&h) {
                out(f);
            }
        };
        self.inner.finish(&mut |h| {
            if g.applies(place, &h) {
                dedup.push(h, &mut emit);
            }
        });
        dedup.release(u64::MAX, &mut emit);
    }

    /// The bytes held for the findings still pending.
    pub fn buffered(&self) -> usize {
        self.inner.buffered()
    }

    /// The bytes read so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing was read.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The offset before which no finding can still start.
    pub fn settled(&self) -> u64 {
        self.inner.settled()
    }

    /// Whether a finding blocks in this stream's place (secrets are not
    /// redacted without a place).
    pub fn blocks(&self, f: &Finding) -> bool {
        self.place.is_none_or(|p| !self.g.redacts(p, f))
    }
}

impl Guards {
    /// A stream that writes `input` with every secret replaced by the
    /// placeholder, as its chunks arrive: bytes are written once no
    /// finding can start before them, so the stream holds at most a window
    /// and a chunk. `deny` findings are reported, not redacted.
    pub fn redact_stream(&self) -> RedactStream<'_> {
        RedactStream {
            inner: self.stream(None),
            raw: Vec::new(),
            written: 0,
            spans: Vec::new(),
            placeholder: self
                .redact
                .as_ref()
                .map_or(PLACEHOLDER, |r| r.1.as_str())
                .to_string(),
        }
    }

    fn is_secret(&self, f: &Finding) -> bool {
        self.meta.iter().any(|m| m.rule == f.rule && m.secret)
    }
}

/// Redaction over input in chunks ([`Guards::redact_stream`]).
#[derive(Debug)]
pub struct RedactStream<'g> {
    inner: GuardStream<'g>,
    /// The input from `written` on.
    raw: Vec<u8>,
    written: u64,
    /// Secret spans not yet written: (start, end, type).
    spans: Vec<(u64, u64, Arc<str>)>,
    placeholder: String,
}

impl RedactStream<'_> {
    /// Reads a chunk: writes what is settled to `out`, reports every
    /// finding to `found`.
    pub fn feed(
        &mut self,
        chunk: &[u8],
        out: &mut dyn FnMut(&[u8]),
        found: &mut dyn FnMut(Finding),
    ) {
        self.raw.extend_from_slice(chunk);
        let (g, spans) = (self.inner.g, &mut self.spans);
        self.inner.feed(chunk, &mut |f| {
            if g.is_secret(&f) {
                spans.push((f.start, f.end, Arc::clone(&f.kind)));
            }
            found(f);
        });
        let upto = self.inner.settled();
        self.flush(upto, out);
    }

    /// Ends the input, writing the rest.
    pub fn finish(&mut self, out: &mut dyn FnMut(&[u8]), found: &mut dyn FnMut(Finding)) {
        let (g, spans) = (self.inner.g, &mut self.spans);
        self.inner.finish(&mut |f| {
            if g.is_secret(&f) {
                spans.push((f.start, f.end, Arc::clone(&f.kind)));
            }
            found(f);
        });
        let end = self.written + self.raw.len() as u64;
        self.flush(end, out);
    }

    fn flush(&mut self, upto: u64, out: &mut dyn FnMut(&[u8])) {
        self.spans.sort_by_key(|s| (s.0, std::cmp::Reverse(s.1)));
        let base = self.written;
        let end = base + self.raw.len() as u64;
        let rel = |x: u64| usize::try_from(x.saturating_sub(base)).unwrap_or(usize::MAX);
        let mut at = self.written;
        let mut used = 0;
        for (s, e, kind) in &self.spans {
            if *s >= upto {
                break;
            }
            used += 1;
            let e = (*e).min(end);
            if e <= at {
                continue;
            }
            let s = (*s).max(at);
            out(self.raw.get(rel(at)..rel(s)).unwrap_or_default());
            out(self.placeholder.replace("<type>", kind).as_bytes());
            at = e;
        }
        self.spans.drain(..used);
        if at < upto {
            out(self.raw.get(rel(at)..rel(upto)).unwrap_or_default());
            at = upto;
        }
        self.raw.drain(..rel(at).min(self.raw.len()));
        self.written = at;
    }
}
