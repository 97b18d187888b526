//! Authensor policies: prioritised, scoped policies of first-match rules,
//! with session rules over the actions a session already took.
//!
//! The semantics are `spec/authensor.md`. [`Policies`] reads one policy or
//! a list in the seed's shape ([`Policies::from_json`]). An [`Envelope`] is
//! the action to decide (`action`, `resource`, `principalId`, …) with the
//! session's earlier actions. [`AuthensorEngine`] compiles the policies
//! into condition-program tables ([`crate::conditions`], a first-match
//! program) and decides envelopes into [`AuthensorResult`]s; it writes and
//! loads artifacts. `toolgate_reference::authensor::AuthensorReference` decides the same
//! envelopes with plain loops over the policies, as the oracle.
//!
//! ```
//! use toolgate::authensor::{AuthensorEngine, Effect, Envelope, Policies};
//! let policies = Policies::from_json(r#"[{"id": "block-destructive", "version": 1,
//!   "priority": 100, "enabled": true,
//!   "rules": [{"effect": "deny",
//!              "conditions": {"action": {"pattern": "shell.*"}, "resource": {"pattern": "**/rm*"}},
//!              "reason": "Destructive shell commands blocked"}]}]"#)?;
//! let engine = AuthensorEngine::build(&policies)?;
//! let r = engine.decide(&Envelope::from_json(r#"{"id": "e1", "action": "shell.execute",
//!   "resource": "bash://localhost/rm", "principalId": "agent-1",
//!   "timestamp": "2026-01-01T00:00:00Z"}"#)?);
//! assert_eq!(r.outcome, Effect::Deny);
//! assert_eq!(r.reason.as_deref(), Some("Destructive shell commands blocked"));
//! assert_eq!(r.rule.as_ref().map(|m| m.id.as_str()), Some("0"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Depends on `ir` (the lowering), `conditions`, `artifact`, `json`, `diag` and the runtime's
//! work budget; `reference` depends on the policy model only (and, for
//! `regex`, on `conditions::pattern`, which says which patterns compile).

mod engine;
mod envelope;
mod policy;
mod sessions;

pub use engine::AuthensorEngine;
pub use sessions::{KeptSessions, StoredAction, Trips, MAX_ATTEMPTS};

use crate::conditions::value::js_number;
use crate::conditions::Limits;
use crate::decision::Decision;
use crate::diag::DiagnosticKind;
use crate::diag::{Diagnostic, Diagnostics};
use crate::error::IntakeError;
use serde_json::{json, Map, Value};

/// The most earlier actions a session may hold; a longer one makes the
/// envelope unreadable, and it is denied.
pub const MAX_HISTORY: usize = 10_000;

/// The reason when no policy decides.
pub const REASON_NO_MATCH: &str = "No matching policy found (fail-closed)";
/// The reason when the tables are damaged (only an artifact damaged behind
/// valid checksums can make a decision exhaust its work budget).
pub const REASON_DAMAGED: &str =
    "evaluation exceeded its work budget: the tables are damaged (fail-closed)";

/// What a rule, a default or a session rule decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Effect {
    /// Let the action through.
    Allow,
    /// Refuse it.
    Deny,
    /// Ask a person first: toolgate's ask.
    RequireApproval,
}

impl Effect {
    /// `allow`, `deny` or `require_approval`.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Allow => "allow",
            Effect::Deny => "deny",
            Effect::RequireApproval => "require_approval",
        }
    }

    /// The effect named `name`.
    pub fn from_name(name: &str) -> Option<Effect> {
        [Effect::Allow, Effect::Deny, Effect::RequireApproval]
            .into_iter()
            .find(|e| e.as_str() == name)
    }

    /// The effect as toolgate's decision: `require_approval` is ask.
    pub fn decision(self) -> Decision {
        match self {
            Effect::Allow => Decision::Allow,
            Effect::Deny => Decision::Deny,
            Effect::RequireApproval => Decision::Ask,
        }
    }

    fn code(self) -> u32 {
        match self {
            Effect::Allow => 0,
            Effect::Deny => 1,
            Effect::RequireApproval => 2,
        }
    }

    fn from_code(c: u32) -> Option<Effect> {
        match c {
            0 => Some(Effect::Allow),
            1 => Some(Effect::Deny),
            2 => Some(Effect::RequireApproval),
            _ => None,
        }
    }
}

