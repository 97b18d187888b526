//! Reading and validating a bundle as Rubric writes it.

use super::{Bundle, BundlePolicy, BundleRule, CompileError, McpAccess};
use crate::conditions::{pattern, Cond, Effect, Limits, Op, Operand};
use crate::diag::DiagnosticKind;
use crate::diag::{Diagnostic, Diagnostics, Location};
use serde_json::{Map, Value};

/// Caps that keep a bundle bounded, as Rubric's schemas set them.
const MAX_POLICIES: usize = 1000;
const MAX_RULES: usize = 1000;
const MAX_CONDITIONS: usize = 50;
const MAX_FROZEN_LEN: usize = 128;

/// Field-path parts that would walk into prototype slots in a JavaScript
/// evaluator of the same bundle.
const FORBIDDEN: [&str; 3] = ["__proto__", "constructor", "prototype"];

struct Ctx {
    errors: Vec<Diagnostic>,
}

impl Ctx {
    fn err(&mut self, path: &str, message: String, help: &str) {
        self.errors.push(
            Diagnostic::new(DiagnosticKind::InvalidBundle, message)
                .with_help(help)
                .at(Location {
                    file: String::new(),
                    path: path.to_string(),
                    span: None,
                }),
        );
    }

    /// Refuses members of `obj` outside `known`.
    fn members(&mut self, obj: &Map<String, Value>, known: &[&str], path: &str, who: &str) {
        for k in obj.keys() {
            if !known.contains(&k.as_str()) {
                self.err(
                    path,
                    format!("{who}unknown member `{k}` in `{}`", display(path)),
                    &format!(
                        "remove it or correct its name; the members are {}",
                        known
                            .iter()
                            .map(|k| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
                if let Some(d) = self.errors.last_mut() {
                    d.token.clone_from(k);
                }
            }
        }
    }
}

fn display(path: &str) -> &str {
    if path.is_empty() {
        "the bundle"
    } else {
        path
    }
}

/// Whether `v` has a bundle's shape: a `policies` array whose entries carry
/// `policyId` (an empty list counts).
pub(super) fn looks_like(v: &Value) -> bool {
    match v.get("policies").and_then(Value::as_array) {
        Some(list) => list.is_empty() || list.iter().any(|p| p.get("policyId").is_some()),
        None => false,
    }
}

pub(super) fn read(v: &Value, limits: Limits) -> Result<Bundle, Diagnostics> {
    let mut cx = Ctx { errors: Vec::new() };
    let Some(top) = v.as_object() else {
        return Err(Diagnostics::one(
            Diagnostic::new(
                DiagnosticKind::InvalidBundle,
                "the bundle is not a JSON object",
            )
            .with_help("write `{\"policies\": [...], \"frozenAgentIds\": [...]}`"),
        ));
    };
    if let Some((path, key)) = crate::json::find_nul(v) {
        cx.err(
            &path,
            crate::json::nul_refusal(&crate::json::nul_place(&path, key)),
            "a bundle holds no NUL byte: remove it",
        );
    }
    cx.members(
        top,
        &[
            "bundleVersion",
            "contentHash",
            "builtAt",
            "policies",
            "frozenAgentIds",
            "mcpAccess",
        ],
        "",
        "",
    );
    let mut b = Bundle::default();
    if let Some(x) = top.get("bundleVersion") {
        match x.as_u64() {
            Some(n) => b.bundle_version = Some(n),
            None => cx.err(
                "bundleVersion",
                "`bundleVersion` is not a whole number of at least 0".into(),
                "write the version the bundle was built as",
            ),
        }
    }
    if let Some(x) = top.get("contentHash") {
        match x.as_str() {
            Some(h)
                if h.len() == 64 && h.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) =>
            {
                b.content_hash = Some(h.to_string())
            }
            _ => cx.err(
                "contentHash",
                "`contentHash` is not 64 lowercase hexadecimal digits".into(),
                "write the bundle's SHA-256 in lowercase hex",
            ),
        }
    }
    if let Some(x) = top.get("builtAt") {
        match x.as_str() {
            Some(s) => b.built_at = Some(s.to_string()),
            None => cx.err(
                "builtAt",
                "`builtAt` is not a string".into(),
                "write an ISO 8601 date-time",
            ),
        }
    }
    match top.get("frozenAgentIds") {
        None => {}
        Some(Value::Array(ids)) => {
            for (i, id) in ids.iter().enumerate() {
                match id.as_str() {
                    Some(s) if !s.is_empty() && s.chars().count() <= MAX_FROZEN_LEN => {
                        b.frozen_agent_ids.push(s.to_string())
                    }
                    _ => cx.err(
                        &format!("frozenAgentIds[{i}]"),
                        format!("frozen agent id {i} is not a string of 1 to {MAX_FROZEN_LEN} characters"),
                        "write the agent's id",
                    ),
                }
            }
        }
        Some(_) => cx.err(
            "frozenAgentIds",
            "`frozenAgentIds` is not a list".into(),
            "write a list of agent ids, or leave the member out",
        ),
    }
    if let Some(m) = top.get("mcpAccess") {
        b.mcp_access = Some(mcp(&mut cx, m));
    }
    match top.get("policies") {
        Some(Value::Array(list)) => {
            if list.len() > MAX_POLICIES {
                cx.err(
                    "policies",
                    format!(
                        "the bundle has {} policies, more than {MAX_POLICIES}",
                        list.len()
                    ),
                    "split the bundle",
                );
            }
            for (i, p) in list.iter().take(MAX_POLICIES).enumerate() {
                if let Some(p) = policy(&mut cx, p, i) {
                    if b.policies.iter().any(|q| q.policy_id == p.policy_id) {
                        cx.err(
                            &format!("policies[{i}].policyId"),
                            format!("policy `{}` appears twice in the bundle", p.policy_id),
                            "give each policy its own id",
                        );
                    }
                    b.policies.push(p);
                }
            }
        }
        Some(_) => cx.err(
            "policies",
            "`policies` is not a list".into(),
            "write a list of policy entries",
        ),
        None => cx.err(
            "",
            "the bundle has no `policies`".into(),
            "write `\"policies\": [...]`",
        ),
    }
    if let Some(d) = Diagnostics::from_vec(cx.errors) {
        return Err(d);
    }
    // Every `matches` pattern compiles now, whether or not a request can
    // reach it; a failure marks its policy errored.
    for (pi, p) in b.policies.iter_mut().enumerate() {
        for (ri, r) in p.rules.iter().enumerate() {
            for (ci, c) in r.conditions.iter().enumerate() {
                if c.op != Op::Matches {
                    continue;
                }
                let failure = match &c.value {
                    Operand::Str(s) => pattern::check(s, limits.dfa_bytes).err().map(String::from),
                    _ => Some("the value of `matches` must be a string".to_string()),
                };
                if let Some(cause) = failure {
                    b.compile_errors.push(CompileError {
                        policy_index: pi,
                        policy_id: p.policy_id.clone(),
                        rule_index: ri,
                        rule_id: r.id.clone(),
                        condition_index: ci,
                        field: c.field.clone(),
                        pattern: match &c.value {
                            Operand::Str(s) => s.clone(),
                            other => format!("{other:?}"),
                        },
                        cause,
                    });
                    p.errored = true;
                }
            }
        }
    }
    // A string operator given a number or a boolean compares its text:
    // allowed, as Rubric's engines allow it, but worth a warning.
    for p in &b.policies {
        for r in &p.rules {
            for (ci, c) in r.conditions.iter().enumerate() {
                if matches!(c.op, Op::Contains | Op::StartsWith | Op::EndsWith)
                    && !matches!(c.value, Operand::Str(_))
                {
                    b.warnings.push(
                        Diagnostic::new(
                            DiagnosticKind::NonStringValue,
                            format!(
                                "policy `{}`, rule `{}`, condition {}: `{}` compares text, but its value is not a string",
                                p.policy_id, r.id, ci + 1, c.op.name()
                            ),
                        )
                        .with_help("write the value as a string; a number or boolean is compared as its text, and a list never matches")
                        .as_warning(),
                    );
                }
            }
        }
    }
    Ok(b)
}

fn mcp(cx: &mut Ctx, v: &Value) -> McpAccess {
    let mut m = McpAccess {
        approved_servers: Vec::new(),
        enforce: true,
    };
    let Some(obj) = v.as_object() else {
        cx.err(
            "mcpAccess",
            "`mcpAccess` is not an object".into(),
            "write `{\"approvedServers\": [...], \"enforce\": true}`",
        );
        return m;
    };
    cx.members(obj, &["approvedServers", "enforce"], "mcpAccess", "");
    match obj.get("approvedServers") {
        None => {}
        Some(Value::Array(list)) => {
            for (i, s) in list.iter().enumerate() {
                match s.as_str() {
                    Some(s) if !s.is_empty() => m.approved_servers.push(s.to_string()),
                    _ => cx.err(
                        &format!("mcpAccess.approvedServers[{i}]"),
                        format!("approved server {i} is not a non-empty string"),
                        "write the server's name",
                    ),
                }
            }
        }
        Some(_) => cx.err(
            "mcpAccess.approvedServers",
            "`approvedServers` is not a list".into(),
            "write a list of server names",
        ),
    }
    match obj.get("enforce") {
        None => {}
        Some(Value::Bool(e)) => m.enforce = *e,
        Some(_) => cx.err(
            "mcpAccess.enforce",
            "`enforce` is not `true` or `false`".into(),
            "write `true` or `false`",
        ),
    }
    m
}

fn effect(cx: &mut Ctx, v: Option<&Value>, path: &str, who: &str, what: &str) -> Option<Effect> {
    match v.and_then(Value::as_str) {
        Some("allow") => Some(Effect::Allow),
        Some("deny") => Some(Effect::Deny),
        Some(other) => {
            cx.err(
                path,
                format!("{who}{what} `{other}` is not `allow` or `deny`"),
                "Rubric bundles decide `allow` or `deny`",
            );
            None
        }
        None => {
            cx.err(
                path,
                format!("{who}{what} is missing or not a string"),
                "write `allow` or `deny`",
            );
            None
        }
    }
}

fn policy(cx: &mut Ctx, v: &Value, i: usize) -> Option<BundlePolicy> {
    let at = format!("policies[{i}]");
    let Some(obj) = v.as_object() else {
        cx.err(
            &at,
            format!("policy entry {i} is not an object"),
            "write `{\"policyId\", \"policyVersion\", \"document\"}`",
        );
        return None;
    };
    let id = match obj.get("policyId").and_then(Value::as_str) {
        Some(s) if !s.is_empty() => s.to_string(),
        _ => {
            cx.err(
                &format!("{at}.policyId"),
                format!("policy entry {i} has no `policyId`"),
                "write the policy's id",
            );
            format!("#{i}")
        }
    };
    let who = format!("policy `{id}`: ");
    cx.members(obj, &["policyId", "policyVersion", "document"], &at, &who);
    let version = match obj.get("policyVersion").and_then(Value::as_u64) {
        Some(n) => n,
        None => {
            cx.err(
                &format!("{at}.policyVersion"),
                format!("{who}`policyVersion` is missing or not a whole number of at least 0"),
                "write the policy's version",
            );
            0
        }
    };
    let dat = format!("{at}.document");
    let Some(doc) = obj.get("document").and_then(Value::as_object) else {
        cx.err(
            &dat,
            format!("{who}`document` is missing or not an object"),
            "write the policy document",
        );
        return None;
    };
    cx.members(doc, &["apiVersion", "kind", "metadata", "spec"], &dat, &who);
    if let Some(a) = doc.get("apiVersion") {
        if a.as_str() != Some("agent-governance.io/v1") {
            cx.err(
                &format!("{dat}.apiVersion"),
                format!("{who}`apiVersion` is not `agent-governance.io/v1`"),
                "write `agent-governance.io/v1`, or leave the member out",
            );
        }
    }
    if let Some(k) = doc.get("kind") {
        if k.as_str() != Some("Policy") {
            cx.err(
                &format!("{dat}.kind"),
                format!("{who}`kind` is not `Policy`"),
                "write `Policy`, or leave the member out",
            );
        }
    }
    let mut name = None;
    if let Some(m) = doc.get("metadata") {
        let mat = format!("{dat}.metadata");
        match m.as_object() {
            Some(mo) => {
                cx.members(mo, &["name", "description", "labels"], &mat, &who);
                match mo.get("name").and_then(Value::as_str) {
                    Some(n) if !n.is_empty() && n.chars().count() <= 128 => name = Some(n.to_string()),
                    _ => cx.err(&format!("{mat}.name"), format!("{who}`metadata.name` is missing or not a string of 1 to 128 characters"), "name the policy"),
                }
                if let Some(d) = mo.get("description") {
                    if d.as_str().is_none_or(|d| d.chars().count() > 1024) {
                        cx.err(&format!("{mat}.description"), format!("{who}`metadata.description` is not a string of at most 1024 characters"), "shorten it");
                    }
                }
                if let Some(l) = mo.get("labels") {
                    if !l
                        .as_object()
                        .is_some_and(|l| l.values().all(Value::is_string))
                    {
                        cx.err(
                            &format!("{mat}.labels"),
                            format!("{who}`metadata.labels` is not an object of strings"),
                            "write `{\"key\": \"value\"}`",
                        );
                    }
                }
            }
            None => cx.err(
                &mat,
                format!("{who}`metadata` is not an object"),
                "write `{\"name\": ...}`",
            ),
        }
    }
    let sat = format!("{dat}.spec");
    let Some(spec) = doc.get("spec").and_then(Value::as_object) else {
        cx.err(
            &sat,
            format!("{who}`document.spec` is missing or not an object"),
            "write `{\"defaultEffect\", \"rules\"}`",
        );
        return None;
    };
    cx.members(spec, &["defaultEffect", "rules"], &sat, &who);
    let default = effect(
        cx,
        spec.get("defaultEffect"),
        &format!("{sat}.defaultEffect"),
        &who,
        "`defaultEffect`",
    );
    let mut rules = Vec::new();
    match spec.get("rules").and_then(Value::as_array) {
        Some(list) if list.is_empty() => cx.err(
            &format!("{sat}.rules"),
            format!("{who}the policy has no rules"),
            "write at least one rule",
        ),
        Some(list) if list.len() > MAX_RULES => cx.err(
            &format!("{sat}.rules"),
            format!(
                "{who}the policy has {} rules, more than {MAX_RULES}",
                list.len()
            ),
            "split the policy",
        ),
        Some(list) => {
            for (ri, r) in list.iter().enumerate() {
                if let Some(r) = rule(cx, r, &format!("{sat}.rules[{ri}]"), &id, ri) {
                    rules.push(r);
                }
            }
        }
        None => cx.err(
            &format!("{sat}.rules"),
            format!("{who}`rules` is missing or not a list"),
            "write a list of rules",
        ),
    }
    Some(BundlePolicy {
        policy_id: id,
        policy_version: version,
        name,
        default_effect: default.unwrap_or(Effect::Deny),
        rules,
        errored: false,
    })
}

fn rule(cx: &mut Ctx, v: &Value, at: &str, pid: &str, ri: usize) -> Option<BundleRule> {
    let Some(obj) = v.as_object() else {
        cx.err(
            at,
            format!("policy `{pid}`: rule {} is not an object", ri + 1),
            "write `{\"id\", \"conditions\", \"effect\"}`",
        );
        return None;
    };
    let id = match obj.get("id").and_then(Value::as_str) {
        Some(s) if !s.is_empty() => s.to_string(),
        _ => {
            cx.err(
                &format!("{at}.id"),
                format!("policy `{pid}`: rule {} has no `id`", ri + 1),
                "give the rule an id",
            );
            format!("#{}", ri + 1)
        }
    };
    let who = format!("policy `{pid}`, rule `{id}`: ");
    cx.members(
        obj,
        &["id", "description", "conditions", "effect"],
        at,
        &who,
    );
    let description = match obj.get("description") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            cx.err(
                &format!("{at}.description"),
                format!("{who}`description` is not a string"),
                "describe the rule in text",
            );
            None
        }
    };
    let eff = effect(
        cx,
        obj.get("effect"),
        &format!("{at}.effect"),
        &who,
        "`effect`",
    );
    let mut conditions = Vec::new();
    match obj.get("conditions").and_then(Value::as_array) {
        Some(list) if list.is_empty() => cx.err(
            &format!("{at}.conditions"),
            format!("{who}the rule has no conditions"),
            "write at least one condition",
        ),
        Some(list) if list.len() > MAX_CONDITIONS => cx.err(
            &format!("{at}.conditions"),
            format!(
                "{who}the rule has {} conditions, more than {MAX_CONDITIONS}",
                list.len()
            ),
            "split the rule",
        ),
        Some(list) => {
            for (ci, c) in list.iter().enumerate() {
                if let Some(c) = condition(
                    cx,
                    c,
                    &format!("{at}.conditions[{ci}]"),
                    &format!("policy `{pid}`, rule `{id}`, condition {}: ", ci + 1),
                ) {
                    conditions.push(c);
                }
            }
        }
        None => cx.err(
            &format!("{at}.conditions"),
            format!("{who}`conditions` is missing or not a list"),
            "write a list of conditions",
        ),
    }
    Some(BundleRule {
        id,
        description,
        conditions,
        effect: eff.unwrap_or(Effect::Deny),
    })
}

