//! Random walks beyond the checker's bounds: long sequences of actions with handles far outside
//! the configured counts (so index-modulo and normalization are exercised), more tokens, states
//! and prompts than the exhaustive worlds hold, and a clock running well past the TTL. After
//! every step each `always` property of the model must still hold, and `apply` must never panic.

use stateright::{Expectation, Model};
use tc_model::{
    Action, Answer, Call, FpChoice, GateChecker, GateModel, ModelConfig, Note, Outcome, PromptRef,
    RefusalKind, RequestStateMode, Stage, StateRef, Tok, TokenFate, Tool, Vault, Verifier,
};

/// A small deterministic generator (SplitMix64), so a failure replays from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u8 {
        u8::try_from(self.next() % n).unwrap_or(u8::MAX)
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[usize::from(self.below(items.len() as u64))]
    }
    /// Mostly small handles, so actions collide, and now and then a far one.
    fn handle(&mut self) -> u8 {
        if self.below(8) == 0 {
            self.below(256)
        } else {
            self.below(3)
        }
    }
    fn call(&mut self) -> Call {
        Call::new(
            self.handle(),
            self.handle(),
            self.pick(&Tool::ALL),
            self.handle(),
        )
    }
    fn action(&mut self) -> Action {
        match self.below(12) {
            0 | 1 => Action::Raise {
                call: self.call(),
                form: self.below(2) == 0,
            },
            2 => Action::Mint {
                call: self.call(),
                state_fp: self.pick(&[
                    FpChoice::Omitted,
                    FpChoice::Retained,
                    FpChoice::Superseded,
                    FpChoice::Unknown,
                ]),
            },
            3 => Action::IssueUnbound { call: self.call() },
            4 | 5 => Action::RedeemToken {
                tok: Tok(self.handle()),
                call: self.call(),
                stage: self.pick(&Stage::ALL),
                verifier: self.pick(&Verifier::ALL),
            },
            6 => Action::RedeemState {
                state: StateRef(self.handle()),
                call: self.call(),
                answer: self.pick(&Answer::ALL),
                form: self.below(4) != 0,
            },
            7 => Action::ShimPrompt { call: self.call() },
            8 => Action::ShimAnswer {
                prompt: PromptRef(self.handle()),
                answer: self.pick(&Answer::ALL),
            },
            9 => Action::ChangeTarget {
                vault: Vault(self.handle()),
                note: Note(self.handle()),
            },
            10 => Action::AdvanceClock,
            11 if self.below(2) == 0 => Action::ShimCancel {
                prompt: PromptRef(self.handle()),
            },
            _ => Action::Reopen,
        }
    }
}

/// How often the walks reached the situations that matter, so a walk that never gets anywhere
/// cannot pass unnoticed.
#[derive(Debug, Default)]
struct Reached {
    applied: usize,
    released: usize,
    drift: usize,
    reraised: usize,
}

impl Reached {
    fn assert_meaningful(&self) {
        assert!(
            self.applied > 100 && self.released > 10 && self.drift > 10 && self.reraised > 100,
            "the walks reach too little: {self:?}"
        );
    }
}

/// Walks every seed; the first broken property, with the trail that broke it, is the error.
fn walk(config: ModelConfig, seeds: std::ops::Range<u64>, steps: usize) -> Result<Reached, String> {
    let mut reached = Reached::default();
    let judge = GateChecker::all_routes(config);
    let always: Vec<_> = judge
        .properties()
        .into_iter()
        .filter(|p| p.expectation == Expectation::Always)
        .collect();
    for seed in seeds {
        let mut rng = Rng(seed);
        let mut gate = GateModel::new(config);
        let mut trail = Vec::new();
        for _ in 0..steps {
            let action = rng.action();
            let outcome = gate.apply(&action);
            match outcome {
                Outcome::Applied => reached.applied += 1,
                Outcome::AfterGate {
                    fate: TokenFate::Released,
                    ..
                } => reached.released += 1,
                Outcome::Reraised { .. } => reached.reraised += 1,
                Outcome::Refused(refusal) if refusal.kind == RefusalKind::Drift => {
                    reached.drift += 1
                }
                _ => {}
            }
            trail.push(format!("{action} => {outcome}"));
            for property in &always {
                if !(property.condition)(&judge, &gate) {
                    return Err(format!(
                        "seed {seed}: {} broken after\n{}",
                        property.name,
                        trail.join("\n")
                    ));
                }
            }
        }
    }
    Ok(reached)
}

// r[verify gate.token.single-use]
// r[verify release.no-effect-only]
// r[verify approval.bound]
// r[verify drift.refuse]
// r[verify approval.expiry]
// r[verify trip.accept-only]
// r[verify state.replayable]
#[test]
fn long_walks_keep_every_property_with_replayable_states() {
    walk(
        ModelConfig {
            callers: 3,
            vaults: 2,
            notes: 2,
            ..ModelConfig::default()
        },
        0..1000,
        80,
    )
    .unwrap()
    .assert_meaningful();
}

// r[verify state.ext.single-use]
// r[verify cli.elicit.requires-raise]
// r[verify cli.elicit.state-fp]
#[test]
fn long_walks_keep_every_property_with_single_use_states() {
    walk(
        ModelConfig {
            callers: 2,
            vaults: 3,
            notes: 2,
            ttl_ticks: 3,
            request_state_mode: RequestStateMode::SingleUse,
            ..ModelConfig::default()
        },
        1000..2000,
        80,
    )
    .unwrap()
    .assert_meaningful();
}

// r[verify approval.bound]
#[test]
fn walks_notice_a_seeded_defect() {
    let defective = ModelConfig {
        defects: tc_model::Defects {
            skip_caller_check: true,
            ..tc_model::Defects::default()
        },
        ..ModelConfig::default()
    };
    let error = walk(defective, 0..1000, 80).unwrap_err();
    assert!(error.contains("approval.bound"), "{error}");
}
