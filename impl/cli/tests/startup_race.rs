//! Several real `obsidian-tc serve` processes started at the same moment on one fresh
//! cacheDir all come up and answer (spec/config.md `config.cache-dir.shared-startup`): the
//! schema of cache.db and of every subsystem table is created once, the server secret is
//! published once and read by the rest, and a database another process holds busy is waited
//! for rather than reported as broken.

mod support;

use std::io::{Read, Write};
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tc_testkit::race::at_once;

/// Processes started at once; more than the two CI cores, so they really overlap.
const SERVERS: usize = 6;
/// How long one server may take to answer `tools/list` while the others start too.
const REPLY_TIMEOUT: Duration = Duration::from_secs(60);

fn spawn_server(vault: &Path, cache: &Path) -> Child {
    support::serve(vault, cache)
        .spawn()
        .expect("spawn obsidian-tc serve")
}

/// Sends the handshake and `tools/list` to `child`, and returns the `tools/list` reply (or
/// what went wrong, with the server's stderr).
fn list_tools(mut child: Child) -> Result<Value, String> {
    let mut stdin = child.stdin.take().expect("stdin");
    let replies = support::json_lines(child.stdout.take().expect("stdout"));
    let mut stderr = child.stderr.take().expect("stderr");
    let [initialize, initialized] = support::handshake("startup-race-test");
    let messages = [
        initialize,
        initialized,
        json!({"jsonrpc": "2.0", "id": "list", "method": "tools/list"}),
    ];
    let written = messages.iter().try_for_each(|message| {
        stdin.write_all(message.to_string().as_bytes())?;
        stdin.write_all(b"\n")?;
        stdin.flush()
    });
    let deadline = Instant::now() + REPLY_TIMEOUT;
    let mut outcome = Err("no tools/list reply".to_owned());
    if written.is_ok() {
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match replies.recv_timeout(left) {
                Ok(Ok(reply)) if reply["id"] == "list" => {
                    outcome = Ok(reply);
                    break;
                }
                Ok(Ok(_)) => {}
                Ok(Err(line)) => {
                    outcome = Err(format!("stdout carried a line that is not JSON ({line})"));
                    break;
                }
                Err(_) => break,
            }
        }
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let mut text = String::new();
    let _ = stderr.read_to_string(&mut text);
    outcome.map_err(|why| format!("{why}; stderr:\n{text}"))
}

/// Rounds, each on its own fresh cacheDir: one round can miss the window by luck.
const ROUNDS: usize = 10;

// r[verify config.cache-dir.shared-startup]
#[test]
fn servers_started_at_once_on_a_fresh_cache_dir_all_come_up() {
    for _ in 0..ROUNDS {
        one_round();
    }
}

fn one_round() {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path().join("vault");
    std::fs::create_dir_all(&vault).unwrap();
    std::fs::write(vault.join("note.md"), "# A note\n").unwrap();
    // Fresh: neither cache.db nor server-secrets/ exists yet.
    let cache = dir.path().join("cache");
    let outcomes: Vec<Result<Value, String>> = {
        let (vault, cache) = (vault.clone(), cache.clone());
        at_once(SERVERS, move |_| list_tools(spawn_server(&vault, &cache)))
    };
    let failures: Vec<&String> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {SERVERS} servers did not come up:\n{}",
        failures.len(),
        failures
            .iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join("\n---\n")
    );
    let counts: Vec<usize> = outcomes
        .iter()
        .map(|o| {
            o.as_ref().unwrap()["result"]["tools"]
                .as_array()
                .map_or(0, Vec::len)
        })
        .collect();
    assert!(counts[0] > 0, "no tools listed");
    assert!(
        counts.iter().all(|&n| n == counts[0]),
        "the servers list different tools: {counts:?}"
    );
    // One secret for all of them, private.
    let secrets = cache.join("server-secrets");
    let names: Vec<_> = std::fs::read_dir(&secrets)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["wiki-generated.key"], "{names:?}");
}
