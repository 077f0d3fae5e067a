//! `session_rerun`, always gated (spec/sessions.md `sessions.tools.rerun`,
//! `sessions.rerun.*`; spec/drift.md `drift.bind.session-rerun`,
//! `drift.residual.open-session`).
//!
//! Its confirmation is bound ([`ConfirmationTargets::Custom`]) to the session row and, once
//! the session has ended, to its trace's bytes: the session ending, or its trace growing
//! after it ended (a line appended by hand), between the request and the redemption is
//! `replay_drift`. While the session is open neither its trace nor its call counts are
//! bound, because both grow with the calls around the request itself (the refused call
//! that asks for the confirmation is recorded too). The handler reads the trace once,
//! checks those bytes against the confirmed fingerprint, and re-runs exactly them.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tc_gate::{ConfirmationTargets, StateFp, fingerprint_custom};
use tc_tools::{
    Annotations, CallerContext, ErrorCode, Gating, HandlerFailure, Precheck, Summary, TargetState,
    Tool, ToolCx, ToolError, ToolSpec,
};

use super::SESSION_ID;
use crate::rerun::{ReplayControl, RerunPlan, RerunReport, rerun_caller_id};
use crate::store::SessionRow;
use crate::trace::{self, Trace};
use crate::{Sessions, trace::rfc3339};

/// `session_rerun` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionRerunArgs {
    /// The session to re-run (one of this caller's on this vault).
    #[schemars(regex(pattern = SESSION_ID))]
    pub session_id: String,
    /// Run the calls that change the vault too, against a copy of the vault and the cache
    /// made for this run and deleted after it; without it they are skipped.
    #[serde(default)]
    pub sandbox: bool,
}

/// The tool's name.
pub const SESSION_RERUN: &str = "session_rerun";

/// `session_rerun`.
#[derive(Debug)]
pub struct SessionRerun(pub Arc<Sessions>);

/// What the report keeps free of call entries: its envelope and counts.
const REPORT_RESERVE: usize = 2048;

// r[impl drift.bind.session-rerun]
// r[impl drift.residual.open-session]
/// The fingerprint of what the confirmation covers: the row, and for an ended session
/// its call counts and its trace's bytes (`trace_bytes`; `None` when the file is gone).
fn fingerprint(row: &SessionRow, trace_bytes: Option<&[u8]>) -> StateFp {
    let started = row.started_ms.to_string();
    let Some(ended_ms) = row.ended_ms else {
        return fingerprint_custom(&[
            b"session_rerun",
            row.id.as_bytes(),
            row.vault.as_bytes(),
            row.vault_root.as_bytes(),
            row.caller.as_bytes(),
            row.scopes.as_bytes(),
            row.label.as_bytes(),
            started.as_bytes(),
            b"open",
            row.trace_file.as_bytes(),
        ]);
    };
    let ended = ended_ms.to_string();
    let calls = row.call_count.to_string();
    let lost = row.lost_count.to_string();
    let digest = match trace_bytes {
        Some(bytes) => trace::parse(bytes).sha256,
        None => "no trace file".to_owned(),
    };
    fingerprint_custom(&[
        b"session_rerun",
        row.id.as_bytes(),
        row.vault.as_bytes(),
        row.vault_root.as_bytes(),
        row.caller.as_bytes(),
        row.scopes.as_bytes(),
        row.label.as_bytes(),
        started.as_bytes(),
        ended.as_bytes(),
        calls.as_bytes(),
        lost.as_bytes(),
        row.trace_file.as_bytes(),
        digest.as_bytes(),
    ])
}

fn read_trace_bytes(sessions: &Sessions, row: &SessionRow) -> Result<Option<Vec<u8>>, ToolError> {
    match std::fs::read(sessions.trace_path(row)) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => {
            tracing::warn!(%error, "sessions: reading a trace");
            Err(ToolError::internal("reading the session's trace"))
        }
    }
}