/// A policy's version as written: a number or a string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Version {
    /// `"version": 1`.
    Number(serde_json::Number),
    /// `"version": "1.2.0"`.
    Text(String),
}

impl Version {
    fn to_json(&self) -> Value {
        match self {
            Version::Number(n) => Value::Number(n.clone()),
            Version::Text(s) => Value::String(s.clone()),
        }
    }
}

/// Policies, in the order written, and what their reader warned about.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Policies {
    /// The policies.
    pub policies: Vec<Policy>,
    /// What the policies say that is allowed but likely a mistake.
    pub warnings: Vec<Diagnostic>,
}

/// One policy.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    /// `id`.
    pub id: String,
    /// `version`, when given.
    pub version: Option<Version>,
    /// `priority` (0 when absent): higher is decided first.
    pub priority: f64,
    /// `enabled` (true when absent): a disabled policy is dropped.
    pub enabled: bool,
    /// `scope`.
    pub scope: Scope,
    /// `rules`, in order: the first that matches decides.
    pub rules: Vec<Rule>,
    /// `defaultEffect`: what the policy decides when no rule matches; none
    /// passes the envelope to the next policy.
    pub default_effect: Option<Effect>,
    /// `sessionRules`.
    pub session_rules: Option<SessionRules>,
}

/// Which envelopes a policy decides: an empty list does not constrain.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scope {
    /// Globs over `action` (separator `.`), any of which may match.
    pub actions: Vec<String>,
    /// Globs over `principalId` (separator `.`), any of which may match.
    pub principals: Vec<String>,
}

/// One rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// `id`: without one, results name the rule by its position (`0`, `1`,
    /// …).
    pub id: Option<String>,
    /// `effect`.
    pub effect: Effect,
    /// `conditions` other than `constraints`, ANDed.
    pub conditions: Vec<Condition>,
    /// `conditions.constraints`: the budget.
    pub budget: Option<Budget>,
    /// `reason`.
    pub reason: Option<String>,
}

impl Rule {
    /// The id results name the rule by: its own, or its position.
    pub fn name(&self, position: usize) -> String {
        self.id.clone().unwrap_or_else(|| position.to_string())
    }
}

/// One operator on one envelope field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    /// The field: `action`, `resource`, or a dot path into the envelope.
    pub field: String,
    /// The operator and its value.
    pub op: Operator,
}

/// A condition's operator. Each holds only for a string field but
/// `notIn`, which holds for anything else (a missing field included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operator {
    /// A segment glob: `/` separates segments of `resource`, `.` of any
    /// other field.
    Pattern(String),
    /// Exact equality.
    Equals(String),
    /// Equal to one of the items.
    In(Vec<String>),
    /// Equal to none of the items.
    NotIn(Vec<String>),
    /// An RE2 pattern occurring in the field.
    Regex(String),
}

impl Operator {
    /// The separator of a `pattern` on `field`.
    pub fn separator(field: &str) -> char {
        if field == "resource" {
            '/'
        } else {
            '.'
        }
    }
}

/// A budget: the rule matches an envelope whose declared cost
/// (`constraints.maxAmount`) exceeds `max_cost`.
#[derive(Clone, Debug, PartialEq)]
pub struct Budget {
    /// `maxCost`.
    pub max_cost: f64,
    /// `currency`: when given, the envelope's cost must be in it, or the
    /// decision fails closed.
    pub currency: Option<String>,
}

/// A policy's session rules.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionRules {
    /// `maxActions`: the most actions a session may take, the proposed one
    /// included.
    pub max_actions: Option<u64>,
    /// `forbiddenSequences`, in order.
    pub forbidden_sequences: Vec<Sequence>,
    /// `riskThreshold`: the highest cumulative score allowed.
    pub risk_threshold: Option<f64>,
    /// `riskWeights`: action globs and their weights, in order.
    pub risk_weights: Vec<(String, f64)>,
}

/// A forbidden sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sequence {
    /// `id`.
    pub id: Option<String>,
    /// `actions`: the steps, action globs, in order.
    pub actions: Vec<String>,
    /// `reason`.
    pub reason: Option<String>,
    /// `lookbackActions`: how many of the latest actions (the proposed one
    /// included) to look at; absent or 0 looks at all.
    pub lookback: Option<u64>,
    /// `effect` (deny when absent).
    pub effect: Effect,
}

