//! Embeddings against a local endpoint that speaks the `/embeddings` protocol
//! (spec/index.md `search.embeddings.*`, `index.reset`; spec/drift.md
//! `drift.bind.reset-vault-cache`).

mod support;

use std::sync::atomic::Ordering;

use serde_json::json;
use support::embed_server::EmbedServer;
use support::{Fx, embeddings_at, indexed_with, with_token};
use tc_index::RunWait;
use tc_tools::ErrorCode;
use tc_vault::acl::{AclConfig, ScopeRuleConfig};

fn hits(out: &serde_json::Value) -> Vec<String> {
    out["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["path"].as_str().unwrap().to_owned())
        .collect()
}

fn notes(fx: &Fx) {
    fx.put(
        "garden/tomatoes.md",
        "# Tomatoes\nWater the tomato plants every morning in summer.\n",
    );
    fx.put(
        "garden/roses.md",
        "# Roses\nPrune the roses in early spring.\n",
    );
    fx.put(
        "work/budget.md",
        "# Budget\nThe quarterly budget review meeting.\n",
    );
    fx.put(
        "private/diary.md",
        "# Diary\nWater the tomato plants, morning diary.\n",
    );
}

fn stored(fx: &Fx) -> Vec<(String, i64, usize)> {
    let db = rusqlite::Connection::open(fx.cache().join("cache.db")).unwrap();
    db.prepare(
        "SELECT e.model, e.generation, length(e.vector) FROM index_embeddings e ORDER BY e.chunk_id",
    )
    .unwrap()
    .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as usize)))
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

