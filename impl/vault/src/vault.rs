//! One vault on disk: reading, hashing, atomic writes, moves, copies, deletes
//! (spec/tools.md, spec/results.md). The delete snapshots `restore_note` restores from are in
//! `vault/snapshots.rs`, a child module so they share the vault's lock and file helpers
//! without widening their visibility.
//!
//! - Content hash: the lowercase hex SHA-256 of the note's bytes (all 64 digits,
//!   spec `vault.content-hash`). It is what `read_notes` reports as `content_hash` and what
//!   `write_note`'s `prev_hash` is compared with.
//! - Writes are atomic: a temp file (hidden, so Obsidian ignores it) in the target's folder,
//!   written, fsynced, renamed over the target, then the folder fsynced (spec
//!   `vault.write.atomic`). A reader sees the old note or the new one, never a torn one, and
//!   a crash leaves one or the other. Create-only writes rename with no-clobber semantics
//!   (`renameat2(RENAME_NOREPLACE)` or link+unlink), so two racing creators cannot both win.
//! - Preconditions (`prev_hash`, create-only) are checked and the write done under the
//!   note's lock (spec `vault.write.locked`, `vault/lock.rs`): the vault's mutex for this
//!   process and an advisory file lock under the cache directory for every process sharing
//!   it, so no two writers interleave between check and rename. [`Vault::with_note_lock`]
//!   holds the same lock across a caller's own read and compute as well (an append reads the
//!   note it extends under the lock it writes under). Moves and deletes take the locks of
//!   their notes too.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tc_gate::clock::{Clock, Entropy};

use crate::acl::AclConfig;
use crate::conventions::ConventionConfig;
use crate::error::{VaultError, VaultResult};
use crate::path::{VaultPath, VaultRoot};

mod atomic;
mod batch;
mod folders;
mod journal;
mod lock;
mod snapshots;
mod version_batches;
mod versions;

use atomic::{canonical_prefix, rename_no_clobber, sync_dir, sync_parent, write_atomic};
use folders::{create_parent, parent_missing};

pub use atomic::{STALE_WRITE_TEMP, remove_stale_write_temp};
pub use batch::{BATCH_NOTES, BatchWrite};
pub use journal::{MoveOutcome, RecoveredMove, Rewrite};
pub use snapshots::{SnapshotId, SnapshotInfo, SnapshotKind, snapshot_dir_for};
pub use versions::{KeptWrite, Retention};

/// `[[vaults]]` as written in the config file (spec/config.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VaultConfig {
    pub id: String,
    pub root: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acl: Option<AclConfig>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conventions: Vec<ConventionConfig>,
}

/// The content hash of a note: lowercase hex SHA-256 of its bytes.
pub fn content_hash(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A note's bytes and their hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteContent {
    pub bytes: Vec<u8>,
    pub hash: String,
}

impl NoteContent {
    fn new(bytes: Vec<u8>) -> Self {
        let hash = content_hash(&bytes);
        NoteContent { bytes, hash }
    }

    /// The content as text; invalid UTF-8 sequences become U+FFFD (the hash still covers
    /// the original bytes). For display only: what is served or written back goes through
    /// [`NoteContent::utf8`], which refuses instead of replacing.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.bytes)
    }

    // r[impl vault.note.utf8]
    /// The content as text, or the per-path refusal of a note that is not valid UTF-8
    /// ([`VaultError::not_utf8`], code `invalid_input`).
    pub fn utf8(&self, path: &VaultPath) -> VaultResult<&str> {
        std::str::from_utf8(&self.bytes).map_err(|e| VaultError::not_utf8(path.as_str(), &e))
    }
}

/// What `stat` tells without reading the note.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoteStat {
    pub size: u64,
}

/// What must hold of the target for a write to proceed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Precondition {
    /// Write whatever is there.
    None,
    /// Create only: refuse with `note_exists` if a note is there.
    MustNotExist,
    /// Refuse with `note_not_found` if no note is there.
    MustExist,
    /// The note must be there with this content hash (`prev_hash`), else
    /// `concurrent_modification`.
    HashIs(String),
}

/// The result of a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOutcome {
    /// The hash of the bytes now at the path.
    pub hash: String,
    /// Whether no note was there before.
    pub created: bool,
}

/// One vault: its id, its root, and where its delete snapshots and note locks go.
#[derive(Debug)]
pub struct Vault {
    id: String,
    root: VaultRoot,
    snapshot_dir: PathBuf,
    lock_dir: PathBuf,
    clock: Arc<dyn Clock>,
    entropy: Arc<dyn Entropy>,
    write_lock: Mutex<()>,
    /// The creation time of the latest snapshot this vault stored, so two snapshots taken in
    /// the same millisecond still sort in the order they were taken.
    last_snapshot_ms: std::sync::atomic::AtomicI64,
    /// The paths deleted permanently and not yet taken by [`Vault::take_deleted_for_good`]:
    /// what else holds a copy of their text (a raised request's preview) is told of them.
    deleted_for_good: Mutex<Vec<VaultPath>>,
}

