//! A tool: its typed steps ([`Tool`]), the declarations the gate needs ([`ToolSpec`]), and
//! what the steps hand each other ([`Precheck`], [`TargetState`], [`ToolOutput`])
//! (spec/tools.md `tools.schema`, `tools.output-schema`, `tools.annotations`,
//! `tools.summary`; spec/drift.md `drift.targets-declared`, `drift.path-fingerprint`).
//!
//! The pipeline calls a tool at its stages: [`Tool::precheck`] (existence, `prev_hash`,
//! overwrite rules, the conventions preflight, whether this call needs confirmation, and
//! the paths it declares for the folder ACL), [`Tool::state`] (the state of its
//! confirmation targets, fingerprinted), [`Tool::summary`] (what the human approves), and
//! [`Tool::run`] (the handler). [`Erased`] is the object-safe face the registry keeps.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tc_gate::{ConfirmationTargets, StateFp, fingerprint_targets};
use tc_vault::acl::AclOp;
use tc_vault::conventions::ConventionBlocked;
use tc_vault::error::VaultError;
use tc_vault::path::VaultPath;
use tc_vault::vault::Vault;

use crate::context::ToolCx;
use crate::error::ToolError;
use crate::summary::Summary;

/// The MCP annotations of a tool (spec `tools.annotations`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annotations {
    pub read_only_hint: bool,
    pub destructive_hint: bool,
    pub idempotent_hint: bool,
    /// False for every tool that works on the local vault only.
    pub open_world_hint: bool,
}

impl Annotations {
    /// A tool that only reads.
    pub const READS: Annotations = Annotations {
        read_only_hint: true,
        destructive_hint: false,
        idempotent_hint: true,
        open_world_hint: false,
    };

    /// A tool that changes the vault.
    pub const fn writes(destructive: bool, idempotent: bool) -> Annotations {
        Annotations {
            read_only_hint: false,
            destructive_hint: destructive,
            idempotent_hint: idempotent,
            open_world_hint: false,
        }
    }

    pub fn to_json(&self) -> Value {
        json!({
            "readOnlyHint": self.read_only_hint,
            "destructiveHint": self.destructive_hint,
            "idempotentHint": self.idempotent_hint,
            "openWorldHint": self.open_world_hint,
        })
    }
}

/// Whether a tool can need confirmation, and what its confirmation is bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gating {
    /// Whether the tool can need confirmation.
    pub gated: bool,
    /// What its confirmation is bound to; a gated tool without it is refused at start-up.
    pub confirmation: Option<ConfirmationTargets>,
    /// Whether its confirmation is checked inside its handler (update_task): an in-handler
    /// convention refusal is then released through the built-in verifier.
    pub checks_confirmation_in_handler: bool,
}

impl Gating {
    /// Never needs confirmation.
    pub const NEVER: Gating = Gating {
        gated: false,
        confirmation: None,
        checks_confirmation_in_handler: false,
    };

    /// Can need confirmation, bound to `targets`.
    pub const fn bound_to(targets: ConfirmationTargets) -> Gating {
        Gating {
            gated: true,
            confirmation: Some(targets),
            checks_confirmation_in_handler: false,
        }
    }
}

/// What a tool declares about itself: what `tools/list` shows and what the gate needs.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub annotations: Annotations,
    /// The scopes a caller needs, every one of them (spec `dispatch.scopes`), e.g.
    /// `["write:notes", "delete:notes"]`.
    pub scopes: &'static [&'static str],
    /// Whether the tool can change notes (refused on a read-only vault before the gate).
    pub changes_notes: bool,
    pub gating: Gating,
}

/// What a step hands a later one, behind the object-safe face: the registry's typed adapter
/// puts a tool's own [`Tool::Plan`] or [`Tool::Seen`] in and takes the same type out, so a
/// tool never casts.
pub type AnyPlan = dyn Any + Send + Sync;

