//! tc-sessions: sessions of an agent's calls, their traces, and re-running them
//! (spec/sessions.md; spec/drift.md `drift.bind.session-rerun`,
//! `drift.residual.open-session`; spec/cli.md `obsidian-tc rerun`; spec/config.md `[sessions]`; spec/tools.md
//! `start_session` … `session_rerun`).
//!
//! An agent opens a session on a vault with `start_session`; until `end_session`, every
//! `tools/call` it makes on that vault is recorded as one line of the session's trace
//! (`<cacheDir>/sessions/<id>.jsonl`, never inside the vault). `session_rerun` (always
//! confirmed by the human) and `obsidian-tc rerun` run the recorded calls again and say,
//! per call, whether it could run and whether it came out as recorded.
//!
//! - [`config`] holds `[sessions]`;
//! - [`store`] the sessions table in cache.db;
//! - [`trace`] the trace files (durable appends, torn lines skipped);
//! - [`scan`] what a trace keeps of the arguments (secret-scanned, capped);
//! - [`record`] the recording hook the server calls after each call;
//! - [`rerun`] the re-run engine over a pipeline, its report, and the [`Replayer`] the
//!   server provides;
//! - [`tools`] the four tools.

pub mod config;
pub mod record;
pub mod rerun;
pub mod scan;
pub mod store;
pub mod tools;
pub mod trace;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

pub use config::SessionsConfig;
pub use record::CallRecord;
pub use rerun::{CallReport, Divergence, Replayer, RerunPlan, RerunReport, Verdict};
use tc_gate::clock::Clock;
use tc_tools::{ErrorCode, Registry, RegistryBuildError, SubsystemDb, SubsystemSetup, ToolError};
pub use trace::{CallStatus, TraceLine};

/// The subsystem's name, as its version row in `subsystem_schema` spells it.
pub const COMPONENT: &str = "sessions";

/// The sessions of every vault of a server: the table, the trace folder, the
/// configuration, and the replayer the server hands over once its pipeline exists.
pub struct Sessions {
    db: SubsystemDb,
    cache_dir: PathBuf,
    config: SessionsConfig,
    clock: Arc<dyn Clock>,
    replayer: OnceLock<Arc<dyn Replayer>>,
    /// Serializes (count, append) so a session's lines are in the order of their numbers.
    appending: Mutex<()>,
    /// Calls that could not be recorded since start-up (also counted per session).
    lost: AtomicU64,
}

impl fmt::Debug for Sessions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sessions")
            .field("cache_dir", &self.cache_dir)
            .field("config", &self.config)
            .field("replayer", &self.replayer.get().is_some())
            .finish_non_exhaustive()
    }
}

impl Sessions {
    /// Opens the sessions table in `<cache_dir>/cache.db`; traces go to
    /// `<cache_dir>/sessions/`.
    pub fn open(
        cache_dir: &Path,
        config: SessionsConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, RegistryBuildError> {
        let db = SubsystemDb::open(cache_dir, COMPONENT, store::MIGRATIONS)
            .map_err(|e| RegistryBuildError::subsystem(COMPONENT, e))?;
        // r[impl sessions.trace.durable]
        // The trace line is what must survive a crash (it is fsynced on every append); the
        // row's counters are a summary of it, so this connection's commits wait for the
        // WAL write, not for an fsync of their own: one fsync per recorded call, not two.
        // A power cut can then lose the last counter updates (or an end), never a line.
        db.lock()
            .pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| RegistryBuildError::subsystem(COMPONENT, e))?;
        Ok(Sessions {
            db,
            cache_dir: cache_dir.to_path_buf(),
            config,
            clock,
            replayer: OnceLock::new(),
            appending: Mutex::new(()),
            lost: AtomicU64::new(0),
        })
    }

    /// [`Sessions::open`] from what a subsystem's `register` is given.
    pub fn from_setup(
        setup: &SubsystemSetup<'_>,
        config: SessionsConfig,
    ) -> Result<Self, RegistryBuildError> {
        Sessions::open(setup.cache_dir, config, Arc::clone(&setup.clock))
    }

