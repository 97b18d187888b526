//! The HTTP side: listeners (TCP and unix sockets), the connection loop
//! with its header timeout, the routes, and the handlers. Handlers read
//! bodies themselves (bounded in size and time) so that every refusal on
//! the decision side is answered with a deny.

use crate::decide::{self, Ids, Intake};
use crate::log::DecisionLog;
use crate::metrics::Metrics;
use crate::{Addr, Config, Loaded, ServeError, Source};
use arc_swap::ArcSwap;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;

/// What every handler shares: the artifact behind an `ArcSwap` (a request
/// takes its own reference and decides on it to the end, whatever a reload
/// swaps in meanwhile), the counters, the log.
pub(crate) struct Shared {
    pub(crate) current: ArcSwap<Loaded>,
    pub(crate) shadow: Option<ArcSwap<Loaded>>,
    pub(crate) source: Source,
    pub(crate) shadow_source: Option<Source>,
    /// `--guards`, read again at every load.
    pub(crate) guards: Option<std::path::PathBuf>,
    pub(crate) load: toolgate::artifact::LoadOptions,
    pub(crate) metrics: Metrics,
    pub(crate) log: Option<DecisionLog>,
    pub(crate) ids: Ids,
    pub(crate) intake: Intake,
    pub(crate) max_body: usize,
    pub(crate) body_timeout: Duration,
    pub(crate) token: Option<String>,
    /// The admin listener's token, when it has one of its own.
    pub(crate) admin_token: Option<String>,
    pub(crate) panic_marker: Option<String>,
    /// Reloads swapped in, and refused; the generation of the artifact
    /// (one more at each swap).
    pub(crate) reloads: AtomicU64,
    pub(crate) failed_reloads: AtomicU64,
    pub(crate) generation: AtomicU64,
    /// Reloads run one at a time, so that an older read can never be
    /// swapped in after a newer one.
    pub(crate) reloading: tokio::sync::Mutex<()>,
    /// The state store and the sessions this replica remembers.
    pub(crate) state: decide::Stateful,
    /// Deferred calls, grants and runs, kept in the configured store.
    pub(crate) hub: crate::state::StateHub,
}

impl Shared {
    pub(crate) fn new(
        config: &Config,
        first: Loaded,
        shadow: Option<Loaded>,
        log: Option<DecisionLog>,
    ) -> Shared {
        Shared {
            current: ArcSwap::from_pointee(first),
            shadow: shadow.map(ArcSwap::from_pointee),
            source: config.source.clone(),
            shadow_source: config.shadow.clone(),
            guards: config.guards.clone(),
            load: config.load,
            metrics: Metrics::new(),
            log,
            ids: Ids::new(),
            intake: Intake {
                max_batch: config.max_batch,
                max_values: crate::hook::VALUE_LIMIT,
                explain: false,
            },
            max_body: config.max_body,
            body_timeout: config.body_timeout,
            token: config.token.clone(),
            admin_token: config.admin_token.clone(),
            panic_marker: config.panic_marker.clone(),
            reloads: AtomicU64::new(0),
            failed_reloads: AtomicU64::new(0),
            generation: AtomicU64::new(1),
            reloading: tokio::sync::Mutex::new(()),
            state: decide::Stateful {
                store: config.store.clone(),
                tenant: config.tenant.clone(),
                scope: config.store_scope.clone(),
                sessions: toolgate::authensor::KeptSessions::new(),
            },
            hub: crate::state::StateHub::new(std::sync::Arc::clone(&config.store), &config.tenant),
        }
    }
}

type S = Arc<Shared>;

/// The decision listener's routes.
pub(crate) fn router(state: S) -> Router {
    Router::new()
        .route("/v1/decide", post(decide_handler))
        .route("/v1/data/toolgate/decision", post(opa_handler))
        .route("/v1/hooks/claude-code", post(hook_handler))
        .route("/v1/scan", post(scan_handler))
        .route("/health/live", get(live))
        .route("/health/ready", get(ready))
        .route("/v1/status", get(status))
        .route("/metrics", get(metrics))
        .with_state(state)
}

