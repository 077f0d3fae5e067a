//! Sessions on the server (spec/sessions.md `sessions.record.*`, `sessions.rerun.*`,
//! `sessions.cli.rerun`): the recording hook [`ServerCore::call_tool`] calls once per call
//! after its outcome is known, and the [`Replayer`] that `session_rerun` and
//! `obsidian-tc rerun` run recorded calls with.
//!
//! The replayer runs calls through the server's own [`Pipeline`] and governor, or, for a
//! sandboxed re-run, through a second [`ServerCore`] built over a copy of the vault and the
//! cache made for the run ([`sandbox`]), deleted when the run ends. It holds the pipeline
//! weakly: the pipeline owns the registry, which owns the session tools, which own the
//! replayer.

mod sandbox;

use std::sync::{Arc, Weak};
use std::time::Instant;

use rmcp::model::CallToolResponse;
use serde_json::Value;
use tc_gate::clock::{Clock, Entropy};
use tc_gate::governor::{BoundedError, Governor};
pub use tc_sessions::RerunReport;
use tc_sessions::rerun::{ReplayControl, replay_on};
pub use tc_sessions::store::SessionRow;
use tc_sessions::{CallRecord, CallReport, CallStatus, Replayer, RerunPlan, Sessions};
use tc_tools::{CallerContext, ErrorCode, Pipeline, ToolError, ToolOutput};

use crate::config::Config;
use crate::server::ServerCore;

/// The result's size on the wire under the governor, or the refusal the client would get.
pub(crate) fn governed_size(governor: &Governor, output: ToolOutput) -> Result<u64, ToolError> {
    let overflow = |o: tc_gate::governor::Overflow| {
        ToolError::new(ErrorCode::Overflow, o.to_string()).with_details(o.details())
    };
    match output {
        ToolOutput::Value(value) => match governor.serialize_bounded(&value) {
            Ok(bytes) => Ok(bytes.len() as u64),
            Err(BoundedError::Overflow(o)) => Err(overflow(o)),
            Err(BoundedError::Serialize(_)) => Err(ToolError::internal("serializing the result")),
        },
        ToolOutput::Serialized(text) => governor
            .admit_serialized(text.into_bytes())
            .map(|bytes| bytes.len() as u64)
            .map_err(overflow),
        ToolOutput::Image {
            value,
            data,
            mime_type,
        } => {
            let bytes = serde_json::to_vec(&value)
                .map_err(|_| ToolError::internal("serializing the result"))?;
            let extra = data.len() + mime_type.len() + tc_tools::IMAGE_BLOCK_BYTES;
            governor
                .admit_serialized_beside(bytes, extra)
                .map(|bytes| (bytes.len() + extra) as u64)
                .map_err(overflow)
        }
    }
}

/// The server's replayer.
#[derive(Debug)]
pub(crate) struct ServerReplayer {
    pipeline: Weak<Pipeline>,
    /// The server's cache directory, where sandboxes are made.
    cache_dir: std::path::PathBuf,
    config: Config,
    cap: usize,
    clock: Arc<dyn Clock>,
    entropy: Arc<dyn Entropy>,
}

impl ServerReplayer {
    /// Hands `sessions` a replayer over `pipeline`, the server's `config` (for a sandbox's
    /// second core) and its governor's cap.
    pub(crate) fn wire(
        sessions: &Sessions,
        pipeline: &Arc<Pipeline>,
        config: &Config,
        cap: usize,
        clock: &Arc<dyn Clock>,
        entropy: &Arc<dyn Entropy>,
    ) {
        sessions.set_replayer(Arc::new(ServerReplayer {
            pipeline: Arc::downgrade(pipeline),
            cache_dir: sessions.cache_dir().to_path_buf(),
            config: config.clone(),
            cap,
            clock: Arc::clone(clock),
            entropy: Arc::clone(entropy),
        }));
    }
}

