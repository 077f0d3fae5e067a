//! The redeem routes of the gate-level [`Sut`]: a token through a verifier and a stage, the
//! modern requestState echo, and the legacy shim's prompt, answer and cancellation (spec/gate.md,
//! release.md, drift.md, state.md and trips.md; how each is executed is in the parent module).

use tc_gate::request_state::{StateBinding, StateError};
use tc_gate::{
    AdmitError, BindingMismatch, InHandlerNoEffect, NoEffect, NonTokenRoute, RedeemError,
    ReleaseOutcome, SpentReason, StateFp,
};
use tc_model::clause;
use tc_model::{
    Answer, Call, Outcome, PromptRef, Refusal, RefusalKind, Stage, StateRef, Tok, TokenFate,
};

use super::{
    OpenPrompt, Sut, SutError, UNKNOWN_STATE, UNKNOWN_TOKEN, index_u8, modulo, verifier_for,
};
use crate::envelope;
use crate::world::RealCall;

impl Sut {
    pub(super) fn redeem_token(
        &mut self,
        tok: Tok,
        call: &Call,
        stage: Stage,
        verifier: tc_model::Verifier,
    ) -> Result<Outcome, SutError> {
        let token = match modulo(tok.0, self.tokens.len()) {
            Some(index) => self.tokens[index].clone(),
            None => UNKNOWN_TOKEN.to_owned(),
        };
        let real = RealCall::of(call);
        let current = self.current_fp(call);
        let hook = verifier_for(verifier);
        let gate = self.gate()?.clone();
        let redeemed = hook.verify(&gate, &token, &real.binding(), &mut || current.clone());
        let redemption = match redeemed {
            Ok(redemption) => redemption,
            Err(RedeemError::ReplayDrift) => {
                return Ok(Outcome::Refused(Refusal::new(
                    clause::DRIFT_REFUSE,
                    RefusalKind::Drift,
                )));
            }
            Err(RedeemError::Store(error)) => return Err(error.into()),
            Err(error) => {
                let refusal = token_refusal(&error)?;
                return self.reraise(refusal, call, false);
            }
        };
        let fate = match stage {
            Stage::Applied => {
                let run = redemption.enter_handler()?;
                self.take_effect(call);
                run.keep_spent(SpentReason::Completed);
                return Ok(Outcome::Applied);
            }
            Stage::AclDenied => redemption.release(NoEffect::FolderAclDenied, hook)?,
            Stage::Cancelled => redemption.release(NoEffect::CancelledBeforeHandler, hook)?,
            Stage::ConventionBlockedBeforeWrite if call.tool.confirms_in_handler() => redemption
                .enter_handler()?
                .release_handler_level(InHandlerNoEffect::ConventionBlockedBeforeWrite)?,
            Stage::ConventionBlockedBeforeWrite => {
                redemption.release(NoEffect::ConventionBlockedBeforeWrite, hook)?
            }
            Stage::Timeout => keep_spent_in_handler(redemption, SpentReason::Timeout)?,
            Stage::Http5xx => keep_spent_in_handler(redemption, SpentReason::Http5xx)?,
            Stage::OperationTimeout => {
                keep_spent_in_handler(redemption, SpentReason::OperationTimeout)?
            }
            Stage::HandlerError => keep_spent_in_handler(redemption, SpentReason::HandlerError)?,
            Stage::FaultAfterReturn => {
                keep_spent_in_handler(redemption, SpentReason::FaultAfterReturn)?
            }
        };
        Ok(Outcome::AfterGate {
            stage,
            fate: match fate {
                ReleaseOutcome::Released { .. } => TokenFate::Released,
                ReleaseOutcome::KeptSpent => TokenFate::KeptSpent,
            },
        })
    }

    // ----- the 2026-07-28 requestState ---------------------------------------------------------

    pub(super) fn redeem_state(
        &mut self,
        state: StateRef,
        call: &Call,
        answer: Answer,
        form: bool,
    ) -> Result<Outcome, SutError> {
        let issued = modulo(state.0, self.states.len()).map(|index| self.states[index].clone());
        let presented = issued.as_deref().unwrap_or(UNKNOWN_STATE);
        let real = RealCall::of(call);
        let opened = match envelope::unwrap(presented) {
            Some((sealed_fp, sealed)) => self
                .sealer
                .open(sealed, &state_binding(&real, &sealed_fp), self.now())
                .map(|opened| (opened, sealed_fp)),
            None => Err(StateError::Invalid),
        };
        let (opened, sealed_fp) = match opened {
            Ok(opened) => opened,
            Err(error) => {
                let refusal = match error {
                    StateError::Invalid if issued.is_none() => {
                        Refusal::new(clause::STATE_INVALID_FRESH, RefusalKind::InvalidState)
                    }
                    StateError::Invalid => {
                        Refusal::new(clause::APPROVAL_BOUND, RefusalKind::StateMismatch)
                    }
                    StateError::Expired => Refusal::new(clause::STATE_TTL, RefusalKind::Expired),
                    StateError::LegacyKeyed => {
                        return Err(SutError::Unexpected(
                            "a state this harness sealed opened as pre-upgrade".into(),
                        ));
                    }
                };
                return self.reraise(refusal, call, form);
            }
        };
        if let Some(refusal) = answer_refusal(answer) {
            return Ok(Outcome::Refused(refusal));
        }
        let gate = self.gate()?.clone();
        match gate.admit_request_state(&opened) {
            Ok(()) => {}
            Err(AdmitError::AlreadyUsed) => {
                let spent = Refusal::new(clause::STATE_EXT_SINGLE_USE, RefusalKind::AlreadySpent);
                return self.reraise(spent, call, form);
            }
            Err(AdmitError::Expired) => {
                return Ok(Outcome::Refused(Refusal::new(
                    clause::STATE_TTL,
                    RefusalKind::Expired,
                )));
            }
            Err(AdmitError::Store(error)) => return Err(error.into()),
        }
        let current = self.current_fp(call);
        if gate.check_drift(&sealed_fp, &current).is_err() {
            return Ok(Outcome::Refused(Refusal::new(
                clause::DRIFT_REFUSE,
                RefusalKind::Drift,
            )));
        }
        gate.record_handler_run(&real.binding(), NonTokenRoute::RequestState)?;
        self.take_effect(call);
        Ok(Outcome::Applied)
    }

