//! `patch_note`: an edit at one part of a note (spec/tools.md.1; spec/tools.md
//! `tools.patch-note`, `tools.patch-note.confirm`, `tools.patch-note.unresolved`,
//! `tools.compose.patch-note`; spec/drift.md `drift.bind.part-tools`; the service is
//! spec/vault.md `vault.sections.*`).
//!
//! The gate decides by what is lost: an append or a prepend adds whole lines and is free, a
//! replace that keeps every non-blank line of the part (in order) is free, and any other
//! replace needs confirmation bound to the note's content, its summary the diff of the part.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tc_gate::ConfirmationTargets;
use tc_tools::{
    Annotations, ErrorCode, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx,
    ToolError, ToolSpec,
};
use tc_vault::acl::AclOp;
use tc_vault::conventions::{WriteIntent, WriteKind};
use tc_vault::error::VaultError;
use tc_vault::note::parse_note;
use tc_vault::path::VaultPath;
use tc_vault::sections::{self, Anchor, AnchorError, PatchOp, Patched};
use tc_vault::vault::NoteContent;

use crate::common::{
    check_observed, check_prev_hash, guard_for, not_found, note, preflight, prior_of,
};

// What `patch_note` does at its anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PatchOperation {
    Append,
    Prepend,
    Replace,
}

// What kind of part an anchor names (no doc comment: it would be advertised).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnchorType {
    Heading,
    Block,
    Frontmatter,
}

/// The part of the note to edit.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnchorArg {
    #[serde(rename = "type")]
    pub kind: AnchorType,
    /// Text or path A::B.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heading: Option<String>,
    /// Without ^.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_id: Option<String>,
}

/// `patch_note` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchNoteArgs {
    /// The note.
    #[schemars(length(min = 1, max = 4096))]
    pub path: String,
    /// What to do at anchor.
    pub operation: PatchOperation,
    /// The part to edit.
    pub anchor: AnchorArg,
    /// Lines to write.
    pub content: String,
    /// content_hash as last read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 128))]
    pub prev_hash: Option<String>,
}

/// The result of an edit that changes part of a note.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PartEditOutput {
    pub path: String,
    pub content_hash: String,
    pub lines_removed: usize,
    pub bytes_removed: usize,
}

#[derive(Debug)]
pub struct PatchNote;

/// An anchor that names no single part, as the tool's error (`details.candidates`).
pub(crate) fn anchor_error(error: AnchorError, what: &str) -> ToolError {
    let (code, message, candidates) = match error {
        AnchorError::NotFound { candidates } => (
            ErrorCode::AnchorNotFound,
            format!("{what} is not in the note; details.candidates lists what is"),
            candidates,
        ),
        AnchorError::Ambiguous { candidates } => (
            ErrorCode::AnchorAmbiguous,
            format!("{what} names several parts; give a heading path A::B from details.candidates"),
            candidates,
        ),
    };
    let candidates: Vec<_> = candidates
        .iter()
        .map(|c| json!({"text": c.text, "line": c.line, "parent_path": c.parent_path}))
        .collect();
    ToolError::new(code, message).with_details(json!({ "candidates": candidates }))
}

fn anchor_of(arg: &AnchorArg) -> Result<Anchor<'_>, ToolError> {
    match arg.kind {
        AnchorType::Heading => arg.heading.as_deref().map(Anchor::Heading).ok_or_else(|| {
            ToolError::validation("/anchor/heading", "is required for type heading")
        }),
        AnchorType::Block => {
            arg.block_id.as_deref().map(Anchor::Block).ok_or_else(|| {
                ToolError::validation("/anchor/block_id", "is required for type block")
            })
        }
        AnchorType::Frontmatter => Ok(Anchor::Frontmatter),
    }
}

fn describe(arg: &AnchorArg) -> String {
    match arg.kind {
        AnchorType::Heading => format!("heading '{}'", arg.heading.as_deref().unwrap_or("")),
        AnchorType::Block => format!("block ^{}", arg.block_id.as_deref().unwrap_or("")),
        AnchorType::Frontmatter => "the frontmatter".to_owned(),
    }
}

