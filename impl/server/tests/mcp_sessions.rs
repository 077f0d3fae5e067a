//! Sessions through the real server in process (rmcp's own client, a cache.db on disk):
//! a session started over MCP records the calls made over MCP, `list_sessions` pages,
//! `session_rerun` reports with progress and a sandbox that leaves the vault alone, and a
//! stale `session_rerun` confirmation is refused on the modern round trip, the legacy shim
//! and the CLI token (spec/sessions.md; spec/drift.md `drift.bind.session-rerun`,
//! `drift.residual.open-session`, `drift.every-route`).

mod mcp_support;

use std::io::Write as _;

use mcp_support::*;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, InputResponses, NumberOrString, ProgressToken,
    RequestMetaObject,
};
use serde_json::{Value, json};
use tc_server::config::Config;

fn recording(config: &mut Config) {
    config.sessions.trace_content = true;
}

async fn ok(client: &Client, tool: &str, arguments: Value) -> Value {
    success(&call(client, tool, arguments).await)
}

async fn start(client: &Client, label: &str) -> String {
    let started = ok(client, "start_session", json!({"label": label})).await;
    started["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn trace(h: &Harness, id: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(h.cache.join("sessions").join(format!("{id}.jsonl")))
        .unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn append_by_hand(h: &Harness, id: &str) {
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(h.cache.join("sessions").join(format!("{id}.jsonl")))
        .unwrap();
    file.write_all(b"{\"n\":99,\"time\":\"\",\"time_ms\":0,\"tool\":\"list_notes\",\"args_hash\":\"x\",\"status\":\"ok\",\"error_code\":null,\"duration_ms\":0,\"result_bytes\":0,\"args\":{}}\n")
        .unwrap();
}

fn params(tool: &str, arguments: Value, progress: bool) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args(arguments));
    if progress {
        params.meta = Some(RequestMetaObject::with_progress_token(ProgressToken(
            NumberOrString::Number(5),
        )));
    }
    params
}

async fn resubmit(
    client: &Client,
    tool: &str,
    arguments: Value,
    state: Option<String>,
    progress: bool,
) -> CallToolResponse {
    let mut responses = InputResponses::new();
    responses.insert("confirm".to_owned(), Reply::Approve.json());
    let mut params = params(tool, arguments, progress).with_input_responses(responses);
    if let Some(state) = state {
        params = params.with_request_state(state);
    }
    client.call_tool_once(params).await.unwrap()
}

/// A session of a read, a write, a refused read and a gated delete, ended.
async fn recorded_session(h: &Harness, client: &Client) -> String {
    h.write("a.md", "# A\n");
    let id = start(client, "demo").await;
    ok(client, "read_notes", json!({"paths": ["a.md"]})).await;
    ok(
        client,
        "write_note",
        json!({"path": "b.md", "content": "b\n"}),
    )
    .await;
    let missing = failure(&call(client, "list_notes", json!({"folder": "nowhere"})).await);
    assert_eq!(missing["code"], "note_not_found");
    let asked = call_once(client, "delete_note", json!({"path": "a.md"})).await;
    assert!(matches!(asked, CallToolResponse::InputRequired(_)));
    ok(client, "end_session", json!({"session_id": id})).await;
    id
}

