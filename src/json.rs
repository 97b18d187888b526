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

/// What a strict pass over a JSON text keeps of it: whether it is an object,
/// and each top-level member with its string value (`None` for a member
/// whose value is not a string).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Members {
    /// Whether the text is a JSON object.
    pub object: bool,
    /// The object's members, in order: name and string value.
    pub members: Vec<(Box<str>, Option<Box<str>>)>,
}

/// Checks `text` as [`parse_strict`] does (duplicate keys at any level, lone
/// surrogates, trailing text) in one pass that builds no value, keeping only
/// the top-level members and their string values: what deciding a call
/// reads of its arguments.
///
/// # Errors
///
/// As [`parse_strict`].
///
/// ```
/// use toolgate::json::scan_members;
/// let m = scan_members(r#"{"command": "ls", "n": 1, "o": {"a": [1, {"b": 2}]}}"#).unwrap();
/// assert!(m.object);
/// assert_eq!(m.members[0].1.as_deref(), Some("ls"));
/// assert_eq!(m.members[1].1, None);
/// assert!(scan_members(r#"{"o": {"a": 1, "a": 2}}"#).is_err());
/// ```
pub fn scan_members(text: &str) -> Result<Members, String> {
    let mut de = serde_json::Deserializer::from_str(text);
    let m = de.deserialize_any(TopVisitor).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(m)
}

/// A map key, borrowed from the text when it has no escapes.
struct Key<'de>(std::borrow::Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key<'de>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// Refuses a key seen before in the same object. Objects are small; past a
/// few dozen keys a set keeps the check linear.
struct Seen<'de> {
    keys: Vec<std::borrow::Cow<'de, str>>,
    set: Option<std::collections::HashSet<std::borrow::Cow<'de, str>>>,
}

impl<'de> Seen<'de> {
    fn new() -> Seen<'de> {
        Seen {
            keys: Vec::new(),
            set: None,
        }
    }

    fn insert<E: de::Error>(&mut self, k: std::borrow::Cow<'de, str>) -> Result<(), E> {
        let fresh = match &mut self.set {
            Some(set) => set.insert(k.clone()),
            None => {
                let fresh = !self.keys.contains(&k);
                self.keys.push(k.clone());
                if self.keys.len() > 32 {
                    self.set = Some(self.keys.drain(..).collect());
                }
                fresh
            }
        };
        if fresh {
            Ok(())
        } else {
            Err(de::Error::custom(format!("duplicate key `{k}`")))
        }
    }
}

/// Validates a value strictly without building it.
struct Check;

impl<'de> Deserialize<'de> for Check {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Check, D::Error> {
        d.deserialize_any(CheckVisitor).map(|()| Check)
    }
}

struct CheckVisitor;

impl<'de> Visitor<'de> for CheckVisitor {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<Check>()?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = Seen::new();
        while let Some(Key(k)) = map.next_key::<Key<'de>>()? {
            seen.insert::<A::Error>(k)?;
            map.next_value::<Check>()?;
        }
        Ok(())
    }
}

/// A member's value: its string, or `None` once checked.
struct MemberValue(Option<Box<str>>);

impl<'de> Deserialize<'de> for MemberValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<MemberValue, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MemberValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_str<E>(self, v: &str) -> Result<MemberValue, E> {
                Ok(MemberValue(Some(v.into())))
            }
            fn visit_bool<E>(self, _: bool) -> Result<MemberValue, E> {
                Ok(MemberValue(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<MemberValue, E> {
                Ok(MemberValue(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<MemberValue, E> {
                Ok(MemberValue(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<MemberValue, E> {
                Ok(MemberValue(None))
            }
            fn visit_unit<E>(self) -> Result<MemberValue, E> {
                Ok(MemberValue(None))
            }
            fn visit_none<E>(self) -> Result<MemberValue, E> {
                Ok(MemberValue(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<MemberValue, A::Error> {
                CheckVisitor.visit_seq(seq).map(|()| MemberValue(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<MemberValue, A::Error> {
                CheckVisitor.visit_map(map).map(|()| MemberValue(None))
            }
        }
        d.deserialize_any(V)
    }
}

struct TopVisitor;

impl<'de> Visitor<'de> for TopVisitor {
    type Value = Members;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Members, E> {
        Ok(Members::default())
    }
    fn visit_i64<E>(self, _: i64) -> Result<Members, E> {
        Ok(Members::default())
    }
    fn visit_u64<E>(self, _: u64) -> Result<Members, E> {
        Ok(Members::default())
    }
    fn visit_f64<E>(self, _: f64) -> Result<Members, E> {
        Ok(Members::default())
    }
    fn visit_str<E>(self, _: &str) -> Result<Members, E> {
        Ok(Members::default())
    }
    fn visit_unit<E>(self) -> Result<Members, E> {
        Ok(Members::default())
    }
    fn visit_none<E>(self) -> Result<Members, E> {
        Ok(Members::default())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Members, A::Error> {
        CheckVisitor.visit_seq(seq).map(|()| Members::default())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
        let mut seen = Seen::new();
        let mut members = Vec::new();
        while let Some(Key(k)) = map.next_key::<Key<'de>>()? {
            let name: Box<str> = k.as_ref().into();
            seen.insert::<A::Error>(k)?;
            let MemberValue(v) = map.next_value::<MemberValue>()?;
            members.push((name, v));
        }
        Ok(Members {
            object: true,
            members,
        })
    }
}

#[cfg(test)]
mod scan_tests {
    use super::*;

    #[test]
    fn scanning_refuses_what_parsing_refuses_and_keeps_the_strings() {
        let texts = [
            r#"{"command":"ls","command":"rm -rf /"}"#,
            r#"[{"a":1},{"a":1,"a":1}]"#,
            r#"{"a": "\ud800"}"#,
            "{} x",
            r#"{"a": [1, 2, {"b": {"c": null, "c": 1}}]}"#,
            r#"{"a\u0062": 1, "ab": 2}"#,
            r#"{"x": "a\tb", "y": 1.5, "z": null, "w": [], "v": {}}"#,
            "",
            "\"s\"",
        ];
        for t in texts {
            assert_eq!(scan_members(t).is_ok(), parse_strict(t).is_ok(), "{t}");
        }
        let m = scan_members(r#"{"x": "a\tb", "y": 1.5, "z": null}"#).unwrap();
        assert_eq!(
            m.members,
            vec![
                ("x".into(), Some("a\tb".into())),
                ("y".into(), None),
                ("z".into(), None)
            ]
        );
        assert!(!scan_members("[1]").unwrap().object);
        let many: String = format!(
            "{{{}}}",
            (0..100)
                .map(|i| format!("\"k{i}\": {i}"))
                .collect::<Vec<_>>()
                .join(",")
        );
        assert!(scan_members(&many).is_ok());
        let dup = many.replace("\"k99\"", "\"k3\"");
        assert!(scan_members(&dup).is_err());
    }
}
