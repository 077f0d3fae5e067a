//! The lean facade through the real MCP server (in process, rmcp's own client): what each
//! mode advertises, finding and describing a capability, and `call_capability` as one more
//! route by which a confirmation arrives: for every gated tool whose target can change, a
//! stale approval is `replay_drift` and applies nothing on the CLI token, the 2026-07-28
//! requestState round trip and the legacy stdio shim, each sent through `call_capability`
//! (spec/facade.md; spec/gate.md `gate.routes`; spec/drift.md `drift.every-route`).

mod mcp_support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use mcp_support::*;
use rmcp::model::{CallToolRequestParams, CallToolResponse};
use serde_json::{Value, json};
use tc_gate::EventName;
use tc_server::config::Config;
use tc_server::facade::FacadeMode;

fn lean(config: &mut Config) {
    config.tool_facade.mode = FacadeMode::Lean;
}

fn facade(name: &str, arguments: Value) -> Value {
    json!({"name": name, "args": arguments})
}

async fn ok(client: &Client, tool: &str, arguments: Value) -> Value {
    success(&call(client, tool, arguments).await)
}

/// Every file under the vault with its bytes (git's index left out: a stat refresh may
/// rewrite it without changing what is staged).
fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                if rel != ".git/index" {
                    out.insert(rel, std::fs::read(&path).unwrap());
                }
            }
        }
    }
    out
}

// r[verify facade.mode.flat]
#[tokio::test]
async fn flat_mode_advertises_every_tool_and_no_facade() {
    let h = Harness::new();
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(names.iter().any(|n| n == "write_note"));
    for facade_tool in ["find_capability", "describe_capability", "call_capability"] {
        assert!(!names.iter().any(|n| n == facade_tool), "{facade_tool}");
    }
    let unknown = client
        .call_tool_once(
            CallToolRequestParams::new("call_capability")
                .with_arguments(args(facade("read_notes", json!({"paths": ["a.md"]})))),
        )
        .await;
    let error = unknown.expect_err("call_capability is unknown in flat mode");
    assert!(
        matches!(error, rmcp::ServiceError::McpError(ref e) if e.code.0 == -32602),
        "{error:?}"
    );
}

// r[verify facade.mode.lean]
// r[verify facade.mode.direct-calls]
// r[verify facade.describe.schema]
#[tokio::test]
async fn lean_mode_advertises_three_tools_that_describe_exactly_what_flat_mode_lists() {
    let h = Harness::with(lean);
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        ["find_capability", "describe_capability", "call_capability"]
    );
    for tool in &tools {
        assert!(tool.output_schema.is_some(), "{}", tool.name);
    }
    let call_annotations = tools[2].annotations.as_ref().unwrap();
    assert_eq!(call_annotations.destructive_hint, Some(true));

    let flat = Harness::new();
    let flat_client = connect(flat.core.clone(), modern(Reply::Approve)).await;
    let flat_tools = flat_client.list_all_tools().await.unwrap();
    let listed = flat_tools.iter().find(|t| t.name == "move_note").unwrap();
    let described = ok(&client, "describe_capability", json!({"name": "move_note"})).await;
    assert_eq!(described["name"], "move_note");
    assert_eq!(
        described["inputSchema"],
        Value::Object((*listed.input_schema).clone())
    );
    assert_eq!(
        described["outputSchema"],
        Value::Object((**listed.output_schema.as_ref().unwrap()).clone())
    );
    assert_eq!(
        described["annotations"]["destructiveHint"],
        json!(listed.annotations.as_ref().unwrap().destructive_hint)
    );

    // A tool called by its own name is still served in lean mode.
    h.write("a.md", "hello");
    let read = ok(&client, "read_notes", json!({"paths": ["a.md"]})).await;
    assert_eq!(read["notes"][0]["content"], "hello");
}