impl Replayer for ServerReplayer {
    // r[impl sessions.rerun.sandbox]
    fn replay(
        &self,
        plan: &RerunPlan,
        control: &ReplayControl<'_>,
    ) -> Result<Vec<CallReport>, ToolError> {
        let governor = Governor::new(self.cap);
        let govern = |output: ToolOutput| governed_size(&governor, output);
        if !plan.sandbox {
            let pipeline = self
                .pipeline
                .upgrade()
                .ok_or_else(|| ToolError::internal("re-running calls (the server is stopping)"))?;
            return Ok(replay_on(&pipeline, plan, false, &govern, control));
        }
        let pipeline = self
            .pipeline
            .upgrade()
            .ok_or_else(|| ToolError::internal("re-running calls (the server is stopping)"))?;
        let cache_dir = self.cache_dir.clone();
        let binding = pipeline
            .vault(&plan.session.vault)
            .ok_or_else(|| ToolError::internal("making a sandbox (the vault is not served)"))?;
        let root = binding.vault.root().path().to_path_buf();
        drop(pipeline);
        let made = sandbox::Sandbox::make(&cache_dir, &root).map_err(|error| {
            tracing::warn!(%error, "rerun: making a sandbox");
            ToolError::internal("copying the vault and the cache into a sandbox")
        })?;
        let core = made
            .core(
                &self.config,
                &plan.session.vault,
                &self.clock,
                &self.entropy,
            )
            .map_err(|error| {
                tracing::warn!(%error, "rerun: building the sandbox's server");
                ToolError::internal("building a server over the sandbox")
            })?;
        let reports = replay_on(&core.pipeline, plan, true, &govern, control);
        drop(core);
        // `made` is removed here, and on every early return above.
        drop(made);
        Ok(reports)
    }
}

/// Why `obsidian-tc rerun` could not re-run a session.
#[derive(Debug, thiserror::Error)]
pub enum RerunError {
    #[error(
        "there is no session {0:?} in this cache.db; `list_sessions` names a caller's sessions"
    )]
    NotFound(String),
    #[error("session {id:?} is on vault {actual:?}, not {asked:?}")]
    WrongVault {
        id: String,
        actual: String,
        asked: String,
    },
    #[error("{0}")]
    Failed(String),
}

/// The session `id` in the cache.db of `cache_dir`, whoever's it is (the operator's view).
pub fn find_session(cache_dir: &std::path::Path, id: &str) -> Result<SessionRow, RerunError> {
    if !cache_dir.join(tc_gate::CACHE_DB_FILE).is_file() {
        return Err(RerunError::Failed(format!(
            "there is no cache.db in {}, so no session {id:?}; pass the --config or \
             --cache-dir the server runs with",
            cache_dir.display()
        )));
    }
    let sessions = Sessions::open(
        cache_dir,
        tc_sessions::SessionsConfig::default(),
        Arc::new(tc_gate::clock::SystemClock),
    )
    .map_err(|e| RerunError::Failed(e.to_string()))?;
    match sessions.find(id) {
        Ok(row) => Ok(row),
        Err(error) if error.code == ErrorCode::SessionNotFound => {
            Err(RerunError::NotFound(id.to_owned()))
        }
        Err(error) => Err(RerunError::Failed(error.to_string())),
    }
}

/// The configuration a session is re-run with by the operator: `config` when it lists the
/// session's vault; with no vaults listed (a server started as `serve VAULT_DIR`), the
/// session's vault served from the root recorded when the session started.
pub fn config_for(config: &Config, session: &SessionRow) -> Result<Config, RerunError> {
    if config.vaults.iter().any(|v| v.id == session.vault) {
        return Ok(config.clone());
    }
    if !config.vaults.is_empty() {
        return Err(RerunError::Failed(format!(
            "session {:?} is on vault {:?}, which this configuration does not list; pass the \
             --config the server runs with",
            session.id, session.vault
        )));
    }
    let mut config = config.clone();
    config
        .add_vault_dir(std::path::Path::new(&session.vault_root))
        .map_err(|e| RerunError::Failed(format!("{e}")))?;
    if config.vaults.first().is_some_and(|v| v.id != session.vault) {
        return Err(RerunError::Failed(format!(
            "the folder {} the session's vault {:?} was served from is now vault {:?}; pass \
             the --config the server runs with",
            session.vault_root, session.vault, config.vaults[0].id
        )));
    }
    Ok(config)
}

impl ServerCore {
    /// The sessions store.
    pub fn sessions(&self) -> &Arc<Sessions> {
        &self.sessions
    }

