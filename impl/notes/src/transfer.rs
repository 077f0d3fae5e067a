//! `move_note` and `copy_note` (spec/tools.md `tools.move-note`, `tools.move-note.confirm`,
//! `tools.copy-note`, `tools.no-overwrite`; spec/drift.md `drift.bind.path-tools`).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_gate::ConfirmationTargets;
use tc_tools::backlinks::move_backlinks;
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx, ToolError,
    ToolSpec, path_state,
};
use tc_vault::acl::AclOp;
use tc_vault::conventions::{ContentFacts, ConventionBlocked, Prior, WriteIntent, WriteKind};
use tc_vault::links::validate_link_target;
use tc_vault::path::VaultPath;
use tc_vault::rewrite::RewritePlan;
use tc_vault::vault::{Precondition, Rewrite};

use crate::common::{exists_error, guard_for, not_found, note, preflight, read_as_observed};

fn yes() -> bool {
    true
}

/// The source and target of a `move_note` or `copy_note`, after the checks both share.
struct Transfer {
    from: VaultPath,
    to: VaultPath,
    target_exists: bool,
}

/// The precheck `move_note` and `copy_note` share: distinct notes, an existing source, no
/// overwrite unless asked, and the write gate judging the source's content as new at `to`.
fn transfer_precheck(
    cx: &ToolCx<'_>,
    from: &str,
    to: &str,
    overwrite: bool,
    kind: impl FnOnce(VaultPath) -> WriteKind,
) -> Result<Transfer, ToolError> {
    let from = note(from)?;
    let to = note(to)?;
    if from == to {
        return Err(ToolError::validation("/to", "is the same note as from"));
    }
    let source = cx
        .vault()
        .read_if_exists(&from)?
        .ok_or_else(|| not_found(&from))?;
    let target_exists = cx.vault().exists(&to)?;
    if target_exists && !overwrite {
        return Err(exists_error(&to));
    }
    preflight(
        cx,
        &WriteIntent::new(to.clone(), kind(from.clone()), &source.bytes, Prior::Absent),
    )?;
    Ok(Transfer {
        from,
        to,
        target_exists,
    })
}

// ---------------------------------------------------------------- move_note

/// `move_note` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MoveNoteArgs {
    /// The note to move.
    #[schemars(length(min = 1, max = 4096))]
    pub from: String,
    /// Its new path, ending in .md.
    #[schemars(length(min = 1, max = 4096))]
    pub to: String,
    /// Replace a note already at `to`.
    #[serde(default)]
    pub overwrite: bool,
    /// Rewrite links to the moved note across the vault.
    #[serde(default = "yes")]
    pub update_backlinks: bool,
}

/// A backlink that could not be updated.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SkippedBacklink {
    pub path: String,
    pub code: String,
}

/// What a move did to the links pointing at the moved note.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BacklinkReport {
    /// The first notes whose links were rewritten (at most 100; `notes_count` has them all).
    pub notes_updated: Vec<String>,
    /// How many notes had their links rewritten.
    pub notes_count: usize,
    pub links_updated: usize,
    /// Notes that changed between the plan and the write and kept their old links.
    pub skipped: Vec<SkippedBacklink>,
}

/// `move_note`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MoveNoteOutput {
    pub from: String,
    pub to: String,
    pub overwrote: bool,
    pub backlinks: BacklinkReport,
}

#[derive(Debug)]
pub struct MoveNote;