// r[verify sessions.record.every-call]
// r[verify sessions.trace.line]
// r[verify sessions.trace.place]
#[tokio::test]
async fn calls_over_mcp_are_recorded_in_the_session_s_trace() {
    let h = Harness::with(recording);
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let id = recorded_session(&h, &client).await;
    let lines = trace(&h, &id);
    let shape: Vec<(String, String, Value)> = lines
        .iter()
        .map(|l| {
            (
                l["tool"].as_str().unwrap().to_owned(),
                l["status"].as_str().unwrap().to_owned(),
                l["error_code"].clone(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        vec![
            ("read_notes".into(), "ok".into(), Value::Null),
            ("write_note".into(), "ok".into(), Value::Null),
            ("list_notes".into(), "error".into(), json!("note_not_found")),
            ("delete_note".into(), "input_required".into(), Value::Null),
        ]
    );
    assert_eq!(lines[0]["n"], 1);
    assert_eq!(lines[3]["n"], 4);
    assert_eq!(lines[1]["args"], json!({"path": "b.md", "content": "b\n"}));
    assert!(lines[0]["result_bytes"].as_u64().unwrap() > 10);
    assert_eq!(lines[0]["args_hash"].as_str().unwrap().len(), 32);
    // Nothing of the session is inside the vault.
    let in_vault: Vec<_> = walk(&h.vault);
    assert!(
        in_vault.iter().all(|p| !p.ends_with(".jsonl")),
        "{in_vault:?}"
    );
    // A call after the end is not recorded; the session lists as ended with 4 calls.
    ok(&client, "read_notes", json!({"paths": ["a.md"]})).await;
    assert_eq!(trace(&h, &id).len(), 4);
    let listed = ok(&client, "list_sessions", json!({})).await;
    assert_eq!(listed["sessions"][0]["session_id"], json!(id));
    assert_eq!(listed["sessions"][0]["call_count"], 4);
    assert_eq!(listed["sessions"][0]["open"], false);
}

fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path.display().to_string());
        }
    }
    out
}

// r[verify sessions.tools.list]
#[tokio::test]
async fn list_sessions_pages_over_mcp() {
    let h = Harness::new();
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    for i in 0..120 {
        let id = start(&client, &format!("session {i} {}", "x".repeat(150))).await;
        ok(&client, "end_session", json!({"session_id": id})).await;
        h.clock.advance_ms(1);
    }
    let mut seen = 0;
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut arguments = json!({});
        if let Some(c) = &cursor {
            arguments["cursor"] = json!(c);
        }
        let page = ok(&client, "list_sessions", arguments).await;
        pages += 1;
        seen += page["sessions"].as_array().unwrap().len();
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen, 120);
    assert!(pages >= 2, "{pages}");
}

// r[verify sessions.tools.rerun]
// r[verify sessions.rerun.progress]
// r[verify sessions.rerun.caller]
#[tokio::test]
async fn session_rerun_reports_each_call_with_progress() {
    let h = Harness::with(recording);
    let client_side = modern(Reply::Approve);
    let progress = client_side.progress.clone();
    let client = connect(h.core.clone(), client_side).await;
    let id = recorded_session(&h, &client).await;
    let rerun = json!({"session_id": id});
    let asked = input_required(&client, "session_rerun", rerun.clone()).await;
    let message = serde_json::to_string(&asked).unwrap();
    assert!(
        message.contains(&id),
        "the form names the session: {message}"
    );
    let report = success(&complete(
        resubmit(&client, "session_rerun", rerun, asked.request_state, true).await,
    ));
    assert_eq!(report["caller"], "rerun:stdio");
    let verdicts: Vec<&str> = report["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(
        verdicts,
        [
            "runnable",
            "skipped_changes_vault",
            "runnable",
            "skipped_changes_vault"
        ]
    );
    assert_eq!(report["calls"][2]["divergence"], "none");
    assert_eq!(report["summary"]["diverged"], 0);
    let seen = progress.lock().unwrap().clone();
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert_eq!(seen[3]["progress"], 4.0);
    assert!(seen.iter().all(|p| p["total"] == 4.0));
}

// r[verify sessions.rerun.sandbox]
// r[verify sessions.rerun.never-clears-gate]
#[tokio::test]
async fn a_sandboxed_rerun_runs_writes_on_a_copy_and_deletes_it() {
    let h = Harness::with(recording);
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let id = recorded_session(&h, &client).await;
    // b.md written in the session is gone now; the re-run writes it again, in the copy.
    std::fs::remove_file(h.vault.join("b.md")).unwrap();
    let rerun = json!({"session_id": id, "sandbox": true});
    let asked = input_required(&client, "session_rerun", rerun.clone()).await;
    let report = success(&complete(
        resubmit(&client, "session_rerun", rerun, asked.request_state, false).await,
    ));
    assert_eq!(report["sandbox"], true);
    let calls = report["calls"].as_array().unwrap();
    assert_eq!(calls[1]["tool"], "write_note");
    assert_eq!(calls[1]["verdict"], "runnable");
    assert_eq!(calls[1]["divergence"], "none");
    assert_eq!(calls[3]["tool"], "delete_note");
    assert_eq!(calls[3]["verdict"], "refused_by_policy");
    assert!(h.read("b.md").is_none(), "the real vault is not written");
    assert!(h.read("a.md").is_some(), "nor deleted from");
    let left: Vec<_> = std::fs::read_dir(h.cache.join("sandboxes"))
        .unwrap()
        .collect();
    assert!(left.is_empty(), "the sandbox is deleted");
}

