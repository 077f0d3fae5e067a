//! `move_attachment` (spec/attachments.md `attachments.move`, `attachments.move.confirm`,
//! `attachments.move.embeds`): a rename in its folder is free, a move to another folder or
//! over an existing file is confirmed; every embed and link to it in notes, and canvases'
//! references, follow it through tc-vault's link rewrite, journaled with the move. The
//! binding covers the file, the destination and every note the rewrite touches.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_gate::ConfirmationTargets;
use tc_tools::note_write::{exists_error, guard_for, read_as_observed};
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx, ToolError,
    ToolSpec, path_state,
};
use tc_vault::VaultPath;
use tc_vault::acl::AclOp;
use tc_vault::conventions::{ContentFacts, ConventionBlocked, Prior, WriteIntent, WriteKind};
use tc_vault::links::validate_link_target;
use tc_vault::rewrite::RewritePlan;
use tc_vault::vault::{Precondition, Rewrite};

use crate::common::{LISTED_PATHS, attachment, judge, link_plan, not_found};

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MoveAttachmentArgs {
    #[schemars(length(min = 1, max = 4096))]
    pub from: String,
    #[schemars(length(min = 1, max = 4096))]
    pub to: String,
    #[serde(default)]
    pub overwrite: bool,
    #[serde(default = "yes")]
    pub update_embeds: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MoveAttachmentOutput {
    pub from: String,
    pub to: String,
    pub overwrote: bool,
    pub notes_updated: Vec<String>,
    pub notes_count: usize,
    pub links_updated: usize,
    /// Changed since the plan; links left.
    pub skipped: Vec<String>,
}

#[derive(Debug)]
pub struct MoveAttachment;

fn paths(args: &MoveAttachmentArgs) -> Result<(VaultPath, VaultPath), ToolError> {
    let from = attachment(&args.from, "/from")?;
    let to = attachment(&args.to, "/to")?;
    if from == to {
        return Err(ToolError::validation("/to", "is the same file as from"));
    }
    Ok((from, to))
}

/// Judges every note the rewrite would change.
fn judge_notes(cx: &ToolCx<'_>, plan: &RewritePlan) -> Result<(), ConventionBlocked> {
    for note in &plan.notes {
        let prior = cx
            .vault()
            .read_if_exists(&note.path)
            .ok()
            .flatten()
            .map_or(Prior::Unknown, |c| Prior::Known(ContentFacts::of(&c.bytes)));
        cx.judge(&WriteIntent::new(
            note.path.clone(),
            WriteKind::Overwrite,
            note.new_content.as_bytes(),
            prior,
        ))?;
    }
    Ok(())
}

// r[impl attachments.move]
// r[impl attachments.move.confirm]
// r[impl attachments.move.embeds]
impl Tool for MoveAttachment {
    type Args = MoveAttachmentArgs;
    type Output = MoveAttachmentOutput;
    type Plan = Option<RewritePlan>;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "move_attachment",
            description: "Move or rename an attachment, rewriting embeds and links to it. Another folder, or overwrite, needs the human's confirmation.",
            annotations: Annotations::writes(true, false),
            scopes: &["write:attachments", "delete:attachments"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::PathAcl),
        }
    }

    fn check(&self, args: &MoveAttachmentArgs) -> Result<(), ToolError> {
        paths(args).map(|_| ())
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &MoveAttachmentArgs,
    ) -> Result<Precheck<Self::Plan>, ToolError> {
        let (from, to) = paths(args)?;
        // A file moved to where the caller may read it is a file the caller reads.
        let reveals = from.parent() != to.parent() || cx.may_read(&to);
        if reveals {
            cx.require_read(&from)?;
        }
        let source = cx
            .vault()
            .read_if_exists(&from)?
            .ok_or_else(|| not_found(&from))?;
        let target_exists = cx.vault().exists(&to)?;
        if target_exists && !args.overwrite {
            return Err(exists_error(&to));
        }
        judge(
            cx,
            &to,
            WriteKind::Move { from: from.clone() },
            &source.bytes,
        )?;
        let plan = if args.update_embeds {
            validate_link_target(to.as_str()).map_err(|why| {
                ToolError::validation(
                    "/to",
                    format!("{why}, so embeds could not name it (pass update_embeds: false to move it anyway)"),
                )
            })?;
            let plan = link_plan(cx, &from, Some(&to))?;
            judge_notes(cx, &plan).map_err(|b| ToolError::convention(&b))?;
            Some(plan)
        } else {
            None
        };
        let needs_confirmation = from.parent() != to.parent() || target_exists;
        let mut acl = vec![
            (AclOp::Write, from.clone()),
            (AclOp::Delete, from.clone()),
            (AclOp::Write, to),
        ];
        if reveals {
            acl.push((AclOp::Read, from));
        }
        if let Some(plan) = &plan {
            acl.extend(plan.notes.iter().map(|n| (AclOp::Write, n.path.clone())));
        }
        Ok(Precheck {
            needs_confirmation,
            acl,
            plan: Arc::new(plan),
        })
    }

    // r[impl drift.bind.move-attachment]
    /// The declared paths and every note that links to the file now: a note that gained an
    /// embed of it since the precheck joins the binding and is drift.
    fn state(
        &self,
        cx: &ToolCx<'_>,
        args: &MoveAttachmentArgs,
        precheck: &Precheck<Self::Plan>,
    ) -> Result<TargetState, ToolError> {
        let mut paths_now = precheck.declared_paths();
        if args.update_embeds {
            let (from, to) = paths(args)?;
            for touched in link_plan(cx, &from, Some(&to))?.notes {
                if !paths_now.contains(&touched.path) {
                    paths_now.push(touched.path);
                }
            }
        }
        path_state(cx.vault(), &paths_now)
    }

    fn state_after_precheck(
        &self,
        cx: &ToolCx<'_>,
        _args: &MoveAttachmentArgs,
        precheck: &Precheck<Self::Plan>,
    ) -> Result<TargetState, ToolError> {
        path_state(cx.vault(), &precheck.declared_paths())
    }

    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &MoveAttachmentArgs,
        precheck: &Precheck<Self::Plan>,
        state: &TargetState,
    ) -> Summary {
        let overwrites = attachment(&args.to, "/to")
            .ok()
            .and_then(|to| state.observed_hash(&to))
            .is_some_and(|hash| hash.is_some());
        let mut summary = Summary::new(format!("move {} -> {}", args.from, args.to))
            .target(&args.from)
            .target(&args.to);
        if overwrites {
            summary = summary.detail(format!(
                "replaces the file already at {} (kept as a snapshot)",
                args.to
            ));
        }
        match (*precheck.plan).as_ref() {
            Some(plan) if !plan.notes.is_empty() => {
                summary = summary.detail(format!(
                    "rewrites {} embed(s)/link(s) in {} note(s):",
                    plan.links(),
                    plan.notes.len()
                ));
                let named = plan
                    .notes
                    .iter()
                    .map(|t| format!("  {} ({} link(s))", t.path.as_str(), t.links))
                    .collect();
                summary = summary.details_named(named, |n| format!("  … and {n} more note(s)"));
            }
            Some(_) => summary = summary.detail("no note embeds or links to it"),
            None => summary = summary.detail("embeds of it are left as they are"),
        }
        summary
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &MoveAttachmentArgs,
        precheck: &Precheck<Self::Plan>,
        state: &TargetState,
    ) -> Result<MoveAttachmentOutput, HandlerFailure> {
        let (from, to) = paths(args)?;
        let source = read_as_observed(cx, state, &from)?.ok_or_else(|| not_found(&from))?;
        let target = read_as_observed(cx, state, &to)?;
        if target.is_some() && !args.overwrite {
            return Err(exists_error(&to).into());
        }
        let plan = (*precheck.plan).as_ref();
        if let Some(plan) = plan {
            judge_notes(cx, plan).map_err(HandlerFailure::ConventionBlockedBeforeWrite)?;
        }
        let rewrites: Vec<Rewrite> = plan
            .map(|plan| {
                plan.notes
                    .iter()
                    .map(|t| Rewrite {
                        path: t.path.clone(),
                        expected_hash: t.hash.clone(),
                        content: t.new_content.as_bytes().to_vec(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let moved = cx.vault().move_rewriting(
            &from,
            &to,
            &Precondition::HashIs(source.hash),
            &guard_for(target.as_ref()),
            true,
            &rewrites,
        )?;
        let mut out = MoveAttachmentOutput {
            from: from.as_str().to_owned(),
            to: to.as_str().to_owned(),
            overwrote: target.is_some(),
            notes_updated: Vec::new(),
            notes_count: 0,
            links_updated: 0,
            skipped: Vec::new(),
        };
        if let Some(plan) = plan {
            for (touched, outcome) in plan.notes.iter().zip(&moved.rewrites) {
                if outcome.is_ok() {
                    if out.notes_updated.len() < LISTED_PATHS {
                        out.notes_updated.push(touched.path.as_str().to_owned());
                    }
                    out.notes_count += 1;
                    out.links_updated += touched.links;
                } else if out.skipped.len() < LISTED_PATHS {
                    out.skipped.push(touched.path.as_str().to_owned());
                }
            }
        }
        Ok(out)
    }
}
