//! Writing what a reconciliation found (spec/index.md `index.store`, `index.facts`): the
//! changed notes are read and analyzed outside the database lock, then written in batches of
//! [`BATCH`], one transaction each, and the in-memory stamps and resolver follow each batch.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use tc_vault::path::VaultPath;

use super::scan::{Seen, Stamp, stamp_of};
use super::{IndexError, Live, RACY_NS, Reconciled, VaultIndex, wall_ns};
use crate::parse::{NoteFacts, analyze, name_key};

/// How many changed files one transaction writes.
const BATCH: usize = 500;

/// A changed file, read and analyzed outside the database lock.
pub(super) struct Changed {
    path: VaultPath,
    stamp: Stamp,
    link: bool,
    facts: Option<NoteFacts>,
}

impl VaultIndex {
    /// Reads, analyzes and stores `changed`, drops `removed`, reporting the progress of the
    /// batches.
    pub(super) fn apply(
        &self,
        live: &mut Live,
        changed: Vec<Seen>,
        removed: Vec<VaultPath>,
        report: &dyn Fn(usize, usize),
    ) -> Result<Reconciled, IndexError> {
        let total = changed.len();
        self.build_total.store(total, Ordering::SeqCst);
        self.build_done.store(0, Ordering::SeqCst);
        if !removed.is_empty() {
            self.write_batch(live, &[], &removed)?;
        }
        let mut done = 0;
        for batch in changed.chunks(BATCH) {
            let analyzed = self.analyze_batch(batch)?;
            self.write_batch(live, &analyzed, &[])?;
            done += batch.len();
            self.build_done.store(done, Ordering::SeqCst);
            report(done, total);
        }
        Ok(Reconciled {
            reindexed: total,
            removed: removed.len(),
        })
    }

    /// Reads and analyzes one batch, on two threads when it is large (a build is bound by
    /// reading and parsing, not by SQLite).
    fn analyze_batch(&self, batch: &[Seen]) -> Result<Vec<Changed>, IndexError> {
        let one = |seen: &Seen| -> Result<Option<Changed>, IndexError> {
            let facts = if seen.stamp.is_note {
                match std::fs::read(self.root.join(&seen.path)) {
                    Ok(bytes) => Some(analyze(&bytes)),
                    // Gone since the stat: the next reconciliation drops it.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                    Err(source) => {
                        return Err(IndexError::Io {
                            path: seen.path.as_str().to_owned(),
                            source,
                        });
                    }
                }
            } else {
                None
            };
            Ok(Some(Changed {
                path: seen.path.clone(),
                stamp: seen.stamp,
                link: seen.link,
                facts,
            }))
        };
        let run = |part: &[Seen]| -> Result<Vec<Changed>, IndexError> {
            let mut out = Vec::with_capacity(part.len());
            for seen in part {
                if let Some(changed) = one(seen)? {
                    out.push(changed);
                }
            }
            Ok(out)
        };
        if batch.len() < 64 {
            return run(batch);
        }
        let (first, second) = batch.split_at(batch.len() / 2);
        let (a, b) = std::thread::scope(|scope| {
            let other = scope.spawn(|| run(second));
            let mine = run(first);
            (mine, other.join())
        });
        let mut out = a?;
        out.extend(b.map_err(|_| IndexError::Io {
            path: String::new(),
            source: std::io::Error::other("an indexing thread panicked"),
        })??);
        Ok(out)
    }

    /// Writes one batch in one transaction, then updates the in-memory stamps and resolver.
    pub(super) fn write_batch(
        &self,
        live: &mut Live,
        changed: &[Changed],
        removed: &[VaultPath],
    ) -> Result<(), IndexError> {
        let vault = self.vault_id.as_str();
        let mut stale: std::collections::HashSet<VaultPath> = std::collections::HashSet::new();
        let chunks_changed = {
            let mut conn = self.db.lock();
            unsynced(&mut conn, |conn| {
                // IMMEDIATE: the batch reads what the index holds before it writes, and a
                // deferred transaction upgraded to a writer while another connection of
                // cache.db writes fails at once with "database is locked" (no busy wait).
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                for path in removed {
                    forget(&tx, vault, path.as_str())?;
                    tx.execute(
                        "DELETE FROM index_files WHERE vault = ?1 AND path = ?2",
                        params![vault, path.as_str()],
                    )?;
                }
                let mut chunks_changed = !removed.is_empty();
                for note in changed {
                    // r[impl index.fresh.newest-wins]
                    // Under the write lock every process of cache.db takes: a file that
                    // changed since it was read here may already be indexed, newer, by
                    // another server; what was read here is not written over it, and the
                    // path stays unindexed here so the next call reads it again.
                    if self.on_disk(note) != Some(note.stamp) {
                        stale.insert(note.path.clone());
                        continue;
                    }
                    chunks_changed |= store(&tx, vault, note)?;
                }
                if chunks_changed {
                    crate::search::common::advance_epoch(&tx)?;
                }
                tx.commit()?;
                Ok(chunks_changed)
            })?
        };
        if chunks_changed {
            self.common().written();
            self.wake_warmer();
        }
        let now = wall_ns();
        let Live {
            stamps,
            racy,
            links,
            resolver,
            by_key,
            reread,
            ..
        } = live;
        let resolver = Arc::make_mut(resolver);
        for path in removed {
            resolver.remove(path);
            stamps.remove(path);
            racy.remove(path);
            links.remove(path);
            let key = name_key(path.as_str());
            if let Some(set) = by_key.get_mut(&key) {
                set.remove(path);
                if set.is_empty() {
                    by_key.remove(&key);
                }
            }
        }
        for note in changed {
            if stale.contains(&note.path) {
                stamps.remove(&note.path);
                reread.insert(note.path.clone());
                continue;
            }
            if !stamps.contains_key(&note.path) {
                resolver.insert(note.path.clone());
                by_key
                    .entry(name_key(note.path.as_str()))
                    .or_default()
                    .insert(note.path.clone());
            }
            stamps.insert(note.path.clone(), note.stamp);
            if note.link {
                links.insert(note.path.clone());
            } else {
                links.remove(&note.path);
            }
            if now.saturating_sub(note.stamp.mtime_ns) < RACY_NS {
                racy.insert(note.path.clone());
            } else {
                racy.remove(&note.path);
            }
        }
        Ok(())
    }
}

