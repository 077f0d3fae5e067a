//! Captures (spec/tools.md; spec/index.md `captures.*`): `capture_note` stages text in a queue
//! in cache.db without touching the vault, `list_captures` pages the queue, and
//! `commit_capture` writes one capture as a note.
//!
//! `commit_capture` is `write_note` (mode `overwrite`) of the capture's content at the
//! path: it runs tc-notes' own `WriteNote` steps (precheck with the conventions preflight
//! and the confirmation rule, the `pathAcl` state, the summary with its diff, the guarded
//! write), so it gates, binds and refuses exactly as `write_note` would for that path, and
//! nothing of the write logic is copied. That is why tc-index depends on tc-notes. The
//! capture is marked committed only after the write succeeded.

use std::sync::Arc;

use rusqlite::OptionalExtension;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_gate::ConfirmationTargets;
use tc_gate::cursor::{CursorClaims, request_digest};
use tc_tools::note_write::{WriteMode, WriteNote, WriteNoteArgs, WriteNoteOutput};
use tc_tools::{
    Annotations, ErrorCode, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx,
    ToolError, ToolSpec, wire_cost,
};

use crate::index::VaultIndex;
use crate::search::index_of;

/// The most characters one capture holds: any capture fits one `list_captures` page under
/// the smallest cap the config accepts, whatever JSON escaping does to it.
pub const MAX_CAPTURE_CHARS: usize = 8_192;
const PAGE_ENTRIES: usize = 50;
const ENVELOPE_BYTES: usize = 1_024;
const LIST_CAPTURES: &str = "list_captures";

/// `capture_note` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CaptureNoteArgs {
    /// The text to stage.
    #[schemars(length(min = 1, max = 8192))]
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 50))]
    pub tags: Vec<String>,
    /// Where the text comes from (a URL, an app, a person).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2048))]
    pub source: Option<String>,
    /// The note path it should become (commit_capture's default path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub target_path_hint: Option<String>,
}

/// One staged capture.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CaptureEntry {
    pub capture_id: i64,
    pub content: String,
    pub tags: Vec<String>,
    pub source: Option<String>,
    pub target_path_hint: Option<String>,
    /// `pending` or `committed`.
    pub status: String,
    pub created_ms: i64,
    /// The note it was committed as.
    pub committed_path: Option<String>,
}

/// `capture_note`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CaptureNoteOutput {
    pub capture_id: i64,
    pub status: String,
}

#[derive(Debug)]
pub struct CaptureNote;

fn db_error(_: rusqlite::Error) -> ToolError {
    ToolError::internal("reading or writing the capture queue")
}

// r[impl captures.stage]
impl Tool for CaptureNote {
    type Args = CaptureNoteArgs;
    type Output = CaptureNoteOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "capture_note",
            description: "Stage text (with tags, a source and a target_path_hint) in the vault's capture queue, without touching the vault; commit_capture writes it as a note later.",
            annotations: Annotations::writes(false, false),
            scopes: &["write:capture"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn check(&self, args: &CaptureNoteArgs) -> Result<(), ToolError> {
        if args.content.chars().count() > MAX_CAPTURE_CHARS {
            return Err(ToolError::validation(
                "/content",
                format!("is longer than {MAX_CAPTURE_CHARS} characters"),
            ));
        }
        Ok(())
    }

    fn precheck(&self, cx: &ToolCx<'_>, _args: &CaptureNoteArgs) -> Result<Precheck, ToolError> {
        index_of(cx)?;
        Ok(Precheck::free())
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &CaptureNoteArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<CaptureNoteOutput, HandlerFailure> {
        let index = index_of(cx)?;
        let conn = index.conn();
        conn.execute(
            "INSERT INTO captures (vault, content, tags, source, target_path_hint, created_ms, status)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'pending')",
            rusqlite::params![
                index.vault_id(),
                args.content,
                serde_json::json!(args.tags).to_string(),
                args.source,
                args.target_path_hint,
                cx.clock.now_ms(),
            ],
        )
        .map_err(db_error)?;
        Ok(CaptureNoteOutput {
            capture_id: conn.last_insert_rowid(),
            status: "pending".to_owned(),
        })
    }
}

/// Which captures `list_captures` shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CaptureStatus {
    #[default]
    Pending,
    Committed,
    All,
}

/// `list_captures` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListCapturesArgs {
    #[serde(default)]
    pub status: CaptureStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 8192))]
    pub cursor: Option<String>,
    /// Page size cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1024))]
    pub max_bytes: Option<u64>,
}

/// `list_captures`' result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ListCapturesOutput {
    pub vault: String,
    pub captures: Vec<CaptureEntry>,
    /// Cursor for the next page; null at the end.
    pub next_cursor: Option<String>,
}

