//! The `read_notes` and `list_notes` tools: one page per call, under the governor's cap,
//! with a signed cursor to the next (spec `paging.*`, `tools.read-notes`,
//! `tools.list-notes`; spec/tools.md, spec/paging.md; seed: "read_notes is the
//! exception to that refusal: it stays under the cap by paging").
//!
//! # The contract with the registry and the server
//!
//! [`read_notes`] and [`list_notes`] return a [`PageOutput`] whose `json` is the **final
//! result object**, serialized once:
//! `{"vault":…,"notes":[…],"errors":[{path,code,message,details?}],"next_cursor":…|null}`
//! (`read_notes` notes are `{path, content, frontmatter, content_hash}`; `list_notes` notes
//! are `{path, size}`). The server puts exactly these bytes in the text block, and the same
//! object in `structuredContent`, without serializing the notes again; the governor admits
//! them by their cost as sent (spec `governor.measure`). A page is sized so that cost, the
//! JSON twice with the text copy's escapes plus the response frame, stays within
//! `governor.maxResponseBytes`: its [`wire_cost`](tc_tools::wire_cost) never exceeds
//! [`PageLimits::page_budget`]. (One exception, for a cap too small to be useful: a page's
//! first `errors` entry is emitted even if it alone is over the budget, so the walk still
//! advances; the governor then judges that page.)
//!
//! A refusal of the whole call is a [`PagingError`] whose [`code`](PagingError::code),
//! [`details`](PagingError::details) and message fill the error envelope: a bad cursor is
//! `invalid_input` with `details.reason` (`expired`, `invalid`, `foreign`,
//! `request_mismatch`); `paths` and `folder` both or neither is `validation_error`.
//!
//! # How a page is made
//!
//! The cursor is bound (HMAC, tc-gate's [`CursorCodec`]) to the caller, the tool and the
//! digest of the request with defaults filled and without `cursor`: `{vault, folder,
//! recursive}` for a folder walk (folder normalized, so `"a/"` and `"a"` are one request)
//! and `{vault, paths}` for explicit paths (`recursive` plays no part there and is
//! ignored). Its position is the last path the page consumed (folder walk: the next page
//! walks strictly after it, so notes added or removed meanwhile are neither skipped nor
//! repeated) or the index of the next path (`paths`).
//!
//! The budget for the entries is the page cap minus the envelope around them, counted with
//! a cursor long enough for the page's position. Positions are paths of any length up to
//! 4,096 bytes, and the page's last path is only known once it is full; so the envelope is
//! reserved for a position of [`position_reserve`] bytes (1/64 of the cap, up to 4,096;
//! or the page's first path, if longer), and a later path longer than that ends the page
//! before it. The cursor then always fits in what was reserved, and no page is assembled
//! twice.
//!
//! A folder walk reads its notes with [`WalkedNoteEncoder`], which trusts what the walk
//! already established about a path instead of canonicalizing it again (most of the cost of
//! a small note); explicit `paths` come from the caller and go through the vault's full
//! resolution ([`NoteEntryEncoder`]). Both produce the same entries.
//!
//! The folder ACL is checked for every note on every page, against whatever ACL and scopes
//! the call brings (so a path revoked mid-walk is not served): a folder walk leaves out what
//! the caller may not read, explicit `paths` report it as `acl_denied`. A folder the walk
//! cannot list becomes one `errors` entry and the walk resumes after its whole subtree, so
//! an unreadable folder cannot hold the walk in place forever.

mod candidates;
mod walked_note;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tc_gate::clock::Clock;
use tc_gate::cursor::{CursorClaims, CursorCodec, CursorError, request_digest};
use tc_tools::PageLimits;
use tc_vault::acl::{Acl, Scopes};
use tc_vault::error::VaultError;
use tc_vault::path::{FolderPath, MAX_PATH_BYTES, VaultPath};
use tc_vault::vault::Vault;
use tc_vault::walk::{
    DeniedPolicy, EntryEncoder, ListEntryEncoder, NoteEntryEncoder, Page, PageRequest, Walk,
    WalkFilter, envelope_overhead, fill_page, walk_candidates,
};

