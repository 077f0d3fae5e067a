//! `list_snapshots` and `read_snapshot`: what the server kept of deleted files and of the
//! content confirmed calls replaced (spec/versions.md `versions.list`, `versions.read`,
//! `versions.acl`). Restoring one is `restore_note`'s (tc-notes), which is gated.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tc_gate::cursor::{CursorClaims, CursorError, request_digest};
use tc_tools::{
    Annotations, ErrorCode, Gating, HandlerFailure, Precheck, TargetState, Tool, ToolCx, ToolError,
    ToolSpec, wire_cost,
};
use tc_vault::VaultPath;
use tc_vault::vault::SnapshotInfo;

/// The tool name, as bound into its cursors.
pub const LIST_SNAPSHOTS: &str = "list_snapshots";
/// The most snapshots one page holds.
const PAGE_ROWS: usize = 200;
/// What a page keeps free of entries: its envelope and the longest cursor.
const PAGE_RESERVE: usize = 1024;

/// One snapshot as listed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SnapshotView {
    pub snapshot_id: String,
    pub path: String,
    /// deleted | replaced
    pub kind: String,
    pub size: u64,
    /// RFC 3339 UTC.
    pub created: String,
}

impl From<&SnapshotInfo> for SnapshotView {
    fn from(info: &SnapshotInfo) -> Self {
        SnapshotView {
            snapshot_id: info.id.as_str().to_owned(),
            path: info.path.as_str().to_owned(),
            kind: info.kind.as_str().to_owned(),
            size: info.size,
            created: rfc3339(info.created_ms),
        }
    }
}

// ---------------------------------------------------------------- list_snapshots

/// `list_snapshots` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListSnapshotsArgs {
    /// Only this file's snapshots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 4096))]
    pub path: Option<String>,
    /// The previous page's next_cursor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Page size cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1024))]
    pub max_bytes: Option<u64>,
}

/// A `list_snapshots` page.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ListSnapshotsOutput {
    pub vault: String,
    pub snapshots: Vec<SnapshotView>,
    pub next_cursor: Option<String>,
}

#[derive(Debug)]
pub struct ListSnapshots;

fn cursor_error(error: CursorError) -> ToolError {
    ToolError::new(ErrorCode::InvalidInput, error.to_string())
        .with_details(json!({"reason": error.reason()}))
}

/// A page ends after this snapshot: `<created ms>:<id>`.
fn parse_position(position: &str) -> Option<(i64, String)> {
    let (ms, id) = position.split_once(':')?;
    Some((ms.parse().ok()?, id.to_owned()))
}

fn path_arg(raw: &str) -> Result<VaultPath, ToolError> {
    VaultPath::parse(raw).map_err(|e| ToolError::from(&e))
}

