//! The snapshots `restore_note` restores from (spec `vault.snapshot.delete`,
//! `vault.snapshot.restore`, `vault.snapshot.permanent`; spec/tools.md, spec/results.md,
//! spec/versions.md): deleted files, and the versions `vault/versions.rs` keeps of files a
//! confirmed call replaced.
//!
//! Snapshots live in a folder outside the vault (`<cacheDir>/snapshots/<vault-id>/`):
//! deleting first renames the note aside inside its own folder, snapshots exactly the bytes
//! it moved, and only then removes it; a failed snapshot puts the note back.
//!
//! A snapshot is one file named by its id: a JSON header line (what [`SnapshotInfo`] says and
//! the file's mode), then the bytes. Written as `<id>.partial`, synced and renamed into
//! place, it costs two syncs, which every keeping write pays. Snapshots stored as a folder
//! (`meta.json`, `content`, `mode`) are still read, restored and removed.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};
use tc_gate::private_fs::{create_private_dir_all, create_private_file};

use super::version_batches::{batch_body, batch_headers, is_batch_name};
use super::{
    Precondition, Vault, content_hash, not_found_or_io, note_metadata_nofollow, sync_dir,
    sync_parent,
};
use crate::error::{VaultError, VaultResult};
use crate::path::VaultPath;

/// A snapshot id: `<created ms, 13+ digits>-<16 hex>`; sorts by creation time.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SnapshotId(String);

impl SnapshotId {
    /// Judges a `snapshot_id`: only the id format is accepted, since anything else could
    /// name a path in the snapshot folder.
    pub fn parse(raw: &str) -> Option<Self> {
        let valid = raw.split_once('-').is_some_and(|(ms, nonce)| {
            ms.len() >= 13
                && ms.len() <= 20
                && ms.bytes().all(|b| b.is_ascii_digit())
                && nonce.len() == 16
                && nonce
                    .bytes()
                    .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        });
        valid.then(|| SnapshotId(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for SnapshotId {
    type Error = String;
    fn try_from(raw: String) -> Result<Self, String> {
        SnapshotId::parse(&raw).ok_or_else(|| format!("{raw:?} is not a snapshot id"))
    }
}

impl From<SnapshotId> for String {
    fn from(id: SnapshotId) -> String {
        id.0
    }
}

/// What a snapshot holds (spec `versions.keep.confirmed`): a file a delete removed, or the
/// content a confirmed call replaced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SnapshotKind {
    /// Snapshots stored before kinds were recorded are all of deleted notes.
    #[default]
    Deleted,
    Replaced,
}

impl SnapshotKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SnapshotKind::Deleted => "deleted",
            SnapshotKind::Replaced => "replaced",
        }
    }
}

/// One stored snapshot of a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotInfo {
    pub id: SnapshotId,
    #[serde(with = "path_as_string")]
    pub path: VaultPath,
    #[serde(default)]
    pub kind: SnapshotKind,
    pub created_ms: i64,
    pub size: u64,
    pub content_hash: String,
}

