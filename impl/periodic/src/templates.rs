//! `list_templates` and `create_from_template` (spec/periodic.md `## Templates`): the core
//! Templates plugin's templates, listed from the index's file list and expanded into new
//! notes as the plugin expands them. Templater's `<% %>` is copied as text (running it is
//! `execute_template`'s, through Obsidian).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_index::meta::{self, files};
use tc_tools::note_write::{exists_error, note};
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, Registry, RegistryBuildError, TargetState, Tool,
    ToolCx, ToolError, ToolSpec,
};
use tc_vault::acl::AclOp;
use tc_vault::conventions::{WriteIntent, WriteKind};
use tc_vault::path::{FolderPath, VaultPath};
use tc_vault::vault::Precondition;

use crate::expand::{Fill, expand};
use crate::journal::{local_now, template_not_found};
use crate::settings::{TEMPLATES, TemplateSettings, template_settings};

/// The most templates a listing names (a template folder holds a handful).
const MAX_LISTED: usize = 1_000;

/// Adds the template tools to `registry`, in the order `tools/list` shows them.
pub fn register(registry: &mut Registry) -> Result<(), RegistryBuildError> {
    registry.add(ListTemplates)?;
    registry.add(CreateFromTemplate)?;
    Ok(())
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTemplatesArgs {}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ListTemplatesOutput {
    /// From .obsidian/templates.json; null when none is set.
    pub folder: Option<String>,
    pub templates: Vec<String>,
    pub truncated: bool,
}

#[derive(Debug)]
pub struct ListTemplates;

impl Tool for ListTemplates {
    type Args = ListTemplatesArgs;
    type Output = ListTemplatesOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "list_templates",
            description: "List the core Templates plugin's template notes (paths for create_from_template).",
            annotations: Annotations::READS,
            scopes: &["read:notes"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, _cx: &ToolCx<'_>, _args: &ListTemplatesArgs) -> Result<Precheck, ToolError> {
        Ok(Precheck::free())
    }

    // r[impl templates.list]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        _args: &ListTemplatesArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<ListTemplatesOutput, HandlerFailure> {
        let settings = template_settings(cx.vault().root().path())?;
        let Some(folder) = settings.folder.as_deref() else {
            return Ok(ListTemplatesOutput {
                folder: None,
                templates: Vec::new(),
                truncated: false,
            });
        };
        let mut templates = Vec::new();
        let mut truncated = false;
        if let Ok(parsed) = FolderPath::parse(folder) {
            let index = meta::fresh(cx)?;
            for path in files::notes_under(index, &parsed)? {
                if !VaultPath::parse(&path).is_ok_and(|p| cx.may_read(&p)) {
                    continue;
                }
                if templates.len() == MAX_LISTED {
                    truncated = true;
                    break;
                }
                templates.push(path);
            }
        }
        Ok(ListTemplatesOutput {
            folder: Some(folder.to_owned()),
            templates,
            truncated,
        })
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateFromTemplateArgs {
    /// A path list_templates returns, or its name in the templates folder.
    #[schemars(length(min = 1, max = 4096))]
    pub template: String,
    /// The new note's path.
    #[schemars(length(min = 1, max = 4096))]
    pub path: String,
    /// Fills {{name}}.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variables: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CreateFromTemplateOutput {
    pub path: String,
    pub template: String,
    pub content_hash: String,
    pub bytes: usize,
}

/// What the precheck found: the template's note, the new note's path and the settings.
#[derive(Debug)]
pub struct TemplatePlan {
    template: VaultPath,
    path: VaultPath,
    settings: TemplateSettings,
}

#[derive(Debug)]
pub struct CreateFromTemplate;

// r[impl templates.not-found]
// r[impl templates.name]
/// The template `raw` names: a note under the templates folder that is there, named by its
/// vault path or by its path under the folder, with or without `.md`.
fn template_of(
    cx: &ToolCx<'_>,
    raw: &str,
    settings: &TemplateSettings,
) -> Result<VaultPath, ToolError> {
    let Some(folder) = settings.folder.as_deref() else {
        return Err(template_not_found(raw).detail(
            "reason",
            serde_json::json!(format!("no template folder is set in {TEMPLATES}")),
        ));
    };
    let Ok(folder_path) = FolderPath::parse(folder) else {
        return Err(template_not_found(raw));
    };
    let named = raw.trim_start_matches('/');
    let mut candidates = vec![named.to_owned()];
    if !folder_path.as_str().is_empty() {
        candidates.push(format!("{}/{named}", folder_path.as_str()));
    }
    for candidate in candidates {
        let with_md = if candidate.to_ascii_lowercase().ends_with(".md") {
            candidate
        } else {
            format!("{candidate}.md")
        };
        let Ok(path) = VaultPath::parse_note(&with_md) else {
            continue;
        };
        if path.is_within(&folder_path) && cx.vault().exists(&path)? {
            return Ok(path);
        }
    }
    Err(template_not_found(raw))
}

impl Tool for CreateFromTemplate {
    type Args = CreateFromTemplateArgs;
    type Output = CreateFromTemplateOutput;
    type Plan = TemplatePlan;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "create_from_template",
            description: "Create a new note from a template, filling {{title}}, {{date}}, {{time}}, {{date:FORMAT}} and variables. New paths only. Never asks.",
            annotations: Annotations::writes(false, true),
            scopes: &["write:notes"],
            changes_notes: true,
            gating: Gating::NEVER,
        }
    }

    // r[impl templates.create]
    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &CreateFromTemplateArgs,
    ) -> Result<Precheck<TemplatePlan>, ToolError> {
        let path = note(&args.path)?;
        let settings = template_settings(cx.vault().root().path())?;
        let template = template_of(cx, &args.template, &settings)?;
        if cx.vault().exists(&path)? {
            return Err(exists_error(&path));
        }
        Ok(Precheck {
            acl: vec![
                (AclOp::Read, template.clone()),
                (AclOp::Write, path.clone()),
            ],
            ..Precheck::with_plan(TemplatePlan {
                template,
                path,
                settings,
            })
        })
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &CreateFromTemplateArgs,
        precheck: &Precheck<TemplatePlan>,
        _state: &TargetState,
    ) -> Result<CreateFromTemplateOutput, HandlerFailure> {
        let plan = &precheck.plan;
        let source = cx
            .vault()
            .read_if_exists(&plan.template)?
            .ok_or_else(|| template_not_found(plan.template.as_str()))?;
        let empty = BTreeMap::new();
        let text = expand(
            source.utf8(&plan.template)?,
            &Fill {
                title: plan.path.note_name(),
                at: local_now(cx),
                date_format: &plan.settings.date_format,
                time_format: &plan.settings.time_format,
                variables: args.variables.as_ref().unwrap_or(&empty),
            },
        )?;
        cx.judge(&WriteIntent::new(
            plan.path.clone(),
            WriteKind::Create,
            text.as_bytes(),
            tc_tools::note_write::prior_of(None),
        ))
        .map_err(HandlerFailure::ConventionBlockedBeforeWrite)?;
        let outcome = cx
            .vault()
            .write(&plan.path, text.as_bytes(), &Precondition::MustNotExist)?;
        Ok(CreateFromTemplateOutput {
            path: plan.path.as_str().to_owned(),
            template: plan.template.as_str().to_owned(),
            content_hash: outcome.hash,
            bytes: text.len(),
        })
    }
}
