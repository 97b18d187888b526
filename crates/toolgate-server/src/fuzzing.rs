//! The server's intake without a network, for the fuzz target
//! `serve_intake` (`fuzz/fuzz_targets/serve_intake.rs`). Hidden from the
//! documentation and outside the supported API: it may change with any
//! release.
//!
//! Why it exists: the functions that read a request body into a decision
//! are private to the crate, and reaching them through a listener would
//! cost a runtime and a connection per input and hide a panic behind the
//! handlers' `catch_unwind` (which answers it with a deny, as a server
//! must, but a fuzzer must see it). Each function here runs the same steps
//! the handler runs after the body has arrived, in the same order, and
//! returns the answer unstamped (no `revision`, no `decision_id`), with no
//! metrics, log or shadow.

use crate::decide::{self, Intake};
use crate::http::{body_text, opa_input};
use crate::Loaded;
use serde_json::Value;

/// The HTTP request an `ext_authz` check describes, for [`ext_authz_call`].
pub use envoy_types::pb::envoy::service::auth::v3::attribute_context::HttpRequest;

/// The bounds a server is configured with (`--max-body-bytes`,
/// `--max-batch`).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The largest request body, in bytes.
    pub max_body: usize,
    /// The most calls one batch may hold.
    pub max_batch: usize,
}

fn intake(limits: Limits) -> Intake {
    Intake {
        max_batch: limits.max_batch,
        max_values: crate::hook::VALUE_LIMIT,
        explain: false,
    }
}

/// `POST /v1/decide` with `body`: the verdict, or an array of them for a
/// batch.
pub fn decide_body(loaded: &Loaded, body: &[u8], limits: Limits) -> Value {
    match body_text(body.to_vec(), limits.max_body) {
        Ok(text) => decide::decide(loaded, &text, intake(limits)),
        Err(_) => decide::unreadable(loaded, "the body was refused"),
    }
}

/// `POST /v1/data/toolgate/decision` with `body`: the `result` member of
/// the answer.
pub fn opa_body(loaded: &Loaded, body: &[u8], limits: Limits) -> Value {
    let text = match body_text(body.to_vec(), limits.max_body) {
        Ok(t) => t,
        Err(_) => return decide::unreadable(loaded, "the body was refused"),
    };
    match opa_input(&text) {
        Ok(input) => decide::decide(loaded, &input, intake(limits)),
        Err(f) => decide::unreadable(loaded, f.why()),
    }
}

/// The call an `ext_authz` check's HTTP request carries, as JSON text, or
/// why there is none (the check is then denied).
///
/// # Errors
///
/// Why the request carries no call that may be decided.
pub fn ext_authz_call(http: Option<&HttpRequest>, max_body: usize) -> Result<String, String> {
    crate::ext_authz::call_of(http, max_body)
}

/// The verdict an `ext_authz` check gets for `http`, before it is turned
/// into a gRPC answer.
pub fn ext_authz_verdict(loaded: &Loaded, http: Option<&HttpRequest>, limits: Limits) -> Value {
    match crate::ext_authz::call_of(http, limits.max_body) {
        Ok(call) => decide::decide(loaded, &call, intake(limits)),
        Err(why) => decide::unreadable(loaded, &why),
    }
}
