//! `obsidian-tc rerun` (spec/cli.md; spec/sessions.md `sessions.cli.rerun`,
//! `sessions.rerun.exit-codes`): the operator's re-run of a recorded session, with the
//! same engine as the `session_rerun` tool but not gated (the human runs it). It opens the
//! server's configuration and cache.db as `serve` would, re-runs the session's calls as
//! `rerun:<caller>` with the scopes that caller held when it started the session, and
//! prints one line per call and a summary line, or one JSON object with `--json`.
//!
//! Exit status: 0 no call diverged, 3 one did, 4 no call could run; 1 with one sentence on
//! stderr when the session does not exist or the re-run could not be made.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use tc_server::config::CacheEnv;
use tc_server::metrics::Metrics;
use tc_server::rerun::{RerunReport, config_for, find_session};

use crate::Refusal;
use crate::cli::RerunArgs;

/// Runs the command and prints its report; the exit status.
pub fn main(args: &RerunArgs, env: &CacheEnv) -> ExitCode {
    match run(args, env) {
        Ok(report) => {
            let text = if args.json {
                match serde_json::to_string(&report) {
                    Ok(json) => format!("{json}\n"),
                    Err(_) => return fail(&Refusal::new("could not encode the report")),
                }
            } else {
                report.render_text()
            };
            let mut out = std::io::stdout().lock();
            if out
                .write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .is_err()
            {
                return fail(&Refusal::new(
                    "could not write to stdout; run the command again",
                ));
            }
            ExitCode::from(report.exit_code())
        }
        Err(refusal) => fail(&refusal),
    }
}

fn fail(refusal: &Refusal) -> ExitCode {
    eprintln!("obsidian-tc: {refusal}");
    ExitCode::from(1)
}

/// The re-run's report.
pub fn run(args: &RerunArgs, env: &CacheEnv) -> Result<RerunReport, Refusal> {
    let (config, cache_dir) = args.place.resolve(env)?;
    let refusal = |e: tc_server::rerun::RerunError| Refusal::new(e.to_string());
    let session = find_session(&cache_dir, &args.session_id).map_err(refusal)?;
    let config = config_for(&config, &session).map_err(refusal)?;
    let assembled = tc_server::serve::assemble(
        &config,
        &cache_dir,
        false,
        Arc::new(Metrics::new()),
        Vec::new(),
        None,
    )
    .map_err(|e| Refusal::new(format!("cannot open the server's cache: {e}")))?;
    assembled
        .core
        .rerun_session(&args.session_id, args.vault.as_deref(), args.sandbox)
        .map_err(refusal)
}
