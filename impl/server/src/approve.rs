//! The human's approval mint behind `obsidian-tc elicit` (spec/cli.md `cli.elicit.same-db`,
//! `cli.elicit.vault`, `cli.elicit.indexed-vault`, `cli.elicit.requires-raise`,
//! `cli.elicit.state-fp`, `cli.elicit.one-mint-per-raise`, `cli.elicit.ttl-cap`).
//!
//! The CLI parses its arguments and prints; everything between (opening the cache.db the
//! server wrote, choosing the vault, asking tc-gate to issue the token) lives here, so the
//! conformance suite mints through the very code the binary runs, with its own clock.

use std::path::Path;
use std::sync::Arc;

use tc_gate::clock::{Clock, Entropy};
use tc_gate::{CACHE_DB_FILE, CallBinding, Gate, GateConfig, IssuedToken, MintError, Store};

use crate::config::Config;

/// Why no token was minted. Each message says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum ApproveError {
    /// The place, the vault or the caller cannot be used as given.
    #[error("{0}")]
    Refused(String),
    /// tc-gate refused to issue (no raised request, another tool, a stale `--state-fp`, …).
    #[error("{0}")]
    Mint(#[from] MintError),
}

impl ApproveError {
    fn refused(message: impl Into<String>) -> Self {
        ApproveError::Refused(message.into())
    }
}

/// What the human approves: the call as the refusal named it.
#[derive(Debug, Clone, Copy)]
pub struct MintRequest<'a> {
    /// `--vault`, if given.
    pub vault: Option<&'a str>,
    pub tool: &'a str,
    pub args_hash: &'a str,
    pub caller: &'a str,
    /// `--state-fp`, if given.
    pub state_fp: Option<&'a str>,
}

// r[impl cli.elicit.same-db]
/// The gate over `<cache_dir>/cache.db`, which must already exist: a missing one means the
/// operator is looking at another cache directory than the server's, and creating an empty
/// one would only lead to a confusing "no pending request".
pub fn open_gate(
    config: &Config,
    cache_dir: &Path,
    clock: Arc<dyn Clock>,
    entropy: Arc<dyn Entropy>,
) -> Result<Gate, ApproveError> {
    let db = cache_dir.join(CACHE_DB_FILE);
    if !db.is_file() {
        return Err(ApproveError::refused(format!(
            "there is no {} yet, so no server has raised a request there; pass the --config or \
             --cache-dir the server runs with, or run the blocked call again first",
            db.display()
        )));
    }
    let store = Store::open(&db)
        .map_err(|e| ApproveError::refused(format!("cannot open {}: {e}", db.display())))?;
    let ttl = GateConfig::new(config.elicit_ttl_seconds)
        .map_err(|e| ApproveError::refused(format!("elicitTtlSeconds: {e}")))?;
    Ok(Gate::new(store, clock, entropy, ttl))
}

/// The caller as given, trimmed; an empty one names nobody.
pub fn caller_of(given: &str) -> Result<&str, ApproveError> {
    let caller = given.trim();
    if caller.is_empty() {
        return Err(ApproveError::refused(
            "--caller must name the caller that was blocked (\"stdio\" for a local client)",
        ));
    }
    Ok(caller)
}

// r[impl cli.elicit.vault]
/// The vault the token is for: `--vault` (which must be one the config lists, when it lists
/// any), else the config's only vault. With no config there is no vault list, so the vault
/// is the one whose live raised request matches this args_hash and caller.
pub fn pick_vault(
    config: &Config,
    gate: &Gate,
    given: Option<&str>,
    args_hash: &str,
    caller: &str,
) -> Result<String, ApproveError> {
    match (given, config.vaults.as_slice()) {
        (Some(vault), []) => Ok(vault.to_owned()),
        (Some(vault), _) if config.vault(vault).is_some() => Ok(vault.to_owned()),
        (Some(vault), _) => Err(ApproveError::refused(format!(
            "the config lists no vault {vault:?}; pass --vault with one of: {}",
            vault_ids(config)
        ))),
        (None, [only]) => Ok(only.id.clone()),
        (None, []) => raised_vault(gate, args_hash, caller),
        (None, _) => Err(ApproveError::refused(format!(
            "the config lists several vaults ({}); pass --vault with the one the blocked call \
             used",
            vault_ids(config)
        ))),
    }
}

/// The configured vault ids, comma-separated, for messages.
pub fn vault_ids(config: &Config) -> String {
    let ids: Vec<&str> = config.vaults.iter().map(|v| v.id.as_str()).collect();
    ids.join(", ")
}

// r[impl cli.elicit.indexed-vault]
/// The vault whose live raised request matches (args_hash, caller), looked up by index (so
/// the cost does not grow with the event log).
fn raised_vault(gate: &Gate, args_hash: &str, caller: &str) -> Result<String, ApproveError> {
    let live: Vec<String> = gate
        .raised_requests_for(args_hash, caller)
        .map_err(|e| ApproveError::refused(format!("cannot read cache.db: {e}")))?
        .into_iter()
        .map(|raised| raised.call.vault)
        .collect();
    match live.as_slice() {
        [only] => Ok(only.clone()),
        [] => Err(ApproveError::refused(
            "no pending confirmation request for this args_hash and caller: run the blocked \
             call again first, and pass --caller with the caller that was blocked",
        )),
        several => Err(ApproveError::refused(format!(
            "requests for this args_hash are pending in several vaults ({}); pass --vault with \
             the one the blocked call used",
            several.join(", ")
        ))),
    }
}

/// Issues the token for the raised request behind `request` in `vault`: tc-gate refuses
/// when there is no such request, when the tool differs from the raised one, and when
/// `--state-fp` is not the retained request's own fingerprint.
pub fn issue(
    gate: &Gate,
    vault: &str,
    request: &MintRequest<'_>,
) -> Result<IssuedToken, ApproveError> {
    let call = CallBinding {
        vault,
        tool: request.tool,
        args_hash: request.args_hash,
        caller: request.caller,
    };
    Ok(gate.issue_by(&call, request.state_fp, Some(&operator()))?)
}

/// The local account running the mint, for the audit log: `$USER` (or `$LOGNAME`), else
/// the numeric user id.
pub fn operator() -> String {
    ["USER", "LOGNAME"]
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|value| !value.is_empty())
        .unwrap_or_else(|| format!("uid {}", rustix::process::getuid().as_raw()))
}

/// The whole mint without a terminal: the caller checked, the vault chosen, the token
/// issued (what `obsidian-tc elicit --yes` does between parsing and printing).
pub fn mint(
    config: &Config,
    gate: &Gate,
    request: &MintRequest<'_>,
) -> Result<IssuedToken, ApproveError> {
    let caller = caller_of(request.caller)?;
    let vault = pick_vault(config, gate, request.vault, request.args_hash, caller)?;
    issue(gate, &vault, &MintRequest { caller, ..*request })
}
