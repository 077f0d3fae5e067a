//! The one dispatch pipeline of `tools/call` (spec/dispatch.md `dispatch.order`,
//! `dispatch.one-pipeline`, `dispatch.unknown-tool`; spec/trips.md; spec/governor.md
//! `governor.cap`, `governor.counted`, `governor.single-serialization`; spec/events.md;
//! spec/results.md, spec/trips.md).
//!
//! Every call on every transport and era goes through [`ServerCore::call_tool`]:
//!
//! 1. schema → authentication and scopes → vault binding → read-only → tool precheck →
//!    the confirmation gate's decision: tc-vault's [`Pipeline::prepare`] (the caller comes
//!    from the transport: `stdio`, or the [`Caller`] that `http.rs` authenticated);
//! 2. the confirmation route: a CLI token, the modern `input_required` round trip (offered,
//!    or completed by a resubmission), the legacy stdio shim, or the plain `elicit_required`
//!    refusal ([`Route`]);
//! 3. folder ACL → handler: tc-vault's [`Pipeline::execute`] with the [`Approval`] the
//!    route produced;
//! 4. the governor: the result object is serialized once into a buffer capped at
//!    `governor.maxResponseBytes`; an overflow is refused with `overflow`, recorded as
//!    `tc.governor.overflow` and counted;
//! 5. events: the gate's counters are folded into the metrics, and the outcome is logged
//!    (to stderr, with the caller hashed). Stages 4 and 5 and the sweeper live in `stages.rs`.
//!
//! `read_notes` and `list_notes` are tools of the same registry; their pages come back
//! serialized once, under the cap, and are admitted by length.

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{CallToolResponse, InputRequiredResult, InputResponses};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};
use tc_gate::CallBinding;
use tc_tools::{
    Approval, CallControl, CallerContext, CancellationFlag, ErrorCode, Pipeline, Prepared,
    ProgressSink, ToolError, ToolOutput,
};

use crate::auth::Caller;
use crate::facade::Dispatch;
use crate::routes::{Route, Transport};
use crate::server::ServerCore;
use crate::trips::{self, Era};

/// The exact call an outcome concerns, owned (for the governor's event).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallKey {
    vault: String,
    tool: String,
    args_hash: String,
    caller: String,
}

impl CallKey {
    pub(crate) fn of(prepared: &Prepared) -> Self {
        CallKey {
            vault: prepared.vault_id().to_owned(),
            tool: prepared.tool().to_owned(),
            args_hash: prepared.args_hash().to_owned(),
            caller: prepared.caller().id.clone(),
        }
    }

    pub(crate) fn binding(&self) -> CallBinding<'_> {
        CallBinding {
            vault: &self.vault,
            tool: &self.tool,
            args_hash: &self.args_hash,
            caller: &self.caller,
        }
    }
}

/// One `tools/call` as the client sent it.
#[derive(Debug, Clone, Copy)]
pub struct ToolCall<'a> {
    pub tool: &'a str,
    pub arguments: &'a Value,
    /// The echoed `requestState` of a resubmitted round trip.
    pub request_state: Option<&'a str>,
    /// The client's answers (`inputResponses`) of a resubmitted round trip.
    pub input_responses: Option<&'a InputResponses>,
}

/// Whether a call came by its own name or through the lean facade's `call_capability`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    Direct,
    Facade,
}

impl Via {
    // r[impl facade.call.route-recorded]
    /// The route a verified confirmation is recorded under: the round trip's own, or
    /// `call_capability` when it came through the facade.
    pub(crate) fn route(self, round_trip: tc_gate::NonTokenRoute) -> tc_gate::NonTokenRoute {
        match self {
            Via::Direct => round_trip,
            Via::Facade => tc_gate::NonTokenRoute::CallCapability,
        }
    }
}

/// How one call travels: its era, its confirmation route, and whether it came through the
/// facade.
#[derive(Debug, Clone, Copy)]
struct Leg {
    era: Era,
    route: Route,
    via: Via,
}

/// Where a call ended before the governor.
pub(crate) enum Step {
    /// The modern round trip's first answer.
    InputRequired(InputRequiredResult),
    /// A result object to govern, or a refusal.
    Done(Option<CallKey>, Result<ToolOutput, ToolError>),
}

