//! `delete_entity`: always gated, bound to the entity row, its relations and its note's
//! bytes, put through the four standard scenarios of a gated tool on the CLI-token route
//! and checked for drift on the verified (requestState) route too (spec/memory.md
//! `memory.tools.delete*`; spec/drift.md `drift.bind.delete-entity`).

mod support;

use serde_json::{Value, json};
use support::*;
use tc_tools::{CallControl, ErrorCode};

const ADA: &str = "memory/person/Ada Lovelace.md";
const BOB: &str = "memory/person/Bob.md";

/// Ada (e1, with a note) knows Bob (e2). After a delete, Ada comes back with the same id,
/// as the row was.
fn setup(fx: &Fx) {
    let conn = sql();
    let ada_row: i64 = conn
        .query_row(
            "SELECT count(*) FROM memory_entities WHERE id = 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let seq: i64 = conn
        .query_row(
            "SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = 'memory_entities'",
            [],
            |r| r.get(0),
        )
        .unwrap_or(0);
    if ada_row == 0 && seq > 0 {
        conn.execute(
            "INSERT INTO memory_entities (id, vault, type, name, observations, status, \
             materialized, note_path, owned_hash, created_ms, updated_ms) VALUES \
             (1, 'main', 'person', 'Ada Lovelace', '[\"born 1815\"]', 'active', 0, NULL, NULL, 0, 0)",
            [],
        )
        .unwrap();
    }
    assert_eq!(
        id_of(&upsert(fx, "person", "Ada Lovelace", &["born 1815"])),
        "e1"
    );
    assert_eq!(id_of(&upsert(fx, "person", "Bob", &[])), "e2");
    relate(fx, "e1", "e2", "knows");
}

fn args() -> Value {
    json!({"entity_id": "e1", "cascade": true})
}

fn ada_row() -> bool {
    sql()
        .query_row(
            "SELECT count(*) FROM memory_entities WHERE id = 1",
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap()
        == 1
}

fn applied(fx: &Fx) {
    assert!(fx.get(ADA).is_none(), "Ada's note is gone");
    assert!(!ada_row(), "Ada's row is gone");
    let bob = fx.get(BOB).unwrap();
    assert!(
        !bob.contains("Ada"),
        "Bob's note no longer names Ada: {bob}"
    );
}

fn untouched(fx: &Fx) {
    assert!(fx.get(ADA).is_some());
    assert!(ada_row());
    assert!(
        fx.get(BOB)
            .unwrap()
            .contains("[[memory/person/Ada Lovelace|Ada Lovelace]] knows")
    );
}

fn new_observation(fx: &Fx) {
    upsert(fx, "person", "Ada Lovelace", &["died 1852"]);
}

fn scenario() -> Scenario<'static> {
    Scenario {
        tool: "delete_entity",
        args: args(),
        setup: &setup,
        applied: &applied,
        untouched: &untouched,
        drift: &new_observation,
    }
}

// r[verify memory.tools.delete]
// r[verify memory.tools.delete.neighbours]
#[test]
fn approve_then_replay() {
    scenario().approve_then_replay();
}

// r[verify drift.bind.delete-entity]
#[test]
fn a_changed_observation_is_drift() {
    scenario().drift_refused();
}

// r[verify drift.bind.delete-entity]
#[test]
fn a_hand_edit_of_the_note_is_drift() {
    Scenario {
        drift: &|fx: &Fx| {
            let note = fx.get(ADA).unwrap();
            fx.put(ADA, &format!("{note}\nA line added by hand.\n"));
        },
        ..scenario()
    }
    .drift_refused();
}

// r[verify drift.bind.delete-entity]
#[test]
fn a_new_relation_is_drift() {
    Scenario {
        drift: &|fx: &Fx| {
            let carol = id_of(&upsert(fx, "person", "Carol", &[]));
            relate(fx, &carol, "e1", "admires");
        },
        ..scenario()
    }
    .drift_refused();
}

/// The folder ACL denies deleting the entity's note (the setup still writes notes).
#[test]
fn a_folder_acl_refusal_gives_the_token_back() {
    scenario().acl_releases(tc_vault::AclConfig {
        delete_paths: Some(Vec::new()),
        ..tc_vault::AclConfig::default()
    });
}

// r[verify memory.note.write-gate]
#[test]
fn a_convention_refusal_of_a_re_render_comes_before_the_gate() {
    scenario().preflight_keeps_token(forbid_all());
}

// r[verify drift.bind.delete-entity]
#[test]
fn drift_is_refused_on_the_verified_route_too() {
    let fx = Fx::new();
    setup(&fx);
    let prepared = fx
        .pipeline
        .prepare(&caller(), "delete_entity", &args())
        .unwrap();
    assert!(prepared.needs_confirmation());
    let approved = prepared.state_fp().clone();
    new_observation(&fx);
    let again = fx
        .pipeline
        .prepare(&caller(), "delete_entity", &args())
        .unwrap();
    let refusal = fx
        .pipeline
        .execute(&again, verified(&approved), &CallControl::default())
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::ReplayDrift, "{refusal}");
    untouched(&fx);
    // Approved against the current state, it applies.
    let current = again.state_fp().clone();
    fx.pipeline
        .execute(&again, verified(&current), &CallControl::default())
        .unwrap();
    applied(&fx);
}

