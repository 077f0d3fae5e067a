//! Running the server: assembling [`ServerCore`] from a checked configuration and serving it
//! over stdio or Streamable HTTP (spec/cli.md `serve`; spec/cli.md `cli.serve.transports`,
//! `cli.serve.stderr`, `cli.serve.lazy`, `cli.serve.stdio-eof-exit`; spec/state.md
//! `state.key.server-secret`, `state.key.startup-line-logged`; spec/auth.md `auth.none.loopback`).
//!
//! Start-up does no vault scan: the secret is loaded (or created), `cache.db` is opened, the
//! vaults are bound, and the transport starts answering. Logs go to stderr only; stdout
//! belongs to the stdio transport.

use std::future::{Future, IntoFuture};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use rmcp::ServiceExt;
use rmcp::service::ServerInitializeError;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tc_gate::clock::{OsEntropy, SystemClock};
use tc_gate::keys::{KeySource, ServerSecret};
use tc_gate::{CACHE_DB_FILE, Store};
use tokio::net::TcpListener;

use crate::auth::{Authenticator, check_bind};
use crate::config::{Config, HttpConfig};
use crate::handler::ObsidianTc;
use crate::http::{self, HttpState};
use crate::metrics::Metrics;
use crate::routes::Transport;
use crate::server::{BuildError, CoreParts, ServerCore};
use crate::stdio::JsonLines;

