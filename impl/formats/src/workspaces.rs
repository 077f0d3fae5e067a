//! The workspace tools: `list_workspaces`, `save_workspace` (spec/formats.md
//! `formats.workspaces.*`; spec/drift.md `drift.bind.save-workspace`; spec/tools.md
//! `tools.compose.save-workspace`).
//!
//! Workspaces are the core Workspaces plugin's `.obsidian/workspaces.json`: an object
//! `workspaces` of layouts by name, and the `active` one's name. Saving under a new name is
//! free; replacing a saved layout asks, bound to the file's content.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tc_gate::ConfirmationTargets;
use tc_tools::{
    Annotations, ErrorCode, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx,
    ToolError, ToolSpec,
};

use crate::settings::{self, Json};

/// The file, relative to the vault root.
pub const FILE: &str = ".obsidian/workspaces.json";

// --------------------------------------------------------------- list_workspaces

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListWorkspacesArgs {}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WorkspaceEntry {
    pub name: String,
    pub active: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ListWorkspacesOutput {
    pub workspaces: Vec<WorkspaceEntry>,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ListWorkspaces;

// r[impl formats.workspaces.list]
impl Tool for ListWorkspaces {
    type Args = ListWorkspacesArgs;
    type Output = ListWorkspacesOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "list_workspaces",
            description: "List the saved workspace layouts by name, marking the active one.",
            annotations: Annotations::READS,
            scopes: &["read:workspaces"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(
        &self,
        _cx: &ToolCx<'_>,
        _args: &ListWorkspacesArgs,
    ) -> Result<Precheck, ToolError> {
        Ok(Precheck::free())
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        _args: &ListWorkspacesArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<ListWorkspacesOutput, HandlerFailure> {
        let file = settings::read(cx, FILE)?;
        let active = file.json.get("active").and_then(Json::as_str);
        let workspaces = match file.json.get("workspaces") {
            Some(Json::Object(entries)) => entries
                .iter()
                .map(|(name, _)| WorkspaceEntry {
                    name: name.clone(),
                    active: Some(name.as_str()) == active,
                })
                .collect(),
            _ => Vec::new(),
        };
        Ok(ListWorkspacesOutput { workspaces })
    }
}

// ---------------------------------------------------------------- save_workspace

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveWorkspaceArgs {
    #[schemars(length(min = 1, max = 256))]
    pub name: String,
    /// The layout as Obsidian saves one: main, left, right, active, …
    pub layout: Map<String, Value>,
    /// Replace a layout saved under `name`.
    #[serde(default)]
    pub overwrite: bool,
}

/// The file after the save, and whether it replaces a layout.
#[derive(Debug, Default)]
pub struct Saved {
    pub text: String,
    pub replaces: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WorkspaceSaved {
    pub name: String,
    pub replaced: bool,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct SaveWorkspace;

fn plan_save(
    cx: &ToolCx<'_>,
    args: &SaveWorkspaceArgs,
) -> Result<(Saved, Option<String>), ToolError> {
    let file = settings::read(cx, FILE)?;
    let mut json = file.json.clone();
    if !matches!(json.get("workspaces"), Some(Json::Object(_))) {
        json.set("workspaces", Json::Object(Vec::new()));
    }
    let workspaces = json
        .get_mut("workspaces")
        .ok_or_else(|| ToolError::new(ErrorCode::InternalError, "no workspaces object"))?;
    let replaces = workspaces.get(&args.name).is_some();
    if replaces && !args.overwrite {
        return Err(ToolError::new(
            ErrorCode::NoteExists,
            format!("a workspace named {:?} is saved already", args.name),
        ));
    }
    workspaces.set(
        &args.name,
        Json::from_value(&Value::Object(args.layout.clone())),
    );
    Ok((
        Saved {
            text: file.text_of(&json),
            replaces,
        },
        file.hash,
    ))
}

// r[impl formats.workspaces.save]
impl Tool for SaveWorkspace {
    type Args = SaveWorkspaceArgs;
    type Output = WorkspaceSaved;
    type Plan = Saved;
    /// The hash of the workspaces file the approval covers.
    type Seen = Option<String>;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "save_workspace",
            description: "Save a workspace layout under a name. Replacing a saved one (overwrite) asks the human.",
            annotations: Annotations::writes(true, true),
            scopes: &["write:workspaces"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::Custom),
        }
    }

    fn check(&self, args: &SaveWorkspaceArgs) -> Result<(), ToolError> {
        if args.name.trim().is_empty() {
            return Err(ToolError::validation("/name", "is empty"));
        }
        Ok(())
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &SaveWorkspaceArgs,
    ) -> Result<Precheck<Saved>, ToolError> {
        let (saved, _) = plan_save(cx, args)?;
        settings::preflight(cx, FILE)?;
        Ok(Precheck {
            needs_confirmation: saved.replaces,
            acl: Vec::new(),
            plan: Arc::new(saved),
        })
    }

    // r[impl drift.bind.save-workspace]
    fn state(
        &self,
        cx: &ToolCx<'_>,
        _args: &SaveWorkspaceArgs,
        _precheck: &Precheck<Saved>,
    ) -> Result<TargetState<Option<String>>, ToolError> {
        settings::bound_state(cx, "save_workspace", FILE)
    }

    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &SaveWorkspaceArgs,
        _precheck: &Precheck<Saved>,
        _state: &TargetState<Option<String>>,
    ) -> Summary {
        Summary::new(format!(
            "replace the saved workspace {:?} in {FILE} with a new layout",
            args.name
        ))
        .target(FILE)
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &SaveWorkspaceArgs,
        precheck: &Precheck<Saved>,
        state: &TargetState<Option<String>>,
    ) -> Result<WorkspaceSaved, HandlerFailure> {
        let (saved, hash) = plan_save(cx, args)?;
        // A free save applies to the file as it is now, unless a layout of that name appeared
        // meanwhile: replacing it is asked for, never slipped in.
        if saved.replaces && !precheck.needs_confirmation {
            return Err(ToolError::new(
                ErrorCode::NoteExists,
                format!("a workspace named {:?} was saved meanwhile", args.name),
            )
            .into());
        }
        if precheck.needs_confirmation && hash != *state.seen {
            return Err(tc_vault::VaultError::ConcurrentModification {
                path: FILE.into(),
                expected: state.seen.as_deref().unwrap_or("absent").to_owned(),
                actual: hash.unwrap_or_else(|| "absent".into()),
            }
            .into());
        }
        settings::write(cx, FILE, &saved.text, hash.as_deref())?;
        Ok(WorkspaceSaved {
            name: args.name.clone(),
            replaced: saved.replaces,
        })
    }
}
