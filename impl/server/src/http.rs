//! The HTTP scaffold (spec/auth.md `auth.host-origin`, `auth.unauthenticated`,
//! `auth.none.caller`; spec/events.md `metrics.endpoint`; CONTRACT §1 `serve --http`, §7).
//!
//! Routes: `GET /healthz` (200 `ok`), `GET /metrics` (the registry of [`crate::metrics`]),
//! and `/mcp`, where the MCP Streamable HTTP service is nested behind bearer authentication.
//! Two checks guard every route against DNS rebinding and cross-site requests:
//!
//! - **Host**: on a server bound to a specific address, the `Host` must name that address
//!   and port, or a loopback form of it (`localhost`, `127.0.0.1`, `[::1]`) when the bind is
//!   loopback. Anything else is answered **421 Misdirected Request** (RFC 9110 §15.5.20: the
//!   request was aimed at an authority this server does not serve). A server bound to the
//!   unspecified address (`0.0.0.0`, `[::]`) cannot know the names it is reached by behind
//!   a proxy, so it accepts any `Host`; such a bind is only possible under `jwt` or `oidc`
//!   (see [`crate::auth::check_bind`]), where every `/mcp` request needs a token anyway.
//! - **Origin**: absent is fine (non-browser clients send none). Present, it must be the
//!   same origin as the request's `Host`, or a loopback origin when the server itself is
//!   bound to loopback (a local browser-based client such as an inspector); otherwise
//!   **403 Forbidden**. `Origin: null` is refused.
//!
//! A request body on `/mcp` over [`MAX_MESSAGE_BYTES`] (the limit stdio puts on one message,
//! spec `config.message-limit.addressed`) is answered **413 Payload Too Large** before it
//! reaches the MCP service, whatever the service's own limit is: from its `Content-Length` before
//! authentication, else while it is read, which happens only once the request is
//! authenticated (spec `auth.unauthenticated`).
//!
//! Authentication resolves a [`Caller`] into the request's extensions, where the MCP
//! service reads it; a request that cannot be authenticated is answered 401 with a
//! `WWW-Authenticate: Bearer …` challenge (503 when the signing keys cannot be fetched).
//! Once authenticated, a request naming an MCP session another caller opened is answered 404
//! ([`sessions`], spec `auth.session.bound`).

mod sessions;

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use crate::auth::{AuthError, Authenticator, Caller};
use crate::config::is_loopback_host;
use crate::metrics::{self, Metrics};
pub use crate::stdio::MAX_MESSAGE_BYTES;
pub use sessions::SessionOwners;

/// What the HTTP layer needs: the authenticator, the metrics, the bound address, and who
/// opened each MCP session.
#[derive(Debug, Clone)]
pub struct HttpState {
    pub auth: Arc<Authenticator>,
    pub metrics: Arc<Metrics>,
    pub hosts: Arc<HostPolicy>,
    pub sessions: Arc<SessionOwners>,
}

impl HttpState {
    /// `sessions` is the session manager of the MCP service behind `/mcp`: the owners of its
    /// sessions are kept against it (see [`SessionOwners::tracking`]).
    pub fn new(
        auth: Arc<Authenticator>,
        metrics: Arc<Metrics>,
        bound: SocketAddr,
        sessions: Arc<LocalSessionManager>,
    ) -> Self {
        HttpState {
            auth,
            metrics,
            hosts: Arc::new(HostPolicy::for_bind(bound)),
            sessions: Arc::new(SessionOwners::tracking(sessions)),
        }
    }
}

/// Which `Host` and `Origin` values the server accepts, from the address it is bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPolicy {
    /// None: any host (an unspecified bind address).
    allowed: Option<BTreeSet<String>>,
    loopback_bind: bool,
}

impl HostPolicy {
    pub fn for_bind(bound: SocketAddr) -> Self {
        let ip = bound.ip();
        let port = bound.port();
        if ip.is_unspecified() {
            return HostPolicy {
                allowed: None,
                loopback_bind: false,
            };
        }
        let mut names = vec![authority_of_ip(ip)];
        if ip.is_loopback() {
            names.push("localhost".to_owned());
            names.push(authority_of_ip(IpAddr::V4(Ipv4Addr::LOCALHOST)));
            names.push(authority_of_ip(IpAddr::V6(Ipv6Addr::LOCALHOST)));
        }
        let mut allowed = BTreeSet::new();
        for name in names {
            allowed.insert(format!("{name}:{port}"));
            if port == 80 {
                allowed.insert(name);
            }
        }
        HostPolicy {
            allowed: Some(allowed),
            loopback_bind: ip.is_loopback(),
        }
    }

    /// Also accepts `host` (a `name` or `name:port`, as a `Host` header carries it), e.g.
    /// a public name a proxy forwards.
    pub fn allow_host(mut self, host: &str) -> Self {
        if let Some(allowed) = &mut self.allowed {
            allowed.insert(host.to_ascii_lowercase());
        }
        self
    }

    /// Whether a request with this `Host` is aimed at this server.
    pub fn host_allowed(&self, host: &str) -> bool {
        match &self.allowed {
            None => true,
            Some(allowed) => allowed.contains(&host.trim().to_ascii_lowercase()),
        }
    }

    /// Whether a request carrying this `Origin`, sent to `host`, may be served.
    pub fn origin_allowed(&self, origin: &str, host: Option<&str>) -> bool {
        let Some((origin_host, origin_port)) = parse_origin(origin) else {
            return false;
        };
        if self.loopback_bind && is_loopback_host(&origin_host) {
            return true;
        }
        let Some(host) = host else {
            return false;
        };
        let Some((host_name, host_port)) = split_host(host) else {
            return false;
        };
        // A Host without a port (behind a TLS-terminating proxy) names only the host.
        host_name == origin_host && host_port.is_none_or(|port| port == origin_port)
    }
}

