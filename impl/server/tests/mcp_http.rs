//! The MCP server over Streamable HTTP through axum on 127.0.0.1:0, driven by rmcp's
//! streamable HTTP client, in jwt mode with two callers: approvals never cross callers, the
//! modern round trip works over HTTP, and a legacy-era HTTP session gets the plain
//! `elicit_required` even with the shim enabled.

mod mcp_support;

use std::sync::Arc;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_support::*;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResponse, InputResponses, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tc_gate::EventName;
use tc_server::auth::Authenticator;
use tc_server::config::{AuthMode, Config};

const SECRET: &str = "an-hs256-secret-of-at-least-32-bytes!!";
const NOTE: &str = "shared.md";

fn configure(config: &mut Config) {
    config.auth.mode = AuthMode::Jwt;
    config.auth.jwt_secret = Some(SECRET.to_owned());
}

fn token(sub: &str) -> String {
    scoped_token(sub, "*")
}

fn scoped_token(sub: &str, scope: &str) -> String {
    let now = jsonwebtoken::get_current_timestamp() as i64;
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &json!({"sub": sub, "scope": scope, "iat": now, "exp": now + 600}),
        &EncodingKey::from_secret(SECRET.as_bytes()).unwrap(),
    )
    .unwrap()
}

/// Serves `core` on 127.0.0.1:0 and returns the /mcp URL.
async fn serve(core: Arc<tc_server::server::ServerCore>) -> String {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut config = Config::default();
    configure(&mut config);
    let auth = Arc::new(Authenticator::from_config(&config.auth).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let bound = listener.local_addr().unwrap();
    let app = tc_server::serve::http_app(core, auth, bound);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{bound}/mcp")
}

async fn http_client(url: &str, sub: &str, client: TestClient) -> Client {
    http_client_with(url, token(sub), client).await
}

async fn http_client_with(url: &str, bearer: String, client: TestClient) -> Client {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(bearer),
    );
    if client.version.as_str() >= ProtocolVersion::V_2026_07_28.as_str() {
        client
            .serve_with_lifecycle(
                transport,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .unwrap()
    } else {
        client.serve(transport).await.unwrap()
    }
}

fn confirm(reply: Reply) -> InputResponses {
    let mut responses = InputResponses::new();
    responses.insert("confirm".to_owned(), reply.json());
    responses
}

fn delete(state: Option<String>, reply: Option<Reply>) -> CallToolRequestParams {
    let mut params =
        CallToolRequestParams::new("delete_note").with_arguments(args(json!({"path": NOTE})));
    if let Some(state) = state {
        params = params.with_request_state(state);
    }
    if let Some(reply) = reply {
        params = params.with_input_responses(confirm(reply));
    }
    params
}

fn structured(response: CallToolResponse) -> Value {
    match response {
        CallToolResponse::Complete(result) if result.is_error == Some(true) => {
            mcp_support::failure(&result)
        }
        CallToolResponse::Complete(result) => result.structured_content.unwrap_or(Value::Null),
        other => panic!("expected a complete result, got {other:?}"),
    }
}

// r[verify auth.isolation]
// r[verify approval.bound]
// r[verify state.every-auth-mode]
// r[verify trip.modern.transports]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_jwt_callers_never_redeem_each_others_approvals() {
    let h = Harness::with(configure);
    h.write(NOTE, "shared\n");
    let url = serve(h.core.clone()).await;
    let alice = http_client(&url, "alice", modern(Reply::Approve)).await;
    let bob = http_client(&url, "bob", modern(Reply::Approve)).await;

    // Alice is offered the round trip; Bob echoing her state with an approval gets only a
    // fresh confirmation of his own.
    let asked = match alice.call_tool_once(delete(None, None)).await.unwrap() {
        CallToolResponse::InputRequired(result) => result,
        other => panic!("expected input_required, got {other:?}"),
    };
    let bob_try = bob
        .call_tool_once(delete(asked.request_state.clone(), Some(Reply::Approve)))
        .await
        .unwrap();
    assert!(
        matches!(bob_try, CallToolResponse::InputRequired(_)),
        "{bob_try:?}"
    );
    assert!(h.read(NOTE).is_some());

    // A CLI token minted for Alice is refused for Bob and works for Alice.
    let legacy_alice = http_client(
        &url,
        "alice",
        TestClient::new(ProtocolVersion::V_2025_11_25, None, Reply::Approve),
    )
    .await;
    let legacy_bob = http_client(
        &url,
        "bob",
        TestClient::new(ProtocolVersion::V_2025_11_25, None, Reply::Approve),
    )
    .await;
    let refusal = structured(
        legacy_alice
            .call_tool_once(delete(None, None))
            .await
            .unwrap(),
    );
    assert_eq!(refusal["code"], "elicit_required");
    assert!(
        refusal["recovery"]["command"]
            .as_str()
            .unwrap()
            .contains("--caller alice")
    );
    let minted = h.mint(&refusal, "alice");
    let with_token = |t: &str| {
        CallToolRequestParams::new("delete_note")
            .with_arguments(args(json!({"path": NOTE, "elicit_token": t})))
    };
    let stolen = structured(
        legacy_bob
            .call_tool_once(with_token(&minted))
            .await
            .unwrap(),
    );
    assert_eq!(stolen["code"], "elicit_required");
    assert_eq!(stolen["details"]["token_rejected"], "invalid");
    assert!(
        !stolen["recovery"]["command"]
            .as_str()
            .unwrap()
            .contains("alice")
    );
    assert!(h.read(NOTE).is_some());

    // Alice's own modern approval applies.
    let done = structured(
        alice
            .call_tool_once(delete(asked.request_state, Some(Reply::Approve)))
            .await
            .unwrap(),
    );
    assert!(done.get("code").is_none(), "{done}");
    assert!(h.read(NOTE).is_none());
    assert_eq!(h.events(EventName::Consumed), 1);
}

