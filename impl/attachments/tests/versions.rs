//! list_snapshots and read_snapshot: newest first, paged, judged by the folder ACL as their
//! paths are (spec/versions.md).

use serde_json::{Value, json};
use tc_tools::ErrorCode;
use tc_tools::testing::{Fx as Fixture, Tools, code};
use tc_vault::VaultPath;
use tc_vault::acl::AclConfig;
use tc_vault::vault::Precondition;

struct VersionTools;

impl Tools for VersionTools {
    fn registry() -> tc_tools::Registry {
        let mut registry = tc_tools::Registry::new();
        tc_attachments::register(&mut registry).unwrap();
        registry
    }
}

type Fx = Fixture<VersionTools>;

/// Writes `versions` one after another at `path` through the vault, each keeping the one
/// before, a second apart.
fn versions(fx: &Fx, path: &str, versions: &[&str]) {
    let vault = &fx.pipeline.vault("main").unwrap().vault;
    let path = VaultPath::parse(path).unwrap();
    for content in versions {
        vault
            .write_keeping(&path, content.as_bytes(), &Precondition::None)
            .unwrap();
        fx.clock.advance_ms(1_000);
    }
}

fn listed(page: &Value) -> Vec<(String, String)> {
    page["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["path"].as_str().unwrap().to_owned(),
                s["kind"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

// r[verify versions.list]
#[test]
fn snapshots_list_newest_first_in_pages() {
    let fx = Fx::new();
    versions(&fx, "a.md", &["a0", "a1", "a2"]);
    versions(&fx, "b.md", &["b0", "b1"]);
    let vault = &fx.pipeline.vault("main").unwrap().vault;
    vault
        .snapshot_and_delete(&VaultPath::parse("b.md").unwrap(), &Precondition::None)
        .unwrap();
    let all = fx.call("list_snapshots", json!({})).unwrap();
    assert_eq!(
        listed(&all),
        [
            ("b.md".into(), "deleted".into()),
            ("b.md".into(), "replaced".into()),
            ("a.md".into(), "replaced".into()),
            ("a.md".into(), "replaced".into()),
        ]
    );
    assert_eq!(all["next_cursor"], Value::Null);
    let first = &all["snapshots"][0];
    assert_eq!(first["size"], 2);
    assert!(first["created"].as_str().unwrap().ends_with('Z'), "{first}");
    let only_a = fx.call("list_snapshots", json!({"path": "a.md"})).unwrap();
    assert_eq!(listed(&only_a).len(), 2);
    // Page by page under a small budget, the same snapshots in the same order.
    let mut pages = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let mut args = json!({"max_bytes": 1024});
        if !cursor.is_null() {
            args["cursor"] = cursor.clone();
        }
        let page = fx.call("list_snapshots", args).unwrap();
        pages.extend(listed(&page));
        cursor = page["next_cursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(pages, listed(&all));
    // A cursor is bound to its request.
    let page = fx
        .call("list_snapshots", json!({"max_bytes": 1024}))
        .unwrap();
    if let Some(next) = page["next_cursor"].as_str() {
        assert_eq!(
            code(fx.call("list_snapshots", json!({"path": "a.md", "cursor": next}))),
            ErrorCode::InvalidInput
        );
    }
}

// r[verify versions.read]
#[test]
fn a_snapshot_reads_back_with_its_content() {
    let fx = Fx::new();
    versions(&fx, "notes/a.md", &["first\n", "second\n"]);
    let page = fx.call("list_snapshots", json!({})).unwrap();
    let id = page["snapshots"][0]["snapshot_id"].as_str().unwrap();
    let read = fx
        .call("read_snapshot", json!({"snapshot_id": id}))
        .unwrap();
    assert_eq!(read["content"], "first\n");
    assert_eq!(read["path"], "notes/a.md");
    assert_eq!(read["kind"], "replaced");
    assert_eq!(read["size"], 6);
    assert_eq!(
        read["content_hash"],
        tc_vault::vault::content_hash(b"first\n")
    );
    for bad in ["../../etc/passwd", "1800000000000-0011223344556677", "x"] {
        assert_eq!(
            code(fx.call("read_snapshot", json!({"snapshot_id": bad}))),
            ErrorCode::SnapshotNotFound,
            "{bad}"
        );
    }
    // Bytes that are not text come back as metadata only.
    let vault = &fx.pipeline.vault("main").unwrap().vault;
    std::fs::write(vault.root().path().join("bin.dat"), [0xff, 0xfe]).unwrap();
    let kept = vault
        .write_keeping(
            &VaultPath::parse("bin.dat").unwrap(),
            b"text",
            &Precondition::None,
        )
        .unwrap()
        .kept
        .unwrap();
    let read = fx
        .call("read_snapshot", json!({"snapshot_id": kept.id.as_str()}))
        .unwrap();
    assert_eq!(read["content"], Value::Null);
    assert_eq!(read["size"], 2);
}

// r[verify versions.acl]
#[test]
fn snapshots_of_unreadable_paths_do_not_exist_for_the_caller() {
    let mut fx = Fx::new();
    versions(&fx, "private/secret.md", &["s0", "s1"]);
    versions(&fx, "open/note.md", &["o0", "o1"]);
    let secret = fx.call("list_snapshots", json!({})).unwrap()["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["path"] == "private/secret.md")
        .unwrap()["snapshot_id"]
        .as_str()
        .unwrap()
        .to_owned();
    fx.reconfigure(
        Some(AclConfig {
            read_paths: Some(vec!["open/**".into()]),
            ..AclConfig::default()
        }),
        Vec::new(),
    );
    let page = fx.call("list_snapshots", json!({})).unwrap();
    assert_eq!(listed(&page), [("open/note.md".into(), "replaced".into())]);
    assert_eq!(
        code(fx.call("list_snapshots", json!({"path": "private/secret.md"}))),
        ErrorCode::AclDenied
    );
    assert_eq!(
        code(fx.call("read_snapshot", json!({"snapshot_id": secret}))),
        ErrorCode::SnapshotNotFound
    );
    assert_eq!(
        code(fx.call("list_snapshots", json!({"path": ".obsidian/app.json"}))),
        ErrorCode::PathInvalid
    );
}

#[test]
fn the_version_tools_list_in_under_a_thousand_bytes_each() {
    let registry = VersionTools::registry();
    let listed = serde_json::to_value(registry.list()).unwrap();
    let versions = ["list_snapshots", "read_snapshot"];
    for tool in listed.as_array().unwrap() {
        if !versions.contains(&tool["name"].as_str().unwrap()) {
            continue;
        }
        let bytes = serde_json::to_vec(tool).unwrap().len();
        println!("{}: {bytes} bytes", tool["name"]);
        assert!(bytes <= 1000, "{}: {bytes} bytes", tool["name"]);
    }
}