impl VaultIndex {
    /// The stamp of the file `note` was read from, as it is now (its link's target's for a
    /// link); `None` when it is gone.
    fn on_disk(&self, note: &Changed) -> Option<Stamp> {
        let meta = if note.link {
            let target = self.root.resolve_for_read(&note.path).ok()?;
            std::fs::metadata(target)
        } else {
            std::fs::symlink_metadata(self.root.join(&note.path))
        };
        meta.ok().map(|meta| stamp_of(&meta, note.stamp.is_note))
    }
}

/// Runs `f` with commits that do not wait for the disk (`synchronous = NORMAL`; WAL keeps
/// the database consistent through a crash either way): what the index writes is rebuilt
/// from the files when a power cut loses it, so a re-indexed note costs no fsync. The
/// captures share this connection and are user data: `FULL` is restored before the
/// connection is let go, whatever `f` did.
pub(crate) fn unsynced<T>(
    conn: &mut Connection,
    f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    let out = f(conn);
    let restored = conn.pragma_update(None, "synchronous", "FULL");
    let out = out?;
    restored?;
    Ok(out)
}

/// Drops what the index holds of one note's content (links, tags, chunks).
pub(super) fn forget(conn: &Connection, vault: &str, path: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM index_links WHERE vault = ?1 AND src = ?2")?
        .execute(params![vault, path])?;
    conn.prepare_cached("DELETE FROM index_tags WHERE vault = ?1 AND path = ?2")?
        .execute(params![vault, path])?;
    crate::meta::tags::forget(conn, vault, path)?;
    crate::meta::properties::forget(conn, vault, path)?;
    crate::meta::tasks::forget(conn, vault, path)?;
    // The vectors go with their chunks (a chunk id may be reused by other text later).
    conn.prepare_cached(
        "DELETE FROM index_embeddings WHERE chunk_id IN
             (SELECT id FROM index_chunks WHERE vault = ?1 AND path = ?2)",
    )?
    .execute(params![vault, path])?;
    conn.prepare_cached(
        "DELETE FROM index_fts WHERE rowid IN
             (SELECT id FROM index_chunks WHERE vault = ?1 AND path = ?2)",
    )?
    .execute(params![vault, path])?;
    conn.prepare_cached("DELETE FROM index_chunks WHERE vault = ?1 AND path = ?2")?
        .execute(params![vault, path])?;
    Ok(())
}

