//! Minting and redeeming CLI tokens (spec/gate.md "CLI tokens": gate.token.random,
//! gate.token.state-bound, gate.token.check-before-consume, gate.token.single-use,
//! gate.token.durable-consume, gate.token.unbound-library, gate.token.never-logged;
//! spec/cli.md cli.elicit.requires-raise, cli.elicit.state-fp; spec/drift.md drift.refuse).
//!
//! A token is random, stored only as its SHA-256, bound to the call (and, when minted for a
//! raised request, to that request's fingerprint), and spent by [`Gate::redeem`] before the
//! handler can run; the [`Redemption`] it returns reports what happened next.

use std::fmt;

use serde_json::json;
use sha2::{Digest, Sha256};

use super::release::Redemption;
use super::{BoundCall, CallBinding, Gate};
use crate::events::{EventName, RefusalReason};
use crate::state_fp::{InvalidStateFp, StateFp};
use crate::store::{self, Durability, NewToken, StoreError};

/// Random bytes in a CLI token (gate.token.random: 128 bits).
const TOKEN_BYTES: usize = 16;

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

/// Why a token could not be minted. Each message says what to do next (the CLI prints it).
#[derive(Debug, thiserror::Error)]
pub enum MintError {
    #[error(
        "no pending confirmation request for this args_hash and caller in vault `{vault}` \
         (each blocked call backs one token, so a request already approved is used up): \
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
    // r[impl cli.elicit.one-mint-per-raise]
    // r[impl cli.elicit.ttl-cap]
    /// Mints a CLI token for a call that was refused with elicit_required: refused unless a
    /// live raised request exists for (vault, args_hash, caller); with `state_fp`, refused
    /// unless it names that request's own fingerprint. The token is bound to the recorded
    /// fingerprint, expires after the TTL of the server that raised the request (recorded
    /// as the request's own lifetime, whatever this gate's configuration says), and consumes
    /// the request, so one blocked call backs one token. The mint skips its own disk sync:
    /// losing it to a power cut only loses the token (see `store`'s durability note).
    pub fn issue(
        &self,
        call: &CallBinding<'_>,
        state_fp: Option<&str>,
    ) -> Result<IssuedToken, MintError> {
        self.issue_by(call, state_fp, None)
    }

    // r[impl events.minted-by]
    /// [`Gate::issue`], recording in the `elicit_minted` event who minted: `operator` names
    /// the person at the CLI (the local account), beside the caller whose call it approves.
    pub fn issue_by(
        &self,
        call: &CallBinding<'_>,
        state_fp: Option<&str>,
        operator: Option<&str>,
    ) -> Result<IssuedToken, MintError> {
        let wanted_fp = state_fp.map(StateFp::parse).transpose()?;
        let now = self.now();
        let (token, id_hash) = self.new_token();
        let (bound_fp, expires_at) = self.inner.store.write(Durability::Relaxed, |tx| {
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
            // The server's TTL, as the raise recorded it: never longer than the live server
            // would have issued, even when this CLI runs with another configuration.
            let server_ttl = raised.expires_at.saturating_sub(raised.raised_at).max(0);
            let expires_at = now.saturating_add(server_ttl);
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
            store::delete_raised(tx, call.vault, call.args_hash, call.caller)?;
            let mut detail =
                json!({ "bound": true, "state_fp": raised.state_fp, "expires_at": expires_at });
            if let Some(operator) = operator {
                detail["operator"] = json!(operator);
            }
            Self::record(tx, now, EventName::Minted, Some(call), detail)?;
            Ok((raised.state_fp, expires_at))
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
}
