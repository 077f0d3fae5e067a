//! `start_session`, `end_session` and `list_sessions` (spec/sessions.md
//! `sessions.tools.start`, `sessions.tools.end`, `sessions.tools.list`,
//! `sessions.store.one-open`, `sessions.own-only`).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tc_gate::cursor::{CursorClaims, CursorError, request_digest};
use tc_tools::{
    Annotations, ErrorCode, Gating, HandlerFailure, Precheck, TargetState, Tool, ToolCx, ToolError,
    ToolSpec, wire_cost,
};

use super::{SESSION_ID, SessionView};
use crate::store::{self, After, SessionRow, scopes_text};
use crate::{Sessions, db_error, trace};

/// A label: one line, no control characters.
const LABEL: &str = r"^[^\u0000-\u001F\u007F-\u009F]*$";

// ---------------------------------------------------------------- start_session

/// `start_session` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartSessionArgs {
    /// What the session is for, shown by list_sessions and in re-run reports.
    #[serde(default)]
    #[schemars(length(max = 200), regex(pattern = LABEL))]
    pub label: String,
}

/// `start_session`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StartSessionOutput {
    pub session: SessionView,
}

/// `start_session`.
#[derive(Debug)]
pub struct StartSession(pub Arc<Sessions>);

fn already_open(open: &SessionRow) -> ToolError {
    ToolError::new(
        ErrorCode::InvalidInput,
        format!(
            "this caller already has session {} open on vault {:?}; nothing was started",
            open.id, open.vault
        ),
    )
    .with_details(json!({"reason": "session_open", "session_id": open.id}))
    .with_recovery(
        format!(
            "end it with end_session {{\"session_id\": \"{}\"}} first, or go on recording into it",
            open.id
        ),
        None,
    )
}

// r[impl sessions.tools.start]
// r[impl sessions.store.one-open]
impl Tool for StartSession {
    type Args = StartSessionArgs;
    type Output = StartSessionOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "start_session",
            description: "Start recording a session on this vault: until end_session, every call this caller makes on the vault is recorded in the session's trace (outside the vault), so the session can be listed and re-run. One open session per caller and vault.",
            annotations: Annotations::writes(false, false),
            scopes: &["write:workspace"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, cx: &ToolCx<'_>, _args: &StartSessionArgs) -> Result<Precheck, ToolError> {
        if let Some(open) = self.0.open_session(&cx.caller.id, cx.vault().id())? {
            return Err(already_open(&open));
        }
        Ok(Precheck::free())
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &StartSessionArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<StartSessionOutput, HandlerFailure> {
        let id = format!("s{:016x}", rand::random::<u64>());
        let row = SessionRow {
            trace_file: format!("{id}.jsonl"),
            id,
            vault: cx.vault().id().to_owned(),
            vault_root: cx.vault().root().path().display().to_string(),
            caller: cx.caller.id.clone(),
            scopes: scopes_text(&cx.caller.scopes),
            label: args.label.clone(),
            started_ms: self.0.now_ms(),
            ended_ms: None,
            call_count: 0,
            lost_count: 0,
        };
        trace::create(&self.0.trace_path(&row)).map_err(|error| {
            tracing::warn!(%error, "sessions: creating a trace file");
            ToolError::internal("creating the session's trace file")
        })?;
        let inserted = store::insert(&self.0.db().lock(), &row);
        if inserted.is_err() {
            let _ = std::fs::remove_file(self.0.trace_path(&row));
            if let Some(open) = self.0.open_session(&row.caller, &row.vault)? {
                return Err(already_open(&open).into());
            }
            return Err(inserted.map_err(db_error).unwrap_err().into());
        }
        Ok(StartSessionOutput {
            session: SessionView::from(&row),
        })
    }
}

// ---------------------------------------------------------------- end_session

/// `end_session` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EndSessionArgs {
    /// The session to end (from start_session or list_sessions).
    #[schemars(regex(pattern = SESSION_ID))]
    pub session_id: String,
}

/// `end_session`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EndSessionOutput {
    pub session: SessionView,
    /// It had been ended before this call (nothing changed).
    pub already_ended: bool,
}

/// `end_session`.
#[derive(Debug)]
pub struct EndSession(pub Arc<Sessions>);

