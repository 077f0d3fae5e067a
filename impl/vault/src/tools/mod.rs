//! The tool registry: each tool's definition, input schema, truthful annotations, required
//! scope, and what its confirmation is bound to (CONTRACT.md §3; spec/tools.md `tools.schema`,
//! `tools.annotations`, `tools.vault-arg`, `tools.elicit-token-arg`; spec/drift.md
//! `drift.targets-declared`, `drift.startup-refusal`).
//!
//! A tool is a [`ToolDef`] (what `tools/list` shows, plus the gate declarations) and a
//! [`ToolHandler`] in three steps that the dispatch pipeline ([`crate::pipeline`]) calls at
//! its stages: [`ToolHandler::precheck`] (existence, `prev_hash`, overwrite rules, the
//! conventions preflight, whether this call needs confirmation, and the paths it declares
//! for the folder ACL), [`ToolHandler::state`] (the state of its confirmation targets,
//! fingerprinted), and [`ToolHandler::run`] (the handler). Registering a gated tool that
//! declares no confirmation targets fails at start-up, naming the tool.

pub mod error;
pub mod schema;
pub mod wiki;

mod defs;
mod links;
mod notes;
mod paging;

use std::any::Any;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_json::{Value, json};
use tc_gate::clock::Clock;
use tc_gate::{
    ConfirmationTargets, RegistryError, StateFp, fingerprint_targets, validate_gated_tool,
};

use crate::acl::{Acl, AclOp, Scopes};
use crate::conventions::{ConventionBlocked, Conventions, WriteIntent};
use crate::error::VaultError;
use crate::path::VaultPath;
use crate::tasks::Date;
use crate::vault::Vault;

pub use error::{ErrorCode, Recovery, ToolError};
pub use paging::PagingSetup;
pub use wiki::{SealState, WikiSealer, seal_dir_for};

/// The MCP annotations of a tool (spec `tools.annotations`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annotations {
    pub read_only_hint: bool,
    pub destructive_hint: bool,
    pub idempotent_hint: bool,
    /// Always false: every tool works on the local vault only.
    pub open_world_hint: bool,
}

impl Annotations {
    pub fn to_json(&self) -> Value {
        json!({
            "readOnlyHint": self.read_only_hint,
            "destructiveHint": self.destructive_hint,
            "idempotentHint": self.idempotent_hint,
            "openWorldHint": self.open_world_hint,
        })
    }
}

/// The scope a caller needs for a tool (spec `dispatch.scopes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequiredScope {
    ReadNotes,
    WriteNotes,
}

impl RequiredScope {
    pub fn as_str(self) -> &'static str {
        match self {
            RequiredScope::ReadNotes => "read:notes",
            RequiredScope::WriteNotes => "write:notes",
        }
    }
}

/// Tool-specific data a step hands to a later one (e.g. `rewrite_link`'s plan).
pub type Payload = Option<Arc<dyn Any + Send + Sync>>;

/// What the precheck decided about a call.
#[derive(Clone, Default)]
pub struct Precheck {
    /// Whether this call needs confirmation (the tool's condition of spec/tools.md).
    pub needs_confirmation: bool,
    /// The paths the tool declares for the central folder ACL, with the access each needs.
    /// For `pathAcl` tools these are also the confirmation targets.
    pub acl: Vec<(AclOp, VaultPath)>,
    pub payload: Payload,
}

impl fmt::Debug for Precheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Precheck")
            .field("needs_confirmation", &self.needs_confirmation)
            .field("acl", &self.acl)
            .finish_non_exhaustive()
    }
}

impl Precheck {
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

/// The state of a call's confirmation targets, as observed now.
#[derive(Clone, Default)]
pub struct TargetState {
    pub fp: StateFp,
    /// `(path, content hash)` of each path observed; `None` for a missing file.
    pub observed: Vec<(VaultPath, Option<String>)>,
    pub payload: Payload,
}

impl fmt::Debug for TargetState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TargetState")
            .field("fp", &self.fp)
            .field("observed", &self.observed)
            .finish_non_exhaustive()
    }
}

impl TargetState {
    /// The hash observed for `path`: `Some(None)` when it was missing, `None` when the path
    /// was not observed.
    pub fn observed_hash(&self, path: &VaultPath) -> Option<Option<&str>> {
        self.observed
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, hash)| hash.as_deref())
    }
}

