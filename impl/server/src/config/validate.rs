//! What the configuration's types cannot say, checked after parsing (spec/config.md
//! `config.ttl.positive`, `config.governor.floor`, `config.vaults.disjoint`, and the auth
//! and vault checks; spec/auth.md `auth.none.loopback`).

use super::*;

impl Config {
    /// Checks what the types cannot; makes vault roots canonical.
    pub(super) fn validate(&mut self) -> Result<(), ConfigError> {
        // r[impl config.ttl.positive]
        if self.elicit_ttl_seconds <= 0 {
            return Err(ConfigError::invalid(
                "elicitTtlSeconds",
                format!(
                    "must be a positive number of seconds, not {}",
                    self.elicit_ttl_seconds
                ),
            ));
        }
        if tc_gate::GateConfig::new(self.elicit_ttl_seconds).is_err() {
            return Err(ConfigError::invalid(
                "elicitTtlSeconds",
                format!("{} seconds is too large", self.elicit_ttl_seconds),
            ));
        }
        // r[impl config.governor]
        if self.governor.max_response_bytes == 0 {
            return Err(ConfigError::invalid(
                "governor.maxResponseBytes",
                "must be a positive number of bytes, not 0",
            ));
        }
        // r[impl config.governor.floor]
        if self.governor.max_response_bytes < MIN_MAX_RESPONSE_BYTES {
            return Err(ConfigError::invalid(
                "governor.maxResponseBytes",
                format!(
                    "must be at least {MIN_MAX_RESPONSE_BYTES} bytes, not {}, so that a \
                     page with one entry and the cursor after it fits as sent",
                    self.governor.max_response_bytes
                ),
            ));
        }
        // r[impl config.governor.page-bytes]
        let page = self.governor.page_bytes();
        if page < MIN_PAGE_BYTES || page > self.governor.max_response_bytes {
            return Err(ConfigError::invalid(
                "governor.pageBytes",
                format!(
                    "must be from {MIN_PAGE_BYTES} to governor.maxResponseBytes ({}) bytes, not {page}",
                    self.governor.max_response_bytes
                ),
            ));
        }
        self.versions.validate()?;
        self.validate_auth()?;
        self.validate_http()?;
        self.validate_vaults()?;
        if let Some(cache_dir) = &self.cache_dir {
            check_cache_outside_vaults("cacheDir", cache_dir, &self.vaults)?;
        }
        Ok(())
    }

    // r[impl config.http.allowed]
    /// Each `http.allowedHosts` entry is a bare authority (`name` or `name:port`) and each
    /// `http.allowedOrigins` entry a whole `http(s)://host[:port]` origin, with nothing after
    /// it: a value that could never equal a request's header is a mistake to name, not skip.
    fn validate_http(&self) -> Result<(), ConfigError> {
        for host in &self.http.allowed_hosts {
            let authority = host.parse::<axum::http::uri::Authority>();
            if host.is_empty() || authority.is_err() || host.contains('@') {
                return Err(ConfigError::invalid(
                    "http.allowedHosts",
                    format!(
                        "{host:?} is not a Host value such as mcp.example.com or localhost:8080"
                    ),
                ));
            }
        }
        for origin in &self.http.allowed_origins {
            if crate::http::parse_origin(origin).is_none() || origin.trim_end().ends_with('/') {
                return Err(ConfigError::invalid(
                    "http.allowedOrigins",
                    format!(
                        "{origin:?} is not an origin such as http://localhost:6274 \
                         (a scheme, a host and an optional port, and no path)"
                    ),
                ));
            }
        }
        Ok(())
    }

