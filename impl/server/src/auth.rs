//! Callers and HTTP authentication (spec/auth.md: `auth.modes`, `auth.stdio-caller`,
//! `auth.none.caller`, `auth.none.loopback`, `auth.local-scopes`, `auth.jwt.secret`,
//! `auth.jwt.jwks`, `auth.oidc`, `auth.jwt.caller`, `auth.jwt.claims`, `auth.jwt.scopes`,
//! `auth.jwt.vault`, `auth.unauthenticated`).
//!
//! Every request the server handles comes from one [`Caller`]: `stdio` over stdio,
//! `http-local` over HTTP under `auth.mode = "none"`, and the token's `sub` under `jwt` and
//! `oidc`. The caller id is what approvals, cursors and scopes are bound to, so it only ever
//! comes from a verified token or from the transport itself.
//!
//! Tokens are verified by the `jsonwebtoken` crate (never by hand): HS256 with
//! `auth.jwtSecret`; asymmetric algorithms with the keys of a JWKS read from a file, fetched
//! from a URL, or found through OIDC discovery. A fetched JWKS is cached, refetched after a
//! TTL, and refetched early when a token names a key id it does not hold (rate-limited, so a
//! stream of forged `kid`s cannot make the server hammer the identity provider).

use std::fmt;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{Jwk, JwkSet, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, Validation};
use serde::Deserialize;
use tc_vault::acl::Scopes;
use tokio::sync::Mutex;

use crate::config::{AuthConfig, AuthMode, JwksLocation};

/// The caller of every request over stdio.
pub const STDIO_CALLER: &str = "stdio";
/// The caller of every HTTP request under `auth.mode = "none"`.
pub const HTTP_LOCAL_CALLER: &str = "http-local";
/// Bearer tokens longer than this are refused before any parsing (bounds the work a request
/// can cause; real JWTs are a few hundred bytes to a few KiB).
pub const MAX_BEARER_BYTES: usize = 16 * 1024;
/// A fetched JWKS or discovery document larger than this is refused.
pub const MAX_FETCH_BYTES: usize = 1024 * 1024;
/// The realm named in `WWW-Authenticate`.
pub const REALM: &str = "obsidian-tc";

/// The principal a request comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// `stdio`, `http-local`, or the token's `sub`.
    pub id: String,
    pub scopes: Scopes,
    /// The token's `vault` claim: when set, the caller may address only that vault.
    pub vault: Option<String>,
}

impl Caller {
    // r[impl auth.stdio-caller]
    // r[impl auth.local-scopes]
    /// The one caller of the trusted stdio transport, holding every scope.
    pub fn stdio() -> Self {
        Caller {
            id: STDIO_CALLER.to_owned(),
            scopes: Scopes::all(),
            vault: None,
        }
    }

    // r[impl auth.none.caller]
    /// The one caller of an HTTP server under `auth.mode = "none"`, holding every scope.
    pub fn http_local() -> Self {
        Caller {
            id: HTTP_LOCAL_CALLER.to_owned(),
            scopes: Scopes::all(),
            vault: None,
        }
    }

    // r[impl auth.jwt.vault]
    /// Whether this caller may address the vault `vault_id`.
    pub fn may_use_vault(&self, vault_id: &str) -> bool {
        self.vault.as_deref().is_none_or(|only| only == vault_id)
    }
}

/// `serve --http` refused to bind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "auth.mode = \"none\" serves every request as one unauthenticated caller, so it may only \
     bind a loopback address, not {addr}; bind 127.0.0.1 or [::1], or set auth.mode to \"jwt\" \
     or \"oidc\""
)]
pub struct BindRefused {
    pub addr: SocketAddr,
}

// r[impl auth.none.loopback]
/// Refuses a non-loopback bind address under `auth.mode = "none"`.
pub fn check_bind(mode: AuthMode, addr: SocketAddr) -> Result<(), BindRefused> {
    if mode == AuthMode::None && !addr.ip().is_loopback() {
        return Err(BindRefused { addr });
    }
    Ok(())
}

