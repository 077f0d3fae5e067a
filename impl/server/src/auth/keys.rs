//! The keys asymmetric tokens are verified with: a JWKS read from a file, fetched from a URL,
//! or found through OIDC discovery, and the cache that keeps a fetched one fresh (spec
//! `auth.jwt.jwks`, `auth.oidc`).

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, JwkSet, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};
use serde::Deserialize;
use tokio::sync::Mutex;

use super::{AuthError, AuthSetupError};

/// A fetched JWKS or discovery document larger than this is refused.
pub const MAX_FETCH_BYTES: usize = 1024 * 1024;

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

pub(super) enum KeySource {
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

/// The keys of `set` that may verify a token with `kid` and `alg`: a JWK whose `use` is not
/// `sig`, whose `alg` differs, or whose type does not fit `alg` is never tried.
pub(super) fn candidate_keys(set: &JwkSet, kid: Option<&str>, alg: Algorithm) -> Vec<DecodingKey> {
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

pub(super) fn read_jwks(path: &Path) -> Result<JwkSet, AuthSetupError> {
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
pub(super) enum RemoteOrigin {
    /// `auth.jwks` as a URL.
    Jwks(String),
    /// `auth.oidc.issuer`: the JWKS URL comes from discovery.
    Discovery(String),
}

pub(super) struct RemoteJwks {
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
    pub(super) fn new(origin: RemoteOrigin, policy: RefreshPolicy) -> Result<Self, AuthSetupError> {
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
    pub(super) async fn keys_for(
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