// r[verify trip.legacy-shim.stdio-only]
// r[verify trip.legacy-plain]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_http_gets_elicit_required_even_with_the_shim_on() {
    let h = Harness::with(configure);
    h.write(NOTE, "shared\n");
    let shim_core = h.sibling(configure, true);
    let url = serve(shim_core).await;
    let client = http_client(&url, "carol", legacy(Reply::Approve)).await;
    let result = client.call_tool(delete(None, None)).await.unwrap();
    assert_eq!(failure(&result)["code"], "elicit_required");
    assert_eq!(client.service().prompts(), 0);
    assert!(h.read(NOTE).is_some());
}

// r[verify dispatch.order]
// r[verify dispatch.scopes]
// r[verify dispatch.schema]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_then_scopes_then_the_gate() {
    let h = Harness::with(configure);
    h.write(NOTE, "shared\n");
    let url = serve(h.core.clone()).await;
    let reader = http_client_with(
        &url,
        scoped_token("dave", "read:notes"),
        modern(Reply::Approve),
    )
    .await;
    // A malformed call fails the schema before the missing scope is even looked at.
    let malformed = structured(
        reader
            .call_tool_once(
                CallToolRequestParams::new("delete_note").with_arguments(args(json!({"path": 1}))),
            )
            .await
            .unwrap(),
    );
    assert_eq!(malformed["code"], "validation_error");
    // A well-formed call without write:notes is refused before the gate: no prompt, no raise.
    let denied = structured(reader.call_tool_once(delete(None, None)).await.unwrap());
    assert_eq!(denied["code"], "acl_denied");
    assert_eq!(denied["details"]["scope"], "write:notes");
    assert_eq!(h.events(EventName::Requested), 0);
    // Reading is within its scope.
    let read = structured(
        reader
            .call_tool_once(
                CallToolRequestParams::new("read_notes")
                    .with_arguments(args(json!({"paths": [NOTE]}))),
            )
            .await
            .unwrap(),
    );
    assert_eq!(read["notes"][0]["content"], "shared\n");
    assert!(h.read(NOTE).is_some());
}

// r[verify dispatch.scopes.every]
// r[verify dispatch.scopes.reference]
/// A token holding what these tools needed before they took the reference server's scopes
/// is refused, naming the scope it lacks, before any confirmation is raised; holding every
/// scope a tool lists lets the call reach the gate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tool_needs_every_scope_the_reference_names() {
    let h = Harness::with(configure);
    h.write(NOTE, "- [ ] a task\n");
    let url = serve(h.core.clone()).await;
    let cases = [
        ("delete_note", json!({"path": NOTE}), "delete:notes"),
        (
            "move_note",
            json!({"from": NOTE, "to": "elsewhere/moved.md"}),
            "delete:notes",
        ),
        (
            "update_task",
            json!({"path": NOTE, "line": 1, "status": "done"}),
            "write:tasks",
        ),
        (
            "capture_note",
            json!({"content": "an idea"}),
            "write:capture",
        ),
        ("list_captures", json!({}), "read:capture"),
    ];
    let old = http_client_with(
        &url,
        scoped_token("erin", "read:notes write:notes"),
        modern(Reply::Approve),
    )
    .await;
    for (tool, arguments, scope) in &cases {
        let denied = structured(
            old.call_tool_once(
                CallToolRequestParams::new(*tool).with_arguments(args(arguments.clone())),
            )
            .await
            .unwrap(),
        );
        assert_eq!(denied["code"], "acl_denied", "{tool}: {denied}");
        assert_eq!(denied["details"]["scope"], *scope, "{tool}: {denied}");
    }
    // commit_capture needs write:notes beside write:capture.
    let capturer = http_client_with(
        &url,
        scoped_token("erin", "write:capture"),
        modern(Reply::Approve),
    )
    .await;
    let denied = structured(
        capturer
            .call_tool_once(
                CallToolRequestParams::new("commit_capture")
                    .with_arguments(args(json!({"capture_id": 1, "path": "c.md"}))),
            )
            .await
            .unwrap(),
    );
    assert_eq!(denied["details"]["scope"], "write:notes", "{denied}");
    assert_eq!(h.events(EventName::Requested), 0, "nothing was raised");
    assert_eq!(h.read(NOTE).as_deref(), Some("- [ ] a task\n"));

    // With every scope the reference names, the delete reaches the gate.
    let full = http_client_with(
        &url,
        scoped_token("erin", "read:notes write:notes delete:notes"),
        legacy(Reply::Approve),
    )
    .await;
    let asked = structured(full.call_tool_once(delete(None, None)).await.unwrap());
    assert_eq!(asked["code"], "elicit_required", "{asked}");
}

