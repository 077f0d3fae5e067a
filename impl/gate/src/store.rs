//! `cache.db`: the gate's durable store (issue 3 item 1; clauses gate.token.durable-consume,
//! gate.token.single-use, events.durable).
//!
//! One SQLite file in WAL mode, shared by every process that uses the same cacheDir (the
//! server and the `obsidian-tc elicit` CLI). Schema changes are versioned migrations keyed by
//! `PRAGMA user_version`; a file written by a newer build is refused rather than guessed at.
//!
//! Durability choice: `synchronous = FULL`. In WAL mode `NORMAL` only syncs at checkpoints, so
//! a commit survives a process crash but may be rolled back by a power loss; a consumed token
//! could then come back unspent after its handler already ran, which gate.token.durable-consume
//! forbids. `FULL` syncs the WAL on every commit, so once the consume commits, it stays.
//!
//! One exception, [`Durability::Relaxed`], for writes whose loss on power failure is harmless
//! and only in the safe direction: a raise or a mint (and its event) lost that way means the
//! token does not exist or the raise must be repeated, never that something runs twice. Such a
//! commit skips its own fsync, and the next synced commit (every consume is one) makes it
//! durable too, because the WAL is synced as a whole in order. This halves the syncs of a
//! mint-then-redeem cycle, whose cost is the disk's fsync latency.
//!
//! Group commit: consumes that arrive while another consume's commit is syncing wait and
//! then go together in one transaction (each its own `UPDATE … WHERE consumed_at IS NULL`,
//! so exactly one of two consumes of the same token matches), so concurrent redemptions in
//! one process share an fsync instead of queueing one fsync each. No caller gets its answer
//! before the transaction holding its consume has committed and synced.
//!
//! rusqlite stays inside this crate: the public surface is [`Store`] and [`StoreError`].

use std::fmt;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};

/// How long a writer waits for another connection's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The schema, one SQL script per version: `MIGRATIONS[i]` takes a file from version `i` to
/// `i + 1`. Append only; never edit a released entry.
const MIGRATIONS: &[&str] = &[
    // v1: tokens, raised requests (with the fingerprints a newer raise replaced), events.
    r#"
    CREATE TABLE elicit_tokens (
        id_hash        TEXT PRIMARY KEY NOT NULL,  -- SHA-256 of the token; the token itself is never stored
        vault          TEXT NOT NULL,
        tool           TEXT NOT NULL,
        args_hash      TEXT NOT NULL,
        caller         TEXT NOT NULL,
        state_fp       TEXT,                       -- NULL: an unbound library token
        created_at     INTEGER NOT NULL,
        expires_at     INTEGER NOT NULL,
        consumed_at    INTEGER,
        released_count INTEGER NOT NULL DEFAULT 0
    ) STRICT;
    CREATE INDEX elicit_tokens_by_expiry ON elicit_tokens(expires_at);

    CREATE TABLE raised_requests (
        vault      TEXT NOT NULL,
        args_hash  TEXT NOT NULL,
        caller     TEXT NOT NULL,
        tool       TEXT NOT NULL,
        state_fp   TEXT NOT NULL,                  -- '' for tools whose confirmationTargets is "none"
        raised_at  INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        PRIMARY KEY (vault, args_hash, caller)
    ) STRICT;
    CREATE INDEX raised_requests_by_expiry ON raised_requests(expires_at);

    -- Fingerprints a newer raise replaced, kept while the newer one lives, so a mint naming
    -- an old fingerprint is told apart from one naming a fingerprint never recorded.
    CREATE TABLE superseded_state_fps (
        vault         TEXT NOT NULL,
        args_hash     TEXT NOT NULL,
        caller        TEXT NOT NULL,
        state_fp      TEXT NOT NULL,
        superseded_at INTEGER NOT NULL,
        PRIMARY KEY (vault, args_hash, caller, state_fp),
        FOREIGN KEY (vault, args_hash, caller)
            REFERENCES raised_requests (vault, args_hash, caller) ON DELETE CASCADE
    ) STRICT;

    CREATE TABLE events (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        at          INTEGER NOT NULL,
        name        TEXT NOT NULL,
        vault       TEXT,
        tool        TEXT,
        args_hash   TEXT,
        caller_hash TEXT,
        detail      TEXT NOT NULL DEFAULT '{}'
    ) STRICT;
    "#,
    // v2: the single-use requestState extension (state.ext.single-use) and time-ordered
    // event queries.
    r#"
    CREATE TABLE consumed_states (
        state_id   TEXT PRIMARY KEY NOT NULL,
        expires_at INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX consumed_states_by_expiry ON consumed_states(expires_at);
    CREATE INDEX events_by_time ON events(at);
    "#,
    // v3: what the human approves (spec tools.summary), kept with the raised request.
    r#"
    ALTER TABLE raised_requests ADD COLUMN summary TEXT NOT NULL DEFAULT '';
    "#,
];

/// The schema version this build writes and understands.
pub const LATEST_SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Why the store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file was written by a newer obsidian-tc; opening it could corrupt what that build
    /// relies on, so it is refused.
    #[error(
        "cache.db has schema version {found}, newer than the {supported} this build understands: \
         upgrade obsidian-tc, or point it at a different cacheDir"
    )]
    NewerSchema { found: i64, supported: i64 },
    /// A row holds something this build never writes (hand-edited or damaged file).
    #[error("cache.db holds an unreadable row: {0}")]
    Corrupt(String),
    /// SQLite itself failed (I/O, lock timeout, full disk, not a database).
    #[error("cache.db: {0}")]
    Database(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        StoreError::Database(Box::new(error))
    }
}

