//! The versions one batch of writes keeps, stored together (spec/versions.md
//! `versions.keep.linked`, `versions.private`; spec/bulk.md `bulk.set-property.batched`).
//!
//! A batch's versions live in one folder, `<snapshot folder>/<batch id>.batch/`: an `index`
//! of their headers (one JSON line each, as a one-file snapshot's first line) and one body
//! per version, named by its id, holding exactly the replaced bytes. Where it can, a body is
//! a second link to the note's own file, made before the note is replaced by a rename: the
//! replaced bytes are already on disk, so nothing is copied, and no new file is made for
//! them. Creating files is what costs a bulk write most (on ext4 each new file searches the
//! inode bitmap, past every inode freed in the last minutes when the file system has no
//! journal), and a copy would make one more file a note. A note that is not a plain file
//! with one link, or that the snapshot folder cannot link to (another file system), is
//! copied into its body instead.
//!
//! The folder is filled as `<batch id>.staging`, synced, and renamed into place, so a listed
//! batch is always complete; an entry whose body is gone is no version (a body is removed
//! first, then its entry), and the index is rewritten without the entries it loses, so a
//! permanent delete leaves not even the path's name behind.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use tc_gate::private_fs::{
    create_private_dir, create_private_dir_all, create_private_file, make_private,
};

use super::snapshots::{Header, SnapshotId, SnapshotInfo, SnapshotKind, file_mode};
use super::{NoteContent, Vault, sync_dir};
use crate::error::{VaultError, VaultResult};
use crate::path::VaultPath;

/// The suffix of a sealed batch folder.
pub(super) const BATCH_SUFFIX: &str = ".batch";
/// The suffix of a batch folder still being filled; never listed.
const STAGING_SUFFIX: &str = ".staging";
const INDEX: &str = "index";
/// A staging folder older than this is left from a process that died mid-batch.
const STALE_STAGING_MS: u128 = 10 * 60 * 1000;

/// A batch folder being filled.
#[derive(Debug)]
pub(super) struct StagingBatch {
    staging: PathBuf,
    sealed: PathBuf,
    headers: Vec<Header>,
}

/// One version staged in a batch folder.
#[derive(Debug)]
pub(super) struct StagedVersion {
    pub(super) info: SnapshotInfo,
    body: PathBuf,
    /// The body is a link to the note's file, which keeps the note's permission bits until
    /// the note is replaced.
    linked: bool,
}

impl StagedVersion {
    /// Makes the body durable (for a link: the note's bytes, should they not be yet).
    pub(super) fn sync(&self) -> io::Result<()> {
        fs::File::open(&self.body)?.sync_all()
    }

    /// The note will not be replaced: its body goes before the batch is sealed.
    pub(super) fn discard(&self) {
        let _ = fs::remove_file(&self.body);
    }

    /// The note was not replaced after all: its body goes from the sealed folder (the entry
    /// without it is no version).
    pub(super) fn discard_sealed(&self, sealed: &Path) {
        let _ = remove_from_batch(sealed, &[&self.info.id]);
    }

    // r[impl versions.private]
    /// The note was replaced: a linked body now holds the only link to the old bytes and
    /// becomes private as every snapshot file is (its old bits are in its header).
    pub(super) fn settle(&self, sealed: &Path) {
        if self.linked
            && let Some(name) = self.body.file_name()
        {
            let _ = make_private(&sealed.join(name));
        }
    }
}

impl Vault {
    /// A new batch folder, not yet listed.
    pub(super) fn start_batch(&self) -> io::Result<StagingBatch> {
        let (id, _) = self.next_snapshot_id();
        let staging = self
            .snapshot_dir
            .join(format!("{}{STAGING_SUFFIX}", id.as_str()));
        let sealed = self
            .snapshot_dir
            .join(format!("{}{BATCH_SUFFIX}", id.as_str()));
        create_private_dir_all(&self.snapshot_dir)?;
        create_private_dir(&staging)?;
        Ok(StagingBatch {
            staging,
            sealed,
            headers: Vec::new(),
        })
    }
}

impl StagingBatch {
    // r[impl versions.keep.linked]
    /// Keeps `current`, the content of the note at `target` as read under its lock, as a
    /// `replaced` version of `path`.
    pub(super) fn stage(
        &mut self,
        vault: &Vault,
        path: &VaultPath,
        target: &Path,
        current: &NoteContent,
    ) -> VaultResult<StagedVersion> {
        let (id, created_ms) = vault.next_snapshot_id();
        let info = SnapshotInfo {
            id: id.clone(),
            path: path.clone(),
            kind: SnapshotKind::Replaced,
            created_ms,
            size: current.bytes.len() as u64,
            content_hash: current.hash.clone(),
        };
        let body = self.staging.join(id.as_str());
        let linked = link_if_alone(target, &body, current.bytes.len() as u64);
        if !linked {
            let copied = create_private_file(&body).and_then(|mut f| f.write_all(&current.bytes));
            if let Err(e) = copied {
                let _ = fs::remove_file(&body);
                return Err(VaultError::io(path.as_str(), "write snapshot", e));
            }
        }
        self.headers.push(Header {
            info: info.clone(),
            mode: file_mode(target),
        });
        Ok(StagedVersion { info, body, linked })
    }

