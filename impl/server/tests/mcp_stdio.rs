//! In-process end-to-end tests of the MCP server over a stdio-like duplex, with rmcp's own
//! client, in both protocol eras: tools/list, the dispatch pipeline, every confirmation
//! route of spec/trips.md, the governor, and resources.

mod mcp_support;

use std::sync::atomic::Ordering;

use mcp_support::*;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ElicitationCapability, InputResponses,
    ProtocolVersion, ReadResourceRequestParams, UrlElicitationCapability,
};
use rmcp::service::ServiceError;
use serde_json::{Value, json};
use tc_gate::EventName;
use tc_server::config::Config;

const NOTE: &str = "notes/a.md";

fn delete_args() -> Value {
    json!({"path": NOTE})
}

fn harness_with_note() -> Harness {
    let h = Harness::new();
    h.write(NOTE, "# A\n\nsome text\n");
    h
}

/// Resends `arguments` with the answer and the echoed requestState.
async fn resubmit(
    client: &Client,
    tool: &str,
    arguments: Value,
    state: Option<String>,
    reply: Option<Value>,
) -> CallToolResponse {
    let mut params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args(arguments));
    if let Some(reply) = reply {
        let mut responses = InputResponses::new();
        responses.insert("confirm".to_owned(), reply);
        params = params.with_input_responses(responses);
    }
    if let Some(state) = state {
        params = params.with_request_state(state);
    }
    client.call_tool_once(params).await.unwrap()
}

fn complete(response: CallToolResponse) -> rmcp::model::CallToolResult {
    match response {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a complete result, got {other:?}"),
    }
}

// r[verify dispatch.one-pipeline]
#[tokio::test]
async fn tools_list_snapshot_in_both_eras() {
    let h = Harness::new();
    for client in [modern(Reply::Approve), legacy(Reply::Approve)] {
        let client = connect(h.core.clone(), client).await;
        let tools = client.list_all_tools().await.unwrap();
        let listed: Vec<Value> = tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "annotations": t.annotations,
                    "required": t.input_schema.get("required"),
                    "properties": t.input_schema.get("properties").and_then(Value::as_object).map(|p| p.keys().cloned().collect::<Vec<_>>()),
                })
            })
            .collect();
        insta::assert_json_snapshot!("tools_list", listed);
        client.cancel().await.unwrap();
    }
}

// r[verify results.success]
#[tokio::test]
async fn a_free_call_succeeds_with_structured_content_and_the_same_text() {
    let h = harness_with_note();
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let result = call(&client, "read_notes", json!({"paths": [NOTE]})).await;
    let page = success(&result);
    assert_eq!(page["notes"][0]["path"], NOTE);
    assert_eq!(page["next_cursor"], Value::Null);
    let written = call(
        &client,
        "write_note",
        json!({"path": "new.md", "content": "hi"}),
    )
    .await;
    success(&written);
    assert_eq!(h.read("new.md").as_deref(), Some("hi"));
}

