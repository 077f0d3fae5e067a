//! search_notes and reset_vault_cache through the real MCP server (in process, rmcp's own
//! client): hits in pages under a small governor cap, a folder the ACL hides never named, a
//! note written by hand found by the very next call, and a stale reset_vault_cache
//! confirmation refused on the modern requestState round trip and the legacy stdio shim
//! (spec/index.md `search.*`, `index.fresh`; spec/drift.md `drift.bind.reset-vault-cache`,
//! `drift.every-route`).

mod mcp_support;

use mcp_support::*;

use serde_json::{Value, json};
use tc_server::config::Config;
use tc_vault::acl::AclConfig;

const CAP: u64 = 131_072;

async fn ok(client: &Client, tool: &str, arguments: Value) -> Value {
    success(&call(client, tool, arguments).await)
}

fn paths(page: &Value) -> Vec<String> {
    page["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results: {page}"))
        .iter()
        .map(|h| h["path"].as_str().unwrap().to_owned())
        .collect()
}

/// Thirty notes under `notes/` whose many long tags make each hit a few kilobytes, so a
/// page of them meets the cap long before `limit`; and one under `secret/`.
fn heavy_vault(h: &Harness) {
    let tags: Vec<String> = (0..60)
        .map(|t| format!("topic-{t:02}-{}", "x".repeat(90)))
        .collect();
    for i in 0..30 {
        h.write(
            &format!("notes/n{i:02}.md"),
            &format!(
                "---\ntags: [{}]\n---\n# Zebra {i}\nThe zebra crossing number {i}.\n",
                tags.join(", ")
            ),
        );
    }
    h.write(
        "secret/plans.md",
        "# Zebra plans\nThe secret zebra plans.\n",
    );
}

// r[verify search.bounded]
// r[verify search.acl]
// r[verify index.fresh]
#[tokio::test]
async fn hits_come_in_pages_under_the_cap_never_from_a_hidden_folder_and_hand_edits_are_found() {
    let h = Harness::with(|c: &mut Config| {
        c.governor.max_response_bytes = CAP;
        c.vaults[0].acl = Some(AclConfig {
            read_paths: Some(vec!["notes/**".to_owned()]),
            ..AclConfig::default()
        });
    });
    heavy_vault(&h);
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let tools = client.list_all_tools().await.unwrap();
    let search = tools.iter().find(|t| t.name == "search_notes").unwrap();
    assert!(search.output_schema.is_some());

    let request = json!({"query": "zebra", "limit": 100});
    let first = call(&client, "search_notes", request.clone()).await;
    let page = success(&first);
    let wire = serde_json::to_vec(&first).unwrap().len() as u64;
    assert!(wire <= CAP, "a page of {wire} bytes is over the cap");
    let mut seen = paths(&page);
    assert!(
        seen.len() < 30 && !seen.is_empty(),
        "the cap cut the page, not the limit: {} hits",
        seen.len()
    );
    let mut cursor = page["next_cursor"].as_str().map(str::to_owned);
    assert!(cursor.is_some(), "more hits behind a cursor");
    let mut pages = 1;
    while let Some(token) = cursor {
        let mut next = request.clone();
        next["cursor"] = json!(token);
        let result = call(&client, "search_notes", next).await;
        assert!(serde_json::to_vec(&result).unwrap().len() as u64 <= CAP);
        let page = success(&result);
        assert!(
            !page.to_string().contains("secret"),
            "a hidden note named: {page}"
        );
        seen.extend(paths(&page));
        cursor = page["next_cursor"].as_str().map(str::to_owned);
        pages += 1;
    }
    assert!(pages >= 2);
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), 30, "every note once: {seen:?}");
    assert!(sorted.iter().all(|p| p.starts_with("notes/")));

    // A cursor of another request is refused.
    let mut other = json!({"query": "crossing", "limit": 100});
    other["cursor"] = json!(
        success(&call(&client, "search_notes", request.clone()).await)["next_cursor"].clone()
    );
    let refused = failure(&call(&client, "search_notes", other).await);
    assert_eq!(refused["code"], "invalid_input", "{refused}");

    // Written by hand, searched at once: found (and a hidden one is still not).
    h.write("notes/fresh.md", "# Okapi\nAn okapi seen today.\n");
    h.write("secret/okapi.md", "# Okapi\nA hidden okapi.\n");
    let found = ok(&client, "search_notes", json!({"query": "okapi"})).await;
    assert_eq!(paths(&found), ["notes/fresh.md"], "{found}");
    std::fs::remove_file(h.vault.join("notes/fresh.md")).unwrap();
    let gone = ok(&client, "search_notes", json!({"query": "okapi"})).await;
    assert!(paths(&gone).is_empty(), "{gone}");
    // Without embeddings configured, the other modes say so.
    let semantic = failure(
        &call(
            &client,
            "search_notes",
            json!({"query": "zebra", "mode": "semantic"}),
        )
        .await,
    );
    assert_eq!(semantic["code"], "embeddings_unavailable");
}

