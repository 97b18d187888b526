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

/// The arguments of a call or a subject: the JSON text and, when it could be
/// read, its value.
#[derive(Clone, Debug)]
pub struct Args {
    raw: Arc<str>,
    value: Result<Value, String>,
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
    /// use toolgate::Args;
    /// let a = Args::from_json(r#"{"command": "git status"}"#);
    /// assert_eq!(a.str_member("command"), Some("git status"));
    /// assert!(Args::from_json(r#"{"a": 1, "a": 2}"#).error().is_some());
    /// ```
    pub fn from_json(text: &str) -> Args {
        Args {
            raw: Arc::from(text),
            value: crate::json::parse_strict(text),
        }
    }

    /// Arguments given as bytes, which may be invalid UTF-8 or invalid JSON.
    pub fn from_bytes(bytes: &[u8]) -> Args {
        match std::str::from_utf8(bytes) {
            Ok(text) => Args::from_json(text),
            Err(e) => Args {
                raw: Arc::from(String::from_utf8_lossy(bytes).as_ref()),
                value: Err(format!("arguments are not UTF-8: {e}")),
            },
        }
    }

    /// Arguments from a value already read (and already checked for duplicate
    /// keys, which a [`Value`] cannot hold).
    pub fn from_value(value: Value) -> Args {
        Args {
            raw: Arc::from(value.to_string()),
            value: Ok(value),
        }
    }

    /// The arguments as given.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// The value, when the arguments could be read.
    pub fn value(&self) -> Option<&Value> {
        self.value.as_ref().ok()
    }

    /// Why the arguments could not be read, when they could not.
    pub fn error(&self) -> Option<&str> {
        self.value.as_ref().err().map(String::as_str)
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
        let obj = self.value.as_ref().ok()?.as_object()?;
        // Calls carry a handful of members: comparing keys is cheaper than
        // hashing the field name.
        let v = if obj.len() <= 8 {
            obj.iter()
                .find(|(k, _)| k.as_bytes() == field)
                .map(|(_, v)| v)?
        } else {
            obj.get(std::str::from_utf8(field).ok()?)?
        };
        v.as_str()
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
/// use toolgate::Call;
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
        let v = crate::json::parse_strict(line)?;
        Call::from_value(v)
    }

    /// Reads a call object already parsed (see [`Call::from_json`]).
    ///
    /// # Errors
    ///
    /// As [`Call::from_json`].
    pub fn from_value(v: Value) -> Result<Call, String> {
        let Value::Object(mut m) = v else {
            return Err("a call must be a JSON object with `tool` and `args`".into());
        };
        let (tool_key, args_key, id_key) = if m.contains_key("tool_name") {
            ("tool_name", "tool_input", "tool_use_id")
        } else {
            ("tool", "args", "call_id")
        };
        let tool = match m.remove(tool_key) {
            Some(Value::String(s)) => s,
            Some(_) => return Err(format!("`{tool_key}` must be a string")),
            None => return Err(format!("the call has no `{tool_key}`")),
        };
        let args = match m.remove(args_key) {
            Some(v) => Args::from_value(v),
            None => Args::from_value(Value::Object(serde_json::Map::new())),
        };
        let text =
            |m: &mut serde_json::Map<String, Value>, k: &str| -> Result<Option<String>, String> {
                match m.remove(k) {
                    None | Some(Value::Null) => Ok(None),
                    Some(Value::String(s)) => Ok(Some(s)),
                    Some(_) => Err(format!("`{k}` must be a string")),
                }
            };
        let call_id = text(&mut m, id_key)?.unwrap_or_default();
        let run_id = text(&mut m, "run_id")?.unwrap_or_default();
        let confined = text(&mut m, "confined")?;
        let scope = text(&mut m, "scope")?;
        let cwd = text(&mut m, "cwd")?;
        if tool_key == "tool" {
            if let Some(k) = m.keys().next() {
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
