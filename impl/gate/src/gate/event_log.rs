//! The gate's event log: recording tc.* events in the transaction of the change they
//! describe, and reading them back (spec/events.md events.durable, events.fields,
//! events.consumed, events.overflow, events.caller-named; the event names and counters are
//! `crate::events`).

use serde_json::json;

use super::{CallBinding, Gate};
use crate::events::{Event, EventName, caller_hash};
use crate::store::{self, NewEvent, StoreError};

impl Gate {
    pub(super) fn record(
        conn: &rusqlite::Connection,
        at: i64,
        name: EventName,
        call: Option<&CallBinding<'_>>,
        detail: serde_json::Value,
    ) -> Result<i64, StoreError> {
        let hashed_caller = call.map(|c| caller_hash(c.caller));
        store::insert_event(
            conn,
            &NewEvent {
                at,
                name: name.as_str(),
                vault: call.map(|c| c.vault),
                tool: call.map(|c| c.tool),
                args_hash: call.map(|c| c.args_hash),
                caller_hash: hashed_caller.as_deref(),
                caller: call.map(|c| c.caller),
                detail: &detail.to_string(),
            },
        )
    }

    pub(super) fn record_consumed(
        &self,
        call: &CallBinding<'_>,
        route: &str,
    ) -> Result<(), StoreError> {
        let now = self.now();
        self.inner.store.with_conn(|conn| {
            Self::record(
                conn,
                now,
                EventName::Consumed,
                Some(call),
                json!({ "route": route }),
            )
        })?;
        self.inner.counters.consumed();
        Ok(())
    }

    // r[impl events.refused]
    /// Records that `call`'s confirmation was refused, and why (`approval_declined`,
    /// `approval_not_obtained`, `replay_drift`, `token_expired`, `token_spent`,
    /// `token_invalid`): the audit log's answer to "who said no, and when".
    pub fn record_refusal(&self, call: &CallBinding<'_>, reason: &str) -> Result<(), StoreError> {
        let now = self.now();
        self.inner.store.with_conn(|conn| {
            Self::record(
                conn,
                now,
                EventName::Refused,
                Some(call),
                json!({ "reason": reason }),
            )
        })?;
        Ok(())
    }

    // r[impl events.recovered]
    /// Records what the server did at start-up with work a killed process left half done in
    /// vault `vault` (`detail` says what: the operation, its paths, what was finished).
    pub fn record_recovery(
        &self,
        vault: &str,
        detail: serde_json::Value,
    ) -> Result<(), StoreError> {
        let now = self.now();
        self.inner.store.with_conn(|conn| {
            store::insert_event(
                conn,
                &store::NewEvent {
                    at: now,
                    name: EventName::Recovered.as_str(),
                    vault: Some(vault),
                    tool: detail.get("tool").and_then(serde_json::Value::as_str),
                    args_hash: None,
                    caller_hash: None,
                    caller: Some("server"),
                    detail: &detail.to_string(),
                },
            )
        })?;
        Ok(())
    }

    /// Records a governor refusal (governor.counted): a tc.governor.overflow event with the
    /// size (or its lower bound) and the limit.
    pub fn record_overflow(
        &self,
        call: &CallBinding<'_>,
        result_size_at_least: u64,
        limit: u64,
    ) -> Result<(), StoreError> {
        let now = self.now();
        self.inner.store.with_conn(|conn| {
            Self::record(
                conn,
                now,
                EventName::Overflow,
                Some(call),
                json!({ "result_size": result_size_at_least, "limit": limit }),
            )
        })?;
        self.inner.counters.overflow();
        Ok(())
    }

    /// Events with an id greater than `after_id` (0 for the first), oldest first, at most
    /// `limit`.
    pub fn events(&self, after_id: i64, limit: usize) -> Result<Vec<Event>, StoreError> {
        let rows = self
            .inner
            .store
            .read(|conn| store::events_after(conn, after_id, limit))?;
        rows.into_iter()
            .map(|row| {
                let name = EventName::parse(&row.name)
                    .ok_or_else(|| StoreError::Corrupt(format!("event name {:?}", row.name)))?;
                let detail = serde_json::from_str(&row.detail)
                    .map_err(|e| StoreError::Corrupt(format!("event detail: {e}")))?;
                Ok(Event {
                    id: row.id,
                    at_ms: row.at,
                    name,
                    vault: row.vault,
                    tool: row.tool,
                    args_hash: row.args_hash,
                    caller_hash: row.caller_hash,
                    caller: row.caller,
                    detail,
                })
            })
            .collect()
    }
}
