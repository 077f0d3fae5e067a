//! The memory tools through the real MCP server (in process, rmcp's own client): an agent
//! builds, reads, searches and prunes its memory, the notes a person sees appear in the
//! vault, and a stale `delete_entity` confirmation is refused on the modern requestState
//! round trip, the legacy stdio shim and the CLI token alike (spec/memory.md; spec/drift.md
//! `drift.bind.delete-entity`, `drift.every-route`).

mod mcp_support;

use mcp_support::*;

use serde_json::{Value, json};
use tc_server::config::Config;

const ADA: &str = "memory/person/Ada Lovelace.md";

async fn ok(client: &Client, tool: &str, arguments: Value) -> Value {
    success(&call(client, tool, arguments).await)
}

/// Ada knows Bob; returns Ada's id.
async fn build(client: &Client) -> String {
    let ada = ok(
        client,
        "upsert_entity",
        json!({"type": "person", "name": "Ada Lovelace", "observations": ["born 1815"]}),
    )
    .await;
    let ada = ada["entity"]["id"].as_str().unwrap().to_owned();
    let bob = ok(
        client,
        "upsert_entity",
        json!({"type": "person", "name": "Bob"}),
    )
    .await;
    let bob = bob["entity"]["id"].as_str().unwrap().to_owned();
    ok(
        client,
        "relate_entities",
        json!({"source": ada, "target": bob, "relation": "knows"}),
    )
    .await;
    ada
}

// r[verify memory.tools.upsert]
// r[verify memory.search.fields]
#[tokio::test]
async fn an_agent_builds_reads_and_searches_its_memory_and_a_person_sees_notes() {
    let h = Harness::new();
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let tools = client.list_all_tools().await.unwrap();
    for name in [
        "upsert_entity",
        "relate_entities",
        "unrelate_entities",
        "get_entity",
        "search_entities",
        "delete_entity",
    ] {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        assert!(tool.output_schema.is_some(), "{name}");
    }
    let delete = tools.iter().find(|t| t.name == "delete_entity").unwrap();
    let annotations = delete.annotations.as_ref().unwrap();
    assert_eq!(annotations.destructive_hint, Some(true));
    assert_eq!(annotations.read_only_hint, Some(false));

    let ada = build(&client).await;
    let note = h.read(ADA).unwrap();
    assert!(note.contains("memory_type: person\n"), "{note}");
    assert!(
        note.contains("- knows [[memory/person/Bob|Bob]]\n"),
        "{note}"
    );
    assert!(
        h.read("memory/person/Bob.md")
            .unwrap()
            .contains("Ada Lovelace]] knows")
    );

    let got = ok(&client, "get_entity", json!({"entity_id": ada})).await;
    assert_eq!(got["entity"]["observations"], json!(["born 1815"]));
    let found = ok(&client, "search_entities", json!({"query": "1815"})).await;
    assert_eq!(found["entities"][0]["id"], ada);
    let missing = call(&client, "get_entity", json!({"entity_id": "e999"})).await;
    assert_eq!(failure(&missing)["code"], "entity_not_found");
}

// r[verify memory.tools.delete.relations]
#[tokio::test]
async fn entity_has_relations_lists_them_before_any_prompt() {
    let h = Harness::new();
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let ada = build(&client).await;
    let refused = call(&client, "delete_entity", json!({"entity_id": ada})).await;
    let error = failure(&refused);
    assert_eq!(error["code"], "entity_has_relations");
    assert_eq!(error["details"]["relations"][0]["relation"], "knows");
    assert_eq!(client.service().prompts(), 0);
}

