//! proptest-state-machine against the product: the reference machine is
//! tc-model's [`GateModel`], the system under test is tc-server in process
//! ([`ServerSut`]: the MCP dispatch over stdio sessions of both eras for `stdio` and
//! Streamable HTTP sessions for a JWT caller, the CLI's mint code, real vaults, cache.db on
//! disk), and after every transition the outcome as the wire shows
//! it, the notes on disk and the events in cache.db must be the model's.
//!
//! Only the actions the server has a counterpart for are generated ([`Mapping`] is the
//! precondition; the module documentation of `tc_conformance::server` says why each limit
//! exists). Bounded for CI: 64 cases of up to 30 transitions per request-state mode
//! (`TC_SERVER_PROPTEST_CASES=500` for a longer hunt by hand).

use std::path::PathBuf;

use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::Config;
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest, prop_state_machine};
use tc_conformance::harness::Divergence;
use tc_conformance::server::ServerSut;
use tc_conformance::server::compare::{Mapping, check_step};
use tc_model::{
    Action, Answer, Args, Call, Caller, FpChoice, GateModel, ModelConfig, Note, Outcome, PromptRef,
    RequestStateMode, Stage, StateRef, Tok, Tool, Vault, Verifier,
};

#[derive(Clone, Debug)]
struct Reference {
    model: GateModel,
    mapping: Mapping,
    last: Option<Outcome>,
    steps: usize,
}

fn handle(max: u8) -> impl Strategy<Value = u8> {
    prop_oneof![3 => Just(0u8), 1 => 0..max]
}

fn call() -> impl Strategy<Value = Call> {
    (
        handle(2),
        handle(3),
        select(vec![Tool::DeleteNote, Tool::ExecuteCommand]),
        handle(3),
    )
        .prop_map(|(caller, vault, tool, args)| Call {
            caller: Caller(caller),
            vault: Vault(vault),
            tool,
            args: Args(args),
        })
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        3 => Just(Answer::Accept { approve: true }),
        1 => Just(Answer::Accept { approve: false }),
        1 => Just(Answer::Decline),
        2 => Just(Answer::Cancel),
    ]
}

/// The stages the environment arranges for each tool.
fn redeem() -> impl Strategy<Value = Action> {
    let stage = select(vec![
        Stage::Applied,
        Stage::Applied,
        Stage::AclDenied,
        Stage::Http5xx,
        Stage::HandlerError,
        Stage::Timeout,
        Stage::OperationTimeout,
    ]);
    (handle(4), call(), stage).prop_map(|(tok, call, stage)| {
        let stage = match (call.tool, stage) {
            (
                Tool::DeleteNote,
                Stage::Http5xx | Stage::HandlerError | Stage::Timeout | Stage::OperationTimeout,
            ) => Stage::AclDenied,
            (Tool::ExecuteCommand, Stage::AclDenied) => Stage::Http5xx,
            (_, stage) => stage,
        };
        Action::RedeemToken {
            tok: Tok(tok),
            call,
            stage,
            verifier: Verifier::Builtin,
        }
    })
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
        4 => redeem(),
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

struct ServerReference<const SINGLE_USE: bool>;

impl<const SINGLE_USE: bool> ReferenceStateMachine for ServerReference<SINGLE_USE> {
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
                mapping: Mapping::default(),
                last: None,
                steps: 0,
            })
            .boxed()
    }

    fn transitions(_: &Reference) -> BoxedStrategy<Action> {
        action().boxed()
    }

    fn preconditions(state: &Reference, transition: &Action) -> bool {
        state.mapping.clone().admit(&state.model, transition)
    }

    fn apply(mut state: Reference, transition: &Action) -> Reference {
        state.mapping.admit(&state.model, transition);
        state.last = Some(state.model.apply(transition));
        state.steps += 1;
        state
    }
}

struct ServerTest<const SINGLE_USE: bool>;

fn parent() -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    }
}

impl<const SINGLE_USE: bool> StateMachineTest for ServerTest<SINGLE_USE> {
    type SystemUnderTest = ServerSut;
    type Reference = ServerReference<SINGLE_USE>;

    fn init_test(reference: &Reference) -> ServerSut {
        ServerSut::new(*reference.model.config(), &parent(), 7)
            .unwrap_or_else(|error| panic!("the server under test does not start: {error}"))
    }

    fn apply(mut sut: ServerSut, reference: &Reference, transition: Action) -> ServerSut {
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
}

fn config() -> Config {
    let cases = std::env::var("TC_SERVER_PROPTEST_CASES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(64);
    Config {
        max_shrink_iters: 256,
        ..Config::with_cases(cases)
    }
}

prop_state_machine! {
    #![proptest_config(config())]

    // r[verify approval.bound]
    // r[verify gate.token.single-use]
    // r[verify gate.token.refused]
    // r[verify drift.refuse]
    // r[verify drift.every-route]
    // r[verify release.acl]
    // r[verify release.keeps-spent]
    // r[verify state.replayable]
    // r[verify trip.form-only]
    // r[verify trip.legacy-shim.cancel]
    // r[verify events.refused]
    // r[verify trip.consumed-event-per-run]
    #[test]
    fn the_server_answers_as_the_model_with_replayable_states(
        sequential 1..30 => ServerTest<false>
    );

    // r[verify state.ext.single-use]
    // r[verify state.ext.durable]
    #[test]
    fn the_server_answers_as_the_model_with_single_use_states(
        sequential 1..30 => ServerTest<true>
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
        (_, Outcome::AfterGate { stage, fate }) => format!("{stage:?} {fate:?}"),
        (_, other) => format!("{other:?}")
            .split([' ', '(', '{'])
            .next()
            .unwrap_or_default()
            .to_owned(),
    }
}

/// The generated sequences are not vacuous: with a fixed seed, the default number of cases
/// of the two modes reaches every kind of outcome the server comparison is meant to exercise.
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
                    if std::env::var("TC_DEBUG_COVERAGE").is_ok() {
                        eprintln!("{action} => {outcome:?}");
                    }
                    seen.insert(label(&action, outcome));
                }
            }
        }
    }
    let mut seen = BTreeSet::new();
    outcomes::<ServerReference<false>>(&mut seen);
    outcomes::<ServerReference<true>>(&mut seen);
    let wanted = [
        "applied by a token",
        "applied by a requestState",
        "applied by the shim",
        "refused Drift",
        "refused Declined",
        "refused NotObtained",
        "re-raised AlreadySpent",
        "re-raised UnknownToken",
        "re-raised InvalidState",
        "re-raised WrongCaller",
        "CallCancelled",
        "mint refused NoRaise",
        "mint refused StaleStateFp",
        "AclDenied Released",
        "Http5xx KeptSpent",
        "HandlerError KeptSpent",
        "Timeout KeptSpent",
        "OperationTimeout KeptSpent",
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