fn authority_of_ip(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

/// `scheme://host[:port]` → (lowercase host as in a Host header, effective port).
fn parse_origin(origin: &str) -> Option<(String, u16)> {
    let uri: Uri = origin.trim().parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let authority = uri.authority()?;
    let default_port = match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    Some((
        authority.host().to_ascii_lowercase(),
        authority.port_u16().unwrap_or(default_port),
    ))
}

/// A Host header value → (lowercase host, explicit port).
fn split_host(host: &str) -> Option<(String, Option<u16>)> {
    let authority: axum::http::uri::Authority = host.trim().parse().ok()?;
    Some((authority.host().to_ascii_lowercase(), authority.port_u16()))
}

/// The application router: `/healthz`, `/metrics`, and `mcp_service` nested at `/mcp`
/// behind bearer authentication, all behind the Host and Origin checks. `mcp_service`'s
/// routes are relative to `/mcp` (its `/` answers `/mcp`); its handlers find the
/// authenticated [`Caller`] in the request extensions.
///
/// For rmcp's `StreamableHttpService`, pass `Router::new().route_service("/", service)`;
/// rmcp hands each handler the request's `http::request::Parts` in its context extensions,
/// and the [`Caller`] sits in those parts' extensions.
pub fn router(state: HttpState, mcp_service: Router) -> Router {
    let mcp = mcp_service
        .layer(middleware::from_fn(limit_body))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            sessions::bind_session,
        ))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            require_caller,
        ))
        .layer(middleware::from_fn(refuse_declared_oversize));
    Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics_page))
        .with_state(state.clone())
        .nest("/mcp", mcp)
        .layer(middleware::from_fn_with_state(state, check_host_origin))
}

// r[impl metrics.endpoint]
async fn healthz() -> &'static str {
    "ok"
}

async fn metrics_page(State(state): State<HttpState>) -> Response {
    (
        [(header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
        state.metrics.encode(),
    )
        .into_response()
}

/// The `Host` of a request: its header, or the authority of an absolute-form target.
fn request_host(request: &Request) -> Option<String> {
    request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| request.uri().authority().map(|a| a.as_str().to_owned()))
}

// r[impl auth.host-origin]
async fn check_host_origin(
    State(state): State<HttpState>,
    request: Request,
    next: Next,
) -> Response {
    let host = request_host(&request);
    let host_ok = host.as_deref().is_some_and(|h| state.hosts.host_allowed(h));
    if !host_ok {
        return (
            StatusCode::MISDIRECTED_REQUEST,
            "this server does not answer for that Host; connect to the address it is bound to\n",
        )
            .into_response();
    }
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let allowed = origin
            .to_str()
            .is_ok_and(|o| state.hosts.origin_allowed(o, host.as_deref()));
        if !allowed {
            return (
                StatusCode::FORBIDDEN,
                "cross-origin requests are not accepted by this server\n",
            )
                .into_response();
        }
    }
    next.run(request).await
}

fn too_large() -> Response {
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        format!(
            "the request body is over {MAX_MESSAGE_BYTES} bytes, the most one message may have\n"
        ),
    )
        .into_response()
}

// r[impl config.message-limit.addressed]
/// Refuses with 413 a request whose `Content-Length` is over [`MAX_MESSAGE_BYTES`], from the
/// header alone: before authentication, so an oversized body costs no token check.
async fn refuse_declared_oversize(request: Request, next: Next) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|length| length > MAX_MESSAGE_BYTES as u64) {
        return too_large();
    }
    next.run(request).await
}

// r[impl config.message-limit.addressed]
// r[impl auth.unauthenticated]
/// Reads the body of an authenticated request, refusing with 413 once it passes
/// [`MAX_MESSAGE_BYTES`] (a chunked body counts as it arrives, never buffered past the
/// limit). Runs after authentication: a request nobody vouched for is answered before a
/// byte of its body is read, so it cannot make the server hold megabytes for it.
async fn limit_body(request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_MESSAGE_BYTES).await else {
        return too_large();
    };
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

// r[impl auth.unauthenticated]
async fn require_caller(
    State(state): State<HttpState>,
    mut request: Request,
    next: Next,
) -> Response {
    let authorization = match request.headers().get(header::AUTHORIZATION) {
        None => None,
        Some(value) => match value.to_str() {
            Ok(text) => Some(text.to_owned()),
            Err(_) => return unauthenticated(&AuthError::MalformedHeader),
        },
    };
    match state.auth.authenticate(authorization.as_deref()).await {
        Ok(caller) => {
            request.extensions_mut().insert::<Caller>(caller);
            next.run(request).await
        }
        Err(error) => unauthenticated(&error),
    }
}

fn unauthenticated(error: &AuthError) -> Response {
    let status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::UNAUTHORIZED);
    let text = match error {
        // r[impl auth.keys-unavailable]
        // The reason names the key server and what went wrong reaching it: the operator's
        // business (the log), not every anonymous client's.
        AuthError::KeysUnavailable(reason) => {
            tracing::warn!(%reason, "a bearer token could not be checked: no signing keys");
            "the server cannot get the keys to check bearer tokens with right now; retry shortly\n"
                .to_owned()
        }
        other => format!("{other}\n"),
    };
    let mut response = (status, text).into_response();
    if let Some(challenge) = error.www_authenticate()
        && let Ok(value) = HeaderValue::from_str(&challenge)
    {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}
