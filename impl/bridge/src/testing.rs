//! A stand-in Obsidian for tests (feature `testing`): a local server speaking the routes of
//! the Local REST API plugin this crate uses (`GET /`, `GET /obsidian-local-rest-api.crt`,
//! `POST /commands/{id}/`) and the companion's (`GET /obsidian-tc/v1/probe`,
//! `POST /obsidian-tc/v1/quickadd/trigger`, `POST /obsidian-tc/v1/templater/execute`), over HTTPS with a certificate made for it
//! (self-signed, or signed by its own authority as newer plugins do) or plain HTTP.
//!
//! It checks the bearer key as the plugin does, counts what was invoked (recorded when the
//! request arrives: that is when the action would run), and takes injected delays and
//! failures, so tests can tell "nothing was sent" from "sent, and maybe ran".
#![allow(missing_debug_implementations)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// The API key the stand-in accepts.
pub const KEY: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// How the stand-in answers.
#[derive(Debug, Clone)]
pub struct Behavior {
    /// Wait this long before answering an action (after recording it).
    pub delay: Duration,
    /// Answer actions with this status (e.g. 500) after recording them.
    pub status: Option<u16>,
    /// Whether the companion's routes exist.
    pub companion: bool,
    /// The companion's answer to a QuickAdd trigger (status, body); default `{ok: true}`.
    pub quickadd_answer: Option<(u16, Value)>,
    /// The command ids Obsidian knows.
    pub known_commands: Vec<String>,
    /// The companion's answer to a Templater run (status, body); by default the stand-in
    /// plays Templater on [`Behavior::vault`].
    pub templater_answer: Option<(u16, Value)>,
    /// The vault folder the stand-in's Templater writes into: the target gets the
    /// template's text (created or overwritten), as a template without commands renders.
    pub vault: Option<std::path::PathBuf>,
}

impl Default for Behavior {
    fn default() -> Self {
        Behavior {
            delay: Duration::ZERO,
            status: None,
            companion: true,
            quickadd_answer: None,
            known_commands: vec!["editor:toggle-bold".into(), "app:reload".into()],
            templater_answer: None,
            vault: None,
        }
    }
}

/// What the stand-in saw.
#[derive(Default)]
pub struct Seen {
    /// Every request: `METHOD path`.
    pub requests: Mutex<Vec<String>>,
    /// The command ids invoked (key accepted).
    pub commands: Mutex<Vec<String>>,
    /// The QuickAdd trigger bodies received (key accepted).
    pub quickadd: Mutex<Vec<Value>>,
    /// The Templater run bodies received (key accepted).
    pub templater: Mutex<Vec<Value>>,
    /// Requests that carried an Authorization header before the certificate was fetched.
    pub authorized_cert_fetches: Mutex<usize>,
}

struct Shared {
    behavior: Mutex<Behavior>,
    seen: Seen,
    published: String,
}

/// How the stand-in is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tls {
    /// Plain HTTP (the plugin's optional insecure server).
    Plain,
    /// One self-signed certificate, the one published (older plugins).
    SelfSigned,
    /// A server certificate signed by an authority; the authority is published (newer
    /// plugins).
    Authority,
}

