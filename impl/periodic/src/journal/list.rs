//! `list_periodic_notes` (spec/periodic.md `periodic.list`, `periodic.list.today`,
//! `periodic.list.acl`): the notes under a period's folder, from the index's file list, that
//! read as dates in the period's format, by date.

use chrono::NaiveDate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_index::meta::{self, files};
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, TargetState, Tool, ToolCx, ToolError, ToolSpec,
};
use tc_vault::path::{FolderPath, VaultPath};

use super::{day_arg, local_now};
use crate::period::{note_period, period_end};
use crate::settings::{Period, period_settings};
use crate::tasks::Paging;

const LIST_PERIODIC_NOTES: &str = "list_periodic_notes";

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListPeriodicNotesArgs {
    pub period: Period,
    /// YYYY-MM-DD, inclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 10))]
    pub from: Option<String>,
    /// YYYY-MM-DD, inclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 10))]
    pub to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Page size cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1024))]
    pub max_bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PeriodicEntry {
    pub path: String,
    /// The period's first day.
    pub start: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ListPeriodicNotesOutput {
    pub vault: String,
    pub notes: Vec<PeriodicEntry>,
    pub next_cursor: Option<String>,
}

#[derive(Debug)]
pub struct ListPeriodicNotes;

/// The cursor position of an entry: its day, then its path.
fn position(entry: &PeriodicEntry) -> String {
    format!("{}/{}", entry.start, entry.path)
}

fn range(
    args: &ListPeriodicNotesArgs,
) -> Result<(Option<NaiveDate>, Option<NaiveDate>), ToolError> {
    let from = args
        .from
        .as_deref()
        .map(|d| day_arg(d, "/from"))
        .transpose()?;
    let to = args.to.as_deref().map(|d| day_arg(d, "/to")).transpose()?;
    Ok((from, to))
}

impl Tool for ListPeriodicNotes {
    type Args = ListPeriodicNotesArgs;
    type Output = ListPeriodicNotesOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: LIST_PERIODIC_NOTES,
            description: "List a period's notes (daily, weekly, …) by date, optionally from/to. Pages via cursor.",
            annotations: Annotations::READS,
            scopes: &["read:periodic"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn check(&self, args: &ListPeriodicNotesArgs) -> Result<(), ToolError> {
        range(args).map(|_| ())
    }

    fn precheck(
        &self,
        _cx: &ToolCx<'_>,
        _args: &ListPeriodicNotesArgs,
    ) -> Result<Precheck, ToolError> {
        Ok(Precheck::free())
    }

    // r[impl periodic.list]
    // r[impl periodic.list.acl]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &ListPeriodicNotesArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<ListPeriodicNotesOutput, HandlerFailure> {
        let (from, to) = range(args)?;
        let settings = period_settings(cx.vault().root().path(), args.period)?;
        let paging = Paging::open(
            cx,
            LIST_PERIODIC_NOTES,
            args,
            args.cursor.as_deref(),
            args.max_bytes,
        )?;
        let folder = if settings.folder.is_empty() {
            FolderPath::root()
        } else {
            match FolderPath::parse(&settings.folder) {
                Ok(folder) => folder,
                // A hidden or invalid folder holds no note a caller may read.
                Err(_) => {
                    return Ok(ListPeriodicNotesOutput {
                        vault: cx.vault().id().to_owned(),
                        notes: Vec::new(),
                        next_cursor: None,
                    });
                }
            }
        };
        let index = meta::fresh(cx)?;
        let today = local_now(cx).date();
        let mut found: Vec<(NaiveDate, String)> = files::notes_under(index, &folder)?
            .into_iter()
            .filter_map(|path| {
                let start = note_period(&settings, &path, today)?;
                let end = period_end(settings.period, start);
                let meets = from.is_none_or(|f| end >= f) && to.is_none_or(|t| start <= t);
                meets.then_some((start, path))
            })
            .collect();
        found.sort();
        let entries = found.into_iter().map(|(start, path)| PeriodicEntry {
            path,
            start: start.format("%Y-%m-%d").to_string(),
        });
        let budget = paging.budget();
        let mut notes: Vec<PeriodicEntry> = Vec::new();
        let mut spent = 0usize;
        for entry in entries {
            if paging
                .after
                .as_deref()
                .is_some_and(|after| position(&entry).as_str() <= after)
            {
                continue;
            }
            // Judged here, only for what could go on this page: the folder ACL looks at the
            // disk for links on the path, the costly step of a listing.
            if !VaultPath::parse(&entry.path).is_ok_and(|p| cx.may_read(&p)) {
                continue;
            }
            let cost = serde_json::to_vec(&entry)
                .map(|bytes| tc_tools::wire_cost(&bytes) + 1)
                .map_err(|_| ToolError::internal("encoding a page entry"))?;
            if spent + cost > budget
                && let Some(last) = notes.last()
            {
                let next = paging.next(cx, &position(last))?;
                return Ok(ListPeriodicNotesOutput {
                    vault: cx.vault().id().to_owned(),
                    notes,
                    next_cursor: Some(next),
                });
            }
            spent += cost;
            notes.push(entry);
        }
        Ok(ListPeriodicNotesOutput {
            vault: cx.vault().id().to_owned(),
            notes,
            next_cursor: None,
        })
    }
}