/// An open `cache.db` (one connection). Cheap to share behind the [`crate::Gate`]; several
/// processes (or several `Store`s in one process) may open the same file at once.
pub struct Store {
    conn: Mutex<Conn>,
    consumes: Mutex<ConsumeQueue>,
    consumes_settled: Condvar,
}

/// Consumes waiting for the next group commit, and whether a leader is committing one.
#[derive(Default)]
struct ConsumeQueue {
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

struct Conn {
    conn: Connection,
    durability: Durability,
}

/// Whether a commit is synced to disk before it returns (see the module header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Durability {
    /// `synchronous = FULL`: durable against power loss when the commit returns.
    Synced,
    /// `synchronous = NORMAL`: durable against a process crash at once, against power loss
    /// from the next synced commit on. Only for writes whose loss cannot cause a second run.
    Relaxed,
}

impl Conn {
    fn set_durability(&mut self, durability: Durability) -> Result<(), StoreError> {
        if self.durability != durability {
            let mode = match durability {
                Durability::Synced => "FULL",
                Durability::Relaxed => "NORMAL",
            };
            self.conn.pragma_update(None, "synchronous", mode)?;
            self.durability = durability;
        }
        Ok(())
    }
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)?;
        Self::configure(conn, LATEST_SCHEMA_VERSION)
    }

    /// A private in-memory database with the full schema, for tests and embedders without a
    /// cacheDir. Nothing in it survives the value.
    pub fn open_in_memory() -> Result<Self, StoreError> {
        Self::configure(Connection::open_in_memory()?, LATEST_SCHEMA_VERSION)
    }

    /// The schema version of the open file.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        read_version(&self.lock().conn)
    }

    fn configure(conn: Connection, target_version: i64) -> Result<Self, StoreError> {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // journal_mode answers with a row; an in-memory database stays "memory".
        let _mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", true)?;
        let mut conn = conn;
        migrate(&mut conn, target_version)?;
        Ok(Store {
            conn: Mutex::new(Conn {
                conn,
                durability: Durability::Synced,
            }),
            consumes: Mutex::new(ConsumeQueue::default()),
            consumes_settled: Condvar::new(),
        })
    }

    /// Runs `work` inside an IMMEDIATE transaction (the write lock is taken up front, so
    /// concurrent writers queue on busy_timeout instead of failing on a lock upgrade) and
    /// commits before returning.
    pub(crate) fn write<T, E: From<StoreError>>(
        &self,
        durability: Durability,
        work: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, E>,
    ) -> Result<T, E> {
        let mut conn = self.lock();
        conn.set_durability(durability)?;
        let tx = conn
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(StoreError::from)?;
        // On an error the transaction is dropped, which rolls it back.
        let value = work(&tx)?;
        tx.commit().map_err(StoreError::from)?;
        Ok(value)
    }

    /// Runs `work` on the connection outside an explicit transaction: each statement commits
    /// on its own, synced before it returns.
    pub(crate) fn with_conn<T>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.lock();
        conn.set_durability(Durability::Synced)?;
        work(&conn.conn)
    }

    /// Runs `work`, which only reads, on the connection.
    pub(crate) fn read<T>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        work(&self.lock().conn)
    }

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

    fn lock(&self) -> MutexGuard<'_, Conn> {
        // A panic while holding the lock cannot leave a half-applied transaction (rusqlite
        // rolls back on drop), so the connection is still good to use.
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn read_version(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn.pragma_query_value(None, "user_version", |row| row.get(0))?)
}

