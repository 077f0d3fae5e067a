//! `ocr_bulk` through the standard scenarios of a gated tool (spec/drift.md, spec/release.md):
//! approve then replay, drift (a file replaced; a file added under root), and a folder-ACL
//! refusal after the gate that gives the token back. The conventions scenario does not
//! apply: ocr_bulk writes nothing, so no convention can refuse it.

mod support;

use serde_json::json;
use support::*;
use tc_tools::ErrorCode;

fn cached(n: usize) -> impl Fn(&Fx) {
    move |_fx: &Fx| assert_eq!(cache().len().unwrap(), n, "results cached")
}

fn setup(fx: &Fx) {
    put_bytes(
        fx,
        "att/one.pdf",
        &pdf(&[Page::Text(&["first attachment"])]),
    );
    put_bytes(
        fx,
        "att/two.pdf",
        &pdf(&[Page::Text(&["second attachment"])]),
    );
}

// r[verify drift.bind.ocr-bulk]
#[test]
fn a_file_replaced_between_request_and_redemption_is_drift() {
    let applied = cached(1);
    let untouched = cached(0);
    Scenario {
        tool: "ocr_bulk",
        args: json!({"paths": ["att/one.pdf"]}),
        setup: &setup,
        applied: &applied,
        untouched: &untouched,
        drift: &|fx: &Fx| put_bytes(fx, "att/one.pdf", &pdf(&[Page::Text(&["replaced"])])),
    }
    .drift_refused();
}

// r[verify drift.bind.ocr-bulk]
#[test]
fn a_file_added_under_root_is_drift() {
    let applied = cached(2);
    let untouched = cached(0);
    let scenario = Scenario {
        tool: "ocr_bulk",
        args: json!({"root": "att"}),
        setup: &setup,
        applied: &applied,
        untouched: &untouched,
        drift: &|fx: &Fx| put_bytes(fx, "att/sub/three.png", &text_png(&["new"])),
    };
    scenario.drift_refused();
    scenario.approve_then_replay();
}

// r[verify drift.bind.ocr-bulk]
#[test]
fn what_is_not_a_candidate_is_not_drift() {
    let fx = Fx::new();
    setup(&fx);
    let args = json!({"root": "att", "extensions": [".pdf"]});
    let token = fx.require("ocr_bulk", &args);
    // A note, a file of another extension and a hidden file under root, and a PDF elsewhere.
    fx.put("att/readme.md", "# not an attachment");
    put_bytes(&fx, "att/photo.png", &text_png(&["x"]));
    put_bytes(&fx, "att/.cache.pdf", b"hidden");
    put_bytes(&fx, "other/four.pdf", &pdf(&[Page::Text(&["elsewhere"])]));
    let result = fx.call("ocr_bulk", with_token(&args, &token)).unwrap();
    assert_eq!(result["read"], 2, "{result}");
}

// r[verify ocr.candidates.paths]
#[test]
fn a_named_file_removed_is_refused_before_the_gate_and_the_token_kept() {
    let fx = Fx::new();
    setup(&fx);
    let args = json!({"paths": ["att/one.pdf", "att/two.pdf"]});
    let token = fx.require("ocr_bulk", &args);
    let two = std::fs::read(fx.root.join("att/two.pdf")).unwrap();
    std::fs::remove_file(fx.root.join("att/two.pdf")).unwrap();
    let error = fx.call("ocr_bulk", with_token(&args, &token)).unwrap_err();
    assert_eq!(error.code, ErrorCode::NoteNotFound, "{error}");
    // Refused before the gate: the token was not spent, and the same files redeem it.
    put_bytes(&fx, "att/two.pdf", &two);
    let result = fx.call("ocr_bulk", with_token(&args, &token)).unwrap();
    assert_eq!(result["read"], 2);
}

// r[verify drift.bind.ocr-bulk]
#[test]
fn a_file_removed_under_root_is_drift() {
    let fx = Fx::new();
    setup(&fx);
    let args = json!({"root": "att"});
    let token = fx.require("ocr_bulk", &args);
    std::fs::remove_file(fx.root.join("att/two.pdf")).unwrap();
    let error = fx.call("ocr_bulk", with_token(&args, &token)).unwrap_err();
    assert_eq!(error.code, ErrorCode::ReplayDrift, "{error}");
}

#[test]
fn approve_then_replay_with_paths() {
    let applied = cached(2);
    let untouched = cached(0);
    Scenario {
        tool: "ocr_bulk",
        args: json!({"paths": ["att/one.pdf", "att/two.pdf"]}),
        setup: &setup,
        applied: &applied,
        untouched: &untouched,
        drift: &|_fx: &Fx| {},
    }
    .approve_then_replay();
}

// r[verify ocr.candidates.acl]
#[test]
fn an_explicit_path_the_acl_hides_is_refused_after_the_gate_and_the_token_given_back() {
    let applied = cached(1);
    let untouched = cached(0);
    Scenario {
        tool: "ocr_bulk",
        args: json!({"paths": ["att/one.pdf"]}),
        setup: &setup,
        applied: &applied,
        untouched: &untouched,
        drift: &|_fx: &Fx| {},
    }
    .acl_releases(tc_vault::acl::AclConfig {
        read_paths: Some(vec!["elsewhere/**".into()]),
        ..Default::default()
    });
}
