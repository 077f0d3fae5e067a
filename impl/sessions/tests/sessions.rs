//! The session tools over the shared fixture: start, record, end, list (paged, own only),
//! and what a trace line holds (spec/sessions.md `sessions.tools.*`, `sessions.store.*`,
//! `sessions.trace.*`, `sessions.record.*`, `sessions.own-only`).

mod support;

use serde_json::{Value, json};
use support::*;
use tc_sessions::CallStatus;
use tc_tools::ErrorCode;

fn start(fx: &Fx, label: &str) -> String {
    let started = fx
        .call("start_session", json!({"label": label}))
        .unwrap_or_else(|e| panic!("start_session: {e}"));
    started["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

// r[verify sessions.tools.start]
// r[verify sessions.tools.end]
// r[verify sessions.record.every-call]
// r[verify sessions.trace.line]
// r[verify sessions.trace.place]
#[test]
fn a_session_records_its_calls_until_it_ends() {
    let fx = Fx::new();
    fx.put("a.md", "# A\n");
    let id = start(&fx, "triage");
    assert!(id.starts_with('s') && id.len() == 17, "{id}");
    recorded(&fx, "read_notes", json!({"paths": ["a.md"]})).unwrap();
    assert_code(
        recorded(&fx, "read_notes", json!({"paths": [7]})),
        ErrorCode::ValidationError,
    );
    let ended = fx.call("end_session", json!({"session_id": id})).unwrap();
    assert_eq!(ended["already_ended"], false);
    assert_eq!(ended["session"]["open"], false);
    assert_eq!(ended["session"]["call_count"], 2);
    // After the end nothing more is recorded.
    recorded(&fx, "read_notes", json!({"paths": ["a.md"]})).unwrap();
    let trace = trace_of(&id);
    assert_eq!(trace.lines.len(), 2);
    let first = &trace.lines[0];
    assert_eq!((first.n, first.tool.as_str()), (1, "read_notes"));
    assert_eq!(first.status, CallStatus::Ok);
    assert_eq!(first.error_code, None);
    assert_eq!(first.time, "2026-11-30T12:00:00.000Z");
    assert_eq!(first.args, Some(json!({"paths": ["a.md"]})));
    assert_eq!(first.args_hash.len(), 32);
    assert!(first.result_bytes > 0);
    let second = &trace.lines[1];
    assert_eq!(second.status, CallStatus::Error);
    assert_eq!(second.error_code.as_deref(), Some("validation_error"));
    // The trace is under the cache directory, outside the vault.
    let row = sessions().find(&id).unwrap();
    let path = sessions().trace_path(&row);
    assert!(path.starts_with(sessions().cache_dir().join("sessions")));
    assert!(!path.starts_with(&fx.root));
    assert_eq!(
        path.file_name().unwrap().to_str().unwrap(),
        format!("{id}.jsonl")
    );
    // Ending again changes nothing.
    let again = fx.call("end_session", json!({"session_id": id})).unwrap();
    assert_eq!(again["already_ended"], true);
    assert_eq!(again["session"]["ended_ms"], ended["session"]["ended_ms"]);
}

// r[verify sessions.store.one-open]
#[test]
fn a_second_start_names_the_open_session() {
    let fx = Fx::new();
    let id = start(&fx, "");
    let refused = assert_code(
        fx.call("start_session", json!({"label": "again"})),
        ErrorCode::InvalidInput,
    );
    let details = refused.details.unwrap();
    assert_eq!(details["reason"], "session_open");
    assert_eq!(details["session_id"], json!(id));
    // Another caller opens its own.
    let bob = holding("bob", &["write:workspace", "read:workspace"]);
    fx.call_as(&bob, "start_session", json!({})).unwrap();
    fx.call("end_session", json!({"session_id": id})).unwrap();
    start(&fx, "next");
}

#[test]
fn start_and_end_are_not_recorded_and_labels_are_one_line() {
    let fx = Fx::new();
    let id = start(&fx, "x");
    recorded(&fx, "start_session", json!({})).unwrap_err();
    recorded(&fx, "list_sessions", json!({})).unwrap();
    recorded(&fx, "end_session", json!({"session_id": id})).unwrap();
    let tools: Vec<String> = trace_of(&id).lines.into_iter().map(|l| l.tool).collect();
    assert_eq!(tools, ["list_sessions"]);
    assert_code(
        fx.call("start_session", json!({"label": "two\nlines"})),
        ErrorCode::ValidationError,
    );
    assert_code(
        fx.call("start_session", json!({"label": "x".repeat(201)})),
        ErrorCode::ValidationError,
    );
}

// r[verify sessions.own-only]
// r[verify sessions.not-found]
#[test]
fn a_caller_sees_only_its_own_sessions() {
    let fx = Fx::new();
    let ada = start(&fx, "ada's");
    let bob = holding(
        "bob",
        &["write:workspace", "read:workspace", "execute:rerun"],
    );
    let listed = fx.call_as(&bob, "list_sessions", json!({})).unwrap();
    assert_eq!(listed["sessions"], json!([]));
    for (tool, args) in [
        ("end_session", json!({"session_id": ada})),
        ("session_rerun", json!({"session_id": ada})),
    ] {
        let refused = assert_code(fx.call_as(&bob, tool, args), ErrorCode::SessionNotFound);
        assert_eq!(refused.details.unwrap()["session_id"], json!(ada));
    }
    let missing = assert_code(
        fx.call("end_session", json!({"session_id": "s0123456789abcdef"})),
        ErrorCode::SessionNotFound,
    );
    assert!(missing.message.contains("s0123456789abcdef"));
    // Bob's calls are not recorded in Ada's session.
    recorded_as(&fx, &bob, "list_sessions", json!({})).unwrap();
    assert!(trace_of(&ada).lines.is_empty());
    let mine = fx.call("list_sessions", json!({})).unwrap();
    assert_eq!(mine["sessions"][0]["session_id"], json!(ada));
    assert_eq!(mine["sessions"][0]["label"], "ada's");
}

#[test]
fn scopes_are_checked() {
    let fx = Fx::new();
    let reader = holding("r", &["read:workspace"]);
    let refused = fx.call_as(&reader, "start_session", json!({})).unwrap_err();
    assert_eq!(
        refused.details.unwrap()["scope"],
        "write:workspace",
        "names the scope"
    );
    fx.call_as(&reader, "list_sessions", json!({})).unwrap();
}

// r[verify sessions.tools.list]
#[test]
fn list_sessions_pages_newest_first_with_a_signed_cursor() {
    let fx = Fx::new();
    let sessions = sessions();
    {
        let db = tc_tools::SubsystemDb::open(
            sessions.cache_dir(),
            tc_sessions::COMPONENT,
            store::MIGRATIONS,
        )
        .unwrap();
        for i in 0..230 {
            let id = format!("s{i:04x}");
            let row = SessionRow {
                id: id.clone(),
                vault: "main".into(),
                vault_root: "/vault".into(),
                caller: "stdio".into(),
                scopes: "*".into(),
                label: format!("session {i} {}", "x".repeat(100)),
                started_ms: NOW_MS + i,
                ended_ms: Some(NOW_MS + i + 1),
                call_count: 0,
                lost_count: 0,
                trace_file: format!("{id}.jsonl"),
            };
            store::insert(&db.lock(), &row).unwrap();
            store::end(&db.lock(), &id, NOW_MS + i + 1).unwrap();
        }
    }
    let mut seen: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut args = json!({});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let page = fx.call("list_sessions", args).unwrap();
        pages += 1;
        let size = serde_json::to_vec(&page).unwrap().len();
        assert!(size < tc_tools::testing::PAGE_CAP, "page of {size} bytes");
        for s in page["sessions"].as_array().unwrap() {
            seen.push(s["session_id"].as_str().unwrap().to_owned());
        }
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert!(pages >= 3, "{pages} pages");
    let expected: Vec<String> = (0..230).rev().map(|i| format!("s{i:04x}")).collect();
    assert_eq!(seen, expected, "every session once, newest first");
    // The cursor is the caller's: another caller presenting it is refused.
    let first = fx.call("list_sessions", json!({})).unwrap();
    let token = first["next_cursor"].as_str().unwrap();
    let bob = holding("bob", &["read:workspace"]);
    let refused = assert_code(
        fx.call_as(&bob, "list_sessions", json!({"cursor": token})),
        ErrorCode::InvalidInput,
    );
    assert_eq!(refused.details.unwrap()["reason"], "foreign");
    let forged = assert_code(
        fx.call("list_sessions", json!({"cursor": "garbage"})),
        ErrorCode::InvalidInput,
    );
    assert_eq!(forged.details.unwrap()["reason"], "invalid");
}

// r[verify sessions.trace.redacted]
// r[verify sessions.trace.capped]
// r[verify sessions.config.trace-content]
#[test]
fn kept_arguments_are_scanned_and_capped() {
    let fx = Fx::new();
    let id = start(&fx, "");
    recorded(
        &fx,
        "write_note",
        json!({"path": "k.md", "content": "api_key = sk-live-0123456789abcdef"}),
    )
    .unwrap();
    recorded(
        &fx,
        "write_note",
        json!({"path": "big.md", "content": "y".repeat(70_000)}),
    )
    .unwrap();
    // A gated call's token is never kept (the call itself is refused: no such token).
    recorded(
        &fx,
        "delete_note",
        json!({"path": "k.md", "elicit_token": "et_should_never_be_kept"}),
    )
    .unwrap_err();
    let lines = trace_of(&id).lines;
    assert!(lines[0].redacted);
    let kept = lines[0].args.as_ref().unwrap().to_string();
    assert!(!kept.contains("sk-live-0123456789abcdef"), "{kept}");
    assert!(lines[1].capped && lines[1].args.is_none());
    assert!(!lines[2].redacted);
    assert_eq!(lines[2].args, Some(json!({"path": "k.md"})));
    let raw =
        std::fs::read_to_string(sessions().trace_path(&sessions().find(&id).unwrap())).unwrap();
    assert!(!raw.contains("et_should_never_be_kept"));
    assert!(!raw.contains("sk-live"));
    // Without traceContent a store keeps no argument values at all.
    let dir = tempfile::tempdir().unwrap();
    let plain = tc_sessions::Sessions::open(
        dir.path(),
        tc_sessions::SessionsConfig::default(),
        std::sync::Arc::new(tc_gate::clock::ManualClock::new(NOW_MS)),
    )
    .unwrap();
    let row = SessionRow {
        id: "s1".into(),
        vault: "main".into(),
        vault_root: "/vault".into(),
        caller: "stdio".into(),
        scopes: "*".into(),
        label: String::new(),
        started_ms: NOW_MS,
        ended_ms: None,
        call_count: 0,
        lost_count: 0,
        trace_file: "s1.jsonl".into(),
    };
    let db =
        tc_tools::SubsystemDb::open(dir.path(), tc_sessions::COMPONENT, store::MIGRATIONS).unwrap();
    store::insert(&db.lock(), &row).unwrap();
    tc_sessions::trace::create(&plain.trace_path(&row)).unwrap();
    let args = json!({"path": "secret-plans.md"});
    plain
        .record(&tc_sessions::CallRecord {
            caller: "stdio",
            vault: "main",
            tool: "read_notes",
            arguments: &args,
            args_hash: None,
            status: CallStatus::Ok,
            error_code: None,
            duration_ms: 0,
            result_bytes: 0,
        })
        .unwrap();
    let text = std::fs::read_to_string(plain.trace_path(&row)).unwrap();
    assert!(!text.contains("secret-plans"), "{text}");
    assert!(!text.contains("\"args\""), "{text}");
}

// r[verify sessions.record.never-fails-call]
#[test]
fn a_trace_that_cannot_be_written_loses_the_line_not_the_call() {
    let fx = Fx::new();
    let id = start(&fx, "");
    let sessions = sessions();
    let path = sessions.trace_path(&sessions.find(&id).unwrap());
    // The trace's place is taken by a folder: appends fail.
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    let args = json!({});
    let record = tc_sessions::CallRecord {
        caller: "stdio",
        vault: "main",
        tool: "list_notes",
        arguments: &args,
        args_hash: None,
        status: CallStatus::Ok,
        error_code: None,
        duration_ms: 0,
        result_bytes: 0,
    };
    let before = sessions.lost_calls();
    assert_eq!(sessions.record_or_log(&record), None);
    assert_eq!(sessions.lost_calls(), before + 1);
    let listed: Value = fx.call("list_sessions", json!({})).unwrap();
    assert_eq!(listed["sessions"][0]["lost_calls"], 1);
}
