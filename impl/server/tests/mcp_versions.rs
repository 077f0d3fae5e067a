//! Versions through the real MCP server: a confirmed overwrite leaves a version that
//! `list_snapshots` and `read_snapshot` show; `restore_note` over the note there now is
//! gated and bound to that note on every route a confirmation arrives by (the CLI token, the
//! 2026-07-28 requestState round trip, the legacy stdio shim, `call_capability`); a
//! permanent delete leaves no version anywhere; the sweeper prunes to `[versions]`
//! (spec/versions.md, spec/drift.md `drift.bind.restore-note.version`, `drift.every-route`).

mod mcp_support;

use std::path::Path;
use std::sync::Arc;

use mcp_support::*;
use rmcp::model::CallToolResponse;
use serde_json::{Value, json};
use tc_server::config::Config;
use tc_server::facade::FacadeMode;

const V1: &str = "# Plan\nversion one\n";
const V2: &str = "# Plan\nversion two\n";
const EDITED: &str = "# Plan\nversion two, edited by hand\n";

fn lean(config: &mut Config) {
    config.tool_facade.mode = FacadeMode::Lean;
}

/// Calls `tool` directly, or through `call_capability` when `via_facade`.
async fn send(client: &Client, via_facade: bool, tool: &str, args: Value) -> Value {
    let result = if via_facade {
        call(
            client,
            "call_capability",
            json!({"name": tool, "args": args}),
        )
        .await
    } else {
        call(client, tool, args).await
    };
    if result.is_error == Some(true) {
        failure(&result)
    } else {
        success(&result)
    }
}

/// Runs a gated call with a CLI token (beside `name` and `args` through the facade).
async fn approved(
    h: &Harness,
    client: &Client,
    via_facade: bool,
    tool: &str,
    args: Value,
) -> Value {
    let refused = send(client, via_facade, tool, args.clone()).await;
    assert_eq!(refused["code"], "elicit_required", "{tool}: {refused}");
    let token = h.mint(&refused, "stdio");
    let done = if via_facade {
        call(
            client,
            "call_capability",
            json!({"name": tool, "args": args, "elicit_token": token}),
        )
        .await
    } else {
        let mut with_token = args;
        with_token["elicit_token"] = json!(token);
        call(client, tool, with_token).await
    };
    success(&done)
}

/// `p.md` at V1, overwritten with V2 through a confirmed write_note: one version, of V1.
async fn seeded(h: &Harness, client: &Client, via_facade: bool) -> String {
    h.write("p.md", V1);
    approved(
        h,
        client,
        via_facade,
        "write_note",
        json!({"path": "p.md", "content": V2}),
    )
    .await;
    let listed = send(
        client,
        via_facade,
        "list_snapshots",
        json!({"path": "p.md"}),
    )
    .await;
    let snapshots = listed["snapshots"].as_array().unwrap();
    assert_eq!(snapshots.len(), 1, "{listed}");
    assert_eq!(snapshots[0]["kind"], "replaced");
    snapshots[0]["snapshot_id"].as_str().unwrap().to_owned()
}

fn restore(id: &str) -> Value {
    json!({"path": "p.md", "snapshot_id": id})
}

// r[verify drift.bind.restore-note.version]
// r[verify versions.keep.confirmed]
#[tokio::test]
async fn a_stale_cli_token_for_a_restore_over_a_note_is_replay_drift() {
    let h = Harness::new();
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let id = seeded(&h, &client, false).await;
    let read = send(&client, false, "read_snapshot", json!({"snapshot_id": id})).await;
    assert_eq!(read["content"], V1);
    let refused = failure(&call(&client, "restore_note", restore(&id)).await);
    assert_eq!(refused["code"], "elicit_required", "{refused}");
    let token = h.mint(&refused, "stdio");
    h.write("p.md", EDITED);
    let mut args = restore(&id);
    args["elicit_token"] = json!(token);
    let stale = failure(&call(&client, "restore_note", args).await);
    assert_eq!(stale["code"], "replay_drift", "{stale}");
    assert_eq!(h.read("p.md").unwrap(), EDITED);
    // Confirmed for the note as it is now, the restore applies and keeps that note.
    approved(&h, &client, false, "restore_note", restore(&id)).await;
    assert_eq!(h.read("p.md").unwrap(), V1);
    let listed = send(&client, false, "list_snapshots", json!({"path": "p.md"})).await;
    let newest = &listed["snapshots"][0];
    let kept = send(
        &client,
        false,
        "read_snapshot",
        json!({"snapshot_id": newest["snapshot_id"]}),
    )
    .await;
    assert_eq!(kept["content"], EDITED, "the restore is undoable");
}

