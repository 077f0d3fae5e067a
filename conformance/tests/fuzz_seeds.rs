//! Replays every committed fuzz seed (`fuzz/seeds/<target>/*`) through the body its fuzz target
//! calls, so inputs the fuzzer found stay regression tests on stable Rust,
//! without nightly or cargo-fuzz.

use std::fs;
use std::path::{Path, PathBuf};

use tc_conformance::fuzz_bodies;

fn seeds_of(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/seeds")
        .join(target);
    let mut seeds: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.is_file())
        .collect();
    seeds.sort();
    seeds
}

/// Runs `body` on every seed of `target`, naming the seed that fails.
fn replay(target: &str, body: fn(&[u8])) {
    let seeds = seeds_of(target);
    assert!(!seeds.is_empty(), "no seeds committed for {target}");
    for seed in seeds {
        let data = fs::read(&seed).unwrap_or_else(|error| panic!("{}: {error}", seed.display()));
        if let Err(panic) = std::panic::catch_unwind(|| body(&data)) {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            panic!("seed {} of {target} fails: {message}", seed.display());
        }
    }
}

// r[verify state.seal.aad]
// r[verify state.ttl]
#[test]
fn request_state_open_seeds() {
    replay("request_state_open", fuzz_bodies::request_state_open);
}

// r[verify paging.cursor.signed]
// r[verify paging.cursor.bound]
// r[verify paging.cursor.refusals]
#[test]
fn cursor_open_seeds() {
    replay("cursor_open", fuzz_bodies::cursor_open);
}

// r[verify gate.hash.args-hash]
// r[verify gate.hash.canonical-json]
#[test]
fn args_hash_seeds() {
    replay("args_hash", fuzz_bodies::args_hash_json);
}

#[test]
fn lifecycle_seeds() {
    replay("lifecycle", fuzz_bodies::lifecycle);
}

// r[verify tools.summary.bounded]
// r[verify tools.summary.escaped]
// r[verify tools.summary.redacted]
#[test]
fn summary_render_seeds() {
    replay("summary_render", fuzz_bodies::summary_render);
}

// r[verify cli.serve.stdio-parse-error]
// r[verify dispatch.unknown-tool]
#[test]
fn jsonrpc_tools_call_seeds() {
    replay("jsonrpc_tools_call", fuzz_bodies::jsonrpc_tools_call);
}