/// The part's text after the edit: the bytes the edit put where `patched.span` was.
pub(crate) fn added_text(old_len: usize, patched: &Patched) -> &str {
    let added = patched.text.len() + patched.bytes_removed - old_len;
    &patched.text[patched.span.0..patched.span.0 + added]
}

fn text_lines(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive('\n')
        .map(|l| l.trim_end_matches('\n').trim_end_matches('\r'))
}

// r[impl tools.patch-note.confirm]
/// Whether replacing `removed` by `added` loses a line: some non-blank line of `removed` is
/// not kept, in order, among the lines of `added`.
pub(crate) fn loses_a_line(removed: &str, added: &str) -> bool {
    let mut kept = text_lines(added);
    text_lines(removed)
        .filter(|line| !line.trim().is_empty())
        .any(|line| !kept.any(|candidate| candidate == line))
}

/// The planned edit: the note after it, and whether it needs confirmation.
#[derive(Debug)]
pub struct PartPlan {
    pub old: String,
    pub patched: Patched,
    pub needs_confirmation: bool,
}

fn plan(
    args: &PatchNoteArgs,
    path: &VaultPath,
    current: &NoteContent,
) -> Result<PartPlan, ToolError> {
    let text = current.utf8(path).map_err(ToolError::from)?.to_owned();
    let anchor = anchor_of(&args.anchor)?;
    let op = match args.operation {
        PatchOperation::Append => PatchOp::Append,
        PatchOperation::Prepend => PatchOp::Prepend,
        PatchOperation::Replace => PatchOp::Replace,
    };
    // r[impl tools.patch-note.unresolved]
    let patched = sections::patch(&text, anchor, op, &args.content)
        .map_err(|e| anchor_error(e, &describe(&args.anchor)))?;
    if anchor == Anchor::Frontmatter {
        frontmatter_still_valid(&text, &patched, path)?;
    }
    let needs_confirmation =
        op == PatchOp::Replace && loses_a_line(&patched.removed, added_text(text.len(), &patched));
    Ok(PartPlan {
        old: text,
        patched,
        needs_confirmation,
    })
}

/// A frontmatter edit must leave one valid frontmatter block holding exactly the YAML put
/// there: a `---` line in the content would end the block early and turn YAML into body.
fn frontmatter_still_valid(
    old: &str,
    patched: &Patched,
    path: &VaultPath,
) -> Result<(), ToolError> {
    let refuse = |reason: &str| {
        ToolError::from(VaultError::FrontmatterInvalid {
            path: path.as_str().to_owned(),
            reason: reason.to_owned(),
        })
    };
    let after = sections::frontmatter_block(&patched.text)
        .ok_or_else(|| refuse("the edit would leave no frontmatter block"))?;
    let added = patched.text.len() + patched.bytes_removed - old.len();
    let expected_end = match sections::frontmatter_block(old) {
        Some(before) => before.end + added - patched.bytes_removed,
        None => patched.span.0 + added,
    };
    if after.end != expected_end {
        return Err(refuse(
            "the content holds a line that would end the frontmatter block",
        ));
    }
    parse_note(&patched.text).map_err(|e| ToolError::from(e.at(path)))?;
    Ok(())
}

