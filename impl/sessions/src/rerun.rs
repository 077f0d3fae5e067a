//! Re-running a recorded session (spec/sessions.md `sessions.rerun.*`).
//!
//! The calls of a trace are run again, in order, as the caller `rerun:<caller>`, through
//! the same [`Pipeline`] stages as any call (schema, scopes, vault, precheck, the gate's
//! decision, the folder ACL, the handler) and the same governor. Per call a [`Verdict`]:
//!
//! - `not_captured`: the trace holds no arguments (`traceContent` was off, or they were
//!   over the cap);
//! - `redacted`: the arguments had something credential-shaped replaced, so they are no
//!   longer the call's;
//! - `skipped_changes_vault`: the tool is not read-only and the re-run is not in a sandbox;
//! - `refused_by_policy`: the call needs its own confirmation now; a re-run never clears a
//!   gate, so it is not run (and no request is raised);
//! - `runnable`: it ran, and its [`Divergence`] compares its status and error code with
//!   what was recorded.
//!
//! The server provides the [`Replayer`]: without a sandbox it runs [`replay_on`] over its
//! own pipeline; with one, over a pipeline on a copy of the vault and the cache made for
//! the run.

use std::fmt::{self, Write as _};
use std::time::Instant;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};
use tc_tools::{Approval, CallControl, CallerContext, Pipeline, ToolError, ToolOutput};

use crate::store::SessionRow;
use crate::trace::{CallStatus, Trace, TraceLine};

/// What became of one recorded call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Runnable,
    NotCaptured,
    Redacted,
    SkippedChangesVault,
    RefusedByPolicy,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Runnable => "runnable",
            Verdict::NotCaptured => "not_captured",
            Verdict::Redacted => "redacted",
            Verdict::SkippedChangesVault => "skipped_changes_vault",
            Verdict::RefusedByPolicy => "refused_by_policy",
        }
    }
}

/// How a call that ran differs from its recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Divergence {
    None,
    /// ok, error and input_required differ.
    Status,
    /// Both failed, with different codes.
    ErrorCode,
}

impl Divergence {
    pub fn as_str(self) -> &'static str {
        match self {
            Divergence::None => "none",
            Divergence::Status => "status",
            Divergence::ErrorCode => "error_code",
        }
    }
}

/// A call's outcome: its status and error code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Outcome {
    pub status: CallStatus,
    pub error_code: Option<String>,
}

/// One call of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct CallReport {
    /// The call's number in the session.
    pub n: u64,
    pub tool: String,
    pub verdict: Verdict,
    /// Null unless the call ran.
    pub divergence: Option<Divergence>,
    pub recorded: Outcome,
    /// Null unless the call ran.
    pub rerun: Option<Outcome>,
    /// How long the re-run call took; null unless it ran.
    pub duration_ms: Option<u64>,
}

/// What a re-run is asked to do.
#[derive(Debug, Clone)]
pub struct RerunPlan {
    pub session: SessionRow,
    /// `rerun:<caller>`, limited to the session's vault.
    pub caller: CallerContext,
    pub sandbox: bool,
    pub trace: Trace,
}

/// How a re-run reports progress and learns it was cancelled.
#[derive(Clone, Copy)]
pub struct ReplayControl<'a> {
    /// `(calls done, calls in all)` after each call.
    pub progress: &'a dyn Fn(u64, u64),
    pub cancelled: &'a dyn Fn() -> bool,
}

impl fmt::Debug for ReplayControl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplayControl").finish_non_exhaustive()
    }
}

impl ReplayControl<'_> {
    /// No progress reporting, never cancelled.
    pub const QUIET: ReplayControl<'static> = ReplayControl {
        progress: &|_, _| {},
        cancelled: &|| false,
    };
}

/// Runs a plan's calls: the server's implementation knows how to make a sandbox.
pub trait Replayer: Send + Sync + fmt::Debug {
    /// The report of every call of `plan.trace`, in order (fewer when cancelled).
    fn replay(
        &self,
        plan: &RerunPlan,
        control: &ReplayControl<'_>,
    ) -> Result<Vec<CallReport>, ToolError>;
}

