//! reset_vault_cache and the captures (spec/drift.md `drift.bind.reset-vault-cache`,
//! `drift.residual.reset-cache-log`; spec/index.md `index.reset`, `captures.*`).

mod support;

use serde_json::json;
use support::{Fx, code, indexed, with_token};
use tc_tools::ErrorCode;

fn two_notes(fx: &Fx) {
    fx.put("a.md", "# A\nalpha words\n");
    fx.put("b.md", "# B\nbeta words\n");
}

// r[verify drift.bind.reset-vault-cache]
// r[verify index.reset]
#[test]
fn reset_is_always_confirmed_and_clears_what_include_says() {
    let fx = Fx::new();
    two_notes(&fx);
    indexed(&fx);
    let id = fx
        .call(
            "capture_note",
            json!({"content": "x", "target_path_hint": "c.md"}),
        )
        .unwrap()["capture_id"]
        .clone();
    fx.call("commit_capture", json!({"capture_id": id}))
        .unwrap();
    fx.call("capture_note", json!({"content": "still pending"}))
        .unwrap();
    let args = json!({});
    let token = fx.require("reset_vault_cache", &args);
    let out = fx
        .call("reset_vault_cache", with_token(&args, &token))
        .unwrap();
    assert_eq!(out["chunks_dropped"], 3, "{out}");
    assert_eq!(out["captures_dropped"], 1, "{out}");
    let pending = fx.call("list_captures", json!({})).unwrap();
    assert_eq!(
        pending["captures"].as_array().unwrap().len(),
        1,
        "pending kept"
    );
    // The chunks come back from the files at the next answer.
    let found = fx.call("search_notes", json!({"query": "alpha"})).unwrap();
    assert_eq!(found["results"][0]["path"], "a.md");
    // Only chunks this time: the committed captures stay.
    let args = json!({"include": {"captures": false, "embeddings": false}});
    let token = fx.require("reset_vault_cache", &args);
    let out = fx
        .call("reset_vault_cache", with_token(&args, &token))
        .unwrap();
    assert_eq!(out["captures_dropped"], 0);
    assert_eq!(out["chunks_dropped"], 3);
}

#[test]
fn reset_drifts_when_the_chunk_or_committed_capture_count_changes() {
    for drift in ["chunks", "captures"] {
        let fx = Fx::new();
        two_notes(&fx);
        indexed(&fx);
        let id = fx
            .call(
                "capture_note",
                json!({"content": "x", "target_path_hint": "c.md"}),
            )
            .unwrap()["capture_id"]
            .clone();
        let args = json!({});
        let token = fx.require("reset_vault_cache", &args);
        match drift {
            // A note written behind the server adds a chunk once reconciled.
            "chunks" => {
                fx.put("d.md", "delta");
                fx.call("search_notes", json!({"query": "delta"})).unwrap();
            }
            _ => {
                fx.call("commit_capture", json!({"capture_id": id}))
                    .unwrap();
            }
        }
        let refusal = fx
            .call("reset_vault_cache", with_token(&args, &token))
            .unwrap_err();
        assert_eq!(refusal.code, ErrorCode::ReplayDrift, "{drift}: {refusal}");
        let again = fx
            .call("reset_vault_cache", with_token(&args, &token))
            .unwrap_err();
        assert_eq!(again.details.unwrap()["token_rejected"], "spent");
        assert_eq!(
            fx.call("search_notes", json!({"query": "alpha"})).unwrap()["results"][0]["path"],
            "a.md",
            "nothing cleared"
        );
    }
}

// r[verify drift.residual.reset-cache-log]
#[test]
fn reset_keeps_the_event_log_and_is_not_drift_for_its_own_confirmation_rows() {
    let fx = Fx::new();
    two_notes(&fx);
    indexed(&fx);
    let args = json!({});
    // Raising, minting and another raise write the gate's rows and events between the
    // request and the redemption; none of that is drift.
    let token = fx.require("reset_vault_cache", &args);
    let _other = fx.require("delete_note", &json!({"path": "a.md"}));
    let events_before = fx.gate.events(0, 10_000).unwrap().len();
    fx.call("reset_vault_cache", with_token(&args, &token))
        .unwrap();
    let events_after = fx.gate.events(0, 10_000).unwrap();
    assert!(
        events_after.len() > events_before,
        "the log is kept and grows"
    );
}

#[test]
fn reset_needs_confirmation_even_with_nothing_to_clear() {
    let fx = Fx::new();
    indexed(&fx);
    assert_eq!(
        code(fx.call("reset_vault_cache", json!({}))),
        ErrorCode::ElicitRequired
    );
}

// r[verify captures.stage]
// r[verify captures.list]
#[test]
fn captures_are_staged_listed_in_pages_and_never_touch_the_vault() {
    let fx = Fx::new();
    indexed(&fx);
    for i in 0..60 {
        fx.call(
            "capture_note",
            json!({"content": format!("idea {i}"), "tags": ["inbox"], "source": "phone"}),
        )
        .unwrap();
    }
    assert_eq!(
        std::fs::read_dir(&fx.root).unwrap().count(),
        0,
        "vault untouched"
    );
    let first = fx.call("list_captures", json!({})).unwrap();
    let page: Vec<_> = first["captures"].as_array().unwrap().clone();
    assert_eq!(page.len(), 50);
    assert_eq!(page[0]["content"], "idea 0");
    assert_eq!(page[0]["tags"], json!(["inbox"]));
    assert_eq!(page[0]["source"], "phone");
    let token = first["next_cursor"].as_str().unwrap();
    let rest = fx.call("list_captures", json!({"cursor": token})).unwrap();
    assert_eq!(rest["captures"].as_array().unwrap().len(), 10);
    assert_eq!(rest["next_cursor"], json!(null));
    let foreign = fx
        .call("list_captures", json!({"status": "all", "cursor": token}))
        .unwrap_err();
    assert_eq!(foreign.details.unwrap()["reason"], "request_mismatch");
}