impl Sequence {
    /// The reason a violation gives: the sequence's own, or the engine's.
    pub fn reason_text(&self) -> String {
        self.reason.clone().unwrap_or_else(|| {
            format!(
                "Forbidden action sequence detected: [{}]",
                self.actions.join(" -> ")
            )
        })
    }
}

impl Policies {
    /// Reads and validates policies: one policy object, or a list.
    ///
    /// # Errors
    ///
    /// Every problem found, each naming its place in the document and
    /// pointing into `text` (so that it renders with a line and column).
    pub fn from_json(text: &str) -> Result<Policies, Diagnostics> {
        let v = crate::json::parse_document(text).map_err(|e| {
            Diagnostics::one(
                Diagnostic::new(
                    DiagnosticKind::InvalidPolicy,
                    format!("the policies are not JSON: {e}"),
                )
                .with_help("write one policy object or a list of them"),
            )
        })?;
        match Policies::from_value(&v) {
            Ok(mut ps) => {
                crate::diag::locate_all(&mut ps.warnings, text);
                Ok(ps)
            }
            Err(d) => Err(d.locate(text)),
        }
    }

    /// As [`Policies::from_json`], from a parsed document.
    ///
    /// # Errors
    ///
    /// As [`Policies::from_json`].
    pub fn from_value(v: &Value) -> Result<Policies, Diagnostics> {
        policy::read(v, Limits::default())
    }

    /// Whether a JSON document has the shape of Authensor policies: an
    /// array, or an object with `rules` or `sessionRules` and neither
    /// `permissions` (Claude Code settings) nor `policies` (a Rubric
    /// bundle).
    pub fn looks_like(v: &Value) -> bool {
        policy::looks_like(v)
    }

    /// The enabled policies in the order they are decided: by priority,
    /// highest first; equal priorities keep the order written.
    pub fn decision_order(&self) -> Vec<&Policy> {
        let mut order: Vec<&Policy> = self.policies.iter().filter(|p| p.enabled).collect();
        // Stable, and `0` equals `-0`, as JavaScript's `b - a` has it.
        order.sort_by(|a, b| {
            b.priority
                .partial_cmp(&a.priority)
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        order
    }
}

/// A session: the actions it already took, oldest first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Session {
    /// `sessionId`, when given.
    pub session_id: Option<String>,
    /// The `actionType` of each earlier action, in order.
    pub actions: Vec<String>,
    /// The `riskScore` of each earlier action, in order (0 where absent),
    /// beside `actions`.
    pub risk_scores: Vec<f64>,
    /// Whether the actions are kept by a state store (a `sessionId` and no
    /// `actions`) and not yet read from it: such an envelope is decided
    /// through [`KeptSessions`], and denied by an engine alone.
    pub stored: bool,
}

/// An action envelope to decide, and its session.
#[derive(Clone, Debug, PartialEq)]
pub struct Envelope {
    value: Value,
    session: Option<Session>,
    /// Why the envelope cannot be decided; it is denied.
    error: Option<String>,
}

impl Envelope {
    /// Reads an envelope: a JSON object with string members `action`,
    /// `resource` and `principalId` (and `id`, `timestamp` when present),
    /// any others the conditions address, and an optional `session`
    /// (`{"sessionId", "actions": [{"actionType", "timestamp"}]}`), which is
    /// taken out of the envelope.
    ///
    /// # Errors
    ///
    /// What is wrong with the envelope.
    pub fn from_json(text: &str) -> Result<Envelope, IntakeError> {
        let v = crate::json::parse_strict(text).map_err(|e| IntakeError::new(e.to_string()))?;
        envelope::read(v).map_err(IntakeError::from)
    }

    /// As [`Envelope::from_json`], from a parsed value.
    ///
    /// # Errors
    ///
    /// As [`Envelope::from_json`].
    pub fn from_value(v: Value) -> Result<Envelope, IntakeError> {
        envelope::read(v).map_err(IntakeError::from)
    }

    /// An envelope that could not be read: deciding it denies, saying why.
    pub fn unreadable(why: impl Into<String>) -> Envelope {
        Envelope {
            value: Value::Null,
            session: None,
            error: Some(why.into()),
        }
    }

    /// The envelope as JSON, without its session.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// `action`.
    pub fn action(&self) -> &str {
        action_of(&self.value)
    }

    /// `resource`.
    pub fn resource(&self) -> &str {
        self.member("resource")
    }

    /// `principalId`.
    pub fn principal_id(&self) -> &str {
        self.member("principalId")
    }

