//! The attachments a call would read and the state its confirmation binds (spec/ocr.md
//! `ocr.candidates.paths`, `ocr.candidates.root`, `ocr.candidates.hidden`,
//! `ocr.candidates.limit`; spec/drift.md `drift.bind.ocr-bulk`).
//!
//! Candidates are the `paths` given, or every file under `root` (recursively) whose
//! extension is one of `extensions` and that the caller may read under the folder ACL
//! (a root walk never names a file the ACL hides; an explicit path is declared for the ACL
//! and refused by name after the gate). Hidden files and folders (a segment starting with
//! `.`) are never candidates. The binding is the sorted set of (path, size, content hash):
//! a file replaced changes its hash, and a file added under `root` joins the set.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Read;
use std::path::PathBuf;

use sha2::{Digest, Sha256};
use tc_gate::{StateFp, fingerprint_custom};
use tc_tools::{ErrorCode, ToolCx, ToolError};
use tc_vault::error::VaultError;
use tc_vault::path::{FolderPath, VaultPath};
use tc_vault::walk::{Walk, WalkFilter};

use crate::recognize::{Kind, extension_of, kind_of};

/// The most files one call reads.
pub const MAX_CANDIDATES: usize = 1000;
/// The largest file read; a larger one is bound by its size and reported `too_large`.
pub const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// A file the call would read, as observed now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    pub path: VaultPath,
    pub kind: Kind,
    pub size: u64,
    /// SHA-256 of its bytes (lowercase hex); `None` when it is over [`MAX_FILE_BYTES`].
    pub hash: Option<String>,
    /// Its canonical location on disk.
    pub location: PathBuf,
}

fn invalid(path: &str, reason: &str) -> ToolError {
    VaultError::PathInvalid {
        path: path.to_owned(),
        reason: reason.to_owned(),
    }
    .into()
}

/// Whether a segment of `path` is hidden (starts with `.`).
fn hidden(path: &str) -> bool {
    path.split('/')
        .any(|segment| segment.starts_with('.') && segment != ".")
}

// r[impl ocr.candidates.paths]
// r[impl ocr.candidates.hidden]
/// The candidates of an explicit `paths` list, in order, without repeats.
pub fn from_paths(raw: &[String]) -> Result<Vec<(VaultPath, Kind)>, ToolError> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (i, text) in raw.iter().enumerate() {
        if hidden(text) {
            return Err(invalid(
                text,
                "the path is inside a hidden folder or names a hidden file, which ocr_bulk never reads",
            ));
        }
        let path = VaultPath::parse(text)?;
        let Some(kind) = kind_of(path.as_str()) else {
            return Err(ToolError::validation(
                &format!("/paths/{i}"),
                format!(
                    "{text:?} is not a PDF or an image ocr_bulk reads ({})",
                    crate::recognize::SUPPORTED_EXTENSIONS.join(" ")
                ),
            ));
        };
        if seen.insert(path.clone()) {
            out.push((path, kind));
        }
    }
    Ok(out)
}

// r[impl ocr.candidates.root]
/// The candidates under `root`: files with one of `extensions` (lowercase, dotted) the
/// caller may read, in path order.
pub fn from_root(
    cx: &ToolCx<'_>,
    root: &str,
    extensions: &[String],
) -> Result<Vec<(VaultPath, Kind)>, ToolError> {
    if hidden(root) {
        return Err(invalid(
            root,
            "the folder is hidden; ocr_bulk never reads there",
        ));
    }
    let folder = FolderPath::parse(root)?;
    let walk = Walk::new(cx.vault().root(), &folder, true, WalkFilter::AllFiles, None)?;
    let mut out = Vec::new();
    for item in walk {
        let path = item?;
        let Some(extension) = extension_of(path.as_str()) else {
            continue;
        };
        if !extensions.contains(&extension) {
            continue;
        }
        let Some(kind) = kind_of(path.as_str()) else {
            continue;
        };
        if !cx
            .binding
            .acl
            .can_read_at(cx.vault().root(), &path, &cx.caller.scopes)
        {
            continue;
        }
        out.push((path, kind));
        if out.len() > MAX_CANDIDATES {
            break;
        }
    }
    Ok(out)
}

// r[impl ocr.candidates.limit]
/// Refuses a batch of more than [`MAX_CANDIDATES`] files.
pub fn check_count(count: usize) -> Result<(), ToolError> {
    if count > MAX_CANDIDATES {
        return Err(ToolError::new(
            ErrorCode::InvalidInput,
            format!(
                "more than {MAX_CANDIDATES} files would be read; narrow root or extensions, \
                 or send paths in batches of at most {MAX_CANDIDATES}"
            ),
        )
        .with_details(serde_json::json!({"reason": "too_many_files", "limit": MAX_CANDIDATES})));
    }
    Ok(())
}

/// Each candidate's size and content hash now. A candidate that is gone or not a file is
/// `note_not_found`: the state that was (or would be) approved cannot be observed.
pub fn observe(cx: &ToolCx<'_>, list: &[(VaultPath, Kind)]) -> Result<Vec<Attachment>, ToolError> {
    let mut out = Vec::with_capacity(list.len());
    for (path, kind) in list {
        let location = cx.vault().root().resolve_for_read(path)?;
        let not_found = || {
            ToolError::from(VaultError::NoteNotFound {
                path: path.as_str().to_owned(),
            })
        };
        let meta = std::fs::metadata(&location).map_err(|_| not_found())?;
        if !meta.is_file() {
            return Err(not_found());
        }
        let hash = if meta.len() > MAX_FILE_BYTES {
            None
        } else {
            Some(hash_file(&location).map_err(|_| ToolError::internal("hashing an attachment"))?)
        };
        out.push(Attachment {
            path: path.clone(),
            kind: *kind,
            size: meta.len(),
            hash,
            location,
        });
    }
    Ok(out)
}

/// SHA-256 of the file at `location`, streamed, lowercase hex (a note's `content_hash`).
pub fn hash_file(location: &std::path::Path) -> std::io::Result<String> {
    let mut file = File::open(location)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hex::encode(hasher.finalize()))
}

// r[impl drift.bind.ocr-bulk]
/// The fingerprint of the candidate set: each (path, size, content hash), in path order.
pub fn fingerprint(attachments: &[Attachment]) -> StateFp {
    let mut sorted: Vec<&Attachment> = attachments.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let sizes: Vec<String> = sorted.iter().map(|a| a.size.to_string()).collect();
    let mut parts: Vec<&[u8]> = vec![b"ocr_bulk attachments"];
    for (attachment, size) in sorted.iter().zip(&sizes) {
        parts.push(attachment.path.as_str().as_bytes());
        parts.push(size.as_bytes());
        parts.push(attachment.hash.as_deref().unwrap_or("-").as_bytes());
    }
    fingerprint_custom(&parts)
}
