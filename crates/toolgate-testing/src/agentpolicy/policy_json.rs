//! JSON values shaped like policy documents, then mutated: wrong types,
//! unknown members, missing members, hostile rule strings, extreme ranks,
//! deep nesting.

use super::case::Case;
use super::{chance, count, pick};
use arbitrary::{Arbitrary, Result, Unstructured};
use serde_json::{json, Value};
use std::fmt;
use toolgate::call::Call;
use toolgate::engine::{Engine, Evaluator};
use toolgate::policy::Policy;
use toolgate_reference::Reference;

/// A JSON value shaped like a policy document, mutated.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyValue(pub Value);

impl<'a> Arbitrary<'a> for PolicyValue {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<PolicyValue> {
        let case = Case::arbitrary(u)?;
        let mut v = case.policy.to_json();
        for _ in 0..count(u, 0, 4)? {
            mutate(u, &mut v, 0)?;
        }
        Ok(PolicyValue(v))
    }
}

impl fmt::Display for PolicyValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Strings that are nearly rules, or nearly anything else a document holds.
const HOSTILE: &[&str] = &[
    "",
    " ",
    "bash(",
    "bash)",
    "(x)",
    "Bash(!)",
    "bash()",
    "bash(a)b",
    "bash(a)(b)",
    "mcp__*(x)",
    "*",
    "**(*)",
    "Read(./a (b)/c)",
    "ask",
    "allow",
    "deny",
    "Allow",
    "glob",
    "prefix",
    "regex",
    "corpus",
    "shell",
    "command",
    "\u{0}",
    "\u{feff}bash",
    "bash\u{a0}read",
    "a\u{2028}b",
];

/// Members a document, a source or a matcher may (or may almost) have.
const KEYS: &[&str] = &[
    "default", "matchers", "aliases", "sources", "allow", "deny", "ask", "notes", "$schema",
    "name", "rank", "trusted", "path", "hash", "match", "field", "split", "alow", "Deny", "",
];

fn leaf(u: &mut Unstructured<'_>) -> Result<Value> {
    Ok(match u.int_in_range(0..=14)? {
        0 => Value::Null,
        1 => Value::Bool(chance(u, 1, 2)?),
        2 => json!(0),
        3 => json!(-1),
        4 => json!(i64::MAX),
        5 => json!(i64::MIN),
        6 => json!(u64::MAX),
        7 => json!(1.5),
        8 => json!(1e300),
        9 => Value::from(pick(u, HOSTILE)?),
        10 => {
            let s: String = u.arbitrary()?;
            Value::from(s)
        }
        11 => json!([]),
        12 => json!({}),
        13 => {
            // Deep nesting.
            let mut v = json!("bash");
            for _ in 0..u.int_in_range(1..=100)? {
                v = json!([v]);
            }
            v
        }
        _ => Value::from(format!("bash({})", "(".repeat(130) + &")".repeat(130))),
    })
}

/// Changes one place of `v`: a random walk down, then a replacement, an
/// insertion or a removal.
fn mutate(u: &mut Unstructured<'_>, v: &mut Value, depth: usize) -> Result<()> {
    let descend = depth < 6 && chance(u, 2, 3)?;
    match v {
        Value::Object(m) if descend && !m.is_empty() => {
            let keys: Vec<String> = m.keys().cloned().collect();
            let k = u.choose(&keys)?.clone();
            if let Some(child) = m.get_mut(&k) {
                return mutate(u, child, depth + 1);
            }
            Ok(())
        }
        Value::Array(a) if descend && !a.is_empty() => {
            let i = u.choose_index(a.len())?;
            if let Some(child) = a.get_mut(i) {
                return mutate(u, child, depth + 1);
            }
            Ok(())
        }
        Value::Object(m) => {
            match u.int_in_range(0..=3)? {
                0 => {
                    let keys: Vec<String> = m.keys().cloned().collect();
                    if !keys.is_empty() {
                        let k = u.choose(&keys)?.clone();
                        m.remove(&k);
                    }
                }
                1 | 2 => {
                    let k = pick(u, KEYS)?.to_string();
                    let val = leaf(u)?;
                    m.insert(k, val);
                }
                _ => *v = leaf(u)?,
            }
            Ok(())
        }
        Value::Array(a) => {
            match u.int_in_range(0..=2)? {
                0 => a.push(leaf(u)?),
                1 => a.push(Value::from(pick(u, HOSTILE)?)),
                _ => *v = leaf(u)?,
            }
            Ok(())
        }
        Value::String(s) if chance(u, 1, 2)? => {
            let extra = pick(u, HOSTILE)?;
            if chance(u, 1, 2)? {
                s.push(' ');
                s.push_str(extra);
            } else {
                *s = extra.to_string();
            }
            Ok(())
        }
        _ => {
            *v = leaf(u)?;
            Ok(())
        }
    }
}

/// The document properties: reading the text, or the value, never panics
/// and both agree on whether the document reads; a policy that reads is
/// built by both engines alike; and when both build, they answer a few
/// calls identically.
///
/// # Errors
///
/// A message saying which property failed, with the document.
pub fn check_policy_json(v: &Value) -> std::result::Result<(), crate::Mismatch> {
    check_policy_json_inner(v).map_err(crate::Mismatch)
}

fn check_policy_json_inner(v: &Value) -> std::result::Result<(), String> {
    let text = v.to_string();
    let from_text = Policy::from_json(&text);
    let from_value = toolgate::policy::doc::from_value(v, None);
    if from_text.is_ok() != from_value.is_ok() {
        return Err(format!(
            "the document reads from its value ({}) but not from its text ({}), or the reverse: {text}",
            from_value.is_ok(),
            from_text.is_ok()
        ));
    }
    let Ok(policy) = from_text else {
        return Ok(());
    };
    let pretty = serde_json::to_string_pretty(v).unwrap_or_default();
    if Policy::from_json(&pretty).is_err() {
        return Err(format!("the document reads compact but not pretty: {text}"));
    }
    super::grammar::builds_alike(&policy).map_err(|e| format!("{e}: {text}"))?;
    let registry = toolgate::builtins::registry();
    let (Ok(r), Ok(c)) = (
        Reference::build(&policy, &registry),
        Engine::build_with(&policy, &registry),
    ) else {
        return Ok(());
    };
    let calls = [
        Call::new("bash", r#"{"command": "git status"}"#),
        Call::new("bash", r#"{"command": "rm -rf /"}"#),
        Call::new("read", r#"{"path": ".env"}"#),
        Call::new("edit", r#"{"path": "./src/a"}"#),
        Call::new("mcp__a__b", "{}"),
        Call::new("other", "{}").confined_by("sandbox"),
    ];
    for call in &calls {
        let (a, b) = (Evaluator::would(&r, call), c.would(call));
        if a != b {
            return Err(format!(
                "{} {}: reference {}, compiled {}: {text}",
                call.tool,
                call.args.raw(),
                a.to_json(),
                b.to_json()
            ));
        }
    }
    let offer: Vec<String> = ["bash", "read", "edit", "mcp__a__b", "other"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    if r.filter(&offer) != c.filter(&offer) {
        return Err(format!("the offers differ: {text}"));
    }
    Ok(())
}
