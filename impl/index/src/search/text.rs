//! Text mode (spec/index.md `search.bm25`, `search.filters`, `search.acl`): BM25 over the
//! chunks, one hit per note (its best chunk), with a highlighted snippet.
//!
//! The query shape is what keeps a common word cheap: FTS5 ranks the matching chunks alone
//! (`ORDER BY bm25(..) LIMIT k`, a bounded sort, no join or grouping over every match), and
//! the best `k` chunks are then placed in their notes by primary key, filtered by vault,
//! folder, tags and ACL, and folded to one hit per note. When the `k` best chunks do not
//! fill the page (many chunks of one note, or filters that keep few), `k` grows fourfold
//! and the ranking is asked again, until the page is full or every match was seen.
//!
//! A query of common words only is ranked from their postings instead (`common`): the
//! same chunks in the same order with the same scores, without FTS5 scoring every match.

use std::collections::HashSet;

use rusqlite::OptionalExtension;
use tc_vault::path::FolderPath;

use super::{HEADING_CHARS, SearchHit, common};
use crate::index::VaultIndex;

/// One note found, by its best chunk.
#[derive(Debug, Clone)]
pub(crate) struct Ranked {
    pub path: String,
    pub chunk: i64,
    pub score: f64,
    /// Whether the chunk matched the words (its snippet highlights them).
    pub text_match: bool,
}

/// The paths carrying every tag of `tags` (a tag also matching its nested tags), or `None`
/// when no tag is asked for.
pub(crate) fn tagged(
    index: &VaultIndex,
    tags: &[String],
) -> rusqlite::Result<Option<HashSet<String>>> {
    if tags.is_empty() {
        return Ok(None);
    }
    let conn = index.conn();
    let mut stmt = conn.prepare_cached(
        "SELECT DISTINCT path FROM index_tags WHERE vault = ?1
         AND (tag = ?2 OR substr(tag, 1, length(?2) + 1) = ?2 || '/')",
    )?;
    let mut all: Option<HashSet<String>> = None;
    for tag in tags {
        let paths = stmt
            .query_map(rusqlite::params![index.vault_id(), tag], |row| {
                row.get::<_, String>(0)
            })?
            .collect::<rusqlite::Result<HashSet<String>>>()?;
        all = Some(match all {
            None => paths,
            Some(before) => before.intersection(&paths).cloned().collect(),
        });
    }
    Ok(all)
}

/// Whether a note at `path` passes the folder and tag filters.
pub(crate) fn in_scope(path: &str, folder: &FolderPath, tagged: Option<&HashSet<String>>) -> bool {
    (folder.is_root()
        || path
            .strip_prefix(folder.as_str())
            .is_some_and(|rest| rest.starts_with('/')))
        && tagged.is_none_or(|set| set.contains(path))
}

/// The notes of this vault matching `fts`, best first, past the first `skip` that `keep`
/// (the ACL) and the filters (`folder`, and `only`: the notes the other filters keep) let
/// through, at most `take` of them.
pub(crate) fn ranked(
    index: &VaultIndex,
    fts: &str,
    folder: &FolderPath,
    only: Option<&HashSet<String>>,
    keep: impl Fn(&str) -> bool,
    skip: usize,
    take: usize,
) -> rusqlite::Result<Vec<Ranked>> {
    let want = skip.saturating_add(take);
    let fold = Fold {
        index,
        folder,
        tagged: only,
        keep: &keep,
        want,
    };
    // r[impl search.bm25.common-words]
    if let Some(words) = common::plain_words(fts) {
        let conn = index.conn();
        let now = common::epoch(&conn)?;
        let lookup = index.common().lookup(&words, now);
        if let common::Lookup::Fresh(lists) = lookup {
            let (found, _) = fold.run(&conn, common::BestFirst::merge(&lists).map(Ok))?;
            return Ok(found.into_iter().skip(skip).collect());
        }
        drop(conn);
        index.wake_warmer();
    }
    let mut k = want.saturating_mul(2).clamp(64, 1 << 20);
    loop {
        let conn = index.conn();
        let mut best = conn.prepare_cached(
            // bm25() is only defined in a query over the FTS5 table alone.
            "SELECT rowid, bm25(index_fts, 2.0, 1.0) AS score FROM index_fts
             WHERE index_fts MATCH ?1 ORDER BY score, rowid LIMIT ?2",
        )?;
        let rows = best.query_map(rusqlite::params![fts, k as i64], |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, f64>(1)?))
        })?;
        let (found, seen_rows) = fold.run(&conn, rows)?;
        if found.len() >= want || seen_rows < k {
            return Ok(found.into_iter().skip(skip).collect());
        }
        k = k.saturating_mul(4);
    }
}

/// Folds ranked chunks into notes: placed by primary key, filtered by vault, folder, tags
/// and ACL, one hit per note (its best chunk).
struct Fold<'a, K: Fn(&str) -> bool> {
    index: &'a VaultIndex,
    folder: &'a FolderPath,
    tagged: Option<&'a HashSet<String>>,
    keep: &'a K,
    want: usize,
}

