//! Row-level operations used by the gate (clauses gate.raise.record, gate.raise.supersede,
//! gate.token.bound, gate.token.state-bound, release.restores, state.ext.single-use,
//! events.durable). They take a transaction or connection so the gate decides what commits
//! together.

use rusqlite::{Connection, OptionalExtension, params};

use super::StoreError;

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

/// Removes the raised request of (vault, args_hash, caller) with the fingerprints it
/// superseded: a mint consumes the request it was made on.
pub(crate) fn delete_raised(
    conn: &Connection,
    vault: &str,
    args_hash: &str,
    caller: &str,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "DELETE FROM raised_requests WHERE vault = ?1 AND args_hash = ?2 AND caller = ?3",
    )?
    .execute(params![vault, args_hash, caller])?;
    Ok(())
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
    pub caller: Option<&'a str>,
    pub detail: &'a str,
}

pub(crate) fn insert_event(conn: &Connection, event: &NewEvent<'_>) -> Result<i64, StoreError> {
    conn.prepare_cached(
        "INSERT INTO events (at, name, vault, tool, args_hash, caller_hash, caller, detail)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        event.at,
        event.name,
        event.vault,
        event.tool,
        event.args_hash,
        event.caller_hash,
        event.caller,
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
    pub caller: Option<String>,
    pub detail: String,
}

pub(crate) fn events_after(
    conn: &Connection,
    after_id: i64,
    limit: usize,
) -> Result<Vec<EventRow>, StoreError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut statement = conn.prepare_cached(
        "SELECT id, at, name, vault, tool, args_hash, caller_hash, detail, caller FROM events
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
            caller: row.get(8)?,
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

/// A raised request with its key, as listed.
pub(crate) struct ListedRaise {
    pub vault: String,
    pub args_hash: String,
    pub caller: String,
    pub row: RaisedRow,
}

fn listed(row: &rusqlite::Row<'_>) -> rusqlite::Result<ListedRaise> {
    Ok(ListedRaise {
        vault: row.get(0)?,
        args_hash: row.get(1)?,
        caller: row.get(2)?,
        row: RaisedRow {
            tool: row.get(3)?,
            state_fp: row.get(4)?,
            raised_at: row.get(5)?,
            expires_at: row.get(6)?,
            summary: row.get(7)?,
        },
    })
}

/// The live raised requests for (args_hash, caller) in any vault (by index).
pub(crate) fn raised_rows_for(
    conn: &Connection,
    args_hash: &str,
    caller: &str,
    now: i64,
) -> Result<Vec<ListedRaise>, StoreError> {
    let mut statement = conn.prepare_cached(
        "SELECT vault, args_hash, caller, tool, state_fp, raised_at, expires_at, summary
         FROM raised_requests WHERE args_hash = ?1 AND caller = ?2 AND expires_at > ?3
         ORDER BY vault",
    )?;
    let rows = statement.query_map(params![args_hash, caller, now], listed)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The live raised requests, newest first, optionally of one vault and one caller, at most
/// `limit`.
pub(crate) fn pending_rows(
    conn: &Connection,
    vault: Option<&str>,
    caller: Option<&str>,
    now: i64,
    limit: usize,
) -> Result<Vec<ListedRaise>, StoreError> {
    let mut statement = conn.prepare_cached(
        "SELECT vault, args_hash, caller, tool, state_fp, raised_at, expires_at, summary
         FROM raised_requests
         WHERE expires_at > ?1 AND (?2 IS NULL OR vault = ?2) AND (?3 IS NULL OR caller = ?3)
         ORDER BY raised_at DESC, vault, args_hash
         LIMIT ?4",
    )?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = statement.query_map(params![now, vault, caller, limit], listed)?;
    Ok(rows.collect::<Result<_, _>>()?)
}