fn generation(fx: &Fx) -> i64 {
    let db = rusqlite::Connection::open(fx.cache().join("cache.db")).unwrap();
    db.query_row(
        "SELECT embedding_generation FROM index_meta WHERE vault = 'main'",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

// r[verify search.embeddings.store]
#[test]
fn every_chunk_is_embedded_with_its_model_and_a_generation_that_grows_per_run() {
    let server = EmbedServer::start();
    let fx = Fx::new();
    notes(&fx);
    let index = indexed_with(&fx, &embeddings_at(&server.url));
    let rows = stored(&fx);
    assert_eq!(rows.len(), 4, "one vector per chunk");
    for (model, generation, bytes) in &rows {
        assert_eq!(model, "bag-of-words");
        assert_eq!(*generation, 1, "one run so far");
        assert_eq!(*bytes, support::embed_server::DIMS * 4);
    }
    assert!(
        server
            .seen
            .models
            .lock()
            .unwrap()
            .iter()
            .all(|m| m == "bag-of-words")
    );
    // An unchanged vault embeds nothing and keeps its generation.
    let before = server.requests();
    assert_eq!(index.embed_pending(None, RunWait::Block).unwrap(), 0);
    assert_eq!(server.requests(), before, "nothing asked");
    assert_eq!(generation(&fx), 1);
    // One note changed: only its chunk goes to the endpoint, in a new generation.
    fx.put(
        "garden/roses.md",
        "# Roses\nPrune the climbing roses in spring.\n",
    );
    index.refresh().unwrap();
    // (The watcher's thread may have started this run already: waiting for it is enough.)
    index.embed_pending(None, RunWait::Block).unwrap();
    let last = server.seen.inputs.lock().unwrap().last().unwrap().clone();
    assert_eq!(last.len(), 1);
    assert!(last[0].contains("climbing"), "{last:?}");
    assert_eq!(generation(&fx), 2);
    let generations: Vec<i64> = stored(&fx).iter().map(|r| r.1).collect();
    assert_eq!(generations.iter().filter(|g| **g == 2).count(), 1);
    assert_eq!(generations.iter().filter(|g| **g == 1).count(), 3);
}

// r[verify search.embeddings.semantic]
#[test]
fn semantic_mode_ranks_notes_by_their_nearest_chunk_and_applies_the_acl() {
    let server = EmbedServer::start();
    let acl = AclConfig {
        rules: vec![ScopeRuleConfig {
            glob: "private/**".into(),
            scopes: vec!["read:private".into()],
        }],
        ..AclConfig::default()
    };
    let fx = Fx::with(Some(acl), Vec::new());
    notes(&fx);
    indexed_with(&fx, &embeddings_at(&server.url));
    let caller =
        tc_tools::CallerContext::new("agent", tc_vault::acl::Scopes::granted(["read:notes"]));
    // Words the text index does not hold together ("watering" is not "water"), but a bag
    // of words shares most of them with the tomato note.
    let query = json!({"query": "tomato plants every morning watering", "mode": "semantic"});
    let out = fx.call_as(&caller, "search_notes", query.clone()).unwrap();
    let found = hits(&out);
    assert_eq!(found[0], "garden/tomatoes.md", "{out}");
    assert_eq!(out["mode"], "semantic");
    assert!(!out.to_string().contains("diary"), "the ACL applies: {out}");
    assert_eq!(found.len(), 3, "every readable note has a similarity");
    let scores: Vec<f64> = out["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    assert!(
        out["results"][0]["snippet"]
            .as_str()
            .unwrap()
            .contains("Water the tomato"),
        "{out}"
    );
    // Paging: one hit per page walks the same notes once.
    let mut paged = Vec::new();
    let mut args =
        json!({"query": "tomato plants every morning watering", "mode": "semantic", "limit": 1});
    loop {
        let page = fx.call_as(&caller, "search_notes", args.clone()).unwrap();
        paged.extend(hits(&page));
        match page["next_cursor"].as_str() {
            Some(cursor) => args["cursor"] = json!(cursor),
            None => break,
        }
    }
    assert_eq!(paged, found);
    // With the scope, the diary is found too.
    let out = fx.call("search_notes", query).unwrap();
    assert!(hits(&out).contains(&"private/diary.md".to_owned()));
}

// r[verify search.embeddings.hybrid]
#[test]
fn hybrid_mode_fuses_the_text_and_semantic_ranks() {
    let server = EmbedServer::start();
    let fx = Fx::new();
    notes(&fx);
    indexed_with(&fx, &embeddings_at(&server.url));
    // "budget" is a word of one note only; "tomato plants morning" is near two others.
    let out = fx
        .call(
            "search_notes",
            json!({"query": "budget tomato plants morning", "mode": "hybrid"}),
        )
        .unwrap();
    let found = hits(&out);
    // Text mode finds no note with all four words; the fusion still ranks by meaning, and a
    // note found by both sides would lead.
    assert!(found.contains(&"garden/tomatoes.md".to_owned()), "{out}");
    assert!(found.contains(&"work/budget.md".to_owned()), "{out}");
    let out = fx
        .call(
            "search_notes",
            json!({"query": "tomato summer", "mode": "hybrid"}),
        )
        .unwrap();
    let found = hits(&out);
    assert_eq!(found[0], "garden/tomatoes.md", "first on both sides: {out}");
    assert!(
        out["results"][0]["snippet"]
            .as_str()
            .unwrap()
            .contains("**tomato**"),
        "a text match shows its highlighted snippet: {out}"
    );
    let top = out["results"][0]["score"].as_f64().unwrap();
    assert!(
        (top - 2.0 / 61.0).abs() < 1e-9,
        "rank 1 on both sides fuses to 2/61: {top}"
    );
}

// r[verify search.embeddings.failed]
#[test]
fn a_failing_endpoint_is_embeddings_unavailable_with_the_reason_and_text_still_works() {
    let server = EmbedServer::start();
    let fx = Fx::new();
    notes(&fx);
    indexed_with(&fx, &embeddings_at(&server.url));
    server.failing.store(true, Ordering::SeqCst);
    for mode in ["semantic", "hybrid"] {
        let error = fx
            .call("search_notes", json!({"query": "tomato", "mode": mode}))
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::EmbeddingsUnavailable);
        assert!(error.message.contains("503"), "{error}");
        let details = error.details.unwrap();
        assert_eq!(details["reason"], "endpoint_failed");
        assert!(error.recovery.unwrap().instruction.contains("mode text"));
    }
    let out = fx.call("search_notes", json!({"query": "summer"})).unwrap();
    assert_eq!(
        hits(&out),
        ["garden/tomatoes.md"],
        "text mode keeps working"
    );
    // An endpoint that is not there at all says so too.
    let fx = Fx::new();
    notes(&fx);
    let index = tc_index::open_indexes(
        &fx.cache(),
        [("main", fx.root.as_path())],
        &embeddings_at("http://127.0.0.1:9/v1"),
    )
    .unwrap()
    .remove(0);
    index.first_build();
    assert!(index.embed_pending(None, RunWait::Block).is_err());
    fx.pipeline.vault("main").unwrap().attach_index(index);
    let error = fx
        .call(
            "search_notes",
            json!({"query": "tomato", "mode": "semantic"}),
        )
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::EmbeddingsUnavailable);
    assert!(error.message.contains("could not be reached"), "{error}");
}

