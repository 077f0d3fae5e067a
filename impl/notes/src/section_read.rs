//! `read_notes` with `section`: one heading's section of one note (spec/tools.md.1; spec
//! paging.md `paging.read-notes.section`), on tc-vault's sections service.

use std::io;

use serde::Serialize;
use serde_json::Value;
use tc_tools::{ToolError, wire_cost};
use tc_vault::error::{VaultError, VaultResult};
use tc_vault::note::frontmatter_json;
use tc_vault::path::VaultPath;
use tc_vault::sections::section_text;
use tc_vault::vault::Vault;
use tc_vault::walk::EntryEncoder;

use crate::patch::anchor_error;

/// The largest note a section is read from.
const MAX_NOTE_BYTES: u64 = 64 << 20;

/// A `read_notes` entry holding one section as `content`: the note's frontmatter and its
/// whole `content_hash` (so a following edit's `prev_hash` is the note's), the section's
/// text from its heading line to the next heading of the same or a higher level.
#[derive(Debug)]
pub struct SectionEncoder<'a> {
    pub heading: &'a str,
    /// An anchor that named no single section: the whole call's refusal.
    pub failed: Option<ToolError>,
}

#[derive(Serialize)]
struct SectionEntry<'a> {
    path: &'a str,
    content: &'a str,
    frontmatter: Value,
    content_hash: &'a str,
}

impl EntryEncoder for SectionEncoder<'_> {
    // r[impl paging.read-notes.section]
    fn encode(&mut self, vault: &Vault, path: &VaultPath, budget: usize) -> VaultResult<Vec<u8>> {
        let note = vault.read_limited(path, MAX_NOTE_BYTES)?;
        let text = note.utf8(path)?;
        let section = match section_text(text, self.heading) {
            Ok(section) => section,
            Err(error) => {
                self.failed = Some(anchor_error(error, &format!("heading '{}'", self.heading)));
                return Err(VaultError::NoteNotFound {
                    path: path.as_str().to_owned(),
                });
            }
        };
        let entry = SectionEntry {
            path: path.as_str(),
            content: section,
            frontmatter: frontmatter_json(text),
            content_hash: &note.hash,
        };
        let encoded = serde_json::to_vec(&entry).map_err(|e| VaultError::Io {
            path: path.as_str().to_owned(),
            op: "encode",
            source: io::Error::other(e),
        })?;
        if wire_cost(&encoded) > budget {
            return Err(VaultError::TooLarge {
                path: path.as_str().to_owned(),
                size: section.len() as u64,
                limit: budget as u64,
            });
        }
        Ok(encoded)
    }
}
