//! After a redemption: what happened, and giving a spent token back (spec/release.md:
//! release.no-effect-only, release.closed-set, release.keeps-spent, release.restores,
//! release.event, release.builtin-verifier; spec/trips.md trip.consumed-event-per-run).
//!
//! [`Redemption`], [`HandlerRun`] and [`ReleaseTicket`] are the guards a redeemed token
//! passes through; their API can only give the token back for an outcome that had no
//! effect, and dropping any of them keeps the token spent.

use std::fmt;

use serde_json::json;

use super::{BoundCall, Gate};
use crate::events::EventName;
use crate::store::{self, Durability, StoreError};
use crate::verifier::{BuiltinVerifier, Verifier};

/// Outcomes before the handler was entered that positively had no effect: the only ones a
/// spent token can be given back for (release.no-effect-only). There is deliberately no
/// variant for timeouts, 5xx, operation_timeout, handler errors or faults after return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoEffect {
    /// The central folder ACL refused the call after the confirmation gate (release.acl).
    FolderAclDenied,
    /// The call was cancelled before its handler was entered (release.cancel).
    CancelledBeforeHandler,
    /// The vault write gate refused with convention_blocked before any write (release.convention).
    ConventionBlockedBeforeWrite,
}

/// The one no-effect outcome once a handler has been entered: its write gate refused the
/// call with convention_blocked before any write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InHandlerNoEffect {
    ConventionBlockedBeforeWrite,
}

/// Outcomes that keep a token spent (release.keeps-spent), reported for the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpentReason {
    /// The handler finished normally.
    Completed,
    /// A timeout after the request was sent: the action may have run.
    Timeout,
    /// A 5xx from a companion plugin after the request was sent.
    Http5xx,
    /// operation_timeout from a companion plugin after the request was sent.
    OperationTimeout,
    /// An error the handler raised itself.
    HandlerError,
    /// A fault after the handler returned.
    FaultAfterReturn,
}

/// Why a token was released, as recorded in the hitl_released event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseReason {
    FolderAclDenied,
    CancelledBeforeHandler,
    ConventionBlockedBeforeWrite,
}

impl ReleaseReason {
    pub fn as_str(self) -> &'static str {
        match self {
            ReleaseReason::FolderAclDenied => "folder_acl_denied",
            ReleaseReason::CancelledBeforeHandler => "cancelled_before_handler",
            ReleaseReason::ConventionBlockedBeforeWrite => "convention_blocked_before_write",
        }
    }
}

impl From<NoEffect> for ReleaseReason {
    fn from(reason: NoEffect) -> Self {
        match reason {
            NoEffect::FolderAclDenied => ReleaseReason::FolderAclDenied,
            NoEffect::CancelledBeforeHandler => ReleaseReason::CancelledBeforeHandler,
            NoEffect::ConventionBlockedBeforeWrite => ReleaseReason::ConventionBlockedBeforeWrite,
        }
    }
}

impl From<InHandlerNoEffect> for ReleaseReason {
    fn from(reason: InHandlerNoEffect) -> Self {
        match reason {
            InHandlerNoEffect::ConventionBlockedBeforeWrite => {
                ReleaseReason::ConventionBlockedBeforeWrite
            }
        }
    }
}

/// What became of a release request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseOutcome {
    /// The token is unspent again, with its original expiry and bindings.
    Released { released_count: i64 },
    /// The token stays spent (the verifier does not implement release).
    KeptSpent,
}

impl Gate {
    fn release_spent(
        &self,
        id_hash: &str,
        consumed_at: i64,
        call: &BoundCall,
        reason: ReleaseReason,
        via: &str,
    ) -> Result<ReleaseOutcome, StoreError> {
        let now = self.now();
        let released = self.inner.store.write(
            Durability::Synced,
            |tx| -> Result<Option<i64>, StoreError> {
                let Some(count) = store::unconsume_token(tx, id_hash, consumed_at)? else {
                    return Ok(None);
                };
                Self::record(
                    tx,
                    now,
                    EventName::Released,
                    Some(&call.as_binding()),
                    json!({ "reason": reason.as_str(), "verifier": via, "released_count": count }),
                )?;
                Ok(Some(count))
            },
        )?;
        match released {
            Some(released_count) => {
                self.inner.counters.released();
                Ok(ReleaseOutcome::Released { released_count })
            }
            // The row was swept meanwhile; there is nothing left to give back.
            None => Ok(ReleaseOutcome::KeptSpent),
        }
    }
}

