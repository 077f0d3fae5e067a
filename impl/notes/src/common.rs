//! What the note tools share: the checks before the gate (`prev_hash`, existence, the
//! conventions preflight) and the guards in the handler that make a write apply to exactly
//! the state its approval covers (spec/tools.md `tools.prev-hash`, `tools.not-found`;
//! spec/release.md `release.preflight`).
//!
//! A write is guarded by the content hash observed for its target when the state was taken
//! (`HashIs`, or create-only when the target was missing), so a note changed after the drift
//! check is refused as `concurrent_modification`, never silently overwritten. The one
//! exception is `write_note`'s unconfirmed `append` and `prepend`, which extend the note as
//! they find it under its lock (spec `vault.write.locked`).
//!
//! The link tools plan over the notes the vault's index names as possibly linking to the
//! target when the vault has an index that can answer ([`link_sources`], spec/index.md
//! `index.links.candidates`), and over every note otherwise; either way each planned note is
//! read from its file and its links judged there ([`plan_over`]), so the plan, and the state
//! its confirmation binds, is the same on both paths.

use tc_tools::context::LinkCandidates;
use tc_tools::{HandlerFailure, TargetState, ToolCx, ToolError};
use tc_vault::conventions::{ContentFacts, Prior, WriteIntent, WriteKind};
use tc_vault::error::VaultError;
use tc_vault::links::{LinkResolver, LinkRewrite, rewrite_links};
use tc_vault::path::{FolderPath, VaultPath};
use tc_vault::rewrite::{RewritePlan, TouchedNote};
use tc_vault::vault::{NoteContent, Precondition};

/// A note path argument.
pub(crate) fn note(path: &str) -> Result<VaultPath, ToolError> {
    Ok(VaultPath::parse_note(path)?)
}

pub(crate) fn not_found(path: &VaultPath) -> ToolError {
    VaultError::NoteNotFound {
        path: path.as_str().to_owned(),
    }
    .into()
}

pub(crate) fn exists_error(path: &VaultPath) -> ToolError {
    VaultError::NoteExists {
        path: path.as_str().to_owned(),
    }
    .into()
}

// r[impl tools.prev-hash]
pub(crate) fn check_prev_hash(
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

pub(crate) fn prior_of(current: Option<&NoteContent>) -> Prior {
    match current {
        Some(content) => Prior::Known(ContentFacts::of(&content.bytes)),
        None => Prior::Absent,
    }
}

pub(crate) fn kind_for(current: Option<&NoteContent>) -> WriteKind {
    if current.is_some() {
        WriteKind::Overwrite
    } else {
        WriteKind::Create
    }
}

/// The write gate's preflight: a refusal here happens before the confirmation gate.
pub(crate) fn preflight(cx: &ToolCx<'_>, intent: &WriteIntent) -> Result<(), ToolError> {
    cx.judge(intent)
        .map_err(|blocked| ToolError::convention(&blocked))
}

/// Reads `path` in the handler and checks it is still in the state the approval covers.
pub(crate) fn read_as_observed(
    cx: &ToolCx<'_>,
    state: &TargetState,
    path: &VaultPath,
) -> Result<Option<NoteContent>, HandlerFailure> {
    let current = cx.vault().read_if_exists(path)?;
    check_observed(state, path, current.as_ref())?;
    Ok(current)
}

/// Checks that `current`, read in the handler, is the state observed for `path` when the
/// call's state was taken (`concurrent_modification` otherwise).
pub(crate) fn check_observed(
    state: &TargetState,
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
pub(crate) fn guard_for(current: Option<&NoteContent>) -> Precondition {
    match current {
        Some(content) => Precondition::HashIs(content.hash.clone()),
        None => Precondition::MustNotExist,
    }
}

// r[impl results.bounded-mutations]
/// The most paths a result of a tool that changes notes lists (the counts say how many in
/// all), so such a result always fits the smallest cap the config accepts.
pub(crate) const LISTED_PATHS: usize = 100;

/// A size in bytes for a summary line.
pub(crate) fn bytes(n: usize) -> String {
    format!("{n} bytes")
}

// r[impl index.links.candidates]
/// The vault's files and the notes that may link to one of `names`, from the vault's index
/// (reconciled with the files first); `None` when the vault has no index or it cannot
/// answer yet, and the caller scans the vault.
pub(crate) fn link_sources(
    cx: &ToolCx<'_>,
    names: &[&str],
) -> Result<Option<LinkCandidates>, ToolError> {
    match cx.binding.index() {
        Some(index) => index.link_candidates(names),
        None => Ok(None),
    }
}

/// What `rewrite` would change in `notes` (those under `folder` that `include` lets
/// through), each note read from its file: the index only chose which notes to read.
pub(crate) fn plan_over(
    cx: &ToolCx<'_>,
    notes: &[VaultPath],
    folder: &FolderPath,
    resolver: &LinkResolver,
    rewrite: &LinkRewrite<'_>,
    include: &dyn Fn(&VaultPath) -> bool,
) -> Result<RewritePlan, ToolError> {
    let mut plan = RewritePlan::default();
    for path in notes {
        if !path.is_note() || !path.is_within(folder) || !include(path) {
            continue;
        }
        let Some(content) = cx.vault().read_if_exists(path)? else {
            // Gone since the index saw it: nothing to rewrite.
            continue;
        };
        let Ok(text) = std::str::from_utf8(&content.bytes) else {
            continue;
        };
        if let Some((new_content, links)) = rewrite_links(text, resolver, rewrite) {
            plan.notes.push(TouchedNote {
                path: path.clone(),
                hash: content.hash,
                new_content,
                links,
            });
        }
    }
    plan.notes.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(plan)
}
