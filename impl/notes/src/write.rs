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
use tc_vault::note::split_frontmatter;
use tc_vault::vault::NoteContent;
use tc_vault::wiki::SealState;

use crate::common::{
    bytes, check_observed, check_prev_hash, exists_error, guard_for, kind_for, note, preflight,
    prior_of,
};

// ---------------------------------------------------------------- write_note

/// How `write_note` writes its content.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WriteMode {
    #[default]
    Overwrite,
    Append,
    Prepend,
    Create,
}

/// `write_note` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteNoteArgs {
    /// Vault-relative path of the note, ending in .md.
    #[schemars(length(min = 1, max = 4096))]
    pub path: String,
    /// The text to write.
    pub content: String,
    /// How the content is written.
    #[serde(default)]
    pub mode: WriteMode,
    /// The note's content_hash as last read; the call is refused with
    /// concurrent_modification if the note changed since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev_hash: Option<String>,
}

/// `write_note`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WriteNoteOutput {
    pub path: String,
    pub mode: WriteMode,
    /// Whether the note did not exist before.
    pub created: bool,
    /// The note's hash after the write; null after an append or prepend by a caller that
    /// may not read the note (spec vault.acl.results-readable-only).
    pub content_hash: Option<String>,
    /// The note's size after the write; null when `content_hash` is.
    pub bytes: Option<usize>,
}

#[derive(Debug)]
pub struct WriteNote;

/// The note after a write of `content` in `mode` onto `current`.
fn written_content(mode: WriteMode, current: Option<&NoteContent>, content: &str) -> Vec<u8> {
    let Some(current) = current.filter(|c| !c.bytes.is_empty()) else {
        return content.as_bytes().to_vec();
    };
    let old = current.text();
    match mode {
        WriteMode::Overwrite | WriteMode::Create => content.as_bytes().to_vec(),
        WriteMode::Append => {
            let mut out = old.into_owned();
            if !out.ends_with('\n') && !content.is_empty() {
                out.push('\n');
            }
            out.push_str(content);
            out.into_bytes()
        }
        WriteMode::Prepend => {
            // After the frontmatter block, which must stay the first thing in the note.
            let cut = split_frontmatter(&old).map_or(0, |span| old.len() - span.body.len());
            let mut out = String::with_capacity(old.len() + content.len() + 1);
            out.push_str(&old[..cut]);
            out.push_str(content);
            if !content.ends_with('\n') && !content.is_empty() {
                out.push('\n');
            }
            out.push_str(&old[cut..]);
            out.into_bytes()
        }
    }
}

/// What a write would do, kept from the precheck for the summary.
struct WritePlan {
    old: Option<NoteContent>,
    new: Vec<u8>,
}

// r[impl tools.summary.write]
/// A write's summary: the note, old and new sizes, and a short unified diff.
fn write_summary(headline: String, path: &str, old: Option<&NoteContent>, new: &[u8]) -> Summary {
    let old_text = old.map(|c| c.text().into_owned()).unwrap_or_default();
    let new_text = String::from_utf8_lossy(new);
    Summary::new(headline)
        .target(path)
        .detail(format!(
            "size: {} -> {}",
            old.map_or_else(|| "absent".to_owned(), |c| bytes(c.bytes.len())),
            bytes(new.len())
        ))
        .diff(&old_text, &new_text)
}

