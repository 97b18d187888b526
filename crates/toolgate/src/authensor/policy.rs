//! Reading and validating Authensor policies in the seed's shape.
//!
//! A document is one policy object or an array of them. Unknown members are
//! refused everywhere, so that a misspelt member never silently drops a
//! condition or a scope; where the real engine names a member differently,
//! the help says which name toolgate reads. Every error names the place in
//! the document (`[1].rules[0].conditions.resource`).

use super::{Budget, Condition, Effect, Operator, Policies, Policy, Rule, Scope, Sequence};
use super::{SessionRules, Version};
use crate::conditions::{glob, pattern, Limits};
use crate::diag::DiagnosticKind;
use crate::diag::{Diagnostic, Diagnostics, Location};
use serde_json::{Map, Value};

/// Caps that keep a document, its tables and every decision bounded.
pub(super) const MAX_POLICIES: usize = 10_000;
pub(super) const MAX_RULES: usize = 10_000;
pub(super) const MAX_TOTAL_RULES: usize = 200_000;
pub(super) const MAX_SEQUENCES: usize = 1_000;
pub(super) const MAX_STEPS: usize = 100;
pub(super) const MAX_WEIGHTS: usize = 10_000;

/// Members the real engine spells differently, and what toolgate reads.
const ENGINE_NAMES: [(&str, &str); 9] = [
    ("actionTypes", "write the action globs as `actions`"),
    (
        "principalTypes",
        "toolgate reads `principals`: globs over the envelope's `principalId`",
    ),
    (
        "environments",
        "toolgate has no environment scope: add a condition on `context.environment` to each rule",
    ),
    ("condition", "write the rule's conditions as `conditions`"),
    ("description", "write the rule's reason as `reason`"),
    ("maxActionsPerSession", "write the limit as `maxActions`"),
    (
        "sessionRiskThreshold",
        "write `riskThreshold` (a number) and `riskWeights` (action glob to weight)",
    ),
    (
        "sequence",
        "write the steps of a forbidden sequence as `actions`",
    ),
    (
        "rateLimit",
        "toolgate keeps no rate-limit state: rate limits are not supported",
    ),
];

struct Ctx {
    errors: Vec<Diagnostic>,
    warnings: Vec<Diagnostic>,
}

impl Ctx {
    fn err(&mut self, path: &str, message: String, help: &str) {
        self.errors.push(
            Diagnostic::new(DiagnosticKind::InvalidPolicy, message)
                .with_help(help)
                .at(at(path)),
        );
    }

    fn warn(&mut self, kind: DiagnosticKind, path: &str, message: String, help: &str) {
        self.warnings.push(
            Diagnostic::new(kind, message)
                .with_help(help)
                .at(at(path))
                .as_warning(),
        );
    }

