//! What the tool list costs an agent's context, and whether the lean facade finds what an agent
//! asks for in its own words (spec/tools.md `tools.list.budget`, `tools.schema.strict`;
//! spec/facade.md `facade.find.stemmed`).

mod mcp_support;

use mcp_support::*;
use serde_json::{Value, json};
use tc_server::config::Config;
use tc_server::facade::FacadeMode;

/// The most bytes the flat `tools/list` may take, every tool of the product served: about
/// 25,000 tokens, where Claude Code starts warning about the tools' share of the context.
const LIST_BUDGET: usize = 100_000;
/// The most bytes one tool may take on average.
const PER_TOOL_BUDGET: usize = 1_200;

fn compact(value: &impl serde::Serialize) -> usize {
    serde_json::to_vec(value).unwrap().len()
}

/// Every `type` in `schema` that lists `null`, by JSON pointer.
fn nullable_types(schema: &Value, at: String, found: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get("type")
                && types.iter().any(|t| t == "null")
            {
                found.push(at.clone());
            }
            for (key, inner) in map {
                nullable_types(inner, format!("{at}/{key}"), found);
            }
        }
        Value::Array(items) => {
            for (i, inner) in items.iter().enumerate() {
                nullable_types(inner, format!("{at}/{i}"), found);
            }
        }
        _ => {}
    }
}

// r[verify tools.list.budget]
// r[verify tools.schema.strict]
#[tokio::test]
async fn the_flat_tool_list_fits_an_agents_budget_and_passes_a_strict_check() {
    let h = Harness::new();
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(
        tools.len(),
        h.core.registry().iter().count(),
        "flat mode lists every tool"
    );
    let total = compact(&json!({ "tools": tools }));
    let average = total / tools.len();
    let mut sizes: Vec<(usize, &str)> = tools
        .iter()
        .map(|tool| (compact(tool), tool.name.as_ref()))
        .collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    assert!(
        total < LIST_BUDGET && average < PER_TOOL_BUDGET,
        "tools/list is {total} bytes for {} tools ({average} a tool); the largest: {:?}",
        tools.len(),
        &sizes[..5]
    );
    let mut flagged = Vec::new();
    for tool in &tools {
        let name = tool.name.as_ref();
        nullable_types(
            &Value::Object((*tool.input_schema).clone()),
            format!("{name}/inputSchema"),
            &mut flagged,
        );
        if let Some(output) = &tool.output_schema {
            nullable_types(
                &Value::Object((**output).clone()),
                format!("{name}/outputSchema"),
                &mut flagged,
            );
        }
    }
    assert!(flagged.is_empty(), "nullable types: {flagged:?}");

    // r[verify tools.schema.objects]
    let mut bare = Vec::new();
    for tool in &tools {
        let name = tool.name.as_ref();
        bare_true(
            &Value::Object((*tool.input_schema).clone()),
            format!("{name}/inputSchema"),
            &mut bare,
        );
        if let Some(output) = &tool.output_schema {
            bare_true(
                &Value::Object((**output).clone()),
                format!("{name}/outputSchema"),
                &mut bare,
            );
        }
    }
    assert!(
        bare.is_empty(),
        "fields whose schema is a bare `true`: {bare:?}"
    );
}

/// Every field, item or value schema under `schema` that is a bare boolean, by JSON pointer.
fn bare_true(schema: &Value, at: String, found: &mut Vec<String>) {
    let Value::Object(map) = schema else { return };
    if let Some(Value::Object(properties)) = map.get("properties") {
        for (key, inner) in properties {
            if inner.is_boolean() {
                found.push(format!("{at}/properties/{key}"));
            }
            bare_true(inner, format!("{at}/properties/{key}"), found);
        }
    }
    if let Some(items) = map.get("items") {
        if items.is_boolean() {
            found.push(format!("{at}/items"));
        }
        bare_true(items, format!("{at}/items"), found);
    }
}

