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

use crate::error::IntakeError;
use serde_json::Value;
use std::borrow::Cow;
use std::sync::Arc;

/// The arguments of a call or a subject: the JSON text, what a decision reads
/// of it (its top-level string members), and, on demand, its whole value.
///
/// Reading arguments is one strict pass over the text (duplicate keys at any
/// level, lone surrogates and trailing text refused) that builds no value:
/// a decision reads one string member, and most calls never need more.
#[derive(Clone, Debug)]
pub struct Args {
    /// The text: as given, or written from `value` the first time it is
    /// asked for (arguments built from a value are rarely shown, and
    /// writing them costs more than deciding on them).
    raw: std::sync::OnceLock<Arc<str>>,
    read: Result<crate::json::Members, String>,
    /// Boxed: most calls never build it, and a `Call` is moved several
    /// times on its way through intake (without the box, the value's
    /// room doubled the size of every `Args`).
    value: std::sync::OnceLock<Option<Box<Value>>>,
}

impl PartialEq for Args {
    fn eq(&self, other: &Args) -> bool {
        self.raw() == other.raw()
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
        let read = crate::json::scan_members(text).map_err(|e| e.to_string());
        let read = match (
            read,
            not_an_object(text.trim_start().as_bytes().first().copied()),
        ) {
            (Ok(_), Some(kind)) => Err(not_an_object_reason(kind)),
            (r, _) => r,
        };
        Args {
            raw: std::sync::OnceLock::from(Arc::from(text)),
            read,
            value: std::sync::OnceLock::new(),
        }
    }

    /// The members read from the arguments' text, their buffers handed on
    /// for another call's reading; `None` when they could not be read.
    pub(crate) fn into_members(self) -> Option<crate::json::Members> {
        self.read.ok()
    }

    /// Arguments whose text was read already, by either of the call's
    /// readers.
    fn read(raw: &str, members: crate::json::Members) -> Args {
        let read = match not_an_object(raw.trim_start().as_bytes().first().copied()) {
            Some(kind) => Err(not_an_object_reason(kind)),
            None => Ok(members),
        };
        Args {
            raw: std::sync::OnceLock::from(Arc::from(raw)),
            read,
            value: std::sync::OnceLock::new(),
        }
    }

    /// Arguments given as bytes, which may be invalid UTF-8 or invalid JSON.
    pub fn from_bytes(bytes: &[u8]) -> Args {
        match std::str::from_utf8(bytes) {
            Ok(text) => Args::from_json(text),
            Err(e) => Args {
                raw: std::sync::OnceLock::from(Arc::from(String::from_utf8_lossy(bytes).as_ref())),
                read: Err(format!("arguments are not UTF-8: {e}")),
                value: std::sync::OnceLock::new(),
            },
        }
    }

    /// Arguments from a value already read (and already checked for duplicate
    /// keys, which a [`Value`] cannot hold). A NUL byte in any string or key
    /// leaves them unreadable, as [`Args::from_json`] does.
    pub fn from_value(value: Value) -> Args {
        let kind = match &value {
            Value::String(_) => Some("a string"),
            Value::Array(_) => Some("an array"),
            Value::Number(_) => Some("a number"),
            Value::Bool(_) => Some("a boolean"),
            Value::Object(_) | Value::Null => None,
        };
        match crate::json::find_nul(&value) {
            None if kind.is_some() => Args {
                raw: std::sync::OnceLock::from(Arc::from(value.to_string())),
                read: Err(not_an_object_reason(kind.unwrap_or_default())),
                value: std::sync::OnceLock::new(),
            },
            None => Args::canonical(value),
            Some((path, key)) => {
                let place = match (key, path.contains(['.', '['])) {
                    (false, _) if path.is_empty() => "the arguments".to_string(),
                    (false, false) => format!("the member `{}`", crate::json::shown(&path)),
                    _ => crate::json::nul_place(&path, key),
                };
                Args {
                    raw: std::sync::OnceLock::from(Arc::from(value.to_string())),
                    read: Err(crate::json::nul_refusal(&place)),
                    value: std::sync::OnceLock::new(),
                }
            }
        }
    }

