//! search_notes on the index (spec/index.md `search.*`, `index.reconcile`).

mod support;

use serde_json::json;
use support::{Fx, code, indexed};
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

fn garden(fx: &Fx) {
    fx.put(
        "garden/tomatoes.md",
        "---\ntags: [plants]\n---\n# Tomatoes\n## Watering\nWater the tomatoes every morning.\n",
    );
    fx.put(
        "garden/roses.md",
        "# Roses\nRoses need little water. #plants/flowers\n",
    );
    fx.put(
        "kitchen/soup.md",
        "# Soup\nTomatoes and water make a soup.\n",
    );
    fx.put("private/diary.md", "Secret water diary.\n");
}

// r[verify search.bm25]
#[test]
fn words_are_found_ranked_with_highlighted_snippets_and_headings() {
    let fx = Fx::new();
    garden(&fx);
    indexed(&fx);
    let out = fx
        .call("search_notes", json!({"query": "tomatoes water"}))
        .unwrap();
    let found = hits(&out);
    assert_eq!(found.len(), 2, "{out}");
    assert!(found.contains(&"garden/tomatoes.md".to_owned()));
    assert!(found.contains(&"kitchen/soup.md".to_owned()));
    let tomato = out["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["path"] == "garden/tomatoes.md")
        .unwrap();
    assert_eq!(tomato["heading"], "Tomatoes > Watering");
    assert!(
        tomato["snippet"].as_str().unwrap().contains("**tomatoes**"),
        "{tomato}"
    );
    assert_eq!(tomato["tags"], json!(["plants"]));
    assert_eq!(out["next_cursor"], json!(null));
}

// r[verify search.filters]
#[test]
fn folder_and_tags_narrow_the_hits() {
    let fx = Fx::new();
    garden(&fx);
    indexed(&fx);
    let folder = fx
        .call(
            "search_notes",
            json!({"query": "water", "folder": "garden"}),
        )
        .unwrap();
    let mut found = hits(&folder);
    found.sort();
    assert_eq!(found, ["garden/roses.md", "garden/tomatoes.md"]);
    let nested = fx
        .call(
            "search_notes",
            json!({"query": "water", "tags": ["#plants"]}),
        )
        .unwrap();
    let mut found = hits(&nested);
    found.sort();
    assert_eq!(
        found,
        ["garden/roses.md", "garden/tomatoes.md"],
        "area matches area/sub"
    );
    let flowers = fx
        .call(
            "search_notes",
            json!({"query": "water", "tags": ["plants/flowers"]}),
        )
        .unwrap();
    assert_eq!(hits(&flowers), ["garden/roses.md"]);
}

// r[verify search.acl]
#[test]
fn a_note_the_caller_may_not_read_is_never_a_hit() {
    let acl = AclConfig {
        rules: vec![ScopeRuleConfig {
            glob: "private/**".into(),
            scopes: vec!["read:private".into()],
        }],
        ..AclConfig::default()
    };
    let fx = Fx::with(Some(acl), Vec::new());
    garden(&fx);
    indexed(&fx);
    let caller =
        tc_tools::CallerContext::new("agent", tc_vault::acl::Scopes::granted(["read:notes"]));
    let out = fx
        .call_as(
            &caller,
            "search_notes",
            json!({"query": "water", "limit": 1}),
        )
        .unwrap();
    let mut seen = hits(&out);
    let mut cursor = out["next_cursor"].clone();
    while let Some(token) = cursor.as_str() {
        let page = fx
            .call_as(
                &caller,
                "search_notes",
                json!({"query": "water", "limit": 1, "cursor": token}),
            )
            .unwrap();
        assert!(!page.to_string().contains("diary") && !page.to_string().contains("Secret"));
        seen.extend(hits(&page));
        cursor = page["next_cursor"].clone();
    }
    seen.sort();
    assert_eq!(
        seen,
        ["garden/roses.md", "garden/tomatoes.md", "kitchen/soup.md"]
    );
    // With the scope, the private note is found.
    let out = fx.call("search_notes", json!({"query": "diary"})).unwrap();
    assert_eq!(hits(&out), ["private/diary.md"]);
}

// r[verify search.paging]
#[test]
fn pages_walk_every_hit_once_and_the_cursor_is_bound_to_the_request() {
    let fx = Fx::new();
    for i in 0..25 {
        fx.put(&format!("n/{i:02}.md"), &format!("apple number {i}\n"));
    }
    indexed(&fx);
    let mut seen = Vec::new();
    let mut cursor = None::<String>;
    let mut pages = 0;
    loop {
        let mut args = json!({"query": "apple", "limit": 10});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let page = fx.call("search_notes", args).unwrap();
        pages += 1;
        seen.extend(hits(&page));
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    let unique: std::collections::BTreeSet<_> = seen.iter().collect();
    assert_eq!((seen.len(), unique.len()), (25, 25));
    let first = fx
        .call("search_notes", json!({"query": "apple", "limit": 10}))
        .unwrap();
    let token = first["next_cursor"].as_str().unwrap();
    let other = fx
        .call(
            "search_notes",
            json!({"query": "apple", "limit": 5, "cursor": token}),
        )
        .unwrap_err();
    assert_eq!(other.code, ErrorCode::InvalidInput);
    assert_eq!(other.details.unwrap()["reason"], "request_mismatch");
}

// r[verify index.reconcile]
#[test]
fn an_edit_made_on_disk_is_found_by_the_next_search() {
    let fx = Fx::new();
    garden(&fx);
    indexed(&fx);
    assert_eq!(
        hits(
            &fx.call("search_notes", json!({"query": "zucchini"}))
                .unwrap()
        )
        .len(),
        0
    );
    fx.put("garden/zucchini.md", "Zucchini grow fast.\n");
    fx.put("kitchen/soup.md", "# Soup\nZucchini soup.\n");
    let mut found = hits(
        &fx.call("search_notes", json!({"query": "zucchini"}))
            .unwrap(),
    );
    found.sort();
    assert_eq!(found, ["garden/zucchini.md", "kitchen/soup.md"]);
    fx.remove("garden/zucchini.md");
    assert_eq!(
        hits(
            &fx.call("search_notes", json!({"query": "zucchini"}))
                .unwrap()
        ),
        ["kitchen/soup.md"]
    );
}

#[test]
fn a_same_size_edit_in_the_same_tick_is_still_seen() {
    let fx = Fx::new();
    fx.put("a.md", "alpha\n");
    indexed(&fx);
    // Same size, written at once: the stamp may not move, the racy rule re-reads it.
    fx.put("a.md", "gamma\n");
    assert_eq!(
        hits(&fx.call("search_notes", json!({"query": "gamma"})).unwrap()),
        ["a.md"]
    );
}

// r[verify search.embeddings.unavailable]
#[test]
fn semantic_and_hybrid_need_an_embeddings_endpoint() {
    let fx = Fx::new();
    garden(&fx);
    indexed(&fx);
    for mode in ["semantic", "hybrid"] {
        assert_eq!(
            code(fx.call("search_notes", json!({"query": "water", "mode": mode}))),
            ErrorCode::EmbeddingsUnavailable
        );
    }
    assert_eq!(
        code(fx.call("search_notes", json!({"query": "( ) *"}))),
        ErrorCode::ValidationError
    );
}

// r[verify search.bounded]
#[test]
fn a_page_stays_under_the_cap() {
    let fx = Fx::new();
    let long_name = "x".repeat(200);
    for i in 0..100 {
        fx.put(
            &format!("{long_name}/{i:03}{long_name}.md"),
            &format!("# {}\nbanana {}\n", "h".repeat(300), "w ".repeat(50)),
        );
    }
    indexed(&fx);
    let out = fx
        .call("search_notes", json!({"query": "banana", "limit": 100}))
        .unwrap();
    let cost = tc_tools::wire_cost(&serde_json::to_vec(&out).unwrap())
        + tc_tools::paging::RESPONSE_FRAME_BYTES;
    let cap = tc_tools::testing::PAGE_CAP;
    assert!(cost <= cap, "{cost} bytes as sent, cap {cap}");
    let first = hits(&out).len();
    assert!(first < 100, "the cap cut the page ({first} hits)");
    let token = out["next_cursor"].as_str().expect("more to come");
    let rest = fx
        .call(
            "search_notes",
            json!({"query": "banana", "limit": 100, "cursor": token}),
        )
        .unwrap();
    assert!(!hits(&rest).is_empty());
}

// r[verify search.hit-vanished]
// r[verify index.fresh.newest-wins]
/// A second index on the same cache.db (as a second server would have) re-indexes notes
/// while this one searches them: every search answers, none with internal_error, and once
/// the writer stops the last text is found.
#[test]
fn searching_while_another_server_reindexes_never_fails() {
    let fx = Fx::new();
    for n in 0..20 {
        fx.put(
            &format!("n{n}.md"),
            &format!("# Note {n}\nokapi words {n}\n"),
        );
    }
    indexed(&fx);
    let other = tc_index::open_indexes(
        &fx.cache(),
        [("main", fx.root.as_path())],
        &tc_index::SearchConfig::default(),
    )
    .unwrap()
    .remove(0);
    other.first_build_unwatched();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut round = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                round += 1;
                for n in 0..20 {
                    let text = format!("# Note {n}\nokapi words {n} round {round}\n");
                    std::fs::write(fx.root.join(format!("n{n}.md")), text).unwrap();
                }
                other.reconcile().unwrap();
            }
        });
        for _ in 0..150 {
            let out = fx.call("search_notes", json!({"query": "okapi", "limit": 20}));
            assert!(out.is_ok(), "{out:?}");
        }
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    fx.put("n0.md", "# Note 0\nthe last word is zebra\n");
    let out = fx.call("search_notes", json!({"query": "zebra"})).unwrap();
    assert_eq!(out["results"].as_array().unwrap().len(), 1, "{out}");
}
