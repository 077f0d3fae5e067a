//! The HTTP scaffold without a network: `/healthz`, `/metrics`, the Host and Origin checks,
//! and bearer authentication in front of `/mcp` (spec/auth.md, spec/events.md metrics).

mod idp;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::Extension;
use axum::http::{Request, StatusCode, header};
use axum::response::Response;
use axum::routing::any;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;
use tc_gate::{CountersSnapshot, RefusalReason};
use tc_server::auth::{Authenticator, Caller};
use tc_server::config::{AuthConfig, AuthMode};
use tc_server::http::{HostPolicy, HttpState, router};
use tc_server::metrics::{self, Metrics};
use tower::ServiceExt;

const SECRET: &str = "an-hs256-test-secret-of-32-bytes!!";

/// Stands in for the MCP service: answers with the caller the middleware resolved.
fn echo_caller() -> Router {
    Router::new().route(
        "/",
        any(|Extension(caller): Extension<Caller>| async move { caller.id }),
    )
}

fn app(auth: Authenticator, bound: &str) -> (Router, Arc<Metrics>) {
    let metrics = Arc::new(Metrics::new());
    let state = HttpState::new(
        Arc::new(auth),
        metrics.clone(),
        bound.parse::<SocketAddr>().unwrap(),
        Arc::default(),
    );
    (router(state, echo_caller()), metrics)
}

fn jwt_auth() -> Authenticator {
    Authenticator::from_config(&AuthConfig {
        mode: AuthMode::Jwt,
        jwt_secret: Some(SECRET.into()),
        ..AuthConfig::default()
    })
    .unwrap()
}

fn token(sub: &str) -> String {
    let exp = jsonwebtoken::get_current_timestamp() + 600;
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &json!({ "sub": sub, "exp": exp, "scope": "*" }),
        &EncodingKey::from_secret(SECRET.as_bytes()).unwrap(),
    )
    .unwrap()
}

fn get(path: &str, host: Option<&str>) -> axum::http::request::Builder {
    let builder = Request::builder().method("GET").uri(path);
    match host {
        Some(host) => builder.header(header::HOST, host),
        None => builder,
    }
}

async fn send(app: &Router, request: axum::http::request::Builder) -> Response {
    app.clone()
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap()
}

async fn body(response: Response) -> String {
    let bytes = to_bytes(response.into_body(), 1 << 20).await.unwrap();
    String::from_utf8(bytes.to_vec()).unwrap()
}

const HOST: &str = "127.0.0.1:8080";

// r[verify metrics.endpoint]
#[tokio::test]
async fn healthz_answers_ok() {
    let (app, _) = app(Authenticator::none(), HOST);
    let response = send(&app, get("/healthz", Some(HOST))).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(body(response).await, "ok");
    // Health and metrics need no token even under jwt.
    let (app, _) = self::app(jwt_auth(), HOST);
    assert_eq!(
        send(&app, get("/healthz", Some(HOST))).await.status(),
        StatusCode::OK
    );
    assert_eq!(
        send(&app, get("/nowhere", Some(HOST))).await.status(),
        StatusCode::NOT_FOUND
    );
}

// r[verify metrics.endpoint]
// r[verify metrics.truncations]
// r[verify metrics.confirmations]
#[tokio::test]
async fn metrics_serves_every_counter_in_prometheus_text() {
    let (app, metrics) = app(Authenticator::none(), HOST);
    metrics.governor_truncation();
    metrics.confirmation_requested();
    metrics.confirmation_requested();
    metrics.confirmation_consumed();
    metrics.confirmation_released();
    metrics.confirmation_refused(RefusalReason::ReplayDrift);
    let response = send(&app, get("/metrics", Some(HOST))).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        metrics::CONTENT_TYPE
    );
    let text = body(response).await;
    for line in [
        "obsidian_tc_governor_truncations_total 1",
        "obsidian_tc_elicit_requested_total 2",
        "obsidian_tc_elicit_consumed_total 1",
        "obsidian_tc_elicit_released_total 1",
        "obsidian_tc_elicit_refused_total{reason=\"replay_drift\"} 1",
        "obsidian_tc_elicit_refused_total{reason=\"expired\"} 0",
        "# TYPE obsidian_tc_governor_truncations counter",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in:\n{text}"
        );
    }
    assert!(text.ends_with("# EOF\n"), "{text}");
}