impl Tool for WriteNote {
    type Args = WriteNoteArgs;
    type Output = WriteNoteOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write_note",
            description: "Write a note. mode: overwrite (default) replaces it, append/prepend add to it, create refuses if it exists. Creates missing folders. Replacing a note that is not empty needs the human's confirmation.",
            annotations: Annotations::writes(true, false),
            scopes: &["write:notes"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::PathAcl),
        }
    }

    fn precheck(&self, cx: &ToolCx<'_>, args: &WriteNoteArgs) -> Result<Precheck, ToolError> {
        let path = note(&args.path)?;
        // r[impl tools.prev-hash.readable]
        // Compared for anyone, a prev_hash would answer "is the note this?" for each guess.
        if args.prev_hash.is_some() {
            cx.require_read(&path).map_err(|refusal| {
                refusal.detail(
                    "because",
                    serde_json::json!("prev_hash is compared with the note's content; without read access send the write without it"),
                )
            })?;
        }
        let current = cx.vault().read_if_exists(&path)?;
        check_prev_hash(&path, args.prev_hash.as_deref(), current.as_ref())?;
        if args.mode == WriteMode::Create && current.is_some() {
            return Err(exists_error(&path));
        }
        let new = written_content(args.mode, current.as_ref(), &args.content);
        preflight(
            cx,
            &WriteIntent::new(
                path.clone(),
                kind_for(current.as_ref()),
                &new,
                prior_of(current.as_ref()),
            ),
        )?;
        // r[impl tools.write-note.confirm]
        let needs_confirmation = args.mode == WriteMode::Overwrite
            && current.as_ref().is_some_and(|c| !c.bytes.is_empty());
        Ok(Precheck {
            needs_confirmation,
            acl: vec![(AclOp::Write, path)],
            payload: Some(Arc::new(WritePlan { old: current, new })),
        })
    }

    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &WriteNoteArgs,
        precheck: &Precheck,
        _state: &TargetState,
    ) -> Summary {
        let plan = precheck
            .payload
            .as_ref()
            .and_then(|p| p.downcast_ref::<WritePlan>());
        match plan {
            Some(plan) => write_summary(
                format!("replace the content of {}", args.path),
                &args.path,
                plan.old.as_ref(),
                &plan.new,
            ),
            None => Summary::targets_only("write_note", precheck),
        }
    }

    // r[impl vault.write.locked]
    /// Under the note's lock, so that for every server on the cache directory the read, the
    /// `prev_hash` check, the new content and the write are one step. An append or prepend
    /// that needed no confirmation extends the note as it is now (the conventions judged
    /// again on what will be written), so racing appends all land; any other write must
    /// find the note as the call's state observed it.
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &WriteNoteArgs,
        precheck: &Precheck,
        state: &TargetState,
    ) -> Result<WriteNoteOutput, HandlerFailure> {
        let path = note(&args.path)?;
        cx.vault().with_note_lock(&path, |locked| {
            let current = locked.read_if_exists()?;
            check_prev_hash(&path, args.prev_hash.as_deref(), current.as_ref())?;
            let new = written_content(args.mode, current.as_ref(), &args.content);
            let extends = matches!(args.mode, WriteMode::Append | WriteMode::Prepend)
                && !precheck.needs_confirmation;
            if extends {
                let intent = WriteIntent::new(
                    path.clone(),
                    kind_for(current.as_ref()),
                    &new,
                    prior_of(current.as_ref()),
                );
                cx.judge(&intent)
                    .map_err(HandlerFailure::ConventionBlockedBeforeWrite)?;
            } else {
                check_observed(state, &path, current.as_ref())?;
            }
            let outcome = locked.write(&new, &guard_for(current.as_ref()))?;
            // r[impl vault.acl.results-readable-only]
            // An append's hash and size are of the note's old bytes too.
            let all_its_own = matches!(args.mode, WriteMode::Overwrite | WriteMode::Create);
            let shown = all_its_own || cx.may_read(&path);
            Ok(WriteNoteOutput {
                path: path.as_str().to_owned(),
                mode: args.mode,
                created: outcome.created,
                content_hash: shown.then_some(outcome.hash),
                bytes: shown.then_some(new.len()),
            })
        })
    }
}

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

    fn precheck(&self, cx: &ToolCx<'_>, args: &CommitWikiPageArgs) -> Result<Precheck, ToolError> {
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
            payload: current.map(|c| Arc::new(c) as _),
        })
    }

    // r[impl drift.bind.commit-wiki-page]
    /// The page's current content and its seal.
    fn state(
        &self,
        cx: &ToolCx<'_>,
        args: &CommitWikiPageArgs,
        _precheck: &Precheck,
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
            payload: None,
        })
    }

    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &CommitWikiPageArgs,
        precheck: &Precheck,
        _state: &TargetState,
    ) -> Summary {
        let old = precheck
            .payload
            .as_ref()
            .and_then(|p| p.downcast_ref::<NoteContent>());
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
        _precheck: &Precheck,
        state: &TargetState,
    ) -> Result<CommitWikiPageOutput, HandlerFailure> {
        let path = note(&args.path)?;
        // r[impl vault.write.locked]
        // The page's seal is stored under the same lock, so racing commits leave the seal of
        // the page that won.
        cx.vault().with_note_lock(&path, |locked| {
            let current = locked.read_if_exists()?;
            check_observed(state, &path, current.as_ref())?;
            let outcome = locked.write(args.content.as_bytes(), &guard_for(current.as_ref()))?;
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
