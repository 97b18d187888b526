//! Claude Code cases: settings files read by the front end, then calls.
//!
//! ```json
//! {"cases": [{
//!   "name": "…", "about": "…", "cites": "…",
//!   "settings": [{"scope": "project", "path"?: "…", "settings": {"permissions": {…}}}],
//!   "home"?: "/home/u", "project_dir"?: "/repo", "trust_project"?: false, "mode"?: "default",
//!   "calls": [{"tool", "args", "cwd"?, "want": {…}}], "batch"?: […], "offer"?: {…},
//!   "error"?: "invalid_settings", "warnings"?: ["a substring of a warning", …]
//! }]}
//! ```
//!
//! A settings entry without a `path` sits where its scope's file would:
//! `<home>/.claude/settings.json` for `user` (the default scope),
//! `<project_dir>/.claude/settings.json` for `project`, and so on. A call
//! without a `cwd` runs in the project directory. Calls pass through
//! [`toolgate::claude::prepare_call`], as the hook's and `decide`'s do, and are
//! decided on every engine: the reference, the compiled tables and the
//! tables loaded from their artifact.

use super::cases::{compare, make_call, read_call, record, CallCase, EngineKind, Offer};
use super::Report;
use serde::Deserialize;
use serde_json::Value;
use toolgate::call::Call;
use toolgate::claude::{self, Environment, Scope, SettingsFile};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ClaudeFile {
    cases: Vec<ClaudeCase>,
}

impl ClaudeFile {
    /// Marks every call's expectation loose (a test file's).
    pub(super) fn loosen(&mut self) {
        for c in &mut self.cases {
            for call in c.calls.iter_mut().flatten() {
                call.want.loose = true;
            }
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClaudeCase {
    name: String,
    about: Option<String>,
    /// Where the documented behaviour comes from.
    cites: Option<String>,
    settings: Vec<SettingsEntry>,
    home: Option<String>,
    project_dir: Option<String>,
    trust_project: Option<bool>,
    mode: Option<String>,
    /// Whether the file system ignores case and normalisation.
    fold_paths: Option<bool>,
    calls: Option<Vec<CallCase>>,
    batch: Option<Vec<CallCase>>,
    offer: Option<Offer>,
    error: Option<String>,
    warnings: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingsEntry {
    scope: Option<String>,
    path: Option<String>,
    settings: Value,
}

fn scope_of(name: &str) -> Option<Scope> {
    Some(match name {
        "managed" => Scope::Managed,
        "command-line" => Scope::CommandLine,
        "local" => Scope::Local,
        "project" => Scope::Project,
        "user" => Scope::User,
        _ => return None,
    })
}

pub(super) fn run(file: &str, f: &ClaudeFile, engines: &[EngineKind]) -> Report {
    let mut r = Report::default();
    for case in &f.cases {
        let _ = (&case.about, &case.cites);
        let failures = run_case(case, engines);
        record(&mut r, file, &case.name, "claude-code", failures);
    }
    r
}

fn run_case(case: &ClaudeCase, engines: &[EngineKind]) -> Vec<String> {
    let mut out = Vec::new();
    let home = case.home.clone().unwrap_or_else(|| "/home/u".into());
    let project = case.project_dir.clone().unwrap_or_else(|| "/repo".into());
    let mut files = Vec::new();
    for s in &case.settings {
        let Some(scope) = scope_of(s.scope.as_deref().unwrap_or("user")) else {
            out.push(format!("[harness] unknown scope {:?}", s.scope));
            return out;
        };
        let path = s.path.clone().unwrap_or_else(|| match scope {
            Scope::User => format!("{home}/.claude/settings.json"),
            Scope::Project => format!("{project}/.claude/settings.json"),
            Scope::Local => format!("{project}/.claude/settings.local.json"),
            Scope::Managed => "/etc/claude-code/managed-settings.json".into(),
            Scope::CommandLine => "/opt/cli/settings.json".into(),
        });
        let text = match &s.settings {
            Value::String(t) => t.clone(),
            v => v.to_string(),
        };
        files.push(SettingsFile { scope, path, text });
    }
    let env = Environment {
        home: Some(home.clone()),
        project_dir: Some(project.clone()),
        trust_project: case.trust_project.unwrap_or(false),
        mode: case.mode.clone(),
        fold_paths: case.fold_paths.unwrap_or(false),
    };
    let loaded = match (claude::load(&files, &env), &case.error) {
        (Ok(l), None) => l,
        (Err(d), Some(want)) => {
            if d.first().kind != want.as_str() {
                out.push(format!(
                    "load failed with {}, want {want}: {d}",
                    d.first().kind
                ));
            }
            return out;
        }
        (Ok(_), Some(want)) => {
            out.push(format!("loaded, want error {want}"));
            return out;
        }
        (Err(d), None) => {
            out.push(format!("did not load: {d}"));
            return out;
        }
    };
    for w in case.warnings.iter().flatten() {
        if !loaded.warnings.iter().any(|got| got.contains(w.as_str())) {
            out.push(format!(
                "no warning contains {w:?}; warnings: {:?}",
                loaded.warnings
            ));
        }
    }
    let mut registry = toolgate::builtins::registry();
    for k in toolgate::kinds::path_kinds(Some(&home)) {
        registry.add_kind(k);
    }
    let call = |c: &CallCase, n: usize| -> Call {
        let mut call = make_call(c, n);
        if call.cwd.is_none() {
            call.cwd = Some(project.clone());
        }
        claude::prepare_call(call)
    };
    for &e in engines {
        let inner = match e.build(&loaded.policy, &registry) {
            Ok(i) => i,
            Err(d) => {
                out.push(format!("[{}] did not build: {d}", e.name()));
                continue;
            }
        };
        let engine = inner;
        for (turn, c) in case.calls.iter().flatten().enumerate() {
            let got = match read_call(c, 1) {
                Ok(mut read) => {
                    if read.cwd.is_none() {
                        read.cwd = Some(project.clone());
                    }
                    engine.decide_batch(std::slice::from_ref(&claude::prepare_call(read)))
                }
                Err(v) => vec![v],
            };
            match got.first() {
                Some(v) => out.extend(
                    compare(v, &c.want)
                        .into_iter()
                        .map(|m| format!("[{}] call {} ({}): {m}", e.name(), turn + 1, c.tool)),
                ),
                None => out.push(format!("[{}] call {}: no verdict", e.name(), turn + 1)),
            }
        }
        if let Some(batch) = &case.batch {
            if batch.iter().any(|c| c.call.is_some()) {
                out.push("[harness] a batch call cannot be given as `call`".into());
            }
            let calls: Vec<Call> = batch
                .iter()
                .enumerate()
                .map(|(i, c)| call(c, i + 1))
                .collect();
            let got = engine.decide_batch(&calls);
            for (i, (v, c)) in got.iter().zip(batch).enumerate() {
                out.extend(
                    compare(v, &c.want)
                        .into_iter()
                        .map(|m| format!("[{}] batch call {} ({}): {m}", e.name(), i + 1, c.tool)),
                );
            }
        }
        if let Some(o) = &case.offer {
            let got = engine.filter(&o.tools);
            if got != o.want {
                out.push(format!("[{}] offer {got:?}, want {:?}", e.name(), o.want));
            }
        }
    }
    out
}