// r[impl index.facts]
/// Writes what the index holds of one file; whether its chunks changed.
fn store(conn: &Connection, vault: &str, note: &Changed) -> rusqlite::Result<bool> {
    let path = note.path.as_str();
    let facts = note.facts.as_ref();
    // What the index holds of the file: nothing (a new file: nothing to forget, which is
    // most of a first build), the same content (a flagged file only touched, or an edit
    // undone: its links, tags, chunks and vectors stay, only the stamp moves), or other.
    let held: Option<(bool, Option<String>)> = conn
        .prepare_cached("SELECT is_note, hash FROM index_files WHERE vault = ?1 AND path = ?2")?
        .query_row(params![vault, path], |row| {
            Ok((row.get::<_, i64>(0)? != 0, row.get(1)?))
        })
        .optional()?;
    match (&held, facts) {
        (Some((true, Some(hash))), Some(facts)) if *hash == facts.hash => {
            conn.prepare_cached(
                "UPDATE index_files SET size = ?3, mtime_ns = ?4 WHERE vault = ?1 AND path = ?2",
            )?
            .execute(params![
                vault,
                path,
                note.stamp.size as i64,
                note.stamp.mtime_ns
            ])?;
            return Ok(false);
        }
        (Some(_), _) => forget(conn, vault, path)?,
        (None, _) => {}
    }
    let keys = facts.map(|f| serde_json::json!(f.frontmatter_keys).to_string());
    let headings = facts.map(|f| {
        serde_json::Value::Array(
            f.headings
                .iter()
                .map(|h| serde_json::json!({"level": h.level, "text": h.text}))
                .collect(),
        )
        .to_string()
    });
    conn.prepare_cached(
        "INSERT INTO index_files (vault, path, size, mtime_ns, is_note, hash, frontmatter_keys, headings)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT (vault, path) DO UPDATE SET size = excluded.size,
             mtime_ns = excluded.mtime_ns, is_note = excluded.is_note, hash = excluded.hash,
             frontmatter_keys = excluded.frontmatter_keys, headings = excluded.headings",
    )?
    .execute(params![
        vault,
        path,
        note.stamp.size as i64,
        note.stamp.mtime_ns,
        note.stamp.is_note,
        facts.map(|f| f.hash.as_str()),
        keys,
        headings,
    ])?;
    let Some(facts) = facts else {
        return Ok(held.is_some());
    };
    let mut link = conn.prepare_cached(
        "INSERT INTO index_links (vault, src, name_key, target, embed, markdown, line, raw)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for l in &facts.links {
        link.execute(params![
            vault,
            path,
            l.name_key,
            l.target,
            l.embed,
            l.markdown,
            l.line as i64,
            l.text
        ])?;
    }
    let mut tag = conn.prepare_cached(
        "INSERT OR IGNORE INTO index_tags (vault, path, tag) VALUES (?1, ?2, ?3)",
    )?;
    for t in &facts.tags {
        tag.execute(params![vault, path, t])?;
    }
    crate::meta::tags::store(conn, vault, path, &facts.tags)?;
    crate::meta::properties::store(conn, vault, path, &facts.properties)?;
    crate::meta::tasks::store(conn, vault, path, &facts.tasks)?;
    let mut chunk = conn.prepare_cached(
        "INSERT INTO index_chunks (vault, path, ord, heading) VALUES (?1, ?2, ?3, ?4)",
    )?;
    let mut fts =
        conn.prepare_cached("INSERT INTO index_fts (rowid, heading, body) VALUES (?1, ?2, ?3)")?;
    for (ord, c) in facts.chunks.iter().enumerate() {
        chunk.execute(params![vault, path, ord as i64, c.heading])?;
        fts.execute(params![conn.last_insert_rowid(), c.heading, c.body])?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::scan::{Looked, look_at};

    // r[verify index.fresh.newest-wins]
    /// Two servers on one cache.db: one reads a note, the other appends to it and indexes
    /// the newer text, then the first writes what it read. The newer rows stay, and the first
    /// reads the note again on its next call, so neither misses the appended word.
    #[test]
    fn a_note_read_before_another_server_indexed_it_newer_is_not_written_over_it() {
        let (tmp, a, b) = crate::two_servers(&[("note.md", "# Note\nfirst words\n")]);
        let vault = tmp.path().join("v");
        let Looked::File(seen) = look_at(b.root(), "note.md") else {
            panic!("the note is listed");
        };
        let read = b.analyze_batch(&[seen]).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let newer = "# Note\nfirst words\nthen the okapi came\n";
        std::fs::write(vault.join("note.md"), newer).unwrap();
        a.reconcile().unwrap();
        let held = |index: &VaultIndex| -> Option<String> {
            index
                .conn()
                .query_row(
                    "SELECT hash FROM index_files WHERE vault = 'v' AND path = 'note.md'",
                    [],
                    |row| row.get(0),
                )
                .unwrap()
        };
        let newest = held(&a);
        assert_eq!(newest, Some(tc_vault::content_hash(newer.as_bytes())));
        {
            let mut live = b.lock_live();
            b.write_batch(&mut live, &read, &[]).unwrap();
            assert!(
                live.reread.contains(&VaultPath::parse("note.md").unwrap()),
                "read again on the next call"
            );
        }
        assert_eq!(
            held(&b),
            newest,
            "the older text was not written over the newer"
        );
        let words: i64 = b
            .conn()
            .query_row(
                "SELECT count(*) FROM index_fts WHERE index_fts MATCH 'okapi'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(words, 1);
    }

    // r[verify index.fresh.newest-wins]
    /// The link plans of `move_note` and `rewrite_link` read the backlinks after a
    /// reconciliation: a link another server indexed is still there when a third party
    /// (here the first server, with what it read before) would have written older rows.
    #[test]
    fn a_link_another_server_indexed_stays_in_the_backlinks_a_move_plans_with() {
        let (tmp, a, b) = crate::two_servers(&[
            ("Plan.md", "# Plan\n"),
            ("note.md", "# Note\nno link yet\n"),
        ]);
        let vault = tmp.path().join("v");
        let Looked::File(seen) = look_at(b.root(), "note.md") else {
            panic!("the note is listed");
        };
        let read = b.analyze_batch(&[seen]).unwrap();
        std::fs::write(vault.join("note.md"), "# Note\nsee [[Plan]]\n").unwrap();
        // Older than the racy window, so neither server reads the note again on its own.
        let past = std::time::SystemTime::now() - std::time::Duration::from_secs(10);
        std::fs::File::options()
            .write(true)
            .open(vault.join("note.md"))
            .and_then(|file| file.set_modified(past))
            .unwrap();
        a.refresh().unwrap();
        b.write_batch(&mut b.lock_live(), &read, &[]).unwrap();
        let plan = VaultPath::parse("Plan.md").unwrap();
        for index in [&a, &b] {
            index.refresh().unwrap();
            let sources: Vec<String> = crate::meta::links::backlinks(index, &plan)
                .unwrap()
                .rows
                .iter()
                .map(|row| row.src.as_str().to_owned())
                .collect();
            assert_eq!(sources, ["note.md"]);
        }
    }

    #[test]
    fn unsynced_restores_full_sync_whatever_the_work_did() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "synchronous", "FULL").unwrap();
        let level = |c: &Connection| -> i64 {
            c.query_row("PRAGMA synchronous", [], |r| r.get(0)).unwrap()
        };
        let inside = unsynced(&mut conn, |c| Ok(level(c))).unwrap();
        assert_eq!(inside, 1, "NORMAL while the index writes");
        assert_eq!(level(&conn), 2, "FULL again after");
        let failed: rusqlite::Result<()> =
            unsynced(&mut conn, |c| c.execute("NOT SQL", []).map(|_| ()));
        assert!(failed.is_err());
        assert_eq!(level(&conn), 2, "FULL again after a failure");
    }
}