fn condition(cx: &mut Ctx, v: &Value, at: &str, who: &str) -> Option<Cond> {
    let Some(obj) = v.as_object() else {
        cx.err(
            at,
            format!("{who}the condition is not an object"),
            "write `{\"field\", \"operator\", \"value\"}`",
        );
        return None;
    };
    cx.members(obj, &["field", "operator", "value"], at, who);
    let field = match obj.get("field").and_then(Value::as_str) {
        Some(f) if !f.is_empty() => {
            if let Some(bad) = f.split('.').find(|p| FORBIDDEN.contains(p)) {
                cx.err(&format!("{at}.field"), format!("{who}the field `{f}` addresses `{bad}`"), "fields address own members of the request: remove `__proto__`, `constructor` and `prototype` parts");
                return None;
            }
            f.to_string()
        }
        _ => {
            cx.err(
                &format!("{at}.field"),
                format!("{who}`field` is missing or empty"),
                "write a dot path into the request, such as `input.command`",
            );
            return None;
        }
    };
    let op = match obj.get("operator").and_then(Value::as_str) {
        Some(o) => match Op::from_name(o) {
            Some(op) => op,
            None => {
                cx.err(&format!("{at}.operator"), format!("{who}the operator `{o}` is not one of `eq`, `neq`, `in`, `not_in`, `contains`, `starts_with`, `ends_with`, `matches`"), "write one of those operators");
                return None;
            }
        },
        None => {
            cx.err(
                &format!("{at}.operator"),
                format!("{who}`operator` is missing or not a string"),
                "write an operator such as `eq`",
            );
            return None;
        }
    };
    let value = match obj.get("value") {
        Some(Value::String(s)) => Operand::Str(s.clone()),
        Some(Value::Bool(b)) => Operand::Bool(*b),
        Some(Value::Number(n)) => Operand::Num(n.as_f64().unwrap_or(0.0)),
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => Operand::Strs(
            items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_string))
                .collect(),
        ),
        Some(Value::Array(items)) if items.iter().all(Value::is_number) => {
            Operand::Nums(items.iter().filter_map(Value::as_f64).collect())
        }
        Some(Value::Array(_)) => {
            cx.err(
                &format!("{at}.value"),
                format!(
                    "{who}the list mixes types, or holds something other than strings and numbers"
                ),
                "write a list of strings or a list of numbers",
            );
            return None;
        }
        Some(_) => {
            cx.err(
                &format!("{at}.value"),
                format!("{who}`value` is `null` or an object"),
                "write a string, a number, a boolean, or a list of strings or numbers",
            );
            return None;
        }
        None => {
            cx.err(
                &format!("{at}.value"),
                format!("{who}`value` is missing"),
                "write the value to compare with",
            );
            return None;
        }
    };
    Some(Cond { field, op, value })
}