// r[verify drift.bind.delete-entity]
// r[verify drift.every-route]
#[tokio::test]
async fn a_stale_request_state_is_replay_drift_and_a_fresh_one_deletes() {
    let h = Harness::new();
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let ada = build(&client).await;
    let delete = json!({"entity_id": ada, "cascade": true});
    let asked = input_required(&client, "delete_entity", delete.clone()).await;
    let message =
        serde_json::to_value(&asked).unwrap()["inputRequests"]["confirm"]["params"]["message"]
            .as_str()
            .unwrap()
            .to_owned();
    assert!(message.contains("delete entity"), "{message}");
    assert!(message.contains(ADA), "{message}");

    // A changed observation between the prompt and the resubmission.
    ok(
        &client,
        "upsert_entity",
        json!({"type": "person", "name": "Ada Lovelace", "observations": ["died 1852"]}),
    )
    .await;
    let stale = complete(
        resubmit(
            &client,
            "delete_entity",
            delete.clone(),
            asked.request_state.clone(),
        )
        .await,
    );
    assert_eq!(failure(&stale)["code"], "replay_drift");
    assert!(h.read(ADA).is_some(), "nothing applied");

    // A hand edit of the note is drift too.
    let asked = input_required(&client, "delete_entity", delete.clone()).await;
    let note = h.read(ADA).unwrap();
    h.write(ADA, &format!("{note}\nmy own line\n"));
    let stale = complete(
        resubmit(
            &client,
            "delete_entity",
            delete.clone(),
            asked.request_state.clone(),
        )
        .await,
    );
    assert_eq!(failure(&stale)["code"], "replay_drift");

    let asked = input_required(&client, "delete_entity", delete.clone()).await;
    let done = success(&complete(
        resubmit(&client, "delete_entity", delete, asked.request_state).await,
    ));
    assert_eq!(done["relations_removed"], 1);
    assert!(done["note"]["snapshot_id"].is_string());
    assert!(h.read(ADA).is_none());
    assert!(!h.read("memory/person/Bob.md").unwrap().contains("Ada"));
}

// r[verify drift.every-route]
#[tokio::test]
async fn the_legacy_shim_and_the_cli_token_refuse_a_stale_delete_entity() {
    let h = Harness::new();
    let setup = connect(h.core.clone(), modern(Reply::Approve)).await;
    let ada = build(&setup).await;
    let delete = json!({"entity_id": ada, "cascade": true});

    // Legacy shim: a person edits the note while the prompt is open.
    let shim = h.sibling(|_: &mut Config| {}, true);
    let mut client = legacy(Reply::Approve);
    let note = h.vault.join(ADA);
    client.during_prompt = Some(std::sync::Arc::new(move || {
        let text = std::fs::read_to_string(&note).unwrap();
        std::fs::write(&note, format!("{text}\nedited while the prompt was open\n")).unwrap();
    }));
    let client = connect(shim, client).await;
    let result = call(&client, "delete_entity", delete.clone()).await;
    assert_eq!(failure(&result)["code"], "replay_drift");
    assert_eq!(client.service().prompts(), 1);
    assert!(h.read(ADA).is_some());

    // CLI token: an observation added after the mint.
    let plain = connect(h.core.clone(), legacy(Reply::Approve)).await;
    let refused = failure(&call(&plain, "delete_entity", delete.clone()).await);
    assert_eq!(refused["code"], "elicit_required");
    let token = h.mint(&refused, "stdio");
    ok(
        &plain,
        "upsert_entity",
        json!({"type": "person", "name": "Ada Lovelace", "observations": ["died 1852"]}),
    )
    .await;
    let mut with_token = delete.clone();
    with_token["elicit_token"] = json!(token);
    let stale = failure(&call(&plain, "delete_entity", with_token).await);
    assert_eq!(stale["code"], "replay_drift");
    assert!(h.read(ADA).is_some());
}

