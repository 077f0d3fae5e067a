//! Notes as MCP resources (spec/governor.md `resource.notes`, `resource.ceiling`,
//! `resource.stat`, `resource.refusal`, `resource.not-counted`).
//!
//! Each note the caller may read is the resource `obsidian-tc://<vault>/<path>`, with every
//! path segment percent-encoded. `resources/list` pages through `list_notes` (so the folder
//! ACL and the signed, caller-bound cursor are the same as the tool's), one vault after
//! another; its cursor is `<vault>/<list_notes cursor>`. `resources/read` checks the note's
//! size with a `stat()` before reading it, and refuses a note over
//! `governor.maxResponseBytes` with a plain `invalid_input` (JSON-RPC -32602) that counts
//! nothing and records no event: the governor's counter and `tc.governor.overflow` stay the
//! tool-dispatch stage's.

use rmcp::ErrorData;
use rmcp::model::{ListResourcesResult, ReadResourceResult, Resource, ResourceContents};
use serde_json::{Value, json};
use tc_notes::paging_tools::{self, ListNotesArgs, PagingContext};
use tc_tools::CallerContext;
use tc_tools::PageLimits;
use tc_vault::acl::AclOp;
use tc_vault::path::VaultPath;

use crate::auth::Caller;
use crate::server::ServerCore;

/// The URI scheme of a note.
pub const SCHEME: &str = "obsidian-tc://";
/// The MIME type of a note.
pub const MIME: &str = "text/markdown";
/// The byte budget of one `resources/list` page (a listing has no reason to approach the
/// tool cap, and smaller pages keep a client responsive).
const LIST_PAGE_BYTES: usize = 64 * 1024;

/// The URI of `path` in `vault`.
pub fn note_uri(vault: &str, path: &str) -> String {
    let segments: Vec<String> = path.split('/').map(percent_encode).collect();
    format!("{SCHEME}{}/{}", percent_encode(vault), segments.join("/"))
}

/// `(vault, path)` of a note URI, or None when it is not one.
pub fn parse_note_uri(uri: &str) -> Option<(String, String)> {
    let rest = uri.strip_prefix(SCHEME)?;
    let (vault, path) = rest.split_once('/')?;
    let vault = percent_decode(vault)?;
    let segments: Option<Vec<String>> = path.split('/').map(percent_decode).collect();
    let path = segments?.join("/");
    (!vault.is_empty() && !path.is_empty()).then_some((vault, path))
}

fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    // A segment that decodes to '/' would smuggle a separator past the path checks.
    let decoded = String::from_utf8(out).ok()?;
    (!decoded.contains('/')).then_some(decoded)
}

fn caller_context(caller: &Caller) -> CallerContext {
    CallerContext {
        id: caller.id.clone(),
        scopes: caller.scopes.clone(),
        only_vault: caller.vault.clone(),
    }
}

fn invalid(message: impl Into<String>, data: Value) -> ErrorData {
    ErrorData::invalid_params(message.into(), Some(data))
}

