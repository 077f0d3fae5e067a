//! The model and the server side by side: which actions the server comparison
//! can execute ([`Mapping`]), the model's outcome as the wire shows it ([`wire_form`]), the
//! events the server records for an outcome ([`expected_events`], spec/events.md), and one
//! compared step ([`check_step`]): the outcome, the note versions, the bytes of every note on
//! disk, the commands the stand-in Obsidian received, and the events in cache.db.

use std::collections::BTreeSet;

use tc_gate::EventName;
use tc_model::{
    Action, GateModel, Outcome, Refusal, RefusalKind, Stage, TokenFate, Tool, Verifier,
};

use super::routes::stage_supported;
use super::{ServerSut, SutError};
use crate::harness::{Divergence, ImplSide};

/// What the server comparison can execute, decided on the model's state before the action
/// (the module documentation of [`super`] says why each limit exists).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mapping {
    /// The notes the path tool was applied to so far.
    applied: BTreeSet<usize>,
}

impl Mapping {
    /// Whether `action` can be executed in the model state `before`; if so, it is recorded.
    pub fn admit(&mut self, before: &GateModel, action: &Action) -> bool {
        let config = before.config();
        let action = action.normalized(config);
        let calls_update_task = match action {
            Action::Raise { call, .. }
            | Action::Mint { call, .. }
            | Action::IssueUnbound { call }
            | Action::RedeemToken { call, .. }
            | Action::RedeemState { call, .. }
            | Action::ShimPrompt { call } => call.tool == Tool::UpdateTask,
            _ => false,
        };
        if calls_update_task {
            return false;
        }
        match action {
            Action::RedeemToken {
                call,
                stage,
                verifier,
                ..
            } if verifier != Verifier::Builtin || !stage_supported(call.tool, stage) => {
                return false;
            }
            Action::Reopen if !before.prompts().is_empty() => return false,
            Action::ShimPrompt { call } if call.caller.0 != 0 => return false,
            _ => {}
        }
        let mut after = before.clone();
        after.apply(&action);
        if !matches!(action, Action::ChangeTarget { .. }) {
            let written: Vec<usize> = before
                .versions()
                .iter()
                .zip(after.versions())
                .enumerate()
                .filter(|(_, (was, is))| was != is)
                .map(|(index, _)| index)
                .collect();
            if written.iter().any(|index| self.applied.contains(index)) {
                return false;
            }
            self.applied.extend(written);
        }
        true
    }

    /// Whether every action of `path` can be executed, in order, from the initial state.
    pub fn admits_path(config: tc_model::ModelConfig, path: &[Action]) -> bool {
        let mut mapping = Mapping::default();
        let mut model = GateModel::new(config);
        path.iter().all(|action| {
            let admitted = mapping.admit(&model, action);
            model.apply(action);
            admitted
        })
    }
}

/// Refusals as the wire tells them apart: a token that approved nothing by
/// `details.token_rejected` (`invalid` for an unknown token or one bound elsewhere), a
/// requestState that approves nothing not at all (a fresh confirmation, whatever the reason).
const WIRE: &str = "(as the wire shows it)";

fn wire_refusal(kind: RefusalKind) -> Refusal {
    let kind = match kind {
        RefusalKind::WrongVault | RefusalKind::WrongArgs | RefusalKind::WrongCaller => {
            RefusalKind::UnknownToken
        }
        other => other,
    };
    Refusal::new(WIRE, kind)
}

/// `outcome` of `action` with only what the wire tells apart.
pub fn wire_form(action: &Action, outcome: &Outcome) -> Outcome {
    match *outcome {
        Outcome::Refused(refusal) => Outcome::Refused(wire_refusal(refusal.kind)),
        Outcome::MintRefused(refusal) => Outcome::MintRefused(wire_refusal(refusal.kind)),
        Outcome::Reraised {
            refusal,
            state_fp,
            request_state,
        } => {
            let kind = match action {
                Action::RedeemState { .. } => RefusalKind::InvalidState,
                _ => refusal.kind,
            };
            Outcome::Reraised {
                refusal: wire_refusal(kind),
                state_fp,
                request_state,
            }
        }
        other => other,
    }
}

/// The events the server records for `outcome` (spec/events.md): a raise
/// `tc.elicit.requested`, and for a refused token `tc.elicit.refused` after it
/// (`events.refused`); a mint or a library issue `elicit_minted`; every handler run `tc.elicit.consumed`
/// (`trip.consumed-event-per-run`); a drift, a decline or an answer not obtained
/// `tc.elicit.refused`; a release `hitl_released`. The folder ACL and a cancellation stop a
/// call before its handler; the write gate's refusal before any write comes from inside it.
pub fn expected_events(action: &Action, outcome: &Outcome) -> Vec<EventName> {
    match outcome {
        Outcome::Raised { .. } | Outcome::Prompted { .. } => vec![EventName::Requested],
        Outcome::Reraised { .. } => match action {
            Action::RedeemToken { .. } => vec![EventName::Requested, EventName::Refused],
            _ => vec![EventName::Requested],
        },
        Outcome::Minted(_) => vec![EventName::Minted],
        Outcome::Applied => vec![EventName::Consumed],
        Outcome::Refused(_) => vec![EventName::Refused],
        Outcome::AfterGate { stage, fate } => {
            let entered = !matches!(stage, Stage::AclDenied | Stage::Cancelled);
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

/// Applies `action` to `sut` and compares it with `model`, the model's answer, and `after`,
/// the model's state after it.
pub fn check_step(
    sut: &mut ServerSut,
    after: &GateModel,
    action: &Action,
    model: Outcome,
) -> Result<(), ImplSide> {
    let failed = |error: SutError| ImplSide::Failed(error.to_string());
    let implementation = sut.apply(action).map_err(failed)?;
    let normalized = action.normalized(after.config());
    if wire_form(&normalized, &implementation) != wire_form(&normalized, &model) {
        return Err(ImplSide::Answered(implementation));
    }
    if sut.versions() != after.versions() {
        return Err(ImplSide::NotesDiffer {
            model: after.versions().to_vec(),
            implementation: sut.versions().to_vec(),
        });
    }
    let differ = sut.notes_on_disk_differ().map_err(failed)?;
    if let Some((vault, note, expected, found)) = differ.first() {
        return Err(ImplSide::Failed(format!(
            "note {note} of vault {vault} holds {found:?} where the answers imply {expected:?}"
        )));
    }
    let (received, sent) = sut.commands();
    if received != sent {
        return Err(ImplSide::Failed(format!(
            "the stand-in Obsidian received {received} commands where the answers imply {sent}"
        )));
    }
    let recorded = sut.take_events().map_err(failed)?;
    let expected = expected_events(&normalized, &model);
    if recorded != expected {
        return Err(ImplSide::EventsDiffer { expected, recorded });
    }
    Ok(())
}

/// The model and the server, run side by side from their initial states.
pub fn replay(
    config: tc_model::ModelConfig,
    parent: &std::path::Path,
    actions: &[Action],
) -> Result<(), crate::ReplayError> {
    let mut sut =
        ServerSut::new(config, parent, 7).map_err(|e| crate::ReplayError::Server(e.to_string()))?;
    let mut model = GateModel::new(config);
    for (step, action) in actions.iter().enumerate() {
        let outcome = model.apply(action);
        check_step(&mut sut, &model, action, outcome).map_err(|implementation| Divergence {
            step,
            action: *action,
            model: outcome,
            implementation,
        })?;
    }
    Ok(())
}
