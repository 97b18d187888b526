//! `toolgate serve`: the decision service gateways call.
//!
//! One artifact (of any kind: rule lists, Claude Code settings, a Rubric
//! bundle, Authensor policies) is read into memory, validated whole and
//! served over HTTP/1.1 on loopback TCP or a unix socket: `/v1/decide`,
//! OPA's data API shape, Claude Code's `http` hook, health, status and
//! Prometheus metrics. The artifact is reloaded when its file changes (or on
//! `SIGHUP`, or `POST /v1/reload` on the admin listener): the new one is
//! validated fully before it is swapped in, requests in flight finish on the
//! engine they started with, and a file that does not validate leaves the
//! last good artifact serving.
//!
//! Fail closed: every error on the decision side answers deny, bodies are
//! bounded in size and in time, a panic while deciding is caught and
//! answered with a deny, and a listener off loopback needs a token.

/// Writes a line to standard error for the operator, ignoring a failed
/// write: `eprintln!` panics when standard error is closed, and a server
/// whose log reader went away must go on deciding.
macro_rules! note {
    ($($t:tt)*) => {
        $crate::note_line(format_args!($($t)*))
    };
}

fn note_line(args: fmt::Arguments<'_>) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{args}");
}

mod decide;
pub mod ext_authz;
#[doc(hidden)]
pub mod fuzzing;
pub mod hook;
mod http;
mod loaded;
mod log;
mod metrics;
mod reload;
mod state;

pub mod client;

pub use loaded::{registry, Loaded, Source};

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use toolgate::artifact::LoadOptions;

/// The address `toolgate serve` listens on when none is given.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8181";
/// The largest request body accepted by default: 1 MiB.
pub const DEFAULT_MAX_BODY: usize = 1 << 20;

/// Where a listener listens: a TCP address, or a unix socket's path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Addr {
    /// `HOST:PORT`.
    Tcp(SocketAddr),
    /// `unix:PATH`.
    Unix(PathBuf),
}

impl Addr {
    /// Reads `HOST:PORT` (an IP address, or `localhost` for 127.0.0.1) or
    /// `unix:PATH`.
    ///
    /// # Errors
    ///
    /// [`ServeError::Addr`] naming what was given.
    ///
    /// ```
    /// use toolgate_server::Addr;
    /// assert!(Addr::parse("127.0.0.1:8181").unwrap().is_loopback());
    /// assert!(Addr::parse("unix:/run/toolgate.sock").unwrap().is_loopback());
    /// assert!(!Addr::parse("0.0.0.0:8181").unwrap().is_loopback());
    /// ```
    pub fn parse(s: &str) -> Result<Addr, ServeError> {
        if let Some(path) = s.strip_prefix("unix:") {
            if path.is_empty() {
                return Err(ServeError::Addr {
                    given: s.to_string(),
                    why: "a unix socket needs a path, as `unix:/run/toolgate.sock`".into(),
                });
            }
            return Ok(Addr::Unix(PathBuf::from(path)));
        }
        let spelled = match s.strip_prefix("localhost:") {
            Some(port) => format!("127.0.0.1:{port}"),
            None => s.to_string(),
        };
        spelled
            .parse::<SocketAddr>()
            .map(Addr::Tcp)
            .map_err(|e| ServeError::Addr {
                given: s.to_string(),
                why: format!("{e}: write `HOST:PORT` with an IP address, or `unix:PATH`"),
            })
    }

    /// Whether only this machine can reach it: a loopback address or a unix
    /// socket.
    pub fn is_loopback(&self) -> bool {
        match self {
            Addr::Tcp(a) => a.ip().is_loopback(),
            Addr::Unix(_) => true,
        }
    }
}

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Addr::Tcp(a) => write!(f, "{a}"),
            Addr::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// Everything the server is told.
