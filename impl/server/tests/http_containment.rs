//! Containment of the HTTP server against DNS rebinding and cross-site pages, on every route
//! (spec/auth.md `auth.host-origin`, `auth.host-origin.host`, `auth.host-origin.origin`,
//! `auth.host-origin.refusal`; spec/config.md `config.http.allowed`): a `Host` must name the
//! bound address and port, an `Origin` must be the very origin of that `Host`, and
//! `http.allowedHosts` and `http.allowedOrigins` name the exceptions, exactly.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::Extension;
use axum::http::{Request, StatusCode, header};
use axum::routing::any;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;
use tc_server::auth::{Authenticator, Caller};
use tc_server::config::{AuthConfig, AuthMode, Config, HttpConfig};
use tc_server::http::{HttpState, router};
use tc_server::metrics::Metrics;
use tower::ServiceExt;

const SECRET: &str = "an-hs256-test-secret-of-32-bytes!!";
const ROUTES: [&str; 3] = ["/healthz", "/metrics", "/mcp"];

fn app(auth: Authenticator, bound: &str, http: &HttpConfig) -> Router {
    let state = HttpState::new(
        Arc::new(auth),
        Arc::new(Metrics::new()),
        bound.parse::<SocketAddr>().unwrap(),
        Arc::default(),
    )
    .allowing(http);
    let echo = Router::new().route(
        "/",
        any(|Extension(caller): Extension<Caller>| async move { caller.id }),
    );
    router(state, echo)
}

fn jwt() -> Authenticator {
    Authenticator::from_config(&AuthConfig {
        mode: AuthMode::Jwt,
        jwt_secret: Some(SECRET.into()),
        ..AuthConfig::default()
    })
    .unwrap()
}

fn bearer() -> String {
    let exp = jsonwebtoken::get_current_timestamp() + 600;
    let token = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &json!({ "sub": "pat", "exp": exp, "scope": "*" }),
        &EncodingKey::from_secret(SECRET.as_bytes()).unwrap(),
    )
    .unwrap();
    format!("Bearer {token}")
}

