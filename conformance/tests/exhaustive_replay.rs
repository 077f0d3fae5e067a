//! The stateright paths replayed against tc-gate: breadth-first over the
//! checker's own action generator ([`stateright::Model::actions`] of [`GateChecker`]), every
//! state reachable within a bounded depth is reached by one path, and that path is replayed on
//! a fresh tc-gate (in-memory cache.db) next to the model, comparing every outcome.
//!
//! Two enumerations:
//! - every action *sequence* up to a small depth (no merging at all), and
//! - every distinct model *state* up to a larger depth, each by the first path that reaches
//!   it (states are compared with their ghost history, so two paths merge only when nothing
//!   the model records tells them apart; the checker's own state-space reductions are not
//!   applied, so every action it generates is taken as it is).
//!
//! A defective model (tc-model's seeded defects) must diverge from tc-gate: that shows the
//! replay can fail, and with the clause the defect breaks.

use std::collections::{HashSet, VecDeque};
use std::time::Instant;

use stateright::Model;
use tc_conformance::harness::{Divergence, ImplSide};
use tc_conformance::{Backing, Harness, SutOptions};
use tc_model::clause;
use tc_model::{Action, Defects, GateChecker, GateModel, ModelConfig, RequestStateMode};

/// What one enumeration covered.
#[derive(Debug, Default)]
struct Coverage {
    /// Distinct model states reached (state enumeration only).
    states: usize,
    paths: usize,
    steps: usize,
}

fn replay(config: ModelConfig, path: &[Action]) -> Result<(), Divergence> {
    let mut harness = Harness::new(config, SutOptions::new(Backing::Memory))
        .unwrap_or_else(|error| panic!("the harness does not start: {error}"));
    harness.run(path)
}

fn actions_of(checker: &GateChecker, state: &GateModel) -> Vec<Action> {
    let mut actions = Vec::new();
    checker.actions(state, &mut actions);
    actions
}

/// Every distinct model state within `depth` actions, each reached by the first path that
/// reaches it. Only the leaves of that discovery tree are replayed: each replay compares every
/// step, so it checks the path to every state on the way, and no state's path is replayed
/// more than once as a whole.
fn replay_states(checker: &GateChecker, depth: usize) -> Result<Coverage, Divergence> {
    let config = checker.config;
    let mut seen = HashSet::from([GateModel::new(config)]);
    let mut queue = VecDeque::from([(GateModel::new(config), Vec::<Action>::new())]);
    let mut coverage = Coverage::default();
    while let Some((state, path)) = queue.pop_front() {
        coverage.states += 1;
        let mut leaf = true;
        if path.len() < depth && checker.within_boundary(&state) {
            for action in actions_of(checker, &state) {
                let mut next = state.clone();
                next.apply(&action);
                if seen.insert(next.clone()) {
                    leaf = false;
                    let mut longer = path.clone();
                    longer.push(action);
                    queue.push_back((next, longer));
                }
            }
        }
        if leaf && !path.is_empty() {
            replay(config, &path)?;
            coverage.paths += 1;
            coverage.steps += path.len();
        }
    }
    Ok(coverage)
}

/// Every action sequence of exactly `depth` actions (and so every prefix), each replayed.
fn replay_sequences(checker: &GateChecker, depth: usize) -> Result<Coverage, Divergence> {
    fn walk(
        checker: &GateChecker,
        state: &GateModel,
        path: &mut Vec<Action>,
        depth: usize,
        coverage: &mut Coverage,
    ) -> Result<(), Divergence> {
        let actions = actions_of(checker, state);
        if path.len() == depth || actions.is_empty() {
            replay(checker.config, path)?;
            coverage.paths += 1;
            coverage.steps += path.len();
            return Ok(());
        }
        for action in actions {
            let mut next = state.clone();
            next.apply(&action);
            path.push(action);
            walk(checker, &next, path, depth, coverage)?;
            path.pop();
        }
        Ok(())
    }
    let mut coverage = Coverage::default();
    walk(
        checker,
        &GateModel::new(checker.config),
        &mut Vec::new(),
        depth,
        &mut coverage,
    )?;
    Ok(coverage)
}

/// The depth of the state enumeration: `default`, or `TC_REPLAY_STATE_DEPTH` for a deeper
/// (slower) run by hand.
fn state_depth(default: usize) -> usize {
    depth_from_env("TC_REPLAY_STATE_DEPTH", default)
}

/// The depth of the sequence enumeration: `default`, or `TC_REPLAY_SEQUENCE_DEPTH`.
fn sequence_depth(default: usize) -> usize {
    depth_from_env("TC_REPLAY_SEQUENCE_DEPTH", default)
}

fn depth_from_env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

#[track_caller]
fn assert_conforms(name: &str, result: Result<Coverage, Divergence>, started: Instant) {
    match result {
        Ok(coverage) => eprintln!(
            "{name}: {} states, {} paths, {} steps replayed in {:.1?}",
            coverage.states,
            coverage.paths,
            coverage.steps,
            started.elapsed()
        ),
        Err(divergence) => panic!("{name}: {divergence}"),
    }
}

fn short_ttl() -> ModelConfig {
    ModelConfig {
        ttl_ticks: 1,
        ..ModelConfig::default()
    }
}

fn single_use() -> ModelConfig {
    ModelConfig {
        request_state_mode: RequestStateMode::SingleUse,
        ..ModelConfig::default()
    }
}

