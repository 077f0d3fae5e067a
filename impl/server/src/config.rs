//! The TOML configuration (spec/config.md; spec/config.md `config.*`, and the cache-directory
//! rules of spec/cli.md `cli.cache-default`, `cli.cache-precedence`, `cli.cache-outside-vault`,
//! `cli.serve.vault-dir`).
//!
//! Parsing is strict: every table denies unknown keys, and every error names the key with its
//! table path (`vaults[0].acl.readpaths`) and the line it sits on, because a misspelt key that
//! is silently ignored would quietly widen an ACL or drop a convention. Validation after
//! parsing covers what serde cannot see: unique vault ids, vault roots that exist, complete
//! auth settings, positive limits, and globs that compile.
//!
//! Relative paths (`cacheDir`, `[[vaults]] root`, a `jwks` file) are resolved against the
//! directory of the config file, so a config means the same thing whatever the working
//! directory of the process that reads it.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fmt;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;
use tc_vault::acl::{Acl, AclConfig};
use tc_vault::conventions::{ConventionConfig, Conventions};

mod paths;
mod validate;
mod versions;

pub use versions::VersionsConfig;

use paths::*;

/// The default confirmation TTL, in seconds.
pub const DEFAULT_ELICIT_TTL_SECONDS: i64 = tc_gate::GateConfig::DEFAULT_TTL_SECONDS;
/// The default cap on one tool response, in bytes.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = tc_gate::governor::DEFAULT_MAX_RESPONSE_BYTES as u64;
/// The smallest `governor.maxResponseBytes` accepted (spec `config.governor.floor`): 16 KiB.
///
/// A paged tool pages instead of overflowing because every entry of a page fits any accepted
/// cap: an entry whose path alone would not (a 4,096-byte path of characters JSON escapes
/// costs about 24,000 bytes as sent, escaped once in the result and again in its text copy)
/// is reported with its path shortened (spec `paging.errors.path-shortened`), and the cursor
/// after it, at most about 11,000 bytes in both copies, leaves room for that entry.
/// `tests/governor_minimum.rs` walks such a vault at this cap.
pub const MIN_MAX_RESPONSE_BYTES: u64 = 16_384;
/// The folder under `$XDG_CACHE_HOME` or `~/.cache` that holds the default cache directory.
pub const CACHE_DIR_NAME: &str = "obsidian-tc";
/// HS256 keys shorter than the hash output weaken the MAC (RFC 7518 §3.2 asks for ≥ 256 bits).
pub const MIN_JWT_SECRET_BYTES: usize = 32;

/// The whole configuration, parsed and validated.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Config {
    /// `cacheDir`: where cache.db, `server-secrets/` and delete snapshots live.
    #[serde(default)]
    pub cache_dir: Option<PathBuf>,
    /// `elicitTtlSeconds`: lifetime of CLI tokens, raised requests and requestStates.
    #[serde(default = "default_ttl")]
    pub elicit_ttl_seconds: i64,
    /// `legacyElicitationShim`: server-sent `elicitation/create` on legacy stdio sessions.
    #[serde(default)]
    pub legacy_elicitation_shim: bool,
    /// `requestStateSingleUse` (extension, spec `state.ext.opt-in`): admit each
    /// requestState at most once, through the consumed-state store in cache.db.
    #[serde(default)]
    pub request_state_single_use: bool,
    #[serde(default)]
    pub governor: GovernorConfig,
    #[serde(default)]
    pub auth: AuthConfig,
    #[serde(default)]
    pub vaults: Vec<VaultConfig>,
    /// `[ocr]`: the tesseract languages and the engine timeout of ocr_bulk (validated while
    /// the file is parsed; an unknown key is named).
    #[serde(default)]
    pub ocr: tc_ocr::OcrConfig,
    /// `[search]`: the vault index behind search_notes, captures, reset_vault_cache and the
    /// link tools' backlinks (enabled by default).
    #[serde(default)]
    pub search: tc_index::SearchConfig,
    /// `[toolFacade]`: `mode = "flat"` advertises every tool, `"lean"` only the facade's
    /// find_capability, describe_capability and call_capability.
    #[serde(default)]
    pub tool_facade: crate::facade::ToolFacadeConfig,
    /// `[sessions]`: `traceContent` (default false) also records each call's arguments,
    /// secret-scanned and capped, in session traces.
    #[serde(default)]
    pub sessions: tc_sessions::SessionsConfig,
    /// `[tools]`: `families`, the tool families served (default all of them).
    #[serde(default)]
    pub tools: ToolsConfig,
    /// `[http]`: the `Host` and `Origin` values the HTTP server accepts besides its own.
    #[serde(default)]
    pub http: HttpConfig,
    /// `[versions]`: how long snapshots are kept (spec/versions.md).
    #[serde(default)]
    pub versions: VersionsConfig,
    /// `[attachments]`: `maxWriteBytes`, the most one write_attachment writes.
    #[serde(default)]
    pub attachments: tc_attachments::AttachmentsConfig,
}

