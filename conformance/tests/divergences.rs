//! Divergences found between tc-model, tc-gate and the specification that this crate cannot
//! fix (it may not edit tc-model or tc-gate). Each test states the behaviour the spec asks for
//! and fails today; it is ignored with the reason, so `cargo test -- --ignored` shows them, and
//! it becomes a plain regression test once the owning crate is fixed.

use std::sync::Arc;

use tc_conformance::world::{self, RealCall};
use tc_conformance::{Backing, Harness, SutOptions};
use tc_gate::clock::{ManualClock, SeededEntropy};
use tc_gate::keys::ServerSecret;
use tc_gate::request_state::{RequestStateSealer, StateBinding};
use tc_gate::{Gate, GateConfig, Store};
use tc_model::{Action, Call, FpChoice, ModelConfig, Stage, Tok, Tool, Verifier};

fn delete() -> Call {
    Call::new(0, 0, Tool::DeleteNote, 0)
}

/// tc-gate's `sweep` deletes token rows a TTL after their expiry; a token presented after that
/// is answered as unknown (`token_rejected: invalid`), where the model and gate.token.refused
/// say an expired token is rejected as `expired`. Fix in tc-gate (keep a tombstone of swept
/// token ids, or sweep later than any client could still present one) or in the spec and model
/// (a clause allowing `invalid` once the row is swept).
// r[verify gate.token.expired]
// r[verify gate.token.refused]
#[test]
#[ignore = "divergence: after Gate::sweep an expired token is rejected as unknown (invalid), not expired"]
fn a_swept_expired_token_is_still_rejected_as_expired() {
    let options = SutOptions {
        sweep_on_tick: true,
        ..SutOptions::new(Backing::Memory)
    };
    let mut harness = Harness::new(ModelConfig::default(), options).expect("harness");
    let ttl = ModelConfig::default().ttl_ticks;
    let mut actions = vec![
        Action::Raise {
            call: delete(),
            form: false,
        },
        Action::Mint {
            call: delete(),
            state_fp: FpChoice::Omitted,
        },
    ];
    actions.extend(std::iter::repeat_n(
        Action::AdvanceClock,
        2 * usize::from(ttl),
    ));
    actions.push(Action::RedeemToken {
        tok: Tok(0),
        call: delete(),
        stage: Stage::Applied,
        verifier: Verifier::Builtin,
    });
    if let Err(divergence) = harness.run(&actions) {
        panic!("{divergence}");
    }
}

/// tc-gate seals a requestState with its state_fp as associated data but stores the
/// fingerprint nowhere a server can read it back: to open the state the server must already
/// know it. With only tc-gate's API, a server can try the target's current fingerprint (fails
/// exactly when the target drifted) or the retained raised request's (fails once a newer raise
/// superseded it, or the raise was swept). Either way a drifted state is indistinguishable from
/// a forged one, and the client is offered a fresh confirmation instead of `replay_drift`
/// (drift.every-route, drift.refuse; the model answers `replay_drift`). The harness closes the
/// gap by carrying the fingerprint in clear beside the sealed value (tc_conformance::envelope);
/// tc-gate's sealer should do the same (or put the fingerprint in the signed payload).
// r[verify drift.every-route]
#[test]
#[ignore = "divergence: tc-gate alone cannot tell a drifted requestState from a forged one once its raise was superseded"]
fn tc_gate_alone_recognises_a_drifted_request_state() {
    let clock = ManualClock::new(1_800_000_000_000);
    let entropy = Arc::new(SeededEntropy::new(5));
    let gate = Gate::new(
        Store::open_in_memory().expect("store"),
        Arc::new(clock.clone()),
        entropy.clone(),
        GateConfig::new(300).expect("ttl"),
    );
    let sealer = RequestStateSealer::new(&ServerSecret::ephemeral(entropy.as_ref()));
    let call = RealCall::of(&delete());
    let note = |version| world::target_fp(&delete(), version);
    let binding = |fp| StateBinding {
        caller: &call.caller,
        vault: &call.vault,
        tool: call.tool,
        args_hash: &call.args_hash,
        state_fp: fp,
    };
    let before = note(1);
    gate.raise(&call.binding(), &before).expect("raise");
    let sealed = sealer.seal(
        &binding(before.as_str()),
        300_000,
        1_800_000_000_000,
        entropy.as_ref(),
    );
    // The note changes and the call is made again without approval: a newer raise.
    let after = note(2);
    gate.raise(&call.binding(), &after).expect("raise again");

    let now = 1_800_000_001_000;
    let with_current = sealer.open(&sealed.token, &binding(after.as_str()), now);
    let retained = gate
        .raised_request(&call.vault, &call.args_hash, &call.caller)
        .expect("read")
        .expect("live raise");
    let with_retained = sealer.open(&sealed.token, &binding(retained.state_fp.as_str()), now);
    assert!(
        with_current.is_ok() || with_retained.is_ok(),
        "neither the current ({with_current:?}) nor the retained fingerprint \
         ({with_retained:?}) opens the state, so the server cannot answer replay_drift"
    );
}
