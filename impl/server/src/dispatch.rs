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

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{CallToolResponse, InputRequiredResult, InputResponses};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};
use tc_gate::clock::{Clock, Entropy};
use tc_gate::cursor::CursorCodec;
use tc_gate::governor::Governor;
use tc_gate::keys::{KeyPurpose, ServerSecret};
use tc_gate::request_state::RequestStateSealer;
use tc_gate::{CallBinding, Gate, GateConfig, RequestStateMode, Store};
use tc_tools::{
    Approval, CallControl, CallerContext, CancellationFlag, ErrorCode, PageLimits, PagingSetup,
    Pipeline, Prepared, ProgressSink, ToolError, ToolOutput, VaultBinding,
};
use tc_vault::{Vault, WikiSealer, seal_dir_for, snapshot_dir_for};

use crate::auth::Caller;
use crate::config::Config;
use crate::facade::{Dispatch, Facade};
use crate::metrics::Metrics;
use crate::trips::{self, Era};

/// How often a running server sweeps what has expired from cache.db.
pub const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

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

/// Why the server could not be assembled from its configuration.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("elicitTtlSeconds: {0}")]
    Ttl(#[from] tc_gate::InvalidTtl),
    #[error("vault `{vault}`: {message}")]
    Vault { vault: String, message: String },
    #[error("the tool registry is invalid: {0}")]
    Registry(String),
    #[error(transparent)]
    Families(#[from] crate::families::UnknownFamily),
    #[error("governor.maxResponseBytes {0} does not fit this platform's memory")]
    Cap(u64),
}

// r[impl vault.move.recovered]
// r[impl events.recovered]
/// Finishes (or drops) a move a killed process left half done in `vault`, and says so in the
/// log and the audit events; a failure to do so is logged and the server starts anyway (the
/// journal stays for the next start).
fn recover_interrupted_move(vault: &Vault, gate: &Gate) {
    match vault.recover_interrupted_move() {
        Ok(None) => {}
        Ok(Some(done)) => {
            let paths = |list: &[tc_vault::path::VaultPath]| -> Vec<String> {
                list.iter().map(|p| p.as_str().to_owned()).collect()
            };
            tracing::warn!(
                vault = vault.id(),
                from = done.from.as_str(),
                to = done.to.as_str(),
                moved = done.moved,
                rewritten = done.rewritten.len(),
                left = done.left.len(),
                "a move interrupted by a crash was {}",
                if done.moved {
                    "finished: the links to the moved note were rewritten"
                } else {
                    "never applied: nothing was changed"
                }
            );
            let detail = json!({
                "tool": "move_note",
                "from": done.from.as_str(),
                "to": done.to.as_str(),
                "moved": done.moved,
                "rewritten": paths(&done.rewritten),
                "left": paths(&done.left),
            });
            if let Err(error) = gate.record_recovery(vault.id(), detail) {
                tracing::warn!(vault = vault.id(), "recording the recovery event: {error}");
            }
        }
        Err(error) => tracing::warn!(
            vault = vault.id(),
            "a move interrupted by a crash could not be finished yet: {error}"
        ),
    }
}

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

/// Everything a request of the MCP server is served with, shared by every session.
pub struct ServerCore {
    pub(crate) pipeline: Arc<Pipeline>,
    pub(crate) governor: Governor,
    pub(crate) sealer: RequestStateSealer,
    pub(crate) cursors: CursorCodec,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) entropy: Arc<dyn Entropy>,
    pub(crate) vault_ids: Vec<String>,
    /// `[versions]`: what the sweeper keeps of each vault's snapshots.
    pub(crate) retention: tc_vault::vault::Retention,
    pub(crate) ttl_ms: i64,
    legacy_shim: bool,
    facade: Facade,
    /// The sessions and their traces (tc-sessions): every call is offered to them.
    pub(crate) sessions: Arc<tc_sessions::Sessions>,
}

impl fmt::Debug for ServerCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerCore")
            .field("vaults", &self.vault_ids)
            .field("max_response_bytes", &self.governor.limit())
            .field("ttl_ms", &self.ttl_ms)
            .field("legacy_shim", &self.legacy_shim)
            .finish_non_exhaustive()
    }
}

/// What [`ServerCore::build`] needs besides the configuration.
#[derive(Debug)]
pub struct CoreParts<'a> {
    pub cache_dir: &'a Path,
    pub secret: &'a ServerSecret,
    pub store: Store,
    pub clock: Arc<dyn Clock>,
    pub entropy: Arc<dyn Entropy>,
    pub metrics: Arc<Metrics>,
    /// `--legacy-elicitation-shim` or `legacyElicitationShim`.
    pub legacy_shim: bool,
    /// What the printed `obsidian-tc elicit` command carries to find this server's cache
    /// and config (`--config FILE`, `--cache-dir DIR`, absolute); empty for the defaults.
    pub approval_flags: Vec<String>,
    /// How the printed approval command names this binary (`obsidian-tc` when that finds
    /// it on PATH, its absolute path otherwise); `None` keeps `obsidian-tc`.
    pub approval_program: Option<String>,
}

