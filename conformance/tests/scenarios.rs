//! Named stories from the specification, run on tc-model and tc-gate side
//! by side: every step must agree, and the outcome each story is about is asserted too, so a
//! story cannot pass by both sides being wrong the same way.

use tc_conformance::{Backing, Harness, SutOptions};
use tc_model::clause;
use tc_model::{
    Action, Answer, Call, FpChoice, ModelConfig, Note, Outcome, PromptRef, Refusal, RefusalKind,
    RequestStateMode, Stage, StateRef, Tok, TokenFate, Tool, Vault, Verifier,
};

fn delete(caller: u8) -> Call {
    Call::new(caller, 0, Tool::DeleteNote, 0)
}

fn harness(config: ModelConfig, backing: Backing) -> Harness {
    Harness::new(config, SutOptions::new(backing)).expect("harness starts")
}

fn memory() -> Harness {
    harness(ModelConfig::default(), Backing::Memory)
}

/// Applies `action` to both sides; panics with the divergence if they disagree.
#[track_caller]
fn step(h: &mut Harness, action: Action) -> Outcome {
    h.step(&action)
        .unwrap_or_else(|divergence| panic!("{divergence}"))
}

fn raise(call: Call) -> Action {
    Action::Raise { call, form: false }
}

fn raise_form(call: Call) -> Action {
    Action::Raise { call, form: true }
}

fn mint(call: Call, state_fp: FpChoice) -> Action {
    Action::Mint { call, state_fp }
}

fn redeem(tok: u8, call: Call, stage: Stage, verifier: Verifier) -> Action {
    Action::RedeemToken {
        tok: Tok(tok),
        call,
        stage,
        verifier,
    }
}

fn apply_token(call: Call) -> Action {
    redeem(0, call, Stage::Applied, Verifier::Builtin)
}

fn answer_state(state: u8, call: Call, answer: Answer) -> Action {
    Action::RedeemState {
        state: StateRef(state),
        call,
        answer,
        form: true,
    }
}

fn change_note() -> Action {
    Action::ChangeTarget {
        vault: Vault(0),
        note: Note(0),
    }
}

const ACCEPT: Answer = Answer::Accept { approve: true };

#[track_caller]
fn assert_rejected(outcome: Outcome, kind: RefusalKind) {
    assert!(
        matches!(outcome, Outcome::Reraised { refusal, .. } if refusal.kind == kind),
        "expected a re-raise for {kind:?}, got {outcome:?}"
    );
}

fn refused(clause: &'static str, kind: RefusalKind) -> Outcome {
    Outcome::Refused(Refusal::new(clause, kind))
}

// r[verify gate.token.single-use]
// r[verify gate.token.refused]
// r[verify approval.fresh-per-call]
#[test]
fn a_minted_token_applies_once() {
    let mut h = memory();
    step(&mut h, raise(delete(0)));
    assert_eq!(
        step(&mut h, mint(delete(0), FpChoice::Retained)),
        Outcome::Minted(Tok(0))
    );
    assert_eq!(step(&mut h, apply_token(delete(0))), Outcome::Applied);
    assert_rejected(
        step(&mut h, apply_token(delete(0))),
        RefusalKind::AlreadySpent,
    );
}

// r[verify approval.bound]
// r[verify gate.token.bound]
// r[verify gate.token.check-before-consume]
#[test]
fn another_caller_vault_or_call_cannot_redeem_and_the_token_survives() {
    let mut h = harness(
        ModelConfig {
            notes: 2,
            ..ModelConfig::default()
        },
        Backing::Memory,
    );
    step(&mut h, raise(delete(0)));
    step(&mut h, mint(delete(0), FpChoice::Omitted));
    let strangers = [
        (delete(1), RefusalKind::WrongCaller),
        (
            Call::new(0, 1, Tool::DeleteNote, 0),
            RefusalKind::WrongVault,
        ),
        (Call::new(0, 0, Tool::DeleteNote, 1), RefusalKind::WrongArgs),
        (Call::new(0, 0, Tool::UpdateTask, 0), RefusalKind::WrongArgs),
    ];
    for (call, kind) in strangers {
        assert_rejected(step(&mut h, apply_token(call)), kind);
    }
    // None of them spent it.
    assert_eq!(step(&mut h, apply_token(delete(0))), Outcome::Applied);
}