/// A spent CLI token, between redemption and the report of what happened. Dropping it
/// without a report keeps the token spent, which is always safe.
#[must_use = "report the outcome: enter_handler, release or keep_spent"]
pub struct Redemption {
    pub(super) gate: Gate,
    pub(super) id_hash: String,
    pub(super) consumed_at: i64,
    pub(super) call: BoundCall,
}

impl fmt::Debug for Redemption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redemption")
            .field("call", &self.call)
            .field("consumed_at", &self.consumed_at)
            .finish_non_exhaustive()
    }
}

impl Redemption {
    pub fn call(&self) -> &BoundCall {
        &self.call
    }

    // r[impl trip.consumed-event-per-run]
    /// The handler is being entered: records tc.elicit.consumed for this run. A token
    /// released before its handler and redeemed again records one event for the one run.
    pub fn enter_handler(self) -> Result<HandlerRun, StoreError> {
        self.gate
            .record_consumed(&self.call.as_binding(), "cli_token")?;
        Ok(HandlerRun { redemption: self })
    }

    // r[impl release.no-effect-only]
    /// The call stopped before its handler with an outcome that had no effect: the token is
    /// offered back through `verifier` (a custom verifier without `release` keeps it spent).
    pub fn release(
        self,
        reason: NoEffect,
        verifier: &dyn Verifier,
    ) -> Result<ReleaseOutcome, StoreError> {
        verifier.release(self.into_ticket(reason.into(), verifier.name()))
    }

    /// The call failed before its handler in a way that keeps the token spent.
    pub fn keep_spent(self, reason: SpentReason) {
        if reason != SpentReason::Completed {
            self.gate.inner.counters.kept_spent();
        }
    }

    fn into_ticket(self, reason: ReleaseReason, via: &'static str) -> ReleaseTicket {
        ReleaseTicket {
            gate: self.gate,
            id_hash: self.id_hash,
            consumed_at: self.consumed_at,
            call: self.call,
            reason,
            via,
        }
    }
}

/// A handler running on a redeemed CLI token.
#[must_use = "report the outcome: keep_spent, release or release_handler_level"]
#[derive(Debug)]
pub struct HandlerRun {
    redemption: Redemption,
}

impl HandlerRun {
    pub fn call(&self) -> &BoundCall {
        &self.redemption.call
    }

    /// The handler's write gate refused before any write: offered back through `verifier`.
    pub fn release(
        self,
        reason: InHandlerNoEffect,
        verifier: &dyn Verifier,
    ) -> Result<ReleaseOutcome, StoreError> {
        let ticket = self.redemption.into_ticket(reason.into(), verifier.name());
        verifier.release(ticket)
    }

    // r[impl release.builtin-verifier]
    /// A confirmation the tool checked inside its own handler, refused by the write gate
    /// before any write: released through the built-in verifier whatever custom verifier is
    /// configured (seed: update_task).
    pub fn release_handler_level(
        self,
        reason: InHandlerNoEffect,
    ) -> Result<ReleaseOutcome, StoreError> {
        self.release(reason, &BuiltinVerifier)
    }

    /// The run ended with the token staying spent (success, or a failure that may have had
    /// an effect).
    pub fn keep_spent(self, reason: SpentReason) {
        self.redemption.keep_spent(reason);
    }
}

/// The right to give one spent token back, for one no-effect reason. Only [`Redemption`]
/// and [`HandlerRun`] make these, so a verifier can release nothing else.
#[must_use = "a ticket only releases when restored"]
pub struct ReleaseTicket {
    gate: Gate,
    id_hash: String,
    consumed_at: i64,
    call: BoundCall,
    reason: ReleaseReason,
    via: &'static str,
}

impl fmt::Debug for ReleaseTicket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReleaseTicket")
            .field("call", &self.call)
            .field("reason", &self.reason)
            .field("via", &self.via)
            .finish_non_exhaustive()
    }
}

impl ReleaseTicket {
    pub fn call(&self) -> &BoundCall {
        &self.call
    }

    pub fn reason(&self) -> ReleaseReason {
        self.reason
    }

    // r[impl release.restores]
    // r[impl release.event]
    /// Gives the token back unspent, with its original expiry and bindings, and records
    /// hitl_released.
    pub fn restore(self) -> Result<ReleaseOutcome, StoreError> {
        self.gate.release_spent(
            &self.id_hash,
            self.consumed_at,
            &self.call,
            self.reason,
            self.via,
        )
    }

    /// Leaves the token spent.
    pub fn keep_spent(self) -> ReleaseOutcome {
        self.gate.inner.counters.kept_spent();
        ReleaseOutcome::KeptSpent
    }
}
