//! Rubric bundles: policies whose rules AND conditions over dot-path fields
//! of a request, decided first-deny, last-allow.
//!
//! The semantics are `spec/rubric.md`. A [`Bundle`] is read from Rubric's
//! JSON and validated ([`Bundle::from_json`]); every `matches` pattern is
//! compiled at load and a policy with one that fails is marked errored
//! ([`Bundle::compile_errors`]). [`RubricEngine`] compiles the bundle into
//! condition-program tables ([`crate::conditions`]) and decides
//! [`Request`]s into [`RubricResult`]s; it writes and loads artifacts as the
//! rule-list engine does. `toolgate_reference::rubric::RubricReference` decides the same
//! requests with plain loops over the bundle, as the oracle.
//!
//! ```
//! use toolgate::rubric::{Bundle, Request, RubricEngine};
//! let bundle = Bundle::from_json(r#"{"policies": [{"policyId": "p1", "policyVersion": 3,
//!   "document": {"spec": {"defaultEffect": "allow", "rules": [
//!     {"id": "no-rm", "description": "no recursive deletes", "effect": "deny",
//!      "conditions": [{"field": "tool_name", "operator": "eq", "value": "Bash"},
//!                     {"field": "input.command", "operator": "starts_with", "value": "rm -rf"}]}]}}}]}"#)?;
//! let engine = RubricEngine::build(&bundle)?;
//! let r = engine.decide(&Request::from_json(r#"{"tool_name": "Bash", "input": {"command": "rm -rf /"}}"#)?);
//! assert_eq!(r.decision.as_str(), "deny");
//! assert_eq!(r.matched_rule_id.as_deref(), Some("no-rm"));
//! assert_eq!(r.reason.as_deref(), Some("no recursive deletes"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Depends on `ir` (the lowering), `conditions`, `artifact`, `json` and `diag`; `reference`
//! depends on the bundle model only.

mod bundle;

use crate::artifact::{self, LoadError};
use crate::conditions::{self, Compiled, Outcome};
use crate::decision::Decision;
use crate::diag::DiagnosticKind;
use crate::diag::{Diagnostic, Diagnostics};
use crate::error::IntakeError;
use crate::ir::{
    Combining, Cond as IrCond, FieldTest, Ir, IrGate, IrGroup, IrRule, Operand as IrOperand, Pred,
};
use crate::policy::List;
use bumpalo::Bump;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::time::Instant;

pub use crate::conditions::{Cond, Effect, Limits, Op, Operand};

/// The reason of an `AGENT_FROZEN` result.
pub const REASON_AGENT_FROZEN: &str = "agent frozen by operator";
/// The reason of a `NO_POLICIES` result.
pub const REASON_NO_POLICIES: &str = "no bundle loaded \u{2014} failing closed";
/// The reason of a `POLICY_COMPILE_ERROR` result.
pub const REASON_POLICY_COMPILE_ERROR: &str =
    "policy contains a regex pattern that failed to compile \u{2014} failing closed";
/// The reason of an `EVAL_TIMEOUT` result (toolgate: only damaged tables
/// exhaust the work budget).
pub const REASON_EVAL_TIMEOUT: &str =
    "evaluation exceeded its work budget: the tables are damaged \u{2014} failing closed";

/// A bundle: policies, frozen agents, and the optional MCP gate.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bundle {
    /// `bundleVersion`, when given.
    pub bundle_version: Option<u64>,
    /// `contentHash`, when given.
    pub content_hash: Option<String>,
    /// `builtAt`, when given.
    pub built_at: Option<String>,
    /// The policies, in order.
    pub policies: Vec<BundlePolicy>,
    /// Agents denied before any rule, compared case-insensitively.
    pub frozen_agent_ids: Vec<String>,
    /// The MCP server gate, when the bundle declares one.
    pub mcp_access: Option<McpAccess>,
    /// The `matches` patterns that failed to compile, in bundle order.
    pub compile_errors: Vec<CompileError>,
    /// What the bundle says that is allowed but likely a mistake.
    pub warnings: Vec<Diagnostic>,
}