// r[impl config.http.allowed]
/// `[http]`: exceptions to the HTTP server's Host and Origin checks (spec/auth.md
/// `auth.host-origin.host`, `auth.host-origin.origin`), each an exact value, compared
/// without regard to case: a public name a reverse proxy forwards, a local inspector's page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HttpConfig {
    /// `allowedHosts`: `Host` values (`name` or `name:port`) accepted besides the bound
    /// address's.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// `allowedOrigins`: origins (`scheme://host[:port]`) accepted besides the `Host`'s own.
    #[serde(default)]
    pub allowed_origins: Vec<String>,
}

/// `[tools]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ToolsConfig {
    /// `families`: the names of the families whose tools are served; absent = every family.
    #[serde(default)]
    pub families: Option<Vec<String>>,
}

fn default_ttl() -> i64 {
    DEFAULT_ELICIT_TTL_SECONDS
}

fn default_max_response_bytes() -> u64 {
    DEFAULT_MAX_RESPONSE_BYTES
}

/// `[governor]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GovernorConfig {
    /// `maxResponseBytes`: no single tool response may exceed this many bytes.
    #[serde(default = "default_max_response_bytes")]
    pub max_response_bytes: u64,
    /// `pageBytes`: the budget of one page of a paged tool as sent, at most
    /// `maxResponseBytes` (spec `config.governor.page-bytes`); absent, the smaller of
    /// [`DEFAULT_PAGE_BYTES`] and `maxResponseBytes`.
    #[serde(default)]
    pub page_bytes: Option<u64>,
}

impl GovernorConfig {
    /// The page budget in force: the configured one, or the default held under the cap.
    pub fn page_bytes(&self) -> u64 {
        self.page_bytes
            .unwrap_or(DEFAULT_PAGE_BYTES.min(self.max_response_bytes))
    }
}

/// The default budget of one page: what Claude Code shows inline (50,000 characters) and
/// within its default 25,000-token cap on a result, with room to spare.
pub const DEFAULT_PAGE_BYTES: u64 = 40_000;
/// The smallest `governor.pageBytes` accepted.
pub const MIN_PAGE_BYTES: u64 = 4_096;

impl Default for GovernorConfig {
    fn default() -> Self {
        GovernorConfig {
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            page_bytes: None,
        }
    }
}

/// `auth.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthMode {
    /// No credentials; every HTTP request is `http-local`; loopback binds only.
    #[default]
    None,
    /// Bearer JWTs verified with `jwtSecret` (HS256) and/or the keys of `jwks`.
    Jwt,
    /// Bearer JWTs from `oidc.issuer`, whose keys are found by discovery.
    Oidc,
}

impl AuthMode {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMode::None => "none",
            AuthMode::Jwt => "jwt",
            AuthMode::Oidc => "oidc",
        }
    }
}

