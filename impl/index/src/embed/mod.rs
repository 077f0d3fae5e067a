//! Embeddings of the chunks (spec/index.md `search.embeddings.*`): stored per chunk with the
//! model they come from and the generation of the run that made them, and the nearest chunks
//! to a query vector.
//!
//! When they are computed: a run embeds every chunk that has no vector of the configured
//! model, in batches of [`EMBED_BATCH`], in a thread of its own, after the first build,
//! after each reconciliation of the watcher's thread that read notes again, and after
//! `reset_vault_cache`; a `semantic` or `hybrid` call first embeds up to
//! [`CALL_BATCHES`] batches itself when no run is going (so a note just written is found at
//! once in a small change), and searches what is embedded. A run that embeds anything
//! takes the next generation number of the vault (`index_meta`), kept across resets, so
//! `reset_vault_cache`'s binding sees a run happen between its request and its redemption.
//! Dropping a note's chunks drops their vectors in the same transaction.

pub mod client;

use std::sync::{Arc, Mutex, TryLockError};

use rusqlite::params;

pub use client::{EmbedError, Embedder};

use crate::index::VaultIndex;

/// Chunks per request to the endpoint.
pub const EMBED_BATCH: usize = 32;
/// How many batches a search call embeds itself before it answers.
pub const CALL_BATCHES: usize = 2;
/// The most characters of a chunk sent (endpoints cut their input at a context length).
const MAX_INPUT_CHARS: usize = 6_000;

/// The embeddings side of one vault's index.
#[derive(Debug)]
pub(crate) struct Embeddings {
    /// The endpoint, or why there is none usable (an unset key variable).
    pub(crate) embedder: Result<Arc<Embedder>, EmbedError>,
    /// Held by the run going on: one run at a time per vault.
    run: Mutex<()>,
}

impl Embeddings {
    pub(crate) fn new(embedder: Result<Arc<Embedder>, EmbedError>) -> Self {
        Embeddings {
            embedder,
            run: Mutex::new(()),
        }
    }
}

/// One chunk to embed.
struct Pending {
    id: i64,
    heading: String,
    body: String,
}

/// One chunk near the query.
#[derive(Debug, Clone)]
pub(crate) struct Near {
    pub chunk: i64,
    pub path: String,
    pub similarity: f32,
}

/// How a run is waited for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunWait {
    /// Wait for a run going on, then run.
    Block,
    /// Leave it to a run going on.
    IfIdle,
    /// Wait at most this long for a run going on to end, then run; past it, leave it to
    /// that run. A search asks this: the run the watcher started for the very change it
    /// looks for usually ends within milliseconds, and a long backlog must not hold it.
    Briefly(std::time::Duration),
}

