//! The format tools through the real MCP server (spec/formats.md): a canvas, drawing or base too
//! large for `governor.maxResponseBytes` is refused with `overflow`, nothing of it sent, on
//! the direct route and through `call_capability`; each tool lists in at most about 1,000
//! bytes. The gated tools' drift on every route is driven by their `DriftCase` entries in
//! mcp_facade.rs.

mod mcp_support;

use mcp_support::*;
use serde_json::json;

const CAP: u64 = 65_536;

/// The family's tools, as `tools/list` names them.
const TOOLS: &[&str] = &[
    "read_canvas",
    "create_canvas",
    "update_canvas",
    "read_excalidraw",
    "create_excalidraw",
    "read_base",
    "create_base",
    "update_base",
    "list_bookmarks",
    "add_bookmark",
    "remove_bookmark",
    "list_workspaces",
    "save_workspace",
];

// r[verify tools.list.budget]
#[tokio::test]
async fn the_format_tools_each_list_in_about_a_thousand_bytes() {
    let h = Harness::new();
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let tools = client.list_all_tools().await.unwrap();
    for name in TOOLS {
        let tool = tools.iter().find(|t| t.name == *name).unwrap();
        let size = serde_json::to_vec(tool).unwrap().len();
        eprintln!("{name}: {size} bytes listed");
        assert!(size <= 1_000, "{name} lists in {size} bytes");
    }
}

/// A canvas of `n` text nodes as Obsidian writes it.
fn canvas(n: usize) -> String {
    let nodes: Vec<String> = (0..n)
        .map(|i| {
            format!("\t\t{{\"id\":\"n{i}\",\"type\":\"text\",\"text\":\"note {i}\",\"x\":{i},\"y\":0,\"width\":250,\"height\":60}}")
        })
        .collect();
    format!(
        "{{\n\t\"nodes\":[\n{}\n\t],\n\t\"edges\":[]\n}}",
        nodes.join(",\n")
    )
}

/// A plain drawing of `n` rectangles.
fn drawing(n: usize) -> String {
    let elements: Vec<String> = (0..n)
        .map(|i| format!("{{\"id\":\"r{i}\",\"type\":\"rectangle\",\"x\":{i},\"y\":0}}"))
        .collect();
    format!(
        "## Drawing\n```json\n{{\"type\":\"excalidraw\",\"elements\":[{}]}}\n```\n%%",
        elements.join(",")
    )
}

// r[verify formats.large]
#[tokio::test]
async fn a_canvas_or_drawing_over_the_cap_is_refused_as_overflow_on_every_route() {
    let h = Harness::with(|c| {
        c.governor.max_response_bytes = CAP;
        c.tool_facade.mode = tc_server::facade::FacadeMode::Lean;
    });
    h.write("small.canvas", &canvas(10));
    h.write("huge.canvas", &canvas(2_000));
    h.write("small.excalidraw.md", &drawing(10));
    h.write("huge.excalidraw.md", &drawing(3_000));
    h.write("small.base", "views: []\n");
    let formulas: Vec<String> = (0..3_000)
        .map(|i| format!("  f{i}: price * {i}\n"))
        .collect();
    h.write("huge.base", &format!("formulas:\n{}", formulas.concat()));
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    for (tool, small, huge) in [
        ("read_canvas", "small.canvas", "huge.canvas"),
        (
            "read_excalidraw",
            "small.excalidraw.md",
            "huge.excalidraw.md",
        ),
    ] {
        let ok = success(&call(&client, tool, json!({"path": small})).await);
        assert_eq!(ok["path"], small);
        let direct = call(&client, tool, json!({"path": huge})).await;
        let refusal = failure(&direct);
        assert_eq!(refusal["code"], "overflow", "{tool}: {refusal}");
        let sent = serde_json::to_vec(&direct).unwrap().len() as u64;
        assert!(sent < CAP, "{tool}: a refusal of {sent} bytes");
        let facade = call(
            &client,
            "call_capability",
            json!({"name": tool, "args": {"path": huge}}),
        )
        .await;
        assert_eq!(
            failure(&facade)["code"],
            "overflow",
            "{tool} through the facade"
        );
    }
}