/// Applies the missing migrations up to `target_version`, each in its own transaction with
/// its version bump, so a crash mid-way leaves a file at a well-defined version. The version
/// is re-read under the write lock so two processes opening a fresh file do not both migrate.
fn migrate(conn: &mut Connection, target_version: i64) -> Result<(), StoreError> {
    let found = read_version(conn)?;
    if found > LATEST_SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            found,
            supported: LATEST_SCHEMA_VERSION,
        });
    }
    loop {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let current = read_version(&tx)?;
        if current > LATEST_SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                found: current,
                supported: LATEST_SCHEMA_VERSION,
            });
        }
        if current >= target_version {
            return Ok(tx.commit()?);
        }
        let index = usize::try_from(current)
            .map_err(|_| StoreError::Corrupt(format!("negative schema version {current}")))?;
        tx.execute_batch(MIGRATIONS[index])?;
        tx.pragma_update(None, "user_version", current + 1)?;
        tx.commit()?;
    }
}

// ---------------------------------------------------------------------------------------
// Row-level operations used by the gate. They take a transaction or connection so the gate
// decides what commits together.

/// A token row as stored (the token itself is not in it).
#[derive(Debug, Clone)]
pub(crate) struct TokenRow {
    pub vault: String,
    pub args_hash: String,
    pub caller: String,
    pub state_fp: Option<String>,
    pub expires_at: i64,
    pub consumed_at: Option<i64>,
}

pub(crate) struct NewToken<'a> {
    pub id_hash: &'a str,
    pub vault: &'a str,
    pub tool: &'a str,
    pub args_hash: &'a str,
    pub caller: &'a str,
    pub state_fp: Option<&'a str>,
    pub created_at: i64,
    pub expires_at: i64,
}

pub(crate) fn insert_token(conn: &Connection, token: &NewToken<'_>) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO elicit_tokens
            (id_hash, vault, tool, args_hash, caller, state_fp, created_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        token.id_hash,
        token.vault,
        token.tool,
        token.args_hash,
        token.caller,
        token.state_fp,
        token.created_at,
        token.expires_at
    ])?;
    Ok(())
}

pub(crate) fn token_row(conn: &Connection, id_hash: &str) -> Result<Option<TokenRow>, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT vault, args_hash, caller, state_fp, expires_at, consumed_at
             FROM elicit_tokens WHERE id_hash = ?1",
        )?
        .query_row([id_hash], |row| {
            Ok(TokenRow {
                vault: row.get(0)?,
                args_hash: row.get(1)?,
                caller: row.get(2)?,
                state_fp: row.get(3)?,
                expires_at: row.get(4)?,
                consumed_at: row.get(5)?,
            })
        })
        .optional()?)
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