// r[verify drift.bind.reset-vault-cache]
// r[verify drift.every-route]
#[tokio::test]
async fn a_stale_reset_vault_cache_is_replay_drift_on_the_round_trip_and_the_shim() {
    let h = Harness::new();
    h.write("a.md", "# A\nalpha words\n");
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    ok(&client, "search_notes", json!({"query": "alpha"})).await;
    let reset = json!({});

    // Round trip: a capture committed between the prompt and the resubmission.
    let asked = input_required(&client, "reset_vault_cache", reset.clone()).await;
    let message =
        serde_json::to_value(&asked).unwrap()["inputRequests"]["confirm"]["params"]["message"]
            .as_str()
            .unwrap()
            .to_owned();
    assert!(message.contains("committed capture"), "{message}");
    let id = ok(
        &client,
        "capture_note",
        json!({"content": "captured", "target_path_hint": "inbox/c.md"}),
    )
    .await["capture_id"]
        .clone();
    let committed = call(&client, "commit_capture", json!({"capture_id": id})).await;
    assert!(committed.is_error != Some(true), "{committed:?}");
    let stale = complete(
        resubmit(
            &client,
            "reset_vault_cache",
            reset.clone(),
            asked.request_state.clone(),
        )
        .await,
    );
    assert_eq!(failure(&stale)["code"], "replay_drift");

    // Round trip: a note written by hand (one more chunk) is drift too.
    let asked = input_required(&client, "reset_vault_cache", reset.clone()).await;
    h.write("b.md", "# B\nbeta words\n");
    let stale = complete(
        resubmit(
            &client,
            "reset_vault_cache",
            reset.clone(),
            asked.request_state.clone(),
        )
        .await,
    );
    assert_eq!(failure(&stale)["code"], "replay_drift");
    assert_eq!(
        paths(&ok(&client, "search_notes", json!({"query": "alpha"})).await),
        ["a.md"],
        "nothing cleared"
    );

    // Legacy shim: a note written by hand while the prompt is open.
    let shim = h.sibling(|_: &mut Config| {}, true);
    let mut legacy_client = legacy(Reply::Approve);
    let note = h.vault.join("while-open.md");
    legacy_client.during_prompt = Some(std::sync::Arc::new(move || {
        std::fs::write(&note, "# Open\nwritten while the prompt was open\n").unwrap();
    }));
    let shim_client = connect(shim, legacy_client).await;
    let result = call(&shim_client, "reset_vault_cache", reset.clone()).await;
    assert_eq!(failure(&result)["code"], "replay_drift");
    assert_eq!(shim_client.service().prompts(), 1);

    // A fresh confirmation clears what it said.
    let asked = input_required(&client, "reset_vault_cache", reset.clone()).await;
    let done = success(&complete(
        resubmit(&client, "reset_vault_cache", reset, asked.request_state).await,
    ));
    assert_eq!(done["captures_dropped"], 1, "{done}");
    assert!(done["chunks_dropped"].as_u64().unwrap() >= 3, "{done}");
    // The chunks come back from the files at the next answer.
    assert_eq!(
        paths(&ok(&client, "search_notes", json!({"query": "beta"})).await),
        ["b.md"]
    );
}
