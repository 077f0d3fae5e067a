//! The tc-sessions tests' fixture: tc-tools' shared one (`tc_tools::testing`) over the note
//! tools and the session tools, all of a test's pipelines sharing one sessions store (with
//! `traceContent` on) in a temp cache of the test's own thread, and a replayer that runs
//! re-runs over a second pipeline on the fixture's vault ([`wire`]).
#![allow(dead_code, unused_imports)]

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use serde_json::{Value, json};
pub use tc_sessions::store::{self, SessionRow};
use tc_sessions::{
    CallRecord, CallReport, CallStatus, Replayer, RerunPlan, Sessions, SessionsConfig, TraceLine,
    rerun::{ReplayControl, replay_on},
};
pub use tc_tools::testing::{NOW_MS, TempVault, Tools, caller, code, verified, with_token};
use tc_tools::{CallerContext, ErrorCode, Pipeline, Registry, ToolError};
use tc_vault::Scopes;

struct Shared {
    dir: tempfile::TempDir,
    sessions: Arc<Sessions>,
}

thread_local! {
    static SHARED: Shared = {
        let dir = tempfile::tempdir().unwrap();
        let clock = tc_gate::clock::ManualClock::new(NOW_MS);
        let sessions = Arc::new(
            Sessions::open(dir.path(), SessionsConfig { trace_content: true }, Arc::new(clock)).unwrap(),
        );
        sessions.set_replayer(Arc::new(TestReplayer));
        Shared { dir, sessions }
    };
    /// The pipeline re-runs go to (set by [`wire`]).
    static TARGET: RefCell<Option<Arc<Pipeline>>> = const { RefCell::new(None) };
    /// How many re-runs the replayer has run.
    static REPLAYS: Cell<usize> = const { Cell::new(0) };
}

/// The note tools and the session tools.
pub struct SessionTools;

impl Tools for SessionTools {
    fn registry() -> Registry {
        let mut registry = tc_notes::registry().unwrap();
        SHARED.with(|shared| shared.sessions.add_tools(&mut registry).unwrap());
        registry
    }
}

pub type Fx = tc_tools::testing::Fx<SessionTools>;
pub type Scenario<'a> = tc_tools::testing::Scenario<'a, SessionTools>;

/// This thread's sessions store.
pub fn sessions() -> Arc<Sessions> {
    SHARED.with(|shared| Arc::clone(&shared.sessions))
}

/// Runs re-runs over the pipeline [`wire`] set, counting them. With `sandbox` the
/// fixture's own throwaway vault stands in for the copy (the server's replayer makes a
/// real one; tests/mcp_sessions.rs of tc-server checks it).
#[derive(Debug)]
struct TestReplayer;

impl Replayer for TestReplayer {
    fn replay(
        &self,
        plan: &RerunPlan,
        control: &ReplayControl<'_>,
    ) -> Result<Vec<CallReport>, ToolError> {
        let target = TARGET
            .with(|t| t.borrow().clone())
            .expect("wire(&fx) before a re-run");
        REPLAYS.with(|r| r.set(r.get() + 1));
        let govern = |output: tc_tools::ToolOutput| {
            Ok(serde_json::to_vec(&output.to_value()).map_or(0, |b| b.len() as u64))
        };
        Ok(replay_on(&target, plan, plan.sandbox, &govern, control))
    }
}

/// Points the replayer at a second pipeline over `fx`'s vault, gate and secret.
pub fn wire(fx: &Fx) {
    let cache = fx.cache();
    let vault = fx.open(tc_vault::snapshot_dir_for(&cache, "main").unwrap(), 5);
    let binding = tc_tools::testing::binding(vault, &cache, fx.secret(), None, &[]);
    let pipeline = tc_tools::testing::pipeline(
        SessionTools::registry(),
        binding,
        fx.gate.clone(),
        Arc::new(fx.clock.clone()),
        fx.secret(),
    );
    TARGET.with(|t| *t.borrow_mut() = Some(Arc::new(pipeline)));
}

pub fn replays() -> usize {
    REPLAYS.with(Cell::get)
}

/// A call through the fixture, recorded as the server would record it.
pub fn recorded(fx: &Fx, tool: &str, args: Value) -> Result<Value, ToolError> {
    recorded_as(fx, &caller(), tool, args)
}

pub fn recorded_as(
    fx: &Fx,
    who: &CallerContext,
    tool: &str,
    args: Value,
) -> Result<Value, ToolError> {
    let outcome = fx.call_as(who, tool, args.clone());
    let (status, code) = match &outcome {
        Ok(_) => (CallStatus::Ok, None),
        Err(error) => (CallStatus::Error, Some(error.code.as_str())),
    };
    let bytes = match &outcome {
        Ok(value) => value.to_string().len() as u64,
        Err(error) => error.to_structured().to_string().len() as u64,
    };
    sessions()
        .record(&CallRecord {
            caller: &who.id,
            vault: "main",
            tool,
            arguments: &args,
            args_hash: None,
            status,
            error_code: code,
            duration_ms: 1,
            result_bytes: bytes,
        })
        .unwrap();
    outcome
}

/// The trace of session `id`.
pub fn trace_of(id: &str) -> tc_sessions::trace::Trace {
    let sessions = sessions();
    let row = sessions.find(id).unwrap();
    tc_sessions::trace::read(&sessions.trace_path(&row)).unwrap()
}

/// Appends a line to the trace of `id` by hand, as a person (or a stray process) would.
pub fn append_by_hand(id: &str) {
    use std::io::Write;
    let sessions = sessions();
    let row = sessions.find(id).unwrap();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(sessions.trace_path(&row))
        .unwrap();
    file.write_all(b"{\"n\":99,\"time\":\"\",\"time_ms\":0,\"tool\":\"list_notes\",\"args_hash\":\"x\",\"status\":\"ok\",\"error_code\":null,\"duration_ms\":0,\"result_bytes\":0,\"args\":{}}\n")
        .unwrap();
}

/// A caller holding only `scopes`.
pub fn holding(id: &str, scopes: &[&str]) -> CallerContext {
    CallerContext::new(id, Scopes::granted(scopes.iter().copied()))
}

pub fn refusal(result: Result<Value, ToolError>) -> ToolError {
    match result {
        Ok(value) => panic!("expected a refusal, got {value}"),
        Err(error) => error,
    }
}

pub fn assert_code(result: Result<Value, ToolError>, expected: ErrorCode) -> ToolError {
    let error = refusal(result);
    assert_eq!(error.code, expected, "{error}");
    error
}
