//! The dispatch stages of a tool call that live below the transport (spec/dispatch.md
//! `dispatch.order`, `dispatch.schema`, `dispatch.scopes`, `dispatch.vault`,
//! `dispatch.read-only`, `dispatch.precheck`, `dispatch.gate`, `dispatch.one-pipeline`;
//! spec/gate.md, spec/release.md, spec/drift.md, spec/results.md).
//!
//! Two phases, so every confirmation route of spec/trips.md shares them:
//!
//! 1. [`Pipeline::prepare`]: schema validation (defaults filled), the caller's scope, the
//!    vault binding, the read-only check, the tool's precheck, and the gate's decision
//!    whether this call needs confirmation, with its `args_hash` and the current `state_fp`
//!    of its confirmation targets. Nothing is written and no token is touched.
//! 2. [`Pipeline::execute`] with the [`Approval`] the call brought: none (the gate raises a
//!    request and answers `elicit_required`), a CLI token (redeemed, spent, drift-checked,
//!    given back only for a no-effect outcome), or a confirmation the server already
//!    verified (a requestState, the legacy shim, call_capability: drift-checked against the
//!    fingerprint the approval carries). Then the folder ACL, a last cancellation check, and
//!    the handler.
//!
//! How the server uses it: the modern round trip calls `prepare`, and when the call needs
//! confirmation and the client can show a form, [`Pipeline::raise`] and answers
//! `input_required` with a requestState sealing `prepared.state_fp()`; the resubmitted call
//! is prepared again and executed with [`Approval::Verified`]. The legacy shim does the same
//! inside one call. A cancel is answered with [`Pipeline::approval_not_obtained`], a decline
//! with [`ToolError::approval_declined`]. Everything else calls `execute` with
//! [`Approval::None`] or [`Approval::CliToken`] (from `elicit_token`). The governor and the
//! event recording of the outcome stay in the server.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_json::{Value, json};
use tc_gate::args_hash::args_hash;
use tc_gate::clock::Clock;
use tc_gate::{
    BuiltinVerifier, CallBinding, FingerprintKey, Gate, InHandlerNoEffect, NoEffect, NonTokenRoute,
    RaisedRequest, RedeemError, ReleaseOutcome, SpentReason, StateFp, Verifier, fingerprint_custom,
};

use crate::context::{CallControl, CallerContext, ToolCx, VaultBinding};
use crate::error::{ErrorCode, ToolError};
use crate::paging::PagingSetup;
use crate::registry::{ParsedArgs, Registry, ToolDef};
use crate::summary::Summary;
use crate::tool::{AnyPlan, HandlerFailure, Precheck, TargetState, ToolOutput};

/// How the call arrived approved, if at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// The server saw no approval and expects none to be needed; if the call does need
    /// confirmation it is refused like [`Approval::None`] (no bypass).
    NotNeeded,
    /// No approval came with the call.
    None,
    /// `elicit_token`, minted by `obsidian-tc elicit`.
    CliToken(String),
    /// A confirmation the server verified (a requestState it opened and whose answer was
    /// accept with approve: true, or the legacy shim's answer), bound to `state_fp`.
    Verified {
        state_fp: StateFp,
        route: NonTokenRoute,
    },
}

/// A call that passed every stage up to the confirmation gate.
#[derive(Clone)]
pub struct Prepared {
    def: Arc<ToolDef>,
    binding: Arc<VaultBinding>,
    caller: CallerContext,
    args: ParsedArgs,
    args_hash: String,
    precheck: Precheck<AnyPlan>,
    /// The state as the tool observed it; the handler compares what it finds with this.
    state: TargetState<AnyPlan>,
    /// `state.fp` keyed: what is recorded, shown and compared at redemption.
    state_fp: StateFp,
}

