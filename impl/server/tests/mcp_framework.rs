//! The tool framework seen from an MCP client in process: progress notifications while a
//! long call runs, the confirmation form carrying the summary, and every response bounded
//! as it is sent (spec/tools.md `tools.progress`, `tools.summary`; spec/governor.md
//! `governor.measure`; spec/paging.md `paging.read-notes.no-overflow`).

mod mcp_support;

use mcp_support::{Harness, Reply, call, connect, legacy, modern, success};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, NumberOrString, ProgressToken, RequestMetaObject,
};
use serde_json::{Value, json};
use tc_server::config::Config;

fn with_progress(tool: &str, arguments: Value, token: i64) -> CallToolRequestParams {
    let mut params =
        CallToolRequestParams::new(tool.to_owned()).with_arguments(mcp_support::args(arguments));
    params.meta = Some(RequestMetaObject::with_progress_token(ProgressToken(
        NumberOrString::Number(token),
    )));
    params
}

// r[verify tools.progress]
#[tokio::test]
async fn a_long_call_with_a_progress_token_sends_its_progress() {
    let h = Harness::new();
    h.write("target.md", "T\n");
    for i in 0..5 {
        h.write(&format!("l/{i}.md"), "see [[target]]\n");
    }
    let client_side = legacy(Reply::Approve);
    let progress = client_side.progress.clone();
    // The shim approves the rewrite in the same call.
    let core = h.sibling(|_| {}, true);
    let client = connect(core, client_side).await;
    let arguments = json!({"from_target": "target", "to_target": "renamed", "dry_run": false});
    let response = client
        .call_tool_once(with_progress("rewrite_link", arguments, 7))
        .await
        .unwrap();
    let CallToolResponse::Complete(result) = response else {
        panic!("expected a complete result, got {response:?}");
    };
    assert_eq!(success(&result)["applied"], true);
    // Notifications and the response travel on one ordered stream: all have arrived.
    let seen = progress.lock().unwrap().clone();
    assert_eq!(seen.len(), 6, "{seen:?}");
    // rmcp's client puts a token of its own choosing on the request; every report carries it.
    assert!(
        seen.iter()
            .all(|p| p["progressToken"] == seen[0]["progressToken"]),
        "{seen:?}"
    );
    assert!(!seen[0]["progressToken"].is_null());
    assert_eq!(seen[0]["progress"], 0.0);
    assert_eq!(seen[5]["progress"], 5.0);
    assert!(seen.iter().all(|p| p["total"] == 5.0), "{seen:?}");
    let values: Vec<f64> = seen
        .iter()
        .map(|p| p["progress"].as_f64().unwrap())
        .collect();
    assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "progress grows: {values:?}"
    );

    // (rmcp's client puts a progressToken on every request, so the other half, no token
    // and no notification, is driven by the official clients in tests/e2e.)
}

// r[verify tools.summary]
#[tokio::test]
async fn the_confirmation_form_says_what_it_approves_on_both_routes() {
    let h = Harness::new();
    h.write("a.md", "old line\n");
    let args = json!({"path": "a.md", "content": "new line\n"});
    // Legacy shim: the server's own elicitation/create.
    let shim_client = legacy(Reply::Decline);
    let messages = shim_client.messages.clone();
    let client = connect(h.sibling(|_| {}, true), shim_client).await;
    let _ = call(&client, "write_note", args.clone()).await;
    let prompts = messages.lock().unwrap().clone();
    assert_eq!(prompts.len(), 1);
    let shim_message = prompts[0]["message"].as_str().unwrap().to_owned();
    // Modern: the input_required form.
    let client = connect(h.core.clone(), modern(Reply::Decline)).await;
    let response = mcp_support::call_once(&client, "write_note", args).await;
    let CallToolResponse::InputRequired(required) = response else {
        panic!("expected input_required, got {response:?}");
    };
    let form = serde_json::to_value(&required).unwrap();
    let modern_message = form["inputRequests"]["confirm"]["params"]["message"]
        .as_str()
        .or_else(|| form["inputRequests"]["confirm"]["message"].as_str())
        .unwrap_or_else(|| panic!("no message in {form}"))
        .to_owned();
    for message in [&shim_message, &modern_message] {
        assert!(
            message.contains("write_note in vault vault for caller stdio"),
            "{message}"
        );
        assert!(message.contains("target: a.md"), "{message}");
        assert!(
            message.contains("-old line") && message.contains("+new line"),
            "{message}"
        );
        assert!(message.contains("args_hash "), "{message}");
    }
    assert_eq!(
        shim_message, modern_message,
        "the same words on both routes"
    );
}