    /// Refuses members of `obj` outside `known`.
    fn members(&mut self, obj: &Map<String, Value>, known: &[&str], path: &str) {
        for k in obj.keys() {
            if known.contains(&k.as_str()) {
                continue;
            }
            let help = match ENGINE_NAMES.iter().find(|(name, _)| name == k) {
                Some((_, help)) => help.to_string(),
                None => format!(
                    "remove it or correct its name; the members here are {}",
                    known
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            self.err(
                path,
                format!("unknown member `{k}` in {}", place(path)),
                &help,
            );
        }
    }

    fn string(&mut self, v: &Value, path: &str, what: &str) -> Option<String> {
        match v.as_str() {
            Some(s) => Some(s.to_string()),
            None => {
                self.err(
                    path,
                    format!("`{}` is not a string", last(path)),
                    &format!("write {what} as a string"),
                );
                None
            }
        }
    }

    /// Refuses a glob the compiler could not build within its limits, so
    /// that the reader, the reference and the tables agree on which policy
    /// sets load. Globs of up to 256 bytes always fit: their anchored DFAs
    /// grow with their length, not exponentially.
    fn glob_fits(&mut self, g: &str, path: &str, sep: char, limits: Limits) -> bool {
        if g.len() <= 256 {
            return true;
        }
        let glob::Shape::Regex(re) = glob::shape(g, sep) else {
            return true;
        };
        match crate::compile::regex::anchored_dfa(&[re.as_str()], limits.dfa_bytes) {
            Ok(_) => true,
            Err(_) => {
                let shown: String = g.chars().take(40).collect();
                self.err(
                    path,
                    format!(
                        "the glob `{shown}…` ({} bytes) is too large to compile",
                        g.len()
                    ),
                    "split it into shorter globs, or use `**`, which compiles without a DFA",
                );
                false
            }
        }
    }

    fn strings(&mut self, v: &Value, path: &str, what: &str) -> Option<Vec<String>> {
        let Some(items) = v.as_array() else {
            self.err(
                path,
                format!("`{}` is not a list", last(path)),
                &format!("write a list of {what}"),
            );
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let Some(s) = item.as_str() else {
                // Named by the list and the position: `in[1]`, not `in`.
                let list = last(path);
                self.err(
                    &format!("{path}[{i}]"),
                    format!("`{list}[{i}]` is not a string"),
                    &format!("`{list}` is a list of {what}: write each item as a string"),
                );
                return None;
            };
            out.push(s.to_string());
        }
        Some(out)
    }

    fn number(&mut self, v: &Value, path: &str, help: &str) -> Option<f64> {
        self.number_named(v, path, &format!("`{}`", last(path)), help)
    }

    /// As [`Ctx::number`], with the message naming the value as `what`
    /// (for a member whose name holds a `.`, which `last` would split).
    fn number_named(&mut self, v: &Value, path: &str, what: &str, help: &str) -> Option<f64> {
        match v.as_f64().filter(|x| x.is_finite()) {
            Some(x) if v.is_number() => Some(x),
            _ => {
                self.err(path, format!("{what} is not a number"), help);
                None
            }
        }
    }

    fn whole(&mut self, v: &Value, path: &str, help: &str) -> Option<u64> {
        match v.as_u64() {
            Some(n) => Some(n),
            None => {
                self.err(
                    path,
                    format!("`{}` is not a whole number of at least 0", last(path)),
                    help,
                );
                None
            }
        }
    }

    fn effect(&mut self, v: &Value, path: &str, allow_ok: bool) -> Option<Effect> {
        let e = v.as_str().and_then(Effect::from_name);
        match e {
            Some(Effect::Allow) if !allow_ok => {
                self.err(
                    path,
                    format!("`{}` cannot be `allow` here", last(path)),
                    "a session rule denies or requires approval: write `deny` or `require_approval`",
                );
                None
            }
            Some(e) => Some(e),
            None => {
                // Name what was written: `permit` tells the user more than
                // "not an effect" does.
                let written = match v {
                    Value::String(s) => format!("`{s}`"),
                    other => format!("`{other}`"),
                };
                self.err(
                    path,
                    format!("{written} is not an effect of `{}`", last(path)),
                    if allow_ok {
                        "write `allow`, `deny` or `require_approval`"
                    } else {
                        "write `deny` or `require_approval`"
                    },
                );
                None
            }
        }
    }
}

fn at(path: &str) -> Location {
    Location {
        file: String::new(),
        path: path.to_string(),
        span: None,
    }
}

fn place(path: &str) -> String {
    if path.is_empty() {
        "the policy".into()
    } else {
        format!("`{path}`")
    }
}

/// The last member name of a path, for messages.
fn last(path: &str) -> &str {
    let tail = path.rsplit('.').next().unwrap_or(path);
    tail.split('[').next().unwrap_or(tail)
}

/// Whether `v` has the shape of Authensor policies: an array (of
/// anything: toolgate's other documents are objects), or an object with
/// `rules` or `sessionRules` and none of the members that mark Claude Code
/// settings (`permissions`) or a Rubric bundle (`policies`).
pub(super) fn looks_like(v: &Value) -> bool {
    match v {
        Value::Array(_) => true,
        Value::Object(o) => {
            (o.contains_key("rules") || o.contains_key("sessionRules"))
                && !o.contains_key("permissions")
                && !o.contains_key("policies")
        }
        _ => false,
    }
}

pub(super) fn read(v: &Value, limits: Limits) -> Result<Policies, Diagnostics> {
    let mut cx = Ctx {
        errors: Vec::new(),
        warnings: Vec::new(),
    };
    if let Some((path, key)) = crate::json::find_nul(v) {
        cx.err(
            &path,
            crate::json::nul_refusal(&crate::json::nul_place(&path, key)),
            "a policy holds no NUL byte: remove it",
        );
    }
    let mut out = Policies::default();
    let (list, prefix): (Vec<&Value>, bool) =
        match v {
            Value::Array(items) => (items.iter().collect(), true),
            Value::Object(_) => (vec![v], false),
            _ => return Err(Diagnostics::one(
                Diagnostic::new(
                    DiagnosticKind::InvalidPolicy,
                    "the document is not a policy or a list of policies",
                )
                .with_help(
                    "write one policy object, `{\"id\": ..., \"rules\": [...]}`, or a list of them",
                ),
            )),
        };
    if list.len() > MAX_POLICIES {
        cx.err(
            "",
            format!(
                "the document has {} policies, more than {MAX_POLICIES}",
                list.len()
            ),
            "split the policies across documents",
        );
    }
    let mut total = 0usize;
    for (i, p) in list.iter().take(MAX_POLICIES).enumerate() {
        let path = if prefix {
            format!("[{i}]")
        } else {
            String::new()
        };
        if let Some(p) = policy(&mut cx, p, &path, limits) {
            total += p.rules.len();
            out.policies.push(p);
        }
    }
    if total > MAX_TOTAL_RULES {
        cx.err(
            "",
            format!("the policies hold {total} rules, more than {MAX_TOTAL_RULES}"),
            "split the policies across documents",
        );
    }
    if let Some(d) = Diagnostics::from_vec(cx.errors) {
        return Err(d);
    }
    out.warnings = cx.warnings;
    Ok(out)
}

const POLICY: [&str; 10] = [
    "id",
    "name",
    "description",
    "version",
    "priority",
    "enabled",
    "scope",
    "rules",
    "defaultEffect",
    "sessionRules",
];

fn policy(cx: &mut Ctx, v: &Value, path: &str, limits: Limits) -> Option<Policy> {
    let Some(obj) = v.as_object() else {
        cx.err(
            path,
            format!("{} is not an object", place(path)),
            "write a policy as `{\"id\": ..., \"rules\": [...]}`",
        );
        return None;
    };
    let sub = |m: &str| {
        if path.is_empty() {
            m.to_string()
        } else {
            format!("{path}.{m}")
        }
    };
    cx.members(obj, &POLICY, path);
    let id = match obj.get("id") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(_) => {
            cx.err(
                &sub("id"),
                "`id` is not a non-empty string".into(),
                "give the policy an id; results name it",
            );
            String::new()
        }
        None => {
            cx.err(
                path,
                format!("{} has no `id`", place(path)),
                "give the policy an id; results name it",
            );
            String::new()
        }
    };
    for m in ["name", "description"] {
        if let Some(x) = obj.get(m) {
            cx.string(x, &sub(m), "a text for people");
        }
    }
    let version = match obj.get("version") {
        None => None,
        Some(Value::Number(n)) => Some(Version::Number(n.clone())),
        Some(Value::String(s)) => Some(Version::Text(s.clone())),
        Some(_) => {
            cx.err(
                &sub("version"),
                "`version` is not a number or a string".into(),
                "write the version as a number (`1`) or a string (`\"1.2.0\"`)",
            );
            None
        }
    };
    let priority = match obj.get("priority") {
        None => 0.0,
        Some(x) => cx
            .number(
                x,
                &sub("priority"),
                "write the priority as a number: higher is decided first",
            )
            .unwrap_or(0.0),
    };
    let enabled = match obj.get("enabled") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            cx.err(
                &sub("enabled"),
                "`enabled` is not `true` or `false`".into(),
                "write `true`, `false`, or leave the member out (enabled)",
            );
            true
        }
    };
    let scope = obj
        .get("scope")
        .map(|s| scope(cx, s, &sub("scope"), limits))
        .unwrap_or_default();
    let mut rules = Vec::new();
    match obj.get("rules") {
        Some(Value::Array(list)) => {
            if list.len() > MAX_RULES {
                cx.err(
                    &sub("rules"),
                    format!("the policy has {} rules, more than {MAX_RULES}", list.len()),
                    "split the policy",
                );
            }
            for (i, r) in list.iter().take(MAX_RULES).enumerate() {
                if let Some(r) = rule(cx, r, &format!("{}[{i}]", sub("rules")), limits) {
                    rules.push(r);
                }
            }
        }
        Some(_) => cx.err(
            &sub("rules"),
            "`rules` is not a list".into(),
            "write a list of rules, `[{\"effect\": \"deny\", \"conditions\": {...}}]`",
        ),
        None => cx.err(
            path,
            format!("{} has no `rules`", place(path)),
            "write `\"rules\": [...]` (an empty list when the policy decides by its default or its session rules only)",
        ),
    }
    let default_effect = obj
        .get("defaultEffect")
        .and_then(|e| cx.effect(e, &sub("defaultEffect"), true));
    let session_rules = obj
        .get("sessionRules")
        .and_then(|s| session_rules(cx, s, &sub("sessionRules")));
    Some(Policy {
        id,
        version,
        priority,
        enabled,
        scope,
        rules,
        default_effect,
        session_rules,
    })
}