#[derive(Clone, Debug)]
pub struct Config {
    /// The artifact (or policy) to decide with.
    pub source: Source,
    /// A second artifact decided beside the first on every call, logged
    /// and counted where it differs, never enforced.
    pub shadow: Option<Source>,
    /// A guard document (or a policy with a `guards` member) over every
    /// call's arguments, in place of a policy document's own member; read
    /// again at every reload. Rule lists and Claude Code settings only.
    pub guards: Option<PathBuf>,
    /// The decision listeners; [`DEFAULT_LISTEN`] when empty.
    pub listen: Vec<Addr>,
    /// The admin listener, if any: reload, and what changes the state
    /// (releases, grants, revocations, repairs) or lists it. None of it is
    /// on a decision listener, which the agent being decided on can reach.
    pub admin_listen: Option<Addr>,
    /// The listener of Envoy's `ext_authz` gRPC service, if any (TCP).
    pub grpc_listen: Option<Addr>,
    /// The bearer token every request but the health checks must carry.
    pub token: Option<String>,
    /// The bearer token of the admin listener, in place of [`Config::token`]
    /// there: a hook holding the decision token cannot release its own
    /// calls or grant itself rules.
    pub admin_token: Option<String>,
    /// The decision log's file.
    pub decision_log: Option<PathBuf>,
    /// JSON pointers into a call whose values the decision log masks.
    pub mask: Vec<String>,
    /// The decision log's queue: entries past it are dropped and counted.
    pub log_queue: usize,
    /// The largest request body, in bytes.
    pub max_body: usize,
    /// The most calls one batch may hold.
    pub max_batch: usize,
    /// The most connections open at once on each listener; past it a new
    /// connection is closed at once.
    pub max_connections: usize,
    /// How long a client may take to send a request's headers.
    pub header_timeout: Duration,
    /// How long a client may take to send a request's body.
    pub body_timeout: Duration,
    /// Watch the artifact's file and reload it when it changes.
    pub watch: bool,
    /// How long the file must be quiet before a change is reloaded.
    pub debounce: Duration,
    /// Reload on `SIGHUP`.
    pub sighup: bool,
    /// How artifacts are loaded (length cap, revision check, signature).
    pub load: LoadOptions,
    /// For fault tests only: a body containing this text panics while it
    /// is decided.
    #[doc(hidden)]
    pub panic_marker: Option<String>,
    /// Where state that outlives a decision is kept (Authensor sessions
    /// named by `sessionId` alone): the process's memory by default, or a
    /// store replicas share ([`open_store`]).
    pub store: std::sync::Arc<dyn toolgate::state::Store>,
    /// The tenant whose namespace the store's keys are under.
    pub tenant: String,
    /// The scope of the store's keys: the artifact's revision when `None`
    /// (a new policy starts its sessions afresh), or a fixed name under
    /// which sessions outlive reloads.
    pub store_scope: Option<String>,
}

/// The store `--store` names: `memory` (this process alone) or
/// `redis://HOST:PORT/DB`, keeping what it writes for `expiry` after the
/// last write (`None`: until deleted).
///
/// # Errors
///
/// [`ServeError::Store`] naming what was given.
pub fn open_store(
    spec: &str,
    expiry: Option<Duration>,
) -> Result<Arc<dyn toolgate::state::Store>, ServeError> {
    if spec == "memory" {
        return Ok(Arc::new(toolgate::state::MemoryStore::new()));
    }
    if spec.starts_with("redis://") || spec.starts_with("rediss://") {
        let options = toolgate_redis::RedisOptions {
            expiry,
            ..toolgate_redis::RedisOptions::default()
        };
        return toolgate_redis::RedisStore::open(spec, options)
            .map(|s| Arc::new(s) as Arc<dyn toolgate::state::Store>)
            .map_err(|e| ServeError::Store(e.to_string()));
    }
    Err(ServeError::Store(format!(
        "the store `{}` is neither `memory` nor a Redis URL: write `--store memory` or `--store redis://HOST:PORT/DB`",
        spec.rsplit('@').next().unwrap_or_default()
    )))
}

