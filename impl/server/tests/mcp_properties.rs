//! The property and recent-change tools and search_notes' filters through the real MCP
//! server (in process, rmcp's own client): what each costs in `tools/list`, and a filtered
//! search, a property lookup and the recent changes answered over the wire with the folder
//! ACL applied (spec/metadata.md `## Properties`, `## Recent changes`; spec/index.md
//! `search.filters.*`; spec/tools.md `tools.list.budget`).

mod mcp_support;

use mcp_support::*;

use serde_json::{Value, json};
use tc_server::config::Config;
use tc_vault::acl::AclConfig;

async fn ok(client: &Client, tool: &str, arguments: Value) -> Value {
    success(&call(client, tool, arguments).await)
}

// r[verify tools.list.budget]
#[tokio::test]
async fn each_new_tool_lists_in_under_a_thousand_bytes() {
    let h = Harness::new();
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let tools = client.list_all_tools().await.unwrap();
    for name in [
        "list_properties",
        "read_property",
        "find_notes_by_property",
        "recent_changes",
    ] {
        let tool = tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} is not listed"));
        let bytes = serde_json::to_vec(tool).unwrap().len();
        assert!(bytes <= 1_000, "{name} lists in {bytes} bytes");
    }
    let search = tools.iter().find(|t| t.name == "search_notes").unwrap();
    let bytes = serde_json::to_vec(search).unwrap().len();
    // Its filters, sort and regex mode cost about 450 bytes over the text search's own.
    assert!(bytes <= 1_900, "search_notes lists in {bytes} bytes");
}

// r[verify metadata.properties.acl]
// r[verify search.filters.property]
#[tokio::test]
async fn properties_and_recent_changes_over_the_wire_hide_what_the_acl_hides() {
    let h = Harness::with(|c: &mut Config| {
        c.vaults[0].acl = Some(AclConfig {
            read_paths: Some(vec!["notes/**".to_owned()]),
            ..AclConfig::default()
        });
    });
    h.write(
        "notes/alpha.md",
        "---\nstatus: active\nproject:\n  owner: ann\n---\n# Alpha\nLaunch.\n",
    );
    h.write("notes/beta.md", "---\nstatus: done\n---\nBeta.\n");
    h.write(
        "secret/gamma.md",
        "---\nstatus: active\nsalary: 1\n---\nSecret.\n",
    );
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let found = ok(
        &client,
        "search_notes",
        json!({"property": {"key": "status", "value": "active"}}),
    )
    .await;
    assert_eq!(found["results"].as_array().unwrap().len(), 1, "{found}");
    assert_eq!(found["results"][0]["path"], "notes/alpha.md");
    let by_property = ok(
        &client,
        "find_notes_by_property",
        json!({"key": "project.owner", "value": "ANN"}),
    )
    .await;
    assert_eq!(by_property["notes"][0]["value"], "ann");
    let listed = ok(&client, "list_properties", json!({})).await;
    assert!(!listed.to_string().contains("salary"), "{listed}");
    let status = listed["properties"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["key"] == "status")
        .unwrap();
    assert_eq!(status["notes"], 2);
    let read = ok(
        &client,
        "read_property",
        json!({"path": "notes/alpha.md", "key": "project.owner"}),
    )
    .await;
    assert_eq!(read["value"], "ann");
    let recent = ok(&client, "recent_changes", json!({})).await;
    assert_eq!(recent["notes"].as_array().unwrap().len(), 2, "{recent}");
    assert!(!recent.to_string().contains("secret/"));
    let denied = failure(
        &call(
            &client,
            "read_property",
            json!({"path": "secret/gamma.md", "key": "salary"}),
        )
        .await,
    );
    assert_eq!(denied["code"], "acl_denied", "{denied}");
}
