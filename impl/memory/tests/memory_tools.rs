//! The memory tools through the dispatch pipeline, on a real vault folder: the store, the
//! notes a person sees, their edits, relations, reads, search and its paging, the folder
//! ACL, the conventions and the scopes (spec/memory.md).

mod support;

use serde_json::{Value, json};
use support::*;
use tc_tools::ErrorCode;
use tc_vault::acl::AclConfig;
use tc_vault::conventions::ConventionConfig;

const ADA: &str = "memory/person/Ada Lovelace.md";
const ENGINE: &str = "memory/machine/Analytical Engine.md";

// r[verify memory.tools.upsert]
// r[verify memory.tools.upsert.observations]
// r[verify memory.note.layout]
// r[verify memory.note.path]
#[test]
fn upsert_creates_then_adds_only_new_observations_and_renders_the_note() {
    let fx = Fx::new();
    let first = upsert(&fx, "person", "Ada Lovelace", &["wrote the first program"]);
    assert_eq!(first["created"], true);
    assert_eq!(first["added_observations"], 1);
    assert_eq!(first["entity"]["note_path"], ADA);
    assert_eq!(first["notes_written"]["count"], 1);
    let id = id_of(&first);
    let again = upsert(
        &fx,
        "person",
        "Ada Lovelace",
        &["born 1815", "wrote the first program", "born 1815"],
    );
    assert_eq!(again["created"], false);
    assert_eq!(id_of(&again), id);
    assert_eq!(again["added_observations"], 1);
    assert_eq!(
        again["entity"]["observations"],
        json!(["wrote the first program", "born 1815"])
    );
    assert_eq!(
        fx.get(ADA).unwrap(),
        format!(
            "---\nmemory_id: {id}\nmemory_type: person\nmemory_status: active\n---\n\
             <!-- memory:begin -->\n# Ada Lovelace\n\n## Observations\n\n\
             - wrote the first program\n- born 1815\n<!-- memory:end -->\n"
        )
    );
    // Nothing new: nothing written.
    let same = upsert(&fx, "person", "Ada Lovelace", &["born 1815"]);
    assert_eq!(same["notes_written"]["count"], 0);
    assert_eq!(entity_count(), 1);
}

// r[verify memory.tools.upsert.observations]
#[test]
fn observations_are_single_non_blank_lines_within_the_limits() {
    let fx = Fx::new();
    for bad in [
        json!(["two\nlines"]),
        json!(["   "]),
        json!([""]),
        json!(["x".repeat(1001)]),
    ] {
        let error = assert_code(
            fx.call(
                "upsert_entity",
                json!({"type": "person", "name": "Ada", "observations": bad}),
            ),
            ErrorCode::ValidationError,
        );
        assert!(error.message.contains("/observations/0"), "{error}");
    }
    let many: Vec<String> = (0..101).map(|i| format!("o{i}")).collect();
    assert_code(
        fx.call(
            "upsert_entity",
            json!({"type": "t", "name": "n", "observations": many}),
        ),
        ErrorCode::ValidationError,
    );
    assert_code(
        fx.call("upsert_entity", json!({"type": "t\u{7}", "name": "n"})),
        ErrorCode::ValidationError,
    );
    assert_eq!(entity_count(), 0);
}

// r[verify memory.tools.upsert.materialize]
#[test]
fn materialize_false_keeps_no_note_and_never_removes_one() {
    let fx = Fx::new();
    let ghost = fx
        .call(
            "upsert_entity",
            json!({"type": "idea", "name": "Ghost", "observations": ["x"], "materialize": false}),
        )
        .unwrap();
    assert_eq!(ghost["entity"]["materialized"], false);
    assert_eq!(ghost["entity"]["note_path"], Value::Null);
    assert!(fx.get("memory/idea/Ghost.md").is_none());
    upsert(&fx, "person", "Ada Lovelace", &[]);
    fx.call(
        "upsert_entity",
        json!({"type": "person", "name": "Ada Lovelace", "observations": ["y"], "materialize": false}),
    )
    .unwrap();
    assert!(
        fx.get(ADA).unwrap().contains("- y\n"),
        "kept and re-rendered"
    );
}