/// What the precheck decided about a call, with the plan it hands the later steps.
pub struct Precheck<P: ?Sized = ()> {
    /// Whether this call needs confirmation (the tool's condition of spec/tools.md).
    pub needs_confirmation: bool,
    /// The paths the tool declares for the central folder ACL, with the access each needs.
    /// For `pathAcl` tools these are also the confirmation targets.
    pub acl: Vec<(AclOp, VaultPath)>,
    /// What the precheck worked out for the later steps (`()` for most tools).
    pub plan: Arc<P>,
}

impl<P: ?Sized> Clone for Precheck<P> {
    fn clone(&self) -> Self {
        Precheck {
            needs_confirmation: self.needs_confirmation,
            acl: self.acl.clone(),
            plan: Arc::clone(&self.plan),
        }
    }
}

impl<P: Default> Default for Precheck<P> {
    fn default() -> Self {
        Precheck {
            needs_confirmation: false,
            acl: Vec::new(),
            plan: Arc::default(),
        }
    }
}

impl<P: ?Sized> fmt::Debug for Precheck<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Precheck")
            .field("needs_confirmation", &self.needs_confirmation)
            .field("acl", &self.acl)
            .finish_non_exhaustive()
    }
}

impl Precheck {
    /// A call that never needs confirmation and declares no paths.
    pub fn free() -> Self {
        Precheck::default()
    }
}

impl<P: Send + Sync + 'static> Precheck<P> {
    /// A call with `plan`, declaring no paths and not (yet) needing confirmation.
    pub fn with_plan(plan: P) -> Self {
        Precheck {
            needs_confirmation: false,
            acl: Vec::new(),
            plan: Arc::new(plan),
        }
    }

    /// The same decision with the plan behind the object-safe face.
    pub fn erase(self) -> Precheck<AnyPlan> {
        Precheck {
            needs_confirmation: self.needs_confirmation,
            acl: self.acl,
            plan: self.plan,
        }
    }
}

impl Precheck<AnyPlan> {
    /// The decision with the plan of the tool that made it: the adapter hands every step
    /// of a tool the precheck that tool made, so the type always matches.
    pub fn typed<P: Send + Sync + 'static>(&self) -> Result<Precheck<P>, ToolError> {
        let plan = Arc::clone(&self.plan)
            .downcast::<P>()
            .map_err(|_| ToolError::internal("handing the precheck's plan on"))?;
        Ok(Precheck {
            needs_confirmation: self.needs_confirmation,
            acl: self.acl.clone(),
            plan,
        })
    }
}

impl<P: ?Sized> Precheck<P> {
    /// The distinct paths declared for the ACL, in order.
    pub fn declared_paths(&self) -> Vec<VaultPath> {
        let mut paths: Vec<VaultPath> = Vec::new();
        for (_, path) in &self.acl {
            if !paths.contains(path) {
                paths.push(path.clone());
            }
        }
        paths
    }
}

/// The state of a call's confirmation targets, as observed now, with what the state step saw
/// beyond the paths' hashes (`()` for most tools).
pub struct TargetState<S: ?Sized = ()> {
    pub fp: StateFp,
    /// `(path, content hash)` of each path observed; `None` for a missing file.
    pub observed: Vec<(VaultPath, Option<String>)>,
    pub seen: Arc<S>,
}

impl<S: ?Sized> Clone for TargetState<S> {
    fn clone(&self) -> Self {
        TargetState {
            fp: self.fp.clone(),
            observed: self.observed.clone(),
            seen: Arc::clone(&self.seen),
        }
    }
}

impl<S: Default> Default for TargetState<S> {
    fn default() -> Self {
        TargetState {
            fp: StateFp::default(),
            observed: Vec::new(),
            seen: Arc::default(),
        }
    }
}

impl<S: ?Sized> fmt::Debug for TargetState<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TargetState")
            .field("fp", &self.fp)
            .field("observed", &self.observed)
            .finish_non_exhaustive()
    }
}

