//! Edges of input, as a careless client or a hostile vault would give them: one message at
//! the limit and one byte over it, on stdio and over HTTP (spec/config.md
//! `config.message-limit.addressed`); JWTs just past and just inside the clock leeway (spec/auth.md
//! `auth.jwt.leeway`); and a vault whose folder link leads a caller limited to `public/**`
//! towards private notes, through resources and the paging tools (spec/vault.md
//! `vault.path.links-judged-at-target`).

mod mcp_support;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::{Body, to_bytes};
use axum::http::{Request, StatusCode, header};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_support::*;
use rmcp::model::ReadResourceRequestParams;
use rmcp::service::ServiceError;
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tc_server::auth::{AuthError, Authenticator, JWT_LEEWAY_SECS};
use tc_server::config::{AuthConfig, AuthMode, Config};
use tc_server::http::MAX_MESSAGE_BYTES;
use tc_server::stdio::JsonLines;
use tc_vault::acl::AclConfig;
use tokio::io::AsyncReadExt;
use tower::ServiceExt;

/// A JSON-RPC request of exactly `size` bytes: `{"jsonrpc":"2.0","id":ID,"method":METHOD,
/// "params":{...}}` padded with spaces (JSON whitespace) before the closing brace.
fn message_of(size: usize, id: u64, method: &str, params: Value) -> Vec<u8> {
    let bare = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
    assert!(
        bare.len() < size,
        "the bare message is already {} bytes",
        bare.len()
    );
    let mut bytes = bare.into_bytes();
    let close = bytes.pop().unwrap();
    bytes.resize(size - 1, b' ');
    bytes.push(close);
    assert_eq!(bytes.len(), size);
    bytes
}

// r[verify config.message-limit.addressed]
#[tokio::test]
async fn stdio_takes_a_message_at_the_limit_and_answers_one_byte_over() {
    let at_limit = message_of(MAX_MESSAGE_BYTES, 1, "ping", json!({}));
    let over = message_of(MAX_MESSAGE_BYTES + 1, 2, "ping", json!({}));
    let after = message_of(64, 3, "ping", json!({}));
    let input = [&at_limit[..], b"\n", &over, b"\n", &after, b"\n"].concat();
    let (write, mut peer) = tokio::io::duplex(1 << 16);
    let mut transport = JsonLines::new(std::io::Cursor::new(input), write);
    let first = transport.receive().await.expect("the message at the limit");
    assert_eq!(serde_json::to_value(&first).unwrap()["id"], 1);
    let next = transport.receive().await.expect("the message after");
    assert_eq!(
        serde_json::to_value(&next).unwrap()["id"],
        3,
        "one byte over is refused"
    );
    drop(transport);
    let mut out = String::new();
    peer.read_to_string(&mut out).await.unwrap();
    let replies: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(replies.len(), 1, "{out}");
    assert_eq!(replies[0]["id"], 2, "answered under the request's own id");
    assert_eq!(replies[0]["error"]["code"], -32600);
    assert_eq!(replies[0]["error"]["data"]["limit"], MAX_MESSAGE_BYTES);
    let said = replies[0]["error"]["message"].as_str().unwrap();
    assert!(said.contains(&MAX_MESSAGE_BYTES.to_string()), "{said}");
}

/// A `write_note` of 10 MB: the id comes after the method and a nested `id` in the params.
fn big_write(id: Value, pad_before_id: usize) -> Vec<u8> {
    let head = format!(
        r#"{{"jsonrpc":"2.0","method":"tools/call","pad":"{}","params":{{"id":"not-this","name":"write_note"}},"id":{id},"#,
        "p".repeat(pad_before_id)
    );
    let mut line = head.into_bytes();
    line.extend_from_slice(br#""more":{"content":""#);
    line.resize(10_000_000, b'x');
    line.extend_from_slice(b"\"}}\n");
    line
}

// r[verify config.message-limit.addressed]
#[tokio::test]
async fn stdio_answers_an_oversized_request_under_its_own_id() {
    let after = message_of(64, 9, "ping", json!({}));
    let input = [
        big_write(json!("w-1"), 0),
        big_write(json!(77), 50_000),
        // Past the first 64 KiB, the id is not looked for.
        big_write(json!(78), 70_000),
        after,
        b"\n".to_vec(),
    ]
    .concat();
    let (write, mut peer) = tokio::io::duplex(1 << 16);
    let mut transport = JsonLines::new(std::io::Cursor::new(input), write);
    let next = transport.receive().await.expect("the message after");
    assert_eq!(serde_json::to_value(&next).unwrap()["id"], 9);
    drop(transport);
    let mut out = String::new();
    peer.read_to_string(&mut out).await.unwrap();
    let replies: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<&Value> = replies.iter().map(|r| &r["id"]).collect();
    assert_eq!(ids, [&json!("w-1"), &json!(77), &Value::Null], "{out}");
    for reply in &replies {
        assert_eq!(reply["error"]["code"], -32600, "{reply}");
    }
}

// r[verify cli.serve.stdio-backpressure]
#[tokio::test]
async fn stdio_stops_reading_while_its_answers_are_not_read() {
    use tc_server::stdio::MAX_UNWRITTEN_MESSAGES;
    let sends = 4 * MAX_UNWRITTEN_MESSAGES;
    let input = message_of(64, 1, "ping", json!({}));
    let (write, mut peer) = tokio::io::duplex(1024);
    let mut transport = JsonLines::new(std::io::Cursor::new([&input[..], b"\n"].concat()), write);
    // rmcp spawns each send; the client reads none of them, so stdout fills at 1 KiB.
    let writes: Vec<_> = (0..sends)
        .map(|id| {
            let answer: rmcp::model::ServerJsonRpcMessage =
                serde_json::from_value(json!({"jsonrpc": "2.0", "id": id, "result": {}})).unwrap();
            tokio::spawn(transport.send(answer))
        })
        .collect();
    let held =
        tokio::time::timeout(std::time::Duration::from_millis(300), transport.receive()).await;
    assert!(
        held.is_err(),
        "read a request while {sends} answers were unwritten"
    );
    // The client reads: every answer arrives, in full, and the request is read.
    let reader = tokio::spawn(async move {
        let mut out = String::new();
        peer.read_to_string(&mut out).await.unwrap();
        out
    });
    let request = tokio::time::timeout(std::time::Duration::from_secs(10), transport.receive())
        .await
        .expect("reads on once the answers are read")
        .expect("the request");
    assert_eq!(serde_json::to_value(&request).unwrap()["id"], 1);
    for write in writes {
        write.await.unwrap().unwrap();
    }
    drop(transport);
    let out = reader.await.unwrap();
    assert_eq!(out.lines().count(), sends, "no answer lost");
    for line in out.lines() {
        serde_json::from_str::<Value>(line).unwrap();
    }
}

fn initialize_params() -> Value {
    json!({
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "edges-test", "version": "0"}
    })
}

