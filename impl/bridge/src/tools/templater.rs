//! `execute_template` (spec/bridge.md `bridge.templater.*`; spec/drift.md
//! `drift.bind.execute-template`): runs a Templater template into a note through the
//! companion's route.
//!
//! Always gated, bound to the content of the template file and of the target note (a
//! missing target being a state of its own), both declared for the folder ACL: an edit of
//! either between the request and the approval is drift. What the template's JavaScript does
//! inside Obsidian beyond writing the target is the residual, as for `execute_command`.
//! Everything judged without sending (paths, the ACL, the template on disk, a configured
//! bridge and key) is judged before the gate.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_gate::ConfirmationTargets;
use tc_tools::note_write::note;
use tc_tools::{
    ErrorCode, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx, ToolError,
    ToolSpec,
};
use tc_vault::acl::AclOp;

use super::{ACTS_IN_OBSIDIAN, Bridges, Checked, checked};

/// What the template's code may do beyond the target, which no binding can cover.
pub const TEMPLATER_RESIDUAL: &str = "the approval binds the template's and the target's \
content; what the template's JavaScript does inside Obsidian beyond writing the target (other \
notes, commands, the network) is not observed or undone by the server";

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecuteTemplateArgs {
    /// The template file's vault path.
    #[schemars(length(min = 1, max = 4096))]
    pub template: String,
    /// The note to write (created or overwritten).
    #[schemars(length(min = 1, max = 4096))]
    pub target_path: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ExecuteTemplateOutput {
    pub vault: String,
    pub template: String,
    pub target_path: String,
    /// The target was a new note.
    pub created: bool,
}

/// What the precheck hands on: the bridge and key, and the template's text for the summary.
#[derive(Debug)]
pub struct TemplatePlan {
    checked: Checked,
    template_text: String,
    target_exists: bool,
}

/// `execute_template`: Templater through the obsidian-tc companion.
#[derive(Debug, Clone)]
pub struct ExecuteTemplate {
    pub bridges: Bridges,
}

impl Tool for ExecuteTemplate {
    type Args = ExecuteTemplateArgs;
    type Output = ExecuteTemplateOutput;
    type Plan = TemplatePlan;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "execute_template",
            description: "Run a Templater template into a note (created or overwritten) in the running Obsidian, via the companion. Always asks the human.",
            annotations: ACTS_IN_OBSIDIAN,
            scopes: &["write:templater"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::PathAcl),
        }
    }

    // r[impl bridge.templater.before-gate]
    // r[impl bridge.templater.confirm]
    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &ExecuteTemplateArgs,
    ) -> Result<Precheck<TemplatePlan>, ToolError> {
        let template = note(&args.template)?;
        let target = note(&args.target_path)?;
        cx.require_read(&template)?;
        // Judged here as well as by the pipeline after the gate, so a call that could never
        // write its target raises no confirmation.
        cx.binding
            .acl
            .check_at(
                cx.binding.vault.root(),
                AclOp::Write,
                &target,
                &cx.caller.scopes,
            )
            .map_err(|denied| ToolError::acl(&denied))?;
        let Some(content) = cx.vault().read_if_exists(&template)? else {
            return Err(ToolError::new(
                ErrorCode::TemplateNotFound,
                format!(
                    "there is no template {}; nothing was sent and no confirmation was asked for",
                    template.as_str()
                ),
            )
            .with_details(serde_json::json!({"template": template.as_str()})));
        };
        let target_exists = cx.vault().read_if_exists(&target)?.is_some();
        let checked = checked(&self.bridges, cx, "execute_template")?;
        Ok(Precheck {
            needs_confirmation: true,
            acl: vec![(AclOp::Read, template), (AclOp::Write, target)],
            plan: Arc::new(TemplatePlan {
                checked,
                template_text: content.text().into_owned(),
                target_exists,
            }),
        })
    }

    // r[impl bridge.templater.summary]
    fn summary(
        &self,
        cx: &ToolCx<'_>,
        args: &ExecuteTemplateArgs,
        precheck: &Precheck<TemplatePlan>,
        _: &TargetState,
    ) -> Summary {
        let plan = &precheck.plan;
        let effect = if plan.target_exists {
            "overwrite"
        } else {
            "create"
        };
        let lines: Vec<String> = plan
            .template_text
            .lines()
            .map(|line| format!("| {line}"))
            .collect();
        let total = lines.len();
        Summary::new(format!(
            "run the Templater template {} to {effect} {} in vault {}",
            args.template,
            args.target_path,
            cx.vault().id()
        ))
        .target(&args.target_path)
        .target(&args.template)
        .detail(format!(
            "through the obsidian-tc companion at {}; the template ({total} lines) runs as code:",
            plan.checked.bridge.url()
        ))
        // The first lines (tc_tools::summary::MAX_NAMED), then how many are left.
        .details_named(lines, |n| format!("[… {n} more lines]"))
        .detail(format!("note: {TEMPLATER_RESIDUAL}"))
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &ExecuteTemplateArgs,
        precheck: &Precheck<TemplatePlan>,
        _: &TargetState,
    ) -> Result<ExecuteTemplateOutput, HandlerFailure> {
        let checked = &precheck.plan.checked;
        let template = note(&args.template)?;
        let target = note(&args.target_path)?;
        let done =
            checked
                .bridge
                .execute_template(&checked.key, template.as_str(), target.as_str())?;
        Ok(ExecuteTemplateOutput {
            vault: cx.vault().id().to_owned(),
            template: template.as_str().to_owned(),
            target_path: target.as_str().to_owned(),
            created: done.created,
        })
    }
}
