//! Strict JSON intake: duplicate keys are refused at every level.
//!
//! serde_json keeps the last of two members with the same key, so
//! `{"command": "git status", "command": "rm -rf /"}` reads as the second
//! command to one layer and possibly the first to another. toolgate refuses
//! such input at intake instead (see the shell-safety notes, class 19).
//! Invalid UTF-8 and lone surrogates are refused by serde_json itself.
//!
//! The strict scan of a call's arguments ([`scan_members`]) also refuses a
//! NUL byte in any string or key, at any depth: JSON can carry `\u0000`,
//! but a host that hands the string to a C API ends it there, so the engine
//! and the tool would read different values. [`find_nul`] finds one in a
//! value already read, for the readers of requests and documents.
//!
//! Texts of the common shape are read by [`quick`] in one pass without
//! serde; it gives up on anything else, and the serde path here decides.
//! Depends on nothing else in the crate.

pub(crate) mod quick;

use crate::error::JsonError;
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
/// use toolgate_core::json::parse_strict;
/// assert!(parse_strict(r#"{"a": 1, "b": [1, {"c": 2}]}"#).is_ok());
/// let err = parse_strict(r#"{"a": {"c": 1, "c": 2}}"#).unwrap_err();
/// assert!(err.to_string().contains("duplicate key `c`"), "{err}");
/// ```
pub fn parse_strict(text: &str) -> Result<Value, JsonError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let Strict(v) = Strict::deserialize(&mut de).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(v)
}

/// Parses a document (a policy, settings, a bundle, policies) as strict
/// JSON, after one leading UTF-8 byte-order mark if there is one: editors on
/// some systems write it, and TOML documents are read with it too, so a
/// JSON document is not refused for it. Only a document's first character
/// may be the mark; a call or request line is read by [`parse_strict`].
///
/// # Errors
///
/// As [`parse_strict`].
///
/// ```
/// use toolgate_core::json::{parse_document, parse_strict};
/// assert!(parse_document("\u{feff}{\"default\": \"deny\"}").is_ok());
/// assert!(parse_strict("\u{feff}{\"default\": \"deny\"}").is_err());
/// ```
pub fn parse_document(text: &str) -> Result<Value, JsonError> {
    parse_strict(text.strip_prefix('\u{feff}').unwrap_or(text))
}

/// Whether `text` holds more than `limit` JSON values, counted as the
/// commas, brackets and braces outside strings (an upper bound on the
/// values beyond the first), in one pass and without allocating. A reader
/// calls it before parsing, so that a parsed value's memory stays within a
/// small multiple of its text: five million empty arrays fit in 16 MiB and
/// take over 400 MB as values.
///
/// ```
/// use toolgate_core::json::values_over;
/// assert!(!values_over(r#"{"a": [1, 2], "b": "x,y,[z"}"#, 4));
/// assert!(values_over("[[],[],[]]", 4));
/// ```
pub fn values_over(text: &str, limit: usize) -> bool {
    // Each counted byte adds one, so a text no longer than the limit cannot
    // pass it: the common short line is not read twice.
    if text.len() <= limit {
        return false;
    }
    let (mut n, mut in_str, mut escaped) = (0usize, false, false);
    for &b in text.as_bytes() {
        if in_str {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_str = false,
                _ => {}
            }
        } else if matches!(b, b'"') {
            in_str = true;
        } else if matches!(b, b',' | b'[' | b'{') {
            n += 1;
            if n > limit {
                return true;
            }
        }
    }
    false
}

/// Parses bytes as strict JSON; invalid UTF-8 is an error.
///
/// # Errors
///
/// As [`parse_strict`], or a message for bytes that are not UTF-8.
pub fn parse_strict_bytes(bytes: &[u8]) -> Result<Value, JsonError> {
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

/// `v` as compact JSON text, byte for byte what `serde_json::to_vec`
/// writes. Strings with nothing to escape, nearly all of them, are copied
/// whole: writing the text cost as much as scanning it when each byte was
/// looked up on its own.
///
/// ```
/// use toolgate_core::json::to_bytes;
/// let v = serde_json::json!({"command": "echo \"hi\"", "n": [1, null]});
/// assert_eq!(to_bytes(&v), serde_json::to_vec(&v).unwrap());
/// ```
pub fn to_bytes(v: &Value) -> Vec<u8> {
    let mut out = String::new();
    write_value(v, &mut out);
    out.into_bytes()
}

/// Appends `v` to `out` as [`to_bytes`] writes it.
pub fn write_value(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => write_str(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(x, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(k, out);
                out.push(':');
                write_value(x, out);
            }
            out.push('}');
        }
        // Writing a scalar into memory cannot fail; were it to, the text
        // would still hold the value, so a scan never sees less.
        other => {
            use std::fmt::Write as _;
            // Writing into a string cannot fail.
            let _ = write!(out, "{other}");
        }
    }
}

