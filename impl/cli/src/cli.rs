//! The command line, exactly as spec/cli.md names it (spec/cli.md `cli.commands`,
//! `cli.elicit.no-ttl`, `cli.elicit.caller-default`).
//!
//! Usage errors (an unknown flag, a missing `--hash`, a malformed value) are clap's: usage on
//! stderr and exit status 2. Everything that parses but cannot be done is a refusal with exit
//! status 1 (see `main.rs`).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// The caller every locally spawned stdio client presents, and `elicit`'s default.
pub const DEFAULT_CALLER: &str = tc_server::auth::STDIO_CALLER;
/// `token mint`'s default lifetime, in seconds.
pub const DEFAULT_TOKEN_TTL_SECONDS: u64 = 3600;

#[derive(Debug, Parser)]
#[command(
    name = "obsidian-tc",
    version,
    about = "An MCP server for Obsidian vaults where every sensitive operation waits for a \
             human's explicit, single-use approval",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve MCP over stdio (the default) or Streamable HTTP at http://ADDR/mcp
    Serve(ServeArgs),
    /// Mint a single-use confirmation token for a call refused with elicit_required
    #[command(
        long_about = "Mint a single-use confirmation token for a call refused with \
                      elicit_required.\n\nCopy the command from the refusal (it carries --hash, \
                      --tool, --caller and --state-fp) and run it only for a call you approve; \
                      then send the same call again with elicit_token set to the printed token. The token is bound to that vault, call and caller, works once, and \
                      expires after the configured elicitTtlSeconds.\n\nOn a terminal it first \
                      shows what the call would do (tool, targets, the change) and asks \
                      Approve? [y/N]; --yes skips the question. `obsidian-tc pending` lists \
                      every call waiting for approval."
    )]
    Elicit(ElicitArgs),
    /// List the calls waiting for approval, newest first, with what each would do
    Pending(PendingArgs),
    /// Print the audit log of cache.db, oldest first (requested, minted, consumed, released,
    /// refused, overflow)
    Events(EventsArgs),
    /// Re-run a recorded session and report each call's verdict and divergence (exit 0: no
    /// divergence, 3: a divergence, 4: nothing runnable)
    Rerun(RerunArgs),
    /// List the versions the server kept (deleted files, replaced content), newest first, or
    /// print one with --show
    Snapshots(SnapshotsArgs),
    /// Put a kept version back (the note there now is kept as a version first); on a
    /// terminal it shows the change and asks, elsewhere it needs --yes
    Restore(RestoreArgs),
    /// Bearer tokens for an HTTP server with auth.mode = "jwt"
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The vault folder to serve when the config lists no vaults (its id is the folder's
    /// name made into a slug)
    #[arg(value_name = "VAULT_DIR")]
    pub vault_dir: Option<PathBuf>,
    /// The TOML configuration file
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Where cache.db and server-secrets/ live [default: cacheDir, else
    /// $XDG_CACHE_HOME/obsidian-tc or ~/.cache/obsidian-tc]
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Serve Streamable HTTP on this address (e.g. 127.0.0.1:8787) instead of stdio
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// On legacy (2025-11-25 / 2025-06-18) stdio sessions, send elicitation/create from the
    /// server (same as legacyElicitationShim = true)
    #[arg(long)]
    pub legacy_elicitation_shim: bool,
}

#[derive(Debug, Args)]
pub struct ElicitArgs {
    /// The args_hash from the elicit_required error's details (32 hex digits)
    #[arg(long, value_name = "H", value_parser = parse_args_hash)]
    pub hash: String,
    /// The tool the confirmation is for, as named in the refusal
    #[arg(long, value_name = "NAME")]
    pub tool: String,
    /// The vault id; required when the config lists more than one vault
    #[arg(long, value_name = "ID")]
    pub vault: Option<String>,
    /// The caller that was blocked: "stdio" for a local client, the token's subject on HTTP
    #[arg(long, value_name = "ID", default_value = DEFAULT_CALLER)]
    pub caller: String,
    /// The state_fp from the refusal's details: refuse unless it is still the pending one
    #[arg(long, value_name = "FP")]
    pub state_fp: Option<String>,
    /// Print one JSON object (token, expiry, bindings) instead of the bare token
    #[arg(long)]
    pub json: bool,
    /// Mint without showing the request and asking first (on a terminal, elicit asks)
    #[arg(long)]
    pub yes: bool,
    #[command(flatten)]
    pub place: PlaceArgs,
}

#[derive(Debug, Args)]
pub struct SnapshotsArgs {
    /// The vault folder, as given to serve when the config lists no vaults
    #[arg(value_name = "VAULT_DIR")]
    pub vault_dir: Option<PathBuf>,
    /// Only this vault's versions (its id); every vault's when absent
    #[arg(long, value_name = "ID")]
    pub vault: Option<String>,
    /// Only the versions of this vault path
    #[arg(long, value_name = "PATH")]
    pub path: Option<String>,
    /// Print this version's bytes instead of the list
    #[arg(long, value_name = "SNAPSHOT_ID")]
    pub show: Option<String>,
    /// Print one JSON array instead of the table
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub place: PlaceArgs,
}

#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// The version to put back (an id from `obsidian-tc snapshots`)
    #[arg(value_name = "SNAPSHOT_ID")]
    pub snapshot_id: String,
    /// The vault folder, as given to serve when the config lists no vaults
    #[arg(value_name = "VAULT_DIR")]
    pub vault_dir: Option<PathBuf>,
    /// The vault the version belongs to; needed only when it cannot be told otherwise
    #[arg(long, value_name = "ID")]
    pub vault: Option<String>,
    /// Restore without showing the change and asking first
    #[arg(long)]
    pub yes: bool,
    #[command(flatten)]
    pub place: PlaceArgs,
}

