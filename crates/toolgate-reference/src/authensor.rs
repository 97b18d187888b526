//! The Authensor reference interpreter: the algorithm of
//! `spec/authensor.md` as plain loops.
//!
//! It orders the policies itself (an insertion sort by priority, stable),
//! checks each scope, session rule, rule and condition in order, with its
//! own glob matcher (a dynamic programme over the glob and the value), its
//! own field resolution and its own session search (a subsequence search
//! that matches every step glob against every action): it shares no
//! matching code with `conditions` or the compiled engine. It shares the
//! policy reader (and with it which `regex` patterns compile, and their
//! RE2 rewrite), the envelope intake and the result's texts.

use regex_automata::meta::Regex;
use serde_json::Value;
use toolgate::authensor::{
    budget_currency_reason, budget_not_number_reason, default_reason, max_actions_reason,
    risk_reason, stored_session_reason, AuthensorEvaluator, AuthensorResult, Budget, Condition,
    Effect, Envelope, MatchedRule, Operator, Policies, Policy, SessionRules, SessionViolation,
    Violation, REASON_NO_MATCH,
};
use toolgate::conditions::pattern;

/// The reference interpreter over policies.
#[derive(Clone, Debug)]
pub struct AuthensorReference {
    policies: Vec<Policy>,
    /// Each `regex` operator's compiled pattern, by (policy, rule,
    /// condition) in the order written.
    regexes: Vec<Vec<Vec<Option<Regex>>>>,
}