fn entry_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<CaptureEntry> {
    let tags: String = row.get(2)?;
    Ok(CaptureEntry {
        capture_id: row.get(0)?,
        content: row.get(1)?,
        tags: serde_json::from_str(&tags).unwrap_or_default(),
        source: row.get(3)?,
        target_path_hint: row.get(4)?,
        status: row.get(5)?,
        created_ms: row.get(6)?,
        committed_path: row.get(7)?,
    })
}

const CAPTURE_COLUMNS: &str =
    "id, content, tags, source, target_path_hint, status, created_ms, committed_path";

fn capture(index: &VaultIndex, id: i64) -> Result<Option<CaptureEntry>, ToolError> {
    index
        .conn()
        .query_row(
            &format!("SELECT {CAPTURE_COLUMNS} FROM captures WHERE vault = ?1 AND id = ?2"),
            rusqlite::params![index.vault_id(), id],
            entry_of,
        )
        .optional()
        .map_err(db_error)
}

#[derive(Debug)]
pub struct ListCaptures;

// r[impl captures.list]
impl Tool for ListCaptures {
    type Args = ListCapturesArgs;
    type Output = ListCapturesOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: LIST_CAPTURES,
            description: "List the vault's staged captures (status pending by default, committed, or all), oldest first; pages via cursor = next_cursor.",
            annotations: Annotations::READS,
            scopes: &["read:capture"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, cx: &ToolCx<'_>, _args: &ListCapturesArgs) -> Result<Precheck, ToolError> {
        index_of(cx)?;
        Ok(Precheck::free())
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &ListCapturesArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<ListCapturesOutput, HandlerFailure> {
        let index = index_of(cx)?;
        let mut canonical =
            serde_json::to_value(args).map_err(|_| ToolError::internal("encoding the request"))?;
        // r[impl paging.max-bytes]
        // max_bytes is not part of the request a cursor is bound to: a walk may change it.
        if let Some(request) = canonical.as_object_mut() {
            request.remove("max_bytes");
        }
        let digest = request_digest(&canonical);
        let now = cx.clock.now_ms();
        let (after, page) = match &args.cursor {
            Some(token) => {
                let resume = cx
                    .paging
                    .codec
                    .open(token, &cx.caller.id, LIST_CAPTURES, &digest, now)
                    .map_err(|e| {
                        ToolError::new(ErrorCode::InvalidInput, e.to_string())
                            .detail("reason", serde_json::json!(e.reason()))
                    })?;
                let after = resume.position.parse::<i64>().map_err(|_| {
                    ToolError::new(ErrorCode::InvalidInput, "the cursor is not valid")
                        .detail("reason", serde_json::json!("invalid"))
                })?;
                (after, resume.page.saturating_add(1))
            }
            None => (0, 0),
        };
        let status = match args.status {
            CaptureStatus::Pending => Some("pending"),
            CaptureStatus::Committed => Some("committed"),
            CaptureStatus::All => None,
        };
        let mut captures = Vec::new();
        let mut more = false;
        {
            let conn = index.conn();
            let mut stmt = conn
                .prepare_cached(&format!(
                    "SELECT {CAPTURE_COLUMNS} FROM captures
                     WHERE vault = ?1 AND id > ?2 AND (?3 IS NULL OR status = ?3)
                     ORDER BY id"
                ))
                .map_err(db_error)?;
            let rows = stmt
                // No LIMIT: rows are stepped through lazily until the page is full, and
                // some are left out below, so a fixed LIMIT could end a page early.
                .query_map(rusqlite::params![index.vault_id(), after, status], entry_of)
                .map_err(db_error)?;
            let budget = cx
                .paging
                .limits
                .lowered_to(args.max_bytes)
                .page_budget()
                .saturating_sub(ENVELOPE_BYTES);
            let mut spent = 0;
            for row in rows {
                let entry = row.map_err(db_error)?;
                // r[impl captures.list.readable]
                // A committed capture's content is the note's (as committed): left out,
                // as a listing leaves out a note, for a caller that may not read it.
                let unreadable = entry
                    .committed_path
                    .as_deref()
                    .map(tc_vault::path::VaultPath::parse_note)
                    .is_some_and(|path| path.map_or(true, |path| !cx.may_read(&path)));
                if unreadable {
                    continue;
                }
                let cost = serde_json::to_vec(&entry)
                    .map(|b| wire_cost(&b) + 1)
                    .map_err(|_| ToolError::internal("encoding a capture"))?;
                if captures.len() >= PAGE_ENTRIES || (spent + cost > budget && !captures.is_empty())
                {
                    more = true;
                    break;
                }
                spent += cost;
                captures.push(entry);
            }
        }
        let next_cursor = match (more, captures.last()) {
            (true, Some(last)) => Some(
                cx.paging
                    .codec
                    .seal(
                        &CursorClaims {
                            caller: &cx.caller.id,
                            tool: LIST_CAPTURES,
                            request_digest: &digest,
                            position: &last.capture_id.to_string(),
                            page,
                        },
                        now,
                    )
                    .map_err(|_| ToolError::internal("sealing the cursor"))?,
            ),
            _ => None,
        };
        Ok(ListCapturesOutput {
            vault: cx.vault().id().to_owned(),
            captures,
            next_cursor,
        })
    }
}

/// `commit_capture` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommitCaptureArgs {
    pub capture_id: i64,
    /// The note to write, ending in .md; the capture's target_path_hint when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 4096))]
    pub path: Option<String>,
}