impl Bundle {
    /// Whether a rule reads a field named `dlp_…` (`spec/guards.md` §6):
    /// then `decide` fills the DLP fields without being asked.
    pub fn reads_dlp(&self) -> bool {
        self.policies.iter().any(|p| {
            p.rules
                .iter()
                .any(|r| r.conditions.iter().any(|c| c.field.starts_with("dlp_")))
        })
    }
}

/// One policy of a bundle.
#[derive(Clone, Debug, PartialEq)]
pub struct BundlePolicy {
    /// `policyId`.
    pub policy_id: String,
    /// `policyVersion`.
    pub policy_version: u64,
    /// `document.metadata.name`, when given.
    pub name: Option<String>,
    /// `document.spec.defaultEffect`.
    pub default_effect: Effect,
    /// `document.spec.rules`.
    pub rules: Vec<BundleRule>,
    /// Whether a `matches` pattern of the policy failed to compile.
    pub errored: bool,
}

/// One rule of a policy.
#[derive(Clone, Debug, PartialEq)]
pub struct BundleRule {
    /// `id`.
    pub id: String,
    /// `description`.
    pub description: Option<String>,
    /// `conditions`, ANDed.
    pub conditions: Vec<Cond>,
    /// `effect`.
    pub effect: Effect,
}

/// `mcpAccess`: tools named `mcp__<server>__<tool>` pass only for approved
/// servers while `enforce` is true.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct McpAccess {
    /// `approvedServers` (default empty).
    pub approved_servers: Vec<String>,
    /// `enforce` (default true).
    pub enforce: bool,
}

/// A `matches` pattern that failed to compile: what the compile-error hook
/// receives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileError {
    /// The policy's position in the bundle.
    pub policy_index: usize,
    /// The policy's id.
    pub policy_id: String,
    /// The rule's position in the policy.
    pub rule_index: usize,
    /// The rule's id.
    pub rule_id: String,
    /// The condition's position in the rule.
    pub condition_index: usize,
    /// The condition's field.
    pub field: String,
    /// The pattern as written.
    pub pattern: String,
    /// Why it does not compile.
    pub cause: String,
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "policy `{}`, rule `{}`: the pattern `{}` on `{}` does not compile: {}; every request that reaches the policy is denied",
            self.policy_id, self.rule_id, self.pattern, self.field, self.cause
        )
    }
}

impl Bundle {
    /// Reads and validates a bundle.
    ///
    /// # Errors
    ///
    /// Every problem found, each naming the policy, rule and condition.
    pub fn from_json(text: &str) -> Result<Bundle, Diagnostics> {
        let v = crate::json::parse_document(text).map_err(|e| {
            Diagnostics::one(
                Diagnostic::new(
                    DiagnosticKind::InvalidBundle,
                    format!("the bundle is not JSON: {e}"),
                )
                .with_help("write the bundle as one JSON object"),
            )
        })?;
        Bundle::from_value(&v).map_err(|d| d.locate(text))
    }

    /// As [`Bundle::from_json`], from a parsed document.
    ///
    /// # Errors
    ///
    /// As [`Bundle::from_json`].
    pub fn from_value(v: &Value) -> Result<Bundle, Diagnostics> {
        bundle::read(v, Limits::default())
    }

    /// Whether a JSON document has a bundle's shape: `policies` entries
    /// with `policyId`.
    pub fn looks_like(v: &Value) -> bool {
        bundle::looks_like(v)
    }

    /// The `matches` patterns that failed to compile.
    pub fn compile_errors(&self) -> &[CompileError] {
        &self.compile_errors
    }

