//! The attachment queries (spec/attachments.md `attachments.list`, `attachments.list.embeds`):
//! the vault's files that are not notes, in path order, from the stamps the index keeps of
//! every file, and the notes that embed one, from its links. The caller judges the folder ACL
//! on every path returned.

use rusqlite::params;
use tc_tools::ToolError;
use tc_vault::path::{FolderPath, VaultPath};

use super::links::backlinks;
use super::properties::folder_range;
use crate::VaultIndex;

/// One file that is not a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRow {
    pub path: String,
    pub size: u64,
    pub mtime_ns: i64,
}

fn failed(error: rusqlite::Error) -> ToolError {
    tracing::warn!("reading the files of the vault index: {error}");
    ToolError::internal("reading the files of the vault index")
}

/// At most `take` files that are not notes under `folder`, in path order, after `after`.
pub fn files(
    index: &VaultIndex,
    folder: &FolderPath,
    after: Option<&str>,
    take: usize,
) -> Result<Vec<FileRow>, ToolError> {
    let (low, high) = folder_range(folder);
    let conn = index.conn();
    let mut query = conn
        .prepare_cached(
            "SELECT path, size, mtime_ns FROM index_files
             WHERE vault = ?1 AND is_note = 0 AND path > ?2 AND path >= ?3 AND path < ?4
             ORDER BY path LIMIT ?5",
        )
        .map_err(failed)?;
    let rows = query
        .query_map(
            params![
                index.vault_id(),
                after.unwrap_or(""),
                low,
                high,
                i64::try_from(take).unwrap_or(i64::MAX)
            ],
            |r| {
                Ok(FileRow {
                    path: r.get(0)?,
                    size: u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
                    mtime_ns: r.get(2)?,
                })
            },
        )
        .map_err(failed)?;
    rows.collect::<Result<_, _>>().map_err(failed)
}

/// The notes that link to `path` (`embeds_only`: by an embed, `![[…]]` or `![](…)`), each
/// once, in path order.
pub fn linking_notes(
    index: &VaultIndex,
    path: &VaultPath,
    embeds_only: bool,
) -> Result<Vec<VaultPath>, ToolError> {
    let links = backlinks(index, path)?;
    let mut notes: Vec<VaultPath> = links
        .rows
        .into_iter()
        .filter(|row| row.embed || !embeds_only)
        .map(|row| row.src)
        .collect();
    notes.sort();
    notes.dedup();
    Ok(notes)
}
