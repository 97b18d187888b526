//! The front door: one call that reads a document or an artifact, works out
//! which of the four dialects it is, and returns the engine that decides it.
//!
//! An embedder that holds bytes (a policy file, Claude Code settings, a
//! Rubric bundle, Authensor policies, or a compiled artifact of any of
//! them) calls [`open`] with [`Format::Detect`], or an [`EngineBuilder`]
//! when it needs its own matcher kinds, compile limits, load options or
//! Claude Code environment. Detection is by shape, as the command line
//! does it: the artifact magic, then a JSON document's members
//! (`permissions` for Claude Code settings, `policies` with `policyId` for a
//! Rubric bundle, a list or `rules`/`sessionRules` for Authensor policies),
//! else a toolgate policy in JSON or, failing that, TOML.

use crate::artifact::{self, LoadError, LoadOptions, ProgramKind};
use crate::authensor::{AuthensorEngine, Policies};
use crate::claude::{self, Environment, Scope, SettingsFile};
use crate::compile::Limits;
use crate::diag::DiagnosticKind;
use crate::diag::{Diagnostic, Diagnostics};
use crate::engine::Engine;
use crate::policy::Policy;
use crate::registry::Registry;
use crate::rubric::{Bundle, RubricEngine};
use std::fmt;

/// What the bytes given to [`open`] are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// Work it out from the bytes.
    Detect,
    /// A toolgate policy document, JSON.
    PolicyJson,
    /// A toolgate policy document, TOML.
    PolicyToml,
    /// A Claude Code `settings.json`.
    ClaudeCode,
    /// A Rubric bundle.
    Rubric,
    /// Authensor policies.
    Authensor,
    /// A compiled artifact, of whichever program kind its header names.
    Artifact,
}

impl Format {
    /// The format `bytes` are in, by shape (see the module's comment).
    ///
    /// ```
    /// use toolgate::open::Format;
    /// assert_eq!(Format::detect(br#"{"permissions": {"deny": ["Bash(rm:*)"]}}"#), Format::ClaudeCode);
    /// assert_eq!(Format::detect(br#"{"default": "deny", "allow": "read"}"#), Format::PolicyJson);
    /// assert_eq!(Format::detect(b"default = \"deny\"\n"), Format::PolicyToml);
    /// ```
    pub fn detect(bytes: &[u8]) -> Format {
        if bytes.starts_with(&artifact::MAGIC) {
            return Format::Artifact;
        }
        let Ok(text) = std::str::from_utf8(bytes) else {
            return Format::PolicyJson;
        };
        match crate::json::parse_document(text) {
            Ok(v) if v.get("permissions").is_some() => Format::ClaudeCode,
            Ok(v) if Bundle::looks_like(&v) => Format::Rubric,
            Ok(v) if Policies::looks_like(&v) => Format::Authensor,
            Ok(_) => Format::PolicyJson,
            // Not JSON: TOML if it reads as TOML, else JSON, whose reader
            // then says where the JSON went wrong.
            Err(_) if toml::from_str::<toml::Table>(text).is_ok() => Format::PolicyToml,
            Err(_) => Format::PolicyJson,
        }
    }
}

/// The engine for what was opened, by dialect.
#[non_exhaustive]
pub enum Opened<'a> {
    /// Rule lists: a toolgate policy, or an artifact of one.
    Rules(Engine<'a>),
    /// Claude Code settings, lowered to rule lists (MCP allow globs
    /// included, as server-bounded globs).
    ClaudeCode(Engine<'a>),
    /// A Rubric bundle, or an artifact of one.
    Rubric(RubricEngine<'a>),
    /// Authensor policies, or an artifact of them.
    Authensor(AuthensorEngine<'a>),
}

impl fmt::Debug for Opened<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Opened::Rules(_) => "Opened::Rules",
            Opened::ClaudeCode(_) => "Opened::ClaudeCode",
            Opened::Rubric(_) => "Opened::Rubric",
            Opened::Authensor(_) => "Opened::Authensor",
        })
    }
}

/// Why [`open`] refused its input.
#[derive(Debug)]
#[non_exhaustive]
pub enum OpenError {
    /// A document that is not UTF-8 text.
    NotText,
    /// A document with problems: every one found, with its place.
    Document(Diagnostics),
    /// An artifact a loader refused.
    Artifact(LoadError),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::NotText => f.write_str(
                "the document is not UTF-8 text: save it as UTF-8, or give a compiled artifact",
            ),
            OpenError::Document(d) => write!(f, "{d}"),
            OpenError::Artifact(e) => write!(f, "the artifact cannot be used: {e}"),
        }
    }
}

impl std::error::Error for OpenError {}

impl From<Diagnostics> for OpenError {
    fn from(d: Diagnostics) -> OpenError {
        OpenError::Document(d)
    }
}

impl From<LoadError> for OpenError {
    fn from(e: LoadError) -> OpenError {
        OpenError::Artifact(e)
    }
}

