//! `obsidian-tc elicit` (spec/cli.md `cli.elicit.*`, `cli.cache-*`; seed "When your client
//! can't render the prompt" and "A token minted with no raised request is refused by the CLI").
//!
//! The command opens the same cache.db the live server reads tokens from (found exactly as
//! `serve` finds it), picks the vault, and asks tc-gate to issue a token for the raised
//! request behind (vault, args_hash, caller). tc-gate refuses when there is no such request,
//! when `--tool` differs from the raised one, and when `--state-fp` is not the retained
//! request's own fingerprint; each refusal's message says what to do next.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use tc_gate::clock::{OsEntropy, SystemClock};
use tc_gate::{CACHE_DB_FILE, CallBinding, Gate, GateConfig, Store};
use tc_server::config::{CacheEnv, Config};
use tc_tools::escape_for_terminal;

use crate::Refusal;
use crate::cli::ElicitArgs;
use crate::token::vault_ids;

/// What `elicit` prints: the token and a newline, or one JSON object with `--json`.
pub fn run(args: &ElicitArgs, env: &CacheEnv) -> Result<String, Refusal> {
    let (config, cache_dir) = args.place.resolve(env)?;
    let gate = open_gate(&config, &cache_dir)?;
    let caller = args.caller.trim();
    if caller.is_empty() {
        return Err(Refusal::new(
            "--caller must name the caller that was blocked (\"stdio\" for a local client)",
        ));
    }
    let vault = pick_vault(&config, &gate, args.vault.as_deref(), &args.hash, caller)?;
    if !args.yes && std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        confirm_on_terminal(&gate, &vault, &args.hash, caller)?;
    }
    let call = CallBinding {
        vault: &vault,
        tool: &args.tool,
        args_hash: &args.hash,
        caller,
    };
    let issued = gate
        .issue(&call, args.state_fp.as_deref())
        .map_err(|e| Refusal::new(e.to_string()))?;
    if args.json {
        let object = json!({
            "token": issued.token.expose(),
            "expires_at_ms": issued.expires_at_ms,
            "vault": issued.call.vault,
            "tool": issued.call.tool,
            "args_hash": issued.call.args_hash,
            "caller": issued.call.caller,
            "state_fp": issued.state_fp.as_ref().map(|fp| fp.as_str()),
        });
        Ok(format!("{object}\n"))
    } else {
        Ok(format!("{}\n", issued.token.expose()))
    }
}

// r[impl cli.elicit.interactive]
/// On a terminal: shows the summary of the raised request behind the hash on stderr and
/// asks; only `y` or `yes` goes on to mint. A hash with no live request is left to the mint,
/// which refuses it with the sentence that says what to do.
fn confirm_on_terminal(
    gate: &Gate,
    vault: &str,
    args_hash: &str,
    caller: &str,
) -> Result<(), Refusal> {
    let raised = gate
        .raised_request(vault, args_hash, caller)
        .map_err(|e| Refusal::new(format!("cannot read cache.db: {e}")))?;
    let Some(raised) = raised else {
        return Ok(());
    };
    let mut stderr = std::io::stderr().lock();
    let summary = if raised.summary.is_empty() {
        format!(
            "{} in vault {} for caller {}\nargs_hash {}\n(no summary was recorded for this request)",
            escape_for_terminal(&raised.call.tool),
            escape_for_terminal(vault),
            escape_for_terminal(caller),
            args_hash
        )
    } else {
        raised.summary.clone()
    };
    let _ = writeln!(stderr, "An AI agent asks to run this call:\n");
    for line in summary.lines() {
        let _ = writeln!(stderr, "  {line}");
    }
    let _ = write!(stderr, "\nApprove? [y/N] ");
    let _ = stderr.flush();
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .map_err(|e| Refusal::new(format!("cannot read the answer: {e}")))?;
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(()),
        _ => Err(Refusal::new(
            "not approved: no token was minted; the call stays refused (run elicit again to \
             approve it)",
        )),
    }
}

// r[impl cli.elicit.same-db]
/// The gate over `<cache_dir>/cache.db`, which must already exist: a missing one means the
/// operator is looking at another cache directory than the server's, and creating an empty
/// one would only lead to a confusing "no pending request".
pub(crate) fn open_gate(config: &Config, cache_dir: &Path) -> Result<Gate, Refusal> {
    let db = cache_dir.join(CACHE_DB_FILE);
    if !db.is_file() {
        return Err(Refusal::new(format!(
            "there is no {} yet, so no server has raised a request there; pass the --config or \
             --cache-dir the server runs with, or run the blocked call again first",
            db.display()
        )));
    }
    let store =
        Store::open(&db).map_err(|e| Refusal::new(format!("cannot open {}: {e}", db.display())))?;
    let ttl = GateConfig::new(config.elicit_ttl_seconds)
        .map_err(|e| Refusal::new(format!("elicitTtlSeconds: {e}")))?;
    Ok(Gate::new(
        store,
        Arc::new(SystemClock),
        Arc::new(OsEntropy),
        ttl,
    ))
}

// r[impl cli.elicit.vault]
/// The vault the token is for: `--vault` (which must be one the config lists, when it lists
/// any), else the config's only vault. With no config there is no vault list, so the vault
/// is the one whose live raised request matches this args_hash and caller.
fn pick_vault(
    config: &Config,
    gate: &Gate,
    given: Option<&str>,
    args_hash: &str,
    caller: &str,
) -> Result<String, Refusal> {
    match (given, config.vaults.as_slice()) {
        (Some(vault), []) => Ok(vault.to_owned()),
        (Some(vault), _) if config.vault(vault).is_some() => Ok(vault.to_owned()),
        (Some(vault), _) => Err(Refusal::new(format!(
            "the config lists no vault {vault:?}; pass --vault with one of: {}",
            vault_ids(config)
        ))),
        (None, [only]) => Ok(only.id.clone()),
        (None, []) => raised_vault(gate, args_hash, caller),
        (None, _) => Err(Refusal::new(format!(
            "the config lists several vaults ({}); pass --vault with the one the blocked call \
             used",
            vault_ids(config)
        ))),
    }
}

// r[impl cli.elicit.indexed-vault]
/// The vault whose live raised request matches (args_hash, caller), looked up by index (so
/// the cost does not grow with the event log).
fn raised_vault(gate: &Gate, args_hash: &str, caller: &str) -> Result<String, Refusal> {
    let live: Vec<String> = gate
        .raised_requests_for(args_hash, caller)
        .map_err(|e| Refusal::new(format!("cannot read cache.db: {e}")))?
        .into_iter()
        .map(|raised| raised.call.vault)
        .collect();
    match live.as_slice() {
        [only] => Ok(only.clone()),
        [] => Err(Refusal::new(
            "no pending confirmation request for this args_hash and caller: run the blocked \
             call again first, and pass --caller with the caller that was blocked",
        )),
        several => Err(Refusal::new(format!(
            "requests for this args_hash are pending in several vaults ({}); pass --vault with \
             the one the blocked call used",
            several.join(", ")
        ))),
    }
}
