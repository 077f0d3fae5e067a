//! The definitions of the standard tools: schemas (each default stated), truthful
//! annotations, scopes and confirmation declarations (CONTRACT.md §3; spec/tools.md
//! `tools.schema`, `tools.annotations`, `tools.vault-arg`, `tools.elicit-token-arg`;
//! spec/drift.md `drift.targets-declared`, `drift.bind.*`).

use std::sync::Arc;

use serde_json::{Map, Value, json};
use tc_gate::ConfirmationTargets;

use super::links::{PruneHubLinks, RewriteLink};
use super::notes::{
    CommitWikiPage, CopyNote, DeleteNote, MoveNote, RestoreNote, UpdateFrontmatter, UpdateTask,
    WriteNote,
};
use super::{Annotations, RequiredScope, ToolDef, ToolHandler};

/// An object schema with the common `vault` argument, and `elicit_token` for a tool that
/// can be gated.
pub(crate) fn object_schema(properties: Value, required: &[&str], gated: bool) -> Value {
    let mut props = match properties {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    props.insert(
        "vault".into(),
        json!({"type": "string", "description": "The id of a configured vault; may be omitted when one vault is served."}),
    );
    if gated {
        props.insert(
            "elicit_token".into(),
            json!({"type": "string", "description": "A confirmation token minted by `obsidian-tc elicit` for this exact call. Only a human operator can mint one."}),
        );
    }
    json!({
        "type": "object",
        "properties": Value::Object(props),
        "required": required,
        "additionalProperties": false,
    })
}

fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn note_path(description: &str) -> Value {
    json!({"type": "string", "minLength": 1, "description": description})
}

fn flag(default: bool, description: &str) -> Value {
    json!({"type": "boolean", "default": default, "description": description})
}

const fn writes(destructive: bool, idempotent: bool) -> Annotations {
    Annotations {
        read_only_hint: false,
        destructive_hint: destructive,
        idempotent_hint: idempotent,
        open_world_hint: false,
    }
}

fn gated_def(
    name: &str,
    description: &str,
    input_schema: Value,
    annotations: Annotations,
    confirmation: ConfirmationTargets,
    handler: Arc<dyn ToolHandler>,
) -> ToolDef {
    ToolDef {
        name: name.to_owned(),
        description: description.to_owned(),
        input_schema,
        annotations,
        scope: RequiredScope::WriteNotes,
        changes_notes: true,
        gated: true,
        confirmation: Some(confirmation),
        checks_confirmation_in_handler: false,
        handler,
    }
}

const PREV_HASH: &str = "The note's content_hash as last read; the call is refused with concurrent_modification if the note changed since.";

/// Every standard tool this module defines, in the order `tools/list` shows them.
pub(crate) fn standard_defs() -> Vec<ToolDef> {
    vec![
        gated_def(
            "write_note",
            "Write a note. mode: overwrite (default) replaces it, append/prepend add to it, create refuses if it exists. Creates missing folders. Replacing a note that is not empty needs the human's confirmation.",
            object_schema(
                json!({
                    "path": note_path("Vault-relative path of the note, ending in .md."),
                    "content": string("The text to write."),
                    "mode": {"type": "string", "enum": ["overwrite", "append", "prepend", "create"], "default": "overwrite", "description": "How the content is written."},
                    "prev_hash": string(PREV_HASH),
                }),
                &["path", "content"],
                true,
            ),
            writes(true, false),
            ConfirmationTargets::PathAcl,
            Arc::new(WriteNote),
        ),
        gated_def(
            "move_note",
            "Move or rename a note, updating links to it across the vault (update_backlinks). Moving to another folder, or over an existing note, needs the human's confirmation.",
            object_schema(
                json!({
                    "from": note_path("The note to move."),
                    "to": note_path("Its new path, ending in .md."),
                    "overwrite": flag(false, "Replace a note already at `to`."),
                    "update_backlinks": flag(true, "Rewrite links to the moved note across the vault."),
                }),
                &["from", "to"],
                true,
            ),
            writes(true, false),
            ConfirmationTargets::PathAcl,
            Arc::new(MoveNote),
        ),
        gated_def(
            "copy_note",
            "Copy a note. Copying over an existing note (overwrite) needs the human's confirmation.",
            object_schema(
                json!({
                    "from": note_path("The note to copy."),
                    "to": note_path("The path of the copy, ending in .md."),
                    "overwrite": flag(false, "Replace a note already at `to`."),
                }),
                &["from", "to"],
                true,
            ),
            writes(true, true),
            ConfirmationTargets::PathAcl,
            Arc::new(CopyNote),
        ),
        gated_def(
            "delete_note",
            "Delete a note. Unless permanent, it goes to a snapshot restore_note can bring back. Always needs the human's confirmation.",
            object_schema(
                json!({
                    "path": note_path("The note to delete."),
                    "permanent": flag(false, "Delete without keeping a restorable snapshot."),
                }),
                &["path"],
                true,
            ),
            writes(true, true),
            ConfirmationTargets::PathAcl,
            Arc::new(DeleteNote),
        ),
        gated_def(
            "restore_note",
            "Restore a deleted note from its snapshot (the latest when snapshot_id is absent). Refused if a note is at the path. Always needs the human's confirmation.",
            object_schema(
                json!({
                    "path": note_path("The path the note was deleted from."),
                    "snapshot_id": string("The snapshot to restore; the latest snapshot of the path when absent."),
                }),
                &["path"],
                true,
            ),
            writes(false, true),
            ConfirmationTargets::Custom,
            Arc::new(RestoreNote),
        ),
        gated_def(
            "update_frontmatter",
            "Edit a note's YAML frontmatter: merge `data` into it, replace it with `data`, or remove `keys`. replace needs the human's confirmation.",
            object_schema(
                json!({
                    "path": note_path("The note to edit."),
                    "operation": {"type": "string", "enum": ["merge", "replace", "remove"], "description": "merge and replace take data, remove takes keys."},
                    "data": {"type": "object", "description": "Keys and values to merge or to replace the frontmatter with."},
                    "keys": {"type": "array", "items": {"type": "string"}, "description": "Keys to remove."},
                }),
                &["path", "operation"],
                true,
            ),
            writes(true, true),
            ConfirmationTargets::PathAcl,
            Arc::new(UpdateFrontmatter),
        ),
        {
            let mut def = gated_def(
                "update_task",
                "Set the status and/or text of a Tasks-plugin task line (line is 1-based). Reopening a task marked done (✅ date) more than 7 days ago needs the human's confirmation.",
                object_schema(
                    json!({
                        "path": note_path("The note holding the task."),
                        "line": {"type": "integer", "minimum": 1, "description": "The 1-based line number of the task."},
                        "status": {"type": "string", "enum": ["todo", "done", "in_progress", "cancelled"], "description": "The new status."},
                        "text": string("The new description of the task."),
                    }),
                    &["path", "line"],
                    true,
                ),
                writes(true, true),
                ConfirmationTargets::PathAcl,
                Arc::new(UpdateTask),
            );
            def.checks_confirmation_in_handler = true;
            def
        },
        gated_def(
            "rewrite_link",
            "Rewrite wikilinks and embeds that point at from_target so they point at to_target, in folder (the whole vault when absent). dry_run (default true) only reports; applying needs the human's confirmation.",
            object_schema(
                json!({
                    "from_target": {"type": "string", "minLength": 1, "description": "The link target to replace (a note name or path)."},
                    "to_target": {"type": "string", "minLength": 1, "description": "The new link target."},
                    "folder": string("Limit the rewrite to this folder; the whole vault when absent."),
                    "include_embeds": flag(true, "Rewrite ![[embeds]] too."),
                    "dry_run": flag(true, "Only report what would change."),
                }),
                &["from_target", "to_target"],
                true,
            ),
            writes(true, true),
            ConfirmationTargets::Custom,
            Arc::new(RewriteLink),
        ),
        gated_def(
            "prune_hub_links",
            "Remove from a hub note the links that resolve to no note. dry_run (default true) only reports; removing at least one link needs the human's confirmation.",
            object_schema(
                json!({
                    "path": note_path("The hub note."),
                    "prev_hash": string(PREV_HASH),
                    "dry_run": flag(true, "Only report the links that would go."),
                }),
                &["path"],
                true,
            ),
            writes(true, true),
            ConfirmationTargets::PathAcl,
            Arc::new(PruneHubLinks),
        ),
        gated_def(
            "commit_wiki_page",
            "Write a generated wiki page and seal it. Overwriting a page a person has edited since it was sealed (or a note that was never sealed) needs the human's confirmation.",
            object_schema(
                json!({
                    "path": note_path("The page, ending in .md."),
                    "content": string("The generated page."),
                }),
                &["path", "content"],
                true,
            ),
            writes(true, true),
            ConfirmationTargets::Custom,
            Arc::new(CommitWikiPage),
        ),
    ]
}