    /// The bundle in the one IR, in `arena`: a group per policy, its rules
    /// in order (a rule's id is its text, its description its note), each
    /// condition a [`Pred::Op`]; combining first deny, last allow, with the
    /// frozen agents and the server gate.
    pub fn lower<'a>(&self, arena: &'a Bump) -> Ir<'a> {
        let mut ir = Ir::conditions(
            arena,
            Combining::FirstDenyLastAllow {
                frozen: &[],
                gate: None,
            },
        );
        let frozen = ir.strs(&self.frozen_agent_ids);
        let gate = self.mcp_access.as_ref().map(|m| IrGate {
            enforce: m.enforce,
            approved: ir.strs(&m.approved_servers),
        });
        ir.combining = Combining::FirstDenyLastAllow { frozen, gate };
        for (gi, p) in self.policies.iter().enumerate() {
            ir.groups.push(IrGroup {
                id: ir.str(&p.policy_id),
                version: p.policy_version,
                default: effect_decision(p.default_effect),
                errored: p.errored,
            });
            for r in &p.rules {
                let conds: Vec<IrCond<'a>> = r
                    .conditions
                    .iter()
                    .map(|c| {
                        IrCond::Field(FieldTest {
                            field: ir.str(&c.field),
                            negated: false,
                            pred: Pred::Op(c.op, operand(&ir, &c.value)),
                        })
                    })
                    .collect();
                let list = match r.effect {
                    Effect::Deny => List::Deny,
                    Effect::Allow => List::Allow,
                };
                let mut rule = IrRule::on_request(
                    list,
                    ir.str(&r.id),
                    gi as u32,
                    arena.alloc_slice_copy(&conds),
                );
                rule.note = r.description.as_deref().map(|d| ir.str(d));
                ir.rules.push(rule);
            }
        }
        ir
    }
}

fn effect_decision(e: Effect) -> Decision {
    match e {
        Effect::Allow => Decision::Allow,
        Effect::Deny => Decision::Deny,
    }
}

/// A condition's value, copied into the IR's arena.
fn operand<'a>(ir: &Ir<'a>, v: &Operand) -> IrOperand<'a> {
    match v {
        Operand::Str(s) => IrOperand::Str(ir.str(s)),
        Operand::Num(n) => IrOperand::Num(*n),
        Operand::Bool(b) => IrOperand::Bool(*b),
        Operand::Strs(l) => IrOperand::Strs(ir.strs(l)),
        Operand::Nums(l) => IrOperand::Nums(ir.arena.alloc_slice_copy(l)),
    }
}

/// A request: a JSON object with `tool_name`, an optional `agent_id`, and
/// whatever else the policies address.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    value: Value,
    /// Why the request cannot be decided; it is denied.
    error: Option<String>,
}

impl Request {
    /// Reads a request; duplicate keys, a missing `tool_name` and an
    /// `agent_id` that is not a string are errors, and so are a NUL byte in
    /// any string or key, a control character in `tool_name`, and a second
    /// spelling of `tool_name` or `agent_id` (`tool`, `toolName`,
    /// `agentId`, …), which a host may read instead.
    ///
    /// # Errors
    ///
    /// What is wrong with the request.
    pub fn from_json(text: &str) -> Result<Request, IntakeError> {
        let v = crate::json::parse_strict(text).map_err(|e| IntakeError::new(e.to_string()))?;
        Request::from_value(v)
    }

    /// As [`Request::from_json`], from a parsed value.
    ///
    /// # Errors
    ///
    /// As [`Request::from_json`].
    pub fn from_value(value: Value) -> Result<Request, IntakeError> {
        Request::read_value(value).map_err(IntakeError::from)
    }

    fn read_value(value: Value) -> Result<Request, String> {
        let Some(obj) = value.as_object() else {
            return Err("the request is not a JSON object".into());
        };
        if let Some((path, key)) = crate::json::find_nul(&value) {
            return Err(crate::json::nul_refusal(&crate::json::nul_place(
                &path, key,
            )));
        }
        for (own, spellings) in [
            ("tool_name", &["toolname", "tool"][..]),
            ("agent_id", &["agentid"][..]),
        ] {
            if let Some(k) = obj
                .keys()
                .find(|k| *k != own && spellings.iter().any(|s| crate::call::same_spelling(k, s)))
            {
                return Err(format!(
                    "the request names `{own}` a second way, as `{}`: a host may read that one instead; send `{own}` alone",
                    crate::json::shown(k)
                ));
            }
        }
        match obj.get("tool_name") {
            Some(Value::String(s)) if s.contains(char::is_control) => {
                return Err(crate::call::tool_name_error(s).unwrap_or_default())
            }
            Some(Value::String(_)) => {}
            Some(_) => return Err("`tool_name` is not a string".into()),
            None => return Err("`tool_name` is missing".into()),
        }
        match obj.get("agent_id") {
            None | Some(Value::Null) | Some(Value::String(_)) => {}
            Some(_) => return Err("`agent_id` is not a string".into()),
        }
        Ok(Request { value, error: None })
    }

