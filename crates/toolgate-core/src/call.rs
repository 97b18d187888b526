//! Calls, their arguments and their subjects: what the engines decide on.
//!
//! A [`Call`] is a tool name plus JSON arguments. Its arguments are read once,
//! at intake, with duplicate keys refused ([`crate::json`]); a call whose
//! arguments could not be read is still a call, and every engine blocks it
//! (it never reaches the matchers, where an unreadable value would only ever
//! fail to match a deny rule). A [`Subject`] is one thing a call is decided
//! on; a call is one subject unless its tool has a splitter.
//!
//! Depends on `json` only.

use serde_json::Value;
use std::sync::Arc;

/// The arguments of a call or a subject: the JSON text, what a decision reads
/// of it (its top-level string members), and, on demand, its whole value.
///
/// Reading arguments is one strict pass over the text (duplicate keys at any
/// level, lone surrogates and trailing text refused) that builds no value:
/// a decision reads one string member, and most calls never need more.
#[derive(Clone, Debug)]
pub struct Args {
    raw: Arc<str>,
    read: Result<crate::json::Members, String>,
    value: std::sync::OnceLock<Option<Value>>,
}

impl PartialEq for Args {
    fn eq(&self, other: &Args) -> bool {
        self.raw == other.raw
    }
}

impl Args {
    /// Reads JSON arguments. Invalid JSON, duplicate keys and lone surrogates
    /// leave the arguments unreadable ([`Args::error`]) rather than failing,
    /// so that the call can still be decided (and blocked).
    ///
    /// ```
    /// use toolgate_core::Args;
    /// let a = Args::from_json(r#"{"command": "git status"}"#);
    /// assert_eq!(a.str_member("command"), Some("git status"));
    /// assert!(Args::from_json(r#"{"a": 1, "a": 2}"#).error().is_some());
    /// ```
    pub fn from_json(text: &str) -> Args {
        Args {
            raw: Arc::from(text),
            read: crate::json::scan_members(text),
            value: std::sync::OnceLock::new(),
        }
    }

    /// Arguments given as bytes, which may be invalid UTF-8 or invalid JSON.
    pub fn from_bytes(bytes: &[u8]) -> Args {
        match std::str::from_utf8(bytes) {
            Ok(text) => Args::from_json(text),
            Err(e) => Args {
                raw: Arc::from(String::from_utf8_lossy(bytes).as_ref()),
                read: Err(format!("arguments are not UTF-8: {e}")),
                value: std::sync::OnceLock::new(),
            },
        }
    }

    /// Arguments from a value already read (and already checked for duplicate
    /// keys, which a [`Value`] cannot hold).
    pub fn from_value(value: Value) -> Args {
        let members = match &value {
            Value::Object(m) => crate::json::Members {
                object: true,
                members: m
                    .iter()
                    .map(|(k, v)| (k.as_str().into(), v.as_str().map(Into::into)))
                    .collect(),
            },
            _ => crate::json::Members::default(),
        };
        Args {
            raw: Arc::from(value.to_string()),
            read: Ok(members),
            value: std::sync::OnceLock::from(Some(value)),
        }
    }

    /// The arguments as given.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// The value, when the arguments could be read. It is built the first
    /// time it is asked for.
    pub fn value(&self) -> Option<&Value> {
        self.value
            .get_or_init(|| {
                self.read
                    .as_ref()
                    .ok()
                    .and_then(|_| serde_json::from_str(&self.raw).ok())
            })
            .as_ref()
    }

    /// Why the arguments could not be read, when they could not.
    pub fn error(&self) -> Option<&str> {
        self.read.as_ref().err().map(String::as_str)
    }

    /// The string member `field` of an object, the one thing agentpolicy's
    /// matchers read. A missing member, a member that is not a string (`null`
    /// included), arguments that are not an object, and unreadable arguments
    /// all give `None`.
    pub fn str_member(&self, field: &str) -> Option<&str> {
        self.str_member_bytes(field.as_bytes())
    }

