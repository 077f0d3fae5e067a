//! What a killed process leaves is finished or dropped when the server starts again, and the
//! start says so (spec/vault.md `vault.move.recovered`; spec/events.md `events.recovered`).

mod mcp_support;

use mcp_support::*;
use serde_json::json;
use tc_gate::EventName;

fn hash(text: &str) -> String {
    tc_vault::content_hash(text.as_bytes())
}

fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

/// Where the server keeps vault `vault`'s move journal.
fn journal(h: &Harness) -> std::path::PathBuf {
    let snapshots = tc_vault::vault::snapshot_dir_for(&h.cache, &h.vault_id()).unwrap();
    let name = snapshots
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    snapshots
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("move-journal")
        .join(format!("{name}.json"))
}

// r[verify vault.move.recovered]
// r[verify events.recovered]
#[test]
fn a_move_killed_between_its_rename_and_its_link_rewrites_is_finished_at_the_next_start() {
    let h = Harness::new();
    // The state a kill leaves: the note moved, one of its two backlinks rewritten.
    h.write("done/a.md", "the note\n");
    h.write("x.md", "see [[done/a]]\n");
    h.write("y.md", "and [[a]] too\n");
    let entry = json!({
        "from": "inbox/a.md",
        "to": "done/a.md",
        "source_hash": hash("the note\n"),
        "rewrites": [
            {"path": "x.md", "expected_hash": hash("see [[a]]\n"),
             "content": hex("see [[done/a]]\n")},
            {"path": "y.md", "expected_hash": hash("and [[a]] too\n"),
             "content": hex("and [[done/a]] too\n")},
        ],
    });
    let file = journal(&h);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, entry.to_string()).unwrap();

    // The server starts again over the same vault and cache.
    let restarted = h.sibling(|_| {}, false);
    assert_eq!(h.read("y.md").unwrap(), "and [[done/a]] too\n");
    assert_eq!(h.read("x.md").unwrap(), "see [[done/a]]\n");
    assert!(!file.exists(), "the journal is gone once acted on");
    let events = restarted.gate().events(0, 1000).unwrap();
    let recovered: Vec<_> = events
        .iter()
        .filter(|e| e.name == EventName::Recovered)
        .collect();
    assert_eq!(recovered.len(), 1, "{events:?}");
    let event = recovered[0];
    assert_eq!(event.vault.as_deref(), Some("vault"));
    assert_eq!(event.tool.as_deref(), Some("move_note"));
    let detail = event.detail.to_string();
    assert!(detail.contains("\"rewritten\":[\"y.md\"]"), "{detail}");
    assert!(detail.contains("\"left\":[\"x.md\"]"), "{detail}");

    // A third start finds nothing to do and records nothing more.
    let again = h.sibling(|_| {}, false);
    let count = again
        .gate()
        .events(0, 1000)
        .unwrap()
        .iter()
        .filter(|e| e.name == EventName::Recovered)
        .count();
    assert_eq!(count, 1);
}