    /// A request that could not be read: deciding it denies, saying why.
    pub fn unreadable(why: impl Into<String>) -> Request {
        Request {
            value: Value::Null,
            error: Some(why.into()),
        }
    }

    /// The request as JSON.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// Adds the DLP fields Rubric's SDK adds (`spec/guards.md` §6): the
    /// request's `input`, `args` and `kwargs` are scanned with `guards`,
    /// and `dlp_detected` (with `dlp_severity` and `dlp_types` when
    /// something was found) replace any the request had. An unreadable
    /// request is left as it is: it is denied.
    ///
    /// ```
    /// use toolgate::guards::Guards;
    /// use toolgate::rubric::Request;
    /// let key = format!("AKIA{}", "Q".repeat(16));
    /// let mut r = Request::from_json(&format!(r#"{{"tool_name": "Bash", "input": {{"command": "echo {key}"}}, "dlp_detected": false}}"#))?;
    /// r.add_dlp(Guards::builtin()?);
    /// assert_eq!(r.value()["dlp_detected"], true);
    /// assert_eq!(r.value()["dlp_types"][0], "AWS_ACCESS_KEY");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add_dlp(&mut self, guards: &crate::guards::Guards) {
        if self.error.is_some() {
            return;
        }
        let fields = guards.dlp_fields(&guards.request_findings(&self.value));
        if let Value::Object(m) = &mut self.value {
            for k in ["dlp_detected", "dlp_severity", "dlp_types"] {
                m.remove(k);
            }
            m.extend(fields);
        }
    }

    /// `tool_name`.
    pub fn tool_name(&self) -> &str {
        conditions::value::member(&self.value, "tool_name")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// `agent_id`, when it is a string.
    pub fn agent_id(&self) -> Option<&str> {
        conditions::value::member(&self.value, "agent_id").and_then(Value::as_str)
    }

    /// Why the request could not be read, if it could not.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }
}

/// A stable code on a deny that is not a rule's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    /// The agent is frozen.
    AgentFrozen,
    /// The tool's MCP server is not approved.
    McpServerNotApproved,
    /// No bundle, or no policies.
    NoPolicies,
    /// The scan reached a policy with a pattern that failed to compile.
    PolicyCompileError,
    /// The work budget ran out (damaged tables only).
    EvalTimeout,
    /// toolgate: the request could not be read.
    InvalidRequest,
}

impl Code {
    /// The code as results write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::AgentFrozen => "AGENT_FROZEN",
            Code::McpServerNotApproved => "MCP_SERVER_NOT_APPROVED",
            Code::NoPolicies => "NO_POLICIES",
            Code::PolicyCompileError => "POLICY_COMPILE_ERROR",
            Code::EvalTimeout => "EVAL_TIMEOUT",
            Code::InvalidRequest => "INVALID_REQUEST",
        }
    }
}

/// What deciding a request gives. Its JSON form is Rubric's: every member
/// in camel case, `null` when empty.
///
/// ```
/// use toolgate::rubric::{Request, RubricEngine};
/// let engine = RubricEngine::none();
/// let r = engine.decide(&Request::from_json(r#"{"tool_name": "bash"}"#)?);
/// let json = serde_json::to_value(&r)?;
/// assert_eq!(json["decision"], "deny");
/// assert_eq!(json["code"], "NO_POLICIES");
/// assert!(json["matchedRuleId"].is_null());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RubricResult {
    /// `allow` or `deny`.
    #[serde(serialize_with = "as_name")]
    pub decision: Effect,
    /// The policy of the matched rule, or the errored policy.
    pub matched_policy_id: Option<String>,
    /// Its version.
    pub matched_policy_version: Option<u64>,
    /// The matched rule.
    pub matched_rule_id: Option<String>,
    /// The code of a deny that is not a rule's.
    #[serde(serialize_with = "code_name")]
    pub code: Option<Code>,
    /// Why: the fixed text of a coded deny, or the description of the
    /// matched deny rule.
    pub reason: Option<String>,
    /// Wall-clock time of the decision, in milliseconds.
    pub latency_ms: f64,
}