/// The admin listener's routes: reload, the state endpoints, and what an
/// operator looks at. The state endpoints are here, not on a decision
/// listener: a hook's agent can reach that one (its shell runs beside the
/// hook), and there it could approve the calls held for a human or grant
/// itself an allow.
pub(crate) fn admin_router(state: S) -> Router {
    Router::new()
        .route("/v1/reload", post(reload_handler))
        .route("/v1/release", post(crate::state::release_handler))
        .route("/v1/grants", post(crate::state::grant_handler))
        .route(
            "/v1/grants/{source}",
            axum::routing::delete(crate::state::revoke_handler),
        )
        .route("/v1/runs", get(crate::state::runs_handler))
        .route(
            "/v1/state/discard-unreadable",
            post(crate::state::discard_handler),
        )
        .route("/health/live", get(live))
        .route("/health/ready", get(ready))
        .route("/v1/status", get(status))
        .route("/metrics", get(metrics))
        .with_state(state)
}

/// Binds `addr` and spawns its accept loop; the address bound (the port
/// the system chose for `:0`).
pub(crate) fn listen(
    addr: &Addr,
    app: Router,
    config: &Config,
    stop: watch::Receiver<bool>,
) -> Result<(Addr, tokio::task::JoinHandle<()>), ServeError> {
    let bind = |e: std::io::Error| ServeError::Bind {
        addr: addr.to_string(),
        why: e.to_string(),
    };
    let header_timeout = config.header_timeout;
    let slots = Arc::new(tokio::sync::Semaphore::new(config.max_connections.max(1)));
    match addr {
        Addr::Tcp(a) => {
            let std = std::net::TcpListener::bind(a).map_err(bind)?;
            std.set_nonblocking(true).map_err(bind)?;
            let listener = tokio::net::TcpListener::from_std(std).map_err(bind)?;
            let bound = Addr::Tcp(listener.local_addr().map_err(bind)?);
            let task = tokio::spawn(async move {
                accept_loop(
                    || async {
                        listener.accept().await.map(|(s, _)| {
                            let _ = s.set_nodelay(true);
                            s
                        })
                    },
                    app,
                    header_timeout,
                    slots,
                    stop,
                )
                .await;
            });
            Ok((bound, task))
        }
        Addr::Unix(path) => {
            // A socket left by a server that died is replaced; one a live
            // server answers on is not, and neither is any other file.
            if let Ok(meta) = std::fs::symlink_metadata(path) {
                use std::os::unix::fs::FileTypeExt;
                if meta.file_type().is_socket() {
                    if std::os::unix::net::UnixStream::connect(path).is_ok() {
                        return Err(bind(std::io::Error::new(
                            std::io::ErrorKind::AddrInUse,
                            "a server is listening there",
                        )));
                    }
                    let _ = std::fs::remove_file(path);
                }
            }
            let listener = tokio::net::UnixListener::bind(path).map_err(bind)?;
            // Only the owner may connect: a unix socket is as private as
            // loopback only when its mode says so.
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(bind)?;
            let task = tokio::spawn(async move {
                accept_loop(
                    || async { listener.accept().await.map(|(s, _)| s) },
                    app,
                    header_timeout,
                    slots,
                    stop,
                )
                .await;
            });
            Ok((addr.clone(), task))
        }
    }
}

async fn accept_loop<F, Fut, I>(
    accept: F,
    app: Router,
    header_timeout: Duration,
    slots: Arc<tokio::sync::Semaphore>,
    mut stop: watch::Receiver<bool>,
) where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = std::io::Result<I>>,
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    loop {
        tokio::select! {
            accepted = accept() => match accepted {
                Ok(io) => {
                    // Past the connection cap a new connection is closed at
                    // once: each open one holds buffers, so their number is
                    // bounded too.
                    let Ok(slot) = slots.clone().try_acquire_owned() else {
                        drop(io);
                        continue;
                    };
                    let app = app.clone();
                    let stop = stop.clone();
                    tokio::spawn(async move {
                        connection(io, app, header_timeout, stop).await;
                        drop(slot);
                    });
                }
                // Out of descriptors, or a connection reset before it was
                // accepted: wait a little rather than spin.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            _ = stop.changed() => return,
        }
    }
}