// r[verify facade.find.bm25]
#[tokio::test]
async fn find_capability_ranks_by_what_the_agent_wants_to_do() {
    let h = Harness::with(lean);
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let found = ok(
        &client,
        "find_capability",
        json!({"query": "delete a note", "limit": 3}),
    )
    .await;
    let names: Vec<&str> = found["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 3);
    assert_eq!(names[0], "delete_note", "{found}");
    let first = &found["capabilities"][0];
    assert_eq!(first["changes_vault"], true);
    assert_eq!(first["may_need_confirmation"], true);
    assert!(found["matched"].as_u64().unwrap() >= 3);

    let search = ok(&client, "find_capability", json!({"query": "commit git"})).await;
    assert_eq!(search["capabilities"][0]["name"], "git_commit", "{search}");
    let scores: Vec<f64> = search["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");

    let everything = ok(
        &client,
        "find_capability",
        json!({"query": "", "limit": 50}),
    )
    .await;
    let all = everything["capabilities"].as_array().unwrap();
    assert_eq!(
        all.len() as u64,
        everything["matched"].as_u64().unwrap().min(50)
    );
    assert!(all.iter().all(|c| c["score"] == 0.0));

    let nothing = ok(&client, "find_capability", json!({"query": "zzzqqq"})).await;
    assert_eq!(nothing["capabilities"], json!([]));
    let bad = failure(
        &call(
            &client,
            "find_capability",
            json!({"query": "x", "limit": 0}),
        )
        .await,
    );
    assert_eq!(bad["code"], "validation_error");
}

// r[verify facade.not-found]
#[tokio::test]
async fn an_unknown_capability_is_capability_not_found_and_raises_nothing() {
    let h = Harness::with(lean);
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    for (tool, arguments) in [
        ("describe_capability", json!({"name": "no_such_tool"})),
        ("call_capability", facade("no_such_tool", json!({}))),
        ("call_capability", facade("call_capability", json!({}))),
        ("describe_capability", json!({"name": "find_capability"})),
    ] {
        let refused = failure(&call(&client, tool, arguments).await);
        assert_eq!(refused["code"], "capability_not_found", "{refused}");
        assert!(
            refused["message"]
                .as_str()
                .unwrap()
                .contains("find_capability")
        );
    }
    assert_eq!(h.events(EventName::Requested), 0);
}

// r[verify facade.call.same-pipeline]
// r[verify facade.call.token-beside]
// r[verify facade.call.resend]
// r[verify gate.routes]
#[tokio::test]
async fn a_token_travels_next_to_name_and_args_and_approves_the_named_call() {
    let h = Harness::with(lean);
    h.write("a.md", "old text");
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;

    // The same call by its own name and through the facade hashes the same.
    let direct = failure(
        &call(
            &client,
            "write_note",
            json!({"path": "a.md", "content": "new"}),
        )
        .await,
    );
    let write = json!({"path": "a.md", "content": "new"});
    let refused = failure(
        &call(
            &client,
            "call_capability",
            facade("write_note", write.clone()),
        )
        .await,
    );
    assert_eq!(refused["code"], "elicit_required");
    assert_eq!(
        refused["details"]["args_hash"],
        direct["details"]["args_hash"]
    );
    assert_eq!(refused["details"]["tool"], "write_note");
    assert_eq!(refused["details"]["via"], "call_capability");
    let message = refused["message"].as_str().unwrap();
    assert!(message.starts_with("STOP and ask the human"), "{message}");
    assert!(
        message.contains("send call_capability again with name \"write_note\""),
        "{message}"
    );
    assert!(
        refused["recovery"]["instruction"]
            .as_str()
            .unwrap()
            .contains("call_capability")
    );
    assert!(
        refused["recovery"]["command"]
            .as_str()
            .unwrap()
            .starts_with("obsidian-tc elicit --hash ")
    );

    let token = h.mint(&refused, "stdio");
    let mut inside = write.clone();
    inside["elicit_token"] = json!(token);
    let misplaced = failure(&call(&client, "call_capability", facade("write_note", inside)).await);
    assert_eq!(misplaced["code"], "validation_error");
    assert!(
        misplaced["message"]
            .as_str()
            .unwrap()
            .contains("next to name and args")
    );
    assert_eq!(h.read("a.md").unwrap(), "old text");

    let mut beside = facade("write_note", write);
    beside["elicit_token"] = json!(token);
    let written = ok(&client, "call_capability", beside.clone()).await;
    assert_eq!(written["path"], "a.md");
    assert_eq!(h.read("a.md").unwrap(), "new");
    // Single use through the facade as everywhere.
    let again = failure(&call(&client, "call_capability", beside).await);
    assert_eq!(again["code"], "elicit_required");
    assert_eq!(again["details"]["token_rejected"], "spent");
}

// r[verify facade.call.round-trips]
// r[verify facade.call.route-recorded]
#[tokio::test]
async fn both_round_trips_work_through_the_facade_as_the_named_tool_would() {
    let h = Harness::with(lean);
    h.write("inbox/a.md", "a");
    h.write("inbox/b.md", "b");
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let first = facade(
        "move_note",
        json!({"from": "inbox/a.md", "to": "done/a.md"}),
    );
    let asked = match call_once(&client, "call_capability", first.clone()).await {
        CallToolResponse::InputRequired(asked) => asked,
        other => panic!("expected input_required, got {other:?}"),
    };
    let message =
        serde_json::to_value(&asked).unwrap()["inputRequests"]["confirm"]["params"]["message"]
            .as_str()
            .unwrap()
            .to_owned();
    assert!(message.contains("inbox/a.md"), "{message}");
    let moved = success(&complete(
        resubmit(&client, "call_capability", first, asked.request_state).await,
    ));
    assert_eq!(moved["to"], "done/a.md");
    assert!(h.read("done/a.md").is_some());

    let events = h.core.gate().events(0, 100).unwrap();
    let consumed: Vec<_> = events
        .iter()
        .filter(|e| e.name == EventName::Consumed)
        .collect();
    assert_eq!(consumed.len(), 1);
    let recorded = consumed[0].detail.to_string();
    assert!(recorded.contains("call_capability"), "{recorded}");

    let shim = h.sibling(lean, true);
    let client = connect(shim, legacy(Reply::Approve)).await;
    let second = facade(
        "move_note",
        json!({"from": "inbox/b.md", "to": "done/b.md"}),
    );
    let moved = ok(&client, "call_capability", second).await;
    assert_eq!(moved["to"], "done/b.md");
    assert_eq!(client.service().prompts(), 1);
}

/// A gated tool's stale-approval case: what the vault holds first, the call, and the change
/// of its confirmation target made between the request and the redemption.
struct DriftCase {
    tool: &'static str,
    setup: fn(&Path),
    args: fn() -> Value,
    change: fn(&Path),
}

fn put(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn git(root: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(root)
        .output()
        .unwrap();
    assert!(status.status.success(), "git {args:?}: {status:?}");
}

fn cases() -> Vec<DriftCase> {
    vec![
        DriftCase {
            tool: "write_note",
            setup: |v| put(v, "a.md", "old"),
            args: || json!({"path": "a.md", "content": "new"}),
            change: |v| put(v, "a.md", "edited by hand"),
        },
        DriftCase {
            tool: "update_frontmatter",
            setup: |v| put(v, "a.md", "---\nstatus: draft\n---\nbody\n"),
            args: || json!({"path": "a.md", "operation": "replace", "data": {"status": "done"}}),
            change: |v| put(v, "a.md", "---\nstatus: draft\n---\nbody edited\n"),
        },
        DriftCase {
            tool: "update_task",
            setup: |v| put(v, "t.md", "- [x] ship it ✅ 2020-01-02\n"),
            args: || json!({"path": "t.md", "line": 1, "status": "todo"}),
            change: |v| put(v, "t.md", "- [x] ship it ✅ 2020-01-02\nmore\n"),
        },
        DriftCase {
            tool: "move_note",
            setup: |v| put(v, "inbox/a.md", "a"),
            args: || json!({"from": "inbox/a.md", "to": "done/a.md"}),
            change: |v| put(v, "inbox/a.md", "a, edited"),
        },
        DriftCase {
            tool: "copy_note",
            setup: |v| {
                put(v, "a.md", "a");
                put(v, "b.md", "b");
            },
            args: || json!({"from": "a.md", "to": "b.md", "overwrite": true}),
            change: |v| put(v, "b.md", "b, edited"),
        },
        DriftCase {
            tool: "delete_note",
            setup: |v| put(v, "a.md", "a"),
            args: || json!({"path": "a.md"}),
            change: |v| put(v, "a.md", "a, edited"),
        },
        DriftCase {
            tool: "rewrite_link",
            setup: |v| {
                put(v, "a.md", "target");
                put(v, "b.md", "see [[a]]");
            },
            args: || json!({"from_target": "a", "to_target": "c", "dry_run": false}),
            change: |v| put(v, "new.md", "also [[a]]"),
        },
        DriftCase {
            tool: "git_commit",
            setup: |v| {
                git(v, &["init", "-q"]);
                git(v, &["config", "user.name", "Ada"]);
                git(v, &["config", "user.email", "ada@example.org"]);
                put(v, "a.md", "a");
                git(v, &["add", "a.md"]);
            },
            args: || json!({"message": "first"}),
            change: |v| {
                put(v, "b.md", "b");
                git(v, &["add", "b.md"]);
            },
        },
        DriftCase {
            tool: "reset_vault_cache",
            setup: |v| put(v, "a.md", "# A\nsome words"),
            args: || json!({}),
            change: |v| put(v, "b.md", "# B\nmore words to index"),
        },
        DriftCase {
            tool: "ocr_bulk",
            setup: |v| put(v, "scans/a.png", "not really a png"),
            args: || json!({"root": "scans"}),
            change: |v| put(v, "scans/b.png", "another"),
        },
        DriftCase {
            tool: "patch_note",
            setup: |v| put(v, "p.md", "# A\nkeep\n# B\nold\n"),
            args: || {
                json!({"path": "p.md", "operation": "replace",
                       "anchor": {"type": "heading", "heading": "B"}, "content": "new"})
            },
            // Outside the anchored section: the whole note is bound.
            change: |v| put(v, "p.md", "# A\nkeep, edited\n# B\nold\n"),
        },
        DriftCase {
            tool: "replace_in_note",
            setup: |v| put(v, "r.md", "teh cat\n"),
            args: || json!({"path": "r.md", "find": "teh", "replace": "the"}),
            change: |v| put(v, "r.md", "teh cat\nteh dog\n"),
        },
        DriftCase {
            tool: "bulk_create_notes",
            setup: |v| put(v, "n/1.md", "old"),
            args: || {
                json!({"mode": "upsert", "items": [
                    {"path": "n/1.md", "content": "new"}, {"path": "n/2.md", "content": "two"}]})
            },
            // A note appearing at a free path is drift, like a changed one.
            change: |v| put(v, "n/2.md", "written by hand"),
        },
        DriftCase {
            tool: "bulk_set_property",
            setup: |v| {
                for i in 0..30 {
                    put(v, &format!("m/{i}.md"), "---\nstatus: todo\n---\n");
                }
            },
            args: || json!({"folder": "m", "key": "status", "value": "done"}),
            change: |v| put(v, "m/17.md", "---\nstatus: todo\n---\nedited\n"),
        },
        DriftCase {
            tool: "remove_tag",
            setup: |v| put(v, "t/n.md", "text #gone here\n"),
            args: || json!({"path": "t/n.md", "tag": "gone", "location": "inline"}),
            change: |v| put(v, "t/n.md", "text #gone here\nedited\n"),
        },
        DriftCase {
            tool: "rename_tag",
            setup: |v| {
                put(v, "t/a.md", "#old/x here\n");
                put(v, "t/b.md", "---\ntags: [old]\n---\n");
            },
            args: || json!({"from": "old", "to": "new", "dry_run": false}),
            // A note gaining the tag is drift, like a touched note changing.
            change: |v| put(v, "t/c.md", "now #old too\n"),
        },
        DriftCase {
            tool: "bulk_move_notes",
            setup: |v| {
                put(v, "inbox/a.md", "a");
                put(v, "inbox/b.md", "b");
                put(v, "moc.md", "[[a]] and [b](inbox/b.md)");
            },
            args: || {
                json!({"dry_run": false, "moves": [
                    {"from": "inbox/a.md", "to": "done/a.md"},
                    {"from": "inbox/b.md", "to": "done/b.md"}]})
            },
            change: |v| put(v, "other.md", "now links [[b]]"),
        },
        // r[verify drift.bind.write-attachment]
        DriftCase {
            tool: "write_attachment",
            setup: |v| put(v, "assets/a.png", "old bytes"),
            args: || json!({"path": "assets/a.png", "data_base64": "bmV3", "overwrite": true}),
            change: |v| put(v, "assets/a.png", "edited by hand"),
        },
        // r[verify drift.bind.move-attachment]
        DriftCase {
            tool: "move_attachment",
            setup: |v| {
                put(v, "assets/a.png", "png");
                put(v, "n.md", "![[a.png]]\n");
            },
            args: || json!({"from": "assets/a.png", "to": "img/a.png"}),
            // A note gaining an embed of it is drift, like a touched note changing.
            change: |v| put(v, "other.md", "now ![[a.png]]\n"),
        },
        // r[verify drift.bind.delete-attachment]
        DriftCase {
            tool: "delete_attachment",
            setup: |v| put(v, "assets/a.png", "png"),
            args: || json!({"path": "assets/a.png"}),
            change: |v| put(v, "assets/a.png", "changed"),
        },
        DriftCase {
            tool: "create_canvas",
            setup: |v| put(v, "b.canvas", "{\"nodes\":[],\"edges\":[]}"),
            args: || json!({"path": "b.canvas", "overwrite": true, "nodes": []}),
            change: |v| put(v, "b.canvas", "{\"nodes\":[],\"edges\":[],\"k\":1}"),
        },
        DriftCase {
            tool: "update_canvas",
            setup: |v| {
                let nodes: Vec<String> = (0..12)
                    .map(|i| {
                        format!("{{\"id\":\"n{i}\",\"type\":\"group\",\"x\":0,\"y\":0,\"width\":1,\"height\":1}}")
                    })
                    .collect();
                put(
                    v,
                    "big.canvas",
                    &format!("{{\"nodes\":[{}],\"edges\":[]}}", nodes.join(",")),
                );
            },
            args: || {
                json!({"path": "big.canvas",
                       "remove_node_ids": ["n0","n1","n2","n3","n4","n5","n6","n7","n8","n9","n10"]})
            },
            change: |v| {
                let text = std::fs::read_to_string(v.join("big.canvas")).unwrap();
                put(
                    v,
                    "big.canvas",
                    &text.replace(
                        "\"n11\",\"type\":\"group\",\"x\":0",
                        "\"n11\",\"type\":\"group\",\"x\":5",
                    ),
                );
            },
        },
        // r[verify drift.bind.create-excalidraw]
        DriftCase {
            tool: "create_excalidraw",
            setup: |v| {
                put(
                    v,
                    "d.excalidraw.md",
                    "## Drawing\n```json\n{\"type\":\"excalidraw\",\"elements\":[]}\n```\n%%",
                );
            },
            args: || json!({"path": "d.excalidraw.md", "overwrite": true, "elements": []}),
            change: |v| {
                put(
                    v,
                    "d.excalidraw.md",
                    "## Drawing\n```json\n{\"type\":\"excalidraw\",\"elements\":[{\"id\":\"x\"}]}\n```\n%%",
                );
            },
        },
        // r[verify drift.bind.create-base]
        DriftCase {
            tool: "create_base",
            setup: |v| put(v, "b.base", "views: []\n"),
            args: || json!({"path": "b.base", "overwrite": true, "definition": {}}),
            change: |v| put(v, "b.base", "views: [{type: cards}]\n"),
        },
        // r[verify drift.bind.update-base]
        DriftCase {
            tool: "update_base",
            setup: |v| put(v, "u.base", "filters: a\nviews: []\n"),
            args: || json!({"path": "u.base", "patch": {"filters": "b"}}),
            change: |v| put(v, "u.base", "filters: a\nviews: [{type: cards}]\n"),
        },
        // r[verify drift.bind.remove-bookmark]
        DriftCase {
            tool: "remove_bookmark",
            setup: |v| {
                put(
                    v,
                    ".obsidian/bookmarks.json",
                    "{\"items\":[{\"type\":\"url\",\"url\":\"https://a.org\"}]}",
                );
            },
            args: || json!({"url": "https://a.org"}),
            change: |v| {
                put(
                    v,
                    ".obsidian/bookmarks.json",
                    "{\"items\":[{\"type\":\"url\",\"url\":\"https://a.org\",\"title\":\"A\"}]}",
                );
            },
        },
        // r[verify drift.bind.save-workspace]
        DriftCase {
            tool: "save_workspace",
            setup: |v| {
                put(
                    v,
                    ".obsidian/workspaces.json",
                    "{\"workspaces\":{\"W\":{}}}",
                )
            },
            args: || json!({"name": "W", "layout": {"main": {}}, "overwrite": true}),
            change: |v| {
                put(
                    v,
                    ".obsidian/workspaces.json",
                    "{\"workspaces\":{\"W\":{\"main\":{\"id\":\"x\"}}}}",
                );
            },
        },
        // Each gated tool of a family adds its case here: one entry drives it through every
        // route, directly and through call_capability.
    ]
}

/// Gated tools without a case here, and why.
const NOT_COVERED: &[(&str, &str)] = &[
    (
        "execute_template",
        "needs a configured bridge and a stand-in Obsidian: mcp_templater.rs drives it through every route",
    ),
    (
        "execute_command",
        "binds args_hash alone (ConfirmationTargets::None): nothing can drift",
    ),
    (
        "trigger_quickadd",
        "binds args_hash alone (ConfirmationTargets::None): nothing can drift",
    ),
    (
        "restore_note",
        "its target is a delete snapshot, made by a confirmed delete first: tc-notes' scenario covers it",
    ),
    (
        "prune_hub_links",
        "needs a hub with dead links planned: tc-notes' scenario covers it",
    ),
    (
        "commit_wiki_page",
        "needs a sealed wiki page edited since: tc-notes' scenario covers it",
    ),
    (
        "commit_capture",
        "its write gate is write_note's, covered above",
    ),
    (
        "delete_entity",
        "mcp_memory.rs drives it on every route; memory notes need the memory tools first",
    ),
    ("session_rerun", "mcp_sessions.rs drives it"),
];

#[tokio::test]
async fn every_gated_tool_is_either_a_drift_case_or_named_with_a_reason() {
    let h = Harness::new();
    let cases = cases();
    for def in h.core.registry().iter().filter(|d| d.gated) {
        let covered = cases.iter().any(|c| c.tool == def.name)
            || NOT_COVERED.iter().any(|(t, _)| *t == def.name);
        assert!(
            covered,
            "{} has no drift case through call_capability",
            def.name
        );
    }
}

/// Prepares a case on a fresh lean server; returns the harness and the facade call.
fn prepared(case: &DriftCase) -> (Harness, Value) {
    let h = Harness::with(lean);
    (case.setup)(&h.vault);
    (h, facade(case.tool, (case.args)()))
}

// r[verify drift.every-route]
#[tokio::test]
async fn a_stale_token_sent_through_the_facade_is_replay_drift_for_every_case() {
    for case in cases() {
        let (h, call_args) = prepared(&case);
        let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
        let refused = failure(&call(&client, "call_capability", call_args.clone()).await);
        assert_eq!(
            refused["code"], "elicit_required",
            "{}: {refused}",
            case.tool
        );
        let token = h.mint(&refused, "stdio");
        (case.change)(&h.vault);
        let before = files(&h.vault);
        let mut with_token = call_args.clone();
        with_token["elicit_token"] = json!(token);
        let stale = failure(&call(&client, "call_capability", with_token).await);
        assert_eq!(stale["code"], "replay_drift", "{}: {stale}", case.tool);
        assert_eq!(stale["details"]["via"], "call_capability");
        assert_eq!(files(&h.vault), before, "{}: nothing applied", case.tool);

        // A fresh confirmation of the current state goes through.
        let refused = failure(&call(&client, "call_capability", call_args.clone()).await);
        let token = h.mint(&refused, "stdio");
        let mut with_token = call_args;
        with_token["elicit_token"] = json!(token);
        let done = call(&client, "call_capability", with_token).await;
        assert_ne!(done.is_error, Some(true), "{}: {done:?}", case.tool);
    }
}

// r[verify drift.every-route]
#[tokio::test]
async fn a_stale_request_state_sent_through_the_facade_is_replay_drift_for_every_case() {
    for case in cases() {
        let (h, call_args) = prepared(&case);
        let client = connect(h.core.clone(), modern(Reply::Approve)).await;
        let asked = match call_once(&client, "call_capability", call_args.clone()).await {
            CallToolResponse::InputRequired(asked) => asked,
            other => panic!("{}: expected input_required, got {other:?}", case.tool),
        };
        (case.change)(&h.vault);
        let before = files(&h.vault);
        let stale = failure(&complete(
            resubmit(
                &client,
                "call_capability",
                call_args.clone(),
                asked.request_state,
            )
            .await,
        ));
        assert_eq!(stale["code"], "replay_drift", "{}: {stale}", case.tool);
        assert_eq!(files(&h.vault), before, "{}: nothing applied", case.tool);
    }
}

// r[verify drift.every-route]
#[tokio::test]
async fn a_target_changed_while_the_shim_prompt_is_open_is_replay_drift_for_every_case() {
    for case in cases() {
        let (h, call_args) = prepared(&case);
        let shim = h.sibling(lean, true);
        let mut client = legacy(Reply::Approve);
        let vault = h.vault.clone();
        let change = case.change;
        client.during_prompt = Some(Arc::new(move || change(&vault)));
        let client = connect(shim, client).await;
        let stale = failure(&call(&client, "call_capability", call_args).await);
        assert_eq!(stale["code"], "replay_drift", "{}: {stale}", case.tool);
        assert_eq!(client.service().prompts(), 1, "{}", case.tool);
    }
}

/// Prepares a case on a fresh flat server; returns the harness and the tool's own arguments.
fn prepared_flat(case: &DriftCase) -> (Harness, Value) {
    let h = Harness::new();
    (case.setup)(&h.vault);
    (h, (case.args)())
}

// r[verify drift.every-route]
#[tokio::test]
async fn a_stale_token_is_replay_drift_for_every_case_called_directly() {
    for case in cases() {
        let (h, args) = prepared_flat(&case);
        let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
        let refused = failure(&call(&client, case.tool, args.clone()).await);
        assert_eq!(
            refused["code"], "elicit_required",
            "{}: {refused}",
            case.tool
        );
        let token = h.mint(&refused, "stdio");
        (case.change)(&h.vault);
        let before = files(&h.vault);
        let mut with_token = args.clone();
        with_token["elicit_token"] = json!(token);
        let stale = failure(&call(&client, case.tool, with_token).await);
        assert_eq!(stale["code"], "replay_drift", "{}: {stale}", case.tool);
        assert_eq!(files(&h.vault), before, "{}: nothing applied", case.tool);
    }
}

// r[verify drift.every-route]
#[tokio::test]
async fn a_stale_request_state_is_replay_drift_for_every_case_called_directly() {
    for case in cases() {
        let (h, args) = prepared_flat(&case);
        let client = connect(h.core.clone(), modern(Reply::Approve)).await;
        let asked = match call_once(&client, case.tool, args.clone()).await {
            CallToolResponse::InputRequired(asked) => asked,
            other => panic!("{}: expected input_required, got {other:?}", case.tool),
        };
        (case.change)(&h.vault);
        let before = files(&h.vault);
        let stale = failure(&complete(
            resubmit(&client, case.tool, args.clone(), asked.request_state).await,
        ));
        assert_eq!(stale["code"], "replay_drift", "{}: {stale}", case.tool);
        assert_eq!(files(&h.vault), before, "{}: nothing applied", case.tool);
    }
}

// r[verify drift.every-route]
#[tokio::test]
async fn a_target_changed_while_the_shim_prompt_is_open_is_replay_drift_called_directly() {
    for case in cases() {
        let (h, args) = prepared_flat(&case);
        let shim = h.sibling(|_| {}, true);
        let mut client = legacy(Reply::Approve);
        let vault = h.vault.clone();
        let change = case.change;
        client.during_prompt = Some(Arc::new(move || change(&vault)));
        let client = connect(shim, client).await;
        let stale = failure(&call(&client, case.tool, args).await);
        assert_eq!(stale["code"], "replay_drift", "{}: {stale}", case.tool);
        assert_eq!(client.service().prompts(), 1, "{}", case.tool);
    }
}

// r[verify facade.mode.flat]
// r[verify facade.mode.lean]
#[test]
fn the_mode_is_read_from_the_config_and_a_wrong_one_is_named() {
    let dir = tempfile::TempDir::new().unwrap();
    let parse = |text: &str| Config::parse(text, "test.toml", dir.path());
    assert_eq!(parse("").unwrap().tool_facade.mode, FacadeMode::Flat);
    let lean = parse("[toolFacade]\nmode = \"lean\"\n").unwrap();
    assert_eq!(lean.tool_facade.mode, FacadeMode::Lean);
    let wrong = parse("[toolFacade]\nmode = \"slim\"\n")
        .unwrap_err()
        .to_string();
    assert!(wrong.contains("slim") || wrong.contains("mode"), "{wrong}");
    let unknown = parse("[toolFacade]\nmodes = \"lean\"\n")
        .unwrap_err()
        .to_string();
    assert!(unknown.contains("modes"), "{unknown}");
}