// r[verify drift.refuse]
// r[verify drift.token-spent]
// r[verify gate.token.state-bound]
#[test]
fn a_token_for_a_changed_note_is_replay_drift_and_spent() {
    let mut h = memory();
    step(&mut h, raise(delete(0)));
    step(&mut h, mint(delete(0), FpChoice::Omitted));
    step(&mut h, change_note());
    assert_eq!(
        step(&mut h, apply_token(delete(0))),
        refused(clause::DRIFT_REFUSE, RefusalKind::Drift)
    );
    assert_rejected(
        step(&mut h, apply_token(delete(0))),
        RefusalKind::AlreadySpent,
    );
}

// r[verify cli.elicit.state-fp]
// r[verify gate.raise.supersede]
#[test]
fn a_superseded_fingerprint_backs_no_mint() {
    let mut h = memory();
    step(&mut h, raise(delete(0)));
    step(&mut h, change_note());
    step(&mut h, raise(delete(0)));
    let stale = Outcome::MintRefused(Refusal::new(
        clause::CLI_ELICIT_STATE_FP,
        RefusalKind::StaleStateFp,
    ));
    assert_eq!(step(&mut h, mint(delete(0), FpChoice::Superseded)), stale);
    assert_eq!(step(&mut h, mint(delete(0), FpChoice::Unknown)), stale);
    assert_eq!(
        step(&mut h, mint(delete(0), FpChoice::Retained)),
        Outcome::Minted(Tok(0))
    );
    assert_eq!(step(&mut h, apply_token(delete(0))), Outcome::Applied);
}

// r[verify cli.elicit.requires-raise]
// r[verify gate.raise.expiry]
// r[verify gate.token.ttl]
// r[verify gate.token.expired]
// r[verify approval.expiry]
#[test]
fn nothing_is_minted_or_redeemed_after_the_ttl() {
    let mut h = memory();
    step(&mut h, raise(delete(0)));
    step(&mut h, mint(delete(0), FpChoice::Omitted));
    step(&mut h, Action::AdvanceClock);
    step(&mut h, Action::AdvanceClock);
    assert_rejected(step(&mut h, apply_token(delete(0))), RefusalKind::Expired);
    // The expired raise backs no mint either (the re-raise above is fresh, so wait it out).
    step(&mut h, Action::AdvanceClock);
    step(&mut h, Action::AdvanceClock);
    assert_eq!(
        step(&mut h, mint(delete(0), FpChoice::Omitted)),
        Outcome::MintRefused(Refusal::new(
            clause::CLI_ELICIT_REQUIRES_RAISE,
            RefusalKind::NoRaise
        ))
    );
}

// r[verify release.acl]
// r[verify release.cancel]
// r[verify release.convention]
// r[verify release.restores]
// r[verify release.custom-verifier]
// r[verify release.keeps-spent]
#[test]
fn no_effect_stages_release_through_a_verifier_that_implements_release() {
    let mut h = memory();
    step(&mut h, raise(delete(0)));
    step(&mut h, mint(delete(0), FpChoice::Omitted));
    for (stage, verifier) in [
        (Stage::AclDenied, Verifier::Builtin),
        (Stage::Cancelled, Verifier::CustomWithRelease),
        (Stage::ConventionBlockedBeforeWrite, Verifier::Builtin),
    ] {
        assert_eq!(
            step(&mut h, redeem(0, delete(0), stage, verifier)),
            Outcome::AfterGate {
                stage,
                fate: TokenFate::Released
            }
        );
    }
    // A custom verifier without release keeps it spent, even where nothing ran.
    assert_eq!(
        step(
            &mut h,
            redeem(
                0,
                delete(0),
                Stage::AclDenied,
                Verifier::CustomWithoutRelease
            )
        ),
        Outcome::AfterGate {
            stage: Stage::AclDenied,
            fate: TokenFate::KeptSpent
        }
    );
    assert_rejected(
        step(&mut h, apply_token(delete(0))),
        RefusalKind::AlreadySpent,
    );
}