// r[impl dispatch.debug-redacted]
impl fmt::Debug for Prepared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prepared")
            .field("tool", &self.def.name)
            .field("vault", &self.binding.vault.id())
            .field("caller", &self.caller.id)
            .field("args_hash", &self.args_hash)
            .field("needs_confirmation", &self.precheck.needs_confirmation)
            .field("state_fp", &self.state_fp)
            .field(
                "elicit_token",
                &self.args.elicit_token.as_ref().map(|_| "<redacted>"),
            )
            .finish_non_exhaustive()
    }
}

impl Prepared {
    pub fn tool(&self) -> &str {
        &self.def.name
    }

    pub fn def(&self) -> &ToolDef {
        &self.def
    }

    pub fn vault_id(&self) -> &str {
        self.binding.vault.id()
    }

    pub fn caller(&self) -> &CallerContext {
        &self.caller
    }

    /// The validated, default-filled arguments (with `vault` filled, without
    /// `elicit_token`): what `args_hash` hashes.
    pub fn args(&self) -> &Value {
        &self.args.canonical
    }

    /// The `elicit_token` the call carried, if any.
    pub fn elicit_token(&self) -> Option<&str> {
        self.args.elicit_token.as_deref()
    }

    pub fn args_hash(&self) -> &str {
        &self.args_hash
    }

    /// Whether this call needs confirmation (the tool's condition, decided now).
    pub fn needs_confirmation(&self) -> bool {
        self.precheck.needs_confirmation
    }

    /// The fingerprint of the confirmation targets as they were when prepared.
    pub fn state_fp(&self) -> &StateFp {
        &self.state_fp
    }

    /// The approval the call's own arguments bring: its `elicit_token`, else none.
    pub fn token_approval(&self) -> Approval {
        match &self.args.elicit_token {
            Some(token) => Approval::CliToken(token.clone()),
            None => Approval::None,
        }
    }

    fn call(&self) -> CallBinding<'_> {
        CallBinding {
            vault: self.binding.vault.id(),
            tool: &self.def.name,
            args_hash: &self.args_hash,
            caller: &self.caller.id,
        }
    }
}

/// The dispatch stages over a set of vaults, one registry and one gate.
pub struct Pipeline {
    registry: Registry,
    vaults: BTreeMap<String, Arc<VaultBinding>>,
    gate: Gate,
    clock: Arc<dyn Clock>,
    verifier: Arc<dyn Verifier>,
    paging: PagingSetup,
    /// Keys every fingerprint before it is recorded or shown (spec drift.fingerprint-keyed).
    fingerprints: FingerprintKey,
    /// The flags `obsidian-tc elicit` needs to find this server's cache.db and config
    /// (`--config FILE`, `--cache-dir DIR`, both absolute), as the server was started.
    approval_flags: Vec<String>,
    /// How the printed approval command names the binary (spec `cli.elicit.command-program`).
    approval_program: String,
}

impl fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pipeline")
            .field("vaults", &self.vaults.keys().collect::<Vec<_>>())
            .field("verifier", &self.verifier)
            .finish_non_exhaustive()
    }
}

impl Pipeline {
    /// The pipeline over `vaults`; `paging` holds the read_notes cursor key and the
    /// governor's cap the paging tools fill their pages up to, `fingerprints` the key of the
    /// state_fp it records and shows.
    pub fn new(
        registry: Registry,
        vaults: impl IntoIterator<Item = VaultBinding>,
        gate: Gate,
        clock: Arc<dyn Clock>,
        paging: PagingSetup,
        fingerprints: FingerprintKey,
    ) -> Self {
        Pipeline {
            registry,
            vaults: vaults
                .into_iter()
                .map(|b| (b.vault.id().to_owned(), Arc::new(b)))
                .collect(),
            gate,
            clock,
            verifier: Arc::new(BuiltinVerifier),
            paging,
            fingerprints,
            approval_flags: Vec::new(),
            approval_program: "obsidian-tc".to_owned(),
        }
    }

    /// Uses a custom `verifyElicit` hook for token redemption and release.
    pub fn with_verifier(mut self, verifier: Arc<dyn Verifier>) -> Self {
        self.verifier = verifier;
        self
    }

