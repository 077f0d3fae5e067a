//! Writing a note as `write_note` does: the service every tool that writes a whole note goes
//! through (spec/tools.md `tools.write-note`, `tools.write-note.confirm`,
//! `tools.write-note.create`, `tools.prev-hash`, `tools.not-found`; spec/drift.md
//! `drift.bind.path-tools`; spec/release.md `release.preflight`).
//!
//! It lives with the tool framework, below every family, so that the note tools and the
//! index's `commit_capture` (which gates exactly as `write_note` would for its path) share one
//! implementation without one family depending on another.
//!
//! A write is guarded by the content hash observed for its target when the state was taken
//! (`HashIs`, or create-only when the target was missing), so a note changed after the drift
//! check is refused as `concurrent_modification`, never silently overwritten. The one
//! exception is `write_note`'s unconfirmed `append` and `prepend`, which extend the note as
//! they find it under its lock (spec `vault.write.locked`).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_gate::ConfirmationTargets;
use tc_vault::acl::AclOp;
use tc_vault::conventions::{ContentFacts, Prior, WriteIntent, WriteKind};
use tc_vault::error::VaultError;
use tc_vault::note::split_frontmatter;
use tc_vault::path::VaultPath;
use tc_vault::vault::{NoteContent, Precondition};

use crate::{
    Annotations, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx, ToolError,
    ToolSpec,
};

/// A note path argument.
pub fn note(path: &str) -> Result<VaultPath, ToolError> {
    Ok(VaultPath::parse_note(path)?)
}

pub fn not_found(path: &VaultPath) -> ToolError {
    VaultError::NoteNotFound {
        path: path.as_str().to_owned(),
    }
    .into()
}

pub fn exists_error(path: &VaultPath) -> ToolError {
    VaultError::NoteExists {
        path: path.as_str().to_owned(),
    }
    .into()
}

// r[impl tools.prev-hash]
pub fn check_prev_hash(
    path: &VaultPath,
    prev_hash: Option<&str>,
    current: Option<&NoteContent>,
) -> Result<(), ToolError> {
    let Some(expected) = prev_hash else {
        return Ok(());
    };
    let actual = current.map_or("absent", |c| c.hash.as_str());
    if actual == expected {
        Ok(())
    } else {
        Err(VaultError::ConcurrentModification {
            path: path.as_str().to_owned(),
            expected: expected.to_owned(),
            actual: actual.to_owned(),
        }
        .into())
    }
}

pub fn prior_of(current: Option<&NoteContent>) -> Prior {
    match current {
        Some(content) => Prior::Known(ContentFacts::of(&content.bytes)),
        None => Prior::Absent,
    }
}

pub fn kind_for(current: Option<&NoteContent>) -> WriteKind {
    if current.is_some() {
        WriteKind::Overwrite
    } else {
        WriteKind::Create
    }
}

/// The write gate's preflight: a refusal here happens before the confirmation gate.
pub fn preflight(cx: &ToolCx<'_>, intent: &WriteIntent) -> Result<(), ToolError> {
    cx.judge(intent)
        .map_err(|blocked| ToolError::convention(&blocked))
}

/// Reads `path` in the handler and checks it is still in the state the approval covers.
pub fn read_as_observed<S: ?Sized>(
    cx: &ToolCx<'_>,
    state: &TargetState<S>,
    path: &VaultPath,
) -> Result<Option<NoteContent>, HandlerFailure> {
    let current = cx.vault().read_if_exists(path)?;
    check_observed(state, path, current.as_ref())?;
    Ok(current)
}

/// Checks that `current`, read in the handler, is the state observed for `path` when the
/// call's state was taken (`concurrent_modification` otherwise).
pub fn check_observed<S: ?Sized>(
    state: &TargetState<S>,
    path: &VaultPath,
    current: Option<&NoteContent>,
) -> Result<(), HandlerFailure> {
    if let Some(observed) = state.observed_hash(path) {
        let actual = current.map(|c| c.hash.as_str());
        if actual != observed {
            return Err(VaultError::ConcurrentModification {
                path: path.as_str().to_owned(),
                expected: observed.unwrap_or("absent").to_owned(),
                actual: actual.unwrap_or("absent").to_owned(),
            }
            .into());
        }
    }
    Ok(())
}

/// The write precondition matching what was observed at `path`.
pub fn guard_for(current: Option<&NoteContent>) -> Precondition {
    match current {
        Some(content) => Precondition::HashIs(content.hash.clone()),
        None => Precondition::MustNotExist,
    }
}

/// A size in bytes for a summary line.
pub fn bytes(n: usize) -> String {
    format!("{n} bytes")
}

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
#[derive(Debug)]
pub struct WritePlan {
    old: Option<NoteContent>,
    new: Vec<u8>,
}

// r[impl tools.summary.write]
/// A write's summary: the note, old and new sizes, and a short unified diff.
pub fn write_summary(
    headline: String,
    path: &str,
    old: Option<&NoteContent>,
    new: &[u8],
) -> Summary {
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
    type Plan = WritePlan;
    type Seen = ();

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

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &WriteNoteArgs,
    ) -> Result<Precheck<WritePlan>, ToolError> {
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
            plan: Arc::new(WritePlan { old: current, new }),
        })
    }

    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &WriteNoteArgs,
        precheck: &Precheck<WritePlan>,
        _state: &TargetState,
    ) -> Summary {
        let plan = &precheck.plan;
        write_summary(
            format!("replace the content of {}", args.path),
            &args.path,
            plan.old.as_ref(),
            &plan.new,
        )
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
        precheck: &Precheck<WritePlan>,
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
            // r[impl versions.keep.confirmed]
            // A confirmed overwrite keeps what it replaces, so restore_note can undo it.
            let guard = guard_for(current.as_ref());
            let outcome = if precheck.needs_confirmation {
                locked.write_keeping(&new, &guard)?.outcome
            } else {
                locked.write(&new, &guard)?
            };
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
