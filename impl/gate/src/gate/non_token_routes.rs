//! Approvals that arrive by a route other than the CLI token: requestState admission, the
//! drift check of routes that carry their own fingerprint, and the record of each handler run
//! (spec/state.md state.ext.single-use; spec/drift.md drift.refuse; spec/trips.md
//! trip.consumed-event-per-run).

use super::{CallBinding, Gate, RequestStateMode};
use crate::events::RefusalReason;
use crate::request_state::OpenedState;
use crate::state_fp::StateFp;
use crate::store::{self, StoreError};

/// The recomputed fingerprint differs from the one the approval covers (drift.refuse).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "replay_drift: the target changed since the confirmation was requested; nothing was applied"
)]
pub struct ReplayDrift;

/// Why a requestState was not admitted.
#[derive(Debug, thiserror::Error)]
pub enum AdmitError {
    #[error("this confirmation was already used: repeat the call to request a fresh one")]
    AlreadyUsed,
    #[error("this confirmation has expired: repeat the call to request a fresh one")]
    Expired,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Routes other than the CLI token, whose handler runs the gate records through
/// [`Gate::record_handler_run`] (the CLI route records through
/// [`Redemption::enter_handler`](super::Redemption::enter_handler)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonTokenRoute {
    RequestState,
    LegacyShim,
    CallCapability,
}

impl NonTokenRoute {
    fn as_str(self) -> &'static str {
        match self {
            NonTokenRoute::RequestState => "request_state",
            NonTokenRoute::LegacyShim => "legacy_shim",
            NonTokenRoute::CallCapability => "call_capability",
        }
    }
}

impl Gate {
    /// The drift check for routes that carry their fingerprint themselves (requestState, the
    /// legacy shim, call_capability): the approval's fingerprint against the current one.
    pub fn check_drift(&self, approved: &StateFp, current: &StateFp) -> Result<(), ReplayDrift> {
        if approved == current {
            Ok(())
        } else {
            self.inner.counters.refused(RefusalReason::ReplayDrift);
            Err(ReplayDrift)
        }
    }

    /// Records that a handler ran on an approval that arrived by a non-token route
    /// (trip.consumed-event-per-run): one tc.elicit.consumed per run.
    pub fn record_handler_run(
        &self,
        call: &CallBinding<'_>,
        route: NonTokenRoute,
    ) -> Result<(), StoreError> {
        self.record_consumed(call, route.as_str())
    }

    // r[impl state.ext.single-use]
    /// Admits a verified requestState before its handler runs. Replayable mode (the
    /// default) admits it every time within its TTL; SingleUse mode records its id durably
    /// (shared by every process on this cache.db) and refuses it the second time.
    pub fn admit_request_state(&self, opened: &OpenedState) -> Result<(), AdmitError> {
        self.admit_state_id(opened.id.as_str(), opened.expires_at_ms)
    }

    /// [`Gate::admit_request_state`] by the id and expiry a state carries.
    pub fn admit_state_id(&self, state_id: &str, expires_at_ms: i64) -> Result<(), AdmitError> {
        match self.inner.config.request_state_mode {
            RequestStateMode::Replayable => Ok(()),
            RequestStateMode::SingleUse => {
                if self.now() >= expires_at_ms {
                    self.inner.counters.refused(RefusalReason::Expired);
                    return Err(AdmitError::Expired);
                }
                let first = self.inner.store.with_conn(|conn| {
                    store::insert_consumed_state(conn, state_id, expires_at_ms)
                })?;
                if first {
                    Ok(())
                } else {
                    self.inner.counters.refused(RefusalReason::StateAlreadyUsed);
                    Err(AdmitError::AlreadyUsed)
                }
            }
        }
    }
}