use candidates::{FolderCandidates, note_path_candidates};
pub use walked_note::WalkedNoteEncoder;

/// The tool names, as bound into their cursors.
pub const READ_NOTES: &str = "read_notes";
pub const LIST_NOTES: &str = "list_notes";

/// A page reserves cursor room for a position of 1/64 of its cap (at most the longest path,
/// 4,096 bytes, which a 256 KiB cap already reaches): about 2% of a small page, and no cut
/// at all from a cap of 256 KiB on. A page ends before a path longer than its reserve,
/// unless that path opens the page.
pub const POSITION_RESERVE_DIVISOR: usize = 64;

/// The position length a page with this cap reserves cursor room for.
pub fn position_reserve(page_cap: usize) -> usize {
    (page_cap / POSITION_RESERVE_DIVISOR).min(MAX_PATH_BYTES)
}

/// What a page is made with: the served vault, its ACL, the cursor key, the time, the cap.
/// The ACL is taken per call, so a change of it between pages applies to the next page.
#[derive(Debug, Clone, Copy)]
pub struct PagingContext<'a> {
    pub vault: &'a Vault,
    pub acl: &'a Acl,
    pub codec: &'a CursorCodec,
    pub clock: &'a dyn Clock,
    pub limits: PageLimits,
}

fn yes() -> bool {
    true
}

/// `read_notes` arguments (spec/tools.md): exactly one of `paths` and `folder`, said in
/// both descriptions and checked by [`ReadNotesArgs::check`] (not by a top-level `oneOf`,
/// which several MCP clients refuse in a tool's input schema).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadNotesArgs {
    /// Vault-relative note paths, read in this order. Give exactly one of paths and folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1), inner(length(max = 4096)))]
    pub paths: Option<Vec<String>>,
    /// Read every note under this folder ("" = the vault root), in sorted path order. Give
    /// exactly one of paths and folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub folder: Option<String>,
    /// With folder: include subfolders.
    #[serde(default = "yes")]
    pub recursive: bool,
    /// The previous page's next_cursor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Only this heading's section (text or path A::B); with one paths entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// Page size cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1024))]
    pub max_bytes: Option<u64>,
}

impl Default for ReadNotesArgs {
    fn default() -> Self {
        ReadNotesArgs {
            paths: None,
            folder: None,
            recursive: true,
            cursor: None,
            section: None,
            max_bytes: None,
        }
    }
}

impl ReadNotesArgs {
    // r[impl paging.one-source]
    /// "Exactly one of `paths` and `folder`", which a flat schema cannot state.
    pub fn check(&self) -> Result<(), PagingError> {
        match (&self.paths, &self.folder) {
            (Some(_), Some(_)) => Err(PagingError::validation(
                "/",
                "give exactly one of `paths` and `folder`, not both",
            )),
            (None, None) => Err(PagingError::validation(
                "/",
                "give exactly one of `paths` (an array of note paths) and `folder`",
            )),
            // r[impl paging.read-notes.section]
            (paths, _) if self.section.is_some() && paths.as_ref().is_none_or(|p| p.len() != 1) => {
                Err(PagingError::validation(
                    "/section",
                    "section reads one note: give it with exactly one `paths` entry",
                ))
            }
            _ => Ok(()),
        }
    }
}

/// `list_notes` arguments (spec/tools.md).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListNotesArgs {
    /// Folder to list ("" = the vault root).
    #[serde(default)]
    #[schemars(length(max = 4096))]
    pub folder: String,
    /// Include subfolders.
    #[serde(default = "yes")]
    pub recursive: bool,
    /// The previous page's next_cursor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Page size cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1024))]
    pub max_bytes: Option<u64>,
}

impl Default for ListNotesArgs {
    fn default() -> Self {
        ListNotesArgs {
            folder: String::new(),
            recursive: true,
            cursor: None,
            max_bytes: None,
        }
    }
}