// r[verify memory.tools.relate]
// r[verify memory.sync.both-ends]
// r[verify memory.note.sorted]
// r[verify memory.tools.unrelate]
#[test]
fn a_relation_renders_as_wikilinks_on_both_ends_and_goes_away_again() {
    let fx = Fx::new();
    let ada = id_of(&upsert(&fx, "person", "Ada Lovelace", &[]));
    let engine = id_of(&upsert(&fx, "machine", "Analytical Engine", &[]));
    let babbage = id_of(&upsert(&fx, "person", "Charles Babbage", &[]));
    let done = relate(&fx, &ada, &engine, "worked_on");
    assert_eq!(done["changed"], true);
    assert_eq!(done["notes_written"]["count"], 2);
    relate(&fx, &ada, &babbage, "knew");
    relate(&fx, &ada, &engine, "described");
    let note = fx.get(ADA).unwrap();
    let relations = note.split("## Relations\n\n").nth(1).unwrap();
    assert!(
        relations.starts_with(
            "- described [[memory/machine/Analytical Engine|Analytical Engine]]\n\
             - knew [[memory/person/Charles Babbage|Charles Babbage]]\n\
             - worked_on [[memory/machine/Analytical Engine|Analytical Engine]]\n"
        ),
        "{note}"
    );
    let engine_note = fx.get(ENGINE).unwrap();
    assert!(
        engine_note.contains(
            "## Referenced by\n\n- [[memory/person/Ada Lovelace|Ada Lovelace]] described\n\
             - [[memory/person/Ada Lovelace|Ada Lovelace]] worked_on\n"
        ),
        "{engine_note}"
    );
    let twice = relate(&fx, &ada, &engine, "worked_on");
    assert_eq!(twice["changed"], false);
    assert_eq!(twice["notes_written"]["count"], 0);

    let gone = fx
        .call(
            "unrelate_entities",
            json!({"source": ada, "target": engine, "relation": "worked_on"}),
        )
        .unwrap();
    assert_eq!(gone["changed"], true);
    assert!(!fx.get(ADA).unwrap().contains("worked_on"));
    assert!(!fx.get(ENGINE).unwrap().contains("worked_on"));
    let again = fx
        .call(
            "unrelate_entities",
            json!({"source": ada, "target": engine, "relation": "worked_on"}),
        )
        .unwrap();
    assert_eq!(again["changed"], false);
}

// r[verify memory.tools.relate]
#[test]
fn relating_an_unknown_or_foreign_id_is_entity_not_found() {
    let fx = Fx::new();
    let ada = id_of(&upsert(&fx, "person", "Ada", &[]));
    for other in ["e999", "nonsense", "e0"] {
        let error = assert_code(
            fx.call(
                "relate_entities",
                json!({"source": ada, "target": other, "relation": "knows"}),
            ),
            ErrorCode::EntityNotFound,
        );
        assert_eq!(error.details.unwrap()["entity_id"], other);
    }
    assert_code(
        fx.call(
            "relate_entities",
            json!({"source": ada, "target": ada, "relation": "bad|link"}),
        ),
        ErrorCode::ValidationError,
    );
}

// r[verify memory.sync.both-ends]
#[test]
fn materializing_an_entity_turns_the_text_mentions_of_it_into_links() {
    let fx = Fx::new();
    let ada = id_of(&upsert(&fx, "person", "Ada Lovelace", &[]));
    let ghost = fx
        .call(
            "upsert_entity",
            json!({"type": "idea", "name": "Poetical Science", "materialize": false}),
        )
        .unwrap();
    let ghost = id_of(&ghost);
    relate(&fx, &ada, &ghost, "coined");
    assert!(
        fx.get(ADA)
            .unwrap()
            .contains(&format!("- coined Poetical Science (idea, {ghost})\n"))
    );
    let now = fx
        .call(
            "upsert_entity",
            json!({"type": "idea", "name": "Poetical Science"}),
        )
        .unwrap();
    assert_eq!(now["notes_written"]["count"], 2);
    assert!(
        fx.get(ADA)
            .unwrap()
            .contains("- coined [[memory/idea/Poetical Science|Poetical Science]]\n")
    );
}

