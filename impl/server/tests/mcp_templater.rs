//! `execute_template` through the whole MCP server, against a stand-in Obsidian that speaks
//! the companion's Templater route (tc_bridge::testing: a local server the test starts, which
//! plays Templater by writing the template's text to the target in the harness's vault).
//! Drift on every route, each directly and through `call_capability`: the CLI token, the
//! 2026-07-28 round trip and the legacy shim; and a clean approval runs it exactly once.

mod mcp_support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mcp_support::*;
use rmcp::model::CallToolResponse;
use serde_json::{Value, json};
use tc_bridge::testing::{FakeObsidian, KEY, Tls};
use tc_server::config::Config;
use tc_server::facade::FacadeMode;

fn key_file() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rest-api.key");
    std::fs::write(&path, KEY).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    (dir, path)
}

/// The vault's bridge pointed at the stand-in; `lean` serves the facade.
fn wire(url: &str, key: &Path, lean: bool) -> impl FnOnce(&mut Config) + Clone {
    let url = url.to_owned();
    let key = key.to_path_buf();
    move |config: &mut Config| {
        config.vaults[0].bridge = Some(tc_bridge::BridgeConfig {
            url,
            api_key_file: key,
            timeout_ms: 5_000,
        });
        if lean {
            config.tool_facade.mode = FacadeMode::Lean;
        }
    }
}

fn put(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn run_args() -> Value {
    json!({"template": "Templates/Daily.md", "target_path": "daily/today.md"})
}

/// One server over a vault holding the template, its bridge on a fresh stand-in.
struct Setup {
    obsidian: FakeObsidian,
    _keys: tempfile::TempDir,
    key: PathBuf,
    h: Harness,
    lean: bool,
}

impl Setup {
    fn new(lean: bool) -> Self {
        let obsidian = FakeObsidian::start(Tls::SelfSigned);
        let (keys, key) = key_file();
        let h = Harness::with(wire(&obsidian.url, &key, lean));
        put(&h.vault, "Templates/Daily.md", "# Daily\n");
        let vault = h.vault.clone();
        obsidian.behave(|b| b.vault = Some(vault));
        Setup {
            obsidian,
            _keys: keys,
            key,
            h,
            lean,
        }
    }

    /// The tool's name and arguments as this server takes them.
    fn call_args(&self) -> (&'static str, Value) {
        if self.lean {
            (
                "call_capability",
                json!({"name": "execute_template", "args": run_args()}),
            )
        } else {
            ("execute_template", run_args())
        }
    }

    fn runs(&self) -> usize {
        self.obsidian.templater_runs().len()
    }
}

/// The two changes a case makes between the request and the approval.
fn changes() -> [fn(&Path); 2] {
    [
        |root| {
            put(
                root,
                "Templates/Daily.md",
                "<%* app.vault.adapter.remove('x') %>\n",
            )
        },
        |root| put(root, "daily/today.md", "appeared\n"),
    ]
}

// r[verify drift.bind.execute-template]
#[tokio::test]
async fn a_stale_cli_token_is_replay_drift_directly_and_through_call_capability() {
    for lean in [false, true] {
        for change in changes() {
            let s = Setup::new(lean);
            let (tool, call_args) = s.call_args();
            let client = connect(s.h.core.clone(), legacy(Reply::Approve)).await;
            let refused = failure(&call(&client, tool, call_args.clone()).await);
            assert_eq!(refused["code"], "elicit_required", "{refused}");
            let token = s.h.mint(&refused, "stdio");
            change(&s.h.vault);
            let mut with_token = call_args.clone();
            with_token["elicit_token"] = json!(token);
            let stale = failure(&call(&client, tool, with_token).await);
            assert_eq!(stale["code"], "replay_drift", "lean {lean}: {stale}");
            assert_eq!(s.runs(), 0, "nothing was sent");
            // A fresh approval of the current state runs it once.
            let refused = failure(&call(&client, tool, call_args.clone()).await);
            let token = s.h.mint(&refused, "stdio");
            let mut with_token = call_args;
            with_token["elicit_token"] = json!(token);
            let done = call(&client, tool, with_token).await;
            assert_ne!(done.is_error, Some(true), "{done:?}");
            assert_eq!(s.runs(), 1);
            assert_eq!(
                std::fs::read_to_string(s.h.vault.join("daily/today.md")).unwrap(),
                std::fs::read_to_string(s.h.vault.join("Templates/Daily.md")).unwrap(),
            );
        }
    }
}

// r[verify drift.bind.execute-template]
#[tokio::test]
async fn a_stale_request_state_is_replay_drift_directly_and_through_call_capability() {
    for lean in [false, true] {
        for change in changes() {
            let s = Setup::new(lean);
            let (tool, call_args) = s.call_args();
            let client = connect(s.h.core.clone(), modern(Reply::Approve)).await;
            let asked = match call_once(&client, tool, call_args.clone()).await {
                CallToolResponse::InputRequired(asked) => asked,
                other => panic!("expected input_required, got {other:?}"),
            };
            let form = serde_json::to_value(&asked).unwrap();
            let message = form["inputRequests"]["confirm"]["params"]["message"]
                .as_str()
                .unwrap()
                .to_owned();
            assert!(message.contains("Templates/Daily.md"), "{message}");
            change(&s.h.vault);
            let stale = failure(&complete(
                resubmit(&client, tool, call_args, asked.request_state).await,
            ));
            assert_eq!(stale["code"], "replay_drift", "lean {lean}: {stale}");
            assert_eq!(s.runs(), 0, "nothing was sent");
        }
    }
}

// r[verify drift.bind.execute-template]
#[tokio::test]
async fn a_change_while_the_shim_prompt_is_open_is_replay_drift_directly_and_through_call_capability()
 {
    for lean in [false, true] {
        for change in changes() {
            let s = Setup::new(lean);
            let (tool, call_args) = s.call_args();
            let shim = s.h.sibling(wire(&s.obsidian.url, &s.key, lean), true);
            let mut client = legacy(Reply::Approve);
            let vault = s.h.vault.clone();
            client.during_prompt = Some(Arc::new(move || change(&vault)));
            let client = connect(shim, client).await;
            let stale = failure(&call(&client, tool, call_args).await);
            assert_eq!(stale["code"], "replay_drift", "lean {lean}: {stale}");
            assert_eq!(client.service().prompts(), 1);
            assert_eq!(s.runs(), 0, "nothing was sent");
        }
    }
}

// r[verify bridge.templater.confirm]
#[tokio::test]
async fn an_approval_through_the_shim_runs_the_template_once() {
    let s = Setup::new(false);
    let shim = s.h.sibling(wire(&s.obsidian.url, &s.key, false), true);
    let client = connect(shim, legacy(Reply::Approve)).await;
    let out = success(&call(&client, "execute_template", run_args()).await);
    assert_eq!(out["created"], true);
    assert_eq!(client.service().prompts(), 1);
    assert_eq!(s.runs(), 1);
}