impl RubricResult {
    fn coded(code: Code, reason: impl Into<String>) -> RubricResult {
        RubricResult {
            decision: Effect::Deny,
            matched_policy_id: None,
            matched_policy_version: None,
            matched_rule_id: None,
            code: Some(code),
            reason: Some(reason.into()),
            latency_ms: 0.0,
        }
    }

    /// The same result with `latency_ms` zeroed, for comparing results.
    pub fn clone_untimed(&self) -> RubricResult {
        RubricResult {
            latency_ms: 0.0,
            ..self.clone()
        }
    }

    /// The result as Rubric writes it: every member, `null` when empty.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

// Rubric writes a decision and a code by their names.
fn as_name<S: serde::Serializer>(e: &Effect, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(e.as_str())
}

fn code_name<S: serde::Serializer>(c: &Option<Code>, s: S) -> Result<S::Ok, S::Error> {
    match c {
        Some(c) => s.serialize_str(c.as_str()),
        None => s.serialize_none(),
    }
}

/// A decision whose texts borrow from the engine's tables: what
/// [`RubricEngine::decide_ref`] returns without allocating (but for the
/// reasons that quote the request).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decided<'e> {
    /// `allow` or `deny`.
    pub decision: Effect,
    /// The matched (or errored) policy's id and version.
    pub policy: Option<(&'e str, u64)>,
    /// The matched rule's id.
    pub rule_id: Option<&'e str>,
    /// The code of a deny that is not a rule's.
    pub code: Option<Code>,
    /// Why, as in [`RubricResult::reason`].
    pub reason: Option<Cow<'e, str>>,
}

impl Decided<'_> {
    fn coded(code: Code, reason: impl Into<Cow<'static, str>>) -> Decided<'static> {
        Decided {
            decision: Effect::Deny,
            policy: None,
            rule_id: None,
            code: Some(code),
            reason: Some(reason.into()),
        }
    }

    /// The owned result, with `latency_ms`.
    pub fn to_result(&self, latency_ms: f64) -> RubricResult {
        RubricResult {
            decision: self.decision,
            matched_policy_id: self.policy.map(|(id, _)| id.to_string()),
            matched_policy_version: self.policy.map(|(_, v)| v),
            matched_rule_id: self.rule_id.map(str::to_string),
            code: self.code,
            reason: self.reason.as_deref().map(str::to_string),
            latency_ms,
        }
    }
}

fn gate_reason(server: &str) -> String {
    format!("MCP server \"{server}\" is not approved for this agent. Request access in your Rubric dashboard.")
}

fn invalid_reason(why: &str) -> String {
    format!("the request could not be read: {why} \u{2014} failing closed")
}

/// The result of a request from a frozen agent. This and the other results
/// of the steps before the rules are shared by the engine and the
/// reference, so their texts are written once.
pub fn frozen_result() -> RubricResult {
    RubricResult::coded(Code::AgentFrozen, REASON_AGENT_FROZEN)
}

/// The result of a request for a tool of an MCP server the gate does not
/// approve.
pub fn gate_result(server: &str) -> RubricResult {
    RubricResult::coded(Code::McpServerNotApproved, gate_reason(server))
}

/// The result of a request when no bundle is loaded.
pub fn no_policies_result() -> RubricResult {
    RubricResult::coded(Code::NoPolicies, REASON_NO_POLICIES)
}

/// The result of a request that could not be read, and why.
pub fn invalid_result(why: &str) -> RubricResult {
    RubricResult::coded(Code::InvalidRequest, invalid_reason(why))
}

/// The result of a request that reached a policy whose pattern did not
/// compile.
pub fn compile_error_result(id: &str, version: u64) -> RubricResult {
    let mut r = RubricResult::coded(Code::PolicyCompileError, REASON_POLICY_COMPILE_ERROR);
    r.matched_policy_id = Some(id.to_string());
    r.matched_policy_version = Some(version);
    r
}

/// What answers Rubric requests: the compiled engine and the reference.
pub trait RubricEvaluator {
    /// Decides one request.
    fn decide(&self, request: &Request) -> RubricResult;
}

/// A compiled bundle (or none: every request is denied `NO_POLICIES`).
///
/// Rubric bundles get their own engine type rather than a variant of
/// [`crate::Engine`]: grant sets, offers, batches and verdict texts are
/// agentpolicy's and mean nothing here, while the tables, the walker and the
/// artifact are shared.
#[derive(Clone, Debug, Default)]
pub struct RubricEngine<'a> {
    compiled: Option<Compiled<'a>>,
}