impl ServerCore {
    /// Assembles the server: the vaults with their ACLs, conventions, snapshot and wiki-seal
    /// folders under the cache directory, the gate over `store`, and the keys derived from
    /// `secret`. Nothing scans a vault here (`cli.serve.lazy`).
    pub fn build(config: &Config, parts: CoreParts<'_>) -> Result<Self, BuildError> {
        let mode = if config.request_state_single_use {
            RequestStateMode::SingleUse
        } else {
            RequestStateMode::Replayable
        };
        let gate_config = GateConfig::new(config.elicit_ttl_seconds)?.with_request_state_mode(mode);
        let gate = Gate::new(
            parts.store,
            Arc::clone(&parts.clock),
            Arc::clone(&parts.entropy),
            gate_config,
        );
        let wiki_key = parts.secret.derive(KeyPurpose::WikiSeal);
        let mut bindings = Vec::with_capacity(config.vaults.len());
        for vc in &config.vaults {
            let fail = |message: String| BuildError::Vault {
                vault: vc.id.clone(),
                message,
            };
            let snapshots =
                snapshot_dir_for(parts.cache_dir, &vc.id).map_err(|e| fail(e.to_string()))?;
            let seals = seal_dir_for(parts.cache_dir, &vc.id).map_err(|e| fail(e.to_string()))?;
            let vault = Vault::open(
                vc.id.clone(),
                &vc.root,
                snapshots,
                Arc::clone(&parts.clock),
                Arc::clone(&parts.entropy),
            )
            .map_err(|e| fail(e.to_string()))?;
            let binding = VaultBinding::from_config(
                vault,
                vc.acl.as_ref(),
                &vc.conventions,
                WikiSealer::new(&wiki_key, seals),
            )
            .map_err(|e| fail(e.to_string()))?;
            recover_interrupted_move(&binding.vault, &gate);
            bindings.push(binding);
        }
        let vault_ids = config.vaults.iter().map(|v| v.id.clone()).collect();
        // The vault indexes: opened here (cache.db only), built in the background, so
        // tools/list answers at once (spec index.build.background).
        if config.search.enabled {
            let roots = config
                .vaults
                .iter()
                .map(|v| (v.id.as_str(), v.root.as_path()));
            let indexes = tc_index::open_indexes(parts.cache_dir, roots, &config.search)
                .map_err(|e| BuildError::Registry(e.to_string()))?;
            for (binding, index) in bindings.iter().zip(indexes) {
                binding.attach_index(index.clone());
                index.start();
            }
        }
        let setup = tc_tools::SubsystemSetup {
            cache_dir: parts.cache_dir,
            clock: Arc::clone(&parts.clock),
        };
        // The session store is the server's (the recording hook and the replayer use it);
        // its tools are one of the families.
        let sessions = Arc::new(
            tc_sessions::Sessions::from_setup(&setup, config.sessions)
                .map_err(|e| BuildError::Registry(e.to_string()))?,
        );
        let families = crate::families::families(config, &sessions);
        crate::families::served(config, &families)?;
        let registry = crate::families::registry(config, &setup, &families)
            .map_err(|e| BuildError::Registry(e.to_string()))?;
        let cap = usize::try_from(config.governor.max_response_bytes)
            .map_err(|_| BuildError::Cap(config.governor.max_response_bytes))?;
        let paging = PagingSetup {
            codec: CursorCodec::new(parts.secret),
            limits: PageLimits::with_page_bytes(
                cap,
                usize::try_from(config.governor.page_bytes()).unwrap_or(cap),
            ),
        };
        let facade = Facade::new(config.tool_facade.mode, &registry);
        let fingerprints = tc_gate::FingerprintKey::new(parts.secret);
        let pipeline = Pipeline::new(
            registry,
            bindings,
            gate,
            Arc::clone(&parts.clock),
            paging,
            fingerprints,
        )
        .with_approval_flags(parts.approval_flags);
        let pipeline = match parts.approval_program {
            Some(program) => pipeline.with_approval_program(program),
            None => pipeline,
        };
        let pipeline = Arc::new(pipeline);
        crate::rerun::ServerReplayer::wire(
            &sessions,
            &pipeline,
            config,
            cap,
            &parts.clock,
            &parts.entropy,
        );
        Ok(ServerCore {
            pipeline,
            governor: Governor::new(cap),
            sealer: RequestStateSealer::new(parts.secret),
            cursors: CursorCodec::new(parts.secret),
            metrics: parts.metrics,
            clock: parts.clock,
            entropy: parts.entropy,
            vault_ids,
            retention: config.versions.retention(),
            ttl_ms: gate_config.ttl_ms(),
            legacy_shim: parts.legacy_shim,
            facade,
            sessions,
        })
    }

    pub fn gate(&self) -> &Gate {
        self.pipeline.gate()
    }

    pub fn governor(&self) -> &Governor {
        &self.governor
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    pub fn registry(&self) -> &tc_tools::Registry {
        self.pipeline.registry()
    }

    /// Whether `tool` is one this server offers (in lean mode, the facade's three too).
    pub fn knows_tool(&self, tool: &str) -> bool {
        self.pipeline.registry().get(tool).is_some() || self.facade.offers(tool)
    }

    /// The lean facade (spec/facade.md).
    pub fn facade(&self) -> &Facade {
        &self.facade
    }

    /// The `tools/list` entries: every tool in flat mode, the facade's three in lean mode.
    pub fn tool_entries(&self) -> Vec<Value> {
        self.facade.list(self.registry())
    }

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