/// Why the server could not start or stopped with an error; each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot create the cache directory {}: {source}; check its permissions", path.display())]
    CacheDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Secret(#[from] tc_gate::keys::KeyError),
    #[error("cannot open {}: {source}{}", path.display(), store_hint(source))]
    Store {
        path: PathBuf,
        #[source]
        source: tc_gate::StoreError,
    },
    #[error(transparent)]
    Build(#[from] BuildError),
    #[error(transparent)]
    Auth(#[from] crate::auth::AuthSetupError),
    #[error(transparent)]
    Bind(#[from] crate::auth::BindRefused),
    #[error("cannot listen on {addr}: {source}{}", listen_hint(source))]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the MCP session failed: {0}")]
    Session(String),
}

/// A server ready to serve, and where its requestState key came from.
#[derive(Debug)]
pub struct Assembled {
    pub core: Arc<ServerCore>,
    pub key_source: KeySource,
}

// r[impl state.key.server-secret]
// r[impl cli.serve.lazy]
/// Loads (or creates) `<cache_dir>/server-secrets/wiki-generated.key`, opens
/// `<cache_dir>/cache.db`, and binds the configured vaults. Prints nothing.
/// `approval_flags` are the flags the printed `obsidian-tc elicit` command needs to reach
/// this server's cache.db and config (see [`approval_flags`]).
pub fn assemble(
    config: &Config,
    cache_dir: &Path,
    legacy_shim: bool,
    metrics: Arc<Metrics>,
    approval_flags: Vec<String>,
    approval_program: Option<String>,
) -> Result<Assembled, ServeError> {
    // r[impl gate.files.private]
    tc_gate::private_fs::create_private_dir_all(cache_dir).map_err(|source| {
        ServeError::CacheDir {
            path: cache_dir.to_path_buf(),
            source,
        }
    })?;
    let secret = ServerSecret::load_or_create(cache_dir, &OsEntropy)?;
    let db = cache_dir.join(CACHE_DB_FILE);
    let store = Store::open(&db).map_err(|source| ServeError::Store { path: db, source })?;
    let core = ServerCore::build(
        config,
        CoreParts {
            cache_dir,
            secret: &secret,
            store,
            clock: Arc::new(SystemClock),
            entropy: Arc::new(OsEntropy),
            metrics,
            legacy_shim,
            approval_flags,
            approval_program,
        },
    )?;
    Ok(Assembled {
        core: Arc::new(core),
        key_source: secret.source().clone(),
    })
}

// r[impl cli.elicit.command-works]
// r[impl cli.elicit.command-cache-dir]
/// The flags `obsidian-tc elicit` needs to mint for a server started with `config_file`:
/// `--config FILE` when there was one, and always the cache directory the server resolved,
/// absolute. A relative `cacheDir` or `--cache-dir` would resolve differently from another
/// working directory, and the default cache directory depends on `XDG_CACHE_HOME`, which the
/// environment a client starts the server in (Codex passes only a few variables) need not
/// share with the human's shell.
pub fn approval_flags(config_file: Option<&Path>, resolved_cache_dir: &Path) -> Vec<String> {
    let absolute = |path: &Path| {
        std::path::absolute(path)
            .unwrap_or_else(|_| path.to_path_buf())
            .to_string_lossy()
            .into_owned()
    };
    let mut flags = Vec::new();
    if let Some(file) = config_file {
        flags.push("--config".to_owned());
        flags.push(absolute(file));
    }
    flags.push("--cache-dir".to_owned());
    flags.push(absolute(resolved_cache_dir));
    flags
}

// r[impl cli.elicit.command-program]
/// How the printed approval command names this binary: `None` (the plain `obsidian-tc`) when
/// that name, looked up on `path` as a shell would, is this very executable, and this
/// executable's absolute path otherwise (a server run from `target/release/`, or from a path
/// a client was given, is "not found" by its bare name).
pub fn approval_program(current_exe: &Path, path: Option<&std::ffi::OsStr>) -> Option<String> {
    let this = std::fs::canonicalize(current_exe).ok()?;
    let found_on_path = path
        .into_iter()
        .flat_map(std::env::split_paths)
        .find_map(|dir| {
            let candidate = dir.join("obsidian-tc");
            candidate.is_file().then_some(candidate)
        });
    let same = found_on_path
        .and_then(|found| std::fs::canonicalize(found).ok())
        .is_some_and(|found| found == this);
    (!same).then(|| this.to_string_lossy().into_owned())
}

// r[impl cli.serve.stdio-eof-exit]
// r[impl cli.serve.signals]
/// Serves MCP over this process's stdin and stdout until the client goes away or `stop`
/// resolves (SIGINT or SIGTERM, see [`StopSignals`]). The client closing stdin ends the
/// session normally, also before the handshake (a client that only probed with
/// `server/discover`, or sent nothing).
pub async fn serve_stdio(
    core: Arc<ServerCore>,
    stop: impl Future<Output = &'static str> + Send,
) -> Result<(), ServeError> {
    let sweeper = AbortOnDrop(core.spawn_sweeper());
    let (stdin, stdout) = rmcp::transport::stdio();
    tokio::pin!(stop);
    let served = tokio::select! {
        served = ObsidianTc::new(core, Transport::Stdio).serve(JsonLines::new(stdin, stdout)) => served,
        signal = &mut stop => {
            tracing::info!("stopping: {signal} received before the handshake");
            return Ok(());
        }
    };
    let running = match served {
        Ok(running) => running,
        Err(ServerInitializeError::ConnectionClosed(_)) => {
            tracing::info!("stdio: the client closed stdin before the handshake");
            return Ok(());
        }
        Err(e) => return Err(ServeError::Session(e.to_string())),
    };
    let token = running.cancellation_token();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    tokio::select! {
        ended = &mut waiting => {
            ended.map_err(|e| ServeError::Session(e.to_string()))?;
        }
        signal = &mut stop => {
            tracing::info!("stopping: {signal} received; ending the stdio session");
            token.cancel();
            // The session ends once its loop sees the cancellation; a handler that does
            // not yield is not waited for past the grace period.
            if tokio::time::timeout(SHUTDOWN_GRACE, waiting).await.is_err() {
                tracing::warn!("stopping: the session did not end within {} s", SHUTDOWN_GRACE.as_secs());
            }
        }
    }
    drop(sweeper);
    Ok(())
}

/// Stops the background sweeper when the serving function returns, however it returns.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The HTTP application: `/healthz`, `/metrics` and the Streamable HTTP service at `/mcp`,
/// behind http.rs's Host/Origin checks, bearer authentication and the binding of each MCP
/// session to its opener. rmcp's own Host check is off because http.rs applies the
/// bind-aware one.
pub fn http_app(core: Arc<ServerCore>, auth: Arc<Authenticator>, bound: SocketAddr) -> Router {
    http_app_parts(core, auth, bound, &HttpConfig::default()).0
}

/// [`http_app`], and the handle that ends every MCP session and event stream it serves.
fn http_app_parts(
    core: Arc<ServerCore>,
    auth: Arc<Authenticator>,
    bound: SocketAddr,
    http: &HttpConfig,
) -> (Router, StreamsHandle) {
    let metrics = Arc::clone(core.metrics());
    let sessions = Arc::new(LocalSessionManager::default());
    let state = HttpState::new(auth, metrics, bound, Arc::clone(&sessions)).allowing(http);
    let config = StreamableHttpServerConfig::default().disable_allowed_hosts();
    let token = config.cancellation_token.clone();
    let streams = StreamsHandle(Box::new(move || token.cancel()));
    let service = StreamableHttpService::new(
        move || Ok(ObsidianTc::new(Arc::clone(&core), Transport::Http)),
        sessions,
        config,
    );
    (
        http::router(state, Router::new().route_service("/", service)),
        streams,
    )
}

/// rmcp's token for every session, event stream and stateless request of one service.
struct StreamsHandle(Box<dyn Fn() + Send + Sync>);

impl StreamsHandle {
    fn cancel(&self) {
        (self.0)();
    }
}

// r[impl cli.serve.http-bind-first]
/// Binds the HTTP listener on `addr` (after checking the auth mode allows that address),
/// before anything slow happens, so a busy or forbidden address is refused at once.
pub async fn bind_http(config: &Config, addr: SocketAddr) -> Result<TcpListener, ServeError> {
    check_bind(config.auth.mode, addr)?;
    TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Listen { addr, source })
}

// r[impl cli.serve.signals]
/// Serves Streamable HTTP at `http://ADDR/mcp` on `listener` until `stop` resolves. Then it
/// accepts no more connections, lets requests in flight finish for up to
/// [`SHUTDOWN_GRACE`], and cancels whatever still runs (event streams included).
pub async fn serve_http(
    core: Arc<ServerCore>,
    config: &Config,
    listener: TcpListener,
    stop: impl Future<Output = &'static str> + Send + 'static,
) -> Result<(), ServeError> {
    let auth = Arc::new(Authenticator::from_config(&config.auth)?);
    let bound = listener.local_addr().map_err(|source| ServeError::Listen {
        addr: SocketAddr::from(([0, 0, 0, 0], 0)),
        source,
    })?;
    tracing::info!(%bound, "serving Streamable HTTP at http://{bound}/mcp");
    let _sweeper = AbortOnDrop(core.spawn_sweeper());
    let (app, streams) = http_app_parts(core, auth, bound, &config.http);
    let (stopping, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = axum::serve(listener, app).with_graceful_shutdown(async move {
        let signal = stop.await;
        tracing::info!(
            "stopping: {signal} received; no new connections, requests in flight have {} s to finish",
            SHUTDOWN_GRACE.as_secs()
        );
        let _ = stopping.send(());
    });
    let grace_over = async move {
        if stopped.await.is_ok() {
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        served = server.into_future() => {
            streams.cancel();
            served.map_err(|e| ServeError::Session(e.to_string()))?;
        }
        () = grace_over => {
            tracing::warn!(
                "stopping: requests still in flight after {} s are cancelled",
                SHUTDOWN_GRACE.as_secs()
            );
            streams.cancel();
        }
    }
    Ok(())
}

/// How long requests in flight may run once the server is asked to stop.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

// r[impl cli.serve.signals]
/// SIGINT and SIGTERM, listened for from the moment [`StopSignals::install`] returns, so a
/// signal that arrives while the server starts is not lost, and a SIGINT a parent told this
/// process to ignore (`nohup`, a shell's `&`) still stops it.
#[derive(Debug)]
pub struct StopSignals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl StopSignals {
    /// Installs the handlers; must run inside a tokio runtime.
    pub fn install() -> std::io::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(StopSignals {
                interrupt: signal(SignalKind::interrupt())?,
                terminate: signal(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        {
            Ok(StopSignals {})
        }
    }

    /// Resolves with the signal's name once either arrives.
    pub async fn received(mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.interrupt.recv() => "SIGINT",
                _ = self.terminate.recv() => "SIGTERM",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        }
    }
}

/// What to do about an address that cannot be listened on.
fn listen_hint(source: &std::io::Error) -> &'static str {
    match source.kind() {
        std::io::ErrorKind::AddrInUse => {
            "; another process is listening there: stop it or pass another --http address"
        }
        std::io::ErrorKind::AddrNotAvailable => {
            "; this machine has no such address: pass one of its own to --http"
        }
        std::io::ErrorKind::PermissionDenied => {
            "; ports below 1024 need privileges: pick a higher port"
        }
        _ => "; pick another --http address",
    }
}

// r[impl config.cache-dir.shared-startup]
/// What to do about a cache.db that would not open, said only where it is the cause: a file
/// or folder SQLite cannot write. A lock another process held, a newer schema or a damaged
/// row already say what happened and what to do.
fn store_hint(source: &tc_gate::StoreError) -> &'static str {
    let text = source.to_string().to_ascii_lowercase();
    let unwritable = [
        "readonly",
        "read-only",
        "unable to open",
        "permission denied",
    ]
    .iter()
    .any(|cause| text.contains(cause));
    if matches!(source, tc_gate::StoreError::Database(_)) && unwritable {
        "; check that the cache directory is writable"
    } else {
        ""
    }
}

#[cfg(test)]
mod store_message_tests {
    use super::*;

    // r[verify config.cache-dir.shared-startup]
    #[test]
    fn the_message_blames_permissions_only_when_they_are_the_cause() {
        let path = PathBuf::from("/c/cache.db");
        let newer = ServeError::Store {
            path: path.clone(),
            source: tc_gate::StoreError::NewerSchema {
                found: 9,
                supported: 4,
            },
        };
        assert!(!newer.to_string().contains("writable"), "{newer}");
        let locked = ServeError::Store {
            path: path.clone(),
            source: tc_gate::StoreError::Database(Box::new(std::io::Error::other(
                "another process kept the file locked for 10 s",
            ))),
        };
        assert!(!locked.to_string().contains("writable"), "{locked}");
        let readonly = ServeError::Store {
            path,
            source: tc_gate::StoreError::Database(Box::new(std::io::Error::other(
                "attempt to write a readonly database",
            ))),
        };
        assert!(readonly.to_string().contains("writable"), "{readonly}");
    }
}
