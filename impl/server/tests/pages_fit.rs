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

// r[verify paging.alone-under-cap]
// r[verify paging.too-large.compared]
/// A note bigger than a page but within the response cap is served on a page of its own, by
/// a folder walk and by its path alike; one over the cap is too_large by both, with the
/// sizes that were compared.
#[tokio::test]
async fn a_note_over_a_page_but_under_the_cap_is_served_alone_by_every_route() {
    let h = Harness::new();
    let big = "A long line of a long note about okapis and their habits.\n".repeat(600);
    h.write("big/a.md", "small before\n");
    h.write("big/b.md", &big);
    h.write("big/c.md", "small after\n");
    h.write("big/huge.md", &"y".repeat(600_000));
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({"folder": "big"});
        if let Some(cursor) = &cursor {
            args["cursor"] = json!(cursor);
        }
        let result = call(&client, "read_notes", args).await;
        let sent = serde_json::to_string(&result).unwrap().len();
        let page = success(&result);
        let paths: Vec<String> = page["notes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["path"].as_str().unwrap().to_owned())
            .collect();
        pages.push((paths, page["errors"].clone(), sent));
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    let served: Vec<&String> = pages.iter().flat_map(|(p, _, _)| p).collect();
    assert_eq!(served, ["big/a.md", "big/b.md", "big/c.md"], "{pages:?}");
    let alone = pages
        .iter()
        .find(|(p, _, _)| p.contains(&"big/b.md".to_owned()))
        .unwrap();
    assert_eq!(alone.0.len(), 1, "the big note is alone on its page");
    assert!(alone.2 > 40_000 && alone.2 <= 1_000_000);
    let huge_error = pages
        .iter()
        .flat_map(|(_, e, _)| e.as_array().unwrap().clone())
        .find(|e| e["path"] == "big/huge.md")
        .expect("too_large for the note over the cap");
    assert_eq!(huge_error["code"], "too_large");
    // By its path: the same verdicts.
    let by_path = success(
        &call(
            &client,
            "read_notes",
            json!({"paths": ["big/b.md", "big/huge.md"]}),
        )
        .await,
    );
    assert_eq!(by_path["notes"][0]["path"], "big/b.md");
    let refused = success(&call(&client, "read_notes", json!({"paths": ["big/huge.md"]})).await);
    let error = &refused["errors"][0];
    assert_eq!(error["code"], "too_large");
    assert!(
        error["details"]["size"].as_u64().unwrap() > error["details"]["budget"].as_u64().unwrap(),
        "{error}"
    );
}

/// Every page of a walk of `tool` over `notes/`, each call's `max_bytes` from `budget(page
/// number)`; the pages as sent and the paths seen.
async fn walk_with(
    client: &Client,
    tool: &str,
    budget: impl Fn(usize) -> u64,
) -> (Vec<(usize, usize, u64)>, Vec<String>) {
    let mut pages = Vec::new();
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for n in 0..2_000 {
        let max = budget(n);
        let mut args = json!({"folder": "notes", "max_bytes": max});
        if let Some(cursor) = &cursor {
            args["cursor"] = json!(cursor);
        }
        let result = call(client, tool, args).await;
        let sent = serde_json::to_string(&result).unwrap().len();
        let page = success(&result);
        let items = page["notes"].as_array().unwrap();
        pages.push((sent, items.len(), max));
        seen.extend(items.iter().map(|i| i["path"].as_str().unwrap().to_owned()));
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return (pages, seen),
        }
    }
    panic!("{tool}: the walk with max_bytes did not end");
}

