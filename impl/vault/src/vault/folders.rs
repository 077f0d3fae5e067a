//! The folders a write or move makes for its destination, undone when it fails before the
//! note lands (spec vault.md `vault.write.folders-undone`). A child of `vault` so the
//! guard stays private to the vault's write paths.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{VaultError, VaultResult};
use crate::path::VaultPath;

// r[impl vault.write.folders-undone]
/// Creates the target's missing folders. The returned guard removes them again (deepest
/// first, each only while still empty) unless [`CreatedFolders::keep`] is called, so a
/// write or move that fails after this leaves the folder tree as it found it.
pub(super) fn create_parent(path: &VaultPath, target: &Path) -> VaultResult<CreatedFolders> {
    let Some(dir) = target.parent() else {
        return Ok(CreatedFolders::default());
    };
    let mut missing = Vec::new();
    let mut probe = Some(dir);
    while let Some(folder) = probe {
        if fs::symlink_metadata(folder).is_ok() {
            break;
        }
        missing.push(folder.to_path_buf());
        probe = folder.parent();
    }
    if missing.is_empty() {
        return Ok(CreatedFolders::default());
    }
    // Deepest first is the order they are removed in; the guard exists before the first
    // folder does, so a failure part-way through undoes what was made.
    let mut created = CreatedFolders {
        deepest_first: Vec::with_capacity(missing.len()),
    };
    for folder in missing.into_iter().rev() {
        match fs::create_dir(&folder) {
            Ok(()) => created.deepest_first.insert(0, folder),
            // Made by someone else meanwhile: theirs, not ours to remove.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && folder.is_dir() => {}
            Err(e) => {
                return Err(match e.kind() {
                    io::ErrorKind::NotADirectory | io::ErrorKind::AlreadyExists => {
                        VaultError::invalid(path.as_str(), "a folder on the path is a file")
                    }
                    _ => VaultError::io(path.as_str(), "create folder", e),
                });
            }
        }
    }
    Ok(created)
}

/// Folders a write made for its target, removed on drop unless kept.
#[derive(Debug, Default)]
#[must_use = "dropping the guard removes the folders it made"]
pub(super) struct CreatedFolders {
    deepest_first: Vec<PathBuf>,
}

impl CreatedFolders {
    /// The write landed: the folders stay.
    pub(super) fn keep(mut self) {
        self.deepest_first.clear();
    }

    /// Takes over the folders a second `create_parent` made: another process's failed
    /// write removed a folder this write had found already there (so had not made, and
    /// would not remove), and the write makes it again, once, rather than fail on it.
    pub(super) fn absorb(&mut self, mut again: CreatedFolders) {
        let mut deepest_first = std::mem::take(&mut again.deepest_first);
        deepest_first.append(&mut self.deepest_first);
        self.deepest_first = deepest_first;
    }
}

/// Whether the folder `target` goes in is gone (removed by another writer meanwhile).
pub(super) fn parent_missing(target: &Path) -> bool {
    target
        .parent()
        .is_some_and(|dir| fs::symlink_metadata(dir).is_err())
}

impl Drop for CreatedFolders {
    fn drop(&mut self) {
        for folder in &self.deepest_first {
            // remove_dir refuses a folder that is no longer empty, which is what keeps
            // anything another writer put there meanwhile.
            if fs::remove_dir(folder).is_err() {
                break;
            }
        }
    }
}
