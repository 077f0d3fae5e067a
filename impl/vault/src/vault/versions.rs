//! Versions: what a confirmed call replaces is kept as a snapshot first, how long snapshots
//! are kept, and what a permanent delete removes (spec/versions.md `versions.keep.confirmed`,
//! `versions.keep.exact`, `versions.retention.sweep`, `versions.permanent`,
//! `versions.restore.keeps`).
//!
//! Each keeping write takes the version under the same lock as the write itself, after the
//! precondition the approval covers has held there, so the version is exactly the bytes the
//! write replaces; a version that cannot be stored fails the call before anything changes.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::Path;

use super::snapshots::{Place, SnapshotId, SnapshotKind, file_mode};
use super::version_batches::{remove_from_batch, remove_stale_staging};
use super::{
    LockedNote, Precondition, Vault, WriteOutcome, check_precondition, content_hash, current_state,
    sync_dir, write_atomic,
};
use crate::error::{VaultError, VaultResult};
use crate::path::VaultPath;
use crate::vault::SnapshotInfo;

/// How long snapshots are kept (`[versions]`, spec `versions.retention`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// The newest snapshots of one path that are kept; at least 1.
    pub keep_per_path: usize,
    /// The oldest a snapshot may grow, in milliseconds.
    pub max_age_ms: i64,
}

impl Retention {
    pub const DEFAULT_KEEP_PER_PATH: usize = 20;
    pub const DEFAULT_MAX_AGE_DAYS: u32 = 30;

    /// The retention of `keep_per_path` snapshots a path, none older than `max_age_days`.
    pub fn new(keep_per_path: usize, max_age_days: u32) -> Self {
        Retention {
            keep_per_path: keep_per_path.max(1),
            max_age_ms: i64::from(max_age_days.max(1)) * 86_400_000,
        }
    }
}

impl Default for Retention {
    fn default() -> Self {
        Retention::new(Self::DEFAULT_KEEP_PER_PATH, Self::DEFAULT_MAX_AGE_DAYS)
    }
}

/// A write that kept what it replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptWrite {
    pub outcome: WriteOutcome,
    /// The version of the replaced content; `None` when nothing was there to keep (no file,
    /// an empty one, or a link, which the write replaces without touching its target).
    pub kept: Option<SnapshotInfo>,
}

impl Vault {
    // r[impl versions.keep.confirmed]
    /// [`Vault::write`] that first keeps the file's current content as a `replaced` version,
    /// under the file's lock, once `precondition` holds.
    pub fn write_keeping(
        &self,
        path: &VaultPath,
        bytes: &[u8],
        precondition: &Precondition,
    ) -> VaultResult<KeptWrite> {
        let target = self.root.resolve_for_write(path)?;
        let _held = self.lock_notes(path, &[&target])?;
        self.keep_then_write(path, &target, bytes, precondition, None)
    }

    /// Restores snapshot `id` of `path` (the latest when `None`) over whatever `expected`
    /// describes at the path: a note there is kept as a `replaced` version first (spec
    /// `versions.restore.keeps`). Returns the snapshot restored and the version kept.
    pub fn restore_over(
        &self,
        path: &VaultPath,
        id: Option<&str>,
        expected: &Precondition,
    ) -> VaultResult<(SnapshotInfo, Option<SnapshotInfo>)> {
        let info = self.find_snapshot(path, id)?;
        let bytes = self.read_snapshot(&info)?;
        let mode = self.snapshot_mode(&info);
        let target = self.root.resolve_for_write(path)?;
        let _held = self.lock_notes(path, &[&target])?;
        let written = self.keep_then_write(path, &target, &bytes, expected, mode)?;
        Ok((info, written.kept))
    }

    // r[impl versions.keep.exact]
    /// Under the lock the caller holds: the precondition, the version of what is there, the
    /// write; a failed write removes the version it no longer needs.
    fn keep_then_write(
        &self,
        path: &VaultPath,
        target: &Path,
        bytes: &[u8],
        precondition: &Precondition,
        mode: Option<u32>,
    ) -> VaultResult<KeptWrite> {
        let hash_it = matches!(precondition, Precondition::HashIs(_));
        let current = current_state(path, target, hash_it)?;
        check_precondition(path, precondition, current.as_deref())?;
        let kept = self.keep_locked(path, target)?;
        let no_clobber = matches!(precondition, Precondition::MustNotExist);
        if let Err(e) = write_atomic(path, target, bytes, no_clobber, mode) {
            if let Some(info) = &kept {
                let _ = self.remove_snapshot(info);
            }
            return Err(e);
        }
        Ok(KeptWrite {
            outcome: WriteOutcome {
                hash: content_hash(bytes),
                created: current.is_none(),
            },
            kept,
        })
    }

