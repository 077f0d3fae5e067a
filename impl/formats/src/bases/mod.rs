//! The base tools: `read_base`, `create_base`, `update_base` (spec/formats.md
//! `formats.bases.*`; spec/drift.md `drift.bind.create-base`, `drift.bind.update-base`;
//! spec/tools.md `tools.compose.create-base`, `tools.compose.update-base`).
//!
//! A base is an Obsidian `.base` YAML file, read as JSON and written on the server host.
//! Creating one at a free path is free; replacing one asks, bound to its bytes. A patch that
//! changes the top-level `filters` (which notes the base shows) asks, bound to the base's
//! content; any other patch is free, and applies to the base as it is when the call runs
//! unless that would make it change the filters. Every replaced or patched base is kept as a
//! version first.

pub mod doc;

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tc_gate::ConfirmationTargets;
use tc_tools::note_write::{exists_error, guard_for, not_found, read_as_observed};
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx, ToolError,
    ToolSpec,
};
use tc_vault::acl::AclOp;
use tc_vault::conventions::{Prior, WriteIntent, WriteKind};
use tc_vault::path::VaultPath;
use tc_vault::vault::NoteContent;

// r[impl formats.bases.path]
/// A base path argument: a vault path ending in `.base`.
fn base_path(raw: &str) -> Result<VaultPath, ToolError> {
    let path = VaultPath::parse(raw).map_err(|e| ToolError::from(&e))?;
    if !path.as_str().ends_with(".base") {
        return Err(ToolError::validation("/path", "is not a .base file"));
    }
    Ok(path)
}

fn invalid(path: &VaultPath, why: String) -> ToolError {
    ToolError::new(
        tc_tools::ErrorCode::InvalidInput,
        format!("{}: {why}", path.as_str()),
    )
}

fn read_base_file(cx: &ToolCx<'_>, path: &VaultPath) -> Result<NoteContent, ToolError> {
    cx.vault()
        .read_if_exists(path)?
        .ok_or_else(|| not_found(path))
}

