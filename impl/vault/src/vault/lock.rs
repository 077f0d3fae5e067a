//! The note locks (spec `vault.write.locked`): what makes a write's read, precondition check
//! and rename one step for every thread and every process that uses the same cache
//! directory.
//!
//! - Across processes: an exclusive advisory lock (`flock(LOCK_EX)` on Unix, `LockFileEx`
//!   on Windows, through std's `File::lock`) on a lock file outside the vault, in
//!   `<snapshot folder>.locks/` (so `<cacheDir>/snapshots/<vault-id>.locks/`), never in the
//!   vault, where Obsidian would see it. The lock is released when the file is closed, so a
//!   process that dies holding it holds it no longer.
//! - Lock files are buckets: a note's bucket is the first three hex digits of the SHA-256 of
//!   its resolved vault-relative path, lowercased (a case-insensitive file system has one
//!   file for both spellings), so there are at most 4096 of them, all empty. Two notes that
//!   share a bucket only wait for each other. Lock files are never removed: removing one
//!   while another process waits on it would let a third lock a new file beside it.
//! - Within a process: the vault's mutex, taken first, so threads are serialized even where
//!   file locks are per process (NFS) or missing. A call that locks several notes (a move)
//!   takes their buckets in ascending order, once each, so two such calls cannot deadlock.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::MutexGuard;

use sha2::{Digest, Sha256};

/// The lock folder of the vault whose delete snapshots go to `snapshot_dir`: its sibling
/// `<name>.locks` (a snapshot folder with no name, such as `/`, keeps them inside).
pub(super) fn lock_dir_for(snapshot_dir: &Path) -> PathBuf {
    match (snapshot_dir.parent(), snapshot_dir.file_name()) {
        (Some(parent), Some(name)) => {
            let mut locks = name.to_owned();
            locks.push(".locks");
            parent.join(locks)
        }
        _ => snapshot_dir.join("locks"),
    }
}

/// The bucket of a note, from its location relative to the canonical vault root.
pub(super) fn bucket_of(relative: &Path) -> u16 {
    let key = relative.to_string_lossy().to_lowercase();
    let digest = Sha256::digest(key.as_bytes());
    (u16::from(digest[0]) << 4) | (u16::from(digest[1]) >> 4)
}

/// Held locks: the buckets' files (unlocked when closed), then the vault's mutex.
#[derive(Debug)]
pub(super) struct Held<'v> {
    _files: Vec<File>,
    _process: MutexGuard<'v, ()>,
}

/// Takes the vault mutex `process`, then the file lock of every bucket in `buckets`
/// (ascending, each once), waiting for each.
pub(super) fn acquire<'v>(
    dir: &Path,
    process: MutexGuard<'v, ()>,
    buckets: &mut Vec<u16>,
) -> io::Result<Held<'v>> {
    buckets.sort_unstable();
    buckets.dedup();
    create_private_dir(dir)?;
    let mut files = Vec::with_capacity(buckets.len());
    for bucket in buckets.iter() {
        let file = open_lock_file(&dir.join(format!("{bucket:03x}.lock")))?;
        match file.lock() {
            Ok(()) => files.push(file),
            // A platform without file locks: the mutex still serializes this process.
            Err(e) if e.kind() == io::ErrorKind::Unsupported => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Held {
        _files: files,
        _process: process,
    })
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

fn open_lock_file(location: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(location)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_folder_is_a_sibling_of_the_snapshot_folder() {
        assert_eq!(
            lock_dir_for(Path::new("/cache/snapshots/main")),
            Path::new("/cache/snapshots/main.locks")
        );
        assert_eq!(
            lock_dir_for(Path::new("/cache/snapshots/main/")),
            Path::new("/cache/snapshots/main.locks")
        );
        assert_eq!(lock_dir_for(Path::new("/")), Path::new("/locks"));
    }

    #[test]
    fn buckets_ignore_case_and_stay_in_range() {
        assert_eq!(
            bucket_of(Path::new("A/Note.md")),
            bucket_of(Path::new("a/note.md"))
        );
        let buckets: std::collections::BTreeSet<u16> = (0..2000)
            .map(|i| bucket_of(Path::new(&format!("n{i}.md"))))
            .collect();
        assert!(buckets.iter().all(|b| *b < 4096));
        assert!(buckets.len() > 1000, "{}", buckets.len());
    }
}