impl VaultIndex {
    /// Embeds the chunks that have no vector of the model yet, at most `max_batches`
    /// batches (all with `None`), as one run; returns how many chunks were embedded.
    pub fn embed_pending(
        &self,
        max_batches: Option<usize>,
        wait: RunWait,
    ) -> Result<usize, EmbedError> {
        let Some(embeddings) = self.embeddings() else {
            return Ok(0);
        };
        let embedder = embeddings.embedder.as_ref().map_err(Clone::clone)?;
        let _run = match (wait, embeddings.run.try_lock()) {
            (_, Ok(guard)) => guard,
            (_, Err(TryLockError::Poisoned(e))) => e.into_inner(),
            (RunWait::IfIdle, Err(TryLockError::WouldBlock)) => return Ok(0),
            (RunWait::Block, Err(TryLockError::WouldBlock)) => {
                embeddings.run.lock().unwrap_or_else(|e| e.into_inner())
            }
            (RunWait::Briefly(patience), Err(TryLockError::WouldBlock)) => {
                let deadline = std::time::Instant::now() + patience;
                loop {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    match embeddings.run.try_lock() {
                        Ok(guard) => break guard,
                        Err(TryLockError::Poisoned(e)) => break e.into_inner(),
                        Err(TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {}
                        Err(TryLockError::WouldBlock) => return Ok(0),
                    }
                }
            }
        };
        let mut generation = None;
        let mut done = 0;
        let mut batches = 0;
        // The run walks the chunks by id once (a chunk the endpoint was asked for but that
        // changed meanwhile is left to the next run).
        let mut after = 0i64;
        while max_batches.is_none_or(|max| batches < max) {
            let pending = self
                .pending_chunks(embedder.model(), after)
                .map_err(db_error)?;
            let Some(last) = pending.last() else {
                break;
            };
            after = last.id;
            batches += 1;
            let inputs: Vec<String> = pending
                .iter()
                .map(|p| {
                    let text = if p.heading.is_empty() {
                        p.body.clone()
                    } else {
                        format!("{}\n{}", p.heading, p.body)
                    };
                    text.chars().take(MAX_INPUT_CHARS).collect()
                })
                .collect();
            let vectors = embedder.embed(&inputs)?;
            let generation = match generation {
                Some(g) => g,
                None => {
                    let g = self.next_generation().map_err(db_error)?;
                    generation = Some(g);
                    g
                }
            };
            done += self
                .store_vectors(embedder.model(), generation, &pending, &vectors)
                .map_err(db_error)?;
        }
        Ok(done)
    }

    fn pending_chunks(&self, model: &str, after: i64) -> rusqlite::Result<Vec<Pending>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT c.id, f.heading, f.body FROM index_chunks c
             JOIN index_fts f ON f.rowid = c.id
             LEFT JOIN index_embeddings e ON e.chunk_id = c.id AND e.model = ?2
             WHERE c.vault = ?1 AND c.id > ?4 AND e.chunk_id IS NULL
             ORDER BY c.id LIMIT ?3",
        )?;
        stmt.query_map(
            params![self.vault_id(), model, EMBED_BATCH as i64, after],
            |row| {
                Ok(Pending {
                    id: row.get(0)?,
                    heading: row.get(1)?,
                    body: row.get(2)?,
                })
            },
        )?
        .collect()
    }

    fn next_generation(&self) -> rusqlite::Result<i64> {
        self.conn().query_row(
            "INSERT INTO index_meta (vault, embedding_generation) VALUES (?1, 1)
             ON CONFLICT (vault) DO UPDATE SET embedding_generation = embedding_generation + 1
             RETURNING embedding_generation",
            [self.vault_id()],
            |row| row.get(0),
        )
    }

    /// Stores each vector with its chunk, unless the chunk changed while the endpoint was
    /// asked (its id gone, or reused by other text): that chunk is embedded by a later batch.
    fn store_vectors(
        &self,
        model: &str,
        generation: i64,
        pending: &[Pending],
        vectors: &[Vec<f32>],
    ) -> rusqlite::Result<usize> {
        let mut conn = self.conn();
        // Vectors are asked for again when lost: no fsync per batch (see `unsynced`).
        crate::index::unsynced(&mut conn, |conn| {
            // IMMEDIATE, as every index write: no reader-to-writer upgrade to lose.
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let mut stored = 0;
            {
                let mut insert = tx.prepare_cached(
                    "INSERT OR REPLACE INTO index_embeddings (chunk_id, vault, model, generation, vector)
                     SELECT ?1, ?2, ?3, ?4, ?5
                     WHERE EXISTS (SELECT 1 FROM index_chunks c JOIN index_fts f ON f.rowid = c.id
                                   WHERE c.id = ?1 AND c.vault = ?2 AND f.body = ?6)",
                )?;
                for (chunk, vector) in pending.iter().zip(vectors) {
                    stored += insert.execute(params![
                        chunk.id,
                        self.vault_id(),
                        model,
                        generation,
                        client::to_blob(vector),
                        chunk.body,
                    ])?;
                }
            }
            tx.commit()?;
            Ok(stored)
        })
    }

    /// The chunks of the model's vectors by similarity to `query` (a unit vector), best
    /// first, with their notes.
    pub(crate) fn nearest(&self, model: &str, query: &[f32]) -> rusqlite::Result<Vec<Near>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT e.chunk_id, c.path, e.vector FROM index_embeddings e
             JOIN index_chunks c ON c.id = e.chunk_id
             WHERE e.vault = ?1 AND e.model = ?2",
        )?;
        let mut rows = stmt.query(params![self.vault_id(), model])?;
        let mut near = Vec::new();
        while let Some(row) = rows.next()? {
            let blob = row.get_ref(2)?.as_blob()?;
            if blob.len() != query.len() * 4 {
                // A vector of another length (the model was swapped under the same name).
                continue;
            }
            let similarity = blob
                .chunks_exact(4)
                .zip(query)
                .map(|(b, q)| f32::from_le_bytes([b[0], b[1], b[2], b[3]]) * q)
                .sum::<f32>();
            near.push(Near {
                chunk: row.get(0)?,
                path: row.get(1)?,
                similarity,
            });
        }
        near.sort_by(|a, b| {
            b.similarity
                .total_cmp(&a.similarity)
                .then_with(|| a.path.cmp(&b.path))
                .then_with(|| a.chunk.cmp(&b.chunk))
        });
        Ok(near)
    }
}

fn db_error(error: rusqlite::Error) -> EmbedError {
    EmbedError::Db(error.to_string())
}