impl Config {
    /// The defaults for `source`: loopback, no token, 1 MiB bodies, 10 s
    /// for headers and for a body, the file watched.
    pub fn new(source: Source) -> Config {
        Config {
            source,
            shadow: None,
            guards: None,
            listen: Vec::new(),
            admin_listen: None,
            grpc_listen: None,
            token: None,
            admin_token: None,
            decision_log: None,
            mask: Vec::new(),
            log_queue: 4096,
            max_body: DEFAULT_MAX_BODY,
            max_batch: 10_000,
            max_connections: 1024,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            watch: true,
            debounce: Duration::from_millis(200),
            sighup: false,
            load: LoadOptions::default(),
            panic_marker: None,
            store: Arc::new(toolgate::state::MemoryStore::new()),
            tenant: "default".into(),
            store_scope: None,
        }
    }
}

/// Why the server did not start, or an artifact was refused.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServeError {
    /// A listen address that cannot be read.
    Addr {
        /// What was given.
        given: String,
        /// Why it cannot be used.
        why: String,
    },
    /// A listener off loopback with no token.
    NeedsToken {
        /// The address.
        addr: String,
    },
    /// A listener that cannot be bound.
    Bind {
        /// The address.
        addr: String,
        /// The system's reason.
        why: String,
    },
    /// A file that cannot be read.
    Read {
        /// The file.
        path: String,
        /// The system's reason.
        why: String,
    },
    /// An artifact or policy that does not validate.
    Artifact {
        /// The file.
        path: String,
        /// What is wrong with it.
        why: String,
    },
    /// A token file with no token in it.
    EmptyToken {
        /// The file.
        path: String,
    },
    /// A `--mask` that is not a JSON pointer.
    Mask {
        /// What was given.
        pointer: String,
    },
    /// The runtime could not start.
    Runtime(String),
    /// A `--store` that cannot be used.
    Store(String),
    /// A `--state-key` file that cannot be used.
    StateKey {
        /// The file.
        path: String,
        /// What is wrong with it (never the key).
        why: String,
    },
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeError::Addr { given, why } => write!(f, "cannot listen on `{given}`: {why}"),
            ServeError::NeedsToken { addr } => write!(
                f,
                "`{addr}` is not a loopback address: anyone who reaches it could ask for decisions; give `--token-file`, or listen on 127.0.0.1, [::1] or a unix socket"
            ),
            ServeError::Bind { addr, why } => write!(
                f,
                "cannot listen on `{addr}`: {why}; pick another address or stop what holds it"
            ),
            ServeError::Read { path, why } => write!(f, "cannot read `{path}`: {why}"),
            ServeError::Artifact { path, why } => {
                write!(f, "`{path}` cannot be served: {why}")
            }
            ServeError::EmptyToken { path } => write!(
                f,
                "the token file `{path}` holds no token: write one line of random text into it"
            ),
            ServeError::Mask { pointer } => write!(
                f,
                "`--mask {pointer}` is not a JSON pointer: write it as `/args/command`"
            ),
            ServeError::Runtime(why) => write!(f, "the server could not start: {why}"),
            ServeError::Store(why) => write!(f, "{why}"),
            ServeError::StateKey { path, why } => {
                write!(f, "the state key file `{path}` cannot be used: {why}")
            }
        }
    }
}

impl std::error::Error for ServeError {}

/// Reads a state key file (`--state-key`): one key of 64 hexadecimal
/// digits a line, the first sealing what the service writes into its
/// store, every one opening what it reads
/// ([`toolgate::state::SealKey::parse_file`]).
///
/// # Errors
///
/// [`ServeError::Read`], or [`ServeError::StateKey`] naming the line.
pub fn read_state_keys(
    path: &std::path::Path,
) -> Result<Vec<toolgate::state::SealKey>, ServeError> {
    let bytes = loaded::read_bounded(path, 64 << 10)?;
    let fail = |why: String| ServeError::StateKey {
        path: path.display().to_string(),
        why,
    };
    let text = std::str::from_utf8(&bytes).map_err(|_| {
        fail("it is not UTF-8 text: write one key of 64 hexadecimal digits a line".into())
    })?;
    toolgate::state::SealKey::parse_file(text).map_err(|e| fail(e.to_string()))
}