impl Vault {
    /// Opens the vault at `root`. `snapshot_dir` (e.g. `<cacheDir>/snapshots/<vault-id>/`)
    /// is created on first use and must lie outside the vault: a snapshot inside it would be
    /// a note again, and reachable by the tools it is meant to protect against. The note
    /// locks go beside it (`<snapshot_dir>.locks/`), so every server on the same cache
    /// directory shares them.
    pub fn open(
        id: impl Into<String>,
        root: &Path,
        snapshot_dir: impl Into<PathBuf>,
        clock: Arc<dyn Clock>,
        entropy: Arc<dyn Entropy>,
    ) -> VaultResult<Self> {
        let root = VaultRoot::new(root)?;
        let snapshot_dir = snapshot_dir.into();
        let lock_dir = lock::lock_dir_for(&snapshot_dir);
        for (dir, what) in [(&snapshot_dir, "snapshot"), (&lock_dir, "lock")] {
            let probe = canonical_prefix(dir)
                .map_err(|e| VaultError::io(dir.display().to_string(), "inspect", e))?;
            if probe.starts_with(root.path()) {
                return Err(VaultError::io(
                    dir.display().to_string(),
                    "open snapshot folder",
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("the {what} folder must lie outside the vault"),
                    ),
                ));
            }
        }
        Ok(Vault {
            id: id.into(),
            root,
            snapshot_dir,
            lock_dir,
            clock,
            entropy,
            write_lock: Mutex::new(()),
            last_snapshot_ms: std::sync::atomic::AtomicI64::new(i64::MIN),
            deleted_for_good: Mutex::new(Vec::new()),
        })
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn root(&self) -> &VaultRoot {
        &self.root
    }

    pub fn snapshot_dir(&self) -> &Path {
        &self.snapshot_dir
    }

    /// Where the note locks are (outside the vault).
    pub fn lock_dir(&self) -> &Path {
        &self.lock_dir
    }

