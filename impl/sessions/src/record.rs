//! The recording hook (spec/sessions.md `sessions.record.*`): the server calls
//! [`Sessions::record_or_log`] once per `tools/call`, after the outcome is known, with the
//! tool's name (the inner tool's, for a call that came through `call_capability`).
//!
//! A call is recorded when its caller has an open session on the vault it was bound to
//! (for a call refused before a vault was bound: the vault it named, or the only vault
//! served). `start_session` and `end_session` are not recorded: they delimit a session
//! rather than belong to it (and re-running them would open or end sessions). A recording
//! failure never fails the call: it is logged, counted in the session row (`lost_calls`)
//! and in [`Sessions::lost_calls`].

use serde_json::Value;
use tc_gate::args_hash::args_hash;

use crate::trace::{self, CallStatus, TraceLine};
use crate::{Sessions, db_error, scan, store};

/// The tools whose calls are never recorded.
pub const NOT_RECORDED: &[&str] = &["start_session", "end_session"];

/// One finished call, as the server saw it.
#[derive(Debug, Clone, Copy)]
pub struct CallRecord<'a> {
    pub caller: &'a str,
    pub vault: &'a str,
    pub tool: &'a str,
    /// The arguments as sent.
    pub arguments: &'a Value,
    /// The gate's args_hash, when the call got that far.
    pub args_hash: Option<&'a str>,
    pub status: CallStatus,
    pub error_code: Option<&'a str>,
    pub duration_ms: u64,
    pub result_bytes: u64,
}

/// Why a call could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("cache.db: {0}")]
    Db(#[from] rusqlite::Error),
    #[error("appending to the trace {path}: {source}")]
    Append {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl Sessions {
    // r[impl sessions.record.every-call]
    /// Records `call` in its caller's open session on its vault; the call's number in the
    /// session, or `None` when no session records it.
    pub fn record(&self, call: &CallRecord<'_>) -> Result<Option<u64>, RecordError> {
        if NOT_RECORDED.contains(&call.tool) {
            return Ok(None);
        }
        // Calls of callers without an open session (most calls) never wait on the lock.
        let Some(session) = store::open_of(&self.db().lock(), call.caller, call.vault)? else {
            return Ok(None);
        };
        let _order = self
            .appending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Counted only while the session is still open (an end_session may have come first).
        let Some(n) = store::next_call(&self.db().lock(), &session.id)? else {
            return Ok(None);
        };
        let now = self.now_ms();
        let kept = if self.config().trace_content {
            scan::keep(call.arguments)
        } else {
            scan::Kept {
                args: None,
                redacted: false,
                capped: false,
            }
        };
        let hash = match call.args_hash {
            Some(hash) => hash.to_owned(),
            None => {
                let mut sent = call.arguments.clone();
                if let Value::Object(map) = &mut sent {
                    map.remove(tc_gate::args_hash::ELICIT_TOKEN_KEY);
                }
                args_hash(call.tool, &sent).as_str().to_owned()
            }
        };
        let line = TraceLine {
            n,
            time: trace::rfc3339(now),
            time_ms: now,
            tool: call.tool.to_owned(),
            args_hash: hash,
            status: call.status,
            error_code: call.error_code.map(str::to_owned),
            duration_ms: call.duration_ms,
            result_bytes: call.result_bytes,
            args: kept.args,
            redacted: kept.redacted,
            capped: kept.capped,
        };
        let path = self.trace_path(&session);
        if let Err(source) = trace::append(&path, &line) {
            let _ = store::lost_call(&self.db().lock(), &session.id);
            return Err(RecordError::Append {
                path: path.display().to_string(),
                source,
            });
        }
        Ok(Some(n))
    }

    // r[impl sessions.record.never-fails-call]
    /// [`Sessions::record`], a failure logged and counted instead of returned.
    pub fn record_or_log(&self, call: &CallRecord<'_>) -> Option<u64> {
        match self.record(call) {
            Ok(n) => n,
            Err(error) => {
                self.lost.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tracing::warn!(tool = call.tool, %error, "sessions: a call could not be recorded");
                None
            }
        }
    }

    /// The open session of `caller` on `vault`, if any.
    pub fn open_session(
        &self,
        caller: &str,
        vault: &str,
    ) -> Result<Option<store::SessionRow>, tc_tools::ToolError> {
        store::open_of(&self.db().lock(), caller, vault).map_err(db_error)
    }
}