impl<K: Fn(&str) -> bool> Fold<'_, K> {
    /// The first `want` notes of `rows` (chunk, score, best first), and how many rows were
    /// read.
    fn run(
        &self,
        conn: &rusqlite::Connection,
        rows: impl Iterator<Item = rusqlite::Result<(i64, f64)>>,
    ) -> rusqlite::Result<(Vec<Ranked>, usize)> {
        let mut place =
            conn.prepare_cached("SELECT vault, path FROM index_chunks WHERE id = ?1")?;
        let mut seen_rows = 0usize;
        let mut notes: HashSet<String> = HashSet::new();
        let mut found = Vec::new();
        for row in rows {
            let (chunk, score) = row?;
            seen_rows += 1;
            let Some((vault, path)) = place
                .query_row([chunk], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
                })
                .optional()?
            else {
                continue;
            };
            if vault != self.index.vault_id()
                || notes.contains(&path)
                || !in_scope(&path, self.folder, self.tagged)
            {
                continue;
            }
            notes.insert(path.clone());
            if !(self.keep)(&path) {
                continue;
            }
            found.push(Ranked {
                path,
                chunk,
                score,
                text_match: true,
            });
            if found.len() >= self.want {
                break;
            }
        }
        Ok((found, seen_rows))
    }
}

/// The hit of a ranked note: its best chunk's heading path and snippet, and its tags.
pub(crate) fn hit_of(
    index: &VaultIndex,
    fts: Option<&str>,
    ranked: &Ranked,
) -> rusqlite::Result<Option<SearchHit>> {
    let conn = index.conn();
    // r[impl search.hit-vanished]
    // The snippet and the tags are read in one snapshot; the chunk is read only while it is
    // still the ranked note's (another server may have replaced the note's chunks since the
    // ranking, and a freed chunk id is given to the next chunk written, of any note).
    let snapshot = conn.unchecked_transaction()?;
    let fts = fts.filter(|_| ranked.text_match);
    let (snippet, heading): (String, String) = match fts {
        Some(fts) => {
            let read = snapshot
                .prepare_cached(
                    "SELECT snippet(index_fts, -1, '**', '**', '…', 24), heading
                     FROM index_fts WHERE index_fts MATCH ?1 AND rowid = ?2
                     AND rowid IN (SELECT id FROM index_chunks WHERE vault = ?3 AND path = ?4)",
                )?
                .query_row(
                    rusqlite::params![fts, ranked.chunk, index.vault_id(), ranked.path],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .optional()?;
            match read {
                Some(read) => read,
                None => return Ok(None),
            }
        }
        // A chunk found by its vector alone, or a note listed by the filters alone: its
        // opening words (none for a note without text).
        None => snapshot
            .prepare_cached(
                "SELECT body, heading FROM index_fts WHERE rowid = ?1
                 AND rowid IN (SELECT id FROM index_chunks WHERE vault = ?2 AND path = ?3)",
            )?
            .query_row(
                rusqlite::params![ranked.chunk, index.vault_id(), ranked.path],
                |row| Ok((opening(&row.get::<_, String>(0)?), row.get(1)?)),
            )
            .optional()?
            .unwrap_or_default(),
    };
    let mut stmt =
        snapshot.prepare_cached("SELECT tag FROM index_tags WHERE vault = ?1 AND path = ?2")?;
    let tags = stmt
        .query_map(rusqlite::params![index.vault_id(), ranked.path], |row| {
            row.get::<_, String>(0)
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    drop(stmt);
    snapshot.finish()?;
    Ok(Some(SearchHit {
        path: ranked.path.clone(),
        heading: heading.chars().take(HEADING_CHARS).collect(),
        snippet,
        score: ranked.score,
        tags,
    }))
}

/// The first 24 words of a chunk, as long as a text snippet.
pub(crate) fn opening(body: &str) -> String {
    let mut words = body.split_whitespace();
    let head: Vec<&str> = words.by_ref().take(24).collect();
    let mut out = head.join(" ");
    if words.next().is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // r[verify search.hit-vanished]
    /// Two servers on one cache.db: this one ranks a chunk, the other re-indexes the note
    /// (its chunks replaced) before this one reads the hit. The hit is gone, not a failure.
    #[test]
    fn a_hit_whose_chunk_another_server_replaced_is_skipped() {
        let (tmp, a, b) = crate::two_servers(&[("note.md", "# Note\nthe okapi came\n")]);
        let vault = tmp.path().join("v");
        let fts = crate::search::fts_query("okapi").unwrap();
        let found = ranked(&a, &fts, &FolderPath::root(), None, |_| true, 0, 10).unwrap();
        assert_eq!(found.len(), 1);
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(vault.join("note.md"), "# Note\nthe zebra came instead\n").unwrap();
        b.reconcile().unwrap();
        let hit = hit_of(&a, Some(&fts), &found[0]).unwrap();
        assert!(hit.is_none(), "{hit:?}");
        let again = ranked(&a, &fts, &FolderPath::root(), None, |_| true, 0, 10).unwrap();
        assert!(again.is_empty());
    }
}