/// Reads `bytes` in `format` (or the format they are in, for
/// [`Format::Detect`]) with the built-in matcher kinds, the default limits
/// and load options, and returns the engine that decides them.
///
/// # Errors
///
/// An [`OpenError`] saying what was wrong and where.
///
/// ```
/// use toolgate::open::{open, Format, Opened};
/// use toolgate::Call;
/// let policy = br#"{"default": "ask", "matchers": {"bash": {"match": "prefix", "field": "command"}},
///                   "deny": "bash(rm:*)"}"#;
/// let Opened::Rules(engine) = open(policy, Format::Detect)? else { unreachable!() };
/// let v = engine.decide(&Call::new("bash", r#"{"command": "rm -rf /"}"#));
/// assert_eq!(v.reason, "denied by bash(rm:*)");
///
/// // The artifact of the same policy opens to the same engine.
/// let bytes = engine.to_bytes();
/// let Opened::Rules(loaded) = open(&bytes, Format::Detect)? else { unreachable!() };
/// assert_eq!(loaded.decide(&Call::new("bash", r#"{"command": "rm x"}"#)).decision, toolgate::Decision::Deny);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn open(bytes: &[u8], format: Format) -> Result<Opened<'_>, OpenError> {
    EngineBuilder::new().open(bytes, format)
}

/// What [`open`] uses, each settable: the matcher kinds and splitters, the
/// compile limits, the artifact load options, and the environment Claude
/// Code settings are read in.
///
/// ```
/// use toolgate::open::{EngineBuilder, Format, Opened};
/// use toolgate::compile::Limits;
/// let builder = EngineBuilder::new()
///     .registry(toolgate::builtins::registry())
///     .limits(Limits { dfa_bytes: 1 << 20, ..Limits::default() });
/// let opened = builder.open(br#"{"default": "deny", "allow": "read"}"#, Format::PolicyJson)?;
/// assert!(matches!(opened, Opened::Rules(_)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct EngineBuilder {
    registry: Registry,
    limits: Limits,
    load: LoadOptions,
    claude: Environment,
}

impl Default for EngineBuilder {
    fn default() -> EngineBuilder {
        EngineBuilder::new()
    }
}

impl EngineBuilder {
    /// The built-in kinds, default limits and load options, and a Claude
    /// Code environment with no home or project directory.
    pub fn new() -> EngineBuilder {
        EngineBuilder {
            registry: crate::builtins::registry(),
            limits: Limits::default(),
            load: LoadOptions::default(),
            claude: Environment::default(),
        }
    }

    /// The matcher kinds and splitters policies and artifacts resolve in.
    pub fn registry(mut self, registry: Registry) -> EngineBuilder {
        self.registry = registry;
        self
    }

    /// The compile limits.
    pub fn limits(mut self, limits: Limits) -> EngineBuilder {
        self.limits = limits;
        self
    }

    /// How artifacts are loaded: the length cap, verification, a required
    /// signature.
    pub fn load_options(mut self, options: LoadOptions) -> EngineBuilder {
        self.load = options;
        self
    }

    /// Where Claude Code settings are read: the home and project
    /// directories, trust, the mode.
    pub fn claude_environment(mut self, env: Environment) -> EngineBuilder {
        self.claude = env;
        self
    }

    /// As [`open`], with this builder's settings.
    ///
    /// # Errors
    ///
    /// As [`open`].
    pub fn open<'a>(&self, bytes: &'a [u8], format: Format) -> Result<Opened<'a>, OpenError> {
        let format = match format {
            Format::Detect => Format::detect(bytes),
            f => f,
        };
        if format == Format::Artifact {
            return self.load(bytes);
        }
        let text = std::str::from_utf8(bytes).map_err(|_| OpenError::NotText)?;
        Ok(match format {
            Format::ClaudeCode => {
                let file = SettingsFile {
                    scope: Scope::CommandLine,
                    path: String::new(),
                    text: text.to_string(),
                };
                let loaded = claude::load(&[file], &self.claude)?;
                let engine = Engine::build_limited(&loaded.policy, &self.registry, self.limits)?;
                Opened::ClaudeCode(engine)
            }
            Format::Rubric => Opened::Rubric(RubricEngine::build_limited(
                &Bundle::from_json(text)?,
                self.limits,
            )?),
            Format::Authensor => Opened::Authensor(AuthensorEngine::build_limited(
                &Policies::from_json(text)?,
                self.limits,
            )?),
            Format::PolicyToml => Opened::Rules(Engine::build_limited(
                &Policy::from_toml(text)?,
                &self.registry,
                self.limits,
            )?),
            _ => Opened::Rules(Engine::build_limited(
                &Policy::from_json(text)?,
                &self.registry,
                self.limits,
            )?),
        })
    }

    fn load<'a>(&self, bytes: &'a [u8]) -> Result<Opened<'a>, OpenError> {
        let kind = artifact::header(bytes)?.kind;
        Ok(match kind {
            ProgramKind::Conditions => Opened::Rubric(RubricEngine::load(bytes, &self.load)?),
            ProgramKind::FirstMatch => Opened::Authensor(AuthensorEngine::load(bytes, &self.load)?),
            _ => Opened::Rules(Engine::load(bytes, &self.registry, &self.load)?),
        })
    }
}

/// A diagnostic for an input no reader accepted, for callers that report
/// every refusal as diagnostics.
pub fn diagnostic(e: &OpenError) -> Diagnostic {
    match e {
        OpenError::Document(d) => d.first().clone(),
        other => Diagnostic::new(DiagnosticKind::InvalidDocument, other.to_string()),
    }
}