/// Whether JSON escapes `b`: a control byte, `"` or `\`.
fn escaped(b: u8) -> bool {
    (b < 0x20) | (b == b'"') | (b == b'\\')
}

/// Where the next byte JSON escapes is, from `from` on. Blocks of 16 are
/// tested without an early exit inside, which the compiler turns into
/// vector compares; only a block holding one is looked at byte by byte.
fn next_escaped(bytes: &[u8], from: usize) -> Option<usize> {
    let rest = bytes.get(from..)?;
    let mut blocks = rest.chunks_exact(16);
    let mut at = from;
    for block in &mut blocks {
        let mut any = false;
        for &b in block {
            any |= escaped(b);
        }
        if any {
            return block.iter().position(|&b| escaped(b)).map(|k| at + k);
        }
        at += 16;
    }
    blocks
        .remainder()
        .iter()
        .position(|&b| escaped(b))
        .map(|k| at + k)
}

/// Appends `s` as a JSON string, as serde_json writes it: runs copied
/// whole, `"`, `\` and the short escapes by name, other control bytes as
/// `\u00xx`.
pub fn write_str(s: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push('"');
    let mut run = 0;
    // An escaped byte is ASCII, so the runs between them are whole
    // characters and slice the string without a check failing.
    while let Some(i) = next_escaped(bytes, run) {
        out.push_str(s.get(run..i).unwrap_or_default());
        let b = bytes.get(i).copied().unwrap_or(0);
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            _ => {
                out.push_str("\\u00");
                for nibble in [b >> 4, b & 0xf] {
                    out.extend(HEX.get(usize::from(nibble)).map(|&h| char::from(h)));
                }
            }
        }
        run = i + 1;
    }
    out.push_str(s.get(run..).unwrap_or_default());
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text a request's members are scanned as is JSON's own: the
    /// fast copy of plain strings must write what serde_json writes.
    #[test]
    fn to_bytes_writes_what_serde_json_writes() -> Result<(), serde_json::Error> {
        let long_plain = "word ".repeat(100);
        let long_escaped = format!(
            "{}\"{}\\\n\u{1}\u{7f}é𝄞\u{8}\u{c}\r\t\u{1f} {}\"",
            "x".repeat(40),
            "y".repeat(17),
            "z".repeat(33)
        );
        let values = [
            serde_json::json!(null),
            serde_json::json!(true),
            serde_json::json!(-12),
            serde_json::json!(1.5e300),
            serde_json::json!(u64::MAX),
            serde_json::json!(""),
            serde_json::json!(long_plain),
            serde_json::json!(long_escaped),
            serde_json::json!({"a\"b": [1, "c\\d", {"": null}], "e": "\t", "f": []}),
            serde_json::json!([[[]], {}, "\u{0}", "é", "\u{2028}"]),
        ];
        for v in &values {
            assert_eq!(to_bytes(v), serde_json::to_vec(v)?, "{v}");
        }
        Ok(())
    }

    #[test]
    fn a_text_one_byte_past_the_limit_is_still_counted() {
        // The length check only skips texts no longer than the limit.
        assert!(!values_over("[[[", 3));
        assert!(values_over("[[[[", 3));
        assert!(!values_over(r#"["[[[[["]"#, 3));
        assert!(values_over(&"[".repeat(1001), 1000));
    }

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
    /// Every member's name, then its string value, one after another: one
    /// buffer, so that reading a call's arguments allocates twice however
    /// many members they hold (a box per name and per value cost a tenth
    /// of a JSONL line's time).
    text: String,
    /// Per member, in order: where its name ends in `text`, and where its
    /// string value ends (`None` for a value that is not a string). Each
    /// name begins where the member before it ends.
    ends: Vec<(usize, Option<usize>)>,
}

impl Members {
    /// An object's members, none yet.
    pub fn object() -> Members {
        Members {
            object: true,
            ..Members::default()
        }
    }

    /// An object's members, with room for `members` of them and `bytes`
    /// of names and values before a buffer grows.
    pub fn with_capacity(members: usize, bytes: usize) -> Members {
        Members {
            object: true,
            text: String::with_capacity(bytes),
            ends: Vec::with_capacity(members),
        }
    }

    /// No members, an object's, keeping the buffers for the next reading.
    pub(crate) fn clear(&mut self) {
        self.object = true;
        self.text.clear();
        self.ends.clear();
    }

    /// Adds a member: its name, and its value when that is a string.
    pub fn push(&mut self, name: &str, value: Option<&str>) {
        self.text.push_str(name);
        let name_end = self.text.len();
        let value_end = value.map(|v| {
            self.text.push_str(v);
            self.text.len()
        });
        self.ends.push((name_end, value_end));
    }

    /// How many members there are.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The members in order: name, and string value.
    ///
    /// ```
    /// use toolgate_core::json::Members;
    /// let mut m = Members::object();
    /// m.push("command", Some("ls"));
    /// m.push("n", None);
    /// assert_eq!(m.iter().collect::<Vec<_>>(), [("command", Some("ls")), ("n", None)]);
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        let mut start = 0;
        self.ends.iter().map(move |&(name_end, value_end)| {
            let name = self.text.get(start..name_end).unwrap_or_default();
            start = value_end.unwrap_or(name_end);
            (name, value_end.and_then(|e| self.text.get(name_end..e)))
        })
    }
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
/// use toolgate_core::json::scan_members;
/// let m = scan_members(r#"{"command": "ls", "n": 1, "o": {"a": [1, {"b": 2}]}}"#).unwrap();
/// assert!(m.object);
/// let members: Vec<_> = m.iter().collect();
/// assert_eq!(members[0], ("command", Some("ls")));
/// assert_eq!(members[1], ("n", None));
/// assert!(scan_members(r#"{"o": {"a": 1, "a": 2}}"#).is_err());
/// ```
pub fn scan_members(text: &str) -> Result<Members, JsonError> {
    match quick::scan_members(text) {
        Some(m) => Ok(m),
        None => scan_members_by_serde(text),
    }
}

/// [`scan_members`] through serde alone, without the one-pass reader it
/// tries first: what that reader is held to in tests and fuzzing.
///
/// # Errors
///
/// As [`parse_strict`].
pub fn scan_members_by_serde(text: &str) -> Result<Members, JsonError> {
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
        let key = d.deserialize_str(V)?;
        if key.0.contains('\0') {
            return Err(de::Error::custom(nul_refusal(&format!(
                "the key `{}`",
                shown(&key.0)
            ))));
        }
        Ok(key)
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
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        if v.contains('\0') {
            return Err(E::custom(nul_refusal("a string")));
        }
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
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Members, E> {
        CheckVisitor.visit_str(v).map(|()| Members::default())
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
        let mut members = Members::object();
        while let Some(Key(k)) = map.next_key::<Key<'de>>()? {
            let name = k.clone();
            seen.insert::<A::Error>(k)?;
            let MemberValue(v) = map.next_value::<MemberValue>()?;
            if v.as_deref().is_some_and(|v| v.contains('\0')) {
                return Err(de::Error::custom(nul_refusal(&format!(
                    "the member `{}`",
                    shown(&name)
                ))));
            }
            members.push(&name, v.as_deref());
        }
        Ok(members)
    }
}