fn scope(cx: &mut Ctx, v: &Value, path: &str, limits: Limits) -> Scope {
    let mut s = Scope::default();
    let Some(obj) = v.as_object() else {
        cx.err(
            path,
            "`scope` is not an object".into(),
            "write `{\"actions\": [globs], \"principals\": [globs]}`",
        );
        return s;
    };
    cx.members(obj, &["actions", "principals"], path);
    if let Some(a) = obj.get("actions") {
        s.actions = cx
            .strings(a, &format!("{path}.actions"), "action globs")
            .unwrap_or_default();
    }
    if let Some(p) = obj.get("principals") {
        s.principals = cx
            .strings(p, &format!("{path}.principals"), "principal-id globs")
            .unwrap_or_default();
    }
    for (list, globs) in [("actions", &s.actions), ("principals", &s.principals)] {
        for (i, g) in globs.iter().enumerate() {
            cx.glob_fits(g, &format!("{path}.{list}[{i}]"), '.', limits);
        }
    }
    s
}

fn rule(cx: &mut Ctx, v: &Value, path: &str, limits: Limits) -> Option<Rule> {
    let Some(obj) = v.as_object() else {
        cx.err(
            path,
            format!("`{path}` is not an object"),
            "write a rule as `{\"effect\": \"deny\", \"conditions\": {...}, \"reason\": \"...\"}`",
        );
        return None;
    };
    cx.members(obj, &["id", "effect", "conditions", "reason"], path);
    let id = match obj.get("id") {
        None => None,
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(_) => {
            cx.err(
                &format!("{path}.id"),
                "`id` is not a non-empty string".into(),
                "give the rule an id, or leave the member out: results then name the rule by its position",
            );
            None
        }
    };
    let effect = match obj.get("effect") {
        Some(e) => cx.effect(e, &format!("{path}.effect"), true),
        None => {
            cx.err(
                path,
                format!("`{path}` has no `effect`"),
                "write `\"effect\": \"allow\"`, `\"deny\"` or `\"require_approval\"`",
            );
            None
        }
    };
    let reason = obj
        .get("reason")
        .and_then(|r| cx.string(r, &format!("{path}.reason"), "the reason"));
    let mut conditions = Vec::new();
    let mut budget = None;
    if let Some(c) = obj.get("conditions") {
        let cpath = format!("{path}.conditions");
        match c.as_object() {
            Some(fields) => {
                for (field, ops) in fields {
                    let fpath = format!("{cpath}.{field}");
                    if field == "constraints" {
                        budget = budget_of(cx, ops, &fpath);
                        continue;
                    }
                    if field.is_empty() {
                        cx.err(
                            &fpath,
                            "a condition names the empty field".into(),
                            "name an envelope member: `action`, `resource`, `principalId`, or a dot path such as `context.environment`",
                        );
                        continue;
                    }
                    if field.split('.').next() == Some("session") {
                        cx.err(
                            &fpath,
                            format!("the condition on `{field}` addresses the session history"),
                            "conditions address the envelope; limit sessions with `sessionRules`",
                        );
                        continue;
                    }
                    operators(cx, field, ops, &fpath, limits, &mut conditions);
                }
            }
            None => cx.err(
                &cpath,
                "`conditions` is not an object".into(),
                "write `{\"action\": {\"pattern\": \"shell.*\"}, \"resource\": {\"equals\": \"...\"}}`",
            ),
        }
    }
    Some(Rule {
        id,
        effect: effect?,
        conditions,
        budget,
        reason,
    })
}