// r[verify dispatch.unknown-tool]
#[tokio::test]
async fn an_unknown_tool_is_invalid_params() {
    let h = Harness::new();
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let error = client
        .call_tool_once(CallToolRequestParams::new("no_such_tool"))
        .await
        .unwrap_err();
    match error {
        ServiceError::McpError(error) => assert_eq!(error.code.0, -32602),
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

// r[verify dispatch.schema]
#[tokio::test]
async fn a_malformed_call_is_a_validation_error_and_raises_nothing() {
    let h = harness_with_note();
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let result = call(&client, "delete_note", json!({"path": 7})).await;
    assert_eq!(failure(&result)["code"], "validation_error");
    assert_eq!(h.events(EventName::Requested), 0);
}

// r[verify trip.no-capability]
// r[verify results.elicit-required]
// r[verify results.elicit-required.directive]
// r[verify gate.token.single-use]
// r[verify events.requested]
// r[verify trip.consumed-event-per-run]
// r[verify results.recovery]
#[tokio::test]
async fn cli_token_route_in_both_eras() {
    for version in [
        ProtocolVersion::V_2026_07_28,
        ProtocolVersion::V_2025_11_25,
        ProtocolVersion::V_2025_06_18,
    ] {
        let h = harness_with_note();
        // A client with no elicitation capability gets the plain refusal.
        let client = connect(
            h.core.clone(),
            TestClient::new(version.clone(), None, Reply::Approve),
        )
        .await;
        let refused = call(&client, "delete_note", delete_args()).await;
        let refusal = failure(&refused);
        assert_eq!(refusal["code"], "elicit_required");
        assert_eq!(refusal["retryable"], false);
        assert!(
            refusal["message"]
                .as_str()
                .unwrap()
                .starts_with("STOP and ask the human")
        );
        assert!(refusal["recovery"]["instruction"].is_string());
        let command = refusal["recovery"]["command"].as_str().unwrap();
        assert!(
            command.contains("--caller stdio") && command.contains("--state-fp"),
            "{command}"
        );
        assert!(command.contains(refusal["details"]["args_hash"].as_str().unwrap()));
        assert_eq!(h.events(EventName::Requested), 1);
        assert!(h.read(NOTE).is_some(), "nothing applied");

        let token = h.mint(&refusal, "stdio");
        let mut with_token = delete_args();
        with_token["elicit_token"] = json!(token);
        success(&call(&client, "delete_note", with_token.clone()).await);
        assert!(h.read(NOTE).is_none(), "the delete ran");
        assert_eq!(h.events(EventName::Consumed), 1);

        // The same token again: refused, with a fresh elicit_required.
        h.write(NOTE, "again\n");
        let again = failure(&call(&client, "delete_note", with_token).await);
        assert_eq!(again["code"], "elicit_required");
        assert_eq!(again["details"]["token_rejected"], "spent");
        assert!(h.read(NOTE).is_some());
        assert_eq!(client.service().prompts(), 0);
    }
}

// r[verify trip.modern.shape]
// r[verify trip.modern.resubmit]
// r[verify trip.modern.transports]
// r[verify trip.bare-capability]
// r[verify trip.accept-only]
// r[verify trip.consumed-event-per-run]
#[tokio::test]
async fn modern_round_trip_accept_applies_once() {
    let h = harness_with_note();
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let asked = input_required(&client, "delete_note", delete_args()).await;
    let wire = serde_json::to_value(&asked).unwrap();
    assert_eq!(wire["resultType"], "input_required");
    let confirm = &wire["inputRequests"]["confirm"];
    assert_eq!(confirm["method"], "elicitation/create");
    assert_eq!(
        confirm["params"]["requestedSchema"]["required"],
        json!(["approve"])
    );
    assert_eq!(
        confirm["params"]["requestedSchema"]["properties"]["approve"]["type"],
        "boolean"
    );
    assert!(
        confirm["params"]["message"]
            .as_str()
            .unwrap()
            .contains("delete_note")
    );
    assert!(asked.request_state.is_some());
    assert_eq!(h.events(EventName::Requested), 1);
    assert!(h.read(NOTE).is_some());

    let done = complete(
        resubmit(
            &client,
            "delete_note",
            delete_args(),
            asked.request_state.clone(),
            Some(Reply::Approve.json()),
        )
        .await,
    );
    success(&done);
    assert!(h.read(NOTE).is_none());
    assert_eq!(h.events(EventName::Consumed), 1);

    // rmcp's high-level call_tool drives the same round trip through the ClientHandler.
    h.write(NOTE, "back\n");
    let driven = client
        .call_tool(CallToolRequestParams::new("delete_note").with_arguments(args(delete_args())))
        .await
        .unwrap();
    success(&driven);
    assert_eq!(client.service().prompts(), 1);
    assert!(h.read(NOTE).is_none());
}

// r[verify trip.decline]
// r[verify trip.decline.text]
// r[verify trip.decline.no-redispatch]
// r[verify results.approval-declined]
#[tokio::test]
async fn modern_decline_and_approve_false_are_hard_stops() {
    for reply in [Reply::Decline, Reply::ApproveFalse] {
        let h = harness_with_note();
        let client = connect(h.core.clone(), modern(reply)).await;
        let asked = input_required(&client, "delete_note", delete_args()).await;
        let result = complete(
            resubmit(
                &client,
                "delete_note",
                delete_args(),
                asked.request_state,
                Some(reply.json()),
            )
            .await,
        );
        let refusal = failure(&result);
        assert_eq!(refusal["code"], "approval_declined");
        assert_eq!(refusal["details"]["reason"], "approval_declined");
        assert_eq!(refusal["retryable"], false);
        let message = refusal["message"].as_str().unwrap();
        assert!(
            message.contains("declined") && message.contains("Do not retry"),
            "{message}"
        );
        assert!(h.read(NOTE).is_some(), "nothing applied");
        assert_eq!(
            h.events(EventName::Consumed),
            0,
            "no dispatch after a decline"
        );
        assert!(
            h.core
                .metrics()
                .encode()
                .contains(r#"obsidian_tc_elicit_refused_total{reason="approval_declined"} 1"#),
            "a decline is counted as a refused approval"
        );

        // Through rmcp's automatic loop too: one prompt, then the hard stop.
        let auto = client
            .call_tool(
                CallToolRequestParams::new("delete_note").with_arguments(args(delete_args())),
            )
            .await
            .unwrap();
        assert_eq!(failure(&auto)["code"], "approval_declined");
        assert_eq!(client.service().prompts(), 1);
        assert!(h.read(NOTE).is_some());
    }
}

// r[verify trip.cancel]
// r[verify trip.cancel.text]
// r[verify results.approval-not-obtained]
// r[verify metrics.confirmations]
// r[verify trip.malformed-answer]
#[tokio::test]
async fn modern_cancel_points_at_the_cli_route() {
    for reply in [Reply::Cancel, Reply::Malformed] {
        let h = harness_with_note();
        let client = connect(h.core.clone(), modern(reply)).await;
        let asked = input_required(&client, "delete_note", delete_args()).await;
        let result = complete(
            resubmit(
                &client,
                "delete_note",
                delete_args(),
                asked.request_state,
                Some(reply.json()),
            )
            .await,
        );
        let refusal = failure(&result);
        assert_eq!(refusal["code"], "approval_not_obtained");
        assert_eq!(refusal["details"]["reason"], "approval_not_obtained");
        assert!(
            h.core
                .metrics()
                .encode()
                .contains(r#"obsidian_tc_elicit_refused_total{reason="approval_not_obtained"} 1"#),
            "a cancel is counted as a refused approval"
        );
        let command = refusal["recovery"]["command"].as_str().unwrap();
        assert!(
            command.starts_with("obsidian-tc elicit --hash"),
            "{command}"
        );
        assert!(h.read(NOTE).is_some());
        // The operator can approve out of band with exactly that command.
        let token = h.mint(&refusal, "stdio");
        let mut with_token = delete_args();
        with_token["elicit_token"] = json!(token);
        success(&call(&client, "delete_note", with_token).await);
        assert!(h.read(NOTE).is_none());
    }
}

// r[verify trip.url-only]
#[tokio::test]
async fn a_url_only_client_gets_elicit_required() {
    let h = harness_with_note();
    let caps = ElicitationCapability::new().with_url(UrlElicitationCapability::new());
    let client = connect(
        h.core.clone(),
        TestClient::new(ProtocolVersion::V_2026_07_28, Some(caps), Reply::Approve),
    )
    .await;
    let result = call(&client, "delete_note", delete_args()).await;
    assert_eq!(failure(&result)["code"], "elicit_required");
}

// r[verify drift.every-route]
// r[verify drift.refuse]
#[tokio::test]
async fn drift_between_prompt_and_resubmission_is_replay_drift() {
    let h = harness_with_note();
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let asked = input_required(&client, "delete_note", delete_args()).await;
    h.write(NOTE, "# A\n\nchanged while the prompt was open\n");
    let result = complete(
        resubmit(
            &client,
            "delete_note",
            delete_args(),
            asked.request_state,
            Some(Reply::Approve.json()),
        )
        .await,
    );
    let refusal = failure(&result);
    assert_eq!(refusal["code"], "replay_drift");
    assert_eq!(refusal["retryable"], true);
    assert!(h.read(NOTE).unwrap().contains("changed"), "nothing applied");
}

// r[verify state.invalid-fresh]
// r[verify state.ttl]
// r[verify approval.expiry]
#[tokio::test]
async fn forged_or_expired_state_offers_a_fresh_confirmation() {
    let h = harness_with_note();
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let asked = input_required(&client, "delete_note", delete_args()).await;
    let state = asked.request_state.clone().unwrap();

    let forged = format!("{state}x");
    let answer = resubmit(
        &client,
        "delete_note",
        delete_args(),
        Some(forged),
        Some(Reply::Approve.json()),
    )
    .await;
    assert!(
        matches!(answer, CallToolResponse::InputRequired(_)),
        "{answer:?}"
    );
    let no_state = resubmit(
        &client,
        "delete_note",
        delete_args(),
        None,
        Some(Reply::Approve.json()),
    )
    .await;
    assert!(matches!(no_state, CallToolResponse::InputRequired(_)));
    assert!(h.read(NOTE).is_some());

    h.clock.advance_ms(301_000);
    let expired = resubmit(
        &client,
        "delete_note",
        delete_args(),
        Some(state),
        Some(Reply::Approve.json()),
    )
    .await;
    assert!(
        matches!(expired, CallToolResponse::InputRequired(_)),
        "{expired:?}"
    );
    assert!(h.read(NOTE).is_some());
}

// r[verify approval.bound]
#[tokio::test]
async fn a_state_for_other_arguments_approves_nothing() {
    let h = harness_with_note();
    h.write("notes/b.md", "b\n");
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let asked = input_required(&client, "delete_note", delete_args()).await;
    let answer = resubmit(
        &client,
        "delete_note",
        json!({"path": "notes/b.md"}),
        asked.request_state,
        Some(Reply::Approve.json()),
    )
    .await;
    assert!(matches!(answer, CallToolResponse::InputRequired(_)));
    assert!(h.read("notes/b.md").is_some());
}

// r[verify state.replayable]
#[tokio::test]
async fn by_default_a_state_replays_within_its_ttl() {
    let h = harness_with_note();
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let asked = input_required(
        &client,
        "delete_note",
        json!({"path": NOTE, "permanent": true}),
    )
    .await;
    success(&complete(
        resubmit(
            &client,
            "delete_note",
            json!({"path": NOTE, "permanent": true}),
            asked.request_state.clone(),
            Some(Reply::Approve.json()),
        )
        .await,
    ));
    // The same note again (the empty-file state before it existed is a different target
    // state, so recreate it with the content it had).
    h.write(NOTE, "# A\n\nsome text\n");
    success(&complete(
        resubmit(
            &client,
            "delete_note",
            json!({"path": NOTE, "permanent": true}),
            asked.request_state,
            Some(Reply::Approve.json()),
        )
        .await,
    ));
    assert!(h.read(NOTE).is_none());
}

// r[verify state.ext.single-use]
// r[verify state.ext.opt-in]
#[tokio::test]
async fn with_the_extension_a_state_applies_once() {
    let h = Harness::with(|c: &mut Config| c.request_state_single_use = true);
    h.write(NOTE, "# A\n\nsome text\n");
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let a = json!({"path": NOTE, "permanent": true});
    let asked = input_required(&client, "delete_note", a.clone()).await;
    success(&complete(
        resubmit(
            &client,
            "delete_note",
            a.clone(),
            asked.request_state.clone(),
            Some(Reply::Approve.json()),
        )
        .await,
    ));
    h.write(NOTE, "# A\n\nsome text\n");
    let again = resubmit(
        &client,
        "delete_note",
        a,
        asked.request_state,
        Some(Reply::Approve.json()),
    )
    .await;
    assert!(
        matches!(again, CallToolResponse::InputRequired(_)),
        "{again:?}"
    );
    assert!(h.read(NOTE).is_some());
}

// r[verify trip.legacy-shim]
// r[verify trip.legacy-shim.no-answer]
// r[verify trip.legacy-shim.opt-in]
// r[verify trip.legacy-shim.single-use]
// r[verify trip.never-twice]
#[tokio::test]
async fn legacy_shim_accept_decline_cancel() {
    for (reply, code) in [
        (Reply::Approve, None),
        (Reply::Decline, Some("approval_declined")),
        (Reply::ApproveFalse, Some("approval_declined")),
        (Reply::Cancel, Some("approval_not_obtained")),
        (Reply::Fail, Some("approval_not_obtained")),
        (Reply::Malformed, Some("approval_not_obtained")),
    ] {
        let h = harness_with_note();
        let shim = h.sibling(|_| {}, true);
        let client = connect(shim.clone(), legacy(reply)).await;
        let result = call(&client, "delete_note", delete_args()).await;
        assert_eq!(client.service().prompts(), 1, "prompted exactly once");
        match code {
            None => {
                success(&result);
                assert!(h.read(NOTE).is_none());
                assert_eq!(count_events(&shim, EventName::Consumed), 1);
            }
            Some(code) => {
                let refusal = failure(&result);
                assert_eq!(refusal["code"], code);
                assert!(h.read(NOTE).is_some());
                assert_eq!(count_events(&shim, EventName::Consumed), 0);
            }
        }
        assert_eq!(count_events(&shim, EventName::Requested), 1);
    }
}

// r[verify trip.legacy-shim.no-answer]
/// The shim's timer has not fired, but the server's clock has reached the raised request's
/// expiry when the approval comes back: it approves nothing.
#[tokio::test]
async fn a_shim_answer_once_the_clock_reached_the_expiry_approves_nothing() {
    let h = harness_with_note();
    let shim = h.sibling(|_| {}, true);
    let ttl_ms = Config::default().elicit_ttl_seconds * 1000;
    let mut client = legacy(Reply::Approve);
    let clock = h.clock.clone();
    client.during_prompt = Some(std::sync::Arc::new(move || clock.advance_ms(ttl_ms)));
    let client = connect(shim.clone(), client).await;
    let result = call(&client, "delete_note", delete_args()).await;
    assert_eq!(client.service().prompts(), 1, "prompted exactly once");
    assert_eq!(failure(&result)["code"], "approval_not_obtained");
    assert!(h.read(NOTE).is_some(), "the note was deleted");
    assert_eq!(count_events(&shim, EventName::Consumed), 0);

    // One millisecond short of the expiry, the same answer applies.
    let h = harness_with_note();
    let shim = h.sibling(|_| {}, true);
    let mut client = legacy(Reply::Approve);
    let clock = h.clock.clone();
    client.during_prompt = Some(std::sync::Arc::new(move || clock.advance_ms(ttl_ms - 1)));
    let client = connect(shim.clone(), client).await;
    success(&call(&client, "delete_note", delete_args()).await);
    assert!(h.read(NOTE).is_none());
}

// r[verify trip.legacy-plain]
#[tokio::test]
async fn legacy_without_the_shim_gets_elicit_required() {
    let h = harness_with_note();
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let result = call(&client, "delete_note", delete_args()).await;
    assert_eq!(failure(&result)["code"], "elicit_required");
    assert_eq!(client.service().prompts.load(Ordering::SeqCst), 0);
}

// r[verify governor.cap]
// r[verify governor.counted]
// r[verify events.overflow]
// r[verify metrics.truncations]
// r[verify results.error-blocks]
// r[verify results.overflow]
// r[verify governor.measure]
#[tokio::test]
async fn a_result_over_the_cap_is_refused_with_overflow() {
    let h = Harness::with(|c: &mut Config| c.governor.max_response_bytes = 64);
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    // The handler runs; its result object (path, hash, …) is over 64 bytes.
    let result = call(
        &client,
        "write_note",
        json!({"path": "n.md", "content": "hi"}),
    )
    .await;
    let refusal = failure(&result);
    assert_eq!(refusal["code"], "overflow");
    assert_eq!(refusal["details"]["limit"], 64);
    assert!(refusal["details"]["result_size"].as_u64().unwrap() > 64);
    assert!(refusal["details"]["result_size_is_lower_bound"].is_boolean());
    assert_eq!(h.events(EventName::Overflow), 1);
    assert_eq!(h.core.gate().counters().overflows, 1);
    assert!(
        h.core
            .metrics()
            .encode()
            .contains("obsidian_tc_governor_truncations_total 1")
    );
}

// r[verify resource.ceiling]
// r[verify resource.stat]
// r[verify resource.refusal]
// r[verify resource.not-counted]
#[tokio::test]
async fn resources_are_listed_and_read_under_the_ceiling() {
    let h = Harness::with(|c: &mut Config| c.governor.max_response_bytes = 1000);
    h.write("small.md", "small note\n");
    h.write("big.md", &"y".repeat(5000));
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let resources = client.list_all_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(
        uris,
        vec!["obsidian-tc://vault/big.md", "obsidian-tc://vault/small.md"]
    );

    let read = client
        .read_resource(ReadResourceRequestParams::new(
            "obsidian-tc://vault/small.md",
        ))
        .await
        .unwrap();
    let text = serde_json::to_value(&read.contents[0]).unwrap();
    assert_eq!(text["text"], "small note\n");

    let refused = client
        .read_resource(ReadResourceRequestParams::new("obsidian-tc://vault/big.md"))
        .await
        .unwrap_err();
    match refused {
        ServiceError::McpError(error) => {
            assert_eq!(error.code.0, -32602);
            assert_eq!(error.data.as_ref().unwrap()["size"], 5000);
            assert_eq!(error.data.as_ref().unwrap()["limit"], 1000);
        }
        other => panic!("expected invalid params, got {other:?}"),
    }
    assert_eq!(h.core.governor().truncations(), 0);
    assert_eq!(h.core.gate().counters().overflows, 0);
    assert_eq!(h.events(EventName::Overflow), 0);
}

// r[verify dispatch.read-only]
// r[verify dispatch.precheck]
#[tokio::test]
async fn read_only_and_precheck_refuse_before_any_confirmation() {
    let h = Harness::with(|c: &mut Config| {
        let acl: tc_vault::acl::AclConfig =
            toml::from_str("readOnly = true").expect("an ACL with readOnly");
        c.vaults[0].acl = Some(acl);
    });
    h.write(NOTE, "x\n");
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let refused = call(&client, "delete_note", delete_args()).await;
    assert_eq!(failure(&refused)["code"], "acl_denied");
    let open = Harness::new();
    let client = connect(open.core.clone(), modern(Reply::Approve)).await;
    let missing = call(&client, "delete_note", json!({"path": "absent.md"})).await;
    assert_eq!(failure(&missing)["code"], "note_not_found");
    assert_eq!(
        h.events(EventName::Requested) + open.events(EventName::Requested),
        0
    );
    assert_eq!(client.service().prompts(), 0);
}

// r[verify drift.every-route]
#[tokio::test]
async fn legacy_shim_rechecks_drift_after_the_prompt() {
    let h = harness_with_note();
    let shim = h.sibling(|_| {}, true);
    let mut client = legacy(Reply::Approve);
    let note = h.vault.join(NOTE);
    client.during_prompt = Some(std::sync::Arc::new(move || {
        std::fs::write(&note, "changed while the prompt was open\n").unwrap();
    }));
    let client = connect(shim.clone(), client).await;
    let result = call(&client, "delete_note", delete_args()).await;
    assert_eq!(failure(&result)["code"], "replay_drift");
    assert_eq!(
        h.read(NOTE).as_deref(),
        Some("changed while the prompt was open\n")
    );
    assert_eq!(client.service().prompts(), 1);
}

// r[verify state.key.not-jwt]
// r[verify state.shared-cachedir]
/// A second server on the same cacheDir with a different `auth.jwtSecret` still accepts a
/// pending requestState: the key comes from server-secrets/, never from the JWT secret, so
/// rotating jwtSecret voids no confirmation.
#[tokio::test]
async fn a_pending_state_survives_a_new_jwt_secret_on_the_same_cache_dir() {
    let h = Harness::with(|c: &mut Config| {
        c.auth.jwt_secret = Some("the-first-jwt-secret-of-32-bytes-or-more".into());
    });
    h.write(NOTE, "# A\n\nsome text\n");
    let first = connect(h.core.clone(), modern(Reply::Approve)).await;
    let asked = input_required(&first, "delete_note", delete_args()).await;

    let mut rotated = Config::default();
    rotated.add_vault_dir(&h.vault).unwrap();
    rotated.auth.jwt_secret = Some("a-different-jwt-secret-after-rotation!!".into());
    let second_core = build_core(&rotated, &h.cache, h.clock.clone(), false);
    let second = connect(second_core, modern(Reply::Approve)).await;
    success(&complete(
        resubmit(
            &second,
            "delete_note",
            delete_args(),
            asked.request_state,
            Some(Reply::Approve.json()),
        )
        .await,
    ));
    assert!(
        h.read(NOTE).is_none(),
        "the second server applied the approval"
    );
}