/// `commit_capture`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CommitCaptureOutput {
    pub capture_id: i64,
    pub status: String,
    pub note: WriteNoteOutput,
}

#[derive(Debug)]
pub struct CommitCapture;

/// The `write_note` call a commit is.
fn as_write(cx: &ToolCx<'_>, args: &CommitCaptureArgs) -> Result<WriteNoteArgs, ToolError> {
    let index = index_of(cx)?;
    let entry = capture(index, args.capture_id)?.ok_or_else(|| {
        ToolError::new(
            ErrorCode::CaptureNotFound,
            format!(
                "vault {} has no capture {}",
                index.vault_id(),
                args.capture_id
            ),
        )
        .detail("capture_id", serde_json::json!(args.capture_id))
    })?;
    if entry.status == "committed" {
        return Err(ToolError::new(
            ErrorCode::InvalidInput,
            format!(
                "capture {} was committed already, as {}",
                entry.capture_id,
                entry.committed_path.as_deref().unwrap_or("a note")
            ),
        ));
    }
    let path = args
        .path
        .clone()
        .or(entry.target_path_hint)
        .ok_or_else(|| {
            ToolError::validation("/path", "is required: the capture has no target_path_hint")
        })?;
    Ok(WriteNoteArgs {
        path,
        content: entry.content,
        mode: WriteMode::Overwrite,
        prev_hash: None,
    })
}

/// What commit_capture's precheck hands on: the write it is, and write_note's own precheck
/// of it.
type CaptureWrite = (WriteNoteArgs, Precheck<<WriteNote as Tool>::Plan>);

// r[impl captures.commit]
impl Tool for CommitCapture {
    type Args = CommitCaptureArgs;
    type Output = CommitCaptureOutput;
    type Plan = CaptureWrite;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        let write = WriteNote.spec();
        ToolSpec {
            name: "commit_capture",
            description: "Write a staged capture as a note at path (its target_path_hint by default), exactly as write_note would (overwriting a note that has content needs the human's confirmation), and mark it committed.",
            annotations: write.annotations,
            scopes: &["write:capture", "write:notes"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::PathAcl),
        }
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &CommitCaptureArgs,
    ) -> Result<Precheck<CaptureWrite>, ToolError> {
        let write = as_write(cx, args)?;
        let inner = WriteNote.precheck(cx, &write)?;
        Ok(Precheck {
            needs_confirmation: inner.needs_confirmation,
            acl: inner.acl.clone(),
            plan: Arc::new((write, inner)),
        })
    }

    fn state(
        &self,
        cx: &ToolCx<'_>,
        _args: &CommitCaptureArgs,
        precheck: &Precheck<CaptureWrite>,
    ) -> Result<TargetState, ToolError> {
        let (write, inner) = &*precheck.plan;
        WriteNote.state(cx, write, inner)
    }

    fn summary(
        &self,
        cx: &ToolCx<'_>,
        args: &CommitCaptureArgs,
        precheck: &Precheck<CaptureWrite>,
        state: &TargetState,
    ) -> Summary {
        let (write, inner) = &*precheck.plan;
        WriteNote
            .summary(cx, write, inner, state)
            .detail(format!("from capture {}", args.capture_id))
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &CommitCaptureArgs,
        precheck: &Precheck<CaptureWrite>,
        state: &TargetState,
    ) -> Result<CommitCaptureOutput, HandlerFailure> {
        let (write, inner) = &*precheck.plan;
        let note = WriteNote.run(cx, write, inner, state)?;
        let index = index_of(cx)?;
        let marked = index
            .conn()
            .execute(
                "UPDATE captures SET status = 'committed', committed_path = ?3, committed_ms = ?4
                 WHERE vault = ?1 AND id = ?2 AND status = 'pending'",
                rusqlite::params![
                    index.vault_id(),
                    args.capture_id,
                    note.path,
                    cx.clock.now_ms()
                ],
            )
            .map_err(|_| {
                ToolError::internal("marking the capture committed")
                    .detail("applied", serde_json::json!(true))
            })?;
        Ok(CommitCaptureOutput {
            capture_id: args.capture_id,
            status: if marked == 1 {
                "committed"
            } else {
                "committed_elsewhere"
            }
            .to_owned(),
            note,
        })
    }
}