fn operators(
    cx: &mut Ctx,
    field: &str,
    v: &Value,
    path: &str,
    limits: Limits,
    out: &mut Vec<Condition>,
) {
    let Some(obj) = v.as_object() else {
        cx.err(
            path,
            format!("the condition on `{field}` is not an object of operators"),
            "write `{\"pattern\": ...}`, `{\"equals\": ...}`, `{\"in\": [...]}`, `{\"notIn\": [...]}` or `{\"regex\": ...}`",
        );
        return;
    };
    cx.members(obj, &["pattern", "equals", "in", "notIn", "regex"], path);
    for (name, value) in obj {
        let opath = format!("{path}.{name}");
        let op = match name.as_str() {
            "pattern" => cx
                .string(value, &opath, "a glob")
                .filter(|g| cx.glob_fits(g, &opath, Operator::separator(field), limits))
                .map(Operator::Pattern),
            "equals" => cx.string(value, &opath, "the value").map(Operator::Equals),
            "in" => cx.strings(value, &opath, "strings").map(Operator::In),
            "notIn" => cx.strings(value, &opath, "strings").map(Operator::NotIn),
            "regex" => {
                match cx.string(value, &opath, "a regular expression") {
                    Some(p) => match pattern::check(&p, limits.dfa_bytes) {
                        Ok(_) => Some(Operator::Regex(p)),
                        Err(cause) => {
                            cx.err(
                            &opath,
                            format!("the `regex` pattern `{p}` on `{field}` does not compile: {cause}"),
                            "write an RE2 pattern: no lookaround, no backreferences",
                        );
                            None
                        }
                    },
                    None => None,
                }
            }
            _ => None,
        };
        if let Some(op) = op {
            out.push(Condition {
                field: field.to_string(),
                op,
            });
        }
    }
}

