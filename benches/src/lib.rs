//! tc-benches: shared fixtures for the criterion benchmarks.

pub mod vault_gen;

use serde_json::{Value, json};

/// A `read_notes`-shaped result of about `total_bytes` serialized bytes: notes of 2 KB
/// (the mean note size of the reference vault) with paths, frontmatter and hashes.
pub fn notes_result(total_bytes: usize) -> Value {
    const NOTE_BYTES: usize = 2_000;
    let body = "Lorem ipsum dolor sit amet, [[link]] #tag\n".repeat(NOTE_BYTES / 42);
    let mut notes = Vec::new();
    let mut size = 64;
    let mut index = 0usize;
    while size < total_bytes {
        let note = json!({
            "path": format!("notes/{:04}/note-{index:06}.md", index / 100),
            "content": body,
            "frontmatter": {"status": "draft", "index": index},
            "content_hash": format!("{:064x}", index),
        });
        size += note.to_string().len() + 1;
        notes.push(note);
        index += 1;
    }
    json!({"vault": "main", "notes": notes, "errors": [], "next_cursor": null})
}
