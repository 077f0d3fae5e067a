//! The Local REST API key, read from `apiKeyFile` on every call (spec/bridge.md
//! `bridge.key.file`, `bridge.key.private`).
//!
//! The key opens every route of the plugin (notes, commands), so the file must be private to
//! the user the server runs as: a regular file, mode 0600 or stricter, owned by that user.
//! It is read at each call, so rotating the key in Obsidian and in the file needs no restart,
//! and it is checked before the confirmation gate, so a bad key file never spends a token.

use std::fmt;
use std::fs;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The largest key file read (the plugin's keys are 64 hex digits).
const MAX_KEY_BYTES: u64 = 4096;

/// The bearer key (never shown by `Debug`).
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl ApiKey {
    /// The key as sent after `Authorization: Bearer `.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// A key given directly (tests, library use); it must be a bearer token's characters.
    pub fn new(key: &str) -> Result<Self, KeyError> {
        let key = key.trim();
        if key.is_empty() {
            return Err(KeyError::Empty);
        }
        if !key.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
            return Err(KeyError::Malformed);
        }
        Ok(ApiKey(key.to_owned()))
    }
}

/// Why the key file cannot be used; each message names the file and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("apiKeyFile {path} must be an absolute path")]
    Relative { path: PathBuf },
    #[error("cannot read apiKeyFile {path}: {reason}")]
    Unreadable { path: PathBuf, reason: String },
    #[error("apiKeyFile {path} is not a regular file")]
    NotAFile { path: PathBuf },
    #[error(
        "apiKeyFile {path} is readable by others (mode {mode:o}); run `chmod 600 {path}` so only you can read the key"
    )]
    TooOpen { path: PathBuf, mode: u32 },
    #[error(
        "apiKeyFile {path} is owned by uid {owner}, not by the user the server runs as (uid {me})"
    )]
    Foreign { path: PathBuf, owner: u32, me: u32 },
    #[error("apiKeyFile {path} is larger than {MAX_KEY_BYTES} bytes; it should hold the key alone")]
    TooLarge { path: PathBuf },
    #[error("the API key is empty")]
    Empty,
    #[error("the API key holds whitespace or control characters inside it")]
    Malformed,
}

// r[impl bridge.key.private]
/// Reads and checks the key file at `path`.
pub fn read_key_file(path: &Path) -> Result<ApiKey, KeyError> {
    let shown = path.to_path_buf();
    if !path.is_absolute() {
        return Err(KeyError::Relative { path: shown });
    }
    let unreadable = |e: std::io::Error| KeyError::Unreadable {
        path: shown.clone(),
        reason: e.to_string(),
    };
    // A FIFO or a device is refused before it is opened (opening a FIFO would block); a key
    // file kept as a symlink into a secrets folder is common and allowed. The checks below
    // are then made again on the file opened, so what is checked is what is read.
    if !fs::metadata(path).map_err(unreadable)?.is_file() {
        return Err(KeyError::NotAFile { path: shown });
    }
    let mut file = fs::File::open(path).map_err(unreadable)?;
    let meta = file.metadata().map_err(unreadable)?;
    if !meta.is_file() {
        return Err(KeyError::NotAFile { path: shown });
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(KeyError::TooOpen { path: shown, mode });
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(KeyError::Foreign {
            path: shown,
            owner: meta.uid(),
            me,
        });
    }
    if meta.len() > MAX_KEY_BYTES {
        return Err(KeyError::TooLarge { path: shown });
    }
    let mut text = String::new();
    file.by_ref()
        .take(MAX_KEY_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(unreadable)?;
    ApiKey::new(&text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn write(dir: &Path, text: &str, mode: u32) -> PathBuf {
        let path = dir.join("key");
        fs::write(&path, text).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    // r[verify bridge.key.private]
    #[test]
    fn the_key_file_must_be_private_absolute_and_hold_one_token() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "abc123\n", 0o600);
        assert_eq!(read_key_file(&path).unwrap().expose(), "abc123");
        let open = write(dir.path(), "abc123\n", 0o644);
        let error = read_key_file(&open).unwrap_err();
        assert!(
            matches!(error, KeyError::TooOpen { mode: 0o644, .. }),
            "{error}"
        );
        assert!(error.to_string().contains("chmod 600"), "{error}");
        assert!(matches!(
            read_key_file(Path::new("relative/key")),
            Err(KeyError::Relative { .. })
        ));
        let inner_space = write(dir.path(), "abc 123", 0o600);
        assert_eq!(read_key_file(&inner_space), Err(KeyError::Malformed));
        let header_injection = write(dir.path(), "abc\r\nX-Evil: 1", 0o600);
        assert_eq!(read_key_file(&header_injection), Err(KeyError::Malformed));
        let empty = write(dir.path(), "\n", 0o600);
        assert_eq!(read_key_file(&empty), Err(KeyError::Empty));
        assert!(matches!(
            read_key_file(dir.path()),
            Err(KeyError::NotAFile { .. })
        ));
        assert!(matches!(
            read_key_file(&dir.path().join("missing")),
            Err(KeyError::Unreadable { .. })
        ));
        // Debug never shows the key.
        assert!(!format!("{:?}", ApiKey::new("secretkey").unwrap()).contains("secretkey"));
    }
}
