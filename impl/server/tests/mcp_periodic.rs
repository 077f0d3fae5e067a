//! The periodic note and template tools through the real MCP server: each listed within the
//! tool-list budget, and a person's journal driven by name and through call_capability
//! (spec/periodic.md `periodic.find-or-create`, `periodic.append`, `periodic.list`,
//! `templates.create`; spec/tools.md `tools.list.budget`). Every tool here is free, so no
//! drift case is needed.

mod mcp_support;

use mcp_support::*;
use serde_json::json;

const PERIODIC_TOOLS: [&str; 7] = [
    "get_periodic_note",
    "create_periodic_note",
    "find_or_create_periodic_note",
    "append_to_periodic_note",
    "list_periodic_notes",
    "list_templates",
    "create_from_template",
];

// r[verify tools.list.budget]
#[tokio::test]
async fn each_periodic_tool_lists_in_at_most_a_thousand_bytes() {
    let h = Harness::new();
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let tools = client.list_all_tools().await.unwrap();
    for name in PERIODIC_TOOLS {
        let tool = tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} is not listed"));
        let size = serde_json::to_vec(tool).unwrap().len();
        assert!(size <= 1_000, "{name} lists in {size} bytes");
        let annotations = tool.annotations.as_ref().unwrap();
        assert_eq!(annotations.destructive_hint, Some(false), "{name}");
    }
}

// r[verify periodic.find-or-create]
// r[verify periodic.append]
// r[verify periodic.list]
// r[verify templates.create]
#[tokio::test]
async fn a_journal_is_kept_by_name_and_through_call_capability() {
    let h = Harness::with(|c| c.tool_facade.mode = tc_server::facade::FacadeMode::Lean);
    h.write(
        ".obsidian/daily-notes.json",
        r#"{"folder": "Journal", "format": "YYYY/MM/YYYY-MM-DD", "template": "Templates/Daily"}"#,
    );
    h.write(".obsidian/templates.json", r#"{"folder": "Templates"}"#);
    h.write("Templates/Daily.md", "# {{date:dddd, MMMM D}}\n\n## Log\n");
    h.write("Templates/Person.md", "# {{title}}\nmet {{where}}\n");
    h.write("Journal/2026/12/2026-12-04.md", "# Friday\n");
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let made = success(
        &call(
            &client,
            "find_or_create_periodic_note",
            json!({"period": "daily", "date": "2026-12-05"}),
        )
        .await,
    );
    assert_eq!(made["path"], "Journal/2026/12/2026-12-05.md");
    assert_eq!(made["created"], true);
    let appended = success(
        &call(
            &client,
            "call_capability",
            json!({"name": "append_to_periodic_note",
                   "args": {"period": "daily", "date": "2026-12-05", "heading": "Log", "content": "- met Ann"}}),
        )
        .await,
    );
    assert_eq!(appended["line"], 4);
    assert_eq!(
        h.read("Journal/2026/12/2026-12-05.md").unwrap(),
        "# Saturday, December 5\n\n## Log\n- met Ann\n"
    );
    let listed = success(
        &call(
            &client,
            "list_periodic_notes",
            json!({"period": "daily", "from": "2026-12-01"}),
        )
        .await,
    );
    assert_eq!(
        listed["notes"],
        json!([
            {"path": "Journal/2026/12/2026-12-04.md", "start": "2026-12-04"},
            {"path": "Journal/2026/12/2026-12-05.md", "start": "2026-12-05"},
        ])
    );
    let templates = success(&call(&client, "list_templates", json!({})).await);
    assert_eq!(
        templates["templates"],
        json!(["Templates/Daily.md", "Templates/Person.md"])
    );
    success(
        &call(
            &client,
            "create_from_template",
            json!({"template": "Templates/Person.md", "path": "People/Ann.md", "variables": {"where": "at the market"}}),
        )
        .await,
    );
    assert_eq!(
        h.read("People/Ann.md").unwrap(),
        "# Ann\nmet at the market\n"
    );
    let refused = failure(
        &call(
            &client,
            "get_periodic_note",
            json!({"period": "weekly", "date": "2026-12-05"}),
        )
        .await,
    );
    assert_eq!(refused["code"], "periodic_not_configured");
}
