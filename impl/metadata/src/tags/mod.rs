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
use tc_tools::{ToolCx, ToolError};
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

/// A paged call's cursor and budget, shared with every keyset-paged tool.
pub(crate) use tc_tools::KeysetPaging as Paging;
/// What a page's envelope (vault, next_cursor, braces) may cost at most.
pub(crate) use tc_tools::paging::KEYSET_ENVELOPE_BYTES as ENVELOPE_BYTES;

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