impl RubricEngine<'_> {
    /// Whether the tables read a field named `dlp_…`: the bundle's own
    /// [`Bundle::reads_dlp`], kept in a compiled artifact, so that a
    /// host deciding with the artifact fills the DLP fields as one
    /// deciding with the bundle does (`spec/guards.md` §6).
    pub fn reads_dlp(&self) -> bool {
        self.compiled
            .as_ref()
            .is_some_and(|c| c.reads_field_starting("dlp_"))
    }
}

impl RubricEngine<'static> {
    /// Compiles a bundle.
    ///
    /// # Errors
    ///
    /// A set of patterns that cannot be split into DFAs within the limits.
    pub fn build(bundle: &Bundle) -> Result<RubricEngine<'static>, Diagnostics> {
        RubricEngine::build_with_hook(bundle, &mut |_| {})
    }

    /// As [`RubricEngine::build`], under `limits`.
    ///
    /// # Errors
    ///
    /// As [`RubricEngine::build`].
    pub fn build_limited(
        bundle: &Bundle,
        limits: Limits,
    ) -> Result<RubricEngine<'static>, Diagnostics> {
        RubricEngine::build_inner(bundle, limits, &mut |_| {})
    }

    /// As [`RubricEngine::build`], calling `on_compile_error` once for each
    /// `matches` pattern that failed to compile, in bundle order.
    ///
    /// # Errors
    ///
    /// As [`RubricEngine::build`].
    pub fn build_with_hook(
        bundle: &Bundle,
        on_compile_error: &mut dyn FnMut(&CompileError),
    ) -> Result<RubricEngine<'static>, Diagnostics> {
        RubricEngine::build_inner(bundle, Limits::default(), on_compile_error)
    }

    fn build_inner(
        bundle: &Bundle,
        limits: Limits,
        on_compile_error: &mut dyn FnMut(&CompileError),
    ) -> Result<RubricEngine<'static>, Diagnostics> {
        for e in &bundle.compile_errors {
            on_compile_error(e);
        }
        let arena = Bump::new();
        let prog = conditions::compile(&bundle.lower(&arena), limits)?;
        let compiled = Compiled::new(prog)
            .map_err(|e| Diagnostics::one(Diagnostic::new(DiagnosticKind::Internal, e)))?;
        Ok(RubricEngine {
            compiled: Some(compiled),
        })
    }

    /// An engine with no bundle loaded.
    pub fn none() -> RubricEngine<'static> {
        RubricEngine { compiled: None }
    }
}

