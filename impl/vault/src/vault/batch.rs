//! Many notes written under one set of locks, each keeping what it replaces (spec/bulk.md
//! `bulk.set-property.batched`, `bulk.apply.concurrent`; spec/versions.md
//! `versions.keep.exact`, `versions.keep.linked`).
//!
//! A note written alone pays four waits on the disk: its version's file and folder, its own
//! file and folder. A batch pays them once per kind: every note's new bytes go to a temp file
//! beside it and every replaced note is kept in the batch's version folder (a second link to
//! the old file where it can, `vault/version_batches.rs`), all of them are fsynced together
//! (the file system commits concurrent fsyncs as one), the version folder is sealed by one
//! rename and one folder sync, and only then are the notes renamed over the old ones (or,
//! for a note that was not there, beside nothing, never over one that appeared) and each
//! folder synced once. So every version of a batch is durable before the first note it
//! protects is replaced, and each note is replaced by an atomic rename: a crash leaves it
//! whole, as it was or as written.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use super::atomic::{WRITE_TEMP_PREFIX, WRITE_TEMP_SUFFIX};
use super::folders::{CreatedFolders, create_parent};
use super::version_batches::{StagedVersion, StagingBatch};
use super::{KeptWrite, LockedNote, NoteContent, Vault, WriteOutcome, content_hash, sync_dir};
use crate::error::{VaultError, VaultResult};
use crate::path::VaultPath;

/// How many notes one batch locks and writes at once: each holds a lock file and a temp
/// file open until its rename.
pub const BATCH_NOTES: usize = 128;

/// How many fsyncs a batch has in flight at once.
const SYNCERS: usize = 8;

/// One note a batch writes: over the note there, or as a new note where none is.
#[derive(Debug, Clone, Copy)]
pub struct BatchWrite<'a> {
    pub path: &'a VaultPath,
    pub bytes: &'a [u8],
}

/// A note of a batch written beside its place, with its version.
struct Staged {
    index: usize,
    target: PathBuf,
    temp: NamedTempFile,
    version: Option<StagedVersion>,
    /// No note was there under the lock: the note is created, never over one that appears.
    creates: bool,
    /// The folders made for a created note, removed again unless it lands.
    folders: CreatedFolders,
}

#[cfg(test)]
thread_local! {
    /// A test's injected interruption: the batch stops (as a crash would) after this many
    /// notes were replaced.
    pub(super) static STOP_AFTER_RENAMES: std::cell::Cell<Option<usize>> =
        const { std::cell::Cell::new(None) };
}