impl Tool for PatchNote {
    type Args = PatchNoteArgs;
    type Output = PartEditOutput;
    type Plan = PartPlan;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "patch_note",
            description: "Append, prepend or replace one part of a note: a heading's section, a block ^id or the frontmatter. A replace that removes or changes a line asks the human.",
            annotations: Annotations::writes(true, false),
            scopes: &["write:notes"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::PathAcl),
        }
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &PatchNoteArgs,
    ) -> Result<Precheck<Self::Plan>, ToolError> {
        let path = note(&args.path)?;
        // The anchor's candidates and the result tell of the note's content.
        cx.require_read(&path)?;
        let current = cx
            .vault()
            .read_if_exists(&path)?
            .ok_or_else(|| not_found(&path))?;
        check_prev_hash(&path, args.prev_hash.as_deref(), Some(&current))?;
        let plan = plan(args, &path, &current)?;
        preflight(
            cx,
            &WriteIntent::new(
                path.clone(),
                WriteKind::Overwrite,
                plan.patched.text.as_bytes(),
                prior_of(Some(&current)),
            ),
        )?;
        Ok(Precheck {
            needs_confirmation: plan.needs_confirmation,
            // r[impl drift.bind.part-tools]
            acl: vec![(AclOp::Read, path.clone()), (AclOp::Write, path)],
            plan: Arc::new(plan),
        })
    }

    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &PatchNoteArgs,
        precheck: &Precheck<Self::Plan>,
        _state: &TargetState,
    ) -> Summary {
        part_summary(
            format!("replace {} of {}", describe(&args.anchor), args.path),
            &args.path,
            &precheck.plan,
        )
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &PatchNoteArgs,
        precheck: &Precheck<Self::Plan>,
        state: &TargetState,
    ) -> Result<PartEditOutput, HandlerFailure> {
        let path = note(&args.path)?;
        cx.vault().with_note_lock(&path, |locked| {
            let current = locked.read_if_exists()?.ok_or_else(|| not_found(&path))?;
            check_observed(state, &path, Some(&current))?;
            check_prev_hash(&path, args.prev_hash.as_deref(), Some(&current))?;
            let plan = plan(args, &path, &current)?;
            write_part(cx, locked, &path, &current, &plan, precheck)
        })
    }
}

/// A part edit's summary: the note, the lines removed, and the diff of the part alone.
pub(crate) fn part_summary(headline: String, path: &str, plan: &PartPlan) -> Summary {
    let added = added_text(plan.old.len(), &plan.patched);
    Summary::new(headline)
        .target(path)
        .detail(format!(
            "{} lines, {} bytes removed",
            plan.patched.lines_removed, plan.patched.bytes_removed
        ))
        .diff(&plan.patched.removed, added)
}

/// Writes a planned part edit under the note's lock; a free call whose edit would now lose
/// a line (the note changed since the precheck) is refused, never written unconfirmed.
pub(crate) fn write_part<P: ?Sized>(
    cx: &ToolCx<'_>,
    locked: &tc_vault::vault::LockedNote<'_>,
    path: &VaultPath,
    current: &NoteContent,
    plan: &PartPlan,
    precheck: &Precheck<P>,
) -> Result<PartEditOutput, HandlerFailure> {
    if plan.needs_confirmation && !precheck.needs_confirmation {
        return Err(VaultError::ConcurrentModification {
            path: path.as_str().to_owned(),
            expected: "a note where the edit loses no line".to_owned(),
            actual: current.hash.clone(),
        }
        .into());
    }
    cx.judge(&WriteIntent::new(
        path.clone(),
        WriteKind::Overwrite,
        plan.patched.text.as_bytes(),
        prior_of(Some(current)),
    ))
    .map_err(HandlerFailure::ConventionBlockedBeforeWrite)?;
    let guard = guard_for(Some(current));
    // r[impl versions.keep.confirmed]
    // A confirmed edit loses lines: what it replaces is kept first; a free one only adds.
    let outcome = if precheck.needs_confirmation {
        locked
            .write_keeping(plan.patched.text.as_bytes(), &guard)?
            .outcome
    } else {
        locked.write(plan.patched.text.as_bytes(), &guard)?
    };
    Ok(PartEditOutput {
        path: path.as_str().to_owned(),
        content_hash: outcome.hash,
        lines_removed: plan.patched.lines_removed,
        bytes_removed: plan.patched.bytes_removed,
    })
}

#[cfg(test)]
mod tests {
    use super::loses_a_line;

    #[test]
    fn only_a_lost_non_blank_line_is_a_loss() {
        assert!(!loses_a_line("", "new\n"));
        assert!(!loses_a_line("\n\n", "x\n"));
        assert!(!loses_a_line("a\nb\n", "a\nnew\nb\n"));
        assert!(loses_a_line("a\nb\n", "b\na\n"));
        assert!(loses_a_line("a\n", "a changed\n"));
        assert!(loses_a_line("a\r\n", "A\r\n"));
        assert!(!loses_a_line("a\r\n", "a\r\n"));
    }
}
