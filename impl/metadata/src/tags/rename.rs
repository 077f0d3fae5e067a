//! `rename_tag` (spec/metadata.md `metadata.rename-tag`, `metadata.rename-tag.dry-run`,
//! `metadata.rename-tag.confirmed`; spec/tools.md `tools.compose.rename-tag`; spec/drift.md
//! `drift.bind.rename-tag`).
//!
//! The notes come from the index (those carrying `from` or a tag nested under it, that the
//! caller may read, under `folder`); each is read from its file and planned with
//! [`super::edit`]. A real run binds the set of planned notes with their content hashes, as
//! `rewrite_link` does: a touched note changing changes its hash, and a note gaining the tag
//! joins the set, so either is drift. Every planned note is declared for the folder ACL, so
//! one the caller may not change is refused by name, never skipped.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_gate::ConfirmationTargets;
use tc_index::meta::{self, tags as q};
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx, ToolError,
    ToolSpec, wire_cost,
};
use tc_vault::acl::AclOp;
use tc_vault::conventions::{ContentFacts, Prior, WriteIntent, WriteKind};
use tc_vault::error::VaultError;
use tc_vault::path::VaultPath;
use tc_vault::vault::Precondition;

use super::edit::{self, Edited, within};
use super::write::ChangedTag;
use super::{ENVELOPE_BYTES, Readable, by_note, folder_of, tag_argument};

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RenameTagArgs {
    #[schemars(length(min = 1, max = 1024))]
    pub from: String,
    #[schemars(length(min = 1, max = 1024))]
    pub to: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub folder: Option<String>,
    #[serde(default = "yes")]
    pub dry_run: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RenamedNote {
    pub path: String,
    pub changes: Vec<ChangedTag>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RenameTagOutput {
    pub dry_run: bool,
    /// The notes touched, as many as fit a page; notes_count has them all.
    pub notes: Vec<RenamedNote>,
    pub notes_count: usize,
    pub changes_count: usize,
    pub applied: bool,
}

/// One note a rename touches: its content as planned and the text it would get.
#[derive(Debug, Clone)]
pub struct PlannedNote {
    pub path: VaultPath,
    pub hash: String,
    pub edited: Edited,
}

/// Every note a rename touches, in path order.
#[derive(Debug, Clone, Default)]
pub struct RenamePlan {
    pub notes: Vec<PlannedNote>,
}

impl RenamePlan {
    fn changes(&self) -> usize {
        self.notes.iter().map(|n| n.edited.changes.len()).sum()
    }
}

#[derive(Debug)]
pub struct RenameTag;

// r[impl metadata.rename-tag]
/// The rename of `from` to `to` in `text`: the frontmatter through the lossless editor, then
/// the body's inline tags.
pub fn rename_text(
    path: &VaultPath,
    text: &str,
    from: &str,
    to: &str,
) -> Result<Edited, ToolError> {
    let mut out = Edited::default();
    let renamed = edit::rename_in_frontmatter(text, from, to, &mut out)
        .map_err(|e| ToolError::from(e.at(path)))?;
    out.text = edit::rename_inline(&renamed, from, to, &mut out);
    Ok(out)
}

fn plan_for(cx: &ToolCx<'_>, args: &RenameTagArgs) -> Result<RenamePlan, ToolError> {
    let (_, from) = tag_argument(&args.from, "/from")?;
    let (to, _) = tag_argument(&args.to, "/to")?;
    let folder = folder_of(args.folder.as_deref())?;
    let index = meta::fresh(cx)?;
    let pairs = q::tagged(index, &from)?
        .into_iter()
        .filter(|(_, tag)| within(tag, &from))
        .collect();
    let readable = Readable::new(cx, &folder);
    let mut plan = RenamePlan::default();
    for (path, _) in by_note(pairs) {
        if !readable.admits(&path) {
            continue;
        }
        let path = VaultPath::parse(&path)?;
        let Some(current) = cx.vault().read_if_exists(&path)? else {
            continue;
        };
        let edited = rename_text(&path, current.utf8(&path)?, &from, &to)?;
        if !edited.changes.is_empty() {
            plan.notes.push(PlannedNote {
                path,
                hash: current.hash,
                edited,
            });
        }
    }
    Ok(plan)
}

// r[impl drift.bind.rename-tag]
fn plan_state(plan: RenamePlan) -> TargetState<RenamePlan> {
    let observed: Vec<(VaultPath, Option<String>)> = plan
        .notes
        .iter()
        .map(|n| (n.path.clone(), Some(n.hash.clone())))
        .collect();
    TargetState::from_observed(observed, plan)
}

fn listed(cx: &ToolCx<'_>, plan: &RenamePlan) -> Vec<RenamedNote> {
    let budget = cx
        .paging
        .limits
        .page_budget()
        .saturating_sub(ENVELOPE_BYTES);
    let mut spent = 0;
    let mut out = Vec::new();
    for note in &plan.notes {
        let entry = RenamedNote {
            path: note.path.as_str().to_owned(),
            changes: note.edited.changes.iter().map(ChangedTag::from).collect(),
        };
        let cost = serde_json::to_vec(&entry).map_or(usize::MAX, |b| wire_cost(&b) + 1);
        if spent + cost > budget {
            break;
        }
        spent += cost;
        out.push(entry);
    }
    out
}

impl Tool for RenameTag {
    type Args = RenameTagArgs;
    type Output = RenameTagOutput;
    type Plan = RenamePlan;
    type Seen = RenamePlan;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "rename_tag",
            description: "Rename a tag and its nested tags (a/x to b/x) in every note or under folder. dry_run (default true) lists changes; applying asks the human.",
            annotations: Annotations::writes(true, true),
            scopes: &["write:notes"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::Custom),
        }
    }

    fn check(&self, args: &RenameTagArgs) -> Result<(), ToolError> {
        tag_argument(&args.from, "/from")?;
        tag_argument(&args.to, "/to").map(|_| ())
    }

    // r[impl metadata.rename-tag.dry-run]
    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &RenameTagArgs,
    ) -> Result<Precheck<Self::Plan>, ToolError> {
        let plan = plan_for(cx, args)?;
        let op = if args.dry_run {
            AclOp::Read
        } else {
            AclOp::Write
        };
        let acl = plan.notes.iter().map(|n| (op, n.path.clone())).collect();
        Ok(Precheck {
            needs_confirmation: !args.dry_run && !plan.notes.is_empty(),
            acl,
            plan: Arc::new(plan),
        })
    }

    fn state(
        &self,
        cx: &ToolCx<'_>,
        args: &RenameTagArgs,
        _precheck: &Precheck<Self::Plan>,
    ) -> Result<TargetState<Self::Seen>, ToolError> {
        Ok(plan_state(plan_for(cx, args)?))
    }

    fn state_after_precheck(
        &self,
        _cx: &ToolCx<'_>,
        _args: &RenameTagArgs,
        precheck: &Precheck<Self::Plan>,
    ) -> Result<TargetState<Self::Seen>, ToolError> {
        Ok(plan_state(RenamePlan::clone(&precheck.plan)))
    }

    // r[impl metadata.rename-tag.confirmed]
    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &RenameTagArgs,
        _precheck: &Precheck<Self::Plan>,
        state: &TargetState<Self::Seen>,
    ) -> Summary {
        let plan = &*state.seen;
        let named = plan
            .notes
            .iter()
            .map(|n| {
                let changes: Vec<String> = n
                    .edited
                    .changes
                    .iter()
                    .map(|c| format!("#{} → #{}", c.old, c.new.as_deref().unwrap_or("")))
                    .collect();
                format!("{} ({})", n.path.as_str(), changes.join(", "))
            })
            .collect();
        Summary::new(format!(
            "rename tag #{} to #{}{}",
            args.from.trim_start_matches('#'),
            args.to.trim_start_matches('#'),
            args.folder
                .as_deref()
                .map_or_else(String::new, |f| format!(" in folder {f}"))
        ))
        .detail(format!(
            "{} tag(s) in {} note(s)",
            plan.changes(),
            plan.notes.len()
        ))
        .targets_named(named, |n| format!("… and {n} more note(s)"))
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &RenameTagArgs,
        precheck: &Precheck<Self::Plan>,
        state: &TargetState<Self::Seen>,
    ) -> Result<RenameTagOutput, HandlerFailure> {
        // A dry run's state is not taken: its plan is the precheck's.
        let plan = if args.dry_run || !precheck.needs_confirmation {
            &*precheck.plan
        } else {
            &*state.seen
        };
        let notes = listed(cx, plan);
        let output = |applied| RenameTagOutput {
            dry_run: args.dry_run,
            notes: notes.clone(),
            notes_count: plan.notes.len(),
            changes_count: plan.changes(),
            applied,
        };
        if args.dry_run || plan.notes.is_empty() {
            return Ok(output(false));
        }
        // Every note is judged before the first write, so a refusal here is before any
        // write of the call.
        for planned in &plan.notes {
            let prior = cx
                .vault()
                .read_if_exists(&planned.path)?
                .map_or(Prior::Absent, |c| Prior::Known(ContentFacts::of(&c.bytes)));
            cx.judge(&WriteIntent::new(
                planned.path.clone(),
                WriteKind::Overwrite,
                planned.edited.text.as_bytes(),
                prior,
            ))
            .map_err(HandlerFailure::ConventionBlockedBeforeWrite)?;
        }
        let total = plan.notes.len() as f64;
        cx.progress(0.0, Some(total), Some("renaming tags"));
        let mut written: Vec<&str> = Vec::new();
        for (done, planned) in plan.notes.iter().enumerate() {
            // r[impl versions.keep.links-and-tags]
            let result = cx.vault().write_keeping(
                &planned.path,
                planned.edited.text.as_bytes(),
                &Precondition::HashIs(planned.hash.clone()),
            );
            if let Err(error) = result {
                return Err(partial(&error, &written).into());
            }
            written.push(planned.path.as_str());
            cx.progress((done + 1) as f64, Some(total), None);
        }
        Ok(output(true))
    }
}

/// A write that failed after others of the call were made: the error, naming those.
fn partial(error: &VaultError, written: &[&str]) -> ToolError {
    ToolError::from(error).detail("written", serde_json::json!(written))
}
