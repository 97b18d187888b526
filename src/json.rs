//! Strict JSON intake: duplicate keys are refused at every level.
//!
//! serde_json keeps the last of two members with the same key, so
//! `{"command": "git status", "command": "rm -rf /"}` reads as the second
//! command to one layer and possibly the first to another. toolgate refuses
//! such input at intake instead (see the shell-safety notes, class 19).
//! Invalid UTF-8 and lone surrogates are refused by serde_json itself.
//! Depends on nothing else in the crate.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// Parses `text` as JSON, refusing duplicate keys in any object.
///
/// # Errors
///
/// serde_json's message, with its line and column, or `duplicate key `k``.
///
/// ```
/// use toolgate::json::parse_strict;
/// assert!(parse_strict(r#"{"a": 1, "b": [1, {"c": 2}]}"#).is_ok());
/// let err = parse_strict(r#"{"a": {"c": 1, "c": 2}}"#).unwrap_err();
/// assert!(err.contains("duplicate key `c`"), "{err}");
/// ```
pub fn parse_strict(text: &str) -> Result<Value, String> {
    let mut de = serde_json::Deserializer::from_str(text);
    let Strict(v) = Strict::deserialize(&mut de).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(v)
}

/// Parses bytes as strict JSON; invalid UTF-8 is an error.
///
/// # Errors
///
/// As [`parse_strict`], or a message for bytes that are not UTF-8.
pub fn parse_strict_bytes(bytes: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("input is not UTF-8: {e}"))?;
    parse_strict(text)
}

struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Strict, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format!("duplicate key `{key}`")));
            }
            let Strict(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_serde_json_would_let_through() {
        assert!(parse_strict(r#"{"command":"ls","command":"rm -rf /"}"#).is_err());
        assert!(parse_strict(r#"[{"a":1},{"a":1,"a":1}]"#).is_err());
        assert!(parse_strict(r#""\ud800""#).is_err());
        assert!(parse_strict_bytes(b"\"\xff\"").is_err());
        assert!(parse_strict("{} x").is_err());
        assert_eq!(
            parse_strict(r#"{"a":null}"#).ok(),
            Some(serde_json::json!({"a": null}))
        );
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "[".repeat(100_000);
        assert!(parse_strict(&deep).is_err());
    }
}
