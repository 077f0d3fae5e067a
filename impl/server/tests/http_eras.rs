//! Methods the 2026-07-28 protocol removed, sent over Streamable HTTP in that era (spec/cli.md
//! `cli.serve.http-removed-methods`): answered as unknown methods (404, -32601) whatever
//! params they carry, never judged by the params of the era that had them.

mod mcp_support;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::{Body, to_bytes};
use axum::http::{Request, StatusCode, header};
use mcp_support::*;
use serde_json::{Value, json};
use tc_server::auth::Authenticator;
use tc_server::config::AuthConfig;
use tower::ServiceExt;

const MODERN: &str = "2026-07-28";

fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "eras-test", "version": "0"},
    })
}

async fn post(app: &axum::Router, body: Value) -> (StatusCode, Value) {
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    let mut request = Request::post("/mcp")
        .header(header::HOST, "127.0.0.1:7777")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", &method);
    if let Some(name) = body["params"]["name"].as_str() {
        request = request.header("mcp-name", name);
    }
    let request = request.body(Body::from(body.to_string())).unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = to_bytes(response.into_body(), 1 << 20).await.unwrap();
    let text = String::from_utf8_lossy(&bytes);
    // A JSON body, or one SSE `data:` line carrying it.
    let json = text
        .lines()
        .find_map(|line| line.strip_prefix("data:"))
        .unwrap_or(&text)
        .trim()
        .to_owned();
    (
        status,
        serde_json::from_str(&json).unwrap_or_else(|_| json!({ "raw": text })),
    )
}

// r[verify cli.serve.http-removed-methods]
#[tokio::test]
async fn removed_methods_are_unknown_whatever_their_params() {
    let h = Harness::new();
    let auth = Arc::new(Authenticator::from_config(&AuthConfig::default()).unwrap());
    let bound: SocketAddr = "127.0.0.1:7777".parse().unwrap();
    let app = tc_server::serve::http_app(h.core.clone(), auth, bound);
    let mut id = 0;
    for method in [
        "initialize",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
    ] {
        // Without the old params, with wrong ones, and with the old ones where the old
        // request type would not swallow the era (initialize always means the old era).
        for params in [json!({}), json!({"level": 5, "uri": 7})] {
            id += 1;
            let mut params = params;
            params["_meta"] = modern_meta();
            let (status, reply) = post(
                &app,
                json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
            )
            .await;
            assert_eq!(reply["error"]["code"], -32601, "{method}: {reply}");
            assert_eq!(reply["id"], id, "{method}: {reply}");
            assert_eq!(status, StatusCode::NOT_FOUND, "{method}: {reply}");
        }
    }
    // A method the era has, with params of the wrong type, is still invalid params.
    let (_, reply) = post(
        &app,
        json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
               "params": {"name": 7, "_meta": modern_meta()}}),
    )
    .await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
}
