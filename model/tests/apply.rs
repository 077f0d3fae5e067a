//! Readable scenarios through `GateModel::apply`: each is one story of the
//! specification (spec/gate.md, release.md, drift.md), step by step, with the outcome the model must answer.

use tc_model::clause;
use tc_model::{
    Action, Answer, Call, FpChoice, GateModel, ModelConfig, Note, Outcome, PromptRef, Refusal,
    RefusalKind, RequestStateMode, Stage, StateRef, Tok, TokenFate, Tool, Vault, Verifier,
};

fn delete(caller: u8) -> Call {
    Call::new(caller, 0, Tool::DeleteNote, 0)
}

fn refused(clause: &'static str, kind: RefusalKind) -> Outcome {
    Outcome::Refused(Refusal::new(clause, kind))
}

/// Asserts a token refusal: the call is answered `elicit_required` with a fresh raise.
#[track_caller]
fn assert_rejected(outcome: Outcome, clause: &'static str, kind: RefusalKind) {
    assert!(
        matches!(
            outcome,
            Outcome::Reraised { refusal, request_state: None, .. }
                if refusal == Refusal::new(clause, kind)
        ),
        "{outcome:?}"
    );
}

fn redeem(call: Call, stage: Stage, verifier: Verifier) -> Action {
    Action::RedeemToken {
        tok: Tok(0),
        call,
        stage,
        verifier,
    }
}

fn apply_token(call: Call) -> Action {
    redeem(call, Stage::Applied, Verifier::Builtin)
}

fn mint(call: Call, state_fp: FpChoice) -> Action {
    Action::Mint { call, state_fp }
}

fn raise(call: Call) -> Action {
    Action::Raise { call, form: false }
}

fn change_note() -> Action {
    Action::ChangeTarget {
        vault: Vault(0),
        note: Note(0),
    }
}

/// A model with caller 0's `delete_note` raised and a CLI token minted for it (Tok(0)).
fn minted() -> GateModel {
    let mut gate = GateModel::new(ModelConfig::default());
    gate.apply(&raise(delete(0)));
    assert_eq!(
        gate.apply(&mint(delete(0), FpChoice::Retained)),
        Outcome::Minted(Tok(0))
    );
    gate
}

// r[verify cli.elicit.requires-raise]
#[test]
fn mint_without_raised_request_is_refused() {
    let mut gate = GateModel::new(ModelConfig::default());
    let no_raise = Outcome::MintRefused(Refusal::new(
        clause::CLI_ELICIT_REQUIRES_RAISE,
        RefusalKind::NoRaise,
    ));
    assert_eq!(gate.apply(&mint(delete(0), FpChoice::Omitted)), no_raise);
    // A raise by caller 0 does not let caller 1 mint (--caller must match the blocked caller).
    gate.apply(&raise(delete(0)));
    assert_eq!(gate.apply(&mint(delete(1), FpChoice::Omitted)), no_raise);
    assert_eq!(
        gate.apply(&mint(delete(0), FpChoice::Omitted)),
        Outcome::Minted(Tok(0))
    );
    // The raise expires with the TTL; after it the CLI refuses again.
    gate.apply(&Action::AdvanceClock);
    gate.apply(&Action::AdvanceClock);
    assert_eq!(gate.apply(&mint(delete(0), FpChoice::Omitted)), no_raise);
}

// r[verify cli.elicit.state-fp]
// r[verify gate.raise.supersede]
#[test]
fn superseded_or_unknown_state_fp_is_refused() {
    let mut gate = GateModel::new(ModelConfig::default());
    let first = gate.apply(&raise(delete(0)));
    gate.apply(&change_note());
    let second = gate.apply(&raise(delete(0)));
    assert_ne!(first, second, "the newer raise records the changed state");
    let stale = Outcome::MintRefused(Refusal::new(
        clause::CLI_ELICIT_STATE_FP,
        RefusalKind::StaleStateFp,
    ));
    assert_eq!(gate.apply(&mint(delete(0), FpChoice::Superseded)), stale);
    assert_eq!(gate.apply(&mint(delete(0), FpChoice::Unknown)), stale);
    assert_eq!(
        gate.apply(&mint(delete(0), FpChoice::Retained)),
        Outcome::Minted(Tok(0))
    );
    // The mint consumed caller 0's request; another caller's raise is recorded beside the
    // next raise of caller 0, neither superseding the other.
    assert!(gate.raised().is_empty());
    gate.apply(&raise(delete(0)));
    gate.apply(&raise(delete(1)));
    assert_eq!(gate.raised().len(), 2);
}