// r[verify memory.edits.outside-kept]
// r[verify memory.note.frontmatter]
#[test]
fn a_persons_additions_outside_the_section_survive_every_re_render() {
    let fx = Fx::new();
    let ada = id_of(&upsert(&fx, "person", "Ada Lovelace", &["born 1815"]));
    let written = fx.get(ADA).unwrap();
    let edited = written
        .replace(
            "memory_status: active\n",
            "memory_status: active\ntags: [math, poetry]\nid: my-own-id\n",
        )
        .replace(
            "<!-- memory:begin -->",
            "A note of mine, above.\n\n<!-- memory:begin -->",
        )
        + "\n## Reading list\n\n- Sketch of the Analytical Engine\n";
    fx.put(ADA, &edited);
    let engine = id_of(&upsert(&fx, "machine", "Analytical Engine", &[]));
    relate(&fx, &ada, &engine, "described");
    upsert(&fx, "person", "Ada Lovelace", &["died 1852"]);
    let note = fx.get(ADA).unwrap();
    assert!(
        note.starts_with(&format!(
            "---\nmemory_id: {ada}\nmemory_type: person\nmemory_status: active\ntags: [math, poetry]\nid: my-own-id\n---\nA note of mine, above.\n\n<!-- memory:begin -->\n# Ada Lovelace\n"
        )),
        "{note}"
    );
    assert!(note.contains("- born 1815\n- died 1852\n"));
    assert!(note.contains("- described [[memory/machine/Analytical Engine|Analytical Engine]]"));
    assert!(note.ends_with(
        "<!-- memory:end -->\n\n## Reading list\n\n- Sketch of the Analytical Engine\n"
    ));
}

// r[verify memory.edits.inside-refused]
// r[verify memory.store.truth]
#[test]
fn an_edit_inside_the_section_refuses_the_re_render_and_changes_nothing() {
    let fx = Fx::new();
    let ada = id_of(&upsert(&fx, "person", "Ada Lovelace", &["born 1815"]));
    let engine = id_of(&upsert(&fx, "machine", "Analytical Engine", &[]));
    let edited = fx
        .get(ADA)
        .unwrap()
        .replace("- born 1815\n", "- born 1815\n- knew Babbage well\n");
    fx.put(ADA, &edited);
    let engine_before = fx.get(ENGINE).unwrap();
    for result in [
        fx.call(
            "upsert_entity",
            json!({"type": "person", "name": "Ada Lovelace", "observations": ["died 1852"]}),
        ),
        fx.call(
            "relate_entities",
            json!({"source": engine, "target": ada, "relation": "inspired"}),
        ),
    ] {
        let error = assert_code(result, ErrorCode::ConcurrentModification);
        assert_eq!(
            error.details.as_ref().unwrap()["reason"],
            "edited_inside_memory_section"
        );
        assert!(error.recovery.is_some());
    }
    // Nothing changed: the person's edit, the other note, the store.
    assert_eq!(fx.get(ADA).unwrap(), edited);
    assert_eq!(fx.get(ENGINE).unwrap(), engine_before);
    let got = fx.call("get_entity", json!({"entity_id": ada})).unwrap();
    assert_eq!(got["entity"]["observations"], json!(["born 1815"]));
    assert_eq!(got["relation_count"], 0);
    // An owned key changed by hand, or a marker removed, is an edit inside too.
    for broken in [
        edited
            .replace("- knew Babbage well\n", "")
            .replace("memory_status: active", "memory_status: done"),
        edited
            .replace("- knew Babbage well\n", "")
            .replace("<!-- memory:end -->\n", ""),
    ] {
        fx.put(ADA, &broken);
        assert_code(
            fx.call(
                "upsert_entity",
                json!({"type": "person", "name": "Ada Lovelace", "observations": ["z"]}),
            ),
            ErrorCode::ConcurrentModification,
        );
    }
    // Undone by the person: the store renders again.
    fx.put(ADA, &edited.replace("- knew Babbage well\n", ""));
    upsert(&fx, "person", "Ada Lovelace", &["died 1852"]);
    assert!(fx.get(ADA).unwrap().contains("- born 1815\n- died 1852\n"));
}

