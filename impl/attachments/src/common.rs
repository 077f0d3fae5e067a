//! What the attachment tools share (spec/attachments.md `attachments.paths`,
//! `attachments.not-found`, `attachments.conventions`): an attachment path is any vault path
//! that is not a note (`.obsidian/`, `.git/`, `.trash/` and paths out of the vault are refused
//! by the path parser itself); a missing one is `attachment_not_found`; the write gate judges
//! it by `forbidWrites` alone.

use serde_json::json;
use tc_tools::{ErrorCode, ToolCx, ToolError};
use tc_vault::VaultPath;
use tc_vault::conventions::{Prior, WriteIntent, WriteKind};
use tc_vault::error::VaultError;
use tc_vault::links::{LinkMatcher, LinkResolver, LinkRewrite};
use tc_vault::rewrite::{NoteRewrite, RewritePlan, build_resolver, is_canvas, plan_file};

/// The most paths a result or summary names (counts say how many in all).
pub const LISTED_PATHS: usize = 100;

// r[impl attachments.paths]
/// An attachment path argument at `pointer`: a vault path that is not a note.
pub fn attachment(raw: &str, pointer: &str) -> Result<VaultPath, ToolError> {
    let path = VaultPath::parse(raw).map_err(|e| ToolError::from(&e))?;
    if path.is_note() {
        return Err(ToolError::validation(
            pointer,
            "is a note (.md); the note tools read and write notes",
        ));
    }
    Ok(path)
}

// r[impl attachments.not-found]
pub fn not_found(path: &VaultPath) -> ToolError {
    ToolError::new(
        ErrorCode::AttachmentNotFound,
        format!("no attachment at {}", path.as_str()),
    )
    .with_details(json!({"path": path.as_str()}))
    .with_recovery("list_attachments lists the attachments there are", None)
}

/// Maps a vault's "no such file" to `attachment_not_found`.
pub fn vault_error(path: &VaultPath, error: VaultError) -> ToolError {
    match error {
        VaultError::NoteNotFound { .. } => not_found(path),
        other => ToolError::from(&other),
    }
}

/// Refuses with `attachment_not_found` unless a file is at `path`.
pub fn require_file(cx: &ToolCx<'_>, path: &VaultPath) -> Result<u64, ToolError> {
    cx.vault()
        .stat(path)
        .map(|stat| stat.size)
        .map_err(|e| vault_error(path, e))
}

// r[impl attachments.conventions]
/// The write gate on a file written at `path`: a note's rules do not apply, `forbidWrites`
/// does (the vault's judge applies only it to a path that is not a note).
pub fn judge(
    cx: &ToolCx<'_>,
    path: &VaultPath,
    kind: WriteKind,
    bytes: &[u8],
) -> Result<(), ToolError> {
    cx.judge(&WriteIntent::new(path.clone(), kind, bytes, Prior::Unknown))
        .map_err(|blocked| ToolError::convention(&blocked))
}

/// The notes (and canvases) that link to `path` by any link, each with its rewritten text
/// when `to` is given (a move), over the notes the caller may read. With an index the
/// candidates come from it; without one the vault is read whole.
pub fn link_plan(
    cx: &ToolCx<'_>,
    path: &VaultPath,
    to: Option<&VaultPath>,
) -> Result<RewritePlan, ToolError> {
    let acl = &cx.binding.acl;
    let scopes = &cx.caller.scopes;
    let include = |p: &VaultPath| acl.can_read_at(cx.vault().root(), p, scopes);
    let found = match cx.binding.index() {
        Some(index) => index.link_candidates(&[path.as_str()])?,
        None => None,
    };
    let (resolver, candidates): (LinkResolver, Option<Vec<VaultPath>>) = match found {
        Some(found) => ((*found.resolver).clone(), Some(found.notes)),
        None => (build_resolver(cx.vault())?, None),
    };
    let mut after = resolver.clone();
    let new_target = match to {
        Some(to) => {
            after.remove(path);
            after.insert(to.clone());
            after.link_text_for(to)
        }
        None => path.as_str().to_owned(),
    };
    let matcher = LinkMatcher::Resolved(path.clone());
    let rewrite = NoteRewrite {
        links: LinkRewrite {
            matcher: &matcher,
            new_target: &new_target,
            include_embeds: true,
        },
        new_file: to,
        after: to.map(|_| &after),
        moved: None,
    };
    let files: Vec<VaultPath> = match candidates {
        Some(mut notes) => {
            notes.extend(resolver.files_with_extension("canvas").cloned());
            notes
        }
        None => resolver
            .files_with_extension("md")
            .chain(resolver.files_with_extension("canvas"))
            .cloned()
            .collect(),
    };
    let mut plan = RewritePlan::default();
    for file in &files {
        if !(file.is_note() || is_canvas(file)) || !include(file) {
            continue;
        }
        if let Some(touched) = plan_file(cx.vault(), file, &resolver, &rewrite)? {
            plan.notes.push(touched);
        }
    }
    plan.notes.sort_by(|a, b| a.path.cmp(&b.path));
    plan.notes.dedup_by(|a, b| a.path == b.path);
    Ok(plan)
}

/// RFC 3339 UTC with milliseconds of `ns` since 1970.
pub fn rfc3339_ns(ns: i64) -> String {
    tc_index::meta::recent::format_time(ns)
}
