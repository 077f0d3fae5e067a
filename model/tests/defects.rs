//! The model can fail: each seeded defect bends one decision of the gate, and
//! the checker must find a counterexample to the property of the clause that decision realizes.
//! Each counterexample is then replayed on the defect-free model, where the same property holds
//! at every step: the defect, not the scenario, is what breaks it.

use std::collections::BTreeSet;

use stateright::{Checker, HasDiscoveries, Model};
use tc_model::clause;
use tc_model::{Defects, GateChecker, GateModel, ModelConfig, RequestStateMode};

enum World {
    Tokens,
    Mints,
    RoundTrips(RequestStateMode),
}

fn counterexample(world: World, defects: Defects, property: &'static str) {
    let mut config = ModelConfig {
        defects,
        ..ModelConfig::default()
    };
    let model = |config: ModelConfig| match world {
        World::Tokens => GateChecker::tokens(config),
        World::Mints => GateChecker::mints(config),
        World::RoundTrips(mode) => GateChecker::round_trips(ModelConfig {
            request_state_mode: mode,
            ..config
        }),
    };
    let checker = model(config)
        .checker()
        .finish_when(HasDiscoveries::AnyOf(BTreeSet::from([property])))
        .spawn_bfs()
        .join();
    let Some(path) = checker.discovery(property) else {
        panic!("{defects:?}: no counterexample to {property}");
    };
    let actions = path.into_actions();

    config.defects = Defects::default();
    let sound = model(config);
    let condition = sound
        .properties()
        .into_iter()
        .find(|p| p.name == property)
        .map(|p| p.condition)
        .expect("the property exists in the defect-free model");
    let mut gate = GateModel::new(sound.config);
    for action in &actions {
        let outcome = gate.apply(action);
        assert!(
            condition(&sound, &gate),
            "{property} fails without the defect too, at {action:?} -> {outcome}"
        );
    }
}

// r[verify approval.bound]
#[test]
fn consuming_without_the_caller_check_breaks_approval_bound() {
    let defects = Defects {
        skip_caller_check: true,
        ..Defects::default()
    };
    counterexample(World::Tokens, defects, clause::APPROVAL_BOUND);
}

// r[verify approval.bound]
#[test]
fn opening_a_state_without_the_vault_check_breaks_approval_bound() {
    let defects = Defects {
        skip_vault_check: true,
        ..Defects::default()
    };
    counterexample(
        World::RoundTrips(RequestStateMode::Replayable),
        defects,
        clause::APPROVAL_BOUND,
    );
}

// r[verify release.no-effect-only]
#[test]
fn releasing_after_a_handler_error_breaks_release_no_effect_only() {
    let defects = Defects {
        release_after_handler_error: true,
        ..Defects::default()
    };
    counterexample(World::Tokens, defects, clause::RELEASE_NO_EFFECT_ONLY);
}

// r[verify drift.token-spent]
#[test]
fn releasing_on_drift_breaks_drift_token_spent() {
    let defects = Defects {
        release_on_drift: true,
        ..Defects::default()
    };
    counterexample(World::Tokens, defects, clause::DRIFT_TOKEN_SPENT);
}

// r[verify release.custom-verifier]
#[test]
fn releasing_through_a_custom_verifier_without_release_breaks_release_custom_verifier() {
    let defects = Defects {
        custom_verifier_always_releases: true,
        ..Defects::default()
    };
    counterexample(World::Tokens, defects, clause::RELEASE_CUSTOM_VERIFIER);
}

// r[verify drift.refuse]
#[test]
fn skipping_the_drift_check_breaks_drift_refuse_on_tokens() {
    let defects = Defects {
        skip_drift_check: true,
        ..Defects::default()
    };
    counterexample(World::Tokens, defects, clause::DRIFT_REFUSE);
}

// r[verify drift.every-route]
#[test]
fn skipping_the_drift_check_breaks_drift_refuse_on_round_trips() {
    let defects = Defects {
        skip_drift_check: true,
        ..Defects::default()
    };
    counterexample(
        World::RoundTrips(RequestStateMode::Replayable),
        defects,
        clause::DRIFT_REFUSE,
    );
}

// r[verify approval.expiry]
#[test]
fn accepting_an_expired_state_breaks_approval_expiry() {
    let defects = Defects {
        accept_expired_state: true,
        ..Defects::default()
    };
    counterexample(
        World::RoundTrips(RequestStateMode::Replayable),
        defects,
        clause::APPROVAL_EXPIRY,
    );
}