// r[verify release.keeps-spent]
// r[verify release.no-effect-only]
#[test]
fn stages_that_may_have_had_an_effect_keep_the_token_spent() {
    for stage in Stage::ALL
        .into_iter()
        .filter(|s| !s.no_effect() && *s != Stage::Applied)
    {
        let mut h = memory();
        step(&mut h, raise(delete(0)));
        step(&mut h, mint(delete(0), FpChoice::Omitted));
        assert_eq!(
            step(&mut h, redeem(0, delete(0), stage, Verifier::Builtin)),
            Outcome::AfterGate {
                stage,
                fate: TokenFate::KeptSpent
            }
        );
        assert_rejected(
            step(&mut h, apply_token(delete(0))),
            RefusalKind::AlreadySpent,
        );
    }
}

// r[verify release.builtin-verifier]
// r[verify release.update-task]
#[test]
fn update_task_releases_through_the_builtin_verifier_whatever_the_hook() {
    let mut h = memory();
    let task = Call::new(0, 0, Tool::UpdateTask, 0);
    step(&mut h, raise(task));
    step(&mut h, mint(task, FpChoice::Omitted));
    assert_eq!(
        step(
            &mut h,
            redeem(
                0,
                task,
                Stage::ConventionBlockedBeforeWrite,
                Verifier::CustomWithoutRelease
            )
        ),
        Outcome::AfterGate {
            stage: Stage::ConventionBlockedBeforeWrite,
            fate: TokenFate::Released
        }
    );
    assert_eq!(step(&mut h, apply_token(task)), Outcome::Applied);
}

// r[verify gate.token.unbound-library]
#[test]
fn a_library_token_is_not_state_bound() {
    let mut h = memory();
    assert_eq!(
        step(&mut h, Action::IssueUnbound { call: delete(0) }),
        Outcome::Minted(Tok(0))
    );
    step(&mut h, change_note());
    assert_eq!(step(&mut h, apply_token(delete(0))), Outcome::Applied);
}

// r[verify state.replayable]
#[test]
fn a_request_state_replays_within_its_ttl_by_default() {
    let mut h = harness(
        ModelConfig {
            notes: 1,
            ..ModelConfig::default()
        },
        Backing::Memory,
    );
    let command = Call::new(0, 0, Tool::ExecuteCommand, 0);
    step(&mut h, raise_form(command));
    assert_eq!(
        step(&mut h, answer_state(0, command, ACCEPT)),
        Outcome::Applied
    );
    assert_eq!(
        step(&mut h, answer_state(0, command, ACCEPT)),
        Outcome::Applied
    );
}

// r[verify state.ext.single-use]
#[test]
fn with_the_extension_a_request_state_applies_once() {
    let mut h = harness(
        ModelConfig {
            request_state_mode: RequestStateMode::SingleUse,
            ..ModelConfig::default()
        },
        Backing::Memory,
    );
    let command = Call::new(0, 0, Tool::ExecuteCommand, 0);
    step(&mut h, raise_form(command));
    assert_eq!(
        step(&mut h, answer_state(0, command, ACCEPT)),
        Outcome::Applied
    );
    // A consumed state approves nothing; the form-capable client is offered a fresh one.
    assert!(matches!(
        step(&mut h, answer_state(0, command, ACCEPT)),
        Outcome::Reraised { refusal, request_state: Some(_), .. }
            if refusal == Refusal::new(clause::STATE_EXT_SINGLE_USE, RefusalKind::AlreadySpent)
    ));
}

// r[verify drift.every-route]
#[test]
fn a_request_state_for_a_changed_note_is_replay_drift_not_a_fresh_prompt() {
    let mut h = memory();
    step(&mut h, raise_form(delete(0)));
    step(&mut h, change_note());
    // A newer raise supersedes the one the state was sealed against; drift still shows.
    step(&mut h, raise(delete(0)));
    assert_eq!(
        step(&mut h, answer_state(0, delete(0), ACCEPT)),
        refused(clause::DRIFT_REFUSE, RefusalKind::Drift)
    );
}