// r[verify paging.max-bytes]
/// `max_bytes` lowers one call's page budget, may change between pages of a walk, is held
/// to `governor.pageBytes` above it, and below 1,024 is refused; a budget smaller than one
/// note still makes progress (the note alone on its page).
#[tokio::test]
async fn max_bytes_lowers_a_page_and_a_walk_still_sees_every_note_once() {
    let h = Harness::new();
    for n in 0..60 {
        h.write(&format!("notes/{n:03}.md"), &note_text(n));
    }
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    for (tool, even, odd) in [("read_notes", 8_000, 12_000), ("list_notes", 1_500, 2_500)] {
        // Alternating budgets within one walk: allowed, not request_mismatch.
        let (pages, seen) = walk_with(&client, tool, |n| if n % 2 == 0 { even } else { odd }).await;
        let unique: BTreeSet<&String> = seen.iter().collect();
        assert_eq!(
            (seen.len(), unique.len()),
            (60, 60),
            "{tool}: every note once"
        );
        for (sent, _, max) in &pages {
            assert!(
                *sent as u64 <= *max,
                "{tool}: a page of {sent} bytes over {max}"
            );
        }
        assert!(pages.len() > 3, "{tool}: the budget is honoured: {pages:?}");
        // A budget under one note: one note a page, still every note.
        let (tiny, seen) = walk_with(&client, tool, |_| 1_024).await;
        assert_eq!(seen.len(), 60, "{tool}: a tiny budget still progresses");
        assert!(
            tiny.iter().all(|(_, items, _)| *items >= 1),
            "{tool}: {tiny:?}"
        );
        // Above pageBytes: held to it.
        let (big, seen) = walk_with(&client, tool, |_| 900_000).await;
        assert_eq!(seen.len(), 60);
        assert!(
            big.iter().all(|(sent, _, _)| *sent <= 40_000),
            "{tool}: {big:?}"
        );
        let refused = failure(
            &call(
                &client,
                tool,
                json!({"folder": "notes", "max_bytes": 1_000}),
            )
            .await,
        );
        assert!(
            ["validation_error", "invalid_input"].contains(&refused["code"].as_str().unwrap()),
            "{refused}"
        );
    }
}

/// A walk of `tool` with `arguments`, `max_bytes` alternating between `low` and `high`:
/// every page within its budget unless it holds one item, the items of `field` by `key`.
async fn walk_lowered(
    client: &Client,
    tool: &str,
    arguments: Value,
    (field, key): (&str, &str),
    (low, high): (u64, u64),
) -> (usize, Vec<String>) {
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for n in 0..2_000 {
        let max = if n % 2 == 0 { low } else { high };
        let mut args = arguments.clone();
        args["max_bytes"] = json!(max);
        if let Some(cursor) = &cursor {
            args["cursor"] = json!(cursor);
        }
        let result = call(client, tool, args).await;
        let sent = serde_json::to_string(&result).unwrap().len();
        let page = success(&result);
        let items = page[field].as_array().unwrap();
        assert!(
            !items.is_empty() || page["next_cursor"].is_null(),
            "{tool}: no progress"
        );
        assert!(
            sent as u64 <= max || items.len() == 1,
            "{tool}: a page of {sent} bytes over max_bytes {max}"
        );
        seen.extend(items.iter().map(|i| i[key].to_string()));
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return (n + 1, seen),
        }
    }
    panic!("{tool}: the walk with max_bytes did not end");
}

