//! The tag queries (spec/metadata.md `## Tags`): which notes carry which tags, as the index
//! parsed them ([`crate::parse`]: frontmatter `tags`/`tag` and inline tags, lowercase). The
//! caller judges the folder ACL on every path returned.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, LazyLock, Mutex};

use rusqlite::params;
use tc_tools::ToolError;

use crate::VaultIndex;

/// Every note of a vault that carries a tag, with its tags, as the index held them at one
/// write epoch.
#[derive(Debug, Default)]
pub struct TagSnapshot {
    /// (path, tags), ordered by path, each note's tags in order.
    pub notes: Vec<(String, Vec<String>)>,
}

/// The most snapshots kept (one per vault index of the process).
const SNAPSHOTS_KEPT: usize = 16;

/// The last snapshot of each (cache.db file, vault), with the write epoch it was read at.
/// The epoch is advanced in the very transaction that changes a note's facts (tags
/// included), so a snapshot read at the current epoch is what the tables hold.
#[allow(clippy::type_complexity)]
static SNAPSHOTS: LazyLock<Mutex<HashMap<(PathBuf, String), (i64, Arc<TagSnapshot>)>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Every tagged note of the vault with its tags: read once per write epoch of the index,
/// then shared, so a listing on an unchanged vault does not read every row again. An index
/// in memory (no file to name it by) is read every time.
pub fn snapshot(index: &VaultIndex) -> Result<Arc<TagSnapshot>, ToolError> {
    let file = index.db_path().to_path_buf();
    let key = (file, index.vault_id().to_owned());
    let cacheable = key.0.is_file();
    // The epoch and the rows are read under one hold of the connection, which every write
    // of the index also takes: they belong together.
    let conn = index.conn();
    let epoch = crate::search::common::epoch(&conn).map_err(failed)?;
    if cacheable
        && let Ok(kept) = SNAPSHOTS.lock()
        && let Some((at, snapshot)) = kept.get(&key)
        && *at == epoch
    {
        return Ok(Arc::clone(snapshot));
    }
    let mut query = conn
        .prepare_cached("SELECT path, tag FROM index_tags WHERE vault = ?1 ORDER BY path, tag")
        .map_err(failed)?;
    let mut rows = query.query(params![index.vault_id()]).map_err(failed)?;
    let mut notes: Vec<(String, Vec<String>)> = Vec::new();
    while let Some(row) = rows.next().map_err(failed)? {
        let path: String = row.get(0).map_err(failed)?;
        let tag: String = row.get(1).map_err(failed)?;
        match notes.last_mut() {
            Some((last, tags)) if *last == path => tags.push(tag),
            _ => notes.push((path, vec![tag])),
        }
    }
    let snapshot = Arc::new(TagSnapshot { notes });
    if cacheable && let Ok(mut kept) = SNAPSHOTS.lock() {
        if kept.len() >= SNAPSHOTS_KEPT && !kept.contains_key(&key) {
            kept.clear();
        }
        kept.insert(key, (epoch, Arc::clone(&snapshot)));
    }
    Ok(snapshot)
}

// r[impl index.tag-counts]
/// Records `tags` of the note at `path` with every ancestor of a nested tag (`a/b/c` also as
/// `a` and `a/b`), once each; the table's triggers count them per tag.
pub(crate) fn store(
    conn: &rusqlite::Connection,
    vault: &str,
    path: &str,
    tags: &[String],
) -> rusqlite::Result<()> {
    let mut entry = conn.prepare_cached(
        "INSERT OR IGNORE INTO index_tag_notes (vault, path, tag) VALUES (?1, ?2, ?3)",
    )?;
    for tag in tags {
        for (at, _) in tag.match_indices('/') {
            entry.execute(params![vault, path, &tag[..at]])?;
        }
        entry.execute(params![vault, path, tag])?;
    }
    Ok(())
}

/// Drops the note's entries, and with them its part of the counts.
pub(crate) fn forget(conn: &rusqlite::Connection, vault: &str, path: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM index_tag_notes WHERE vault = ?1 AND path = ?2")?
        .execute(params![vault, path])?;
    Ok(())
}

/// The whole vault's tags from `from` on (after it when `exclusive`), in tag order, with
/// how many notes carry each, at most `limit`.
pub fn counts_from(
    index: &VaultIndex,
    from: &str,
    exclusive: bool,
    limit: usize,
) -> Result<Vec<(String, usize)>, ToolError> {
    let conn = index.conn();
    let sql = if exclusive {
        "SELECT tag, notes FROM index_tag_counts WHERE vault = ?1 AND tag > ?2 ORDER BY tag LIMIT ?3"
    } else {
        "SELECT tag, notes FROM index_tag_counts WHERE vault = ?1 AND tag >= ?2 ORDER BY tag LIMIT ?3"
    };
    let mut query = conn.prepare_cached(sql).map_err(failed)?;
    let rows = query
        .query_map(
            params![
                index.vault_id(),
                from,
                i64::try_from(limit).unwrap_or(i64::MAX)
            ],
            |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?)),
        )
        .map_err(failed)?;
    rows.map(|row| {
        row.map(|(tag, notes)| (tag, usize::try_from(notes).unwrap_or(0)))
            .map_err(failed)
    })
    .collect()
}

fn failed(error: rusqlite::Error) -> ToolError {
    tracing::warn!("reading the tags of the vault index: {error}");
    ToolError::internal("reading the tags of the vault index")
}

/// The range of tag strings `tag` and its nested tags (`tag/…`) take in the index's order:
/// `tag` itself, then everything from `tag/` up to (not including) `tag0` (`0` follows `/`).
fn nested_range(tag: &str) -> (String, String) {
    (format!("{tag}/"), format!("{tag}0"))
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