    fn member(&self, m: &str) -> &str {
        str_member(&self.value, m)
    }

    /// The session, when one was given.
    pub fn session(&self) -> Option<&Session> {
        self.session.as_ref()
    }

    /// The session's earlier action types; none without a session.
    pub fn history(&self) -> &[String] {
        self.session.as_ref().map_or(&[], |s| s.actions.as_slice())
    }

    /// The `riskScore` of each earlier action, beside [`Envelope::history`]
    /// (0 where absent).
    pub fn history_risk(&self) -> &[f64] {
        self.session
            .as_ref()
            .map_or(&[], |s| s.risk_scores.as_slice())
    }

    /// The proposed action's own `riskScore` (the envelope's member), 0
    /// when absent. It counts toward `riskThreshold` beside the action's
    /// weight.
    pub fn risk_score(&self) -> f64 {
        risk_score_of(&self.value)
    }

    /// Why the envelope could not be read, if it could not.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }
}

/// The rule that decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatchedRule {
    /// Its id, or its position in its policy.
    pub id: String,
    /// What it decided: its effect, or `deny` when its budget could not be
    /// checked.
    pub effect: Effect,
}

/// Which session rule an action violates.
#[derive(Clone, Debug, PartialEq)]
pub enum Violation {
    /// `maxActions`: `count` actions with the proposed one, above `max`.
    MaxActions {
        /// The actions, the proposed one included.
        count: u64,
        /// The limit.
        max: u64,
    },
    /// A forbidden sequence occurs in the look-back window.
    ForbiddenSequence {
        /// Its steps, as written.
        sequence: Vec<String>,
        /// Its id, when it has one.
        id: Option<String>,
    },
    /// The cumulative risk score exceeds the threshold.
    RiskThreshold {
        /// The score, the proposed action included.
        score: f64,
        /// The threshold.
        max: f64,
    },
}

impl Violation {
    /// `max_actions`, `forbidden_sequence` or `risk_threshold`.
    pub fn kind(&self) -> &'static str {
        match self {
            Violation::MaxActions { .. } => "max_actions",
            Violation::ForbiddenSequence { .. } => "forbidden_sequence",
            Violation::RiskThreshold { .. } => "risk_threshold",
        }
    }

    fn details(&self) -> Value {
        match self {
            Violation::MaxActions { count, max } => {
                json!({"actionCount": count, "maxActions": max})
            }
            Violation::ForbiddenSequence { sequence, id } => {
                let mut m = Map::new();
                m.insert("detectedSequence".into(), json!(sequence));
                if let Some(id) = id {
                    m.insert("sequenceRuleId".into(), json!(id));
                }
                Value::Object(m)
            }
            Violation::RiskThreshold { score, max } => {
                json!({"cumulativeScore": js_json(*score), "maxScore": js_json(*max)})
            }
        }
    }
}

/// A number as JavaScript would write it in JSON: whole numbers without a
/// fraction.
fn js_json(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9_007_199_254_740_992.0 {
        json!(x as i64)
    } else {
        serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
    }
}

/// A session rule's violation: what it is and why.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionViolation {
    /// The rule and its figures.
    pub violation: Violation,
    /// The reason.
    pub reason: String,
}

/// What deciding an envelope gives.
#[derive(Clone, Debug, PartialEq)]
pub struct AuthensorResult {
    /// `decision.outcome`.
    pub outcome: Effect,
    /// `decision.reason`.
    pub reason: Option<String>,
    /// `decision.policyId`: the policy that decided.
    pub policy_id: Option<String>,
    /// `decision.policyVersion`.
    pub policy_version: Option<Version>,
    /// `decision.matchedRules[0]`: the rule that decided.
    pub rule: Option<MatchedRule>,
    /// `sessionViolation`: the session rule that decided.
    pub session_violation: Option<SessionViolation>,
}

impl AuthensorResult {
    /// A deny no policy made, with `reason`.
    pub fn fail_closed(reason: impl Into<String>) -> AuthensorResult {
        AuthensorResult {
            outcome: Effect::Deny,
            reason: Some(reason.into()),
            policy_id: None,
            policy_version: None,
            rule: None,
            session_violation: None,
        }
    }

    /// The deny of an envelope that could not be read.
    pub fn unreadable(why: &str) -> AuthensorResult {
        AuthensorResult::fail_closed(format!(
            "the envelope could not be read: {why} (fail-closed)"
        ))
    }