mod path_as_string {
    use crate::path::VaultPath;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(path: &VaultPath, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(path.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<VaultPath, D::Error> {
        let raw = String::deserialize(d)?;
        VaultPath::parse(&raw).map_err(serde::de::Error::custom)
    }
}

/// `<cacheDir>/snapshots/<vault-id>/`, the snapshot folder of one vault. The id becomes a
/// folder name, so it must be one plain segment (letters, digits, `-`, `_`, `.`, not `.` or
/// `..` alone); anything else is refused rather than allowed to point elsewhere.
pub fn snapshot_dir_for(cache_dir: &Path, vault_id: &str) -> VaultResult<PathBuf> {
    let plain = !vault_id.is_empty()
        && vault_id.len() <= 128
        && vault_id != "."
        && vault_id != ".."
        && vault_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if plain {
        Ok(cache_dir.join("snapshots").join(vault_id))
    } else {
        Err(VaultError::invalid(
            vault_id,
            "a vault id must be letters, digits, '-', '_' or '.'",
        ))
    }
}

const SNAPSHOT_META: &str = "meta.json";
const SNAPSHOT_CONTENT: &str = "content";
/// The deleted note's permission bits, in octal, so a restore gives them back.
const SNAPSHOT_MODE: &str = "mode";

impl Vault {
    /// Snapshots the note outside the vault, then deletes it (`delete_note` without
    /// `permanent`), once `expected` holds of it under its lock.
    pub fn snapshot_and_delete(
        &self,
        path: &VaultPath,
        expected: &Precondition,
    ) -> VaultResult<SnapshotInfo> {
        // The snapshot reads through a final link, so the link must stay inside the vault:
        // otherwise a restore would copy an outside file in.
        self.root.resolve_for_read(path)?;
        let target = self.root.resolve_for_write(path)?;
        let _held = self.lock_notes(path, &[&target])?;
        note_metadata_nofollow(path, &target)?;
        self.check_locked(path, expected)?;
        // Move the note aside first, so the snapshot holds exactly the bytes removed even if
        // an editor writes the note meanwhile (it would create a new note, not change ours).
        let aside = target.with_file_name(format!(".tc-delete-{}.tmp", self.nonce_hex()));
        fs::rename(&target, &aside).map_err(|e| not_found_or_io(path, "delete", e))?;
        let snapshot = fs::read(&aside)
            .map_err(|e| VaultError::io(path.as_str(), "read for snapshot", e))
            .and_then(|bytes| {
                self.store_snapshot(path, &bytes, file_mode(&aside), SnapshotKind::Deleted)
            });
        match snapshot {
            Ok(info) => {
                fs::remove_file(&aside).map_err(|e| VaultError::io(path.as_str(), "delete", e))?;
                sync_parent(path, &target)?;
                Ok(info)
            }
            Err(e) => {
                // Put the note back; a note created at the path meanwhile is not replaced.
                let _ = fs::hard_link(&aside, &target).and_then(|()| fs::remove_file(&aside));
                Err(e)
            }
        }
    }

    /// Restores a snapshot of `path` (`restore_note.snapshot_id`; the latest when `None`)
    /// with a create-only write: refuses with `note_exists` if a note is at the path now,
    /// and with `note_not_found` if no such snapshot of this path exists (an id of another
    /// note's snapshot, or a malformed id, included). The snapshot is kept.
    pub fn restore(&self, path: &VaultPath, id: Option<&str>) -> VaultResult<SnapshotInfo> {
        let info = self.find_snapshot(path, id)?;
        let bytes = self.read_snapshot(&info)?;
        // r[impl vault.snapshot.restore-mode]
        let mode = self.snapshot_mode(&info);
        self.write_with_mode(path, &bytes, &Precondition::MustNotExist, mode)?;
        Ok(info)
    }

    /// The content a snapshot holds, checked against the hash recorded when it was taken
    /// (so the write gate can judge a restore before anything is written).
    pub fn read_snapshot(&self, info: &SnapshotInfo) -> VaultResult<Vec<u8>> {
        let read = self.locate(&info.id).and_then(|stored| match stored {
            Stored::Folder(location) => fs::read(location.join(SNAPSHOT_CONTENT)),
            Stored::File(location) => fs::read(&location).map(|mut file| {
                let body = file
                    .iter()
                    .position(|b| *b == b'\n')
                    .map_or(file.len(), |n| n + 1);
                file.drain(..body);
                file
            }),
            Stored::InBatch { dir, .. } => fs::read(batch_body(&dir, &info.id)),
        });
        let bytes = read.map_err(|e| VaultError::io(info.path.as_str(), "read snapshot", e))?;
        if content_hash(&bytes) != info.content_hash {
            return Err(VaultError::io(
                info.path.as_str(),
                "read snapshot",
                io::Error::new(io::ErrorKind::InvalidData, "the snapshot is damaged"),
            ));
        }
        Ok(bytes)
    }

    /// The file mode the note had when it was deleted, when the snapshot recorded one
    /// (snapshots written before modes were recorded restore with the usual mode).
    pub(super) fn snapshot_mode(&self, info: &SnapshotInfo) -> Option<u32> {
        let mode = match self.locate(&info.id).ok()? {
            Stored::Folder(location) => {
                let text = fs::read_to_string(location.join(SNAPSHOT_MODE)).ok()?;
                u32::from_str_radix(text.trim(), 8).ok()?
            }
            Stored::File(location) => read_header(&location).ok()?.mode?,
            Stored::InBatch { header, .. } => header.mode?,
        };
        Some(mode).filter(|mode| *mode <= 0o7777)
    }

    /// The snapshot `restore` would use, without restoring it (for the confirmation
    /// fingerprint of `restore_note`).
    pub fn find_snapshot(&self, path: &VaultPath, id: Option<&str>) -> VaultResult<SnapshotInfo> {
        let not_found = || VaultError::SnapshotNotFound {
            path: path.as_str().to_owned(),
            id: id.map(str::to_owned),
        };
        match id {
            Some(raw) => {
                let id = SnapshotId::parse(raw).ok_or_else(not_found)?;
                let info = self.load_snapshot(&id).map_err(|_| not_found())?;
                if &info.path == path {
                    Ok(info)
                } else {
                    Err(not_found())
                }
            }
            None => self.snapshots(Some(path))?.pop().ok_or_else(not_found),
        }
    }

    /// Every stored snapshot (of `path` only, when given), oldest first.
    pub fn snapshots(&self, path: Option<&VaultPath>) -> VaultResult<Vec<SnapshotInfo>> {
        Ok(self
            .placed_snapshots(path)?
            .into_iter()
            .map(|(info, _)| info)
            .collect())
    }

    /// [`Vault::snapshots`], each with where it is stored.
    pub(super) fn placed_snapshots(
        &self,
        path: Option<&VaultPath>,
    ) -> VaultResult<Vec<(SnapshotInfo, Place)>> {
        let entries = match fs::read_dir(&self.snapshot_dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(VaultError::io(
                    self.snapshot_dir.display().to_string(),
                    "list snapshots",
                    e,
                ));
            }
        };
        let mut found = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| {
                VaultError::io(self.snapshot_dir.display().to_string(), "list snapshots", e)
            })?;
            let name = entry.file_name();
            let name = name.to_str().unwrap_or_default();
            if is_batch_name(name) {
                let dir = entry.path();
                let headers = batch_headers(&dir).unwrap_or_default();
                found.extend(
                    headers
                        .into_iter()
                        .filter(|h| path.is_none_or(|p| &h.info.path == p))
                        .map(|h| (h.info, Place::InBatch(dir.clone()))),
                );
                continue;
            }
            // Half-written snapshots (`.partial`, `.staging`) and foreign files are not
            // snapshots.
            let Some(id) = SnapshotId::parse(name) else {
                continue;
            };
            if let Ok(info) = self.load_snapshot(&id)
                && path.is_none_or(|p| &info.path == p)
            {
                let place = if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    Place::Folder(entry.path())
                } else {
                    Place::File(entry.path())
                };
                found.push((info, place));
            }
        }
        found.sort_by(|(a, _), (b, _)| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
        Ok(found)
    }

    /// Where snapshot `id` is stored: a file or folder named by it, or a batch folder that
    /// holds its body.
    pub(super) fn locate(&self, id: &SnapshotId) -> io::Result<Stored> {
        let location = self.snapshot_dir.join(id.as_str());
        match fs::symlink_metadata(&location) {
            Ok(meta) if meta.is_dir() => return Ok(Stored::Folder(location)),
            Ok(_) => return Ok(Stored::File(location)),
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            Err(_) => {}
        }
        for entry in fs::read_dir(&self.snapshot_dir)? {
            let entry = entry?;
            if !entry.file_name().to_str().is_some_and(is_batch_name) {
                continue;
            }
            let dir = entry.path();
            if !fs::symlink_metadata(batch_body(&dir, id)).is_ok_and(|m| m.is_file()) {
                continue;
            }
            if let Some(header) = batch_headers(&dir)?.into_iter().find(|h| &h.info.id == id) {
                return Ok(Stored::InBatch { dir, header });
            }
        }
        Err(io::Error::new(io::ErrorKind::NotFound, "no such snapshot"))
    }

    pub(super) fn load_snapshot(&self, id: &SnapshotId) -> io::Result<SnapshotInfo> {
        let info = match self.locate(id)? {
            Stored::Folder(location) => {
                let meta = fs::read(location.join(SNAPSHOT_META))?;
                serde_json::from_slice(&meta)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?
            }
            Stored::File(location) => read_header(&location)?.info,
            Stored::InBatch { header, .. } => header.info,
        };
        if &info.id != id {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "snapshot id mismatch",
            ));
        }
        Ok(info)
    }

    pub(super) fn store_snapshot(
        &self,
        path: &VaultPath,
        bytes: &[u8],
        mode: Option<u32>,
        kind: SnapshotKind,
    ) -> VaultResult<SnapshotInfo> {
        let staged = self.stage_snapshot(path, bytes, mode, kind, true)?;
        let io_err = |e| VaultError::io(path.as_str(), "write snapshot", e);
        let result = fs::rename(
            &staged.partial,
            self.snapshot_dir.join(staged.info.id.as_str()),
        )
        .and_then(|()| sync_dir(&self.snapshot_dir));
        if let Err(e) = result {
            let _ = fs::remove_file(&staged.partial);
            return Err(io_err(e));
        }
        Ok(staged.info)
    }

    /// Writes a snapshot as `<id>.partial` (fsynced when `sync`), not yet in place: a
    /// listed snapshot is always complete, so it is listed only once renamed.
    pub(super) fn stage_snapshot(
        &self,
        path: &VaultPath,
        bytes: &[u8],
        mode: Option<u32>,
        kind: SnapshotKind,
        sync: bool,
    ) -> VaultResult<StagedSnapshot> {
        let (id, created_ms) = self.next_snapshot_id();
        let info = SnapshotInfo {
            id: id.clone(),
            path: path.clone(),
            kind,
            created_ms,
            size: bytes.len() as u64,
            content_hash: content_hash(bytes),
        };
        let io_err = |e| VaultError::io(path.as_str(), "write snapshot", e);
        // r[impl gate.files.private]
        // r[impl versions.private]
        // A deleted note's bytes are as private as the note: 0700 folders, 0600 files.
        create_private_dir_all(&self.snapshot_dir).map_err(io_err)?;
        // Written as `<id>.partial` and renamed into place, so a listed snapshot is always
        // complete.
        let mut header = serde_json::to_vec(&Header {
            info: info.clone(),
            mode,
        })
        .map_err(|e| io_err(io::Error::other(e)))?;
        header.push(b'\n');
        let partial = self.snapshot_dir.join(format!("{}.partial", id.as_str()));
        if let Err(e) = write_partial(&partial, &[&header, bytes], sync) {
            let _ = fs::remove_file(&partial);
            return Err(io_err(e));
        }
        Ok(StagedSnapshot { info, partial })
    }

    /// A new snapshot id and its creation time, later than every earlier one's.
    pub(super) fn next_snapshot_id(&self) -> (SnapshotId, i64) {
        let now = self.clock.now_ms();
        let previous = self
            .last_snapshot_ms
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| {
                Some(now.max(last.saturating_add(1)))
            })
            .unwrap_or(now);
        let created_ms = now.max(previous.saturating_add(1));
        let id = SnapshotId(format!("{:013}-{}", created_ms.max(0), self.nonce_hex()));
        (id, created_ms)
    }

    fn nonce_hex(&self) -> String {
        let mut nonce = [0u8; 8];
        self.entropy.fill(&mut nonce);
        hex::encode(nonce)
    }
}