    /// Arguments a matcher kind rewrote into its canonical form, which may
    /// use a NUL byte as a separator (the `path` kind's working directory
    /// and written path): read as [`Args::from_value`] reads them, without
    /// the NUL check. Only an evaluator's own rewriting builds these; a
    /// call's arguments come through [`Args::from_json`] or
    /// [`Args::from_value`].
    pub fn canonical(value: Value) -> Args {
        let members = match &value {
            Value::Object(m) => {
                let mut members = crate::json::Members::object();
                for (k, v) in m {
                    members.push(k, v.as_str());
                }
                members
            }
            _ => crate::json::Members::default(),
        };
        Args {
            raw: std::sync::OnceLock::new(),
            read: Ok(members),
            value: std::sync::OnceLock::from(Some(Box::new(value))),
        }
    }

    /// The arguments as given: the text, or for arguments built from a
    /// value, that value written as compact JSON.
    ///
    /// ```
    /// use toolgate_core::Args;
    /// let v = serde_json::json!({"command": "ls", "n": [1, 2]});
    /// assert_eq!(Args::from_value(v).raw(), r#"{"command":"ls","n":[1,2]}"#);
    /// assert_eq!(Args::from_json(r#"{ "command" : "ls" }"#).raw(), r#"{ "command" : "ls" }"#);
    /// ```
    pub fn raw(&self) -> &str {
        // Every constructor sets the text or the value, so this writes the
        // value's text, never an empty one.
        self.raw.get_or_init(|| {
            let value = self.value.get().and_then(Option::as_deref);
            Arc::from(value.map(Value::to_string).unwrap_or_default())
        })
    }

    /// The value, when the arguments could be read. It is built the first
    /// time it is asked for.
    pub fn value(&self) -> Option<&Value> {
        self.value
            .get_or_init(|| {
                self.read
                    .as_ref()
                    .ok()
                    .and_then(|_| serde_json::from_str(self.raw()).ok())
            })
            .as_deref()
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
        read.iter()
            .find(|(k, _)| k.as_bytes() == field)
            .and_then(|(_, v)| v)
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
/// # Ok::<(), toolgate_core::IntakeError>(())
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
        Call::new_with(tool.into(), Args::from_json(args))
    }

    /// A call of `tool` with arguments already read, and nothing else.
    fn new_with(tool: String, args: Args) -> Call {
        Call {
            tool,
            args,
            run_id: String::new(),
            call_id: String::new(),
            confined: None,
            scope: None,
            cwd: None,
        }
    }

    /// Why the call cannot be decided on at all, checked by every engine
    /// before any rule: a tool name holding a control character
    /// ([`tool_name_error`]), or arguments that could not be read
    /// ([`Args::error`]). Such a call is denied.
    pub fn intake_error(&self) -> Option<String> {
        if let Some(e) = tool_name_error(&self.tool) {
            return Some(e);
        }
        self.args
            .error()
            .map(|e| format!("its arguments could not be read: {e}"))
    }

    /// Marks the call as confined by `name` (empty for an unnamed sandbox).
    pub fn confined_by(mut self, name: impl Into<String>) -> Call {
        self.confined = Some(name.into());
        self
    }

