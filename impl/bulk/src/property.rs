//! `bulk_set_property`: one frontmatter key set on many notes under one confirmation bound to
//! every note it touches (spec/bulk.md `bulk.set-property.*`, `bulk.dry-run.free`,
//! `bulk.precheck.whole-call`, `bulk.results.per-item`; spec/drift.md
//! `drift.bind.bulk-set-property`; spec/tools.md `tools.compose.bulk-set-property`).
//!
//! Each note is edited by the lossless frontmatter editor: only the key's lines change, every
//! other byte (comments, quoting, key order, the body) stays. A note that already holds the
//! value is left alone and reported `unchanged`.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tc_gate::ConfirmationTargets;
use tc_tools::note_write::{check_observed, not_found, note, preflight, prior_of};
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx, ToolError,
    ToolSpec,
};
use tc_vault::acl::AclOp;
use tc_vault::conventions::{WriteIntent, WriteKind};
use tc_vault::frontmatter_edit;
use tc_vault::path::{FolderPath, VaultPath};
use tc_vault::vault::BatchWrite;
use tc_vault::walk::{Walk, WalkFilter};

use crate::common::{ItemResult, MAX_ITEMS, changed_lines, check_paths};

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkSetPropertyArgs {
    /// The notes (at most 1000); or give `folder`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<String>>,
    /// Every note under this folder, recursively; or give `paths`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
    /// A top-level frontmatter key.
    pub key: String,
    pub value: Value,
    /// Only report the plan (free).
    #[serde(default)]
    pub dry_run: bool,
}

/// One note's planned edit.
#[derive(Debug)]
pub struct PlannedEdit {
    pub path: VaultPath,
    /// The content hash of the note the plan read, which the call's state is made of.
    pub hash: String,
    /// The note after the edit; `None` when it holds the value already.
    pub new: Option<String>,
    /// The lines the edit removes and adds, for the summary.
    pub change: Vec<String>,
}

#[derive(Debug, Default)]
pub struct PropertyPlan {
    pub edits: Vec<PlannedEdit>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct BulkSetPropertyOutput {
    pub dry_run: bool,
    pub changed: usize,
    pub unchanged: usize,
    pub failed: usize,
    pub items: Vec<ItemResult>,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct BulkSetProperty;

/// The notes the call names: its `paths`, or every note under its `folder`.
fn targets(cx: &ToolCx<'_>, args: &BulkSetPropertyArgs) -> Result<Vec<VaultPath>, ToolError> {
    if let Some(paths) = &args.paths {
        return paths.iter().map(|p| note(p)).collect();
    }
    let folder = FolderPath::parse(args.folder.as_deref().unwrap_or_default())?;
    let walk = Walk::new(cx.vault().root(), &folder, true, WalkFilter::Notes, None)?;
    let mut found = Vec::new();
    for path in walk {
        let path = path?;
        // A note the caller may not read is not in the folder as the caller sees it; the
        // ACL judges every declared path again, so nothing is written behind it either.
        if !cx.may_read(&path) {
            continue;
        }
        found.push(path);
        if found.len() > MAX_ITEMS {
            return Err(ToolError::validation(
                "/folder",
                format!("holds more than {MAX_ITEMS} notes; name them by `paths` in parts"),
            ));
        }
    }
    if found.is_empty() {
        return Err(ToolError::validation("/folder", "holds no note"));
    }
    Ok(found)
}

fn plan(cx: &ToolCx<'_>, args: &BulkSetPropertyArgs) -> Result<PropertyPlan, ToolError> {
    let mut keys = Map::new();
    keys.insert(args.key.clone(), args.value.clone());
    let mut edits = Vec::new();
    for path in targets(cx, args)? {
        let current = cx
            .vault()
            .read_if_exists(&path)?
            .ok_or_else(|| not_found(&path))?;
        let text = current.utf8(&path)?;
        let merged =
            frontmatter_edit::merge(text, &keys).map_err(|e| ToolError::from(e.at(&path)))?;
        let new = (merged != text).then_some(merged);
        if let Some(new) = &new {
            preflight(
                cx,
                &WriteIntent::new(
                    path.clone(),
                    WriteKind::Overwrite,
                    new.as_bytes(),
                    prior_of(Some(&current)),
                ),
            )?;
        }
        let change = new
            .as_deref()
            .map(|new| changed_lines(text, new))
            .unwrap_or_default();
        edits.push(PlannedEdit {
            path,
            hash: current.hash.clone(),
            new,
            change,
        });
    }
    Ok(PropertyPlan { edits })
}

impl Tool for BulkSetProperty {
    type Args = BulkSetPropertyArgs;
    type Output = BulkSetPropertyOutput;
    type Plan = PropertyPlan;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "bulk_set_property",
            description: "Set one frontmatter key on up to 1000 notes (paths, or every note under folder), keeping every other byte. dry_run is free; a real run asks the human once.",
            annotations: Annotations::writes(true, true),
            scopes: &["write:notes", "bulk:notes"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::PathAcl),
        }
    }

