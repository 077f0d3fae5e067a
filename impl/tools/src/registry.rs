//! The registry of the tools a server offers (spec/tools.md `tools.schema`,
//! `tools.output-schema`, `tools.annotations`, `tools.vault-arg`, `tools.elicit-token-arg`;
//! spec/drift.md `drift.startup-refusal`).
//!
//! A subsystem crate adds its tools through one `register(&mut Registry, …)` of its own,
//! which calls [`Registry::add`] per tool; the dispatch pipeline never changes when a tool
//! is added.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use tc_gate::{ConfirmationTargets, RegistryError, validate_gated_tool};

use crate::error::ToolError;
use crate::schema::{ArgsValidator, SchemaError, input_schema, output_schema};
use crate::tool::{Annotations, AnyArgs, Erased, Tool, Typed};

/// A tool as registered: what `tools/list` shows, the gate declarations, and its steps.
pub struct ToolDef {
    pub name: String,
    pub description: String,
    /// JSON Schema of the input (flat, every default stated), from the typed arguments.
    pub input_schema: Value,
    /// JSON Schema of `structuredContent` on success, from the typed result.
    pub output_schema: Value,
    pub annotations: Annotations,
    /// The scopes a caller needs, every one of them.
    pub scopes: &'static [&'static str],
    pub changes_notes: bool,
    pub gated: bool,
    pub confirmation: Option<ConfirmationTargets>,
    pub checks_confirmation_in_handler: bool,
    validator: ArgsValidator,
    pub(crate) tool: Arc<dyn Erased>,
}

impl fmt::Debug for ToolDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolDef")
            .field("name", &self.name)
            .field("scopes", &self.scopes)
            .field("gated", &self.gated)
            .field("confirmation", &self.confirmation)
            .finish_non_exhaustive()
    }
}

impl ToolDef {
    /// The definition of `tool`, with its schemas generated from its typed arguments and
    /// result.
    pub fn of<T: Tool>(tool: T) -> Result<Self, RegistryBuildError> {
        let spec = tool.spec();
        let input = input_schema::<T::Args>(spec.gating.gated);
        let validator =
            ArgsValidator::compile(&input).map_err(|error| RegistryBuildError::Schema {
                tool: spec.name.to_owned(),
                error,
            })?;
        Ok(ToolDef {
            name: spec.name.to_owned(),
            description: spec.description.to_owned(),
            input_schema: input,
            output_schema: output_schema::<T::Output>(),
            annotations: spec.annotations,
            scopes: spec.scopes,
            changes_notes: spec.changes_notes,
            gated: spec.gating.gated,
            confirmation: spec.gating.confirmation,
            checks_confirmation_in_handler: spec.gating.checks_confirmation_in_handler,
            validator,
            tool: Arc::new(Typed(tool)),
        })
    }

    // r[impl dispatch.schema]
    /// Validates raw arguments against the advertised schema and returns the typed
    /// arguments, the `vault` named (if any), the `elicit_token` carried (if any), and the
    /// canonical arguments (defaults filled, without `vault` and `elicit_token`).
    pub fn parse_args(&self, raw: &Value) -> Result<ParsedArgs, ToolError> {
        let mut map = self.validator.validate(&self.name, raw)?;
        let vault = take_string(&mut map, "vault");
        let elicit_token = take_string(&mut map, tc_gate::args_hash::ELICIT_TOKEN_KEY);
        let (typed, canonical) = self.tool.parse(map)?;
        Ok(ParsedArgs {
            typed,
            canonical,
            vault,
            elicit_token,
        })
    }

    /// The `tools/list` entry: name, description, inputSchema, outputSchema, annotations.
    pub fn list_entry(&self) -> Value {
        json!({
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
            "annotations": self.annotations.to_json(),
        })
    }
}

fn take_string(map: &mut Map<String, Value>, key: &str) -> Option<String> {
    match map.remove(key) {
        Some(Value::String(text)) => Some(text),
        _ => None,
    }
}

/// Arguments as the pipeline holds them after validation.
#[derive(Clone)]
pub struct ParsedArgs {
    pub(crate) typed: AnyArgs,
    /// The default-filled arguments without `vault` and `elicit_token`.
    pub canonical: Value,
    pub vault: Option<String>,
    pub elicit_token: Option<String>,
}

impl fmt::Debug for ParsedArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParsedArgs")
            .field("canonical", &self.canonical)
            .field("vault", &self.vault)
            .field(
                "elicit_token",
                &self.elicit_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// Why a registry could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryBuildError {
    #[error(transparent)]
    MissingConfirmationTargets(#[from] RegistryError),
    /// A subsystem could not set itself up (its tables, its configuration, its engine).
    #[error("{subsystem}: {message}")]
    Subsystem {
        subsystem: &'static str,
        message: String,
    },
    #[error("tool `{tool}` is registered twice")]
    Duplicate { tool: String },
    #[error("tool `{tool}` has an input schema that does not compile: {error}")]
    Schema { tool: String, error: SchemaError },
}

/// What a subsystem's `register` is given beside the registry: where its tables live
/// (`<cache_dir>/cache.db`, opened with [`crate::db::SubsystemDb`]; secrets and caches never
/// go inside a vault) and the server's clock.
#[derive(Clone)]
pub struct SubsystemSetup<'a> {
    pub cache_dir: &'a std::path::Path,
    pub clock: Arc<dyn tc_gate::clock::Clock>,
}

impl fmt::Debug for SubsystemSetup<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubsystemSetup")
            .field("cache_dir", &self.cache_dir)
            .finish_non_exhaustive()
    }
}

impl RegistryBuildError {
    /// A subsystem's set-up failure, with the sentence that says what went wrong.
    pub fn subsystem(subsystem: &'static str, error: impl fmt::Display) -> Self {
        RegistryBuildError::Subsystem {
            subsystem,
            message: error.to_string(),
        }
    }
}

/// The tools a server offers, by name, in registration order.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    tools: BTreeMap<String, Arc<ToolDef>>,
    order: Vec<String>,
}

impl Registry {
    pub fn new() -> Self {
        Registry::default()
    }

    /// Adds `tool` (see [`Registry::register`]).
    pub fn add<T: Tool>(&mut self, tool: T) -> Result<(), RegistryBuildError> {
        self.register(ToolDef::of(tool)?)
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
