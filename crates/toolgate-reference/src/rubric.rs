//! The Rubric reference interpreter: seed 000's algorithm as plain loops.
//!
//! It walks every policy and every rule of the bundle in order and tests
//! every condition with its own field resolution, its own `String(v)`, its
//! own strict equality and a PikeVM regular expression: it shares no
//! matching code with `conditions`. Only the bundle reader (and with it the
//! verdict on which `matches` patterns compile, and their RE2 rewrite) is
//! shared, as the rule-list reference shares the grammar and `check`.

use regex_automata::meta::Regex;
use serde_json::Value;
use std::time::Instant;
use toolgate::conditions::pattern;
use toolgate::rubric::{
    compile_error_result, frozen_result, gate_result, invalid_result, no_policies_result, Bundle,
    Cond, Effect, Op, Operand, Request, RubricEvaluator, RubricResult,
};

/// The reference interpreter over a bundle (or none).
#[derive(Clone, Debug, Default)]
pub struct RubricReference {
    bundle: Option<Bundle>,
    /// One compiled pattern per `matches` condition, by (policy, rule,
    /// condition); `None` for the conditions of errored policies.
    regexes: Vec<Vec<Vec<Option<Regex>>>>,
}

impl RubricReference {
    /// The interpreter for `bundle`.
    pub fn new(bundle: &Bundle) -> RubricReference {
        let regexes = bundle
            .policies
            .iter()
            .map(|p| {
                p.rules
                    .iter()
                    .map(|r| {
                        r.conditions
                            .iter()
                            .map(|c| match (&c.op, &c.value, p.errored) {
                                (Op::Matches, Operand::Str(s), false) => {
                                    let t = pattern::translate(s).ok()?;
                                    Regex::builder()
                                        .syntax(pattern::syntax_config())
                                        .build(&t)
                                        .ok()
                                }
                                _ => None,
                            })
                            .collect()
                    })
                    .collect()
            })
            .collect();
        RubricReference {
            bundle: Some(bundle.clone()),
            regexes,
        }
    }

    /// The interpreter with no bundle loaded.
    pub fn none() -> RubricReference {
        RubricReference::default()
    }

    fn run(&self, request: &Request) -> RubricResult {
        if let Some(e) = request.error() {
            return invalid_result(e);
        }
        let Some(bundle) = &self.bundle else {
            return no_policies_result();
        };
        // 1. Frozen agent, case-insensitive.
        if let Some(agent) = request.agent_id() {
            let needle = agent.to_lowercase();
            if bundle
                .frozen_agent_ids
                .iter()
                .any(|f| f.to_lowercase() == needle)
            {
                return frozen_result();
            }
        }
        // 2. The MCP gate, when the bundle declares one.
        if let Some(m) = &bundle.mcp_access {
            let tool = request.tool_name();
            if let Some(rest) = tool.strip_prefix("mcp__").filter(|_| m.enforce) {
                if let Some((server, _)) = rest.split_once("__") {
                    if !server.is_empty() && !m.approved_servers.iter().any(|s| s == server) {
                        return gate_result(server);
                    }
                }
            }
        }
        // 3. No policies.
        if bundle.policies.is_empty() {
            return no_policies_result();
        }
        // 4. The scan: first deny returns, the last allow is kept.
        let mut matched: Option<(usize, usize)> = None;
        for (pi, p) in bundle.policies.iter().enumerate() {
            if p.errored {
                return compile_error_result(&p.policy_id, p.policy_version);
            }
            for (ri, r) in p.rules.iter().enumerate() {
                let mut all = true;
                for (ci, c) in r.conditions.iter().enumerate() {
                    let re = self
                        .regexes
                        .get(pi)
                        .and_then(|x| x.get(ri))
                        .and_then(|x| x.get(ci))
                        .and_then(Option::as_ref);
                    if !holds(c, request.value(), re) {
                        all = false;
                        break;
                    }
                }
                if all {
                    matched = Some((pi, ri));
                    if r.effect == Effect::Deny {
                        return RubricResult {
                            decision: Effect::Deny,
                            matched_policy_id: Some(p.policy_id.clone()),
                            matched_policy_version: Some(p.policy_version),
                            matched_rule_id: Some(r.id.clone()),
                            code: None,
                            reason: r.description.clone(),
                            latency_ms: 0.0,
                        };
                    }
                }
            }
        }
        // 5. The last allow, or the first policy's default.
        let allow = matched.and_then(|(pi, ri)| {
            let p = bundle.policies.get(pi)?;
            Some((p, p.rules.get(ri)?))
        });
        match allow {
            Some((p, r)) => RubricResult {
                decision: Effect::Allow,
                matched_policy_id: Some(p.policy_id.clone()),
                matched_policy_version: Some(p.policy_version),
                matched_rule_id: Some(r.id.clone()),
                code: None,
                reason: None,
                latency_ms: 0.0,
            },
            None => RubricResult {
                decision: bundle
                    .policies
                    .first()
                    .map_or(Effect::Deny, |p| p.default_effect),
                matched_policy_id: None,
                matched_policy_version: None,
                matched_rule_id: None,
                code: None,
                reason: None,
                latency_ms: 0.0,
            },
        }
    }
}

