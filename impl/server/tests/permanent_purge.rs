//! Permanent means gone: after a permanent `delete_note`, a permanent `delete_entity` or a
//! `reset_vault_cache`, no byte of the text it removed stays anywhere under the cache
//! directory, cache.db's write-ahead log and free pages included (spec/vault.md
//! `vault.delete.permanent-gone`, spec/memory.md `memory.delete.permanent-gone`,
//! spec/index.md `index.reset.gone`).

mod mcp_support;

use std::path::Path;

use mcp_support::*;
use serde_json::{Value, json};

/// The files under `dir` holding `marker`, by path.
fn holding(dir: &Path, marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path)
                && bytes
                    .windows(marker.len())
                    .any(|window| window == marker.as_bytes())
            {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

/// Runs a gated call through the CLI-token route.
async fn approved(h: &Harness, client: &Client, tool: &str, arguments: Value) -> Value {
    let refusal = failure(&call(client, tool, arguments.clone()).await);
    assert_eq!(refusal["code"], "elicit_required", "{refusal}");
    let token = h.mint(&refusal, "stdio");
    let mut with_token = arguments;
    with_token["elicit_token"] = json!(token);
    success(&call(client, tool, with_token).await)
}

async fn found(client: &Client, word: &str) -> usize {
    success(&call(client, "search_notes", json!({"query": word})).await)["results"]
        .as_array()
        .unwrap()
        .len()
}

// r[verify vault.delete.permanent-gone]
#[tokio::test]
async fn a_permanent_delete_leaves_no_copy_of_the_note_in_the_cache() {
    const MARKER: &str = "zyxwvutsrqponmarkerone";
    let h = Harness::new();
    h.write("keep.md", "# Keep\n\nordinary words stay\n");
    h.write(
        "secret.md",
        &format!("# Secret\n\nthe code word is {MARKER} and more\n"),
    );
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    assert_eq!(found(&client, MARKER).await, 1, "indexed");
    assert!(!holding(&h.cache, MARKER).is_empty(), "the test can see it");
    let done = approved(
        &h,
        &client,
        "delete_note",
        json!({"path": "secret.md", "permanent": true}),
    )
    .await;
    assert_eq!(done["permanent"], true);
    assert_eq!(holding(&h.cache, MARKER), Vec::<String>::new());
    assert_eq!(found(&client, MARKER).await, 0);
    assert_eq!(
        found(&client, "ordinary").await,
        1,
        "the rest of the index stays"
    );
}

// r[verify index.reset.gone]
#[tokio::test]
async fn a_reset_leaves_no_copy_of_the_chunks_it_cleared() {
    const MARKER: &str = "zyxwvutsrqponmarkertwo";
    let h = Harness::new();
    h.write("note.md", &format!("# Note\n\nsays {MARKER}\n"));
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    assert_eq!(found(&client, MARKER).await, 1);
    assert!(!holding(&h.cache, MARKER).is_empty(), "the test can see it");
    // The note no longer says it, so the watcher's reconciliation, which may run before or
    // after the reset, never writes it again: whatever copy is left is the reset's to clear
    // (the rows if the reset came first, the write-ahead log's old pages either way).
    h.write("note.md", "# Note\n\nsays nothing now\n");
    let done = approved(
        &h,
        &client,
        "reset_vault_cache",
        json!({"include": {"chunks": true, "embeddings": true, "captures": true}}),
    )
    .await;
    assert!(done["chunks_dropped"].as_u64().unwrap() >= 1, "{done}");
    assert_eq!(holding(&h.cache, MARKER), Vec::<String>::new());
}

// r[verify memory.delete.permanent-gone]
#[tokio::test]
async fn a_permanent_entity_delete_leaves_no_copy_of_its_observations() {
    const MARKER: &str = "zyxwvutsrqponmarkerthree";
    let h = Harness::new();
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let entity = success(
        &call(
            &client,
            "upsert_entity",
            json!({"type": "person", "name": "Ada", "observations": [format!("knows {MARKER}")]}),
        )
        .await,
    );
    let id = entity["entity"]["id"].clone();
    assert_eq!(
        found(&client, MARKER).await,
        1,
        "the entity's note is indexed"
    );
    approved(
        &h,
        &client,
        "delete_entity",
        json!({"entity_id": id, "permanent": true}),
    )
    .await;
    assert_eq!(holding(&h.cache, MARKER), Vec::<String>::new());
    assert_eq!(holding(&h.vault, MARKER), Vec::<String>::new());
}

// r[verify gate.raise.forget-deleted]
/// A request raised before a permanent delete (a rewrite of the note, whose summary shows the
/// diff) keeps its place, but its preview of the deleted text goes with the note: `pending`
/// shows why, and no byte of the text stays under the cache directory.
#[tokio::test]
async fn a_pending_preview_of_a_permanently_deleted_note_is_forgotten() {
    const MARKER: &str = "zyxwvutsrqponmarkerfour";
    let h = Harness::new();
    h.write(
        "secret.md",
        &format!("# Secret\n\nthe code word is {MARKER}\n"),
    );
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let rewrite = failure(
        &call(
            &client,
            "write_note",
            json!({"path": "secret.md", "content": "# Secret\n\nnothing here now\n", "mode": "overwrite"}),
        )
        .await,
    );
    assert_eq!(rewrite["code"], "elicit_required", "{rewrite}");
    let pending = h.core.gate().pending(None, None, 10).unwrap();
    assert!(
        pending.iter().any(|r| r.summary.contains(MARKER)),
        "the diff quotes the note: {pending:?}"
    );
    approved(
        &h,
        &client,
        "delete_note",
        json!({"path": "secret.md", "permanent": true}),
    )
    .await;
    let pending = h.core.gate().pending(None, None, 10).unwrap();
    let kept = pending
        .iter()
        .find(|r| r.call.tool == "write_note")
        .expect("the request keeps its place");
    assert!(
        kept.summary.contains("deleted permanently"),
        "{}",
        kept.summary
    );
    assert_eq!(holding(&h.cache, MARKER), Vec::<String>::new());
}
