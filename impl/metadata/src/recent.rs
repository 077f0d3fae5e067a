//! `recent_changes` (spec/metadata.md `## Recent changes`): the notes newest first by
//! modification time, from the stamps the index holds ([`tc_index::meta::recent`]), never
//! from a walk of the vault; the folder ACL judged on every note before it is shown.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_index::meta::{self, recent as q};
use tc_index::search::filters::time_arg;
use tc_tools::{HandlerFailure, Precheck, TargetState, Tool, ToolCx, ToolError, ToolSpec};

use crate::properties::{Readable, reads};
use crate::tags::{Paging, folder_of};

const RECENT_CHANGES: &str = "recent_changes";

fn twenty() -> u32 {
    20
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecentChangesArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub folder: Option<String>,
    /// RFC 3339 or YYYY-MM-DD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub since: Option<String>,
    #[serde(default = "twenty")]
    #[schemars(range(min = 1, max = 100))]
    pub limit: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub cursor: Option<String>,
    /// Page size cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1024))]
    pub max_bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RecentNote {
    pub path: String,
    /// RFC 3339, UTC.
    pub modified: String,
    pub size: u64,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RecentChangesOutput {
    pub vault: String,
    pub notes: Vec<RecentNote>,
    pub next_cursor: Option<String>,
}

#[derive(Debug)]
pub struct RecentChanges;

/// A page's position: the last note's time and path.
fn position(mtime_ns: i64, path: &str) -> String {
    format!("{mtime_ns} {path}")
}

fn resume(position: &str) -> Option<(i64, &str)> {
    let (ns, path) = position.split_once(' ')?;
    Some((ns.parse().ok()?, path))
}

impl Tool for RecentChanges {
    type Args = RecentChangesArgs;
    type Output = RecentChangesOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        reads(
            RECENT_CHANGES,
            "Notes by modification time, newest first; optionally since a time and under a folder. Pages via cursor.",
        )
    }

    fn check(&self, args: &RecentChangesArgs) -> Result<(), ToolError> {
        time_arg(args.since.as_deref(), "/since").map(|_| ())
    }

    fn precheck(&self, _cx: &ToolCx<'_>, _args: &RecentChangesArgs) -> Result<Precheck, ToolError> {
        Ok(Precheck::free())
    }

    // r[impl metadata.recent-changes]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &RecentChangesArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<RecentChangesOutput, HandlerFailure> {
        let since = time_arg(args.since.as_deref(), "/since")?.unwrap_or(i64::MIN);
        let folder = folder_of(args.folder.as_deref())?;
        let paging = Paging::open(
            cx,
            RECENT_CHANGES,
            args,
            args.cursor.as_deref(),
            args.max_bytes,
        )?;
        let mut after: Option<(i64, String)> = match paging.after.as_deref() {
            Some(token) => {
                let (ns, path) = resume(token)
                    .ok_or_else(|| ToolError::internal("reading the cursor's position"))?;
                Some((ns, path.to_owned()))
            }
            None => None,
        };
        let index = meta::fresh(cx)?;
        let limit = args.limit.clamp(1, 100) as usize;
        let budget = paging.budget();
        let mut readable = Readable::new(cx);
        let mut notes: Vec<RecentNote> = Vec::new();
        let mut last: Option<(i64, String)> = None;
        let mut spent = 0usize;
        let mut more = false;
        'rows: loop {
            let rows = q::changed_since(
                index,
                &folder,
                since,
                after.as_ref().map(|(ns, p)| (*ns, p.as_str())),
                limit + 1,
            )?;
            let exhausted = rows.len() <= limit;
            for row in rows {
                after = Some((row.mtime_ns, row.path.clone()));
                if !readable.check(&row.path) {
                    continue;
                }
                let entry = RecentNote {
                    modified: q::format_time(row.mtime_ns),
                    size: row.size,
                    path: row.path,
                };
                let cost = serde_json::to_vec(&entry)
                    .map(|bytes| tc_tools::wire_cost(&bytes) + 1)
                    .map_err(|_| ToolError::internal("encoding a page entry"))?;
                if notes.len() >= limit || (spent + cost > budget && !notes.is_empty()) {
                    more = true;
                    break 'rows;
                }
                spent += cost;
                last = Some((row.mtime_ns, entry.path.clone()));
                notes.push(entry);
            }
            if exhausted {
                break;
            }
        }
        let next_cursor = match last {
            Some((ns, path)) if more => Some(paging.next(cx, &position(ns, &path))?),
            _ => None,
        };
        Ok(RecentChangesOutput {
            vault: cx.vault().id().to_owned(),
            notes,
            next_cursor,
        })
    }
}
