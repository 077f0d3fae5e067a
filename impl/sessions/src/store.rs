//! The sessions table in cache.db (spec/sessions.md `sessions.store.*`).
//!
//! One row per session: its id, vault, caller, the scopes the caller held when it started
//! it, label, start and end times, how many calls its trace holds (and how many could not
//! be recorded), and its trace file's name. A partial unique index keeps at most one open
//! session per (caller, vault), across every process sharing the cache directory.

use rusqlite::{Connection, OptionalExtension, Row, params};
use tc_vault::acl::Scopes;

/// The migrations of the sessions tables (append only).
pub const MIGRATIONS: &[&str] = &["CREATE TABLE sessions (
         id          TEXT PRIMARY KEY NOT NULL,
         vault       TEXT NOT NULL,
         vault_root  TEXT NOT NULL,
         caller      TEXT NOT NULL,
         scopes      TEXT NOT NULL,
         label       TEXT NOT NULL,
         started_ms  INTEGER NOT NULL,
         ended_ms    INTEGER,
         call_count  INTEGER NOT NULL DEFAULT 0,
         lost_count  INTEGER NOT NULL DEFAULT 0,
         trace_file  TEXT NOT NULL
     ) STRICT;
     CREATE UNIQUE INDEX sessions_one_open ON sessions (caller, vault) WHERE ended_ms IS NULL;
     CREATE INDEX sessions_by_caller ON sessions (caller, vault, started_ms DESC, id DESC);"];

/// One session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    pub id: String,
    pub vault: String,
    /// The vault's root folder when the session started (`obsidian-tc rerun` serves it
    /// from there when no configuration names the vault).
    pub vault_root: String,
    pub caller: String,
    /// The caller's scopes when it started the session (`*` for all).
    pub scopes: String,
    pub label: String,
    pub started_ms: i64,
    pub ended_ms: Option<i64>,
    pub call_count: u64,
    pub lost_count: u64,
    pub trace_file: String,
}

impl SessionRow {
    pub fn is_open(&self) -> bool {
        self.ended_ms.is_none()
    }

    /// The recorded scopes, as a caller's.
    pub fn scopes(&self) -> Scopes {
        scopes_from_text(&self.scopes)
    }
}

/// Scopes as the row keeps them: `*`, or the granted scopes separated by spaces.
pub fn scopes_text(scopes: &Scopes) -> String {
    match scopes {
        Scopes::All => "*".to_owned(),
        Scopes::Granted(set) => set.iter().cloned().collect::<Vec<_>>().join(" "),
    }
}

pub fn scopes_from_text(text: &str) -> Scopes {
    Scopes::granted(text.split_whitespace())
}

const COLUMNS: &str = "id, vault, vault_root, caller, scopes, label, started_ms, ended_ms, call_count, lost_count, trace_file";

fn row(r: &Row<'_>) -> rusqlite::Result<SessionRow> {
    Ok(SessionRow {
        id: r.get(0)?,
        vault: r.get(1)?,
        vault_root: r.get(2)?,
        caller: r.get(3)?,
        scopes: r.get(4)?,
        label: r.get(5)?,
        started_ms: r.get(6)?,
        ended_ms: r.get(7)?,
        call_count: r.get::<_, i64>(8)?.max(0) as u64,
        lost_count: r.get::<_, i64>(9)?.max(0) as u64,
        trace_file: r.get(10)?,
    })
}

/// Inserts `session` (open); fails with a constraint error when the caller already has
/// an open session on that vault.
pub fn insert(conn: &Connection, session: &SessionRow) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO sessions (id, vault, vault_root, caller, scopes, label, started_ms, ended_ms, call_count, lost_count, trace_file)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, NULL, 0, 0, ?8)",
        params![
            session.id,
            session.vault,
            session.vault_root,
            session.caller,
            session.scopes,
            session.label,
            session.started_ms,
            session.trace_file
        ],
    )?;
    Ok(())
}

/// The session `id`, whoever owns it.
pub fn get(conn: &Connection, id: &str) -> rusqlite::Result<Option<SessionRow>> {
    conn.query_row(
        &format!("SELECT {COLUMNS} FROM sessions WHERE id = ?1"),
        [id],
        row,
    )
    .optional()
}

/// The open session of `caller` on `vault`.
pub fn open_of(
    conn: &Connection,
    caller: &str,
    vault: &str,
) -> rusqlite::Result<Option<SessionRow>> {
    conn.query_row(
        &format!(
            "SELECT {COLUMNS} FROM sessions WHERE caller = ?1 AND vault = ?2 AND ended_ms IS NULL"
        ),
        [caller, vault],
        row,
    )
    .optional()
}

