//! The confirmation routes a gated call without a CLI token takes, and the decision which one
//! (spec/trips.md; spec/state.md
//! `state.seal.aad`, `state.invalid-fresh`, `state.ext.single-use`; spec/trips.md routes 2 and
//! 3): the 2026-07-28 `input_required` round trip (offered, then completed by the client's
//! resubmission) and the legacy stdio shim, which sends `elicitation/create` itself. Both
//! put the call's summary in the form's message and end in [`ServerCore::execute`] with a
//! verified approval, or in a refusal that says why.

use std::time::Duration;

use rmcp::model::{InputRequests, InputRequiredResult, InputResponses};
use rmcp::service::{RequestContext, RoleServer};
use tc_gate::request_state::{StateBinding, present, split_presented};
use tc_gate::{AdmitError, NonTokenRoute, StateFp};
use tc_tools::{Approval, Prepared, ToolError};

use crate::dispatch::{CallKey, Step, Via};
use crate::server::ServerCore;
use crate::trips::{
    Answer, CONFIRM_KEY, Era, confirm_input_request, confirm_params, judge_answer, prompt_message,
};

/// Which transport a handler serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Stdio,
    Http,
}

/// How a gated call that brought no approval is confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// 2026-07-28 with form elicitation: `input_required`.
    ModernRoundTrip,
    /// Legacy stdio with the shim enabled and form elicitation: server-sent
    /// `elicitation/create`.
    LegacyShim,
    /// Everything else: the plain `elicit_required` refusal.
    Plain,
}

impl Route {
    // r[impl trip.capability]
    // r[impl trip.legacy-shim.stdio-only]
    // r[impl trip.legacy-plain]
    /// The route for a request of `era` over `transport`, given whether the client can show a
    /// form for this request and whether the shim is enabled.
    pub fn choose(era: Era, transport: Transport, form: bool, shim_enabled: bool) -> Self {
        match (era, transport) {
            _ if !form => Route::Plain,
            (Era::Modern, _) => Route::ModernRoundTrip,
            (Era::Legacy, Transport::Stdio) if shim_enabled => Route::LegacyShim,
            (Era::Legacy, _) => Route::Plain,
        }
    }
}

impl ServerCore {
    // r[impl trip.modern.shape]
    // r[impl state.seal.aad]
    /// Raises the request and answers `input_required` with the confirmation form (whose
    /// message carries the summary) and a requestState sealed for this exact call and its
    /// current state.
    pub(crate) async fn offer_round_trip(&self, prepared: &Prepared, key: CallKey) -> Step {
        let raised = {
            let prepared = prepared.clone();
            self.blocking("recording the confirmation request", move |pipeline| {
                pipeline.raise(&prepared)
            })
            .await
        };
        let raised = match raised {
            Ok(raised) => raised,
            Err(error) => return Step::Done(Some(key), Err(error)),
        };
        let fp = prepared.state_fp().as_str();
        let binding = StateBinding {
            caller: &prepared.caller().id,
            vault: prepared.vault_id(),
            tool: prepared.tool(),
            args_hash: prepared.args_hash(),
            state_fp: fp,
        };
        let ttl_ms = u64::try_from(self.ttl_ms).unwrap_or(0);
        let sealed = self
            .sealer
            .seal(&binding, ttl_ms, self.clock.now_ms(), self.entropy.as_ref());
        let message = prompt_message(&raised.summary);
        let mut requests = InputRequests::new();
        requests.insert(CONFIRM_KEY.to_owned(), confirm_input_request(message));
        Step::InputRequired(InputRequiredResult::new(
            Some(requests),
            Some(present(fp, &sealed.token)),
        ))
    }

