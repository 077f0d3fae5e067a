//! `update_task` (spec/tools.md `tools.update-task`, `tools.update-task.confirm`, the
//! transition table `tools.update-task.transitions`; spec/floors.md
//! `floors.update-task-steps`; spec/release.md `release.update-task`; spec/drift.md
//! `drift.bind.path-tools`): the box and description of one task line, asking only when it
//! reopens a task done more than seven days ago.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_gate::ConfirmationTargets;
use tc_tools::note_write::{guard_for, not_found, note, read_as_observed};
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx, ToolError,
    ToolSpec,
};
use tc_vault::acl::AclOp;
use tc_vault::conventions::{WriteIntent, WriteKind, update_task_prior};
use tc_vault::error::VaultError;
use tc_vault::tasks::{Task, TaskStatus, line_at, parse_task_line, reopens_old_done, replace_line};
use tc_vault::vault::NoteContent;

use super::TaskStatusArg;

/// `update_task` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateTaskArgs {
    /// The note holding the task.
    #[schemars(length(min = 1, max = 4096))]
    pub path: String,
    /// The 1-based line number of the task.
    #[schemars(range(min = 1))]
    pub line: u64,
    /// The new status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskStatusArg>,
    /// The new description of the task: one line. Leave the ✅ completion date out; the tool keeps the task's own (and writes today's when it marks an undated task done).
    // r[impl tools.update-task.one-line]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[^\r\n]*$"))]
    pub text: Option<String>,
}

/// `update_task`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct UpdateTaskOutput {
    pub path: String,
    pub line: u64,
    /// The task's status after the edit.
    pub status: Option<String>,
    /// The task line as written.
    pub text: String,
    pub content_hash: String,
}

#[derive(Debug)]
pub struct UpdateTask;

/// The task on the given line and the note's text with it rewritten.
fn task_edit(
    cx: &ToolCx<'_>,
    args: &UpdateTaskArgs,
    current: &NoteContent,
) -> Result<(Task, Option<TaskStatus>, String, String), ToolError> {
    let number = usize::try_from(args.line)
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| ToolError::validation("/line", "must be a line number from 1"))?;
    let text = std::str::from_utf8(&current.bytes)
        .map_err(|e| ToolError::from(VaultError::not_utf8(args.path.as_str(), &e)))?;
    let line = line_at(text, number)
        .ok_or_else(|| ToolError::validation("/line", "the note has no such line"))?;
    let task = parse_task_line(line.text)
        .ok_or_else(|| ToolError::validation("/line", "the line is not a task line"))?;
    let status = args.status.map(TaskStatusArg::status);
    if status.is_none() && args.text.is_none() {
        return Err(ToolError::validation(
            "/status",
            "give status, text, or both",
        ));
    }
    // r[impl tools.update-task.text-date]
    let rendered = task
        .edit(
            status.unwrap_or(task.status),
            args.text.as_deref(),
            cx.today(),
        )
        .map_err(|problem| ToolError::validation("/text", problem))?;
    let new = replace_line(text, number, &rendered)
        .ok_or_else(|| ToolError::validation("/line", "the note has no such line"))?;
    Ok((task, status, rendered, new))
}

