//! Links never widen access through the note tools (spec/vault.md
//! `vault.path.links-judged-by-tools`): a vault with `public/link -> private/` and
//! `public/diary.md -> ../private/diary.md`, and a folder ACL that allows reads, writes and
//! deletes under `public/**` only. Every tool judges where the path really leads, so none
//! of them reads, lists, writes, creates, moves, copies or deletes under private/.
#![cfg(unix)]

mod tools_support;

use std::os::unix::fs::symlink;

use serde_json::{Value, json};
use tc_tools::ErrorCode;
use tc_vault::acl::AclConfig;
use tools_support::{Fx, with_token};

fn public_only() -> AclConfig {
    let public = Some(vec!["public/**".to_owned()]);
    AclConfig {
        read_paths: public.clone(),
        write_paths: public.clone(),
        delete_paths: public,
        ..AclConfig::default()
    }
}

fn fixture() -> Fx {
    let f = Fx::with(Some(public_only()), Vec::new());
    f.put("private/diary.md", "secret diary\n");
    f.put("public/plain.md", "plain\n");
    symlink(f.root.join("private"), f.root.join("public/link")).unwrap();
    symlink("../private/diary.md", f.root.join("public/diary.md")).unwrap();
    f
}

/// The call's refusal code, minting a token first when the tool asks for one (the ACL is
/// checked after the confirmation gate).
fn refusal(f: &Fx, tool: &str, args: Value) -> ErrorCode {
    match f.call(tool, args.clone()) {
        Ok(out) => panic!("{tool} {args} succeeded: {out}"),
        Err(error) if error.code == ErrorCode::ElicitRequired => {
            let token = f.mint(&error);
            match f.call(tool, with_token(&args, &token)) {
                Ok(out) => panic!("{tool} {args} succeeded with a token: {out}"),
                Err(error) => error.code,
            }
        }
        Err(error) => error.code,
    }
}

// r[verify vault.path.links-judged-by-tools]
#[test]
fn no_tool_reaches_private_notes_through_a_link() {
    let f = fixture();
    let cases = [
        (
            "write_note",
            json!({"path": "public/link/diary.md", "content": "x", "mode": "overwrite"}),
        ),
        (
            "write_note",
            json!({"path": "public/link/new.md", "content": "x", "mode": "create"}),
        ),
        (
            "write_note",
            json!({"path": "public/link/diary.md", "content": "x", "mode": "append"}),
        ),
        (
            "write_note",
            json!({"path": "public/diary.md", "content": "x", "mode": "append"}),
        ),
        (
            "move_note",
            json!({"from": "public/link/diary.md", "to": "public/moved.md"}),
        ),
        (
            "move_note",
            json!({"from": "public/plain.md", "to": "public/link/plain.md"}),
        ),
        (
            "copy_note",
            json!({"from": "public/link/diary.md", "to": "public/copy.md"}),
        ),
        (
            "copy_note",
            json!({"from": "public/diary.md", "to": "public/copy.md"}),
        ),
        (
            "copy_note",
            json!({"from": "public/plain.md", "to": "public/link/copy.md"}),
        ),
        ("delete_note", json!({"path": "public/link/diary.md"})),
        (
            "update_frontmatter",
            json!({"path": "public/link/diary.md", "operation": "merge", "data": {"a": 1}}),
        ),
    ];
    for (tool, args) in cases {
        assert_eq!(
            refusal(&f, tool, args.clone()),
            ErrorCode::AclDenied,
            "{tool} {args}"
        );
    }
    assert_eq!(f.get("private/diary.md").as_deref(), Some("secret diary\n"));
    assert!(f.get("private/new.md").is_none());
    assert!(f.get("private/plain.md").is_none());
    assert!(f.get("private/copy.md").is_none());
    assert!(f.get("public/copy.md").is_none());
    assert!(f.get("public/moved.md").is_none());
    // Reads and listings show nothing of private/.
    for args in [
        json!({"paths": ["public/link/diary.md", "public/diary.md"]}),
        json!({"folder": "public/link"}),
        json!({"folder": ""}),
    ] {
        let page = f.call("read_notes", args.clone()).unwrap();
        assert!(!page.to_string().contains("secret diary"), "{args}: {page}");
    }
    let listed = f
        .call("list_notes", json!({"folder": "public/link"}))
        .unwrap();
    assert_eq!(listed["notes"], json!([]), "{listed}");
    // Plain public notes still work.
    f.call(
        "write_note",
        json!({"path": "public/new.md", "content": "ok", "mode": "create"}),
    )
    .unwrap();
}