// r[verify paging.max-bytes]
/// search_notes, list_captures, search_entities and list_sessions honour `max_bytes` too,
/// changed between pages of one walk, and see every item once.
#[tokio::test]
async fn every_paged_tool_honours_max_bytes() {
    let h = Harness::new();
    for n in 0..40 {
        h.write(&format!("notes/{n:03}.md"), &note_text(n));
    }
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let long = "an observation long enough to weigh on a page ".repeat(8);
    for n in 0..40 {
        success(
            &call(
                &client,
                "capture_note",
                json!({"content": format!("capture {n}: {long}")}),
            )
            .await,
        );
        success(
            &call(
                &client,
                "upsert_entity",
                json!({"type": "okapi", "name": format!("Okapi {n}"), "observations": [long]}),
            )
            .await,
        );
        let started = success(
            &call(
                &client,
                "start_session",
                json!({"label": format!("session {n} {}", &long[..100])}),
            )
            .await,
        );
        let id = started["session"]["session_id"].clone();
        success(&call(&client, "end_session", json!({"session_id": id})).await);
    }
    for (tool, args, item, bounds) in [
        (
            "search_notes",
            json!({"query": "okapi", "folder": "notes", "limit": 100}),
            ("results", "path"),
            (3_000, 5_000),
        ),
        (
            "list_captures",
            json!({}),
            ("captures", "capture_id"),
            (2_000, 3_000),
        ),
        (
            "search_entities",
            json!({"query": "okapi", "limit": 100}),
            ("entities", "id"),
            (2_000, 3_000),
        ),
        (
            "list_sessions",
            json!({}),
            ("sessions", "session_id"),
            (2_000, 3_000),
        ),
    ] {
        let (pages, seen) = walk_lowered(&client, tool, args.clone(), item, bounds).await;
        let unique: BTreeSet<&String> = seen.iter().collect();
        assert_eq!(unique.len(), seen.len(), "{tool}: every item once");
        assert_eq!(seen.len(), 40, "{tool}: every item");
        assert!(pages > 3, "{tool}: max_bytes is honoured ({pages} pages)");
        // The smallest budget still progresses.
        let (_, tiny) = walk_lowered(&client, tool, args, item, (1_024, 1_024)).await;
        assert_eq!(
            tiny.len(),
            40,
            "{tool}: a 1,024-byte budget still sees every item"
        );
    }
}

// r[verify config.governor.page-bytes]
/// Long paths (three segments of 200 bytes, quotes included) with default settings: every
/// page of read_notes and list_notes under 40,000 bytes as sent, every note once.
#[tokio::test]
async fn long_paths_walk_in_pages_that_fit_by_default() {
    let h = Harness::new();
    let segment = |n: usize, c: char| format!("{n:03}{}", c.to_string().repeat(197));
    let mut written = BTreeSet::new();
    for n in 0..150 {
        let path = format!(
            "notes/{}/{}/{}.md",
            segment(n, 'a'),
            segment(n, '"'),
            segment(n, 'é').chars().take(120).collect::<String>()
        );
        h.write(&path, &note_text(n));
        written.insert(path);
    }
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    for tool in ["read_notes", "list_notes"] {
        let seen = walk(&client, tool, json!({"folder": "notes"}), "notes", "path").await;
        let unique: BTreeSet<String> = seen.iter().cloned().collect();
        assert_eq!(seen.len(), 150, "{tool}: every note once");
        assert_eq!(unique, written, "{tool}");
    }
}

/// The one array of a page (its entries), each entry as its JSON text.
fn entries_of(page: &Value) -> Vec<String> {
    let arrays: Vec<&Vec<Value>> = page
        .as_object()
        .unwrap()
        .values()
        .filter_map(Value::as_array)
        .collect();
    assert_eq!(arrays.len(), 1, "one list of entries: {page}");
    arrays[0].iter().map(Value::to_string).collect()
}

/// A walk of `tool` with `arguments`, `max_bytes` from `budget(page number)` when given; the
/// pages' sizes as sent with their entry counts, and every entry.
async fn walk_entries(
    client: &Client,
    tool: &str,
    arguments: &Value,
    budget: Option<(u64, u64)>,
) -> (Vec<(usize, usize)>, Vec<String>) {
    let mut pages = Vec::new();
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for n in 0..2_000 {
        let mut args = arguments.clone();
        if let Some((low, high)) = budget {
            args["max_bytes"] = json!(if n % 2 == 0 { low } else { high });
        }
        if let Some(cursor) = &cursor {
            args["cursor"] = json!(cursor);
        }
        let result = call(client, tool, args).await;
        let sent = serde_json::to_string(&result).unwrap().len();
        let page = success(&result);
        let entries = entries_of(&page);
        if let Some((low, high)) = budget {
            let max = if n % 2 == 0 { low } else { high };
            assert!(
                sent as u64 <= max || entries.len() == 1,
                "{tool}: a page of {sent} bytes over max_bytes {max}"
            );
        }
        pages.push((sent, entries.len()));
        seen.extend(entries);
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return (pages, seen),
        }
    }
    panic!("{tool}: the walk did not end");
}