/// The re-run caller of a session of `caller`.
pub fn rerun_caller_id(caller: &str) -> String {
    format!("rerun:{caller}")
}

// r[impl sessions.rerun.verdicts]
// r[impl sessions.rerun.never-clears-gate]
/// Runs the plan's calls over `pipeline`. `sandboxed`: the pipeline is over a copy made for
/// this run, so calls that change the vault run too. `govern` is the server's governor:
/// the bytes the result would have on the wire, or the refusal the client would get.
pub fn replay_on(
    pipeline: &Pipeline,
    plan: &RerunPlan,
    sandboxed: bool,
    govern: &dyn Fn(ToolOutput) -> Result<u64, ToolError>,
    control: &ReplayControl<'_>,
) -> Vec<CallReport> {
    let total = plan.trace.lines.len() as u64;
    let mut reports = Vec::with_capacity(plan.trace.lines.len());
    for line in &plan.trace.lines {
        if (control.cancelled)() {
            break;
        }
        reports.push(replay_one(pipeline, plan, line, sandboxed, govern));
        (control.progress)(reports.len() as u64, total);
    }
    reports
}

fn replay_one(
    pipeline: &Pipeline,
    plan: &RerunPlan,
    line: &TraceLine,
    sandboxed: bool,
    govern: &dyn Fn(ToolOutput) -> Result<u64, ToolError>,
) -> CallReport {
    let recorded = Outcome {
        status: line.status,
        error_code: line.error_code.clone(),
    };
    let report = |verdict| CallReport {
        n: line.n,
        tool: line.tool.clone(),
        verdict,
        divergence: None,
        recorded: recorded.clone(),
        rerun: None,
        duration_ms: None,
    };
    let Some(args) = &line.args else {
        return report(Verdict::NotCaptured);
    };
    if line.capped {
        return report(Verdict::NotCaptured);
    }
    if line.redacted {
        return report(Verdict::Redacted);
    }
    // session_rerun always needs confirmation: a re-run never clears that gate either (and
    // the re-run caller has no sessions of its own to re-run).
    if line.tool == crate::tools::session_rerun::SESSION_RERUN {
        return report(Verdict::RefusedByPolicy);
    }
    let changes_vault = pipeline
        .registry()
        .get(&line.tool)
        .is_some_and(|def| !def.annotations.read_only_hint);
    if changes_vault && !sandboxed {
        return report(Verdict::SkippedChangesVault);
    }
    let mut args = args.clone();
    if let Value::Object(map) = &mut args {
        map.entry("vault")
            .or_insert_with(|| json!(plan.session.vault));
    }
    let started = Instant::now();
    let outcome = match pipeline.prepare(&plan.caller, &line.tool, &args) {
        Err(error) => Err(error),
        Ok(prepared) if prepared.needs_confirmation() => {
            return report(Verdict::RefusedByPolicy);
        }
        Ok(prepared) => pipeline
            .execute(&prepared, Approval::NotNeeded, &CallControl::default())
            .and_then(govern),
    };
    let rerun = match outcome {
        Ok(_) => Outcome {
            status: CallStatus::Ok,
            error_code: None,
        },
        Err(error) => Outcome {
            status: CallStatus::Error,
            error_code: Some(error.code.as_str().to_owned()),
        },
    };
    let divergence = if rerun.status != recorded.status {
        Divergence::Status
    } else if rerun.error_code != recorded.error_code {
        Divergence::ErrorCode
    } else {
        Divergence::None
    };
    CallReport {
        divergence: Some(divergence),
        rerun: Some(rerun),
        duration_ms: Some(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)),
        ..report(Verdict::Runnable)
    }
}

/// The counts of a report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RerunSummary {
    /// Calls in the trace.
    pub total: u64,
    /// Calls re-run (before a cancellation, if any).
    pub reported: u64,
    pub runnable: u64,
    pub diverged: u64,
    pub not_captured: u64,
    pub redacted: u64,
    pub skipped_changes_vault: u64,
    pub refused_by_policy: u64,
    /// Trace lines skipped because they were torn or did not parse.
    pub unreadable_lines: u64,
    /// Calls of the session that could not be recorded.
    pub lost_calls: u64,
}

