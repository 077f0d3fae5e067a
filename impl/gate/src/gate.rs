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

use std::fmt;
use std::sync::Arc;

use serde_json::json;
use sha2::{Digest, Sha256};

use crate::clock::{Clock, Entropy};
use crate::events::{Counters, CountersSnapshot, Event, EventName, RefusalReason, caller_hash};
use crate::request_state::OpenedState;
use crate::state_fp::{InvalidStateFp, StateFp};
use crate::store::{
    self, Durability, NewEvent, NewRaise, NewToken, Store, StoreError, SweepReport,
};
use crate::verifier::{BuiltinVerifier, Verifier};

/// Random bytes in a CLI token (gate.token.random: 128 bits).
const TOKEN_BYTES: usize = 16;

/// Whether a requestState may authorize the same call more than once within its TTL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RequestStateMode {
    /// The seed's default (state.replayable): authenticated and expiring, not consumed.
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
    /// The seed's default confirmation TTL.
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

/// A minted token. Its `Debug` never shows the secret (gate.token.never-logged); the CLI
/// prints it once with [`ElicitToken::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct ElicitToken(String);

impl ElicitToken {
    /// The token text, for the one place that hands it to the human.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ElicitToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ElicitToken(<redacted>)")
    }
}

/// What [`Gate::issue`] and [`Gate::issue_unbound`] return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedToken {
    pub token: ElicitToken,
    pub call: BoundCall,
    /// The state the token is bound to; None for an unbound library token.
    pub state_fp: Option<StateFp>,
    pub expires_at_ms: i64,
}

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

/// Why a token could not be minted. Each message says what to do next (the CLI prints it).
#[derive(Debug, thiserror::Error)]
pub enum MintError {
    #[error(
        "no pending confirmation request for this args_hash and caller in vault `{vault}`: \
         run the blocked call again first, and pass --caller with the caller that was blocked"
    )]
    NoRaisedRequest { vault: String },
    #[error(
        "the pending request for this args_hash is for tool `{raised_tool}`, not `{given_tool}`: \
         pass --tool {raised_tool}"
    )]
    ToolMismatch {
        raised_tool: String,
        given_tool: String,
    },
    #[error(
        "--state-fp names a state that a newer request for the same call replaced: copy the \
         command from the latest elicit_required refusal"
    )]
    StaleStateFp,
    #[error(
        "--state-fp names a state no request for this call recorded: copy the command from \
         the latest elicit_required refusal"
    )]
    UnknownStateFp,
    #[error("--state-fp is malformed: {0}")]
    InvalidStateFp(#[from] InvalidStateFp),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Which binding of a token differs from the call presenting it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindingMismatch {
    Vault,
    /// The args_hash, and with it the tool and arguments.
    ArgsHash,
    Caller,
}

/// Why a token was not redeemed. Only [`RedeemError::ReplayDrift`] spends the token.
#[derive(Debug, thiserror::Error)]
pub enum RedeemError {
    #[error("the confirmation token is unknown: mint one with obsidian-tc elicit")]
    UnknownToken,
    #[error("the confirmation token was issued for a different {0:?}")]
    Mismatch(BindingMismatch),
    #[error(
        "the confirmation token has expired: repeat the call without it to request a fresh one"
    )]
    Expired,
    #[error(
        "the confirmation token was already used: repeat the call without it to request a fresh one"
    )]
    AlreadySpent,
    #[error(
        "replay_drift: the target changed since the confirmation was requested; nothing was \
         applied and the token is spent: repeat the call without a token to request a fresh one"
    )]
    ReplayDrift,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl RedeemError {
    fn refusal_reason(&self) -> Option<RefusalReason> {
        match self {
            RedeemError::UnknownToken => Some(RefusalReason::UnknownToken),
            RedeemError::Mismatch(BindingMismatch::Vault) => Some(RefusalReason::WrongVault),
            RedeemError::Mismatch(BindingMismatch::ArgsHash) => Some(RefusalReason::WrongArgs),
            RedeemError::Mismatch(BindingMismatch::Caller) => Some(RefusalReason::WrongCaller),
            RedeemError::Expired => Some(RefusalReason::Expired),
            RedeemError::AlreadySpent => Some(RefusalReason::AlreadySpent),
            RedeemError::ReplayDrift => Some(RefusalReason::ReplayDrift),
            RedeemError::Store(_) => None,
        }
    }
}

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
/// [`Gate::record_handler_run`] (the CLI route records through [`Redemption::enter_handler`]).
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