fn budget_of(cx: &mut Ctx, v: &Value, path: &str) -> Option<Budget> {
    let Some(obj) = v.as_object() else {
        cx.err(
            path,
            "the `constraints` condition is not an object".into(),
            "write a budget as `{\"maxCost\": 10.00, \"currency\": \"USD\"}`",
        );
        return None;
    };
    cx.members(obj, &["maxCost", "currency"], path);
    let max_cost = match obj.get("maxCost") {
        Some(m) => cx.number(
            m,
            &format!("{path}.maxCost"),
            "write the most an action may cost, as a number",
        )?,
        None => {
            cx.err(
                path,
                "the budget has no `maxCost`".into(),
                "write `\"maxCost\": 10.00`: the rule matches an envelope whose cost exceeds it",
            );
            return None;
        }
    };
    let currency = match obj.get("currency") {
        Some(c) => Some(cx.string(c, &format!("{path}.currency"), "a currency code")?),
        None => None,
    };
    Some(Budget { max_cost, currency })
}

fn session_rules(cx: &mut Ctx, v: &Value, path: &str) -> Option<SessionRules> {
    let Some(obj) = v.as_object() else {
        cx.err(
            path,
            "`sessionRules` is not an object".into(),
            "write `{\"maxActions\": 50, \"forbiddenSequences\": [...], \"riskThreshold\": 0.8, \"riskWeights\": {...}}`",
        );
        return None;
    };
    cx.members(
        obj,
        &[
            "maxActions",
            "forbiddenSequences",
            "riskThreshold",
            "riskWeights",
        ],
        path,
    );
    let mut s = SessionRules::default();
    if let Some(m) = obj.get("maxActions") {
        s.max_actions = cx.whole(
            m,
            &format!("{path}.maxActions"),
            "write the most actions a session may take, counting the one proposed",
        );
    }
    if let Some(list) = obj.get("forbiddenSequences") {
        let lpath = format!("{path}.forbiddenSequences");
        match list.as_array() {
            Some(items) => {
                if items.len() > MAX_SEQUENCES {
                    cx.err(
                        &lpath,
                        format!(
                            "{} forbidden sequences, more than {MAX_SEQUENCES}",
                            items.len()
                        ),
                        "split the policy",
                    );
                }
                for (i, q) in items.iter().take(MAX_SEQUENCES).enumerate() {
                    if let Some(q) = sequence(cx, q, &format!("{lpath}[{i}]")) {
                        s.forbidden_sequences.push(q);
                    }
                }
            }
            None => cx.err(
                &lpath,
                "`forbiddenSequences` is not a list".into(),
                "write `[{\"actions\": [\"file.read\", \"network.send\"], \"reason\": \"...\"}]`",
            ),
        }
    }
    if let Some(t) = obj.get("riskThreshold") {
        s.risk_threshold = cx.number(
            t,
            &format!("{path}.riskThreshold"),
            "write the highest cumulative risk score a session may reach",
        );
    }
    if let Some(w) = obj.get("riskWeights") {
        let wpath = format!("{path}.riskWeights");
        match w.as_object() {
            Some(weights) => {
                if weights.len() > MAX_WEIGHTS {
                    cx.err(
                        &wpath,
                        format!("{} risk weights, more than {MAX_WEIGHTS}", weights.len()),
                        "group actions under globs",
                    );
                }
                for (k, x) in weights.iter().take(MAX_WEIGHTS) {
                    // The key is an action glob, dots and all: named whole.
                    if let Some(x) = cx.number_named(
                        x,
                        &format!("{wpath}.{k}"),
                        &format!("the weight of `{k}` in `riskWeights`"),
                        "write the action's weight as a number",
                    ) {
                        s.risk_weights.push((k.clone(), x));
                    }
                }
            }
            None => cx.err(
                &wpath,
                "`riskWeights` is not an object".into(),
                "write `{\"network.*\": 0.5, \"file.delete\": 0.3}`: action globs to weights",
            ),
        }
        if obj.get("riskThreshold").is_none() {
            cx.err(
                &wpath,
                "`riskWeights` without `riskThreshold`".into(),
                "add `riskThreshold`, the score a session may not exceed",
            );
        }
    } else if obj.get("riskThreshold").is_some() {
        cx.warn(
            DiagnosticKind::NoRiskWeights,
            path,
            "`riskThreshold` without `riskWeights`: only each action's own `riskScore` counts".into(),
            "add `riskWeights` (action glob to weight), or send a `riskScore` with each action; without either the threshold is exceeded only when it is below 0",
        );
    }
    Some(s)
}

