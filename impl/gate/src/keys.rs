//! The server secret and the keys derived from it (spec/state.md: `state.key.server-secret`,
//! `state.key.secret-file`, `state.key.hkdf-label`, `state.key.not-jwt`,
//! `state.key.per-process`, `state.key.startup-line-logged`).
//!
//! One 32-byte random secret lives at `<cacheDir>/server-secrets/wiki-generated.key`. It is
//! never derived from `auth.jwtSecret` (nothing in this module can even see it), so every
//! auth mode has the round trip and rotating the JWT secret voids nothing. Each purpose
//! (requestState, the `read_notes` cursor, the wiki-page seal) gets its own key through
//! HKDF-SHA256 under its own label, so a value made for one purpose never verifies as another.
//!
//! File handling, and why:
//! - the directory is created 0700 and refused if it is a symlink, not ours, or writable by
//!   group or others (whoever can write it could swap the file);
//! - a new secret is written to a private temporary file (exclusive create, 0600, fsync) and
//!   published with `link(2)`, which never replaces an existing name: of two processes
//!   creating at once exactly one publishes, the other reads the winner's secret, and no
//!   reader can ever see a half-written file;
//! - on every read the name must be a regular file (not a symlink; checked with `lstat`
//!   and again on the opened descriptor, same device and inode), owned by the process's
//!   effective uid (from `geteuid(2)` via rustix, no `unsafe`), with no group or other
//!   permission bits, and exactly 32 bytes long.
//!
//! Key bytes are never printed: [`ServerSecret`] and [`DerivedKey`] have redacting `Debug`.

use std::fmt;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use hkdf::Hkdf;
use sha2::Sha256;

use crate::clock::Entropy;

/// Bytes in the server secret and in every derived key.
pub const SECRET_LEN: usize = 32;
/// The secrets folder inside the cache directory.
pub const SECRETS_DIR_NAME: &str = "server-secrets";
/// The secret's file name (the same file seals generated wiki pages).
pub const SECRET_FILE_NAME: &str = "wiki-generated.key";

/// What a derived key is for; each has its own HKDF label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyPurpose {
    /// Sealing the SEP-2322 `requestState` of the confirmation round trip.
    RequestState,
    /// Signing `read_notes` paging cursors.
    ReadNotesCursor,
    /// Sealing generated wiki pages.
    WikiSeal,
    /// Keying the state_fp shown to callers (spec drift.fingerprint-keyed).
    StateFingerprint,
}

impl KeyPurpose {
    pub const ALL: [KeyPurpose; 4] = [
        KeyPurpose::RequestState,
        KeyPurpose::ReadNotesCursor,
        KeyPurpose::WikiSeal,
        KeyPurpose::StateFingerprint,
    ];

    /// The HKDF `info` label; changing one voids every value sealed for that purpose.
    pub fn label(self) -> &'static str {
        match self {
            KeyPurpose::RequestState => "obsidian-tc/v1/request-state",
            KeyPurpose::ReadNotesCursor => "obsidian-tc/v1/read-notes-cursor",
            KeyPurpose::WikiSeal => "obsidian-tc/v1/wiki-seal",
            KeyPurpose::StateFingerprint => "obsidian-tc/v1/state-fp",
        }
    }
}

/// Where the secret came from; decides the start-up `elicit:` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// Loaded from (or created in) `<cacheDir>/server-secrets`; holds the cacheDir.
    CacheDir(PathBuf),
    /// Random for this process only (no cacheDir was configured).
    PerProcess,
}

impl KeySource {
    /// The line the server prints on stderr at start-up, naming the key source.
    // r[impl state.key.startup-line-logged]
    pub fn startup_line(&self) -> String {
        match self {
            KeySource::CacheDir(cache_dir) => format!(
                "elicit: requestState codec keyed from {} (stable across restarts)",
                cache_dir.join(SECRETS_DIR_NAME).display()
            ),
            KeySource::PerProcess => {
                "elicit: requestState codec keyed from a per-process random key \
                 (confirmations do not survive a restart and are not shared between processes)"
                    .to_owned()
            }
        }
    }
}

/// The per-server secret every purpose key is derived from.
pub struct ServerSecret {
    bytes: [u8; SECRET_LEN],
    source: KeySource,
}

impl fmt::Debug for ServerSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerSecret")
            .field("bytes", &"<redacted>")
            .field("source", &self.source)
            .finish()
    }
}

/// A 32-byte key derived for one [`KeyPurpose`].
#[derive(Clone, PartialEq, Eq)]
pub struct DerivedKey {
    purpose: KeyPurpose,
    bytes: [u8; SECRET_LEN],
}