/// Judges every note a backlink update would rewrite; the moved note itself is judged at
/// its destination by the move's own intent.
fn judge_backlinks(
    cx: &ToolCx<'_>,
    plan: &RewritePlan,
    to: &VaultPath,
) -> Result<(), ConventionBlocked> {
    for note in plan.notes.iter().filter(|n| &n.path != to) {
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

impl Tool for MoveNote {
    type Args = MoveNoteArgs;
    type Output = MoveNoteOutput;
    type Plan = Option<RewritePlan>;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "move_note",
            description: "Move or rename a note, updating links to it across the vault (update_backlinks). Moving to another folder, or over an existing note, needs the human's confirmation.",
            annotations: Annotations::writes(true, false),
            scopes: &["write:notes", "delete:notes"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::PathAcl),
        }
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &MoveNoteArgs,
    ) -> Result<Precheck<Self::Plan>, ToolError> {
        // r[impl vault.acl.declared.move-reveals]
        // A note moved to where the caller may read it is a note the caller reads: judged
        // before anything of it is looked at, and declared for the check after the gate.
        // Another folder may be a link whose target is readable while its spelling is not,
        // so a move out of the folder needs read access whatever the destination says.
        let (from_path, to_path) = (note(&args.from)?, note(&args.to)?);
        let reveals = from_path.parent() != to_path.parent() || cx.may_read(&to_path);
        if reveals {
            cx.require_read(&from_path).map_err(|refusal| {
                refusal.detail(
                    "because",
                    serde_json::json!("a note moved to another folder, or to a name the caller may read, is a note the caller can read"),
                )
            })?;
        }
        let Transfer {
            from,
            to,
            target_exists,
        } = transfer_precheck(cx, &args.from, &args.to, args.overwrite, |from| {
            WriteKind::Move { from }
        })?;
        let plan = if args.update_backlinks {
            // r[impl tools.move-note.link-safe-name]
            // The backlinks will spell the new name: one that cannot stand in a wikilink
            // would break every link it is written into.
            validate_link_target(to.as_str()).map_err(|why| {
                ToolError::validation(
                    "/to",
                    format!("{why}, so links to the moved note could not name it (pass update_backlinks: false to move it anyway)"),
                )
            })?;
            let plan = move_backlinks(cx, &from, &to)?;
            judge_backlinks(cx, &plan, &to).map_err(|b| ToolError::convention(&b))?;
            Some(plan)
        } else {
            None
        };
        // r[impl tools.move-note.confirm]
        let needs_confirmation = from.parent() != to.parent() || target_exists;
        let mut acl = vec![(AclOp::Write, from.clone()), (AclOp::Write, to)];
        if reveals {
            acl.push((AclOp::Read, from.clone()));
        }
        if let Some(plan) = &plan {
            acl.extend(
                plan.notes
                    .iter()
                    .filter(|n| n.path != from)
                    .map(|n| (AclOp::Write, n.path.clone())),
            );
        }
        Ok(Precheck {
            needs_confirmation,
            acl,
            plan: Arc::new(plan),
        })
    }

    // r[impl drift.bind.move-note.gained]
    /// The content of every declared path and of every note or canvas that links to the
    /// moved note now: a check made without a new precheck (the shim's, after its prompt)
    /// plans the backlinks again, so a note or canvas that gained a link to it meanwhile
    /// joins the binding and is drift, as on the routes that run the precheck again.
    fn state(
        &self,
        cx: &ToolCx<'_>,
        args: &MoveNoteArgs,
        precheck: &Precheck<Self::Plan>,
    ) -> Result<TargetState, ToolError> {
        let mut paths = precheck.declared_paths();
        if args.update_backlinks {
            let (from, to) = (note(&args.from)?, note(&args.to)?);
            for touched in move_backlinks(cx, &from, &to)?.notes {
                if !paths.contains(&touched.path) {
                    paths.push(touched.path);
                }
            }
        }
        path_state(cx.vault(), &paths)
    }

    fn state_after_precheck(
        &self,
        cx: &ToolCx<'_>,
        _args: &MoveNoteArgs,
        precheck: &Precheck<Self::Plan>,
    ) -> Result<TargetState, ToolError> {
        // The precheck planned the backlinks a moment ago: its declared paths hold them.
        path_state(cx.vault(), &precheck.declared_paths())
    }

    // r[impl tools.summary.move]
    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &MoveNoteArgs,
        precheck: &Precheck<Self::Plan>,
        state: &TargetState,
    ) -> Summary {
        let overwrites = note(&args.to)
            .ok()
            .and_then(|to| state.observed_hash(&to))
            .is_some_and(|hash| hash.is_some());
        let mut summary = Summary::new(format!("move {} -> {}", args.from, args.to))
            .target(&args.from)
            .target(&args.to);
        if overwrites {
            summary = summary.detail(format!("replaces the note already at {}", args.to));
        }
        let plan = (*precheck.plan).as_ref();
        match plan {
            Some(plan) if !plan.notes.is_empty() => {
                summary = summary.detail(format!(
                    "rewrites {} link(s) in {} note(s):",
                    plan.links(),
                    plan.notes.len()
                ));
                let named = plan
                    .notes
                    .iter()
                    .map(|touched| {
                        format!("  {} ({} link(s))", touched.path.as_str(), touched.links)
                    })
                    .collect();
                summary = summary.details_named(named, |n| format!("  … and {n} more note(s)"));
            }
            Some(_) => summary = summary.detail("no note links to it"),
            None => summary = summary.detail("links to it are left as they are"),
        }
        summary
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &MoveNoteArgs,
        precheck: &Precheck<Self::Plan>,
        state: &TargetState,
    ) -> Result<MoveNoteOutput, HandlerFailure> {
        let from = note(&args.from)?;
        let to = note(&args.to)?;
        let source = read_as_observed(cx, state, &from)?.ok_or_else(|| not_found(&from))?;
        let target = read_as_observed(cx, state, &to)?;
        // r[impl tools.move-note.backlinks-declared]
        // The plan this call's precheck made is the one whose notes the folder ACL judged
        // and whose states the approval binds; a plan made again here could take in a note
        // linked since, which neither judged.
        let plan = if args.update_backlinks {
            let plan = (*precheck.plan)
                .as_ref()
                .ok_or_else(|| ToolError::internal("the move's backlink plan"))?;
            judge_backlinks(cx, plan, &to).map_err(HandlerFailure::ConventionBlockedBeforeWrite)?;
            Some(plan)
        } else {
            None
        };
        // r[impl vault.remove.locked]
        // The source and the note it replaces are checked again under their locks, so a
        // write landing after the reads above is refused, not moved or overwritten.
        // r[impl versions.keep.confirmed]
        // A move over a note keeps the note it replaces (under the same locks).
        // r[impl vault.move.journaled]
        // The rename and the backlink rewrites are journaled together: a crash between
        // them is finished when the server starts again.
        let rewrites: Vec<Rewrite> = plan
            .map(|plan| {
                plan.notes
                    .iter()
                    .map(|touched| Rewrite {
                        path: touched.path.clone(),
                        expected_hash: touched.hash.clone(),
                        content: touched.new_content.as_bytes().to_vec(),
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
        let mut report = BacklinkReport {
            notes_updated: Vec::new(),
            notes_count: 0,
            links_updated: 0,
            skipped: Vec::new(),
        };
        if let Some(plan) = plan {
            for (touched, outcome) in plan.notes.iter().zip(&moved.rewrites) {
                match outcome {
                    Ok(()) => {
                        if report.notes_updated.len() < crate::common::LISTED_PATHS {
                            report.notes_updated.push(touched.path.as_str().to_owned());
                        }
                        report.notes_count += 1;
                        report.links_updated += touched.links;
                    }
                    Err(e) => report.skipped.push(SkippedBacklink {
                        path: touched.path.as_str().to_owned(),
                        code: ToolError::from(e).code.as_str().to_owned(),
                    }),
                }
            }
        }
        Ok(MoveNoteOutput {
            from: from.as_str().to_owned(),
            to: to.as_str().to_owned(),
            overwrote: target.is_some(),
            backlinks: report,
        })
    }
}

// ---------------------------------------------------------------- copy_note

/// `copy_note` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CopyNoteArgs {
    /// The note to copy.
    #[schemars(length(min = 1, max = 4096))]
    pub from: String,
    /// The path of the copy, ending in .md.
    #[schemars(length(min = 1, max = 4096))]
    pub to: String,
    /// Replace a note already at `to`.
    #[serde(default)]
    pub overwrite: bool,
}

/// `copy_note`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CopyNoteOutput {
    pub from: String,
    pub to: String,
    pub overwrote: bool,
    pub content_hash: String,
}

#[derive(Debug)]
pub struct CopyNote;

impl Tool for CopyNote {
    type Args = CopyNoteArgs;
    type Output = CopyNoteOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "copy_note",
            description: "Copy a note. Copying over an existing note (overwrite) needs the human's confirmation.",
            annotations: Annotations::writes(true, true),
            scopes: &["write:notes"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::PathAcl),
        }
    }

    fn precheck(&self, cx: &ToolCx<'_>, args: &CopyNoteArgs) -> Result<Precheck, ToolError> {
        let Transfer {
            from,
            to,
            target_exists,
        } = transfer_precheck(cx, &args.from, &args.to, args.overwrite, |from| {
            WriteKind::Copy { from }
        })?;
        Ok(Precheck {
            needs_confirmation: target_exists,
            acl: vec![(AclOp::Read, from), (AclOp::Write, to)],
            plan: Default::default(),
        })
    }

    fn summary(
        &self,
        cx: &ToolCx<'_>,
        args: &CopyNoteArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Summary {
        let mut summary = Summary::new(format!(
            "copy {} over the existing note {}",
            args.from, args.to
        ))
        .target(&args.from)
        .target(&args.to);
        if let (Ok(from), Ok(to)) = (note(&args.from), note(&args.to))
            && let (Ok(Some(source)), Ok(Some(target))) = (
                cx.vault().read_if_exists(&from),
                cx.vault().read_if_exists(&to),
            )
        {
            summary = summary
                .detail(format!(
                    "size: {} -> {} bytes",
                    target.bytes.len(),
                    source.bytes.len()
                ))
                .diff(&target.text(), &source.text());
        }
        summary
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &CopyNoteArgs,
        _precheck: &Precheck,
        state: &TargetState,
    ) -> Result<CopyNoteOutput, HandlerFailure> {
        let from = note(&args.from)?;
        let to = note(&args.to)?;
        let source = read_as_observed(cx, state, &from)?.ok_or_else(|| not_found(&from))?;
        let target = read_as_observed(cx, state, &to)?;
        // r[impl versions.keep.confirmed]
        // A copy over a note keeps the note it replaces.
        let outcome = cx
            .vault()
            .write_keeping(&to, &source.bytes, &guard_for(target.as_ref()))?
            .outcome;
        Ok(CopyNoteOutput {
            from: from.as_str().to_owned(),
            to: to.as_str().to_owned(),
            overwrote: !outcome.created,
            content_hash: outcome.hash,
        })
    }
}