/// Serves one connection: HTTP/1.1 with keep-alive, the headers of each
/// request within `header_timeout` (hyper's timer cuts a slow client).
async fn connection<I>(
    io: I,
    app: Router,
    header_timeout: Duration,
    mut stop: watch::Receiver<bool>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper_util::service::TowerToHyperService::new(app);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(header_timeout)
        .max_buf_size(64 << 10)
        .keep_alive(true);
    let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(io), service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = stop.changed() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(Duration::from_secs(5), conn).await;
        }
    }
}

fn respond(status: StatusCode, content_type: &'static str, body: String) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    r
}

pub(crate) fn json_response(status: StatusCode, v: &Value) -> Response {
    respond(status, "application/json", v.to_string())
}

/// Whether the request carries the configured token (always, when none is
/// configured). Compared in time independent of where they differ.
pub(crate) fn authorised(state: &Shared, headers: &HeaderMap) -> bool {
    state
        .token
        .as_ref()
        .is_none_or(|t| same(bearer(headers), t))
}

/// Whether a request to the admin listener carries its token: the admin
/// token when one is configured, else the decision token (always, when
/// there is neither).
pub(crate) fn authorised_admin(state: &Shared, headers: &HeaderMap) -> bool {
    match &state.admin_token {
        Some(t) => same(bearer(headers), t),
        None => authorised(state, headers),
    }
}

/// The bearer token a request carries; empty when none.
fn bearer(headers: &HeaderMap) -> &str {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("")
}

/// Whether `given` is `token`, in time independent of where they differ.
pub(crate) fn same(given: &str, token: &str) -> bool {
    let (a, b) = (given.as_bytes(), token.as_bytes());
    let mut diff = a.len() ^ b.len();
    for (i, x) in b.iter().enumerate() {
        diff |= usize::from(x ^ a.get(i).copied().unwrap_or(0));
    }
    diff == 0
}

/// A deny for a request refused before deciding, in the served artifact's
/// shape, stamped and counted.
pub(crate) fn refused_verdict(state: &Shared, loaded: &Loaded, why: &str) -> Value {
    let mut v = decide::unreadable(loaded, why);
    decide::stamp(&mut v, &loaded.revision, &state.ids);
    state.metrics.decided("deny");
    v
}

/// Why a body was not read.
pub(crate) enum BodyFault {
    TooLarge,
    Slow,
    Cut(String),
    NotText,
}

/// Reads a request's body within the size cap and the time limit.
pub(crate) async fn read_body(state: &Shared, req: Request) -> Result<String, BodyFault> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > state.max_body as u64) {
        return Err(BodyFault::TooLarge);
    }
    let limited = http_body_util::Limited::new(req.into_body(), state.max_body);
    let collected = match tokio::time::timeout(state.body_timeout, limited.collect()).await {
        Err(_) => return Err(BodyFault::Slow),
        Ok(Err(e)) => {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                return Err(BodyFault::TooLarge);
            }
            return Err(BodyFault::Cut(e.to_string()));
        }
        Ok(Ok(c)) => c.to_bytes(),
    };
    body_text(collected.to_vec(), state.max_body)
}

/// A body received whole, as the decision handlers read it: refused past
/// `max` bytes (the stream is already limited; this holds for bodies that
/// did not come through it, as the fuzz target's) or when it is not UTF-8.
pub(crate) fn body_text(bytes: Vec<u8>, max: usize) -> Result<String, BodyFault> {
    if bytes.len() > max {
        return Err(BodyFault::TooLarge);
    }
    String::from_utf8(bytes).map_err(|_| BodyFault::NotText)
}

impl BodyFault {
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            BodyFault::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            BodyFault::Slow => StatusCode::REQUEST_TIMEOUT,
            BodyFault::Cut(_) | BodyFault::NotText => StatusCode::BAD_REQUEST,
        }
    }

    pub(crate) fn why(&self, state: &Shared) -> String {
        match self {
            BodyFault::TooLarge => format!(
                "the body is longer than {} bytes: split the batch, or raise `--max-body-bytes`",
                state.max_body
            ),
            BodyFault::Slow => format!(
                "the body did not arrive within {} ms",
                state.body_timeout.as_millis()
            ),
            BodyFault::Cut(e) => format!("the body was cut short: {e}"),
            BodyFault::NotText => "the body is not UTF-8".into(),
        }
    }

    fn metric(&self) -> &'static str {
        match self {
            BodyFault::TooLarge => "too_large",
            BodyFault::Slow => "slow",
            BodyFault::Cut(_) => "cut",
            BodyFault::NotText => "not_utf8",
        }
    }
}