fn snapshot(requested: u64, overflows: u64, drift: u64) -> CountersSnapshot {
    CountersSnapshot {
        requested,
        minted: 0,
        consumed: 0,
        released: 0,
        kept_spent: 0,
        overflows,
        refused: RefusalReason::ALL
            .iter()
            .map(|r| {
                (
                    *r,
                    if *r == RefusalReason::ReplayDrift {
                        drift
                    } else {
                        0
                    },
                )
            })
            .collect(),
    }
}

fn value_of(text: &str, series: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {series} in {text}"))
}

// r[verify metrics.confirmations]
// r[verify metrics.truncations]
#[test]
fn gate_snapshots_are_absorbed_by_their_growth() {
    let metrics = Metrics::new();
    metrics.absorb_gate(&snapshot(3, 1, 2));
    metrics.absorb_gate(&snapshot(5, 1, 2));
    let text = metrics.encode();
    assert_eq!(value_of(&text, "obsidian_tc_elicit_requested_total"), 5);
    assert_eq!(value_of(&text, "obsidian_tc_governor_truncations_total"), 1);
    assert_eq!(
        value_of(
            &text,
            "obsidian_tc_elicit_refused_total{reason=\"replay_drift\"}"
        ),
        2
    );
    // A new gate starts from zero again: its counts are added, never subtracted.
    metrics.absorb_gate(&snapshot(1, 0, 0));
    let text = metrics.encode();
    assert_eq!(value_of(&text, "obsidian_tc_elicit_requested_total"), 6);
}

// r[verify metrics.no-secrets]
#[tokio::test]
async fn metrics_never_name_a_caller() {
    let (app, metrics) = app(jwt_auth(), HOST);
    let response = send(
        &app,
        get("/mcp", Some(HOST)).header(header::AUTHORIZATION, format!("Bearer {}", token("alice"))),
    )
    .await;
    assert_eq!(body(response).await, "alice");
    metrics.confirmation_requested();
    let text = body(send(&app, get("/metrics", Some(HOST))).await).await;
    assert!(!text.contains("alice"));
    assert!(!text.contains(SECRET));
}

// r[verify auth.host-origin]
#[tokio::test]
async fn a_foreign_host_is_refused() {
    let (app, _) = app(Authenticator::none(), HOST);
    for good in [HOST, "localhost:8080", "LOCALHOST:8080", "[::1]:8080"] {
        let response = send(&app, get("/healthz", Some(good))).await;
        assert_eq!(response.status(), StatusCode::OK, "{good}");
    }
    for bad in [
        "evil.example",
        "evil.example:8080",
        "127.0.0.1:9999",
        "localhost",
    ] {
        let response = send(&app, get("/healthz", Some(bad))).await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{bad}");
    }
    let response = send(&app, get("/mcp", None)).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);

    // An unspecified bind (jwt/oidc only) takes an IP address on its port, and a name only
    // when http.allowedHosts lists it (see tests/http_containment.rs).
    let (open, _) = self::app(jwt_auth(), "0.0.0.0:8443");
    let response = send(&open, get("/healthz", Some("192.0.2.10:8443"))).await;
    assert_eq!(response.status(), StatusCode::OK);
    let response = send(&open, get("/healthz", Some("mcp.example.com"))).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
}

#[test]
fn host_policy_forms() {
    let policy = HostPolicy::for_bind("127.0.0.1:80".parse().unwrap());
    assert!(policy.host_allowed("localhost"));
    assert!(policy.host_allowed("localhost:80"));
    let public = HostPolicy::for_bind("192.0.2.10:8443".parse().unwrap());
    assert!(public.host_allowed("192.0.2.10:8443"));
    assert!(!public.host_allowed("localhost:8443"));
    let public = public.allow_host("mcp.example.com");
    assert!(public.host_allowed("MCP.example.com"));
    let v6 = HostPolicy::for_bind("[::1]:9000".parse().unwrap());
    assert!(v6.host_allowed("[::1]:9000") && v6.host_allowed("127.0.0.1:9000"));
}