// r[verify paging.max-bytes]
/// The listings answered from the index (tags, properties, links, recent changes, periodic
/// notes, tasks, attachments) take `max_bytes` as every paged tool does: a walk with a budget
/// changed between pages sees exactly what a walk without one sees, in more pages, and a
/// budget under 1,024 is refused.
#[tokio::test]
async fn the_index_listings_honour_max_bytes() {
    let h = Harness::new();
    h.write(
        ".obsidian/daily-notes.json",
        r#"{"folder": "Journal", "format": "YYYY-MM-DD"}"#,
    );
    for n in 0..30 {
        let tags: Vec<String> = (0..4).map(|t| format!("topic{}/sub{n}", t)).collect();
        h.write(
            &format!("notes/{n:03}.md"),
            &format!(
                "---\ntags: [{}]\nstatus: active\nowner{n}: someone\n---\n# Note {n}\n\nSee [[notes/{:03}]] and [[missing {n}]].\n\n- [ ] task {n} with enough words to weigh 📅 2026-12-{:02}\n",
                tags.join(", "),
                (n + 1) % 30,
                n % 28 + 1
            ),
        );
        h.write(&format!("Journal/2026-11-{:02}.md", n + 1), "# A day\n");
        h.write(&format!("assets/image-{n:03}.png"), "not really a png");
    }
    h.write("lonely/orphan-a.md", "# Alone\n");
    h.write("lonely/orphan-b.md", "# Alone too\n");
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    for (tool, args) in [
        ("list_tags", json!({})),
        ("find_notes_by_tag", json!({"tag": "topic1"})),
        ("list_properties", json!({})),
        (
            "find_notes_by_property",
            json!({"key": "status", "value": "active"}),
        ),
        ("get_backlinks", json!({"path": "notes/001.md"})),
        ("get_outgoing_links", json!({"path": "notes/001.md"})),
        ("find_orphans", json!({})),
        ("find_unresolved_links", json!({})),
        ("recent_changes", json!({})),
        ("list_periodic_notes", json!({"period": "daily"})),
        ("list_tasks", json!({})),
        ("list_attachments", json!({})),
    ] {
        let (plain, all) = walk_entries(&client, tool, &args, None).await;
        assert!(!all.is_empty(), "{tool}: nothing listed");
        let (lowered, seen) = walk_entries(&client, tool, &args, Some((1_024, 1_500))).await;
        assert_eq!(seen, all, "{tool}: the same entries with max_bytes");
        if all.len() > 4 {
            assert!(
                lowered.len() > plain.len(),
                "{tool}: max_bytes is honoured ({plain:?} vs {lowered:?})"
            );
        }
        let mut below = args.clone();
        below["max_bytes"] = json!(1_000);
        let refused = failure(&call(&client, tool, below).await);
        assert_eq!(refused["code"], "validation_error", "{tool}: {refused}");
    }
}

// r[verify paging.max-bytes]
/// Every tool that pages with a cursor advertises `max_bytes` from 1,024.
#[tokio::test]
async fn every_tool_with_a_cursor_takes_max_bytes() {
    let h = Harness::new();
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let tools = client.list_all_tools().await.unwrap();
    let mut paged = 0;
    for tool in &tools {
        let schema = serde_json::to_value(&tool.input_schema).unwrap();
        let properties = &schema["properties"];
        if properties.get("cursor").is_none() {
            continue;
        }
        paged += 1;
        assert_eq!(
            properties["max_bytes"]["minimum"], 1024,
            "{}: no max_bytes from 1,024: {properties}",
            tool.name
        );
    }
    assert!(paged >= 19, "{paged} paged tools");
}