/// Ends `id` at `now_ms`, if it is open; the row as it is afterwards.
pub fn end(conn: &Connection, id: &str, now_ms: i64) -> rusqlite::Result<Option<SessionRow>> {
    conn.execute(
        "UPDATE sessions SET ended_ms = ?2 WHERE id = ?1 AND ended_ms IS NULL",
        params![id, now_ms],
    )?;
    get(conn, id)
}

/// Counts one more recorded call in the open session `id`; its number, or `None` when the
/// session is no longer open.
pub fn next_call(conn: &Connection, id: &str) -> rusqlite::Result<Option<u64>> {
    conn.query_row(
        "UPDATE sessions SET call_count = call_count + 1 WHERE id = ?1 AND ended_ms IS NULL
         RETURNING call_count",
        [id],
        |r| r.get::<_, i64>(0),
    )
    .optional()
    .map(|n| n.map(|n| n.max(0) as u64))
}

/// Counts a call that could not be recorded in `id`.
pub fn lost_call(conn: &Connection, id: &str) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE sessions SET lost_count = lost_count + 1 WHERE id = ?1",
        [id],
    )?;
    Ok(())
}

/// Where a page of [`page`] resumes: after the session started at `started_ms` with `id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct After {
    pub started_ms: i64,
    pub id: String,
}

/// Up to `limit` sessions of `caller` on `vault`, newest first, after `after`.
pub fn page(
    conn: &Connection,
    caller: &str,
    vault: &str,
    after: Option<&After>,
    limit: usize,
) -> rusqlite::Result<Vec<SessionRow>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    match after {
        None => {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM sessions WHERE caller = ?1 AND vault = ?2
                 ORDER BY started_ms DESC, id DESC LIMIT ?3"
            ))?;
            stmt.query_map(params![caller, vault, limit], row)?
                .collect()
        }
        Some(after) => {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM sessions WHERE caller = ?1 AND vault = ?2
                   AND (started_ms < ?3 OR (started_ms = ?3 AND id < ?4))
                 ORDER BY started_ms DESC, id DESC LIMIT ?5"
            ))?;
            stmt.query_map(
                params![caller, vault, after.started_ms, after.id, limit],
                row,
            )?
            .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> tc_tools::SubsystemDb {
        tc_tools::SubsystemDb::open_in_memory("sessions", MIGRATIONS).unwrap()
    }

    fn session(id: &str, caller: &str, started_ms: i64) -> SessionRow {
        SessionRow {
            id: id.into(),
            vault: "main".into(),
            vault_root: "/vault".into(),
            caller: caller.into(),
            scopes: "*".into(),
            label: "l".into(),
            started_ms,
            ended_ms: None,
            call_count: 0,
            lost_count: 0,
            trace_file: format!("{id}.jsonl"),
        }
    }

    // r[verify sessions.store.one-open]
    #[test]
    fn one_open_session_per_caller_and_vault() {
        let db = db();
        let conn = db.lock();
        insert(&conn, &session("s1", "ada", 1)).unwrap();
        assert!(insert(&conn, &session("s2", "ada", 2)).is_err());
        insert(&conn, &session("s3", "bob", 2)).unwrap();
        end(&conn, "s1", 5).unwrap();
        insert(&conn, &session("s2", "ada", 6)).unwrap();
        assert_eq!(open_of(&conn, "ada", "main").unwrap().unwrap().id, "s2");
        assert_eq!(next_call(&conn, "s2").unwrap(), Some(1));
        assert_eq!(next_call(&conn, "s2").unwrap(), Some(2));
        assert_eq!(
            next_call(&conn, "s1").unwrap(),
            None,
            "ended: nothing counted"
        );
    }

    #[test]
    fn pages_run_newest_first_without_gaps() {
        let db = db();
        let conn = db.lock();
        for i in 0..7 {
            let id = format!("s{i}");
            insert(&conn, &session(&id, "ada", i / 2)).unwrap();
            end(&conn, &id, 100).unwrap();
        }
        insert(&conn, &session("other", "bob", 3)).unwrap();
        let mut seen = Vec::new();
        let mut after = None;
        loop {
            let rows = page(&conn, "ada", "main", after.as_ref(), 3).unwrap();
            if rows.is_empty() {
                break;
            }
            let last = rows.last().unwrap();
            after = Some(After {
                started_ms: last.started_ms,
                id: last.id.clone(),
            });
            seen.extend(rows.into_iter().map(|r| r.id));
        }
        assert_eq!(seen, ["s6", "s5", "s4", "s3", "s2", "s1", "s0"]);
    }

    #[test]
    fn scopes_round_trip() {
        assert_eq!(scopes_from_text(&scopes_text(&Scopes::all())), Scopes::All);
        let some = Scopes::granted(["read:notes", "write:workspace"]);
        assert_eq!(scopes_from_text(&scopes_text(&some)), some);
    }
}