fn post(body: Body, length: Option<usize>) -> Request<Body> {
    let mut request = Request::post("/mcp")
        .header(header::HOST, "127.0.0.1:7777")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream");
    if let Some(length) = length {
        request = request.header(header::CONTENT_LENGTH, length);
    }
    request.body(body).unwrap()
}

// r[verify config.message-limit.addressed]
#[tokio::test]
async fn http_takes_a_body_at_the_limit_and_refuses_one_byte_over() {
    let h = Harness::new();
    let auth = Arc::new(Authenticator::from_config(&AuthConfig::default()).unwrap());
    let bound: SocketAddr = "127.0.0.1:7777".parse().unwrap();
    let app = tc_server::serve::http_app(h.core.clone(), auth, bound);

    // The real MCP service takes an initialize of exactly the limit.
    let at_limit = message_of(MAX_MESSAGE_BYTES, 1, "initialize", initialize_params());
    let response = app
        .clone()
        .oneshot(post(Body::from(at_limit), Some(MAX_MESSAGE_BYTES)))
        .await
        .unwrap();
    let status = response.status();
    let body = to_bytes(response.into_body(), 1 << 20).await.unwrap();
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));

    // One byte over: 413, whether the length is declared or not.
    let over = message_of(MAX_MESSAGE_BYTES + 1, 2, "initialize", initialize_params());
    let declared = app
        .clone()
        .oneshot(post(Body::from(over.clone()), Some(over.len())))
        .await
        .unwrap();
    assert_eq!(declared.status(), StatusCode::PAYLOAD_TOO_LARGE);
    // No Content-Length: the body is counted as it is read.
    let streamed = app.oneshot(post(Body::from(over), None)).await.unwrap();
    assert_eq!(streamed.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let text = to_bytes(streamed.into_body(), 4096).await.unwrap();
    assert!(
        String::from_utf8_lossy(&text).contains(&MAX_MESSAGE_BYTES.to_string()),
        "the refusal names the limit"
    );
}

const SECRET: &str = "an-hs256-test-secret-of-32-bytes!!";

// r[verify auth.unauthenticated]
#[tokio::test]
async fn a_request_without_credentials_is_refused_before_its_body_is_read() {
    use tokio::io::AsyncWriteExt;
    let h = Harness::new();
    let auth = Arc::new(
        Authenticator::from_config(&AuthConfig {
            mode: AuthMode::Jwt,
            jwt_secret: Some(SECRET.into()),
            ..AuthConfig::default()
        })
        .unwrap(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let bound = listener.local_addr().unwrap();
    let app = tc_server::serve::http_app(h.core.clone(), auth, bound);
    tokio::spawn(async move { axum::serve(listener, app).await });
    // A body of 4 MiB is announced and 16 bytes of it sent; the rest never comes.
    let mut peer = tokio::net::TcpStream::connect(bound).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {bound}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {MAX_MESSAGE_BYTES}\r\n\r\n\
         {{\"jsonrpc\":\"2.0\""
    );
    peer.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0; 4096];
    let read = tokio::time::timeout(std::time::Duration::from_secs(3), peer.read(&mut answer))
        .await
        .expect("answered without waiting for a body nobody vouched for")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer[..read]);
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert!(answer.contains("www-authenticate: Bearer"), "{answer}");
}

fn token_with(claims: Value) -> String {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(SECRET.as_bytes()).unwrap(),
    )
    .unwrap()
}

