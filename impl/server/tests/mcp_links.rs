//! Links of every kind through the real MCP server: `move_note` and `rewrite_link` rewrite
//! Markdown links and canvases' file references, and a note or canvas gaining a link or a
//! reference to the target between the request and the approval is `replay_drift` that
//! applies nothing, on the CLI token, the 2026-07-28 requestState round trip, the legacy
//! stdio shim and `call_capability` (spec/drift.md `drift.bind.move-note.canvases`,
//! `drift.bind.rewrite-link.canvases`, `drift.every-route`; spec/metadata.md
//! `metadata.links.move-kinds`, `metadata.links.rewrite-link-kinds`). The link reading
//! tools are called through the server too.

mod mcp_support;

use std::path::Path;
use std::sync::Arc;

use mcp_support::*;
use serde_json::{Value, json};
use tc_server::config::Config;
use tc_server::facade::FacadeMode;

/// A gated call with links of one kind, the change that makes a stale approval drift, and
/// what the vault holds once a fresh approval applied it.
struct Case {
    name: &'static str,
    tool: &'static str,
    args: fn() -> Value,
    setup: fn(&Path),
    change: fn(&Path),
    after: &'static [(&'static str, &'static str)],
}

fn put(vault: &Path, rel: &str, content: &str) {
    let path = vault.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn get(vault: &Path, rel: &str) -> Option<String> {
    std::fs::read_to_string(vault.join(rel)).ok()
}

const CANVAS: &str = "{\"nodes\":[{\"id\":\"a\",\"type\":\"file\",\"file\":\"old/Plan.md\",\"x\":0,\"y\":0,\"width\":400,\"height\":400}],\"edges\":[]}";
const LATE_CANVAS: &str =
    "{\"nodes\":[{\"id\":\"b\",\"type\":\"file\",\"file\":\"old/Plan.md\"}],\"edges\":[]}";

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "move_note, a Markdown link",
            tool: "move_note",
            args: || json!({"from": "old/Plan.md", "to": "new/Plan.md"}),
            setup: |v| {
                put(v, "old/Plan.md", "# Plan\n");
                put(v, "ref.md", "see [the plan](old/Plan.md#Goals) here\n");
            },
            change: |v| put(v, "late.md", "[late](<old/Plan.md>)\n"),
            after: &[
                ("new/Plan.md", "# Plan\n"),
                ("ref.md", "see [the plan](new/Plan.md#Goals) here\n"),
                ("late.md", "[late](<new/Plan.md>)\n"),
            ],
        },
        Case {
            name: "move_note, a canvas",
            tool: "move_note",
            args: || json!({"from": "old/Plan.md", "to": "new/Plan.md"}),
            setup: |v| {
                put(v, "old/Plan.md", "# Plan\n");
                put(v, "board.canvas", CANVAS);
            },
            change: |v| put(v, "late.canvas", LATE_CANVAS),
            after: &[
                ("new/Plan.md", "# Plan\n"),
                (
                    "board.canvas",
                    "{\"nodes\":[{\"id\":\"a\",\"type\":\"file\",\"file\":\"new/Plan.md\",\"x\":0,\"y\":0,\"width\":400,\"height\":400}],\"edges\":[]}",
                ),
                (
                    "late.canvas",
                    "{\"nodes\":[{\"id\":\"b\",\"type\":\"file\",\"file\":\"new/Plan.md\"}],\"edges\":[]}",
                ),
            ],
        },
        Case {
            name: "rewrite_link, a Markdown link",
            tool: "rewrite_link",
            args: || json!({"from_target": "Plan", "to_target": "Other", "dry_run": false}),
            setup: |v| {
                put(v, "old/Plan.md", "# Plan\n");
                put(v, "b/Other.md", "# Other\n");
                put(v, "ref.md", "[p](old/Plan%20.md) [q](old/Plan.md)\n");
            },
            change: |v| put(v, "late.md", "[late](/old/Plan.md)\n"),
            after: &[
                ("ref.md", "[p](old/Plan%20.md) [q](b/Other.md)\n"),
                ("late.md", "[late](/b/Other.md)\n"),
            ],
        },
        Case {
            name: "rewrite_link, a canvas",
            tool: "rewrite_link",
            args: || json!({"from_target": "old/Plan", "to_target": "b/Other", "dry_run": false}),
            setup: |v| {
                put(v, "old/Plan.md", "# Plan\n");
                put(v, "b/Other.md", "# Other\n");
                put(v, "board.canvas", CANVAS);
            },
            change: |v| put(v, "late.canvas", LATE_CANVAS),
            after: &[
                (
                    "board.canvas",
                    "{\"nodes\":[{\"id\":\"a\",\"type\":\"file\",\"file\":\"b/Other.md\",\"x\":0,\"y\":0,\"width\":400,\"height\":400}],\"edges\":[]}",
                ),
                (
                    "late.canvas",
                    "{\"nodes\":[{\"id\":\"b\",\"type\":\"file\",\"file\":\"b/Other.md\"}],\"edges\":[]}",
                ),
            ],
        },
    ]
}

/// Files with their bytes, in path order.
type Files = Vec<(String, Vec<u8>)>;

