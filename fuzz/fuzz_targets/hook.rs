//! The Claude Code hook's intake and decision: any payload bytes are read
//! as the hook reads them (the JSON value cap, then `Payload::from_json`),
//! and a payload that reads is decided under a developer's settings by the
//! compiled engine and the reference, which must agree. A payload that
//! does not read is an error (the hook answers deny), never a panic.
//!
//! Inputs that are not JSON text are turned into payloads: a tool name and
//! a `tool_input` built from the bytes, so the search reaches the kinds.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use toolgate::claude::{Environment, Loaded, Payload, Scope, SettingsFile};
use toolgate::{Engine, Evaluator};

const SETTINGS: &str = r#"{"permissions": {
  "allow": ["Bash(ls:*)", "Bash(cat:*)", "Bash(git status:*)", "Bash(npm test:*)", "Read(./src/**)",
            "WebFetch(domain:docs.rs)", "mcp__github__*"],
  "deny": ["Bash(rm:*)", "Bash(curl:*)", "Read(./.env)", "Read(~/.ssh/**)", "Edit(./.git/**)",
           "WebFetch(domain:evil.example)", "mcp__github__delete_repo"],
  "ask": ["Bash(git push:*)"]}}"#;

/// The settings loaded for a file system that keeps case (`fold` false)
/// or one that ignores it.
fn loaded(fold: bool) -> &'static Loaded {
    static KEEP: OnceLock<Loaded> = OnceLock::new();
    static FOLD: OnceLock<Loaded> = OnceLock::new();
    let cell = if fold { &FOLD } else { &KEEP };
    cell.get_or_init(|| {
        let env = Environment {
            home: Some("/home/u".into()),
            project_dir: Some("/repo".into()),
            trust_project: false,
            mode: None,
            fold_paths: fold,
        };
        let file = SettingsFile {
            scope: Scope::CommandLine,
            path: "/repo/settings.json".into(),
            text: SETTINGS.into(),
        };
        match toolgate::claude::load(&[file], &env) {
            Ok(l) => l,
            Err(d) => panic!("the target's settings do not load: {d}"),
        }
    })
}

/// A payload built from bytes that are not JSON text.
struct Shaped {
    tool: u8,
    field: u8,
    value: String,
    cwd: Option<String>,
}

impl Shaped {
    fn read(u: &mut Unstructured<'_>) -> arbitrary::Result<Shaped> {
        Ok(Shaped {
            tool: u8::arbitrary(u)?,
            field: u8::arbitrary(u)?,
            cwd: Option::<String>::arbitrary(u)?,
            value: String::arbitrary_take_rest(std::mem::replace(u, Unstructured::new(&[])))?,
        })
    }
}

const TOOLS: &[(&str, &str)] = &[
    ("Bash", "command"),
    ("Read", "file_path"),
    ("Edit", "file_path"),
    ("Write", "file_path"),
    ("WebFetch", "url"),
    ("Grep", "path"),
    ("mcp__github__delete_repo", "name"),
];

fuzz_target!(|data: &[u8]| {
    let text = match std::str::from_utf8(data) {
        Ok(t) if t.trim_start().starts_with('{') => t.to_string(),
        _ => {
            let Ok(s) = Shaped::read(&mut Unstructured::new(data)) else {
                return;
            };
            let (tool, field) = TOOLS[s.tool as usize % TOOLS.len()];
            let field = if s.field % 8 == 0 { "other" } else { field };
            serde_json::json!({
                "hook_event_name": "PreToolUse",
                "tool_name": tool,
                "tool_input": {field: s.value},
                "cwd": s.cwd,
            })
            .to_string()
        }
    };
    if toolgate::json::values_over(&text, 1_000_000) {
        return;
    }
    let Ok(payload) = Payload::from_json(&text) else {
        return;
    };
    // The length's parity picks the file system, so both see every shape.
    let l = loaded(data.len() % 2 == 1);
    let mut call = payload.call;
    if call.cwd.is_none() {
        call.cwd = Some("/repo".into());
    }
    let compiled = match Engine::build(&l.policy) {
        Ok(e) => e.into_session(),
        Err(d) => panic!("the target's settings do not build: {d}"),
    };
    let registry = toolgate::builtins::registry();
    let reference = match toolgate_reference::Reference::build(&l.policy, &registry) {
        Ok(r) => r,
        Err(d) => panic!("the target's settings do not build for the reference: {d}"),
    };
    let a = compiled.would(&call);
    let b = reference.would(&call);
    if a.decision != b.decision || a.reason != b.reason {
        panic!("the engines disagree on {call:?}:\ncompiled  {a:?}\nreference {b:?}");
    }
});
