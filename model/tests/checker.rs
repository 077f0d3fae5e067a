//! The exhaustive check: every reachable state of each bounded world satisfies every `always`
//! property (one per safety clause, named by its ID), every `sometimes` twin is reached, and the
//! number of unique states is pinned so that a change to the model or its bounds is noticed.

use stateright::{Checker, Expectation, Model};
use tc_model::clause;
use tc_model::{GateChecker, ModelConfig, RequestStateMode};

/// Runs the checker to completion and asserts every property, that the `always` properties
/// include `expected`, and the unique state count.
fn check(model: GateChecker, expected: &[&str], states: usize) {
    let always: Vec<&str> = model
        .properties()
        .iter()
        .filter(|p| p.expectation == Expectation::Always)
        .map(|p| p.name)
        .collect();
    for id in expected {
        assert!(always.contains(id), "no always property named {id}");
    }
    let checker = model.checker().spawn_bfs().join();
    checker.assert_properties();
    assert_eq!(checker.unique_state_count(), states);
}

// r[verify gate.token.single-use]
// r[verify gate.token.check-before-consume]
// r[verify gate.token.state-bound]
// r[verify cli.elicit.requires-raise]
// r[verify cli.elicit.state-fp]
// r[verify release.no-effect-only]
// r[verify release.keeps-spent]
// r[verify release.custom-verifier]
// r[verify release.builtin-verifier]
// r[verify drift.refuse]
// r[verify drift.token-spent]
// r[verify approval.bound]
// r[verify approval.expiry]
#[test]
fn token_routes_satisfy_every_property() {
    check(
        GateChecker::tokens(ModelConfig::default()),
        &[
            clause::GATE_TOKEN_SINGLE_USE,
            clause::GATE_TOKEN_CHECK_BEFORE_CONSUME,
            clause::GATE_TOKEN_STATE_BOUND,
            clause::CLI_ELICIT_REQUIRES_RAISE,
            clause::CLI_ELICIT_STATE_FP,
            clause::RELEASE_NO_EFFECT_ONLY,
            clause::RELEASE_CUSTOM_VERIFIER,
            clause::DRIFT_REFUSE,
            clause::DRIFT_TOKEN_SPENT,
            clause::APPROVAL_BOUND,
            clause::APPROVAL_EXPIRY,
            clause::CLI_ELICIT_TTL_CAP,
            clause::CLI_ELICIT_ONE_MINT_PER_RAISE,
        ],
        35_510,
    );
}

// r[verify state.replayable]
// r[verify trip.form-only]
// r[verify trip.legacy-shim.cancel]
// r[verify trip.accept-only]
// r[verify trip.decline]
// r[verify trip.cancel]
// r[verify drift.every-route]
// r[verify approval.bound]
// r[verify approval.expiry]
#[test]
fn round_trips_with_replayable_request_states_satisfy_every_property() {
    check(
        GateChecker::round_trips(ModelConfig::default()),
        &[
            clause::TRIP_ACCEPT_ONLY,
            clause::TRIP_DECLINE,
            clause::TRIP_CANCEL,
            clause::TRIP_FORM_ONLY,
            clause::TRIP_LEGACY_SHIM_CANCEL,
            clause::DRIFT_REFUSE,
            clause::APPROVAL_BOUND,
            clause::APPROVAL_EXPIRY,
        ],
        141_912,
    );
}

// r[verify state.ext.single-use]
// r[verify trip.accept-only]
// r[verify trip.decline]
// r[verify trip.cancel]
// r[verify drift.every-route]
#[test]
fn round_trips_with_single_use_request_states_satisfy_every_property() {
    check(
        GateChecker::round_trips(ModelConfig {
            request_state_mode: RequestStateMode::SingleUse,
            ..ModelConfig::default()
        }),
        &[
            clause::STATE_EXT_SINGLE_USE,
            clause::TRIP_ACCEPT_ONLY,
            clause::TRIP_DECLINE,
            clause::TRIP_CANCEL,
            clause::DRIFT_REFUSE,
            clause::APPROVAL_BOUND,
            clause::APPROVAL_EXPIRY,
        ],
        199_880,
    );
}

// r[verify cli.elicit.one-mint-per-raise]
// r[verify cli.elicit.ttl-cap]
// r[verify cli.elicit.requires-raise]
#[test]
fn repeated_mints_satisfy_every_property() {
    check(
        GateChecker::mints(ModelConfig::default()),
        &[
            clause::CLI_ELICIT_ONE_MINT_PER_RAISE,
            clause::CLI_ELICIT_TTL_CAP,
            clause::CLI_ELICIT_REQUIRES_RAISE,
            clause::GATE_TOKEN_SINGLE_USE,
        ],
        121_830,
    );
}
