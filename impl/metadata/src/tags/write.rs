//! `add_tag` and `remove_tag` (spec/metadata.md `metadata.add-tag`, `metadata.remove-tag`;
//! spec/tools.md `tools.compose.remove-tag`; spec/drift.md `drift.bind.remove-tag`).
//!
//! Adding is free: a frontmatter list gains an item through the lossless editor, or the note
//! gains a whole line. Removing from the frontmatter is as free as `update_frontmatter`'s
//! removal; removing an inline tag changes a body line, so that call needs confirmation,
//! bound to the note's content (the default `path_state` of the declared path).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_gate::ConfirmationTargets;
use tc_tools::note_write::{check_observed, guard_for, not_found, note, prior_of};
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx, ToolError,
    ToolSpec,
};
use tc_vault::acl::AclOp;
use tc_vault::conventions::{WriteIntent, WriteKind};
use tc_vault::error::VaultError;
use tc_vault::path::VaultPath;
use tc_vault::vault::{LockedNote, NoteContent};

use super::edit::{self, Edited};
use super::{Location, tag_argument};

/// Writes `new` over `current` under the note's lock, after the conventions judged it; a
/// `confirmed` call keeps what it replaces as a version first.
fn write_over(
    cx: &ToolCx<'_>,
    locked: &LockedNote<'_>,
    path: &VaultPath,
    current: &NoteContent,
    (new, confirmed): (&str, bool),
) -> Result<String, HandlerFailure> {
    cx.judge(&WriteIntent::new(
        path.clone(),
        WriteKind::Overwrite,
        new.as_bytes(),
        prior_of(Some(current)),
    ))
    .map_err(HandlerFailure::ConventionBlockedBeforeWrite)?;
    // r[impl versions.keep.links-and-tags]
    if confirmed {
        return Ok(locked
            .write_keeping(new.as_bytes(), &guard_for(Some(current)))?
            .outcome
            .hash);
    }
    Ok(locked
        .write(new.as_bytes(), &guard_for(Some(current)))?
        .hash)
}

fn text_of<'a>(path: &VaultPath, current: &'a NoteContent) -> Result<&'a str, ToolError> {
    Ok(current.utf8(path)?)
}

/// One tag a call changed, for results.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ChangedTag {
    pub old: String,
    pub new: Option<String>,
    pub inline: bool,
}

impl From<&edit::TagChange> for ChangedTag {
    fn from(change: &edit::TagChange) -> Self {
        ChangedTag {
            old: change.old.clone(),
            new: change.new.clone(),
            inline: change.inline,
        }
    }
}

// ---------------------------------------------------------------- add_tag

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AddLocation {
    #[default]
    Frontmatter,
    Inline,
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddTagArgs {
    #[schemars(length(min = 1, max = 4096))]
    pub path: String,
    #[schemars(length(min = 1, max = 1024))]
    pub tag: String,
    #[serde(default)]
    pub location: AddLocation,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AddTagOutput {
    pub path: String,
    /// False when the note carried the tag there already.
    pub added: bool,
    pub content_hash: String,
}

#[derive(Debug)]
pub struct AddTag;

impl Tool for AddTag {
    type Args = AddTagArgs;
    type Output = AddTagOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "add_tag",
            description: "Add a tag to a note's frontmatter tags (lossless), or with location=inline as a new last line. Never asks.",
            annotations: Annotations::writes(false, true),
            scopes: &["write:notes"],
            changes_notes: true,
            gating: Gating::NEVER,
        }
    }

    fn check(&self, args: &AddTagArgs) -> Result<(), ToolError> {
        tag_argument(&args.tag, "/tag").map(|_| ())
    }

    fn precheck(&self, _cx: &ToolCx<'_>, args: &AddTagArgs) -> Result<Precheck, ToolError> {
        let path = note(&args.path)?;
        Ok(Precheck {
            needs_confirmation: false,
            acl: vec![(AclOp::Write, path)],
            plan: Arc::new(()),
        })
    }

    // r[impl metadata.add-tag]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &AddTagArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<AddTagOutput, HandlerFailure> {
        let path = note(&args.path)?;
        let (tag, _) = tag_argument(&args.tag, "/tag")?;
        cx.vault().with_note_lock(&path, |locked| {
            let current = locked.read_if_exists()?.ok_or_else(|| not_found(&path))?;
            let text = text_of(&path, &current)?;
            let new = match args.location {
                AddLocation::Frontmatter => edit::add_to_frontmatter(text, &tag)
                    .map_err(|e| ToolError::from(e.at(&path)))?,
                AddLocation::Inline => edit::add_inline(text, &tag),
            };
            let (added, content_hash) = match new {
                Some(new) => (
                    true,
                    write_over(cx, locked, &path, &current, (&new, false))?,
                ),
                None => (false, current.hash.clone()),
            };
            Ok(AddTagOutput {
                path: path.as_str().to_owned(),
                added,
                content_hash,
            })
        })
    }
}

