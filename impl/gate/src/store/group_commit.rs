//! The atomic consume of a CLI token, group-committed (clauses gate.token.single-use,
//! gate.token.durable-consume).
//!
//! Group commit: consumes that arrive while another consume's commit is syncing wait and
//! then go together in one transaction (each its own `UPDATE … WHERE consumed_at IS NULL`,
//! so exactly one of two consumes of the same token matches), so concurrent redemptions in
//! one process share an fsync instead of queueing one fsync each. No caller gets its answer
//! before the transaction holding its consume has committed and synced.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rusqlite::{Connection, params};

use super::{Durability, Store, StoreError};

/// Consumes waiting for the next group commit, and whether a leader is committing one.
#[derive(Default)]
pub(super) struct ConsumeQueue {
    pending: Vec<Arc<PendingConsume>>,
    leader_active: bool,
}

struct PendingConsume {
    id_hash: String,
    now_ms: i64,
    /// Set (under the queue lock) once the batch holding this consume has committed.
    outcome: Mutex<Option<Result<bool, StoreError>>>,
}

impl PendingConsume {
    fn take_outcome(&self) -> Option<Result<bool, StoreError>> {
        self.outcome
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

/// A batch failure reported to every consume in the batch (the original is not Clone).
#[derive(Debug)]
struct BatchFailed(String);

impl fmt::Display for BatchFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the consume transaction failed: {}", self.0)
    }
}

impl std::error::Error for BatchFailed {}

impl Store {
    /// The atomic consume (gate.token.single-use, gate.token.durable-consume): `true` for
    /// exactly one of any number of racing consumes of an unspent, unexpired token, across
    /// connections and processes; returns only after the consume is committed and synced.
    /// Concurrent callers in this process share one transaction (group commit).
    pub(crate) fn consume(&self, id_hash: &str, now_ms: i64) -> Result<bool, StoreError> {
        let mine = Arc::new(PendingConsume {
            id_hash: id_hash.to_owned(),
            now_ms,
            outcome: Mutex::new(None),
        });
        let mut queue = self.lock_queue();
        queue.pending.push(Arc::clone(&mine));
        // Follow while another caller leads; lead when nobody does and ours is not done.
        loop {
            if let Some(outcome) = mine.take_outcome() {
                return outcome;
            }
            if !queue.leader_active {
                break;
            }
            queue = self
                .consumes_settled
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
        }
        queue.leader_active = true;
        let batch = std::mem::take(&mut queue.pending);
        drop(queue);

        let outcomes = self.commit_consumes(&batch);

        let mut queue = self.lock_queue();
        match outcomes {
            Ok(won) => {
                for (pending, won) in batch.iter().zip(won) {
                    *pending
                        .outcome
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = Some(Ok(won));
                }
            }
            Err(error) => {
                let message = error.to_string();
                for pending in &batch {
                    *pending
                        .outcome
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = Some(Err(StoreError::Database(
                        Box::new(BatchFailed(message.clone())),
                    )));
                }
            }
        }
        queue.leader_active = false;
        drop(queue);
        // Wakes the followers of this batch, and lets one of the next lead.
        self.consumes_settled.notify_all();
        mine.take_outcome()
            .unwrap_or_else(|| Err(StoreError::Corrupt("a consume was left unanswered".into())))
    }

    /// One synced transaction holding every consume of `batch`, in order.
    fn commit_consumes(&self, batch: &[Arc<PendingConsume>]) -> Result<Vec<bool>, StoreError> {
        self.write(Durability::Synced, |tx| {
            batch
                .iter()
                .map(|pending| consume_token(tx, &pending.id_hash, pending.now_ms))
                .collect()
        })
    }

    fn lock_queue(&self) -> MutexGuard<'_, ConsumeQueue> {
        self.consumes.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One consume: `UPDATE … WHERE consumed_at IS NULL` matches for exactly one caller of a
/// given unspent token. Run only inside [`Store::consume`]'s synced transaction.
fn consume_token(conn: &Connection, id_hash: &str, now_ms: i64) -> Result<bool, StoreError> {
    let changed = conn
        .prepare_cached(
            "UPDATE elicit_tokens SET consumed_at = ?2
             WHERE id_hash = ?1 AND consumed_at IS NULL AND expires_at > ?2",
        )?
        .execute(params![id_hash, now_ms])?;
    Ok(changed == 1)
}
