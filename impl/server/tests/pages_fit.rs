//! With default settings every page of a paged tool fits what an agent's client shows inline
//! (spec/config.md `config.governor.page-bytes`): Claude Code shows a result inline up to
//! 50,000 characters and caps results at 25,000 tokens.

mod mcp_support;

use std::collections::BTreeSet;

use mcp_support::*;
use serde_json::{Value, json};

/// A note of about 1.5 KB.
fn note_text(n: usize) -> String {
    format!(
        "---\ntags: [walk]\n---\n# Note {n}\n\n{}",
        "An ordinary line of prose in a realistic note, searchable by the word okapi.\n".repeat(20)
    )
}

/// Every page of `tool` with `arguments`, checking each as sent; the items of `field` by
/// `key`.
async fn walk(
    client: &Client,
    tool: &str,
    arguments: Value,
    field: &str,
    key: &str,
) -> Vec<String> {
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..1_000 {
        let mut args = arguments.clone();
        if let Some(cursor) = &cursor {
            args["cursor"] = json!(cursor);
        }
        let result = call(client, tool, args).await;
        let sent = serde_json::to_string(&result).unwrap();
        assert!(
            sent.len() <= 40_000,
            "{tool}: a page of {} bytes as sent",
            sent.len()
        );
        assert!(sent.chars().count() < 50_000);
        let page = success(&result);
        for item in page[field].as_array().unwrap() {
            seen.push(item[key].as_str().unwrap().to_owned());
        }
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return seen,
        }
    }
    panic!("{tool}: the walk did not end");
}

// r[verify config.governor.page-bytes]
#[tokio::test]
async fn every_page_of_a_walk_fits_a_clients_inline_limit_by_default() {
    let h = Harness::new();
    for n in 0..300 {
        h.write(&format!("notes/{n:03}.md"), &note_text(n));
    }
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let read = walk(
        &client,
        "read_notes",
        json!({"folder": "notes"}),
        "notes",
        "path",
    )
    .await;
    let unique: BTreeSet<&String> = read.iter().collect();
    assert_eq!(read.len(), 300, "every note once");
    assert_eq!(unique.len(), 300);
    let listed = walk(
        &client,
        "list_notes",
        json!({"folder": "notes"}),
        "notes",
        "path",
    )
    .await;
    assert_eq!(listed.len(), 300);
    let found = walk(
        &client,
        "search_notes",
        json!({"query": "okapi", "limit": 100}),
        "results",
        "path",
    )
    .await;
    assert_eq!(found.len(), 300);
}
