//! The tag tools through the real MCP server: listed within the tool-list budget, answered
//! from the server's own index, and a rename approved on the 2026-07-28 round trip applies
//! once (spec/metadata.md `metadata.list-tags`, `metadata.rename-tag.confirmed`;
//! spec/tools.md `tools.list.budget`). Drift on every route, directly and through
//! call_capability, is driven by the `remove_tag` and `rename_tag` cases of mcp_facade.rs.

mod mcp_support;

use mcp_support::*;
use rmcp::model::CallToolResponse;
use serde_json::json;

const TAG_TOOLS: [&str; 6] = [
    "list_tags",
    "get_note_tags",
    "find_notes_by_tag",
    "add_tag",
    "remove_tag",
    "rename_tag",
];

fn put(h: &Harness, rel: &str, content: &str) {
    let path = h.vault.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

// r[verify tools.list.budget]
#[tokio::test]
async fn each_tag_tool_lists_in_at_most_a_thousand_bytes() {
    let h = Harness::new();
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let tools = client.list_all_tools().await.unwrap();
    for name in TAG_TOOLS {
        let tool = tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} is not listed"));
        let size = serde_json::to_vec(tool).unwrap().len();
        assert!(size <= 1_000, "{name} lists in {size} bytes");
    }
}

// r[verify metadata.list-tags]
// r[verify metadata.rename-tag.confirmed]
#[tokio::test]
async fn a_rename_approved_on_the_round_trip_applies_and_the_listing_follows() {
    let h = Harness::new();
    put(
        &h,
        "daily/2026-12-05.md",
        "---\ntags: [journal]\n---\nMet #Project/alpha today\n",
    );
    put(
        &h,
        "projects/alpha.md",
        "---\ntags:\n  - project/alpha  # main\n---\n# Alpha\n",
    );
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let listed = success(&call(&client, "list_tags", json!({})).await);
    assert_eq!(
        listed["tags"],
        json!([
            {"tag": "journal", "notes": 1},
            {"tag": "project", "notes": 2},
            {"tag": "project/alpha", "notes": 2},
        ])
    );
    let args = json!({"from": "project", "to": "work", "dry_run": false});
    let asked = match call_once(&client, "rename_tag", args.clone()).await {
        CallToolResponse::InputRequired(asked) => asked,
        other => panic!("expected input_required, got {other:?}"),
    };
    let done = success(&complete(
        resubmit(&client, "rename_tag", args, asked.request_state).await,
    ));
    assert_eq!(done["applied"], true);
    assert_eq!(done["notes_count"], 2);
    assert_eq!(
        std::fs::read_to_string(h.vault.join("daily/2026-12-05.md")).unwrap(),
        "---\ntags: [journal]\n---\nMet #work/alpha today\n"
    );
    let listed = success(&call(&client, "list_tags", json!({})).await);
    assert_eq!(
        listed["tags"],
        json!([
            {"tag": "journal", "notes": 1},
            {"tag": "work", "notes": 2},
            {"tag": "work/alpha", "notes": 2},
        ])
    );
}
