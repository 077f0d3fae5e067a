//! `list_attachments` (spec/attachments.md `attachments.list`, `attachments.list.embeds`,
//! `attachments.list.acl`): the vault's files that are not notes, in path order, from the
//! index, each with how many notes the caller may read embed it; paged with a signed cursor
//! under the page budget.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tc_index::meta::{self, attachments as q};
use tc_tools::{
    Annotations, Gating, HandlerFailure, KeysetPaging, Precheck, TargetState, Tool, ToolCx,
    ToolError, ToolSpec, wire_cost,
};
use tc_vault::VaultPath;
use tc_vault::path::FolderPath;

use crate::common::rfc3339_ns;

pub const LIST_ATTACHMENTS: &str = "list_attachments";
const PAGE_ROWS: usize = 200;

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListAttachmentsArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub folder: Option<String>,
    /// e.g. ["png", "pdf"]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    pub extensions: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub cursor: Option<String>,
    /// Page size cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1024))]
    pub max_bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AttachmentEntry {
    pub path: String,
    pub size: u64,
    /// RFC 3339, UTC.
    pub modified: String,
    /// Notes that embed it.
    pub embedded_by: usize,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ListAttachmentsOutput {
    pub vault: String,
    pub attachments: Vec<AttachmentEntry>,
    pub next_cursor: Option<String>,
}

#[derive(Debug)]
pub struct ListAttachments;

fn extension_of(path: &str) -> Option<String> {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase())
}

fn wanted(extensions: &Option<Vec<String>>) -> Option<Vec<String>> {
    extensions.as_ref().map(|list| {
        list.iter()
            .map(|e| e.trim().trim_start_matches('.').to_ascii_lowercase())
            .collect()
    })
}

// r[impl attachments.list]
// r[impl attachments.list.embeds]
// r[impl attachments.list.acl]
impl Tool for ListAttachments {
    type Args = ListAttachmentsArgs;
    type Output = ListAttachmentsOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: LIST_ATTACHMENTS,
            description: "List attachments (images, PDFs, audio, …) with size, modified time and how many notes embed each. Pages via cursor.",
            annotations: Annotations::READS,
            scopes: &["read:attachments"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(
        &self,
        _cx: &ToolCx<'_>,
        args: &ListAttachmentsArgs,
    ) -> Result<Precheck, ToolError> {
        if let Some(folder) = &args.folder {
            FolderPath::parse(folder).map_err(|e| ToolError::from(&e))?;
        }
        Ok(Precheck::free())
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &ListAttachmentsArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<ListAttachmentsOutput, HandlerFailure> {
        let folder = match &args.folder {
            Some(raw) => FolderPath::parse(raw).map_err(|e| ToolError::from(&e))?,
            None => FolderPath::root(),
        };
        let extensions = wanted(&args.extensions);
        let vault = cx.vault().id();
        // r[impl paging.max-bytes]
        let paging = KeysetPaging::open(
            cx,
            LIST_ATTACHMENTS,
            &json!({"vault": vault, "folder": folder.as_str(), "extensions": extensions}),
            args.cursor.as_deref(),
            args.max_bytes,
        )?;
        let mut after = paging.after.clone();
        let index = meta::fresh(cx)?;
        let budget = paging.budget();
        let mut attachments = Vec::new();
        let mut last: Option<String> = None;
        let mut used = 0usize;
        let mut more = false;
        'rows: loop {
            let rows = q::files(index, &folder, after.as_deref(), PAGE_ROWS + 1)?;
            let exhausted = rows.len() <= PAGE_ROWS;
            for row in rows {
                after = Some(row.path.clone());
                let Ok(path) = VaultPath::parse(&row.path) else {
                    continue;
                };
                if !cx.may_read(&path) {
                    continue;
                }
                if let Some(list) = &extensions
                    && !extension_of(&row.path).is_some_and(|ext| list.contains(&ext))
                {
                    continue;
                }
                if attachments.len() == PAGE_ROWS {
                    more = true;
                    break 'rows;
                }
                let embedded_by = q::linking_notes(index, &path, true)?
                    .iter()
                    .filter(|note| cx.may_read(note))
                    .count();
                let entry = AttachmentEntry {
                    path: row.path,
                    size: row.size,
                    modified: rfc3339_ns(row.mtime_ns),
                    embedded_by,
                };
                let cost = serde_json::to_vec(&entry)
                    .map(|bytes| wire_cost(&bytes) + 1)
                    .map_err(|_| ToolError::internal("encoding a page entry"))?;
                if used + cost > budget && !attachments.is_empty() {
                    more = true;
                    break 'rows;
                }
                used += cost;
                last = Some(entry.path.clone());
                attachments.push(entry);
            }
            if exhausted {
                break;
            }
        }
        let next_cursor = match (more, last) {
            (true, Some(last)) => Some(paging.next(cx, &last)?),
            _ => None,
        };
        Ok(ListAttachmentsOutput {
            vault: vault.to_owned(),
            attachments,
            next_cursor,
        })
    }
}