fn judge(cx: &ToolCx<'_>, path: &VaultPath, exists: bool, bytes: &[u8]) -> Result<(), ToolError> {
    let kind = if exists {
        WriteKind::Overwrite
    } else {
        WriteKind::Create
    };
    tc_tools::note_write::preflight(
        cx,
        &WriteIntent::new(path.clone(), kind, bytes, Prior::Unknown),
    )
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct BaseWritten {
    pub path: String,
    pub content_hash: String,
    pub created: bool,
}

// -------------------------------------------------------------------- read_base

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadBaseArgs {
    /// A `.base` file.
    pub path: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ReadBaseOutput {
    pub path: String,
    pub definition: Value,
    pub content_hash: String,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ReadBase;

// r[impl formats.bases.read]
impl Tool for ReadBase {
    type Args = ReadBaseArgs;
    type Output = ReadBaseOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_base",
            description: "Read an Obsidian base (.base) as JSON: filters, formulas, properties, summaries, views and any other key.",
            annotations: Annotations::READS,
            scopes: &["read:bases"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, cx: &ToolCx<'_>, args: &ReadBaseArgs) -> Result<Precheck, ToolError> {
        let path = base_path(&args.path)?;
        cx.require_read(&path)?;
        Ok(Precheck {
            acl: vec![(AclOp::Read, path)],
            ..Precheck::free()
        })
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &ReadBaseArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<ReadBaseOutput, HandlerFailure> {
        let path = base_path(&args.path)?;
        let content = read_base_file(cx, &path)?;
        let definition = doc::parse(content.utf8(&path)?)
            .map_err(|why| invalid(&path, format!("it does not read as a base: {why}")))?;
        Ok(ReadBaseOutput {
            path: path.as_str().to_owned(),
            definition: Value::Object(definition),
            content_hash: content.hash,
        })
    }
}

// ------------------------------------------------------------------ create_base

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateBaseArgs {
    /// A `.base` file.
    pub path: String,
    /// The base: filters, formulas, properties, summaries, views, …
    pub definition: Map<String, Value>,
    /// Replace an existing base.
    #[serde(default)]
    pub overwrite: bool,
}

/// What a create writes, and the text it replaces.
#[derive(Debug, Default)]
pub struct BaseText {
    pub text: String,
    pub replaces: Option<String>,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct CreateBase;

// r[impl formats.bases.create]
impl Tool for CreateBase {
    type Args = CreateBaseArgs;
    type Output = BaseWritten;
    type Plan = BaseText;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "create_base",
            description: "Create an Obsidian base (.base) from a definition. Replacing an existing base asks the human.",
            annotations: Annotations::writes(true, true),
            scopes: &["write:bases"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::PathAcl),
        }
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &CreateBaseArgs,
    ) -> Result<Precheck<BaseText>, ToolError> {
        let path = base_path(&args.path)?;
        doc::check(&args.definition).map_err(|why| ToolError::validation("/definition", why))?;
        let text = doc::write(&args.definition)
            .map_err(|why| ToolError::validation("/definition", why))?;
        let current = cx.vault().read_if_exists(&path)?;
        if current.is_some() && !args.overwrite {
            return Err(exists_error(&path));
        }
        judge(cx, &path, current.is_some(), text.as_bytes())?;
        let replaces = current.map(|c| c.text().into_owned());
        Ok(Precheck {
            // r[impl drift.bind.create-base]
            needs_confirmation: replaces.is_some(),
            acl: vec![(AclOp::Write, path)],
            plan: Arc::new(BaseText { text, replaces }),
        })
    }

    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &CreateBaseArgs,
        precheck: &Precheck<BaseText>,
        _state: &TargetState,
    ) -> Summary {
        let plan = &precheck.plan;
        Summary::new(format!("replace the base {}", args.path))
            .target(&args.path)
            .diff(plan.replaces.as_deref().unwrap_or(""), &plan.text)
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &CreateBaseArgs,
        precheck: &Precheck<BaseText>,
        state: &TargetState,
    ) -> Result<BaseWritten, HandlerFailure> {
        let path = base_path(&args.path)?;
        let current = read_as_observed(cx, state, &path)?;
        if current.is_some() && precheck.plan.replaces.is_none() {
            return Err(exists_error(&path).into());
        }
        let written = cx.vault().write_keeping(
            &path,
            precheck.plan.text.as_bytes(),
            &guard_for(current.as_ref()),
        )?;
        Ok(BaseWritten {
            path: path.as_str().to_owned(),
            content_hash: written.outcome.hash,
            created: written.outcome.created,
        })
    }
}

// ------------------------------------------------------------------ update_base

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateBaseArgs {
    /// A `.base` file.
    pub path: String,
    /// A JSON merge patch (RFC 7396): null removes a key.
    pub patch: Map<String, Value>,
}

/// The patched base, the text it replaces, and its hash when planned.
#[derive(Debug, Default)]
pub struct BasePatch {
    pub old: String,
    pub old_hash: String,
    pub new: String,
    pub changed: Vec<String>,
}

impl BasePatch {
    fn changes_filters(&self) -> bool {
        self.changed.iter().any(|k| k == "filters")
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct BaseUpdated {
    pub path: String,
    pub changed: Vec<String>,
    pub content_hash: String,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct UpdateBase;

// r[impl formats.bases.update]
fn plan_patch(
    path: &VaultPath,
    content: &NoteContent,
    args: &UpdateBaseArgs,
) -> Result<BasePatch, ToolError> {
    let old = content.utf8(path)?.to_owned();
    let patched = doc::patch(&old, &args.patch).map_err(|why| invalid(path, why))?;
    doc::check(&patched.definition).map_err(|why| ToolError::validation("/patch", why))?;
    Ok(BasePatch {
        old,
        old_hash: content.hash.clone(),
        new: patched.text,
        changed: patched.changed,
    })
}

impl Tool for UpdateBase {
    type Args = UpdateBaseArgs;
    type Output = BaseUpdated;
    type Plan = BasePatch;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "update_base",
            description: "Patch an Obsidian base (.base) with a JSON merge patch, untouched keys kept byte for byte. Changing its filters asks the human.",
            annotations: Annotations::writes(true, false),
            scopes: &["write:bases"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::PathAcl),
        }
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &UpdateBaseArgs,
    ) -> Result<Precheck<BasePatch>, ToolError> {
        let path = base_path(&args.path)?;
        cx.require_read(&path)?;
        let content = read_base_file(cx, &path)?;
        let plan = plan_patch(&path, &content, args)?;
        judge(cx, &path, true, plan.new.as_bytes())?;
        Ok(Precheck {
            // r[impl drift.bind.update-base]
            needs_confirmation: plan.changes_filters(),
            acl: vec![(AclOp::Read, path.clone()), (AclOp::Write, path)],
            plan: Arc::new(plan),
        })
    }

    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &UpdateBaseArgs,
        precheck: &Precheck<BasePatch>,
        _state: &TargetState,
    ) -> Summary {
        let plan = &precheck.plan;
        Summary::new(format!(
            "change the filters of the base {} (which notes it shows): {}",
            args.path,
            plan.changed.join(", ")
        ))
        .target(&args.path)
        .diff(&plan.old, &plan.new)
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &UpdateBaseArgs,
        precheck: &Precheck<BasePatch>,
        state: &TargetState,
    ) -> Result<BaseUpdated, HandlerFailure> {
        let path = base_path(&args.path)?;
        let current = read_as_observed(cx, state, &path)?.ok_or_else(|| not_found(&path))?;
        // A free patch applies to the base as it is now, unless the base changed so that the
        // same patch would now change its filters: that one is asked for, never slipped in.
        let replanned = if current.hash == precheck.plan.old_hash {
            None
        } else {
            let plan = plan_patch(&path, &current, args)?;
            if plan.changes_filters() && !precheck.needs_confirmation {
                return Err(tc_vault::VaultError::ConcurrentModification {
                    path: path.as_str().to_owned(),
                    expected: precheck.plan.old_hash.clone(),
                    actual: current.hash.clone(),
                }
                .into());
            }
            Some(plan)
        };
        let plan = replanned.as_ref().unwrap_or(&precheck.plan);
        let hash = if plan.changed.is_empty() {
            current.hash.clone()
        } else {
            cx.vault()
                .write_keeping(&path, plan.new.as_bytes(), &guard_for(Some(&current)))?
                .outcome
                .hash
        };
        Ok(BaseUpdated {
            path: path.as_str().to_owned(),
            changed: plan.changed.clone(),
            content_hash: hash,
        })
    }
}