impl ServerCore {
    // r[impl dispatch.one-pipeline]
    // r[impl dispatch.unknown-tool]
    /// Serves one `tools/call`. `Err` only for a call that names no tool of ours (JSON-RPC
    /// -32602); every other failure is a tool result with `isError: true`.
    pub async fn call_tool(
        &self,
        caller: &Caller,
        transport: Transport,
        call: ToolCall<'_>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let ToolCall {
            tool,
            arguments,
            request_state,
            input_responses,
        } = call;
        let started = std::time::Instant::now();
        if !self.knows_tool(tool) {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {tool:?}; tools/list names the tools this server offers"),
                Some(json!({"tool": tool})),
            ));
        }
        let caller_cx = CallerContext {
            id: caller.id.clone(),
            scopes: caller.scopes.clone(),
            only_vault: caller.vault.clone(),
        };
        // r[impl facade.call.same-pipeline]
        // call_capability becomes the named tool's own call here, before any stage runs.
        let inner;
        let (tool, arguments, via) =
            match self
                .facade
                .dispatch(self.registry(), &caller_cx, tool, arguments)
            {
                Dispatch::Direct => (tool, arguments, Via::Direct),
                Dispatch::Inner { tool, arguments } => {
                    inner = (tool, arguments);
                    (inner.0.as_str(), &inner.1, Via::Facade)
                }
                Dispatch::Answer(outcome) => {
                    let (result, outcome) = match outcome.and_then(|output| self.govern(output)) {
                        Ok(result) => (result, "ok"),
                        Err(error) => (crate::results::failure(&error), error.code.as_str()),
                    };
                    self.record_outcome(tool, &caller.id, outcome, started);
                    return Ok(CallToolResponse::Complete(result));
                }
            };
        let era = Era::of(context.protocol_version().as_ref());
        let form = trips::supports_form(context.client_capabilities().as_ref());
        let route = Route::choose(era, transport, form, self.legacy_shim);
        let step = self
            .gated_call(
                &caller_cx,
                tool,
                arguments,
                Leg { era, route, via },
                request_state,
                input_responses,
                context,
            )
            .await;
        let bound = match &step {
            Step::Done(Some(key), _) => Some((key.vault.clone(), key.args_hash.clone())),
            _ => None,
        };
        let response = match step {
            Step::InputRequired(result) => {
                self.record_outcome(tool, &caller.id, "input_required", started);
                CallToolResponse::InputRequired(result)
            }
            Step::Done(key, outcome) => {
                // r[impl results.applied]
                // A result the governor refuses after a handler that can change notes ran
                // says so: the change was made, only its report could not be sent.
                let ran = outcome.is_ok()
                    && self
                        .registry()
                        .get(tool)
                        .is_some_and(|def| !def.annotations.read_only_hint);
                let governed = outcome.and_then(|output| self.govern(output));
                let governed = governed.map_err(|error| {
                    if ran && error.code == ErrorCode::Overflow {
                        error.detail("applied", json!(true))
                    } else {
                        error
                    }
                });
                let governed = match via {
                    Via::Facade => {
                        governed.map_err(|error| crate::facade::resend_through_facade(error, tool))
                    }
                    Via::Direct => governed,
                };
                let result = match governed {
                    Ok(result) => {
                        self.record_outcome(tool, &caller.id, "ok", started);
                        result
                    }
                    Err(error) => {
                        if let Some(key) = key {
                            self.record_failure(key, &error).await;
                        }
                        self.record_outcome(tool, &caller.id, error.code.as_str(), started);
                        crate::results::failure(&error)
                    }
                };
                CallToolResponse::Complete(result)
            }
        };
        // r[impl sessions.record.every-call]
        self.record_session_call(
            &caller.id,
            tool,
            arguments,
            bound.as_ref(),
            &response,
            started,
        )
        .await;
        Ok(response)
    }

    /// Runs `work` on the blocking pool: SQLite commits, vault reads and writes never run
    /// on a tokio worker (a panic there is a server fault, answered as one).
    pub(crate) async fn blocking<T: Send + 'static>(
        &self,
        what: &'static str,
        work: impl FnOnce(&Pipeline) -> Result<T, ToolError> + Send + 'static,
    ) -> Result<T, ToolError> {
        let pipeline = Arc::clone(&self.pipeline);
        tokio::task::spawn_blocking(move || work(&pipeline))
            .await
            .unwrap_or_else(|_| Err(ToolError::internal(what)))
    }

    #[allow(clippy::too_many_arguments)]
    async fn gated_call(
        &self,
        caller: &CallerContext,
        tool: &str,
        arguments: &Value,
        leg: Leg,
        request_state: Option<&str>,
        input_responses: Option<&InputResponses>,
        context: &RequestContext<RoleServer>,
    ) -> Step {
        let Leg { era, route, via } = leg;
        // r[impl dispatch.order]
        let prepared = {
            let (caller, tool, arguments) = (caller.clone(), tool.to_owned(), arguments.clone());
            let control = Self::control(context, None);
            self.blocking("preparing the call", move |pipeline| {
                pipeline.prepare_with(&caller, &tool, &arguments, &control)
            })
            .await
        };
        let prepared = match prepared {
            Ok(prepared) => prepared,
            Err(error) => return Step::Done(None, Err(error)),
        };
        let key = CallKey::of(&prepared);
        let resubmitted = request_state.is_some() || input_responses.is_some();
        if era == Era::Modern && resubmitted && prepared.elicit_token().is_none() {
            return self
                .resubmission(
                    &prepared,
                    key,
                    request_state,
                    input_responses,
                    (route, via),
                    context,
                )
                .await;
        }
        if !prepared.needs_confirmation() || prepared.elicit_token().is_some() {
            let outcome = self
                .execute(&prepared, prepared.token_approval(), context)
                .await;
            return Step::Done(Some(key), outcome);
        }
        match route {
            Route::ModernRoundTrip => self.offer_round_trip(&prepared, key).await,
            Route::LegacyShim => self.legacy_shim(&prepared, key, via, context).await,
            Route::Plain => {
                let outcome = self.execute(&prepared, Approval::None, context).await;
                Step::Done(Some(key), outcome)
            }
        }
    }

    // r[impl tools.cancellation]
    // r[impl tools.progress]
    /// The controls of a call: cancellation backed by the request's cancellation token, and
    /// progress reports into `progress` (sent as `notifications/progress` by the caller).
    fn control(
        context: &RequestContext<RoleServer>,
        progress: Option<tokio::sync::mpsc::UnboundedSender<Progress>>,
    ) -> CallControl {
        let ct = context.ct.clone();
        let cancel = CancellationFlag::backed_by(Arc::new(move || ct.is_cancelled()));
        match progress {
            Some(sender) => CallControl {
                cancel,
                progress: Arc::new(ProgressChannel(sender)),
            },
            None => CallControl::with_cancel(cancel),
        }
    }

    /// The folder ACL and the handler on the blocking pool, with the request's cancellation
    /// and, when the request carries a `progressToken`, its progress reports forwarded as
    /// `notifications/progress` while the handler runs.
    pub(crate) async fn execute(
        &self,
        prepared: &Prepared,
        approval: Approval,
        context: &RequestContext<RoleServer>,
    ) -> Result<ToolOutput, ToolError> {
        let token = context.meta.get_progress_token();
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
        let control = Self::control(context, token.as_ref().map(|_| sender));
        let prepared = prepared.clone();
        let work = self.blocking("running the tool", move |pipeline| {
            pipeline.execute(&prepared, approval, &control)
        });
        let Some(token) = token else {
            return work.await;
        };
        let peer = context.peer.clone();
        let forward = async move {
            while let Some(report) = receiver.recv().await {
                let mut param =
                    rmcp::model::ProgressNotificationParam::new(token.clone(), report.progress);
                param.total = report.total;
                param.message = report.message;
                if peer.notify_progress(param).await.is_err() {
                    break;
                }
            }
        };
        let (outcome, ()) = tokio::join!(work, forward);
        outcome
    }
}

/// One progress report of a running handler.
#[derive(Debug)]
struct Progress {
    progress: f64,
    total: Option<f64>,
    message: Option<String>,
}

/// The handler's side of the progress channel (a report after the call ended is dropped).
struct ProgressChannel(tokio::sync::mpsc::UnboundedSender<Progress>);

impl ProgressSink for ProgressChannel {
    fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let _ = self.0.send(Progress {
            progress,
            total,
            message: message.map(str::to_owned),
        });
    }
}