    /// Writes the index of `kept` (the staged versions still wanted), makes the folder
    /// durable and renames it into place, where it is listed. Returns the sealed folder; on
    /// failure nothing of the batch is left.
    pub(super) fn seal(self, vault: &Vault, kept: &[&StagedVersion]) -> io::Result<PathBuf> {
        let sealed = self.write_index(kept).and_then(|()| {
            sync_dir(&self.staging)?;
            fs::rename(&self.staging, &self.sealed)?;
            sync_dir(&vault.snapshot_dir)
        });
        match sealed {
            Ok(()) => Ok(self.sealed),
            Err(e) => {
                let _ = fs::remove_dir_all(&self.staging);
                let _ = fs::remove_dir_all(&self.sealed);
                Err(e)
            }
        }
    }

    /// Nothing of the batch is kept.
    pub(super) fn abandon(self) {
        let _ = fs::remove_dir_all(&self.staging);
    }

    fn write_index(&self, kept: &[&StagedVersion]) -> io::Result<()> {
        let mut lines = Vec::new();
        for header in &self.headers {
            if kept.iter().any(|v| v.info.id == header.info.id) {
                serde_json::to_writer(&mut lines, header).map_err(io::Error::other)?;
                lines.push(b'\n');
            }
        }
        let mut file = create_private_file(&self.staging.join(INDEX))?;
        file.write_all(&lines)?;
        file.sync_all()
    }
}

/// Links `body` to the file at `target` when the file is a plain file of `len` bytes with no
/// other link (another link could change the version through it later).
fn link_if_alone(target: &Path, body: &Path, len: u64) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let alone = fs::symlink_metadata(target)
            .is_ok_and(|meta| meta.is_file() && meta.nlink() == 1 && meta.len() == len);
        if !alone || fs::hard_link(target, body).is_err() {
            return false;
        }
        // The file may have been replaced between the look and the link.
        if fs::metadata(body).is_ok_and(|meta| meta.nlink() == 2 && meta.len() == len) {
            true
        } else {
            let _ = fs::remove_file(body);
            false
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (target, body, len);
        false
    }
}

/// Whether a snapshot-folder entry named `name` is a sealed batch.
pub(super) fn is_batch_name(name: &str) -> bool {
    name.strip_suffix(BATCH_SUFFIX)
        .is_some_and(|id| SnapshotId::parse(id).is_some())
}

/// The versions of the batch folder `dir` whose bodies are there.
pub(super) fn batch_headers(dir: &Path) -> io::Result<Vec<Header>> {
    let index = fs::read(dir.join(INDEX))?;
    let mut headers = Vec::new();
    for line in index.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let Ok(header) = serde_json::from_slice::<Header>(line) else {
            continue;
        };
        if fs::symlink_metadata(dir.join(header.info.id.as_str())).is_ok_and(|m| m.is_file()) {
            headers.push(header);
        }
    }
    Ok(headers)
}

/// The body of version `id` in the batch folder `dir`, its bytes alone.
pub(super) fn batch_body(dir: &Path, id: &SnapshotId) -> PathBuf {
    dir.join(id.as_str())
}

