//! A cancellation gives a spent token back at every point before the handler is entered
//! (spec/release.md `release.cancel`): here the cancel arrives while the token's consume is
//! being made durable (inside the verifier's redeem), the point a check before the redeem
//! alone would miss.

mod tools_support;

use std::sync::Arc;

use serde_json::json;
use tc_gate::{
    BuiltinVerifier, CallBinding, Gate, RedeemError, Redemption, ReleaseOutcome, ReleaseTicket,
    StateFp, StoreError, Verifier,
};
use tc_tools::{CallControl, CancellationFlag, ErrorCode};
use tools_support::{Fx, caller, with_token};

/// The built-in verifier, with the client's cancel landing during the durable consume.
#[derive(Debug)]
struct CancelDuringRedeem(CancellationFlag);

impl Verifier for CancelDuringRedeem {
    fn name(&self) -> &'static str {
        "builtin"
    }

    fn verify(
        &self,
        gate: &Gate,
        token: &str,
        call: &CallBinding<'_>,
        current_fp: &mut dyn FnMut() -> StateFp,
    ) -> Result<Redemption, RedeemError> {
        let redeemed = gate.redeem(token, call, current_fp);
        self.0.cancel();
        redeemed
    }

    fn release(&self, ticket: ReleaseTicket) -> Result<ReleaseOutcome, StoreError> {
        BuiltinVerifier.release(ticket)
    }
}

// r[verify release.cancel]
// r[verify release.restores]
#[test]
fn a_cancel_during_the_durable_consume_gives_the_token_back() {
    let mut fx = Fx::new();
    fx.put("a.md", "a");
    let args = json!({"path": "a.md"});
    let token = fx.require("delete_note", &args);
    let cancel = CancellationFlag::new();
    fx.pipeline
        .set_verifier(Arc::new(CancelDuringRedeem(cancel.clone())));
    let prepared = fx
        .pipeline
        .prepare(&caller(), "delete_note", &with_token(&args, &token))
        .unwrap();
    let error = fx
        .pipeline
        .execute(
            &prepared,
            prepared.token_approval(),
            &CallControl::with_cancel(cancel),
        )
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::InternalError);
    assert_eq!(error.details.as_ref().unwrap()["reason"], "cancelled");
    assert_eq!(error.details.as_ref().unwrap()["token_released"], true);
    assert_eq!(fx.released(), 1);
    assert!(fx.get("a.md").is_some(), "the handler never ran");
    // The same token, not cancelled this time, applies the call.
    fx.pipeline.set_verifier(Arc::new(BuiltinVerifier));
    fx.call("delete_note", with_token(&args, &token)).unwrap();
    assert!(fx.get("a.md").is_none());
}

/// A custom verifier that cancels during its redeem and does not implement release.
#[derive(Debug)]
struct CancelAndKeepSpent(CancellationFlag);

impl Verifier for CancelAndKeepSpent {
    fn name(&self) -> &'static str {
        "keeps-spent"
    }

    fn verify(
        &self,
        gate: &Gate,
        token: &str,
        call: &CallBinding<'_>,
        current_fp: &mut dyn FnMut() -> StateFp,
    ) -> Result<Redemption, RedeemError> {
        let redeemed = gate.redeem(token, call, current_fp);
        self.0.cancel();
        redeemed
    }
}

// r[verify release.custom-verifier]
/// The refusal tells the truth about the token: a verifier without release keeps it spent,
/// and the cancelled call says `token_released: false` (cargo-mutants: a pipeline that
/// always said true survived).
#[test]
fn a_cancel_under_a_verifier_without_release_says_the_token_stays_spent() {
    let mut fx = Fx::new();
    fx.put("a.md", "a");
    let args = json!({"path": "a.md"});
    let token = fx.require("delete_note", &args);
    let cancel = CancellationFlag::new();
    fx.pipeline
        .set_verifier(Arc::new(CancelAndKeepSpent(cancel.clone())));
    let prepared = fx
        .pipeline
        .prepare(&caller(), "delete_note", &with_token(&args, &token))
        .unwrap();
    let error = fx
        .pipeline
        .execute(
            &prepared,
            prepared.token_approval(),
            &CallControl::with_cancel(cancel),
        )
        .unwrap_err();
    assert_eq!(error.details.as_ref().unwrap()["reason"], "cancelled");
    assert_eq!(error.details.as_ref().unwrap()["token_released"], false);
    assert_eq!(fx.released(), 0);
    assert!(fx.get("a.md").is_some(), "the handler never ran");
    fx.pipeline.set_verifier(Arc::new(BuiltinVerifier));
    let spent = fx
        .call("delete_note", with_token(&args, &token))
        .unwrap_err();
    assert_eq!(spent.code, ErrorCode::ElicitRequired);
}