// r[verify trip.accept-only]
// r[verify trip.verified-not-granted]
// r[verify trip.decline]
// r[verify trip.cancel]
// r[verify state.invalid-fresh]
// r[verify state.seal.aad]
#[test]
fn only_accept_with_approve_true_approves_a_request_state() {
    let mut h = memory();
    step(&mut h, raise_form(delete(0)));
    let declined = refused(clause::TRIP_DECLINE, RefusalKind::Declined);
    assert_eq!(
        step(
            &mut h,
            answer_state(0, delete(0), Answer::Accept { approve: false })
        ),
        declined
    );
    assert_eq!(
        step(&mut h, answer_state(0, delete(0), Answer::Decline)),
        declined
    );
    assert_eq!(
        step(&mut h, answer_state(0, delete(0), Answer::Cancel)),
        refused(clause::TRIP_CANCEL, RefusalKind::NotObtained)
    );
    // Sealed for caller 0: caller 1 gets a fresh confirmation, not an application.
    assert_rejected(
        step(&mut h, answer_state(0, delete(1), ACCEPT)),
        RefusalKind::StateMismatch,
    );
    assert_eq!(
        step(&mut h, answer_state(0, delete(0), ACCEPT)),
        Outcome::Applied
    );
}

// r[verify trip.legacy-shim.no-answer]
// r[verify trip.never-twice]
#[test]
fn the_legacy_shim_applies_an_approval_once_and_treats_a_late_answer_as_cancel() {
    let mut h = memory();
    step(&mut h, Action::ShimPrompt { call: delete(0) });
    assert_eq!(
        step(
            &mut h,
            Action::ShimAnswer {
                prompt: PromptRef(0),
                answer: ACCEPT
            }
        ),
        Outcome::Applied
    );
    assert_eq!(
        step(
            &mut h,
            Action::ShimAnswer {
                prompt: PromptRef(0),
                answer: ACCEPT
            }
        ),
        Outcome::NoSuchPrompt
    );
    step(&mut h, Action::ShimPrompt { call: delete(0) });
    step(&mut h, Action::AdvanceClock);
    step(&mut h, Action::AdvanceClock);
    assert_eq!(
        step(
            &mut h,
            Action::ShimAnswer {
                prompt: PromptRef(0),
                answer: ACCEPT
            }
        ),
        refused(clause::TRIP_LEGACY_SHIM_NO_ANSWER, RefusalKind::NotObtained)
    );
}

// r[verify gate.token.durable-consume]
// r[verify state.ext.durable]
#[test]
fn reopening_cache_db_keeps_spent_tokens_spent_and_consumed_states_consumed() {
    let mut h = harness(
        ModelConfig {
            request_state_mode: RequestStateMode::SingleUse,
            ..ModelConfig::default()
        },
        Backing::fast_temp_dir(),
    );
    let command = Call::new(0, 0, Tool::ExecuteCommand, 0);
    step(&mut h, raise(delete(0)));
    step(&mut h, mint(delete(0), FpChoice::Omitted));
    step(&mut h, raise_form(command));
    step(&mut h, Action::Reopen);
    assert_eq!(step(&mut h, apply_token(delete(0))), Outcome::Applied);
    assert_eq!(
        step(&mut h, answer_state(0, command, ACCEPT)),
        Outcome::Applied
    );
    step(&mut h, Action::Reopen);
    assert_rejected(
        step(&mut h, apply_token(delete(0))),
        RefusalKind::AlreadySpent,
    );
    // A consumed state approves nothing; the form-capable client is offered a fresh one.
    assert!(matches!(
        step(&mut h, answer_state(0, command, ACCEPT)),
        Outcome::Reraised { refusal, request_state: Some(_), .. }
            if refusal == Refusal::new(clause::STATE_EXT_SINGLE_USE, RefusalKind::AlreadySpent)
    ));
}

#[test]
fn reopen_needs_a_file_backed_cache_db() {
    let mut h = memory();
    let divergence = h
        .step(&Action::Reopen)
        .expect_err("in memory there is no file");
    assert!(
        divergence.to_string().contains("Backing::TempDir"),
        "{divergence}"
    );
}