    /// Keeps the regular file at `target` as a `replaced` version (its lock held by the
    /// caller); nothing for a missing or empty file, or a link (a write replaces the link,
    /// not its target's content).
    pub(super) fn keep_locked(
        &self,
        path: &VaultPath,
        target: &Path,
    ) -> VaultResult<Option<SnapshotInfo>> {
        match fs::symlink_metadata(target) {
            Ok(meta) if meta.is_file() && meta.len() > 0 => {}
            Ok(_) => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(VaultError::io(path.as_str(), "inspect", e)),
        }
        let bytes =
            fs::read(target).map_err(|e| VaultError::io(path.as_str(), "read for version", e))?;
        self.store_snapshot(path, &bytes, file_mode(target), SnapshotKind::Replaced)
            .map(Some)
    }

    /// The snapshot with id `raw`, whatever its path (`read_snapshot`); a malformed id, or
    /// one naming no snapshot, is [`VaultError::SnapshotNotFound`].
    pub fn snapshot(&self, raw: &str) -> VaultResult<SnapshotInfo> {
        let not_found = || VaultError::SnapshotNotFound {
            path: String::new(),
            id: Some(raw.to_owned()),
        };
        let id = super::SnapshotId::parse(raw).ok_or_else(not_found)?;
        self.load_snapshot(&id).map_err(|_| not_found())
    }

    // r[impl versions.retention.sweep]
    /// Removes every snapshot beyond the newest `keep_per_path` of its path and every one
    /// older than `max_age_ms`; returns how many went.
    pub fn prune_snapshots(&self, retention: &Retention) -> VaultResult<usize> {
        let now = self.clock.now_ms();
        remove_stale_staging(&self.snapshot_dir);
        let mut per_path: HashMap<VaultPath, Vec<(SnapshotInfo, Place)>> = HashMap::new();
        for (info, place) in self.placed_snapshots(None)? {
            per_path
                .entry(info.path.clone())
                .or_default()
                .push((info, place));
        }
        let mut doomed = Vec::new();
        for mut placed in per_path.into_values() {
            // Newest first: the first `keep_per_path` may stay if they are young enough.
            placed.sort_by(|(a, _), (b, _)| (b.created_ms, &b.id).cmp(&(a.created_ms, &a.id)));
            for (rank, one) in placed.into_iter().enumerate() {
                let too_old = now.saturating_sub(one.0.created_ms) > retention.max_age_ms;
                if rank >= retention.keep_per_path || too_old {
                    doomed.push(one);
                }
            }
        }
        self.remove_placed(&doomed)?;
        Ok(doomed.len())
    }

    // r[impl versions.permanent]
    /// Removes every snapshot of `path` (a permanent delete keeps nothing of the file).
    pub fn purge_snapshots(&self, path: &VaultPath) -> VaultResult<usize> {
        let doomed = self.placed_snapshots(Some(path))?;
        self.remove_placed(&doomed)?;
        Ok(doomed.len())
    }