/// A deny in the served artifact's shape, stamped and counted.
fn refusal(state: &Shared, loaded: &Loaded, status: StatusCode, why: &str) -> Response {
    json_response(status, &refused_verdict(state, loaded, why))
}

fn unauthorised(state: &Shared, loaded: &Loaded) -> Response {
    state.metrics.refused("unauthorised");
    refusal(
        state,
        loaded,
        StatusCode::UNAUTHORIZED,
        "the request carries no valid token: send `Authorization: Bearer TOKEN`",
    )
}

/// Decides a body on `loaded`, catching a panic (answered with a deny,
/// counted and logged), and the shadow beside it. The verdicts, stamped,
/// and whether deciding panicked.
pub(crate) fn decide_caught(state: &Shared, loaded: &Loaded, text: &str) -> (Value, bool) {
    decide_with(state, loaded, text, state.intake)
}

/// Whether a request's query asks for `explain=true`.
fn wants_explain(query: Option<&str>) -> bool {
    query.is_some_and(|q| {
        q.split('&')
            .any(|kv| kv == "explain=true" || kv == "explain")
    })
}

fn decide_with(state: &Shared, loaded: &Loaded, text: &str, intake: Intake) -> (Value, bool) {
    let started = Instant::now();
    let decided = std::panic::catch_unwind(AssertUnwindSafe(|| {
        if let Some(m) = &state.panic_marker {
            if text.contains(m.as_str()) {
                injected_panic();
            }
        }
        crate::state::decide(state, loaded, text, intake)
            .unwrap_or_else(|| decide::decide_stateful(loaded, text, intake, Some(&state.state)))
    }));
    let (mut answer, panicked) = match decided {
        Ok(v) => (v, false),
        Err(_) => {
            state.metrics.panics.inc();
            note!("toolgate serve: deciding a request panicked; it was answered with a deny");
            (
                decide::fault(
                    loaded,
                    "the server failed while deciding the call (a panic); the call is denied",
                ),
                true,
            )
        }
    };
    let elapsed = started.elapsed();
    state.metrics.latency(elapsed.as_secs_f64());
    let outcomes = decide::outcomes(&answer);
    for o in &outcomes {
        state.metrics.decided(o);
    }
    decide::stamp(&mut answer, &loaded.revision, &state.ids);
    let shadow = state.shadow.as_ref().map(|s| {
        let s = s.load_full();
        let v =
            std::panic::catch_unwind(AssertUnwindSafe(|| decide::decide(&s, text, state.intake)))
                .unwrap_or_else(|_| decide::fault(&s, "the shadow artifact panicked"));
        if decide::outcomes(&v) != outcomes {
            state.metrics.shadow_differences.inc();
        }
        (v, s.revision.clone())
    });
    if let Some(log) = &state.log {
        let call = serde_json::from_str::<Value>(text).unwrap_or(Value::Null);
        let time = std::time::SystemTime::now()
            .duration_since(std::time::SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let id = match &answer {
            Value::Array(vs) => vs.first().and_then(|v| v.get("decision_id")).cloned(),
            v => v.get("decision_id").cloned(),
        };
        let mut entry = json!({
            "time": time,
            "decision_id": id,
            "revision": loaded.revision,
            "call": log.masked(call),
            "verdict": answer,
            "latency_ns": u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX),
        });
        if let (Some((v, rev)), Value::Object(m)) = (shadow, &mut entry) {
            m.insert("shadow".into(), json!({"revision": rev, "verdict": v}));
        }
        if !log.send(entry.to_string()) {
            state.metrics.log_drops.inc();
        }
    }
    (answer, panicked)
}

#[expect(clippy::panic, reason = "the injected panic is the fault under test")]
fn injected_panic() {
    panic!("injected panic");
}

