//! What the server decides with: one artifact read into memory, validated
//! whole and opened to the engine of its kind, with the facts `/v1/status`
//! reports about it.

use crate::ServeError;
use std::path::{Path, PathBuf};
use std::time::SystemTime;
use toolgate::artifact::LoadOptions;
use toolgate::authensor::AuthensorEngine;
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
        Ok(Loaded {
            decider,
            revision,
            kind,
            loaded_at,
            rules,
            modes,
        })
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
