//! Envoy's external authorization, v3 over gRPC
//! (`envoy.service.auth.v3.Authorization/Check`), on a listener of its own.
//!
//! The tool call is read from the HTTP request Envoy describes: an MCP
//! `tools/call` JSON-RPC body, or an `x-mcp-tool-name` header with the
//! arguments as JSON in `x-mcp-tool-arguments`. Allow answers OK; deny
//! answers `PERMISSION_DENIED` with the reason as the body of a 403 and the
//! rule in `dynamic_metadata`; ask answers the same deny with an
//! `x-toolgate-decision: ask` header, since Envoy has no ask. A request
//! with no tool call, a body too large, one Envoy cut short
//! (`x-envoy-auth-partial-body: true`), or one naming its tool in the
//! header beside a JSON body, is denied.

use crate::http::Shared;
use envoy_types::ext_authz::v3::pb::{
    Authorization, AuthorizationServer, CheckRequest, CheckResponse, DeniedHttpResponse,
    HeaderValue, HeaderValueOption, HttpStatus, HttpStatusCode, OkHttpResponse,
};
use envoy_types::ext_authz::v3::CheckResponseExt;
use envoy_types::pb::envoy::service::auth::v3::attribute_context::HttpRequest;
use envoy_types::pb::google::protobuf::{value::Kind, Struct, Value as PValue};
use serde_json::{json, Value};
use std::sync::Arc;

/// The header naming the tool when the body is not JSON-RPC.
pub const TOOL_HEADER: &str = "x-mcp-tool-name";
/// The header holding the tool's arguments as JSON, beside [`TOOL_HEADER`].
pub const ARGUMENTS_HEADER: &str = "x-mcp-tool-arguments";
/// The header carrying toolgate's decision on every answer.
pub const DECISION_HEADER: &str = "x-toolgate-decision";

pub(crate) struct Authz {
    state: Arc<Shared>,
}

/// The gRPC service, its messages bounded by the body cap.
pub(crate) fn service(state: Arc<Shared>) -> AuthorizationServer<Authz> {
    let cap = state.max_body.saturating_add(64 << 10);
    AuthorizationServer::new(Authz { state }).max_decoding_message_size(cap)
}

/// The call Envoy's request carries, as the JSON `/v1/decide` reads; why
/// there is none.
pub(crate) fn call_of(http: Option<&HttpRequest>, max: usize) -> Result<String, String> {
    let http = http.ok_or("the check request describes no HTTP request")?;
    if http
        .headers
        .get("x-envoy-auth-partial-body")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    {
        return Err("the request body was cut short by the proxy: raise the filter's `max_request_bytes` so the whole call is checked".into());
    }
    let body: &[u8] = if http.raw_body.is_empty() {
        http.body.as_bytes()
    } else {
        &http.raw_body
    };
    if body.len() > max {
        return Err(format!("the request body is longer than {max} bytes"));
    }
    if let Some(tool) = http.headers.get(TOOL_HEADER) {
        // The header form is for bodies that are not JSON-RPC. A JSON body
        // beside it may be the call the upstream runs (a `tools/call` for
        // `rm -rf /` behind a header naming `ls`), whether or not it reads
        // strictly here, so the request is refused.
        let text = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
        if text
            .iter()
            .find(|b| !b.is_ascii_whitespace())
            .is_some_and(|b| matches!(b, b'{' | b'['))
        {
            return Err(format!(
                "the request names its tool in `{TOOL_HEADER}` and carries a JSON body, which the upstream may read as another call: send the call in the body alone, or the headers with a body that is not JSON"
            ));
        }
        let args = match http.headers.get(ARGUMENTS_HEADER) {
            Some(a) => toolgate::json::parse_strict(a)
                .map_err(|e| format!("`{ARGUMENTS_HEADER}` is not JSON: {e}"))?,
            None => json!({}),
        };
        return Ok(json!({"tool": tool, "args": args}).to_string());
    }
    let text =
        std::str::from_utf8(body).map_err(|_| "the request body is not UTF-8".to_string())?;
    if toolgate::json::values_over(text, crate::hook::VALUE_LIMIT) {
        return Err("the request body holds too many JSON values".into());
    }
    let rpc = toolgate::json::parse_strict(text).map_err(|e| {
        format!("the request carries no tool call: no `{TOOL_HEADER}` header, and the body is not JSON ({e})")
    })?;
    if rpc.get("method").and_then(Value::as_str) != Some("tools/call") {
        return Err("the request carries no tool call: it is not an MCP `tools/call`".into());
    }
    let params = rpc
        .get("params")
        .ok_or("the `tools/call` has no `params`")?;
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or("the `tools/call` names no tool in `params.name`")?;
    let args = params
        .get("arguments")
        .cloned()
        .unwrap_or_else(|| json!({}));
    Ok(json!({"tool": name, "args": args}).to_string())
}