async fn decide_handler(State(state): State<S>, req: Request) -> Response {
    let loaded = state.current.load_full();
    if !authorised(&state, req.headers()) {
        return unauthorised(&state, &loaded);
    }
    let intake = Intake {
        explain: wants_explain(req.uri().query()),
        ..state.intake
    };
    let text = match read_body(&state, req).await {
        Ok(t) => t,
        Err(f) => {
            state.metrics.refused(f.metric());
            return refusal(&state, &loaded, f.status(), &f.why(&state));
        }
    };
    let (answer, panicked) = decide_with(&state, &loaded, &text, intake);
    let status = if panicked {
        StatusCode::INTERNAL_SERVER_ERROR
    } else if decide::outcomes(&answer).contains(&"deny") && malformed(&text) {
        state.metrics.refused("malformed");
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    json_response(status, &answer)
}

/// Content guards over the body (`spec/guards.md`): the built-in secrets
/// catalogue, for the place `?place=` names (`arguments`, `output`, the
/// default, or `message`). The answer is the guards' verdict, its
/// findings (spans, never the content) and, when a span was redacted and
/// nothing blocked, the redacted copy. Every refusal is a deny.
async fn scan_handler(State(state): State<S>, req: Request) -> Response {
    let loaded = state.current.load_full();
    if !authorised(&state, req.headers()) {
        return unauthorised(&state, &loaded);
    }
    let place = match scan_place(req.uri().query()) {
        Ok(p) => p,
        Err(why) => return json_response(StatusCode::BAD_REQUEST, &scan_deny(&why)),
    };
    let text = match read_body(&state, req).await {
        Ok(t) => t,
        Err(f) => {
            state.metrics.refused(f.metric());
            return json_response(f.status(), &scan_deny(&f.why(&state)));
        }
    };
    let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        toolgate::guards::Guards::builtin().map(|g| g.check(place, text.as_bytes()))
    }));
    match checked {
        Ok(Ok(outcome)) => json_response(StatusCode::OK, &scan_answer(&outcome)),
        Ok(Err(e)) => json_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            &scan_deny(&format!("the guards could not be built: {e}")),
        ),
        Err(_) => {
            state.metrics.panics.inc();
            json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                &scan_deny("the scan failed inside the server"),
            )
        }
    }
}

/// The place a scan is for, from the query's `place`; `output` when none.
fn scan_place(query: Option<&str>) -> Result<toolgate::guards::Place, String> {
    use toolgate::guards::Place;
    let named = query
        .unwrap_or("")
        .split('&')
        .find_map(|kv| kv.strip_prefix("place="));
    match named {
        None | Some("output") => Ok(Place::Output),
        Some("arguments") => Ok(Place::Arguments),
        Some("message") => Ok(Place::Message),
        Some(other) => Err(format!(
            "the place `{other}` is not one of `arguments`, `output` or `message`"
        )),
    }
}

fn scan_answer(o: &toolgate::guards::Outcome) -> Value {
    let mut v = serde_json::json!({
        "decision": o.decision.as_str(),
        "reason": o.reason,
        "findings": o.findings.iter().map(toolgate::guards::Finding::to_json).collect::<Vec<_>>(),
    });
    if let Some(m) = v.as_object_mut() {
        if let Some(rule) = &o.rule {
            m.insert("rule".into(), Value::from(rule.as_str()));
        }
        if let Some((start, end)) = o.span {
            m.insert("span".into(), serde_json::json!([start, end]));
        }
        if let Some(r) = o.redacted.as_deref() {
            m.insert(
                "redacted".into(),
                Value::from(String::from_utf8_lossy(r).into_owned()),
            );
        }
    }
    v
}

fn scan_deny(why: &str) -> Value {
    serde_json::json!({"decision": "deny", "reason": why, "findings": []})
}

/// Whether a body is not JSON at all (answered 400, with the deny the
/// engine gave it). A body that is JSON but not a call is a decision: the
/// deny, with 200.
fn malformed(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_err()
}