/// `max_bytes` (spec `paging.max-bytes`): at least [`PageLimits::MIN_MAX_BYTES`]; the
/// context with the page budget it lowers.
fn lowered<'a>(
    ctx: &PagingContext<'a>,
    max_bytes: Option<u64>,
) -> Result<PagingContext<'a>, PagingError> {
    if max_bytes.is_some_and(|m| m < PageLimits::MIN_MAX_BYTES) {
        return Err(PagingError::validation(
            "/max_bytes",
            format!("max_bytes must be at least {}", PageLimits::MIN_MAX_BYTES),
        ));
    }
    Ok(PagingContext {
        vault: ctx.vault,
        acl: ctx.acl,
        codec: ctx.codec,
        clock: ctx.clock,
        limits: ctx.limits.lowered_to(max_bytes),
    })
}

/// One page, ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageOutput {
    /// The result object's JSON, final (see the module docs); its
    /// [`wire_cost`](tc_tools::wire_cost) is within [`PageLimits::page_budget`].
    pub json: String,
    /// The cursor in `json`, `None` on the last page.
    pub next_cursor: Option<String>,
    /// How many entries `notes` and `errors` hold.
    pub notes: usize,
    pub errors: usize,
}

/// A refusal of the whole call (per-path problems are `errors` entries instead).
#[derive(Debug, thiserror::Error)]
pub enum PagingError {
    /// The arguments break the tool's rules: `validation_error`.
    #[error("{message}")]
    Validation {
        /// JSON pointer of the offending argument (`""` for the arguments as a whole).
        pointer: String,
        message: String,
    },
    /// A bad cursor: `invalid_input` with `details.reason`.
    #[error(transparent)]
    Cursor(#[from] CursorError),
    /// The folder argument was refused or could not be walked (`path_invalid`,
    /// `note_not_found`, or a file-system failure).
    #[error(transparent)]
    Vault(#[from] VaultError),
    /// A fault of the server itself: `internal_error`.
    #[error("{0}")]
    Internal(String),
    /// A `section` that names no single heading of the note (`anchor_not_found`,
    /// `anchor_ambiguous`).
    #[error("{0}")]
    Anchor(Box<tc_tools::ToolError>),
}

impl PagingError {
    fn validation(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        PagingError::Validation {
            pointer: pointer.into(),
            message: message.into(),
        }
    }

    /// The error code of spec/results.md (a vault error keeps its own, see
    /// [`VaultError::code`]).
    pub fn code(&self) -> &'static str {
        match self {
            PagingError::Validation { .. } => "validation_error",
            PagingError::Cursor(_) => "invalid_input",
            PagingError::Vault(error) => error.code(),
            PagingError::Internal(_) => "internal_error",
            PagingError::Anchor(error) => error.code.as_str(),
        }
    }

    /// The `details` of the error envelope.
    pub fn details(&self) -> Value {
        match self {
            PagingError::Validation { pointer, message } => {
                json!({"errors": [{"pointer": pointer, "message": message}]})
            }
            PagingError::Cursor(error) => json!({"reason": error.reason()}),
            PagingError::Vault(error) => error.details(),
            PagingError::Internal(_) => json!({}),
            PagingError::Anchor(error) => error.details.clone().unwrap_or_default(),
        }
    }
}

/// Where the notes of a request come from.
enum Source<'a> {
    Paths(&'a [String]),
    Folder { folder: FolderPath, recursive: bool },
}

/// One page of `read_notes` for `caller` (see the module docs for what is returned).
// r[impl paging.read-notes.no-overflow]
// r[impl paging.one-source]
pub fn read_notes(
    ctx: &PagingContext<'_>,
    caller: &str,
    scopes: &Scopes,
    args: &ReadNotesArgs,
) -> Result<PageOutput, PagingError> {
    args.check()?;
    let ctx = &lowered(ctx, args.max_bytes)?;
    let source = match (&args.paths, &args.folder) {
        (Some(paths), _) => {
            if paths.is_empty() {
                return Err(PagingError::validation(
                    "/paths",
                    "`paths` needs at least one path",
                ));
            }
            if let Some(i) = paths.iter().position(|p| p.len() > MAX_PATH_BYTES) {
                return Err(PagingError::validation(
                    format!("/paths/{i}"),
                    format!("a path may have at most {MAX_PATH_BYTES} bytes"),
                ));
            }
            Source::Paths(paths)
        }
        (None, folder) => Source::Folder {
            folder: parse_folder(folder.as_deref().unwrap_or_default())?,
            recursive: args.recursive,
        },
    };
    let cursor = args.cursor.as_deref();
    if let (Source::Paths(_), Some(heading)) = (&source, args.section.as_deref()) {
        let mut encoder = crate::section_read::SectionEncoder {
            heading,
            failed: None,
        };
        let page = page(
            ctx,
            caller,
            scopes,
            READ_NOTES,
            source,
            cursor,
            &mut encoder,
        )?;
        return match encoder.failed {
            Some(refusal) => Err(PagingError::Anchor(Box::new(refusal))),
            None => Ok(page),
        };
    }
    match source {
        Source::Paths(_) => page(
            ctx,
            caller,
            scopes,
            READ_NOTES,
            source,
            cursor,
            &mut NoteEntryEncoder,
        ),
        Source::Folder { .. } => page(
            ctx,
            caller,
            scopes,
            READ_NOTES,
            source,
            cursor,
            &mut WalkedNoteEncoder,
        ),
    }
}

/// One page of `list_notes` for `caller`: `{path, size}` entries of the notes the caller
/// may read.
// r[impl paging.list-notes]
pub fn list_notes(
    ctx: &PagingContext<'_>,
    caller: &str,
    scopes: &Scopes,
    args: &ListNotesArgs,
) -> Result<PageOutput, PagingError> {
    let ctx = &lowered(ctx, args.max_bytes)?;
    let source = Source::Folder {
        folder: parse_folder(&args.folder)?,
        recursive: args.recursive,
    };
    page(
        ctx,
        caller,
        scopes,
        LIST_NOTES,
        source,
        args.cursor.as_deref(),
        &mut ListEntryEncoder,
    )
}

fn parse_folder(raw: &str) -> Result<FolderPath, PagingError> {
    if raw.len() > MAX_PATH_BYTES {
        return Err(PagingError::validation(
            "/folder",
            format!("a folder may have at most {MAX_PATH_BYTES} bytes"),
        ));
    }
    Ok(FolderPath::parse(raw)?)
}

/// The request a cursor is bound to: the arguments with defaults filled and normalized,
/// without `cursor`.
// r[impl paging.cursor.bound]
fn request_value(vault_id: &str, source: &Source<'_>) -> Value {
    match source {
        Source::Paths(paths) => json!({"vault": vault_id, "paths": paths}),
        Source::Folder { folder, recursive } => {
            json!({"vault": vault_id, "folder": folder.as_str(), "recursive": recursive})
        }
    }
}

fn page<E: EntryEncoder>(
    ctx: &PagingContext<'_>,
    caller: &str,
    scopes: &Scopes,
    tool: &'static str,
    source: Source<'_>,
    cursor: Option<&str>,
    encoder: &mut E,
) -> Result<PageOutput, PagingError> {
    let vault_id = ctx.vault.id();
    let digest = request_digest(&request_value(vault_id, &source));
    let now_ms = ctx.clock.now_ms();
    let resume = cursor
        .map(|token| ctx.codec.open(token, caller, tool, &digest, now_ms))
        .transpose()?;
    let page_number = resume.as_ref().map_or(0, |r| r.page.saturating_add(1));
    let seal = |position: &str| {
        ctx.codec
            .seal(
                &CursorClaims {
                    caller,
                    tool,
                    request_digest: &digest,
                    position,
                    page: page_number,
                },
                now_ms,
            )
            .map_err(|e| PagingError::Internal(format!("the next cursor could not be made: {e}")))
    };
    let budget_for = |position_len: usize| -> Result<usize, PagingError> {
        let cursor_len = seal(&"x".repeat(position_len))?.len();
        Ok(ctx
            .limits
            .page_budget()
            .saturating_sub(envelope_overhead(vault_id, cursor_len)))
    };
    // What the cap allows beyond a page, for a note that goes alone on its page.
    let beyond_page = ctx
        .limits
        .ceiling_budget()
        .saturating_sub(ctx.limits.page_budget());
    let request = |budget: usize| PageRequest {
        vault: ctx.vault,
        acl: ctx.acl,
        scopes,
        budget,
        ceiling: budget.saturating_add(beyond_page),
        denied: match source {
            Source::Paths(_) => DeniedPolicy::Report,
            Source::Folder { .. } => DeniedPolicy::Omit,
        },
    };

    let (page, next_position) = match &source {
        Source::Paths(paths) => {
            let start = match &resume {
                Some(r) => r
                    .position
                    .parse::<usize>()
                    .ok()
                    .filter(|&i| i <= paths.len())
                    .ok_or(CursorError::Invalid)?,
                None => 0,
            };
            let budget = budget_for(paths.len().to_string().len())?;
            let page = fill_page(
                &request(budget),
                note_path_candidates(paths, start),
                encoder,
            );
            let next = (start + page.consumed).to_string();
            (page, Some(next))
        }
        Source::Folder { folder, recursive } => {
            let after = match &resume {
                Some(r) => Some(VaultPath::parse(&r.position).map_err(|_| CursorError::Invalid)?),
                None => None,
            };
            let walk = Walk::new(
                ctx.vault.root(),
                folder,
                *recursive,
                WalkFilter::Notes,
                after.as_ref(),
            )?;
            let mut candidates = FolderCandidates::new(
                walk_candidates(walk),
                ctx.vault.root(),
                ctx.acl,
                scopes,
                usize::MAX,
            );
            let reserve = candidates
                .first_position_len()
                .map_or(0, |len| len.max(position_reserve(ctx.limits.page_budget())));
            candidates.max_position_len = reserve;
            let budget = budget_for(reserve)?;
            let mut page = fill_page(&request(budget), &mut candidates, encoder);
            if candidates.cut {
                page.exhausted = false;
            }
            let next = candidates.position_after(page.consumed);
            (page, next)
        }
    };
    let next_cursor = match (page.exhausted, next_position) {
        (false, Some(position)) => Some(seal(&position)?),
        _ => None,
    };
    finish(&page, vault_id, next_cursor)
}

/// The page as text, in exactly [`Page::write_json`]'s form (a test holds the two equal),
/// assembled straight into a `String` so the page is not checked for UTF-8 again.
fn page_json(
    page: &Page,
    vault_id: &str,
    next_cursor: Option<&str>,
) -> Result<String, PagingError> {
    let encode = |value: &str| {
        serde_json::to_string(value)
            .map_err(|e| PagingError::Internal(format!("a page could not be assembled: {e}")))
    };
    let vault = encode(vault_id)?;
    let cursor = match next_cursor {
        Some(cursor) => encode(cursor)?,
        None => "null".to_owned(),
    };
    let mut out = String::with_capacity(page.used + vault.len() + cursor.len() + 48);
    out.push_str("{\"vault\":");
    out.push_str(&vault);
    out.push_str(",\"notes\":[");
    join_into(&mut out, &page.notes);
    out.push_str("],\"errors\":[");
    join_into(&mut out, &page.errors);
    out.push_str("],\"next_cursor\":");
    out.push_str(&cursor);
    out.push('}');
    Ok(out)
}

fn join_into(out: &mut String, entries: &[Box<str>]) {
    for (i, entry) in entries.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(entry);
    }
}

fn finish(
    page: &Page,
    vault_id: &str,
    next_cursor: Option<String>,
) -> Result<PageOutput, PagingError> {
    let json = page_json(page, vault_id, next_cursor.as_deref())?;
    debug_assert_eq!(
        json.as_bytes(),
        page.write_json(vault_id, next_cursor.as_deref())
    );
    Ok(PageOutput {
        json,
        next_cursor,
        notes: page.notes.len(),
        errors: page.errors.len(),
    })
}