/// The permission bits of the file at `location` (`None` where there are none to keep).
pub(super) fn file_mode(location: &Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(location)
            .ok()
            .map(|meta| meta.permissions().mode() & 0o7777)
    }
    #[cfg(not(unix))]
    {
        let _ = location;
        None
    }
}

/// Where a listed snapshot is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Place {
    File(PathBuf),
    Folder(PathBuf),
    /// A body in this batch folder.
    InBatch(PathBuf),
}

impl From<Stored> for Place {
    fn from(stored: Stored) -> Place {
        match stored {
            Stored::File(location) => Place::File(location),
            Stored::Folder(location) => Place::Folder(location),
            Stored::InBatch { dir, .. } => Place::InBatch(dir),
        }
    }
}

/// Where one snapshot is stored.
#[derive(Debug)]
pub(super) enum Stored {
    /// One file: its header line, then the bytes.
    File(PathBuf),
    /// A folder of `meta.json`, `content` and `mode`, as older snapshots were stored.
    Folder(PathBuf),
    /// A body in a batch folder, with its line of the folder's index.
    InBatch { dir: PathBuf, header: Header },
}

/// A snapshot written beside its place, waiting to be renamed into it.
#[derive(Debug)]
pub(super) struct StagedSnapshot {
    pub(super) info: SnapshotInfo,
    pub(super) partial: PathBuf,
}

