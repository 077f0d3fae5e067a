//! `obsidian-tc serve`: what is decided before the server starts (spec/cli.md
//! `cli.serve.vault-dir`, `cli.cache-*`, `cli.serve.transports`; spec/auth.md
//! `auth.none.loopback`; spec/config.md `config.legacy-shim`).
//!
//! [`plan`] turns the arguments into a [`ServePlan`]: the validated configuration with the
//! `VAULT_DIR` vault added, the cache directory (`--cache-dir` > `cacheDir` > default, never
//! inside a vault), the transport, and whether the legacy stdio shim is on. Every refusal
//! of the configuration happens there, before anything is bound or written; [`run`] then
//! loads the server secret, opens cache.db, prints the `elicit:` key-source line on stderr
//! and serves (spec/state.md `state.key.startup-line-logged`; spec/cli.md `cli.serve.stderr`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use tc_server::auth::check_bind;
use tc_server::config::{CacheEnv, Config};
use tc_server::metrics::Metrics;
use tc_server::serve::{
    StopSignals, approval_flags, approval_program, assemble, bind_http, serve_http, serve_stdio,
};

use crate::Refusal;
use crate::cli::ServeArgs;

/// How `serve` will run.
#[derive(Debug, Clone, PartialEq)]
pub struct ServePlan {
    pub config: Config,
    pub cache_dir: PathBuf,
    pub transport: Transport,
    /// `--legacy-elicitation-shim` or `legacyElicitationShim`; stdio only.
    pub legacy_elicitation_shim: bool,
    /// What the printed approval command carries (`--config`, `--cache-dir`).
    pub approval_flags: Vec<String>,
    /// How the printed approval command names this binary (`None`: `obsidian-tc`).
    pub approval_program: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Stdio,
    /// Streamable HTTP at `http://ADDR/mcp`.
    Http(SocketAddr),
}

pub fn plan(args: &ServeArgs, env: &CacheEnv) -> Result<ServePlan, Refusal> {
    let mut config = match &args.config {
        Some(path) => Config::load(path).map_err(Refusal::config)?,
        None => Config::default(),
    };
    if let Some(vault_dir) = &args.vault_dir {
        config.add_vault_dir(vault_dir).map_err(Refusal::config)?;
    }
    if config.vaults.is_empty() {
        return Err(Refusal::new(
            "there is no vault to serve; pass VAULT_DIR or a --config FILE that lists [[vaults]]",
        ));
    }
    let cache_dir = config
        .resolve_cache_dir(args.cache_dir.as_deref(), env)
        .map_err(Refusal::config)?;
    let transport = match args.http {
        None => Transport::Stdio,
        Some(addr) => {
            check_bind(config.auth.mode, addr).map_err(|e| Refusal::new(e.to_string()))?;
            Transport::Http(addr)
        }
    };
    let legacy_elicitation_shim = args.legacy_elicitation_shim || config.legacy_elicitation_shim;
    let approval_flags = approval_flags(args.config.as_deref(), &cache_dir);
    let approval_program = std::env::current_exe()
        .ok()
        .and_then(|exe| approval_program(&exe, std::env::var_os("PATH").as_deref()));
    Ok(ServePlan {
        config,
        cache_dir,
        transport,
        legacy_elicitation_shim,
        approval_flags,
        approval_program,
    })
}

// r[impl state.key.startup-line-logged]
// r[impl cli.serve.transports]
// r[impl cli.serve.http-bind-first]
// r[impl cli.serve.signals]
/// Starts the server of `plan` and serves until the client (stdio) goes away or SIGINT or
/// SIGTERM arrives. The signals are listened for before anything else, and the HTTP address
/// is bound before the server is assembled, so a busy port fails at once and a stop asked
/// for during start-up is kept. Returns what goes to stdout: nothing, since stdout is the
/// stdio transport's.
pub fn run(plan: ServePlan) -> Result<String, Refusal> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Refusal::new(format!("cannot start the async runtime: {e}")))?;
    let outcome = runtime.block_on(async move {
        let stop = StopSignals::install()
            .map_err(|e| Refusal::new(format!("cannot listen for stop signals: {e}")))?;
        let listener = match plan.transport {
            Transport::Stdio => None,
            Transport::Http(addr) => Some(
                bind_http(&plan.config, addr)
                    .await
                    .map_err(|e| Refusal::new(e.to_string()))?,
            ),
        };
        let assembled = assemble(
            &plan.config,
            &plan.cache_dir,
            plan.legacy_elicitation_shim,
            Arc::new(Metrics::new()),
            plan.approval_flags.clone(),
            plan.approval_program.clone(),
        )
        .map_err(|e| Refusal::new(e.to_string()))?;
        // Through the logger, so RUST_LOG governs it like every other line on stderr
        // (spec/cli.md `cli.serve.log-lines`).
        tracing::info!("{}", assembled.key_source.startup_line());
        let served = match listener {
            None => serve_stdio(assembled.core, stop.received()).await,
            Some(listener) => {
                serve_http(assembled.core, &plan.config, listener, stop.received()).await
            }
        };
        served.map_err(|e| Refusal::new(e.to_string()))?;
        Ok(String::new())
    });
    // Blocking work left behind (a stdin read, an index build) must not hold the exit.
    runtime.shutdown_background();
    outcome
}
