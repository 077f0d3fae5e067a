//! The stateright checker's paths replayed against the product: breadth-first over
//! [`GateChecker`]'s own action generator, every model state within a bounded depth is reached
//! by one path, and the leaves of that discovery tree are replayed on a fresh tc-server in
//! process ([`ServerSut`]) next to the model, comparing every step (the outcome as the wire
//! shows it, the notes on disk, the events in cache.db).
//!
//! The worlds are the checker's (two callers: `stdio` over stdio, and a JWT caller over
//! Streamable HTTP), narrowed to what the server has a counterpart for: `write_note` and
//! `execute_command` as the path and `"none"` tools, the built-in verifier, the stages a local
//! stand-in arranges; a path with an action outside the
//! mapping ([`Mapping::admits_path`]) is left out and counted. Each server takes a while to
//! build, so by default a deterministic sample of the paths is replayed (a fixed seed,
//! [`SAMPLE`] paths per world); `CONFORMANCE_FULL=1` replays every one.
//!
//! A seeded defect of the model must diverge from the server: the replay can fail, and
//! names the clause the defect breaks.

use std::collections::{HashSet, VecDeque};
use std::path::PathBuf;
use std::time::Instant;

use stateright::Model;
use tc_conformance::ReplayError;
use tc_conformance::harness::ImplSide;
use tc_conformance::server::compare::{Mapping, replay};
use tc_model::clause;
use tc_model::{
    Action, Call, Defects, GateChecker, GateModel, ModelConfig, RequestStateMode, Stage, Tool,
    Verifier,
};

/// Paths replayed per world unless `CONFORMANCE_FULL=1`.
const SAMPLE: usize = 50;
/// The seed of the sample.
const SEED: u64 = 0x7c_0c0f_0a11;

fn parent() -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    }
}

fn full() -> bool {
    std::env::var("CONFORMANCE_FULL").is_ok_and(|v| v == "1")
}

/// A checker world narrowed to the server's counterparts.
fn narrowed(mut checker: GateChecker) -> GateChecker {
    checker
        .bounds
        .origins
        .retain(|call: &Call| call.tool != Tool::UpdateTask);
    checker.bounds.stages.retain(|stage| {
        matches!(
            stage,
            Stage::Applied
                | Stage::AclDenied
                | Stage::Http5xx
                | Stage::HandlerError
                | Stage::Timeout
                | Stage::OperationTimeout
        )
    });
    checker.bounds.verifiers = vec![Verifier::Builtin];
    checker
}

fn actions_of(checker: &GateChecker, state: &GateModel) -> Vec<Action> {
    let mut actions = Vec::new();
    checker.actions(state, &mut actions);
    actions
}

/// The leaves of the breadth-first discovery tree of every distinct state within `depth`.
fn leaf_paths(checker: &GateChecker, depth: usize) -> (usize, Vec<Vec<Action>>) {
    let config = checker.config;
    let mut seen = HashSet::from([GateModel::new(config)]);
    let mut queue = VecDeque::from([(GateModel::new(config), Vec::<Action>::new())]);
    let (mut states, mut leaves) = (0, Vec::new());
    while let Some((state, path)) = queue.pop_front() {
        states += 1;
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
            leaves.push(path);
        }
    }
    (states, leaves)
}

/// `count` of `items`, chosen by a seeded Fisher–Yates shuffle (splitmix64).
fn sample<T>(mut items: Vec<T>, count: usize, seed: u64) -> Vec<T> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let n = items.len();
    for i in 0..n.min(count) {
        let span = u64::try_from(n - i).unwrap_or(u64::MAX);
        let j = i + usize::try_from(next() % span).unwrap_or(0);
        items.swap(i, j);
    }
    items.truncate(count);
    items
}