    /// Places the call under grant scope `scope` (a run or a conversation):
    /// the grant sets of that scope apply to it beside the unscoped ones.
    pub fn in_scope(mut self, scope: impl Into<String>) -> Call {
        self.scope = Some(scope.into());
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
    pub fn from_json(line: &str) -> Result<Call, IntakeError> {
        Call::from_json_reusing(line, None)
    }

    /// As [`Call::from_json`], reading into the buffers of `spare` (a call
    /// read before and done with) where they fit: its tool name's, and its
    /// arguments' members'. A stream of calls read one after another
    /// allocates less for each.
    ///
    /// ```
    /// use toolgate_core::call::Call;
    /// let first = Call::from_json(r#"{"tool": "bash", "args": {"command": "ls"}}"#)?;
    /// let line = r#"{"tool": "read", "args": {"path": "/etc/hosts"}}"#;
    /// assert_eq!(Call::from_json_reusing(line, Some(first))?, Call::from_json(line)?);
    /// # Ok::<(), toolgate_core::IntakeError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Call::from_json`].
    pub fn from_json_reusing(line: &str, spare: Option<Call>) -> Result<Call, IntakeError> {
        let (tool, members) =
            spare.map_or((String::new(), None), |c| (c.tool, c.args.into_members()));
        let mut slots: [Slot<'_>; QUICK_MEMBERS] = Default::default();
        match quick_members(line, &mut slots, members) {
            Some(n) => Call::assemble_into(slots.get_mut(..n).unwrap_or_default(), tool)
                .map_err(IntakeError::from),
            None => Call::from_json_by_serde(line),
        }
    }

    /// [`Call::from_json`] through serde alone, without the one-pass reader
    /// it tries first: what that reader is held to in tests and fuzzing.
    ///
    /// # Errors
    ///
    /// As [`Call::from_json`].
    pub fn from_json_by_serde(line: &str) -> Result<Call, IntakeError> {
        let mut de = serde_json::Deserializer::from_str(line);
        let members = serde::Deserializer::deserialize_any(&mut de, CallVisitor)
            .map_err(|e| e.to_string())?;
        de.end().map_err(|e| e.to_string())?;
        let members = members.ok_or("a call must be a JSON object with `tool` and `args`")?;
        let mut slots: Vec<Slot<'_>> = members.into_iter().map(Some).collect();
        Call::assemble(&mut slots).map_err(IntakeError::from)
    }

    /// Reads a call object already parsed (see [`Call::from_json`]).
    ///
    /// # Errors
    ///
    /// As [`Call::from_json`].
    pub fn from_value(v: Value) -> Result<Call, IntakeError> {
        let Value::Object(m) = v else {
            return Err("a call must be a JSON object with `tool` and `args`".into());
        };
        let mut members = m
            .into_iter()
            .map(|(k, v)| {
                let member = if k == "args" || k == "tool_input" {
                    Member::Args(Args::from_value(v))
                } else {
                    match v {
                        Value::String(s) => Member::Str(Cow::Owned(s)),
                        Value::Null => Member::Null,
                        _ => Member::Other,
                    }
                };
                Some((Cow::Owned(k), member))
            })
            .collect::<Vec<Slot<'_>>>();
        Call::assemble(&mut members).map_err(IntakeError::from)
    }

    /// A call from its members: toolgate's shape, or Claude Code's
    /// (`tool_name`, `tool_input`, `tool_use_id`, whose other members are
    /// ignored).
    fn assemble(m: &mut [Slot<'_>]) -> Result<Call, String> {
        Call::assemble_into(m, String::new())
    }

    /// As [`Call::assemble`], the tool's name written into `tool` when it
    /// has room.
    fn assemble_into(m: &mut [Slot<'_>], tool: String) -> Result<Call, String> {
        let claude = m.iter().flatten().any(|(k, _)| k == "tool_name");
        let (tool_key, args_key, id_key) = if claude {
            ("tool_name", "tool_input", "tool_use_id")
        } else {
            ("tool", "args", "call_id")
        };
        one_spelling(
            m.iter().flatten().map(|(k, _)| k.as_ref()),
            tool_key,
            args_key,
        )?;
        let tool = match take(m, tool_key) {
            Some(Member::Str(s)) => match tool_name_error(&s) {
                Some(e) => return Err(e),
                None if tool.capacity() >= s.len() => {
                    let mut tool = tool;
                    tool.clear();
                    tool.push_str(&s);
                    tool
                }
                None => s.into_owned(),
            },
            Some(_) => return Err(format!("`{tool_key}` must be a string")),
            None => return Err(format!("the call has no `{tool_key}`")),
        };
        let args = match take(m, args_key) {
            Some(Member::Args(a)) => a,
            Some(Member::Str(s)) => Args::from_value(Value::String(s.into_owned())),
            Some(Member::Null) => Args::from_value(Value::Null),
            Some(Member::Other) => return Err(format!("`{args_key}` could not be read")),
            None => Args::from_value(Value::Object(serde_json::Map::new())),
        };
        let mut call = Call::new_with(tool, args);
        // Most calls hold their tool and arguments alone.
        if m.iter().all(Option::is_none) {
            return Ok(call);
        }
        let mut text = |k: &str| -> Result<Option<String>, String> {
            match take(m, k) {
                None | Some(Member::Null) => Ok(None),
                Some(Member::Str(s)) => Ok(Some(s.into_owned())),
                Some(_) => Err(format!("`{k}` must be a string")),
            }
        };
        call.call_id = text(id_key)?.unwrap_or_default();
        call.run_id = text("run_id")?.unwrap_or_default();
        call.confined = text("confined")?;
        call.scope = text("scope")?;
        call.cwd = text("cwd")?;
        if !claude {
            if let Some((k, _)) = m.iter().flatten().next() {
                return Err(format!(
                    "unknown member `{k}` in a call; a call has `tool`, `args`, `run_id`, `call_id`, `confined`, `scope` and `cwd`"
                ));
            }
        }
        Ok(call)
    }
}

/// How hosts spell the member naming a call's tool, folded by [`folded`]:
/// toolgate's `tool`, Claude Code's `tool_name`, and `name`, `function`,
/// `function_call`, `tool_call` (a function-calling host's call object,
/// which carries the tool and its arguments together), `toolName`.
const TOOL_SPELLINGS: &[&str] = &[
    "tool",
    "toolname",
    "name",
    "function",
    "functioncall",
    "toolcall",
];

/// How hosts spell the member holding a call's arguments, folded by
/// [`folded`]: toolgate's `args`, Claude Code's `tool_input`, and
/// `arguments`, `input`, `parameters`, `params`, `tool_args`,
/// `tool_arguments`, `toolInput`.
const ARGS_SPELLINGS: &[&str] = &[
    "args",
    "toolinput",
    "arguments",
    "input",
    "parameters",
    "params",
    "toolargs",
    "toolarguments",
];

/// A member name as spellings are compared: ASCII letters lowercased, `_`
/// and `-` dropped (`tool_name`, `toolName` and `Tool-Name` are one
/// spelling).
///
/// ```
/// use toolgate_core::call::folded;
/// assert_eq!(folded("toolName"), folded("tool_name"));
/// ```
pub fn folded(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, '_' | '-'))
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Whether two member names are one spelling, as [`folded`] compares them,
/// without building either folded name: intake asks this of every member
/// of every call.
///
/// ```
/// use toolgate_core::call::same_spelling;
/// assert!(same_spelling("Tool-Name", "toolname"));
/// assert!(!same_spelling("tool_names", "toolname"));
/// // Only ASCII folds, as in `folded`.
/// assert!(same_spelling("Dé_jà", "déjà"));
/// assert!(!same_spelling("DÉJÀ", "déjà"));
/// ```
pub fn same_spelling(a: &str, b: &str) -> bool {
    // Byte by byte: only ASCII is dropped or lowercased, so two UTF-8
    // names fold alike exactly when their bytes do.
    let kept = |c: &u8| !matches!(c, b'_' | b'-');
    a.bytes()
        .filter(kept)
        .map(|c| c.to_ascii_lowercase())
        .eq(b.bytes().filter(kept).map(|c| c.to_ascii_lowercase()))
}

/// Refuses a call object that names its tool, or its arguments, other than
/// by its own shape's member (`tool_key`, `args_key`): `{"tool": "bash",
/// "args": {…}, "tool_name": "read", "tool_input": {…}}` would be decided
/// on one pair and may be run on the other. Any other spelling of the tool
/// (`tool`, `tool_name`, `name`, …) or of the arguments (`args`,
/// `tool_input`, `arguments`, …) beside the shape's own is refused,
/// whether or not the shape's own is there; other members are left to the
/// caller.
///
/// # Errors
///
/// A message naming the spellings found and the one to keep.
///
/// ```
/// use toolgate_core::call::one_spelling;
/// assert!(one_spelling(["tool_name", "tool_input", "session_id"].into_iter(), "tool_name", "tool_input").is_ok());
/// assert!(one_spelling(["tool_name", "tool_input", "tool"].into_iter(), "tool_name", "tool_input").is_err());
/// assert!(one_spelling(["tool_name", "arguments"].into_iter(), "tool_name", "tool_input").is_err());
/// ```
pub fn one_spelling<'k>(
    keys: impl Iterator<Item = &'k str> + Clone,
    tool_key: &str,
    args_key: &str,
) -> Result<(), String> {
    // Each name folded once into a buffer and looked up: every call's
    // intake asks this of each member. Only a name that is a second
    // spelling goes on to the walk below, which words the refusal.
    let second = keys.clone().any(|k| {
        let mut buf = [0u8; SPELLING_MAX];
        let Some(f) = fold_into(k, &mut buf) else {
            return false;
        };
        let is = |spellings: &[&str]| spellings.iter().any(|s| s.as_bytes() == f);
        (k != tool_key && is(TOOL_SPELLINGS)) || (k != args_key && is(ARGS_SPELLINGS))
    });
    if !second {
        return Ok(());
    }
    for (what, own, spellings) in [
        ("tool", tool_key, TOOL_SPELLINGS),
        ("arguments", args_key, ARGS_SPELLINGS),
    ] {
        let found: Vec<&str> = keys
            .clone()
            .filter(|k| *k == own || spellings.iter().any(|s| same_spelling(k, s)))
            .collect();
        let Some(other) = found.iter().find(|k| **k != own) else {
            continue;
        };
        let named = found
            .iter()
            .map(|k| format!("`{}`", crate::json::shown(k)))
            .collect::<Vec<_>>()
            .join(" and ");
        return Err(if found.len() > 1 {
            format!(
                "the call names its {what} twice, as {named}: a host may act on the one toolgate did not decide on; send one call in one shape, its {what} as `{own}` only"
            )
        } else {
            format!(
                "the call names its {what} as `{}`, which a call with `{tool_key}` and `{args_key}` does not read: a host may act on it undecided; send the {what} as `{own}`",
                crate::json::shown(other)
            )
        });
    }
    Ok(())
}

/// Room for the longest folded spelling of [`TOOL_SPELLINGS`] and
/// [`ARGS_SPELLINGS`]; a name that folds longer is none of them.
const SPELLING_MAX: usize = 24;

/// `name` folded as [`folded`] folds it, into `buf`; `None` when it folds
/// longer than `buf`, so it is no spelling.
fn fold_into<'b>(name: &str, buf: &'b mut [u8; SPELLING_MAX]) -> Option<&'b [u8]> {
    let mut n = 0;
    for &b in name.as_bytes() {
        if b == b'_' || b == b'-' {
            continue;
        }
        *buf.get_mut(n)? = b.to_ascii_lowercase();
        n += 1;
    }
    buf.get(..n)
}