/// Gives back exactly the consumption identified by `consumed_at`; returns the new
/// released_count, or None when that consumption is not the current one.
pub(crate) fn unconsume_token(
    conn: &Connection,
    id_hash: &str,
    consumed_at: i64,
) -> Result<Option<i64>, StoreError> {
    Ok(conn
        .prepare_cached(
            "UPDATE elicit_tokens SET consumed_at = NULL, released_count = released_count + 1
             WHERE id_hash = ?1 AND consumed_at = ?2
             RETURNING released_count",
        )?
        .query_row(params![id_hash, consumed_at], |row| row.get(0))
        .optional()?)
}

/// A raised request as stored.
#[derive(Debug, Clone)]
pub(crate) struct RaisedRow {
    pub tool: String,
    pub state_fp: String,
    pub raised_at: i64,
    pub expires_at: i64,
    pub summary: String,
}

pub(crate) fn raised_row(
    conn: &Connection,
    vault: &str,
    args_hash: &str,
    caller: &str,
) -> Result<Option<RaisedRow>, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT tool, state_fp, raised_at, expires_at, summary FROM raised_requests
             WHERE vault = ?1 AND args_hash = ?2 AND caller = ?3",
        )?
        .query_row(params![vault, args_hash, caller], |row| {
            Ok(RaisedRow {
                tool: row.get(0)?,
                state_fp: row.get(1)?,
                raised_at: row.get(2)?,
                expires_at: row.get(3)?,
                summary: row.get(4)?,
            })
        })
        .optional()?)
}

pub(crate) struct NewRaise<'a> {
    pub vault: &'a str,
    pub args_hash: &'a str,
    pub caller: &'a str,
    pub tool: &'a str,
    pub state_fp: &'a str,
    pub raised_at: i64,
    pub expires_at: i64,
    pub summary: &'a str,
}

/// Records `raise` as the retained request for its key, remembering the fingerprint it
/// replaces. Returns whether an older, different fingerprint was superseded.
pub(crate) fn upsert_raise(conn: &Connection, raise: &NewRaise<'_>) -> Result<bool, StoreError> {
    let previous = raised_row(conn, raise.vault, raise.args_hash, raise.caller)?;
    let superseded = match &previous {
        Some(old) if old.state_fp != raise.state_fp => {
            conn.prepare_cached(
                "INSERT INTO superseded_state_fps (vault, args_hash, caller, state_fp, superseded_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT DO UPDATE SET superseded_at = excluded.superseded_at",
            )?
            .execute(params![
                raise.vault,
                raise.args_hash,
                raise.caller,
                old.state_fp,
                raise.raised_at
            ])?;
            true
        }
        _ => false,
    };
    if previous.is_none() {
        conn.prepare_cached(
            "INSERT INTO raised_requests
                (vault, args_hash, caller, tool, state_fp, raised_at, expires_at, summary)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?
        .execute(params![
            raise.vault,
            raise.args_hash,
            raise.caller,
            raise.tool,
            raise.state_fp,
            raise.raised_at,
            raise.expires_at,
            raise.summary
        ])?;
    } else {
        // An UPDATE, not a REPLACE: replacing would cascade-delete the superseded rows.
        conn.prepare_cached(
            "UPDATE raised_requests
             SET tool = ?4, state_fp = ?5, raised_at = ?6, expires_at = ?7, summary = ?8
             WHERE vault = ?1 AND args_hash = ?2 AND caller = ?3",
        )?
        .execute(params![
            raise.vault,
            raise.args_hash,
            raise.caller,
            raise.tool,
            raise.state_fp,
            raise.raised_at,
            raise.expires_at,
            raise.summary
        ])?;
    }
    // The fingerprint now retained is current again, not stale, even if it was once replaced.
    conn.prepare_cached(
        "DELETE FROM superseded_state_fps
         WHERE vault = ?1 AND args_hash = ?2 AND caller = ?3 AND state_fp = ?4",
    )?
    .execute(params![
        raise.vault,
        raise.args_hash,
        raise.caller,
        raise.state_fp
    ])?;
    Ok(superseded)
}

pub(crate) fn is_superseded(
    conn: &Connection,
    vault: &str,
    args_hash: &str,
    caller: &str,
    state_fp: &str,
) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT 1 FROM superseded_state_fps
             WHERE vault = ?1 AND args_hash = ?2 AND caller = ?3 AND state_fp = ?4",
        )?
        .query_row(params![vault, args_hash, caller, state_fp], |_| Ok(()))
        .optional()?
        .is_some())
}