// r[verify drift.bind.session-rerun]
// r[verify drift.every-route]
#[tokio::test]
async fn a_trace_grown_after_the_end_is_replay_drift_on_the_round_trip() {
    let h = Harness::with(recording);
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let id = recorded_session(&h, &client).await;
    let rerun = json!({"session_id": id});
    let asked = input_required(&client, "session_rerun", rerun.clone()).await;
    append_by_hand(&h, &id);
    let stale = complete(
        resubmit(
            &client,
            "session_rerun",
            rerun.clone(),
            asked.request_state,
            false,
        )
        .await,
    );
    assert_eq!(failure(&stale)["code"], "replay_drift");
    // A fresh confirmation covers the trace as it is now, and runs.
    let asked = input_required(&client, "session_rerun", rerun.clone()).await;
    let report = success(&complete(
        resubmit(&client, "session_rerun", rerun, asked.request_state, false).await,
    ));
    assert_eq!(report["summary"]["total"], 5);
}

// r[verify drift.bind.session-rerun]
// r[verify drift.residual.open-session]
// r[verify drift.every-route]
#[tokio::test]
async fn a_session_ending_while_the_prompt_is_open_is_replay_drift_on_the_shim_and_token() {
    let h = Harness::with(recording);
    let setup = connect(h.core.clone(), modern(Reply::Approve)).await;
    h.write("a.md", "# A\n");
    let id = start(&setup, "open").await;
    ok(&setup, "read_notes", json!({"paths": ["a.md"]})).await;
    let rerun = json!({"session_id": id});

    // Legacy shim: the session's calls go on while the prompt is open (the open session's
    // trace is not bound), but the session ends too: drift.
    let shim = h.sibling(recording, true);
    let mut client = legacy(Reply::Approve);
    let core = h.core.clone();
    let ending = id.clone();
    client.during_prompt = Some(std::sync::Arc::new(move || {
        let sessions = core.sessions();
        let row = sessions.find(&ending).unwrap();
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(sessions.trace_path(&row))
            .unwrap();
        file.write_all(b"{\"n\":50}\n").unwrap();
        let db = rusqlite_end(&sessions.cache_dir().join("cache.db"), &ending);
        assert_eq!(db, 1);
    }));
    let client = connect(shim, client).await;
    let result = call(&client, "session_rerun", rerun.clone()).await;
    assert_eq!(failure(&result)["code"], "replay_drift");
    assert_eq!(client.service().prompts(), 1);

    // CLI token on an open session: calls recorded after the mint are no drift; a line
    // appended to the trace once it ended is.
    let id = start(&setup, "second").await;
    let rerun = json!({"session_id": id});
    let plain = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let refused = failure(&call(&plain, "session_rerun", rerun.clone()).await);
    assert_eq!(refused["code"], "elicit_required");
    let token = h.mint(&refused, "stdio");
    ok(&plain, "read_notes", json!({"paths": ["a.md"]})).await;
    let mut with_token = rerun.clone();
    with_token["elicit_token"] = json!(token);
    let report = ok(&plain, "session_rerun", with_token).await;
    assert_eq!(report["session_open"], true);
    // The refused call, the read and nothing else were recorded before the re-run ran;
    // the refused re-run itself is not run again.
    assert_eq!(report["summary"]["total"], 2);
    assert_eq!(report["calls"][0]["tool"], "session_rerun");
    assert_eq!(report["calls"][0]["verdict"], "refused_by_policy");
    assert_eq!(report["calls"][1]["divergence"], "none");
    ok(&plain, "end_session", json!({"session_id": id})).await;
    let refused = failure(&call(&plain, "session_rerun", rerun.clone()).await);
    let token = h.mint(&refused, "stdio");
    append_by_hand(&h, &id);
    let mut with_token = rerun.clone();
    with_token["elicit_token"] = json!(token);
    let stale = failure(&call(&plain, "session_rerun", with_token).await);
    assert_eq!(stale["code"], "replay_drift");
}