#[test]
fn a_note_written_by_hand_is_found_by_meaning_on_the_next_call() {
    let server = EmbedServer::start();
    let fx = Fx::new();
    notes(&fx);
    indexed_with(&fx, &embeddings_at(&server.url));
    fx.put("new/bees.md", "# Bees\nHoneybees visit lavender hives.\n");
    let out = fx
        .call(
            "search_notes",
            json!({"query": "honeybees lavender hives", "mode": "semantic"}),
        )
        .unwrap();
    assert_eq!(hits(&out)[0], "new/bees.md", "{out}");
}

// r[verify search.embeddings.endpoint]
#[test]
fn the_key_is_read_from_the_named_variable_and_sent_as_a_bearer_token() {
    let server = EmbedServer::start();
    // A variable every test process has (setting one is unsafe in a threaded test); its
    // value stands for the key.
    let key = std::env::var("PATH").expect("PATH is set");
    let mut config = embeddings_at(&server.url);
    config.embeddings.as_mut().unwrap().api_key_env = Some("PATH".into());
    let fx = Fx::new();
    notes(&fx);
    indexed_with(&fx, &config);
    let auth = server.seen.auth.lock().unwrap().clone();
    assert!(!auth.is_empty());
    let bearer = format!("Bearer {key}");
    assert!(auth.iter().all(|a| a.as_deref() == Some(bearer.as_str())));
}

// r[verify drift.bind.reset-vault-cache]
#[test]
fn reset_clears_the_embeddings_and_a_run_between_request_and_redemption_is_drift() {
    let server = EmbedServer::start();
    let fx = Fx::new();
    notes(&fx);
    let index = indexed_with(&fx, &embeddings_at(&server.url));
    let args = json!({"include": {"chunks": false, "captures": false, "embeddings": true}});
    let token = fx.require("reset_vault_cache", &args);
    // A re-embedding run happens (a note changed by hand, embedded again): the same chunk
    // count and the same number of vectors, a new generation.
    fx.put(
        "garden/roses.md",
        "# Roses\nPrune the roses in late winter.\n",
    );
    index.refresh().unwrap();
    // (The watcher's thread may have started this run already: waiting for it is enough.)
    index.embed_pending(None, RunWait::Block).unwrap();
    assert_eq!(stored(&fx).len(), 4);
    let refusal = fx
        .call("reset_vault_cache", with_token(&args, &token))
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::ReplayDrift, "{refusal}");
    assert_eq!(stored(&fx).len(), 4, "nothing cleared");
    // Approved again, it clears every vector (and keeps the generation counter, so the next
    // run is a new generation).
    let token = fx.require("reset_vault_cache", &args);
    let out = fx
        .call("reset_vault_cache", with_token(&args, &token))
        .unwrap();
    assert_eq!(out["embeddings_dropped"], 4, "{out}");
    assert_eq!(out["chunks_dropped"], 0);
    assert_eq!(out["embedding_generation"], 2);
    // The reset starts a run of its own; waiting for it (or running it) re-embeds all.
    index.embed_pending(None, RunWait::Block).unwrap();
    let rows = stored(&fx);
    assert_eq!(rows.len(), 4);
    assert!(
        rows.iter().all(|r| r.1 == 3),
        "re-embedded as generation 3: {rows:?}"
    );
}

#[test]
fn a_run_embeds_every_chunk_in_batches_as_one_generation() {
    let server = EmbedServer::start();
    let fx = Fx::new();
    for i in 0..70 {
        fx.put(
            &format!("n/{i}.md"),
            &format!("# N{i}\nword{i} shared text\n"),
        );
    }
    indexed_with(&fx, &embeddings_at(&server.url));
    let rows = stored(&fx);
    assert_eq!(rows.len(), 70);
    assert!(rows.iter().all(|r| r.1 == 1), "one run, one generation");
    let sizes: Vec<usize> = server
        .seen
        .inputs
        .lock()
        .unwrap()
        .iter()
        .map(Vec::len)
        .collect();
    assert_eq!(
        sizes,
        [32, 32, 6],
        "batches of {}",
        tc_index::embed::EMBED_BATCH
    );
}