// r[verify release.acl]
// r[verify release.restores]
// r[verify gate.token.single-use]
#[test]
fn released_token_redeems_again_then_is_spent() {
    let mut gate = minted();
    assert_eq!(
        gate.apply(&redeem(delete(0), Stage::AclDenied, Verifier::Builtin)),
        Outcome::AfterGate {
            stage: Stage::AclDenied,
            fate: TokenFate::Released
        }
    );
    // Retry one tick later: the original expiry (tick 2) still holds.
    gate.apply(&Action::AdvanceClock);
    assert_eq!(gate.apply(&apply_token(delete(0))), Outcome::Applied);
    assert_rejected(
        gate.apply(&apply_token(delete(0))),
        clause::GATE_TOKEN_SINGLE_USE,
        RefusalKind::AlreadySpent,
    );
    assert_eq!(gate.tokens()[0].runs, 2);
    assert_eq!(gate.tokens()[0].releases, 1);
}

// r[verify release.keeps-spent]
#[test]
fn refusals_that_may_have_had_an_effect_keep_the_token_spent() {
    for stage in [
        Stage::Timeout,
        Stage::Http5xx,
        Stage::OperationTimeout,
        Stage::HandlerError,
        Stage::FaultAfterReturn,
    ] {
        let mut gate = minted();
        assert_eq!(
            gate.apply(&redeem(delete(0), stage, Verifier::Builtin)),
            Outcome::AfterGate {
                stage,
                fate: TokenFate::KeptSpent
            },
            "{stage:?}"
        );
        assert_rejected(
            gate.apply(&apply_token(delete(0))),
            clause::GATE_TOKEN_SINGLE_USE,
            RefusalKind::AlreadySpent,
        );
    }
}

// r[verify release.custom-verifier]
// r[verify release.builtin-verifier]
#[test]
fn custom_verifier_without_release_keeps_spent_except_handler_level_convention() {
    let mut gate = minted();
    assert_eq!(
        gate.apply(&redeem(
            delete(0),
            Stage::Cancelled,
            Verifier::CustomWithoutRelease
        )),
        Outcome::AfterGate {
            stage: Stage::Cancelled,
            fate: TokenFate::KeptSpent
        }
    );

    let task = Call::new(0, 0, Tool::UpdateTask, 0);
    let mut gate = GateModel::new(ModelConfig::default());
    gate.apply(&raise(task));
    gate.apply(&mint(task, FpChoice::Omitted));
    assert_eq!(
        gate.apply(&redeem(
            task,
            Stage::ConventionBlockedBeforeWrite,
            Verifier::CustomWithoutRelease
        )),
        Outcome::AfterGate {
            stage: Stage::ConventionBlockedBeforeWrite,
            fate: TokenFate::Released
        }
    );
}

// r[verify drift.refuse]
// r[verify drift.token-spent]
#[test]
fn drift_refuses_and_spends_the_token() {
    let mut gate = minted();
    gate.apply(&change_note());
    assert_eq!(
        gate.apply(&apply_token(delete(0))),
        refused(clause::DRIFT_REFUSE, RefusalKind::Drift)
    );
    assert!(gate.applications().is_empty());
    assert_rejected(
        gate.apply(&apply_token(delete(0))),
        clause::GATE_TOKEN_SINGLE_USE,
        RefusalKind::AlreadySpent,
    );
    // The way on: raise again against the new state and mint a fresh token.
    gate.apply(&raise(delete(0)));
    assert_eq!(
        gate.apply(&mint(delete(0), FpChoice::Retained)),
        Outcome::Minted(Tok(1))
    );
    assert_eq!(
        gate.apply(&Action::RedeemToken {
            tok: Tok(1),
            call: delete(0),
            stage: Stage::Applied,
            verifier: Verifier::Builtin
        }),
        Outcome::Applied
    );
}

