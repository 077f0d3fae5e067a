//! The notes a move must rewrite so every link to the moved note still reaches it: wikilinks,
//! embeds, Markdown links and canvases' file references (spec/tools.md
//! `tools.move-note.backlinks-declared`; spec/index.md `index.links.candidates`). The note
//! tools and the bulk tools plan through these same functions.
//!
//! The link tools plan over the notes the vault's index names as possibly linking to the
//! target when the vault has an index that can answer ([`link_sources`]), and over every
//! note otherwise; either way each planned note is read from its file and its links judged
//! there ([`plan_over`]), so the plan, and the state its confirmation binds, is the same on
//! both paths.

use tc_vault::links::{LinkMatcher, LinkResolver, LinkRewrite};
use tc_vault::path::{FolderPath, VaultPath};
use tc_vault::rewrite::{
    NoteRewrite, RewritePlan, build_resolver, is_canvas, plan_backlinks, plan_file,
};

use crate::context::LinkCandidates;
use crate::{ToolCx, ToolError};

// r[impl index.links.candidates]
/// The vault's files and the notes that may link to one of `names`, from the vault's index
/// (reconciled with the files first); `None` when the vault has no index or it cannot
/// answer yet, and the caller scans the vault.
pub fn link_sources(cx: &ToolCx<'_>, names: &[&str]) -> Result<Option<LinkCandidates>, ToolError> {
    match cx.binding.index() {
        Some(index) => index.link_candidates(names),
        None => Ok(None),
    }
}

/// What `rewrite` would change in `files` (the notes and canvases under `folder` that
/// `include` lets through), each read from its file: the index only chose which to read.
pub fn plan_over(
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
pub fn with_canvases(notes: &[VaultPath], resolver: &LinkResolver) -> Vec<VaultPath> {
    let mut files: Vec<VaultPath> = notes.to_vec();
    files.extend(resolver.files_with_extension("canvas").cloned());
    files
}

// r[impl tools.move-note.backlinks-declared]
/// The backlinks a move rewrites, over every note the caller may read (a note it may not
/// read is not revealed). Each of them is then declared for the folder ACL as a write, so a
/// backlinking note the caller may not change refuses the move by name instead of being
/// left with a broken link.
pub fn move_backlinks(
    cx: &ToolCx<'_>,
    from: &VaultPath,
    to: &VaultPath,
) -> Result<RewritePlan, ToolError> {
    let acl = &cx.binding.acl;
    let scopes = &cx.caller.scopes;
    let include = |p: &VaultPath| acl.can_read_at(cx.vault().root(), p, scopes) || p == from;
    let Some(found) = link_sources(cx, &[from.as_str()])? else {
        let resolver = build_resolver(cx.vault())?;
        let (plan, _) = plan_backlinks(cx.vault(), &resolver, from, to, &include)?;
        return Ok(plan);
    };
    // r[impl metadata.links.move-kinds]
    // r[impl drift.bind.move-note.canvases]
    // The same plan as plan_backlinks, over the notes the index names as linking to a file
    // of the moved note's name (no other note can hold a link that resolves to it), the
    // canvases, and the moved note itself (its relative Markdown links follow it).
    let resolver = found.resolver.as_ref();
    // The vault's files after the move: the moved note's own relative links are read
    // against them from its new folder, and link texts for `to` are chosen among them.
    let mut after = resolver.clone();
    after.remove(from);
    after.insert(to.clone());
    let new_target = after.link_text_for(to);
    let matcher = LinkMatcher::Resolved(from.clone());
    let rewrite = NoteRewrite {
        links: LinkRewrite {
            matcher: &matcher,
            new_target: &new_target,
            include_embeds: true,
        },
        new_file: Some(to),
        after: Some(&after),
        moved: Some((from, to)),
    };
    let mut files = with_canvases(&found.notes, resolver);
    files.push(from.clone());
    let mut plan = plan_over(
        cx,
        &files,
        &FolderPath::root(),
        resolver,
        &rewrite,
        &include,
    )?;
    for note in &mut plan.notes {
        if &note.path == from {
            note.path = to.clone();
        }
    }
    plan.notes.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(plan)
}
