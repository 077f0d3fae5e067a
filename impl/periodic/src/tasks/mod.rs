//! The task tools (spec/tasks.md; `update_task` in spec/tools.md `tools.update-task.*`):
//! `list_tasks` answers from the index's task table, `add_task` adds one line through the
//! lossless section editor, `update_task` edits one line's box and description.
//!
//! The family `tasks` (spec/tools.md `tools.families`).

mod add;
mod list;
mod update;

pub use add::{AddTask, AddTaskArgs, AddTaskOutput, PriorityArg};
pub use list::{ListTasks, ListTasksArgs, ListTasksOutput, TaskEntry};
pub use update::{UpdateTask, UpdateTaskArgs, UpdateTaskOutput};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tc_gate::cursor::{CursorClaims, CursorError, RequestDigest, request_digest};
use tc_tools::{ErrorCode, Registry, RegistryBuildError, ToolCx, ToolError};
use tc_vault::tasks::{Date, TaskStatus};

// A task's status, as `update_task` and `list_tasks` name it (a plain comment: no
// description in the schemas, which say it by the enum).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatusArg {
    Todo,
    Done,
    InProgress,
    Cancelled,
}

impl TaskStatusArg {
    pub fn status(self) -> TaskStatus {
        match self {
            TaskStatusArg::Todo => TaskStatus::Todo,
            TaskStatusArg::Done => TaskStatus::Done,
            TaskStatusArg::InProgress => TaskStatus::InProgress,
            TaskStatusArg::Cancelled => TaskStatus::Cancelled,
        }
    }
}

/// A `YYYY-MM-DD` argument, or `validation_error` naming it.
pub(crate) fn date_arg(raw: &str, pointer: &str) -> Result<Date, ToolError> {
    Date::parse(raw.trim())
        .ok_or_else(|| ToolError::validation(pointer, "must be a date YYYY-MM-DD"))
}

/// Adds the family's tools to `registry`, in the order `tools/list` shows them.
pub fn register(registry: &mut Registry) -> Result<(), RegistryBuildError> {
    registry.add(ListTasks)?;
    registry.add(AddTask)?;
    registry.add(UpdateTask)?;
    Ok(())
}

/// The family `tasks` (spec/tools.md `tools.families`).
#[derive(Debug, Clone, Copy, Default)]
pub struct TasksFamily;

impl tc_tools::Family for TasksFamily {
    fn name(&self) -> &'static str {
        "tasks"
    }

    fn register(
        &self,
        registry: &mut Registry,
        _setup: &tc_tools::SubsystemSetup<'_>,
    ) -> Result<(), RegistryBuildError> {
        register(registry)
    }
}

/// What a page's envelope (vault, next_cursor, braces) may cost at most.
const ENVELOPE_BYTES: usize = 1_024;

fn cursor_error(error: CursorError) -> ToolError {
    ToolError::new(ErrorCode::InvalidInput, error.to_string())
        .detail("reason", serde_json::json!(error.reason()))
}

/// A paged call's cursor: the request it is bound to and where the page starts.
pub(crate) struct Paging {
    tool: &'static str,
    digest: RequestDigest,
    now: i64,
    /// The last key of the previous page (the page starts after it).
    pub after: Option<String>,
    page: u64,
}

impl Paging {
    /// Opens `cursor` (if any) for `tool` and `args` (the validated arguments).
    pub fn open<A: Serialize>(
        cx: &ToolCx<'_>,
        tool: &'static str,
        args: &A,
        cursor: Option<&str>,
    ) -> Result<Paging, ToolError> {
        let canonical: Value =
            serde_json::to_value(args).map_err(|_| ToolError::internal("encoding the request"))?;
        let digest = request_digest(&canonical);
        let now = cx.clock.now_ms();
        let (after, page) = match cursor {
            Some(token) => {
                let resume = cx
                    .paging
                    .codec
                    .open(token, &cx.caller.id, tool, &digest, now)
                    .map_err(cursor_error)?;
                (Some(resume.position), resume.page.saturating_add(1))
            }
            None => (None, 0),
        };
        Ok(Paging {
            tool,
            digest,
            now,
            after,
            page,
        })
    }

    /// The page budget for the entries (the envelope taken off).
    pub fn budget(cx: &ToolCx<'_>) -> usize {
        cx.paging
            .limits
            .page_budget()
            .saturating_sub(ENVELOPE_BYTES)
    }

    /// The cursor resuming after `last`.
    pub fn next(&self, cx: &ToolCx<'_>, last: &str) -> Result<String, ToolError> {
        cx.paging
            .codec
            .seal(
                &CursorClaims {
                    caller: &cx.caller.id,
                    tool: self.tool,
                    request_digest: &self.digest,
                    position: last,
                    page: self.page,
                },
                self.now,
            )
            .map_err(|_| ToolError::internal("sealing the cursor"))
    }
}
