//! `obsidian-tc pending` (spec/cli.md `cli.pending.*`; spec/cli.md): the raised requests a
//! token can still be minted for, newest first, each with what the call would do (its
//! summary, stored with the request when it was raised) and the command that approves it.
//!
//! The summary was escaped and bounded when it was rendered (spec `tools.summary.escaped`),
//! so printing it cannot move the cursor or reorder text on the operator's terminal; the
//! other fields are the request's own key (vault id, tool name, caller id, hex hashes).

use std::fmt::Write as _;

use serde_json::json;
use tc_gate::RaisedRequest;
use tc_gate::clock::{Clock, SystemClock};
use tc_server::config::CacheEnv;
use tc_tools::{escape_for_terminal, shell_word};

use crate::Refusal;
use crate::cli::PendingArgs;
use crate::elicit::open_gate;

/// The most requests listed (the newest).
const MAX_LISTED: usize = 200;

pub fn run(args: &PendingArgs, env: &CacheEnv) -> Result<String, Refusal> {
    let (config, cache_dir) = args.place.resolve(env)?;
    let gate = open_gate(&config, &cache_dir)?;
    let pending = gate
        .pending(args.vault.as_deref(), args.caller.as_deref(), MAX_LISTED)
        .map_err(|e| Refusal::new(format!("cannot read cache.db: {e}")))?;
    // The flags this listing was given, absolute, so the printed command reaches the same
    // cache.db from any directory.
    let flags = tc_server::serve::approval_flags(args.place.config.as_deref(), &cache_dir);
    let program = std::env::current_exe()
        .ok()
        .and_then(|exe| {
            tc_server::serve::approval_program(&exe, std::env::var_os("PATH").as_deref())
        })
        .unwrap_or_else(|| "obsidian-tc".to_owned());
    let several_vaults = config.vaults.len() > 1
        || pending
            .iter()
            .any(|r| r.call.vault != pending[0].call.vault);
    if args.json {
        let list: Vec<_> = pending
            .iter()
            .map(|r| {
                json!({
                    "vault": r.call.vault,
                    "tool": r.call.tool,
                    "caller": r.call.caller,
                    "args_hash": r.call.args_hash,
                    "state_fp": r.state_fp.as_str(),
                    "raised_at_ms": r.raised_at_ms,
                    "expires_at_ms": r.expires_at_ms,
                    "summary": r.summary,
                    "approve": approve_command(r, &program, &flags, several_vaults),
                })
            })
            .collect();
        return Ok(format!("{}\n", json!(list)));
    }
    if pending.is_empty() {
        return Ok("No pending confirmation requests.\n".to_owned());
    }
    let now = SystemClock.now_ms();
    let mut out = String::new();
    for (i, request) in pending.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "[{}] raised {} ago, expires in {}",
            i + 1,
            duration(now - request.raised_at_ms),
            duration(request.expires_at_ms - now),
        );
        let fallback;
        let summary = if request.summary.is_empty() {
            fallback = format!(
                "{} in vault {} for caller {}\nargs_hash {}\n(no summary was recorded for this request)",
                escape_for_terminal(&request.call.tool),
                escape_for_terminal(&request.call.vault),
                escape_for_terminal(&request.call.caller),
                request.call.args_hash
            );
            fallback.as_str()
        } else {
            request.summary.as_str()
        };
        for line in summary.lines() {
            let _ = writeln!(out, "    {line}");
        }
        let _ = writeln!(
            out,
            "    approve: {}",
            approve_command(request, &program, &flags, several_vaults)
        );
    }
    Ok(out)
}

/// `12s`, `4m05s`, `1h02m`.
fn duration(ms: i64) -> String {
    let seconds = ms.max(0) / 1000;
    match seconds {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// The `obsidian-tc elicit` command that mints for `request`.
fn approve_command(
    request: &RaisedRequest,
    program: &str,
    flags: &[String],
    with_vault: bool,
) -> String {
    let mut words = vec![
        program.to_owned(),
        "elicit".to_owned(),
        "--hash".to_owned(),
        request.call.args_hash.clone(),
        "--tool".to_owned(),
        request.call.tool.clone(),
    ];
    words.extend(flags.iter().cloned());
    if with_vault {
        words.push("--vault".to_owned());
        words.push(request.call.vault.clone());
    }
    words.extend([
        "--caller".to_owned(),
        request.call.caller.clone(),
        "--state-fp".to_owned(),
        request.state_fp.as_str().to_owned(),
    ]);
    words
        .iter()
        .map(|word| shell_word(word))
        .collect::<Vec<_>>()
        .join(" ")
}
