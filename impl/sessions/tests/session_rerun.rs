//! `session_rerun` over the shared fixture: the standard gated-tool scenarios on the CLI
//! token route, drift on the verified (requestState) route, and the verdicts and
//! divergences of a re-run (spec/sessions.md `sessions.rerun.*`, `sessions.tools.rerun`;
//! spec/drift.md `drift.bind.session-rerun`, `drift.residual.open-session`).

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use support::*;
use tc_sessions::CallStatus;
use tc_tools::{CallControl, ErrorCode, ProgressSink};

const SESSION: &str = "s5e55";

/// Session `SESSION` of `stdio`, with a trace of two recorded calls (a read of a.md and a
/// write), open or ended; idempotent, so a scenario can run it again.
fn session(fx: &Fx, ended: bool) {
    fx.put("a.md", "# A\n");
    let sessions = sessions();
    if sessions.find(SESSION).is_ok() {
        return;
    }
    let row = SessionRow {
        id: SESSION.into(),
        vault: "main".into(),
        vault_root: "/vault".into(),
        caller: "stdio".into(),
        scopes: "*".into(),
        label: "scenario".into(),
        started_ms: NOW_MS,
        ended_ms: None,
        call_count: 0,
        lost_count: 0,
        trace_file: format!("{SESSION}.jsonl"),
    };
    let db = tc_tools::SubsystemDb::open(
        sessions.cache_dir(),
        tc_sessions::COMPONENT,
        store::MIGRATIONS,
    )
    .unwrap();
    tc_sessions::trace::create(&sessions.trace_path(&row)).unwrap();
    store::insert(&db.lock(), &row).unwrap();
    wire(fx);
    recorded(fx, "read_notes", json!({"paths": ["a.md"]})).unwrap();
    recorded(fx, "write_note", json!({"path": "b.md", "content": "b"})).unwrap();
    if ended {
        store::end(&db.lock(), SESSION, NOW_MS + 10).unwrap();
    }
}

fn ended(fx: &Fx) {
    session(fx, true);
}

fn open(fx: &Fx) {
    session(fx, false);
}

fn args() -> Value {
    json!({"session_id": SESSION})
}

thread_local! {
    static BEFORE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn untouched(_fx: &Fx) {
    BEFORE.with(|b| b.set(replays()));
}

fn applied(_fx: &Fx) {
    assert_eq!(
        replays(),
        BEFORE.with(|b| b.get()) + 1,
        "the re-run ran once"
    );
}

fn end_it(_fx: &Fx) {
    let db = tc_tools::SubsystemDb::open(
        sessions().cache_dir(),
        tc_sessions::COMPONENT,
        store::MIGRATIONS,
    )
    .unwrap();
    store::end(&db.lock(), SESSION, NOW_MS + 20).unwrap();
}

fn scenario(setup: &'static dyn Fn(&Fx), drift: &'static dyn Fn(&Fx)) -> Scenario<'static> {
    Scenario {
        tool: "session_rerun",
        args: args(),
        setup,
        applied: &applied,
        untouched: &untouched,
        drift,
    }
}

// r[verify sessions.tools.rerun]
#[test]
fn approve_then_replay() {
    scenario(&ended, &|_| {}).approve_then_replay();
}

// r[verify drift.bind.session-rerun]
#[test]
fn a_trace_grown_after_the_end_is_drift() {
    scenario(&ended, &|_| append_by_hand(SESSION)).drift_refused();
}

// r[verify drift.bind.session-rerun]
#[test]
fn a_session_ending_between_request_and_redemption_is_drift() {
    scenario(&open, &end_it).drift_refused();
}

// r[verify drift.residual.open-session]
#[test]
fn an_open_session_s_trace_is_not_bound() {
    let fx = Fx::new();
    open(&fx);
    let token = fx.require("session_rerun", &args());
    // Calls recorded while the request waits (the refused call itself is one of them in a
    // real server) grow the open session's trace: no drift.
    recorded(&fx, "read_notes", json!({"paths": ["a.md"]})).unwrap();
    append_by_hand(SESSION);
    untouched(&fx);
    let report = fx
        .call("session_rerun", with_token(&args(), &token))
        .unwrap();
    applied(&fx);
    assert_eq!(report["session_open"], true);
    assert_eq!(
        report["summary"]["total"], 4,
        "the lines as they were at the run"
    );
}

// r[verify drift.bind.session-rerun]
#[test]
fn drift_is_refused_on_the_verified_route_too() {
    let fx = Fx::new();
    ended(&fx);
    let prepared = fx
        .pipeline
        .prepare(&caller(), "session_rerun", &args())
        .unwrap();
    assert!(prepared.needs_confirmation());
    let approval = verified(prepared.state_fp());
    append_by_hand(SESSION);
    let again = fx
        .pipeline
        .prepare(&caller(), "session_rerun", &args())
        .unwrap();
    let refused = fx
        .pipeline
        .execute(&again, approval, &CallControl::default())
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::ReplayDrift, "{refused}");
    // A fresh confirmation of the new state runs.
    let fresh = fx
        .pipeline
        .prepare(&caller(), "session_rerun", &args())
        .unwrap();
    let approval = verified(fresh.state_fp());
    fx.pipeline
        .execute(&fresh, approval, &CallControl::default())
        .unwrap();
}

