//! `delete_attachment` (spec/attachments.md `attachments.delete`,
//! `attachments.delete.summary`): always confirmed, bound to the file's bytes; the file goes
//! to a restorable snapshot (`restore_note` takes any path) unless `permanent`; the summary
//! names the notes that still embed it.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_gate::ConfirmationTargets;
use tc_tools::note_write::read_as_observed;
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx, ToolError,
    ToolSpec,
};
use tc_vault::VaultPath;
use tc_vault::acl::AclOp;
use tc_vault::vault::Precondition;

use crate::common::{LISTED_PATHS, attachment, link_plan, not_found, require_file};

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteAttachmentArgs {
    #[schemars(length(min = 1, max = 4096))]
    pub path: String,
    /// No snapshot: gone for good.
    #[serde(default)]
    pub permanent: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DeleteAttachmentOutput {
    pub path: String,
    pub permanent: bool,
    /// For restore_note; null when permanent.
    pub snapshot_id: Option<String>,
    /// Notes that still embed or link to it (at most 100).
    pub still_linked_by: Vec<String>,
}

#[derive(Debug)]
pub struct DeleteAttachment;

/// The notes the caller may read that embed or link to `path`.
fn linking(cx: &ToolCx<'_>, path: &VaultPath) -> Result<Vec<VaultPath>, ToolError> {
    Ok(link_plan(cx, path, None)?
        .notes
        .into_iter()
        .map(|n| n.path)
        .filter(|p| p.is_note())
        .collect())
}

// r[impl attachments.delete]
// r[impl drift.bind.delete-attachment]
impl Tool for DeleteAttachment {
    type Args = DeleteAttachmentArgs;
    type Output = DeleteAttachmentOutput;
    type Plan = Vec<VaultPath>;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "delete_attachment",
            description: "Delete an image, PDF or other attachment; unless permanent a copy is kept. Always needs the human's confirmation.",
            annotations: Annotations::writes(true, false),
            scopes: &["delete:attachments"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::PathAcl),
        }
    }

    fn check(&self, args: &DeleteAttachmentArgs) -> Result<(), ToolError> {
        attachment(&args.path, "/path").map(|_| ())
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &DeleteAttachmentArgs,
    ) -> Result<Precheck<Self::Plan>, ToolError> {
        let path = attachment(&args.path, "/path")?;
        require_file(cx, &path)?;
        let linked = linking(cx, &path)?;
        Ok(Precheck {
            needs_confirmation: true,
            acl: vec![(AclOp::Delete, path)],
            plan: Arc::new(linked),
        })
    }

    // r[impl attachments.delete.summary]
    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &DeleteAttachmentArgs,
        precheck: &Precheck<Self::Plan>,
        _state: &TargetState,
    ) -> Summary {
        let how = if args.permanent {
            "permanently (no snapshot)"
        } else {
            "(kept as a restorable snapshot)"
        };
        let mut summary =
            Summary::new(format!("delete the attachment {} {how}", args.path)).target(&args.path);
        let linked = &precheck.plan;
        if linked.is_empty() {
            summary = summary.detail("no note embeds or links to it");
        } else {
            summary = summary.detail(format!(
                "{} note(s) still embed or link to it and would show it missing:",
                linked.len()
            ));
            let named = linked.iter().map(|p| format!("  {}", p.as_str())).collect();
            summary = summary.details_named(named, |n| format!("  … and {n} more note(s)"));
        }
        summary
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &DeleteAttachmentArgs,
        precheck: &Precheck<Self::Plan>,
        state: &TargetState,
    ) -> Result<DeleteAttachmentOutput, HandlerFailure> {
        let path = attachment(&args.path, "/path")?;
        let current = read_as_observed(cx, state, &path)?.ok_or_else(|| not_found(&path))?;
        let expected = Precondition::HashIs(current.hash);
        let snapshot_id = if args.permanent {
            cx.vault().delete_permanently(&path, &expected)?;
            None
        } else {
            let info = cx.vault().snapshot_and_delete(&path, &expected)?;
            Some(info.id.as_str().to_owned())
        };
        if let Some(index) = cx.binding.index()
            && args.permanent
        {
            index.purge(&path)?;
        }
        Ok(DeleteAttachmentOutput {
            path: path.as_str().to_owned(),
            permanent: args.permanent,
            snapshot_id,
            still_linked_by: precheck
                .plan
                .iter()
                .take(LISTED_PATHS)
                .map(|p| p.as_str().to_owned())
                .collect(),
        })
    }
}