/// Why a request was not authenticated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No `Authorization` header: RFC 6750 §3.1 says to name no error code then.
    #[error("this server needs a bearer token: send Authorization: Bearer <token>")]
    MissingToken,
    /// An `Authorization` header that is not `Bearer <token>`.
    #[error("the Authorization header must be `Bearer <token>`")]
    MalformedHeader,
    /// The token is not acceptable (bad signature, expired, wrong audience, unknown key …).
    #[error("invalid bearer token: {0}")]
    InvalidToken(String),
    /// The keys to verify with could not be obtained; not the client's fault.
    #[error("the token signing keys are unavailable: {0}")]
    KeysUnavailable(String),
}

impl AuthError {
    /// The HTTP status to answer with: 401, or 503 when the server could not get its keys.
    pub fn status(&self) -> u16 {
        match self {
            AuthError::KeysUnavailable(_) => 503,
            _ => 401,
        }
    }

    // r[impl auth.unauthenticated]
    /// The `WWW-Authenticate` challenge (RFC 6750 §3) for a 401.
    pub fn www_authenticate(&self) -> Option<String> {
        // The description may echo token fields (a kid); keep it a short, printable,
        // quote-free string so the header value is always valid.
        let quoted = |text: &str| -> String {
            text.chars()
                .map(|c| match c {
                    '"' | '\\' => '\'',
                    ' '..='~' => c,
                    _ => '?',
                })
                .take(200)
                .collect()
        };
        match self {
            AuthError::MissingToken => Some(format!("Bearer realm=\"{REALM}\"")),
            AuthError::MalformedHeader => Some(format!(
                "Bearer realm=\"{REALM}\", error=\"invalid_request\", \
                 error_description=\"{}\"",
                quoted(&self.to_string())
            )),
            AuthError::InvalidToken(reason) => Some(format!(
                "Bearer realm=\"{REALM}\", error=\"invalid_token\", error_description=\"{}\"",
                quoted(reason)
            )),
            AuthError::KeysUnavailable(_) => None,
        }
    }
}

/// Why the authenticator could not be built from the configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthSetupError {
    #[error("auth.jwks: cannot read {path}: {reason}")]
    JwksFile { path: String, reason: String },
    #[error("auth.jwks: {path} is not a usable JWKS: {reason}")]
    JwksParse { path: String, reason: String },
    #[error("auth.jwtSecret: {0}")]
    Secret(String),
    #[error("cannot build the HTTP client for auth: {0}")]
    Client(String),
}

/// How a fetched JWKS is kept fresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefreshPolicy {
    /// A cached JWKS older than this is fetched again before use.
    pub ttl: Duration,
    /// An unknown `kid` triggers a refetch at most this often.
    pub min_refetch_interval: Duration,
    /// Timeout for one discovery or JWKS request.
    pub fetch_timeout: Duration,
}

impl Default for RefreshPolicy {
    fn default() -> Self {
        RefreshPolicy {
            ttl: Duration::from_secs(3600),
            min_refetch_interval: Duration::from_secs(30),
            fetch_timeout: Duration::from_secs(10),
        }
    }
}

/// The claims the server reads. Unknown claims are ignored: identity providers add many.
#[derive(Debug, Deserialize)]
struct Claims {
    sub: String,
    #[serde(default)]
    scope: Option<ScopeClaim>,
    #[serde(default)]
    scp: Option<ScopeClaim>,
    #[serde(default)]
    scopes: Option<ScopeClaim>,
    #[serde(default)]
    vault: Option<String>,
}

/// Scopes arrive as a space-separated string (`scope`, RFC 8693) or as an array (`scp`,
/// `scopes`, as some providers write them).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ScopeClaim {
    Text(String),
    List(Vec<String>),
}