/// An event as it goes into the table.
pub(crate) struct NewEvent<'a> {
    pub at: i64,
    pub name: &'a str,
    pub vault: Option<&'a str>,
    pub tool: Option<&'a str>,
    pub args_hash: Option<&'a str>,
    pub caller_hash: Option<&'a str>,
    pub detail: &'a str,
}

pub(crate) fn insert_event(conn: &Connection, event: &NewEvent<'_>) -> Result<i64, StoreError> {
    conn.prepare_cached(
        "INSERT INTO events (at, name, vault, tool, args_hash, caller_hash, detail)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        event.at,
        event.name,
        event.vault,
        event.tool,
        event.args_hash,
        event.caller_hash,
        event.detail
    ])?;
    Ok(conn.last_insert_rowid())
}

/// An event as read back.
pub(crate) struct EventRow {
    pub id: i64,
    pub at: i64,
    pub name: String,
    pub vault: Option<String>,
    pub tool: Option<String>,
    pub args_hash: Option<String>,
    pub caller_hash: Option<String>,
    pub detail: String,
}

pub(crate) fn events_after(
    conn: &Connection,
    after_id: i64,
    limit: usize,
) -> Result<Vec<EventRow>, StoreError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut statement = conn.prepare_cached(
        "SELECT id, at, name, vault, tool, args_hash, caller_hash, detail FROM events
         WHERE id > ?1 ORDER BY id LIMIT ?2",
    )?;
    let rows = statement.query_map(params![after_id, limit], |row| {
        Ok(EventRow {
            id: row.get(0)?,
            at: row.get(1)?,
            name: row.get(2)?,
            vault: row.get(3)?,
            tool: row.get(4)?,
            args_hash: row.get(5)?,
            caller_hash: row.get(6)?,
            detail: row.get(7)?,
        })
    })?;
    Ok(rows.collect::<Result<Vec<_>, _>>()?)
}

/// Records a single-use requestState; false when its id was already recorded.
pub(crate) fn insert_consumed_state(
    conn: &Connection,
    state_id: &str,
    expires_at: i64,
) -> Result<bool, StoreError> {
    let inserted = conn
        .prepare_cached(
            "INSERT INTO consumed_states (state_id, expires_at) VALUES (?1, ?2)
             ON CONFLICT (state_id) DO NOTHING",
        )?
        .execute(params![state_id, expires_at])?;
    Ok(inserted == 1)
}

/// What one sweep removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Raised requests past their expiry (their superseded fingerprints go with them).
    pub raised_requests: u64,
    /// Consumed requestState ids past the state's own expiry.
    pub consumed_states: u64,
    /// Token rows past their expiry plus the retention window.
    pub tokens: u64,
}