impl<S: ?Sized> TargetState<S> {
    /// The hash observed for `path`: `Some(None)` when it was missing, `None` when the path
    /// was not observed.
    pub fn observed_hash(&self, path: &VaultPath) -> Option<Option<&str>> {
        self.observed
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, hash)| hash.as_deref())
    }

    /// The same observation with `seen` as what the step saw besides.
    pub fn with_seen<T>(self, seen: T) -> TargetState<T> {
        TargetState {
            fp: self.fp,
            observed: self.observed,
            seen: Arc::new(seen),
        }
    }
}

impl<S: Send + Sync + 'static> TargetState<S> {
    // r[impl drift.path-fingerprint]
    /// The state of the paths `observed`, each with the hash of its content (`None`: no
    /// file there, a state of its own), fingerprinted together, with what the state step saw.
    pub fn from_observed(observed: Vec<(VaultPath, Option<String>)>, seen: S) -> Self {
        let targets: Vec<(String, Option<String>)> = observed
            .iter()
            .map(|(p, h)| (p.as_str().to_owned(), h.clone()))
            .collect();
        TargetState {
            fp: fingerprint_targets(&targets),
            observed,
            seen: Arc::new(seen),
        }
    }

    /// The same state with what was seen behind the object-safe face.
    pub fn erase(self) -> TargetState<AnyPlan> {
        TargetState {
            fp: self.fp,
            observed: self.observed,
            seen: self.seen,
        }
    }
}

impl TargetState<AnyPlan> {
    /// The state of a call whose state was not taken (a call that cannot need
    /// confirmation): nothing observed.
    pub fn untaken() -> Self {
        TargetState::<()>::default().erase()
    }

    /// The state with what the tool's own state step saw; a state that was not taken (an
    /// ungated call) gives the tool's default.
    pub fn typed<S: Default + Send + Sync + 'static>(&self) -> TargetState<S> {
        TargetState {
            fp: self.fp.clone(),
            observed: self.observed.clone(),
            seen: Arc::clone(&self.seen)
                .downcast::<S>()
                .unwrap_or_else(|_| Arc::new(S::default())),
        }
    }
}

/// The `pathAcl` state of `paths`: each path with the hash of its content, a missing file
/// being a state of its own.
pub fn path_state(vault: &Vault, paths: &[VaultPath]) -> Result<TargetState, ToolError> {
    let mut observed = Vec::with_capacity(paths.len());
    for path in paths {
        let hash = vault.read_if_exists(path)?.map(|content| content.hash);
        observed.push((path.clone(), hash));
    }
    Ok(TargetState::from_observed(observed, ()))
}

/// What an `image` content block costs of a response beside its base64 data and MIME type:
/// its keys, quotes and the comma before it.
pub const IMAGE_BLOCK_BYTES: usize = 64;

/// A successful call's result object (spec `results.success`).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutput {
    /// A result object.
    Value(Value),
    /// A result object serialized once already (a page sized against the governor's cap):
    /// the server sends these bytes as they are.
    Serialized(String),
    /// A result object with an MCP `image` content block beside its text block
    /// (`get_attachment`); the governor counts the image's base64 with the rest.
    Image {
        value: Value,
        /// The image's bytes in standard base64.
        data: String,
        mime_type: String,
    },
}

impl From<Value> for ToolOutput {
    fn from(value: Value) -> Self {
        ToolOutput::Value(value)
    }
}

impl ToolOutput {
    /// A typed result as a result object.
    pub fn encode<T: Serialize>(output: &T) -> Result<Self, ToolError> {
        serde_json::to_value(output)
            .map(ToolOutput::Value)
            .map_err(|_| ToolError::internal("encoding the result"))
    }

    /// The result object as a value (parsing a serialized page; its text is always JSON
    /// this server wrote, so a parse failure reads as null rather than a panic).
    pub fn to_value(&self) -> Value {
        match self {
            ToolOutput::Value(value) => value.clone(),
            ToolOutput::Serialized(text) => serde_json::from_str(text).unwrap_or(Value::Null),
            ToolOutput::Image { value, .. } => value.clone(),
        }
    }
}

