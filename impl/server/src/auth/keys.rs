//! The keys asymmetric tokens are verified with: a JWKS read from a file, fetched from a URL,
//! or found through OIDC discovery, and the cache that keeps a fetched one fresh (spec
//! `auth.jwt.jwks`, `auth.oidc`), fetched only over https:// or from a loopback host
//! (`auth.keys.https`).

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, JwkSet, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};
use serde::Deserialize;
use tokio::sync::Mutex;

use super::{AuthError, AuthSetupError};
use crate::config::key_url_problem;
use tc_tools::with_causes;

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
    /// Held only to read or store the keys, never across a fetch.
    cache: std::sync::Mutex<RemoteCache>,
    /// Held across a fetch: one fetch at a time, and the checks that need it wait for it.
    fetching: Mutex<()>,
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
            // r[impl auth.keys.https]
            // A redirect may not take the fetch off https:// either.
            .redirect(reqwest::redirect::Policy::custom(|attempt| {
                if attempt.previous().len() >= 3 {
                    attempt.error("more than 3 redirects")
                } else if let Some(problem) = key_url_problem(attempt.url().as_str()) {
                    attempt.error(problem)
                } else {
                    attempt.follow()
                }
            }))
            .build()
            .map_err(|e| AuthSetupError::Client(e.to_string()))?;
        Ok(RemoteJwks {
            client,
            origin,
            policy,
            cache: std::sync::Mutex::new(RemoteCache::default()),
            fetching: Mutex::new(()),
        })
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, RemoteCache> {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    // r[impl auth.jwks.no-stall]
    /// The keys that may verify a token with `kid` and `alg`, fetching the JWKS when it is
    /// missing or older than the TTL, and once more (rate-limited) when `kid` is unknown.
    ///
    /// A check the keys held can answer never waits for a fetch: a stale set is refreshed
    /// by whichever check finds no fetch under way, the others verify with what is held,
    /// so one forged `kid` against a slow provider stalls only the checks that need the
    /// provider's answer.
    pub(super) async fn keys_for(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Vec<DecodingKey>, AuthError> {
        let now = Instant::now();
        let (held, stale) = {
            let cache = self.cache();
            let stale = cache
                .fetched_at
                .is_none_or(|at| now.duration_since(at) >= self.policy.ttl);
            (cache.keys.clone(), stale)
        };
        if let Some(keys) = &held {
            let found = candidate_keys(keys, kid, alg);
            if !found.is_empty() || kid.is_none() {
                if stale && let Ok(_fetch) = self.fetching.try_lock() {
                    self.refresh_if_due().await?;
                    return Ok(self.held_candidates(kid, alg).unwrap_or(found));
                }
                return Ok(found);
            }
        }
        // No keys yet, or a kid not held (the provider may have rotated its keys): wait for
        // the fetch under way, or make one; a fetch that ended meanwhile counts as the
        // attempt, so the rate limit holds.
        let _fetch = self.fetching.lock().await;
        let fetched_meanwhile = match (&self.cache().keys, &held) {
            (Some(now_held), Some(seen)) => !Arc::ptr_eq(now_held, seen),
            (now_held, _) => now_held.is_some(),
        };
        if !fetched_meanwhile {
            self.refresh_if_due().await?;
        }
        self.held_candidates(kid, alg).ok_or_else(|| {
            AuthError::KeysUnavailable("the JWKS has not been fetched yet; retry shortly".into())
        })
    }

    fn held_candidates(&self, kid: Option<&str>, alg: Algorithm) -> Option<Vec<DecodingKey>> {
        let keys = self.cache().keys.clone()?;
        Some(candidate_keys(&keys, kid, alg))
    }

    /// Fetches the JWKS unless the rate limit says not yet: fetches are rate-limited even
    /// with nothing cached, so a provider that is down is not asked again on every request.
    /// A failure keeps a JWKS fetched earlier in use (the provider being briefly down
    /// should not lock every client out) and only fails with none cached. The caller holds
    /// `fetching`.
    async fn refresh_if_due(&self) -> Result<(), AuthError> {
        let now = Instant::now();
        {
            let mut cache = self.cache();
            let due = cache
                .last_attempt
                .is_none_or(|at| now.duration_since(at) >= self.policy.min_refetch_interval);
            if !due {
                return Ok(());
            }
            cache.last_attempt = Some(now);
        }
        let fetched = self.fetch().await;
        let mut cache = self.cache();
        match fetched {
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
        // r[impl auth.keys.https]
        // The configured URLs were checked at start-up; this also covers the `jwks_uri` a
        // discovery document names.
        if let Some(problem) = key_url_problem(url) {
            return Err(format!("GET {url}: refused: {problem}"));
        }
        let mut response = self
            .client
            .get(url)
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|e| format!("GET {url}: {}", with_causes(&e)))?;
        if !response.status().is_success() {
            return Err(format!("GET {url}: HTTP {}", response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("GET {url}: {}", with_causes(&e)))?
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
