//! `bulk_create_notes`: many notes written under one confirmation bound to every item's path
//! (spec/bulk.md `bulk.create.*`, `bulk.dry-run.free`, `bulk.precheck.whole-call`,
//! `bulk.results.per-item`; spec/drift.md `drift.bind.bulk-create-notes`; spec/tools.md
//! `tools.compose.bulk-create-notes`).
//!
//! Every item is judged before anything is asked (its path, the folder ACL, the vault's
//! conventions, whether it exists as the mode wants), so a call that cannot be applied as a
//! whole is refused as a whole. A dry run is the plan and is free; a real run always asks,
//! once, with every path's content (a missing path a state of its own) in the binding, so a
//! note appearing or changing at any of them between the request and the approval is drift.
//! Applied, the items are written in batches under their notes' locks, each atomically and
//! each reported on its own.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tc_gate::ConfirmationTargets;
use tc_tools::note_write::{
    check_observed, exists_error, kind_for, not_found, note, preflight, prior_of,
};
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx, ToolError,
    ToolSpec,
};
use tc_vault::acl::AclOp;
use tc_vault::conventions::WriteIntent;
use tc_vault::frontmatter_edit;
use tc_vault::path::VaultPath;
use tc_vault::vault::BatchWrite;

use crate::common::{ItemResult, check_paths};

/// What `bulk_create_notes` does with a path that holds a note.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CreateMode {
    /// Every path must be free.
    #[default]
    Create,
    /// Every path must hold a note, which is replaced.
    Overwrite,
    /// Free paths are created, notes are replaced.
    Upsert,
}

/// One note to write.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateItem {
    pub path: String,
    #[serde(default)]
    pub content: String,
    /// Keys merged into the content's frontmatter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frontmatter: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkCreateNotesArgs {
    /// The notes, at most 1000.
    pub items: Vec<CreateItem>,
    /// create: every path free; overwrite: every path a note; upsert: either.
    #[serde(default)]
    pub mode: CreateMode,
    /// Only report the plan (free).
    #[serde(default)]
    pub dry_run: bool,
}

/// One planned write: the note's path, its new bytes, and the size of what it replaces.
#[derive(Debug)]
pub struct PlannedWrite {
    pub path: VaultPath,
    pub new: Vec<u8>,
    pub replaces: Option<usize>,
}

/// The plan of a call, made by its precheck and applied as it stands.
#[derive(Debug, Default)]
pub struct CreatePlan {
    pub writes: Vec<PlannedWrite>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct BulkCreateNotesOutput {
    pub dry_run: bool,
    pub created: usize,
    pub replaced: usize,
    pub failed: usize,
    /// Bytes the call writes, and bytes of the notes it replaces.
    pub bytes_written: usize,
    pub bytes_replaced: usize,
    pub items: Vec<ItemResult>,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct BulkCreateNotes;

// r[impl bulk.create.content]
/// The bytes an item writes: its content with its frontmatter merged in losslessly.
fn item_bytes(item: &CreateItem, path: &VaultPath) -> Result<Vec<u8>, ToolError> {
    match &item.frontmatter {
        None => Ok(item.content.clone().into_bytes()),
        Some(keys) => frontmatter_edit::merge(&item.content, keys)
            .map(String::into_bytes)
            .map_err(|e| {
                ToolError::validation(
                    "/items",
                    format!("{}: the frontmatter cannot be merged: {e}", path.as_str()),
                )
            }),
    }
}

fn plan(cx: &ToolCx<'_>, args: &BulkCreateNotesArgs) -> Result<CreatePlan, ToolError> {
    let mut writes = Vec::with_capacity(args.items.len());
    let mut refused_exists = Vec::new();
    let mut refused_missing = Vec::new();
    for item in &args.items {
        let path = note(&item.path)?;
        let current = cx.vault().read_if_exists(&path)?;
        match (args.mode, &current) {
            (CreateMode::Create, Some(_)) => refused_exists.push(path.clone()),
            (CreateMode::Overwrite, None) => refused_missing.push(path.clone()),
            _ => {}
        }
        let new = item_bytes(item, &path)?;
        // r[impl bulk.precheck.whole-call]
        preflight(
            cx,
            &WriteIntent::new(
                path.clone(),
                kind_for(current.as_ref()),
                &new,
                prior_of(current.as_ref()),
            ),
        )?;
        writes.push(PlannedWrite {
            path,
            new,
            replaces: current.map(|c| c.bytes.len()),
        });
    }
    if let Some(first) = refused_exists.first() {
        return Err(exists_error(first).detail(
            "paths",
            serde_json::json!(
                refused_exists
                    .iter()
                    .map(VaultPath::as_str)
                    .collect::<Vec<_>>()
            ),
        ));
    }
    if let Some(first) = refused_missing.first() {
        return Err(not_found(first).detail(
            "paths",
            serde_json::json!(
                refused_missing
                    .iter()
                    .map(VaultPath::as_str)
                    .collect::<Vec<_>>()
            ),
        ));
    }
    Ok(CreatePlan { writes })
}

impl Tool for BulkCreateNotes {
    type Args = BulkCreateNotesArgs;
    type Output = BulkCreateNotesOutput;
    type Plan = CreatePlan;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "bulk_create_notes",
            description: "Write up to 1000 notes in one call. dry_run shows the plan for free; a real run asks the human once for all of them.",
            annotations: Annotations::writes(true, true),
            scopes: &["write:notes", "bulk:notes"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::PathAcl),
        }
    }

