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
use tc_tools::{ToolCx, ToolError};
use tc_vault::links::LinkResolver;
use tc_vault::path::{FolderPath, VaultPath};
use tc_vault::rewrite::{NoteRewrite, RewritePlan, is_canvas, plan_file};

pub(crate) use tc_tools::note_write::{
    check_observed, check_prev_hash, exists_error, guard_for, kind_for, not_found, note, preflight,
    prior_of, read_as_observed,
};

// r[impl results.bounded-mutations]
/// The most paths a result of a tool that changes notes lists (the counts say how many in
/// all), so such a result always fits the smallest cap the config accepts.
pub(crate) const LISTED_PATHS: usize = 100;

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

/// What `rewrite` would change in `files` (the notes and canvases under `folder` that
/// `include` lets through), each read from its file: the index only chose which to read.
pub(crate) fn plan_over(
    cx: &ToolCx<'_>,
    files: &[VaultPath],
    folder: &FolderPath,
    resolver: &LinkResolver,
    rewrite: &NoteRewrite<'_>,
    include: &dyn Fn(&VaultPath) -> bool,
) -> Result<RewritePlan, ToolError> {
    let mut plan = RewritePlan::default();
    for path in files {
        if !(path.is_note() || is_canvas(path)) || !path.is_within(folder) || !include(path) {
            continue;
        }
        if let Some(touched) = plan_file(cx.vault(), path, resolver, rewrite)? {
            plan.notes.push(touched);
        }
    }
    plan.notes.sort_by(|a, b| a.path.cmp(&b.path));
    plan.notes.dedup_by(|a, b| a.path == b.path);
    Ok(plan)
}

// r[impl vault.links.canvas]
/// The notes the index names for a rewrite, with every canvas of the vault (a canvas's
/// references are not in the index, and a vault holds few canvases).
pub(crate) fn with_canvases(notes: &[VaultPath], resolver: &LinkResolver) -> Vec<VaultPath> {
    let mut files: Vec<VaultPath> = notes.to_vec();
    files.extend(resolver.files_with_extension("canvas").cloned());
    files
}