/// Removes the versions `ids` from the batch folder `dir`: their bodies, then their entries
/// (the index rewritten once without them and without any entry whose body is gone), then
/// the folder when nothing is left. Callers sharing the folder take turns on its lock.
pub(super) fn remove_from_batch(dir: &Path, ids: &[&SnapshotId]) -> io::Result<()> {
    let _turn = lock_folder(dir)?;
    for id in ids {
        match fs::remove_file(dir.join(id.as_str())) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    let remaining = batch_headers(dir)?;
    if remaining.is_empty() {
        return fs::remove_dir_all(dir);
    }
    let mut lines = Vec::new();
    for header in &remaining {
        serde_json::to_writer(&mut lines, header).map_err(io::Error::other)?;
        lines.push(b'\n');
    }
    let partial = dir.join(format!("{INDEX}.partial"));
    let _ = fs::remove_file(&partial);
    let mut file = create_private_file(&partial)?;
    file.write_all(&lines)?;
    file.sync_all()?;
    fs::rename(&partial, dir.join(INDEX))?;
    sync_dir(dir)
}

/// An exclusive lock on the folder itself, released when dropped.
fn lock_folder(dir: &Path) -> io::Result<Option<fs::File>> {
    let folder = fs::File::open(dir)?;
    match folder.lock() {
        Ok(()) => Ok(Some(folder)),
        Err(e) if e.kind() == io::ErrorKind::Unsupported => Ok(None),
        Err(e) => Err(e),
    }
}

/// Removes the staging folders of batches whose process died before sealing them.
pub(super) fn remove_stale_staging(snapshot_dir: &Path) {
    let Ok(entries) = fs::read_dir(snapshot_dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let stale = name.to_str().is_some_and(|n| n.ends_with(STAGING_SUFFIX))
            && entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|at| at.elapsed().ok())
                .is_some_and(|age| age.as_millis() > STALE_STAGING_MS);
        if stale {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    use super::*;
    use crate::test_support::{TempVault, p};
    use crate::vault::batch::batch_items;
    use crate::vault::snapshots::Stored;
    use crate::vault::{Precondition, Retention};

    fn write_all(f: &TempVault, paths: &[VaultPath], new: &[Vec<u8>]) {
        let items = batch_items(paths, new);
        for result in f
            .vault
            .write_many_keeping(&items, |_, _| Ok::<(), VaultError>(()))
        {
            result.unwrap();
        }
    }

    /// Every file under `dir`, as (location, bytes).
    fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut found = Vec::new();
        for entry in fs::read_dir(dir).unwrap() {
            let location = entry.unwrap().path();
            if location.is_dir() {
                found.extend(files_under(&location));
            } else {
                let bytes = fs::read(&location).unwrap();
                found.push((location, bytes));
            }
        }
        found
    }

    // r[verify versions.keep.linked]
    // r[verify versions.private]
    #[test]
    fn a_batch_keeps_each_replaced_file_itself_private_with_its_mode() {
        let f = TempVault::new().with_files(&[("a.md", "old a"), ("d/b.md", "old b")]);
        let a = f.vault.root().path().join("a.md");
        fs::set_permissions(&a, fs::Permissions::from_mode(0o640)).unwrap();
        let old_inode = fs::metadata(&a).unwrap().ino();
        let paths = [p("a.md"), p("d/b.md")];
        write_all(&f, &paths, &[b"new a".to_vec(), b"new b".to_vec()]);

        let versions = f.vault.snapshots(None).unwrap();
        assert_eq!(versions.len(), 2);
        let of_a = f.vault.snapshots(Some(&paths[0])).unwrap().remove(0);
        assert_eq!(of_a.kind, SnapshotKind::Replaced);
        assert_eq!(f.vault.read_snapshot(&of_a).unwrap(), b"old a");
        assert_eq!(f.vault.snapshot_mode(&of_a), Some(0o640));
        // The version is the replaced file itself, now private; the note is a new file.
        let Stored::InBatch { dir, .. } = f.vault.locate(&of_a.id).unwrap() else {
            panic!("kept in a batch folder");
        };
        let body = fs::metadata(batch_body(&dir, &of_a.id)).unwrap();
        assert_eq!(body.ino(), old_inode);
        assert_eq!(body.nlink(), 1);
        assert_eq!(body.permissions().mode() & 0o7777, 0o600);
        assert_eq!(
            fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert_ne!(fs::metadata(&a).unwrap().ino(), old_inode);
        assert_eq!(fs::read(&a).unwrap(), b"new a");

        // Restored, the note gets its bits back and what it replaced is kept in turn.
        f.vault
            .restore_over(&paths[0], Some(of_a.id.as_str()), &Precondition::None)
            .unwrap();
        assert_eq!(fs::read(&a).unwrap(), b"old a");
        assert_eq!(
            fs::metadata(&a).unwrap().permissions().mode() & 0o7777,
            0o640
        );
    }

    // r[verify versions.keep.linked]
    #[test]
    fn a_note_with_another_link_is_copied_not_shared() {
        let f = TempVault::new().with_files(&[("a.md", "old a")]);
        let a = f.vault.root().path().join("a.md");
        let elsewhere = f.dir.path().join("elsewhere.md");
        fs::hard_link(&a, &elsewhere).unwrap();
        write_all(&f, &[p("a.md")], &[b"new a".to_vec()]);
        // The other link still names the old file; writing through it changes no version.
        fs::write(&elsewhere, "changed through the other link").unwrap();
        let version = f.vault.snapshots(Some(&p("a.md"))).unwrap().remove(0);
        assert_eq!(f.vault.read_snapshot(&version).unwrap(), b"old a");
    }

    // r[verify versions.permanent]
    // r[verify versions.retention.sweep]
    #[test]
    fn removing_versions_of_a_batch_leaves_nothing_of_them() {
        let f = TempVault::new().with_files(&[
            ("keep.md", "kept text"),
            ("secret.md", "the plumber's number"),
        ]);
        let paths = [p("keep.md"), p("secret.md")];
        write_all(&f, &paths, &[b"k2".to_vec(), b"s2".to_vec()]);
        f.vault
            .delete_permanently(&paths[1], &Precondition::None)
            .unwrap();
        for (location, bytes) in files_under(f.vault.snapshot_dir()) {
            let text = String::from_utf8_lossy(&bytes);
            assert!(
                !text.contains("plumber") && !text.contains("secret.md"),
                "{} still holds the deleted note: {text}",
                location.display()
            );
        }
        let left = f.vault.snapshots(None).unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(f.vault.read_snapshot(&left[0]).unwrap(), b"kept text");

        // The last version of the folder gone, the folder goes too.
        f.clock.advance_ms(31 * 86_400_000);
        assert_eq!(f.vault.prune_snapshots(&Retention::default()).unwrap(), 1);
        assert!(f.vault.snapshots(None).unwrap().is_empty());
        let folders = fs::read_dir(f.vault.snapshot_dir()).unwrap().count();
        assert_eq!(folders, 0, "no batch folder is left behind");
    }

    #[test]
    fn removing_a_version_already_gone_is_no_error_and_keeps_the_rest() {
        let f = TempVault::new().with_files(&[("a.md", "old a"), ("b.md", "old b")]);
        write_all(
            &f,
            &[p("a.md"), p("b.md")],
            &[b"new a".to_vec(), b"new b".to_vec()],
        );
        let of_a = f.vault.snapshots(Some(&p("a.md"))).unwrap().remove(0);
        let Stored::InBatch { dir, .. } = f.vault.locate(&of_a.id).unwrap() else {
            panic!("kept in a batch folder");
        };
        // Two sweepers, or a sweeper and a permanent delete, removing the same version.
        remove_from_batch(&dir, &[&of_a.id]).unwrap();
        remove_from_batch(&dir, &[&of_a.id]).unwrap();
        let left = f.vault.snapshots(None).unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(f.vault.read_snapshot(&left[0]).unwrap(), b"old b");
    }

    // r[verify versions.retention.sweep]
    #[test]
    fn the_sweeper_removes_a_whole_batch_at_once_and_keeps_the_newest() {
        let f = TempVault::new();
        let paths: Vec<VaultPath> = (0..5).map(|i| p(&format!("n{i}.md"))).collect();
        for path in &paths {
            f.put(path.as_str(), "first");
        }
        write_all(&f, &paths, &vec![b"second".to_vec(); 5]);
        write_all(&f, &paths, &vec![b"third".to_vec(); 5]);
        assert_eq!(f.vault.snapshots(None).unwrap().len(), 10);
        // One version a path: the older batch goes whole, folder and all.
        assert_eq!(f.vault.prune_snapshots(&Retention::new(1, 30)).unwrap(), 5);
        let left = f.vault.snapshots(None).unwrap();
        assert_eq!(left.len(), 5);
        for info in &left {
            assert_eq!(f.vault.read_snapshot(info).unwrap(), b"second");
        }
        let folders = fs::read_dir(f.vault.snapshot_dir()).unwrap().count();
        assert_eq!(folders, 1);
    }

    #[test]
    fn a_damaged_body_is_refused_and_a_half_filled_folder_is_never_listed() {
        let f = TempVault::new().with_files(&[("a.md", "old a")]);
        write_all(&f, &[p("a.md")], &[b"new a".to_vec()]);
        let version = f.vault.snapshots(None).unwrap().remove(0);
        let Stored::InBatch { dir, .. } = f.vault.locate(&version.id).unwrap() else {
            panic!("kept in a batch folder");
        };
        fs::write(batch_body(&dir, &version.id), "tampered").unwrap();
        assert!(f.vault.read_snapshot(&version).is_err());

        // A staging folder (a batch whose process died before sealing it) is no version,
        // and the sweeper removes it once it is stale.
        let staging = f.vault.start_batch().unwrap();
        let location = staging.staging.clone();
        fs::write(location.join(INDEX), "").unwrap();
        assert_eq!(f.vault.snapshots(None).unwrap().len(), 1);
        f.vault.prune_snapshots(&Retention::default()).unwrap();
        assert!(
            location.exists(),
            "a fresh staging folder may be a live batch"
        );
        let aged = |secs| std::time::SystemTime::now() - std::time::Duration::from_secs(secs);
        let age = |secs| {
            fs::File::open(&location)
                .unwrap()
                .set_modified(aged(secs))
                .unwrap()
        };
        age(5 * 60);
        f.vault.prune_snapshots(&Retention::default()).unwrap();
        assert!(location.exists(), "five minutes is not yet stale");
        age(3600);
        f.vault.prune_snapshots(&Retention::default()).unwrap();
        assert!(!location.exists());
    }
}