/// The refusal of a NUL byte found in `place` (`the member `command``, `a
/// string`, …): what every reader of calls, requests and documents says.
pub fn nul_refusal(place: &str) -> String {
    format!(
        "{place} holds a NUL byte (`\\u0000`), where a host may end the string and act on what comes before it: remove it, or send binary data encoded (as base64)"
    )
}

/// How a refusal names the place of a NUL byte [`find_nul`] found: `the
/// key `…`` or `the string at `…``, the path shown by [`shown`].
pub fn nul_place(path: &str, key: bool) -> String {
    let path = shown(path);
    if key {
        format!("the key `{path}`")
    } else {
        format!("the string at `{path}`")
    }
}

/// `s` as a message shows it between backticks: control characters written
/// as JSON escapes (`\u0000`), and at most 200 characters.
///
/// ```
/// use toolgate_core::json::shown;
/// assert_eq!(shown("bash\0"), "bash\\u0000");
/// assert_eq!(shown("ls -la"), "ls -la");
/// ```
pub fn shown(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i == 200 {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// Where a NUL byte of a value is (the first found, walking the value in
/// order, an object's member names before its values): the path of the string holding it, or of the member
/// whose name holds it, written as [`locate`] reads paths (`deny[0]`,
/// `sources[1].notes`), and whether it is in a member's name. `None` for a
/// value with no NUL byte.
///
/// ```
/// use toolgate_core::json::find_nul;
/// let v = serde_json::json!({"a": [1, {"b": "x\0"}]});
/// assert_eq!(find_nul(&v), Some(("a[1].b".to_string(), false)));
/// assert_eq!(find_nul(&serde_json::json!({"k\0": 1})), Some(("k\0".to_string(), true)));
/// assert_eq!(find_nul(&serde_json::json!({"a": "b"})), None);
/// ```
pub fn find_nul(v: &Value) -> Option<(String, bool)> {
    // Nearly every value has none: prove that without building a path for
    // each member, and walk again with paths only to name the place.
    if !has_nul(v) {
        return None;
    }
    fn join(path: &str, key: &str) -> String {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    }
    // An explicit stack: a value read from text is at most serde_json's
    // recursion limit deep, but one built in memory need not be.
    let mut stack: Vec<(String, &Value)> = vec![(String::new(), v)];
    while let Some((path, v)) = stack.pop() {
        match v {
            Value::String(s) if s.contains('\0') => return Some((path, false)),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate().rev() {
                    stack.push((format!("{path}[{i}]"), item));
                }
            }
            Value::Object(m) => {
                if let Some(k) = m.keys().find(|k| k.contains('\0')) {
                    return Some((join(&path, k), true));
                }
                let mut children: Vec<(String, &Value)> =
                    m.iter().map(|(k, v)| (join(&path, k), v)).collect();
                children.reverse();
                stack.extend(children);
            }
            _ => {}
        }
    }
    None
}

/// Whether any string or member name of `v` holds a NUL byte. Strings are
/// checked where they are met; only arrays and objects wait on the stack.
fn has_nul(v: &Value) -> bool {
    // Most names and strings are short, where the vector search's set-up
    // costs more than looking at each byte.
    fn nul(s: &str) -> bool {
        match s.len() {
            0..64 => s.as_bytes().contains(&0),
            _ => memchr::memchr(0, s.as_bytes()).is_some(),
        }
    }
    // A child: its string checked now, an array or object kept for later.
    fn child<'v>(x: &'v Value, stack: &mut Vec<&'v Value>) -> bool {
        match x {
            Value::String(s) => nul(s),
            Value::Array(_) | Value::Object(_) => {
                stack.push(x);
                false
            }
            _ => false,
        }
    }
    let mut stack: Vec<&Value> = Vec::new();
    if child(v, &mut stack) {
        return true;
    }
    while let Some(v) = stack.pop() {
        let found = match v {
            Value::Array(items) => items.iter().any(|x| child(x, &mut stack)),
            Value::Object(m) => m.iter().any(|(k, x)| nul(k) || child(x, &mut stack)),
            _ => false,
        };
        if found {
            return true;
        }
    }
    false
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
            m.iter().collect::<Vec<_>>(),
            [("x", Some("a\tb")), ("y", None), ("z", None)]
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

/// The byte range of the value at `path` in `text`, a JSON text that
/// parses: where a diagnostic about that value points. `path` names a
/// place as the document readers do, members after `.` and indices in
/// brackets (`[1].rules[0].conditions.resource`); the empty path is the
/// whole text. A member whose name holds `.` or `[` (a condition on
/// `context.environment`) is found as well: the longest name that fits the
/// path is taken. When the path leaves the text, the range is that of the
/// deepest value found on the way; `None` only for a text that is not
/// JSON.
///
/// ```
/// use toolgate_core::json::locate;
/// let text = r#"[{"id": "p", "rules": [{"effect": "permit"}]}]"#;
/// let (start, end) = locate(text, "[0].rules[0].effect").unwrap();
/// assert_eq!(&text[start..end], "\"permit\"");
/// ```
pub fn locate(text: &str, path: &str) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let mut pos = skip_ws(b, 0);
    let mut rest = path;
    loop {
        let end = skip_value(b, pos)?;
        let here = Some((pos, end));
        // A member after an index (`[0].rules`) or after a member.
        rest = rest.strip_prefix('.').unwrap_or(rest);
        if rest.is_empty() {
            return here;
        }
        match b.get(pos) {
            Some(b'[') if rest.starts_with('[') => {
                let close = rest.find(']')?;
                let Some(index) = rest.get(1..close).and_then(|i| i.parse::<usize>().ok()) else {
                    return here;
                };
                rest = rest.get(close + 1..)?;
                let mut p = skip_ws(b, pos + 1);
                if b.get(p) == Some(&b']') {
                    return here;
                }
                for _ in 0..index {
                    p = skip_ws(b, skip_value(b, p)?);
                    if b.get(p) != Some(&b',') {
                        return here;
                    }
                    p = skip_ws(b, p + 1);
                }
                pos = p;
            }
            Some(b'{') => {
                let mut p = skip_ws(b, pos + 1);
                // The longest member name the path goes on with, and where
                // its value starts.
                let mut best: Option<(usize, usize)> = None;
                while b.get(p) == Some(&b'"') {
                    let key_end = skip_string(b, p)?;
                    let key: String = serde_json::from_str(text.get(p..key_end)?).ok()?;
                    p = skip_ws(b, key_end);
                    if b.get(p) != Some(&b':') {
                        return None;
                    }
                    p = skip_ws(b, p + 1);
                    let fits = rest
                        .strip_prefix(key.as_str())
                        .is_some_and(|t| t.is_empty() || t.starts_with('.') || t.starts_with('['));
                    if fits && best.is_none_or(|(len, _)| key.len() > len) {
                        best = Some((key.len(), p));
                    }
                    p = skip_ws(b, skip_value(b, p)?);
                    if b.get(p) != Some(&b',') {
                        break;
                    }
                    p = skip_ws(b, p + 1);
                }
                let Some((len, value)) = best else {
                    return here;
                };
                rest = rest.get(len..)?;
                pos = value;
            }
            _ => return here,
        }
    }
}

