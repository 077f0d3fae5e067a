//! Raised requests: what a call refused for want of approval leaves behind for the operator
//! (spec/gate.md "Raised requests": gate.raise.record, gate.raise.supersede; the sweep is
//! [`Gate::sweep`]).

use serde_json::json;

use super::{BoundCall, CallBinding, Gate};
use crate::events::EventName;
use crate::state_fp::StateFp;
use crate::store::{self, Durability, NewRaise, StoreError};

/// A request retained for a call that was refused for want of approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaisedRequest {
    pub call: BoundCall,
    pub state_fp: StateFp,
    pub raised_at_ms: i64,
    pub expires_at_ms: i64,
    /// Whether this raise replaced a different fingerprint under the same key.
    pub superseded_older: bool,
    /// What the human approves, rendered (empty for a request raised without one).
    pub summary: String,
}

impl RaisedRequest {
    fn from_listed(listed: store::ListedRaise) -> Result<Self, StoreError> {
        let state_fp = StateFp::parse(&listed.row.state_fp)
            .map_err(|_| StoreError::Corrupt("raised_requests.state_fp".into()))?;
        Ok(RaisedRequest {
            call: BoundCall {
                vault: listed.vault,
                tool: listed.row.tool,
                args_hash: listed.args_hash,
                caller: listed.caller,
            },
            state_fp,
            raised_at_ms: listed.row.raised_at,
            expires_at_ms: listed.row.expires_at,
            superseded_older: false,
            summary: listed.row.summary,
        })
    }
}

impl Gate {
    // r[impl gate.raise.record]
    // r[impl gate.raise.supersede]
    /// Records that `call` was refused for want of approval while its targets had
    /// `state_fp`, superseding an older request under the same vault, args_hash and caller.
    pub fn raise(
        &self,
        call: &CallBinding<'_>,
        state_fp: &StateFp,
    ) -> Result<RaisedRequest, StoreError> {
        self.raise_with_summary(call, state_fp, "")
    }

    // r[impl gate.raise.forget-deleted]
    /// After `path` of `vault` was deleted permanently: every raised request whose summary
    /// names it keeps its place (a mint still finds it, and its state has drifted) but loses
    /// its preview, which may quote the deleted text, overwritten in place and checkpointed
    /// out of the write-ahead log. Returns how many were redacted.
    pub fn forget_previews(&self, vault: &str, path: &str) -> Result<usize, StoreError> {
        if path.is_empty() {
            return Ok(0);
        }
        let redacted = self.inner.store.write(Durability::Synced, |tx| {
            tx.execute(
                "UPDATE raised_requests
                 SET summary = tool || ' in vault ' || vault || char(10)
                     || 'what this request would change is no longer shown: ' || ?2
                     || ' was deleted permanently, and every copy of its text with it'
                 WHERE vault = ?1 AND instr(summary, ?2) > 0",
                rusqlite::params![vault, path],
            )
            .map_err(StoreError::from)
        })?;
        if redacted > 0 {
            self.inner.store.with_conn(|conn| {
                conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                    .map_err(StoreError::from)
            })?;
        }
        Ok(redacted)
    }

    /// [`Gate::raise`], keeping `summary` (what the human approves, already rendered:
    /// bounded and escaped) with the request.
    pub fn raise_with_summary(
        &self,
        call: &CallBinding<'_>,
        state_fp: &StateFp,
        summary: &str,
    ) -> Result<RaisedRequest, StoreError> {
        let now = self.now();
        let expires_at = self.expiry_from(now);
        let superseded_older = self.inner.store.write(Durability::Relaxed, |tx| -> Result<bool, StoreError> {
            let superseded = store::upsert_raise(
                tx,
                &NewRaise {
                    vault: call.vault,
                    args_hash: call.args_hash,
                    caller: call.caller,
                    tool: call.tool,
                    state_fp: state_fp.as_str(),
                    raised_at: now,
                    expires_at,
                    summary,
                },
            )?;
            Self::record(
                tx,
                now,
                EventName::Requested,
                Some(call),
                json!({ "state_fp": state_fp.as_str(), "superseded_older": superseded, "expires_at": expires_at }),
            )?;
            Ok(superseded)
        })?;
        self.inner.counters.requested();
        Ok(RaisedRequest {
            call: BoundCall::from_binding(call),
            state_fp: state_fp.clone(),
            raised_at_ms: now,
            expires_at_ms: expires_at,
            superseded_older,
            summary: summary.to_owned(),
        })
    }

    /// The live requests for (args_hash, caller) in every vault (an indexed lookup, for a
    /// mint that does not name its vault).
    pub fn raised_requests_for(
        &self,
        args_hash: &str,
        caller: &str,
    ) -> Result<Vec<RaisedRequest>, StoreError> {
        let now = self.now();
        let rows = self
            .inner
            .store
            .read(|conn| store::raised_rows_for(conn, args_hash, caller, now))?;
        rows.into_iter().map(RaisedRequest::from_listed).collect()
    }

    // r[impl cli.pending.lists]
    /// The live requests, newest first, of one vault and one caller when given, at most
    /// `limit`: the requests a mint can still be made for.
    pub fn pending(
        &self,
        vault: Option<&str>,
        caller: Option<&str>,
        limit: usize,
    ) -> Result<Vec<RaisedRequest>, StoreError> {
        let now = self.now();
        let rows = self
            .inner
            .store
            .read(|conn| store::pending_rows(conn, vault, caller, now, limit))?;
        rows.into_iter().map(RaisedRequest::from_listed).collect()
    }

    /// The live request retained for (vault, args_hash, caller), if any.
    pub fn raised_request(
        &self,
        vault: &str,
        args_hash: &str,
        caller: &str,
    ) -> Result<Option<RaisedRequest>, StoreError> {
        let now = self.now();
        let row = self
            .inner
            .store
            .read(|conn| store::raised_row(conn, vault, args_hash, caller))?;
        row.filter(|row| row.expires_at > now)
            .map(|row| {
                RaisedRequest::from_listed(store::ListedRaise {
                    vault: vault.to_owned(),
                    args_hash: args_hash.to_owned(),
                    caller: caller.to_owned(),
                    row,
                })
            })
            .transpose()
    }
}
