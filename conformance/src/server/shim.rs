//! The legacy stdio shim as the model's `ShimPrompt`, `ShimAnswer` and `ShimCancel`
//! (spec/trips.md `trip.legacy-shim`, `trip.legacy-shim.cancel`, `trip.never-twice`): the
//! call from a legacy client with forms on the server with the shim, its `elicitation/create`
//! held open by the client until the model answers it or cancels the call.

use rmcp::model::{CallToolRequest, ClientRequest, ServerResult};
use rmcp::service::PeerRequestOptions;
use tc_model::clause;
use tc_model::{Answer, Call, Outcome, PromptRef, Refusal, RefusalKind};

use super::clients::{PATIENCE, answer_result};
use super::routes::{Answered, confirmation_refusal, read_result, tok_index, unexpected};
use super::{OpenPrompt, ServerSut, Session, SutError, index_u8, world};

impl ServerSut {
    // ----- the legacy stdio shim ---------------------------------------------------------------

    pub(super) fn shim_prompt(&mut self, call: &Call) -> Result<Outcome, SutError> {
        if call.caller.0 != 0 {
            return Err(SutError::Unsupported(
                "the legacy shim of an HTTP caller: the shim is stdio-only".into(),
            ));
        }
        let request =
            ClientRequest::CallToolRequest(CallToolRequest::new(self.routed(Self::params(call)?)));
        let opened = {
            let client = self
                .servers
                .as_mut()
                .and_then(|s| s.sessions.get_mut(&(Session::Shim, 0)));
            let client = client.ok_or_else(|| SutError::Setup("no shim session".into()))?;
            let peer = client.service.peer().clone();
            let prompts = &mut client.prompts;
            self.runtime.block_on(async {
                let mut handle = peer
                    .send_cancellable_request(request, PeerRequestOptions::no_options())
                    .await
                    .map_err(|e| SutError::Wire(e.to_string()))?;
                tokio::select! {
                    held = prompts.recv() => {
                        let held = held.ok_or_else(|| SutError::Wire("the shim session ended".into()))?;
                        Ok((held, handle))
                    }
                    answered = &mut handle.rx => Err(SutError::Unexpected(format!(
                        "the shim answered without prompting: {answered:?}"
                    ))),
                    () = tokio::time::sleep(PATIENCE) => Err(SutError::Wire("no prompt came".into())),
                }
            })
        };
        let (held, request) = opened?;
        let hash = self.args_hash(call)?;
        let raised = self
            .core()?
            .gate()
            .raised_request(
                &world::vault_id(call.vault),
                &hash,
                &world::caller_id(call.caller),
            )?
            .ok_or_else(|| SutError::Unexpected("the shim prompted without a raise".into()))?;
        let state_fp = self.name_fp(call, raised.state_fp.as_str())?;
        self.remember_raise(call)?;
        self.prompts.push(OpenPrompt {
            call: *call,
            held,
            request,
        });
        Ok(Outcome::Prompted {
            state_fp,
            prompt: PromptRef(index_u8(self.prompts.len() - 1)),
        })
    }

    pub(super) fn shim_answer(
        &mut self,
        prompt: PromptRef,
        answer: Answer,
    ) -> Result<Outcome, SutError> {
        let Some(index) = tok_index(prompt.0, self.prompts.len()) else {
            return Ok(Outcome::NoSuchPrompt);
        };
        let open = self.prompts.remove(index);
        let _ = open.held.answer.send(answer_result(answer));
        let response = self
            .runtime
            .block_on(open.request.await_response())
            .map_err(|e| SutError::Wire(e.to_string()))?;
        let ServerResult::CallToolResult(result) = response else {
            return Err(SutError::Unexpected(format!(
                "the shim's call answered {response:?}"
            )));
        };
        match read_result(&result)? {
            Answered::Success => {
                self.took_effect(&open.call);
                Ok(Outcome::Applied)
            }
            Answered::Failure { code, .. } if confirmation_refusal(&code).is_some() => Ok(
                Outcome::Refused(confirmation_refusal(&code).unwrap_or_else(|| {
                    Refusal::new(clause::TRIP_CANCEL, RefusalKind::NotObtained)
                })),
            ),
            other => Err(unexpected("the shim's answered call", &other)),
        }
    }

    pub(super) fn shim_cancel(&mut self, prompt: PromptRef) -> Result<Outcome, SutError> {
        let Some(index) = tok_index(prompt.0, self.prompts.len()) else {
            return Ok(Outcome::NoSuchPrompt);
        };
        let open = self.prompts.remove(index);
        let withdrawn = self.runtime.block_on(async {
            open.request
                .cancel(Some("the user pressed escape".to_owned()))
                .await
                .map_err(|e| SutError::Wire(e.to_string()))?;
            tokio::time::timeout(PATIENCE, open.held.withdrawn)
                .await
                .map_err(|_| SutError::Unexpected("the prompt was not withdrawn".into()))
        })?;
        withdrawn
            .map_err(|_| SutError::Unexpected("the prompt was answered, not withdrawn".into()))?;
        Ok(Outcome::CallCancelled)
    }
}
