//! Links never widen access (spec/vault.md `vault.path.links-judged-at-target`): a vault
//! with `public/link -> private/` (a folder link), `public/diary.md -> ../private/diary.md`
//! (a note link), `public/cfg -> .obsidian/` and `public/out -> <outside the vault>`, and a
//! caller limited by the folder ACL to `public/**`. The ACL and the conventions judge where
//! each path really leads; reads, writes and walks never reach private/, `.obsidian/` or
//! the outside through a link.
#![cfg(unix)]

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;

use tc_gate::clock::{ManualClock, SeededEntropy};
use tc_vault::acl::{Acl, AclConfig, AclOp, Scopes};
use tc_vault::conventions::{ConventionConfig, Conventions, Prior, WriteIntent, WriteKind};
use tc_vault::walk::{
    DeniedPolicy, ListEntryEncoder, NoteEntryEncoder, PageRequest, Walk, WalkFilter, fill_page,
    path_candidates, walk_candidates,
};
use tc_vault::{FolderPath, Precondition, Vault, VaultPath};

struct Fixture {
    _dir: tempfile::TempDir,
    vault: Vault,
    acl: Acl,
}

fn p(s: &str) -> VaultPath {
    VaultPath::parse(s).unwrap()
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("vault");
    let outside = dir.path().join("outside");
    for folder in ["private/deep", "public", ".obsidian"] {
        fs::create_dir_all(root.join(folder)).unwrap();
    }
    fs::create_dir_all(&outside).unwrap();
    fs::write(root.join("private/diary.md"), "secret diary").unwrap();
    fs::write(root.join("private/deep/plans.md"), "secret plans").unwrap();
    fs::write(root.join("public/plain.md"), "plain").unwrap();
    fs::write(root.join(".obsidian/app.md"), "config").unwrap();
    fs::write(outside.join("far.md"), "far away").unwrap();
    symlink(root.join("private"), root.join("public/link")).unwrap();
    symlink("../private/diary.md", root.join("public/diary.md")).unwrap();
    symlink(root.join(".obsidian"), root.join("public/cfg")).unwrap();
    symlink("../.obsidian/app.md", root.join("public/app.md")).unwrap();
    symlink(&outside, root.join("public/out")).unwrap();
    symlink(outside.join("far.md"), root.join("public/far.md")).unwrap();
    let vault = Vault::open(
        "main",
        &root,
        dir.path().join("cache/snapshots/main"),
        Arc::new(ManualClock::new(1_800_000_000_000)),
        Arc::new(SeededEntropy::new(3)),
    )
    .unwrap();
    let public = Some(vec!["public/**".to_owned()]);
    let acl = Acl::compile(&AclConfig {
        read_paths: public.clone(),
        write_paths: public.clone(),
        delete_paths: public,
        ..AclConfig::default()
    })
    .unwrap();
    Fixture {
        _dir: dir,
        vault,
        acl,
    }
}

fn none() -> Scopes {
    Scopes::granted(Vec::<String>::new())
}

fn check(f: &Fixture, op: AclOp, path: &str) -> Result<(), String> {
    f.acl
        .check_at(f.vault.root(), op, &p(path), &none())
        .map_err(|denied| denied.reason)
}

// r[verify vault.path.links-judged-at-target]
#[test]
fn the_acl_judges_where_a_folder_link_leads() {
    let f = fixture();
    // The spelling alone passes: this is what the ACL saw before.
    assert!(
        f.acl
            .check(AclOp::Read, &p("public/link/diary.md"), &none())
            .is_ok()
    );
    for op in [AclOp::Read, AclOp::Write, AclOp::Delete] {
        for path in [
            "public/link/diary.md",
            "public/link/deep/plans.md",
            // Creating under the link would create under private/.
            "public/link/new.md",
            "public/link/deep/newer/new.md",
        ] {
            let reason = check(&f, op, path).expect_err(&format!("{op} {path}"));
            assert!(
                reason.contains("leads through a link to private/"),
                "{reason}"
            );
        }
    }
    // Where no link is involved, or the link stays where the ACL allows, nothing changes.
    for op in [AclOp::Read, AclOp::Write, AclOp::Delete] {
        check(&f, op, "public/plain.md").unwrap();
        check(&f, op, "public/fresh/new.md").unwrap();
    }
    // The caller's spelling is still judged: private/ itself stays refused.
    assert!(check(&f, AclOp::Read, "private/diary.md").is_err());
}

