//! The tag tools (spec/metadata.md `## Tags`): `list_tags`, `get_note_tags`,
//! `find_notes_by_tag` read the index; `add_tag`, `remove_tag`, `rename_tag` edit notes
//! through [`edit`]'s pure functions.
//!
//! Tags are compared lowercased, as Obsidian does and as the index stores them; what the
//! tools write keeps the case the caller gave. Every listing leaves out the notes the
//! caller's folder ACL hides before anything is counted.

pub mod edit;
mod read;
mod rename;
mod write;

pub use read::{FindNotesByTag, GetNoteTags, ListTags};
pub use rename::{RenameTag, rename_text};
pub use write::{AddTag, RemoveTag};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tc_gate::cursor::{CursorClaims, CursorError, RequestDigest, request_digest};
use tc_tools::{ErrorCode, ToolCx, ToolError};
use tc_vault::path::{FolderPath, VaultPath};

// r[impl metadata.tags.argument]
/// A tag argument as written (without a leading `#`) and as compared (lowercased); refused
/// when no note could carry it as a tag.
pub(crate) fn tag_argument(raw: &str, pointer: &str) -> Result<(String, String), ToolError> {
    let written = raw.trim().strip_prefix('#').unwrap_or(raw.trim());
    let why = if written.is_empty() {
        Some("is empty")
    } else if written.chars().all(|c| c.is_ascii_digit()) {
        Some("needs a character that is not a digit")
    } else if !written
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '/'))
    {
        Some("may hold only letters, digits, `_`, `-` and `/`")
    } else if written.starts_with('/') || written.ends_with('/') || written.contains("//") {
        Some("has an empty segment around a `/`")
    } else {
        None
    };
    match why {
        Some(why) => Err(ToolError::validation(pointer, format!("the tag {why}"))),
        None => Ok((written.to_owned(), written.to_lowercase())),
    }
}

/// The folder argument (the vault root when absent).
pub(crate) fn folder_of(folder: Option<&str>) -> Result<FolderPath, ToolError> {
    match folder {
        Some(folder) => Ok(FolderPath::parse(folder)?),
        None => Ok(FolderPath::root()),
    }
}

/// (path, tags) pairs ordered by path, grouped by note.
pub(crate) fn by_note(pairs: Vec<(String, String)>) -> Vec<(String, Vec<String>)> {
    let mut notes: Vec<(String, Vec<String>)> = Vec::new();
    for (path, tag) in pairs {
        match notes.last_mut() {
            Some((last, tags)) if *last == path => tags.push(tag),
            _ => notes.push((path, vec![tag])),
        }
    }
    notes
}

// r[impl metadata.tags.acl]
/// Which notes a listing may show: those under the folder the caller may read. A caller
/// the ACL lets read everything is not judged note by note (no path of the vault would be
/// refused), which keeps a listing of a large vault cheap.
pub(crate) struct Readable<'c, 'a> {
    cx: &'c ToolCx<'a>,
    everything: bool,
    /// `folder/`, or `None` for the vault root.
    folder: Option<String>,
}

impl<'c, 'a> Readable<'c, 'a> {
    pub fn new(cx: &'c ToolCx<'a>, folder: &FolderPath) -> Self {
        Readable {
            cx,
            everything: cx.binding.acl.reads_everything(&cx.caller.scopes),
            folder: (!folder.is_root()).then(|| format!("{}/", folder.as_str())),
        }
    }

    /// Whether every note of the vault is shown (no folder, an ACL that hides nothing).
    pub fn shows_all(&self) -> bool {
        self.everything && self.folder.is_none()
    }

    pub fn admits(&self, path: &str) -> bool {
        if let Some(folder) = &self.folder
            && !path.starts_with(folder.as_str())
        {
            return false;
        }
        self.everything
            || VaultPath::parse(path).is_ok_and(|p| {
                self.cx
                    .binding
                    .acl
                    .can_read_at(self.cx.vault().root(), &p, &self.cx.caller.scopes)
            })
    }
}

/// What a page's envelope (vault, next_cursor, braces) may cost at most.
pub(crate) const ENVELOPE_BYTES: usize = 1_024;

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

/// Fills a page from `entries` (in key order) under the page budget: the entries taken and
/// the key to resume after, when some are left.
pub(crate) fn fill_page<T: Serialize>(
    cx: &ToolCx<'_>,
    entries: impl Iterator<Item = (String, T)>,
) -> Result<(Vec<T>, Option<String>), ToolError> {
    let budget = Paging::budget(cx);
    let mut page = Vec::new();
    let mut spent = 0usize;
    let mut last: Option<String> = None;
    for (key, entry) in entries {
        let cost = serde_json::to_vec(&entry)
            .map(|bytes| tc_tools::wire_cost(&bytes) + 1)
            .map_err(|_| ToolError::internal("encoding a page entry"))?;
        if spent + cost > budget && !page.is_empty() {
            return Ok((page, last));
        }
        spent += cost;
        page.push(entry);
        last = Some(key);
    }
    Ok((page, None))
}

// Where a tag goes or is taken from (no doc comment: it would be advertised).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Location {
    #[default]
    Frontmatter,
    Inline,
    Both,
}