    fn check(&self, args: &BulkSetPropertyArgs) -> Result<(), ToolError> {
        if args.key.trim().is_empty() {
            return Err(ToolError::validation("/key", "is empty"));
        }
        match (&args.paths, &args.folder) {
            (Some(paths), None) => check_paths("paths", paths.iter().map(String::as_str)),
            (None, Some(_)) => Ok(()),
            _ => Err(ToolError::validation(
                "",
                "give exactly one of `paths` and `folder`",
            )),
        }
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &BulkSetPropertyArgs,
    ) -> Result<Precheck<PropertyPlan>, ToolError> {
        let plan = plan(cx, args)?;
        let op = if args.dry_run {
            AclOp::Read
        } else {
            AclOp::Write
        };
        // r[impl drift.bind.bulk-set-property]
        // Every note the call names is bound, the ones it would leave alone too: a note that
        // changes in between could need the edit after all.
        let mut acl: Vec<(AclOp, VaultPath)> = plan
            .edits
            .iter()
            .map(|e| (AclOp::Read, e.path.clone()))
            .collect();
        acl.extend(plan.edits.iter().map(|e| (op, e.path.clone())));
        Ok(Precheck {
            // r[impl bulk.dry-run.free]
            needs_confirmation: !args.dry_run,
            acl,
            plan: Arc::new(plan),
        })
    }

    // r[impl drift.path-fingerprint]
    /// The state taken in the same call as the plan is the notes the plan just read: each
    /// was read and hashed once there, so it is not read and hashed a second time here.
    fn state_after_precheck(
        &self,
        _cx: &ToolCx<'_>,
        _args: &BulkSetPropertyArgs,
        precheck: &Precheck<PropertyPlan>,
    ) -> Result<TargetState, ToolError> {
        let observed: Vec<(VaultPath, Option<String>)> = precheck
            .plan
            .edits
            .iter()
            .map(|e| (e.path.clone(), Some(e.hash.clone())))
            .collect();
        Ok(TargetState::from_observed(observed, ()))
    }

    // r[impl bulk.summary.items]
    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &BulkSetPropertyArgs,
        precheck: &Precheck<PropertyPlan>,
        _state: &TargetState,
    ) -> Summary {
        let edits = &precheck.plan.edits;
        let changing: Vec<&PlannedEdit> = edits.iter().filter(|e| e.new.is_some()).collect();
        let bytes = |sign: char| -> usize {
            changing
                .iter()
                .flat_map(|e| e.change.iter())
                .filter(|line| line.starts_with(sign))
                .map(|line| line.len() - 2 + 1)
                .sum()
        };
        let (removed, added) = (bytes('-'), bytes('+'));
        let lines = changing
            .iter()
            .map(|e| format!("{}: {}", e.path.as_str(), e.change.join(" | ")))
            .collect();
        Summary::new(format!(
            "set `{}` to {} in {} note(s) ({} already hold it): {removed} bytes of frontmatter lines removed, {added} added",
            args.key,
            args.value,
            changing.len(),
            edits.len() - changing.len()
        ))
        .targets_named(lines, |rest| format!("… and {rest} more note(s)"))
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &BulkSetPropertyArgs,
        precheck: &Precheck<PropertyPlan>,
        state: &TargetState,
    ) -> Result<BulkSetPropertyOutput, HandlerFailure> {
        let edits = &precheck.plan.edits;
        let mut output = BulkSetPropertyOutput {
            dry_run: args.dry_run,
            changed: 0,
            unchanged: 0,
            failed: 0,
            items: Vec::with_capacity(edits.len()),
        };
        // r[impl bulk.set-property.batched]
        // The notes to write go to the vault in batches under their locks, so their
        // versions and their renames share the waits on the disk.
        let writing: Vec<&PlannedEdit> = edits
            .iter()
            .filter(|e| e.new.is_some() && !args.dry_run)
            .collect();
        let batch: Vec<BatchWrite<'_>> = writing
            .iter()
            .filter_map(|e| {
                e.new.as_deref().map(|new| BatchWrite {
                    path: &e.path,
                    bytes: new.as_bytes(),
                })
            })
            .collect();
        // r[impl versions.keep.confirmed]
        let written = cx.vault().write_many_keeping(&batch, |i, current| {
            let edit = writing[i];
            check_observed(state, &edit.path, current)?;
            cx.judge(&WriteIntent::new(
                edit.path.clone(),
                WriteKind::Overwrite,
                batch[i].bytes,
                prior_of(current),
            ))
            .map_err(HandlerFailure::ConventionBlockedBeforeWrite)
        });
        let mut written = writing.iter().zip(written);
        let results = edits.iter().map(|edit| {
            if edit.new.is_none() {
                return ItemResult::done(&edit.path, "unchanged", None);
            }
            if args.dry_run {
                return ItemResult::done(&edit.path, "changed", None);
            }
            match written.next() {
                Some((_, Ok(kept))) => {
                    ItemResult::done(&edit.path, "changed", Some(kept.outcome.hash))
                }
                Some((_, Err(failure))) => ItemResult::failed(&edit.path, failure),
                None => ItemResult::failed(
                    &edit.path,
                    HandlerFailure::Failed(ToolError::internal("writing the note")),
                ),
            }
        });
        for item in results {
            match item.outcome {
                "changed" => output.changed += 1,
                "unchanged" => output.unchanged += 1,
                _ => output.failed += 1,
            }
            output.items.push(item);
        }
        Ok(output)
    }
}