/// Every file under the vault with its bytes.
fn files(vault: &Path) -> Files {
    let mut out = Vec::new();
    let mut stack = vec![vault.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(vault)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

fn check_applied(case: &Case, vault: &Path) {
    for (path, content) in case.after {
        assert_eq!(
            get(vault, path).as_deref(),
            Some(*content),
            "{}: {path}",
            case.name
        );
    }
}

fn flat(_: &mut Config) {}

fn lean(config: &mut Config) {
    config.tool_facade.mode = FacadeMode::Lean;
}

// r[verify drift.bind.move-note.canvases]
// r[verify drift.bind.rewrite-link.canvases]
// r[verify metadata.links.move-kinds]
// r[verify metadata.links.rewrite-link-kinds]
#[tokio::test]
async fn a_stale_cli_token_is_replay_drift_then_a_fresh_one_rewrites_every_kind() {
    for case in cases() {
        let h = Harness::new();
        (case.setup)(&h.vault);
        let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
        let refused = failure(&call(&client, case.tool, (case.args)()).await);
        assert_eq!(
            refused["code"], "elicit_required",
            "{}: {refused}",
            case.name
        );
        let token = h.mint(&refused, "stdio");
        (case.change)(&h.vault);
        let before = files(&h.vault);
        let mut args = (case.args)();
        args["elicit_token"] = json!(token);
        let stale = failure(&call(&client, case.tool, args).await);
        assert_eq!(stale["code"], "replay_drift", "{}: {stale}", case.name);
        assert_eq!(files(&h.vault), before, "{}: nothing applied", case.name);

        let refused = failure(&call(&client, case.tool, (case.args)()).await);
        let token = h.mint(&refused, "stdio");
        let mut args = (case.args)();
        args["elicit_token"] = json!(token);
        success(&call(&client, case.tool, args).await);
        check_applied(&case, &h.vault);
    }
}

// r[verify drift.bind.move-note.canvases]
// r[verify drift.bind.rewrite-link.canvases]
#[tokio::test]
async fn a_stale_request_state_is_replay_drift() {
    for case in cases() {
        let h = Harness::new();
        (case.setup)(&h.vault);
        let client = connect(h.core.clone(), modern(Reply::Approve)).await;
        let asked = input_required(&client, case.tool, (case.args)()).await;
        (case.change)(&h.vault);
        let before = files(&h.vault);
        let stale = failure(&complete(
            resubmit(&client, case.tool, (case.args)(), asked.request_state).await,
        ));
        assert_eq!(stale["code"], "replay_drift", "{}: {stale}", case.name);
        assert_eq!(files(&h.vault), before, "{}: nothing applied", case.name);
        // Approved afresh, the round trip applies it.
        let asked = input_required(&client, case.tool, (case.args)()).await;
        success(&complete(
            resubmit(&client, case.tool, (case.args)(), asked.request_state).await,
        ));
        check_applied(&case, &h.vault);
    }
}

// r[verify drift.bind.move-note.canvases]
// r[verify drift.bind.rewrite-link.canvases]
// r[verify drift.bind.move-note.gained]
#[tokio::test]
async fn a_link_gained_while_the_shim_prompt_is_open_is_replay_drift() {
    for case in cases() {
        let h = Harness::new();
        (case.setup)(&h.vault);
        let shim = h.sibling(flat, true);
        let mut client = legacy(Reply::Approve);
        let vault = h.vault.clone();
        let change = case.change;
        // The vault as the prompt left it: the change made, nothing applied.
        let seen: Arc<std::sync::Mutex<Files>> = Arc::default();
        let record = Arc::clone(&seen);
        client.during_prompt = Some(Arc::new(move || {
            change(&vault);
            *record.lock().unwrap() = files(&vault);
        }));
        let client = connect(shim, client).await;
        let stale = failure(&call(&client, case.tool, (case.args)()).await);
        assert_eq!(stale["code"], "replay_drift", "{}: {stale}", case.name);
        assert_eq!(client.service().prompts(), 1);
        assert_eq!(
            files(&h.vault),
            *seen.lock().unwrap(),
            "{}: nothing applied",
            case.name
        );
    }
}

// r[verify drift.bind.move-note.canvases]
// r[verify drift.bind.rewrite-link.canvases]
#[tokio::test]
async fn a_stale_token_through_call_capability_is_replay_drift() {
    for case in cases() {
        let h = Harness::with(lean);
        (case.setup)(&h.vault);
        let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
        let call_args = json!({"name": case.tool, "args": (case.args)()});
        let refused = failure(&call(&client, "call_capability", call_args.clone()).await);
        assert_eq!(
            refused["code"], "elicit_required",
            "{}: {refused}",
            case.name
        );
        let token = h.mint(&refused, "stdio");
        (case.change)(&h.vault);
        let before = files(&h.vault);
        let mut with_token = call_args.clone();
        with_token["elicit_token"] = json!(token);
        let stale = failure(&call(&client, "call_capability", with_token).await);
        assert_eq!(stale["code"], "replay_drift", "{}: {stale}", case.name);
        assert_eq!(files(&h.vault), before, "{}: nothing applied", case.name);
    }
}

// r[verify metadata.links.backlinks]
// r[verify metadata.links.unresolved]
#[tokio::test]
async fn the_link_tools_answer_through_the_server() {
    let h = Harness::new();
    h.write("Projects/Plan.md", "[budget](Budget%20Sheet.md)\n");
    h.write("Projects/Budget Sheet.md", "[[Plan]] and [[Nowhere]]\n");
    h.write("Home.md", "[p](Projects/Plan.md)\n");
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let out = success(
        &call(
            &client,
            "get_backlinks",
            json!({"path": "Projects/Plan.md"}),
        )
        .await,
    );
    let sources: Vec<&str> = out["backlinks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["source"].as_str().unwrap())
        .collect();
    assert_eq!(sources, ["Home.md", "Projects/Budget Sheet.md"]);
    let out = success(&call(&client, "find_unresolved_links", json!({})).await);
    assert_eq!(out["links"][0]["target"], "Nowhere");
    let out = success(&call(&client, "find_orphans", json!({})).await);
    assert_eq!(out["notes"], json!(["Home.md"]));
    let out = success(&call(&client, "get_outgoing_links", json!({"path": "Home.md"})).await);
    assert_eq!(out["links"][0]["resolved"], "Projects/Plan.md");
}