impl RubricEvaluator for RubricReference {
    fn decide(&self, request: &Request) -> RubricResult {
        let start = Instant::now();
        let mut r = self.run(request);
        r.latency_ms = start.elapsed().as_secs_f64() * 1000.0;
        r
    }
}

/// What a path resolves to: JavaScript's `undefined`/`null` are both
/// `Nothing` (every operator treats them alike), an array's length is a
/// number.
enum Got<'v> {
    Nothing,
    Json(&'v Value),
    Number(f64),
}

fn lookup<'v>(request: &'v Value, path: &str) -> Got<'v> {
    let mut cur = request;
    let parts: Vec<&str> = path.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        match cur {
            Value::Object(m) => match m.get(*part) {
                Some(v) => cur = v,
                None => return Got::Nothing,
            },
            Value::Array(a) => {
                if *part == "length" {
                    return if i + 1 == parts.len() {
                        Got::Number(a.len() as f64)
                    } else {
                        Got::Nothing
                    };
                }
                // JavaScript's own index keys: "0", "1", ..., never "01".
                let canonical = !part.is_empty()
                    && part.chars().all(|c| c.is_ascii_digit())
                    && (part.len() == 1 || !part.starts_with('0'));
                match part.parse::<usize>().ok().filter(|_| canonical) {
                    Some(k) if k < a.len() => match a.get(k) {
                        Some(v) => cur = v,
                        None => return Got::Nothing,
                    },
                    _ => return Got::Nothing,
                }
            }
            _ => return Got::Nothing,
        }
    }
    if cur.is_null() {
        Got::Nothing
    } else {
        Got::Json(cur)
    }
}

/// `String(x)` for a number, written plainly: Rust prints the shortest
/// round-trip digits; JavaScript switches to exponent form below 1e-6 and
/// from 1e21, and signs a positive exponent.
fn number_text(x: f64) -> String {
    if x == 0.0 {
        return "0".to_string();
    }
    if x.abs() >= 1e-6 && x.abs() < 1e21 {
        return format!("{x}");
    }
    let s = format!("{x:e}");
    match s.split_once('e') {
        Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
        _ => s,
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(true) => "true".to_string(),
        Value::Bool(false) => "false".to_string(),
        Value::Number(n) => number_text(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|i| {
                if i.is_null() {
                    String::new()
                } else {
                    text_of(i)
                }
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".to_string(),
    }
}

fn got_text(g: &Got<'_>) -> Option<String> {
    match g {
        Got::Nothing => None,
        Got::Json(v) => Some(text_of(v)),
        Got::Number(n) => Some(number_text(*n)),
    }
}

fn operand_text(o: &Operand) -> Option<String> {
    match o {
        Operand::Str(s) => Some(s.clone()),
        Operand::Num(n) => Some(number_text(*n)),
        Operand::Bool(b) => Some(b.to_string()),
        Operand::Strs(_) | Operand::Nums(_) => None,
    }
}

/// `===`: same type and value; an array value is a fresh object.
fn strict_equal(g: &Got<'_>, o: &Operand) -> bool {
    match (g, o) {
        (Got::Json(Value::String(a)), Operand::Str(b)) => a == b,
        (Got::Json(Value::Number(a)), Operand::Num(b)) => a.as_f64() == Some(*b),
        (Got::Number(a), Operand::Num(b)) => a == b,
        (Got::Json(Value::Bool(a)), Operand::Bool(b)) => a == b,
        _ => false,
    }
}

fn member(g: &Got<'_>, o: &Operand) -> bool {
    let Some(text) = got_text(g) else {
        return false;
    };
    match o {
        Operand::Strs(items) => items.contains(&text),
        Operand::Nums(items) => items.iter().any(|i| number_text(*i) == text),
        scalar => operand_text(scalar).is_some_and(|s| s == text),
    }
}

fn holds(c: &Cond, request: &Value, re: Option<&Regex>) -> bool {
    let g = lookup(request, &c.field);
    match c.op {
        Op::Eq => strict_equal(&g, &c.value),
        Op::Neq => !strict_equal(&g, &c.value),
        Op::In => member(&g, &c.value),
        Op::NotIn => !member(&g, &c.value),
        Op::Contains | Op::StartsWith | Op::EndsWith => {
            let (Some(text), Some(value)) = (got_text(&g), operand_text(&c.value)) else {
                return false;
            };
            match c.op {
                Op::Contains => text.contains(&value),
                Op::StartsWith => text.starts_with(&value),
                _ => text.ends_with(&value),
            }
        }
        Op::Matches => match (got_text(&g), re) {
            (Some(text), Some(re)) => re.is_match(&text),
            _ => false,
        },
    }
}