#[test]
fn the_summary_names_the_session_and_what_is_not_run() {
    let fx = Fx::new();
    ended(&fx);
    let prepared = fx
        .pipeline
        .prepare(&caller(), "session_rerun", &args())
        .unwrap();
    let summary = fx.pipeline.summary(&prepared);
    assert!(summary.contains(SESSION), "{summary}");
    assert!(summary.contains("2 recorded call(s)"), "{summary}");
    assert!(summary.contains("rerun:stdio"), "{summary}");
    assert!(summary.contains("skipped"), "{summary}");
}

/// Runs the re-run of `SESSION` with a CLI token.
fn rerun(fx: &Fx, extra: Value) -> Value {
    let mut call = args();
    for (k, v) in extra.as_object().unwrap() {
        call[k] = v.clone();
    }
    let token = fx.require("session_rerun", &call);
    fx.call("session_rerun", with_token(&call, &token))
        .unwrap_or_else(|e| panic!("session_rerun: {e}"))
}

fn verdicts(report: &Value) -> Vec<(String, String, Value)> {
    report["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["tool"].as_str().unwrap().to_owned(),
                c["verdict"].as_str().unwrap().to_owned(),
                c["divergence"].clone(),
            )
        })
        .collect()
}

// r[verify sessions.rerun.verdicts]
// r[verify sessions.rerun.never-clears-gate]
// r[verify sessions.rerun.caller]
#[test]
fn each_call_gets_its_verdict_and_divergence() {
    let fx = Fx::new();
    open(&fx);
    fx.put("gone.md", "soon deleted\n");
    recorded(&fx, "read_notes", json!({"paths": ["gone.md"]})).unwrap();
    assert_code(
        recorded(&fx, "read_notes", json!({"paths": [1]})),
        ErrorCode::ValidationError,
    );
    // Always gated: refused when recorded, refused by policy when re-run.
    assert_code(
        recorded(&fx, "delete_note", json!({"path": "a.md"})),
        ErrorCode::ElicitRequired,
    );
    recorded(
        &fx,
        "read_notes",
        json!({"paths": ["a.md"], "note": "Bearer abcdefghijklmnop"}),
    )
    .unwrap_err();
    end_it(&fx);
    std::fs::remove_file(fx.root.join("gone.md")).unwrap();
    std::fs::remove_file(fx.root.join("b.md")).unwrap();
    let requested = fx.requested();
    let report = rerun(&fx, json!({}));
    assert_eq!(
        fx.requested(),
        requested + 1,
        "only the re-run's own request was raised"
    );
    assert_eq!(report["caller"], "rerun:stdio");
    assert_eq!(report["sandbox"], false);
    assert_eq!(
        verdicts(&report),
        vec![
            ("read_notes".into(), "runnable".into(), json!("none")),
            (
                "write_note".into(),
                "skipped_changes_vault".into(),
                Value::Null
            ),
            ("read_notes".into(), "runnable".into(), json!("none")),
            ("read_notes".into(), "runnable".into(), json!("none")),
            (
                "delete_note".into(),
                "skipped_changes_vault".into(),
                Value::Null
            ),
            ("read_notes".into(), "redacted".into(), Value::Null),
        ]
    );
    // gone.md: read_notes reports a missing path as an errors entry, not a failure, so the
    // status is the same; the validation error stays a validation error.
    assert_eq!(
        report["calls"][3]["rerun"]["error_code"],
        "validation_error"
    );
    let summary = &report["summary"];
    assert_eq!(summary["total"], 6);
    assert_eq!(summary["runnable"], 3);
    assert_eq!(summary["skipped_changes_vault"], 2);
    assert_eq!(summary["redacted"], 1);
    assert_eq!(summary["diverged"], 0);
    assert!(fx.get("b.md").is_none(), "the write was not re-run");
    assert!(fx.get("a.md").is_some(), "the delete was not re-run");
}