impl Vault {
    // r[impl bulk.set-property.batched]
    /// Writes each item's bytes at its path, [`BATCH_NOTES`] at a time under their locks,
    /// once `check` (given the item's index and the note as read under its lock, `None`
    /// where there is none) allows it: over the note there, keeping what it replaces as a
    /// `replaced` version, durable before any note of the batch is replaced; or as a new
    /// note, refused as [`VaultError::NoteExists`] if one appeared meanwhile. Returns each
    /// item's result, in order.
    pub fn write_many_keeping<E: From<VaultError>>(
        &self,
        items: &[BatchWrite<'_>],
        check: impl Fn(usize, Option<&NoteContent>) -> Result<(), E>,
    ) -> Vec<Result<KeptWrite, E>> {
        let mut results = Vec::with_capacity(items.len());
        for (n, chunk) in items.chunks(BATCH_NOTES).enumerate() {
            results.extend(self.write_batch(n * BATCH_NOTES, chunk, &check));
        }
        results
    }

    fn write_batch<E: From<VaultError>>(
        &self,
        first: usize,
        items: &[BatchWrite<'_>],
        check: &impl Fn(usize, Option<&NoteContent>) -> Result<(), E>,
    ) -> Vec<Result<KeptWrite, E>> {
        let mut results: Vec<Option<Result<KeptWrite, E>>> = Vec::new();
        results.resize_with(items.len(), || None);
        let mut targets = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match self.root.resolve_for_write(item.path) {
                Ok(target) => targets.push((i, target)),
                Err(e) => results[i] = Some(Err(e.into())),
            }
        }
        let Some((lead, _)) = targets.first() else {
            return results
                .into_iter()
                .map(Option::unwrap_or_else_err)
                .collect();
        };
        let locations: Vec<&Path> = targets.iter().map(|(_, t)| t.as_path()).collect();
        let _held = match self.lock_notes(items[*lead].path, &locations) {
            Ok(held) => held,
            Err(e) => {
                for (i, _) in &targets {
                    results[*i] = Some(Err(VaultError::io(
                        items[*i].path.as_str(),
                        "lock",
                        std::io::Error::other(e.to_string()),
                    )
                    .into()));
                }
                return results
                    .into_iter()
                    .map(Option::unwrap_or_else_err)
                    .collect();
            }
        };
        // Read, judged and written beside its place, under the locks: nothing is replaced.
        let mut batch: Option<StagingBatch> = None;
        let mut staged = Vec::with_capacity(targets.len());
        for (i, target) in targets {
            let item = items[i];
            let locked = LockedNote {
                vault: self,
                path: item.path,
                target: target.clone(),
            };
            let current = match locked.read_if_exists() {
                Ok(current) => current,
                Err(e) => {
                    results[i] = Some(Err(e.into()));
                    continue;
                }
            };
            if let Err(e) = check(first + i, current.as_ref()) {
                results[i] = Some(Err(e));
                continue;
            }
            match self.stage(&mut batch, item, &target, current.as_ref()) {
                Ok((temp, version, folders)) => staged.push(Staged {
                    index: i,
                    target,
                    temp,
                    version,
                    creates: current.is_none(),
                    folders,
                }),
                Err(e) => results[i] = Some(Err(e.into())),
            }
        }
        // Every staged file durable, the fsyncs overlapping.
        let synced = sync_all_files(&staged);
        let mut ready = Vec::with_capacity(staged.len());
        for (one, outcome) in staged.into_iter().zip(synced) {
            match outcome {
                Ok(()) => ready.push(one),
                Err(e) => {
                    if let Some(v) = &one.version {
                        v.discard();
                    }
                    let path = items[one.index].path;
                    results[one.index] =
                        Some(Err(VaultError::io(path.as_str(), "write", e).into()));
                }
            }
        }
        // The versions in place and durable before the first note is replaced.
        let kept: Vec<&StagedVersion> = ready
            .iter()
            .filter_map(|one| one.version.as_ref())
            .collect();
        let sealed = match batch {
            Some(batch) if kept.is_empty() => {
                batch.abandon();
                None
            }
            Some(batch) => match batch.seal(self, &kept) {
                Ok(sealed) => Some(sealed),
                Err(e) => {
                    for one in ready {
                        let path = items[one.index].path;
                        results[one.index] = Some(Err(VaultError::io(
                            path.as_str(),
                            "write snapshot",
                            std::io::Error::new(e.kind(), e.to_string()),
                        )
                        .into()));
                    }
                    return results
                        .into_iter()
                        .map(Option::unwrap_or_else_err)
                        .collect();
                }
            },
            None => None,
        };
        // The notes replaced, each by an atomic rename, then each folder synced once.
        let mut folders: Vec<PathBuf> = Vec::new();
        let mut replaced = Vec::with_capacity(ready.len());
        for (n, one) in ready.into_iter().enumerate() {
            #[cfg(test)]
            if STOP_AFTER_RENAMES.with(|stop| stop.get()) == Some(n) {
                // A crash: nothing is cleaned up, nothing more is done.
                std::mem::forget(one.temp);
                return results
                    .into_iter()
                    .map(Option::unwrap_or_else_err)
                    .collect();
            }
            #[cfg(not(test))]
            let _ = n;
            let path = items[one.index].path;
            let persisted = if one.creates {
                one.temp.persist_noclobber(&one.target)
            } else {
                one.temp.persist(&one.target)
            };
            match persisted {
                Ok(_) => {
                    one.folders.keep();
                    if let Some(v) = &one.version
                        && let Some(sealed) = &sealed
                    {
                        v.settle(sealed);
                    }
                    if let Some(dir) = one.target.parent()
                        && !folders.iter().any(|f| f == dir)
                    {
                        folders.push(dir.to_path_buf());
                    }
                    replaced.push((one.index, one.target, one.version, one.creates));
                }
                Err(e) => {
                    if let Some(v) = &one.version
                        && let Some(sealed) = &sealed
                    {
                        v.discard_sealed(sealed);
                    }
                    let failure = if one.creates && e.error.kind() == ErrorKind::AlreadyExists {
                        VaultError::NoteExists {
                            path: path.as_str().to_owned(),
                        }
                    } else {
                        VaultError::io(path.as_str(), "write", e.error)
                    };
                    results[one.index] = Some(Err(failure.into()));
                }
            }
        }
        let folder_synced = sync_all_dirs(&folders);
        for (index, target, version, created) in replaced {
            let path = items[index].path;
            let dir = target.parent().unwrap_or(Path::new("."));
            let failed = folders
                .iter()
                .zip(&folder_synced)
                .find(|(f, _)| f.as_path() == dir)
                .and_then(|(_, r)| r.as_ref().err());
            results[index] = Some(match failed {
                Some(e) => Err(VaultError::io(
                    path.as_str(),
                    "write",
                    std::io::Error::new(e.kind(), e.to_string()),
                )
                .into()),
                None => Ok(KeptWrite {
                    outcome: WriteOutcome {
                        hash: content_hash(items[index].bytes),
                        created,
                    },
                    kept: version.map(|v| v.info),
                }),
            });
        }
        results
            .into_iter()
            .map(Option::unwrap_or_else_err)
            .collect()
    }

    /// The note's new bytes in a temp file beside it and its version in the batch's folder
    /// (started with the first version), neither synced yet.
    fn stage(
        &self,
        batch: &mut Option<StagingBatch>,
        item: BatchWrite<'_>,
        target: &Path,
        current: Option<&NoteContent>,
    ) -> VaultResult<(NamedTempFile, Option<StagedVersion>, CreatedFolders)> {
        let path = item.path;
        // As `keep_locked`: a regular, non-empty file is kept; a link is replaced, not its
        // target's content.
        let keep = match (current, fs::symlink_metadata(target)) {
            (Some(content), Ok(meta)) if meta.is_file() && !content.bytes.is_empty() => {
                Some(content)
            }
            _ => None,
        };
        let version = match keep {
            Some(content) => {
                let folder = match batch {
                    Some(folder) => folder,
                    None => batch.insert(
                        self.start_batch()
                            .map_err(|e| VaultError::io(path.as_str(), "write snapshot", e))?,
                    ),
                };
                Some(folder.stage(self, path, target, content)?)
            }
            None => None,
        };
        match stage_note(path, target, item.bytes) {
            Ok((temp, folders)) => Ok((temp, version, folders)),
            Err(e) => {
                if let Some(v) = &version {
                    v.discard();
                }
                Err(e)
            }
        }
    }
}

/// The note's new bytes in a temp file in its folder (made if missing), with the note's own
/// mode (a new note's: the usual 0644 less the umask).
fn stage_note(
    path: &VaultPath,
    target: &Path,
    bytes: &[u8],
) -> VaultResult<(NamedTempFile, CreatedFolders)> {
    use std::io::Write;
    let mut folders = create_parent(path, target)?;
    let dir = target.parent().unwrap_or(Path::new("."));
    let io_err = |e| VaultError::io(path.as_str(), "write", e);
    let mut builder = tempfile::Builder::new();
    builder.prefix(WRITE_TEMP_PREFIX).suffix(WRITE_TEMP_SUFFIX);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(target).map_or(0o644, |m| m.permissions().mode() & 0o7777);
        builder.permissions(fs::Permissions::from_mode(mode));
    }
    let mut temp = match builder.tempfile_in(dir) {
        // Another writer's failed write removed a folder it had found empty: made again.
        Err(e) if e.kind() == ErrorKind::NotFound => {
            folders.absorb(create_parent(path, target)?);
            builder.tempfile_in(dir)
        }
        made => made,
    }
    .map_err(io_err)?;
    temp.write_all(bytes).map_err(io_err)?;
    Ok((temp, folders))
}