// r[verify memory.edits.note-deleted]
#[test]
fn a_note_a_person_deleted_comes_back_fresh() {
    let fx = Fx::new();
    upsert(&fx, "person", "Ada Lovelace", &["born 1815"]);
    fx.remove(ADA);
    let again = upsert(&fx, "person", "Ada Lovelace", &["died 1852"]);
    assert_eq!(again["notes_written"]["notes"][0]["created"], true);
    assert!(fx.get(ADA).unwrap().contains("- born 1815\n- died 1852\n"));
}

// r[verify memory.note.path-collision]
#[test]
fn names_that_collide_or_meet_a_persons_note_take_a_suffixed_path() {
    let fx = Fx::new();
    fx.put("memory/person/Grace.md", "my own note about Grace\n");
    let grace = upsert(&fx, "person", "Grace", &["x"]);
    let path = grace["entity"]["note_path"].as_str().unwrap().to_owned();
    assert!(path.starts_with("memory/person/Grace ~"), "{path}");
    assert_eq!(
        fx.get("memory/person/Grace.md").unwrap(),
        "my own note about Grace\n"
    );
    let slash = upsert(&fx, "person", "a/b", &[]);
    let dash = upsert(&fx, "person", "a-b", &[]);
    assert_eq!(slash["entity"]["note_path"], "memory/person/a-b.md");
    assert_ne!(dash["entity"]["note_path"], slash["entity"]["note_path"]);
    assert!(
        fx.get(dash["entity"]["note_path"].as_str().unwrap())
            .unwrap()
            .contains("# a-b")
    );
    assert!(fx.get("memory/person/a-b.md").unwrap().contains("# a/b"));
}

// r[verify memory.note.write-gate]
#[test]
fn the_folder_acl_and_the_conventions_judge_the_notes_before_the_store_changes() {
    let mut fx = Fx::with(
        Some(AclConfig {
            write_paths: Some(vec!["notes/**".into()]),
            ..AclConfig::default()
        }),
        Vec::new(),
    );
    let denied = assert_code(
        fx.call("upsert_entity", json!({"type": "person", "name": "Ada"})),
        ErrorCode::AclDenied,
    );
    assert_eq!(denied.details.unwrap()["path"], "memory/person/Ada.md");
    assert_eq!(entity_count(), 0, "the store did not change");
    fx.reconfigure(
        None,
        vec![ConventionConfig {
            glob: "memory/**".into(),
            require_frontmatter: vec!["owner".into()],
            ..ConventionConfig::default()
        }],
    );
    assert_code(
        fx.call("upsert_entity", json!({"type": "person", "name": "Ada"})),
        ErrorCode::ConventionBlocked,
    );
    assert_eq!(entity_count(), 0);
    assert!(fx.get("memory/person/Ada.md").is_none());
    // Not materialized: no note, so nothing for the gate to judge.
    fx.call(
        "upsert_entity",
        json!({"type": "person", "name": "Ada", "materialize": false}),
    )
    .unwrap();
    assert_eq!(entity_count(), 1);
}

