//! `obsidian-tc elicit` (spec/cli.md `cli.elicit.*`, `cli.cache-*`; seed "When your client
//! can't render the prompt" and "A token minted with no raised request is refused by the CLI").
//!
//! The command finds the cache.db the live server reads tokens from (exactly as `serve`
//! finds it), asks on a terminal, and prints; opening that cache.db, picking the vault and
//! asking tc-gate for the token are `tc_server::approve`, the same code the conformance
//! suite mints through. tc-gate refuses when there is no raised request behind (vault,
//! args_hash, caller), when `--tool` differs from the raised one, and when `--state-fp` is
//! not the retained request's own fingerprint; each refusal's message says what to do next.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use tc_gate::Gate;
use tc_gate::clock::{OsEntropy, SystemClock};
use tc_server::approve::{self, ApproveError, MintRequest};
use tc_server::config::{CacheEnv, Config};
use tc_tools::escape_for_terminal;

use crate::Refusal;
use crate::cli::ElicitArgs;

/// What `elicit` prints: the token and a newline, or one JSON object with `--json`.
pub fn run(args: &ElicitArgs, env: &CacheEnv) -> Result<String, Refusal> {
    let (config, cache_dir) = args.place.resolve(env)?;
    let gate = open_gate(&config, &cache_dir)?;
    let caller = approve::caller_of(&args.caller).map_err(refusal)?;
    let vault = approve::pick_vault(&config, &gate, args.vault.as_deref(), &args.hash, caller)
        .map_err(refusal)?;
    if !args.yes && std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        confirm_on_terminal(&gate, &vault, &args.hash, caller)?;
    }
    let request = MintRequest {
        vault: Some(&vault),
        tool: &args.tool,
        args_hash: &args.hash,
        caller,
        state_fp: args.state_fp.as_deref(),
    };
    let issued = approve::issue(&gate, &vault, &request).map_err(refusal)?;
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

fn refusal(error: ApproveError) -> Refusal {
    Refusal::new(error.to_string())
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

/// The gate over `<cache_dir>/cache.db` (which must already exist), on the system clock.
pub(crate) fn open_gate(config: &Config, cache_dir: &Path) -> Result<Gate, Refusal> {
    approve::open_gate(
        config,
        cache_dir,
        Arc::new(SystemClock),
        Arc::new(OsEntropy),
    )
    .map_err(refusal)
}