    fn check(&self, args: &BulkCreateNotesArgs) -> Result<(), ToolError> {
        check_paths("items", args.items.iter().map(|i| i.path.as_str()))
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &BulkCreateNotesArgs,
    ) -> Result<Precheck<CreatePlan>, ToolError> {
        let plan = plan(cx, args)?;
        let op = if args.dry_run {
            AclOp::Read
        } else {
            AclOp::Write
        };
        // r[impl drift.bind.bulk-create-notes]
        let acl = plan.writes.iter().map(|w| (op, w.path.clone())).collect();
        Ok(Precheck {
            // r[impl bulk.dry-run.free]
            needs_confirmation: !args.dry_run,
            acl,
            plan: std::sync::Arc::new(plan),
        })
    }

    // r[impl bulk.summary.items]
    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &BulkCreateNotesArgs,
        precheck: &Precheck<CreatePlan>,
        _state: &TargetState,
    ) -> Summary {
        let writes = &precheck.plan.writes;
        let created = writes.iter().filter(|w| w.replaces.is_none()).count();
        let replaced = writes.len() - created;
        let written: usize = writes.iter().map(|w| w.new.len()).sum();
        let lost: usize = writes.iter().filter_map(|w| w.replaces).sum();
        let lines = writes
            .iter()
            .map(|w| match w.replaces {
                None => format!("{} (new, {} bytes)", w.path.as_str(), w.new.len()),
                Some(old) => format!(
                    "{} (replaces {old} bytes with {})",
                    w.path.as_str(),
                    w.new.len()
                ),
            })
            .collect();
        Summary::new(format!(
            "write {} note(s) ({:?}): {created} new, {replaced} replaced; {written} bytes written, {lost} bytes replaced",
            args.items.len(),
            args.mode
        ))
        .targets_named(lines, |rest| format!("… and {rest} more note(s)"))
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &BulkCreateNotesArgs,
        precheck: &Precheck<CreatePlan>,
        state: &TargetState,
    ) -> Result<BulkCreateNotesOutput, HandlerFailure> {
        let writes = &precheck.plan.writes;
        let mut output = BulkCreateNotesOutput {
            dry_run: args.dry_run,
            created: 0,
            replaced: 0,
            failed: 0,
            bytes_written: writes.iter().map(|w| w.new.len()).sum(),
            bytes_replaced: writes.iter().filter_map(|w| w.replaces).sum(),
            items: Vec::with_capacity(writes.len()),
        };
        if args.dry_run {
            for write in writes {
                let outcome = if write.replaces.is_some() {
                    output.replaced += 1;
                    "replaced"
                } else {
                    output.created += 1;
                    "created"
                };
                output
                    .items
                    .push(ItemResult::done(&write.path, outcome, None));
            }
            return Ok(output);
        }
        // The conventions are judged again on every item before the first write, so a rule
        // changed since the approval refuses the call while nothing is written yet.
        for write in writes {
            let current = cx.vault().read_if_exists(&write.path)?;
            cx.judge(&WriteIntent::new(
                write.path.clone(),
                kind_for(current.as_ref()),
                &write.new,
                prior_of(current.as_ref()),
            ))
            .map_err(HandlerFailure::ConventionBlockedBeforeWrite)?;
        }
        // r[impl bulk.apply.concurrent]
        // The notes go to the vault in batches under their locks, so their versions, their
        // new files and their renames share the waits on the disk.
        let batch: Vec<BatchWrite<'_>> = writes
            .iter()
            .map(|write| BatchWrite {
                path: &write.path,
                bytes: &write.new,
            })
            .collect();
        // r[impl versions.keep.confirmed]
        let written = cx.vault().write_many_keeping(&batch, |i, current| {
            check_observed(state, &writes[i].path, current)
        });
        let results = writes
            .iter()
            .zip(written)
            .map(|(write, result)| match result {
                Ok(kept) if kept.outcome.created => {
                    ItemResult::done(&write.path, "created", Some(kept.outcome.hash))
                }
                Ok(kept) => ItemResult::done(&write.path, "replaced", Some(kept.outcome.hash)),
                Err(failure) => ItemResult::failed(&write.path, failure),
            });
        let mut by_outcome: BTreeMap<&'static str, usize> = BTreeMap::new();
        for item in results {
            *by_outcome.entry(item.outcome).or_default() += 1;
            output.items.push(item);
        }
        output.created = by_outcome.get("created").copied().unwrap_or(0);
        output.replaced = by_outcome.get("replaced").copied().unwrap_or(0);
        output.failed = by_outcome.get("failed").copied().unwrap_or(0);
        Ok(output)
    }
}