    /// The result in the seed's shape: `{"decision": {"outcome", "policyId",
    /// "policyVersion", "reason", "matchedRules": [{"ruleId", "effect"}]},
    /// "sessionViolation": {"type", "reason", "details"}}`, absent members
    /// left out. There is no clock reading in it.
    pub fn to_json(&self) -> Value {
        let mut d = Map::new();
        d.insert("outcome".into(), json!(self.outcome.as_str()));
        if let Some(p) = &self.policy_id {
            d.insert("policyId".into(), json!(p));
        }
        if let Some(v) = &self.policy_version {
            d.insert("policyVersion".into(), v.to_json());
        }
        if let Some(r) = &self.reason {
            d.insert("reason".into(), json!(r));
        }
        if let Some(r) = &self.rule {
            d.insert(
                "matchedRules".into(),
                json!([{"ruleId": r.id, "effect": r.effect.as_str()}]),
            );
        }
        let mut top = Map::new();
        top.insert("decision".into(), Value::Object(d));
        if let Some(s) = &self.session_violation {
            top.insert(
                "sessionViolation".into(),
                json!({"type": s.violation.kind(), "reason": s.reason, "details": s.violation.details()}),
            );
        }
        Value::Object(top)
    }
}

/// The seed's shape ([`AuthensorResult::to_json`]), written to any serde
/// serializer.
impl serde::Serialize for AuthensorResult {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

/// The reason of a default: the engine's text.
pub fn default_reason(effect: Effect) -> String {
    format!("Default policy effect: {}", effect.as_str())
}

/// What a `riskScore` adds to a session's score: the number given, never
/// less than 0, so that a caller can raise the score its weights give but
/// never lower it.
pub fn risk_added(score: f64) -> f64 {
    if score > 0.0 {
        score
    } else {
        0.0
    }
}

/// The reason an envelope whose session the store keeps is denied when it
/// is decided without the store.
pub fn stored_session_reason(session: &str) -> String {
    format!(
        "the session `{session}` names no `actions`, so its history is kept by the service's state store, and this decision has none: send the session's `actions`, or decide through `toolgate serve` (fail-closed)"
    )
}

/// The reason of a `maxActions` violation: the engine's text.
pub fn max_actions_reason(count: u64, max: u64) -> String {
    format!("Session action limit exceeded: {count} actions (limit: {max})")
}

/// The reason of a `riskThreshold` violation: the engine's text, numbers
/// written as JavaScript writes them.
pub fn risk_reason(score: f64, max: f64) -> String {
    format!(
        "Session risk threshold exceeded: cumulative score {} exceeds max {}",
        js_number(score),
        js_number(max)
    )
}

/// The reason of a budget that cannot be checked because the envelope's
/// cost is not a number.
pub fn budget_not_number_reason(rule: &str) -> String {
    format!(
        "the envelope's cost (`constraints.maxAmount`) is not a number, so the budget of rule `{rule}` cannot be checked (fail-closed)"
    )
}

/// The reason of a budget that cannot be checked because the envelope's
/// cost is not in the budget's currency.
pub fn budget_currency_reason(rule: &str, currency: &str) -> String {
    format!(
        "the envelope's cost is not in `{currency}` (`constraints.currency`), the currency of the budget of rule `{rule}`, so the budget cannot be checked (fail-closed)"
    )
}

/// One policy as compiled tables hold it, for `toolgate inspect`.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicySummary {
    /// `id`.
    pub id: String,
    /// `version`, when given.
    pub version: Option<Version>,
    /// The number of rules.
    pub rules: usize,
    /// `defaultEffect`, when given.
    pub default_effect: Option<Effect>,
    /// Whether the policy has session rules.
    pub session_rules: bool,
}

/// What answers Authensor envelopes: the compiled engine and the reference.
pub trait AuthensorEvaluator {
    /// Decides one envelope.
    fn decide(&self, envelope: &Envelope) -> AuthensorResult;
}

fn str_member<'v>(value: &'v Value, m: &str) -> &'v str {
    crate::conditions::value::member(value, m)
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// An envelope's `action`, read from its JSON.
fn action_of(value: &Value) -> &str {
    str_member(value, "action")
}

/// An envelope's own `riskScore`, read from its JSON: 0 when absent.
fn risk_score_of(value: &Value) -> f64 {
    crate::conditions::value::member(value, "riskScore")
        .and_then(Value::as_f64)
        .unwrap_or(0.0)
}
