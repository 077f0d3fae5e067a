//! The gate facade: raised requests, CLI tokens, redemption, release, requestState admission
//! and events over one `cache.db` (spec sections gate, release, drift, state.ext, events;
//! seed "Human-in-the-loop elicitation", "Stale confirmations are refused", "A token minted
//! with no raised request is refused by the CLI").
//!
//! The life of a CLI token: a gated call without approval is refused and [`Gate::raise`]d;
//! the operator mints with [`Gate::issue`]; the call comes back with the token and
//! [`Gate::redeem`] checks every binding, spends it durably, and checks drift; the caller
//! then reports what happened through the [`Redemption`] guard, whose API can only give the
//! token back for an outcome that had no effect.
//!
//! This file holds the settings, the call binding, the [`Gate`] itself and the sweep; the
//! rest of the facade is split by responsibility, each part re-exported here:
//! `gate/raise.rs` (raised requests), `gate/tokens.rs` (minting and redeeming CLI tokens),
//! `gate/release.rs` (what happened after a redemption, and giving a token back),
//! `gate/non_token_routes.rs` (requestState admission and the drift check of the other
//! routes) and `gate/event_log.rs` (recording events and reading them back).

mod event_log;
mod non_token_routes;
mod raise;
mod release;
mod tokens;

use std::fmt;
use std::sync::Arc;

use crate::clock::{Clock, Entropy};
use crate::events::{Counters, CountersSnapshot};
use crate::store::{self, Durability, Store, StoreError, SweepReport};

/// How long the audit log keeps an event: 90 days (spec `events.retention`).
pub const EVENT_RETENTION_MS: i64 = 90 * 24 * 60 * 60 * 1000;

pub use self::non_token_routes::{AdmitError, NonTokenRoute, ReplayDrift};
pub use self::raise::RaisedRequest;
pub use self::release::{
    HandlerRun, InHandlerNoEffect, NoEffect, Redemption, ReleaseOutcome, ReleaseReason,
    ReleaseTicket, SpentReason,
};
pub use self::tokens::{BindingMismatch, ElicitToken, IssuedToken, MintError, RedeemError};

/// Whether a requestState may authorize the same call more than once within its TTL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RequestStateMode {
    /// The default (state.replayable): authenticated and expiring, not consumed.
    #[default]
    Replayable,
    /// The extension (state.ext.single-use): each state id is admitted once.
    SingleUse,
}

/// The gate's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GateConfig {
    ttl_ms: i64,
    request_state_mode: RequestStateMode,
}

/// A confirmation TTL that is not a positive number of seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("elicitTtlSeconds must be a positive number of seconds, not {0}")]
pub struct InvalidTtl(pub i64);

impl GateConfig {
    /// The default confirmation TTL.
    pub const DEFAULT_TTL_SECONDS: i64 = 300;

    /// `elicitTtlSeconds` as configured; non-positive values are refused at start-up.
    pub fn new(ttl_seconds: i64) -> Result<Self, InvalidTtl> {
        if ttl_seconds <= 0 || ttl_seconds > i64::MAX / 1000 {
            return Err(InvalidTtl(ttl_seconds));
        }
        Ok(GateConfig {
            ttl_ms: ttl_seconds * 1000,
            request_state_mode: RequestStateMode::Replayable,
        })
    }

    pub fn with_request_state_mode(mut self, mode: RequestStateMode) -> Self {
        self.request_state_mode = mode;
        self
    }

    pub fn ttl_ms(&self) -> i64 {
        self.ttl_ms
    }

    pub fn request_state_mode(&self) -> RequestStateMode {
        self.request_state_mode
    }
}

impl Default for GateConfig {
    fn default() -> Self {
        GateConfig {
            ttl_ms: Self::DEFAULT_TTL_SECONDS * 1000,
            request_state_mode: RequestStateMode::Replayable,
        }
    }
}

/// The exact call an approval is about: vault, tool, args_hash and the calling principal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CallBinding<'a> {
    pub vault: &'a str,
    pub tool: &'a str,
    pub args_hash: &'a str,
    pub caller: &'a str,
}

/// An owned [`CallBinding`], as held by guards that outlive the request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BoundCall {
    pub vault: String,
    pub tool: String,
    pub args_hash: String,
    pub caller: String,
}

impl BoundCall {
    fn from_binding(call: &CallBinding<'_>) -> Self {
        BoundCall {
            vault: call.vault.to_owned(),
            tool: call.tool.to_owned(),
            args_hash: call.args_hash.to_owned(),
            caller: call.caller.to_owned(),
        }
    }

    fn as_binding(&self) -> CallBinding<'_> {
        CallBinding {
            vault: &self.vault,
            tool: &self.tool,
            args_hash: &self.args_hash,
            caller: &self.caller,
        }
    }
}

struct GateInner {
    store: Store,
    clock: Arc<dyn Clock>,
    entropy: Arc<dyn Entropy>,
    config: GateConfig,
    counters: Counters,
}

/// The confirmation gate over one `cache.db`. Cloning shares the same store and counters.
#[derive(Clone)]
pub struct Gate {
    inner: Arc<GateInner>,
}

impl fmt::Debug for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gate")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Gate {
    pub fn new(
        store: Store,
        clock: Arc<dyn Clock>,
        entropy: Arc<dyn Entropy>,
        config: GateConfig,
    ) -> Self {
        Gate {
            inner: Arc::new(GateInner {
                store,
                clock,
                entropy,
                config,
                counters: Counters::default(),
            }),
        }
    }

    pub fn config(&self) -> GateConfig {
        self.inner.config
    }

    pub fn request_state_mode(&self) -> RequestStateMode {
        self.inner.config.request_state_mode
    }

    pub fn counters(&self) -> CountersSnapshot {
        self.inner.counters.snapshot()
    }

    fn now(&self) -> i64 {
        self.inner.clock.now_ms()
    }

    fn expiry_from(&self, now: i64) -> i64 {
        now.saturating_add(self.inner.config.ttl_ms)
    }
    /// How many rows cache.db holds per table, expired or not (nothing is removed).
    pub fn stored_rows(&self) -> Result<store::StoredRows, StoreError> {
        self.inner.store.read(store::stored_rows)
    }

    // r[impl gate.raise.sweep]
    // r[impl state.ext.sweep]
    // r[impl events.retention]
    /// Removes expired raised requests (with their superseded fingerprints), consumed
    /// requestState ids past their state's expiry, tokens a TTL past their expiry, and
    /// events older than [`EVENT_RETENTION_MS`].
    pub fn sweep(&self) -> Result<SweepReport, StoreError> {
        let now = self.now();
        let retention = self.inner.config.ttl_ms;
        self.inner.store.write(Durability::Synced, |tx| {
            store::sweep(tx, now, retention, EVENT_RETENTION_MS)
        })
    }
}
