//! The vault's notes by path (spec/periodic.md `periodic.list`, `templates.list`): the paths
//! the index keeps of every note under a folder, so the periodic note and template listings
//! read no directory. The caller judges the folder ACL on every path returned.

use rusqlite::params;
use tc_tools::ToolError;
use tc_vault::path::FolderPath;

use super::properties::folder_range;
use crate::VaultIndex;

fn failed(error: rusqlite::Error) -> ToolError {
    tracing::warn!("reading the file list of the vault index: {error}");
    ToolError::internal("reading the file list of the vault index")
}

/// The paths of the notes under `folder` (every level), in path order.
pub fn notes_under(index: &VaultIndex, folder: &FolderPath) -> Result<Vec<String>, ToolError> {
    let (low, high) = folder_range(folder);
    let conn = index.conn();
    let mut query = conn
        .prepare_cached(
            "SELECT path FROM index_files
             WHERE vault = ?1 AND is_note = 1 AND path >= ?2 AND path < ?3
             ORDER BY path",
        )
        .map_err(failed)?;
    let rows = query
        .query_map(params![index.vault_id(), low, high], |r| r.get(0))
        .map_err(failed)?;
    rows.collect::<Result<_, _>>().map_err(failed)
}
