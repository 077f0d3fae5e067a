//! Removing what has expired from `cache.db` (clauses gate.raise.sweep, state.ext.sweep,
//! events.retention).

use rusqlite::Connection;

use super::StoreError;

/// What one sweep removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Raised requests past their expiry (their superseded fingerprints go with them).
    pub raised_requests: u64,
    /// Consumed requestState ids past the state's own expiry.
    pub consumed_states: u64,
    /// Token rows past their expiry plus the retention window.
    pub tokens: u64,
    /// Events older than the event retention.
    pub events: u64,
}

pub(crate) fn sweep(
    conn: &Connection,
    now_ms: i64,
    token_retention_ms: i64,
    event_retention_ms: i64,
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
    let events = conn
        .prepare_cached("DELETE FROM events WHERE at < ?1")?
        .execute([now_ms.saturating_sub(event_retention_ms)])?;
    Ok(SweepReport {
        raised_requests: raised_requests as u64,
        consumed_states: consumed_states as u64,
        tokens: tokens as u64,
        events: events as u64,
    })
}

/// How many rows each table holds, expired or not (what a sweep would look at).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoredRows {
    pub raised_requests: u64,
    pub tokens: u64,
    pub consumed_states: u64,
    pub events: u64,
}

pub(crate) fn stored_rows(conn: &Connection) -> Result<StoredRows, StoreError> {
    let count = |table: &str| -> Result<u64, StoreError> {
        let n: i64 = conn.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |row| {
            row.get(0)
        })?;
        Ok(n as u64)
    };
    Ok(StoredRows {
        raised_requests: count("raised_requests")?,
        tokens: count("elicit_tokens")?,
        consumed_states: count("consumed_states")?,
        events: count("events")?,
    })
}
