//! The canonical layout of a policy document, for `toolgate fmt`.
//!
//! A toolgate policy's members come in a fixed order, every rule list is an
//! array with one rule per line (a list written as one string is split by
//! the grammar, each rule kept exactly as written), and the maps whose
//! order means nothing (`matchers`, `aliases`, `notes`) are sorted by key.
//! Rule lists are never reordered: the first rule that fires is the one a
//! verdict names. Claude Code settings get `permissions` first, with its
//! lists in Claude Code's order; Rubric bundles and Authensor policies keep
//! their members in the order written (their rules' order decides). The
//! layout is a fixed point: formatting a formatted document changes
//! nothing.

use crate::claude::PERMISSIONS;
use crate::policy::doc::{SOURCE, TOP};
use crate::syntax::parse_rules;
use serde_json::{Map, Value};

/// A document's dialect, as far as the layout cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// A toolgate policy document.
    Toolgate,
    /// Claude Code settings.
    ClaudeCode,
    /// A Rubric bundle, Authensor policies or any other JSON: members as
    /// written.
    AsWritten,
}

/// Why a document was not formatted: it is not JSON, or a rule list of it
/// does not parse (the message names it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatError(String);

impl std::fmt::Display for FormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FormatError {}

/// `text` (one JSON document) in the canonical layout, ending in a newline.
///
/// # Errors
///
/// The text is not JSON, or a rule list does not parse (the message names
/// it): a document is never formatted into another policy.
///
/// ```
/// use toolgate::format::{format_document, Dialect};
/// let text = r#"{"deny": "bash(rm:*) Read", "default": "ask"}"#;
/// let out = format_document(text, Dialect::Toolgate).unwrap();
/// assert_eq!(out, "{\n  \"default\": \"ask\",\n  \"deny\": [\n    \"bash(rm:*)\",\n    \"Read\"\n  ]\n}\n");
/// assert_eq!(format_document(&out, Dialect::Toolgate).unwrap(), out);
/// ```
pub fn format_document(text: &str, dialect: Dialect) -> Result<String, FormatError> {
    let value = crate::json::parse_document(text).map_err(|e| FormatError(e.to_string()))?;
    let value = match dialect {
        Dialect::Toolgate => toolgate_policy(value).map_err(FormatError)?,
        Dialect::ClaudeCode => claude_settings(value),
        Dialect::AsWritten => value,
    };
    let mut out = String::new();
    write_value(&value, None, 0, &mut out);
    out.push('\n');
    Ok(out)
}

const LISTS: &[&str] = &["allow", "deny", "ask"];
const SORTED: &[&str] = &["matchers", "aliases", "notes"];

fn toolgate_policy(v: Value) -> Result<Value, String> {
    let Value::Object(top) = v else { return Ok(v) };
    let mut top = ordered(top, TOP);
    for (k, item) in top.iter_mut() {
        if LISTS.contains(&k.as_str()) {
            *item = rule_list(item, k)?;
        } else if SORTED.contains(&k.as_str()) {
            sort_keys(item);
        } else if k == "sources" {
            if let Value::Array(sources) = item {
                for s in sources.iter_mut() {
                    if let Value::Object(m) = std::mem::take(s) {
                        let mut m = ordered(m, SOURCE);
                        for (sk, sv) in m.iter_mut() {
                            if LISTS.contains(&sk.as_str()) {
                                *sv = rule_list(sv, sk)?;
                            } else if sk == "notes" {
                                sort_keys(sv);
                            }
                        }
                        *s = Value::Object(m);
                    }
                }
            }
        }
    }
    Ok(Value::Object(top))
}

/// A rule list as an array of its rules, each as written.
fn rule_list(v: &Value, name: &str) -> Result<Value, String> {
    let Value::String(list) = v else {
        return Ok(v.clone());
    };
    let rules = parse_rules(list).map_err(|e| {
        format!(
            "the `{name}` list does not parse at `{}`: {}; fix it before formatting",
            e.token,
            e.kind.name()
        )
    })?;
    Ok(Value::Array(
        rules
            .iter()
            .map(|r| {
                let text = list
                    .get(r.span.start..r.span.end)
                    .map_or_else(|| r.text(), str::to_string);
                Value::String(text)
            })
            .collect(),
    ))
}