/// `store` with every record sealed with the first of `keys` and opened
/// with any ([`toolgate::state::Sealed`]); `store` itself when there are
/// no keys.
pub fn seal_store(
    store: Arc<dyn toolgate::state::Store>,
    keys: Vec<toolgate::state::SealKey>,
) -> Arc<dyn toolgate::state::Store> {
    match toolgate::state::Sealed::with_keys(Arc::clone(&store), keys) {
        Some(sealed) => Arc::new(sealed),
        None => store,
    }
}

/// Reads a token file: its first line, without surrounding white space.
///
/// # Errors
///
/// [`ServeError::Read`] or [`ServeError::EmptyToken`].
pub fn read_token(path: &std::path::Path) -> Result<String, ServeError> {
    let bytes = loaded::read_bounded(path, 64 << 10)?;
    let text = String::from_utf8_lossy(&bytes);
    let token = text.lines().next().unwrap_or("").trim().to_string();
    if token.is_empty() {
        return Err(ServeError::EmptyToken {
            path: path.display().to_string(),
        });
    }
    Ok(token)
}

/// A server that is running: where it listens, and how to stop it.
pub struct Running {
    /// The decision listeners, with the ports the system chose for `:0`.
    pub listening: Vec<Addr>,
    /// The admin listener, if any.
    pub admin: Option<Addr>,
    /// The `ext_authz` listener, if any.
    pub grpc: Option<Addr>,
    state: Arc<http::Shared>,
    stop: tokio::sync::watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    _watcher: Option<reload::Watch>,
}

impl Running {
    /// Reloads the artifact now, as `SIGHUP` does: the new revision, or why
    /// it was refused (the last good artifact keeps serving).
    ///
    /// # Errors
    ///
    /// The refusal.
    pub async fn reload(&self) -> Result<String, ServeError> {
        reload::reload(self.state.clone()).await
    }

    /// The revision being served.
    pub fn revision(&self) -> String {
        self.state.current.load().revision.clone()
    }