impl<'a> RubricEngine<'a> {
    /// Loads an engine from an artifact `toolgate compile` wrote for a
    /// bundle, borrowing its tables.
    ///
    /// # Errors
    ///
    /// The check that refused the artifact. Loading never panics.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<RubricEngine<'a>, LoadError> {
        RubricEngine::load(bytes, &artifact::LoadOptions::default())
    }

    /// As [`RubricEngine::from_bytes`], under `options`.
    ///
    /// # Errors
    ///
    /// As [`RubricEngine::from_bytes`].
    pub fn load(
        bytes: &'a [u8],
        options: &artifact::LoadOptions,
    ) -> Result<RubricEngine<'a>, LoadError> {
        options.admit(bytes)?;
        let prog = artifact::read_conditions(bytes)?;
        options.settle(bytes)?;
        let compiled = Compiled::new(prog).map_err(artifact::layout_error)?;
        Ok(RubricEngine {
            compiled: Some(compiled),
        })
    }

    /// The bundle's tables as an artifact; `None` when no bundle is loaded.
    pub fn to_bytes(&self) -> Option<Vec<u8>> {
        self.compiled
            .as_ref()
            .map(|c| artifact::write(c.program(), artifact::ProgramKind::Conditions))
    }

    /// The engine with every table it borrows copied.
    pub fn into_owned(self) -> RubricEngine<'static> {
        RubricEngine {
            compiled: self.compiled.map(Compiled::into_owned),
        }
    }

    /// Decides a request, timing it.
    pub fn decide(&self, request: &Request) -> RubricResult {
        let start = Instant::now();
        let d = self.decide_ref(request);
        d.to_result(start.elapsed().as_secs_f64() * 1000.0)
    }

    /// Decides a request without reading the clock; `latency_ms` is 0.
    pub fn decide_untimed(&self, request: &Request) -> RubricResult {
        self.decide_ref(request).to_result(0.0)
    }

    /// Decides a request, borrowing the result's texts from the tables: the
    /// gateway's fast path, which allocates nothing on the way to a rule's
    /// or a default's decision.
    pub fn decide_ref(&self, request: &Request) -> Decided<'_> {
        if let Some(e) = request.error() {
            return Decided::coded(Code::InvalidRequest, invalid_reason(e));
        }
        let Some(c) = &self.compiled else {
            return Decided::coded(Code::NoPolicies, REASON_NO_POLICIES);
        };
        if request.agent_id().is_some_and(|a| c.frozen(a)) {
            return Decided::coded(Code::AgentFrozen, REASON_AGENT_FROZEN);
        }
        if let Some(server) = c.gate(request.tool_name()) {
            return Decided::coded(Code::McpServerNotApproved, gate_reason(server));
        }
        let effect = |deny: bool| if deny { Effect::Deny } else { Effect::Allow };
        match c.decide(request.value()) {
            Outcome::Empty => Decided::coded(Code::NoPolicies, REASON_NO_POLICIES),
            Outcome::Damaged => Decided::coded(Code::EvalTimeout, REASON_EVAL_TIMEOUT),
            Outcome::Errored(g) => Decided {
                policy: Some((c.group_id(g), c.group_version(g))),
                ..Decided::coded(Code::PolicyCompileError, REASON_POLICY_COMPILE_ERROR)
            },
            Outcome::Default => Decided {
                decision: effect(c.group_default_deny(0)),
                policy: None,
                rule_id: None,
                code: None,
                reason: None,
            },
            Outcome::Rule(r) => {
                let g = c.rule_group(r);
                let deny = c.rule_denies(r);
                Decided {
                    decision: effect(deny),
                    policy: Some((c.group_id(g), c.group_version(g))),
                    rule_id: Some(c.rule_id(r)),
                    code: None,
                    reason: c.rule_description(r).filter(|_| deny).map(Cow::Borrowed),
                }
            }
        }
    }
}

impl RubricEvaluator for RubricEngine<'_> {
    fn decide(&self, request: &Request) -> RubricResult {
        RubricEngine::decide(self, request)
    }
}

#[cfg(test)]
mod intake_tests {
    use super::Request;

    #[test]
    fn a_request_with_a_nul_byte_or_a_second_tool_spelling_is_refused() {
        let refused = |text: &str| {
            Request::from_json(text)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        // The issue's requests: `eq` denies were passed.
        assert!(refused(r#"{"tool_name": "bash\u0000"}"#).contains("holds a NUL byte"));
        assert!(
            refused(r#"{"tool_name": "read", "input": {"file_path": "/etc/shadow\u0000"}}"#)
                .starts_with("the string at `input.file_path` holds a NUL byte")
        );
        assert!(refused(r#"{"tool_name": "bash\u001b"}"#).contains("control character U+001B"));
        assert_eq!(
            refused(r#"{"tool_name": "read", "tool": "bash"}"#),
            "the request names `tool_name` a second way, as `tool`: a host may read that one instead; send `tool_name` alone"
        );
        assert!(refused(r#"{"tool_name": "read", "ToolName": "bash"}"#).contains("as `ToolName`"));
        assert!(
            refused(r#"{"tool_name": "read", "agentId": "a"}"#).contains("`agent_id` a second way")
        );
        // The members policies address are the request's own.
        assert!(Request::from_json(
            r#"{"tool_name": "read", "name": "n", "input": {"a": "b\t"}, "args": [1]}"#
        )
        .is_ok());
    }
}
