//! proptest-state-machine over the shared vocabulary: the
//! reference state machine is tc-model's [`GateModel`], the system under test is tc-gate
//! staged by [`Sut`] on a file-backed cache.db (so `Reopen` closes and reopens the file), and
//! every transition's outcome must be the model's. Handles are index-modulo, so every shrunk
//! sequence stays meaningful; the handle ranges are small so that calls, tokens and states
//! collide.
//!
//! Bounded for CI: 64 cases of up to 30 transitions per request-state mode
//! (`TC_PROPTEST_CASES=5000` for a longer hunt by hand).

use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::Config;
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest, prop_state_machine};
use tc_conformance::harness::{Divergence, check_step};
use tc_conformance::{Backing, Sut, SutOptions};
use tc_model::{
    Action, Answer, Args, Call, Caller, FpChoice, GateModel, ModelConfig, Note, Outcome, PromptRef,
    RequestStateMode, Stage, StateRef, Tok, Tool, Vault, Verifier,
};

/// The model, the outcome of the last transition, and how many were applied.
#[derive(Clone, Debug)]
struct Reference {
    model: GateModel,
    last: Option<Outcome>,
    steps: usize,
}

/// A handle biased towards 0, so that most actions meet the same call, token or state.
fn handle(max: u8) -> impl Strategy<Value = u8> {
    prop_oneof![3 => Just(0u8), 1 => 0..max]
}

fn call() -> impl Strategy<Value = Call> {
    (handle(3), handle(3), select(Tool::ALL.to_vec()), handle(3)).prop_map(
        |(caller, vault, tool, args)| Call {
            caller: Caller(caller),
            vault: Vault(vault),
            tool,
            args: Args(args),
        },
    )
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![3 => Just(Answer::Accept { approve: true }), 1 => select(Answer::ALL.to_vec())]
}

fn action() -> impl Strategy<Value = Action> {
    let fp_choice = select(vec![
        FpChoice::Omitted,
        FpChoice::Retained,
        FpChoice::Superseded,
        FpChoice::Unknown,
    ]);
    prop_oneof![
        4 => (call(), any::<bool>()).prop_map(|(call, form)| Action::Raise { call, form }),
        3 => (call(), fp_choice).prop_map(|(call, state_fp)| Action::Mint { call, state_fp }),
        1 => call().prop_map(|call| Action::IssueUnbound { call }),
        4 => (handle(4), call(), select(Stage::ALL.to_vec()), select(Verifier::ALL.to_vec()))
            .prop_map(|(tok, call, stage, verifier)| Action::RedeemToken {
                tok: Tok(tok),
                call,
                stage,
                verifier,
            }),
        3 => (handle(4), call(), answer(), proptest::bool::weighted(0.8)).prop_map(
            |(state, call, answer, form)| Action::RedeemState {
                state: StateRef(state),
                call,
                answer,
                form,
            }
        ),
        1 => call().prop_map(|call| Action::ShimPrompt { call }),
        1 => handle(3).prop_map(|prompt| Action::ShimCancel {
            prompt: PromptRef(prompt)
        }),
        2 => (handle(3), answer()).prop_map(|(prompt, answer)| Action::ShimAnswer {
            prompt: PromptRef(prompt),
            answer,
        }),
        2 => (handle(2), handle(2)).prop_map(|(vault, note)| Action::ChangeTarget {
            vault: Vault(vault),
            note: Note(note),
        }),
        2 => Just(Action::AdvanceClock),
        1 => Just(Action::Reopen),
    ]
}

/// The reference machine for one request-state mode (`SINGLE_USE` selects the extension).
struct GateReference<const SINGLE_USE: bool>;

impl<const SINGLE_USE: bool> ReferenceStateMachine for GateReference<SINGLE_USE> {
    type State = Reference;
    type Transition = Action;

    fn init_state() -> BoxedStrategy<Reference> {
        let mode = if SINGLE_USE {
            RequestStateMode::SingleUse
        } else {
            RequestStateMode::Replayable
        };
        (1u8..=3, 1u8..=2)
            .prop_map(move |(ttl_ticks, notes)| Reference {
                model: GateModel::new(ModelConfig {
                    callers: 2,
                    vaults: 2,
                    notes,
                    ttl_ticks,
                    request_state_mode: mode,
                    ..ModelConfig::default()
                }),
                last: None,
                steps: 0,
            })
            .boxed()
    }

    fn transitions(_: &Reference) -> BoxedStrategy<Action> {
        action().boxed()
    }

    fn apply(mut state: Reference, transition: &Action) -> Reference {
        state.last = Some(state.model.apply(transition));
        state.steps += 1;
        state
    }
}

/// tc-gate under the same transitions.
struct GateTest<const SINGLE_USE: bool>;

impl<const SINGLE_USE: bool> StateMachineTest for GateTest<SINGLE_USE> {
    type SystemUnderTest = Sut;
    type Reference = GateReference<SINGLE_USE>;

