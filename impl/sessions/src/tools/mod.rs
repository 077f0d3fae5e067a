//! The four session tools (spec/tools.md; spec/sessions.md `sessions.tools.*`):
//!
//! - [`manage`] holds `start_session`, `end_session` and `list_sessions`;
//! - [`session_rerun`] holds `session_rerun`, always gated.
//!
//! What they share: a session as results show it.

pub mod manage;
pub mod session_rerun;

use schemars::JsonSchema;
use serde::Serialize;

use crate::store::SessionRow;
use crate::trace::rfc3339;

/// A session as the tools return it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SessionView {
    pub session_id: String,
    pub vault: String,
    pub label: String,
    /// Still recording.
    pub open: bool,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub started_ms: i64,
    /// Null while open.
    pub ended_at: Option<String>,
    pub ended_ms: Option<i64>,
    /// Calls recorded in its trace.
    pub call_count: u64,
    /// Calls that could not be recorded (a full disk, say).
    pub lost_calls: u64,
    /// The trace's file name under `<cacheDir>/sessions/`.
    pub trace_file: String,
}

impl From<&SessionRow> for SessionView {
    fn from(row: &SessionRow) -> Self {
        SessionView {
            session_id: row.id.clone(),
            vault: row.vault.clone(),
            label: row.label.clone(),
            open: row.is_open(),
            started_at: rfc3339(row.started_ms),
            started_ms: row.started_ms,
            ended_at: row.ended_ms.map(rfc3339),
            ended_ms: row.ended_ms,
            call_count: row.call_count,
            lost_calls: row.lost_count,
            trace_file: row.trace_file.clone(),
        }
    }
}

/// A session id as the tools take it.
pub const SESSION_ID: &str = r"^s[0-9a-f]{1,32}$";
