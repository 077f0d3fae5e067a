//! `write_note` and `commit_wiki_page` (spec/tools.md `tools.write-note`,
//! `tools.write-note.confirm`, `tools.write-note.create`, `tools.commit-wiki-page`;
//! spec/drift.md `drift.bind.path-tools`, `drift.bind.commit-wiki-page`).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_gate::{ConfirmationTargets, fingerprint_custom};
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx, ToolError,
    ToolSpec,
};
use tc_vault::acl::AclOp;
use tc_vault::conventions::WriteIntent;
use tc_vault::vault::NoteContent;
use tc_vault::wiki::SealState;

use tc_tools::note_write::write_summary;

use crate::common::{check_observed, guard_for, kind_for, note, preflight, prior_of};

pub use tc_tools::note_write::{WriteMode, WriteNote, WriteNoteArgs, WriteNoteOutput};

// ---------------------------------------------------------------- commit_wiki_page

/// `commit_wiki_page` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommitWikiPageArgs {
    /// The page, ending in .md.
    #[schemars(length(min = 1, max = 4096))]
    pub path: String,
    /// The generated page.
    pub content: String,
}

/// `commit_wiki_page`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CommitWikiPageOutput {
    pub path: String,
    pub created: bool,
    pub content_hash: String,
    /// Always true: the page is sealed as generated.
    pub sealed: bool,
}

#[derive(Debug)]
pub struct CommitWikiPage;

impl Tool for CommitWikiPage {
    type Args = CommitWikiPageArgs;
    type Output = CommitWikiPageOutput;
    type Plan = Option<NoteContent>;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "commit_wiki_page",
            description: "Write a generated wiki page and seal it. Overwriting a page a person has edited since it was sealed (or a note that was never sealed) needs the human's confirmation.",
            annotations: Annotations::writes(true, true),
            scopes: &["write:notes"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::Custom),
        }
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &CommitWikiPageArgs,
    ) -> Result<Precheck<Self::Plan>, ToolError> {
        let path = note(&args.path)?;
        let current = cx.vault().read_if_exists(&path)?;
        preflight(
            cx,
            &WriteIntent::new(
                path.clone(),
                kind_for(current.as_ref()),
                args.content.as_bytes(),
                prior_of(current.as_ref()),
            ),
        )?;
        let seal = cx
            .binding
            .sealer
            .state(&path, current.as_ref().map(|c| c.bytes.as_slice()))?;
        Ok(Precheck {
            needs_confirmation: seal == SealState::Edited,
            acl: vec![(AclOp::Write, path)],
            plan: Arc::new(current),
        })
    }

    // r[impl drift.bind.commit-wiki-page]
    /// The page's current content and its seal.
    fn state(
        &self,
        cx: &ToolCx<'_>,
        args: &CommitWikiPageArgs,
        _precheck: &Precheck<Self::Plan>,
    ) -> Result<TargetState, ToolError> {
        let path = note(&args.path)?;
        let current = cx.vault().read_if_exists(&path)?;
        let seal = cx
            .binding
            .sealer
            .state(&path, current.as_ref().map(|c| c.bytes.as_slice()))?;
        let hash = current.as_ref().map(|c| c.hash.clone());
        Ok(TargetState {
            fp: fingerprint_custom(&[
                b"commit_wiki_page",
                path.as_str().as_bytes(),
                hash.as_deref().unwrap_or("absent").as_bytes(),
                seal.label().as_bytes(),
            ]),
            observed: vec![(path, hash)],
            seen: Default::default(),
        })
    }

    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &CommitWikiPageArgs,
        precheck: &Precheck<Self::Plan>,
        _state: &TargetState,
    ) -> Summary {
        let old = (*precheck.plan).as_ref();
        write_summary(
            format!(
                "overwrite {}, which a person edited since it was generated (or was never generated)",
                args.path
            ),
            &args.path,
            old,
            args.content.as_bytes(),
        )
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &CommitWikiPageArgs,
        precheck: &Precheck<Self::Plan>,
        state: &TargetState,
    ) -> Result<CommitWikiPageOutput, HandlerFailure> {
        let path = note(&args.path)?;
        // r[impl vault.write.locked]
        // The page's seal is stored under the same lock, so racing commits leave the seal of
        // the page that won.
        cx.vault().with_note_lock(&path, |locked| {
            let current = locked.read_if_exists()?;
            check_observed(state, &path, current.as_ref())?;
            let guard = guard_for(current.as_ref());
            // r[impl versions.keep.confirmed]
            let outcome = if precheck.needs_confirmation {
                locked
                    .write_keeping(args.content.as_bytes(), &guard)?
                    .outcome
            } else {
                locked.write(args.content.as_bytes(), &guard)?
            };
            cx.binding.sealer.store(&path, args.content.as_bytes())?;
            Ok(CommitWikiPageOutput {
                path: path.as_str().to_owned(),
                created: outcome.created,
                content_hash: outcome.hash,
                sealed: true,
            })
        })
    }
}