impl ScopeClaim {
    fn into_iter(self) -> Vec<String> {
        match self {
            ScopeClaim::Text(text) => text.split_whitespace().map(str::to_owned).collect(),
            ScopeClaim::List(list) => list,
        }
    }
}

/// Verifies bearer tokens and turns them into [`Caller`]s, per `auth.mode`.
pub struct Authenticator {
    mode: AuthMode,
    hs256: Option<DecodingKey>,
    keys: Option<KeySource>,
    audience: Option<String>,
    issuer: Option<String>,
}

impl fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authenticator")
            .field("mode", &self.mode)
            .field("hs256", &self.hs256.is_some())
            .field("keys", &self.keys)
            .field("audience", &self.audience)
            .field("issuer", &self.issuer)
            .finish()
    }
}

enum KeySource {
    Static(JwkSet),
    Remote(RemoteJwks),
}

impl fmt::Debug for KeySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeySource::Static(set) => write!(f, "Static({} keys)", set.keys.len()),
            KeySource::Remote(remote) => write!(f, "Remote({:?})", remote.origin),
        }
    }
}

impl Authenticator {
    /// The authenticator of `auth.mode = "none"`.
    pub fn none() -> Self {
        Authenticator {
            mode: AuthMode::None,
            hs256: None,
            keys: None,
            audience: None,
            issuer: None,
        }
    }

    /// Builds the authenticator for a validated `[auth]` table. A JWKS file is read now, so a
    /// broken file stops start-up; a JWKS URL and OIDC discovery are fetched on first use.
    pub fn from_config(auth: &AuthConfig) -> Result<Self, AuthSetupError> {
        Self::with_policy(auth, RefreshPolicy::default())
    }

    /// [`Authenticator::from_config`] with an explicit JWKS refresh policy.
    pub fn with_policy(auth: &AuthConfig, policy: RefreshPolicy) -> Result<Self, AuthSetupError> {
        let mut out = Authenticator {
            mode: auth.mode,
            hs256: None,
            keys: None,
            audience: auth.audience.clone(),
            issuer: None,
        };
        match auth.mode {
            AuthMode::None => {}
            AuthMode::Jwt => {
                if let Some(secret) = &auth.jwt_secret {
                    out.hs256 = Some(
                        DecodingKey::from_secret(secret.as_bytes())
                            .map_err(|e| AuthSetupError::Secret(e.to_string()))?,
                    );
                }
                out.keys = match auth.jwks_location() {
                    None => None,
                    Some(JwksLocation::File(path)) => Some(KeySource::Static(read_jwks(&path)?)),
                    Some(JwksLocation::Url(url)) => Some(KeySource::Remote(RemoteJwks::new(
                        RemoteOrigin::Jwks(url),
                        policy,
                    )?)),
                };
            }
            AuthMode::Oidc => {
                let issuer = auth
                    .oidc
                    .as_ref()
                    .map(|o| o.issuer.clone())
                    .unwrap_or_default();
                out.issuer = Some(issuer.clone());
                out.keys = Some(KeySource::Remote(RemoteJwks::new(
                    RemoteOrigin::Discovery(issuer),
                    policy,
                )?));
            }
        }
        Ok(out)
    }

    pub fn mode(&self) -> AuthMode {
        self.mode
    }

    /// Authenticates one HTTP request from its `Authorization` header value.
    pub async fn authenticate(&self, authorization: Option<&str>) -> Result<Caller, AuthError> {
        if self.mode == AuthMode::None {
            return Ok(Caller::http_local());
        }
        let header = authorization.ok_or(AuthError::MissingToken)?;
        let token = bearer_token(header).ok_or(AuthError::MalformedHeader)?;
        self.verify(token).await
    }