// r[verify approval.expiry]
// r[verify gate.token.expired]
#[test]
fn honouring_an_expired_token_breaks_approval_expiry() {
    let defects = Defects {
        skip_token_expiry: true,
        ..Defects::default()
    };
    counterexample(World::Tokens, defects, clause::APPROVAL_EXPIRY);
}

// r[verify trip.cancel]
#[test]
fn treating_cancel_as_approval_breaks_trip_cancel() {
    let defects = Defects {
        cancel_as_approval: true,
        ..Defects::default()
    };
    counterexample(
        World::RoundTrips(RequestStateMode::Replayable),
        defects,
        clause::TRIP_CANCEL,
    );
}

// r[verify trip.decline]
// r[verify trip.accept-only]
#[test]
fn treating_decline_as_approval_breaks_trip_decline_and_accept_only() {
    let defects = Defects {
        decline_as_approval: true,
        ..Defects::default()
    };
    let world = || World::RoundTrips(RequestStateMode::Replayable);
    counterexample(world(), defects, clause::TRIP_DECLINE);
    counterexample(world(), defects, clause::TRIP_ACCEPT_ONLY);
}

// r[verify cli.elicit.requires-raise]
#[test]
fn minting_without_a_raised_request_breaks_cli_elicit_requires_raise() {
    let defects = Defects {
        mint_without_raise: true,
        ..Defects::default()
    };
    counterexample(World::Tokens, defects, clause::CLI_ELICIT_REQUIRES_RAISE);
}

// r[verify cli.elicit.state-fp]
#[test]
fn minting_for_a_superseded_fingerprint_breaks_cli_elicit_state_fp() {
    let defects = Defects {
        accept_superseded_fp: true,
        ..Defects::default()
    };
    counterexample(World::Tokens, defects, clause::CLI_ELICIT_STATE_FP);
}

// r[verify gate.token.single-use]
#[test]
fn consuming_without_the_unspent_condition_breaks_single_use() {
    let defects = Defects {
        skip_consumed_check: true,
        ..Defects::default()
    };
    counterexample(World::Tokens, defects, clause::GATE_TOKEN_SINGLE_USE);
}

// r[verify gate.token.check-before-consume]
#[test]
fn consuming_before_the_checks_breaks_check_before_consume() {
    let defects = Defects {
        consume_before_check: true,
        ..Defects::default()
    };
    counterexample(
        World::Tokens,
        defects,
        clause::GATE_TOKEN_CHECK_BEFORE_CONSUME,
    );
}

// r[verify state.ext.single-use]
#[test]
fn ignoring_the_consumed_state_store_breaks_state_ext_single_use() {
    let defects = Defects {
        state_store_ignored: true,
        ..Defects::default()
    };
    counterexample(
        World::RoundTrips(RequestStateMode::SingleUse),
        defects,
        clause::STATE_EXT_SINGLE_USE,
    );
}

// r[verify cli.elicit.one-mint-per-raise]
#[test]
fn keeping_the_raised_request_after_a_mint_breaks_one_mint_per_raise() {
    let defects = Defects {
        mint_keeps_raise: true,
        ..Defects::default()
    };
    counterexample(World::Mints, defects, clause::CLI_ELICIT_ONE_MINT_PER_RAISE);
}

// r[verify cli.elicit.ttl-cap]
#[test]
fn minting_with_the_clis_own_ttl_breaks_the_ttl_cap() {
    let defects = Defects {
        mint_uses_cli_ttl: true,
        ..Defects::default()
    };
    counterexample(World::Tokens, defects, clause::CLI_ELICIT_TTL_CAP);
}

// r[verify trip.form-only]
#[test]
fn offering_a_state_to_a_formless_request_breaks_form_only() {
    let defects = Defects {
        state_to_formless_client: true,
        ..Defects::default()
    };
    counterexample(
        World::RoundTrips(RequestStateMode::Replayable),
        defects,
        clause::TRIP_FORM_ONLY,
    );
}

// r[verify trip.legacy-shim.cancel]
#[test]
fn leaving_a_cancelled_prompt_open_breaks_shim_cancel() {
    let defects = Defects {
        cancel_leaves_prompt_open: true,
        ..Defects::default()
    };
    counterexample(
        World::RoundTrips(RequestStateMode::Replayable),
        defects,
        clause::TRIP_LEGACY_SHIM_CANCEL,
    );
}
