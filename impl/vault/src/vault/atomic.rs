//! The atomic replacement of a file and the syncs that make it durable (spec/vault.md
//! `vault.write.atomic`): a temp file beside the target, written and synced, renamed over it
//! (or next to it, refusing to clobber), and the folder synced.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::folders::create_parent;
use super::not_found_or_io;
use crate::error::{VaultError, VaultResult};
use crate::path::VaultPath;

/// The name a write's temp file starts with; it ends in [`WRITE_TEMP_SUFFIX`]. Hidden, so
/// Obsidian and the index never take it for a note.
pub const WRITE_TEMP_PREFIX: &str = ".tc-write-";
pub const WRITE_TEMP_SUFFIX: &str = ".tmp";

/// How old a write's temp file must be before a scan takes it for one a dead process left:
/// a live write renames its temp files within seconds.
pub const STALE_WRITE_TEMP: std::time::Duration = std::time::Duration::from_secs(10 * 60);

// r[impl vault.write.temps-swept]
/// Removes the file at `location`, named `name`, if it is a write's temp file older than
/// [`STALE_WRITE_TEMP`]: one a process killed mid-write left behind. It holds only bytes no
/// note ever showed. Returns whether it was removed.
pub fn remove_stale_write_temp(location: &Path, name: &str) -> bool {
    if !(name.starts_with(WRITE_TEMP_PREFIX) && name.ends_with(WRITE_TEMP_SUFFIX)) {
        return false;
    }
    let stale = fs::symlink_metadata(location).is_ok_and(|meta| {
        meta.is_file()
            && meta
                .modified()
                .ok()
                .and_then(|at| at.elapsed().ok())
                .is_some_and(|age| age > STALE_WRITE_TEMP)
    });
    stale && fs::remove_file(location).is_ok()
}

/// Writes `bytes` at `target` atomically: a temp file in the target's folder → write → fsync →
/// rename → fsync the folder.
pub(super) fn write_atomic(
    path: &VaultPath,
    target: &Path,
    bytes: &[u8],
    no_clobber: bool,
    mode: Option<u32>,
) -> VaultResult<()> {
    let mut folders = create_parent(path, target)?;
    let dir = target.parent().unwrap_or(Path::new("."));
    let io_err = |e| VaultError::io(path.as_str(), "write", e);
    let mut builder = tempfile::Builder::new();
    builder.prefix(WRITE_TEMP_PREFIX).suffix(WRITE_TEMP_SUFFIX);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // The mode asked for (a restore's), else an overwritten note's own; a new note gets
        // the usual 0644 (less the umask).
        let mode = mode.unwrap_or_else(|| {
            fs::metadata(target).map_or(0o644, |m| m.permissions().mode() & 0o7777)
        });
        builder.permissions(fs::Permissions::from_mode(mode));
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut temp = match builder.tempfile_in(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            folders.absorb(create_parent(path, target)?);
            builder.tempfile_in(dir)
        }
        made => made,
    }
    .map_err(io_err)?;
    temp.write_all(bytes).map_err(io_err)?;
    temp.as_file().sync_all().map_err(io_err)?;
    let persisted = if no_clobber {
        temp.persist_noclobber(target)
    } else {
        temp.persist(target)
    };
    persisted.map_err(|e| {
        if no_clobber && e.error.kind() == io::ErrorKind::AlreadyExists {
            VaultError::NoteExists {
                path: path.as_str().to_owned(),
            }
        } else {
            io_err(e.error)
        }
    })?;
    folders.keep();
    sync_dir(dir).map_err(io_err)
}

/// Moves without replacing: a hard link fails if the target exists, atomically. File systems
/// without hard links fall back to check-then-rename, which the note locks cover against
/// every writer on the same cache directory (not against other programs).
pub(super) fn rename_no_clobber(
    from: &VaultPath,
    to: &VaultPath,
    source: &Path,
    target: &Path,
) -> VaultResult<()> {
    let exists = || VaultError::NoteExists {
        path: to.as_str().to_owned(),
    };
    match fs::hard_link(source, target) {
        Ok(()) => fs::remove_file(source).map_err(|e| VaultError::io(from.as_str(), "move", e)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(exists()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(not_found_or_io(from, "move", e)),
        Err(_) => {
            if fs::symlink_metadata(target).is_ok() {
                return Err(exists());
            }
            fs::rename(source, target).map_err(|e| not_found_or_io(from, "move", e))
        }
    }
}

/// Makes a rename in `dir` durable. Windows cannot open a folder for syncing; there the
/// rename's own durability is all there is.
pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

pub(super) fn sync_parent(path: &VaultPath, target: &Path) -> VaultResult<()> {
    match target.parent() {
        Some(dir) => sync_dir(dir).map_err(|e| VaultError::io(path.as_str(), "sync folder", e)),
        None => Ok(()),
    }
}

/// The canonical form of the deepest existing ancestor of `location`, joined with the rest.
pub(super) fn canonical_prefix(location: &Path) -> io::Result<PathBuf> {
    let absolute = if location.is_absolute() {
        location.to_path_buf()
    } else {
        std::env::current_dir()?.join(location)
    };
    let mut existing = absolute.as_path();
    let mut missing = Vec::new();
    while fs::symlink_metadata(existing).is_err() {
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(up)) => {
                missing.push(name.to_owned());
                existing = up;
            }
            _ => break,
        }
    }
    let mut canonical = existing.canonicalize()?;
    for name in missing.iter().rev() {
        canonical.push(name);
    }
    Ok(canonical)
}