/// Ends session `id` in the cache.db at `path` the way another process would.
fn rusqlite_end(path: &std::path::Path, id: &str) -> usize {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    conn.execute(
        "UPDATE sessions SET ended_ms = 1 WHERE id = ?1 AND ended_ms IS NULL",
        [id],
    )
    .unwrap()
}

// r[verify sessions.record.never-fails-call]
#[tokio::test]
async fn a_call_is_answered_even_when_its_line_cannot_be_written() {
    let h = Harness::with(recording);
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    h.write("a.md", "# A\n");
    let id = start(&client, "").await;
    let trace_file = h.cache.join("sessions").join(format!("{id}.jsonl"));
    std::fs::remove_file(&trace_file).unwrap();
    std::fs::create_dir(&trace_file).unwrap();
    let read = ok(&client, "read_notes", json!({"paths": ["a.md"]})).await;
    assert_eq!(read["notes"][0]["path"], "a.md");
    assert_eq!(h.core.sessions().lost_calls(), 1);
    let listed = ok(&client, "list_sessions", json!({})).await;
    assert_eq!(
        listed["sessions"][0]["lost_calls"], 1,
        "the read (the listing is recorded after it answers)"
    );
}

// r[verify sessions.record.every-call]
#[tokio::test]
async fn a_call_through_call_capability_is_recorded_under_the_inner_tool() {
    let h = Harness::with(|config| {
        recording(config);
        config.tool_facade.mode = tc_server::facade::FacadeMode::Lean;
    });
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    h.write("a.md", "# A\n");
    let started = ok(
        &client,
        "call_capability",
        json!({"name": "start_session", "args": {"label": "lean"}}),
    )
    .await;
    let id = started["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    ok(&client, "find_capability", json!({"query": "read notes"})).await;
    ok(
        &client,
        "call_capability",
        json!({"name": "read_notes", "args": {"paths": ["a.md"]}}),
    )
    .await;
    let lines = trace(&h, &id);
    let tools: Vec<&str> = lines.iter().map(|l| l["tool"].as_str().unwrap()).collect();
    assert_eq!(
        tools,
        ["read_notes"],
        "the inner tool; look-ups are not calls of the vault"
    );
    assert_eq!(lines[0]["args"], json!({"paths": ["a.md"]}));
}

// r[verify drift.bind.session-rerun]
#[tokio::test]
async fn a_stale_session_rerun_through_call_capability_is_replay_drift() {
    let h = Harness::with(|config| {
        recording(config);
        config.tool_facade.mode = tc_server::facade::FacadeMode::Lean;
    });
    let client = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let through = |name: &str, args: Value| json!({"name": name, "args": args});
    let started = ok(
        &client,
        "call_capability",
        through("start_session", json!({})),
    )
    .await;
    let id = started["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    ok(&client, "call_capability", through("list_notes", json!({}))).await;
    ok(
        &client,
        "call_capability",
        through("end_session", json!({"session_id": id})),
    )
    .await;
    let rerun = through("session_rerun", json!({"session_id": id}));
    let refused = failure(&call(&client, "call_capability", rerun.clone()).await);
    assert_eq!(refused["code"], "elicit_required");
    assert_eq!(refused["details"]["tool"], "session_rerun");
    let token = h.mint(&refused, "stdio");
    append_by_hand(&h, &id);
    let mut with_token = rerun.clone();
    with_token["elicit_token"] = json!(token);
    let stale = failure(&call(&client, "call_capability", with_token).await);
    assert_eq!(stale["code"], "replay_drift");
    // A fresh token for the trace as it is now runs the re-run.
    let refused = failure(&call(&client, "call_capability", rerun.clone()).await);
    let token = h.mint(&refused, "stdio");
    let mut with_token = rerun;
    with_token["elicit_token"] = json!(token);
    let report = ok(&client, "call_capability", with_token).await;
    assert_eq!(report["summary"]["total"], 2);
}
