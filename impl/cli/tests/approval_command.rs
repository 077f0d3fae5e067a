//! The approval command an `elicit_required` refusal prints, pasted as it is: for every way of
//! starting `obsidian-tc serve`, the printed `obsidian-tc elicit …` run by a shell from
//! another working directory mints a token the same server then accepts (spec/cli.md
//! `cli.elicit.command-works`; spec/cli.md).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

/// `obsidian-tc serve …` over stdio, driven by raw JSON-RPC lines.
struct Served {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Served {
    fn start(args: &[&str], cwd: &Path, xdg: &Path) -> Served {
        Served::start_with_path(args, cwd, xdg, &std::env::var("PATH").unwrap_or_default())
    }

    fn start_with_path(args: &[&str], cwd: &Path, xdg: &Path, path: &str) -> Served {
        let mut child = Command::new(env!("CARGO_BIN_EXE_obsidian-tc"))
            .arg("serve")
            .args(args)
            .current_dir(cwd)
            .env("PATH", path)
            .env("XDG_CACHE_HOME", xdg)
            .env("HOME", "/nonexistent-home")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn obsidian-tc serve");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut served = Served {
            child,
            stdin,
            stdout,
            next_id: 1,
        };
        served.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "approval-command-test", "version": "0"}
            }),
        );
        writeln!(
            served.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        .unwrap();
        served
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
        loop {
            let mut answer = String::new();
            assert!(
                self.stdout.read_line(&mut answer).unwrap() > 0,
                "the server hung up"
            );
            let answer: Value = serde_json::from_str(&answer).unwrap();
            if answer["id"] == id {
                return answer["result"].clone();
            }
        }
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `PATH` with the binary's folder first.
fn path_with_binary() -> String {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_obsidian-tc"));
    format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Runs `command` in a shell from `cwd`, with the given `PATH` and `XDG_CACHE_HOME`; returns
/// stdout, or panics with stderr.
fn paste_with(command: &str, cwd: &Path, xdg: &Path, path: &str) -> String {
    let output = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env("PATH", path)
        .env("XDG_CACHE_HOME", xdg)
        .env("HOME", "/nonexistent-home")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{command}\nfailed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Runs `command` in a shell from `cwd`, with the binary's folder first on `PATH`.
fn paste(command: &str, cwd: &Path, xdg: &Path) -> String {
    paste_with(command, cwd, xdg, &path_with_binary())
}

/// The envelope of a failure (its second text block), checking that the first block, the
/// one an agent is shown, carries the approval command.
fn refusal_of(result: &Value) -> Value {
    assert_eq!(result["isError"], true, "{result}");
    assert!(result.get("structuredContent").is_none(), "{result}");
    let envelope: Value =
        serde_json::from_str(result["content"][1]["text"].as_str().unwrap()).unwrap();
    if let Some(command) = envelope["recovery"]["command"].as_str() {
        assert!(
            result["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains(command),
            "{result}"
        );
    }
    envelope
}

struct Place {
    dir: tempfile::TempDir,
}

impl Place {
    fn new() -> Place {
        let dir = tempfile::tempdir().unwrap();
        for sub in [
            "notes",
            "work",
            "server-cwd",
            "operator-cwd",
            "xdg",
            "operator-xdg",
        ] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        std::fs::write(dir.path().join("notes/a.md"), "a\n").unwrap();
        std::fs::write(dir.path().join("work/a.md"), "a\n").unwrap();
        Place { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// A config in the server's working directory, with a relative cacheDir.
    fn config(&self, name: &str, vaults: &[&str]) -> PathBuf {
        let mut body = "cacheDir = \"rel-cache\"\n".to_owned();
        for vault in vaults {
            body.push_str(&format!(
                "[[vaults]]\nid = \"{vault}\"\nroot = \"{}\"\n",
                self.path(vault).display()
            ));
        }
        let file = self.path("server-cwd").join(name);
        std::fs::write(&file, body).unwrap();
        file
    }
}

/// Starts the server with `args`, has a gated call refused, pastes the printed command from
/// another directory, and sends the call again with the token; returns the command.
fn approve_as_printed(place: &Place, args: &[&str], vault: Option<&str>) -> String {
    let xdg = place.path("xdg");
    let mut served = Served::start(args, &place.path("server-cwd"), &xdg);
    let mut arguments = json!({"path": "a.md"});
    if let Some(vault) = vault {
        arguments["vault"] = json!(vault);
    }
    let refusal = served.call("delete_note", arguments.clone());
    let error = refusal_of(&refusal);
    assert_eq!(error["code"], "elicit_required", "{error}");
    let command = error["recovery"]["command"].as_str().unwrap().to_owned();
    // The human's shell: another directory, another XDG_CACHE_HOME, and a PATH without the
    // binary's folder.
    let token = paste_with(
        &command,
        &place.path("operator-cwd"),
        &place.path("operator-xdg"),
        &std::env::var("PATH").unwrap_or_default(),
    );
    let token = token.trim();
    assert_eq!(token.len(), 32, "{token:?}");
    arguments["elicit_token"] = json!(token);
    let done = served.call("delete_note", arguments);
    assert_ne!(done["isError"], true, "{done}");
    assert_eq!(done["structuredContent"]["permanent"], false, "{done}");
    command
}

// r[verify cli.elicit.command-works]
// r[verify cli.elicit.command-cache-dir]
// r[verify cli.elicit.command-program]
#[test]
fn the_printed_command_works_for_every_way_of_starting_the_server() {
    // VAULT_DIR alone: the default cache directory, named in the command, so a shell whose
    // XDG_CACHE_HOME differs from the server's still reaches it.
    let place = Place::new();
    let notes = place.path("notes");
    let command = approve_as_printed(&place, &[notes.to_str().unwrap()], None);
    let default_cache = place.path("xdg").join("obsidian-tc");
    assert!(!command.contains("--config"), "{command}");
    assert!(
        command.contains(&format!("--cache-dir {}", default_cache.display())),
        "{command}"
    );
    // The server is not on its PATH: the command names the binary by its absolute path.
    let bin = std::fs::canonicalize(env!("CARGO_BIN_EXE_obsidian-tc")).unwrap();
    assert!(
        command.starts_with(&format!("{} elicit ", bin.display())),
        "{command}"
    );

    // VAULT_DIR with a relative --cache-dir: the command names it absolute.
    let place = Place::new();
    let notes = place.path("notes");
    let command = approve_as_printed(
        &place,
        &[notes.to_str().unwrap(), "--cache-dir", "my-cache"],
        None,
    );
    let expected = place.path("server-cwd").join("my-cache");
    assert!(
        command.contains(&format!("--cache-dir {}", expected.display())),
        "{command}"
    );

    // A config with a relative cacheDir.
    let place = Place::new();
    let config = place.config("one.toml", &["notes"]);
    let command = approve_as_printed(&place, &["--config", "one.toml"], None);
    assert!(
        command.contains(&format!("--config {}", config.display())),
        "{command}"
    );

    // A config and a --cache-dir that overrides its cacheDir.
    let place = Place::new();
    place.config("one.toml", &["notes"]);
    let command = approve_as_printed(
        &place,
        &["--config", "one.toml", "--cache-dir", "override"],
        None,
    );
    let expected = place.path("server-cwd").join("override");
    assert!(
        command.contains(&format!("--cache-dir {}", expected.display())),
        "{command}"
    );

    // Two vaults: the command names the vault the call used.
    let place = Place::new();
    place.config("two.toml", &["notes", "work"]);
    let command = approve_as_printed(&place, &["--config", "two.toml"], Some("work"));
    assert!(command.contains("--vault work"), "{command}");
    assert!(
        place.path("notes/a.md").exists(),
        "the other vault is untouched"
    );
    assert!(!place.path("work/a.md").exists());
}

// r[verify cli.elicit.command-program]
/// A server that finds itself on its PATH prints the plain `obsidian-tc`.
#[test]
fn the_printed_command_names_obsidian_tc_when_the_path_finds_it() {
    let place = Place::new();
    let xdg = place.path("xdg");
    let notes = place.path("notes");
    let mut served = Served::start_with_path(
        &[notes.to_str().unwrap()],
        &place.path("server-cwd"),
        &xdg,
        &path_with_binary(),
    );
    let error = refusal_of(&served.call("delete_note", json!({"path": "a.md"})));
    let command = error["recovery"]["command"].as_str().unwrap();
    assert!(command.starts_with("obsidian-tc elicit "), "{command}");
    let token = paste(command, &place.path("operator-cwd"), &xdg);
    assert_eq!(token.trim().len(), 32, "{token:?}");
}

fn obsidian_tc(args: &[&str], xdg: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_obsidian-tc"))
        .args(args)
        .env("XDG_CACHE_HOME", xdg)
        .env("HOME", "/nonexistent-home")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

// r[verify cli.pending.lists]
// r[verify cli.pending.json]
// r[verify tools.summary]
// r[verify cli.commands]
#[test]
fn pending_lists_what_each_call_would_do_and_its_command_approves_it() {
    let place = Place::new();
    let xdg = place.path("xdg");
    let cache = place.path("cache");
    let cache_arg = cache.to_str().unwrap();
    let notes = place.path("notes");
    let empty = obsidian_tc(&["pending", "--cache-dir", cache_arg], &xdg);
    assert_eq!(empty.status.code(), Some(1), "no cache.db yet is a refusal");
    let mut served = Served::start(
        &[notes.to_str().unwrap(), "--cache-dir", cache_arg],
        &place.path("server-cwd"),
        &xdg,
    );
    std::fs::write(notes.join("b.md"), "keep\nold\n").unwrap();
    let first = served.call(
        "write_note",
        json!({"path": "b.md", "content": "keep\nnew\n"}),
    );
    let first = refusal_of(&first);
    assert_eq!(first["code"], "elicit_required");
    let second = served.call("delete_note", json!({"path": "a.md", "permanent": true}));
    assert_eq!(refusal_of(&second)["code"], "elicit_required");

    // For a person: newest first, the summary, the command.
    let table = obsidian_tc(&["pending", "--cache-dir", cache_arg], &xdg);
    assert_eq!(table.status.code(), Some(0));
    let table = String::from_utf8(table.stdout).unwrap();
    let delete_at = table
        .find("delete_note in vault notes for caller stdio")
        .unwrap();
    let write_at = table
        .find("write_note in vault notes for caller stdio")
        .unwrap();
    assert!(delete_at < write_at, "newest first:\n{table}");
    assert!(
        table.contains("permanently: no snapshot is kept"),
        "{table}"
    );
    assert!(table.contains("-old") && table.contains("+new"), "{table}");
    // `pending` runs from a PATH without the binary: it names it by its absolute path.
    let bin = std::fs::canonicalize(env!("CARGO_BIN_EXE_obsidian-tc")).unwrap();
    assert!(
        table.contains(&format!("  approve: {} elicit --hash ", bin.display())),
        "{table}"
    );

    // For a script: one JSON array, filterable.
    let listed = obsidian_tc(&["pending", "--cache-dir", cache_arg, "--json"], &xdg);
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0]["tool"], "delete_note");
    let write = &listed[1];
    assert_eq!(write["tool"], "write_note");
    assert_eq!(write["vault"], "notes");
    assert_eq!(write["caller"], "stdio");
    assert_eq!(write["args_hash"], first["details"]["args_hash"]);
    assert_eq!(write["state_fp"], first["details"]["state_fp"]);
    assert!(write["expires_at_ms"].as_i64() > write["raised_at_ms"].as_i64());
    assert!(write["summary"].as_str().unwrap().contains("target: b.md"));
    let other_caller = obsidian_tc(
        &[
            "pending",
            "--cache-dir",
            cache_arg,
            "--json",
            "--caller",
            "alice",
        ],
        &xdg,
    );
    assert_eq!(String::from_utf8(other_caller.stdout).unwrap().trim(), "[]");

    // The listed command approves exactly that call.
    let command = write["approve"].as_str().unwrap();
    let token = paste(command, &place.path("operator-cwd"), &xdg);
    let done = served.call(
        "write_note",
        json!({"path": "b.md", "content": "keep\nnew\n", "elicit_token": token.trim()}),
    );
    assert_ne!(done["isError"], true, "{done}");
    assert_eq!(
        std::fs::read_to_string(notes.join("b.md")).unwrap(),
        "keep\nnew\n"
    );
}