// r[verify vault.path.links-judged-at-target]
#[test]
fn the_acl_judges_where_a_note_link_leads() {
    let f = fixture();
    for op in [AclOp::Read, AclOp::Write, AclOp::Delete] {
        let reason = check(&f, op, "public/diary.md").expect_err(&format!("{op}"));
        assert!(reason.contains("private/diary.md"), "{reason}");
    }
    assert!(
        !f.acl
            .can_read_at(f.vault.root(), &p("public/diary.md"), &none())
    );
    assert!(
        f.acl
            .can_read_at(f.vault.root(), &p("public/plain.md"), &none())
    );
}

// r[verify vault.path.links-judged-at-target]
#[test]
fn the_conventions_judge_where_a_link_leads() {
    let f = fixture();
    let conventions = Conventions::compile(&[ConventionConfig {
        glob: "private/**".to_owned(),
        forbid_writes: true,
        ..ConventionConfig::default()
    }])
    .unwrap();
    let intent = |path: &str, kind: WriteKind| WriteIntent::new(p(path), kind, b"x", Prior::Absent);
    // The spelling alone passes.
    conventions
        .judge(&intent("public/link/new.md", WriteKind::Create))
        .unwrap();
    let blocked = conventions
        .judge_at(
            f.vault.root(),
            &intent("public/link/new.md", WriteKind::Create),
        )
        .unwrap_err();
    assert_eq!(blocked.path, "public/link/new.md");
    assert!(blocked.rule.contains("private/new.md"), "{}", blocked.rule);
    for kind in [
        WriteKind::Overwrite,
        WriteKind::Copy {
            from: p("public/plain.md"),
        },
        WriteKind::Move {
            from: p("public/plain.md"),
        },
    ] {
        assert!(
            conventions
                .judge_at(f.vault.root(), &intent("public/link/diary.md", kind))
                .is_err()
        );
    }
    conventions
        .judge_at(
            f.vault.root(),
            &intent("public/plain.md", WriteKind::Overwrite),
        )
        .unwrap();
}

// r[verify vault.path.links-judged-at-target]
// r[verify vault.path.hidden]
// r[verify vault.path.invalid]
#[test]
fn links_into_hidden_folders_or_out_of_the_vault_are_path_invalid() {
    let f = fixture();
    for path in [
        "public/cfg/app.md",
        "public/app.md",
        "public/out/far.md",
        "public/far.md",
    ] {
        let err = f.vault.read(&p(path)).unwrap_err();
        assert_eq!(err.code(), "path_invalid", "read {path}: {err}");
    }
    for path in ["public/cfg/new.md", "public/out/new.md"] {
        let err = f
            .vault
            .write(&p(path), b"x", &Precondition::None)
            .unwrap_err();
        assert_eq!(err.code(), "path_invalid", "write {path}: {err}");
        let err = f
            .vault
            .rename(
                &p("public/plain.md"),
                &p(path),
                &Precondition::None,
                &Precondition::MustNotExist,
            )
            .unwrap_err();
        assert_eq!(err.code(), "path_invalid", "move to {path}: {err}");
        let err = f
            .vault
            .copy(&p("public/plain.md"), &p(path), false)
            .unwrap_err();
        assert_eq!(err.code(), "path_invalid", "copy to {path}: {err}");
    }
    for path in ["public/cfg/app.md", "public/out/far.md"] {
        assert_eq!(
            f.vault
                .delete(&p(path), &Precondition::None)
                .unwrap_err()
                .code(),
            "path_invalid",
            "delete {path}"
        );
    }
    assert!(f.vault.root().path().join(".obsidian/app.md").exists());
    let outside = f.vault.root().path().parent().unwrap().join("outside");
    assert_eq!(fs::read(outside.join("far.md")).unwrap(), b"far away");
    assert!(!outside.join("new.md").exists());
}

fn page_paths(json: &[Box<str>]) -> Vec<String> {
    json.iter()
        .map(|entry| {
            let value: serde_json::Value = serde_json::from_str(entry).unwrap();
            value["path"].as_str().unwrap().to_owned()
        })
        .collect()
}