#[test]
fn with_a_sandbox_writes_run_gated_calls_are_refused_by_policy_and_outcomes_diverge() {
    let fx = Fx::new();
    open(&fx);
    end_it(&fx);
    // Hand-written lines: delete_note (always gated, so refused by policy), a
    // call recorded as failing that now succeeds, and one without arguments.
    let sessions = sessions();
    let row = sessions.find(SESSION).unwrap();
    let path = sessions.trace_path(&row);
    let mut text = std::fs::read_to_string(&path).unwrap();
    for line in [
        json!({"n": 3, "time": "", "time_ms": 0, "tool": "delete_note", "args_hash": "x",
               "status": "error", "error_code": "elicit_required", "duration_ms": 0,
               "result_bytes": 0, "args": {"path": "a.md"}}),
        json!({"n": 4, "time": "", "time_ms": 0, "tool": "list_notes", "args_hash": "x",
               "status": "error", "error_code": "note_not_found", "duration_ms": 0,
               "result_bytes": 0, "args": {}}),
        json!({"n": 5, "time": "", "time_ms": 0, "tool": "list_notes", "args_hash": "x",
               "status": "ok", "error_code": null, "duration_ms": 0, "result_bytes": 0}),
    ] {
        text.push_str(&format!("{line}\n"));
    }
    std::fs::write(&path, text).unwrap();
    std::fs::remove_file(fx.root.join("b.md")).unwrap();
    let report = rerun(&fx, json!({"sandbox": true}));
    let got = verdicts(&report);
    assert_eq!(
        got[1],
        ("write_note".into(), "runnable".into(), json!("none"))
    );
    assert_eq!(
        got[2],
        (
            "delete_note".into(),
            "refused_by_policy".into(),
            Value::Null
        )
    );
    assert!(fx.get("a.md").is_some(), "a re-run never clears a gate");
    assert_eq!(
        got[3],
        ("list_notes".into(), "runnable".into(), json!("status"))
    );
    assert_eq!(
        got[4],
        ("list_notes".into(), "not_captured".into(), Value::Null)
    );
    assert_eq!(
        report["calls"][3]["recorded"]["error_code"],
        "note_not_found"
    );
    assert_eq!(report["calls"][3]["rerun"]["status"], "ok");
    assert_eq!(report["summary"]["diverged"], 1);
    assert_eq!(report["summary"]["refused_by_policy"], 1);
    assert_eq!(report["summary"]["not_captured"], 1);
    assert_eq!(report["sandbox"], true);
}

#[test]
fn the_rerun_caller_holds_the_asking_caller_s_scopes() {
    let fx = Fx::new();
    open(&fx);
    end_it(&fx);
    // A caller without read:notes re-running its session: the reads are refused now.
    let limited = holding("stdio", &["execute:rerun", "read:workspace"]);
    let refusal = fx.call_as(&limited, "session_rerun", args()).unwrap_err();
    let token = fx.mint(&refusal);
    let report = fx
        .call_as(&limited, "session_rerun", with_token(&args(), &token))
        .unwrap();
    assert_eq!(report["calls"][0]["verdict"], "runnable");
    assert_eq!(report["calls"][0]["rerun"]["error_code"], "acl_denied");
    assert_eq!(report["calls"][0]["divergence"], "status");
}

// r[verify sessions.rerun.progress]
#[test]
fn progress_is_reported_after_each_call() {
    #[derive(Default)]
    struct Seen(Mutex<Vec<(f64, Option<f64>)>>, AtomicUsize);
    impl ProgressSink for Seen {
        fn report(&self, progress: f64, total: Option<f64>, _message: Option<&str>) {
            self.0.lock().unwrap().push((progress, total));
            self.1.fetch_add(1, Ordering::SeqCst);
        }
    }
    let fx = Fx::new();
    ended(&fx);
    let token = fx.require("session_rerun", &args());
    let seen = Arc::new(Seen::default());
    let control = CallControl {
        cancel: tc_tools::CancellationFlag::new(),
        progress: seen.clone(),
    };
    let prepared = fx
        .pipeline
        .prepare(&caller(), "session_rerun", &with_token(&args(), &token))
        .unwrap();
    fx.pipeline
        .execute(&prepared, prepared.token_approval(), &control)
        .unwrap();
    assert_eq!(
        *seen.0.lock().unwrap(),
        vec![(1.0, Some(2.0)), (2.0, Some(2.0))]
    );
}

#[test]
fn a_report_over_the_cap_lists_the_first_calls_and_counts_the_rest() {
    let fx = Fx::new();
    open(&fx);
    for _ in 0..600 {
        recorded(&fx, "list_notes", json!({})).unwrap();
    }
    end_it(&fx);
    let report = rerun(&fx, json!({}));
    let listed = report["calls"].as_array().unwrap().len() as u64;
    assert_eq!(report["summary"]["total"], 602);
    assert_eq!(listed + report["calls_omitted"].as_u64().unwrap(), 602);
    assert!(report["calls_omitted"].as_u64().unwrap() > 0);
    assert!(serde_json::to_vec(&report).unwrap().len() < tc_tools::testing::PAGE_CAP);
    let status = &report["calls"][0]["recorded"]["status"];
    assert_eq!(status, &json!(CallStatus::Ok.as_str()));
}

#[test]
fn every_result_satisfies_its_output_schema() {
    let fx = Fx::new();
    open(&fx);
    let listed = fx.call("list_sessions", json!({})).unwrap();
    let ended = fx
        .call("end_session", json!({"session_id": SESSION}))
        .unwrap();
    let started = fx.call("start_session", json!({"label": "next"})).unwrap();
    let report = rerun(&fx, json!({}));
    for (tool, result) in [
        ("list_sessions", listed),
        ("end_session", ended),
        ("start_session", started),
        ("session_rerun", report),
    ] {
        let def = fx.pipeline.registry().get(tool).unwrap();
        let validator = jsonschema::validator_for(&def.output_schema).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&result)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{tool}: {errors:?}\n{result}");
    }
}
