//! A subsystem's own tables in `cache.db` ("a subsystem crate owns its
//! tables in cache.db, its own migrations"; spec/vault.md `gate.files.private`).
//!
//! The gate keys its schema by `PRAGMA user_version`, so a subsystem cannot: each one keys
//! its migrations by a row of its own in `subsystem_schema (component, version)`, applied
//! under `BEGIN IMMEDIATE` so two processes opening a fresh file migrate once, and a file
//! written by a newer build of that subsystem is refused rather than guessed at. Each
//! subsystem holds one connection of its own (WAL, `synchronous = FULL`, foreign keys, a
//! busy timeout), so its writes never queue behind the gate's group commit.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior};

/// How long a write waits for another connection's write lock before it fails.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a subsystem's tables could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum SubsystemDbError {
    #[error("cannot open {path} for {component}: {source}")]
    Open {
        component: &'static str,
        path: PathBuf,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error(
        "{path} holds {component} tables at schema version {found}, newer than this build \
         understands ({supported}); run the newer obsidian-tc, or point cacheDir elsewhere"
    )]
    NewerSchema {
        component: &'static str,
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error("migrating the {component} tables of {path} to version {version}: {source}")]
    Migration {
        component: &'static str,
        path: PathBuf,
        version: i64,
        #[source]
        source: rusqlite::Error,
    },
}

/// One subsystem's connection to `cache.db`, its tables migrated to the latest version.
pub struct SubsystemDb {
    component: &'static str,
    path: PathBuf,
    conn: Mutex<Connection>,
}

impl fmt::Debug for SubsystemDb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubsystemDb")
            .field("component", &self.component)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SubsystemDb {
    /// Opens `<cache_dir>/cache.db` (created 0600 if missing) for `component` and applies
    /// the missing entries of `migrations` (`migrations[i]` takes the tables from version
    /// `i` to `i + 1`; append only, never edit a released entry).
    pub fn open(
        cache_dir: &Path,
        component: &'static str,
        migrations: &[&str],
    ) -> Result<Self, SubsystemDbError> {
        let path = cache_dir.join(tc_gate::CACHE_DB_FILE);
        let open_error =
            |source: Box<dyn std::error::Error + Send + Sync>| SubsystemDbError::Open {
                component,
                path: path.clone(),
                source,
            };
        tc_gate::private_fs::create_private_dir_all(cache_dir)
            .map_err(|e| open_error(Box::new(e)))?;
        match tc_gate::private_fs::create_private_file(&path) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(open_error(Box::new(e))),
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn =
            Connection::open_with_flags(&path, flags).map_err(|e| open_error(Box::new(e)))?;
        let db = Self::configure(conn, component, path.clone(), migrations)?;
        for suffix in ["-wal", "-shm"] {
            let mut companion = path.as_os_str().to_owned();
            companion.push(suffix);
            tc_gate::private_fs::make_private(Path::new(&companion))
                .map_err(|e| open_error(Box::new(e)))?;
        }
        Ok(db)
    }

    /// A private in-memory database with `component`'s tables, for tests.
    pub fn open_in_memory(
        component: &'static str,
        migrations: &[&str],
    ) -> Result<Self, SubsystemDbError> {
        let path = PathBuf::from(":memory:");
        let conn = Connection::open_in_memory().map_err(|e| SubsystemDbError::Open {
            component,
            path: path.clone(),
            source: Box::new(e),
        })?;
        Self::configure(conn, component, path, migrations)
    }

    fn configure(
        mut conn: Connection,
        component: &'static str,
        path: PathBuf,
        migrations: &[&str],
    ) -> Result<Self, SubsystemDbError> {
        let setup = |conn: &Connection| -> rusqlite::Result<()> {
            conn.busy_timeout(BUSY_TIMEOUT)?;
            let _mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
            conn.pragma_update(None, "synchronous", "FULL")?;
            conn.pragma_update(None, "foreign_keys", true)?;
            // r[impl vault.delete.permanent-gone]
            // What a subsystem deletes is overwritten, not left in free pages: a permanent
            // delete's text must not stay readable in cache.db.
            conn.pragma_update(None, "secure_delete", true)?;
            Ok(())
        };
        setup(&conn).map_err(|e| SubsystemDbError::Open {
            component,
            path: path.clone(),
            source: Box::new(e),
        })?;
        migrate(&mut conn, component, &path, migrations)?;
        Ok(SubsystemDb {
            component,
            path,
            conn: Mutex::new(conn),
        })
    }

    /// The database file (`:memory:` for [`SubsystemDb::open_in_memory`]): a subsystem that
    /// reads for long in the background opens a connection of its own on it, so the shared
    /// one is not held.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The subsystem's name, as its version row spells it.
    pub fn component(&self) -> &'static str {
        self.component
    }

    /// The connection, for one unit of work (keep the guard short: other calls of the same
    /// subsystem wait on it). A poisoned lock is taken over: SQLite's own transaction
    /// rollback already undid whatever the panicking holder left half done.
    pub fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    // r[impl vault.delete.permanent-gone]
    /// Moves every page of the write-ahead log into the database file and empties the log,
    /// so content a delete overwrote leaves no older copy in `cache.db-wal`. A reader holding
    /// an old snapshot can keep frames alive: the checkpoint then reports busy (`Ok(false)`).
    pub fn scrub_wal(&self) -> rusqlite::Result<bool> {
        let conn = self.lock();
        let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| row.get(0))?;
        Ok(busy == 0)
    }

    /// The schema version of `component`'s tables in the open file (0: none yet).
    pub fn schema_version(&self) -> rusqlite::Result<i64> {
        read_version(&self.lock(), self.component)
    }
}