// ---------------------------------------------------------------- remove_tag

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveTagArgs {
    #[schemars(length(min = 1, max = 4096))]
    pub path: String,
    #[schemars(length(min = 1, max = 1024))]
    pub tag: String,
    #[serde(default)]
    pub location: Location,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RemoveTagOutput {
    pub path: String,
    pub removed: Vec<ChangedTag>,
    pub content_hash: String,
}

#[derive(Debug)]
pub struct RemoveTag;

/// The note without the tag in the places `location` names.
pub fn removal(
    path: &VaultPath,
    text: &str,
    tag: &str,
    location: Location,
) -> Result<Edited, ToolError> {
    let mut out = Edited::default();
    let mut current = text.to_owned();
    if matches!(location, Location::Frontmatter | Location::Both) {
        current = edit::remove_from_frontmatter(&current, tag, &mut out)
            .map_err(|e| ToolError::from(e.at(path)))?;
    }
    if matches!(location, Location::Inline | Location::Both) {
        current = edit::remove_inline(&current, tag, &mut out);
    }
    out.text = current;
    Ok(out)
}

fn removal_of(cx: &ToolCx<'_>, args: &RemoveTagArgs) -> Result<(NoteContent, Edited), ToolError> {
    let path = note(&args.path)?;
    // The summary and the refusals show the note's lines: the caller must be able to read it.
    cx.require_read(&path)?;
    let (_, tag) = tag_argument(&args.tag, "/tag")?;
    let current = cx
        .vault()
        .read_if_exists(&path)?
        .ok_or_else(|| not_found(&path))?;
    let edited = removal(&path, text_of(&path, &current)?, &tag, args.location)?;
    Ok((current, edited))
}

impl Tool for RemoveTag {
    type Args = RemoveTagArgs;
    type Output = RemoveTagOutput;
    type Plan = Edited;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "remove_tag",
            description: "Remove a tag from a note: location frontmatter (default, free), inline or both; removing an inline tag needs the human's confirmation.",
            annotations: Annotations::writes(true, true),
            scopes: &["write:notes"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::PathAcl),
        }
    }

    fn check(&self, args: &RemoveTagArgs) -> Result<(), ToolError> {
        tag_argument(&args.tag, "/tag").map(|_| ())
    }

    // r[impl metadata.remove-tag]
    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &RemoveTagArgs,
    ) -> Result<Precheck<Self::Plan>, ToolError> {
        let path = note(&args.path)?;
        let (_, edited) = removal_of(cx, args)?;
        Ok(Precheck {
            needs_confirmation: edited.touches_body(),
            acl: vec![(AclOp::Read, path.clone()), (AclOp::Write, path)],
            plan: Arc::new(edited),
        })
    }

    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &RemoveTagArgs,
        precheck: &Precheck<Self::Plan>,
        _state: &TargetState,
    ) -> Summary {
        let changes: Vec<String> = precheck
            .plan
            .changes
            .iter()
            .map(|c| {
                let place = if c.inline { "inline" } else { "frontmatter" };
                format!("- #{} ({place})", c.old)
            })
            .collect();
        Summary::new(format!("remove tag {} from {}", args.tag, args.path))
            .target(&args.path)
            .details_named(changes, |n| format!("… and {n} more"))
    }

    // r[impl drift.bind.remove-tag]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &RemoveTagArgs,
        precheck: &Precheck<Self::Plan>,
        state: &TargetState,
    ) -> Result<RemoveTagOutput, HandlerFailure> {
        let path = note(&args.path)?;
        let (_, tag) = tag_argument(&args.tag, "/tag")?;
        cx.vault().with_note_lock(&path, |locked| {
            let current = locked.read_if_exists()?.ok_or_else(|| not_found(&path))?;
            check_observed(state, &path, Some(&current))?;
            let edited = removal(&path, text_of(&path, &current)?, &tag, args.location)?;
            // A free call whose removal would now change a body line (the note changed
            // since the precheck) is refused, never written unconfirmed.
            if edited.touches_body() && !precheck.needs_confirmation {
                return Err(VaultError::ConcurrentModification {
                    path: path.as_str().to_owned(),
                    expected: "a note where the removal changes no body line".to_owned(),
                    actual: current.hash.clone(),
                }
                .into());
            }
            let content_hash = if edited.changes.is_empty() {
                current.hash.clone()
            } else {
                write_over(
                    cx,
                    locked,
                    &path,
                    &current,
                    (&edited.text, precheck.needs_confirmation),
                )?
            };
            Ok(RemoveTagOutput {
                path: path.as_str().to_owned(),
                removed: edited.changes.iter().map(ChangedTag::from).collect(),
                content_hash,
            })
        })
    }
}