/// A re-run's report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RerunReport {
    pub session_id: String,
    pub vault: String,
    pub label: String,
    /// The caller the calls ran as.
    pub caller: String,
    pub sandbox: bool,
    /// The session was still open: its trace may have grown after the request.
    pub session_open: bool,
    /// The run was cancelled before its last call.
    pub cancelled: bool,
    pub summary: RerunSummary,
    pub calls: Vec<CallReport>,
    /// Calls left out of `calls` to keep the result under the response cap.
    pub calls_omitted: u64,
}

impl RerunReport {
    /// The report of `calls` for `plan`.
    pub fn of(plan: &RerunPlan, calls: Vec<CallReport>) -> Self {
        let mut summary = RerunSummary {
            total: plan.trace.lines.len() as u64,
            reported: calls.len() as u64,
            unreadable_lines: (plan.trace.torn + plan.trace.unreadable) as u64,
            lost_calls: plan.session.lost_count,
            ..RerunSummary::default()
        };
        for call in &calls {
            match call.verdict {
                Verdict::Runnable => summary.runnable += 1,
                Verdict::NotCaptured => summary.not_captured += 1,
                Verdict::Redacted => summary.redacted += 1,
                Verdict::SkippedChangesVault => summary.skipped_changes_vault += 1,
                Verdict::RefusedByPolicy => summary.refused_by_policy += 1,
            }
            if matches!(
                call.divergence,
                Some(Divergence::Status | Divergence::ErrorCode)
            ) {
                summary.diverged += 1;
            }
        }
        RerunReport {
            session_id: plan.session.id.clone(),
            vault: plan.session.vault.clone(),
            label: plan.session.label.clone(),
            caller: plan.caller.id.clone(),
            sandbox: plan.sandbox,
            session_open: plan.session.is_open(),
            cancelled: calls.len() < plan.trace.lines.len(),
            summary,
            calls,
            calls_omitted: 0,
        }
    }

    // r[impl sessions.rerun.exit-codes]
    /// `obsidian-tc rerun`'s exit status: 4 when no call could run, else 3 when one
    /// diverged, else 0.
    pub fn exit_code(&self) -> u8 {
        if self.summary.runnable == 0 {
            4
        } else if self.summary.diverged > 0 {
            3
        } else {
            0
        }
    }

    /// Keeps the first calls whose JSON fits in `budget` bytes (at least one), counting
    /// the rest in `calls_omitted`.
    pub fn bound(&mut self, budget: usize) {
        let mut used = 0usize;
        let mut keep = 0usize;
        for call in &self.calls {
            let cost = serde_json::to_vec(call).map_or(usize::MAX, |b| tc_tools::wire_cost(&b) + 1);
            if keep > 0 && used.saturating_add(cost) > budget {
                break;
            }
            used = used.saturating_add(cost);
            keep += 1;
        }
        self.calls_omitted += (self.calls.len() - keep) as u64;
        self.calls.truncate(keep);
    }

    /// The report for a person: one line per call, then a summary line.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "session {} on vault {}{} re-run as {}{}",
            self.session_id,
            self.vault,
            if self.label.is_empty() {
                String::new()
            } else {
                format!(" ({})", tc_tools::escape_for_terminal(&self.label))
            },
            tc_tools::escape_for_terminal(&self.caller),
            if self.sandbox { " in a sandbox" } else { "" }
        );
        for call in &self.calls {
            let recorded = outcome_text(&call.recorded);
            let detail = match (&call.rerun, call.divergence) {
                (Some(rerun), Some(divergence)) => format!(
                    "divergence {} (recorded {recorded}, now {})",
                    divergence.as_str(),
                    outcome_text(rerun)
                ),
                _ => format!("recorded {recorded}"),
            };
            let _ = writeln!(
                out,
                "{:>4}  {:<20} {:<22} {detail}",
                call.n,
                tc_tools::escape_for_terminal(&call.tool),
                call.verdict.as_str()
            );
        }
        let s = &self.summary;
        let _ = write!(
            out,
            "{} call(s): {} run, {} diverged, {} not captured, {} redacted, {} skipped (change the vault), {} refused by policy",
            s.total,
            s.runnable,
            s.diverged,
            s.not_captured,
            s.redacted,
            s.skipped_changes_vault,
            s.refused_by_policy
        );
        if s.unreadable_lines > 0 {
            let _ = write!(
                out,
                "; {} unreadable trace line(s) skipped",
                s.unreadable_lines
            );
        }
        if s.lost_calls > 0 {
            let _ = write!(out, "; {} call(s) were not recorded", s.lost_calls);
        }
        if self.session_open {
            out.push_str("; the session is still open");
        }
        if self.cancelled {
            out.push_str("; cancelled before the last call");
        }
        out.push('\n');
        out
    }
}