impl AuthensorReference {
    /// The interpreter for `policies`.
    pub fn new(policies: &Policies) -> AuthensorReference {
        let regexes = policies
            .policies
            .iter()
            .map(|p| {
                p.rules
                    .iter()
                    .map(|r| {
                        r.conditions
                            .iter()
                            .map(|c| match &c.op {
                                Operator::Regex(s) => {
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
        AuthensorReference {
            policies: policies.policies.clone(),
            regexes,
        }
    }

    /// The enabled policies' positions, highest priority first, equal
    /// priorities in the order written.
    fn order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = Vec::new();
        for (i, p) in self.policies.iter().enumerate() {
            if !p.enabled {
                continue;
            }
            // Insert after every policy of the same or a higher priority.
            let mut at = order.len();
            while at > 0 {
                let before = order
                    .get(at - 1)
                    .and_then(|&j| self.policies.get(j))
                    .map_or(f64::INFINITY, |q| q.priority);
                if before < p.priority {
                    at -= 1;
                } else {
                    break;
                }
            }
            order.insert(at, i);
        }
        order
    }

    fn run(&self, env: &Envelope) -> AuthensorResult {
        if let Some(e) = env.error() {
            return AuthensorResult::unreadable(e);
        }
        // A session kept by the store, not read from it: its history is
        // unknown here, so nothing is decided on it.
        if let Some(s) = env.session().filter(|s| s.stored) {
            return AuthensorResult::fail_closed(stored_session_reason(
                s.session_id.as_deref().unwrap_or_default(),
            ));
        }
        for pi in self.order() {
            let Some(p) = self.policies.get(pi) else {
                continue;
            };
            if !in_scope(p, env) {
                continue;
            }
            let decided = |outcome, reason| AuthensorResult {
                outcome,
                reason,
                policy_id: Some(p.id.clone()),
                policy_version: p.version.clone(),
                rule: None,
                session_violation: None,
            };
            if let Some(s) = &p.session_rules {
                if let Some((v, effect)) = session_violation(s, env) {
                    let mut r = decided(effect, Some(v.reason.clone()));
                    r.session_violation = Some(v);
                    return r;
                }
            }
            for (ri, rule) in p.rules.iter().enumerate() {
                let all = rule.conditions.iter().enumerate().all(|(ci, c)| {
                    let re = self
                        .regexes
                        .get(pi)
                        .and_then(|x| x.get(ri))
                        .and_then(|x| x.get(ci))
                        .and_then(Option::as_ref);
                    holds(c, env.value(), re)
                });
                if !all {
                    continue;
                }
                let name = rule.name(ri);
                let (effect, reason) = match &rule.budget {
                    None => (rule.effect, rule.reason.clone()),
                    Some(b) => match over_budget(b, env.value()) {
                        Checked::Within => continue,
                        Checked::Over => (rule.effect, rule.reason.clone()),
                        Checked::NotANumber => {
                            (Effect::Deny, Some(budget_not_number_reason(&name)))
                        }
                        Checked::OtherCurrency(cur) => {
                            (Effect::Deny, Some(budget_currency_reason(&name, &cur)))
                        }
                    },
                };
                let mut r = decided(effect, reason);
                r.rule = Some(MatchedRule { id: name, effect });
                return r;
            }
            if let Some(d) = p.default_effect {
                return decided(d, Some(default_reason(d)));
            }
        }
        AuthensorResult::fail_closed(REASON_NO_MATCH)
    }
}

impl AuthensorEvaluator for AuthensorReference {
    fn decide(&self, envelope: &Envelope) -> AuthensorResult {
        self.run(envelope)
    }
}

fn in_scope(p: &Policy, env: &Envelope) -> bool {
    let any = |globs: &[String], value: &str| globs.iter().any(|g| glob_matches(g, value, '.'));
    (p.scope.actions.is_empty() || any(&p.scope.actions, env.action()))
        && (p.scope.principals.is_empty() || any(&p.scope.principals, env.principal_id()))
}

/// Whether segment glob `glob` matches all of `value`: `*` any run without
/// `sep`, two or more stars any run, everything else itself. A dynamic
/// programme over (glob element, value position): linear in each.
pub(crate) fn glob_matches(glob: &str, value: &str, sep: char) -> bool {
    enum El {
        Char(char),
        Star,
        Globstar,
    }
    let mut els: Vec<El> = Vec::new();
    let chars: Vec<char> = glob.chars().collect();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        if c == '*' {
            let mut run = 0;
            while chars.get(i) == Some(&'*') {
                run += 1;
                i += 1;
            }
            els.push(if run == 1 { El::Star } else { El::Globstar });
        } else {
            els.push(El::Char(c));
            i += 1;
        }
    }
    let v: Vec<char> = value.chars().collect();
    // reach[j]: the elements so far can match v[..j].
    let mut reach = vec![false; v.len() + 1];
    if let Some(r) = reach.first_mut() {
        *r = true;
    }
    for el in &els {
        let mut next = vec![false; v.len() + 1];
        for j in 0..=v.len() {
            let here = reach.get(j).copied().unwrap_or(false);
            let prev_next = j > 0 && next.get(j - 1).copied().unwrap_or(false);
            let prev_reach = j > 0 && reach.get(j - 1).copied().unwrap_or(false);
            let c = if j > 0 { v.get(j - 1) } else { None };
            let ok = match el {
                El::Char(x) => prev_reach && c == Some(x),
                El::Star => here || (prev_next && c != Some(&sep)),
                El::Globstar => here || prev_next,
            };
            if let Some(n) = next.get_mut(j) {
                *n = ok;
            }
        }
        reach = next;
    }
    reach.last().copied().unwrap_or(false)
}

/// The field at dot path `path`: object members, canonical array indices
/// and an array's `length`; `None` for anything missing, a step into a
/// scalar, or `null`.
fn field<'v>(root: &'v Value, path: &str) -> Option<Field<'v>> {
    let parts: Vec<&str> = path.split('.').collect();
    let mut cur = root;
    for (i, part) in parts.iter().enumerate() {
        cur = match cur {
            Value::Object(m) => m.get(*part)?,
            Value::Array(a) => {
                if *part == "length" {
                    return (i + 1 == parts.len()).then_some(Field::Length(a.len()));
                }
                let canonical = !part.is_empty()
                    && part.chars().all(|c| c.is_ascii_digit())
                    && (part.len() == 1 || !part.starts_with('0'));
                if !canonical {
                    return None;
                }
                a.get(part.parse::<usize>().ok()?)?
            }
            _ => return None,
        };
    }
    if cur.is_null() {
        None
    } else {
        Some(Field::Json(cur))
    }
}

enum Field<'v> {
    Json(&'v Value),
    Length(usize),
}

impl Field<'_> {
    fn text(&self) -> Option<&str> {
        match self {
            Field::Json(Value::String(s)) => Some(s),
            _ => None,
        }
    }

    fn number(&self) -> Option<f64> {
        match self {
            Field::Json(Value::Number(n)) => n.as_f64(),
            Field::Length(n) => Some(*n as f64),
            Field::Json(_) => None,
        }
    }
}

fn holds(c: &Condition, env: &Value, re: Option<&Regex>) -> bool {
    let f = field(env, &c.field);
    let text = f.as_ref().and_then(Field::text);
    match &c.op {
        Operator::Pattern(g) => {
            text.is_some_and(|t| glob_matches(g, t, Operator::separator(&c.field)))
        }
        Operator::Equals(s) => text == Some(s.as_str()),
        Operator::In(items) => text.is_some_and(|t| items.iter().any(|i| i == t)),
        Operator::NotIn(items) => !text.is_some_and(|t| items.iter().any(|i| i == t)),
        Operator::Regex(_) => match (text, re) {
            (Some(t), Some(re)) => re.is_match(t),
            _ => false,
        },
    }
}

enum Checked {
    Within,
    Over,
    NotANumber,
    OtherCurrency(String),
}

fn over_budget(b: &Budget, env: &Value) -> Checked {
    // No declared cost costs nothing.
    let Some(cost) = field(env, "constraints.maxAmount") else {
        return Checked::Within;
    };
    let Some(cost) = cost.number() else {
        return Checked::NotANumber;
    };
    if let Some(cur) = &b.currency {
        let theirs = field(env, "constraints.currency");
        if theirs.as_ref().and_then(Field::text) != Some(cur.as_str()) {
            return Checked::OtherCurrency(cur.clone());
        }
    }
    if cost > b.max_cost {
        Checked::Over
    } else {
        Checked::Within
    }
}

/// The first session rule the proposed action violates, in the order
/// `maxActions`, forbidden sequences (in order), risk threshold.
fn session_violation(s: &SessionRules, env: &Envelope) -> Option<(SessionViolation, Effect)> {
    let mut actions: Vec<&str> = env.history().iter().map(String::as_str).collect();
    actions.push(env.action());
    let count = actions.len() as u64;
    if let Some(max) = s.max_actions {
        if count > max {
            return Some((
                SessionViolation {
                    violation: Violation::MaxActions { count, max },
                    reason: max_actions_reason(count, max),
                },
                Effect::Deny,
            ));
        }
    }
    for q in &s.forbidden_sequences {
        if q.actions.len() < 2 {
            continue;
        }
        let window = match q.lookback {
            Some(l) if l > 0 && (l as usize) < actions.len() => actions
                .get(actions.len() - l as usize..)
                .unwrap_or_default(),
            _ => &actions[..],
        };
        // Each step, in order, after the action the previous step matched.
        let mut from = 0;
        let mut found = true;
        for step in &q.actions {
            match window
                .iter()
                .skip(from)
                .position(|a| glob_matches(step, a, '.'))
            {
                Some(k) => from += k + 1,
                None => {
                    found = false;
                    break;
                }
            }
        }
        if found {
            return Some((
                SessionViolation {
                    violation: Violation::ForbiddenSequence {
                        sequence: q.actions.clone(),
                        id: q.id.clone(),
                    },
                    reason: q.reason_text(),
                },
                q.effect,
            ));
        }
    }
    if let Some(max) = s.risk_threshold {
        // Each action's own `riskScore` (the proposed one's on the
        // envelope) adds to its weight; a negative one adds nothing.
        let mut own: Vec<f64> = env.history_risk().to_vec();
        own.resize(env.history().len(), 0.0);
        own.push(env.risk_score());
        let mut score = 0.0;
        for (a, r) in actions.iter().zip(own) {
            let exact = s.risk_weights.iter().find(|(k, _)| k == a);
            let weight = exact
                .or_else(|| s.risk_weights.iter().find(|(k, _)| glob_matches(k, a, '.')))
                .map_or(0.0, |(_, w)| *w);
            score += weight;
            score += if r > 0.0 { r } else { 0.0 };
        }
        if score > max {
            return Some((
                SessionViolation {
                    violation: Violation::RiskThreshold { score, max },
                    reason: risk_reason(score, max),
                },
                Effect::Deny,
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::glob_matches;

    #[test]
    fn globs_match_as_the_spec_says() {
        let yes = |g: &str, v: &str, sep: char| assert!(glob_matches(g, v, sep), "{g} {v}");
        let no = |g: &str, v: &str, sep: char| assert!(!glob_matches(g, v, sep), "{g} {v}");
        yes("file.*", "file.read", '.');
        no("file.*", "file.read.all", '.');
        yes("file.**", "file.read.all", '.');
        yes("file.*", "file.", '.');
        no("*", "a.b", '.');
        yes("*", "", '.');
        yes("**", "a.b", '.');
        yes("**/rm*", "bash://localhost/rm", '/');
        no("**/rm*", "bash://localhost/rm/x", '/');
        yes("a+b", "a+b", '.');
        no("a+b", "aab", '.');
        no("file.?", "file.x", '.');
        yes("file.?", "file.?", '.');
        yes("a***b", "a.x.b", '.');
        yes("*.*", "a.b", '.');
        no("*.*", "a.b.c", '.');
        no("Bash", "bash", '.');
        yes("é*", "été", '.');
    }
}