    /// [`Args::str_member`] with the member's name as bytes.
    pub fn str_member_bytes(&self, field: &[u8]) -> Option<&str> {
        let read = self.read.as_ref().ok()?;
        read.members
            .iter()
            .find(|(k, _)| k.as_bytes() == field)
            .and_then(|(_, v)| v.as_deref())
    }
}

/// One thing a call is decided on: the call itself, or a part of it a
/// splitter found (a simple command of a shell line, a redirect target).
#[derive(Clone, Debug, PartialEq)]
pub struct Subject {
    /// What the matchers see.
    pub args: Args,
    /// Decide against this tool's rules instead of the called tool's (a
    /// redirect target checked against the file tool); `None` for the called
    /// tool.
    pub tool: Option<String>,
    /// What a prompt shows and a reason quotes; may be empty.
    pub text: String,
    /// A constraint: checked against its tool's deny and ask rules only. It
    /// can refuse or ask, never allow.
    pub constrain: bool,
}

impl Subject {
    /// An ordinary subject of the called tool.
    pub fn new(args: Args, text: impl Into<String>) -> Subject {
        Subject {
            args,
            tool: None,
            text: text.into(),
            constrain: false,
        }
    }
}

/// A tool call to decide.
///
/// ```
/// use toolgate_core::Call;
/// let call = Call::from_json(r#"{"tool": "bash", "args": {"command": "ls"}, "call_id": "c1"}"#)?;
/// assert_eq!(call.tool, "bash");
/// assert_eq!(call.args.str_member("command"), Some("ls"));
/// # Ok::<(), String>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// The tool's name, exactly as the agent sent it.
    pub tool: String,
    /// The arguments.
    pub args: Args,
    /// The run the call belongs to (echoed on the verdict).
    pub run_id: String,
    /// The call's id within its run (echoed on the verdict).
    pub call_id: String,
    /// `Some(name)` when the tool says the call runs confined (`Some("")`
    /// when it names nothing); `None` for a call that is not confined.
    pub confined: Option<String>,
    /// The grant scope the call is decided under; `None` for no scope.
    pub scope: Option<String>,
    /// The directory the call runs in, for matcher kinds that read paths.
    pub cwd: Option<String>,
}

impl Call {
    /// A call of `tool` with JSON arguments `args` (see [`Args::from_json`]).
    pub fn new(tool: impl Into<String>, args: &str) -> Call {
        Call {
            tool: tool.into(),
            args: Args::from_json(args),
            run_id: String::new(),
            call_id: String::new(),
            confined: None,
            scope: None,
            cwd: None,
        }
    }

    /// Marks the call as confined by `name` (empty for an unnamed sandbox).
    pub fn confined_by(mut self, name: impl Into<String>) -> Call {
        self.confined = Some(name.into());
        self
    }

    /// Reads a call object: `{"tool", "args", "run_id"?, "call_id"?,
    /// "confined"?, "scope"?}`. Claude Code's shape, `{"tool_name",
    /// "tool_input", "tool_use_id"?}`, is read too.
    ///
    /// # Errors
    ///
    /// A message naming what is missing or malformed. A caller on the
    /// decision side answers such a line with a deny.
    pub fn from_json(line: &str) -> Result<Call, String> {
        let mut de = serde_json::Deserializer::from_str(line);
        let members = serde::Deserializer::deserialize_any(&mut de, CallVisitor)
            .map_err(|e| e.to_string())?;
        de.end().map_err(|e| e.to_string())?;
        Call::assemble(members.ok_or("a call must be a JSON object with `tool` and `args`")?)
    }

    /// Reads a call object already parsed (see [`Call::from_json`]).
    ///
    /// # Errors
    ///
    /// As [`Call::from_json`].
    pub fn from_value(v: Value) -> Result<Call, String> {
        let Value::Object(m) = v else {
            return Err("a call must be a JSON object with `tool` and `args`".into());
        };
        let members = m
            .into_iter()
            .map(|(k, v)| {
                let member = if k == "args" || k == "tool_input" {
                    Member::Args(Args::from_value(v))
                } else {
                    match v {
                        Value::String(s) => Member::Str(s),
                        Value::Null => Member::Null,
                        _ => Member::Other,
                    }
                };
                (k, member)
            })
            .collect();
        Call::assemble(members)
    }