    fn init_test(reference: &Reference) -> Sut {
        Sut::new(
            *reference.model.config(),
            SutOptions::new(Backing::fast_temp_dir()),
        )
        .unwrap_or_else(|error| panic!("the system under test does not start: {error}"))
    }

    fn apply(mut sut: Sut, reference: &Reference, transition: Action) -> Sut {
        let Some(model) = reference.last else {
            panic!("the reference applied no transition");
        };
        if let Err(implementation) = check_step(&mut sut, &reference.model, &transition, model) {
            let divergence = Divergence {
                step: reference.steps - 1,
                action: transition,
                model,
                implementation,
            };
            panic!("{divergence}");
        }
        sut
    }

    fn check_invariants(sut: &Sut, reference: &Reference) {
        assert_eq!(
            sut.versions(),
            reference.model.versions(),
            "the notes differ after {} steps",
            reference.steps
        );
    }
}

/// 64 cases, or `TC_PROPTEST_CASES` for a longer hunt by hand.
fn config() -> Config {
    let cases = std::env::var("TC_PROPTEST_CASES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(64);
    Config {
        // The shrinker replays whole sequences on a file-backed cache.db; keep it bounded.
        max_shrink_iters: 512,
        ..Config::with_cases(cases)
    }
}

prop_state_machine! {
    #![proptest_config(config())]

    // r[verify approval.bound]
    // r[verify approval.expiry]
    // r[verify gate.token.single-use]
    // r[verify gate.token.check-before-consume]
    // r[verify gate.token.refused]
    // r[verify drift.refuse]
    // r[verify drift.every-route]
    // r[verify release.no-effect-only]
    // r[verify state.replayable]
    // r[verify gate.token.durable-consume]
    #[test]
    fn tc_gate_answers_as_the_model_with_replayable_states(
        sequential 1..30 => GateTest<false>
    );

    // r[verify state.ext.single-use]
    // r[verify state.ext.durable]
    #[test]
    fn tc_gate_answers_as_the_model_with_single_use_states(
        sequential 1..30 => GateTest<true>
    );
}

/// What an outcome shows, for the coverage check below.
fn label(action: &Action, outcome: &Outcome) -> String {
    match (action, outcome) {
        (Action::RedeemToken { .. }, Outcome::Applied) => "applied by a token".into(),
        (Action::RedeemState { .. }, Outcome::Applied) => "applied by a requestState".into(),
        (Action::ShimAnswer { .. }, Outcome::Applied) => "applied by the shim".into(),
        (_, Outcome::Refused(refusal)) => format!("refused {:?}", refusal.kind),
        (_, Outcome::Reraised { refusal, .. }) => format!("re-raised {:?}", refusal.kind),
        (_, Outcome::MintRefused(refusal)) => format!("mint refused {:?}", refusal.kind),
        (_, Outcome::AfterGate { fate, .. }) => format!("after the gate {fate:?}"),
        (_, other) => format!("{other:?}")
            .split([' ', '(', '{'])
            .next()
            .unwrap_or_default()
            .to_owned(),
    }
}

/// The generated sequences are not vacuous: with a fixed seed, the cases of each mode reach
/// every kind of outcome the comparison is meant to exercise.
#[test]
fn the_generated_sequences_reach_every_kind_of_outcome() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    use std::collections::BTreeSet;

    fn outcomes<R: ReferenceStateMachine<State = Reference, Transition = Action>>(
        seen: &mut BTreeSet<String>,
    ) {
        let mut runner = TestRunner::deterministic();
        for _ in 0..64 {
            let tree = R::sequential_strategy(1..30)
                .new_tree(&mut runner)
                .unwrap_or_else(|reason| panic!("no sequence generated: {reason}"));
            let (mut state, transitions, _) = tree.current();
            for action in transitions {
                state = R::apply(state, &action);
                if let Some(outcome) = &state.last {
                    seen.insert(label(&action, outcome));
                }
            }
        }
    }
    let mut seen = BTreeSet::new();
    outcomes::<GateReference<false>>(&mut seen);
    outcomes::<GateReference<true>>(&mut seen);
    let wanted = [
        "applied by a token",
        "applied by a requestState",
        "applied by the shim",
        "refused Drift",
        "refused Declined",
        "refused NotObtained",
        "re-raised AlreadySpent",
        "CallCancelled",
        "re-raised WrongCaller",
        "re-raised WrongVault",
        "re-raised WrongArgs",
        "re-raised Expired",
        "re-raised StateMismatch",
        "re-raised UnknownToken",
        "mint refused NoRaise",
        "mint refused StaleStateFp",
        "after the gate Released",
        "after the gate KeptSpent",
        "Minted",
        "Reopened",
    ];
    let missing: Vec<&str> = wanted
        .into_iter()
        .filter(|label| !seen.contains(*label))
        .collect();
    assert!(
        missing.is_empty(),
        "never reached: {missing:?}; reached: {seen:?}"
    );
}
