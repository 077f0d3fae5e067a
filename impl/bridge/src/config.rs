//! The bridge's configuration sections of one vault (spec/config.md `[vaults.bridge]`,
//! `[vaults.commands]`; spec/bridge.md `bridge.config.*`).
//!
//! tc-server's `VaultConfig` holds these two structs as its `bridge` and `commands` fields;
//! like every table of the configuration they deny unknown keys, so a misspelt `allowList`
//! is an error naming it instead of a silently empty allowlist.

use std::path::PathBuf;

use serde::Deserialize;

/// The default of `timeoutMs`: how long a call waits for Obsidian.
pub const DEFAULT_TIMEOUT_MS: u64 = 5_000;
/// The largest `timeoutMs` accepted (ten minutes): a longer wait would hold a blocking
/// thread of the server for nothing a human would still be waiting for.
pub const MAX_TIMEOUT_MS: u64 = 600_000;

fn default_timeout_ms() -> u64 {
    DEFAULT_TIMEOUT_MS
}

/// `[vaults.bridge]`: where the Obsidian Local REST API plugin of this vault listens.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BridgeConfig {
    /// `url`: `https://127.0.0.1:27124` (the plugin's HTTPS server, certificate pinned on
    /// first use) or `http://127.0.0.1:27123` (its optional plain-HTTP server).
    pub url: String,
    /// `apiKeyFile`: an absolute path to a file holding the plugin's API key, 0600 and owned
    /// by the user the server runs as.
    pub api_key_file: PathBuf,
    /// `timeoutMs`: the most a call waits for the connection and then for the answer.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
}

/// `[vaults.commands]`: which Obsidian commands `execute_command` may run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CommandsConfig {
    /// `enabled` (default false): `execute_command` is refused unless true.
    #[serde(default)]
    pub enabled: bool,
    /// `allowlist`: the exact Obsidian command ids it may run (no globs, no prefixes).
    #[serde(default)]
    pub allowlist: Vec<String>,
}

/// The bridge settings of one served vault, as `register` receives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VaultSettings {
    pub vault: String,
    pub bridge: Option<BridgeConfig>,
    pub commands: CommandsConfig,
}