    /// Verifies a bearer token and returns its caller.
    pub async fn verify(&self, token: &str) -> Result<Caller, AuthError> {
        if self.mode == AuthMode::None {
            return Ok(Caller::http_local());
        }
        if token.len() > MAX_BEARER_BYTES {
            return Err(AuthError::InvalidToken("token too long".into()));
        }
        let header = jsonwebtoken::decode_header(token).map_err(describe)?;
        let claims = if header.alg.family() == AlgorithmFamily::Hmac {
            // r[impl auth.jwt.secret]
            // Only HS256 is configured; a JWKS never verifies an HMAC token, so a public key
            // cannot be abused as a shared secret.
            let key = self.hs256.as_ref().ok_or_else(|| {
                AuthError::InvalidToken("HMAC-signed tokens are not accepted here".into())
            })?;
            if header.alg != Algorithm::HS256 {
                return Err(AuthError::InvalidToken(format!(
                    "algorithm {:?} is not accepted; use HS256",
                    header.alg
                )));
            }
            self.decode(token, key, header.alg)?
        } else {
            // r[impl auth.jwt.jwks]
            // r[impl auth.oidc]
            let keys = self.keys.as_ref().ok_or_else(|| {
                AuthError::InvalidToken(format!(
                    "algorithm {:?} needs auth.jwks, which is not configured",
                    header.alg
                ))
            })?;
            let candidates = match keys {
                KeySource::Static(set) => candidate_keys(set, header.kid.as_deref(), header.alg),
                KeySource::Remote(remote) => {
                    remote.keys_for(header.kid.as_deref(), header.alg).await?
                }
            };
            if candidates.is_empty() {
                return Err(AuthError::InvalidToken(match &header.kid {
                    Some(kid) => format!("no key with kid {kid:?} for {:?}", header.alg),
                    None => format!("no key for {:?}", header.alg),
                }));
            }
            let mut last = None;
            let mut found = None;
            for key in &candidates {
                match self.decode(token, key, header.alg) {
                    Ok(claims) => {
                        found = Some(claims);
                        break;
                    }
                    Err(e) => last = Some(e),
                }
            }
            match (found, last) {
                (Some(claims), _) => claims,
                (None, Some(e)) => return Err(e),
                (None, None) => return Err(AuthError::InvalidToken("no usable key".into())),
            }
        };
        caller_from(claims)
    }

    // r[impl auth.jwt.claims]
    fn decode(&self, token: &str, key: &DecodingKey, alg: Algorithm) -> Result<Claims, AuthError> {
        let mut validation = Validation::new(alg);
        let mut required = vec!["exp", "sub"];
        match &self.audience {
            Some(audience) => {
                validation.set_audience(&[audience]);
                required.push("aud");
            }
            // jsonwebtoken refuses any `aud` when none is expected; with no audience
            // configured the server does not care whom the token was minted for.
            None => validation.validate_aud = false,
        }
        if let Some(issuer) = &self.issuer {
            validation.set_issuer(&[issuer]);
            required.push("iss");
        }
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&required);
        jsonwebtoken::decode::<Claims>(token, key, &validation)
            .map(|data| data.claims)
            .map_err(describe)
    }
}

// r[impl auth.jwt.caller]
// r[impl auth.jwt.scopes]
fn caller_from(claims: Claims) -> Result<Caller, AuthError> {
    if claims.sub.is_empty() {
        return Err(AuthError::InvalidToken("empty sub".into()));
    }
    // The local callers' ids are not principals a token can name: a token with sub "stdio"
    // could otherwise redeem an approval minted for the local stdio client of a server that
    // shares this cache directory.
    if claims.sub == STDIO_CALLER || claims.sub == HTTP_LOCAL_CALLER {
        return Err(AuthError::InvalidToken(format!(
            "sub {:?} is reserved for local callers",
            claims.sub
        )));
    }
    let scopes: Vec<String> = [claims.scope, claims.scp, claims.scopes]
        .into_iter()
        .flatten()
        .flat_map(ScopeClaim::into_iter)
        .collect();
    Ok(Caller {
        id: claims.sub,
        scopes: Scopes::granted(scopes),
        vault: claims.vault,
    })
}