/// Fsyncs every staged note and version, [`SYNCERS`] at a time; one result per item.
fn sync_all_files(staged: &[Staged]) -> Vec<std::io::Result<()>> {
    in_parallel(staged, |one| {
        if let Some(v) = &one.version {
            v.sync()?;
        }
        one.temp.as_file().sync_all()
    })
}

fn sync_all_dirs(dirs: &[PathBuf]) -> Vec<std::io::Result<()>> {
    in_parallel(dirs, |dir| sync_dir(dir))
}

/// `f` over `items`, [`SYNCERS`] threads at a time, the results in order.
fn in_parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if items.len() < 2 {
        return items.iter().map(&f).collect();
    }
    let chunk = items.len().div_ceil(SYNCERS);
    std::thread::scope(|scope| {
        let workers: Vec<_> = items
            .chunks(chunk)
            .map(|part| {
                let f = &f;
                scope.spawn(move || part.iter().map(f).collect::<Vec<R>>())
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| match worker.join() {
                Ok(done) => done,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    })
}

/// The batch writing `new[i]` at `paths[i]`.
#[cfg(test)]
pub(super) fn batch_items<'a>(paths: &'a [VaultPath], new: &'a [Vec<u8>]) -> Vec<BatchWrite<'a>> {
    paths
        .iter()
        .zip(new)
        .map(|(path, bytes)| BatchWrite { path, bytes })
        .collect()
}

/// A batch's results, each filled in by the step that settled it.
trait UnwrapOrElseErr<T> {
    fn unwrap_or_else_err(self) -> T;
}

impl<E: From<VaultError>> UnwrapOrElseErr<Result<KeptWrite, E>> for Option<Result<KeptWrite, E>> {
    fn unwrap_or_else_err(self) -> Result<KeptWrite, E> {
        // Every item is settled by one step; one left open is reported, not assumed written.
        self.unwrap_or_else(|| {
            Err(VaultError::io(
                "",
                "write",
                std::io::Error::other("the batch stopped before this note"),
            )
            .into())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{TempVault, p};
    use crate::vault::Precondition;

    // r[verify bulk.set-property.batched]
    #[test]
    fn every_version_is_in_place_before_the_first_note_is_replaced() {
        let f = TempVault::new();
        let paths: Vec<VaultPath> = (0..10).map(|i| p(&format!("d{}/n{i}.md", i % 3))).collect();
        for (i, path) in paths.iter().enumerate() {
            f.vault
                .write(path, format!("old {i}").as_bytes(), &Precondition::None)
                .unwrap();
        }
        let new: Vec<Vec<u8>> = (0..10).map(|i| format!("new {i}").into_bytes()).collect();
        let items = batch_items(&paths, &new);
        // Interrupted after four notes were replaced, as by a crash.
        STOP_AFTER_RENAMES.with(|stop| stop.set(Some(4)));
        let _ = f
            .vault
            .write_many_keeping(&items, |_, _| Ok::<(), VaultError>(()));
        STOP_AFTER_RENAMES.with(|stop| stop.set(None));
        let mut replaced = 0;
        for (i, path) in paths.iter().enumerate() {
            let now = f.vault.read(path).unwrap().bytes;
            let old = format!("old {i}").into_bytes();
            assert!(
                now == old || now == new[i],
                "whole, as it was or as written"
            );
            replaced += usize::from(now == new[i]);
            let versions: Vec<Vec<u8>> = f
                .vault
                .snapshots(Some(path))
                .unwrap()
                .iter()
                .map(|info| f.vault.read_snapshot(info).unwrap())
                .collect();
            assert_eq!(versions, [old], "every note of the batch has its version");
        }
        assert_eq!(replaced, 4);

        // Run whole, every note is written and a check that refuses leaves its note alone.
        let f = TempVault::new();
        for (i, path) in paths.iter().enumerate() {
            f.vault
                .write(path, format!("old {i}").as_bytes(), &Precondition::None)
                .unwrap();
        }
        let results = f.vault.write_many_keeping(&items, |i, current| {
            assert!(current.is_some());
            if i == 3 {
                Err(VaultError::io("", "check", std::io::Error::other("no")))
            } else {
                Ok(())
            }
        });
        for (i, (path, result)) in paths.iter().zip(&results).enumerate() {
            let now = f.vault.read(path).unwrap().bytes;
            if i == 3 {
                assert!(result.is_err());
                assert_eq!(now, b"old 3");
                assert!(f.vault.snapshots(Some(path)).unwrap().is_empty());
            } else {
                let kept = result.as_ref().unwrap().kept.clone().unwrap();
                assert_eq!(now, new[i]);
                assert_eq!(
                    f.vault.read_snapshot(&kept).unwrap(),
                    format!("old {i}").into_bytes()
                );
            }
        }
        let partials = fs::read_dir(f.vault.snapshot_dir())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".partial")
            })
            .count();
        assert_eq!(partials, 0, "nothing left half written");
    }

    // r[verify bulk.apply.concurrent]
    #[test]
    fn a_batch_creates_notes_in_new_folders_and_never_over_one_that_appears() {
        let f = TempVault::new().with_files(&[("old.md", "old")]);
        let root = f.vault.root().path().to_path_buf();
        let paths = [
            p("old.md"),
            p("new/deep/a.md"),
            p("raced.md"),
            p("refused/b.md"),
        ];
        let bytes = [
            b"old!".to_vec(),
            b"a".to_vec(),
            b"mine".to_vec(),
            b"b".to_vec(),
        ];
        let items = batch_items(&paths, &bytes);
        let results = f.vault.write_many_keeping(&items, |i, current| {
            match i {
                0 => assert!(current.is_some()),
                // Another program writes the note after the look under the lock.
                2 => fs::write(root.join("raced.md"), "theirs").unwrap(),
                3 => return Err(VaultError::io("", "check", std::io::Error::other("no"))),
                _ => assert!(current.is_none()),
            }
            Ok(())
        });
        let replaced = results[0].as_ref().unwrap();
        assert!(!replaced.outcome.created);
        assert_eq!(
            f.vault
                .read_snapshot(replaced.kept.as_ref().unwrap())
                .unwrap(),
            b"old"
        );
        let created = results[1].as_ref().unwrap();
        assert!(created.outcome.created && created.kept.is_none());
        assert_eq!(fs::read(root.join("new/deep/a.md")).unwrap(), b"a");
        assert!(matches!(results[2], Err(VaultError::NoteExists { .. })));
        assert_eq!(fs::read(root.join("raced.md")).unwrap(), b"theirs");
        assert!(results[3].is_err());
        assert!(
            !root.join("refused").exists(),
            "no folder for a refused note"
        );
        let temps = fs::read_dir(&root)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".tmp")
            })
            .count();
        assert_eq!(temps, 0);
    }

    #[test]
    fn every_batch_checks_its_own_items_and_a_note_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let f = TempVault::new();
        // More than one batch: each item's check sees its own index and note.
        let count = BATCH_NOTES + 5;
        let paths: Vec<VaultPath> = (0..count).map(|i| p(&format!("n{i:03}.md"))).collect();
        for (i, path) in paths.iter().enumerate() {
            f.put(path.as_str(), &format!("old {i}"));
        }
        let root = f.vault.root().path().to_path_buf();
        fs::set_permissions(root.join("n000.md"), fs::Permissions::from_mode(0o640)).unwrap();
        let new: Vec<Vec<u8>> = (0..count)
            .map(|i| format!("new {i}").into_bytes())
            .collect();
        let items = batch_items(&paths, &new);
        let results = f.vault.write_many_keeping(&items, |i, current| {
            assert_eq!(current.unwrap().bytes, format!("old {i}").into_bytes());
            Ok::<(), VaultError>(())
        });
        assert!(results.iter().all(Result::is_ok));
        assert_eq!(fs::read(root.join("n130.md")).unwrap(), b"new 130");
        let mode = fs::metadata(root.join("n000.md"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o640, "the note keeps its own mode");
    }

    // r[verify versions.keep.confirmed]
    #[test]
    fn an_empty_note_or_a_link_is_replaced_without_a_version() {
        let f = TempVault::new().with_files(&[("empty.md", ""), ("real.md", "the target")]);
        let root = f.vault.root().path().to_path_buf();
        std::os::unix::fs::symlink(root.join("real.md"), root.join("link.md")).unwrap();
        let paths = [p("empty.md"), p("link.md")];
        let new = [b"now text".to_vec(), b"now a file".to_vec()];
        let items = batch_items(&paths, &new);
        let results = f
            .vault
            .write_many_keeping(&items, |_, _| Ok::<(), VaultError>(()));
        for result in &results {
            assert!(result.as_ref().unwrap().kept.is_none());
        }
        assert!(f.vault.snapshots(None).unwrap().is_empty());
        assert_eq!(fs::read(root.join("real.md")).unwrap(), b"the target");
        assert!(
            !fs::symlink_metadata(root.join("link.md"))
                .unwrap()
                .is_symlink()
        );
    }
}