impl ServerCore {
    // r[impl resource.notes]
    /// One page of `resources/list` for `caller`.
    pub fn list_resources(
        &self,
        caller: &Caller,
        cursor: Option<&str>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let vaults: Vec<&String> = self
            .vault_ids
            .iter()
            .filter(|id| caller.may_use_vault(id))
            .collect();
        if !caller.scopes.has("read:notes") || vaults.is_empty() {
            return Ok(ListResourcesResult::with_all_items(Vec::new()));
        }
        let (vault, inner) = match cursor {
            None => (vaults[0].clone(), None),
            Some(cursor) => {
                let (vault, inner) = cursor.split_once('/').ok_or_else(|| {
                    invalid(
                        "the cursor is not one this server issued",
                        json!({"reason": "invalid"}),
                    )
                })?;
                if !vaults.iter().any(|v| *v == vault) {
                    return Err(invalid(
                        "the cursor is not one this server issued",
                        json!({"reason": "invalid"}),
                    ));
                }
                (
                    vault.to_owned(),
                    (!inner.is_empty()).then(|| inner.to_owned()),
                )
            }
        };
        let binding = self
            .pipeline
            .vault(&vault)
            .ok_or_else(|| ErrorData::internal_error("binding the vault", None))?;
        let ctx = PagingContext {
            vault: &binding.vault,
            acl: &binding.acl,
            codec: &self.cursors,
            clock: self.clock.as_ref(),
            limits: PageLimits::new(LIST_PAGE_BYTES),
        };
        let args = ListNotesArgs {
            cursor: inner,
            ..ListNotesArgs::default()
        };
        let caller_cx = caller_context(caller);
        let page = paging_tools::list_notes(&ctx, &caller_cx.id, &caller_cx.scopes, &args)
            .map_err(|e| invalid(e.to_string(), e.details()))?;
        let parsed: Value = serde_json::from_str(&page.json)
            .map_err(|_| ErrorData::internal_error("reading back the listing", None))?;
        let resources = parsed
            .get("notes")
            .and_then(Value::as_array)
            .map(|notes| {
                notes
                    .iter()
                    .filter_map(|note| {
                        let path = note.get("path")?.as_str()?;
                        let name = path.rsplit('/').next().unwrap_or(path);
                        let mut resource = Resource::new(note_uri(&vault, path), name);
                        resource.title = Some(path.to_owned());
                        resource.mime_type = Some(MIME.to_owned());
                        resource.size = note.get("size").and_then(Value::as_u64);
                        Some(resource)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let next_cursor = match page.next_cursor {
            Some(next) => Some(format!("{vault}/{next}")),
            None => vaults
                .iter()
                .position(|v| **v == vault)
                .and_then(|i| vaults.get(i + 1))
                .map(|next_vault| format!("{next_vault}/")),
        };
        let mut result = ListResourcesResult::with_all_items(resources);
        result.next_cursor = next_cursor;
        Ok(result)
    }

    // r[impl resource.ceiling]
    // r[impl resource.stat]
    // r[impl resource.refusal]
    // r[impl resource.not-counted]
    /// `resources/read` of one note, refused by a stat() when it is over the cap.
    pub fn read_resource(
        &self,
        caller: &Caller,
        uri: &str,
    ) -> Result<ReadResourceResult, ErrorData> {
        let (vault_id, raw_path) = parse_note_uri(uri).ok_or_else(|| {
            invalid(
                format!(
                    "{uri:?} is not a note resource of this server (obsidian-tc://<vault>/<path>)"
                ),
                json!({"reason": "invalid_uri", "uri": uri}),
            )
        })?;
        let caller_cx = caller_context(caller);
        if !caller.scopes.has("read:notes") {
            return Err(invalid(
                "this caller lacks the scope read:notes",
                json!({"scope": "read:notes"}),
            ));
        }
        let binding = self
            .pipeline
            .bind_vault(&caller_cx, Some(&vault_id))
            .map_err(|e| invalid(e.message.clone(), e.to_structured()))?;
        let path = VaultPath::parse(&raw_path).map_err(|e| invalid(e.to_string(), e.details()))?;
        // Judged at the spelling and where a link on the path leads (spec
        // vault.path.links-judged-at-target).
        binding
            .acl
            .check_at(binding.vault.root(), AclOp::Read, &path, &caller_cx.scopes)
            .map_err(|denied| {
                invalid(
                    denied.to_string(),
                    json!({"path": denied.path, "access": "read"}),
                )
            })?;
        let limit = self.governor.limit();
        let stat = binding
            .vault
            .stat(&path)
            .map_err(|e| ErrorData::resource_not_found(e.to_string(), Some(e.details())))?;
        if !self.governor.fits(stat.size) {
            return Err(invalid(
                format!(
                    "the note is {} bytes, over the response limit of {limit} bytes \
                     (governor.maxResponseBytes); read it in parts with read_notes instead",
                    stat.size
                ),
                json!({"reason": "too_large", "size": stat.size, "limit": limit, "code": "invalid_input"}),
            ));
        }
        let content = binding
            .vault
            .read_limited(&path, limit as u64)
            .map_err(|e| invalid(e.to_string(), e.details()))?;
        let text = String::from_utf8(content.bytes)
            .map_err(|_| invalid("the note is not UTF-8 text", json!({"reason": "not_utf8"})))?;
        let contents = ResourceContents::TextResourceContents {
            uri: uri.to_owned(),
            mime_type: Some(MIME.to_owned()),
            text,
            meta: None,
        };
        Ok(ReadResourceResult::new(vec![contents]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // r[verify resource.notes]
    #[test]
    fn uris_round_trip_with_encoded_segments() {
        let uri = note_uri("main", "a folder/ü#?.md");
        assert_eq!(uri, "obsidian-tc://main/a%20folder/%C3%BC%23%3F.md");
        assert_eq!(
            parse_note_uri(&uri),
            Some(("main".to_owned(), "a folder/ü#?.md".to_owned()))
        );
        assert_eq!(parse_note_uri("obsidian-tc://main/a%2Fb.md"), None);
        assert_eq!(parse_note_uri("file:///x.md"), None);
        assert_eq!(parse_note_uri("obsidian-tc://main/%zz.md"), None);
        assert_eq!(parse_note_uri("obsidian-tc://main/"), None);
    }
}