const SETTINGS: &[&str] = &["$schema", "permissions"];

fn claude_settings(v: Value) -> Value {
    let Value::Object(top) = v else { return v };
    let mut top = ordered(top, SETTINGS);
    if let Some(Value::Object(p)) = top.get_mut("permissions") {
        *p = ordered(std::mem::take(p), PERMISSIONS);
    }
    Value::Object(top)
}

/// `m` with the members named in `order` first, in that order, then the
/// rest as written.
fn ordered(mut m: Map<String, Value>, order: &[&str]) -> Map<String, Value> {
    let mut out = Map::new();
    for k in order {
        if let Some(v) = m.shift_remove(*k) {
            out.insert((*k).to_string(), v);
        }
    }
    out.extend(m);
    out
}

fn sort_keys(v: &mut Value) {
    if let Value::Object(m) = v {
        let mut entries: Vec<(String, Value)> = std::mem::take(m).into_iter().collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        m.extend(entries);
    }
}

/// The widest a value is kept on one line, its key included.
const INLINE: usize = 80;

fn write_value(v: &Value, key: Option<&str>, indent: usize, out: &mut String) {
    let width = key.map_or(0, str::len) + 2 * indent + spaced(v).len();
    let scalar = |x: &Value| !x.is_array() && !x.is_object();
    let flat = match v {
        // A rule list reads best one rule per line, unless it is empty;
        // other arrays and objects of scalars fit on a line when short.
        Value::Array(a) if key.is_some_and(|k| LISTS.contains(&k)) => a.is_empty(),
        Value::Array(a) => a.iter().all(scalar) && width <= INLINE,
        Value::Object(m) => m.values().all(scalar) && width <= INLINE,
        _ => true,
    };
    if flat {
        out.push_str(&spaced(v));
        return;
    }
    let pad = "  ".repeat(indent + 1);
    match v {
        Value::Array(a) => {
            out.push_str("[\n");
            for (i, x) in a.iter().enumerate() {
                out.push_str(&pad);
                write_value(x, None, indent + 1, out);
                out.push_str(if i + 1 < a.len() { ",\n" } else { "\n" });
            }
        }
        Value::Object(m) => {
            out.push_str("{\n");
            for (i, (k, x)) in m.iter().enumerate() {
                out.push_str(&pad);
                out.push_str(&Value::String(k.clone()).to_string());
                out.push_str(": ");
                write_value(x, Some(k), indent + 1, out);
                out.push_str(if i + 1 < m.len() { ",\n" } else { "\n" });
            }
        }
        _ => {}
    }
    out.push_str(&"  ".repeat(indent));
    out.push(if v.is_array() { ']' } else { '}' });
}

/// A value on one line, with a space after each `:` and `,` between
/// members.
fn spaced(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let members: Vec<String> = m
                .iter()
                .map(|(k, x)| format!("{}: {}", Value::String(k.clone()), spaced(x)))
                .collect();
            format!("{{{}}}", members.join(", "))
        }
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(spaced).collect();
            format!("[{}]", items.join(", "))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::{format_document, Dialect};

    #[test]
    fn members_are_ordered_maps_sorted_and_lists_split_as_written() {
        let text = r#"{"allow": "Read(./Finance (2024)/**)  bash(git status:*)", "default": "ask",
            "matchers": {"read": {"match": "path", "field": "path"}, "bash": {"match": "glob", "field": "command", "split": "shell"}},
            "sources": [{"deny": "x", "name": "s", "rank": 1}]}"#;
        let out = format_document(text, Dialect::Toolgate).unwrap();
        let want = r#"{
  "default": "ask",
  "matchers": {
    "bash": {"match": "glob", "field": "command", "split": "shell"},
    "read": {"match": "path", "field": "path"}
  },
  "sources": [
    {
      "name": "s",
      "rank": 1,
      "deny": [
        "x"
      ]
    }
  ],
  "allow": [
    "Read(./Finance (2024)/**)",
    "bash(git status:*)"
  ]
}
"#;
        assert_eq!(out, want);
        assert_eq!(format_document(&out, Dialect::Toolgate).unwrap(), out);
        let e = format_document(r#"{"deny": "Bash("}"#, Dialect::Toolgate).unwrap_err();
        assert!(e.to_string().contains("`deny`"), "{e}");
    }
}
