//! The `read_notes` entries of a folder walk, read without resolving each walked path again
//! (spec `paging.read-notes.shape`, `paging.too-large`).

use std::fs::{self, File};
use std::io::{self, Read};

use serde::Serialize;
use serde_json::Value;
use tc_tools::wire_cost;
use tc_vault::error::{VaultError, VaultResult};
use tc_vault::note::frontmatter_json;
use tc_vault::path::VaultPath;
use tc_vault::vault::{Vault, content_hash};
use tc_vault::walk::{EntryEncoder, NoteEntryEncoder, note_room};

/// `read_notes` entries of a folder walk: the same `{path, content, frontmatter,
/// content_hash}` as [`NoteEntryEncoder`], read without resolving the path again.
///
/// A walk's paths come from directory listings that never descend through a link, and a
/// link to a file is only listed when it stays inside the vault; so a walked path that is a
/// regular file (checked without following it) is inside the vault already, and
/// canonicalizing it again, one `readlink` per component of the absolute path, is most of
/// the cost of a note. Anything else (a link, a note gone since it was listed) goes through
/// [`Vault::read_limited`] and its full resolution, which also gives the right error.
#[derive(Debug, Default, Clone, Copy)]
pub struct WalkedNoteEncoder;

#[derive(Serialize)]
struct NoteEntry<'a> {
    path: &'a str,
    content: &'a str,
    frontmatter: Value,
    content_hash: &'a str,
}

impl EntryEncoder for WalkedNoteEncoder {
    fn encode(&mut self, vault: &Vault, path: &VaultPath, budget: usize) -> VaultResult<Vec<u8>> {
        let room = note_room(budget);
        let too_large = |size: u64| VaultError::TooLarge {
            path: path.as_str().to_owned(),
            size,
            limit: room as u64,
        };
        let location = vault.root().join(path);
        let meta = match fs::symlink_metadata(&location) {
            Ok(meta) if meta.file_type().is_file() => meta,
            _ => return NoteEntryEncoder.encode(vault, path, budget),
        };
        // The entry costs at least twice the note: refuse from the size alone, unread.
        if meta.len() > room as u64 {
            return Err(too_large(meta.len()));
        }
        let Ok(file) = File::open(&location) else {
            return NoteEntryEncoder.encode(vault, path, budget);
        };
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
        file.take(room as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| VaultError::Io {
                path: path.as_str().to_owned(),
                op: "read",
                source: e,
            })?;
        if bytes.len() > room {
            return Err(too_large(bytes.len() as u64));
        }
        let hash = content_hash(&bytes);
        // r[impl vault.note.utf8-read]
        let text =
            std::str::from_utf8(&bytes).map_err(|e| VaultError::not_utf8(path.as_str(), &e))?;
        let entry = NoteEntry {
            path: path.as_str(),
            content: text,
            frontmatter: frontmatter_json(text),
            content_hash: &hash,
        };
        // Room for the usual escapes up front, so the encoder seldom grows the buffer.
        let mut encoded =
            Vec::with_capacity(text.len() + text.len() / 8 + path.as_str().len() + 192);
        serde_json::to_writer(&mut encoded, &entry).map_err(|e| VaultError::Io {
            path: path.as_str().to_owned(),
            op: "encode",
            source: io::Error::other(e),
        })?;
        if wire_cost(&encoded) > budget {
            return Err(too_large(bytes.len() as u64));
        }
        Ok(encoded)
    }
}