/// A running stand-in; stops when dropped.
pub struct FakeObsidian {
    pub url: String,
    /// The DER of the certificate it publishes (`None` for plain HTTP).
    pub published_der: Option<Vec<u8>>,
    shared: Arc<Shared>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for FakeObsidian {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

fn certificates(
    tls: Tls,
) -> (
    Vec<CertificateDer<'static>>,
    PrivateKeyDer<'static>,
    Vec<u8>,
    String,
) {
    let names = vec!["127.0.0.1".to_owned(), "localhost".to_owned()];
    match tls {
        Tls::Plain => unreachable!("plain HTTP has no certificate"),
        Tls::SelfSigned => {
            let key = rcgen::KeyPair::generate().unwrap();
            let cert = rcgen::CertificateParams::new(names)
                .unwrap()
                .self_signed(&key)
                .unwrap();
            let der = cert.der().to_vec();
            (
                vec![cert.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
                der,
                cert.pem(),
            )
        }
        Tls::Authority => {
            let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            ca_params
                .distinguished_name
                .push(rcgen::DnType::CommonName, "Obsidian Local REST API CA");
            let ca_key = rcgen::KeyPair::generate().unwrap();
            let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
            let leaf_key = rcgen::KeyPair::generate().unwrap();
            let leaf = rcgen::CertificateParams::new(names)
                .unwrap()
                .signed_by(&leaf_key, &ca)
                .unwrap();
            (
                vec![leaf.der().clone(), ca.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
                ca.der().to_vec(),
                ca.pem(),
            )
        }
    }
}

impl FakeObsidian {
    pub fn start(tls: Tls) -> Self {
        Self::start_with(tls, Behavior::default())
    }

    pub fn start_with(tls: Tls, behavior: Behavior) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (server_config, published_der, published) = match tls {
            Tls::Plain => (None, None, String::new()),
            other => {
                let (chain, key, der, pem) = certificates(other);
                let config = ServerConfig::builder_with_provider(Arc::new(
                    rustls::crypto::ring::default_provider(),
                ))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(chain, key)
                .unwrap();
                (Some(Arc::new(config)), Some(der), pem)
            }
        };
        let shared = Arc::new(Shared {
            behavior: Mutex::new(behavior),
            seen: Seen::default(),
            published,
        });
        let app = router(Arc::clone(&shared));
        // Bound here and handed to the runtime, so a stand-in can start inside another
        // runtime (an async test) without blocking on this one.
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        std_listener.set_nonblocking(true).unwrap();
        let port = std_listener.local_addr().unwrap().port();
        let acceptor = server_config.map(tokio_rustls::TlsAcceptor::from);
        runtime.spawn(async move {
            let Ok(listener) = TcpListener::from_std(std_listener) else {
                return;
            };
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let service = TowerToHyperService::new(app.clone());
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let http = hyper::server::conn::http1::Builder::new();
                    match acceptor {
                        Some(acceptor) => {
                            if let Ok(tls) = acceptor.accept(tcp).await {
                                let _ = http.serve_connection(TokioIo::new(tls), service).await;
                            }
                        }
                        None => {
                            let _ = http.serve_connection(TokioIo::new(tcp), service).await;
                        }
                    }
                });
            }
        });
        let scheme = if tls == Tls::Plain { "http" } else { "https" };
        FakeObsidian {
            url: format!("{scheme}://127.0.0.1:{port}"),
            published_der,
            shared,
            runtime: Some(runtime),
        }
    }

    pub fn seen(&self) -> &Seen {
        &self.shared.seen
    }

    /// The command ids invoked so far.
    pub fn commands(&self) -> Vec<String> {
        self.shared.seen.commands.lock().unwrap().clone()
    }

    /// The QuickAdd trigger bodies received so far.
    pub fn quickadds(&self) -> Vec<Value> {
        self.shared.seen.quickadd.lock().unwrap().clone()
    }

    /// Every request line received so far.
    pub fn templater_runs(&self) -> Vec<Value> {
        self.shared.seen.templater.lock().unwrap().clone()
    }

    pub fn requests(&self) -> Vec<String> {
        self.shared.seen.requests.lock().unwrap().clone()
    }

    pub fn behave(&self, change: impl FnOnce(&mut Behavior)) {
        change(&mut self.shared.behavior.lock().unwrap());
    }
}

fn authorized(headers: &HeaderMap) -> bool {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Bearer {KEY}"))
}

fn unauthorized() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        axum::Json(json!({"errorCode": 40101, "message": "Authorization required."})),
    )
        .into_response()
}

fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        axum::Json(json!({"errorCode": 40400, "message": "Not Found"})),
    )
        .into_response()
}

fn note(shared: &Shared, line: String) {
    shared.seen.requests.lock().unwrap().push(line);
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/", get(root))
        .route("/obsidian-local-rest-api.crt", get(certificate))
        .route("/commands/{id}/", post(command))
        .route("/obsidian-tc/v1/probe", get(companion_probe))
        .route("/obsidian-tc/v1/quickadd/trigger", post(quickadd))
        .route("/obsidian-tc/v1/templater/execute", post(templater))
        .with_state(shared)
}

async fn root(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    note(&shared, "GET /".into());
    axum::Json(json!({
        "status": "OK",
        "service": "Obsidian Local REST API",
        "authenticated": authorized(&headers),
        "versions": {"obsidian": "1.9.10", "self": "3.2.0"},
    }))
    .into_response()
}