/// How a handler failed.
#[derive(Debug, Clone)]
pub enum HandlerFailure {
    /// The handler's write gate refused with convention_blocked before any write of the
    /// call: the one in-handler outcome after which a spent token is given back.
    ConventionBlockedBeforeWrite(ConventionBlocked),
    /// Anything else (the token stays spent).
    Failed(ToolError),
}

impl From<ToolError> for HandlerFailure {
    fn from(error: ToolError) -> Self {
        HandlerFailure::Failed(error)
    }
}

impl From<VaultError> for HandlerFailure {
    fn from(error: VaultError) -> Self {
        HandlerFailure::Failed(error.into())
    }
}

/// The steps of one tool, over its typed arguments.
pub trait Tool: Send + Sync + fmt::Debug + 'static {
    /// The arguments, without the common `vault` and `elicit_token` (the framework adds
    /// them to the schema). Optional fields must skip serializing when absent, so a call
    /// that omits one and a call that sends `null` hash alike.
    type Args: DeserializeOwned + Serialize + JsonSchema + Send + Sync + 'static;
    /// The result object; its schema is the advertised `outputSchema`.
    type Output: Serialize + JsonSchema;
    /// What the precheck works out for the later steps (`()` when nothing).
    type Plan: Send + Sync + 'static;
    /// What the state step sees beyond the paths' hashes (`()` when nothing); a call whose
    /// state is not taken (one that cannot need confirmation) gets the default.
    type Seen: Default + Send + Sync + 'static;

    fn spec(&self) -> ToolSpec;

    /// Rules across fields that a flat schema cannot state (each is said in the
    /// description): refused as `validation_error` before anything else runs.
    fn check(&self, _args: &Self::Args) -> Result<(), ToolError> {
        Ok(())
    }

    /// Judges the call before the confirmation gate.
    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &Self::Args,
    ) -> Result<Precheck<Self::Plan>, ToolError>;

    /// The state of the confirmation targets now; by default the `pathAcl` state of the
    /// declared paths.
    fn state(
        &self,
        cx: &ToolCx<'_>,
        _args: &Self::Args,
        precheck: &Precheck<Self::Plan>,
    ) -> Result<TargetState<Self::Seen>, ToolError> {
        Ok(path_state(cx.vault(), &precheck.declared_paths())?.with_seen(Self::Seen::default()))
    }

    /// The state taken right after the precheck in the same call: a tool whose precheck
    /// already computed it (rewrite_link's plan) reuses that work.
    fn state_after_precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &Self::Args,
        precheck: &Precheck<Self::Plan>,
    ) -> Result<TargetState<Self::Seen>, ToolError> {
        self.state(cx, args, precheck)
    }

    /// What the human approves: the targets and what would change (spec `tools.summary`).
    /// Asked only of a call that needs confirmation, after its state was taken.
    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        _args: &Self::Args,
        precheck: &Precheck<Self::Plan>,
        _state: &TargetState<Self::Seen>,
    ) -> Summary {
        Summary::targets_only(self.spec().name, precheck)
    }

    /// The handler: applies the call against `state` (the state the approval covers).
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &Self::Args,
        precheck: &Precheck<Self::Plan>,
        state: &TargetState<Self::Seen>,
    ) -> Result<Self::Output, HandlerFailure>;

    /// The result as it leaves the tool; a tool whose result is already serialized (a page)
    /// overrides this so nothing is encoded twice.
    fn encode(&self, output: Self::Output) -> Result<ToolOutput, ToolError> {
        ToolOutput::encode(&output)
    }
}

/// Typed arguments behind the object-safe face.
pub type AnyArgs = Arc<dyn Any + Send + Sync>;

