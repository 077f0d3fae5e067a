//! Callers and HTTP authentication (spec/auth.md: `auth.modes`, `auth.stdio-caller`,
//! `auth.none.caller`, `auth.none.loopback`, `auth.local-scopes`, `auth.jwt.secret`,
//! `auth.jwt.jwks`, `auth.oidc`, `auth.jwt.caller`, `auth.jwt.claims`, `auth.jwt.leeway`,
//! `auth.jwt.scopes`, `auth.jwt.vault`, `auth.unauthenticated`).
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

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, Validation};

use crate::config::{AuthConfig, AuthMode, JwksLocation};

mod caller;
mod keys;

pub use caller::{Caller, HTTP_LOCAL_CALLER, STDIO_CALLER};
pub use keys::{MAX_FETCH_BYTES, RefreshPolicy};

use caller::{Claims, caller_from};
use keys::{KeySource, RemoteJwks, RemoteOrigin, candidate_keys, read_jwks};

/// Bearer tokens longer than this are refused before any parsing (bounds the work a request
/// can cause; real JWTs are a few hundred bytes to a few KiB).
pub const MAX_BEARER_BYTES: usize = 16 * 1024;
/// The clock skew, in seconds, allowed when `exp` and `nbf` are checked (spec
/// `auth.jwt.leeway`). jsonwebtoken's own default is 60 s, which keeps an expired token
/// working for a minute; a few seconds cover the skew between well-kept clocks.
pub const JWT_LEEWAY_SECS: u64 = 5;
/// The realm named in `WWW-Authenticate`.
pub const REALM: &str = "obsidian-tc";

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
        // r[impl auth.oidc.issuer-slash]
        if let Some(issuer) = &self.issuer {
            let bare = issuer.strip_suffix('/').unwrap_or(issuer);
            validation.set_issuer(&[bare.to_owned(), format!("{bare}/")]);
            required.push("iss");
        }
        validation.validate_nbf = true;
        // r[impl auth.jwt.leeway]
        validation.leeway = JWT_LEEWAY_SECS;
        validation.set_required_spec_claims(&required);
        jsonwebtoken::decode::<Claims>(token, key, &validation)
            .map(|data| data.claims)
            .map_err(describe)
    }
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
