//! Envoy's `ext_authz` gRPC service through a tonic client that builds its
//! check requests as Envoy does (the HTTP request's headers, lowercased,
//! and its body), on loopback port 0.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use envoy_types::pb::envoy::service::auth::v3::attribute_context::{HttpRequest, Request};
use envoy_types::pb::envoy::service::auth::v3::authorization_client::AuthorizationClient;
use envoy_types::pb::envoy::service::auth::v3::check_response::HttpResponse;
use envoy_types::pb::envoy::service::auth::v3::{AttributeContext, CheckRequest, CheckResponse};
use envoy_types::pb::google::protobuf::value::Kind;
use std::collections::HashMap;
use std::time::Duration;
use toolgate::open::{open, Format, Opened};
use toolgate_server::{Addr, Config, Source};

const POLICY: &str = r#"{"default": "ask", "matchers": {"bash": {"match": "prefix", "field": "command"}},
    "allow": "bash(ls:*)", "deny": "bash(rm:*)"}"#;

fn check_request(headers: &[(&str, &str)], body: &str) -> CheckRequest {
    let mut h: HashMap<String, String> = headers
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    h.insert(":method".into(), "POST".into());
    h.insert(":path".into(), "/mcp".into());
    h.insert("content-type".into(), "application/json".into());
    CheckRequest {
        attributes: Some(AttributeContext {
            request: Some(Request {
                http: Some(HttpRequest {
                    method: "POST".into(),
                    path: "/mcp".into(),
                    host: "gateway".into(),
                    protocol: "HTTP/1.1".into(),
                    size: body.len() as i64,
                    headers: h,
                    body: body.into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
    }
}

fn meta(r: &CheckResponse, key: &str) -> String {
    match r
        .dynamic_metadata
        .as_ref()
        .and_then(|m| m.fields.get(key))
        .and_then(|v| v.kind.as_ref())
    {
        Some(Kind::StringValue(s)) => s.clone(),
        _ => String::new(),
    }
}

fn denied_header(r: &CheckResponse) -> Option<String> {
    match &r.http_response {
        Some(HttpResponse::DeniedResponse(d)) => d.headers.iter().find_map(|h| {
            let h = h.header.as_ref()?;
            (h.key == "x-toolgate-decision").then(|| h.value.clone())
        }),
        _ => None,
    }
}

fn tools_call(command: &str) -> String {
    serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "bash", "arguments": {"command": command}}})
    .to_string()
}

#[test]
fn envoy_checks_are_allowed_denied_and_asked_as_denies() {
    let dir = std::env::temp_dir().join(format!("tg-extauthz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("p.tgb");
    let Opened::Rules(engine) = open(POLICY.as_bytes(), Format::Detect).unwrap() else {
        unreachable!()
    };
    std::fs::write(&path, engine.to_bytes()).unwrap();
    let mut c = Config::new(Source::Bundle(path));
    c.listen = vec![Addr::parse("127.0.0.1:0").unwrap()];
    c.grpc_listen = Some(Addr::parse("127.0.0.1:0").unwrap());
    c.max_body = 4096;
    c.watch = false;
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let running = toolgate_server::start(c).await.unwrap();
        let Some(Addr::Tcp(grpc)) = running.grpc.clone() else {
            unreachable!()
        };
        let client = tokio::time::timeout(
            Duration::from_secs(5),
            AuthorizationClient::connect(format!("http://{grpc}")),
        )
        .await
        .unwrap()
        .unwrap();
        let check = |req: CheckRequest| {
            let mut client = client.clone();
            async move {
                tokio::time::timeout(Duration::from_secs(5), client.check(req))
                    .await
                    .unwrap()
                    .unwrap()
                    .into_inner()
            }
        };
        // An MCP tools/call body.
        let r = check(check_request(&[], &tools_call("ls -la"))).await;
        assert_eq!(r.status.as_ref().unwrap().code, 0);
        assert!(matches!(r.http_response, Some(HttpResponse::OkResponse(_))));
        assert_eq!(meta(&r, "decision"), "allow");
        let r = check(check_request(&[], &tools_call("rm -rf /"))).await;
        assert_eq!(r.status.as_ref().unwrap().code, tonic::Code::PermissionDenied as i32);
        assert_eq!(meta(&r, "rule"), "bash(rm:*)");
        assert!(matches!(&r.http_response, Some(HttpResponse::DeniedResponse(d)) if d.body.contains("bash(rm:*)") && d.status.as_ref().unwrap().code == 403));
        assert_eq!(denied_header(&r).as_deref(), Some("deny"));
        // Ask: a deny that says so.
        let r = check(check_request(&[], &tools_call("make"))).await;
        assert_eq!(r.status.as_ref().unwrap().code, tonic::Code::PermissionDenied as i32);
        assert_eq!(denied_header(&r).as_deref(), Some("ask"));
        // The header form.
        let r = check(check_request(
            &[("x-mcp-tool-name", "bash"), ("x-mcp-tool-arguments", r#"{"command": "ls"}"#)],
            "",
        ))
        .await;
        assert_eq!(meta(&r, "decision"), "allow");
        // A header naming `ls` beside a body the upstream reads as
        // `rm -rf /` (a call, a batch, after a byte-order mark, or with a
        // repeated key this reader refuses): denied, whatever the body.
        for body in [
            tools_call("rm -rf /"),
            format!("[{}]", tools_call("rm -rf /")),
            format!("\u{feff}  {}", tools_call("rm -rf /")),
            r#"{"method": "tools/call", "method": "tools/call", "params": {"name": "bash", "arguments": {"command": "rm -rf /"}}}"#.to_string(),
        ] {
            let r = check(check_request(
                &[("x-mcp-tool-name", "bash"), ("x-mcp-tool-arguments", r#"{"command": "ls"}"#)],
                &body,
            ))
            .await;
            assert_eq!(meta(&r, "decision"), "deny", "{body}");
            assert!(meta(&r, "reason").contains("JSON body"), "{body}");
        }
        // A body that is not JSON beside the headers is theirs.
        let r = check(check_request(
            &[("x-mcp-tool-name", "bash"), ("x-mcp-tool-arguments", r#"{"command": "ls"}"#)],
            "plain text",
        ))
        .await;
        assert_eq!(meta(&r, "decision"), "allow");
        // Cut short, too large, no call at all: denied.
        let r = check(check_request(&[("x-envoy-auth-partial-body", "true")], &tools_call("ls"))).await;
        assert_eq!(meta(&r, "decision"), "deny");
        assert!(meta(&r, "reason").contains("cut short"));
        let big = tools_call(&format!("ls {}", "a".repeat(5000)));
        let r = check(check_request(&[], &big)).await;
        assert_eq!(meta(&r, "decision"), "deny");
        assert!(meta(&r, "reason").contains("longer than 4096"));
        let r = check(check_request(&[], r#"{"jsonrpc": "2.0", "method": "tools/list"}"#)).await;
        assert_eq!(meta(&r, "decision"), "deny");
        let r = check(CheckRequest::default()).await;
        assert_eq!(meta(&r, "decision"), "deny");
        running.shutdown().await;
    });
    let _ = std::fs::remove_dir_all(&dir);
}
