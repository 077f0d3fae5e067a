//! The tc-memory tests' fixture: tc-tools' shared one (`tc_tools::testing`) over the memory
//! tools (and the note tools, for `restore_note`), all of a test's pipelines sharing one
//! memory store in a temp cache.db of the test's own thread (a reconfigured fixture is a
//! restarted server over the same cache).
#![allow(dead_code, unused_imports)]

use std::sync::Arc;

use serde_json::{Value, json};
use tc_memory::{Memory, MemoryConfig};
pub use tc_tools::testing::{
    NOW_MS, TempVault, Tools, caller, code, deny_write_all, forbid_all, verified, with_token,
};
use tc_tools::{CallerContext, ErrorCode, Registry, ToolError};
use tc_vault::Scopes;

struct Shared {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    memory: Arc<Memory>,
}

thread_local! {
    static SHARED: Shared = {
        let dir = tempfile::tempdir().unwrap();
        let db = tc_tools::SubsystemDb::open(dir.path(), tc_memory::COMPONENT, tc_memory::store::MIGRATIONS).unwrap();
        let path = dir.path().join("cache.db");
        let memory = Arc::new(Memory::new(db, [("main".to_owned(), MemoryConfig::default())]).unwrap());
        Shared { _dir: dir, path, memory }
    };
}

/// The memory tools and the note tools.
pub struct MemoryTools;

impl Tools for MemoryTools {
    fn registry() -> Registry {
        let mut registry = tc_notes::registry().unwrap();
        SHARED.with(|shared| tc_memory::add_tools(&mut registry, &shared.memory).unwrap());
        registry
    }
}

pub type Fx = tc_tools::testing::Fx<MemoryTools>;
pub type Scenario<'a> = tc_tools::testing::Scenario<'a, MemoryTools>;

/// A second connection to this thread's memory tables, to look at them (or put a row back
/// with the id it had) the way another process would.
pub fn sql() -> rusqlite::Connection {
    SHARED.with(|shared| rusqlite::Connection::open(&shared.path).unwrap())
}

/// How many entities the store holds.
pub fn entity_count() -> i64 {
    sql()
        .query_row("SELECT count(*) FROM memory_entities", [], |r| r.get(0))
        .unwrap()
}

/// upsert_entity, which must succeed.
pub fn upsert(fx: &Fx, kind: &str, name: &str, observations: &[&str]) -> Value {
    fx.call(
        "upsert_entity",
        json!({"type": kind, "name": name, "observations": observations}),
    )
    .unwrap_or_else(|e| panic!("upsert {name}: {e}"))
}

/// The id upsert_entity gave.
pub fn id_of(result: &Value) -> String {
    result["entity"]["id"].as_str().unwrap().to_owned()
}

/// relate_entities, which must succeed.
pub fn relate(fx: &Fx, source: &str, target: &str, relation: &str) -> Value {
    fx.call(
        "relate_entities",
        json!({"source": source, "target": target, "relation": relation}),
    )
    .unwrap_or_else(|e| panic!("relate: {e}"))
}

/// A caller holding only `scopes`.
pub fn holding(scopes: &[&str]) -> CallerContext {
    CallerContext::new("stdio", Scopes::granted(scopes.iter().copied()))
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