fn token_id_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A token is 32 lowercase hex digits; anything else cannot be one we minted.
fn normalize_token(token: &str) -> Option<String> {
    let token = token.trim();
    (token.len() == TOKEN_BYTES * 2 && token.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| token.to_ascii_lowercase())
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

    fn record(
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
                detail: &detail.to_string(),
            },
        )
    }

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
                let state_fp = StateFp::parse(&row.state_fp)
                    .map_err(|_| StoreError::Corrupt("raised_requests.state_fp".into()))?;
                Ok(RaisedRequest {
                    call: BoundCall {
                        vault: vault.to_owned(),
                        tool: row.tool,
                        args_hash: args_hash.to_owned(),
                        caller: caller.to_owned(),
                    },
                    state_fp,
                    raised_at_ms: row.raised_at,
                    expires_at_ms: row.expires_at,
                    superseded_older: false,
                    summary: row.summary,
                })
            })
            .transpose()
    }

    fn new_token(&self) -> (ElicitToken, String) {
        let mut bytes = [0u8; TOKEN_BYTES];
        self.inner.entropy.fill(&mut bytes);
        let token = hex::encode(bytes);
        let id_hash = token_id_hash(&token);
        (ElicitToken(token), id_hash)
    }

    // r[impl cli.elicit.requires-raise]
    // r[impl cli.elicit.state-fp]
    // r[impl gate.token.state-bound]
    /// Mints a CLI token for a call that was refused with elicit_required: refused unless a
    /// live raised request exists for (vault, args_hash, caller); with `state_fp`, refused
    /// unless it names that request's own fingerprint. The token is bound to the recorded
    /// fingerprint and expires after the configured TTL. The mint skips its own disk sync:
    /// losing it to a power cut only loses the token (see `store`'s durability note).
    pub fn issue(
        &self,
        call: &CallBinding<'_>,
        state_fp: Option<&str>,
    ) -> Result<IssuedToken, MintError> {
        let wanted_fp = state_fp.map(StateFp::parse).transpose()?;
        let now = self.now();
        let expires_at = self.expiry_from(now);
        let (token, id_hash) = self.new_token();
        let bound_fp = self.inner.store.write(Durability::Relaxed, |tx| {
            let raised = store::raised_row(tx, call.vault, call.args_hash, call.caller)?
                .filter(|row| row.expires_at > now)
                .ok_or_else(|| MintError::NoRaisedRequest {
                    vault: call.vault.to_owned(),
                })?;
            if raised.tool != call.tool {
                return Err(MintError::ToolMismatch {
                    raised_tool: raised.tool,
                    given_tool: call.tool.to_owned(),
                });
            }
            if let Some(wanted) = &wanted_fp
                && wanted.as_str() != raised.state_fp
            {
                let stale = store::is_superseded(
                    tx,
                    call.vault,
                    call.args_hash,
                    call.caller,
                    wanted.as_str(),
                )?;
                return Err(if stale {
                    MintError::StaleStateFp
                } else {
                    MintError::UnknownStateFp
                });
            }
            store::insert_token(
                tx,
                &NewToken {
                    id_hash: &id_hash,
                    vault: call.vault,
                    tool: call.tool,
                    args_hash: call.args_hash,
                    caller: call.caller,
                    state_fp: Some(&raised.state_fp),
                    created_at: now,
                    expires_at,
                },
            )?;
            Self::record(
                tx,
                now,
                EventName::Minted,
                Some(call),
                json!({ "bound": true, "state_fp": raised.state_fp, "expires_at": expires_at }),
            )?;
            Ok(raised.state_fp)
        })?;
        self.inner.counters.minted();
        let state_fp = StateFp::parse(&bound_fp)
            .map_err(|_| StoreError::Corrupt("raised_requests.state_fp".into()))?;
        Ok(IssuedToken {
            token,
            call: BoundCall::from_binding(call),
            state_fp: Some(state_fp),
            expires_at_ms: expires_at,
        })
    }

    // r[impl gate.token.unbound-library]
    /// Mints a token for an embedder with no raised request behind it: bound to the call,
    /// single-use and expiring like any token, but with no state binding (no drift check).
    pub fn issue_unbound(&self, call: &CallBinding<'_>) -> Result<IssuedToken, StoreError> {
        let now = self.now();
        let expires_at = self.expiry_from(now);
        let (token, id_hash) = self.new_token();
        self.inner.store.write(Durability::Relaxed, |tx| {
            store::insert_token(
                tx,
                &NewToken {
                    id_hash: &id_hash,
                    vault: call.vault,
                    tool: call.tool,
                    args_hash: call.args_hash,
                    caller: call.caller,
                    state_fp: None,
                    created_at: now,
                    expires_at,
                },
            )?;
            Self::record(
                tx,
                now,
                EventName::Minted,
                Some(call),
                json!({ "bound": false, "expires_at": expires_at }),
            )
        })?;
        self.inner.counters.minted();
        Ok(IssuedToken {
            token,
            call: BoundCall::from_binding(call),
            state_fp: None,
            expires_at_ms: expires_at,
        })
    }

    // r[impl gate.token.check-before-consume]
    // r[impl gate.token.single-use]
    // r[impl gate.token.durable-consume]
    // r[impl drift.refuse]
    /// Redeems a CLI token for `call`. Every binding is checked first and a failed check
    /// leaves the token as it was; then the token is spent with a committed, fully synced
    /// UPDATE; then `current_fp` is computed and compared with the bound fingerprint (not for
    /// unbound library tokens). Drift is refused with the token spent.
    pub fn redeem(
        &self,
        token: &str,
        call: &CallBinding<'_>,
        current_fp: impl FnOnce() -> StateFp,
    ) -> Result<Redemption, RedeemError> {
        let outcome = self.redeem_inner(token, call, current_fp);
        if let Err(error) = &outcome
            && let Some(reason) = error.refusal_reason()
        {
            self.inner.counters.refused(reason);
        }
        outcome
    }

    fn redeem_inner(
        &self,
        token: &str,
        call: &CallBinding<'_>,
        current_fp: impl FnOnce() -> StateFp,
    ) -> Result<Redemption, RedeemError> {
        let token = normalize_token(token).ok_or(RedeemError::UnknownToken)?;
        let id_hash = token_id_hash(&token);
        let now = self.now();
        let row = self
            .inner
            .store
            .read(|conn| store::token_row(conn, &id_hash))?
            .ok_or(RedeemError::UnknownToken)?;
        if row.vault != call.vault {
            return Err(RedeemError::Mismatch(BindingMismatch::Vault));
        }
        if row.args_hash != call.args_hash {
            return Err(RedeemError::Mismatch(BindingMismatch::ArgsHash));
        }
        if row.caller != call.caller {
            return Err(RedeemError::Mismatch(BindingMismatch::Caller));
        }
        if now >= row.expires_at {
            return Err(RedeemError::Expired);
        }
        if row.consumed_at.is_some() {
            return Err(RedeemError::AlreadySpent);
        }
        // The race is decided here, not by the read above: only one UPDATE can match. It
        // returns once committed and synced, before the handler can be entered.
        let won = self.inner.store.consume(&id_hash, now)?;
        if !won {
            return Err(RedeemError::AlreadySpent);
        }
        if let Some(bound) = &row.state_fp
            && current_fp().as_str() != bound
        {
            return Err(RedeemError::ReplayDrift);
        }
        Ok(Redemption {
            gate: self.clone(),
            id_hash,
            consumed_at: now,
            call: BoundCall::from_binding(call),
        })
    }

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

    fn record_consumed(&self, call: &CallBinding<'_>, route: &str) -> Result<(), StoreError> {
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

    // r[impl state.ext.single-use]
    /// Admits a verified requestState before its handler runs. Replayable mode (the seed's
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

    // r[impl gate.raise.sweep]
    // r[impl state.ext.sweep]
    /// Removes expired raised requests (with their superseded fingerprints), consumed
    /// requestState ids past their state's expiry, and tokens a TTL past their expiry.
    pub fn sweep(&self) -> Result<SweepReport, StoreError> {
        let now = self.now();
        let retention = self.inner.config.ttl_ms;
        self.inner
            .store
            .write(Durability::Synced, |tx| store::sweep(tx, now, retention))
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
                    detail,
                })
            })
            .collect()
    }

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
    gate: Gate,
    id_hash: String,
    consumed_at: i64,
    call: BoundCall,
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
