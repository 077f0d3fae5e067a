//! `get_note_outline` and `note_exists`: what a note holds and whether a path is there,
//! without reading the whole note into the conversation (spec/tools.md
//! `tools.get-note-outline`, `tools.note-exists`).

use std::time::UNIX_EPOCH;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, TargetState, Tool, ToolCx, ToolError, ToolSpec,
};
use tc_vault::acl::AclOp;
use tc_vault::error::VaultError;
use tc_vault::note::parse_note;
use tc_vault::path::VaultPath;
use tc_vault::sections;

use crate::common::{not_found, note};

/// A `path` argument alone.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathArgs {
    /// Vault-relative path.
    #[schemars(length(min = 1, max = 4096))]
    pub path: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OutlineHeading {
    pub level: u8,
    pub text: String,
    pub line: usize,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OutlineBlock {
    pub id: String,
    pub line: usize,
}

/// `get_note_outline`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct NoteOutline {
    pub path: String,
    pub headings: Vec<OutlineHeading>,
    pub blocks: Vec<OutlineBlock>,
    pub frontmatter_keys: Vec<String>,
    pub bytes: usize,
    pub lines: usize,
    pub content_hash: String,
}

#[derive(Debug)]
pub struct GetNoteOutline;

impl Tool for GetNoteOutline {
    type Args = PathArgs;
    type Output = NoteOutline;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "get_note_outline",
            description: "A note's headings (level, text, line), block ids, frontmatter keys and size.",
            annotations: Annotations::READS,
            scopes: &["read:notes"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, _cx: &ToolCx<'_>, args: &PathArgs) -> Result<Precheck, ToolError> {
        Ok(Precheck {
            acl: vec![(AclOp::Read, note(&args.path)?)],
            ..Precheck::free()
        })
    }

    // r[impl tools.get-note-outline]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &PathArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<NoteOutline, HandlerFailure> {
        let path = note(&args.path)?;
        let current = cx
            .vault()
            .read_if_exists(&path)?
            .ok_or_else(|| not_found(&path))?;
        let text = current.utf8(&path)?;
        let outline = sections::outline(text);
        let frontmatter_keys = match parse_note(text) {
            Ok(parsed) => parsed
                .frontmatter
                .map(|f| match f.to_json() {
                    serde_json::Value::Object(map) => map.keys().cloned().collect(),
                    _ => Vec::new(),
                })
                .unwrap_or_default(),
            // A broken block still has headings worth showing.
            Err(_) => Vec::new(),
        };
        Ok(NoteOutline {
            path: path.as_str().to_owned(),
            headings: outline
                .headings
                .iter()
                .map(|h| OutlineHeading {
                    level: h.level,
                    text: h.text.clone(),
                    line: h.line,
                })
                .collect(),
            blocks: outline
                .blocks
                .iter()
                .map(|b| OutlineBlock {
                    id: b.id.clone(),
                    line: b.line,
                })
                .collect(),
            frontmatter_keys,
            bytes: text.len(),
            lines: text.split_inclusive('\n').count(),
            content_hash: current.hash.clone(),
        })
    }
}

// What kind of thing is at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    Note,
    Attachment,
    Folder,
}

/// `note_exists`' result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct NoteExistsOutput {
    pub path: String,
    pub exists: bool,
    pub kind: Option<EntryKind>,
    pub size: Option<u64>,
    /// Unix time in milliseconds.
    pub modified: Option<u64>,
}

#[derive(Debug)]
pub struct NoteExists;

impl Tool for NoteExists {
    type Args = PathArgs;
    type Output = NoteExistsOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "note_exists",
            description: "Whether a note, attachment or folder is at path: kind, size, modified (Unix ms).",
            annotations: Annotations::READS,
            scopes: &["read:notes"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    // r[impl tools.note-exists.hidden]
    fn precheck(&self, _cx: &ToolCx<'_>, args: &PathArgs) -> Result<Precheck, ToolError> {
        // A hidden folder (.obsidian/, .git/, .trash/) is refused here as path_invalid, and
        // a folder the ACL hides by the read the path declares.
        let path = VaultPath::parse(&args.path)?;
        Ok(Precheck {
            acl: vec![(AclOp::Read, path)],
            ..Precheck::free()
        })
    }

    // r[impl tools.note-exists]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &PathArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<NoteExistsOutput, HandlerFailure> {
        let path = VaultPath::parse(&args.path)?;
        let location = cx.vault().root().resolve_for_read(&path)?;
        let absent = NoteExistsOutput {
            path: path.as_str().to_owned(),
            exists: false,
            kind: None,
            size: None,
            modified: None,
        };
        let meta = match std::fs::metadata(&location) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(absent),
            Err(source) => {
                return Err(VaultError::Io {
                    path: path.as_str().to_owned(),
                    op: "inspect",
                    source,
                }
                .into());
            }
        };
        let kind = if meta.is_dir() {
            EntryKind::Folder
        } else if path.is_note() {
            EntryKind::Note
        } else {
            EntryKind::Attachment
        };
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .and_then(|d| u64::try_from(d.as_millis()).ok());
        Ok(NoteExistsOutput {
            exists: true,
            kind: Some(kind),
            size: (!meta.is_dir()).then_some(meta.len()),
            modified,
            ..absent
        })
    }
}
