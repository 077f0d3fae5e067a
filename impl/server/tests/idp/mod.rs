//! The token issuers of the auth tests (auth.rs, mcp_auth_modes.rs): signing with the test
//! keys of `tests/fixtures` (see its README), and a tiny OpenID provider on 127.0.0.1 that
//! serves discovery and a JWKS the test can swap.
//!
//! Included with `mod idp;`; not every test file uses every item.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tc_server::auth::{Authenticator, RefreshPolicy};
use tc_server::config::{AuthConfig, AuthMode, OidcConfig};

/// A file of `tests/fixtures`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Now, in seconds since the Unix epoch (the clock jsonwebtoken judges `exp` by).
pub fn now() -> i64 {
    jsonwebtoken::get_current_timestamp() as i64
}

/// The claims of a token for `sub`, valid for ten minutes, with no scope.
pub fn claims(sub: &str) -> Value {
    json!({ "sub": sub, "exp": now() + 600, "iat": now() })
}

/// An HS256 token signed with `secret`.
pub fn hs256(secret: &str, claims: &Value) -> String {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(secret.as_bytes()).expect("key"),
    )
    .expect("sign")
}

/// A token signed with the private key in the fixture `pem` (`ec1.pem` for ES256, an RSA
/// key otherwise), its header naming `kid`.
pub fn signed(alg: Algorithm, pem: &str, kid: Option<&str>, claims: &Value) -> String {
    let pem = std::fs::read(fixture(pem)).expect("fixture");
    let key = match alg {
        Algorithm::ES256 => EncodingKey::from_ec_pem(&pem),
        _ => EncodingKey::from_rsa_pem(&pem),
    }
    .expect("key");
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, &key).expect("sign")
}

/// The algorithm the fixture key `pem` signs with.
pub fn alg_of(pem: &str) -> Algorithm {
    if pem.starts_with("ec") {
        Algorithm::ES256
    } else {
        Algorithm::RS256
    }
}

/// A JWKS of the fixtures' public keys `keys` (`rsa1`, `rsa2`, `ec1`).
pub fn jwks_of(keys: &[&str]) -> Value {
    let keys: Vec<Value> = keys
        .iter()
        .map(|name| {
            let text = std::fs::read_to_string(fixture(&format!("{name}.jwk.json"))).unwrap();
            serde_json::from_str(&text).unwrap()
        })
        .collect();
    json!({ "keys": keys })
}

/// A tiny identity provider on 127.0.0.1: discovery and a JWKS that tests can swap.
#[derive(Clone)]
pub struct Idp {
    pub issuer: String,
    /// When set, discovery names this issuer instead of the real one.
    pub discovery_issuer: Arc<Mutex<Option<String>>>,
    /// When set, discovery names this `jwks_uri` instead of the provider's `/keys`.
    pub discovery_jwks_uri: Arc<Mutex<Option<String>>>,
    jwks: Arc<Mutex<Value>>,
    jwks_hits: Arc<AtomicUsize>,
    /// How long the JWKS answer takes (a slow provider).
    jwks_delay: Arc<Mutex<std::time::Duration>>,
}

impl Idp {
    /// Starts the provider, publishing the fixtures' public keys `keys`.
    pub async fn start(keys: &[&str]) -> Idp {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let idp = Idp {
            issuer,
            discovery_issuer: Arc::new(Mutex::new(None)),
            discovery_jwks_uri: Arc::new(Mutex::new(None)),
            jwks: Arc::new(Mutex::new(jwks_of(keys))),
            jwks_hits: Arc::new(AtomicUsize::new(0)),
            jwks_delay: Arc::new(Mutex::new(std::time::Duration::ZERO)),
        };
        let app = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/keys", get(keys_doc))
            .route("/moved", get(moved_away))
            .with_state(idp.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        idp
    }

    /// Publishes `keys` instead (a rotation).
    pub fn serve_keys(&self, keys: &[&str]) {
        *self.jwks.lock().unwrap() = jwks_of(keys);
    }

    /// Makes every later JWKS answer take `delay`.
    pub fn slow_down(&self, delay: std::time::Duration) {
        *self.jwks_delay.lock().unwrap() = delay;
    }

    /// How many times the JWKS was fetched.
    pub fn hits(&self) -> usize {
        self.jwks_hits.load(Ordering::SeqCst)
    }

    /// `[auth]` with `mode = "oidc"`, this provider as the issuer and no audience.
    pub fn auth_config(&self) -> AuthConfig {
        AuthConfig {
            mode: AuthMode::Oidc,
            oidc: Some(OidcConfig {
                issuer: self.issuer.clone(),
            }),
            ..AuthConfig::default()
        }
    }

    /// The server's authenticator for this provider, with `policy`.
    pub fn oidc(&self, policy: RefreshPolicy) -> Authenticator {
        Authenticator::with_policy(&self.auth_config(), policy).expect("oidc authenticator")
    }

    /// A token for `sub` (no scope) issued by this provider with the fixture key `pem`.
    pub fn token(&self, pem: &str, kid: &str, sub: &str) -> String {
        self.sign(pem, kid, claims(sub))
    }

    /// `claims` with this provider's `iss`, signed with the fixture key `pem` under `kid`.
    pub fn sign(&self, pem: &str, kid: &str, mut claims: Value) -> String {
        claims["iss"] = json!(self.issuer);
        signed(alg_of(pem), pem, Some(kid), &claims)
    }
}

async fn discovery(State(idp): State<Idp>) -> axum::Json<Value> {
    let issuer = idp
        .discovery_issuer
        .lock()
        .unwrap()
        .clone()
        .unwrap_or_else(|| idp.issuer.clone());
    let jwks_uri = idp
        .discovery_jwks_uri
        .lock()
        .unwrap()
        .clone()
        .unwrap_or_else(|| format!("{}/keys", idp.issuer));
    axum::Json(json!({ "issuer": issuer, "jwks_uri": jwks_uri }))
}

/// A redirect off this provider to a plain-http host that is not loopback.
async fn moved_away() -> axum::response::Redirect {
    axum::response::Redirect::temporary("http://keys.example.invalid/keys")
}

async fn keys_doc(State(idp): State<Idp>) -> axum::Json<Value> {
    idp.jwks_hits.fetch_add(1, Ordering::SeqCst);
    let delay = *idp.jwks_delay.lock().unwrap();
    tokio::time::sleep(delay).await;
    axum::Json(idp.jwks.lock().unwrap().clone())
}
