//! The schema of `cache.db` as versioned migrations keyed by `PRAGMA user_version` (the
//! durable state behind gate.token.durable-consume, state.ext.durable and events.durable).
//! A file written by a newer build is refused rather than guessed at.
//!
//! Opening is race-free across processes (spec/config.md `config.cache-dir.shared-startup`:
//! servers starting together on a fresh cacheDir all come up): the switch to WAL, which
//! needs the file to itself and which SQLite's busy handler does not wait for, is retried
//! until the busy timeout ([`enter_wal`]); each migration re-reads the version under the
//! write lock, so exactly one process applies it. A lock still held when the timeout ends
//! is reported as what it is (another process holding cache.db), not as a broken file.

use std::time::{Duration, Instant};

use rusqlite::{Connection, TransactionBehavior};

use super::StoreError;

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
    // v4: raised requests found without their vault (`obsidian-tc elicit` with no --vault)
    // and listed newest first (`obsidian-tc pending`), both by index.
    r#"
    CREATE INDEX raised_requests_by_hash ON raised_requests(args_hash, caller);
    CREATE INDEX raised_requests_by_time ON raised_requests(raised_at);
    "#,
    // v5: the caller id itself in the audit log (events.caller-named): who asked, who was
    // approved and who ran each call; rows written before keep only the hash.
    r#"
    ALTER TABLE events ADD COLUMN caller TEXT;
    "#,
];

/// The schema version this build writes and understands.
pub const LATEST_SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The longest pause between two tries of the switch to WAL.
const MAX_WAL_PAUSE: Duration = Duration::from_millis(50);

fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// A lock another connection kept past `patience`, said as such.
fn still_locked(patience: Duration) -> StoreError {
    StoreError::Database(Box::new(std::io::Error::other(format!(
        "another process kept the file locked for {} s (a server starting or a long write on \
         the same cacheDir); try again",
        patience.as_secs()
    ))))
}

/// `error`, or [`still_locked`] when it is a lock the busy timeout gave up on.
pub(super) fn truthful(error: rusqlite::Error, patience: Duration) -> StoreError {
    if is_busy(&error) {
        still_locked(patience)
    } else {
        StoreError::from(error)
    }
}

// r[impl config.cache-dir.shared-startup]
/// Puts the file in WAL mode (it stays so; a file already in WAL is left alone). On a fresh
/// file the switch needs an exclusive lock, and SQLite answers `SQLITE_BUSY` at once, without
/// its busy handler, while another process opening the same file holds it; so the switch is
/// retried, with short growing pauses, for up to `patience`.
pub(super) fn enter_wal(conn: &Connection, patience: Duration) -> Result<(), StoreError> {
    let deadline = Instant::now() + patience;
    let mut pause = Duration::from_millis(1);
    loop {
        let attempt = conn
            .query_row("PRAGMA journal_mode", [], |row| row.get::<_, String>(0))
            .and_then(|mode| {
                // An in-memory database stays "memory", whatever is asked.
                if mode.eq_ignore_ascii_case("wal") || mode.eq_ignore_ascii_case("memory") {
                    Ok(mode)
                } else {
                    conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
                }
            });
        match attempt {
            Ok(_) => return Ok(()),
            Err(e) if is_busy(&e) && Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(MAX_WAL_PAUSE);
            }
            Err(e) => return Err(truthful(e, patience)),
        }
    }
}
pub(super) fn read_version(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn.pragma_query_value(None, "user_version", |row| row.get(0))?)
}

/// Applies the missing migrations up to `target_version`, each in its own transaction with
/// its version bump, so a crash mid-way leaves a file at a well-defined version. The version
/// is re-read under the write lock so two processes opening a fresh file do not both migrate.
pub(super) fn migrate(conn: &mut Connection, target_version: i64) -> Result<(), StoreError> {
    let found = read_version(conn)?;
    if found > LATEST_SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            found,
            supported: LATEST_SCHEMA_VERSION,
        });
    }
    loop {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| truthful(e, super::BUSY_TIMEOUT))?;
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
#[cfg(test)]
mod tests {
    use std::path::Path;

    use rusqlite::Connection;

    use super::*;
    use crate::store::{
        Durability, NewToken, Store, insert_consumed_state, insert_token, token_row,
    };

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

    // r[verify events.caller-named]
    /// An event recorded before caller ids were kept reads back with its hash alone; one
    /// recorded after carries the id.
    #[test]
    fn events_recorded_before_caller_ids_keep_their_hash() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("cache.db");
        {
            let old = open_at(&path, 4);
            old.with_conn(|conn| {
                conn.execute(
                    "INSERT INTO events (at, name, caller_hash) VALUES (1, 'elicit_minted', 'abcd')",
                    [],
                )
                .map_err(StoreError::from)
            })
            .expect("insert");
        }
        let store = Store::open(&path).expect("reopen migrates");
        store
            .with_conn(|conn| {
                crate::store::insert_event(
                    conn,
                    &crate::store::NewEvent {
                        at: 2,
                        name: "elicit_minted",
                        vault: Some("v"),
                        tool: Some("delete_note"),
                        args_hash: Some("h"),
                        caller_hash: Some("ef01"),
                        caller: Some("bob"),
                        detail: "{}",
                    },
                )
            })
            .expect("insert after");
        let rows = store
            .read(|conn| crate::store::events_after(conn, 0, 10))
            .expect("read");
        assert_eq!(rows[0].caller, None);
        assert_eq!(rows[0].caller_hash.as_deref(), Some("abcd"));
        assert_eq!(rows[1].caller.as_deref(), Some("bob"));
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

    // r[verify config.cache-dir.shared-startup]
    /// A fresh file another connection holds locked: the switch to WAL is tried again until
    /// the patience ends, then refused as a lock held by another process, which is what it
    /// is; once the lock is gone the switch goes through.
    #[test]
    fn a_lock_held_too_long_is_named_as_such() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("cache.db");
        let holder = Connection::open(&path).expect("open");
        holder
            .execute_batch("CREATE TABLE t(x); BEGIN EXCLUSIVE; INSERT INTO t VALUES (1);")
            .expect("hold");
        let opener = Connection::open(&path).expect("open");
        let started = std::time::Instant::now();
        let error = enter_wal(&opener, Duration::from_millis(200)).expect_err("locked");
        assert!(started.elapsed() >= Duration::from_millis(200), "it waited");
        let message = error.to_string();
        assert!(
            message.contains("another process kept the file locked"),
            "{message}"
        );
        holder.execute_batch("COMMIT").expect("release");
        enter_wal(&opener, Duration::from_millis(200)).expect("wal");
        let mode: String = opener
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .expect("mode");
        assert_eq!(mode, "wal");
    }

    // r[verify config.cache-dir.shared-startup]
    /// Stores opened at the same moment on one fresh file (as servers starting together on
    /// a fresh cacheDir do) all open, with the full schema, whichever of them creates it.
    #[test]
    fn stores_opened_at_once_on_a_fresh_file_all_open() {
        const OPENERS: usize = 8;
        for _round in 0..10 {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("cache.db");
            let barrier = std::sync::Barrier::new(OPENERS);
            let outcomes: Vec<Result<i64, String>> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..OPENERS)
                    .map(|_| {
                        s.spawn(|| {
                            barrier.wait();
                            Store::open(&path)
                                .and_then(|store| store.schema_version())
                                .map_err(|e| e.to_string())
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            for outcome in outcomes {
                assert_eq!(outcome, Ok(LATEST_SCHEMA_VERSION));
            }
        }
    }
}
