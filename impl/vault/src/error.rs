//! The vault's typed errors and their wire codes (spec/results.md).
//!
//! Every refusal the vault layer can produce is one variant of [`VaultError`], so the tool
//! layer maps a failure to its `{code, message, retryable, details}` envelope with
//! [`VaultError::code`], [`VaultError::retryable`] and [`VaultError::details`], without
//! matching on strings. The folder ACL ([`crate::acl::AclDenied`]) and the conventions
//! ([`crate::conventions::ConventionBlocked`]) keep their own types, because the gate treats
//! both as "refused before any write" (release.md's rule), and convert into this one.

use serde_json::{Value, json};

/// The `op` of the [`VaultError::Io`] that says a note is not valid UTF-8 (spec
/// `vault.note.utf8`). It is an [`VaultError::Io`] of kind `InvalidData` so the error type
/// keeps its variants; [`VaultError::code`] answers `invalid_input` for it, and it is not
/// retryable: the note must be fixed (or replaced whole) first.
pub const NOT_UTF8_OP: &str = "decode";

use crate::acl::AclDenied;
use crate::conventions::ConventionBlocked;

/// A refusal or failure of a vault operation.
#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    /// A user-supplied path was refused (absolute, `..`, control characters, a hidden
    /// system folder, or a link that leads out of the vault).
    #[error("path {path:?} is not allowed: {reason}")]
    PathInvalid { path: String, reason: String },

    /// No note exists at the path (or the path names a folder).
    #[error("note {path:?} does not exist")]
    NoteNotFound { path: String },

    /// A create-only write or a restore found a note already at the path.
    #[error("note {path:?} already exists")]
    NoteExists { path: String },

    /// The caller's `prev_hash` no longer matches the note: someone changed it meanwhile.
    #[error("note {path:?} changed since it was read (expected hash {expected}, found {actual})")]
    ConcurrentModification {
        path: String,
        expected: String,
        /// The note's current hash, or `"absent"` when the note is gone.
        actual: String,
    },

    /// A note or result is bigger than the limit that applies to it.
    #[error("note {path:?} is {size} bytes, over the limit of {limit} bytes")]
    TooLarge { path: String, size: u64, limit: u64 },

    /// No snapshot of the path (or none with the given id) exists.
    #[error("no snapshot {id} for note {path:?}", id = id.as_deref().unwrap_or("(latest)"))]
    SnapshotNotFound { path: String, id: Option<String> },

    /// The note's YAML frontmatter could not be parsed or does not form a mapping.
    #[error("note {path:?} has invalid frontmatter: {reason}")]
    FrontmatterInvalid { path: String, reason: String },

    /// The folder ACL refused the operation.
    #[error(transparent)]
    AclDenied(#[from] AclDenied),

    /// A convention (block rule) refused the write before anything was written.
    #[error(transparent)]
    ConventionBlocked(#[from] ConventionBlocked),

    /// The file system failed; `op` says what the vault was doing.
    #[error("{op} {path:?} failed: {source}")]
    Io {
        path: String,
        op: &'static str,
        #[source]
        source: std::io::Error,
    },
}

impl VaultError {
    /// The wire code of spec/results.md.
    pub fn code(&self) -> &'static str {
        match self {
            VaultError::PathInvalid { .. } => "path_invalid",
            VaultError::NoteNotFound { .. } | VaultError::SnapshotNotFound { .. } => {
                "note_not_found"
            }
            VaultError::NoteExists { .. } => "note_exists",
            VaultError::ConcurrentModification { .. } => "concurrent_modification",
            VaultError::TooLarge { .. } => "too_large",
            VaultError::FrontmatterInvalid { .. } => "frontmatter_invalid",
            VaultError::AclDenied(_) => "acl_denied",
            VaultError::ConventionBlocked(_) => "convention_blocked",
            _ if self.is_not_utf8() => "invalid_input",
            VaultError::Io { .. } => "io",
        }
    }

    /// Whether repeating the same call unchanged could succeed. Only a file-system failure
    /// can be transient; every other refusal depends on the arguments or the vault state.
    pub fn retryable(&self) -> bool {
        matches!(self, VaultError::Io { .. }) && !self.is_not_utf8()
    }

    /// Whether this is the refusal of a note that is not valid UTF-8 ([`NOT_UTF8_OP`]).
    pub fn is_not_utf8(&self) -> bool {
        matches!(
            self,
            VaultError::Io { op, source, .. }
                if *op == NOT_UTF8_OP && source.kind() == std::io::ErrorKind::InvalidData
        )
    }

    // r[impl vault.note.utf8]
    /// A note whose bytes are not valid UTF-8: a per-path refusal naming where the first
    /// bad byte is, never a lossy decoding.
    pub fn not_utf8(path: impl Into<String>, error: &std::str::Utf8Error) -> Self {
        VaultError::Io {
            path: path.into(),
            op: NOT_UTF8_OP,
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "the note is not valid UTF-8 text (the first invalid byte is at offset {}); \
                     it was left as it is",
                    error.valid_up_to()
                ),
            ),
        }
    }

    /// The structured `details` object of the error envelope.
    pub fn details(&self) -> Value {
        match self {
            VaultError::PathInvalid { path, reason } => json!({"path": path, "reason": reason}),
            VaultError::NoteNotFound { path } | VaultError::NoteExists { path } => {
                json!({"path": path})
            }
            VaultError::ConcurrentModification {
                path,
                expected,
                actual,
            } => json!({"path": path, "expected": expected, "actual": actual}),
            VaultError::TooLarge { path, size, limit } => {
                json!({"path": path, "size": size, "limit": limit})
            }
            VaultError::SnapshotNotFound { path, id } => {
                json!({"path": path, "snapshot_id": id})
            }
            VaultError::FrontmatterInvalid { path, reason } => {
                json!({"path": path, "reason": reason})
            }
            VaultError::AclDenied(denied) => denied.details(),
            VaultError::ConventionBlocked(blocked) => blocked.details(),
            VaultError::Io { path, .. } if self.is_not_utf8() => {
                json!({"path": path, "reason": "not_utf8"})
            }
            VaultError::Io { path, op, source } => {
                json!({"path": path, "op": op, "kind": format!("{:?}", source.kind())})
            }
        }
    }

    pub(crate) fn io(path: impl Into<String>, op: &'static str, source: std::io::Error) -> Self {
        VaultError::Io {
            path: path.into(),
            op,
            source,
        }
    }

    pub(crate) fn invalid(path: impl Into<String>, reason: impl Into<String>) -> Self {
        VaultError::PathInvalid {
            path: path.into(),
            reason: reason.into(),
        }
    }
}

/// Shorthand for results of vault operations.
pub type VaultResult<T> = Result<T, VaultError>;