fn write_partial(location: &Path, parts: &[&[u8]], sync: bool) -> io::Result<()> {
    let mut file = create_private_file(location)?;
    for part in parts {
        file.write_all(part)?;
    }
    if sync { file.sync_all() } else { Ok(()) }
}

/// Removes a snapshot stored as a folder: its meta first, then the rest.
pub(super) fn remove_snapshot_dir(dir: &Path) -> io::Result<()> {
    match fs::remove_file(dir.join(SNAPSHOT_META)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    fs::remove_dir_all(dir)
}

/// The first line of a one-file snapshot, and a line of a batch folder's index.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Header {
    #[serde(flatten)]
    pub(super) info: SnapshotInfo,
    /// The permission bits of the file it was taken from, so a restore gives them back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) mode: Option<u32>,
}

/// The longest header read: a path of 4,096 bytes escaped, with room to spare.
const HEADER_LIMIT: u64 = 64 * 1024;

fn read_header(location: &Path) -> io::Result<Header> {
    use std::io::{BufRead, Read};
    let file = fs::File::open(location)?;
    let mut line = Vec::new();
    io::BufReader::new(file.take(HEADER_LIMIT)).read_until(b'\n', &mut line)?;
    if line.last() != Some(&b'\n') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "no snapshot header",
        ));
    }
    serde_json::from_slice(&line).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{TempVault, names_in, p};

    // r[verify vault.snapshot.delete]
    // r[verify vault.snapshot.restore]
    #[test]
    fn delete_snapshot_restore() {
        let f = TempVault::new();
        let path = p("inbox/idea.md");
        f.vault.write(&path, b"first", &Precondition::None).unwrap();
        let s1 = f
            .vault
            .snapshot_and_delete(&path, &Precondition::None)
            .unwrap();
        assert!(!f.vault.exists(&path).unwrap());
        assert_eq!(
            names_in(&f.vault.root().path().join("inbox")),
            Vec::<String>::new()
        );
        f.clock.advance_ms(1000);
        f.vault
            .write(&path, b"second", &Precondition::None)
            .unwrap();
        // Restoring over an existing note is refused.
        assert_eq!(
            f.vault.restore(&path, None).unwrap_err().code(),
            "note_exists"
        );
        let s2 = f
            .vault
            .snapshot_and_delete(&path, &Precondition::None)
            .unwrap();
        assert!(s2.id > s1.id);
        let listed = f.vault.snapshots(Some(&path)).unwrap();
        assert_eq!(listed, [s1.clone(), s2.clone()]);
        // Latest by default.
        assert_eq!(f.vault.restore(&path, None).unwrap().id, s2.id);
        assert_eq!(f.vault.read(&path).unwrap().bytes, b"second");
        f.vault.delete(&path, &Precondition::None).unwrap();
        assert_eq!(f.vault.restore(&path, Some(s1.id.as_str())).unwrap(), s1);
        assert_eq!(f.vault.read(&path).unwrap().bytes, b"first");
        // Snapshots live outside the vault, under the snapshot folder.
        assert!(!f.vault.snapshot_dir().starts_with(f.vault.root().path()));
        assert_eq!(names_in(f.vault.snapshot_dir()).len(), 2);
    }

    // r[verify vault.snapshot.permanent]
    #[test]
    fn permanent_delete_keeps_no_snapshot() {
        let f = TempVault::new();
        let path = p("gone.md");
        f.vault.write(&path, b"bye", &Precondition::None).unwrap();
        f.vault.delete(&path, &Precondition::None).unwrap();
        assert!(!f.vault.exists(&path).unwrap());
        assert!(f.vault.snapshots(None).unwrap().is_empty());
        assert!(!f.vault.snapshot_dir().exists());
        assert_eq!(
            f.vault.restore(&path, None).unwrap_err().code(),
            "note_not_found"
        );
    }

    #[test]
    fn snapshot_ids_are_judged() {
        let f = TempVault::new();
        let path = p("x.md");
        assert_eq!(
            f.vault.restore(&path, None).unwrap_err().code(),
            "note_not_found"
        );
        assert!(SnapshotId::parse("../../etc").is_none());
        assert!(SnapshotId::parse("1800000000000-00112233445566ZZ").is_none());
        let err = f
            .vault
            .restore(&path, Some("../../etc/passwd"))
            .unwrap_err();
        assert_eq!(err.code(), "note_not_found");
        assert_eq!(err.details()["snapshot_id"], "../../etc/passwd");
        let other = p("y.md");
        f.vault.write(&other, b"y", &Precondition::None).unwrap();
        let s = f
            .vault
            .snapshot_and_delete(&other, &Precondition::None)
            .unwrap();
        // Another note's snapshot does not restore at this path.
        assert_eq!(
            f.vault
                .restore(&path, Some(s.id.as_str()))
                .unwrap_err()
                .code(),
            "note_not_found"
        );
        assert_eq!(SnapshotId::parse(s.id.as_str()).unwrap(), s.id);
        assert_eq!(
            f.vault
                .snapshot_and_delete(&p("absent.md"), &Precondition::None)
                .unwrap_err()
                .code(),
            "note_not_found"
        );
    }

    // r[verify vault.snapshot.restore-mode]
    #[cfg(unix)]
    #[test]
    fn a_restored_note_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let f = TempVault::new();
        let path = p("private/key.md");
        f.vault.write(&path, b"mine", &Precondition::None).unwrap();
        let file = f.vault.root().path().join("private/key.md");
        fs::set_permissions(&file, fs::Permissions::from_mode(0o600)).unwrap();
        f.vault
            .snapshot_and_delete(&path, &Precondition::None)
            .unwrap();
        assert!(!file.exists());
        f.vault.restore(&path, None).unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"mine");
        assert_eq!(
            fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600,
            "the restored note has the mode it had when it was deleted"
        );
        // A wider mode comes back too (less nothing: the mode is set, not derived).
        fs::set_permissions(&file, fs::Permissions::from_mode(0o640)).unwrap();
        f.vault
            .snapshot_and_delete(&path, &Precondition::None)
            .unwrap();
        f.vault.restore(&path, None).unwrap();
        assert_eq!(
            fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o640
        );
    }

    #[test]
    fn snapshot_dirs_per_vault_id() {
        let cache = Path::new("/cache");
        assert_eq!(
            snapshot_dir_for(cache, "main").unwrap(),
            Path::new("/cache/snapshots/main")
        );
        for bad in ["", ".", "..", "a/b", "../x", "a\\b", "a b", "ü"] {
            assert!(snapshot_dir_for(cache, bad).is_err(), "{bad:?}");
        }
    }
}