impl Tool for SessionRerun {
    type Args = SessionRerunArgs;
    type Output = RerunReport;
    type Plan = SessionRow;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: SESSION_RERUN,
            description: "Re-run one of this caller's recorded sessions and report each call's verdict and divergence from the recording. Calls that change the vault are skipped unless sandbox is true (a throwaway copy of vault and cache); calls needing their own confirmation never run. Always asks the human.",
            annotations: Annotations::writes(false, false),
            scopes: &["execute:rerun"],
            changes_notes: false,
            gating: Gating::bound_to(ConfirmationTargets::Custom),
        }
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &SessionRerunArgs,
    ) -> Result<Precheck<Self::Plan>, ToolError> {
        let row = self
            .0
            .find_own(&args.session_id, &cx.caller.id, cx.vault().id())?;
        Ok(Precheck {
            needs_confirmation: true,
            acl: Vec::new(),
            plan: Arc::new(row),
        })
    }

    fn state(
        &self,
        cx: &ToolCx<'_>,
        args: &SessionRerunArgs,
        _precheck: &Precheck<Self::Plan>,
    ) -> Result<TargetState, ToolError> {
        let row = match self
            .0
            .find_own(&args.session_id, &cx.caller.id, cx.vault().id())
        {
            Ok(row) => row,
            // A session gone since the request is a state of its own.
            Err(error) if error.code == ErrorCode::SessionNotFound => {
                return Ok(TargetState {
                    fp: fingerprint_custom(&[
                        b"session_rerun",
                        args.session_id.as_bytes(),
                        b"absent",
                    ]),
                    ..TargetState::default()
                });
            }
            Err(error) => return Err(error),
        };
        let bytes = if row.is_open() {
            None
        } else {
            read_trace_bytes(&self.0, &row)?
        };
        Ok(TargetState {
            fp: fingerprint(&row, bytes.as_deref()),
            ..TargetState::default()
        })
    }

    // r[impl tools.summary]
    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &SessionRerunArgs,
        precheck: &Precheck<Self::Plan>,
        _state: &TargetState,
    ) -> Summary {
        let row = &*precheck.plan;
        let label = if row.label.is_empty() {
            String::new()
        } else {
            format!(" ({})", row.label)
        };
        let mut summary = Summary::new(format!(
            "re-run session {}{label}: {} recorded call(s), as caller {}",
            row.id,
            row.call_count,
            rerun_caller_id(&row.caller)
        ));
        summary = match row.ended_ms {
            Some(ended) => summary.target(format!(
                "session {} ended {} (its trace's bytes are part of this confirmation)",
                row.id,
                rfc3339(ended)
            )),
            None => summary.target(format!(
                "session {} is still open: calls recorded after this request are re-run too",
                row.id
            )),
        };
        summary = if args.sandbox {
            summary.detail(
                "calls that change the vault run against a copy of the vault and cache made for this run, deleted after it",
            )
        } else {
            summary.detail("calls that change the vault are skipped: nothing is changed")
        };
        summary.detail("calls that need their own confirmation are not run")
    }

    // r[impl sessions.tools.rerun]
    // r[impl sessions.rerun.caller]
    // r[impl sessions.rerun.progress]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &SessionRerunArgs,
        _precheck: &Precheck<Self::Plan>,
        state: &TargetState,
    ) -> Result<RerunReport, HandlerFailure> {
        let row = self
            .0
            .find_own(&args.session_id, &cx.caller.id, cx.vault().id())?;
        let bytes = read_trace_bytes(&self.0, &row)?;
        let confirmed = if row.is_open() {
            fingerprint(&row, None)
        } else {
            fingerprint(&row, bytes.as_deref())
        };
        if confirmed != state.fp {
            return Err(ToolError::new(
                ErrorCode::ConcurrentModification,
                format!(
                    "session {} changed after its re-run was confirmed; nothing was run",
                    row.id
                ),
            )
            .with_details(json!({"session_id": row.id, "reason": "session_changed"}))
            .with_recovery(
                "send the call again without a token to ask for a fresh confirmation",
                None,
            )
            .into());
        }
        let replayer = self.0.replayer().ok_or_else(|| {
            ToolError::internal("re-running calls (this server has no replayer wired)")
        })?;
        let plan = RerunPlan {
            caller: CallerContext {
                id: rerun_caller_id(&row.caller),
                scopes: cx.caller.scopes.clone(),
                only_vault: Some(row.vault.clone()),
            },
            sandbox: args.sandbox,
            trace: bytes
                .as_deref()
                .map(trace::parse)
                .unwrap_or_else(Trace::default),
            session: row,
        };
        let progress = |done: u64, total: u64| {
            cx.progress(
                done as f64,
                Some(total as f64),
                Some(&format!("re-ran call {done} of {total}")),
            );
        };
        let cancelled = || cx.cancelled();
        let calls = replayer.replay(
            &plan,
            &ReplayControl {
                progress: &progress,
                cancelled: &cancelled,
            },
        )?;
        let mut report = RerunReport::of(&plan, calls);
        report.bound(
            cx.paging
                .limits
                .page_budget()
                .saturating_sub(REPORT_RESERVE),
        );
        Ok(report)
    }
}