    /// Stops listening; connections in flight end with the runtime.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        for t in self.tasks.drain(..) {
            let _ = t.await;
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// Loads the artifact, binds every listener and starts serving on the
/// current tokio runtime.
///
/// # Errors
///
/// A [`ServeError`] when the artifact does not validate, an address is
/// refused (off loopback with no token) or cannot be bound.
pub async fn start(config: Config) -> Result<Running, ServeError> {
    let listen = if config.listen.is_empty() {
        vec![Addr::parse(DEFAULT_LISTEN)?]
    } else {
        config.listen.clone()
    };
    for a in listen.iter().chain(config.grpc_listen.iter()) {
        if !a.is_loopback() && config.token.is_none() {
            return Err(ServeError::NeedsToken {
                addr: a.to_string(),
            });
        }
    }
    if let Some(a) = &config.admin_listen {
        if !a.is_loopback() && config.token.is_none() && config.admin_token.is_none() {
            return Err(ServeError::NeedsToken {
                addr: a.to_string(),
            });
        }
    }
    let source = config.source.clone();
    let load = config.load;
    let guards = config.guards.clone();
    let first = tokio::task::spawn_blocking(move || {
        Loaded::read_guarded(&source, guards.as_deref(), &load)
    })
    .await
    .map_err(|e| ServeError::Runtime(e.to_string()))??;
    let guards = config.guards.clone();
    let shadow = match config.shadow.clone() {
        Some(s) => Some(
            tokio::task::spawn_blocking(move || Loaded::read_guarded(&s, guards.as_deref(), &load))
                .await
                .map_err(|e| ServeError::Runtime(e.to_string()))??,
        ),
        None => None,
    };
    let log = match &config.decision_log {
        Some(p) => Some(log::DecisionLog::start(
            p,
            config.log_queue,
            config.mask.clone(),
        )?),
        None => None,
    };
    let state = Arc::new(http::Shared::new(&config, first, shadow, log));
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut tasks = Vec::new();
    let mut listening = Vec::new();
    for a in &listen {
        let (bound, task) = http::listen(a, http::router(state.clone()), &config, stopped.clone())?;
        listening.push(bound);
        tasks.push(task);
    }
    let admin = match &config.admin_listen {
        Some(a) => {
            let (bound, task) = http::listen(
                a,
                http::admin_router(state.clone()),
                &config,
                stopped.clone(),
            )?;
            tasks.push(task);
            Some(bound)
        }
        None => None,
    };
    let grpc = match &config.grpc_listen {
        Some(a) => {
            let (bound, task) = grpc_listen(a, state.clone(), stopped.clone())?;
            tasks.push(task);
            Some(bound)
        }
        None => None,
    };
    let watcher = if config.watch {
        Some(reload::watch(
            state.clone(),
            config.debounce,
            stopped.clone(),
        )?)
    } else {
        None
    };
    if config.sighup {
        tasks.push(reload::on_sighup(state.clone(), stopped.clone())?);
    }
    Ok(Running {
        listening,
        admin,
        grpc,
        state,
        stop,
        tasks,
        _watcher: watcher,
    })
}

/// Binds the `ext_authz` listener (TCP: Envoy's gRPC clients dial
/// addresses) and spawns its server.
fn grpc_listen(
    addr: &Addr,
    state: Arc<http::Shared>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Result<(Addr, tokio::task::JoinHandle<()>), ServeError> {
    let Addr::Tcp(a) = addr else {
        return Err(ServeError::Addr {
            given: addr.to_string(),
            why: "`--grpc-listen` takes `HOST:PORT`".into(),
        });
    };
    let bind = |e: std::io::Error| ServeError::Bind {
        addr: addr.to_string(),
        why: e.to_string(),
    };
    let std = std::net::TcpListener::bind(a).map_err(bind)?;
    std.set_nonblocking(true).map_err(bind)?;
    let listener = tokio::net::TcpListener::from_std(std).map_err(bind)?;
    let bound = Addr::Tcp(listener.local_addr().map_err(bind)?);
    let task = tokio::spawn(async move {
        let incoming = tonic::transport::server::TcpIncoming::from(listener);
        let _ = tonic::transport::Server::builder()
            .timeout(std::time::Duration::from_secs(10))
            .add_service(ext_authz::service(state))
            .serve_with_incoming_shutdown(incoming, async move {
                let _ = stop.changed().await;
            })
            .await;
    });
    Ok((bound, task))
}

/// Runs the server until `SIGINT` or `SIGTERM`, on a runtime of its own:
/// what `toolgate serve` calls. `ready` is told where it listens.
///
/// # Errors
///
/// As [`start`].
pub fn run(config: Config, ready: &dyn Fn(&Running)) -> Result<(), ServeError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("toolgate-serve")
        .build()
        .map_err(|e| ServeError::Runtime(e.to_string()))?;
    runtime.block_on(async {
        let running = start(config).await?;
        ready(&running);
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| ServeError::Runtime(e.to_string()))?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        running.shutdown().await;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_token_file_gives_its_first_line_trimmed_and_an_empty_one_is_refused() {
        let dir = std::env::temp_dir().join(format!("tg-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("token");
        std::fs::write(&f, "  s3cret \nsecond line\n").unwrap();
        assert_eq!(read_token(&f).unwrap(), "s3cret");
        std::fs::write(&f, "\n").unwrap();
        assert!(matches!(read_token(&f), Err(ServeError::EmptyToken { .. })));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn addresses_that_cannot_be_listened_on_are_refused_naming_them() {
        for bad in ["unix:", "8181", "example.com:80", "127.0.0.1"] {
            let e = Addr::parse(bad).err().unwrap();
            assert!(e.to_string().contains(&format!("`{bad}`")), "{e}");
        }
        assert_eq!(
            Addr::parse("localhost:9").unwrap(),
            Addr::parse("127.0.0.1:9").unwrap()
        );
        assert!(Addr::parse("[::1]:9").unwrap().is_loopback());
    }
}