fn text(s: &str) -> PValue {
    PValue {
        kind: Some(Kind::StringValue(s.to_string())),
    }
}

fn header(key: &str, value: &str) -> HeaderValueOption {
    HeaderValueOption {
        header: Some(HeaderValue {
            key: key.to_string(),
            value: value.to_string(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn string_at<'v>(v: &'v Value, keys: &[&str]) -> &'v str {
    keys.iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str))
        .unwrap_or("")
}

#[tonic::async_trait]
impl Authorization for Authz {
    async fn check(
        &self,
        request: tonic::Request<CheckRequest>,
    ) -> Result<tonic::Response<CheckResponse>, tonic::Status> {
        let state = &self.state;
        let loaded = state.current.load_full();
        let authorised = match &state.token {
            None => true,
            Some(t) => request
                .metadata()
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .is_some_and(|given| crate::http::same(given, t)),
        };
        let http = request
            .get_ref()
            .attributes
            .as_ref()
            .and_then(|a| a.request.as_ref())
            .and_then(|r| r.http.as_ref());
        let verdict = if !authorised {
            state.metrics.refused("unauthorised");
            crate::http::refused_verdict(state, &loaded, "the check carries no valid token: send `authorization: Bearer TOKEN` as gRPC metadata")
        } else {
            match call_of(http, state.max_body) {
                Ok(call) => crate::http::decide_caught(state, &loaded, &call).0,
                Err(why) => {
                    state.metrics.refused("no_call");
                    crate::http::refused_verdict(state, &loaded, &why)
                }
            }
        };
        let outcome = crate::decide::outcome(&verdict);
        let reason = match verdict.get("decision") {
            Some(Value::Object(d)) => d.get("reason").and_then(Value::as_str).unwrap_or(""),
            _ => string_at(&verdict, &["reason"]),
        };
        let rule = string_at(&verdict, &["rule", "matchedRuleId"]);
        let mut meta = Struct::default();
        for (k, v) in [
            ("decision", outcome),
            ("rule", rule),
            ("reason", reason),
            ("revision", string_at(&verdict, &["revision"])),
            ("decision_id", string_at(&verdict, &["decision_id"])),
        ] {
            meta.fields.insert(k.to_string(), text(v));
        }
        let mut response;
        if outcome == "allow" {
            response = CheckResponse::with_status(tonic::Status::ok(""));
            response.set_http_response(OkHttpResponse {
                headers: vec![header(DECISION_HEADER, "allow")],
                ..Default::default()
            });
        } else {
            let why = if reason.is_empty() {
                format!("{outcome} by toolgate")
            } else {
                reason.to_string()
            };
            response = CheckResponse::with_status(tonic::Status::permission_denied(why.clone()));
            response.set_http_response(DeniedHttpResponse {
                status: Some(HttpStatus {
                    code: HttpStatusCode::Forbidden as i32,
                }),
                headers: vec![header(DECISION_HEADER, outcome)],
                body: why,
            });
        }
        response.set_dynamic_metadata(Some(meta));
        Ok(tonic::Response::new(response))
    }
}
