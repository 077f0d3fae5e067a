//! The bridge's tools through the whole MCP server, against a stand-in Obsidian that speaks
//! the Local REST API's and the companion's routes (tc_bridge::testing): every confirmation
//! route of spec/trips.md runs the command exactly once, the refusals before the gate raise
//! nothing, and a failure after the request was sent keeps the approval spent.

mod mcp_support;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use mcp_support::*;
use rmcp::model::{CallToolRequestParams, CallToolResponse, InputResponses};
use serde_json::{Value, json};
use tc_bridge::testing::{Behavior, FakeObsidian, KEY, Tls};
use tc_gate::EventName;
use tc_server::config::Config;

/// A key file for the stand-in, 0600.
fn key_file() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rest-api.key");
    std::fs::write(&path, KEY).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    (dir, path)
}

fn wire(
    url: &str,
    key: &std::path::Path,
    timeout_ms: u64,
    enabled: bool,
) -> impl FnOnce(&mut Config) {
    let url = url.to_owned();
    let key = key.to_path_buf();
    move |config: &mut Config| {
        let vault = &mut config.vaults[0];
        vault.bridge = Some(tc_bridge::BridgeConfig {
            url,
            api_key_file: key,
            timeout_ms,
        });
        vault.commands = tc_bridge::CommandsConfig {
            enabled,
            allowlist: vec!["editor:toggle-bold".into()],
        };
    }
}

fn bold() -> Value {
    json!({"command_id": "editor:toggle-bold"})
}

// r[verify bridge.route.command]
// r[verify drift.residual.opaque-effects]
#[tokio::test]
async fn every_confirmation_route_runs_the_command_once() {
    let obsidian = FakeObsidian::start(Tls::SelfSigned);
    let (_keys, key) = key_file();
    let h = Harness::with(wire(&obsidian.url, &key, 5_000, true));

    // 1. CLI token (no elicitation capability).
    let plain = connect(
        h.core.clone(),
        TestClient::new(
            rmcp::model::ProtocolVersion::V_2025_11_25,
            None,
            Reply::Approve,
        ),
    )
    .await;
    let refusal = failure(&call(&plain, "execute_command", bold()).await);
    assert_eq!(refusal["code"], "elicit_required");
    assert_eq!(refusal["details"]["state_fp"], "");
    let token = h.mint(&refusal, "stdio");
    let mut with_token = bold();
    with_token["elicit_token"] = json!(token);
    let done = success(&call(&plain, "execute_command", with_token.clone()).await);
    assert_eq!(done["executed"], true);
    assert_eq!(obsidian.commands().len(), 1);
    let again = failure(&call(&plain, "execute_command", with_token).await);
    assert_eq!(again["details"]["token_rejected"], "spent");
    assert_eq!(obsidian.commands().len(), 1);

    // 2. The 2026-07-28 round trip: the form names the command and the residual.
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let asked = match call_once(&client, "execute_command", bold()).await {
        CallToolResponse::InputRequired(asked) => asked,
        other => panic!("expected input_required, got {other:?}"),
    };
    let form = serde_json::to_value(&asked).unwrap();
    let message = form["inputRequests"]["confirm"]["params"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.contains("editor:toggle-bold"), "{message}");
    assert!(message.contains("arguments alone"), "{message}");
    assert_eq!(
        obsidian.commands().len(),
        1,
        "nothing runs while the form is open"
    );
    let mut responses = InputResponses::new();
    responses.insert("confirm".to_owned(), Reply::Approve.json());
    let params = CallToolRequestParams::new("execute_command")
        .with_arguments(args(bold()))
        .with_input_responses(responses)
        .with_request_state(asked.request_state.clone().unwrap());
    match client.call_tool_once(params).await.unwrap() {
        CallToolResponse::Complete(result) => assert_eq!(success(&result)["executed"], true),
        other => panic!("expected a result, got {other:?}"),
    }
    assert_eq!(obsidian.commands().len(), 2);

    // 3. The legacy stdio shim: the server asks, the client approves.
    let shim = h.sibling(wire(&obsidian.url, &key, 5_000, true), true);
    let legacy_client = connect(shim.clone(), legacy(Reply::Approve)).await;
    success(&call(&legacy_client, "execute_command", bold()).await);
    assert_eq!(legacy_client.service().prompts(), 1);
    assert_eq!(obsidian.commands().len(), 3);

    // 4. Legacy without the shim: the plain refusal, nothing runs.
    let legacy_plain = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let refusal = failure(&call(&legacy_plain, "execute_command", bold()).await);
    assert_eq!(refusal["code"], "elicit_required");
    assert_eq!(obsidian.commands().len(), 3);

    // trigger_quickadd takes the same round trip.
    let quick = json!({"action_name": "Daily log", "args": {"mood": "fine"}});
    let driven = client
        .call_tool(CallToolRequestParams::new("trigger_quickadd").with_arguments(args(quick)))
        .await
        .unwrap();
    assert_eq!(success(&driven)["triggered"], true);
    assert_eq!(obsidian.quickadds()[0]["variables"]["mood"], "fine");
}