/// Why `name` cannot be a tool's name: it holds a control character (a
/// NUL, which a host's C API ends the name at, or another one a host may
/// strip, or print as something else: U+0001 to U+001F, U+007F to
/// U+009F), or a blank or an invisible character (`Bash ` is not `Bash` to
/// a rule, and may be to the host that trims it). `None` for a name every
/// host reads as written.
///
/// ```
/// use toolgate_core::call::tool_name_error;
/// assert!(tool_name_error("bash").is_none());
/// assert!(tool_name_error("mcp__github__list_issues").is_none());
/// assert!(tool_name_error("bash\0").is_some());
/// assert!(tool_name_error("bash\n").is_some());
/// assert!(tool_name_error("Bash ").is_some());
/// assert!(tool_name_error("Ba\u{200b}sh").is_some());
/// ```
pub fn tool_name_error(name: &str) -> Option<String> {
    // Nearly every tool name is printable ASCII, which holds none of them.
    if name.bytes().all(|b| b.is_ascii_graphic()) {
        return None;
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Some(format!(
            "the tool name `{}` holds the control character U+{:04X}, which a host may cut the name at or read differently: name the tool without it",
            crate::json::shown(name),
            u32::from(c)
        ));
    }
    let c = name
        .chars()
        .find(|&c| c.is_whitespace() || crate::quote::is_invisible_or_bidi(c))?;
    Some(format!(
        "the tool name `{}` holds the blank or invisible character U+{:04X}, which a host may trim or ignore: name the tool without it",
        crate::json::shown(name),
        u32::from(c)
    ))
}