fn sequence(cx: &mut Ctx, v: &Value, path: &str) -> Option<Sequence> {
    let Some(obj) = v.as_object() else {
        cx.err(
            path,
            format!("`{path}` is not an object"),
            "write `{\"actions\": [\"file.read\", \"network.send\"], \"reason\": \"...\"}`",
        );
        return None;
    };
    cx.members(
        obj,
        &["id", "actions", "reason", "lookbackActions", "effect"],
        path,
    );
    let actions = match obj.get("actions") {
        Some(a) => cx.strings(a, &format!("{path}.actions"), "action globs")?,
        None => {
            cx.err(
                path,
                format!("`{path}` has no `actions`"),
                "write the steps of the sequence, in order, as `actions`",
            );
            return None;
        }
    };
    if actions.len() > MAX_STEPS {
        cx.err(
            &format!("{path}.actions"),
            format!(
                "the sequence has {} steps, more than {MAX_STEPS}",
                actions.len()
            ),
            "shorten the sequence",
        );
        return None;
    }
    if actions.len() < 2 {
        cx.warn(
            DiagnosticKind::ShortSequence,
            &format!("{path}.actions"),
            format!(
                "a forbidden sequence of {} step{} is never checked",
                actions.len(),
                if actions.len() == 1 { "" } else { "s" }
            ),
            "a sequence needs two steps or more; to refuse one action, write a deny rule",
        );
    }
    let id = obj
        .get("id")
        .and_then(|i| cx.string(i, &format!("{path}.id"), "the sequence's id"));
    let reason = obj
        .get("reason")
        .and_then(|r| cx.string(r, &format!("{path}.reason"), "the reason"));
    let lookback = match obj.get("lookbackActions") {
        Some(l) => Some(cx.whole(
            l,
            &format!("{path}.lookbackActions"),
            "write how many of the latest actions (the proposed one included) to look at; 0 looks at all",
        )?),
        None => None,
    };
    let effect = match obj.get("effect") {
        Some(e) => cx.effect(e, &format!("{path}.effect"), false)?,
        None => Effect::Deny,
    };
    Some(Sequence {
        id,
        actions,
        reason,
        lookback,
        effect,
    })
}
