//! `recent_changes` on an indexed vault (spec/metadata.md `## Recent changes`).

mod tags_support;

use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use tags_support::{Fx, code, indexed};
use tc_tools::ErrorCode;
use tc_vault::acl::{AclConfig, ScopeRuleConfig};

/// 2026-01-01T00:00:00Z.
const BASE: u64 = 1_767_225_600;

fn touch(fx: &Fx, path: &str, secs: u64) {
    std::fs::File::options()
        .write(true)
        .open(fx.root.join(path))
        .unwrap()
        .set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(BASE + secs))
        .unwrap();
}

fn paths(out: &Value) -> Vec<String> {
    out["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["path"].as_str().unwrap().to_owned())
        .collect()
}

fn vault(acl: Option<AclConfig>) -> Fx {
    let fx = Fx::with(acl, Vec::new());
    for (path, secs) in [
        ("daily/2026-01-01.md", 10),
        ("daily/2026-01-02.md", 90_000),
        ("projects/a.md", 50_000),
        ("projects/b.md", 50_000),
        ("private/diary.md", 200_000),
        ("old.md", 0),
    ] {
        fx.put(path, "text\n");
        touch(&fx, path, secs);
    }
    fx.put("image.png", "not a note");
    touch(&fx, "image.png", 300_000);
    indexed(&fx);
    fx
}

// r[verify metadata.recent-changes]
#[test]
fn notes_come_newest_first_since_a_time_under_a_folder_without_hidden_ones() {
    let acl = AclConfig {
        rules: vec![ScopeRuleConfig {
            glob: "private/**".into(),
            scopes: vec!["read:private".into()],
        }],
        ..AclConfig::default()
    };
    let fx = vault(Some(acl));
    let reader =
        tc_tools::CallerContext::new("agent", tc_vault::acl::Scopes::granted(["read:notes"]));
    let out = fx.call_as(&reader, "recent_changes", json!({})).unwrap();
    assert_eq!(
        paths(&out),
        [
            "daily/2026-01-02.md",
            "projects/a.md",
            "projects/b.md",
            "daily/2026-01-01.md",
            "old.md"
        ],
        "notes only, the hidden one left out, equal times in path order: {out}"
    );
    assert_eq!(out["notes"][0]["modified"], "2026-01-02T01:00:00.000Z");
    assert_eq!(out["notes"][0]["size"], 5);
    let all = fx.call("recent_changes", json!({"limit": 1})).unwrap();
    assert_eq!(paths(&all), ["private/diary.md"]);
    let since = fx
        .call_as(
            &reader,
            "recent_changes",
            json!({"since": "2026-01-01T13:53:20Z"}),
        )
        .unwrap();
    assert_eq!(
        paths(&since),
        ["daily/2026-01-02.md", "projects/a.md", "projects/b.md"],
        "at or after since"
    );
    let folder = fx
        .call(
            "recent_changes",
            json!({"folder": "daily", "since": "2026-01-01"}),
        )
        .unwrap();
    assert_eq!(
        paths(&folder),
        ["daily/2026-01-02.md", "daily/2026-01-01.md"]
    );
    // An edit moves a note to the top.
    fx.put("old.md", "edited\n");
    let out = fx.call("recent_changes", json!({"limit": 1})).unwrap();
    assert_eq!(paths(&out), ["old.md"]);
}

// r[verify metadata.recent.time]
#[test]
fn since_must_be_a_time() {
    let fx = vault(None);
    for bad in [
        "yesterday",
        "2026-01-01T10:00",
        "2026-02-30",
        "2026-01-01T10:00:00+0100",
    ] {
        let error = fx
            .call("recent_changes", json!({"since": bad}))
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::ValidationError, "{bad}");
        assert_eq!(error.details.unwrap()["errors"][0]["pointer"], "/since");
    }
    let offset = fx
        .call(
            "recent_changes",
            json!({"since": "2026-01-02T02:00:00.000+01:00"}),
        )
        .unwrap();
    assert_eq!(
        paths(&offset),
        ["private/diary.md", "daily/2026-01-02.md"],
        "an offset is honoured"
    );
}

// r[verify metadata.properties.paging]
#[test]
fn limit_pages_and_the_cursor_is_bound_to_the_request() {
    let fx = vault(None);
    let mut seen = Vec::new();
    let mut page = fx.call("recent_changes", json!({"limit": 2})).unwrap();
    loop {
        assert!(paths(&page).len() <= 2);
        seen.extend(paths(&page));
        let Some(token) = page["next_cursor"].as_str() else {
            break;
        };
        page = fx
            .call("recent_changes", json!({"limit": 2, "cursor": token}))
            .unwrap();
    }
    assert_eq!(
        seen,
        [
            "private/diary.md",
            "daily/2026-01-02.md",
            "projects/a.md",
            "projects/b.md",
            "daily/2026-01-01.md",
            "old.md"
        ]
    );
    let token = fx.call("recent_changes", json!({"limit": 2})).unwrap()["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let refused = fx
        .call(
            "recent_changes",
            json!({"limit": 2, "since": "2026-01-01", "cursor": token}),
        )
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::InvalidInput);
    assert_eq!(refused.details.unwrap()["reason"], "request_mismatch");
    assert_eq!(
        code(fx.call("recent_changes", json!({"limit": 0}))),
        ErrorCode::ValidationError
    );
}
