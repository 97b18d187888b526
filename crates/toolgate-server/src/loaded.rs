//! What the server decides with: one artifact read into memory, validated
//! whole and opened to the engine of its kind, with the facts `/v1/status`
//! reports about it.

use crate::ServeError;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;
use toolgate::artifact::LoadOptions;
use toolgate::authensor::AuthensorEngine;
use toolgate::guards::Guards;
use toolgate::open::{EngineBuilder, Format, Opened};
use toolgate::rubric::RubricEngine;
use toolgate::Engine;

/// Where the decisions come from: a compiled artifact, or a policy document
/// compiled when it is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A compiled artifact (`--bundle`), of any program kind.
    Bundle(PathBuf),
    /// A policy document of any dialect (`--policy`), compiled at load.
    Policy(PathBuf),
}

impl Source {
    /// The file it is read from.
    pub fn path(&self) -> &Path {
        match self {
            Source::Bundle(p) | Source::Policy(p) => p,
        }
    }
}

/// The engine of a loaded artifact, by kind.
pub(crate) enum Decider {
    /// Rule lists: a toolgate policy or an artifact of rule lists (Claude
    /// Code settings compiled to an artifact included).
    Rules(Engine<'static>),
    /// Claude Code settings read as a document: calls are completed as
    /// `decide --policy settings.json` completes them (the project
    /// directory as the working directory, Claude Code's tool defaults).
    ClaudeCode(Engine<'static>, Option<String>),
    /// A Rubric bundle.
    Rubric(RubricEngine<'static>),
    /// Authensor policies.
    Authensor(AuthensorEngine<'static>),
}

/// An artifact the server decides with; never changed once built (a reload
/// builds a new one and swaps it in).
pub struct Loaded {
    pub(crate) decider: Decider,
    /// The artifact's revision id (hex), named in every answer it decides.
    pub revision: String,
    /// What kind of artifact it is: `rules`, `claude-code`, `rubric` or
    /// `authensor`.
    pub kind: &'static str,
    /// When it was loaded, in seconds since the Unix epoch.
    pub loaded_at: u64,
    /// How many rules it holds, where the kind counts them.
    pub rules: Option<u64>,
    /// Claude Code settings read as a document: what it takes to lower them
    /// again under the permission mode a hook payload names.
    pub(crate) modes: Option<Modes>,
    /// The content guards over every call's arguments (`spec/guards.md`
    /// §5.1): `--guards`, else the policy document's `guards` member.
    pub(crate) guards: Option<Arc<Guards>>,
}

/// Claude Code settings served from their document, and the engines built
/// from them under each permission mode a hook payload named. Claude Code
/// approves calls on its own differently in each mode, and the command hook
/// given `--settings` lowers the settings under the payload's mode; so
/// does the service. Only Claude Code's own modes are built (a mode it
/// does not have reads as the default), so the cache holds at most four.
pub(crate) struct Modes {
    bytes: Vec<u8>,
    path: PathBuf,
    options: LoadOptions,
    built: std::sync::Mutex<Vec<(&'static str, std::sync::Arc<Engine<'static>>)>>,
}

impl Modes {
    /// The engine for `mode`, built the first time it is named.
    ///
    /// # Errors
    ///
    /// The settings do not lower under `mode`: the reason, for a deny.
    pub(crate) fn engine(
        &self,
        mode: toolgate::claude::Mode,
    ) -> Result<std::sync::Arc<Engine<'static>>, String> {
        let mode = mode.name();
        let mut built = self
            .built
            .lock()
            .map_err(|_| "a builder of the mode's engine panicked".to_string())?;
        if let Some((_, e)) = built.iter().find(|(m, _)| *m == mode) {
            return Ok(e.clone());
        }
        let mut env = claude_environment(&self.path);
        env.mode = Some(mode.to_string());
        let builder = EngineBuilder::new()
            .registry(registry())
            .load_options(self.options)
            .claude_environment(env);
        let engine = match builder.open(&self.bytes, Format::Detect) {
            Ok(Opened::ClaudeCode(e)) => std::sync::Arc::new(e.into_owned()),
            Ok(other) => return Err(format!("{other:?} is not Claude Code settings")),
            Err(e) => {
                return Err(format!(
                    "the Claude Code settings cannot be used in permission mode `{mode}`: {e}"
                ))
            }
        };
        built.push((mode, engine.clone()));
        Ok(engine)
    }
}

impl Loaded {
    /// Builds the artifact from bytes already read: `source` says whether
    /// they are an artifact or a document to compile.
    ///
    /// # Errors
    ///
    /// [`ServeError::Artifact`] naming the file and what is wrong with it.
    pub fn from_bytes(
        source: &Source,
        bytes: &[u8],
        options: &LoadOptions,
    ) -> Result<Loaded, ServeError> {
        let path = source.path().display().to_string();
        let refused = |why: String| ServeError::Artifact {
            path: path.clone(),
            why,
        };
        let builder = EngineBuilder::new()
            .registry(registry())
            .load_options(*options)
            .claude_environment(claude_environment(source.path()));
        let format = match source {
            Source::Bundle(_) => Format::Artifact,
            Source::Policy(_) => Format::Detect,
        };
        let opened = builder
            .open(bytes, format)
            .map_err(|e| refused(e.to_string()))?;
        let is_artifact = bytes.starts_with(&toolgate::artifact::MAGIC);
        let (decider, kind, compiled): (Decider, &'static str, Option<Vec<u8>>) = match opened {
            Opened::Rules(e) => {
                let b = (!is_artifact).then(|| e.to_bytes());
                (Decider::Rules(e.into_owned()), "rules", b)
            }
            Opened::ClaudeCode(e) => {
                let b = Some(e.to_bytes());
                let project = project_of(source.path());
                (
                    Decider::ClaudeCode(e.into_owned(), project),
                    "claude-code",
                    b,
                )
            }
            Opened::Rubric(e) => {
                let b = if is_artifact { None } else { e.to_bytes() };
                (Decider::Rubric(e.into_owned()), "rubric", b)
            }
            Opened::Authensor(e) => {
                let b = (!is_artifact).then(|| e.to_bytes());
                (Decider::Authensor(e.into_owned()), "authensor", b)
            }
            other => return Err(refused(format!("{other:?} is not served"))),
        };
        // A document's revision is its compiled artifact's, so the same
        // policy served as a document or compiled names one revision.
        let revision = match compiled.as_deref().unwrap_or(bytes) {
            b if b.starts_with(&toolgate::artifact::MAGIC) => toolgate::artifact::header(b)
                .map(|h| h.revision_hex())
                .map_err(|e| refused(e.to_string()))?,
            b => format!("document-{:016x}", fnv(b)),
        };
        let rules = match &decider {
            Decider::Rules(e) | Decider::ClaudeCode(e, _) => Some(u64::from(e.program().n_rules())),
            Decider::Authensor(e) => Some(e.policies().iter().map(|p| p.rules as u64).sum()),
            Decider::Rubric(_) => None,
        };
        let loaded_at = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let modes = matches!(decider, Decider::ClaudeCode(..)).then(|| Modes {
            bytes: bytes.to_vec(),
            path: source.path().to_path_buf(),
            options: *options,
            built: std::sync::Mutex::new(Vec::new()),
        });
        let guards = match source {
            // A compiled artifact holds no guards, whichever flag named it.
            Source::Policy(_) if kind == "rules" && !is_artifact => {
                document_guards(bytes).map_err(refused)?
            }
            _ => None,
        };
        let mut loaded = Loaded {
            decider,
            revision,
            kind,
            loaded_at,
            rules,
            modes,
            guards: None,
        };
        if let Some((g, text)) = guards {
            loaded.guard(g, &text);
        }
        Ok(loaded)
    }

    /// Puts `guards` over every call's arguments, in place of a document's
    /// own; `text` is what they were read from. The revision names the
    /// guards too, so a reload that changes only the guards is swapped in
    /// and an answer names what decided it.
    fn guard(&mut self, guards: Guards, text: &[u8]) {
        self.guards = Some(Arc::new(guards));
        let base = self
            .revision
            .split_once("+guards-")
            .map_or(self.revision.as_str(), |(r, _)| r);
        self.revision = format!("{base}+guards-{:016x}", fnv(text));
    }

    /// Reads `source` from disk into memory (never mapped: a writer that
    /// truncates the file cannot change tables in use) and builds it.
    ///
    /// # Errors
    ///
    /// [`ServeError::Read`] when the file cannot be read within the cap,
    /// [`ServeError::Artifact`] when it does not validate.
    pub fn read(source: &Source, options: &LoadOptions) -> Result<Loaded, ServeError> {
        let bytes = read_bounded(source.path(), options.limit())?;
        Loaded::from_bytes(source, &bytes, options)
    }

    /// As [`Loaded::read`], with the guard document at `guards` (or a
    /// policy's `guards` member) over every call in place of the source's
    /// own. The guards are read again at every load, so a reload picks up
    /// their changes.
    ///
    /// # Errors
    ///
    /// As [`Loaded::read`]; [`ServeError::Read`] when the guards cannot be
    /// read, [`ServeError::Artifact`] naming the guard file when they do not
    /// build or the artifact's kind takes no guards.
    pub fn read_guarded(
        source: &Source,
        guards: Option<&Path>,
        options: &LoadOptions,
    ) -> Result<Loaded, ServeError> {
        let mut loaded = Loaded::read(source, options)?;
        let Some(path) = guards else {
            return Ok(loaded);
        };
        let refused = |why: String| ServeError::Artifact {
            path: path.display().to_string(),
            why,
        };
        if !matches!(loaded.decider, Decider::Rules(_) | Decider::ClaudeCode(..)) {
            return Err(refused(format!(
                "guards apply to rule lists and Claude Code settings, and `{}` is a {} artifact: drop `--guards`, or serve a rule list beside it (a Rubric bundle guards its requests through its own DLP fields)",
                source.path().display(),
                loaded.kind
            )));
        }
        let text = read_bounded(path, GUARDS_LIMIT)?;
        let guards = std::str::from_utf8(&text)
            .map_err(|_| "the guard document is not UTF-8".to_string())
            .and_then(|t| toolgate::json::parse_document(t).map_err(|e| e.to_string()))
            .and_then(|v| {
                toolgate::guards::Document::from_value(v)
                    .and_then(|d| Guards::build(&d))
                    .map_err(|e| e.to_string())
            })
            .map_err(|e| refused(format!("the guards cannot be used: {e}")))?;
        loaded.guard(guards, &text);
        Ok(loaded)
    }
}

/// Reads a file whole, refusing it past `max` bytes (read at most one byte
/// past the cap, since the file may grow while it is read).
pub(crate) fn read_bounded(path: &Path, max: usize) -> Result<Vec<u8>, ServeError> {
    toolgate::artifact::read_file(path, max).map_err(|e| match e {
        toolgate::artifact::ReadError::Io { path, source } => ServeError::Read {
            path,
            why: source.to_string(),
        },
        toolgate::artifact::ReadError::TooLarge { path, error } => ServeError::Artifact {
            path,
            why: error.to_string(),
        },
    })
}

/// The largest guard document `--guards` reads.
const GUARDS_LIMIT: usize = 16 << 20;

/// The guards of a policy document's `guards` member, and the member's
/// text for the revision.
fn document_guards(bytes: &[u8]) -> Result<Option<(Guards, Vec<u8>)>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "the policy is not UTF-8".to_string())?;
    let policy = match Format::detect(bytes) {
        Format::PolicyToml => toolgate::Policy::from_toml(text),
        _ => toolgate::Policy::from_json(text),
    }
    .map_err(|e| e.to_string())?;
    let Some(member) = policy.guards else {
        return Ok(None);
    };
    let key = member.to_string().into_bytes();
    toolgate::guards::Document::from_value(member)
        .and_then(|d| Guards::build(&d))
        .map(|g| Some((g, key)))
        .map_err(|e| format!("the policy's `guards` member cannot be used: {e}"))
}

/// FNV-1a, for the revision of a document that compiles to no artifact.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The user's home directory, when `$HOME` is absolute.
pub(crate) fn home() -> Option<String> {
    std::env::var("HOME").ok().filter(|h| h.starts_with('/'))
}

/// The built-in kinds, and the path kinds with `~` read as the user's home,
/// as the command line resolves artifacts and policies.
pub fn registry() -> toolgate::Registry {
    toolgate::builtins::registry_at_home(home().as_deref())
}

/// The directory holding the `.claude` directory a settings file is in,
/// else the current directory.
fn project_of(path: &Path) -> Option<String> {
    let absolute = std::path::absolute(path).ok()?;
    let dot_claude = absolute.parent()?;
    if dot_claude.file_name().is_some_and(|n| n == ".claude") {
        if let Some(p) = dot_claude.parent() {
            return Some(p.display().to_string());
        }
    }
    std::env::current_dir()
        .ok()
        .map(|d| d.display().to_string())
}

fn claude_environment(path: &Path) -> toolgate::claude::Environment {
    toolgate::claude::Environment {
        home: home(),
        project_dir: project_of(path),
        trust_project: false,
        mode: None,
        fold_paths: false,
    }
}