// r[impl drift.path-fingerprint]
/// The `pathAcl` state of `paths`: each path with the hash of its content, a missing file
/// being a state of its own.
pub fn path_state(vault: &Vault, paths: &[VaultPath]) -> Result<TargetState, ToolError> {
    let mut observed = Vec::with_capacity(paths.len());
    for path in paths {
        let hash = vault.read_if_exists(path)?.map(|content| content.hash);
        observed.push((path.clone(), hash));
    }
    let targets: Vec<(String, Option<String>)> = observed
        .iter()
        .map(|(p, h)| (p.as_str().to_owned(), h.clone()))
        .collect();
    Ok(TargetState {
        fp: fingerprint_targets(&targets),
        observed,
        payload: None,
    })
}

/// A successful call's result object (spec `results.success`: `structuredContent`, and one
/// text block holding the same JSON).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutput {
    /// A result object.
    Value(Value),
    /// A result object serialized once already (a `read_notes` or `list_notes` page, sized
    /// against the governor's cap): the server sends these bytes as they are.
    Serialized(String),
}

impl From<Value> for ToolOutput {
    fn from(value: Value) -> Self {
        ToolOutput::Value(value)
    }
}

impl ToolOutput {
    /// The JSON text of the result object.
    pub fn text(&self) -> Cow<'_, str> {
        match self {
            ToolOutput::Value(value) => Cow::Owned(value.to_string()),
            ToolOutput::Serialized(text) => Cow::Borrowed(text),
        }
    }

    /// The result object as a value (parsing a serialized page; its text is always JSON
    /// this crate wrote, so a parse failure reads as null rather than a panic).
    pub fn to_value(&self) -> Value {
        match self {
            ToolOutput::Value(value) => value.clone(),
            ToolOutput::Serialized(text) => serde_json::from_str(text).unwrap_or(Value::Null),
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

/// One vault as the tools see it: the vault, its folder ACL (and whether it is read-only),
/// its conventions and the sealer of its generated wiki pages.
#[derive(Debug)]
pub struct VaultBinding {
    pub vault: Vault,
    pub acl: Acl,
    /// `readOnly = true` in the vault's ACL: every tool that changes notes is refused.
    pub read_only: bool,
    pub conventions: Conventions,
    pub sealer: WikiSealer,
}

/// A vault's ACL or conventions that do not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindingError {
    #[error(transparent)]
    Acl(#[from] crate::acl::GlobConfigError),
    #[error(transparent)]
    Conventions(#[from] crate::conventions::ConventionConfigError),
}

impl VaultBinding {
    /// Binds `vault` with its configured ACL (absent = unrestricted) and conventions.
    pub fn from_config(
        vault: Vault,
        acl: Option<&crate::acl::AclConfig>,
        conventions: &[crate::conventions::ConventionConfig],
        sealer: WikiSealer,
    ) -> Result<Self, BindingError> {
        Ok(VaultBinding {
            vault,
            acl: match acl {
                Some(config) => Acl::compile(config)?,
                None => Acl::unrestricted(),
            },
            read_only: acl.is_some_and(|config| config.read_only),
            conventions: Conventions::compile(conventions)?,
            sealer,
        })
    }
}

/// The caller as the server authenticated it: its id and scopes (spec `dispatch.scopes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerContext {
    pub id: String,
    pub scopes: Scopes,
    /// A caller limited to one vault (a JWT `vault` claim); `None` for any vault.
    pub only_vault: Option<String>,
}

impl CallerContext {
    pub fn new(id: impl Into<String>, scopes: Scopes) -> Self {
        CallerContext {
            id: id.into(),
            scopes,
            only_vault: None,
        }
    }
}

/// What a tool step sees of the call's context.
#[derive(Clone, Copy)]
pub struct ToolCx<'a> {
    pub binding: &'a VaultBinding,
    pub caller: &'a CallerContext,
    pub clock: &'a dyn Clock,
    pub paging: &'a PagingSetup,
}

impl fmt::Debug for ToolCx<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolCx")
            .field("vault", &self.binding.vault.id())
            .field("caller", &self.caller.id)
            .finish_non_exhaustive()
    }
}