impl fmt::Display for AuthMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `[auth]`.
#[derive(Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AuthConfig {
    #[serde(default)]
    pub mode: AuthMode,
    /// `jwtSecret`: the HS256 key (its UTF-8 bytes). Never printed by `Debug`.
    #[serde(default)]
    pub jwt_secret: Option<String>,
    /// `jwks`: a JWKS file path, or an `http(s)://` URL to fetch it from.
    #[serde(default)]
    pub jwks: Option<String>,
    /// `[auth.oidc]`.
    #[serde(default)]
    pub oidc: Option<OidcConfig>,
    /// `audience`: when set, a token's `aud` must include it.
    #[serde(default)]
    pub audience: Option<String>,
}

impl fmt::Debug for AuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthConfig")
            .field("mode", &self.mode)
            .field(
                "jwt_secret",
                &self.jwt_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("jwks", &self.jwks)
            .field("oidc", &self.oidc)
            .field("audience", &self.audience)
            .finish()
    }
}

/// Where `auth.jwks` points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwksLocation {
    File(PathBuf),
    Url(String),
}

impl AuthConfig {
    /// `jwks` read as a URL when it starts with `http://` or `https://`, else as a file path.
    pub fn jwks_location(&self) -> Option<JwksLocation> {
        self.jwks.as_deref().map(|jwks| {
            if jwks.starts_with("https://") || jwks.starts_with("http://") {
                JwksLocation::Url(jwks.to_owned())
            } else {
                JwksLocation::File(PathBuf::from(jwks))
            }
        })
    }
}

// r[impl auth.keys.https]
/// Why token signing keys (or the discovery document naming them) must not be fetched from
/// `url`, if they must not: only `https://` is trusted, and plain `http://` only to a
/// loopback host (a provider on this machine), because whoever can alter the answer on the
/// way can mint tokens the server accepts.
pub fn key_url_problem(url: &str) -> Option<String> {
    let parsed: axum::http::Uri = match url.parse() {
        Ok(parsed) => parsed,
        Err(error) => return Some(format!("{url:?} is not a URL ({error})")),
    };
    let loopback = parsed.host().is_some_and(is_loopback_host);
    match parsed.scheme_str() {
        Some("https") => None,
        Some("http") if loopback => None,
        Some("http") => Some(format!(
            "{url} is plain http:// to a host that is not loopback; signing keys are trusted \
             only over https://"
        )),
        Some(other) => Some(format!("{url} is {other}://, not https://")),
        None => Some(format!("{url:?} is not an https:// URL")),
    }
}

/// Whether `host` (a name, an IPv4 address, or an IPv6 one with or without brackets) is
/// this machine: `localhost` or a loopback address.
pub fn is_loopback_host(host: &str) -> bool {
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// `[auth.oidc]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OidcConfig {
    /// `issuer`: discovery reads `<issuer>/.well-known/openid-configuration`.
    pub issuer: String,
}

/// One `[[vaults]]` entry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VaultConfig {
    pub id: String,
    /// Canonical after [`Config::parse`] validates it.
    pub root: PathBuf,
    /// `[vaults.acl]`; absent means unrestricted.
    #[serde(default)]
    pub acl: Option<AclConfig>,
    /// `[[vaults.conventions]]`, judged in order.
    #[serde(default)]
    pub conventions: Vec<ConventionConfig>,
    /// `[vaults.memory]`: `folder` (default `memory`), where entity notes are materialized;
    /// absent = the defaults.
    #[serde(default)]
    pub memory: Option<tc_memory::MemoryConfig>,
    /// `[vaults.bridge]`: the Obsidian Local REST API plugin of this vault (`url`,
    /// `apiKeyFile` as an absolute path, `timeoutMs`); absent = execute_command and
    /// trigger_quickadd refuse with plugin_unreachable.
    #[serde(default)]
    pub bridge: Option<tc_bridge::BridgeConfig>,
    /// `[vaults.commands]`: `enabled` (default false) and the exact `allowlist` of Obsidian
    /// command ids execute_command may run.
    #[serde(default)]
    pub commands: tc_bridge::CommandsConfig,
}

/// Why a configuration could not be used. Each message names the key at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {reason}")]
    Read { path: PathBuf, reason: String },
    /// A syntax error, an unknown key or a value of the wrong type.
    #[error("{source_name}{location}: {key}: {message}")]
    Parse {
        source_name: String,
        /// ` line N` where the parser knows it, else empty.
        location: String,
        /// The key with its table path, e.g. `vaults[0].acl.readPaths`.
        key: String,
        message: String,
    },
    /// A value that parsed but is not acceptable.
    #[error("{key}: {message}")]
    Invalid { key: String, message: String },
}