// r[verify approval.bound]
// r[verify gate.token.check-before-consume]
#[test]
fn another_caller_vault_or_call_is_refused_without_consuming() {
    let mut gate = minted();
    assert_rejected(
        gate.apply(&apply_token(delete(1))),
        clause::APPROVAL_BOUND,
        RefusalKind::WrongCaller,
    );
    assert_rejected(
        gate.apply(&apply_token(Call::new(0, 1, Tool::DeleteNote, 0))),
        clause::APPROVAL_BOUND,
        RefusalKind::WrongVault,
    );
    assert_rejected(
        gate.apply(&apply_token(Call::new(0, 0, Tool::ExecuteCommand, 0))),
        clause::APPROVAL_BOUND,
        RefusalKind::WrongArgs,
    );
    assert!(!gate.tokens()[0].spent);
    // Each refused presentation was answered as a call without approval: caller 1 now has a
    // raised request of its own to mint from.
    assert!(gate.live_raise(&delete(1)).is_some());
    assert_eq!(gate.apply(&apply_token(delete(0))), Outcome::Applied);
}

// r[verify gate.token.expired]
// r[verify approval.expiry]
#[test]
fn expired_token_is_refused() {
    let mut gate = minted();
    gate.apply(&Action::AdvanceClock);
    gate.apply(&Action::AdvanceClock);
    assert_rejected(
        gate.apply(&apply_token(delete(0))),
        clause::GATE_TOKEN_EXPIRED,
        RefusalKind::Expired,
    );
}

// r[verify gate.token.unbound-library]
#[test]
fn library_token_is_unbound_from_state() {
    let mut gate = GateModel::new(ModelConfig::default());
    assert_eq!(
        gate.apply(&Action::IssueUnbound { call: delete(0) }),
        Outcome::Minted(Tok(0))
    );
    gate.apply(&change_note());
    assert_eq!(gate.apply(&apply_token(delete(0))), Outcome::Applied);
}

// r[verify trip.decline]
// r[verify trip.accept-only]
#[test]
fn decline_stops_and_only_accept_true_applies() {
    let command = Call::new(0, 0, Tool::ExecuteCommand, 0);
    let mut gate = GateModel::new(ModelConfig::default());
    assert!(matches!(
        gate.apply(&Action::Raise {
            call: command,
            form: true
        }),
        Outcome::Raised {
            request_state: Some(StateRef(0)),
            ..
        }
    ));
    let present = |answer| Action::RedeemState {
        state: StateRef(0),
        call: command,
        answer,
        form: true,
    };
    let declined = refused(clause::TRIP_DECLINE, RefusalKind::Declined);
    assert_eq!(gate.apply(&present(Answer::Decline)), declined);
    assert_eq!(
        gate.apply(&present(Answer::Accept { approve: false })),
        declined
    );
    assert!(gate.applications().is_empty());
    assert_eq!(
        gate.apply(&present(Answer::Accept { approve: true })),
        Outcome::Applied
    );
}

// r[verify trip.cancel]
#[test]
fn cancel_is_not_obtained_and_the_cli_route_recovers() {
    let mut gate = GateModel::new(ModelConfig::default());
    gate.apply(&Action::Raise {
        call: delete(0),
        form: true,
    });
    assert_eq!(
        gate.apply(&Action::RedeemState {
            state: StateRef(0),
            call: delete(0),
            answer: Answer::Cancel,
            form: true,
        }),
        refused(clause::TRIP_CANCEL, RefusalKind::NotObtained)
    );
    // The raise was recorded, so the operator can mint out of band.
    assert_eq!(
        gate.apply(&mint(delete(0), FpChoice::Retained)),
        Outcome::Minted(Tok(0))
    );
    assert_eq!(gate.apply(&apply_token(delete(0))), Outcome::Applied);
}