/// One page of everything under `folder`, as `read_notes` (contents) and `list_notes`
/// (sizes) build it for the public-only caller.
fn walk_page(f: &Fixture, folder: &str, contents: bool) -> (Vec<String>, Vec<String>) {
    let folder = FolderPath::parse(folder).unwrap();
    let walk = Walk::new(f.vault.root(), &folder, true, WalkFilter::Notes, None).unwrap();
    let scopes = none();
    let request = PageRequest {
        vault: &f.vault,
        acl: &f.acl,
        scopes: &scopes,
        budget: 1 << 20,
        ceiling: 0,
        denied: DeniedPolicy::Omit,
    };
    let page = if contents {
        fill_page(&request, walk_candidates(walk), &mut NoteEntryEncoder)
    } else {
        fill_page(&request, walk_candidates(walk), &mut ListEntryEncoder)
    };
    let all_text = page
        .notes
        .iter()
        .chain(page.errors.iter())
        .map(|entry| entry.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    for secret in ["secret diary", "secret plans", "config", "far away"] {
        assert!(!all_text.contains(secret), "{secret:?} leaked: {all_text}");
    }
    (page_paths(&page.notes), page_paths(&page.errors))
}

// r[verify vault.path.links-judged-at-target]
#[test]
fn walks_never_reach_through_links() {
    let f = fixture();
    for contents in [true, false] {
        // The whole vault, and public/: only the plain note (the note link leads to private/,
        // the others out of the vault or into .obsidian/, folder links are never entered).
        let (notes, errors) = walk_page(&f, "", contents);
        assert_eq!(notes, ["public/plain.md"], "contents={contents}");
        assert!(errors.is_empty(), "{errors:?}");
        let (notes, _) = walk_page(&f, "public", contents);
        assert_eq!(notes, ["public/plain.md"]);
        // A walk that starts at the folder link lists private/ under the link's name, and
        // the ACL judges each note where it is.
        let (notes, errors) = walk_page(&f, "public/link", contents);
        assert!(notes.is_empty(), "{notes:?}");
        assert!(errors.is_empty(), "{errors:?}");
    }
    // Starting at a link into .obsidian/ or out of the vault is refused.
    for folder in ["public/cfg", "public/out"] {
        let folder = FolderPath::parse(folder).unwrap();
        let err = Walk::new(f.vault.root(), &folder, true, WalkFilter::Notes, None).unwrap_err();
        assert_eq!(err.code(), "path_invalid");
    }
}

// r[verify vault.path.links-judged-at-target]
#[test]
fn explicit_paths_through_links_are_reported_as_denied() {
    let f = fixture();
    let paths: Vec<String> = [
        "public/plain.md",
        "public/link/diary.md",
        "public/diary.md",
        "public/cfg/app.md",
    ]
    .map(str::to_owned)
    .to_vec();
    let scopes = none();
    let request = PageRequest {
        vault: &f.vault,
        acl: &f.acl,
        scopes: &scopes,
        budget: 1 << 20,
        ceiling: 0,
        denied: DeniedPolicy::Report,
    };
    let page = fill_page(&request, path_candidates(&paths, 0), &mut NoteEntryEncoder);
    assert_eq!(page_paths(&page.notes), ["public/plain.md"]);
    let codes: Vec<(String, String)> = page
        .errors
        .iter()
        .map(|entry| {
            let value: serde_json::Value = serde_json::from_str(entry).unwrap();
            (
                value["path"].as_str().unwrap().to_owned(),
                value["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        codes,
        [
            ("public/link/diary.md".to_owned(), "acl_denied".to_owned()),
            ("public/diary.md".to_owned(), "acl_denied".to_owned()),
            ("public/cfg/app.md".to_owned(), "path_invalid".to_owned()),
        ]
    );
    let text = page.errors.join("\n");
    assert!(!text.contains("secret diary"), "{text}");
}

/// The unrestricted caller still follows a link inside the vault (the decision: followed,
/// and judged at the target), and a write through a folder link lands at the target.
#[test]
fn links_inside_the_vault_are_followed() {
    let f = fixture();
    assert_eq!(
        f.vault.read(&p("public/link/diary.md")).unwrap().bytes,
        b"secret diary"
    );
    assert_eq!(
        f.vault.read(&p("public/diary.md")).unwrap().bytes,
        b"secret diary"
    );
    f.vault
        .write(&p("public/link/deep/new.md"), b"new", &Precondition::None)
        .unwrap();
    let root: &Path = f.vault.root().path();
    assert_eq!(fs::read(root.join("private/deep/new.md")).unwrap(), b"new");
    // A note that is not there, under a folder link, is simply not found.
    for path in ["public/link/missing.md", "public/link/deep/missing.md"] {
        assert_eq!(
            f.vault.read(&p(path)).unwrap_err().code(),
            "note_not_found",
            "{path}"
        );
        assert!(!f.vault.exists(&p(path)).unwrap());
    }
}