impl ConfigError {
    fn invalid(key: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError::Invalid {
            key: key.into(),
            message: message.into(),
        }
    }

    /// The key this error is about (its table path), when it concerns one.
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::Read { .. } => None,
            ConfigError::Parse { key, .. } | ConfigError::Invalid { key, .. } => Some(key),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            cache_dir: None,
            elicit_ttl_seconds: DEFAULT_ELICIT_TTL_SECONDS,
            legacy_elicitation_shim: false,
            request_state_single_use: false,
            governor: GovernorConfig::default(),
            auth: AuthConfig::default(),
            vaults: Vec::new(),
            ocr: tc_ocr::OcrConfig::default(),
            search: tc_index::SearchConfig::default(),
            tool_facade: crate::facade::ToolFacadeConfig::default(),
            sessions: tc_sessions::SessionsConfig::default(),
            tools: ToolsConfig::default(),
            http: HttpConfig::default(),
            versions: VersionsConfig::default(),
            attachments: tc_attachments::AttachmentsConfig::default(),
        }
    }
}

impl Config {
    /// Reads, parses and validates the config file at `path`.
    // r[impl config.file]
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        let base = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        Self::parse(&text, &path.display().to_string(), &base)
    }

    /// Parses and validates config text. `source_name` labels errors; relative paths are
    /// resolved against `base_dir`.
    pub fn parse(text: &str, source_name: &str, base_dir: &Path) -> Result<Config, ConfigError> {
        let mut config = parse_toml(text, source_name)?;
        config.resolve_paths(base_dir)?;
        config.validate()?;
        Ok(config)
    }

    /// The configuration of `serve VAULT_DIR` with no config file: one vault whose id is the
    /// folder's name made into a slug, every other key at its default.
    // r[impl cli.serve.vault-dir]
    pub fn from_vault_dir(vault_dir: &Path) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        config.add_vault_dir(vault_dir)?;
        Ok(config)
    }

    /// Adds `serve VAULT_DIR` to a config that lists no vaults; refused when it lists some,
    /// since serving a folder the config does not describe would bypass its ACL.
    pub fn add_vault_dir(&mut self, vault_dir: &Path) -> Result<(), ConfigError> {
        if !self.vaults.is_empty() {
            return Err(ConfigError::invalid(
                "vaults",
                "the config already lists vaults, so VAULT_DIR cannot be given as well; \
                 drop VAULT_DIR or add it to the config as a [[vaults]] entry",
            ));
        }
        let root = canonical_dir("VAULT_DIR", vault_dir)?;
        let name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let id = slugify(&name);
        let id = if id.is_empty() {
            "vault".to_owned()
        } else {
            id
        };
        self.vaults.push(VaultConfig {
            id,
            root,
            acl: None,
            conventions: Vec::new(),
            memory: None,
            bridge: None,
            commands: tc_bridge::CommandsConfig::default(),
        });
        Ok(())
    }

    fn resolve_paths(&mut self, base_dir: &Path) -> Result<(), ConfigError> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let resolve = |key: &str, path: &Path| -> Result<PathBuf, ConfigError> {
            let expanded = expand_home(key, path, home.as_deref())?;
            Ok(absolutize(base_dir, &expanded))
        };
        if let Some(dir) = &self.cache_dir {
            self.cache_dir = Some(resolve("cacheDir", dir)?);
        }
        for (index, vault) in self.vaults.iter_mut().enumerate() {
            vault.root = resolve(&format!("vaults[{index}].root"), &vault.root)?;
        }
        if let Some(JwksLocation::File(file)) = self.auth.jwks_location() {
            let file = resolve("auth.jwks", &file)?;
            self.auth.jwks = Some(file.to_string_lossy().into_owned());
        }
        Ok(())
    }

    /// The vault with `id`.
    pub fn vault(&self, id: &str) -> Option<&VaultConfig> {
        self.vaults.iter().find(|v| v.id == id)
    }

    /// The cache directory `serve` and `elicit` use: `--cache-dir`, else `cacheDir`, else
    /// the default under `$XDG_CACHE_HOME` or `~/.cache`; refused inside a served vault.
    // r[impl cli.cache-precedence]
    // r[impl cli.cache-outside-vault]
    pub fn resolve_cache_dir(
        &self,
        flag: Option<&Path>,
        env: &CacheEnv,
    ) -> Result<PathBuf, ConfigError> {
        let (key, dir) = if let Some(flag) = flag {
            let cwd = std::env::current_dir().map_err(|e| {
                ConfigError::invalid("--cache-dir", format!("cannot read working dir: {e}"))
            })?;
            ("--cache-dir", absolutize(&cwd, flag))
        } else if let Some(dir) = &self.cache_dir {
            ("cacheDir", dir.clone())
        } else {
            let dir = env.default_cache_dir().ok_or_else(|| {
                ConfigError::invalid(
                    "cacheDir",
                    "neither $XDG_CACHE_HOME nor $HOME is set, so there is no default cache \
                     directory; pass --cache-dir DIR or set cacheDir in the config",
                )
            })?;
            ("default cache directory", dir)
        };
        check_cache_outside_vaults(key, &dir, &self.vaults)?;
        Ok(dir)
    }
}

