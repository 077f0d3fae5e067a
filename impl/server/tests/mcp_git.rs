//! The git tools through the MCP server, in process: stage and commit a vault change after
//! the human approves exactly what is staged, by the CLI token and by the modern round
//! trip, and a stale approval refused on both (spec/git.md, spec/drift.md
//! `drift.bind.git-commit`).

mod mcp_support;

use std::path::Path;
use std::process::Command;

use mcp_support::*;
use rmcp::model::{CallToolRequestParams, CallToolResponse, InputResponses};
use serde_json::{Value, json};
use tc_gate::EventName;

/// Runs `git` in `dir` with no system or global configuration.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A vault with a repository, one commit, and a local identity.
fn harness_with_repo() -> Harness {
    let h = Harness::new();
    git(&h.vault, &["init", "-q", "-b", "main"]);
    git(&h.vault, &["config", "user.name", "Vault Tester"]);
    git(
        &h.vault,
        &["config", "user.email", "tester@example.invalid"],
    );
    git(&h.vault, &["config", "commit.gpgsign", "false"]);
    h.write("notes/a.md", "one\n");
    git(&h.vault, &["add", "notes/a.md"]);
    git(&h.vault, &["commit", "-q", "-m", "first"]);
    h
}

fn subject(h: &Harness) -> String {
    git(&h.vault, &["log", "-1", "--format=%s"])
        .trim()
        .to_owned()
}

fn commit_args() -> Value {
    json!({"message": "From the agent"})
}

async fn resubmit(client: &Client, state: Option<String>) -> CallToolResponse {
    let mut params = CallToolRequestParams::new("git_commit").with_arguments(args(commit_args()));
    let mut responses = InputResponses::new();
    responses.insert("confirm".to_owned(), Reply::Approve.json());
    params = params.with_input_responses(responses);
    if let Some(state) = state {
        params = params.with_request_state(state);
    }
    client.call_tool_once(params).await.unwrap()
}

// r[verify git.commit]
// r[verify git.stage]
#[tokio::test]
async fn stage_status_and_commit_by_cli_token() {
    let h = harness_with_repo();
    let client = connect(
        h.core.clone(),
        TestClient::new(
            rmcp::model::ProtocolVersion::V_2026_07_28,
            None,
            Reply::Approve,
        ),
    )
    .await;
    h.write("notes/a.md", "one, edited by the agent\n");
    h.write("notes/b.md", "new note\n");
    h.write(".obsidian/workspace.json", "{}");
    let staged = success(
        &call(
            &client,
            "git_stage",
            json!({"paths": ["notes/a.md", "notes/b.md"]}),
        )
        .await,
    );
    assert_eq!(staged["staged"][0]["change"], "modified");
    assert_eq!(staged["staged"][1]["change"], "added");
    let refused = failure(
        &call(
            &client,
            "git_stage",
            json!({"paths": [".obsidian/workspace.json"]}),
        )
        .await,
    );
    assert_eq!(refused["code"], "path_invalid");

    let status = success(&call(&client, "git_status", json!({})).await);
    assert_eq!(status["branch"], "main");
    assert_eq!(
        status["staged"],
        json!([
            {"path": "notes/a.md", "change": "modified"},
            {"path": "notes/b.md", "change": "added"}
        ])
    );
    assert!(!status.to_string().contains(".obsidian"));

    let refusal = failure(&call(&client, "git_commit", commit_args()).await);
    assert_eq!(refusal["code"], "elicit_required");
    assert_eq!(
        subject(&h),
        "first",
        "nothing committed before the approval"
    );
    let token = h.mint(&refusal, "stdio");
    let mut with_token = commit_args();
    with_token["elicit_token"] = json!(token);
    let done = success(&call(&client, "git_commit", with_token).await);
    assert_eq!(subject(&h), "From the agent");
    assert_eq!(done["commit"], git(&h.vault, &["rev-parse", "HEAD"]).trim());
    assert_eq!(git(&h.vault, &["show", "HEAD:notes/b.md"]), "new note\n");
    assert_eq!(h.events(EventName::Consumed), 1);
}

// r[verify drift.bind.git-commit]
#[tokio::test]
async fn the_round_trip_refuses_git_add_but_not_a_stat_refresh() {
    let h = harness_with_repo();
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    h.write("notes/a.md", "staged\n");
    git(&h.vault, &["add", "notes/a.md"]);

    // A stat-only refresh while the prompt is open: still the approved state.
    let asked = match call_once(&client, "git_commit", commit_args()).await {
        CallToolResponse::InputRequired(result) => result,
        other => panic!("expected input_required, got {other:?}"),
    };
    let message =
        serde_json::to_value(&asked).unwrap()["inputRequests"]["confirm"]["params"]["message"]
            .as_str()
            .unwrap()
            .to_owned();
    assert!(message.contains("notes/a.md (modified)"), "{message}");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    h.write("notes/a.md", "staged\n");
    git(&h.vault, &["update-index", "--refresh"]);
    success(&complete(resubmit(&client, asked.request_state).await));
    assert_eq!(subject(&h), "From the agent");

    // `git add` of a changed file while the prompt is open: replay_drift, nothing committed.
    h.write("notes/a.md", "staged again\n");
    git(&h.vault, &["add", "notes/a.md"]);
    let asked = match call_once(&client, "git_commit", commit_args()).await {
        CallToolResponse::InputRequired(result) => result,
        other => panic!("expected input_required, got {other:?}"),
    };
    h.write("notes/a.md", "changed under the prompt\n");
    git(&h.vault, &["add", "notes/a.md"]);
    let refusal = failure(&complete(resubmit(&client, asked.request_state).await));
    assert_eq!(refusal["code"], "replay_drift");
    assert_eq!(git(&h.vault, &["rev-list", "--count", "HEAD"]).trim(), "2");
}

// r[verify git.no-repo]
#[tokio::test]
async fn a_vault_without_a_repository_is_git_no_repo() {
    let h = Harness::new();
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    for (tool, arguments) in [
        ("git_status", json!({})),
        ("git_stage", json!({"paths": ["a.md"]})),
        ("git_commit", commit_args()),
    ] {
        let refusal = failure(&call(&client, tool, arguments).await);
        assert_eq!(refusal["code"], "git_no_repo", "{tool}");
    }
    assert_eq!(h.events(EventName::Requested), 0);
    assert_eq!(client.service().prompts(), 0);
}