// r[impl sessions.tools.end]
impl Tool for EndSession {
    type Args = EndSessionArgs;
    type Output = EndSessionOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "end_session",
            description: "End one of this caller's sessions on this vault: its trace stops growing, and from then on a session_rerun confirmation is bound to the trace's bytes too. Ending an ended session changes nothing.",
            annotations: Annotations::writes(false, true),
            scopes: &["write:workspace"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, cx: &ToolCx<'_>, args: &EndSessionArgs) -> Result<Precheck, ToolError> {
        self.0
            .find_own(&args.session_id, &cx.caller.id, cx.vault().id())?;
        Ok(Precheck::free())
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &EndSessionArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<EndSessionOutput, HandlerFailure> {
        let before = self
            .0
            .find_own(&args.session_id, &cx.caller.id, cx.vault().id())?;
        // The appends of calls still being recorded finish before the end is written.
        let _order = self
            .0
            .appending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let after = store::end(&self.0.db().lock(), &args.session_id, self.0.now_ms())
            .map_err(db_error)?
            .ok_or_else(|| crate::session_not_found(&args.session_id))?;
        Ok(EndSessionOutput {
            session: SessionView::from(&after),
            already_ended: !before.is_open(),
        })
    }
}

// ---------------------------------------------------------------- list_sessions

/// The tool name, as bound into its cursors.
pub const LIST_SESSIONS: &str = "list_sessions";
/// The most sessions one page holds.
pub const PAGE_ROWS: usize = 100;
/// What a page keeps free of entries: its envelope and the longest cursor.
const PAGE_RESERVE: usize = 1024;

/// `list_sessions` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListSessionsArgs {
    /// The previous page's next_cursor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Page size cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1024))]
    pub max_bytes: Option<u64>,
}

/// A `list_sessions` page.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ListSessionsOutput {
    pub vault: String,
    /// This caller's sessions on the vault, newest first.
    pub sessions: Vec<SessionView>,
    pub next_cursor: Option<String>,
}

/// `list_sessions`.
#[derive(Debug)]
pub struct ListSessions(pub Arc<Sessions>);

fn cursor_error(error: CursorError) -> ToolError {
    ToolError::new(ErrorCode::InvalidInput, error.to_string())
        .with_details(json!({"reason": error.reason()}))
}

fn parse_position(position: &str) -> Option<After> {
    let (started, id) = position.split_once(':')?;
    Some(After {
        started_ms: started.parse().ok()?,
        id: id.to_owned(),
    })
}

// r[impl sessions.tools.list]
// r[impl sessions.own-only]
impl Tool for ListSessions {
    type Args = ListSessionsArgs;
    type Output = ListSessionsOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: LIST_SESSIONS,
            description: "List this caller's sessions on this vault, newest first; pages via cursor = next_cursor.",
            annotations: Annotations::READS,
            scopes: &["read:workspace"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, _cx: &ToolCx<'_>, _args: &ListSessionsArgs) -> Result<Precheck, ToolError> {
        Ok(Precheck::free())
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &ListSessionsArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<ListSessionsOutput, HandlerFailure> {
        let vault = cx.vault().id();
        let now = cx.clock.now_ms();
        let request = json!({"vault": vault});
        let digest = request_digest(&request);
        let after = match &args.cursor {
            Some(token) => {
                let position = cx
                    .paging
                    .codec
                    .open(token, &cx.caller.id, LIST_SESSIONS, &digest, now)
                    .map_err(cursor_error)?;
                Some(
                    parse_position(&position.position)
                        .ok_or_else(|| cursor_error(CursorError::Invalid))?,
                )
            }
            None => None,
        };
        let rows = store::page(
            &self.0.db().lock(),
            &cx.caller.id,
            vault,
            after.as_ref(),
            PAGE_ROWS + 1,
        )
        .map_err(db_error)?;
        // r[impl paging.max-bytes]
        let budget = cx
            .paging
            .limits
            .lowered_to(args.max_bytes)
            .page_budget()
            .saturating_sub(PAGE_RESERVE);
        let mut used = 0usize;
        let mut sessions = Vec::new();
        let mut last: Option<&SessionRow> = None;
        for row in rows.iter().take(PAGE_ROWS) {
            let view = SessionView::from(row);
            let cost = serde_json::to_vec(&view)
                .map(|bytes| wire_cost(&bytes) + 1)
                .map_err(|_| ToolError::internal("encoding a session"))?;
            if used + cost > budget && !sessions.is_empty() {
                break;
            }
            used += cost;
            sessions.push(view);
            last = Some(row);
        }
        let more = sessions.len() < rows.len();
        let next_cursor = match (more, last) {
            (true, Some(last)) => {
                let position = format!("{}:{}", last.started_ms, last.id);
                Some(
                    cx.paging
                        .codec
                        .seal(
                            &CursorClaims {
                                caller: &cx.caller.id,
                                tool: LIST_SESSIONS,
                                request_digest: &digest,
                                position: &position,
                                page: 0,
                            },
                            now,
                        )
                        .map_err(|_| ToolError::internal("making the next cursor"))?,
                )
            }
            _ => None,
        };
        Ok(ListSessionsOutput {
            vault: vault.to_owned(),
            sessions,
            next_cursor,
        })
    }
}
