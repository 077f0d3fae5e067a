//! The verifyElicit hook (clauses release.custom-verifier, release.builtin-verifier).
//!
//! An embedder may put its own checks in front of token redemption by supplying a
//! [`Verifier`]. Releasing a spent token is a separate, optional capability: a custom
//! verifier that does not implement [`Verifier::release`] keeps every token it was offered
//! spent. Confirmations a tool checks inside its own handler are always released through
//! [`BuiltinVerifier`] (see `HandlerRun::release_handler_level`).

use std::fmt;

use crate::gate::{CallBinding, Gate, RedeemError, Redemption, ReleaseOutcome, ReleaseTicket};
use crate::state_fp::StateFp;
use crate::store::StoreError;

/// Checks the approval a call carries, and optionally gives a spent one back.
pub trait Verifier: Send + Sync + fmt::Debug {
    /// A short name recorded in hitl_released events ("builtin" for the built-in one).
    fn name(&self) -> &'static str {
        "custom"
    }

    /// Checks `token` for `call` and spends it. A custom verifier adds its own checks and
    /// then delegates to [`Gate::redeem`], the only way to obtain a [`Redemption`].
    fn verify(
        &self,
        gate: &Gate,
        token: &str,
        call: &CallBinding<'_>,
        current_fp: &mut dyn FnMut() -> StateFp,
    ) -> Result<Redemption, RedeemError> {
        gate.redeem(token, call, current_fp)
    }

    /// Offered a spent token whose call had no effect. The default keeps it spent: a custom
    /// verifier releases only if it implements this (typically with `ticket.restore()`).
    fn release(&self, ticket: ReleaseTicket) -> Result<ReleaseOutcome, StoreError> {
        Ok(ticket.keep_spent())
    }
}

/// The gate's own verifier: plain redemption, and release of every no-effect outcome.
#[derive(Debug, Default, Clone, Copy)]
pub struct BuiltinVerifier;

impl Verifier for BuiltinVerifier {
    fn name(&self) -> &'static str {
        "builtin"
    }

    fn release(&self, ticket: ReleaseTicket) -> Result<ReleaseOutcome, StoreError> {
        ticket.restore()
    }
}