fn skip_ws(b: &[u8], mut p: usize) -> usize {
    while b.get(p).is_some_and(u8::is_ascii_whitespace) {
        p += 1;
    }
    p
}

/// The end of the string starting at `p` (its opening quote).
fn skip_string(b: &[u8], p: usize) -> Option<usize> {
    let mut p = p + 1;
    loop {
        match b.get(p)? {
            b'\\' => p += 2,
            b'"' => return Some(p + 1),
            _ => p += 1,
        }
    }
}

/// The end of the value starting at `p`.
fn skip_value(b: &[u8], p: usize) -> Option<usize> {
    match b.get(p)? {
        b'"' => skip_string(b, p),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut p = p;
            loop {
                match b.get(p)? {
                    b'"' => {
                        p = skip_string(b, p)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(p + 1);
                        }
                    }
                    _ => {}
                }
                p += 1;
            }
        }
        _ => {
            let mut p = p;
            while b
                .get(p)
                .is_some_and(|c| !matches!(c, b',' | b'}' | b']') && !c.is_ascii_whitespace())
            {
                p += 1;
            }
            Some(p)
        }
    }
}

#[cfg(test)]
mod locate_tests {
    use super::*;

    fn at<'t>(text: &'t str, path: &str) -> Option<&'t str> {
        let (s, e) = locate(text, path)?;
        text.get(s..e)
    }

    #[test]
    fn paths_lead_to_their_values() {
        let t = r#" [ {"id": "a\"]", "rules": []},
            {"id": "b", "rules": [{"effect": "deny"}, {"effect": "x",
              "conditions": {"context.environment": {"in": ["a"]}, "context": {"x": 1}}}]} ] "#;
        assert_eq!(at(t, "").map(str::trim_start), Some(t.trim()));
        assert_eq!(at(t, "[0].id"), Some(r#""a\"]""#));
        assert_eq!(at(t, "[1].rules[1].effect"), Some(r#""x""#));
        assert_eq!(
            at(t, "[1].rules[1].conditions.context.environment.in[0]"),
            Some(r#""a""#)
        );
        assert_eq!(at(t, "[1].rules[1].conditions.context.x"), Some("1"));
        // A single policy: the path starts with a member.
        let one = r#"{"id": "p", "rules": [{"effect": 3}]}"#;
        assert_eq!(at(one, "rules[0].effect"), Some("3"));
    }

    #[test]
    fn a_path_that_leaves_the_text_stops_at_the_deepest_value() {
        let t = r#"[{"rules": [1, 2]}]"#;
        assert_eq!(at(t, "[0].rules[5]"), Some("[1, 2]"));
        assert_eq!(at(t, "[0].missing"), Some(r#"{"rules": [1, 2]}"#));
        assert_eq!(at(t, "[3]"), Some(t));
        assert_eq!(at(t, "[0].rules[0].deeper"), Some("1"));
        assert_eq!(locate("[", "[0]"), None);
    }
}

#[cfg(test)]
mod nul_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_scan_refuses_a_nul_byte_where_parsing_keeps_it() {
        for t in [
            r#"{"a": "x\u0000"}"#,
            r#"{"a": ["\u0000"]}"#,
            r#"{"a\u0000": 1}"#,
            r#"{"a": {"\u0000": 1}}"#,
        ] {
            assert!(parse_strict(t).is_ok(), "{t}");
            let e = scan_members(t).unwrap_err().to_string();
            assert!(e.contains("holds a NUL byte (`\\u0000`)"), "{t}: {e}");
        }
        assert!(scan_members(r#"{"a": "\\u0000"}"#).is_ok());
        let e = scan_members(r#"{"command": "ls\u0000"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("the member `command` holds"), "{e}");
    }

    #[test]
    fn find_nul_names_the_first_place() {
        let v = serde_json::json!({"a": "ok", "b": [{"c": "x"}, {"d\u{0}": 1}], "e": "\u{0}"});
        assert_eq!(find_nul(&v), Some(("b[1].d\u{0}".to_string(), true)));
        assert_eq!(nul_place("b[1].d\u{0}", true), "the key `b[1].d\\u0000`");
        assert_eq!(
            find_nul(&serde_json::json!("\u{0}")),
            Some((String::new(), false))
        );
        assert_eq!(shown(&"x".repeat(300)).chars().count(), 201);
    }

    /// The quick check that runs first must see every place a NUL can
    /// hide, or the named walk is never reached.
    #[test]
    fn find_nul_sees_a_nul_wherever_it_is() {
        let cases = [
            (serde_json::json!(["a", "b\u{0}"]), "[1]", false),
            (serde_json::json!([["a"], ["\u{0}"]]), "[1][0]", false),
            (
                serde_json::json!({"a": {"b": {"c": "\u{0}"}}}),
                "a.b.c",
                false,
            ),
            (
                serde_json::json!({"a": [1, {"k\u{0}": null}]}),
                "a[1].k\u{0}",
                true,
            ),
            (serde_json::json!({"a": 1, "\u{0}": 2}), "\u{0}", true),
        ];
        for (v, path, key) in cases {
            assert_eq!(find_nul(&v), Some((path.to_string(), key)), "{v}");
        }
        // Deeper than any recursion would go, with and without one at the
        // bottom.
        let mut deep = serde_json::json!("x");
        let mut with = serde_json::json!("\u{0}");
        for _ in 0..20_000 {
            deep = Value::Array(vec![deep]);
            with = Value::Array(vec![with]);
        }
        assert_eq!(find_nul(&deep), None);
        assert!(find_nul(&with).is_some());
        // Dropping a value this deep recurses: take it apart by hand.
        for mut v in [deep, with] {
            while let Value::Array(mut a) = v {
                v = a.pop().unwrap_or(Value::Null);
            }
        }
    }
}