// r[verify auth.host-origin]
#[tokio::test]
async fn a_foreign_origin_is_forbidden() {
    let (app, _) = app(Authenticator::none(), HOST);
    let with_origin = |origin: &str| get("/mcp", Some(HOST)).header(header::ORIGIN, origin);
    let response = send(&app, with_origin("http://127.0.0.1:8080")).await;
    assert_eq!(response.status(), StatusCode::OK);
    for refused in [
        // Another name, port or scheme of this machine is another origin.
        "http://localhost:8080",
        "http://localhost:6274",
        "http://[::1]:3000",
        "https://127.0.0.1:8080",
        "http://evil.example",
        "https://attacker.example:8080",
        "null",
        "file://",
        "not an origin",
    ] {
        let response = send(&app, with_origin(refused)).await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{refused}");
    }

    // A public bind accepts its own origin only, not loopback pages.
    let (public, _) = self::app(jwt_auth(), "0.0.0.0:8443");
    let auth = format!("Bearer {}", token("pat"));
    let same = get("/mcp", Some("192.0.2.10:8443"))
        .header(header::ORIGIN, "http://192.0.2.10:8443")
        .header(header::AUTHORIZATION, &auth);
    assert_eq!(send(&public, same).await.status(), StatusCode::OK);
    let local = get("/mcp", Some("192.0.2.10:8443"))
        .header(header::ORIGIN, "http://localhost:3000")
        .header(header::AUTHORIZATION, &auth);
    assert_eq!(send(&public, local).await.status(), StatusCode::FORBIDDEN);
}

// r[verify auth.unauthenticated]
#[tokio::test]
async fn jwt_mode_answers_401_with_a_bearer_challenge() {
    let (app, _) = app(jwt_auth(), HOST);
    let missing = send(&app, get("/mcp", Some(HOST))).await;
    assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        missing.headers()[header::WWW_AUTHENTICATE],
        "Bearer realm=\"obsidian-tc\""
    );

    let invalid = send(
        &app,
        get("/mcp", Some(HOST)).header(header::AUTHORIZATION, "Bearer not.a.token"),
    )
    .await;
    assert_eq!(invalid.status(), StatusCode::UNAUTHORIZED);
    let challenge = invalid.headers()[header::WWW_AUTHENTICATE]
        .to_str()
        .unwrap();
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");

    let basic = send(
        &app,
        get("/mcp", Some(HOST)).header(header::AUTHORIZATION, "Basic dXNlcjpwYXNz"),
    )
    .await;
    assert_eq!(basic.status(), StatusCode::UNAUTHORIZED);
    assert!(basic.headers().contains_key(header::WWW_AUTHENTICATE));
}

// r[verify auth.keys-unavailable]
#[tokio::test]
async fn a_key_server_that_is_down_is_a_503_that_names_neither_it_nor_the_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down = listener.local_addr().unwrap();
    drop(listener);
    let auth = Authenticator::from_config(&AuthConfig {
        mode: AuthMode::Jwt,
        jwks: Some(format!("http://{down}/jwks.json")),
        ..AuthConfig::default()
    })
    .unwrap();
    let (app, _) = app(auth, HOST);
    let token = idp::signed(
        Algorithm::RS256,
        "rsa1.pem",
        Some("rsa-1"),
        &idp::claims("alice"),
    );
    let response = send(
        &app,
        get("/mcp", Some(HOST)).header(header::AUTHORIZATION, format!("Bearer {token}")),
    )
    .await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(!response.headers().contains_key(header::WWW_AUTHENTICATE));
    let text = body(response).await;
    assert!(text.contains("retry"), "{text}");
    for leak in [
        down.to_string(),
        down.port().to_string(),
        "jwks.json".into(),
        "error".into(),
    ] {
        assert!(!text.contains(&leak), "{leak:?} in {text:?}");
    }
}

// r[verify auth.jwt.caller]
#[tokio::test]
async fn jwt_mode_hands_the_subject_to_the_mcp_service() {
    let (app, _) = app(jwt_auth(), HOST);
    for sub in ["alice", "bob"] {
        let response = send(
            &app,
            get("/mcp", Some(HOST)).header(header::AUTHORIZATION, format!("Bearer {}", token(sub))),
        )
        .await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(body(response).await, sub);
    }
}

// r[verify auth.none.caller]
#[tokio::test]
async fn none_mode_serves_every_request_as_http_local() {
    let (app, _) = app(Authenticator::none(), HOST);
    let plain = send(&app, get("/mcp", Some(HOST))).await;
    assert_eq!(plain.status(), StatusCode::OK);
    assert_eq!(body(plain).await, "http-local");
    // A token changes nothing without jwt or oidc: there is nothing to verify it with.
    let with_token = send(
        &app,
        get("/mcp", Some(HOST)).header(header::AUTHORIZATION, format!("Bearer {}", token("eve"))),
    )
    .await;
    assert_eq!(body(with_token).await, "http-local");
}