impl Tool for UpdateTask {
    type Args = UpdateTaskArgs;
    type Output = UpdateTaskOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "update_task",
            description: "Set the status and/or text of a Tasks-plugin task line (line is 1-based). Reopening a task marked done (✅ date) more than 7 days ago needs the human's confirmation; cancelling or rewriting a task keeps its ✅ date, and text is one line.",
            annotations: Annotations::writes(true, true),
            scopes: &["write:tasks"],
            changes_notes: true,
            gating: Gating {
                checks_confirmation_in_handler: true,
                ..Gating::bound_to(ConfirmationTargets::PathAcl)
            },
        }
    }

    // No conventions preflight (seed): the write gate judges inside the handler.
    fn precheck(&self, cx: &ToolCx<'_>, args: &UpdateTaskArgs) -> Result<Precheck, ToolError> {
        let path = note(&args.path)?;
        // r[impl vault.acl.declared.edits-read]
        cx.require_read(&path)?;
        let current = cx
            .vault()
            .read_if_exists(&path)?
            .ok_or_else(|| not_found(&path))?;
        let (task, status, _, _) = task_edit(cx, args, &current)?;
        // r[impl tools.update-task.confirm]
        // r[impl floors.update-task-steps]
        let needs_confirmation =
            status.is_some_and(|status| reopens_old_done(&task, status, cx.today()));
        Ok(Precheck {
            needs_confirmation,
            acl: vec![(AclOp::Read, path.clone()), (AclOp::Write, path)],
            plan: Default::default(),
        })
    }

    fn summary(
        &self,
        cx: &ToolCx<'_>,
        args: &UpdateTaskArgs,
        precheck: &Precheck,
        _state: &TargetState,
    ) -> Summary {
        let edit = note(&args.path).ok().and_then(|path| {
            let current = cx.vault().read_if_exists(&path).ok().flatten()?;
            let (task, _, rendered, _) = task_edit(cx, args, &current).ok()?;
            let text = current.text();
            let before = line_at(&text, usize::try_from(args.line).ok()?)?
                .text
                .to_owned();
            Some((task, before, rendered))
        });
        match edit {
            Some((task, before, rendered)) => Summary::new(format!(
                "reopen a task of {} (line {}) that was marked done{}{}",
                args.path,
                args.line,
                task.done_date
                    .map_or_else(String::new, |date| format!(" on {date}")),
                match task.status {
                    TaskStatus::Done => String::new(),
                    other => format!(" (now {})", other.name()),
                }
            ))
            .target(&args.path)
            .detail(format!("before: {before}"))
            .detail(format!("after:  {rendered}")),
            None => Summary::targets_only("update_task", precheck),
        }
    }

    // r[impl release.update-task]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &UpdateTaskArgs,
        precheck: &Precheck,
        state: &TargetState,
    ) -> Result<UpdateTaskOutput, HandlerFailure> {
        let path = note(&args.path)?;
        let current = read_as_observed(cx, state, &path)?.ok_or_else(|| not_found(&path))?;
        let (_, _, rendered, new) = task_edit(cx, args, &current)?;
        // The write gate: a caller without read:notes, or a note over 1 MiB, is judged as
        // writing a new note, so a rule the note already broke refuses it.
        let prior = update_task_prior(cx.caller.scopes.has("read:notes"), &current.bytes);
        cx.judge(&WriteIntent::new(
            path.clone(),
            WriteKind::Overwrite,
            new.as_bytes(),
            prior,
        ))
        .map_err(HandlerFailure::ConventionBlockedBeforeWrite)?;
        let outcome = write_confirmed(cx, precheck, &path, new.as_bytes(), &current)?;
        let task = parse_task_line(&rendered);
        Ok(UpdateTaskOutput {
            path: path.as_str().to_owned(),
            line: args.line,
            status: task.map(|t| t.status.name().to_owned()),
            text: rendered,
            content_hash: outcome.hash,
        })
    }
}

// r[impl versions.keep.confirmed]
/// Writes `bytes` over `current`, keeping `current` as a version first when the call was
/// confirmed (a reopened task); a free edit keeps nothing.
fn write_confirmed(
    cx: &ToolCx<'_>,
    precheck: &Precheck,
    path: &tc_vault::VaultPath,
    bytes: &[u8],
    current: &NoteContent,
) -> Result<tc_vault::vault::WriteOutcome, VaultError> {
    let guard = guard_for(Some(current));
    if precheck.needs_confirmation {
        Ok(cx.vault().write_keeping(path, bytes, &guard)?.outcome)
    } else {
        cx.vault().write(path, bytes, &guard)
    }
}