// r[verify memory.tools.delete.relations]
#[test]
fn an_entity_with_relations_is_refused_before_any_confirmation_unless_cascade() {
    let fx = Fx::new();
    setup(&fx);
    let requested = fx.requested();
    let error = assert_code(
        fx.call("delete_entity", json!({"entity_id": "e1"})),
        ErrorCode::EntityHasRelations,
    );
    let details = error.details.unwrap();
    assert_eq!(details["relation_count"], 1);
    assert_eq!(
        details["relations"],
        json!([{"source": "e1", "target": "e2", "relation": "knows"}])
    );
    assert!(error.recovery.unwrap().instruction.contains("cascade"));
    assert_eq!(fx.requested(), requested, "no confirmation asked for");
    untouched(&fx);
    // Without relations, no cascade is needed.
    fx.call(
        "unrelate_entities",
        json!({"source": "e1", "target": "e2", "relation": "knows"}),
    )
    .unwrap();
    let plain = json!({"entity_id": "e1"});
    let token = fx.require("delete_entity", &plain);
    let done = fx
        .call("delete_entity", with_token(&plain, &token))
        .unwrap();
    assert_eq!(done["relations_removed"], 0);
}

// r[verify memory.tools.delete.snapshot]
#[test]
fn the_note_goes_to_a_snapshot_restore_note_brings_back() {
    let fx = Fx::new();
    setup(&fx);
    let before = fx.get(ADA).unwrap();
    let token = fx.require("delete_entity", &args());
    let done = fx
        .call("delete_entity", with_token(&args(), &token))
        .unwrap();
    assert_eq!(done["relations_removed"], 1);
    assert_eq!(done["entity"]["name"], "Ada Lovelace");
    let note = &done["note"];
    assert_eq!(note["path"], ADA);
    assert_eq!(note["permanent"], false);
    let snapshot = note["snapshot_id"].as_str().unwrap().to_owned();
    assert_eq!(done["notes_written"]["notes"][0]["path"], BOB);
    assert!(fx.get(ADA).is_none());
    assert_code(
        fx.call("get_entity", json!({"entity_id": "e1"})),
        ErrorCode::EntityNotFound,
    );

    let restore = json!({"path": ADA, "snapshot_id": snapshot});
    let token = fx.require("restore_note", &restore);
    fx.call("restore_note", with_token(&restore, &token))
        .unwrap();
    assert_eq!(fx.get(ADA).unwrap(), before);
    assert!(!ada_row(), "a restored note does not bring the entity back");
}

// r[verify memory.tools.delete.snapshot]
#[test]
fn permanent_keeps_no_snapshot() {
    let fx = Fx::new();
    setup(&fx);
    let call = json!({"entity_id": "e1", "cascade": true, "permanent": true});
    let token = fx.require("delete_entity", &call);
    let done = fx.call("delete_entity", with_token(&call, &token)).unwrap();
    assert_eq!(done["note"]["permanent"], true);
    assert_eq!(done["note"]["snapshot_id"], Value::Null);
    assert_code(
        fx.call("restore_note", json!({"path": ADA})),
        ErrorCode::NoteNotFound,
    );
}

#[test]
fn the_summary_names_the_entity_its_note_relations_and_the_notes_re_rendered() {
    let fx = Fx::new();
    setup(&fx);
    let prepared = fx
        .pipeline
        .prepare(&caller(), "delete_entity", &args())
        .unwrap();
    let summary = fx.pipeline.summary(&prepared);
    for part in [
        "delete entity e1 (person \"Ada Lovelace\") with 1 observation(s) and 1 relation(s)",
        "target: memory/person/Ada Lovelace.md (deleted to a snapshot: restore_note can bring it back)",
        "relation e1 knows e2",
        "re-render memory/person/Bob.md without it",
    ] {
        assert!(summary.contains(part), "{part}\n{summary}");
    }
}

#[test]
fn an_entity_without_a_note_is_deleted_from_the_store_alone() {
    let fx = Fx::new();
    let ghost = fx
        .call(
            "upsert_entity",
            json!({"type": "idea", "name": "Ghost", "materialize": false}),
        )
        .unwrap();
    let call = json!({"entity_id": id_of(&ghost)});
    let token = fx.require("delete_entity", &call);
    let done = fx.call("delete_entity", with_token(&call, &token)).unwrap();
    assert_eq!(done["note"], Value::Null);
    assert_eq!(entity_count(), 0);
    assert_code(
        fx.call("delete_entity", json!({"entity_id": "e1"})),
        ErrorCode::EntityNotFound,
    );
}

// r[verify memory.edits.inside-refused]
#[test]
fn a_neighbour_edited_inside_its_section_refuses_the_delete_before_the_gate() {
    let fx = Fx::new();
    setup(&fx);
    let bob = fx.get(BOB).unwrap().replace("# Bob\n", "# Bob, edited\n");
    fx.put(BOB, &bob);
    let requested = fx.requested();
    assert_code(
        fx.call("delete_entity", args()),
        ErrorCode::ConcurrentModification,
    );
    assert_eq!(fx.requested(), requested);
    assert!(ada_row());
    assert_eq!(fx.get(BOB).unwrap(), bob);
}