// r[verify captures.commit]
#[test]
fn commit_capture_gates_as_write_note_would() {
    let fx = Fx::new();
    indexed(&fx);
    let id = fx
        .call("capture_note", json!({"content": "new text"}))
        .unwrap()["capture_id"]
        .clone();
    assert_eq!(
        code(fx.call("commit_capture", json!({"capture_id": id}))),
        ErrorCode::ValidationError,
        "no path and no hint"
    );
    assert_eq!(
        code(fx.call("commit_capture", json!({"capture_id": 999}))),
        ErrorCode::CaptureNotFound
    );
    // A new note: free, like write_note.
    let out = fx
        .call(
            "commit_capture",
            json!({"capture_id": id, "path": "fresh.md"}),
        )
        .unwrap();
    assert_eq!(out["status"], "committed");
    assert_eq!(fx.get("fresh.md").unwrap(), "new text");
    assert_eq!(
        code(fx.call(
            "commit_capture",
            json!({"capture_id": id, "path": "other.md"})
        )),
        ErrorCode::InvalidInput,
        "committed once"
    );
    // Over a note with content: confirmation, bound to that note's content.
    fx.put("kept.md", "old content");
    let id = fx
        .call("capture_note", json!({"content": "replacement"}))
        .unwrap()["capture_id"]
        .clone();
    let args = json!({"capture_id": id, "path": "kept.md"});
    let token = fx.require("commit_capture", &args);
    fx.put("kept.md", "old content, edited");
    assert_eq!(
        code(fx.call("commit_capture", with_token(&args, &token))),
        ErrorCode::ReplayDrift
    );
    assert_eq!(fx.get("kept.md").unwrap(), "old content, edited");
    let token = fx.require("commit_capture", &args);
    fx.call("commit_capture", with_token(&args, &token))
        .unwrap();
    assert_eq!(fx.get("kept.md").unwrap(), "replacement");
    let committed = fx
        .call("list_captures", json!({"status": "committed"}))
        .unwrap();
    assert_eq!(committed["captures"].as_array().unwrap().len(), 2);
    assert_eq!(committed["captures"][1]["committed_path"], "kept.md");
}

// r[verify captures.list.readable]
#[test]
fn a_capture_committed_where_the_caller_may_not_read_is_not_listed() {
    let fx = Fx::with(
        Some(tc_tools::testing::read_only_under("notes/**")),
        Vec::new(),
    );
    indexed(&fx);
    for (content, path) in [
        ("salary 42000", "inbox/salary.md"),
        ("open", "notes/open.md"),
    ] {
        let id = fx
            .call("capture_note", json!({"content": content}))
            .unwrap()["capture_id"]
            .clone();
        fx.call("commit_capture", json!({"capture_id": id, "path": path}))
            .unwrap();
    }
    let listed = fx.call("list_captures", json!({"status": "all"})).unwrap();
    let captures = listed["captures"].as_array().unwrap();
    assert_eq!(captures.len(), 1, "{listed}");
    assert_eq!(captures[0]["committed_path"], "notes/open.md");
    assert!(!listed.to_string().contains("42000"), "{listed}");
    assert_eq!(listed["next_cursor"], serde_json::Value::Null);
}

/// The rows of `table` the vault has in cache.db.
fn rows(fx: &Fx, table: &str) -> i64 {
    let db = rusqlite::Connection::open(fx.cache().join("cache.db")).unwrap();
    db.query_row(
        &format!("SELECT count(*) FROM {table} WHERE vault = 'main'"),
        [],
        |row| row.get(0),
    )
    .unwrap()
}

// r[verify index.reset]
#[test]
fn a_reset_clears_the_property_and_task_rows_and_the_next_answer_rebuilds_them() {
    let fx = Fx::new();
    fx.put(
        "a.md",
        "---\ncode: private value\n---\n# A\n\n- [ ] ring the plumber #call\n",
    );
    indexed(&fx);
    let tables = [
        "index_properties",
        "index_property_values",
        "index_tasks",
        "index_task_tags",
    ];
    for table in tables {
        assert!(rows(&fx, table) > 0, "{table} was filled");
    }
    let args = json!({"include": {"chunks": true}});
    let token = fx.require("reset_vault_cache", &args);
    fx.call("reset_vault_cache", with_token(&args, &token))
        .unwrap();
    for table in tables {
        assert_eq!(rows(&fx, table), 0, "{table} was cleared");
    }
    let found = fx
        .call("search_notes", json!({"query": "plumber"}))
        .unwrap();
    assert_eq!(found["results"][0]["path"], "a.md");
    for table in tables {
        assert!(rows(&fx, table) > 0, "{table} was rebuilt");
    }
}