    // r[impl vault.write.locked]
    /// Takes the locks of the notes at `targets` (resolved locations): the vault's mutex,
    /// then each note's file lock, held until the result is dropped.
    fn lock_notes(&self, path: &VaultPath, targets: &[&Path]) -> VaultResult<lock::Held<'_>> {
        let process = self
            .write_lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut buckets: Vec<u16> = targets
            .iter()
            .map(|target| {
                let relative = target.strip_prefix(self.root.path()).unwrap_or(target);
                lock::bucket_of(relative)
            })
            .collect();
        lock::acquire(&self.lock_dir, process, &mut buckets)
            .map_err(|e| VaultError::io(path.as_str(), "lock", e))
    }

    /// Runs `f` with the note at `path` locked against every other write, move and delete of
    /// it by this process and every process on the same cache directory (spec
    /// `vault.write.locked`): a read through [`LockedNote::read_if_exists`], what `f`
    /// computes from it and the write through [`LockedNote::write`] are one step. `f` must
    /// not call the vault's own writing methods (they take the lock again and would wait
    /// for ever); reading is fine.
    pub fn with_note_lock<T, E>(
        &self,
        path: &VaultPath,
        f: impl FnOnce(&LockedNote<'_>) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<VaultError>,
    {
        let target = self.root.resolve_for_write(path)?;
        let _held = self.lock_notes(path, &[&target])?;
        f(&LockedNote {
            vault: self,
            path,
            target,
        })
    }

    /// The note's size, without reading it.
    pub fn stat(&self, path: &VaultPath) -> VaultResult<NoteStat> {
        let location = self.root.resolve_for_read(path)?;
        let meta = note_metadata(path, &location)?;
        Ok(NoteStat { size: meta.len() })
    }

    /// Whether a note (a file) is at `path`.
    pub fn exists(&self, path: &VaultPath) -> VaultResult<bool> {
        match self.stat(path) {
            Ok(_) => Ok(true),
            Err(VaultError::NoteNotFound { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Reads a note whole.
    pub fn read(&self, path: &VaultPath) -> VaultResult<NoteContent> {
        self.read_limited(path, u64::MAX)
    }

    /// Reads a note, refusing with `too_large` (without reading it) when it is over `limit`
    /// bytes. The size is re-checked while reading, in case the note grew meanwhile.
    pub fn read_limited(&self, path: &VaultPath, limit: u64) -> VaultResult<NoteContent> {
        let location = self.root.resolve_for_read(path)?;
        // A missing note resolves to its lexical location (links not followed), which is no
        // place to open component by component.
        fs::symlink_metadata(&location).map_err(|e| not_found_or_io(path, "inspect", e))?;
        // Opened component by component without following links, then judged on the open
        // file: what is read is what was resolved (spec `vault.path.links-judged-at-target`).
        let relative = location.strip_prefix(self.root.path()).map_err(|_| {
            VaultError::invalid(
                path.as_str(),
                "the path leads out of the vault through a link",
            )
        })?;
        let file = crate::locate::open_beneath(self.root.path(), relative, path)?;
        let meta = file
            .metadata()
            .map_err(|e| VaultError::io(path.as_str(), "inspect", e))?;
        if !meta.is_file() {
            return Err(VaultError::NoteNotFound {
                path: path.as_str().to_owned(),
            });
        }
        let too_large = |size| VaultError::TooLarge {
            path: path.as_str().to_owned(),
            size,
            limit,
        };
        if meta.len() > limit {
            return Err(too_large(meta.len()));
        }
        let capacity = usize::try_from(meta.len()).unwrap_or(0);
        let mut bytes = Vec::with_capacity(capacity);
        file.take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| VaultError::io(path.as_str(), "read", e))?;
        if bytes.len() as u64 > limit {
            return Err(too_large(bytes.len() as u64));
        }
        Ok(NoteContent::new(bytes))
    }

    /// Reads a note, or `None` when none is there (a missing note is a state too, for the
    /// confirmation fingerprints of path tools).
    pub fn read_if_exists(&self, path: &VaultPath) -> VaultResult<Option<NoteContent>> {
        match self.read(path) {
            Ok(content) => Ok(Some(content)),
            Err(VaultError::NoteNotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Writes `bytes` at `path` atomically, creating folders as needed, once `precondition`
    /// holds.
    pub fn write(
        &self,
        path: &VaultPath,
        bytes: &[u8],
        precondition: &Precondition,
    ) -> VaultResult<WriteOutcome> {
        self.write_with_mode(path, bytes, precondition, None)
    }

    /// [`Vault::write`] giving a new note the permission bits `mode` (a restore gives back
    /// the mode the note had); `None` keeps an overwritten note's mode, else the usual one.
    fn write_with_mode(
        &self,
        path: &VaultPath,
        bytes: &[u8],
        precondition: &Precondition,
        mode: Option<u32>,
    ) -> VaultResult<WriteOutcome> {
        let target = self.root.resolve_for_write(path)?;
        let _held = self.lock_notes(path, &[&target])?;
        write_locked(path, &target, bytes, precondition, mode)
    }

    /// Deletes a note for good (no snapshot), once `expected` holds of it under its lock.
    pub fn delete(&self, path: &VaultPath, expected: &Precondition) -> VaultResult<()> {
        let target = self.root.resolve_for_write(path)?;
        let _held = self.lock_notes(path, &[&target])?;
        note_metadata_nofollow(path, &target)?;
        self.check_locked(path, expected)?;
        fs::remove_file(&target).map_err(|e| not_found_or_io(path, "delete", e))?;
        sync_parent(path, &target)
    }

    /// Moves a note, creating the destination's folders, once `from_expected` holds of the
    /// source and `to_expected` of the destination, both under their locks. With
    /// `to_expected` [`Precondition::MustNotExist`] an existing note at `to` refuses with
    /// `note_exists` atomically (no window where both exist and a racing writer's note is
    /// replaced); anything else replaces what is at `to`. Folders are not moved by this call.
    pub fn rename(
        &self,
        from: &VaultPath,
        to: &VaultPath,
        from_expected: &Precondition,
        to_expected: &Precondition,
    ) -> VaultResult<()> {
        self.rename_with(from, to, from_expected, to_expected, false)
            .map(|_| ())
    }

    /// [`Vault::rename`] that keeps the note it replaces at `to` as a version first (spec
    /// `versions.keep.confirmed`), under the same locks; returns that version.
    pub fn rename_keeping(
        &self,
        from: &VaultPath,
        to: &VaultPath,
        from_expected: &Precondition,
        to_expected: &Precondition,
    ) -> VaultResult<Option<SnapshotInfo>> {
        self.rename_with(from, to, from_expected, to_expected, true)
    }

    fn rename_with(
        &self,
        from: &VaultPath,
        to: &VaultPath,
        from_expected: &Precondition,
        to_expected: &Precondition,
        keep: bool,
    ) -> VaultResult<Option<SnapshotInfo>> {
        let source = self.root.resolve_for_write(from)?;
        let target = self.root.resolve_for_write(to)?;
        let _held = self.lock_notes(from, &[&source, &target])?;
        note_metadata_nofollow(from, &source)?;
        if target_is_dir(&target) {
            return Err(VaultError::NoteExists {
                path: to.as_str().to_owned(),
            });
        }
        self.check_locked(from, from_expected)?;
        if *to_expected != Precondition::MustNotExist {
            self.check_locked(to, to_expected)?;
        }
        let kept = if keep && *to_expected != Precondition::MustNotExist {
            self.keep_locked(to, &target)?
        } else {
            None
        };
        let mut folders = create_parent(to, &target)?;
        let attempt = || {
            if *to_expected == Precondition::MustNotExist {
                rename_no_clobber(from, to, &source, &target)
            } else {
                fs::rename(&source, &target).map_err(|e| not_found_or_io(from, "move", e))
            }
        };
        let moved = match attempt() {
            Err(VaultError::NoteNotFound { .. }) if parent_missing(&target) => {
                create_parent(to, &target).and_then(|more| {
                    folders.absorb(more);
                    attempt()
                })
            }
            other => other,
        };
        if let Err(e) = moved {
            // Nothing was replaced: the version kept for it is not one.
            if let Some(info) = &kept {
                let _ = self.remove_snapshot(info);
            }
            return Err(e);
        }
        folders.keep();
        sync_parent(to, &target)?;
        sync_parent(from, &source)?;
        Ok(kept)
    }

    // r[impl vault.remove.locked]
    /// Checks `expected` of the note at `path` as a reader sees it (through a final link
    /// inside the vault, as the hash the approval covers was taken), for a removal or a
    /// rename whose lock the caller holds. Unlike a write's precondition it does not ask for
    /// UTF-8: removing or moving a note needs no text of it.
    fn check_locked(&self, path: &VaultPath, expected: &Precondition) -> VaultResult<()> {
        if *expected == Precondition::None {
            return Ok(());
        }
        let current = self.read_if_exists(path)?;
        check_precondition(path, expected, current.as_ref().map(|c| c.hash.as_str()))
    }

    /// Copies a note; the copy is written atomically like any write.
    pub fn copy(
        &self,
        from: &VaultPath,
        to: &VaultPath,
        overwrite: bool,
    ) -> VaultResult<WriteOutcome> {
        let content = self.read(from)?;
        let precondition = if overwrite {
            Precondition::None
        } else {
            Precondition::MustNotExist
        };
        self.write(to, &content.bytes, &precondition)
    }
}

/// A note held under its lock by [`Vault::with_note_lock`].
#[derive(Debug)]
pub struct LockedNote<'v> {
    vault: &'v Vault,
    path: &'v VaultPath,
    target: PathBuf,
}

impl LockedNote<'_> {
    pub fn path(&self) -> &VaultPath {
        self.path
    }

    /// The note as it is now, or `None` when none is there ([`Vault::read_if_exists`]).
    pub fn read_if_exists(&self) -> VaultResult<Option<NoteContent>> {
        self.vault.read_if_exists(self.path)
    }

    /// Writes the note as [`Vault::write`] does, under the lock already held.
    pub fn write(&self, bytes: &[u8], precondition: &Precondition) -> VaultResult<WriteOutcome> {
        write_locked(self.path, &self.target, bytes, precondition, None)
    }
}

/// A write once the note's lock is held: the precondition against what is there now, then
/// the atomic replacement.
fn write_locked(
    path: &VaultPath,
    target: &Path,
    bytes: &[u8],
    precondition: &Precondition,
    mode: Option<u32>,
) -> VaultResult<WriteOutcome> {
    // Hash the current note only when the precondition compares hashes.
    let hash_it = matches!(precondition, Precondition::HashIs(_));
    let current = current_state(path, target, hash_it)?;
    check_precondition(path, precondition, current.as_deref())?;
    let no_clobber = matches!(precondition, Precondition::MustNotExist);
    write_atomic(path, target, bytes, no_clobber, mode)?;
    Ok(WriteOutcome {
        hash: content_hash(bytes),
        created: current.is_none(),
    })
}

/// The metadata of the note at `location`, which must be a file.
fn note_metadata(path: &VaultPath, location: &Path) -> VaultResult<fs::Metadata> {
    let meta = fs::metadata(location).map_err(|e| not_found_or_io(path, "inspect", e))?;
    if meta.is_file() {
        Ok(meta)
    } else {
        Err(VaultError::NoteNotFound {
            path: path.as_str().to_owned(),
        })
    }
}

/// Like [`note_metadata`] but for the final component itself (a link is an entry to move or
/// delete, not something to follow out).
fn note_metadata_nofollow(path: &VaultPath, location: &Path) -> VaultResult<fs::Metadata> {
    let meta = fs::symlink_metadata(location).map_err(|e| not_found_or_io(path, "inspect", e))?;
    if meta.is_file() || meta.file_type().is_symlink() {
        Ok(meta)
    } else {
        Err(VaultError::NoteNotFound {
            path: path.as_str().to_owned(),
        })
    }
}

fn target_is_dir(target: &Path) -> bool {
    fs::symlink_metadata(target).is_ok_and(|m| m.is_dir())
}

/// What is at the write target now: `None` when nothing is, else its hash (when `hash_it`)
/// or a marker. The final component is not followed: a link there is replaced, so its
/// target's content is no precondition (and reading through it could leave the vault).
fn current_state(path: &VaultPath, target: &Path, hash_it: bool) -> VaultResult<Option<String>> {
    match fs::symlink_metadata(target) {
        Ok(meta) if meta.is_dir() => Err(VaultError::invalid(
            path.as_str(),
            "the path names a folder, not a note",
        )),
        Ok(meta) if meta.file_type().is_symlink() => Ok(Some(String::from("link"))),
        Ok(_) if !hash_it => Ok(Some(String::from("present"))),
        Ok(_) => {
            let bytes = fs::read(target).map_err(|e| VaultError::io(path.as_str(), "read", e))?;
            // r[impl vault.note.utf8]
            // A rewrite guarded by the note's hash was computed from its text; a note that
            // is not UTF-8 had no text to compute from, only a lossy stand-in, so the
            // rewrite is refused rather than written over it (a whole replacement without
            // prev_hash, a move, a copy or a delete still work).
            if path.is_note()
                && let Err(e) = std::str::from_utf8(&bytes)
            {
                return Err(VaultError::not_utf8(path.as_str(), &e));
            }
            Ok(Some(content_hash(&bytes)))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.kind() == io::ErrorKind::NotADirectory => Err(VaultError::invalid(
            path.as_str(),
            "a folder on the path is a file",
        )),
        Err(e) => Err(VaultError::io(path.as_str(), "inspect", e)),
    }
}

fn check_precondition(
    path: &VaultPath,
    precondition: &Precondition,
    current: Option<&str>,
) -> VaultResult<()> {
    let shown = || path.as_str().to_owned();
    match (precondition, current) {
        (Precondition::None, _) => Ok(()),
        (Precondition::MustNotExist, Some(_)) => Err(VaultError::NoteExists { path: shown() }),
        (Precondition::MustNotExist, None) => Ok(()),
        (Precondition::MustExist, None) => Err(VaultError::NoteNotFound { path: shown() }),
        (Precondition::MustExist, Some(_)) => Ok(()),
        (Precondition::HashIs(expected), current) if current != Some(expected.as_str()) => {
            Err(VaultError::ConcurrentModification {
                path: shown(),
                expected: expected.clone(),
                actual: current.unwrap_or("absent").to_owned(),
            })
        }
        (Precondition::HashIs(_), _) => Ok(()),
    }
}

fn not_found_or_io(path: &VaultPath, op: &'static str, e: io::Error) -> VaultError {
    if matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    ) {
        VaultError::NoteNotFound {
            path: path.as_str().to_owned(),
        }
    } else {
        VaultError::io(path.as_str(), op, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{TempVault, names_in, p};
    use tc_gate::clock::{ManualClock, SeededEntropy};

    // r[verify vault.content-hash]
    #[test]
    fn content_hash_is_hex_sha256() {
        assert_eq!(
            content_hash(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    // r[verify vault.write.folders-undone]
    #[test]
    fn a_refused_move_makes_no_folders() {
        let f = TempVault::new();
        f.vault
            .write(&p("from.md"), b"x", &Precondition::None)
            .unwrap();
        let from_hash = Precondition::HashIs(content_hash(b"x"));
        // The approved destination's hash no longer matches: nothing is there now.
        let stale = Precondition::HashIs(content_hash(b"gone"));
        let refused = f
            .vault
            .rename(&p("from.md"), &p("new/deep/to.md"), &from_hash, &stale)
            .unwrap_err();
        assert_eq!(refused.code(), "concurrent_modification");
        assert_eq!(names_in(f.vault.root().path()), ["from.md"]);
    }

    // r[verify vault.write.folders-undone]
    #[test]
    fn folders_made_for_a_failed_write_are_removed_while_empty() {
        let f = TempVault::new();
        let root = f.vault.root().path().to_path_buf();
        let target = root.join("a/b/c/note.md");
        drop(create_parent(&p("a/b/c/note.md"), &target).unwrap());
        assert!(names_in(&root).is_empty(), "every folder made is gone");

        // A folder someone filled meanwhile stays, with what is in it.
        let folders = create_parent(&p("a/b/c/note.md"), &target).unwrap();
        fs::write(root.join("a/other.md"), b"theirs").unwrap();
        drop(folders);
        assert_eq!(names_in(&root.join("a")), ["other.md"]);

        // Kept once the write lands; folders that were there are never touched.
        create_parent(&p("a/b/c/note.md"), &target).unwrap().keep();
        assert!(root.join("a/b/c").is_dir());
        drop(create_parent(&p("a/b/c/d.md"), &root.join("a/b/c/d.md")).unwrap());
        assert!(root.join("a/b/c").is_dir());

        // Another writer removed a folder this one found there: made again, and then
        // this write's to remove if it fails, or to keep if it lands.
        let target = root.join("x/y/n.md");
        fs::create_dir_all(root.join("x/y")).unwrap();
        for lands in [false, true] {
            let mut found = create_parent(&p("x/y/n.md"), &target).unwrap();
            fs::remove_dir(root.join("x/y")).unwrap();
            assert!(parent_missing(&target));
            found.absorb(create_parent(&p("x/y/n.md"), &target).unwrap());
            if lands {
                found.keep();
                assert!(root.join("x/y").is_dir());
            } else {
                drop(found);
                assert!(!root.join("x/y").exists() && root.join("x").is_dir());
                fs::create_dir(root.join("x/y")).unwrap();
            }
        }
    }

    #[test]
    fn write_read_stat_round_trip() {
        let f = TempVault::new();
        let out = f
            .vault
            .write(&p("a/b/c.md"), b"hello", &Precondition::None)
            .unwrap();
        assert!(out.created);
        assert_eq!(out.hash, content_hash(b"hello"));
        let read = f.vault.read(&p("a/b/c.md")).unwrap();
        assert_eq!(read.bytes, b"hello");
        assert_eq!(read.hash, out.hash);
        assert_eq!(f.vault.stat(&p("a/b/c.md")).unwrap().size, 5);
        let again = f
            .vault
            .write(&p("a/b/c.md"), b"bye", &Precondition::None)
            .unwrap();
        assert!(!again.created);
        // No temp files are left behind.
        assert_eq!(names_in(&f.vault.root().path().join("a/b")), ["c.md"]);
    }

    #[test]
    fn missing_notes_and_folders_are_note_not_found() {
        let f = TempVault::new();
        assert_eq!(
            f.vault.read(&p("nope.md")).unwrap_err().code(),
            "note_not_found"
        );
        assert_eq!(
            f.vault.stat(&p("nope.md")).unwrap_err().code(),
            "note_not_found"
        );
        f.vault
            .write(&p("dir/x.md"), b"x", &Precondition::None)
            .unwrap();
        assert_eq!(
            f.vault.read(&p("dir")).unwrap_err().code(),
            "note_not_found"
        );
        assert!(f.vault.read_if_exists(&p("nope.md")).unwrap().is_none());
        assert!(!f.vault.exists(&p("dir")).unwrap());
        assert_eq!(
            f.vault
                .write(&p("dir"), b"x", &Precondition::None)
                .unwrap_err()
                .code(),
            "path_invalid"
        );
        assert_eq!(
            f.vault
                .write(&p("dir/x.md/y.md"), b"x", &Precondition::None)
                .unwrap_err()
                .code(),
            "path_invalid"
        );
    }

    #[test]
    fn read_limited_refuses_before_reading() {
        let f = TempVault::new();
        f.vault
            .write(&p("big.md"), &[b'x'; 100], &Precondition::None)
            .unwrap();
        let err = f.vault.read_limited(&p("big.md"), 99).unwrap_err();
        assert!(matches!(
            err,
            VaultError::TooLarge {
                size: 100,
                limit: 99,
                ..
            }
        ));
        assert_eq!(err.code(), "too_large");
        assert_eq!(
            f.vault.read_limited(&p("big.md"), 100).unwrap().bytes.len(),
            100
        );
    }

    // r[verify vault.content-hash]
    // r[verify results.concurrent-modification]
    #[test]
    fn preconditions() {
        let f = TempVault::new();
        let path = p("n.md");
        assert_eq!(
            f.vault
                .write(&path, b"x", &Precondition::MustExist)
                .unwrap_err()
                .code(),
            "note_not_found"
        );
        let first = f
            .vault
            .write(&path, b"one", &Precondition::MustNotExist)
            .unwrap();
        assert_eq!(
            f.vault
                .write(&path, b"two", &Precondition::MustNotExist)
                .unwrap_err()
                .code(),
            "note_exists"
        );
        let stale = Precondition::HashIs(content_hash(b"other"));
        let err = f.vault.write(&path, b"two", &stale).unwrap_err();
        assert_eq!(err.code(), "concurrent_modification");
        assert_eq!(err.details()["actual"], first.hash.as_str());
        assert_eq!(err.details()["expected"], content_hash(b"other"));
        f.vault
            .write(&path, b"two", &Precondition::HashIs(first.hash))
            .unwrap();
        assert_eq!(f.vault.read(&path).unwrap().bytes, b"two");
        let err = f
            .vault
            .write(
                &p("gone.md"),
                b"x",
                &Precondition::HashIs(content_hash(b"x")),
            )
            .unwrap_err();
        assert_eq!(err.details()["actual"], "absent");
    }

    #[test]
    fn create_only_has_one_winner_under_races() {
        let f = TempVault::new();
        let path = p("race.md");
        let winners = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8u8)
                .map(|i| {
                    let vault = &f.vault;
                    let path = &path;
                    s.spawn(move || vault.write(path, &[i], &Precondition::MustNotExist))
                })
                .collect();
            let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            for result in &results {
                if let Err(e) = result {
                    assert_eq!(e.code(), "note_exists");
                }
            }
            results.iter().filter(|r| r.is_ok()).count()
        });
        assert_eq!(winners, 1);
        assert_eq!(f.vault.read(&path).unwrap().bytes.len(), 1);
    }

    #[test]
    fn rename_and_copy() {
        let f = TempVault::new();
        f.vault
            .write(&p("a.md"), b"A", &Precondition::None)
            .unwrap();
        f.vault
            .write(&p("b.md"), b"B", &Precondition::None)
            .unwrap();
        assert_eq!(
            f.vault
                .rename(
                    &p("a.md"),
                    &p("b.md"),
                    &Precondition::None,
                    &Precondition::MustNotExist
                )
                .unwrap_err()
                .code(),
            "note_exists"
        );
        assert_eq!(f.vault.read(&p("a.md")).unwrap().bytes, b"A");
        f.vault
            .rename(
                &p("a.md"),
                &p("deep/er/a.md"),
                &Precondition::None,
                &Precondition::MustNotExist,
            )
            .unwrap();
        assert!(!f.vault.exists(&p("a.md")).unwrap());
        assert_eq!(f.vault.read(&p("deep/er/a.md")).unwrap().bytes, b"A");
        f.vault
            .rename(
                &p("deep/er/a.md"),
                &p("b.md"),
                &Precondition::None,
                &Precondition::None,
            )
            .unwrap();
        assert_eq!(f.vault.read(&p("b.md")).unwrap().bytes, b"A");
        assert_eq!(
            f.vault
                .rename(
                    &p("missing.md"),
                    &p("c.md"),
                    &Precondition::None,
                    &Precondition::MustNotExist
                )
                .unwrap_err()
                .code(),
            "note_not_found"
        );
        let out = f.vault.copy(&p("b.md"), &p("copies/b.md"), false).unwrap();
        assert!(out.created);
        assert_eq!(
            f.vault
                .copy(&p("b.md"), &p("copies/b.md"), false)
                .unwrap_err()
                .code(),
            "note_exists"
        );
        f.vault
            .write(&p("b.md"), b"new", &Precondition::None)
            .unwrap();
        f.vault.copy(&p("b.md"), &p("copies/b.md"), true).unwrap();
        assert_eq!(f.vault.read(&p("copies/b.md")).unwrap().bytes, b"new");
    }

    // r[verify vault.write.atomic]
    #[test]
    fn readers_never_see_a_torn_write() {
        let f = TempVault::new();
        let path = p("torn.md");
        let old = vec![b'a'; 256 * 1024];
        let new = vec![b'b'; 256 * 1024 + 7];
        f.vault.write(&path, &old, &Precondition::None).unwrap();
        let location = f.vault.root().path().join("torn.md");
        std::thread::scope(|s| {
            let writer = s.spawn(|| {
                for i in 0..20 {
                    let bytes = if i % 2 == 0 { &new } else { &old };
                    f.vault.write(&path, bytes, &Precondition::None).unwrap();
                }
            });
            let mut reads = 0;
            while !writer.is_finished() || reads < 20 {
                let seen = fs::read(&location).unwrap();
                assert!(
                    seen == old || seen == new,
                    "torn read of {} bytes",
                    seen.len()
                );
                reads += 1;
            }
        });
        let leftovers: Vec<String> = names_in(f.vault.root().path())
            .into_iter()
            .filter(|n| n != "torn.md")
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn snapshot_dir_inside_the_vault_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = Vault::open(
            "v",
            dir.path(),
            dir.path().join("snaps"),
            Arc::new(ManualClock::new(0)),
            Arc::new(SeededEntropy::new(1)),
        )
        .unwrap_err();
        assert!(err.to_string().contains("outside the vault"), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn writes_replace_a_final_link_instead_of_following_it() {
        let f = TempVault::new();
        let outside = f.dir.path().join("outside.md");
        fs::write(&outside, "keep").unwrap();
        let link = f.vault.root().path().join("link.md");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        assert_eq!(
            f.vault.read(&p("link.md")).unwrap_err().code(),
            "path_invalid"
        );
        f.vault
            .write(&p("link.md"), b"mine", &Precondition::None)
            .unwrap();
        assert_eq!(fs::read(&outside).unwrap(), b"keep");
        assert!(
            !fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        // Deleting a link deletes the link, not what it points at; a link out of the vault
        // is never snapshotted (a restore would bring the outside file in).
        std::os::unix::fs::symlink(&outside, f.vault.root().path().join("l2.md")).unwrap();
        assert_eq!(
            f.vault
                .snapshot_and_delete(&p("l2.md"), &Precondition::None)
                .unwrap_err()
                .code(),
            "path_invalid"
        );
        assert!(f.vault.snapshots(None).unwrap().is_empty());
        f.vault.delete(&p("l2.md"), &Precondition::None).unwrap();
        assert_eq!(fs::read(&outside).unwrap(), b"keep");
    }

    // r[verify vault.note.utf8]
    #[test]
    fn a_note_that_is_not_utf8_is_refused_by_name_never_replaced() {
        let f = TempVault::new();
        let path = p("latin1.md");
        let bytes = b"caf\xe9 au lait\n".to_vec();
        fs::write(f.vault.root().path().join("latin1.md"), &bytes).unwrap();
        let content = f.vault.read(&path).unwrap();
        assert_eq!(
            content.bytes, bytes,
            "the bytes themselves are read as they are"
        );
        let err = content.utf8(&path).unwrap_err();
        assert_eq!(err.code(), "invalid_input");
        assert!(!err.retryable());
        assert_eq!(err.details()["reason"], "not_utf8");
        assert_eq!(err.details()["path"], "latin1.md");
        assert!(err.to_string().contains("offset 3"), "{err}");
        // A rewrite computed from the note's text (guarded by its hash) is refused, and the
        // note is left as it was.
        let err = f
            .vault
            .write(
                &path,
                b"cafe au lait\n",
                &Precondition::HashIs(content.hash.clone()),
            )
            .unwrap_err();
        assert!(err.is_not_utf8(), "{err}");
        f.vault
            .with_note_lock(&path, |locked| {
                let current = locked.read_if_exists()?.unwrap();
                let refused = locked
                    .write(b"appended", &Precondition::HashIs(current.hash))
                    .unwrap_err();
                assert_eq!(refused.code(), "invalid_input");
                Ok::<_, VaultError>(())
            })
            .unwrap();
        assert_eq!(
            fs::read(f.vault.root().path().join("latin1.md")).unwrap(),
            bytes
        );
        // What needs no text still works: a copy, a move, a delete.
        f.vault.copy(&path, &p("copy.md"), false).unwrap();
        f.vault
            .rename(
                &p("copy.md"),
                &p("moved.md"),
                &Precondition::None,
                &Precondition::MustNotExist,
            )
            .unwrap();
        f.vault.delete(&p("moved.md"), &Precondition::None).unwrap();
        // Valid UTF-8 reads as text.
        let fine = NoteContent::new("naïve\n".as_bytes().to_vec());
        assert_eq!(fine.utf8(&path).unwrap(), "naïve\n");
    }

    #[cfg(unix)]
    #[test]
    fn overwrite_keeps_the_mode() {
        use std::os::unix::fs::PermissionsExt;
        let f = TempVault::new();
        f.vault
            .write(&p("m.md"), b"x", &Precondition::None)
            .unwrap();
        let file = f.vault.root().path().join("m.md");
        fs::set_permissions(&file, fs::Permissions::from_mode(0o600)).unwrap();
        f.vault
            .write(&p("m.md"), b"y", &Precondition::None)
            .unwrap();
        assert_eq!(
            fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    #[test]
    fn vault_config_keys() {
        let config: VaultConfig = toml::from_str(
            r#"
            id = "main"
            root = "/home/me/vault"
            [acl]
            readOnly = true
            [[conventions]]
            glob = "archive/**"
            forbidWrites = true
            "#,
        )
        .unwrap();
        assert_eq!(config.id, "main");
        assert!(config.acl.unwrap().read_only);
        assert_eq!(config.conventions.len(), 1);
        let err = toml::from_str::<VaultConfig>("id = \"a\"\nroot = \"/\"\nrooot = 1").unwrap_err();
        assert!(err.to_string().contains("rooot"), "{err}");
    }
}
