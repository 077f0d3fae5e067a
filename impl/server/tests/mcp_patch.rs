//! patch_note's replace through the real MCP server on each direct route a confirmation
//! arrives by: a change to the note anywhere between the request and the redemption is
//! `replay_drift` and applies nothing, on the CLI token, the 2026-07-28 requestState round
//! trip and the legacy stdio shim (spec/drift.md `drift.bind.part-tools`,
//! `drift.every-route`; the facade's route is in mcp_facade.rs).

mod mcp_support;

use std::sync::Arc;

use mcp_support::*;
use rmcp::model::CallToolResponse;
use serde_json::{Value, json};

const NOTE: &str = "# A\nkeep\n# B\nold\n";
const EDITED: &str = "# A\nkeep, edited\n# B\nold\n";

fn replace_b() -> Value {
    json!({"path": "p.md", "operation": "replace",
           "anchor": {"type": "heading", "heading": "B"}, "content": "new"})
}

fn read(h: &Harness) -> String {
    std::fs::read_to_string(h.vault.join("p.md")).unwrap()
}

fn flat(_: &mut tc_server::config::Config) {}

// r[verify drift.bind.part-tools]
#[tokio::test]
async fn a_stale_cli_token_for_patch_note_is_replay_drift() {
    let h = Harness::new();
    std::fs::write(h.vault.join("p.md"), NOTE).unwrap();
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let refused = failure(&call(&client, "patch_note", replace_b()).await);
    assert_eq!(refused["code"], "elicit_required", "{refused}");
    let token = h.mint(&refused, "stdio");
    std::fs::write(h.vault.join("p.md"), EDITED).unwrap();
    let mut args = replace_b();
    args["elicit_token"] = json!(token);
    let stale = failure(&call(&client, "patch_note", args).await);
    assert_eq!(stale["code"], "replay_drift", "{stale}");
    assert_eq!(read(&h), EDITED);
    // A fresh confirmation of the note as it is now applies, to section B alone.
    let refused = failure(&call(&client, "patch_note", replace_b()).await);
    let token = h.mint(&refused, "stdio");
    let mut args = replace_b();
    args["elicit_token"] = json!(token);
    let done = success(&call(&client, "patch_note", args).await);
    assert_eq!(done["lines_removed"], 1);
    assert_eq!(read(&h), "# A\nkeep, edited\n# B\nnew\n");
}

// r[verify drift.bind.part-tools]
#[tokio::test]
async fn a_stale_request_state_for_patch_note_is_replay_drift() {
    let h = Harness::new();
    std::fs::write(h.vault.join("p.md"), NOTE).unwrap();
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let asked = match call_once(&client, "patch_note", replace_b()).await {
        CallToolResponse::InputRequired(asked) => asked,
        other => panic!("expected input_required, got {other:?}"),
    };
    std::fs::write(h.vault.join("p.md"), EDITED).unwrap();
    let stale = failure(&complete(
        resubmit(&client, "patch_note", replace_b(), asked.request_state).await,
    ));
    assert_eq!(stale["code"], "replay_drift", "{stale}");
    assert_eq!(read(&h), EDITED);
}

// r[verify drift.bind.part-tools]
#[tokio::test]
async fn a_note_changed_while_the_shim_prompt_is_open_is_replay_drift() {
    let h = Harness::new();
    std::fs::write(h.vault.join("p.md"), NOTE).unwrap();
    let shim = h.sibling(flat, true);
    let mut client = legacy(Reply::Approve);
    let vault = h.vault.clone();
    client.during_prompt = Some(Arc::new(move || {
        std::fs::write(vault.join("p.md"), EDITED).unwrap();
    }));
    let client = connect(shim, client).await;
    let stale = failure(&call(&client, "patch_note", replace_b()).await);
    assert_eq!(stale["code"], "replay_drift", "{stale}");
    assert_eq!(client.service().prompts(), 1);
    assert_eq!(read(&h), EDITED);
}