    // r[impl sessions.cli.rerun]
    /// The operator's re-run of session `id` (any caller's), as `obsidian-tc rerun` runs
    /// it: as `rerun:<caller>` with the scopes the caller held when it started the session.
    /// Blocking: run it off the async workers.
    pub fn rerun_session(
        &self,
        id: &str,
        vault: Option<&str>,
        sandbox: bool,
    ) -> Result<RerunReport, RerunError> {
        let session = match self.sessions.find(id) {
            Ok(row) => row,
            Err(error) if error.code == ErrorCode::SessionNotFound => {
                return Err(RerunError::NotFound(id.to_owned()));
            }
            Err(error) => return Err(RerunError::Failed(error.to_string())),
        };
        if let Some(asked) = vault
            && asked != session.vault
        {
            return Err(RerunError::WrongVault {
                id: id.to_owned(),
                actual: session.vault,
                asked: asked.to_owned(),
            });
        }
        let replayer = self
            .sessions
            .replayer()
            .ok_or_else(|| RerunError::Failed("this server has no replayer wired".into()))?;
        let trace = tc_sessions::trace::read(&self.sessions.trace_path(&session))
            .map_err(|e| RerunError::Failed(format!("cannot read the session's trace: {e}")))?;
        let plan = RerunPlan {
            caller: CallerContext {
                id: tc_sessions::rerun::rerun_caller_id(&session.caller),
                scopes: session.scopes(),
                only_vault: Some(session.vault.clone()),
            },
            sandbox,
            trace,
            session,
        };
        let calls = replayer
            .replay(&plan, &ReplayControl::QUIET)
            .map_err(|e| RerunError::Failed(e.to_string()))?;
        Ok(RerunReport::of(&plan, calls))
    }

    // r[impl sessions.record.every-call]
    // r[impl sessions.record.never-fails-call]
    /// The recording hook: records a finished call in its caller's open session on its
    /// vault, on the blocking pool; never fails the call. `bound` is the (vault, args_hash)
    /// the pipeline bound the call to, when it got that far.
    pub(crate) async fn record_session_call(
        &self,
        caller: &str,
        tool: &str,
        arguments: &Value,
        bound: Option<&(String, String)>,
        response: &CallToolResponse,
        started: Instant,
    ) {
        let vault = match bound {
            Some((vault, _)) => Some(vault.clone()),
            None => match arguments.get("vault").and_then(Value::as_str) {
                Some(named) => self.vault_ids.iter().find(|v| *v == named).cloned(),
                None if self.vault_ids.len() == 1 => self.vault_ids.first().cloned(),
                None => None,
            },
        };
        let Some(vault) = vault else { return };
        let (status, error_code, result_bytes) = outcome_of(response);
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let sessions = Arc::clone(&self.sessions);
        let (caller, tool, arguments) = (caller.to_owned(), tool.to_owned(), arguments.clone());
        let args_hash = bound.map(|(_, hash)| hash.clone());
        let recorded = tokio::task::spawn_blocking(move || {
            sessions.record_or_log(&CallRecord {
                caller: &caller,
                vault: &vault,
                tool: &tool,
                arguments: &arguments,
                args_hash: args_hash.as_deref(),
                status,
                error_code: error_code.as_deref(),
                duration_ms,
                result_bytes,
            })
        })
        .await;
        if recorded.is_err() {
            tracing::warn!("sessions: the recording task failed");
        }
    }
}

/// A response's status, error code and size as sent (the text block holds the result's
/// JSON, or the refusal's line).
fn outcome_of(response: &CallToolResponse) -> (CallStatus, Option<String>, u64) {
    match response {
        CallToolResponse::Complete(result) => {
            let bytes = result
                .content
                .first()
                .and_then(|c| c.as_text())
                .map_or(0, |t| t.text.len() as u64);
            if result.is_error == Some(true) {
                (
                    CallStatus::Error,
                    crate::results::failure_code(result),
                    bytes,
                )
            } else {
                (CallStatus::Ok, None, bytes)
            }
        }
        CallToolResponse::InputRequired(result) => {
            let bytes = serde_json::to_vec(result).map_or(0, |b| b.len() as u64);
            (CallStatus::InputRequired, None, bytes)
        }
        // This server materializes no tasks; if it did, it accepted the call.
        CallToolResponse::Task(task) => {
            let bytes = serde_json::to_vec(task).map_or(0, |b| b.len() as u64);
            (CallStatus::Ok, None, bytes)
        }
        _ => (CallStatus::Ok, None, 0),
    }
}