/// Replays the world's paths (a sample, or all with `CONFORMANCE_FULL=1`) and reports.
fn replay_world(name: &str, checker: GateChecker, depth: usize) -> Result<(), ReplayError> {
    let started = Instant::now();
    let (states, leaves) = leaf_paths(&checker, depth);
    let total = leaves.len();
    let admitted: Vec<Vec<Action>> = leaves
        .into_iter()
        .filter(|path| Mapping::admits_path(checker.config, path))
        .collect();
    let outside = total - admitted.len();
    let mapped = admitted.len();
    let chosen = if full() {
        admitted
    } else {
        sample(admitted, SAMPLE, SEED)
    };
    let steps: usize = chosen.iter().map(Vec::len).sum();
    for path in &chosen {
        replay(checker.config, &parent(), path)?;
    }
    eprintln!(
        "{name}: {states} states, {total} leaf paths ({outside} outside the mapping), \
         {} of {mapped} replayed ({steps} steps) in {:.1?}",
        chosen.len(),
        started.elapsed()
    );
    Ok(())
}

#[track_caller]
fn assert_conforms(name: &str, checker: GateChecker, depth: usize) {
    if let Err(error) = replay_world(name, checker, depth) {
        panic!("{name}: {error}");
    }
}

fn short_ttl() -> ModelConfig {
    ModelConfig {
        ttl_ticks: 1,
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
// r[verify release.acl]
// r[verify release.keeps-spent]
// r[verify drift.refuse]
// r[verify drift.token-spent]
#[test]
fn the_server_conforms_on_the_token_routes() {
    assert_conforms(
        "tokens",
        narrowed(GateChecker::tokens(ModelConfig::default())),
        4,
    );
    assert_conforms(
        "tokens (ttl 1)",
        narrowed(GateChecker::tokens(short_ttl())),
        4,
    );
}

// r[verify cli.elicit.one-mint-per-raise]
// r[verify cli.elicit.ttl-cap]
#[test]
fn the_server_conforms_on_repeated_mints() {
    assert_conforms(
        "mints",
        narrowed(GateChecker::mints(ModelConfig::default())),
        4,
    );
}

// r[verify state.replayable]
// r[verify state.ttl]
// r[verify trip.accept-only]
// r[verify trip.decline]
// r[verify trip.cancel]
// r[verify trip.legacy-shim]
// r[verify trip.legacy-shim.cancel]
// r[verify drift.every-route]
#[test]
fn the_server_conforms_on_the_round_trips() {
    assert_conforms(
        "round trips",
        narrowed(GateChecker::round_trips(ModelConfig::default())),
        4,
    );
    assert_conforms(
        "round trips (ttl 1)",
        narrowed(GateChecker::round_trips(short_ttl())),
        4,
    );
    assert_conforms(
        "round trips (single use)",
        narrowed(GateChecker::round_trips(ModelConfig {
            request_state_mode: RequestStateMode::SingleUse,
            ..ModelConfig::default()
        })),
        4,
    );
}

/// The replay against the server finds a seeded defect of the model, naming its clause.
fn assert_defect_found(defects: Defects, world: fn(ModelConfig) -> GateChecker, clause: &str) {
    let checker = narrowed(world(ModelConfig {
        defects,
        ..short_ttl()
    }));
    let (_, leaves) = leaf_paths(&checker, 4);
    let mut replayed = 0;
    for path in leaves
        .iter()
        .filter(|path| Mapping::admits_path(checker.config, path))
    {
        replayed += 1;
        match replay(checker.config, &parent(), path) {
            Ok(()) => continue,
            Err(ReplayError::Diverged(divergence)) => {
                assert!(
                    matches!(divergence.implementation, ImplSide::Answered(_)),
                    "{divergence}"
                );
                let line = divergence.to_string();
                assert!(
                    line.starts_with(&format!("[{clause}]")),
                    "expected [{clause}], got: {line}"
                );
                return;
            }
            Err(other) => panic!("{other}"),
        }
    }
    panic!("{defects:?} went unnoticed over {replayed} paths");
}

#[test]
fn the_server_replay_notices_a_model_that_skips_the_drift_check() {
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
fn the_server_replay_notices_a_model_that_takes_cancel_as_approval() {
    assert_defect_found(
        Defects {
            cancel_as_approval: true,
            ..Defects::default()
        },
        GateChecker::round_trips,
        clause::TRIP_CANCEL,
    );
}

// r[verify release.keeps-spent]
#[test]
fn the_server_replay_notices_a_model_that_releases_after_a_handler_error() {
    assert_defect_found(
        Defects {
            release_after_handler_error: true,
            ..Defects::default()
        },
        GateChecker::tokens,
        clause::RELEASE_KEEPS_SPENT,
    );
}