fn bearer_token(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && !token.contains(' '))
        .then_some(token)
}

fn describe(error: jsonwebtoken::errors::Error) -> AuthError {
    let reason = match error.kind() {
        ErrorKind::ExpiredSignature => "token expired".to_owned(),
        ErrorKind::ImmatureSignature => "token not yet valid (nbf)".to_owned(),
        ErrorKind::InvalidAudience => "wrong audience".to_owned(),
        ErrorKind::InvalidIssuer => "wrong issuer".to_owned(),
        ErrorKind::InvalidSignature => "bad signature".to_owned(),
        ErrorKind::InvalidAlgorithm => "algorithm does not match the key".to_owned(),
        ErrorKind::MissingRequiredClaim(claim) => format!("missing claim {claim}"),
        ErrorKind::InvalidClaimFormat(claim) => format!("malformed claim {claim}"),
        ErrorKind::Json(_) => "malformed claims".to_owned(),
        _ => "malformed token".to_owned(),
    };
    AuthError::InvalidToken(reason)
}

/// The keys of `set` that may verify a token with `kid` and `alg`: a JWK whose `use` is not
/// `sig`, whose `alg` differs, or whose type does not fit `alg` is never tried.
fn candidate_keys(set: &JwkSet, kid: Option<&str>, alg: Algorithm) -> Vec<DecodingKey> {
    set.keys
        .iter()
        .filter(|jwk| match kid {
            Some(kid) => jwk.common.key_id.as_deref() == Some(kid),
            None => true,
        })
        .filter(|jwk| usable_for(jwk, alg))
        .filter_map(|jwk| DecodingKey::from_jwk(jwk).ok())
        .filter(|key| key.family() == alg.family())
        .collect()
}

fn usable_for(jwk: &Jwk, alg: Algorithm) -> bool {
    let for_signing = matches!(
        jwk.common.public_key_use,
        None | Some(PublicKeyUse::Signature)
    );
    let alg_fits = match jwk.common.key_algorithm {
        None => true,
        Some(key_alg) => Algorithm::try_from(key_alg).is_ok_and(|a| a == alg),
    };
    for_signing && alg_fits && alg.family() != AlgorithmFamily::Hmac
}

fn parse_jwks(bytes: &[u8]) -> Result<JwkSet, String> {
    let set: JwkSet = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if set.keys.is_empty() {
        return Err("it holds no keys".into());
    }
    Ok(set)
}

fn read_jwks(path: &Path) -> Result<JwkSet, AuthSetupError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| AuthSetupError::JwksFile {
        path: shown.clone(),
        reason: e.to_string(),
    })?;
    parse_jwks(&bytes).map_err(|reason| AuthSetupError::JwksParse {
        path: shown,
        reason,
    })
}

#[derive(Debug, Clone)]
enum RemoteOrigin {
    /// `auth.jwks` as a URL.
    Jwks(String),
    /// `auth.oidc.issuer`: the JWKS URL comes from discovery.
    Discovery(String),
}

struct RemoteJwks {
    client: reqwest::Client,
    origin: RemoteOrigin,
    policy: RefreshPolicy,
    cache: Mutex<RemoteCache>,
}

#[derive(Default)]
struct RemoteCache {
    keys: Option<Arc<JwkSet>>,
    fetched_at: Option<Instant>,
    last_attempt: Option<Instant>,
}

#[derive(Debug, Deserialize)]
struct Discovery {
    issuer: String,
    jwks_uri: String,
}

impl RemoteJwks {
    fn new(origin: RemoteOrigin, policy: RefreshPolicy) -> Result<Self, AuthSetupError> {
        // reqwest is built without a bundled crypto provider (see the workspace manifest);
        // ring is installed as the process default. An error means another provider is
        // already installed, which serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .timeout(policy.fetch_timeout)
            .redirect(reqwest::redirect::Policy::limited(3))
            .build()
            .map_err(|e| AuthSetupError::Client(e.to_string()))?;
        Ok(RemoteJwks {
            client,
            origin,
            policy,
            cache: Mutex::new(RemoteCache::default()),
        })
    }