// r[verify memory.scopes]
#[test]
fn each_tool_needs_its_memory_scope() {
    let fx = Fx::new();
    let ada = id_of(&upsert(&fx, "person", "Ada", &[]));
    let reader = holding(&["read:memory"]);
    let writer = holding(&["write:memory"]);
    for (who, tool, args, scope) in [
        (
            &reader,
            "upsert_entity",
            json!({"type": "t", "name": "n"}),
            "write:memory",
        ),
        (
            &reader,
            "relate_entities",
            json!({"source": ada, "target": ada, "relation": "r"}),
            "write:memory",
        ),
        (
            &reader,
            "unrelate_entities",
            json!({"source": ada, "target": ada, "relation": "r"}),
            "write:memory",
        ),
        (
            &writer,
            "get_entity",
            json!({"entity_id": ada}),
            "read:memory",
        ),
        (
            &writer,
            "search_entities",
            json!({"query": "ada"}),
            "read:memory",
        ),
        (
            &writer,
            "delete_entity",
            json!({"entity_id": ada}),
            "delete:memory",
        ),
    ] {
        let error = assert_code(fx.call_as(who, tool, args), ErrorCode::AclDenied);
        assert_eq!(error.details.unwrap()["scope"], scope, "{tool}");
    }
    fx.call_as(&reader, "get_entity", json!({"entity_id": ada}))
        .unwrap();
    fx.call_as(&writer, "upsert_entity", json!({"type": "t", "name": "n"}))
        .unwrap();
}

// r[verify memory.tools.get]
#[test]
fn get_entity_returns_the_entity_and_its_relations_or_entity_not_found() {
    let mut fx = Fx::new();
    let ada = id_of(&upsert(&fx, "person", "Ada", &["o1"]));
    let bob = id_of(&upsert(&fx, "person", "Bob", &[]));
    relate(&fx, &ada, &bob, "knows");
    relate(&fx, &bob, &ada, "admires");
    let got = fx.call("get_entity", json!({"entity_id": ada})).unwrap();
    assert_eq!(got["entity"]["type"], "person");
    assert_eq!(got["entity"]["name"], "Ada");
    assert_eq!(got["entity"]["status"], "active");
    assert_eq!(got["relation_count"], 2);
    assert_eq!(
        got["relations"],
        json!([
            {"source": ada, "target": bob, "relation": "knows"},
            {"source": bob, "target": ada, "relation": "admires"},
        ])
    );
    assert_code(
        fx.call("get_entity", json!({"entity_id": "e4242"})),
        ErrorCode::EntityNotFound,
    );
    fx.reconfigure(
        Some(AclConfig {
            read_paths: Some(vec!["notes/**".into()]),
            ..AclConfig::default()
        }),
        Vec::new(),
    );
    assert_code(
        fx.call("get_entity", json!({"entity_id": ada})),
        ErrorCode::AclDenied,
    );
}

// r[verify memory.tools.upsert.acl]
#[test]
fn an_upsert_shows_no_entity_whose_note_the_caller_may_not_read() {
    let mut fx = Fx::new();
    upsert(&fx, "person", "Ada", &["a secret observation"]);
    fx.reconfigure(
        Some(AclConfig {
            read_paths: Some(vec!["notes/**".into()]),
            ..AclConfig::default()
        }),
        Vec::new(),
    );
    let refusal = fx
        .call(
            "upsert_entity",
            json!({"type": "person", "name": "Ada", "observations": ["probe"]}),
        )
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::AclDenied, "{refusal}");
    assert!(!refusal.to_string().contains("secret"), "{refusal}");
    fx.reconfigure(None, Vec::new());
    let hits = fx
        .call("search_entities", json!({"query": "probe"}))
        .unwrap();
    assert_eq!(
        hits["entities"],
        json!([]),
        "the refused upsert added nothing"
    );
}

