//! bulk_move_notes through the tool pipeline (spec/bulk.md `bulk.move.*`; spec/drift.md
//! `drift.bind.bulk-move-notes`; spec/tools.md `tools.compose.bulk-move-notes`).

use serde_json::{Value, json};
use tc_tools::ErrorCode;
use tc_tools::testing::{Tools, with_token};

struct BulkTools;

impl Tools for BulkTools {
    fn registry() -> tc_tools::Registry {
        let mut registry = tc_tools::Registry::new();
        tc_bulk::register(&mut registry).unwrap();
        registry
    }
}

type Fx = tc_tools::testing::Fx<BulkTools>;
type Scenario<'a> = tc_tools::testing::Scenario<'a, BulkTools>;

const MOC: &str = "# Projects\n- [[alpha]]\n- [Beta](inbox/beta.md)\n- ![[gamma]]\n";

fn inbox(fx: &Fx) {
    fx.put("inbox/alpha.md", "alpha, see [[beta]]\n");
    fx.put("inbox/beta.md", "beta\n");
    fx.put("inbox/gamma.md", "gamma\n");
    fx.put("MOC.md", MOC);
}

fn move_all(dry_run: bool) -> Value {
    json!({"dry_run": dry_run, "moves": [
        {"from": "inbox/alpha.md", "to": "projects/alpha.md"},
        {"from": "inbox/beta.md", "to": "projects/beta.md"},
        {"from": "inbox/gamma.md", "to": "archive/gamma.md"},
    ]})
}

// r[verify bulk.move.all-or-nothing]
// r[verify tools.compose.bulk-move-notes]
#[test]
fn a_dry_run_is_free_and_one_approval_moves_them_all_with_every_link() {
    let fx = Fx::new();
    inbox(&fx);
    let plan = fx.call("bulk_move_notes", move_all(true)).unwrap();
    assert_eq!(plan["links_rewritten"], 4, "{plan}");
    assert_eq!(fx.requested(), 0, "a dry run asks nothing");
    assert_eq!(fx.get("MOC.md").unwrap(), MOC);

    let args = move_all(false);
    let token = fx.require("bulk_move_notes", &args);
    let out = fx
        .call("bulk_move_notes", with_token(&args, &token))
        .unwrap();
    assert_eq!(out["moved"], 3, "{out}");
    assert_eq!(fx.get("inbox/alpha.md"), None);
    assert_eq!(fx.get("archive/gamma.md").unwrap(), "gamma\n");
    // The MOC links to all three: each of its links was rewritten, in its own style.
    let moc = fx.get("MOC.md").unwrap();
    assert!(
        moc.contains("[[projects/alpha]]") || moc.contains("[[alpha]]"),
        "{moc}"
    );
    assert!(moc.contains("(projects/beta.md)"), "{moc}");
    assert!(!moc.contains("inbox/"), "{moc}");
    // alpha's own link to beta still reaches it.
    let alpha = fx.get("projects/alpha.md").unwrap();
    assert!(alpha.contains("beta"), "{alpha}");
}

// r[verify drift.bind.bulk-move-notes]
#[test]
fn a_backlink_gained_after_the_request_is_drift_and_nothing_moves() {
    Scenario {
        tool: "bulk_move_notes",
        args: move_all(false),
        setup: &inbox,
        applied: &|fx| assert!(fx.get("projects/beta.md").is_some()),
        untouched: &|fx| {
            assert_eq!(fx.get("inbox/beta.md").unwrap(), "beta\n");
            assert_eq!(fx.get("MOC.md").unwrap(), MOC);
        },
        // A note that starts linking to a moved note joins what the move must rewrite.
        drift: &|fx| fx.put("MOC.md", &format!("{MOC}- [[beta]] again\n")),
    }
    .drift_refused();
}

// r[verify bulk.move.all-or-nothing]
#[test]
fn a_move_that_fails_half_way_puts_every_note_back() {
    let fx = Fx::new();
    inbox(&fx);
    let args = json!({"dry_run": false, "moves": [
        {"from": "inbox/alpha.md", "to": "projects/alpha.md"},
        {"from": "inbox/gamma.md", "to": "later/gamma.md"},
    ]});
    let token = fx.require("bulk_move_notes", &args);
    // Between the approval and the run a file takes the name of the second destination's
    // folder: no bound note changed, but the second move cannot be made.
    fx.put("later", "a file where a folder should be");
    let before_moc = fx.get("MOC.md").unwrap();
    let refused = fx
        .call("bulk_move_notes", with_token(&args, &token))
        .unwrap_err();
    assert!(refused.message.contains("move 2 of 2"), "{refused}");
    assert!(refused.message.contains("put back"), "{refused}");
    assert_eq!(fx.get("inbox/alpha.md").unwrap(), "alpha, see [[beta]]\n");
    assert_eq!(fx.get("projects/alpha.md"), None);
    assert_eq!(fx.get("inbox/gamma.md").unwrap(), "gamma\n");
    assert_eq!(
        fx.get("MOC.md").unwrap(),
        before_moc,
        "the MOC's links are back"
    );
}

// r[verify bulk.move.no-chains]
// r[verify bulk.move.reveals]
#[test]
fn chains_repeats_and_taken_destinations_are_refused_before_asking() {
    let fx = Fx::new();
    inbox(&fx);
    let chain = json!({"moves": [
        {"from": "inbox/alpha.md", "to": "inbox/beta.md"},
        {"from": "inbox/beta.md", "to": "x/beta.md"},
    ]});
    assert_eq!(
        fx.call("bulk_move_notes", chain).unwrap_err().code,
        ErrorCode::ValidationError
    );
    let taken = json!({"dry_run": false, "moves": [
        {"from": "inbox/alpha.md", "to": "MOC.md"},
    ]});
    let refused = fx.call("bulk_move_notes", taken).unwrap_err();
    assert_eq!(refused.code, ErrorCode::NoteExists, "{refused}");
    let missing = json!({"moves": [{"from": "inbox/none.md", "to": "x/none.md"}]});
    assert_eq!(
        fx.call("bulk_move_notes", missing).unwrap_err().code,
        ErrorCode::NoteNotFound
    );
    assert_eq!(fx.requested(), 0);
    // A note the caller may not read is not moved, not even planned.
    let mut fx = Fx::new();
    inbox(&fx);
    fx.reconfigure(
        Some(tc_vault::acl::AclConfig {
            read_paths: Some(vec!["MOC.md".into(), "projects/**".into()]),
            ..Default::default()
        }),
        Vec::new(),
    );
    let hidden = json!({"moves": [{"from": "inbox/beta.md", "to": "projects/beta.md"}]});
    assert_eq!(
        fx.call("bulk_move_notes", hidden).unwrap_err().code,
        ErrorCode::AclDenied
    );
}
