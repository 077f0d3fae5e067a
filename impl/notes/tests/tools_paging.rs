//! read_notes and list_notes through the registry and the pipeline (their paging itself is
//! tested with paging_tools).

mod tools_support;

use serde_json::json;
use tc_tools::CallControl;
use tc_tools::{CallerContext, ErrorCode};
use tc_vault::acl::{AclConfig, Scopes};
use tools_support::{Fx, caller, code};

// r[verify tools.read-notes]
#[test]
fn read_notes_through_the_pipeline_pages_with_a_cursor() {
    let fx = Fx::new();
    for i in 0..40 {
        fx.put(&format!("n/{i:02}.md"), &"x".repeat(4000));
    }
    let prepared = fx
        .pipeline
        .prepare(&caller(), "read_notes", &json!({"folder": "n"}))
        .unwrap();
    assert!(!prepared.needs_confirmation());
    let out = fx
        .pipeline
        .execute(
            &prepared,
            prepared.token_approval(),
            &CallControl::default(),
        )
        .unwrap();
    // The page is serialized once, and costs no more than the cap as sent.
    let tc_tools::ToolOutput::Serialized(text) = &out else {
        panic!("a page leaves the tool serialized: {out:?}");
    };
    assert!(
        tc_tools::wire_cost(text.as_bytes()) + tc_tools::paging::RESPONSE_FRAME_BYTES
            <= tools_support::PAGE_CAP
    );
    let mut page = out.to_value();
    let mut seen = page["notes"].as_array().unwrap().len();
    while let Some(cursor) = page["next_cursor"].as_str().map(str::to_owned) {
        page = fx
            .call("read_notes", json!({"folder": "n", "cursor": cursor}))
            .unwrap();
        seen += page["notes"].as_array().unwrap().len();
    }
    assert_eq!(seen, 40);
    assert_eq!(fx.requested(), 0);
    assert_eq!(
        code(fx.call("read_notes", json!({"folder": "n", "paths": ["n/00.md"]}))),
        ErrorCode::ValidationError
    );
    assert_eq!(
        code(fx.call("read_notes", json!({"folder": "n", "cursor": "garbage"}))),
        ErrorCode::InvalidInput
    );
}

// r[verify tools.list-notes]
#[test]
fn list_notes_lists_only_readable_notes_and_needs_read_scope() {
    let fx = Fx::with(
        Some(AclConfig {
            read_paths: Some(vec!["public/**".into()]),
            ..AclConfig::default()
        }),
        Vec::new(),
    );
    fx.put("public/a.md", "a");
    fx.put("private/b.md", "b");
    let page = fx.call("list_notes", json!({})).unwrap();
    let paths: Vec<&str> = page["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["public/a.md"]);
    assert_eq!(page["next_cursor"], serde_json::Value::Null);
    let writer = CallerContext::new("w", Scopes::granted(["write:notes"]));
    let refused = fx.call_as(&writer, "list_notes", json!({})).unwrap_err();
    assert_eq!(refused.code, ErrorCode::AclDenied);
    assert_eq!(refused.details.unwrap()["scope"], "read:notes");
}