// r[impl versions.list]
// r[impl versions.acl]
impl Tool for ListSnapshots {
    type Args = ListSnapshotsArgs;
    type Output = ListSnapshotsOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: LIST_SNAPSHOTS,
            description: "List the snapshots kept of deleted notes and of earlier versions that confirmed edits replaced, newest first; of one path or all.",
            annotations: Annotations::READS,
            scopes: &["read:notes"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, cx: &ToolCx<'_>, args: &ListSnapshotsArgs) -> Result<Precheck, ToolError> {
        if let Some(raw) = &args.path {
            cx.require_read(&path_arg(raw)?)?;
        }
        Ok(Precheck::free())
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &ListSnapshotsArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<ListSnapshotsOutput, HandlerFailure> {
        let vault = cx.vault().id();
        let now = cx.clock.now_ms();
        let digest = request_digest(&json!({"vault": vault, "path": args.path}));
        let after = match &args.cursor {
            Some(token) => {
                let position = cx
                    .paging
                    .codec
                    .open(token, &cx.caller.id, LIST_SNAPSHOTS, &digest, now)
                    .map_err(cursor_error)?;
                Some(
                    parse_position(&position.position)
                        .ok_or_else(|| cursor_error(CursorError::Invalid))?,
                )
            }
            None => None,
        };
        let path = args.path.as_deref().map(path_arg).transpose()?;
        let mut all = cx.vault().snapshots(path.as_ref())?;
        // Newest first; what the caller may not read is left out, counts and all.
        all.reverse();
        let visible = all
            .iter()
            .filter(|info| cx.may_read(&info.path))
            .filter(|info| {
                after
                    .as_ref()
                    .is_none_or(|(ms, id)| (info.created_ms, info.id.as_str()) < (*ms, id.as_str()))
            });
        // r[impl paging.max-bytes]
        let budget = cx
            .paging
            .limits
            .lowered_to(args.max_bytes)
            .page_budget()
            .saturating_sub(PAGE_RESERVE);
        let mut used = 0usize;
        let mut snapshots = Vec::new();
        let mut last: Option<&SnapshotInfo> = None;
        let mut more = false;
        for info in visible {
            let view = SnapshotView::from(info);
            let cost = serde_json::to_vec(&view)
                .map(|bytes| wire_cost(&bytes) + 1)
                .map_err(|_| ToolError::internal("encoding a snapshot"))?;
            if snapshots.len() == PAGE_ROWS || (used + cost > budget && !snapshots.is_empty()) {
                more = true;
                break;
            }
            used += cost;
            snapshots.push(view);
            last = Some(info);
        }
        let next_cursor = match (more, last) {
            (true, Some(last)) => {
                let position = format!("{}:{}", last.created_ms, last.id.as_str());
                Some(
                    cx.paging
                        .codec
                        .seal(
                            &CursorClaims {
                                caller: &cx.caller.id,
                                tool: LIST_SNAPSHOTS,
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
        Ok(ListSnapshotsOutput {
            vault: vault.to_owned(),
            snapshots,
            next_cursor,
        })
    }
}

// ---------------------------------------------------------------- read_snapshot

/// `read_snapshot` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadSnapshotArgs {
    /// From list_snapshots.
    #[schemars(length(min = 1, max = 64))]
    pub snapshot_id: String,
}

/// `read_snapshot`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReadSnapshotOutput {
    pub snapshot_id: String,
    pub path: String,
    /// deleted | replaced
    pub kind: String,
    pub size: u64,
    /// RFC 3339 UTC.
    pub created: String,
    pub content_hash: String,
    /// Null when the bytes are not UTF-8.
    pub content: Option<String>,
}

#[derive(Debug)]
pub struct ReadSnapshot;

fn snapshot_not_found(raw: &str) -> ToolError {
    ToolError::new(
        ErrorCode::SnapshotNotFound,
        format!("no snapshot {raw:?} in this vault"),
    )
    .with_details(json!({"snapshot_id": raw}))
    .with_recovery("list_snapshots lists the snapshots there are", None)
}

/// The snapshot `raw` names, if the caller may read its path; otherwise it does not exist
/// for the caller (spec `versions.acl`).
fn visible_snapshot(cx: &ToolCx<'_>, raw: &str) -> Result<SnapshotInfo, ToolError> {
    match cx.vault().snapshot(raw) {
        Ok(info) if cx.may_read(&info.path) => Ok(info),
        Ok(_) | Err(tc_vault::error::VaultError::SnapshotNotFound { .. }) => {
            Err(snapshot_not_found(raw))
        }
        Err(e) => Err(ToolError::from(&e)),
    }
}

// r[impl versions.read]
// r[impl versions.acl]
impl Tool for ReadSnapshot {
    type Args = ReadSnapshotArgs;
    type Output = ReadSnapshotOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_snapshot",
            description: "Read one snapshot from list_snapshots: its path, kind, size, time and content (null if not text).",
            annotations: Annotations::READS,
            scopes: &["read:notes"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, cx: &ToolCx<'_>, args: &ReadSnapshotArgs) -> Result<Precheck, ToolError> {
        visible_snapshot(cx, &args.snapshot_id)?;
        Ok(Precheck::free())
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &ReadSnapshotArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<ReadSnapshotOutput, HandlerFailure> {
        let info = visible_snapshot(cx, &args.snapshot_id)?;
        let bytes = cx.vault().read_snapshot(&info)?;
        let view = SnapshotView::from(&info);
        Ok(ReadSnapshotOutput {
            snapshot_id: view.snapshot_id,
            path: view.path,
            kind: view.kind,
            size: view.size,
            created: view.created,
            content_hash: info.content_hash.clone(),
            content: String::from_utf8(bytes).ok(),
        })
    }
}

/// `ms` since the epoch as RFC 3339 UTC with milliseconds (`2026-11-30T12:00:00.000Z`).
fn rfc3339(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let of_day = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        of_day / 3600,
        (of_day % 3600) / 60,
        of_day % 60
    )
}