// r[verify gate.token.single-use]
// r[verify gate.token.check-before-consume]
// r[verify gate.token.state-bound]
// r[verify gate.token.expired]
// r[verify gate.raise.supersede]
// r[verify cli.elicit.requires-raise]
// r[verify cli.elicit.state-fp]
// r[verify release.no-effect-only]
// r[verify release.keeps-spent]
// r[verify release.custom-verifier]
// r[verify release.builtin-verifier]
// r[verify drift.refuse]
// r[verify drift.token-spent]
#[test]
fn token_routes_conform_state_by_state() {
    let started = Instant::now();
    let checker = GateChecker::tokens(ModelConfig::default());
    assert_conforms(
        "tokens, states",
        replay_states(&checker, state_depth(4)),
        started,
    );
    // With a one-tick TTL, expiry is within reach of the same depth.
    let started = Instant::now();
    let checker = GateChecker::tokens(short_ttl());
    assert_conforms(
        "tokens (ttl 1), states",
        replay_states(&checker, state_depth(4)),
        started,
    );
}

// r[verify cli.elicit.one-mint-per-raise]
// r[verify cli.elicit.ttl-cap]
#[test]
fn repeated_mints_conform_state_by_state() {
    let started = Instant::now();
    let checker = GateChecker::mints(ModelConfig::default());
    assert_conforms(
        "mints, states",
        replay_states(&checker, state_depth(4)),
        started,
    );
}

#[test]
fn token_routes_conform_sequence_by_sequence() {
    let started = Instant::now();
    let checker = GateChecker::tokens(ModelConfig::default());
    assert_conforms(
        "tokens, sequences",
        replay_sequences(&checker, sequence_depth(2)),
        started,
    );
}

// r[verify state.replayable]
// r[verify state.ttl]
// r[verify trip.accept-only]
// r[verify trip.decline]
// r[verify trip.cancel]
// r[verify trip.legacy-shim.no-answer]
// r[verify drift.every-route]
// r[verify approval.bound]
// r[verify approval.expiry]
#[test]
fn round_trips_with_replayable_states_conform() {
    let started = Instant::now();
    let checker = GateChecker::round_trips(ModelConfig::default());
    assert_conforms(
        "round trips, states",
        replay_states(&checker, state_depth(4)),
        started,
    );
    let started = Instant::now();
    let checker = GateChecker::round_trips(short_ttl());
    assert_conforms(
        "round trips (ttl 1), states",
        replay_states(&checker, state_depth(4)),
        started,
    );
    let started = Instant::now();
    assert_conforms(
        "round trips, sequences",
        replay_sequences(&checker, sequence_depth(3)),
        started,
    );
}

// r[verify state.ext.single-use]
#[test]
fn round_trips_with_single_use_states_conform() {
    let started = Instant::now();
    let checker = GateChecker::round_trips(single_use());
    assert_conforms(
        "round trips (single use), states",
        replay_states(&checker, state_depth(4)),
        started,
    );
}

/// The replay finds a seeded defect of the model, naming the clause it breaks.
fn assert_defect_found(defects: Defects, world: fn(ModelConfig) -> GateChecker, clause: &str) {
    let checker = world(ModelConfig {
        defects,
        ..short_ttl()
    });
    let divergence = match replay_states(&checker, 4) {
        Ok(coverage) => panic!("{defects:?} went unnoticed over {} paths", coverage.paths),
        Err(divergence) => divergence,
    };
    assert!(
        matches!(divergence.implementation, ImplSide::Answered(_)),
        "{divergence}"
    );
    let line = divergence.to_string();
    assert!(
        line.starts_with(&format!("[{clause}]")),
        "expected [{clause}], got: {line}"
    );
}

#[test]
fn the_replay_notices_a_model_that_skips_the_drift_check() {
    assert_defect_found(
        Defects {
            skip_drift_check: true,
            ..Defects::default()
        },
        GateChecker::tokens,
        clause::DRIFT_REFUSE,
    );
}

#[test]
fn the_replay_notices_a_model_that_skips_the_caller_check() {
    assert_defect_found(
        Defects {
            skip_caller_check: true,
            ..Defects::default()
        },
        GateChecker::tokens,
        clause::APPROVAL_BOUND,
    );
}

#[test]
fn the_replay_notices_a_model_that_releases_after_a_handler_error() {
    assert_defect_found(
        Defects {
            release_after_handler_error: true,
            ..Defects::default()
        },
        GateChecker::tokens,
        clause::RELEASE_KEEPS_SPENT,
    );
}

#[test]
fn the_replay_notices_a_model_that_takes_cancel_as_approval() {
    assert_defect_found(
        Defects {
            cancel_as_approval: true,
            ..Defects::default()
        },
        GateChecker::round_trips,
        clause::TRIP_CANCEL,
    );
}

#[test]
fn the_replay_notices_a_model_that_mints_without_a_raise() {
    assert_defect_found(
        Defects {
            mint_without_raise: true,
            ..Defects::default()
        },
        GateChecker::tokens,
        clause::CLI_ELICIT_REQUIRES_RAISE,
    );
}

#[test]
fn the_replay_notices_a_model_that_accepts_an_expired_state() {
    assert_defect_found(
        Defects {
            accept_expired_state: true,
            ..Defects::default()
        },
        GateChecker::round_trips,
        clause::STATE_TTL,
    );
}