    // r[impl trip.modern.resubmit]
    // r[impl trip.verified-not-granted]
    // r[impl state.invalid-fresh]
    // r[impl trip.never-twice]
    /// A call resent with `inputResponses` and/or a `requestState`: the state must open for
    /// this exact call, and then the answer decides. A state that does not open approves
    /// nothing and a fresh confirmation is offered: the round trip again if this request can
    /// answer it (`route`), else the plain `elicit_required` (trip.form-only).
    pub(crate) async fn resubmission(
        &self,
        prepared: &Prepared,
        key: CallKey,
        request_state: Option<&str>,
        input_responses: Option<&InputResponses>,
        (route, via): (Route, Via),
        context: &RequestContext<RoleServer>,
    ) -> Step {
        let opened = request_state.and_then(|state| {
            let (hint, sealed) = split_presented(state);
            let approved = match hint {
                Some(hint) => StateFp::parse(hint).ok()?,
                None => prepared.state_fp().clone(),
            };
            let binding = StateBinding {
                caller: &prepared.caller().id,
                vault: prepared.vault_id(),
                tool: prepared.tool(),
                args_hash: prepared.args_hash(),
                state_fp: approved.as_str(),
            };
            match self.sealer.open(sealed, &binding, self.clock.now_ms()) {
                Ok(opened) => Some((opened, approved)),
                Err(error) => {
                    tracing::info!(
                        tool = prepared.tool(),
                        reason = error.reason(),
                        "requestState refused; offering a fresh confirmation"
                    );
                    None
                }
            }
        });
        let Some((opened, approved)) = opened else {
            return self.without_approval(prepared, key, route, context).await;
        };
        let answer = input_responses
            .and_then(|responses| responses.get(CONFIRM_KEY))
            .map_or(Answer::NotObtained, judge_answer);
        match answer {
            // r[impl trip.decline]
            // r[impl trip.decline.no-redispatch]
            Answer::Decline => Step::Done(
                Some(key),
                Err(ToolError::approval_declined(prepared.tool())),
            ),
            // r[impl trip.cancel]
            Answer::NotObtained => Step::Done(
                Some(key),
                Err(self.pipeline.approval_not_obtained(prepared)),
            ),
            Answer::Approve => {
                if !prepared.needs_confirmation() {
                    let outcome = self.execute(prepared, Approval::NotNeeded, context).await;
                    return Step::Done(Some(key), outcome);
                }
                // r[impl state.ext.single-use]
                let admitted = self
                    .blocking("admitting the confirmation", move |pipeline| {
                        Ok(pipeline.gate().admit_request_state(&opened))
                    })
                    .await;
                match admitted {
                    Ok(Ok(())) => {}
                    Ok(Err(AdmitError::AlreadyUsed | AdmitError::Expired)) => {
                        return self.fresh_confirmation(prepared, key, route, context).await;
                    }
                    Ok(Err(AdmitError::Store(_))) | Err(_) => {
                        return Step::Done(
                            Some(key),
                            Err(ToolError::internal("admitting the confirmation")),
                        );
                    }
                }
                let approval = Approval::Verified {
                    state_fp: approved,
                    route: via.route(NonTokenRoute::RequestState),
                };
                Step::Done(Some(key), self.execute(prepared, approval, context).await)
            }
        }
    }

    /// A gated call that brought nothing that approves it, on the modern era.
    async fn without_approval(
        &self,
        prepared: &Prepared,
        key: CallKey,
        route: Route,
        context: &RequestContext<RoleServer>,
    ) -> Step {
        if prepared.needs_confirmation() {
            self.fresh_confirmation(prepared, key, route, context).await
        } else {
            Step::Done(
                Some(key),
                self.execute(prepared, Approval::NotNeeded, context).await,
            )
        }
    }

    // r[impl trip.form-only]
    /// A fresh confirmation for a call whose presented state approves nothing: the round
    /// trip for a request that declared form elicitation, the plain `elicit_required` (with
    /// the raise the CLI mints from) for any other.
    async fn fresh_confirmation(
        &self,
        prepared: &Prepared,
        key: CallKey,
        route: Route,
        context: &RequestContext<RoleServer>,
    ) -> Step {
        match route {
            Route::ModernRoundTrip => self.offer_round_trip(prepared, key).await,
            Route::LegacyShim | Route::Plain => Step::Done(
                Some(key),
                self.execute(prepared, Approval::None, context).await,
            ),
        }
    }