// r[verify vault.acl.results-readable-only]
// r[verify memory.tools.delete.acl]
#[test]
fn a_caller_that_may_write_entity_notes_but_not_read_them_is_told_no_hash_of_them() {
    let mut fx = Fx::new();
    let ada = id_of(&upsert(&fx, "person", "Ada", &["a secret observation"]));
    let bob = id_of(&upsert(&fx, "person", "Bob", &[]));
    fx.reconfigure(
        Some(tc_tools::testing::read_only_under("notes/**")),
        Vec::new(),
    );
    let related = relate(&fx, &ada, &bob, "knows");
    let written = related["notes_written"]["notes"].as_array().unwrap();
    assert_eq!(written.len(), 2, "{related}");
    for note in written {
        assert_eq!(note["content_hash"], json!(null), "{related}");
    }
    let unrelated = fx
        .call(
            "unrelate_entities",
            json!({"source": ada, "target": bob, "relation": "knows"}),
        )
        .unwrap();
    assert_eq!(
        unrelated["notes_written"]["notes"][0]["content_hash"],
        json!(null),
        "{unrelated}"
    );
    // delete_entity would show the entity: refused before any confirmation is asked, with
    // or without relations to list.
    let requested = fx.requested();
    for args in [
        json!({"entity_id": bob}),
        json!({"entity_id": ada, "cascade": true}),
    ] {
        let refused = assert_code(fx.call("delete_entity", args), ErrorCode::AclDenied);
        assert!(!refused.to_string().contains("secret"), "{refused}");
        assert!(!refused.details.unwrap().to_string().contains("secret"));
    }
    assert_eq!(fx.requested(), requested, "no confirmation was asked");
    assert!(fx.get("memory/person/Bob.md").is_some());
    // A reader is told the hash of what was written.
    fx.reconfigure(None, Vec::new());
    let cy = id_of(&upsert(&fx, "person", "Cy", &[]));
    let told = relate(&fx, &ada, &cy, "knows");
    let ada_note = fx.get("memory/person/Ada.md").unwrap();
    assert!(
        told["notes_written"]["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["content_hash"] == tc_vault::content_hash(ada_note.as_bytes())),
        "{told}"
    );
}

#[test]
fn status_is_set_by_upsert_and_shown_everywhere() {
    let fx = Fx::new();
    upsert(&fx, "person", "Ada", &[]);
    let archived = fx
        .call(
            "upsert_entity",
            json!({"type": "person", "name": "Ada", "status": "archived"}),
        )
        .unwrap();
    assert_eq!(archived["entity"]["status"], "archived");
    assert!(
        fx.get("memory/person/Ada.md")
            .unwrap()
            .contains("memory_status: archived\n")
    );
    let found = fx.call("search_entities", json!({"query": "ada"})).unwrap();
    assert_eq!(found["entities"][0]["status"], "archived");
    // Absent: unchanged.
    let kept = upsert(&fx, "person", "Ada", &["x"]);
    assert_eq!(kept["entity"]["status"], "archived");
}

// r[verify memory.search.fields]
#[test]
fn search_finds_names_types_and_observations_in_this_vault() {
    let fx = Fx::new();
    upsert(&fx, "person", "Ada Lovelace", &["wrote the first program"]);
    upsert(
        &fx,
        "machine",
        "Analytical Engine",
        &["designed by Babbage"],
    );
    upsert(&fx, "person", "Charles Babbage", &[]);
    let names = |args: Value| -> Vec<String> {
        fx.call("search_entities", args).unwrap()["entities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(json!({"query": "lovelace"})), ["Ada Lovelace"]);
    assert_eq!(names(json!({"query": "machine"})), ["Analytical Engine"]);
    assert_eq!(names(json!({"query": "prog"})), ["Ada Lovelace"]);
    let babbage = names(json!({"query": "babbage"}));
    assert_eq!(babbage.len(), 2);
    assert_eq!(babbage[0], "Charles Babbage", "a name match ranks first");
    assert_eq!(
        names(json!({"query": "babbage", "type": "machine"})),
        ["Analytical Engine"]
    );
    assert_eq!(
        names(json!({"query": ""})),
        ["Analytical Engine", "Ada Lovelace", "Charles Babbage"]
    );
    let hit = &fx
        .call("search_entities", json!({"query": "program"}))
        .unwrap()["entities"][0];
    assert!(hit["snippet"].as_str().unwrap().contains("program"));
    assert_eq!(hit["observation_count"], 1);
}

// r[verify memory.search.paged]
// r[verify memory.search.cursor]
#[test]
fn search_pages_with_a_signed_cursor_bound_to_caller_and_request() {
    let fx = Fx::new();
    for i in 0..7 {
        upsert(&fx, "item", &format!("widget {i}"), &["a shared word"]);
    }
    let args = json!({"query": "shared", "limit": 3});
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut call = args.clone();
        if let Some(c) = &cursor {
            call["cursor"] = json!(c);
        }
        let page = fx.call("search_entities", call).unwrap();
        pages += 1;
        for e in page["entities"].as_array().unwrap() {
            seen.push(e["id"].as_str().unwrap().to_owned());
        }
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 7);

    let first = fx.call("search_entities", args.clone()).unwrap();
    let token = first["next_cursor"].as_str().unwrap().to_owned();
    let reason = |who: &tc_tools::CallerContext, call: Value| -> String {
        let error = assert_code(
            fx.call_as(who, "search_entities", call),
            ErrorCode::InvalidInput,
        );
        error.details.unwrap()["reason"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let other = tc_tools::CallerContext::new("someone-else", tc_vault::Scopes::all());
    assert_eq!(
        reason(
            &other,
            json!({"query": "shared", "limit": 3, "cursor": token})
        ),
        "foreign"
    );
    assert_eq!(
        reason(
            &caller(),
            json!({"query": "shared", "limit": 4, "cursor": token})
        ),
        "request_mismatch"
    );
    assert_eq!(
        reason(
            &caller(),
            json!({"query": "shared", "limit": 3, "cursor": "c1.forged.x"})
        ),
        "invalid"
    );
    fx.clock.advance_ms(10 * 60 * 1000);
    assert_eq!(
        reason(
            &caller(),
            json!({"query": "shared", "limit": 3, "cursor": token})
        ),
        "expired"
    );
}

// r[verify memory.search.paged]
#[test]
fn a_search_page_stays_under_the_response_cap() {
    let fx = Fx::new();
    let long = "word ".repeat(38);
    for i in 0..100 {
        upsert(&fx, "item", &format!("{long}{i:03}"), &[]);
    }
    let page = fx
        .call("search_entities", json!({"query": "word", "limit": 100}))
        .unwrap();
    let size = serde_json::to_vec(&page).unwrap().len();
    let shown = page["entities"].as_array().unwrap().len();
    assert!(shown < 100, "the page was cut to fit: {shown}");
    assert!(page["next_cursor"].is_string());
    assert!(2 * size + 512 < tc_tools::testing::PAGE_CAP, "{size}");
}

// r[verify memory.search.acl]
#[test]
fn search_leaves_out_entities_whose_note_the_caller_may_not_read() {
    let mut fx = Fx::new();
    upsert(&fx, "person", "Ada", &["x"]);
    upsert(&fx, "secret", "Plan", &["x"]);
    fx.reconfigure(
        Some(AclConfig {
            read_paths: Some(vec!["memory/person/**".into()]),
            ..AclConfig::default()
        }),
        Vec::new(),
    );
    let found = fx.call("search_entities", json!({"query": "x"})).unwrap();
    let names: Vec<&str> = found["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Ada"]);
}

#[test]
fn every_result_satisfies_its_output_schema() {
    let fx = Fx::new();
    let ada = id_of(&upsert(&fx, "person", "Ada", &["o"]));
    let bob = id_of(&upsert(&fx, "person", "Bob", &[]));
    let results = [
        ("relate_entities", relate(&fx, &ada, &bob, "knows")),
        (
            "get_entity",
            fx.call("get_entity", json!({"entity_id": ada})).unwrap(),
        ),
        (
            "search_entities",
            fx.call("search_entities", json!({"query": "ada", "limit": 1}))
                .unwrap(),
        ),
        ("upsert_entity", upsert(&fx, "person", "Ada", &["p"])),
    ];
    for (tool, result) in results {
        let def = fx.pipeline.registry().get(tool).unwrap();
        let validator = jsonschema::validator_for(&def.output_schema).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&result)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{tool}: {errors:?}\n{result}");
    }
}