/// OPA's data API: `{"input": CALL}` in, `{"result": VERDICT}` out.
async fn opa_handler(State(state): State<S>, req: Request) -> Response {
    let loaded = state.current.load_full();
    let wrap = |status: StatusCode, v: Value| {
        let id = v.get("decision_id").cloned().unwrap_or(Value::Null);
        json_response(status, &json!({"result": v, "decision_id": id}))
    };
    if !authorised(&state, req.headers()) {
        state.metrics.refused("unauthorised");
        let mut v = decide::unreadable(
            &loaded,
            "the request carries no valid token: send `Authorization: Bearer TOKEN`",
        );
        decide::stamp(&mut v, &loaded.revision, &state.ids);
        return wrap(StatusCode::UNAUTHORIZED, v);
    }
    let text = match read_body(&state, req).await {
        Ok(t) => t,
        Err(f) => {
            state.metrics.refused(f.metric());
            let mut v = decide::unreadable(&loaded, &f.why(&state));
            decide::stamp(&mut v, &loaded.revision, &state.ids);
            state.metrics.decided("deny");
            return wrap(f.status(), v);
        }
    };
    let input = match opa_input(&text) {
        Ok(input) => input,
        Err(OpaFault::NoInput) => {
            let mut v = decide::unreadable(&loaded, OpaFault::NoInput.why());
            decide::stamp(&mut v, &loaded.revision, &state.ids);
            state.metrics.decided("deny");
            return wrap(StatusCode::BAD_REQUEST, v);
        }
        Err(OpaFault::NotObject) => {
            state.metrics.refused("malformed");
            let mut v = decide::unreadable(&loaded, OpaFault::NotObject.why());
            decide::stamp(&mut v, &loaded.revision, &state.ids);
            state.metrics.decided("deny");
            return wrap(StatusCode::BAD_REQUEST, v);
        }
    };
    let (answer, panicked) = decide_caught(&state, &loaded, &input);
    let status = if panicked {
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::OK
    };
    wrap(status, answer)
}

/// Why an OPA data API body holds no call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OpaFault {
    /// A JSON object with no `input` member.
    NoInput,
    /// Not a JSON object.
    NotObject,
}

impl OpaFault {
    pub(crate) fn why(self) -> &'static str {
        match self {
            OpaFault::NoInput => "the body has no `input` member: send `{\"input\": CALL}`",
            OpaFault::NotObject => "the body is not a JSON object: send `{\"input\": CALL}`",
        }
    }
}

/// The call of an OPA data API body, `{"input": CALL}`, as JSON text.
pub(crate) fn opa_input(text: &str) -> Result<String, OpaFault> {
    match toolgate::json::parse_strict(text) {
        Ok(Value::Object(mut m)) => match m.remove("input") {
            Some(input) => Ok(input.to_string()),
            None => Err(OpaFault::NoInput),
        },
        Ok(_) | Err(_) => Err(OpaFault::NotObject),
    }
}

/// Claude Code's `http` hook. Every answer is 200 with a hook answer:
/// Claude Code lets the call through on any other status, so a refusal
/// travels as a deny in the body.
async fn hook_handler(State(state): State<S>, req: Request) -> Response {
    let loaded = state.current.load_full();
    let answer = |d: toolgate::Decision, why: &str| {
        respond(
            StatusCode::OK,
            "application/json",
            crate::hook::answer_line(d, why),
        )
    };
    // A resident hook that sent a nonce is shown that this server holds
    // the token (`client::hook_proof`), so that whatever else answers on
    // the port cannot pass an allow to it; it proves it holds the token
    // the same way (`client::hook_credential`), never sending it.
    let nonce = req
        .headers()
        .get(crate::client::NONCE_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|n| n.len() == 32 && n.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(str::to_string);
    let credential_ok = match (&state.token, &nonce) {
        (Some(t), Some(n)) => req
            .headers()
            .get(crate::client::CREDENTIAL_HEADER)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| same(c, &crate::client::hook_credential(t, n))),
        _ => false,
    };
    if !credential_ok && !authorised(&state, req.headers()) {
        state.metrics.refused("unauthorised");
        state.metrics.decided("deny");
        return answer(
            toolgate::Decision::Deny,
            "the hook request carries no valid token: send `Authorization: Bearer TOKEN`",
        );
    }
    let text = match read_body(&state, req).await {
        Ok(t) => t,
        Err(f) => {
            state.metrics.refused(f.metric());
            state.metrics.decided("deny");
            return answer(toolgate::Decision::Deny, &f.why(&state));
        }
    };
    let started = Instant::now();
    let decided = std::panic::catch_unwind(AssertUnwindSafe(|| {
        if let Some(m) = &state.panic_marker {
            if text.contains(m.as_str()) {
                injected_panic();
            }
        }
        crate::hook::answer_payload(&loaded, &text)
    }));
    state.metrics.latency(started.elapsed().as_secs_f64());
    let line = decided.unwrap_or_else(|_| {
        state.metrics.panics.inc();
        note!("toolgate serve: answering a hook panicked; it was answered with a deny");
        crate::hook::answer_line(
            toolgate::Decision::Deny,
            "the server failed while deciding the call (a panic); the call is denied",
        )
    });
    let outcome = serde_json::from_str::<Value>(&line)
        .ok()
        .and_then(|v| {
            v.pointer("/hookSpecificOutput/permissionDecision")
                .and_then(Value::as_str)
                .map(|d| match d {
                    "allow" => "allow",
                    "ask" => "ask",
                    _ => "deny",
                })
        })
        .unwrap_or("deny");
    state.metrics.decided(outcome);
    let proof = match (&state.token, &nonce) {
        (Some(t), Some(n)) => Some(crate::client::hook_proof(t, n, line.as_bytes())),
        _ => None,
    };
    let mut resp = respond(StatusCode::OK, "application/json", line);
    if let Some(p) = proof.and_then(|p| axum::http::HeaderValue::from_str(&p).ok()) {
        resp.headers_mut().insert(crate::client::PROOF_HEADER, p);
    }
    resp
}