    // r[impl config.auth.complete]
    fn validate_auth(&self) -> Result<(), ConfigError> {
        let auth = &self.auth;
        if let Some(secret) = &auth.jwt_secret
            && secret.len() < MIN_JWT_SECRET_BYTES
        {
            return Err(ConfigError::invalid(
                "auth.jwtSecret",
                format!(
                    "must be at least {MIN_JWT_SECRET_BYTES} bytes long for HS256, it has {}",
                    secret.len()
                ),
            ));
        }
        if let Some(jwks) = &auth.jwks
            && jwks.trim().is_empty()
        {
            return Err(ConfigError::invalid("auth.jwks", "must not be empty"));
        }
        if let Some(audience) = &auth.audience
            && audience.is_empty()
        {
            return Err(ConfigError::invalid("auth.audience", "must not be empty"));
        }
        if let Some(JwksLocation::Url(url)) = auth.jwks_location()
            && let Some(problem) = key_url_problem(&url)
        {
            return Err(ConfigError::invalid("auth.jwks", problem));
        }
        match auth.mode {
            AuthMode::None => Ok(()),
            AuthMode::Jwt if auth.jwt_secret.is_none() && auth.jwks.is_none() => {
                Err(ConfigError::invalid(
                    "auth.mode",
                    "\"jwt\" needs auth.jwtSecret or auth.jwks to verify tokens with",
                ))
            }
            AuthMode::Jwt => Ok(()),
            AuthMode::Oidc => match &auth.oidc {
                None => Err(ConfigError::invalid(
                    "auth.oidc.issuer",
                    "auth.mode \"oidc\" needs [auth.oidc] issuer = \"https://…\"",
                )),
                Some(oidc) => {
                    if let Some(problem) = key_url_problem(&oidc.issuer) {
                        return Err(ConfigError::invalid("auth.oidc.issuer", problem));
                    }
                    if auth.audience.is_none() {
                        return Err(ConfigError::invalid(
                            "auth.audience",
                            "auth.mode \"oidc\" needs auth.audience (this server's client id \
                             at the provider): a provider signs tokens for every client it \
                             serves, and without an audience a token minted for any of them \
                             would be accepted here",
                        ));
                    }
                    Ok(())
                }
            },
        }
    }

    // r[impl config.vaults]
    fn validate_vaults(&mut self) -> Result<(), ConfigError> {
        let mut seen = BTreeSet::new();
        for (index, vault) in self.vaults.iter_mut().enumerate() {
            let key = |field: &str| format!("vaults[{index}].{field}");
            if vault.id.is_empty() {
                return Err(ConfigError::invalid(key("id"), "must not be empty"));
            }
            if vault
                .id
                .chars()
                .any(|c| c.is_control() || c.is_whitespace())
            {
                return Err(ConfigError::invalid(
                    key("id"),
                    format!(
                        "{:?} must not contain spaces or control characters",
                        vault.id
                    ),
                ));
            }
            if !seen.insert(vault.id.clone()) {
                return Err(ConfigError::invalid(
                    key("id"),
                    format!(
                        "{:?} is used by another vault; vault ids must be unique",
                        vault.id
                    ),
                ));
            }
            vault.root = canonical_dir(&key("root"), &vault.root)?;
            // r[impl config.acl]
            if let Some(acl) = &vault.acl {
                Acl::compile(acl).map_err(|e| {
                    ConfigError::invalid(key(&format!("acl.{}", strip_prefix(&e.key, "acl."))), {
                        format!("invalid glob {:?}: {}", e.glob, e.reason)
                    })
                })?;
            }
            // r[impl config.conventions]
            Conventions::compile(&vault.conventions).map_err(|e| {
                let message = e.to_string();
                let field = match &e {
                    tc_vault::conventions::ConventionConfigError::Glob(glob) => glob.key.clone(),
                    tc_vault::conventions::ConventionConfigError::NamePattern { index, .. } => {
                        format!("conventions[{index}].namePattern")
                    }
                };
                ConfigError::invalid(key(&field), message)
            })?;
        }
        // r[impl config.vaults.disjoint]
        for (later, vault) in self.vaults.iter().enumerate() {
            for earlier in &self.vaults[..later] {
                if vault.root.starts_with(&earlier.root) || earlier.root.starts_with(&vault.root) {
                    return Err(ConfigError::invalid(
                        format!("vaults[{later}].root"),
                        format!(
                            "the roots of vaults {:?} ({}) and {:?} ({}) overlap; \
                             one vault's folder must not be, or hold, another's",
                            earlier.id,
                            earlier.root.display(),
                            vault.id,
                            vault.root.display()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}