/// A member of a call, until [`Call::assemble`] takes it.
type Slot<'k> = Option<(Cow<'k, str>, Member<'k>)>;

/// The most members a call line read in one pass may hold (its slots live
/// on the stack); a line with more is read through serde.
const QUICK_MEMBERS: usize = 8;

/// Takes the member `k` out of a call's members.
fn take<'k>(m: &mut [Slot<'k>], k: &str) -> Option<Member<'k>> {
    let slot = m
        .iter_mut()
        .find(|s| s.as_ref().is_some_and(|(n, _)| n == k))?;
    slot.take().map(|(_, member)| member)
}

/// The members of a call line read in one pass ([`crate::json::quick`]),
/// exactly as [`CallVisitor`] reads them; `None` when the line leaves the
/// quick reader's subset, and the serde path reads it instead.
pub(crate) fn quick_members<'l>(
    line: &'l str,
    out: &mut [Slot<'l>; QUICK_MEMBERS],
    mut spare: Option<crate::json::Members>,
) -> Option<usize> {
    let mut r = crate::json::quick::Reader::new(line);
    r.eat(b'{')?;
    let mut n = 0;
    r.object(|r, k| {
        if out.iter().flatten().any(|(name, _)| name == k) {
            return None;
        }
        let member = if k == "args" || k == "tool_input" {
            let (raw, members) = r.members_in(2, spare.take())?;
            Member::Args(Args::read(raw, members))
        } else if r.at_string()? {
            Member::Str(r.string()?)
        } else if r.null()? {
            Member::Null
        } else {
            r.skip(2)?;
            Member::Other
        };
        *out.get_mut(n)? = Some((Cow::Borrowed(k), member));
        n += 1;
        Some(())
    })?;
    r.at_end().then_some(n)
}