    /// Hands over the replayer `session_rerun` runs calls with; `false` (and nothing
    /// changes) when one was handed over already.
    pub fn set_replayer(&self, replayer: Arc<dyn Replayer>) -> bool {
        self.replayer.set(replayer).is_ok()
    }

    pub fn replayer(&self) -> Option<&Arc<dyn Replayer>> {
        self.replayer.get()
    }

    pub fn config(&self) -> SessionsConfig {
        self.config
    }

    pub fn cache_dir(&self) -> &Path {
        &self.cache_dir
    }

    /// The trace file of `session`.
    pub fn trace_path(&self, session: &store::SessionRow) -> PathBuf {
        trace::trace_path(&self.cache_dir, &session.trace_file)
    }

    /// How many calls could not be recorded since start-up.
    pub fn lost_calls(&self) -> u64 {
        self.lost.load(Ordering::Relaxed)
    }

    pub(crate) fn db(&self) -> &SubsystemDb {
        &self.db
    }

    pub(crate) fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The session `id` as the operator sees it (any caller's), or `session_not_found`.
    pub fn find(&self, id: &str) -> Result<store::SessionRow, ToolError> {
        let found = store::get(&self.db.lock(), id).map_err(db_error)?;
        found.ok_or_else(|| session_not_found(id))
    }

    /// The session `id` of `caller` on `vault`; another caller's session, or one of
    /// another vault, is `session_not_found` as a missing one is (nothing is said about
    /// sessions that are not the caller's).
    pub fn find_own(
        &self,
        id: &str,
        caller: &str,
        vault: &str,
    ) -> Result<store::SessionRow, ToolError> {
        match store::get(&self.db.lock(), id).map_err(db_error)? {
            Some(row) if row.caller == caller && row.vault == vault => Ok(row),
            _ => Err(session_not_found(id)),
        }
    }

    /// Adds the four session tools over `self` to `registry`, in `tools/list` order.
    pub fn add_tools(self: &Arc<Self>, registry: &mut Registry) -> Result<(), RegistryBuildError> {
        registry.add(tools::manage::StartSession(Arc::clone(self)))?;
        registry.add(tools::manage::EndSession(Arc::clone(self)))?;
        registry.add(tools::manage::ListSessions(Arc::clone(self)))?;
        registry.add(tools::session_rerun::SessionRerun(Arc::clone(self)))?;
        Ok(())
    }
}

/// Opens the sessions table under `setup.cache_dir`, adds the session tools to `registry`,
/// and returns the store (the server records calls into it and hands it its replayer).
pub fn register(
    registry: &mut Registry,
    setup: &SubsystemSetup<'_>,
    config: SessionsConfig,
) -> Result<Arc<Sessions>, RegistryBuildError> {
    let sessions = Arc::new(Sessions::from_setup(setup, config)?);
    sessions.add_tools(registry)?;
    Ok(sessions)
}

/// start_session, end_session, list_sessions and session_rerun as the family `sessions`
/// (spec `tools.families`), over a store the server keeps whether or not the family is
/// served (the recording hook and the replayer use it).
#[derive(Debug, Clone)]
pub struct SessionsFamily {
    sessions: Arc<Sessions>,
}

impl SessionsFamily {
    pub fn new(sessions: Arc<Sessions>) -> Self {
        SessionsFamily { sessions }
    }
}

impl tc_tools::Family for SessionsFamily {
    fn name(&self) -> &'static str {
        "sessions"
    }

    fn register(
        &self,
        registry: &mut Registry,
        _setup: &SubsystemSetup<'_>,
    ) -> Result<(), RegistryBuildError> {
        self.sessions.add_tools(registry)
    }
}

pub(crate) fn db_error(error: rusqlite::Error) -> ToolError {
    tracing::warn!(%error, "sessions: cache.db");
    ToolError::internal("reading or writing the sessions in cache.db")
}

// r[impl sessions.not-found]
pub fn session_not_found(id: &str) -> ToolError {
    ToolError::new(
        ErrorCode::SessionNotFound,
        format!("no session {id:?} of this caller on this vault"),
    )
    .with_details(serde_json::json!({"session_id": id}))
    .with_recovery(
        "list_sessions names this caller's sessions on the vault",
        None,
    )
}
