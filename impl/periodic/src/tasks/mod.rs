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
use tc_tools::{Registry, RegistryBuildError, ToolError};
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

/// A paged call's cursor and budget, shared with every keyset-paged tool.
pub(crate) use tc_tools::KeysetPaging as Paging;