    /// The flags the printed approval command carries so it works when pasted as it is
    /// (spec `cli.elicit.command-works`): the server's `--config` and `--cache-dir`.
    pub fn with_approval_flags(mut self, flags: Vec<String>) -> Self {
        self.approval_flags = flags;
        self
    }

    pub fn approval_flags(&self) -> &[String] {
        &self.approval_flags
    }

    /// How the printed approval command names the binary, as the server can be found from a
    /// shell (spec `cli.elicit.command-program`).
    pub fn with_approval_program(mut self, program: String) -> Self {
        self.approval_program = program;
        self
    }

    pub fn approval_program(&self) -> &str {
        &self.approval_program
    }

    /// [`Pipeline::with_verifier`] in place.
    pub fn set_verifier(&mut self, verifier: Arc<dyn Verifier>) {
        self.verifier = verifier;
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    /// How many vaults are served (an approval command names the vault when it is not
    /// the only one).
    pub fn vault_count(&self) -> usize {
        self.vaults.len()
    }

    pub fn vault(&self, id: &str) -> Option<&VaultBinding> {
        self.vaults.get(id).map(Arc::as_ref)
    }

    fn cx<'a>(
        &'a self,
        binding: &'a VaultBinding,
        caller: &'a CallerContext,
        control: &'a CallControl,
    ) -> ToolCx<'a> {
        ToolCx {
            binding,
            caller,
            clock: self.clock.as_ref(),
            paging: &self.paging,
            control,
        }
    }

    /// [`Pipeline::prepare_with`] with no progress reporting and no cancellation.
    pub fn prepare(
        &self,
        caller: &CallerContext,
        tool: &str,
        raw_args: &Value,
    ) -> Result<Prepared, ToolError> {
        self.prepare_with(caller, tool, raw_args, &CallControl::default())
    }

    // r[impl dispatch.order]
    /// The stages up to the confirmation gate's decision (see the module documentation).
    pub fn prepare_with(
        &self,
        caller: &CallerContext,
        tool: &str,
        raw_args: &Value,
        control: &CallControl,
    ) -> Result<Prepared, ToolError> {
        let def = self.registry.get(tool).cloned().ok_or_else(|| {
            ToolError::new(ErrorCode::InvalidInput, format!("unknown tool {tool:?}"))
                .with_details(json!({"reason": "unknown_tool", "tool": tool}))
        })?;
        // r[impl dispatch.schema]
        let mut args = def.parse_args(raw_args)?;
        // r[impl dispatch.scopes]
        if let Some(missing) = def.scopes.iter().find(|scope| !caller.scopes.has(scope)) {
            return Err(ToolError::missing_scope(missing, tool));
        }
        // r[impl dispatch.vault]
        let binding = self.bind_vault(caller, args.vault.as_deref())?;
        if let Value::Object(map) = &mut args.canonical {
            map.insert("vault".into(), json!(binding.vault.id()));
        }
        // r[impl dispatch.read-only]
        if def.changes_notes && binding.read_only {
            return Err(ToolError::new(
                ErrorCode::AclDenied,
                format!(
                    "vault {:?} is read-only (readOnly = true): {tool} cannot change notes there",
                    binding.vault.id()
                ),
            )
            .with_details(
                json!({"vault": binding.vault.id(), "access": "write", "reason": "read_only"}),
            ));
        }
        let cx = self.cx(&binding, caller, control);
        let sent_prev_hash = args.canonical["prev_hash"].as_str().map(str::to_owned);
        let withhold = |e| {
            crate::refusals::withhold_unreadable_hash(
                &binding,
                caller,
                sent_prev_hash.as_deref(),
                e,
            )
        };
        // r[impl dispatch.precheck]
        let precheck = def.tool.precheck(&cx, &args.typed).map_err(withhold)?;
        // r[impl dispatch.gate]
        let hash = args_hash(tool, &args.canonical).as_str().to_owned();
        let state = if def.gated {
            def.tool
                .state_after_precheck(&cx, &args.typed, &precheck)
                .map_err(withhold)?
        } else {
            TargetState::untaken()
        };
        Ok(Prepared {
            def,
            binding: Arc::clone(&binding),
            caller: caller.clone(),
            args,
            args_hash: hash,
            precheck,
            state_fp: self.shown_fp(&state),
            state,
        })
    }

    /// The vault a call names, or the only one served, if this caller may use it (spec
    /// `dispatch.vault`); `resources/read` binds its URI's vault with it too.
    pub fn bind_vault(
        &self,
        caller: &CallerContext,
        named: Option<&str>,
    ) -> Result<Arc<VaultBinding>, ToolError> {
        let binding = match named {
            Some(id) => self.vaults.get(id).cloned().ok_or_else(|| {
                ToolError::validation("/vault", format!("{id:?} is not a configured vault"))
            })?,
            None if self.vaults.len() == 1 => self
                .vaults
                .values()
                .next()
                .cloned()
                .ok_or_else(|| ToolError::internal("binding the vault"))?,
            None => {
                return Err(ToolError::validation(
                    "/vault",
                    "is required when several vaults are served",
                ));
            }
        };
        if caller
            .only_vault
            .as_deref()
            .is_some_and(|only| only != binding.vault.id())
        {
            return Err(
                ToolError::new(ErrorCode::AclDenied, "this caller may not use that vault")
                    .with_details(
                        json!({"vault": binding.vault.id(), "reason": "vault_not_granted"}),
                    ),
            );
        }
        Ok(binding)
    }

    // r[impl tools.summary]
    // r[impl tools.summary.readable-only]
    /// The summary the human approves for `prepared`, rendered (bounded and escaped). It
    /// reaches the caller's client too (the round trips' prompts carry it), so what a call
    /// would change is shown only when the caller may read every path it declares.
    pub fn summary(&self, prepared: &Prepared) -> String {
        let root = prepared.binding.vault.root();
        let unreadable = prepared.precheck.acl.iter().find(|(_, path)| {
            !prepared
                .binding
                .acl
                .can_read_at(root, path, &prepared.caller.scopes)
        });
        let summary = match unreadable {
            Some((_, path)) => {
                Summary::targets_only(prepared.tool(), &prepared.precheck).detail(format!(
                    "what it would change is not shown: this caller may not read {path}; \
                     look at the vault itself before approving"
                ))
            }
            None => {
                let control = CallControl::default();
                let cx = self.cx(&prepared.binding, &prepared.caller, &control);
                prepared.def.tool.summary(
                    &cx,
                    &prepared.args.typed,
                    &prepared.precheck,
                    &prepared.state,
                )
            }
        };
        summary.render(
            prepared.tool(),
            prepared.vault_id(),
            &prepared.caller.id,
            prepared.args_hash(),
        )
    }

    // r[impl gate.raise.record]
    /// Records the raised request for `prepared`, with its summary (whether the server
    /// answers `elicit_required` or a round trip: spec `gate.raise.any-answer`).
    pub fn raise(&self, prepared: &Prepared) -> Result<RaisedRequest, ToolError> {
        let summary = self.summary(prepared);
        self.gate
            .raise_with_summary(&prepared.call(), prepared.state_fp(), &summary)
            .map_err(|_| ToolError::internal("recording the confirmation request"))
    }

    /// The folder ACL over the tool's declared paths (spec `vault.acl.after-gate`).
    fn check_acl(prepared: &Prepared) -> Result<(), ToolError> {
        for (op, path) in &prepared.precheck.acl {
            prepared
                .binding
                .acl
                .check_at(
                    prepared.binding.vault.root(),
                    *op,
                    path,
                    &prepared.caller.scopes,
                )
                .map_err(|denied| ToolError::acl(&denied))?;
        }
        Ok(())
    }

    fn run_handler(
        &self,
        prepared: &Prepared,
        state: &TargetState<AnyPlan>,
        control: &CallControl,
    ) -> Result<ToolOutput, HandlerFailure> {
        let cx = self.cx(&prepared.binding, &prepared.caller, control);
        let outcome = prepared
            .def
            .tool
            .run(&cx, &prepared.args.typed, &prepared.precheck, state);
        // r[impl gate.raise.forget-deleted]
        // Whatever the outcome: a handler that failed after a permanent delete still deleted.
        for path in prepared.binding.vault.take_deleted_for_good() {
            // A failure leaves the preview to expire with its request (elicitTtlSeconds);
            // the delete itself is done and is not undone for it.
            let _ = self
                .gate
                .forget_previews(prepared.vault_id(), path.as_str());
        }
        outcome
    }

    /// The state now, for a drift check at redemption.
    fn fresh_state(&self, prepared: &Prepared) -> Result<TargetState<AnyPlan>, ToolError> {
        let control = CallControl::default();
        let cx = self.cx(&prepared.binding, &prepared.caller, &control);
        prepared
            .def
            .tool
            .state(&cx, &prepared.args.typed, &prepared.precheck)
    }

    // r[impl drift.fingerprint-keyed]
    /// The fingerprint of a tool's observed state as the pipeline records, shows and
    /// compares it, at the raise and at every redemption alike. The tool's own stays in
    /// the state, for its handler to compare what it finds under its lock with.
    fn shown_fp(&self, state: &TargetState<AnyPlan>) -> StateFp {
        self.fingerprints.key(&state.fp)
    }

    /// The confirmation gate's outcome, the folder ACL and the handler (see the module
    /// documentation). `cancel` is checked right before the handler is entered.
    pub fn execute(
        &self,
        prepared: &Prepared,
        approval: Approval,
        control: &CallControl,
    ) -> Result<ToolOutput, ToolError> {
        self.execute_approved(prepared, approval, control)
            .map_err(|e| {
                crate::refusals::withhold_unreadable_hash(
                    &prepared.binding,
                    &prepared.caller,
                    prepared.args.canonical["prev_hash"].as_str(),
                    e,
                )
            })
    }

    fn execute_approved(
        &self,
        prepared: &Prepared,
        approval: Approval,
        control: &CallControl,
    ) -> Result<ToolOutput, ToolError> {
        // r[impl gate.token.unneeded]
        if !prepared.needs_confirmation() {
            Self::check_acl(prepared)?;
            if control.cancel.is_cancelled() {
                return Err(Self::cancelled(prepared, None));
            }
            return self
                .run_handler(prepared, &prepared.state, control)
                .map_err(|failure| match failure {
                    HandlerFailure::ConventionBlockedBeforeWrite(b) => ToolError::convention(&b),
                    HandlerFailure::Failed(e) => e,
                });
        }
        match approval {
            // r[impl floors.no-bypass]
            Approval::None | Approval::NotNeeded => {
                let raised = self.raise(prepared)?;
                Err(self.elicit_required(prepared, raised, None))
            }
            Approval::CliToken(token) => self.execute_with_token(prepared, &token, control),
            Approval::Verified { state_fp, route } => {
                self.execute_verified(prepared, &state_fp, route, control)
            }
        }
    }

    // r[impl drift.every-route]
    fn execute_verified(
        &self,
        prepared: &Prepared,
        approved: &StateFp,
        route: NonTokenRoute,
        control: &CallControl,
    ) -> Result<ToolOutput, ToolError> {
        let state = self.fresh_state(prepared)?;
        if self
            .gate
            .check_drift(approved, &self.shown_fp(&state))
            .is_err()
        {
            return Err(Self::replay_drift(prepared, false));
        }
        Self::check_acl(prepared)?;
        if control.cancel.is_cancelled() {
            return Err(Self::cancelled(prepared, None));
        }
        // r[impl trip.consumed-event-per-run]
        self.gate
            .record_handler_run(&prepared.call(), route)
            .map_err(|_| ToolError::internal("recording the handler run"))?;
        self.run_handler(prepared, &state, control)
            .map_err(|failure| match failure {
                HandlerFailure::ConventionBlockedBeforeWrite(b) => ToolError::convention(&b),
                HandlerFailure::Failed(e) => e,
            })
    }

    fn released(outcome: Result<ReleaseOutcome, tc_gate::StoreError>) -> bool {
        matches!(outcome, Ok(ReleaseOutcome::Released { .. }))
    }

    fn execute_with_token(
        &self,
        prepared: &Prepared,
        token: &str,
        control: &CallControl,
    ) -> Result<ToolOutput, ToolError> {
        let call = prepared.call();
        let mut fresh: Option<Result<TargetState<AnyPlan>, ToolError>> = None;
        let redeemed = self.verifier.verify(&self.gate, token, &call, &mut || {
            let state = self.fresh_state(prepared);
            // A target that cannot be read now is not the state that was approved.
            let fp = match &state {
                Ok(state) => self.shown_fp(state),
                Err(_) => self
                    .fingerprints
                    .key(&fingerprint_custom(&[b"unreadable confirmation target"])),
            };
            fresh = Some(state);
            fp
        });
        let redemption = match redeemed {
            Ok(redemption) => redemption,
            // r[impl drift.token-spent]
            Err(RedeemError::ReplayDrift) => return Err(Self::replay_drift(prepared, true)),
            Err(RedeemError::Store(_)) => {
                return Err(ToolError::internal("redeeming the confirmation token"));
            }
            // r[impl gate.token.refused]
            Err(other) => {
                let raised = self.raise(prepared)?;
                return Err(self.elicit_required(
                    prepared,
                    raised,
                    Some(crate::refusals::token_rejected(&other)),
                ));
            }
        };
        let state = match fresh {
            Some(Ok(state)) => state,
            // Cannot happen (an unreadable state fails the drift check), but never run on it.
            Some(Err(error)) => {
                redemption.keep_spent(SpentReason::HandlerError);
                return Err(error);
            }
            // An unbound library token: no drift check, so the state is taken now.
            None => match self.fresh_state(prepared) {
                Ok(state) => state,
                Err(error) => {
                    redemption.keep_spent(SpentReason::HandlerError);
                    return Err(error);
                }
            },
        };
        // r[impl release.acl]
        if let Err(error) = Self::check_acl(prepared) {
            let released = Self::released(
                redemption.release(NoEffect::FolderAclDenied, self.verifier.as_ref()),
            );
            return Err(error.detail("token_released", json!(released)));
        }
        // r[impl release.cancel]
        if control.cancel.is_cancelled() {
            let released = Self::released(
                redemption.release(NoEffect::CancelledBeforeHandler, self.verifier.as_ref()),
            );
            return Err(Self::cancelled(prepared, Some(released)));
        }
        let run = redemption
            .enter_handler()
            .map_err(|_| ToolError::internal("recording the handler run"))?;
        match self.run_handler(prepared, &state, control) {
            Ok(output) => {
                run.keep_spent(SpentReason::Completed);
                Ok(output)
            }
            // r[impl release.convention]
            Err(HandlerFailure::ConventionBlockedBeforeWrite(blocked)) => {
                let reason = InHandlerNoEffect::ConventionBlockedBeforeWrite;
                let outcome = if prepared.def.checks_confirmation_in_handler {
                    run.release_handler_level(reason)
                } else {
                    run.release(reason, self.verifier.as_ref())
                };
                Err(ToolError::convention(&blocked)
                    .detail("token_released", json!(Self::released(outcome))))
            }
            // r[impl release.keeps-spent]
            Err(HandlerFailure::Failed(error)) => {
                run.keep_spent(SpentReason::HandlerError);
                Err(error)
            }
        }
    }
}

#[cfg(test)]
mod tests;
