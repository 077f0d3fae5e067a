//! The confirmation routes where the model grew (spec/trips.md `trip.form-only`,
//! `trip.legacy-shim.cancel`): what a request that cannot show a form is offered when its
//! requestState approves nothing, and a call cancelled while the legacy shim's prompt is open.

mod mcp_support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use mcp_support::*;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, ClientRequest, InputResponses,
    ProtocolVersion,
};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};
use tc_gate::EventName;

const NOTE: &str = "notes/a.md";

fn harness_with_note(tweak: impl FnOnce(&mut tc_server::config::Config)) -> Harness {
    let h = Harness::with(tweak);
    h.write(NOTE, "# A\n\nsome text\n");
    h
}

/// A 2026-07-28 client that declares no elicitation capability at all.
fn formless() -> TestClient {
    TestClient::new(ProtocolVersion::V_2026_07_28, None, Reply::Approve)
}

/// Resends `arguments` with an approving answer and `state` echoed.
async fn resubmit(client: &Client, tool: &str, arguments: Value, state: &str) -> CallToolResponse {
    let mut responses = InputResponses::new();
    responses.insert("confirm".to_owned(), Reply::Approve.json());
    let params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(args(arguments))
        .with_input_responses(responses)
        .with_request_state(state.to_owned());
    client.call_tool_once(params).await.unwrap()
}

fn input_required_state(response: CallToolResponse) -> String {
    match response {
        CallToolResponse::InputRequired(result) => result.request_state.expect("a requestState"),
        other => panic!("expected input_required, got {other:?}"),
    }
}

/// The refusal of a complete answer, which must be `elicit_required` (never `input_required`).
fn elicit_required(response: CallToolResponse) -> Value {
    match response {
        CallToolResponse::Complete(result) => {
            let refusal = failure(&result);
            assert_eq!(refusal["code"], "elicit_required", "{refusal}");
            refusal
        }
        other => panic!("expected elicit_required, got {other:?}"),
    }
}

// r[verify trip.form-only]
// r[verify state.invalid-fresh]
#[tokio::test]
async fn a_request_without_form_elicitation_gets_elicit_required_for_a_dead_state() {
    let h = harness_with_note(|_| {});
    let with_form = connect(h.core.clone(), modern(Reply::Approve)).await;
    let without_form = connect(h.core.clone(), formless()).await;
    let delete = json!({"path": NOTE});
    let state = input_required_state(call_once(&with_form, "delete_note", delete.clone()).await);

    // A state that does not open: the form-capable client is offered a fresh round trip,
    // the other the plain refusal it can act on (with the command the operator runs).
    let forged = format!("{state}x");
    input_required_state(resubmit(&with_form, "delete_note", delete.clone(), &forged).await);
    let refusal =
        elicit_required(resubmit(&without_form, "delete_note", delete.clone(), &forged).await);
    assert!(
        refusal["recovery"]["command"]
            .as_str()
            .is_some_and(|c| c.starts_with("obsidian-tc elicit")),
        "{refusal}"
    );

    // An expired state likewise.
    h.clock.advance_ms(301_000);
    let refusal =
        elicit_required(resubmit(&without_form, "delete_note", delete.clone(), &state).await);
    input_required_state(resubmit(&with_form, "delete_note", delete.clone(), &state).await);
    assert!(h.read(NOTE).is_some(), "nothing applied");

    // The refusal raised a request the operator can mint from; the token applies the call.
    let token = h.mint(&refusal, "stdio");
    let mut with_token = delete.clone();
    with_token["elicit_token"] = json!(token);
    success(&call(&without_form, "delete_note", with_token).await);
    assert!(h.read(NOTE).is_none());
}

// r[verify trip.form-only]
// r[verify state.ext.single-use]
#[tokio::test]
async fn a_consumed_state_presented_without_form_elicitation_gets_elicit_required() {
    let h = harness_with_note(|c| c.request_state_single_use = true);
    let with_form = connect(h.core.clone(), modern(Reply::Approve)).await;
    let without_form = connect(h.core.clone(), formless()).await;
    let write = json!({"path": NOTE, "content": "replaced\n"});
    let state = input_required_state(call_once(&with_form, "write_note", write.clone()).await);
    match resubmit(&with_form, "write_note", write.clone(), &state).await {
        CallToolResponse::Complete(result) => {
            success(&result);
        }
        other => panic!("the first presentation applies: {other:?}"),
    }
    assert_eq!(h.read(NOTE).as_deref(), Some("replaced\n"));
    // The state is in the consumed-state store: the second presentation approves nothing.
    elicit_required(resubmit(&without_form, "write_note", write.clone(), &state).await);
    input_required_state(resubmit(&with_form, "write_note", write, &state).await);
    assert_eq!(h.events(EventName::Consumed), 1, "one handler run");
}

// r[verify trip.legacy-shim.cancel]
// r[verify trip.never-twice]
#[tokio::test]
async fn a_call_cancelled_while_the_shim_prompt_is_open_applies_nothing_and_withdraws_it() {
    let h = harness_with_note(|_| {});
    let shim = h.sibling(|_| {}, true);
    let mut client = legacy(Reply::Approve);
    client.hold_prompt = true;
    let (opened, withdrawn) = (client.prompt_open.clone(), client.withdrawn.clone());
    let client = connect(shim.clone(), client).await;

    let params =
        CallToolRequestParams::new("delete_note").with_arguments(args(json!({"path": NOTE})));
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = client
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), opened.notified())
        .await
        .expect("the shim sent its prompt");
    handle
        .cancel(Some("the user pressed escape".to_owned()))
        .await
        .unwrap();

    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while withdrawn.load(Ordering::SeqCst) == 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        withdrawn.load(Ordering::SeqCst),
        1,
        "the form was withdrawn"
    );
    // Give the handler a moment to finish; nothing may run after the cancel.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(h.read(NOTE).is_some(), "nothing applied");
    assert_eq!(count_events(&shim, EventName::Consumed), 0);
    assert_eq!(count_events(&shim, EventName::Requested), 1);
    assert_eq!(client.service().prompts(), 1, "prompted once, never again");
}