    /// A call from its members: toolgate's shape, or Claude Code's
    /// (`tool_name`, `tool_input`, `tool_use_id`, whose other members are
    /// ignored).
    fn assemble(mut m: Vec<(String, Member)>) -> Result<Call, String> {
        let claude = m.iter().any(|(k, _)| k == "tool_name");
        let (tool_key, args_key, id_key) = if claude {
            ("tool_name", "tool_input", "tool_use_id")
        } else {
            ("tool", "args", "call_id")
        };
        let mut take = |k: &str| {
            m.iter()
                .position(|(n, _)| n == k)
                .map(|i| m.swap_remove(i).1)
        };
        let tool = match take(tool_key) {
            Some(Member::Str(s)) => s,
            Some(_) => return Err(format!("`{tool_key}` must be a string")),
            None => return Err(format!("the call has no `{tool_key}`")),
        };
        let args = match take(args_key) {
            Some(Member::Args(a)) => a,
            Some(Member::Str(s)) => Args::from_value(Value::String(s)),
            Some(Member::Null) => Args::from_value(Value::Null),
            Some(Member::Other) => return Err(format!("`{args_key}` could not be read")),
            None => Args::from_value(Value::Object(serde_json::Map::new())),
        };
        let mut text = |k: &str| -> Result<Option<String>, String> {
            match take(k) {
                None | Some(Member::Null) => Ok(None),
                Some(Member::Str(s)) => Ok(Some(s)),
                Some(_) => Err(format!("`{k}` must be a string")),
            }
        };
        let call_id = text(id_key)?.unwrap_or_default();
        let run_id = text("run_id")?.unwrap_or_default();
        let confined = text("confined")?;
        let scope = text("scope")?;
        let cwd = text("cwd")?;
        if !claude {
            if let Some((k, _)) = m.first() {
                return Err(format!(
                    "unknown member `{k}` in a call; a call has `tool`, `args`, `run_id`, `call_id`, `confined`, `scope` and `cwd`"
                ));
            }
        }
        Ok(Call {
            tool,
            args,
            run_id,
            call_id,
            confined,
            scope,
            cwd,
        })
    }
}

/// A member of a call object, as the call's reader keeps it.
enum Member {
    Str(String),
    Null,
    Args(Args),
    Other,
}

/// Reads a call object in one strict pass: its arguments are kept as their
/// raw text (then scanned by [`Args::from_json`]), the other members as
/// strings; no value is built. `None` for a text that is not an object.
struct CallVisitor;

impl<'de> serde::de::Visitor<'de> for CallVisitor {
    type Value = Option<Vec<(String, Member)>>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a call object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out: Vec<(String, Member)> = Vec::new();
        while let Some(k) = map.next_key::<String>()? {
            if out.iter().any(|(n, _)| *n == k) {
                return Err(serde::de::Error::custom(format!("duplicate key `{k}`")));
            }
            let member = if k == "args" || k == "tool_input" {
                let raw: &serde_json::value::RawValue = map.next_value()?;
                let args = Args::from_json(raw.get());
                if let Some(e) = args.error() {
                    return Err(serde::de::Error::custom(e));
                }
                Member::Args(args)
            } else {
                map.next_value::<StrOrOther>()?.0
            };
            out.push((k, member));
        }
        Ok(Some(out))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// A call member other than its arguments: a string, `null`, or anything
/// else (checked strictly, then dropped).
struct StrOrOther(Member);

impl<'de> serde::Deserialize<'de> for StrOrOther {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<StrOrOther, D::Error> {
        let raw: &serde_json::value::RawValue = serde::Deserialize::deserialize(d)?;
        let text = raw.get();
        if text.starts_with('"') {
            let s: String = serde_json::from_str(text).map_err(serde::de::Error::custom)?;
            return Ok(StrOrOther(Member::Str(s)));
        }
        if text == "null" {
            return Ok(StrOrOther(Member::Null));
        }
        crate::json::scan_members(text).map_err(serde::de::Error::custom)?;
        Ok(StrOrOther(Member::Other))
    }
}
