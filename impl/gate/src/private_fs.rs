//! Files and folders only this user may open (spec/gate.md `gate.files.private`): what the
//! server writes outside the vault (cache.db and its WAL, delete snapshots, wiki seals, lock
//! files, the server secret) is created 0600 in folders created 0700, whatever the umask,
//! since it holds tokens' hashes, deleted notes and the keys that seal approvals.
//!
//! A folder that already exists keeps its mode: the server never loosens or tightens a
//! directory it did not create (a `--cache-dir /srv/x` chosen by the operator stays theirs).

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The mode of a file the server writes outside the vault.
pub const PRIVATE_FILE_MODE: u32 = 0o600;
/// The mode of a folder the server creates outside the vault.
pub const PRIVATE_DIR_MODE: u32 = 0o700;

// r[impl gate.files.private]
/// Creates `path` and every missing parent as 0700 folders.
pub fn create_private_dir_all(path: &Path) -> io::Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(PRIVATE_DIR_MODE)
        .create(path)
}

/// Creates one 0700 folder (its parent must exist).
pub fn create_private_dir(path: &Path) -> io::Result<()> {
    DirBuilder::new().mode(PRIVATE_DIR_MODE).create(path)
}

/// Creates a new file, 0600, for writing; refuses one that exists.
pub fn create_private_file(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(PRIVATE_FILE_MODE)
        .open(path)
}

/// Makes an existing file 0600 (nothing happens when it does not exist).
pub fn make_private(path: &Path) -> io::Result<()> {
    match fs::set_permissions(path, fs::Permissions::from_mode(PRIVATE_FILE_MODE)) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}
