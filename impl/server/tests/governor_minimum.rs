//! `governor.maxResponseBytes` at its documented minimum: `read_notes` pages a vault with a
//! 4,096-byte path, long walked paths and a note over the cap without ever answering
//! `overflow` (spec `config.governor.floor`, `paging.read-notes.no-overflow`).

mod mcp_support;

use mcp_support::{Harness, Reply, call, connect, legacy, success};
use serde_json::{Value, json};
use tc_server::config::{Config, MIN_MAX_RESPONSE_BYTES};

/// A note path of exactly `len` bytes made of `fill` (a character JSON escapes, so the page
/// costs the most), in segments of at most 255 bytes.
fn long_path(len: usize, fill: char) -> String {
    let mut path = String::new();
    let mut segment = 0;
    while path.len() < len - 3 {
        let need = len - 3 - path.len();
        if segment + fill.len_utf8() + 3 > 255 && need > 1 {
            path.push('/');
            segment = 0;
        } else if fill.len_utf8() <= need {
            path.push(fill);
            segment += fill.len_utf8();
        } else {
            path.push('a');
            segment += 1;
        }
    }
    path.push_str(".md");
    assert_eq!(path.len(), len);
    path
}

/// Every page of `arguments`, asserting none is a failure and each fits the cap as sent; the
/// counts of notes and errors, and the errors.
async fn walk(h: &Harness, cap: u64, arguments: Value) -> (usize, usize, Vec<Value>) {
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let mut cursor: Option<String> = None;
    let (mut notes, mut errors) = (0, 0);
    let mut entries = Vec::new();
    for _ in 0..10_000 {
        let mut args = arguments.clone();
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let result = call(&client, "read_notes", args).await;
        let sent = serde_json::to_string(&json!({
            "jsonrpc": "2.0",
            "id": 1_000_000,
            "result": result,
        }))
        .unwrap();
        assert!(
            sent.len() as u64 <= cap,
            "a page of {} bytes as sent",
            sent.len()
        );
        let page = success(&result);
        notes += page["notes"].as_array().unwrap().len();
        errors += page["errors"].as_array().unwrap().len();
        entries.extend(page["errors"].as_array().unwrap().iter().cloned());
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return (notes, errors, entries),
        }
    }
    panic!("the walk did not end");
}

// r[verify config.governor.floor]
// r[verify paging.read-notes.no-overflow]
#[tokio::test]
async fn at_the_minimum_cap_read_notes_never_overflows() {
    let cap = MIN_MAX_RESPONSE_BYTES;
    let h = Harness::with(|c: &mut Config| c.governor.max_response_bytes = cap);
    // Explicit paths of the longest accepted length, made of quotes, none of them present:
    // each is an `errors` entry that names the path in `path`, `message` and `details`.
    let quotes = long_path(4096, '"');
    let mixed = long_path(4096, 'é');
    let (notes, errors, entries) = walk(&h, cap, json!({"paths": [quotes, mixed]})).await;
    assert_eq!((notes, errors), (0, 2));
    // r[verify paging.errors.path-shortened]
    for entry in &entries {
        assert_eq!(entry["path_bytes"], 4096, "{entry}");
        let shown = entry["path"].as_str().unwrap();
        assert!(shown.len() <= 160 && shown.contains('…'), "{shown}");
        assert!(entry["message"].as_str().unwrap().len() <= 203, "{entry}");
    }
    // A folder walk: a deep note of quote-filled segments (as deep as the file system lets a
    // temp dir hold), a note over the cap, and a few ordinary notes.
    let depth = 4000 - h.vault.as_os_str().len();
    let deep = format!("w/{}", long_path(depth - 2, '"'));
    h.write(&deep, "deep \"note\"\n");
    h.write("w/big.md", &"\"\\\n".repeat(cap as usize));
    for i in 0..5 {
        h.write(&format!("w/n{i}.md"), &"say \"hi\"\n".repeat(100));
    }
    let (notes, errors, entries) = walk(&h, cap, json!({"folder": "w"})).await;
    // The deep note's path alone is over this cap as sent (escaped in the result and again in
    // its text copy): it is reported, shortened, as too large, and the walk goes on.
    assert_eq!((notes, errors), (5, 2));
    let deep_entry = entries
        .iter()
        .find(|e| e["path_bytes"].is_u64())
        .expect("the deep note is reported");
    assert_eq!(deep_entry["code"], "too_large", "{deep_entry}");
    assert_eq!(h.core.governor().truncations(), 0);
}