// r[verify governor.measure]
// r[verify paging.read-notes.no-overflow]
#[tokio::test]
async fn every_read_notes_page_is_under_the_cap_as_sent() {
    const CAP: u64 = 40_000;
    let h = Harness::with(|c: &mut Config| c.governor.max_response_bytes = CAP);
    // Quotes and newlines make the text copy much longer than the JSON.
    for i in 0..60 {
        h.write(&format!("n/{i:02}.md"), &"say \"hi\"\n".repeat(200));
    }
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let mut cursor: Option<String> = None;
    let mut notes = 0;
    let mut pages = 0;
    loop {
        let mut arguments = json!({"folder": "n"});
        if let Some(c) = &cursor {
            arguments["cursor"] = json!(c);
        }
        let result = call(&client, "read_notes", arguments).await;
        // What the server sent for this call: the result, framed as a JSON-RPC response.
        let sent = serde_json::to_string(&json!({
            "jsonrpc": "2.0",
            "id": 1_000_000,
            "result": result,
        }))
        .unwrap();
        assert!(
            sent.len() as u64 <= CAP,
            "a page of {} bytes as sent",
            sent.len()
        );
        let page = success(&result);
        notes += page["notes"].as_array().unwrap().len();
        pages += 1;
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(notes, 60);
    assert!(pages > 2, "{pages} pages");
    assert_eq!(h.core.governor().truncations(), 0);
    // A result over the cap as sent is refused, though its JSON alone would fit.
    let h = Harness::with(|c: &mut Config| c.governor.max_response_bytes = 450);
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let result = call(
        &client,
        "write_note",
        json!({"path": "w.md", "content": "w"}),
    )
    .await;
    let refusal = mcp_support::failure(&result);
    assert_eq!(refusal["code"], "overflow");
    // The same call's result object under the default cap: its JSON alone fits in 450.
    let roomy = Harness::new();
    let roomy_client = connect(roomy.core.clone(), legacy(Reply::Approve)).await;
    let fits = call(
        &roomy_client,
        "write_note",
        json!({"path": "w.md", "content": "w"}),
    )
    .await;
    let json_alone = serde_json::to_string(&success(&fits)).unwrap().len();
    assert!(json_alone < 450, "{json_alone}");
    assert!(
        refusal["details"]["result_size"].as_u64().unwrap() > 450,
        "{refusal}"
    );
    // It ran: the overflow of a call that changed the vault does not hide that.
    // r[verify results.applied]
    assert_eq!(refusal["details"]["applied"], true, "{refusal}");
    assert_eq!(refusal["retryable"], false);
    assert_eq!(h.read("w.md").as_deref(), Some("w"));
}

fn refusals(h: &Harness) -> Vec<String> {
    h.core
        .gate()
        .events(0, 1000)
        .unwrap()
        .into_iter()
        .filter(|e| e.name == tc_gate::EventName::Refused)
        .map(|e| e.detail["reason"].as_str().unwrap_or_default().to_owned())
        .collect()
}

// r[verify events.refused]
#[tokio::test]
async fn refused_confirmations_are_in_the_audit_log_with_their_reason() {
    let h = Harness::new();
    h.write("a.md", "a\n");
    let args = json!({"path": "a.md"});
    // Declined and dismissed prompts (legacy shim).
    let client = connect(h.sibling(|_| {}, true), legacy(Reply::Decline)).await;
    let _ = call(&client, "delete_note", args.clone()).await;
    let client = connect(h.sibling(|_| {}, true), legacy(Reply::Cancel)).await;
    let _ = call(&client, "delete_note", args.clone()).await;
    // A token for a state that drifted, then the same token again (spent).
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let refusal = mcp_support::failure(&call(&client, "delete_note", args.clone()).await);
    let token = h.mint(&refusal, "stdio");
    h.write("a.md", "changed\n");
    let mut with_token = args.clone();
    with_token["elicit_token"] = json!(token);
    let drift = mcp_support::failure(&call(&client, "delete_note", with_token.clone()).await);
    assert_eq!(drift["code"], "replay_drift");
    let spent = mcp_support::failure(&call(&client, "delete_note", with_token).await);
    assert_eq!(spent["details"]["token_rejected"], "spent");
    assert_eq!(
        refusals(&h),
        [
            "approval_declined",
            "approval_not_obtained",
            "replay_drift",
            "token_spent"
        ]
    );
    assert_eq!(h.read("a.md").as_deref(), Some("changed\n"));
}

// r[verify gate.sweep.running]
// r[verify events.retention]
#[tokio::test]
async fn the_running_server_sweeps_what_has_expired() {
    let h = Harness::new();
    h.write("a.md", "a\n");
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let refusal =
        mcp_support::failure(&call(&client, "delete_note", json!({"path": "a.md"})).await);
    assert_eq!(refusal["code"], "elicit_required");
    // Nothing has expired yet.
    let report = h.core.sweep_once().await.unwrap();
    assert_eq!((report.raised_requests, report.events), (0, 0));
    // Past the TTL the raised request goes; past the retention the event goes too.
    h.clock
        .advance_ms(tc_gate::GateConfig::DEFAULT_TTL_SECONDS * 1000 + 1);
    let report = h.core.sweep_once().await.unwrap();
    assert_eq!((report.raised_requests, report.events), (1, 0));
    h.clock.advance_ms(tc_gate::EVENT_RETENTION_MS);
    let report = h.core.sweep_once().await.unwrap();
    assert_eq!(report.events, 1);
    assert!(h.core.gate().events(0, 10).unwrap().is_empty());
}

// r[verify dispatch.invalid-params]
#[tokio::test]
async fn wrong_param_types_are_invalid_params_and_unknown_methods_are_not_found() {
    use rmcp::model::{ClientRequest, CustomRequest};
    let h = Harness::new();
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let code_of = |outcome: Result<rmcp::model::ServerResult, rmcp::ServiceError>| match outcome {
        Err(rmcp::ServiceError::McpError(error)) => error.code.0,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    };
    // What the HTTP transport hands the handler as it came: tools/call whose params rmcp
    // could not type.
    for params in [
        json!({"name": "read_notes", "arguments": 5}),
        json!({"name": 7}),
    ] {
        let outcome = client
            .send_request(ClientRequest::CustomRequest(CustomRequest::new(
                "tools/call",
                Some(params),
            )))
            .await;
        assert_eq!(code_of(outcome), -32602);
    }
    let outcome = client
        .send_request(ClientRequest::CustomRequest(CustomRequest::new(
            "no/such-method",
            None,
        )))
        .await;
    assert_eq!(code_of(outcome), -32601);
    // The session goes on.
    let listed = client.list_all_tools().await.unwrap();
    assert!(!listed.is_empty());
}

// r[verify release.governor-keeps-spent]
#[tokio::test]
async fn a_token_spent_on_a_call_the_governor_refuses_stays_spent() {
    let h = Harness::with(|c: &mut Config| c.governor.max_response_bytes = 450);
    h.write("a.md", "old\n");
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let args = json!({"path": "a.md", "content": "new\n"});
    let refusal = mcp_support::failure(&call(&client, "write_note", args.clone()).await);
    let token = h.mint(&refusal, "stdio");
    let mut with_token = args.clone();
    with_token["elicit_token"] = json!(token);
    let overflow = mcp_support::failure(&call(&client, "write_note", with_token.clone()).await);
    assert_eq!(overflow["code"], "overflow");
    assert_eq!(h.read("a.md").as_deref(), Some("new\n"), "the handler ran");
    assert_eq!(h.core.gate().counters().released, 0);
    let again = mcp_support::failure(&call(&client, "write_note", with_token).await);
    assert_eq!(again["details"]["token_rejected"], "spent", "{again}");
}

// r[verify config.ttl.applies]
#[tokio::test]
async fn elicit_ttl_seconds_is_the_lifetime_of_requests_tokens_and_states() {
    let h = Harness::with(|c: &mut Config| c.elicit_ttl_seconds = 60);
    h.write("a.md", "a\n");
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let refusal =
        mcp_support::failure(&call(&client, "delete_note", json!({"path": "a.md"})).await);
    let raised = h
        .core
        .gate()
        .pending(None, None, 10)
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(raised.expires_at_ms - raised.raised_at_ms, 60_000);
    let details = &refusal["details"];
    let issued = h
        .core
        .gate()
        .issue(
            &tc_gate::CallBinding {
                vault: "vault",
                tool: "delete_note",
                args_hash: details["args_hash"].as_str().unwrap(),
                caller: "stdio",
            },
            None,
        )
        .unwrap();
    assert_eq!(
        issued.expires_at_ms - tc_gate::clock::Clock::now_ms(&h.clock),
        60_000
    );
    // A requestState sealed by this server opens until 60 s, not after.
    let modern_client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let CallToolResponse::InputRequired(required) =
        mcp_support::call_once(&modern_client, "delete_note", json!({"path": "a.md"})).await
    else {
        panic!("expected input_required");
    };
    let state = required.request_state.clone().unwrap();
    h.clock.advance_ms(60_001);
    let mut resent = CallToolRequestParams::new("delete_note")
        .with_arguments(mcp_support::args(json!({"path": "a.md"})));
    resent.request_state = Some(state);
    resent.input_responses = Some(
        serde_json::from_value(json!({
            "confirm": {"action": "accept", "content": {"approve": true}}
        }))
        .unwrap(),
    );
    let again = modern_client.call_tool_once(resent).await.unwrap();
    assert!(
        matches!(again, CallToolResponse::InputRequired(_)),
        "an expired state approves nothing and a fresh confirmation is offered: {again:?}"
    );
    assert_eq!(h.read("a.md").as_deref(), Some("a\n"));
}

// r[verify gate.files.private]
#[tokio::test]
async fn what_the_server_writes_outside_the_vault_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |path: &std::path::Path| {
        std::fs::metadata(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .permissions()
            .mode()
            & 0o777
    };
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path().join("vault");
    std::fs::create_dir(&vault).unwrap();
    std::fs::write(vault.join("a.md"), "a\n").unwrap();
    // A cache directory that does not exist yet, two levels deep.
    let cache = dir.path().join("state").join("cache");
    let mut config = Config::default();
    config.add_vault_dir(&vault).unwrap();
    let assembled = tc_server::serve::assemble(
        &config,
        &cache,
        false,
        std::sync::Arc::new(tc_server::metrics::Metrics::new()),
        Vec::new(),
        None,
    )
    .unwrap();
    let client = connect(assembled.core.clone(), legacy(Reply::Approve)).await;
    // A delete to a snapshot, a generated page (a seal) and a write (a lock file).
    let core = &assembled.core;
    let refusal =
        mcp_support::failure(&call(&client, "delete_note", json!({"path": "a.md"})).await);
    let details = &refusal["details"];
    let token = core
        .gate()
        .issue(
            &tc_gate::CallBinding {
                vault: "vault",
                tool: "delete_note",
                args_hash: details["args_hash"].as_str().unwrap(),
                caller: "stdio",
            },
            details["state_fp"].as_str(),
        )
        .unwrap();
    let done = call(
        &client,
        "delete_note",
        json!({"path": "a.md", "elicit_token": token.token.expose()}),
    )
    .await;
    assert_ne!(done.is_error, Some(true));
    let _ = call(
        &client,
        "commit_wiki_page",
        json!({"path": "w.md", "content": "# W\n"}),
    )
    .await;
    assert_eq!(mode(&cache), 0o700);
    assert_eq!(mode(&cache.join("cache.db")), 0o600);
    for companion in ["cache.db-wal", "cache.db-shm"] {
        let path = cache.join(companion);
        if path.exists() {
            assert_eq!(mode(&path), 0o600, "{companion}");
        }
    }
    let mut checked = 0;
    for entry in walk(&cache) {
        let expected = if entry.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode(&entry), expected, "{}", entry.display());
        checked += 1;
    }
    assert!(
        checked >= 6,
        "snapshots, seals, locks, secrets: {checked} entries"
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        }
        out.push(path);
    }
    out
}

// r[verify dispatch.vault]
/// With several vaults served, a call that names none is refused before anything runs (a
/// cargo-mutants survivor: a pipeline that took the first vault passed every test).
#[tokio::test]
async fn with_several_vaults_a_call_must_name_its_vault() {
    let other = tempfile::TempDir::new().unwrap();
    let h = Harness::with(|c: &mut Config| {
        let mut second = c.vaults[0].clone();
        second.id = "second".into();
        second.root = other.path().canonicalize().unwrap();
        c.vaults.push(second);
    });
    h.write("a.md", "a\n");
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let refused = call(&client, "read_notes", json!({"paths": ["a.md"]})).await;
    let refused = mcp_support::failure(&refused);
    assert_eq!(refused["code"], "validation_error", "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("several vaults"),
        "{refused}"
    );
    let read = call(
        &client,
        "read_notes",
        json!({"paths": ["a.md"], "vault": "vault"}),
    )
    .await;
    let read = success(&read);
    assert_eq!(read["notes"][0]["content"], "a\n", "{read}");
}