    /// The keys that may verify a token with `kid` and `alg`, fetching the JWKS when it is
    /// missing or older than the TTL, and once more (rate-limited) when `kid` is unknown.
    async fn keys_for(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Vec<DecodingKey>, AuthError> {
        let mut cache = self.cache.lock().await;
        let now = Instant::now();
        let stale = cache
            .fetched_at
            .is_none_or(|at| now.duration_since(at) >= self.policy.ttl);
        if stale && self.may_attempt(&cache, now) {
            self.refresh(&mut cache, now).await?;
        }
        let Some(keys) = cache.keys.clone() else {
            return Err(AuthError::KeysUnavailable(
                "the JWKS has not been fetched yet; retry shortly".into(),
            ));
        };
        let found = candidate_keys(&keys, kid, alg);
        if !found.is_empty() || kid.is_none() {
            return Ok(found);
        }
        // A kid we do not hold: the provider may have rotated its keys.
        if self.may_attempt(&cache, now) {
            self.refresh(&mut cache, now).await?;
            if let Some(keys) = &cache.keys {
                return Ok(candidate_keys(keys, kid, alg));
            }
        }
        Ok(Vec::new())
    }

    /// Fetches are rate-limited even with nothing cached, so a provider that is down is not
    /// asked again on every request.
    fn may_attempt(&self, cache: &RemoteCache, now: Instant) -> bool {
        cache
            .last_attempt
            .is_none_or(|at| now.duration_since(at) >= self.policy.min_refetch_interval)
    }

    /// Fetches the JWKS. A failure keeps a JWKS fetched earlier in use (the provider being
    /// briefly down should not lock every client out) and only fails with none cached.
    async fn refresh(&self, cache: &mut RemoteCache, now: Instant) -> Result<(), AuthError> {
        cache.last_attempt = Some(now);
        match self.fetch().await {
            Ok(set) => {
                cache.keys = Some(Arc::new(set));
                cache.fetched_at = Some(now);
                Ok(())
            }
            Err(reason) if cache.keys.is_some() => {
                tracing::warn!(%reason, "JWKS refresh failed; keeping the keys fetched earlier");
                Ok(())
            }
            Err(reason) => Err(AuthError::KeysUnavailable(reason)),
        }
    }

    async fn fetch(&self) -> Result<JwkSet, String> {
        let jwks_uri = match &self.origin {
            RemoteOrigin::Jwks(url) => url.clone(),
            RemoteOrigin::Discovery(issuer) => {
                let url = format!(
                    "{}/.well-known/openid-configuration",
                    issuer.trim_end_matches('/')
                );
                let body = self.get(&url).await?;
                let discovery: Discovery = serde_json::from_slice(&body)
                    .map_err(|e| format!("discovery document at {url}: {e}"))?;
                // OpenID Connect Discovery §4.3: the document's issuer must be the one asked.
                if discovery.issuer.trim_end_matches('/') != issuer.trim_end_matches('/') {
                    return Err(format!(
                        "discovery at {url} names issuer {:?}, not {issuer:?}",
                        discovery.issuer
                    ));
                }
                discovery.jwks_uri
            }
        };
        let body = self.get(&jwks_uri).await?;
        parse_jwks(&body).map_err(|e| format!("JWKS at {jwks_uri}: {e}"))
    }

    async fn get(&self, url: &str) -> Result<Vec<u8>, String> {
        let mut response = self
            .client
            .get(url)
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|e| format!("GET {url}: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("GET {url}: HTTP {}", response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("GET {url}: {e}"))?
        {
            if body.len() + chunk.len() > MAX_FETCH_BYTES {
                return Err(format!(
                    "GET {url}: response larger than {MAX_FETCH_BYTES} bytes"
                ));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}
