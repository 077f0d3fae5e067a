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

/// A verifier whose redeem lets the client's cancel land during the durable consume;
/// `releases` says whether it gives a spent token back (as the built-in one does) or keeps
/// it spent (as a custom one without release does).
#[derive(Debug)]
struct CancelDuringRedeem {
    cancel: CancellationFlag,
    releases: bool,
}

impl Verifier for CancelDuringRedeem {
    fn name(&self) -> &'static str {
        if self.releases {
            "builtin"
        } else {
            "keeps-spent"
        }
    }

    fn verify(
        &self,
        gate: &Gate,
        token: &str,
        call: &CallBinding<'_>,
        current_fp: &mut dyn FnMut() -> StateFp,
    ) -> Result<Redemption, RedeemError> {
        let redeemed = gate.redeem(token, call, current_fp);
        self.cancel.cancel();
        redeemed
    }

    fn release(&self, ticket: ReleaseTicket) -> Result<ReleaseOutcome, StoreError> {
        if self.releases {
            BuiltinVerifier.release(ticket)
        } else {
            Ok(ticket.keep_spent())
        }
    }
}

/// `delete_note` of `a.md` with a minted token, cancelled during its redeem under a verifier
/// that `releases` or not: the fixture, the token and the refusal.
fn cancelled_delete(releases: bool) -> (Fx, serde_json::Value, String, tc_tools::ToolError) {
    let mut fx = Fx::new();
    fx.put("a.md", "a");
    let args = json!({"path": "a.md"});
    let token = fx.require("delete_note", &args);
    let cancel = CancellationFlag::new();
    fx.pipeline.set_verifier(Arc::new(CancelDuringRedeem {
        cancel: cancel.clone(),
        releases,
    }));
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
    assert!(fx.get("a.md").is_some(), "the handler never ran");
    fx.pipeline.set_verifier(Arc::new(BuiltinVerifier));
    (fx, args, token, error)
}

// r[verify release.cancel]
// r[verify release.restores]
#[test]
fn a_cancel_during_the_durable_consume_gives_the_token_back() {
    let (fx, args, token, error) = cancelled_delete(true);
    assert_eq!(error.code, ErrorCode::InternalError);
    assert_eq!(error.details.as_ref().unwrap()["token_released"], true);
    assert_eq!(fx.released(), 1);
    // The same token, not cancelled this time, applies the call.
    fx.call("delete_note", with_token(&args, &token)).unwrap();
    assert!(fx.get("a.md").is_none());
}

// r[verify release.custom-verifier]
/// The refusal tells the truth about the token: a verifier without release keeps it spent,
/// and the cancelled call says `token_released: false` (cargo-mutants: a pipeline that
/// always said true survived).
#[test]
fn a_cancel_under_a_verifier_without_release_says_the_token_stays_spent() {
    let (fx, args, token, error) = cancelled_delete(false);
    assert_eq!(error.details.as_ref().unwrap()["token_released"], false);
    assert_eq!(fx.released(), 0);
    let spent = fx
        .call("delete_note", with_token(&args, &token))
        .unwrap_err();
    assert_eq!(spent.code, ErrorCode::ElicitRequired);
}