    /// Removes the listed snapshots: each file or folder, and the versions of one batch folder
    /// together (its index rewritten once); the snapshot folder synced once.
    fn remove_placed(&self, doomed: &[(SnapshotInfo, Place)]) -> VaultResult<()> {
        let mut batches: HashMap<&Path, Vec<&SnapshotId>> = HashMap::new();
        for (info, place) in doomed {
            let io_err = |e| VaultError::io(info.path.as_str(), "remove snapshot", e);
            let removed = match place {
                Place::Folder(location) => super::snapshots::remove_snapshot_dir(location),
                Place::File(location) => fs::remove_file(location),
                Place::InBatch(dir) => {
                    batches.entry(dir.as_path()).or_default().push(&info.id);
                    Ok(())
                }
            };
            match removed {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(io_err(e)),
                _ => {}
            }
        }
        for (dir, ids) in batches {
            match remove_from_batch(dir, &ids) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    return Err(VaultError::io(
                        dir.display().to_string(),
                        "remove snapshot",
                        e,
                    ));
                }
                _ => {}
            }
        }
        if doomed.is_empty() {
            return Ok(());
        }
        sync_dir(&self.snapshot_dir).map_err(|e| {
            VaultError::io(
                self.snapshot_dir.display().to_string(),
                "remove snapshot",
                e,
            )
        })
    }

    /// Deletes a file for good and every snapshot of its path (`delete_note` with
    /// `permanent`), once `expected` holds of it under its lock.
    pub fn delete_permanently(&self, path: &VaultPath, expected: &Precondition) -> VaultResult<()> {
        self.delete(path, expected)?;
        self.deleted_for_good
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(path.clone());
        self.purge_snapshots(path)?;
        Ok(())
    }

    /// The paths deleted permanently since the last call, for whoever keeps other copies of
    /// their text to forget them.
    pub fn take_deleted_for_good(&self) -> Vec<VaultPath> {
        std::mem::take(
            &mut *self
                .deleted_for_good
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Removes one snapshot (a folder-stored one: its meta first, so it is never listed
    /// half removed).
    pub(super) fn remove_snapshot(&self, info: &SnapshotInfo) -> VaultResult<()> {
        match self.locate(&info.id) {
            Ok(stored) => self.remove_placed(&[(info.clone(), Place::from(stored))]),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(VaultError::io(info.path.as_str(), "remove snapshot", e)),
        }
    }
}

impl LockedNote<'_> {
    /// Writes as [`LockedNote::write`] does, keeping what it replaces as a version first
    /// ([`Vault::write_keeping`]), under the lock already held.
    pub fn write_keeping(
        &self,
        bytes: &[u8],
        precondition: &Precondition,
    ) -> VaultResult<KeptWrite> {
        self.vault
            .keep_then_write(self.path, &self.target, bytes, precondition, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{TempVault, p};

    fn kinds(vault: &Vault, path: &VaultPath) -> Vec<(SnapshotKind, Vec<u8>)> {
        vault
            .snapshots(Some(path))
            .unwrap()
            .iter()
            .map(|info| (info.kind, vault.read_snapshot(info).unwrap()))
            .collect()
    }

    // r[verify versions.keep.exact]
    #[test]
    fn a_keeping_write_keeps_exactly_what_it_replaces() {
        let f = TempVault::new();
        let path = p("notes/plan.md");
        let first = f.vault.write(&path, b"v1", &Precondition::None).unwrap();
        // Nothing there: nothing kept.
        let created = f
            .vault
            .write_keeping(&p("notes/new.md"), b"x", &Precondition::MustNotExist)
            .unwrap();
        assert_eq!(created.kept, None);
        assert!(created.outcome.created);
        let kept = f
            .vault
            .write_keeping(&path, b"v2", &Precondition::HashIs(first.hash.clone()))
            .unwrap();
        let info = kept.kept.unwrap();
        assert_eq!(info.kind, SnapshotKind::Replaced);
        assert_eq!(info.content_hash, first.hash);
        assert_eq!(f.vault.read(&path).unwrap().bytes, b"v2");
        // A precondition that fails keeps nothing and writes nothing.
        let stale = f
            .vault
            .write_keeping(&path, b"v3", &Precondition::HashIs(first.hash))
            .unwrap_err();
        assert_eq!(stale.code(), "concurrent_modification");
        assert_eq!(
            kinds(&f.vault, &path),
            [(SnapshotKind::Replaced, b"v1".to_vec())]
        );
        // The locked form keeps too.
        f.vault
            .with_note_lock(&path, |locked| {
                locked.write_keeping(b"v3", &Precondition::MustExist)
            })
            .unwrap();
        assert_eq!(
            kinds(&f.vault, &path),
            [
                (SnapshotKind::Replaced, b"v1".to_vec()),
                (SnapshotKind::Replaced, b"v2".to_vec())
            ]
        );
    }

    // r[verify versions.private]
    #[cfg(unix)]
    #[test]
    fn versions_are_private_files_and_keep_the_mode() {
        use std::os::unix::fs::PermissionsExt;
        let f = TempVault::new();
        let path = p("key.md");
        f.vault
            .write(&path, b"secret", &Precondition::None)
            .unwrap();
        let file = f.vault.root().path().join("key.md");
        fs::set_permissions(&file, fs::Permissions::from_mode(0o640)).unwrap();
        let kept = f
            .vault
            .write_keeping(&path, b"other", &Precondition::None)
            .unwrap()
            .kept
            .unwrap();
        let stored = f.vault.snapshot_dir().join(kept.id.as_str());
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(f.vault.snapshot_dir()), 0o700);
        assert_eq!(mode(&stored), 0o600);
        assert!(!stored.starts_with(f.vault.root().path()));
        // Restored over the note, the version brings back its bits.
        fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).unwrap();
        f.vault
            .restore_over(&path, Some(kept.id.as_str()), &Precondition::MustExist)
            .unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"secret");
        assert_eq!(mode(&file), 0o640);
    }

    // r[verify versions.restore.keeps]
    #[test]
    fn a_restore_over_a_note_keeps_that_note() {
        let f = TempVault::new();
        let path = p("a.md");
        f.vault.write(&path, b"old", &Precondition::None).unwrap();
        let v1 = f
            .vault
            .write_keeping(&path, b"new", &Precondition::None)
            .unwrap()
            .kept
            .unwrap();
        let now = f.vault.read(&path).unwrap();
        f.clock.advance_ms(10);
        let (restored, kept) = f
            .vault
            .restore_over(&path, Some(v1.id.as_str()), &Precondition::HashIs(now.hash))
            .unwrap();
        assert_eq!(restored, v1);
        assert_eq!(f.vault.read(&path).unwrap().bytes, b"old");
        let kept = kept.unwrap();
        assert_eq!(f.vault.read_snapshot(&kept).unwrap(), b"new");
        // The latest snapshot is now the one the restore kept: restoring it undoes the restore.
        assert_eq!(f.vault.find_snapshot(&path, None).unwrap().id, kept.id);
        // A stale expectation restores nothing.
        let err = f
            .vault
            .restore_over(&path, None, &Precondition::MustNotExist)
            .unwrap_err();
        assert_eq!(err.code(), "note_exists");
        assert_eq!(f.vault.read(&path).unwrap().bytes, b"old");
    }

    #[test]
    fn a_move_over_a_note_keeps_it() {
        let f = TempVault::new();
        let (from, to) = (p("a.md"), p("b.md"));
        f.vault
            .write(&from, b"moving", &Precondition::None)
            .unwrap();
        f.vault
            .write(&to, b"replaced", &Precondition::None)
            .unwrap();
        let kept = f
            .vault
            .rename_keeping(
                &from,
                &to,
                &Precondition::MustExist,
                &Precondition::MustExist,
            )
            .unwrap()
            .unwrap();
        assert_eq!(kept.path, to);
        assert_eq!(f.vault.read_snapshot(&kept).unwrap(), b"replaced");
        assert_eq!(f.vault.read(&to).unwrap().bytes, b"moving");
        // Onto a free path nothing is kept.
        assert_eq!(
            f.vault
                .rename_keeping(&to, &from, &Precondition::None, &Precondition::None)
                .unwrap(),
            None
        );
    }

    // r[verify versions.retention.sweep]
    #[test]
    fn pruning_keeps_the_newest_per_path_and_drops_the_old() {
        let f = TempVault::new();
        let (a, b) = (p("a.md"), p("b.md"));
        for n in 0..5 {
            f.vault
                .write_keeping(&a, format!("a{n}").as_bytes(), &Precondition::None)
                .unwrap();
            f.clock.advance_ms(1_000);
        }
        f.vault.write(&b, b"b0", &Precondition::None).unwrap();
        f.vault
            .snapshot_and_delete(&b, &Precondition::None)
            .unwrap();
        // a.md: versions of a0..a3 (the first write kept nothing); b.md: one deleted.
        assert_eq!(f.vault.snapshots(Some(&a)).unwrap().len(), 4);
        let retention = Retention::new(2, 30);
        assert_eq!(f.vault.prune_snapshots(&retention).unwrap(), 2);
        let left: Vec<Vec<u8>> = kinds(&f.vault, &a).into_iter().map(|(_, b)| b).collect();
        assert_eq!(left, [b"a2".to_vec(), b"a3".to_vec()], "the newest two");
        assert_eq!(f.vault.snapshots(Some(&b)).unwrap().len(), 1);
        // Thirty days on, one day more: everything is too old, whatever its kind.
        f.clock.advance_ms(30 * 86_400_000 - 10_000);
        assert_eq!(f.vault.prune_snapshots(&retention).unwrap(), 0, "not yet");
        f.clock.advance_ms(86_400_000);
        assert_eq!(f.vault.prune_snapshots(&retention).unwrap(), 3);
        assert!(f.vault.snapshots(None).unwrap().is_empty());
        assert_eq!(fs::read_dir(f.vault.snapshot_dir()).unwrap().count(), 0);
        let defaults = Retention::default();
        assert_eq!(defaults.keep_per_path, 20);
        assert_eq!(defaults.max_age_ms, 30 * 86_400_000);
        assert_eq!(Retention::new(0, 0), Retention::new(1, 1));
    }

    // r[verify versions.permanent]
    #[test]
    fn a_permanent_delete_removes_every_snapshot_of_its_path() {
        let f = TempVault::new();
        let (a, other) = (p("a.md"), p("other.md"));
        f.vault.write(&a, b"one", &Precondition::None).unwrap();
        f.vault
            .write_keeping(&a, b"two", &Precondition::None)
            .unwrap();
        f.vault
            .snapshot_and_delete(&a, &Precondition::None)
            .unwrap();
        f.vault.write(&a, b"three", &Precondition::None).unwrap();
        f.vault.write(&other, b"o", &Precondition::None).unwrap();
        f.vault
            .write_keeping(&other, b"o2", &Precondition::None)
            .unwrap();
        assert_eq!(f.vault.snapshots(Some(&a)).unwrap().len(), 2);
        f.vault
            .delete_permanently(&a, &Precondition::MustExist)
            .unwrap();
        assert!(!f.vault.exists(&a).unwrap());
        assert!(f.vault.snapshots(Some(&a)).unwrap().is_empty());
        assert_eq!(
            f.vault.snapshots(None).unwrap().len(),
            1,
            "other paths keep theirs"
        );
        let left: Vec<Vec<u8>> = fs::read_dir(f.vault.snapshot_dir())
            .unwrap()
            .map(|entry| fs::read(entry.unwrap().path()).unwrap())
            .collect();
        assert_eq!(left.len(), 1);
        for gone in [&b"one"[..], b"two"] {
            assert!(
                !left.iter().any(|bytes| bytes.ends_with(gone)),
                "no copy of {gone:?}"
            );
        }
    }

    #[test]
    fn snapshots_stored_as_folders_are_still_read_restored_and_removed() {
        let f = TempVault::new();
        let path = p("old.md");
        let id = "1799999999000-0011223344556677";
        let dir = f.vault.snapshot_dir().join(id);
        fs::create_dir_all(&dir).unwrap();
        let meta = serde_json::json!({"id": id, "path": "old.md",
            "created_ms": 1_799_999_999_000i64, "size": 3, "content_hash": content_hash(b"old")});
        fs::write(dir.join("meta.json"), meta.to_string()).unwrap();
        fs::write(dir.join("content"), b"old").unwrap();
        fs::write(dir.join("mode"), "600\n").unwrap();
        let info = f.vault.find_snapshot(&path, None).unwrap();
        assert_eq!(
            info.kind,
            SnapshotKind::Deleted,
            "no kind recorded: a delete's"
        );
        assert_eq!(f.vault.read_snapshot(&info).unwrap(), b"old");
        assert_eq!(f.vault.snapshot_mode(&info), Some(0o600));
        f.vault.restore(&path, None).unwrap();
        assert_eq!(f.vault.read(&path).unwrap().bytes, b"old");
        assert_eq!(f.vault.purge_snapshots(&path).unwrap(), 1);
        assert!(!dir.exists());
    }

    #[test]
    fn a_damaged_snapshot_is_refused_not_restored() {
        let f = TempVault::new();
        let path = p("a.md");
        f.vault.write(&path, b"one", &Precondition::None).unwrap();
        let kept = f
            .vault
            .write_keeping(&path, b"two", &Precondition::None)
            .unwrap()
            .kept
            .unwrap();
        let stored = f.vault.snapshot_dir().join(kept.id.as_str());
        let mut bytes = fs::read(&stored).unwrap();
        *bytes.last_mut().unwrap() = b'X';
        fs::write(&stored, bytes).unwrap();
        assert!(f.vault.read_snapshot(&kept).is_err());
        assert!(
            f.vault
                .restore_over(&path, None, &Precondition::None)
                .is_err()
        );
        assert_eq!(f.vault.read(&path).unwrap().bytes, b"two");
    }

    // r[verify versions.keep.exact]
    #[test]
    fn a_version_that_cannot_be_stored_leaves_the_note_as_it_was() {
        let f = TempVault::new();
        let path = p("a.md");
        f.vault
            .write(&path, b"before", &Precondition::None)
            .unwrap();
        // A file where the snapshot folder should be: no version can be stored.
        fs::create_dir_all(f.vault.snapshot_dir().parent().unwrap()).unwrap();
        fs::write(f.vault.snapshot_dir(), b"in the way").unwrap();
        let err = f
            .vault
            .write_keeping(&path, b"after", &Precondition::None)
            .unwrap_err();
        assert_eq!(err.code(), "io");
        assert_eq!(f.vault.read(&path).unwrap().bytes, b"before");
        let (from, to) = (p("b.md"), path.clone());
        f.vault.write(&from, b"mover", &Precondition::None).unwrap();
        assert!(
            f.vault
                .rename_keeping(&from, &to, &Precondition::None, &Precondition::None)
                .is_err()
        );
        assert_eq!(f.vault.read(&to).unwrap().bytes, b"before");
        assert_eq!(f.vault.read(&from).unwrap().bytes, b"mover");
    }
}
