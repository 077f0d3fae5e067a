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
use tc_vault::links::{LinkResolver, LinkRewrite, rewrite_links};
use tc_vault::path::{FolderPath, VaultPath};
use tc_vault::rewrite::{RewritePlan, TouchedNote};

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