async fn certificate(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    note(&shared, "GET /obsidian-local-rest-api.crt".into());
    if headers.contains_key("authorization") {
        *shared.seen.authorized_cert_fetches.lock().unwrap() += 1;
    }
    if shared.published.is_empty() {
        return not_found();
    }
    (
        [("content-type", "application/x-x509-ca-cert")],
        shared.published.clone(),
    )
        .into_response()
}

/// The injected delay and status of an action, read once it was recorded.
async fn injected(shared: &Shared) -> Option<Response> {
    let (delay, status) = {
        let behavior = shared.behavior.lock().unwrap();
        (behavior.delay, behavior.status)
    };
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    status.map(|status| {
        (
            StatusCode::from_u16(status).unwrap(),
            axum::Json(json!({"errorCode": status as u32 * 100, "message": "injected failure"})),
        )
            .into_response()
    })
}

async fn command(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    note(&shared, format!("POST /commands/{id}/"));
    if !authorized(&headers) {
        return unauthorized();
    }
    let known = shared.behavior.lock().unwrap().known_commands.contains(&id);
    if !known {
        return not_found();
    }
    shared.seen.commands.lock().unwrap().push(id);
    if let Some(failure) = injected(&shared).await {
        return failure;
    }
    StatusCode::NO_CONTENT.into_response()
}

async fn companion_probe(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    note(&shared, "GET /obsidian-tc/v1/probe".into());
    if !authorized(&headers) {
        return unauthorized();
    }
    if !shared.behavior.lock().unwrap().companion {
        return not_found();
    }
    axum::Json(json!({
        "ok": true,
        "name": "obsidian-tc-companion",
        "version": "0.1.0",
        "capabilities": ["probe", "quickadd"],
    }))
    .into_response()
}

async fn quickadd(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    note(&shared, "POST /obsidian-tc/v1/quickadd/trigger".into());
    if !authorized(&headers) {
        return unauthorized();
    }
    let (companion, answer) = {
        let behavior = shared.behavior.lock().unwrap();
        (behavior.companion, behavior.quickadd_answer.clone())
    };
    if !companion {
        return not_found();
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    shared.seen.quickadd.lock().unwrap().push(body.clone());
    if let Some(failure) = injected(&shared).await {
        return failure;
    }
    match answer {
        Some((status, value)) => {
            (StatusCode::from_u16(status).unwrap(), axum::Json(value)).into_response()
        }
        None => {
            axum::Json(json!({"ok": true, "result": {"choice": body["choice"]}})).into_response()
        }
    }
}

/// `POST /obsidian-tc/v1/templater/execute`: Templater writing the template's text to the
/// target in [`Behavior::vault`] (or the injected answer).
async fn templater(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    note(&shared, "POST /obsidian-tc/v1/templater/execute".into());
    if !authorized(&headers) {
        return unauthorized();
    }
    let (companion, answer, vault) = {
        let behavior = shared.behavior.lock().unwrap();
        (
            behavior.companion,
            behavior.templater_answer.clone(),
            behavior.vault.clone(),
        )
    };
    if !companion {
        return not_found();
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    shared.seen.templater.lock().unwrap().push(body.clone());
    if let Some(failure) = injected(&shared).await {
        return failure;
    }
    if let Some((status, value)) = answer {
        return (StatusCode::from_u16(status).unwrap(), axum::Json(value)).into_response();
    }
    let (Some(template), Some(target)) = (body["template"].as_str(), body["target"].as_str())
    else {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(
                json!({"ok": false, "code": "invalid_request", "message": "template and target"}),
            ),
        )
            .into_response();
    };
    let Some(vault) = vault else {
        return axum::Json(json!({"ok": true, "path": target, "created": false})).into_response();
    };
    let Ok(text) = std::fs::read(vault.join(template)) else {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"ok": false, "code": "template_not_found", "message": template})),
        )
            .into_response();
    };
    let out = vault.join(target);
    let created = !out.exists();
    if let Some(parent) = out.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let _ = std::fs::write(&out, text);
    axum::Json(json!({"ok": true, "path": target, "created": created})).into_response()
}