impl DerivedKey {
    pub fn purpose(&self) -> KeyPurpose {
        self.purpose
    }
    pub fn as_bytes(&self) -> &[u8; SECRET_LEN] {
        &self.bytes
    }
}

impl fmt::Debug for DerivedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DerivedKey")
            .field("purpose", &self.purpose)
            .field("bytes", &"<redacted>")
            .finish()
    }
}

/// Why the server secret could not be loaded; every message names the path and the fix.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("cannot {action} {}: {source}; check that the cache directory is on a writable local volume owned by this user", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{} is {found}, not a regular {expected}; remove it (pending confirmations are voided and generated wiki pages are resealed) and start again", path.display())]
    NotRegular {
        path: PathBuf,
        expected: &'static str,
        found: &'static str,
    },
    #[error("{} is owned by uid {owner}, not by this process's uid {expected}; run the server as its owner, or remove it to have a new secret generated", path.display())]
    WrongOwner {
        path: PathBuf,
        owner: u32,
        expected: u32,
    },
    #[error("{} has mode {mode:04o}, which lets group or others {what}; run `chmod {fix:o} {}`", path.display(), path.display())]
    TooOpen {
        path: PathBuf,
        mode: u32,
        what: &'static str,
        fix: u32,
    },
    #[error("{} holds {len} bytes, not the 32 of a server secret; remove it (pending confirmations are voided and generated wiki pages are resealed) and start again", path.display())]
    WrongSize { path: PathBuf, len: u64 },
}

impl ServerSecret {
    /// Loads `<cache_dir>/server-secrets/wiki-generated.key`, creating it on first use.
    // r[impl state.key.server-secret]
    // r[impl state.key.secret-file]
    pub fn load_or_create(cache_dir: &Path, entropy: &dyn Entropy) -> Result<Self, KeyError> {
        let dir = cache_dir.join(SECRETS_DIR_NAME);
        let path = dir.join(SECRET_FILE_NAME);
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|source| KeyError::Io {
                action: "create the directory",
                path: dir.clone(),
                source,
            })?;
        check_secrets_dir(&dir)?;
        let bytes = match read_secret(&path)? {
            Some(bytes) => bytes,
            None => create_secret(&dir, &path, entropy)?,
        };
        Ok(Self {
            bytes,
            source: KeySource::CacheDir(cache_dir.to_path_buf()),
        })
    }

    /// A random secret for this process only (no cacheDir).
    // r[impl state.key.per-process]
    pub fn ephemeral(entropy: &dyn Entropy) -> Self {
        let mut bytes = [0u8; SECRET_LEN];
        entropy.fill(&mut bytes);
        Self {
            bytes,
            source: KeySource::PerProcess,
        }
    }

    /// [`load_or_create`](Self::load_or_create) with a cacheDir, [`ephemeral`](Self::ephemeral)
    /// without one: what the server does at start-up.
    pub fn for_cache_dir(
        cache_dir: Option<&Path>,
        entropy: &dyn Entropy,
    ) -> Result<Self, KeyError> {
        match cache_dir {
            Some(dir) => Self::load_or_create(dir, entropy),
            None => Ok(Self::ephemeral(entropy)),
        }
    }

    pub fn source(&self) -> &KeySource {
        &self.source
    }

    /// The key for `purpose`: HKDF-SHA256(ikm = secret, no salt, info = purpose label).
    // r[impl state.key.hkdf-label]
    pub fn derive(&self, purpose: KeyPurpose) -> DerivedKey {
        let hkdf = Hkdf::<Sha256>::new(None, &self.bytes);
        let mut bytes = [0u8; SECRET_LEN];
        // HKDF-SHA256 can expand up to 8160 bytes; 32 is always accepted.
        hkdf.expand(purpose.label().as_bytes(), &mut bytes)
            .expect("HKDF-SHA256 expands 32 bytes");
        DerivedKey { purpose, bytes }
    }
}

/// The path of the secret file for `cache_dir` (for messages and tests).
pub fn secret_path(cache_dir: &Path) -> PathBuf {
    cache_dir.join(SECRETS_DIR_NAME).join(SECRET_FILE_NAME)
}

fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

fn file_kind(metadata: &fs::Metadata) -> &'static str {
    let kind = metadata.file_type();
    if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_file() {
        "a regular file"
    } else {
        "a special file"
    }
}

fn check_owner(path: &Path, metadata: &fs::Metadata) -> Result<(), KeyError> {
    let expected = effective_uid();
    if metadata.uid() != expected {
        return Err(KeyError::WrongOwner {
            path: path.to_path_buf(),
            owner: metadata.uid(),
            expected,
        });
    }
    Ok(())
}

