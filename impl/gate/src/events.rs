//! The gate's audit events and counters (clauses events.durable, events.requested,
//! events.released, events.overflow, events.minted, events.caller-named,
//! gate.token.never-logged).
//!
//! Events live in `cache.db` next to the state they describe, written in the same
//! transaction where there is one. No event field ever holds a token. The caller is stored
//! by its id (who asked, who was approved, who ran each call: the audit log answers for the
//! principal) and by a hash prefix that stays comparable across rows written before the id
//! was kept.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

/// Hex digits kept of the caller's SHA-256 (64 bits: enough to tell callers apart in an
/// audit trail, not a way back to the id).
const CALLER_HASH_HEX_LEN: usize = 16;

/// The event names, spelled exactly as spec/events.md fixes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventName {
    /// A gated call was refused for want of approval and a request was raised.
    Requested,
    /// A handler ran on an approval (once per run, whatever the route).
    Consumed,
    /// A spent CLI token was given back because the call had no effect.
    Released,
    /// The governor refused an oversized tool response.
    Overflow,
    /// A confirmation token was minted.
    Minted,
    /// A call's confirmation was refused: declined, not obtained, drifted, or a token that
    /// approved nothing (the reason is in the detail).
    Refused,
    /// Work a killed process left half done was finished or dropped at start-up (what, in
    /// the detail).
    Recovered,
}

impl EventName {
    pub const ALL: [EventName; 7] = [
        EventName::Requested,
        EventName::Consumed,
        EventName::Released,
        EventName::Overflow,
        EventName::Minted,
        EventName::Refused,
        EventName::Recovered,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventName::Requested => "tc.elicit.requested",
            EventName::Consumed => "tc.elicit.consumed",
            EventName::Released => "hitl_released",
            EventName::Overflow => "tc.governor.overflow",
            EventName::Minted => "elicit_minted",
            EventName::Refused => "tc.elicit.refused",
            EventName::Recovered => "tc.recovery.replayed",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        EventName::ALL.into_iter().find(|n| n.as_str() == name)
    }
}

impl fmt::Display for EventName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One recorded event, as an operator reads it back.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Increasing; pass the last one seen to [`crate::Gate::events`] to read on.
    pub id: i64,
    /// Milliseconds since the Unix epoch.
    pub at_ms: i64,
    pub name: EventName,
    pub vault: Option<String>,
    pub tool: Option<String>,
    pub args_hash: Option<String>,
    /// [`caller_hash`] of the caller.
    pub caller_hash: Option<String>,
    /// The caller id (the JWT subject on HTTP, `stdio` locally); `None` in rows written
    /// before ids were kept, and in events about no call.
    pub caller: Option<String>,
    /// Event-specific fields (a JSON object).
    pub detail: serde_json::Value,
}

/// The form a caller id takes in events: the first 16 hex digits of its SHA-256.
pub fn caller_hash(caller: &str) -> String {
    let mut hex = hex::encode(Sha256::digest(caller.as_bytes()));
    hex.truncate(CALLER_HASH_HEX_LEN);
    hex
}

/// Why a redemption or admission was refused, as a metrics label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RefusalReason {
    UnknownToken,
    WrongVault,
    WrongArgs,
    WrongCaller,
    Expired,
    AlreadySpent,
    ReplayDrift,
    StateAlreadyUsed,
}

impl RefusalReason {
    pub const ALL: [RefusalReason; 8] = [
        RefusalReason::UnknownToken,
        RefusalReason::WrongVault,
        RefusalReason::WrongArgs,
        RefusalReason::WrongCaller,
        RefusalReason::Expired,
        RefusalReason::AlreadySpent,
        RefusalReason::ReplayDrift,
        RefusalReason::StateAlreadyUsed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RefusalReason::UnknownToken => "unknown_token",
            RefusalReason::WrongVault => "wrong_vault",
            RefusalReason::WrongArgs => "wrong_args",
            RefusalReason::WrongCaller => "wrong_caller",
            RefusalReason::Expired => "expired",
            RefusalReason::AlreadySpent => "already_spent",
            RefusalReason::ReplayDrift => "replay_drift",
            RefusalReason::StateAlreadyUsed => "state_already_used",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Process-local counters behind the `/metrics` endpoint (the events table is the durable
/// record; these restart at zero with the process, as Prometheus counters do).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    requested: AtomicU64,
    minted: AtomicU64,
    consumed: AtomicU64,
    released: AtomicU64,
    kept_spent: AtomicU64,
    overflows: AtomicU64,
    refused: [AtomicU64; RefusalReason::ALL.len()],
}

impl Counters {
    pub(crate) fn requested(&self) {
        self.requested.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn minted(&self) {
        self.minted.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn consumed(&self) {
        self.consumed.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn released(&self) {
        self.released.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn kept_spent(&self) {
        self.kept_spent.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn overflow(&self) {
        self.overflows.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn refused(&self, reason: RefusalReason) {
        self.refused[reason.index()].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> CountersSnapshot {
        CountersSnapshot {
            requested: self.requested.load(Ordering::Relaxed),
            minted: self.minted.load(Ordering::Relaxed),
            consumed: self.consumed.load(Ordering::Relaxed),
            released: self.released.load(Ordering::Relaxed),
            kept_spent: self.kept_spent.load(Ordering::Relaxed),
            overflows: self.overflows.load(Ordering::Relaxed),
            refused: RefusalReason::ALL
                .into_iter()
                .map(|reason| (reason, self.refused[reason.index()].load(Ordering::Relaxed)))
                .collect(),
        }
    }
}

/// A point-in-time copy of the counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountersSnapshot {
    /// Confirmations requested (raised requests).
    pub requested: u64,
    /// Tokens minted (CLI and library).
    pub minted: u64,
    /// Handler runs on an approval (tc.elicit.consumed).
    pub consumed: u64,
    /// Tokens given back (hitl_released).
    pub released: u64,
    /// Spent tokens whose outcome was reported as keeping them spent.
    pub kept_spent: u64,
    /// Governor refusals recorded through the gate.
    pub overflows: u64,
    /// Refusals by reason, every reason listed (zero included) in [`RefusalReason::ALL`] order.
    pub refused: Vec<(RefusalReason, u64)>,
}

impl CountersSnapshot {
    pub fn refused_for(&self, reason: RefusalReason) -> u64 {
        self.refused
            .iter()
            .find(|(r, _)| *r == reason)
            .map_or(0, |(_, n)| *n)
    }
}
