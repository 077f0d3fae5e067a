//! The tag queries (spec/metadata.md `## Tags`): which notes carry which tags, as the index
//! parsed them ([`crate::parse`]: frontmatter `tags`/`tag` and inline tags, lowercase). The
//! caller judges the folder ACL on every path returned.

use rusqlite::params;
use tc_tools::ToolError;

use crate::VaultIndex;

fn failed(error: rusqlite::Error) -> ToolError {
    tracing::warn!("reading the tags of the vault index: {error}");
    ToolError::internal("reading the tags of the vault index")
}

/// The range of tag strings `tag` and its nested tags (`tag/…`) take in the index's order:
/// `tag` itself, then everything from `tag/` up to (not including) `tag0` (`0` follows `/`).
fn nested_range(tag: &str) -> (String, String) {
    (format!("{tag}/"), format!("{tag}0"))
}

/// Every (note, tag) pair of the vault, ordered by path then tag.
pub fn all_tags(index: &VaultIndex) -> Result<Vec<(String, String)>, ToolError> {
    let conn = index.conn();
    let mut query = conn
        .prepare_cached("SELECT path, tag FROM index_tags WHERE vault = ?1 ORDER BY path, tag")
        .map_err(failed)?;
    let rows = query
        .query_map(params![index.vault_id()], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .map_err(failed)?;
    rows.collect::<Result<_, _>>().map_err(failed)
}

/// The (note, tag) pairs whose tag is `tag` or nested under it (`tag/…`), ordered by path
/// then tag; `tag` is lowercase, without `#`.
pub fn tagged(index: &VaultIndex, tag: &str) -> Result<Vec<(String, String)>, ToolError> {
    let (low, high) = nested_range(tag);
    let conn = index.conn();
    let mut query = conn
        .prepare_cached(
            "SELECT path, tag FROM index_tags
             WHERE vault = ?1 AND (tag = ?2 OR (tag >= ?3 AND tag < ?4))
             ORDER BY path, tag",
        )
        .map_err(failed)?;
    let rows = query
        .query_map(params![index.vault_id(), tag, low, high], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .map_err(failed)?;
    rows.collect::<Result<_, _>>().map_err(failed)
}

/// The tags of one note, in order.
pub fn tags_of(index: &VaultIndex, path: &str) -> Result<Vec<String>, ToolError> {
    let conn = index.conn();
    let mut query = conn
        .prepare_cached("SELECT tag FROM index_tags WHERE vault = ?1 AND path = ?2 ORDER BY tag")
        .map_err(failed)?;
    let rows = query
        .query_map(params![index.vault_id(), path], |row| row.get(0))
        .map_err(failed)?;
    rows.collect::<Result<_, _>>().map_err(failed)
}

/// Whether the index holds `path` as a note.
pub fn is_indexed_note(index: &VaultIndex, path: &str) -> Result<bool, ToolError> {
    let conn = index.conn();
    let mut query = conn
        .prepare_cached("SELECT is_note FROM index_files WHERE vault = ?1 AND path = ?2")
        .map_err(failed)?;
    let found: Option<i64> = rusqlite::OptionalExtension::optional(
        query.query_row(params![index.vault_id(), path], |row| row.get(0)),
    )
    .map_err(failed)?;
    Ok(found == Some(1))
}