/// Task phrases as a person says them, with the tool that does the task.
const TASKS: &[(&str, &str)] = &[
    ("remove a note", "delete_note"),
    ("delete this note", "delete_note"),
    ("throw away the scratch note", "delete_note"),
    ("erase a page from my vault", "delete_note"),
    ("undo a delete", "restore_note"),
    ("bring back a note I deleted", "restore_note"),
    ("recover a removed note", "restore_note"),
    ("roll a note back to an earlier version", "restore_note"),
    ("see the earlier versions of a note", "list_snapshots"),
    ("read an old version of a note", "read_snapshot"),
    ("find text in my notes", "search_notes"),
    ("search the vault for a word", "search_notes"),
    ("which notes mention kubernetes", "search_notes"),
    ("look for notes similar in meaning", "search_notes"),
    ("read a note", "read_notes"),
    ("open the note and show me its content", "read_notes"),
    ("read every note in a folder", "read_notes"),
    ("list the notes in a folder", "list_notes"),
    ("browse the files of my vault", "list_notes"),
    ("what notes are in the projects directory", "list_notes"),
    ("write a new note", "write_note"),
    ("create a note", "write_note"),
    ("append a line to a note", "write_note"),
    ("overwrite a note with new text", "write_note"),
    ("edit the text of a note", "write_note"),
    ("rename a note", "move_note"),
    ("move a note to another folder", "move_note"),
    ("relocate a page into the archive", "move_note"),
    ("duplicate a note", "copy_note"),
    ("copy a note to a new path", "copy_note"),
    (
        "change a property in the yaml frontmatter",
        "update_frontmatter",
    ),
    ("set metadata fields of a note", "update_frontmatter"),
    ("mark a task as done", "update_task"),
    ("tick off a checkbox in a note", "update_task"),
    ("reopen a completed todo", "update_task"),
    ("rewrite links pointing to an old note", "rewrite_link"),
    ("update every wikilink to a renamed target", "rewrite_link"),
    ("remove dead links from a hub note", "prune_hub_links"),
    ("clean broken links out of an index page", "prune_hub_links"),
    ("save a generated wiki page", "commit_wiki_page"),
    ("jot down an idea for later", "capture_note"),
    ("capture a quick thought into the inbox", "capture_note"),
    ("show pending captures", "list_captures"),
    ("turn a capture into a note", "commit_capture"),
    ("rebuild the search index", "reset_vault_cache"),
    ("clear the vault cache", "reset_vault_cache"),
    ("remember a fact about a person", "upsert_entity"),
    ("add an observation to memory", "upsert_entity"),
    (
        "connect two entities with a relationship",
        "relate_entities",
    ),
    (
        "remove a relation between two entities",
        "unrelate_entities",
    ),
    ("get an entity from memory", "get_entity"),
    ("search people in my knowledge graph", "search_entities"),
    ("forget an entity", "delete_entity"),
    ("what changed in the git repository", "git_status"),
    ("show uncommitted changes", "git_status"),
    ("stage files for a commit", "git_stage"),
    ("commit the vault to git", "git_commit"),
    ("save a version of the vault in git history", "git_commit"),
    ("read the text of a scanned pdf", "ocr_bulk"),
    ("extract text from images with ocr", "ocr_bulk"),
    ("run an obsidian command palette command", "execute_command"),
    ("trigger a quickadd macro", "trigger_quickadd"),
    ("start recording a session", "start_session"),
    ("end the session", "end_session"),
    ("list my recorded sessions", "list_sessions"),
    ("replay a recorded session", "session_rerun"),
    (
        "is obsidian running and the plugin connected",
        "bridge_status",
    ),
    ("replace the text under a heading", "patch_note"),
    ("add a line to a section of a note", "patch_note"),
    ("find and replace a word in a note", "replace_in_note"),
    ("show the headings of a note", "get_note_outline"),
    ("does this file exist in the vault", "note_exists"),
    (
        "which notes have status done in their frontmatter",
        "find_notes_by_property",
    ),
    ("show the notes I changed recently", "recent_changes"),
    (
        "list the frontmatter properties my notes use",
        "list_properties",
    ),
    ("read today's daily note", "get_periodic_note"),
    (
        "get today's daily note, creating it if missing",
        "find_or_create_periodic_note",
    ),
    (
        "add a line to today's journal under Log",
        "append_to_periodic_note",
    ),
    (
        "start this week's weekly note from its template",
        "create_periodic_note",
    ),
    ("list my daily notes from last month", "list_periodic_notes"),
    ("make a new note from a template", "create_from_template"),
    ("which templates do I have", "list_templates"),
    ("show the cards on my canvas", "read_canvas"),
    ("add a card to a canvas and connect it", "update_canvas"),
    ("draw a diagram in excalidraw", "create_excalidraw"),
    (
        "read the shapes of an excalidraw drawing",
        "read_excalidraw",
    ),
    ("change the views of a base", "update_base"),
    ("bookmark this note", "add_bookmark"),
    ("show my bookmarks", "list_bookmarks"),
    ("save the current layout as a workspace", "save_workspace"),
];

// r[verify facade.find.name-coverage]
// r[verify facade.find.stemmed]
#[tokio::test]
async fn find_capability_puts_the_right_tool_in_its_top_three_for_nine_tasks_in_ten() {
    assert!(TASKS.len() >= 60);
    let h = Harness::with(|c: &mut Config| c.tool_facade.mode = FacadeMode::Lean);
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let mut misses = Vec::new();
    for (phrase, expected) in TASKS {
        assert!(
            h.core.registry().get(expected).is_some(),
            "{expected} is not a tool"
        );
        let found = success(
            &call(
                &client,
                "find_capability",
                json!({"query": phrase, "limit": 3}),
            )
            .await,
        );
        let names: Vec<&str> = found["capabilities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        if !names.contains(expected) {
            misses.push(format!("{phrase:?} -> {names:?}, not {expected}"));
        }
    }
    let hits = TASKS.len() - misses.len();
    assert!(
        hits * 10 >= TASKS.len() * 9,
        "{hits} of {} in the top 3; missed:\n{}",
        TASKS.len(),
        misses.join("\n")
    );
}
