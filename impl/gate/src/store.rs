//! `cache.db`: the gate's durable store (clauses gate.token.durable-consume,
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
//! Consumes of one process are group-committed (several share one synced transaction); see
//! `store/group_commit.rs`.
//!
//! The store is split by responsibility: this file opens and configures the connection and
//! runs transactions; `store/migrations.rs` holds the versioned schema,
//! `store/group_commit.rs` the atomic consume, `store/rows.rs` the row-level operations the
//! gate composes into transactions, and `store/sweep.rs` the removal of expired rows.
//!
//! rusqlite stays inside this crate: the public surface is [`Store`] and [`StoreError`].

mod group_commit;
mod migrations;
mod rows;
mod sweep;

use std::fmt;
use std::path::Path;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use self::group_commit::ConsumeQueue;
use self::migrations::{migrate, read_version};

pub use self::migrations::LATEST_SCHEMA_VERSION;
pub(crate) use self::rows::{
    ListedRaise, NewEvent, NewRaise, NewToken, delete_raised, events_after, insert_consumed_state,
    insert_event, insert_token, is_superseded, pending_rows, raised_row, raised_rows_for,
    token_row, unconsume_token, upsert_raise,
};
pub use self::sweep::{StoredRows, SweepReport};
pub(crate) use self::sweep::{stored_rows, sweep};

/// The name of the gate's database file inside a cacheDir: the server, the `obsidian-tc
/// elicit` CLI and the conformance harness all open `<cacheDir>/cache.db`.
pub const CACHE_DB_FILE: &str = "cache.db";

/// How long a writer waits for another connection's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
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
        let path = path.as_ref();
        // r[impl gate.files.private]
        // Created 0600 before SQLite opens it (SQLite gives its -wal and -shm files the
        // database file's mode), so no umask ever makes it readable by others.
        match crate::private_fs::create_private_file(path) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(StoreError::Database(Box::new(e))),
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)?;
        let store = Self::configure(conn, LATEST_SCHEMA_VERSION)?;
        for suffix in ["-wal", "-shm"] {
            let mut companion = path.as_os_str().to_owned();
            companion.push(suffix);
            crate::private_fs::make_private(Path::new(&companion))
                .map_err(|e| StoreError::Database(Box::new(e)))?;
        }
        Ok(store)
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
        // Retried while another process opening the same fresh file holds it (spec
        // config.cache-dir.shared-startup); an in-memory database stays "memory".
        migrations::enter_wal(&conn, BUSY_TIMEOUT)?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", true)?;
        // A summary shows what a call would change (a diff, an entity's observations): what
        // the gate deletes is overwritten, so a permanent delete's text does not outlive its
        // raised request in free pages (spec vault.delete.permanent-gone).
        conn.pragma_update(None, "secure_delete", true)?;
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

    fn lock(&self) -> MutexGuard<'_, Conn> {
        // A panic while holding the lock cannot leave a half-applied transaction (rusqlite
        // rolls back on drop), so the connection is still good to use.
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