fn read_version(conn: &Connection, component: &str) -> rusqlite::Result<i64> {
    Ok(conn
        .query_row(
            "SELECT version FROM subsystem_schema WHERE component = ?1",
            [component],
            |row| row.get(0),
        )
        .optional()?
        .unwrap_or(0))
}

fn migrate(
    conn: &mut Connection,
    component: &'static str,
    path: &Path,
    migrations: &[&str],
) -> Result<(), SubsystemDbError> {
    let supported = migrations.len() as i64;
    loop {
        let failed = |version: i64| {
            move |source: rusqlite::Error| SubsystemDbError::Migration {
                component,
                path: path.to_path_buf(),
                version,
                source,
            }
        };
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(failed(0))?;
        tx.execute_batch(
            "CREATE TABLE IF NOT EXISTS subsystem_schema (
                 component TEXT PRIMARY KEY NOT NULL,
                 version   INTEGER NOT NULL
             ) STRICT;",
        )
        .map_err(failed(0))?;
        let current = read_version(&tx, component).map_err(failed(0))?;
        if current > supported {
            return Err(SubsystemDbError::NewerSchema {
                component,
                path: path.to_path_buf(),
                found: current,
                supported,
            });
        }
        if current == supported {
            return tx.commit().map_err(failed(current));
        }
        let next = current + 1;
        tx.execute_batch(migrations[current as usize])
            .map_err(failed(next))?;
        tx.execute(
            "INSERT INTO subsystem_schema (component, version) VALUES (?1, ?2)
             ON CONFLICT (component) DO UPDATE SET version = excluded.version",
            rusqlite::params![component, next],
        )
        .map_err(failed(next))?;
        tx.commit().map_err(failed(next))?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1: &str = "CREATE TABLE widgets (id INTEGER PRIMARY KEY, name TEXT NOT NULL) STRICT;";
    const V2: &str = "ALTER TABLE widgets ADD COLUMN colour TEXT;";

    #[test]
    fn migrations_apply_once_and_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let db = SubsystemDb::open(dir.path(), "widgets", &[V1]).unwrap();
        assert_eq!(db.schema_version().unwrap(), 1);
        db.lock()
            .execute("INSERT INTO widgets (name) VALUES ('a')", [])
            .unwrap();
        drop(db);
        let db = SubsystemDb::open(dir.path(), "widgets", &[V1, V2]).unwrap();
        assert_eq!(db.schema_version().unwrap(), 2);
        let (name, colour): (String, Option<String>) = db
            .lock()
            .query_row("SELECT name, colour FROM widgets", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((name.as_str(), colour), ("a", None));
    }

    #[test]
    fn components_keep_separate_versions_beside_the_gate() {
        let dir = tempfile::tempdir().unwrap();
        let gate = tc_gate::store::Store::open(dir.path().join(tc_gate::CACHE_DB_FILE)).unwrap();
        let gate_version = gate.schema_version().unwrap();
        let a = SubsystemDb::open(dir.path(), "a", &[V1]).unwrap();
        let b = SubsystemDb::open(
            dir.path(),
            "b",
            &["CREATE TABLE b_rows (x INTEGER) STRICT;"],
        )
        .unwrap();
        assert_eq!(a.schema_version().unwrap(), 1);
        assert_eq!(b.schema_version().unwrap(), 1);
        assert_eq!(gate.schema_version().unwrap(), gate_version);
    }

    #[test]
    fn a_newer_file_is_refused_with_both_versions() {
        let dir = tempfile::tempdir().unwrap();
        drop(SubsystemDb::open(dir.path(), "widgets", &[V1, V2]).unwrap());
        let error = SubsystemDb::open(dir.path(), "widgets", &[V1]).unwrap_err();
        let text = error.to_string();
        assert!(
            matches!(
                error,
                SubsystemDbError::NewerSchema {
                    found: 2,
                    supported: 1,
                    ..
                }
            ),
            "{text}"
        );
        assert!(text.contains("widgets") && text.contains("newer"), "{text}");
    }

    #[test]
    fn a_failed_migration_leaves_the_previous_version() {
        let dir = tempfile::tempdir().unwrap();
        drop(SubsystemDb::open(dir.path(), "widgets", &[V1]).unwrap());
        let error = SubsystemDb::open(dir.path(), "widgets", &[V1, "NOT SQL"]).unwrap_err();
        assert!(matches!(
            error,
            SubsystemDbError::Migration { version: 2, .. }
        ));
        let db = SubsystemDb::open(dir.path(), "widgets", &[V1]).unwrap();
        assert_eq!(db.schema_version().unwrap(), 1);
    }

    #[test]
    fn the_file_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        drop(SubsystemDb::open(&cache, "widgets", &[V1]).unwrap());
        let mode = std::fs::metadata(cache.join(tc_gate::CACHE_DB_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "mode {mode:o}");
    }
}