fn outcome_text(outcome: &Outcome) -> String {
    match &outcome.error_code {
        Some(code) => format!("{} {code}", outcome.status.as_str()),
        None => outcome.status.as_str().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(n: u64, verdict: Verdict, divergence: Option<Divergence>) -> CallReport {
        CallReport {
            n,
            tool: "read_notes".into(),
            verdict,
            divergence,
            recorded: Outcome {
                status: CallStatus::Ok,
                error_code: None,
            },
            rerun: None,
            duration_ms: None,
        }
    }

    fn plan(lines: usize) -> RerunPlan {
        let line = TraceLine {
            n: 1,
            time: String::new(),
            time_ms: 0,
            tool: "read_notes".into(),
            args_hash: String::new(),
            status: CallStatus::Ok,
            error_code: None,
            duration_ms: 0,
            result_bytes: 0,
            args: None,
            redacted: false,
            capped: false,
        };
        RerunPlan {
            session: SessionRow {
                id: "s1".into(),
                vault: "main".into(),
                vault_root: "/vault".into(),
                caller: "stdio".into(),
                scopes: "*".into(),
                label: String::new(),
                started_ms: 0,
                ended_ms: Some(1),
                call_count: lines as u64,
                lost_count: 0,
                trace_file: "s1.jsonl".into(),
            },
            caller: CallerContext::new("rerun:stdio", tc_vault::acl::Scopes::all()),
            sandbox: false,
            trace: Trace {
                lines: vec![line; lines],
                ..Trace::default()
            },
        }
    }

    // r[verify sessions.rerun.exit-codes]
    #[test]
    fn exit_codes_follow_the_report() {
        let none = RerunReport::of(&plan(1), vec![call(1, Verdict::NotCaptured, None)]);
        assert_eq!(none.exit_code(), 4);
        let empty = RerunReport::of(&plan(0), vec![]);
        assert_eq!(empty.exit_code(), 4);
        let same = RerunReport::of(
            &plan(2),
            vec![
                call(1, Verdict::Runnable, Some(Divergence::None)),
                call(2, Verdict::SkippedChangesVault, None),
            ],
        );
        assert_eq!(same.exit_code(), 0);
        let diverged = RerunReport::of(
            &plan(2),
            vec![
                call(1, Verdict::Runnable, Some(Divergence::None)),
                call(2, Verdict::Runnable, Some(Divergence::ErrorCode)),
            ],
        );
        assert_eq!(diverged.exit_code(), 3);
        assert_eq!(diverged.summary.diverged, 1);
        let text = diverged.render_text();
        assert_eq!(text.lines().count(), 4, "{text}");
        assert!(text.ends_with("refused by policy\n"), "{text}");
    }

    #[test]
    fn a_bounded_report_keeps_the_first_calls_and_counts_the_rest() {
        let calls: Vec<_> = (1..=100)
            .map(|n| call(n, Verdict::Runnable, Some(Divergence::None)))
            .collect();
        let mut report = RerunReport::of(&plan(100), calls);
        report.bound(2_000);
        assert!(report.calls.len() < 100 && !report.calls.is_empty());
        assert_eq!(report.calls.len() as u64 + report.calls_omitted, 100);
        assert_eq!(report.summary.runnable, 100, "the counts cover every call");
    }
}
