//! The HTTP scaffold (spec/auth.md `auth.host-origin`, `auth.unauthenticated`,
//! `auth.none.caller`; spec/events.md `metrics.endpoint`; spec/cli.md `serve --http`; spec/events.md).
//!
//! Routes: `GET /healthz` (200 `ok`), `GET /metrics` (the registry of [`crate::metrics`]),
//! and `/mcp`, where the MCP Streamable HTTP service is nested behind bearer authentication.
//! Two checks guard every route against DNS rebinding and cross-site requests (spec/auth.md
//! `auth.host-origin`, `auth.host-origin.host`, `auth.host-origin.origin`; spec/config.md
//! `config.http.allowed`):
//!
//! - **Host**: it must name the bound port and the bound address, a loopback name
//!   (`localhost`, `127.0.0.1`, `[::1]`) when the bind is loopback, or a value listed in
//!   `http.allowedHosts`. A server bound to the unspecified address (`0.0.0.0`, `[::]`, only
//!   under `jwt` or `oidc`, see [`crate::auth::check_bind`]) takes, besides the list, an IP
//!   address or `localhost` on its port: those name this machine without a DNS name an
//!   attacker could point elsewhere.
//! - **Origin**: absent is fine (non-browser clients send none). Present, it must be the
//!   `Host`'s own origin (scheme `http`, same name, same port), or listed exactly in
//!   `http.allowedOrigins` (a local inspector's page, say): a page another program serves on
//!   another loopback port is refused. `Origin: null` is refused.
//!
//! Either refusal is **403 Forbidden** with one short line naming the refused header
//! (spec `auth.host-origin.refusal`).
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
use crate::config::HttpConfig;
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

    /// Also accepts the exact `Host` and `Origin` values of `[http]`.
    pub fn allowing(mut self, http: &HttpConfig) -> Self {
        let mut hosts = (*self.hosts).clone();
        for host in &http.allowed_hosts {
            hosts = hosts.allow_host(host);
        }
        for origin in &http.allowed_origins {
            hosts = hosts.allow_origin(origin);
        }
        self.hosts = Arc::new(hosts);
        self
    }
}

/// Which `Host` and `Origin` values the server accepts: from the address it is bound to,
/// and the exact exceptions of `[http]` (spec/config.md `config.http.allowed`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPolicy {
    /// The bound port: every accepted `Host` names it (80 when it names none).
    port: u16,
    /// The host names a `Host` may carry; `None` for an unspecified bind address, where
    /// any IP address literal or `localhost` is accepted (no DNS name, nothing to rebind).
    names: Option<BTreeSet<String>>,
    /// `http.allowedHosts`, lowercase.
    extra_hosts: BTreeSet<String>,
    /// `http.allowedOrigins`, lowercase, accepted whatever the `Host`.
    extra_origins: BTreeSet<String>,
}

impl HostPolicy {
    pub fn for_bind(bound: SocketAddr) -> Self {
        let ip = bound.ip();
        let names = (!ip.is_unspecified()).then(|| {
            let mut names = BTreeSet::from([authority_of_ip(ip)]);
            if ip.is_loopback() {
                names.insert("localhost".to_owned());
                names.insert(authority_of_ip(IpAddr::V4(Ipv4Addr::LOCALHOST)));
                names.insert(authority_of_ip(IpAddr::V6(Ipv6Addr::LOCALHOST)));
            }
            names
        });
        HostPolicy {
            port: bound.port(),
            names,
            extra_hosts: BTreeSet::new(),
            extra_origins: BTreeSet::new(),
        }
    }

    /// Also accepts `host` (a `name` or `name:port`, exactly as a `Host` header carries it),
    /// e.g. a public name a proxy forwards (`http.allowedHosts`).
    pub fn allow_host(mut self, host: &str) -> Self {
        self.extra_hosts.insert(host.trim().to_ascii_lowercase());
        self
    }

    /// Also accepts this exact `Origin` (`http.allowedOrigins`), e.g. a local inspector's
    /// page on another port.
    pub fn allow_origin(mut self, origin: &str) -> Self {
        self.extra_origins
            .insert(origin.trim().to_ascii_lowercase());
        self
    }

    // r[impl auth.host-origin.host]
    /// Whether a request with this `Host` is aimed at this server: the bound address and
    /// port (a loopback bind also answers to the loopback names; an unspecified bind to any
    /// IP address literal and `localhost`), or a listed exception.
    pub fn host_allowed(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        if self.extra_hosts.contains(&host) {
            return true;
        }
        let Some((name, port)) = split_host(&host) else {
            return false;
        };
        if port.unwrap_or(80) != self.port {
            return false;
        }
        match &self.names {
            Some(names) => names.contains(&name),
            None => name == "localhost" || is_ip_literal(&name),
        }
    }

    // r[impl auth.host-origin.origin]
    /// Whether a request carrying this `Origin`, sent to `host`, may be served: the origin
    /// is the `Host`'s own (scheme `http`, the same name and port; either scheme on its
    /// default port when the `Host` names no port, as behind a TLS-terminating proxy), or a
    /// listed exception. Another port, scheme or loopback name is another origin.
    pub fn origin_allowed(&self, origin: &str, host: Option<&str>) -> bool {
        if self
            .extra_origins
            .contains(&origin.trim().to_ascii_lowercase())
        {
            return true;
        }
        let Some((scheme, origin_host, origin_port)) = parse_origin(origin) else {
            return false;
        };
        let Some((host_name, host_port)) = host.and_then(split_host) else {
            return false;
        };
        if host_name != origin_host {
            return false;
        }
        match host_port {
            Some(port) => scheme == "http" && origin_port == port,
            None => matches!(
                (scheme.as_str(), origin_port),
                ("http", 80) | ("https", 443)
            ),
        }
    }
}

fn authority_of_ip(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

/// Whether `name` (a host as a `Host` header carries it) is an IP address literal.
fn is_ip_literal(name: &str) -> bool {
    let bare = name
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .unwrap_or(name);
    bare.parse::<IpAddr>().is_ok()
}

/// `scheme://host[:port]`, nothing after it → (lowercase scheme, lowercase host as in a Host
/// header, effective port). `None` for anything else: `null`, a path, user info, another
/// scheme.
pub(crate) fn parse_origin(origin: &str) -> Option<(String, String, u16)> {
    let origin = origin.trim();
    let (_, rest) = origin.split_once("://")?;
    if rest.is_empty() || rest.contains(['/', '?', '#', '@']) {
        return None;
    }
    let uri: Uri = origin.parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let authority = uri.authority()?;
    let default_port = match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    Some((
        scheme,
        authority.host().to_ascii_lowercase(),
        authority.port_u16().unwrap_or(default_port),
    ))
}

/// A Host header value → (lowercase host, explicit port).
fn split_host(host: &str) -> Option<(String, Option<u16>)> {
    if host.contains('@') {
        return None;
    }
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
// r[impl auth.host-origin.refusal]
/// The Host and Origin checks, in front of every route. A refusal is 403 with one short line
/// naming the header, and nothing that would help a page probe further.
async fn check_host_origin(
    State(state): State<HttpState>,
    request: Request,
    next: Next,
) -> Response {
    let host = request_host(&request);
    let host_ok = host.as_deref().is_some_and(|h| state.hosts.host_allowed(h));
    if !host_ok {
        return (
            StatusCode::FORBIDDEN,
            "Host refused: connect to the address the server is bound to\n",
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
                "Origin refused: only the server's own origin and http.allowedOrigins\n",
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