// r[verify state.every-auth-mode]
// r[verify auth.none.caller]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_round_trip_works_under_auth_none_as_http_local() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let h = Harness::new();
    h.write(NOTE, "shared\n");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let bound = listener.local_addr().unwrap();
    let app = tc_server::serve::http_app(h.core.clone(), Arc::new(Authenticator::none()), bound);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("http://{bound}/mcp")),
    );
    let client = modern(Reply::Approve)
        .serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap();
    let asked = match client.call_tool_once(delete(None, None)).await.unwrap() {
        CallToolResponse::InputRequired(result) => result,
        other => panic!("expected input_required, got {other:?}"),
    };
    let done = structured(
        client
            .call_tool_once(delete(asked.request_state, Some(Reply::Approve)))
            .await
            .unwrap(),
    );
    assert!(done.get("code").is_none(), "{done}");
    assert!(h.read(NOTE).is_none());
    let raised = h.core.gate().events(0, 100).unwrap();
    assert!(
        raised
            .iter()
            .any(|e| e.caller_hash.as_deref() == Some(tc_gate::caller_hash("http-local").as_str()))
    );
}

/// One raw Streamable HTTP exchange of the legacy (session) era, as `sub`: the status, the
/// `Mcp-Session-Id` the server set, and the body.
async fn legacy_exchange(
    url: &str,
    sub: &str,
    method: reqwest::Method,
    session: Option<&str>,
    body: Option<Value>,
) -> (u16, Option<String>, String) {
    let mut request = reqwest::Client::new()
        .request(method, url)
        .bearer_auth(token(sub))
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-11-25");
    if let Some(session) = session {
        request = request.header("Mcp-Session-Id", session);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let opened = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let text = tokio::time::timeout(std::time::Duration::from_secs(10), response.text())
        .await
        .expect("the response ends")
        .unwrap_or_default();
    (status, opened, text)
}

// r[verify auth.session.bound]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_session_answers_only_the_caller_that_opened_it() {
    let h = Harness::with(configure);
    let url = serve(h.core.clone()).await;
    let post = reqwest::Method::POST;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}});
    let (status, opened, _) =
        legacy_exchange(&url, "alice", post.clone(), None, Some(initialize)).await;
    assert_eq!(status, 200);
    let session = opened.expect("a legacy initialize opens a session");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, _) = legacy_exchange(
        &url,
        "alice",
        post.clone(),
        Some(&session),
        Some(initialized),
    )
    .await;
    assert_eq!(status, 202);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});

    // Bob, holding a valid token of his own and Alice's session id, can neither call through
    // her session, nor open its event stream, nor end it: each is an unknown session to him.
    for (method, body) in [
        (post.clone(), Some(list.clone())),
        (reqwest::Method::GET, None),
        (reqwest::Method::DELETE, None),
    ] {
        let (status, _, answer) =
            legacy_exchange(&url, "bob", method.clone(), Some(&session), body).await;
        assert_eq!(status, 404, "{method}: {answer}");
        assert!(!answer.contains("read_notes"), "{method}: {answer}");
    }

    // Alice's session is untouched, and she can end it herself.
    let (status, _, body) = legacy_exchange(
        &url,
        "alice",
        post.clone(),
        Some(&session),
        Some(list.clone()),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("read_notes"), "{body}");
    let (status, _, _) =
        legacy_exchange(&url, "alice", reqwest::Method::DELETE, Some(&session), None).await;
    assert!((200..300).contains(&status), "{status}");
    let (status, _, _) = legacy_exchange(&url, "alice", post, Some(&session), Some(list)).await;
    assert_eq!(status, 404);
}