/// The environment the default cache directory is derived from, passed in so tests need not
/// change the process environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheEnv {
    pub xdg_cache_home: Option<OsString>,
    pub home: Option<OsString>,
}

impl CacheEnv {
    /// `$XDG_CACHE_HOME` and `$HOME` of this process.
    pub fn from_process() -> Self {
        CacheEnv {
            xdg_cache_home: std::env::var_os("XDG_CACHE_HOME"),
            home: std::env::var_os("HOME"),
        }
    }

    /// `$XDG_CACHE_HOME/obsidian-tc`, else `$HOME/.cache/obsidian-tc`. The XDG spec says a
    /// relative `$XDG_CACHE_HOME` is invalid and must be ignored, so it is.
    // r[impl cli.cache-default]
    pub fn default_cache_dir(&self) -> Option<PathBuf> {
        let usable =
            |v: &Option<OsString>| v.as_ref().map(PathBuf::from).filter(|p| p.is_absolute());
        usable(&self.xdg_cache_home)
            .map(|xdg| xdg.join(CACHE_DIR_NAME))
            .or_else(|| usable(&self.home).map(|home| home.join(".cache").join(CACHE_DIR_NAME)))
    }
}

/// A vault id made from a folder name: lowercase, each run of other than ASCII letters and
/// digits turned into one `-`, no `-` at either end.
pub fn slugify(name: &str) -> String {
    let mut slug = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    while slug.ends_with('-') {
        slug.pop();
    }
    slug
}

fn strip_prefix<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.strip_prefix(prefix).unwrap_or(text)
}

fn parse_toml(text: &str, source_name: &str) -> Result<Config, ConfigError> {
    let line_of = |span: Option<std::ops::Range<usize>>| {
        span.map(|s| {
            let upto = &text.as_bytes()[..s.start.min(text.len())];
            format!(" line {}", upto.iter().filter(|b| **b == b'\n').count() + 1)
        })
        .unwrap_or_default()
    };
    let deserializer = toml::Deserializer::parse(text).map_err(|e| ConfigError::Parse {
        source_name: source_name.to_owned(),
        location: line_of(e.span()),
        key: "(syntax)".to_owned(),
        message: e.message().trim().to_owned(),
    })?;
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let container = e.path().to_string();
        let inner = e.inner();
        let message = inner.message().trim().to_owned();
        // serde_path_to_error's path already ends in the unknown key itself, so it names
        // the key with its full table path.
        let key = if container == "." {
            "(top level)".to_owned()
        } else {
            container
        };
        ConfigError::Parse {
            source_name: source_name.to_owned(),
            location: line_of(inner.span()),
            key,
            message,
        }
    })
}