// r[verify drift.bind.restore-note.version]
#[tokio::test]
async fn a_stale_request_state_for_a_restore_over_a_note_is_replay_drift() {
    let h = Harness::new();
    let seeding = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let id = seeded(&h, &seeding, false).await;
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let asked = match call_once(&client, "restore_note", restore(&id)).await {
        CallToolResponse::InputRequired(asked) => asked,
        other => panic!("expected input_required, got {other:?}"),
    };
    h.write("p.md", EDITED);
    let stale = failure(&complete(
        resubmit(&client, "restore_note", restore(&id), asked.request_state).await,
    ));
    assert_eq!(stale["code"], "replay_drift", "{stale}");
    assert_eq!(h.read("p.md").unwrap(), EDITED);
}

// r[verify drift.bind.restore-note.version]
#[tokio::test]
async fn a_note_changed_while_the_shim_prompt_is_open_is_replay_drift_for_a_restore() {
    let h = Harness::new();
    let seeding = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let id = seeded(&h, &seeding, false).await;
    let shim = h.sibling(|_| {}, true);
    let mut client = legacy(Reply::Approve);
    let vault = h.vault.clone();
    client.during_prompt = Some(Arc::new(move || {
        std::fs::write(vault.join("p.md"), EDITED).unwrap();
    }));
    let client = connect(shim, client).await;
    let stale = failure(&call(&client, "restore_note", restore(&id)).await);
    assert_eq!(stale["code"], "replay_drift", "{stale}");
    assert_eq!(client.service().prompts(), 1);
    assert_eq!(h.read("p.md").unwrap(), EDITED);
}

// r[verify drift.bind.restore-note.version]
#[tokio::test]
async fn a_stale_token_through_call_capability_is_replay_drift_for_a_restore() {
    let h = Harness::with(lean);
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let id = seeded(&h, &client, true).await;
    let refused = send(&client, true, "restore_note", restore(&id)).await;
    assert_eq!(refused["code"], "elicit_required", "{refused}");
    let token = h.mint(&refused, "stdio");
    h.write("p.md", EDITED);
    let stale = failure(
        &call(
            &client,
            "call_capability",
            json!({"name": "restore_note", "args": restore(&id), "elicit_token": token}),
        )
        .await,
    );
    assert_eq!(stale["code"], "replay_drift", "{stale}");
    assert_eq!(h.read("p.md").unwrap(), EDITED);
}

/// The files under `dir` holding `marker`.
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

// r[verify versions.permanent]
#[tokio::test]
async fn a_permanent_delete_leaves_no_version_of_the_note_under_the_cache() {
    const MARKER: &str = "qwertyversionmarker";
    let h = Harness::with(|config| config.search.enabled = false);
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    h.write("s.md", &format!("the first draft says {MARKER}\n"));
    approved(
        &h,
        &client,
        false,
        "write_note",
        json!({"path": "s.md", "content": "a second draft\n"}),
    )
    .await;
    assert!(
        !holding(&h.cache, MARKER).is_empty(),
        "the version holds it"
    );
    approved(
        &h,
        &client,
        false,
        "delete_note",
        json!({"path": "s.md", "permanent": true}),
    )
    .await;
    // The snapshot folder keeps nothing of it (cache.db's own copies are the index's and
    // the gate's to purge: permanent_purge.rs).
    assert_eq!(
        holding(&h.cache.join("snapshots"), MARKER),
        Vec::<String>::new()
    );
    let listed = send(&client, false, "list_snapshots", json!({})).await;
    assert_eq!(listed["snapshots"], json!([]));
}

// r[verify versions.retention.sweep]
#[tokio::test]
async fn the_sweeper_prunes_versions_to_the_configured_count_and_age() {
    let h = Harness::with(|config| {
        config.versions.keep_per_path = 2;
        config.versions.max_age_days = 1;
    });
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    h.write("p.md", "v0\n");
    for n in 1..=4 {
        approved(
            &h,
            &client,
            false,
            "write_note",
            json!({"path": "p.md", "content": format!("v{n}\n")}),
        )
        .await;
        h.clock.advance_ms(1_000);
    }
    let count = |listed: &Value| listed["snapshots"].as_array().unwrap().len();
    let listed = send(&client, false, "list_snapshots", json!({})).await;
    assert_eq!(count(&listed), 4);
    h.core.sweep_once().await.unwrap();
    let listed = send(&client, false, "list_snapshots", json!({})).await;
    assert_eq!(count(&listed), 2, "{listed}");
    let newest = send(
        &client,
        false,
        "read_snapshot",
        json!({"snapshot_id": listed["snapshots"][0]["snapshot_id"]}),
    )
    .await;
    assert_eq!(newest["content"], "v3\n");
    h.clock.advance_ms(86_400_000 + 1);
    h.core.sweep_once().await.unwrap();
    let listed = send(&client, false, "list_snapshots", json!({})).await;
    assert_eq!(count(&listed), 0, "{listed}");
}