/// The object-safe face of a [`Tool`], as the registry keeps it.
pub trait Erased: Send + Sync + fmt::Debug {
    /// Deserializes validated arguments (without `vault` and `elicit_token`) into the typed
    /// arguments, and their canonical value (defaults filled) for the args_hash.
    fn parse(&self, args: Map<String, Value>) -> Result<(AnyArgs, Value), ToolError>;
    fn precheck(&self, cx: &ToolCx<'_>, args: &AnyArgs) -> Result<Precheck<AnyPlan>, ToolError>;
    fn state(
        &self,
        cx: &ToolCx<'_>,
        args: &AnyArgs,
        precheck: &Precheck<AnyPlan>,
    ) -> Result<TargetState<AnyPlan>, ToolError>;
    fn state_after_precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &AnyArgs,
        precheck: &Precheck<AnyPlan>,
    ) -> Result<TargetState<AnyPlan>, ToolError>;
    fn summary(
        &self,
        cx: &ToolCx<'_>,
        args: &AnyArgs,
        precheck: &Precheck<AnyPlan>,
        state: &TargetState<AnyPlan>,
    ) -> Summary;
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &AnyArgs,
        precheck: &Precheck<AnyPlan>,
        state: &TargetState<AnyPlan>,
    ) -> Result<ToolOutput, HandlerFailure>;
}

/// A [`Tool`] behind [`Erased`].
#[derive(Debug)]
pub(crate) struct Typed<T>(pub T);

fn typed<A: 'static>(args: &AnyArgs) -> Result<&A, ToolError> {
    args.downcast_ref::<A>()
        .ok_or_else(|| ToolError::internal("reading the arguments"))
}

impl<T: Tool> Erased for Typed<T> {
    fn parse(&self, args: Map<String, Value>) -> Result<(AnyArgs, Value), ToolError> {
        let value = Value::Object(args);
        let parsed: T::Args = serde_path_to_error::deserialize(&value).map_err(|error| {
            let pointer = crate::schema::pointer_of(error.path());
            ToolError::validation(&pointer, error.inner().to_string())
        })?;
        self.0.check(&parsed)?;
        let canonical = serde_json::to_value(&parsed)
            .map_err(|_| ToolError::internal("encoding the arguments"))?;
        Ok((Arc::new(parsed), canonical))
    }

    fn precheck(&self, cx: &ToolCx<'_>, args: &AnyArgs) -> Result<Precheck<AnyPlan>, ToolError> {
        Ok(self.0.precheck(cx, typed::<T::Args>(args)?)?.erase())
    }

    fn state(
        &self,
        cx: &ToolCx<'_>,
        args: &AnyArgs,
        precheck: &Precheck<AnyPlan>,
    ) -> Result<TargetState<AnyPlan>, ToolError> {
        let precheck = precheck.typed::<T::Plan>()?;
        Ok(self
            .0
            .state(cx, typed::<T::Args>(args)?, &precheck)?
            .erase())
    }

    fn state_after_precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &AnyArgs,
        precheck: &Precheck<AnyPlan>,
    ) -> Result<TargetState<AnyPlan>, ToolError> {
        let precheck = precheck.typed::<T::Plan>()?;
        Ok(self
            .0
            .state_after_precheck(cx, typed::<T::Args>(args)?, &precheck)?
            .erase())
    }

    fn summary(
        &self,
        cx: &ToolCx<'_>,
        args: &AnyArgs,
        precheck: &Precheck<AnyPlan>,
        state: &TargetState<AnyPlan>,
    ) -> Summary {
        match (typed::<T::Args>(args), precheck.typed::<T::Plan>()) {
            (Ok(args), Ok(typed)) => self.0.summary(cx, args, &typed, &state.typed()),
            _ => Summary::targets_only(self.0.spec().name, precheck),
        }
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &AnyArgs,
        precheck: &Precheck<AnyPlan>,
        state: &TargetState<AnyPlan>,
    ) -> Result<ToolOutput, HandlerFailure> {
        let precheck = precheck.typed::<T::Plan>()?;
        let output = self
            .0
            .run(cx, typed::<T::Args>(args)?, &precheck, &state.typed())?;
        Ok(self.0.encode(output)?)
    }
}
