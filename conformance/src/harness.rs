//! One action, two gates: the model ([`GateModel`]) and tc-gate ([`Sut`]) take the same
//! [`Action`] and must answer the same [`Outcome`] and leave the notes in the same state
//!. A difference is a [`Divergence`], which names the clause the model's answer
//! is evidence of, e.g. `[drift.refuse] RedeemToken(Tok(0)) … : model Drift, impl Applied`.

use std::fmt;

use tc_gate::EventName;
use tc_model::{Action, GateModel, ModelConfig, Outcome, Stage, TokenFate};

use crate::sut::{Sut, SutError, SutOptions};

/// What the implementation did where the model answered something else.
#[derive(Debug)]
pub enum ImplSide {
    /// tc-gate answered this outcome.
    Answered(Outcome),
    /// The harness could not express tc-gate's answer, or tc-gate failed.
    Failed(String),
    /// Same outcome, but the notes differ afterwards (model versions, impl versions).
    NotesDiffer {
        model: Vec<u8>,
        implementation: Vec<u8>,
    },
    /// Same outcome, but tc-gate recorded other events than the outcome implies.
    EventsDiffer {
        expected: Vec<EventName>,
        recorded: Vec<EventName>,
    },
}

/// The events an outcome implies (spec/events.md): a raise records `tc.elicit.requested`, a
/// mint `elicit_minted`, every handler run `tc.elicit.consumed` (trip.consumed-event-per-run),
/// every release `hitl_released` (release.event). The harness enters a handler for an applied
/// call and for the stages after a request was sent or the handler ran; a folder-ACL refusal
/// or a cancellation stops before it, and so does the write gate's preflight, except for
/// `update_task`, whose write gate refuses inside its handler.
pub fn expected_events(action: &Action, outcome: &Outcome) -> Vec<EventName> {
    match outcome {
        Outcome::Raised { .. } | Outcome::Reraised { .. } | Outcome::Prompted { .. } => {
            vec![EventName::Requested]
        }
        Outcome::Minted(_) => vec![EventName::Minted],
        Outcome::Applied => vec![EventName::Consumed],
        Outcome::AfterGate { stage, fate } => {
            let Action::RedeemToken { call, .. } = action else {
                return Vec::new();
            };
            let entered = match stage {
                Stage::AclDenied | Stage::Cancelled => false,
                Stage::ConventionBlockedBeforeWrite => call.tool.confirms_in_handler(),
                _ => true,
            };
            let mut events = Vec::new();
            if entered {
                events.push(EventName::Consumed);
            }
            if *fate == TokenFate::Released {
                events.push(EventName::Released);
            }
            events
        }
        _ => Vec::new(),
    }
}

/// The first disagreement of a run.
#[derive(Debug)]
pub struct Divergence {
    /// Index of the action in the run (0-based).
    pub step: usize,
    pub action: Action,
    pub model: Outcome,
    pub implementation: ImplSide,
}

/// A short name for an outcome in a divergence line.
fn brief(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Refused(refusal) => format!("{:?}", refusal.kind),
        Outcome::MintRefused(refusal) => format!("MintRefused({:?})", refusal.kind),
        Outcome::Reraised { refusal, .. } => format!("Reraised({:?})", refusal.kind),
        other => format!("{other:?}"),
    }
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let impl_clause = match &self.implementation {
            ImplSide::Answered(outcome) => outcome.clause(),
            _ => None,
        };
        let clause = self.model.clause().or(impl_clause).unwrap_or("no clause");
        let implementation = match &self.implementation {
            ImplSide::Answered(outcome) => brief(outcome),
            ImplSide::Failed(error) => format!("error: {error}"),
            ImplSide::NotesDiffer {
                model,
                implementation,
            } => format!(
                "the same outcome, but note versions model {model:?}, impl {implementation:?}"
            ),
            ImplSide::EventsDiffer { expected, recorded } => {
                format!("the same outcome, but events {recorded:?} where it implies {expected:?}")
            }
        };
        write!(
            f,
            "[{clause}] step {}: {}: model {}, impl {implementation}",
            self.step,
            self.action,
            brief(&self.model)
        )?;
        if let ImplSide::Answered(outcome) = &self.implementation {
            write!(f, "\n  model: {:?}\n  impl:  {outcome:?}", self.model)?;
        }
        Ok(())
    }
}

impl std::error::Error for Divergence {}

/// The model and tc-gate side by side.
#[derive(Debug)]
pub struct Harness {
    pub model: GateModel,
    pub sut: Sut,
    steps: usize,
}

impl Harness {
    pub fn new(config: ModelConfig, options: SutOptions) -> Result<Self, SutError> {
        Ok(Harness {
            model: GateModel::new(config),
            sut: Sut::new(config, options)?,
            steps: 0,
        })
    }

    /// Applies `action` to both and compares.
    pub fn step(&mut self, action: &Action) -> Result<Outcome, Divergence> {
        let step = self.steps;
        self.steps += 1;
        let model = self.model.apply(action);
        check_step(&mut self.sut, &self.model, action, model).map_err(|implementation| {
            Divergence {
                step,
                action: *action,
                model,
                implementation,
            }
        })?;
        Ok(model)
    }

    /// Applies every action in order; stops at the first divergence.
    pub fn run(&mut self, actions: &[Action]) -> Result<(), Divergence> {
        actions
            .iter()
            .try_for_each(|action| self.step(action).map(drop))
    }
}

/// Applies `action` to `sut` and compares it with `model`, the model's answer to the same
/// action, and `after`, the model's state after it: the outcome, the notes, and the events
/// the outcome implies.
pub fn check_step(
    sut: &mut Sut,
    after: &GateModel,
    action: &Action,
    model: Outcome,
) -> Result<(), ImplSide> {
    let implementation = sut
        .apply(action)
        .map_err(|error| ImplSide::Failed(error.to_string()))?;
    if implementation != model {
        return Err(ImplSide::Answered(implementation));
    }
    if sut.versions() != after.versions() {
        return Err(ImplSide::NotesDiffer {
            model: after.versions().to_vec(),
            implementation: sut.versions().to_vec(),
        });
    }
    let recorded = sut
        .take_events()
        .map_err(|error| ImplSide::Failed(error.to_string()))?;
    let expected = expected_events(&action.normalized(after.config()), &model);
    if recorded != expected {
        return Err(ImplSide::EventsDiffer { expected, recorded });
    }
    Ok(())
}

/// Why a replay failed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("the harness could not start: {0}")]
    Start(#[from] SutError),
    #[error("the server under test could not start: {0}")]
    Server(String),
    #[error("{0}")]
    Diverged(#[from] Divergence),
}

/// Runs `actions` on a fresh model and tc-gate.
pub fn replay(
    config: ModelConfig,
    options: SutOptions,
    actions: &[Action],
) -> Result<(), ReplayError> {
    Harness::new(config, options)?.run(actions)?;
    Ok(())
}