/// A member of a call object, as the call's reader keeps it: a string
/// borrowed from the line where it needed no unescaping.
pub(crate) enum Member<'l> {
    Str(Cow<'l, str>),
    Null,
    Args(Args),
    Other,
}

/// Reads a call object in one strict pass: its arguments are kept as their
/// raw text (then scanned by [`Args::from_json`]), the other members as
/// strings; no value is built. `None` for a text that is not an object.
struct CallVisitor;

impl<'de> serde::de::Visitor<'de> for CallVisitor {
    type Value = Option<Vec<(Cow<'de, str>, Member<'de>)>>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a call object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out: Vec<(Cow<'de, str>, Member<'de>)> = Vec::new();
        while let Some(k) = map.next_key::<String>()? {
            if out.iter().any(|(n, _)| *n == k) {
                return Err(serde::de::Error::custom(format!("duplicate key `{k}`")));
            }
            let member = if k == "args" || k == "tool_input" {
                let raw: &serde_json::value::RawValue = map.next_value()?;
                let read = crate::json::scan_members_by_serde(raw.get())
                    .map_err(serde::de::Error::custom)?;
                Member::Args(Args::read(raw.get(), read))
            } else {
                map.next_value::<StrOrOther>()?.0
            };
            out.push((Cow::Owned(k), member));
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
struct StrOrOther(Member<'static>);

impl<'de> serde::Deserialize<'de> for StrOrOther {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<StrOrOther, D::Error> {
        let raw: &serde_json::value::RawValue = serde::Deserialize::deserialize(d)?;
        let text = raw.get();
        if text.starts_with('"') {
            let s: String = serde_json::from_str(text).map_err(serde::de::Error::custom)?;
            return Ok(StrOrOther(Member::Str(Cow::Owned(s))));
        }
        if text == "null" {
            return Ok(StrOrOther(Member::Null));
        }
        crate::json::scan_members_by_serde(text).map_err(serde::de::Error::custom)?;
        Ok(StrOrOther(Member::Other))
    }
}

/// What arguments that start with `first` are, when they are present but
/// not a JSON object (`null` is no arguments, and reads as none).
fn not_an_object(first: Option<u8>) -> Option<&'static str> {
    match first? {
        b'"' => Some("a string"),
        b'[' => Some("an array"),
        b't' | b'f' => Some("a boolean"),
        b'-' | b'0'..=b'9' => Some("a number"),
        _ => None,
    }
}

/// Why arguments that are not an object cannot be decided: no specifier
/// could ever match them, so a deny with one would never fire while a bare
/// allow would, and a host that decodes them (OpenAI's `arguments` is a
/// string of JSON) runs what no rule saw.
fn not_an_object_reason(kind: &str) -> String {
    format!(
        "the arguments are {kind}, not a JSON object: send them as an object (decode a string of JSON first)"
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// The quick lookup `one_spelling` starts with sees every spelling:
    /// each is folded already and fits the buffer, and every way of
    /// writing one is refused beside the shape's own member.
    #[test]
    fn every_second_spelling_is_refused() {
        for s in TOOL_SPELLINGS.iter().chain(ARGS_SPELLINGS) {
            assert_eq!(folded(s), *s);
            assert!(s.len() <= SPELLING_MAX, "{s}");
        }
        for (own, spellings) in [("tool", TOOL_SPELLINGS), ("args", ARGS_SPELLINGS)] {
            for s in spellings {
                for written in [s.to_string(), s.to_uppercase(), format!("_{s}-")] {
                    let keys = ["tool", "args", written.as_str()];
                    let refused = one_spelling(keys.into_iter(), "tool", "args").is_err();
                    assert_eq!(refused, written != own, "{written}");
                }
            }
        }
        let long = "x".repeat(SPELLING_MAX + 1);
        assert!(one_spelling(["tool", "args", &long].into_iter(), "tool", "args").is_ok());
        assert!(one_spelling(
            ["tool_name", "tool_input", "cwd"].into_iter(),
            "tool_name",
            "tool_input"
        )
        .is_ok());
    }

    #[test]
    fn a_nul_byte_anywhere_in_the_arguments_leaves_them_unreadable() {
        // The issue's path: a C API opens `/etc/shadow`.
        let texts = [
            r#"{"path": "/etc/shadow\u0000.txt"}"#,
            r#"{"edits": [{"path": "a\u0000"}]}"#,
            r#"{"path\u0000": "x"}"#,
            r#"{"o": {"k\u0000": 1}}"#,
            r#""\u0000""#,
        ];
        for t in texts {
            let a = Args::from_json(t);
            let e = a.error().unwrap_or_else(|| panic!("{t} was read"));
            assert!(e.contains("holds a NUL byte"), "{t}: {e}");
            let v: Value = serde_json::from_str(t).unwrap();
            let e = Args::from_value(v).error().map(str::to_string);
            assert!(
                e.is_some_and(|e| e.contains("NUL")),
                "{t} as a value was read"
            );
        }
        let e = Args::from_json(r#"{"path": "/etc/shadow\u0000.txt"}"#);
        assert_eq!(e.str_member("path"), None);
        assert!(e.error().unwrap().starts_with("the member `path` holds"));
        // An escaped backslash before `u0000` is no NUL; other controls are
        // values like any other.
        assert!(Args::from_json(r#"{"c": "a\\u0000b\t\u001b"}"#)
            .error()
            .is_none());
        // A kind's canonical form may carry one.
        assert!(Args::canonical(serde_json::json!({"p": "/r\u{0}/x"}))
            .error()
            .is_none());
    }

    #[test]
    fn a_tool_name_with_a_control_character_is_refused_at_intake() {
        for line in [
            r#"{"tool": "bash\u0000", "args": {"command": "ls"}}"#,
            r#"{"tool": "bash\n", "args": {}}"#,
            r#"{"tool_name": "Bash\u007f", "tool_input": {}}"#,
        ] {
            let e = Call::from_json(line).unwrap_err().to_string();
            assert!(e.contains("holds the control character"), "{line}: {e}");
            let v: Value = serde_json::from_str(line).unwrap();
            assert!(Call::from_value(v).is_err(), "{line}");
        }
        // A call built in code is refused by every engine's intake check.
        let c = Call::new("bash\0", "{}");
        assert_eq!(
            c.intake_error().as_deref(),
            Some("the tool name `bash\\u0000` holds the control character U+0000, which a host may cut the name at or read differently: name the tool without it")
        );
        assert!(Call::new("bash", "{}").intake_error().is_none());
        // A blank or an invisible character, which a host may trim or
        // ignore, is refused as well.
        for name in [
            "b\u{200b}ash",
            "bash ",
            " bash",
            "ba\u{a0}sh",
            "ba\u{202e}sh",
        ] {
            let e = Call::new(name, "{}").intake_error().unwrap_or_default();
            assert!(e.contains("blank or invisible character"), "{name:?}: {e}");
        }
        assert!(Call::new("mcp__github__list_issues", "{}")
            .intake_error()
            .is_none());
        let c = Call::new("read", r#"{"path": "a\u0000"}"#);
        assert!(c
            .intake_error()
            .unwrap()
            .starts_with("its arguments could not be read: "));
    }

    #[test]
    fn an_unknown_member_is_named_in_the_order_the_line_gives_it() {
        for line in [
            r#"{"tool":"bash","args":{},"zeta":1,"alpha":2}"#,
            r#"{"zeta":1,"tool":"bash","alpha":2,"args":{}}"#,
        ] {
            for read in [Call::from_json, Call::from_json_by_serde] {
                let e = read(line).map(|_| ()).unwrap_err().to_string();
                assert!(e.contains("unknown member `zeta`"), "{line}: {e}");
            }
        }
    }

    #[test]
    fn a_call_naming_its_tool_or_arguments_twice_is_refused() {
        // The issue's call: decided on `tool_name`, run on `tool`.
        let line = r#"{"tool":"bash","args":{"command":"rm -rf /"},"tool_name":"read","tool_input":{"path":"/tmp/x"}}"#;
        let e = Call::from_json(line).unwrap_err().to_string();
        assert!(
            e.starts_with("the call names its tool twice, as `tool` and `tool_name`"),
            "{e}"
        );
        assert!(Call::from_value(serde_json::from_str(line).unwrap()).is_err());
        for line in [
            r#"{"tool_name": "read", "tool_input": {}, "tool": "bash"}"#,
            r#"{"tool_name": "read", "tool_input": {}, "name": "bash"}"#,
            r#"{"tool_name": "read", "tool_input": {}, "Tool_Name": "bash"}"#,
            r#"{"tool_name": "read", "tool_input": {}, "function": {"name": "bash"}}"#,
            r#"{"tool_name": "read", "tool_input": {}, "args": {}}"#,
            r#"{"tool_name": "read", "tool_input": {}, "arguments": "{}"}"#,
            r#"{"tool_name": "read", "tool_input": {}, "input": {}}"#,
            r#"{"tool_name": "read", "tool_input": {}, "parameters": {}}"#,
            r#"{"tool_name": "read", "arguments": {}}"#,
            r#"{"tool": "read", "args": {}, "tool_input": {}}"#,
            r#"{"tool": "read", "args": {}, "toolName": "bash"}"#,
            r#"{"name": "read", "arguments": {}}"#,
        ] {
            let e = Call::from_json(line).unwrap_err().to_string();
            assert!(e.starts_with("the call names its "), "{line}: {e}");
        }
        // Claude Code's other members are ignored, as before.
        let c = Call::from_json(
            r#"{"session_id": "s", "transcript_path": "/t", "cwd": "/repo", "hook_event_name": "PreToolUse",
                "permission_mode": "default", "tool_name": "Read", "tool_input": {"file_path": "a"}, "tool_use_id": "u"}"#,
        )
        .unwrap();
        assert_eq!((c.tool.as_str(), c.call_id.as_str()), ("Read", "u"));
    }
}