/// The status and body of `GET path` with `host` and `origin`, if given.
async fn status(
    app: &Router,
    path: &str,
    host: Option<&str>,
    origin: Option<&str>,
) -> (StatusCode, String) {
    let mut request = Request::builder()
        .method("GET")
        .uri(path)
        .header(header::AUTHORIZATION, bearer());
    if let Some(host) = host {
        request = request.header(header::HOST, host);
    }
    if let Some(origin) = origin {
        request = request.header(header::ORIGIN, origin);
    }
    let response = app
        .clone()
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = to_bytes(response.into_body(), 1 << 20).await.unwrap();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

/// Asserts `expected` for `host` and `origin` on every route.
async fn on_every_route(
    app: &Router,
    host: Option<&str>,
    origin: Option<&str>,
    expected: StatusCode,
) {
    for route in ROUTES {
        let (got, body) = status(app, route, host, origin).await;
        assert_eq!(
            got, expected,
            "{route} with Host {host:?} and Origin {origin:?}: {body}"
        );
    }
}

// r[verify auth.host-origin]
// r[verify auth.host-origin.origin]
#[tokio::test]
async fn a_loopback_bind_takes_only_the_hosts_own_origin() {
    let app = app(
        Authenticator::none(),
        "127.0.0.1:8080",
        &HttpConfig::default(),
    );
    for (host, origin) in [
        ("127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("localhost:8080", "http://localhost:8080"),
        ("LOCALHOST:8080", "http://localhost:8080"),
        ("[::1]:8080", "http://[::1]:8080"),
    ] {
        on_every_route(&app, Some(host), Some(origin), StatusCode::OK).await;
    }
    for origin in [
        // Another loopback port: another program on this machine (a page it serves).
        "http://127.0.0.1:6274",
        "http://localhost:3000",
        // Another scheme or another loopback name is another origin.
        "https://127.0.0.1:8080",
        "http://localhost:8080",
        "http://[::1]:8080",
        "http://evil.example:8080",
        "null",
        "file://",
        "not an origin",
    ] {
        on_every_route(
            &app,
            Some("127.0.0.1:8080"),
            Some(origin),
            StatusCode::FORBIDDEN,
        )
        .await;
    }
}

// r[verify auth.host-origin]
// r[verify auth.host-origin.host]
#[tokio::test]
async fn an_unspecified_bind_checks_the_host_on_every_route() {
    let app = app(jwt(), "0.0.0.0:8443", &HttpConfig::default());
    for host in ["192.0.2.10:8443", "localhost:8443", "[2001:db8::1]:8443"] {
        on_every_route(&app, Some(host), None, StatusCode::OK).await;
    }
    for host in [
        // A name: what DNS rebinding points at this machine.
        "evil.example:8443",
        "evil.example",
        "mcp.example.com",
        // This machine, but not the bound port.
        "192.0.2.10:9999",
        "localhost",
    ] {
        on_every_route(&app, Some(host), None, StatusCode::FORBIDDEN).await;
    }
    on_every_route(&app, None, None, StatusCode::FORBIDDEN).await;
}

// r[verify auth.host-origin.host]
#[tokio::test]
async fn a_specific_bind_takes_its_own_address_and_loopback_names_only_when_loopback() {
    let public = app(jwt(), "192.0.2.10:8443", &HttpConfig::default());
    on_every_route(&public, Some("192.0.2.10:8443"), None, StatusCode::OK).await;
    for host in ["localhost:8443", "127.0.0.1:8443", "192.0.2.11:8443"] {
        on_every_route(&public, Some(host), None, StatusCode::FORBIDDEN).await;
    }
    let loopback = app(
        Authenticator::none(),
        "127.0.0.1:80",
        &HttpConfig::default(),
    );
    for host in ["localhost", "localhost:80", "127.0.0.1", "[::1]:80"] {
        on_every_route(&loopback, Some(host), None, StatusCode::OK).await;
    }
    on_every_route(&loopback, Some("127.0.0.1:81"), None, StatusCode::FORBIDDEN).await;
}

// r[verify config.http.allowed]
#[tokio::test]
async fn allowed_hosts_and_origins_are_the_exceptions_named_exactly() {
    let http = HttpConfig {
        allowed_hosts: vec!["mcp.example.com".into()],
        allowed_origins: vec!["http://localhost:6274".into()],
    };
    let local = app(Authenticator::none(), "127.0.0.1:8080", &http);
    for origin in ["http://localhost:6274", "HTTP://LOCALHOST:6274"] {
        on_every_route(&local, Some("127.0.0.1:8080"), Some(origin), StatusCode::OK).await;
    }
    for origin in [
        "http://localhost:6275",
        "https://localhost:6274",
        "http://127.0.0.1:6274",
    ] {
        on_every_route(
            &local,
            Some("127.0.0.1:8080"),
            Some(origin),
            StatusCode::FORBIDDEN,
        )
        .await;
    }
    // Behind a reverse proxy that terminates TLS: the public name, and its own origin.
    let proxied = app(jwt(), "0.0.0.0:8443", &http);
    on_every_route(&proxied, Some("mcp.example.com"), None, StatusCode::OK).await;
    on_every_route(
        &proxied,
        Some("mcp.example.com"),
        Some("https://mcp.example.com"),
        StatusCode::OK,
    )
    .await;
    for host in ["other.example.com", "mcp.example.com.evil.example"] {
        on_every_route(&proxied, Some(host), None, StatusCode::FORBIDDEN).await;
    }
    on_every_route(
        &proxied,
        Some("mcp.example.com"),
        Some("https://evil.example"),
        StatusCode::FORBIDDEN,
    )
    .await;
}

// r[verify auth.host-origin.refusal]
#[tokio::test]
async fn a_refusal_is_403_with_one_short_line_naming_the_header() {
    let app = app(
        Authenticator::none(),
        "127.0.0.1:8080",
        &HttpConfig::default(),
    );
    for (host, origin, named) in [
        (Some("evil.example:8080"), None, "Host"),
        (None, None, "Host"),
        (
            Some("127.0.0.1:8080"),
            Some("http://evil.example"),
            "Origin",
        ),
    ] {
        for route in ROUTES {
            let (got, body) = status(&app, route, host, origin).await;
            assert_eq!(got, StatusCode::FORBIDDEN, "{route}");
            assert!(body.contains(named), "{body}");
            assert!(
                body.len() < 160 && body.trim_end().lines().count() == 1,
                "{body:?}"
            );
        }
    }
}

// r[verify config.http.allowed]
#[test]
fn the_http_table_is_parsed_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let parse = |text: &str| Config::parse(text, "test.toml", dir.path());
    let config = parse(
        "[http]\nallowedHosts = [\"mcp.example.com\", \"localhost:9000\"]\n\
         allowedOrigins = [\"http://localhost:6274\"]\n",
    )
    .unwrap();
    assert_eq!(
        config.http.allowed_hosts,
        ["mcp.example.com", "localhost:9000"]
    );
    assert_eq!(config.http.allowed_origins, ["http://localhost:6274"]);
    assert_eq!(parse("").unwrap().http, HttpConfig::default());
    let unknown = parse("[http]\nallowedOrigin = []\n").unwrap_err();
    assert_eq!(unknown.key(), Some("http.allowedOrigin"), "{unknown}");
    for (text, key) in [
        (
            "[http]\nallowedOrigins = [\"localhost:6274\"]\n",
            "http.allowedOrigins",
        ),
        (
            "[http]\nallowedOrigins = [\"http://localhost:6274/\"]\n",
            "http.allowedOrigins",
        ),
        ("[http]\nallowedOrigins = [\"*\"]\n", "http.allowedOrigins"),
        (
            "[http]\nallowedHosts = [\"http://mcp.example.com\"]\n",
            "http.allowedHosts",
        ),
        ("[http]\nallowedHosts = [\"\"]\n", "http.allowedHosts"),
    ] {
        let error = parse(text).unwrap_err();
        assert_eq!(error.key(), Some(key), "{text}: {error}");
    }
}