// r[verify memory.config.folder]
#[tokio::test]
async fn the_memory_folder_is_set_per_vault_and_checked_at_start_up() {
    let h = Harness::with(|c: &mut Config| {
        c.vaults[0].memory = Some(tc_memory::MemoryConfig {
            folder: "agents/memory".to_owned(),
        });
    });
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let made = ok(
        &client,
        "upsert_entity",
        json!({"type": "person", "name": "Ada"}),
    )
    .await;
    assert_eq!(made["entity"]["note_path"], "agents/memory/person/Ada.md");
    assert!(h.read("agents/memory/person/Ada.md").is_some());

    let dir = tempfile::TempDir::new().unwrap();
    let root = dir.path().join("vault");
    std::fs::create_dir_all(&root).unwrap();
    let unknown = format!(
        "[[vaults]]\nid = \"main\"\nroot = {:?}\n[vaults.memory]\nfoldr = \"x\"\n",
        root.display().to_string()
    );
    let error = Config::parse(&unknown, "test.toml", dir.path()).unwrap_err();
    assert!(error.to_string().contains("foldr"), "{error}");

    let outside = unknown.replace("foldr = \"x\"", "folder = \"../outside\"");
    let config = Config::parse(&outside, "test.toml", dir.path()).unwrap();
    let cache = dir.path().join("cache");
    let secret =
        tc_gate::keys::ServerSecret::load_or_create(&cache, &tc_gate::clock::OsEntropy).unwrap();
    let built = tc_server::server::ServerCore::build(
        &config,
        tc_server::server::CoreParts {
            cache_dir: &cache,
            secret: &secret,
            store: tc_gate::Store::open(cache.join("cache.db")).unwrap(),
            clock: std::sync::Arc::new(tc_gate::clock::SystemClock),
            entropy: std::sync::Arc::new(tc_gate::clock::OsEntropy),
            metrics: std::sync::Arc::new(tc_server::metrics::Metrics::new()),
            legacy_shim: false,
            approval_flags: Vec::new(),
            approval_program: None,
        },
    );
    let message = match built {
        Ok(_) => panic!("a memory folder outside the vault was accepted"),
        Err(error) => error.to_string(),
    };
    assert!(message.contains("vaults[main].memory.folder"), "{message}");
}

// r[verify memory.note.followed]
// r[verify memory.edits.store-rendered]
/// A person (or an agent, for free) renames an entity's note within its folder: the move
/// rewrites the neighbour's link inside the store's section, and both entities keep being
/// updated, the renamed note keeping its entity, no note written at the old path again.
#[tokio::test]
async fn a_renamed_entity_note_keeps_its_entity_and_its_neighbours_stay_writable() {
    let h = Harness::new();
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let ada = build(&client).await;
    let bob_note = h.vault.join("memory/person/Bob.md");
    assert!(
        std::fs::read_to_string(&bob_note)
            .unwrap()
            .contains("Ada Lovelace")
    );
    let moved = ok(
        &client,
        "move_note",
        json!({"from": ADA, "to": "memory/person/Ada, Countess.md"}),
    )
    .await;
    assert_eq!(moved["to"], "memory/person/Ada, Countess.md", "{moved}");
    let bob_text = std::fs::read_to_string(&bob_note).unwrap();
    assert!(
        bob_text.contains("[[Ada, Countess"),
        "the move rewrote Bob's link: {bob_text}"
    );
    // Bob's section holds the rewritten link: still the store's to re-render.
    ok(
        &client,
        "upsert_entity",
        json!({"type": "person", "name": "Bob", "observations": ["met Ada"]}),
    )
    .await;
    // Ada's note is followed to its new name.
    let updated = ok(
        &client,
        "upsert_entity",
        json!({"type": "person", "name": "Ada Lovelace", "observations": ["wrote the first program"]}),
    )
    .await;
    assert_eq!(updated["entity"]["id"], ada);
    assert!(
        !h.vault.join(ADA).exists(),
        "no second note at the old path"
    );
    let renamed = std::fs::read_to_string(h.vault.join("memory/person/Ada, Countess.md")).unwrap();
    assert!(renamed.contains("wrote the first program"), "{renamed}");
    assert!(
        renamed.contains(&format!("\nmemory_id: {ada}\n")),
        "the renamed note keeps its memory_id: {renamed}"
    );
    let got = ok(&client, "get_entity", json!({"entity_id": ada})).await;
    assert_eq!(
        got["entity"]["note_path"], "memory/person/Ada, Countess.md",
        "{got}"
    );
    // A person's edit inside Bob's section is still theirs: refused, not overwritten.
    let bob_text = std::fs::read_to_string(&bob_note).unwrap();
    std::fs::write(&bob_note, bob_text.replace("- met Ada", "- met Ada, twice")).unwrap();
    let refused = failure(
        &call(
            &client,
            "upsert_entity",
            json!({"type": "person", "name": "Bob", "observations": ["likes tea"]}),
        )
        .await,
    );
    assert_eq!(
        refused["details"]["reason"], "edited_inside_memory_section",
        "{refused}"
    );
}