async fn live() -> Response {
    respond(StatusCode::OK, "application/json", "{\"live\":true}".into())
}

async fn ready(State(state): State<S>) -> Response {
    // The server binds only after its first artifact validated, so a
    // listener that answers has one; the revision says which. It is ready
    // when the state store answers too: a decision that needs the store
    // is denied while it does not, so a balancer should send calls
    // elsewhere. The ping runs off the async workers, bounded in time.
    let revision = state.current.load().revision.clone();
    let store = state.state.store.clone();
    let pinged = tokio::time::timeout(
        Duration::from_secs(3),
        tokio::task::spawn_blocking(move || store.ping()),
    )
    .await;
    let why = match pinged {
        Ok(Ok(Ok(()))) => None,
        Ok(Ok(Err(e))) => Some(e.to_string()),
        Ok(Err(_)) => Some("the store's check failed".to_string()),
        Err(_) => Some("the state store did not answer within 3 s".to_string()),
    };
    match why {
        None => json_response(
            StatusCode::OK,
            &json!({"ready": true, "revision": revision}),
        ),
        Some(why) => json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"ready": false, "revision": revision, "why": why}),
        ),
    }
}

async fn status(State(state): State<S>, headers: HeaderMap) -> Response {
    let loaded = state.current.load_full();
    if !reader(&state, &headers) {
        return unauthorised(&state, &loaded);
    }
    let shadow = state.shadow.as_ref().map(|s| s.load().revision.clone());
    json_response(
        StatusCode::OK,
        &json!({
            "revision": loaded.revision,
            "kind": loaded.kind,
            "loaded_at": loaded.loaded_at,
            "rules": loaded.rules,
            "generation": state.generation.load(Ordering::SeqCst),
            "reloads": state.reloads.load(Ordering::SeqCst),
            "failed_reloads": state.failed_reloads.load(Ordering::SeqCst),
            "shadow": shadow,
        }),
    )
}

/// Whether a request may read the status and the metrics, which both
/// listeners serve: either token.
fn reader(state: &Shared, headers: &HeaderMap) -> bool {
    authorised(state, headers) || authorised_admin(state, headers)
}

async fn metrics(State(state): State<S>, headers: HeaderMap) -> Response {
    if !reader(&state, &headers) {
        let loaded = state.current.load_full();
        return unauthorised(&state, &loaded);
    }
    respond(
        StatusCode::OK,
        "application/openmetrics-text; version=1.0.0; charset=utf-8",
        state.metrics.render(),
    )
}

async fn reload_handler(State(state): State<S>, headers: HeaderMap) -> Response {
    if !authorised_admin(&state, &headers) {
        state.metrics.refused("unauthorised");
        return json_response(
            StatusCode::UNAUTHORIZED,
            &json!({"error": "the request carries no valid token: send `Authorization: Bearer TOKEN`"}),
        );
    }
    match crate::reload::reload(state.clone()).await {
        Ok(revision) => json_response(
            StatusCode::OK,
            &json!({"reloaded": true, "revision": revision}),
        ),
        Err(e) => json_response(
            StatusCode::UNPROCESSABLE_ENTITY,
            &json!({"reloaded": false, "error": e.to_string(), "revision": state.current.load().revision}),
        ),
    }
}