impl ToolCx<'_> {
    pub fn vault(&self) -> &Vault {
        &self.binding.vault
    }

    /// The server's current UTC date.
    pub fn today(&self) -> Date {
        Date::from_unix_ms(self.clock.now_ms())
    }

    /// The vault's write gate.
    pub fn judge(&self, intent: &WriteIntent) -> Result<(), ConventionBlocked> {
        self.binding.conventions.judge(intent)
    }

    /// Whether the caller may write `path` under the folder ACL (used to leave notes the
    /// caller may not change out of multi-note rewrites).
    pub fn may_write(&self, path: &VaultPath) -> bool {
        self.binding
            .acl
            .check(AclOp::Write, path, &self.caller.scopes)
            .is_ok()
    }
}

/// The steps of one tool.
pub trait ToolHandler: Send + Sync + fmt::Debug {
    /// Judges the call before the confirmation gate: existence, `prev_hash`, overwrite
    /// rules, the conventions preflight, the confirmation condition and the ACL paths.
    fn precheck(&self, cx: &ToolCx<'_>, args: &Value) -> Result<Precheck, ToolError>;

    /// The state of the confirmation targets now. The default is the `pathAcl` state of
    /// the declared paths.
    fn state(
        &self,
        cx: &ToolCx<'_>,
        _args: &Value,
        precheck: &Precheck,
    ) -> Result<TargetState, ToolError> {
        path_state(cx.vault(), &precheck.declared_paths())
    }

    /// The state taken right after [`ToolHandler::precheck`] in the same call: a tool whose
    /// precheck already computed it (rewrite_link's plan) reuses that work.
    fn state_after_precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &Value,
        precheck: &Precheck,
    ) -> Result<TargetState, ToolError> {
        self.state(cx, args, precheck)
    }

    /// The handler: applies the call against `state` (the state the approval covers).
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &Value,
        precheck: &Precheck,
        state: &TargetState,
    ) -> Result<ToolOutput, HandlerFailure>;
}

/// A tool as registered: what `tools/list` shows and the gate declarations.
#[derive(Debug, Clone)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    /// JSON Schema of the input, each default stated.
    pub input_schema: Value,
    pub annotations: Annotations,
    pub scope: RequiredScope,
    /// Whether the tool can change notes (refused on a read-only vault before the gate).
    pub changes_notes: bool,
    /// Whether the tool can need confirmation.
    pub gated: bool,
    /// What its confirmation is bound to; required for a gated tool.
    pub confirmation: Option<ConfirmationTargets>,
    /// Whether its confirmation is checked inside its handler (update_task): an in-handler
    /// convention refusal is then released through the built-in verifier.
    pub checks_confirmation_in_handler: bool,
    pub handler: Arc<dyn ToolHandler>,
}

impl ToolDef {
    /// The `tools/list` entry: name, description, inputSchema, annotations.
    pub fn list_entry(&self) -> Value {
        json!({
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "annotations": self.annotations.to_json(),
        })
    }
}

/// Why a registry could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryBuildError {
    #[error(transparent)]
    MissingConfirmationTargets(#[from] RegistryError),
    #[error("tool `{tool}` is registered twice")]
    Duplicate { tool: String },
}

/// The tools a server offers, by name.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    tools: BTreeMap<String, Arc<ToolDef>>,
    order: Vec<String>,
}

impl Registry {
    pub fn new() -> Self {
        Registry::default()
    }

    // r[impl drift.startup-refusal]
    /// Adds a tool; a gated tool that declares neither `pathAcl` nor `confirmationTargets`
    /// is refused with an error naming it.
    pub fn register(&mut self, def: ToolDef) -> Result<(), RegistryBuildError> {
        if def.gated {
            validate_gated_tool(&def.name, def.confirmation.as_ref())?;
        }
        if self.tools.contains_key(&def.name) {
            return Err(RegistryBuildError::Duplicate { tool: def.name });
        }
        self.order.push(def.name.clone());
        self.tools.insert(def.name.clone(), Arc::new(def));
        Ok(())
    }

    /// The tools of CONTRACT.md §3 that this crate builds.
    pub fn standard() -> Result<Self, RegistryBuildError> {
        let mut registry = Registry::new();
        for def in defs::standard_defs()
            .into_iter()
            .chain(paging::paging_defs())
        {
            registry.register(def)?;
        }
        Ok(registry)
    }

    pub fn get(&self, name: &str) -> Option<&Arc<ToolDef>> {
        self.tools.get(name)
    }

    /// The tools in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<ToolDef>> {
        self.order.iter().filter_map(|name| self.tools.get(name))
    }

    /// The `tools/list` entries, in registration order.
    pub fn list(&self) -> Vec<Value> {
        self.iter().map(|def| def.list_entry()).collect()
    }
}