fn check_secrets_dir(dir: &Path) -> Result<(), KeyError> {
    let metadata = fs::symlink_metadata(dir).map_err(|source| KeyError::Io {
        action: "inspect",
        path: dir.to_path_buf(),
        source,
    })?;
    if !metadata.file_type().is_dir() {
        return Err(KeyError::NotRegular {
            path: dir.to_path_buf(),
            expected: "directory",
            found: file_kind(&metadata),
        });
    }
    check_owner(dir, &metadata)?;
    let mode = metadata.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(KeyError::TooOpen {
            path: dir.to_path_buf(),
            mode,
            what: "replace the secret",
            fix: 0o700,
        });
    }
    Ok(())
}

/// Reads and checks the secret; `Ok(None)` when the file does not exist yet.
fn read_secret(path: &Path) -> Result<Option<[u8; SECRET_LEN]>, KeyError> {
    let named = match fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(KeyError::Io {
                action: "inspect",
                path: path.to_path_buf(),
                source,
            });
        }
    };
    check_secret_metadata(path, &named)?;
    let mut file = File::open(path).map_err(|source| KeyError::Io {
        action: "open",
        path: path.to_path_buf(),
        source,
    })?;
    let opened = file.metadata().map_err(|source| KeyError::Io {
        action: "inspect",
        path: path.to_path_buf(),
        source,
    })?;
    // The name may have been swapped between lstat and open; judge what was opened.
    if (opened.dev(), opened.ino()) != (named.dev(), named.ino()) {
        return Err(KeyError::NotRegular {
            path: path.to_path_buf(),
            expected: "file",
            found: "a file that was replaced while it was being opened",
        });
    }
    check_secret_metadata(path, &opened)?;
    let mut contents = Vec::with_capacity(SECRET_LEN + 1);
    (&mut file)
        .take(SECRET_LEN as u64 + 1)
        .read_to_end(&mut contents)
        .map_err(|source| KeyError::Io {
            action: "read",
            path: path.to_path_buf(),
            source,
        })?;
    let bytes: [u8; SECRET_LEN] =
        contents
            .as_slice()
            .try_into()
            .map_err(|_| KeyError::WrongSize {
                path: path.to_path_buf(),
                len: contents.len() as u64,
            })?;
    Ok(Some(bytes))
}

fn check_secret_metadata(path: &Path, metadata: &fs::Metadata) -> Result<(), KeyError> {
    if !metadata.file_type().is_file() {
        return Err(KeyError::NotRegular {
            path: path.to_path_buf(),
            expected: "file",
            found: file_kind(metadata),
        });
    }
    check_owner(path, metadata)?;
    let mode = metadata.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(KeyError::TooOpen {
            path: path.to_path_buf(),
            mode,
            what: "read or change it",
            fix: 0o600,
        });
    }
    if metadata.len() != SECRET_LEN as u64 {
        return Err(KeyError::WrongSize {
            path: path.to_path_buf(),
            len: metadata.len(),
        });
    }
    Ok(())
}

/// Creates the secret (see the module notes on the temporary file and `link(2)`), or reads
/// the one another process published first.
fn create_secret(
    dir: &Path,
    path: &Path,
    entropy: &dyn Entropy,
) -> Result<[u8; SECRET_LEN], KeyError> {
    let mut bytes = [0u8; SECRET_LEN];
    entropy.fill(&mut bytes);
    let mut suffix = [0u8; 8];
    entropy.fill(&mut suffix);
    let temporary = dir.join(format!(".{SECRET_FILE_NAME}.{}.tmp", hex::encode(suffix)));
    let written = write_new_file(&temporary, &bytes);
    let published = written.and_then(|()| match fs::hard_link(&temporary, path) {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(source) => Err(KeyError::Io {
            action: "publish",
            path: path.to_path_buf(),
            source,
        }),
    });
    // Best effort: a leftover temporary file is harmless (never read) but untidy.
    let _ = fs::remove_file(&temporary);
    if published? {
        // Make the new name durable, so a crash cannot resurrect a different secret.
        if let Ok(directory) = File::open(dir) {
            let _ = directory.sync_all();
        }
        Ok(bytes)
    } else {
        read_secret(path)?.ok_or_else(|| KeyError::Io {
            action: "read",
            path: path.to_path_buf(),
            source: io::Error::new(
                io::ErrorKind::NotFound,
                "the secret another process created disappeared",
            ),
        })
    }
}

fn write_new_file(path: &Path, bytes: &[u8]) -> Result<(), KeyError> {
    let io_error = |action: &'static str| {
        let path = path.to_path_buf();
        move |source| KeyError::Io {
            action,
            path,
            source,
        }
    };
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(io_error("create"))?;
    file.write_all(bytes).map_err(io_error("write"))?;
    file.sync_all().map_err(io_error("sync"))?;
    Ok(())
}