// r[verify state.replayable]
// r[verify state.ext.single-use]
#[test]
fn request_state_replays_unless_single_use() {
    let command = Call::new(0, 0, Tool::ExecuteCommand, 0);
    let accept = Action::RedeemState {
        state: StateRef(0),
        call: command,
        answer: Answer::Accept { approve: true },
        form: true,
    };
    let raise_form = Action::Raise {
        call: command,
        form: true,
    };

    let mut replayable = GateModel::new(ModelConfig::default());
    replayable.apply(&raise_form);
    assert_eq!(replayable.apply(&accept), Outcome::Applied);
    assert_eq!(replayable.apply(&accept), Outcome::Applied);
    replayable.apply(&Action::AdvanceClock);
    replayable.apply(&Action::AdvanceClock);
    // An expired state does not open: the call is answered with a fresh requestState.
    assert_eq!(
        replayable.apply(&accept),
        Outcome::Reraised {
            refusal: Refusal::new(clause::STATE_TTL, RefusalKind::Expired),
            state_fp: tc_model::Fp::Empty,
            request_state: Some(StateRef(1)),
        }
    );
    let fresh = Action::RedeemState {
        state: StateRef(1),
        call: command,
        answer: Answer::Accept { approve: true },
        form: true,
    };
    assert_eq!(replayable.apply(&fresh), Outcome::Applied);

    let mut single = GateModel::new(ModelConfig {
        request_state_mode: RequestStateMode::SingleUse,
        ..ModelConfig::default()
    });
    single.apply(&raise_form);
    assert_eq!(single.apply(&accept), Outcome::Applied);
    // A consumed state approves nothing: a fresh confirmation is offered (trip.form-only:
    // a form-capable request gets a fresh requestState).
    assert_eq!(
        single.apply(&accept),
        Outcome::Reraised {
            refusal: Refusal::new(clause::STATE_EXT_SINGLE_USE, RefusalKind::AlreadySpent),
            state_fp: tc_model::Fp::Empty,
            request_state: Some(StateRef(1)),
        }
    );
}

// r[verify trip.form-only]
#[test]
fn a_request_without_form_elicitation_is_never_offered_a_request_state() {
    let command = Call::new(0, 0, Tool::ExecuteCommand, 0);
    let mut gate = GateModel::new(ModelConfig::default());
    gate.apply(&Action::Raise {
        call: command,
        form: true,
    });
    gate.apply(&Action::AdvanceClock);
    gate.apply(&Action::AdvanceClock);
    let formless = Action::RedeemState {
        state: StateRef(0),
        call: command,
        answer: Answer::Accept { approve: true },
        form: false,
    };
    assert_eq!(
        gate.apply(&formless),
        Outcome::Reraised {
            refusal: Refusal::new(clause::STATE_TTL, RefusalKind::Expired),
            state_fp: tc_model::Fp::Empty,
            request_state: None,
        }
    );
    assert_eq!(gate.request_states().len(), 1, "no state issued to it");
    // The raise was still recorded, so the operator can mint out of band.
    assert_eq!(
        gate.apply(&mint(command, FpChoice::Omitted)),
        Outcome::Minted(Tok(0))
    );
}

// r[verify cli.elicit.one-mint-per-raise]
#[test]
fn a_raised_request_backs_one_mint_for_none_tools_too() {
    let command = Call::new(0, 0, Tool::ExecuteCommand, 0);
    let mut gate = GateModel::new(ModelConfig::default());
    gate.apply(&Action::Raise {
        call: command,
        form: false,
    });
    assert_eq!(
        gate.apply(&mint(command, FpChoice::Omitted)),
        Outcome::Minted(Tok(0))
    );
    assert_eq!(
        gate.apply(&mint(command, FpChoice::Omitted)),
        Outcome::MintRefused(Refusal::new(
            clause::CLI_ELICIT_REQUIRES_RAISE,
            RefusalKind::NoRaise
        ))
    );
    // Running the blocked call again raises afresh, and that backs the next token.
    gate.apply(&Action::Raise {
        call: command,
        form: false,
    });
    assert_eq!(
        gate.apply(&mint(command, FpChoice::Omitted)),
        Outcome::Minted(Tok(1))
    );
}