    // ----- the legacy stdio shim ---------------------------------------------------------------

    pub(super) fn shim_prompt(&mut self, call: &Call) -> Result<Outcome, SutError> {
        let (state_fp, model_fp) = self.record_raise(call)?;
        self.prompts.push(OpenPrompt {
            call: *call,
            state_fp,
            issued_at_ms: self.now(),
        });
        Ok(Outcome::Prompted {
            state_fp: model_fp,
            prompt: PromptRef(index_u8(self.prompts.len() - 1)),
        })
    }

    pub(super) fn shim_answer(
        &mut self,
        prompt: PromptRef,
        answer: Answer,
    ) -> Result<Outcome, SutError> {
        let Some(index) = modulo(prompt.0, self.prompts.len()) else {
            return Ok(Outcome::NoSuchPrompt);
        };
        // The prompt closes whatever the answer: it is never sent twice (trip.never-twice).
        let open = self.prompts.remove(index);
        if self.now() >= open.issued_at_ms.saturating_add(self.ttl_ms()) {
            return Ok(Outcome::Refused(Refusal::new(
                clause::TRIP_LEGACY_SHIM_NO_ANSWER,
                RefusalKind::NotObtained,
            )));
        }
        if let Some(refusal) = answer_refusal(answer) {
            return Ok(Outcome::Refused(refusal));
        }
        let current = self.current_fp(&open.call);
        let gate = self.gate()?.clone();
        if gate.check_drift(&open.state_fp, &current).is_err() {
            return Ok(Outcome::Refused(Refusal::new(
                clause::DRIFT_REFUSE,
                RefusalKind::Drift,
            )));
        }
        let real = RealCall::of(&open.call);
        gate.record_handler_run(&real.binding(), NonTokenRoute::LegacyShim)?;
        self.take_effect(&open.call);
        Ok(Outcome::Applied)
    }

    /// The call is cancelled while its prompt is open: the prompt closes and nothing runs.
    pub(super) fn shim_cancel(&mut self, prompt: PromptRef) -> Outcome {
        match modulo(prompt.0, self.prompts.len()) {
            Some(index) => {
                self.prompts.remove(index);
                Outcome::CallCancelled
            }
            None => Outcome::NoSuchPrompt,
        }
    }
}

pub(super) fn state_binding<'a>(real: &'a RealCall, fp: &'a StateFp) -> StateBinding<'a> {
    StateBinding {
        caller: &real.caller,
        vault: &real.vault,
        tool: real.tool,
        args_hash: &real.args_hash,
        state_fp: fp.as_str(),
    }
}

/// The handler was entered (a request was sent, or it ran) and the outcome keeps the token
/// spent (release.keeps-spent).
fn keep_spent_in_handler(
    redemption: tc_gate::Redemption,
    reason: SpentReason,
) -> Result<ReleaseOutcome, SutError> {
    redemption.enter_handler()?.keep_spent(reason);
    Ok(ReleaseOutcome::KeptSpent)
}

/// The refusal a token rejection (other than drift) stands for.
fn token_refusal(error: &RedeemError) -> Result<Refusal, SutError> {
    Ok(match error {
        RedeemError::UnknownToken => {
            Refusal::new(clause::GATE_TOKEN_REFUSED, RefusalKind::UnknownToken)
        }
        RedeemError::Mismatch(BindingMismatch::Vault) => {
            Refusal::new(clause::APPROVAL_BOUND, RefusalKind::WrongVault)
        }
        RedeemError::Mismatch(BindingMismatch::ArgsHash) => {
            Refusal::new(clause::APPROVAL_BOUND, RefusalKind::WrongArgs)
        }
        RedeemError::Mismatch(BindingMismatch::Caller) => {
            Refusal::new(clause::APPROVAL_BOUND, RefusalKind::WrongCaller)
        }
        RedeemError::Expired => Refusal::new(clause::GATE_TOKEN_EXPIRED, RefusalKind::Expired),
        RedeemError::AlreadySpent => {
            Refusal::new(clause::GATE_TOKEN_SINGLE_USE, RefusalKind::AlreadySpent)
        }
        RedeemError::ReplayDrift | RedeemError::Store(_) => {
            return Err(SutError::Unexpected(format!(
                "{error} is not a token rejection"
            )));
        }
    })
}

/// The server's verdict on a round-trip answer: only accept with approve true approves
/// (trip.accept-only); decline and accept-false are a hard stop, cancel is "not obtained".
fn answer_refusal(answer: Answer) -> Option<Refusal> {
    match answer {
        Answer::Accept { approve: true } => None,
        Answer::Accept { approve: false } | Answer::Decline => {
            Some(Refusal::new(clause::TRIP_DECLINE, RefusalKind::Declined))
        }
        Answer::Cancel => Some(Refusal::new(clause::TRIP_CANCEL, RefusalKind::NotObtained)),
    }
}