pub(crate) fn sweep(
    conn: &Connection,
    now_ms: i64,
    token_retention_ms: i64,
) -> Result<SweepReport, StoreError> {
    let raised_requests = conn
        .prepare_cached("DELETE FROM raised_requests WHERE expires_at <= ?1")?
        .execute([now_ms])?;
    let consumed_states = conn
        .prepare_cached("DELETE FROM consumed_states WHERE expires_at <= ?1")?
        .execute([now_ms])?;
    let tokens = conn
        .prepare_cached("DELETE FROM elicit_tokens WHERE expires_at <= ?1")?
        .execute([now_ms.saturating_sub(token_retention_ms)])?;
    Ok(SweepReport {
        raised_requests: raised_requests as u64,
        consumed_states: consumed_states as u64,
        tokens: tokens as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open_at(path: &Path, version: i64) -> Store {
        let conn = Connection::open(path).expect("open");
        Store::configure(conn, version).expect("configure")
    }

    #[test]
    fn fresh_file_gets_the_latest_schema() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path().join("cache.db")).expect("open");
        assert_eq!(
            store.schema_version().expect("version"),
            LATEST_SCHEMA_VERSION
        );
        const { assert!(LATEST_SCHEMA_VERSION >= 2) };
    }

    #[test]
    fn an_old_file_is_migrated_and_keeps_its_rows() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("cache.db");
        {
            let old = open_at(&path, 1);
            assert_eq!(old.schema_version().expect("version"), 1);
            old.write(Durability::Synced, |tx| {
                insert_token(
                    tx,
                    &NewToken {
                        id_hash: "abc",
                        vault: "v",
                        tool: "delete_note",
                        args_hash: "h",
                        caller: "stdio",
                        state_fp: Some(""),
                        created_at: 1,
                        expires_at: 2,
                    },
                )
            })
            .expect("insert");
            // The v2 table does not exist yet.
            let missing = old.with_conn(|conn| insert_consumed_state(conn, "s", 5));
            assert!(missing.is_err());
            let missing = old.read(|conn| insert_consumed_state(conn, "s", 5));
            assert!(missing.is_err());
        }
        let store = Store::open(&path).expect("reopen migrates");
        assert_eq!(
            store.schema_version().expect("version"),
            LATEST_SCHEMA_VERSION
        );
        let row = store
            .read(|conn| token_row(conn, "abc"))
            .expect("read")
            .expect("row kept");
        assert_eq!(row.caller, "stdio");
        assert!(
            store
                .with_conn(|conn| insert_consumed_state(conn, "s", 5))
                .expect("v2 table exists")
        );
    }

    #[test]
    fn a_newer_file_is_refused_with_a_clear_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("cache.db");
        drop(Store::open(&path).expect("open"));
        Connection::open(&path)
            .expect("raw open")
            .pragma_update(None, "user_version", LATEST_SCHEMA_VERSION + 7)
            .expect("bump");
        let error = Store::open(&path).expect_err("newer schema refused");
        assert!(matches!(error, StoreError::NewerSchema { found, supported }
            if found == LATEST_SCHEMA_VERSION + 7 && supported == LATEST_SCHEMA_VERSION));
        let message = error.to_string();
        assert!(message.contains("newer"), "{message}");
        assert!(message.contains("upgrade obsidian-tc"), "{message}");
    }

    #[test]
    fn the_file_is_in_wal_mode_with_full_sync_and_foreign_keys() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path().join("cache.db")).expect("open");
        store
            .with_conn(|conn| {
                let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0))?;
                let sync: i64 = conn.pragma_query_value(None, "synchronous", |r| r.get(0))?;
                let fk: i64 = conn.pragma_query_value(None, "foreign_keys", |r| r.get(0))?;
                assert_eq!(mode, "wal");
                assert_eq!(sync, 2, "FULL unless a write asks otherwise");
                assert_eq!(fk, 1);
                Ok(())
            })
            .expect("pragmas");
    }

    #[test]
    fn relaxed_writes_skip_their_sync_and_every_other_write_is_synced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path().join("cache.db")).expect("open");
        let sync_level = |conn: &Connection| -> Result<i64, StoreError> {
            Ok(conn.pragma_query_value(None, "synchronous", |r| r.get(0))?)
        };
        let relaxed = store
            .write(Durability::Relaxed, |tx| sync_level(tx))
            .expect("relaxed");
        assert_eq!(relaxed, 1, "NORMAL");
        let synced_write = store
            .write(Durability::Synced, |tx| sync_level(tx))
            .expect("synced");
        assert_eq!(synced_write, 2, "FULL");
        store
            .write(Durability::Relaxed, |tx| sync_level(tx))
            .expect("relaxed");
        // The consume goes through with_conn: it must be synced even right after a relaxed write.
        assert_eq!(store.with_conn(sync_level).expect("with_conn"), 2);
    }
}