// r[verify bridge.command.disabled]
#[tokio::test]
async fn a_disabled_command_raises_nothing_on_any_client() {
    let obsidian = FakeObsidian::start(Tls::Plain);
    let (_keys, key) = key_file();
    let h = Harness::with(wire(&obsidian.url, &key, 5_000, false));
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let refusal = failure(&call(&client, "execute_command", bold()).await);
    assert_eq!(refusal["code"], "execute_command_disabled");
    assert_eq!(refusal["retryable"], false);
    let refusal = failure(
        &call(
            &client,
            "execute_command",
            json!({"command_id": "app:reload"}),
        )
        .await,
    );
    assert_eq!(refusal["code"], "execute_command_disabled");
    assert_eq!(client.service().prompts(), 0);
    assert_eq!(h.events(EventName::Requested), 0);
    assert!(obsidian.requests().iter().all(|r| !r.starts_with("POST")));
}

// r[verify bridge.fail.after-send]
// r[verify release.keeps-spent]
#[tokio::test]
async fn a_timeout_after_sending_is_reported_once_and_the_token_stays_spent() {
    let obsidian = FakeObsidian::start_with(
        Tls::SelfSigned,
        Behavior {
            delay: Duration::from_millis(1_500),
            ..Behavior::default()
        },
    );
    let (_keys, key) = key_file();
    let h = Harness::with(wire(&obsidian.url, &key, 300, true));
    let client = connect(
        h.core.clone(),
        TestClient::new(
            rmcp::model::ProtocolVersion::V_2025_11_25,
            None,
            Reply::Approve,
        ),
    )
    .await;
    let refusal = failure(&call(&client, "execute_command", bold()).await);
    let token = h.mint(&refusal, "stdio");
    let mut with_token = bold();
    with_token["elicit_token"] = json!(token);
    let timed_out = failure(&call(&client, "execute_command", with_token.clone()).await);
    assert_eq!(timed_out["code"], "operation_timeout");
    assert_eq!(timed_out["retryable"], false);
    assert_eq!(timed_out["details"]["sent"], true);
    assert_eq!(h.events(EventName::Released), 0);
    tokio::time::sleep(Duration::from_millis(1_600)).await;
    assert_eq!(obsidian.commands().len(), 1, "sent once, never again");
    let again = failure(&call(&client, "execute_command", with_token).await);
    assert_eq!(again["details"]["token_rejected"], "spent");
    assert_eq!(obsidian.commands().len(), 1);
}

#[tokio::test]
async fn the_bridge_tools_are_listed_with_truthful_annotations() {
    let h = Harness::new();
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let tools = client.list_all_tools().await.unwrap();
    let find = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        serde_json::to_value(tool).unwrap()
    };
    let command = find("execute_command");
    assert_eq!(command["annotations"]["readOnlyHint"], false);
    assert_eq!(command["annotations"]["idempotentHint"], false);
    assert_eq!(command["inputSchema"]["required"], json!(["command_id"]));
    assert!(find("trigger_quickadd")["inputSchema"]["properties"]["args"].is_object());
    assert_eq!(find("bridge_status")["annotations"]["readOnlyHint"], true);
    // Unconfigured: the status says so, and the tools refuse before any confirmation.
    let status = success(&call(&client, "bridge_status", json!({})).await);
    assert_eq!(status["configured"], false);
    let refusal = failure(&call(&client, "trigger_quickadd", json!({"action_name": "x"})).await);
    assert_eq!(refusal["code"], "plugin_unreachable");
    assert_eq!(client.service().prompts(), 0);
}