/// Where the server's cache.db is: its config file and/or cache directory.
#[derive(Debug, Args)]
pub struct PlaceArgs {
    /// The TOML configuration file the server runs with
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The cache directory the server runs with [default: as for serve]
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
}

impl PlaceArgs {
    /// The configuration (the file's, or the defaults) and the cache directory it and the
    /// flags name, resolved exactly as `serve` resolves them.
    pub fn resolve(
        &self,
        env: &tc_server::config::CacheEnv,
    ) -> Result<(tc_server::config::Config, PathBuf), crate::Refusal> {
        let config = match &self.config {
            Some(path) => tc_server::config::Config::load(path).map_err(crate::Refusal::config)?,
            None => tc_server::config::Config::default(),
        };
        let cache_dir = config
            .resolve_cache_dir(self.cache_dir.as_deref(), env)
            .map_err(crate::Refusal::config)?;
        Ok((config, cache_dir))
    }
}

#[derive(Debug, Args)]
pub struct PendingArgs {
    /// Only the requests of this vault
    #[arg(long, value_name = "ID")]
    pub vault: Option<String>,
    /// Only the requests of this caller ("stdio" for a local client)
    #[arg(long, value_name = "ID")]
    pub caller: Option<String>,
    /// Print one JSON array instead of the table
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub place: PlaceArgs,
}

#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Only the events after this id (the first column; 0 = from the start)
    #[arg(long, value_name = "ID", default_value_t = 0)]
    pub after: i64,
    /// Only the events of this name (e.g. tc.elicit.requested, elicit_minted, hitl_released)
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Keep printing new events as they are recorded, until interrupted
    #[arg(long)]
    pub follow: bool,
    /// One JSON object a line instead of the table
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub place: PlaceArgs,
}

#[derive(Debug, Args)]
pub struct RerunArgs {
    /// The session to re-run (start_session and list_sessions name it)
    #[arg(value_name = "SESSION_ID")]
    pub session_id: String,
    /// The vault the session must be on
    #[arg(long, value_name = "ID")]
    pub vault: Option<String>,
    /// Run the calls that change the vault too, on a copy of the vault and cache made for
    /// the run and deleted after it (without it they are skipped)
    #[arg(long)]
    pub sandbox: bool,
    /// Print one JSON object instead of the report
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub place: PlaceArgs,
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Mint an HS256 JWT signed with the config's auth.jwtSecret; prints only the token
    Mint(MintArgs),
}

#[derive(Debug, Args)]
pub struct MintArgs {
    /// The caller id (the token's sub); pass the same value to `elicit --caller`
    #[arg(long, value_name = "ID")]
    pub sub: String,
    /// The audience (aud) [default: the config's auth.audience, if any]
    #[arg(long, value_name = "A")]
    pub aud: Option<String>,
    /// Restrict the token to one vault id
    #[arg(long, value_name = "ID")]
    pub vault: Option<String>,
    /// Comma-separated scopes to grant [default: "*", every scope]
    #[arg(long, value_name = "a,b", value_delimiter = ',')]
    pub scopes: Option<Vec<String>>,
    /// Lifetime in seconds
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_TOKEN_TTL_SECONDS,
          value_parser = clap::value_parser!(u64).range(1..=31_536_000))]
    pub ttl: u64,
    /// Print one JSON object (token and its claims) instead of the bare token
    #[arg(long)]
    pub json: bool,
    /// The TOML configuration file holding auth.jwtSecret
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// `--hash`: the 32 lowercase hex digits of an args_hash (upper case is accepted and
/// folded, since people retype hashes).
fn parse_args_hash(text: &str) -> Result<String, String> {
    let folded = text.trim().to_ascii_lowercase();
    tc_gate::args_hash::ArgsHash::parse(&folded)
        .map(|hash| hash.as_str().to_owned())
        .map_err(|_| {
            "expected the 32 hex digits of details.args_hash from the elicit_required error"
                .to_owned()
        })
}