    // r[impl trip.legacy-shim]
    // r[impl trip.legacy-shim.no-answer]
    // r[impl trip.legacy-shim.single-use]
    /// The legacy stdio shim: raises the request, sends `elicitation/create` (with the
    /// summary) from this handler's own task, waits for the answer (at most the
    /// confirmation TTL), and applies it to this same call; the drift check runs after the
    /// prompt.
    pub(crate) async fn legacy_shim(
        &self,
        prepared: &Prepared,
        key: CallKey,
        via: Via,
        context: &RequestContext<RoleServer>,
    ) -> Step {
        let raised = {
            let prepared = prepared.clone();
            self.blocking("recording the confirmation request", move |pipeline| {
                pipeline.raise(&prepared)
            })
            .await
        };
        let raised = match raised {
            Ok(raised) => raised,
            Err(error) => return Step::Done(Some(key), Err(error)),
        };
        let message = prompt_message(&raised.summary);
        let wait = Duration::from_millis(u64::try_from(self.ttl_ms).unwrap_or(0));
        let answer = match prompt(context, confirm_params(message), wait).await {
            // The timer bounds the wait; the clock decides: an answer at or past the raised
            // request's expiry approves nothing, whatever the timer saw.
            Prompt::Answered(_) if self.clock.now_ms() >= raised.expires_at_ms => {
                tracing::info!(
                    tool = prepared.tool(),
                    "the shim's prompt was answered after the confirmation TTL; treated as cancel"
                );
                Answer::NotObtained
            }
            Prompt::Answered(result) => {
                serde_json::to_value(&result).map_or(Answer::NotObtained, |v| judge_answer(&v))
            }
            Prompt::Failed(error) => {
                tracing::info!(tool = prepared.tool(), %error, "the shim's prompt got no answer; treated as cancel");
                Answer::NotObtained
            }
            // r[impl trip.legacy-shim.cancel]
            Prompt::CallCancelled => {
                tracing::info!(
                    tool = prepared.tool(),
                    "the call was cancelled while its prompt was open; the form was withdrawn"
                );
                return Step::Done(Some(key), Err(self.pipeline.cancelled_call(prepared)));
            }
        };
        match answer {
            Answer::Approve => {
                let approval = Approval::Verified {
                    state_fp: prepared.state_fp().clone(),
                    route: via.route(NonTokenRoute::LegacyShim),
                };
                Step::Done(Some(key), self.execute(prepared, approval, context).await)
            }
            Answer::Decline => Step::Done(
                Some(key),
                Err(ToolError::approval_declined(prepared.tool())),
            ),
            Answer::NotObtained => Step::Done(
                Some(key),
                Err(self.pipeline.approval_not_obtained(prepared)),
            ),
        }
    }
}

/// How a shim prompt ended.
enum Prompt {
    Answered(rmcp::model::ElicitResult),
    /// No answer: an error reply, a closed transport, or the TTL ran out (rmcp then sends
    /// `notifications/cancelled` for the request itself).
    Failed(rmcp::ServiceError),
    /// The call the prompt belongs to was cancelled; the prompt was withdrawn.
    CallCancelled,
}

/// Sends `elicitation/create` and waits for the answer, at most `wait`, or until the call it
/// belongs to is cancelled: then it sends `notifications/cancelled` for the prompt, so the
/// client closes its form instead of asking a human about a call that is gone.
async fn prompt(
    context: &RequestContext<RoleServer>,
    params: rmcp::model::ElicitRequestParams,
    wait: Duration,
) -> Prompt {
    use rmcp::model::{ClientResult, ElicitRequest, ServerRequest};
    let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
    let mut options = rmcp::service::PeerRequestOptions::no_options();
    options.timeout = Some(wait);
    let mut handle = match context
        .peer
        .send_cancellable_request(request, options)
        .await
    {
        Ok(handle) => handle,
        Err(error) => return Prompt::Failed(error),
    };
    let answered = tokio::select! {
        biased;
        () = context.ct.cancelled() => None,
        answer = tokio::time::timeout(wait, &mut handle.rx) => Some(answer),
    };
    match answered {
        None => {
            let _ = handle
                .cancel(Some("the call was cancelled".to_owned()))
                .await;
            Prompt::CallCancelled
        }
        Some(Err(_elapsed)) => {
            let _ = handle
                .cancel(Some("no answer within the confirmation TTL".to_owned()))
                .await;
            Prompt::Failed(rmcp::ServiceError::Timeout { timeout: wait })
        }
        Some(Ok(Err(_closed))) => Prompt::Failed(rmcp::ServiceError::TransportClosed),
        Some(Ok(Ok(Err(error)))) => Prompt::Failed(error),
        Some(Ok(Ok(Ok(ClientResult::ElicitResult(result))))) => Prompt::Answered(result),
        Some(Ok(Ok(Ok(_)))) => Prompt::Failed(rmcp::ServiceError::UnexpectedResponse),
    }
}
