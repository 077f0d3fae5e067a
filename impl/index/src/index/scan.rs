//! What the index sees of the folder (spec/index.md `index.reconcile`, `index.hidden`): the
//! files tc-vault's own walk lists (no hidden name, no name that is not a valid vault path,
//! no link to a folder, a link to a file only when it stays inside the vault), each with the
//! stamp (size, mtime) that says whether it changed.
//!
//! Two ways in: [`scan_folder`] lists a whole folder tree (the full reconciliation, or one
//! folder the watcher flagged), [`look_at`] judges one path the watcher flagged, with the
//! same rules, so a flagged reconciliation and a full one agree on every file.

use std::collections::HashSet;
use std::time::UNIX_EPOCH;

use tc_vault::path::{VaultPath, VaultRoot};

use super::IndexError;

/// What the index holds of one file to decide whether it changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub size: u64,
    pub mtime_ns: i64,
    pub is_note: bool,
}

pub(crate) fn stamp_of(meta: &std::fs::Metadata, is_note: bool) -> Stamp {
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    Stamp {
        size: meta.len(),
        mtime_ns,
        is_note,
    }
}

/// One file as the folder shows it now.
pub(crate) struct Seen {
    pub path: VaultPath,
    pub stamp: Stamp,
    /// A link to a file of the vault: its stamp is its target's, which the watcher reports
    /// under the target's name, so a flagged reconciliation looks at links every time.
    pub link: bool,
}

/// The stamp of `path` (a file entry of type `file_type`, whose own metadata `plain`
/// gives), or `None` when the
/// walk would not list it (a link out of the vault or to a folder, not a file, gone).
fn stamp_at(
    root: &VaultRoot,
    path: &VaultPath,
    file_type: std::fs::FileType,
    plain: impl FnOnce() -> std::io::Result<std::fs::Metadata>,
) -> Option<(Stamp, bool)> {
    let meta = if file_type.is_symlink() {
        match root.resolve_for_read(path) {
            Ok(target) if target.is_file() => std::fs::metadata(target),
            _ => return None,
        }
    } else if file_type.is_file() {
        plain()
    } else {
        return None;
    };
    // Gone since the listing: dropped like any file not seen.
    let meta = meta.ok()?;
    Some((stamp_of(&meta, path.is_note()), file_type.is_symlink()))
}

/// Every file under the folder `prefix` (`""` for the root, else ending in `/`), listed
/// once per folder and stat'ed through each folder's own entries.
pub(crate) fn scan_folder(
    root: &VaultRoot,
    prefix: &str,
    out: &mut Vec<Seen>,
) -> Result<(), IndexError> {
    let start = if prefix.is_empty() {
        root.path().to_path_buf()
    } else {
        root.path().join(prefix.trim_end_matches('/'))
    };
    let mut folders = vec![(start, prefix.to_owned())];
    while let Some((dir, prefix)) = folders.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            // A flagged folder removed meanwhile: nothing under it is seen.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !prefix.is_empty() => continue,
            Err(source) => {
                return Err(IndexError::Io {
                    path: prefix.clone(),
                    source,
                });
            }
        };
        for entry in entries.flatten() {
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if name.starts_with('.') {
                // A write's temp file a killed process left is swept as the scan passes.
                tc_vault::vault::remove_stale_write_temp(&entry.path(), &name);
                continue;
            }
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            let rel = format!("{prefix}{name}");
            if file_type.is_dir() {
                if VaultPath::parse(&rel).is_ok() {
                    folders.push((entry.path(), format!("{rel}/")));
                }
                continue;
            }
            let Ok(path) = VaultPath::parse(&rel) else {
                continue;
            };
            if let Some((stamp, link)) = stamp_at(root, &path, file_type, || entry.metadata()) {
                out.push(Seen { path, stamp, link });
            }
        }
    }
    Ok(())
}

/// What a flagged path is now.
pub(crate) enum Looked {
    /// A folder the walk enters: its tree is listed again.
    Folder,
    /// A file the walk lists.
    File(Seen),
    /// Nothing the walk would list (gone, hidden, a link out, not a valid name).
    Nothing,
}

/// Judges the flagged path `rel` (relative, `/`-separated) as the walk would: every folder
/// on its way must be a real folder (not a link) with a valid, visible name.
pub(crate) fn look_at(root: &VaultRoot, rel: &str) -> Looked {
    if rel
        .split('/')
        .any(|part| part.is_empty() || part.starts_with('.'))
    {
        return Looked::Nothing;
    }
    let mut way = root.path().to_path_buf();
    let parts: Vec<&str> = rel.split('/').collect();
    for part in &parts[..parts.len() - 1] {
        way.push(part);
        match std::fs::symlink_metadata(&way) {
            Ok(meta) if meta.file_type().is_dir() => {}
            _ => return Looked::Nothing,
        }
    }
    let full = root.path().join(rel);
    let Ok(meta) = std::fs::symlink_metadata(&full) else {
        return Looked::Nothing;
    };
    let file_type = meta.file_type();
    if file_type.is_dir() {
        return if VaultPath::parse(rel).is_ok() {
            Looked::Folder
        } else {
            Looked::Nothing
        };
    }
    let Ok(path) = VaultPath::parse(rel) else {
        return Looked::Nothing;
    };
    match stamp_at(root, &path, file_type, || Ok(meta)) {
        Some((stamp, link)) => Looked::File(Seen { path, stamp, link }),
        None => Looked::Nothing,
    }
}

/// The stamped paths at `rel` or under it as a folder.
pub(crate) fn at_or_under<'a>(
    stamps: impl Iterator<Item = &'a VaultPath>,
    rel: &str,
) -> HashSet<VaultPath> {
    let folder = format!("{rel}/");
    stamps
        .filter(|p| p.as_str() == rel || p.as_str().starts_with(&folder))
        .cloned()
        .collect()
}