// r[verify cli.elicit.ttl-cap]
#[test]
fn a_minted_token_lives_for_the_servers_ttl_not_the_clis() {
    let config = ModelConfig {
        ttl_ticks: 2,
        cli_ttl_ticks: 5,
        ..ModelConfig::default()
    };
    let command = Call::new(0, 0, Tool::ExecuteCommand, 0);
    let mut gate = GateModel::new(config);
    gate.apply(&Action::Raise {
        call: command,
        form: false,
    });
    gate.apply(&mint(command, FpChoice::Omitted));
    assert_eq!(gate.tokens()[0].expires_at, 2);
    gate.apply(&Action::AdvanceClock);
    gate.apply(&Action::AdvanceClock);
    let outcome = gate.apply(&apply_token(command));
    assert_eq!(
        outcome.refusal().map(|r| r.kind),
        Some(RefusalKind::Expired),
        "{outcome}"
    );
}

// r[verify trip.legacy-shim.cancel]
#[test]
fn a_call_cancelled_while_its_shim_prompt_is_open_applies_nothing() {
    let mut gate = GateModel::new(ModelConfig::default());
    let call = delete(0);
    gate.apply(&Action::ShimPrompt { call });
    assert_eq!(
        gate.apply(&Action::ShimCancel {
            prompt: PromptRef(0)
        }),
        Outcome::CallCancelled
    );
    assert!(gate.prompts().is_empty());
    assert_eq!(
        gate.apply(&Action::ShimAnswer {
            prompt: PromptRef(0),
            answer: Answer::Accept { approve: true }
        }),
        Outcome::NoSuchPrompt
    );
    assert!(gate.applications().is_empty());
    assert_eq!(gate.version(call.vault, tc_model::Note(0)), 0);
}

// r[verify drift.every-route]
#[test]
fn drift_is_refused_on_the_shim_and_the_prompt_closes() {
    let mut gate = GateModel::new(ModelConfig::default());
    assert!(matches!(
        gate.apply(&Action::ShimPrompt { call: delete(0) }),
        Outcome::Prompted {
            prompt: PromptRef(0),
            ..
        }
    ));
    gate.apply(&change_note());
    let accept = Action::ShimAnswer {
        prompt: PromptRef(0),
        answer: Answer::Accept { approve: true },
    };
    assert_eq!(
        gate.apply(&accept),
        refused(clause::DRIFT_REFUSE, RefusalKind::Drift)
    );
    assert_eq!(gate.apply(&accept), Outcome::NoSuchPrompt);
}

#[test]
fn out_of_range_handles_are_taken_modulo_and_never_panic() {
    let mut gate = GateModel::new(ModelConfig::default());
    let far = Call::new(7, 9, Tool::DeleteNote, 200);
    assert_rejected(
        gate.apply(&Action::RedeemToken {
            tok: Tok(255),
            call: far,
            stage: Stage::Applied,
            verifier: Verifier::Builtin,
        }),
        clause::GATE_TOKEN_REFUSED,
        RefusalKind::UnknownToken,
    );
    gate.apply(&raise(far));
    // Caller 7 is caller 1, vault 9 is vault 1, args 200 is args 0.
    assert_eq!(
        gate.apply(&mint(
            Call::new(1, 1, Tool::DeleteNote, 0),
            FpChoice::Retained
        )),
        Outcome::Minted(Tok(0))
    );
    assert_eq!(gate.apply(&apply_token(far)), Outcome::Applied);
}