// r[verify auth.jwt.leeway]
#[tokio::test]
async fn jwt_times_are_judged_with_a_small_leeway() {
    assert_eq!(JWT_LEEWAY_SECS, 5);
    let auth = Authenticator::from_config(&AuthConfig {
        mode: AuthMode::Jwt,
        jwt_secret: Some(SECRET.into()),
        ..AuthConfig::default()
    })
    .unwrap();
    let now = jsonwebtoken::get_current_timestamp() as i64;
    let verdict = |claims: Value| {
        let token = token_with(claims);
        let auth = &auth;
        async move { auth.verify(&token).await }
    };
    // Expired 30 s ago: inside jsonwebtoken's default 60 s, past ours.
    let stale = verdict(json!({"sub": "eve", "exp": now - 30})).await;
    match stale {
        Err(AuthError::InvalidToken(reason)) => assert!(reason.contains("expired"), "{reason}"),
        other => panic!("a token expired 30 s ago was not refused: {other:?}"),
    }
    // Expired a second ago: within the leeway, for a clock a little behind.
    verdict(json!({"sub": "eve", "exp": now - 1}))
        .await
        .expect("within the leeway");
    // Not valid for another 30 s: refused; for another second: accepted.
    assert!(
        verdict(json!({"sub": "eve", "exp": now + 600, "nbf": now + 30}))
            .await
            .is_err()
    );
    verdict(json!({"sub": "eve", "exp": now + 600, "nbf": now + 1}))
        .await
        .expect("nbf within the leeway");
}

/// A vault whose ACL lets every caller read only `public/**`, with `public/link ->
/// private/` and `public/diary.md -> ../private/diary.md`.
#[cfg(unix)]
fn linked_vault() -> Harness {
    let h = Harness::with(|c: &mut Config| {
        c.vaults[0].acl = Some(AclConfig {
            read_paths: Some(vec!["public/**".to_owned()]),
            ..AclConfig::default()
        });
    });
    h.write("private/diary.md", "secret diary\n");
    h.write("public/plain.md", "plain\n");
    std::os::unix::fs::symlink(h.vault.join("private"), h.vault.join("public/link")).unwrap();
    std::os::unix::fs::symlink("../private/diary.md", h.vault.join("public/diary.md")).unwrap();
    h
}

// r[verify vault.path.links-judged-at-target]
// r[verify search.acl]
/// The index holds `public/diary.md` (a link to a note under `private/`) with the target's
/// words; a search must judge the hit where the link leads, as a read does.
#[cfg(unix)]
#[tokio::test]
async fn search_judges_links_at_their_target() {
    let h = linked_vault();
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    for query in ["secret", "diary"] {
        let found = success(&call(&client, "search_notes", json!({"query": query})).await);
        let text = found.to_string();
        assert!(!text.contains("secret diary"), "{query}: {text}");
        assert!(!text.contains("diary.md"), "{query}: {text}");
        assert_eq!(found["results"], json!([]), "{query}: {found}");
    }
    let plain = success(&call(&client, "search_notes", json!({"query": "plain"})).await);
    assert!(plain.to_string().contains("public/plain.md"), "{plain}");
}

// r[verify vault.path.links-judged-at-target]
#[cfg(unix)]
#[tokio::test]
async fn resources_and_paging_judge_links_at_their_target() {
    let h = linked_vault();
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let resources = client.list_all_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["obsidian-tc://vault/public/plain.md"]);
    for uri in [
        "obsidian-tc://vault/public/link/diary.md",
        "obsidian-tc://vault/public/diary.md",
    ] {
        match client
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .unwrap_err()
        {
            ServiceError::McpError(error) => {
                assert_eq!(error.code.0, -32602, "{uri}");
                assert!(
                    error.message.contains("private/diary.md"),
                    "{}",
                    error.message
                );
            }
            other => panic!("{uri}: expected invalid params, got {other:?}"),
        }
    }

    // read_notes by paths reports each link as acl_denied; by folder (the link itself as
    // the folder, and the whole vault) it shows nothing of private/.
    let page = success(
        &call(
            &client,
            "read_notes",
            json!({"paths": ["public/plain.md", "public/link/diary.md", "public/diary.md"]}),
        )
        .await,
    );
    let text = page.to_string();
    assert!(!text.contains("secret diary"), "{text}");
    let codes: Vec<&str> = page["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["acl_denied", "acl_denied"], "{page}");
    for folder in ["public/link", "public", ""] {
        for tool in ["read_notes", "list_notes"] {
            let page = success(&call(&client, tool, json!({"folder": folder})).await);
            let text = page.to_string();
            assert!(!text.contains("secret diary"), "{tool} {folder}: {text}");
            assert!(!text.contains("private/"), "{tool} {folder}: {text}");
            assert!(!text.contains("public/link/"), "{tool} {folder}: {text}");
            assert!(!text.contains("public/diary.md"), "{tool} {folder}: {text}");
        }
    }
}
