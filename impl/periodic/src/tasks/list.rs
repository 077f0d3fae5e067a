//! `list_tasks` (spec/tasks.md `tasks.list`, `tasks.list.acl`, `tasks.list.dates`): task
//! lines from the index's task table, never from a walk of the vault.
//!
//! The rows come in `(path, line)` order in batches; each path is judged by the folder ACL
//! once, and a task of a note the caller may not read is dropped before the page is cut, so
//! neither the page nor its cursor says anything of it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_index::meta::{self, tasks as q};
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, TargetState, Tool, ToolCx, ToolError, ToolSpec,
};
use tc_vault::path::{FolderPath, VaultPath};

use super::{Paging, TaskStatusArg, date_arg};

const LIST_TASKS: &str = "list_tasks";
/// How many rows one query reads.
const BATCH: usize = 256;

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTasksArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub folder: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskStatusArg>,
    /// YYYY-MM-DD, inclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 10))]
    pub due_before: Option<String>,
    /// YYYY-MM-DD, inclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 10))]
    pub due_after: Option<String>,
    /// On the line; nested tags match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub tag: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub cursor: Option<String>,
    /// Page size cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1024))]
    pub max_bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TaskEntry {
    pub path: String,
    pub line: u64,
    pub status: String,
    /// The box character.
    pub marker: String,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub due: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduled: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub done: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancelled: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recurrence: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ListTasksOutput {
    pub vault: String,
    pub tasks: Vec<TaskEntry>,
    pub next_cursor: Option<String>,
}

#[derive(Debug)]
pub struct ListTasks;

/// A cursor position: the last task's line and path.
fn position(path: &str, line: u64) -> String {
    format!("{line}/{path}")
}

fn parse_position(raw: &str) -> Option<(&str, u64)> {
    let (line, path) = raw.split_once('/')?;
    Some((path, line.parse().ok()?))
}

// r[impl tasks.list.dates]
/// The filter the arguments ask for.
fn filter_of(args: &ListTasksArgs) -> Result<q::TaskFilter, ToolError> {
    let folder = match args.folder.as_deref() {
        Some(folder) => FolderPath::parse(folder)?,
        None => FolderPath::root(),
    };
    let tag = match args.tag.as_deref() {
        Some(raw) => {
            let tag = raw.trim().trim_start_matches('#').trim_end_matches('/');
            if tag.is_empty() {
                return Err(ToolError::validation("/tag", "the tag is empty"));
            }
            Some(tag.to_lowercase())
        }
        None => None,
    };
    let date = |raw: Option<&str>, pointer: &str| {
        raw.map(|d| date_arg(d, pointer).map(|d| d.to_string()))
            .transpose()
    };
    Ok(q::TaskFilter {
        prefix: (!folder.is_root()).then(|| format!("{}/", folder.as_str())),
        status: args.status.map(|s| s.status().name().to_owned()),
        due_before: date(args.due_before.as_deref(), "/due_before")?,
        due_after: date(args.due_after.as_deref(), "/due_after")?,
        tag,
    })
}

fn entry(row: q::TaskRow) -> TaskEntry {
    TaskEntry {
        path: row.path,
        line: row.line,
        status: row.status,
        marker: row.marker,
        text: row.text,
        due: row.due,
        scheduled: row.scheduled,
        start: row.start,
        done: row.done,
        cancelled: row.cancelled,
        priority: row.priority,
        recurrence: row.recurrence,
        tags: row.tags,
    }
}

impl Tool for ListTasks {
    type Args = ListTasksArgs;
    type Output = ListTasksOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: LIST_TASKS,
            description: "List Tasks-plugin task lines (status, dates, priority, tags) by folder, status, due range or tag. Pages via cursor.",
            annotations: Annotations::READS,
            scopes: &["read:tasks"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn check(&self, args: &ListTasksArgs) -> Result<(), ToolError> {
        filter_of(args).map(|_| ())
    }

    fn precheck(&self, _cx: &ToolCx<'_>, _args: &ListTasksArgs) -> Result<Precheck, ToolError> {
        Ok(Precheck::free())
    }

    // r[impl tasks.list]
    // r[impl tasks.list.acl]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &ListTasksArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<ListTasksOutput, HandlerFailure> {
        let filter = filter_of(args)?;
        let paging = Paging::open(cx, LIST_TASKS, args, args.cursor.as_deref(), args.max_bytes)?;
        let mut after: Option<(String, u64)> = match paging.after.as_deref() {
            Some(raw) => Some(
                parse_position(raw)
                    .map(|(path, line)| (path.to_owned(), line))
                    .ok_or_else(|| ToolError::internal("reading the cursor's position"))?,
            ),
            None => None,
        };
        let index = meta::fresh(cx)?;
        let acl = &cx.binding.acl;
        let root = cx.vault().root();
        let scopes = &cx.caller.scopes;
        let budget = paging.budget();
        let mut tasks = Vec::new();
        let mut spent = 0usize;
        // The last path judged, and whether the caller may read it.
        let mut judged: Option<(String, bool)> = None;
        loop {
            let rows = q::tasks(
                index,
                &filter,
                after.as_ref().map(|(p, l)| (p.as_str(), *l)),
                BATCH,
            )?;
            let exhausted = rows.len() < BATCH;
            for row in rows {
                after = Some((row.path.clone(), row.line));
                let readable = match &judged {
                    Some((path, readable)) if *path == row.path => *readable,
                    _ => {
                        let readable = VaultPath::parse(&row.path)
                            .is_ok_and(|p| acl.can_read_at(root, &p, scopes));
                        judged = Some((row.path.clone(), readable));
                        readable
                    }
                };
                if !readable {
                    continue;
                }
                let entry = entry(row);
                let cost = serde_json::to_vec(&entry)
                    .map(|bytes| tc_tools::wire_cost(&bytes) + 1)
                    .map_err(|_| ToolError::internal("encoding a page entry"))?;
                if spent + cost > budget && !tasks.is_empty() {
                    let last: &TaskEntry = tasks.last().expect("the page is not empty");
                    let next = paging.next(cx, &position(&last.path, last.line))?;
                    return Ok(ListTasksOutput {
                        vault: cx.vault().id().to_owned(),
                        tasks,
                        next_cursor: Some(next),
                    });
                }
                spent += cost;
                tasks.push(entry);
            }
            if exhausted {
                break;
            }
        }
        Ok(ListTasksOutput {
            vault: cx.vault().id().to_owned(),
            tasks,
            next_cursor: None,
        })
    }
}
