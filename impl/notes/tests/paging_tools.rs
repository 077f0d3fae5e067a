//! `read_notes` and `list_notes` as the registry calls them: pages under the cap, the signed
//! cursor and its refusals, the ACL on every page, walks that change underneath
//! (spec/paging.md, spec/tools.md `tools.read-notes`, `tools.list-notes`, `tools.notes-only`).

mod tools_support;

use std::collections::BTreeSet;
use std::fs;
use std::ops::Deref;
use std::path::Path;

use proptest::prelude::*;
use serde_json::{Value, json};
use tc_gate::clock::SeededEntropy;
use tc_gate::cursor::{CURSOR_TTL_MS, CursorCodec};
use tc_gate::keys::ServerSecret;
use tc_notes::paging_tools::{
    LIST_NOTES, ListNotesArgs, PageOutput, PagingContext, PagingError, READ_NOTES, ReadNotesArgs,
    list_notes, position_reserve, read_notes,
};
use tc_tools::paging::RESPONSE_FRAME_BYTES;
use tc_tools::{PageLimits, wire_cost};
use tc_vault::acl::ScopeRuleConfig;
use tc_vault::{Acl, AclConfig, Scopes, Vault, content_hash};
use tools_support::TempVault;

/// The paging tools' fixture: a [`TempVault`] (which it derefs to) and the vault, ACL and
/// cursor codec the page functions are given.
struct Fixture {
    temp: TempVault,
    vault: Vault,
    acl: Acl,
    codec: CursorCodec,
}

impl Deref for Fixture {
    type Target = TempVault;

    fn deref(&self) -> &TempVault {
        &self.temp
    }
}

impl Fixture {
    fn new(files: &[(&str, &str)]) -> Self {
        let temp = TempVault::at(1_800_000_000_000);
        let vault = temp.open(temp.dir.path().join("snapshots"), 7);
        let codec = CursorCodec::new(&ServerSecret::ephemeral(&SeededEntropy::new(11)));
        let fixture = Fixture {
            temp,
            vault,
            acl: Acl::unrestricted(),
            codec,
        };
        for (path, content) in files {
            fixture.put(path, content);
        }
        fixture
    }

    fn root(&self) -> &Path {
        self.vault.root().path()
    }

    fn ctx(&self, cap: usize) -> PagingContext<'_> {
        self.ctx_with(&self.acl, cap)
    }

    /// A context whose pages hold about `json` bytes of result JSON: the governor cap that
    /// leaves that much once the text copy and the frame are counted (`governor.measure`).
    fn ctx_with<'a>(&'a self, acl: &'a Acl, json: usize) -> PagingContext<'a> {
        PagingContext {
            vault: &self.vault,
            acl,
            codec: &self.codec,
            clock: &self.clock,
            limits: PageLimits::new(json * 2 + RESPONSE_FRAME_BYTES),
        }
    }
}

fn folder_args(folder: &str) -> ReadNotesArgs {
    ReadNotesArgs {
        folder: Some(folder.to_owned()),
        ..ReadNotesArgs::default()
    }
}

fn paths_args(paths: &[&str]) -> ReadNotesArgs {
    ReadNotesArgs {
        paths: Some(paths.iter().map(|p| (*p).to_owned()).collect()),
        ..ReadNotesArgs::default()
    }
}

fn parse(page: &PageOutput) -> Value {
    let json: Value = serde_json::from_str(&page.json).unwrap();
    assert_eq!(
        json["next_cursor"],
        page.next_cursor
            .as_deref()
            .map_or(Value::Null, |c| json!(c)),
        "the cursor returned is the one in the JSON"
    );
    assert_eq!(json["notes"].as_array().unwrap().len(), page.notes);
    assert_eq!(json["errors"].as_array().unwrap().len(), page.errors);
    json
}

/// Follows `next_cursor` to the end, checking every page against the cap and for progress.
fn read_all(ctx: &PagingContext<'_>, caller: &str, args: &ReadNotesArgs) -> Vec<Value> {
    let mut args = args.clone();
    let mut pages = Vec::new();
    loop {
        let page = read_notes(ctx, caller, &Scopes::all(), &args).unwrap();
        assert!(
            wire_cost(page.json.as_bytes()) <= ctx.limits.page_budget(),
            "page costing {} bytes as sent, over the budget {}",
            wire_cost(page.json.as_bytes()),
            ctx.limits.page_budget()
        );
        let json = parse(&page);
        pages.push(json);
        match page.next_cursor {
            Some(cursor) => {
                assert!(page.notes + page.errors > 0, "every page makes progress");
                args.cursor = Some(cursor);
            }
            None => return pages,
        }
        assert!(pages.len() < 10_000, "the walk does not end");
    }
}

/// The smallest cap whose first page of `args` holds exactly `notes` notes.
fn cap_for(f: &Fixture, acl: &Acl, args: &ReadNotesArgs, notes: usize) -> usize {
    (200..20_000)
        .step_by(5)
        .find(|&cap| {
            read_notes(&f.ctx_with(acl, cap), "alice", &Scopes::all(), args)
                .is_ok_and(|page| page.notes == notes)
        })
        .unwrap()
}

fn note_paths(pages: &[Value]) -> Vec<String> {
    pages
        .iter()
        .flat_map(|p| p["notes"].as_array().unwrap().iter())
        .map(|n| n["path"].as_str().unwrap().to_owned())
        .collect()
}

fn all_notes(pages: &[Value]) -> Vec<Value> {
    pages
        .iter()
        .flat_map(|p| p["notes"].as_array().unwrap().iter().cloned())
        .collect()
}

fn all_errors(pages: &[Value]) -> Vec<Value> {
    pages
        .iter()
        .flat_map(|p| p["errors"].as_array().unwrap().iter().cloned())
        .collect()
}

fn varied_vault() -> Fixture {
    let mut files: Vec<(String, String)> = Vec::new();
    for i in 0..45 {
        let folder = match i % 5 {
            0 => String::new(),
            1 => "projects/".to_owned(),
            2 => "projects/2026/".to_owned(),
            3 => "daily/".to_owned(),
            _ => "z/deep/er/".to_owned(),
        };
        let body = "Text with [[a link]] and \"quotes\"\t\n".repeat(1 + (i * 7) % 23);
        let content = if i % 3 == 0 {
            format!("---\nstatus: draft\nindex: {i}\n---\n{body}")
        } else {
            body
        };
        files.push((format!("{folder}note-{i:02}.md"), content));
    }
    files.push(("attachments/image.png".into(), "not a note".into()));
    files.push((".obsidian/workspace.md".into(), "hidden".into()));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    Fixture::new(&refs)
}

// r[verify paging.read-notes.repeat]
// r[verify paging.read-notes.no-overflow]
// r[verify paging.read-notes.shape]
// r[verify paging.progress]
// r[verify tools.read-notes]
#[test]
fn a_paged_walk_returns_exactly_what_one_big_page_does() {
    let f = varied_vault();
    let one = read_all(&f.ctx(1_000_000), "alice", &folder_args(""));
    assert_eq!(one.len(), 1, "everything fits one page at 1 MB");
    let expected = all_notes(&one);
    assert_eq!(expected.len(), 45);
    let paths = note_paths(&one);
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted, "sorted path order");
    // The notes carry content, frontmatter and hash.
    let first = expected.iter().find(|n| n["path"] == "note-00.md").unwrap();
    let on_disk = fs::read_to_string(f.root().join("note-00.md")).unwrap();
    assert_eq!(first["content"], on_disk.as_str());
    assert_eq!(first["frontmatter"], json!({"status": "draft", "index": 0}));
    assert_eq!(
        first["content_hash"],
        content_hash(on_disk.as_bytes()).as_str()
    );
    assert_eq!(one[0]["vault"], "main");

    for cap in [1_500, 2_000, 3_333, 8_000] {
        let pages = read_all(&f.ctx(cap), "alice", &folder_args(""));
        assert!(pages.len() > 1, "cap {cap} pages");
        assert_eq!(all_notes(&pages), expected, "cap {cap}");
        assert!(all_errors(&pages).is_empty());
    }
    // A subfolder, with and without its subfolders.
    let projects = note_paths(&read_all(&f.ctx(2_000), "alice", &folder_args("projects")));
    assert!(projects.iter().all(|p| p.starts_with("projects/")));
    assert!(projects.iter().any(|p| p.starts_with("projects/2026/")));
    let flat = read_all(
        &f.ctx(2_000),
        "alice",
        &ReadNotesArgs {
            recursive: false,
            ..folder_args("projects/")
        },
    );
    let flat = note_paths(&flat);
    assert!(!flat.is_empty() && flat.iter().all(|p| !p["projects/".len()..].contains('/')));
}

// r[verify paging.cursor.bound]
// r[verify paging.cursor.refusals]
#[test]
fn a_cursor_replayed_by_another_caller_or_tool_is_foreign() {
    let f = varied_vault();
    let ctx = f.ctx(2_000);
    let page = read_notes(&ctx, "alice", &Scopes::all(), &folder_args("")).unwrap();
    let cursor = page.next_cursor.unwrap();
    let args = ReadNotesArgs {
        cursor: Some(cursor.clone()),
        ..folder_args("")
    };
    let refused = read_notes(&ctx, "mallory", &Scopes::all(), &args).unwrap_err();
    assert_eq!(refused.code(), "invalid_input");
    assert_eq!(refused.details(), json!({"reason": "foreign"}));
    // The same cursor for list_notes, same caller: another tool.
    let listed = list_notes(
        &ctx,
        "alice",
        &Scopes::all(),
        &ListNotesArgs {
            cursor: Some(cursor.clone()),
            ..ListNotesArgs::default()
        },
    )
    .unwrap_err();
    assert_eq!(listed.details()["reason"], "foreign");
    // Alice herself goes on.
    assert!(read_notes(&ctx, "alice", &Scopes::all(), &args).is_ok());
    assert_eq!((READ_NOTES, LIST_NOTES), ("read_notes", "list_notes"));
}

// r[verify paging.cursor.bound]
// r[verify paging.cursor.refusals]
#[test]
fn a_cursor_for_other_arguments_is_a_request_mismatch() {
    let f = varied_vault();
    let ctx = f.ctx(2_000);
    let cursor = read_notes(&ctx, "alice", &Scopes::all(), &folder_args("projects"))
        .unwrap()
        .next_cursor
        .unwrap();
    let with = |args: ReadNotesArgs| ReadNotesArgs {
        cursor: Some(cursor.clone()),
        ..args
    };
    for changed in [
        folder_args(""),
        folder_args("daily"),
        ReadNotesArgs {
            recursive: false,
            ..folder_args("projects")
        },
        paths_args(&["projects/note-01.md"]),
    ] {
        let refused =
            read_notes(&ctx, "alice", &Scopes::all(), &with(changed.clone())).unwrap_err();
        assert_eq!(refused.code(), "invalid_input", "{changed:?}");
        assert_eq!(
            refused.details()["reason"],
            "request_mismatch",
            "{changed:?}"
        );
    }
    // The same request spelled differently (defaults given, folder with a slash, the vault
    // named) is the same request.
    for same in [
        ReadNotesArgs {
            recursive: true,
            ..folder_args("projects/")
        },
        folder_args("./projects"),
    ] {
        assert!(
            read_notes(&ctx, "alice", &Scopes::all(), &with(same.clone())).is_ok(),
            "{same:?}"
        );
    }
    // list_notes binds its own arguments the same way.
    let list_cursor = list_notes(
        &f.ctx(300),
        "alice",
        &Scopes::all(),
        &ListNotesArgs::default(),
    )
    .unwrap()
    .next_cursor
    .unwrap();
    let refused = list_notes(
        &f.ctx(300),
        "alice",
        &Scopes::all(),
        &ListNotesArgs {
            folder: "projects".into(),
            cursor: Some(list_cursor),
            ..ListNotesArgs::default()
        },
    )
    .unwrap_err();
    assert_eq!(refused.details()["reason"], "request_mismatch");
}

// r[verify paging.cursor.expiry]
// r[verify paging.cursor.refusals]
#[test]
fn a_cursor_expires_ten_minutes_after_it_was_issued() {
    let f = varied_vault();
    let ctx = f.ctx(2_000);
    let cursor = read_notes(&ctx, "alice", &Scopes::all(), &folder_args(""))
        .unwrap()
        .next_cursor
        .unwrap();
    let args = ReadNotesArgs {
        cursor: Some(cursor),
        ..folder_args("")
    };
    f.clock.advance_ms(CURSOR_TTL_MS - 1);
    assert!(read_notes(&ctx, "alice", &Scopes::all(), &args).is_ok());
    f.clock.advance_ms(2);
    let refused = read_notes(&ctx, "alice", &Scopes::all(), &args).unwrap_err();
    assert_eq!(refused.code(), "invalid_input");
    assert_eq!(refused.details(), json!({"reason": "expired"}));
    assert_eq!(CURSOR_TTL_MS, 10 * 60 * 1000);
}

// r[verify paging.cursor.signed]
// r[verify paging.cursor.refusals]
#[test]
fn garbage_altered_or_foreign_key_cursors_are_invalid() {
    let f = varied_vault();
    let ctx = f.ctx(2_000);
    let cursor = read_notes(&ctx, "alice", &Scopes::all(), &folder_args(""))
        .unwrap()
        .next_cursor
        .unwrap();
    let mut altered = cursor.clone().into_bytes();
    let at = altered.len() / 2;
    altered[at] = if altered[at] == b'A' { b'B' } else { b'A' };
    let other_key = CursorCodec::new(&ServerSecret::ephemeral(&SeededEntropy::new(99)));
    let other_ctx = PagingContext {
        codec: &other_key,
        ..ctx
    };
    let from_other_server = read_notes(&other_ctx, "alice", &Scopes::all(), &folder_args(""))
        .unwrap()
        .next_cursor
        .unwrap();
    for bad in [
        "garbage".to_owned(),
        String::new(),
        "c1.".to_owned(),
        String::from_utf8(altered).unwrap(),
        from_other_server,
        "x".repeat(20_000),
    ] {
        let args = ReadNotesArgs {
            cursor: Some(bad.clone()),
            ..folder_args("")
        };
        let refused = read_notes(&ctx, "alice", &Scopes::all(), &args).unwrap_err();
        assert_eq!(refused.code(), "invalid_input", "{bad:.40}");
        assert_eq!(refused.details()["reason"], "invalid", "{bad:.40}");
        assert!(matches!(refused, PagingError::Cursor(_)));
    }
}

// r[verify paging.order]
#[test]
fn notes_added_or_removed_mid_walk_are_neither_skipped_nor_repeated() {
    let f = Fixture::new(&[
        ("b.md", "b"),
        ("d/one.md", "d1"),
        ("d/two.md", "d2"),
        ("f.md", "f"),
        ("h/x.md", "hx"),
        ("j.md", "j"),
    ]);
    // Pages of two notes each.
    let cap = cap_for(&f, &f.acl, &folder_args(""), 2);
    let ctx = f.ctx(cap);
    let first = read_notes(&ctx, "alice", &Scopes::all(), &folder_args("")).unwrap();
    let first_json = parse(&first);
    let first_paths = note_paths(std::slice::from_ref(&first_json));
    assert_eq!(first_paths, ["b.md", "d/one.md"]);
    // Mid-walk: before the position (a.md, d/a.md), the position itself removed
    // (d/one.md), one not yet sent removed (f.md), new ones ahead (e.md, h/y.md).
    f.put("a.md", "a");
    f.put("d/a.md", "da");
    f.remove("d/one.md");
    f.remove("f.md");
    f.put("e.md", "e");
    f.put("h/y.md", "hy");
    let rest = read_all(
        &ctx,
        "alice",
        &ReadNotesArgs {
            cursor: first.next_cursor.clone(),
            ..folder_args("")
        },
    );
    let rest_paths = note_paths(&rest);
    assert_eq!(rest_paths, ["d/two.md", "e.md", "h/x.md", "h/y.md", "j.md"]);
    let all: Vec<&String> = first_paths.iter().chain(&rest_paths).collect();
    let unique: BTreeSet<&&String> = all.iter().collect();
    assert_eq!(unique.len(), all.len(), "nothing repeated");
}

// r[verify paging.acl-per-page]
// r[verify vault.acl.list-hides]
#[test]
fn a_path_revoked_mid_walk_is_not_served() {
    let f = Fixture::new(&[
        ("a.md", "a"),
        ("b.md", "b"),
        ("private/p1.md", "p1"),
        ("private/p2.md", "p2"),
        ("z.md", "z"),
    ]);
    let open = Acl::unrestricted();
    let guarded = Acl::compile(&AclConfig {
        rules: vec![ScopeRuleConfig {
            glob: "private/**".into(),
            scopes: vec!["read:private".into()],
        }],
        ..AclConfig::default()
    })
    .unwrap();
    let cap = cap_for(&f, &open, &folder_args(""), 2);
    let plain = Scopes::granted(["read:notes"]);
    let first = read_notes(&f.ctx_with(&open, cap), "alice", &plain, &folder_args("")).unwrap();
    assert_eq!(note_paths(&[parse(&first)]), ["a.md", "b.md"]);
    // Between pages the ACL changes (a config reload): private/ now needs a scope.
    let mut args = ReadNotesArgs {
        cursor: first.next_cursor,
        ..folder_args("")
    };
    let mut served = Vec::new();
    loop {
        let page = read_notes(&f.ctx_with(&guarded, cap), "alice", &plain, &args).unwrap();
        served.extend(note_paths(&[parse(&page)]));
        match page.next_cursor {
            Some(c) => args.cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(served, ["z.md"], "left out of a folder walk, silently");
    // A caller with the scope still gets them; the scopes are judged per call too.
    let with_scope = Scopes::granted(["read:notes", "read:private"]);
    let page = read_notes(
        &f.ctx_with(&guarded, 100_000),
        "alice",
        &with_scope,
        &folder_args(""),
    )
    .unwrap();
    assert_eq!(parse(&page)["notes"].as_array().unwrap().len(), 5);
    // Explicit paths report it instead.
    let page = read_notes(
        &f.ctx_with(&guarded, 100_000),
        "alice",
        &plain,
        &paths_args(&["private/p1.md", "a.md"]),
    )
    .unwrap();
    let json = parse(&page);
    assert_eq!(json["errors"][0]["path"], "private/p1.md");
    assert_eq!(json["errors"][0]["code"], "acl_denied");
    assert_eq!(note_paths(&[json]), ["a.md"]);
    // Listing leaves out what the caller may not read.
    let listed = list_notes(
        &f.ctx_with(&guarded, 100_000),
        "alice",
        &plain,
        &ListNotesArgs::default(),
    )
    .unwrap();
    assert_eq!(note_paths(&[parse(&listed)]), ["a.md", "b.md", "z.md"]);
}

// r[verify paging.too-large]
#[test]
fn a_note_no_page_can_hold_is_a_too_large_entry_and_skipped() {
    let big = "x".repeat(6_000);
    let f = Fixture::new(&[("a.md", "a"), ("big.md", &big), ("c.md", "c")]);
    let cap = 4_000;
    let pages = read_all(&f.ctx(cap), "alice", &folder_args(""));
    assert_eq!(note_paths(&pages), ["a.md", "c.md"]);
    let errors = all_errors(&pages);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["path"], "big.md");
    assert_eq!(errors[0]["code"], "too_large");
    assert_eq!(errors[0]["details"]["size"], 6_000);
    let budget = errors[0]["details"]["budget"].as_u64().unwrap();
    assert!(budget < cap as u64 && budget > cap as u64 / 2, "{budget}");
    // One just under the budget fits (the encoding adds about 120 bytes), alone.
    let just_under = "y".repeat(budget as usize - 200);
    let f = Fixture::new(&[("a.md", "a"), ("b.md", &just_under), ("c.md", "c")]);
    let pages = read_all(&f.ctx(cap), "alice", &folder_args(""));
    assert_eq!(note_paths(&pages), ["a.md", "b.md", "c.md"]);
    assert_eq!(pages.len(), 3);
}

// r[verify paging.paths]
// r[verify tools.notes-only]
#[test]
fn explicit_paths_come_in_order_with_problems_as_entries() {
    let f = Fixture::new(&[
        ("z.md", "zed"),
        ("a.md", "ay"),
        ("img.png", "png"),
        ("folder/n.md", "n"),
    ]);
    let outside = f.root().parent().unwrap().join("outside.md");
    fs::write(&outside, "secret").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&outside, f.root().join("link.md")).unwrap();
    let requested = [
        "z.md",
        "missing.md",
        "../outside.md",
        "/etc/passwd",
        ".obsidian/app.md",
        "img.png",
        "folder",
        "a.md",
        "link.md",
        "z.md",
    ];
    let page = read_notes(
        &f.ctx(100_000),
        "alice",
        &Scopes::all(),
        &paths_args(&requested),
    )
    .unwrap();
    let json = parse(&page);
    assert_eq!(
        note_paths(std::slice::from_ref(&json)),
        ["z.md", "a.md", "z.md"]
    );
    let codes: Vec<(String, String)> = json["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_owned(),
                e["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expect = |p: &str, c: &str| (p.to_owned(), c.to_owned());
    let mut expected = vec![
        expect("missing.md", "note_not_found"),
        expect("../outside.md", "path_invalid"),
        expect("/etc/passwd", "path_invalid"),
        expect(".obsidian/app.md", "path_invalid"),
        expect("img.png", "path_invalid"),
        expect("folder", "path_invalid"),
    ];
    #[cfg(unix)]
    expected.push(expect("link.md", "path_invalid"));
    assert_eq!(codes, expected);
    assert!(!page.json.contains("secret"));
    assert!(page.next_cursor.is_none());
}

#[test]
fn explicit_paths_page_by_index() {
    let names: Vec<String> = (0..12).map(|i| format!("n{i:02}.md")).collect();
    let files: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "body text")).collect();
    let f = Fixture::new(&files);
    // Ask in reverse, with a repeat and a missing one in the middle.
    let mut requested: Vec<&str> = names.iter().rev().map(String::as_str).collect();
    requested.insert(5, "n03.md");
    requested.insert(7, "gone.md");
    let pages = read_all(&f.ctx(700), "alice", &paths_args(&requested));
    assert!(pages.len() > 2);
    let expected: Vec<&str> = requested
        .iter()
        .copied()
        .filter(|p| *p != "gone.md")
        .collect();
    assert_eq!(note_paths(&pages), expected);
    assert_eq!(all_errors(&pages)[0]["path"], "gone.md");
}

// r[verify paging.one-source]
#[test]
fn paths_and_folder_both_or_neither_are_validation_errors() {
    let f = varied_vault();
    let ctx = f.ctx(10_000);
    let both = ReadNotesArgs {
        paths: Some(vec!["a.md".into()]),
        folder: Some(String::new()),
        ..ReadNotesArgs::default()
    };
    for args in [both, ReadNotesArgs::default(), paths_args(&[])] {
        let refused = read_notes(&ctx, "alice", &Scopes::all(), &args).unwrap_err();
        assert_eq!(refused.code(), "validation_error", "{args:?}");
        assert!(refused.details()["errors"][0]["pointer"].is_string());
    }
    let long = "a/".repeat(3_000) + "n.md";
    let refused =
        read_notes(&ctx, "alice", &Scopes::all(), &paths_args(&["a.md", &long])).unwrap_err();
    assert_eq!(refused.details()["errors"][0]["pointer"], "/paths/1");
    // Arguments from JSON, as the registry takes them: unknown keys and wrong types are
    // validation errors too, and both sources or neither are refused before any page.
    let registry = tc_notes::registry().unwrap();
    let def = registry.get(READ_NOTES).unwrap();
    for bad in [
        json!({"folder": "", "depth": 2}),
        json!({"paths": "a.md"}),
        json!({"paths": []}),
        json!({"paths": ["a.md"], "folder": ""}),
        json!({}),
    ] {
        let refused = def.parse_args(&bad).unwrap_err();
        assert_eq!(refused.code, tc_tools::ErrorCode::ValidationError, "{bad}");
    }
    let parsed = def
        .parse_args(&json!({"folder": "x", "recursive": false, "cursor": null}))
        .unwrap();
    assert_eq!(parsed.canonical, json!({"folder": "x", "recursive": false}));
}

#[test]
fn a_hostile_or_missing_folder_refuses_the_call() {
    let f = varied_vault();
    let ctx = f.ctx(10_000);
    for (folder, code) in [
        ("../", "path_invalid"),
        ("/etc", "path_invalid"),
        (".obsidian", "path_invalid"),
        ("nope", "note_not_found"),
        ("note-00.md", "note_not_found"),
    ] {
        let refused = read_notes(&ctx, "alice", &Scopes::all(), &folder_args(folder)).unwrap_err();
        assert_eq!(refused.code(), code, "{folder}");
        let listed = list_notes(
            &ctx,
            "alice",
            &Scopes::all(),
            &ListNotesArgs {
                folder: folder.into(),
                ..ListNotesArgs::default()
            },
        )
        .unwrap_err();
        assert_eq!(listed.code(), code, "{folder}");
    }
}

// r[verify paging.list-notes]
// r[verify tools.list-notes]
#[test]
fn list_notes_pages_paths_and_sizes() {
    let f = varied_vault();
    let one = list_notes(
        &f.ctx(1_000_000),
        "alice",
        &Scopes::all(),
        &ListNotesArgs::default(),
    )
    .unwrap();
    let one = parse(&one);
    let entries = one["notes"].as_array().unwrap().clone();
    assert_eq!(entries.len(), 45);
    let size = fs::metadata(f.root().join("note-00.md")).unwrap().len();
    assert!(entries.contains(&json!({"path": "note-00.md", "size": size})));
    let mut args = ListNotesArgs::default();
    let mut paged = Vec::new();
    let mut pages = 0;
    loop {
        let page = list_notes(&f.ctx(400), "alice", &Scopes::all(), &args).unwrap();
        assert!(page.json.len() <= 400);
        pages += 1;
        paged.extend(parse(&page)["notes"].as_array().unwrap().iter().cloned());
        match page.next_cursor {
            Some(c) => args.cursor = Some(c),
            None => break,
        }
    }
    assert!(pages > 3);
    assert_eq!(paged, entries);
    let flat = list_notes(
        &f.ctx(100_000),
        "alice",
        &Scopes::all(),
        &ListNotesArgs {
            folder: "projects".into(),
            recursive: false,
            ..ListNotesArgs::default()
        },
    )
    .unwrap();
    let flat = note_paths(&[parse(&flat)]);
    assert!(!flat.is_empty());
    assert!(flat.iter().all(|p| p.starts_with("projects/note-")));
}

// r[verify governor.measure]
#[test]
fn the_response_frame_is_left_free_and_pages_count_the_text_copy() {
    let f = varied_vault();
    let ctx = f.ctx(3_000);
    let cap = ctx.limits.max_response_bytes;
    assert_eq!(ctx.limits.page_budget(), cap - RESPONSE_FRAME_BYTES);
    let pages = read_all(&ctx, "alice", &folder_args(""));
    assert_eq!(all_notes(&pages).len(), 45);
    // Each page as sent: the JSON, the text copy escaped (its quotes are in the frame), and
    // the frame, within the cap.
    for page in &pages {
        let text = page.to_string();
        let copy = serde_json::to_string(&text).unwrap().len() - 2;
        let sent = text.len() + copy + RESPONSE_FRAME_BYTES;
        assert!(sent <= cap, "a page of {sent} bytes as sent, over {cap}");
    }
}

/// Paths longer than the cursor room every page reserves end the page before them, so
/// the cursor still fits.
#[test]
fn long_paths_still_page_under_the_cap() {
    let segment = "s".repeat(200);
    let deep = format!("{segment}/{segment}/{segment}");
    assert!(deep.len() > position_reserve(4_000));
    assert_eq!(position_reserve(1_000_000), 4_096);
    let names: Vec<String> = (0..6)
        .flat_map(|i| {
            [
                format!("a{i}.md"),
                format!("{deep}/n{i}.md"),
                format!("m{i}.md"),
            ]
        })
        .collect();
    let files: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "b")).collect();
    let f = Fixture::new(&files);
    let mut expected = names.clone();
    expected.sort();
    for cap in (1_900..4_200).step_by(23).chain([100_000]) {
        let pages = read_all(&f.ctx(cap), "alice", &folder_args(""));
        assert_eq!(note_paths(&pages), expected, "cap {cap}");
    }
}

/// A folder the walk cannot list is one errors entry, and the walk goes on past it.
#[cfg(unix)]
// r[verify paging.walk-unlistable]
#[test]
fn an_unlistable_folder_is_reported_once_and_passed() {
    use std::os::unix::fs::PermissionsExt;
    let f = Fixture::new(&[("a.md", "a"), ("locked/in.md", "x"), ("m.md", "m")]);
    let locked = f.root().join("locked");
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
    let listable = fs::read_dir(&locked).is_ok();
    if !listable {
        for cap in [600, 100_000] {
            let pages = read_all(&f.ctx(cap), "alice", &folder_args(""));
            assert_eq!(note_paths(&pages), ["a.md", "m.md"], "cap {cap}");
            let errors = all_errors(&pages);
            assert_eq!(errors.len(), 1, "cap {cap}");
            assert_eq!(errors[0]["path"], "locked");
        }
    }
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
    // Running as root, the folder stays listable: the same walk then serves its note.
    if listable {
        let pages = read_all(&f.ctx(600), "alice", &folder_args(""));
        assert_eq!(note_paths(&pages), ["a.md", "locked/in.md", "m.md"]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    // r[verify paging.read-notes.no-overflow]
    // r[verify paging.order]
    // r[verify paging.progress]
    #[test]
    fn any_vault_at_any_cap_pages_everything_once_under_the_cap(
        files in proptest::collection::btree_map("[abc]{1,3}(/[ab]{1,2}){0,2}", 0usize..900, 1..16),
        cap in 500usize..5_000,
    ) {
        let f = Fixture::new(&[]);
        let mut written = BTreeSet::new();
        for (stem, size) in &files {
            let path = format!("{stem}.md");
            let location = f.root().join(&path);
            if fs::create_dir_all(location.parent().unwrap()).is_ok()
                && fs::write(&location, "q\"\n".repeat(*size / 3)).is_ok()
            {
                written.insert(path);
            }
        }
        let everything = read_all(&f.ctx(10_000_000), "p", &folder_args(""));
        let expected_notes = all_notes(&everything);
        prop_assert_eq!(note_paths(&everything).len(), written.len());
        let pages = read_all(&f.ctx(cap), "p", &folder_args(""));
        let served = all_notes(&pages);
        let too_large: BTreeSet<String> = all_errors(&pages)
            .iter()
            .map(|e| {
                assert_eq!(e["code"], "too_large");
                e["path"].as_str().unwrap().to_owned()
            })
            .collect();
        let fitting: Vec<Value> = expected_notes
            .into_iter()
            .filter(|n| !too_large.contains(n["path"].as_str().unwrap()))
            .collect();
        prop_assert_eq!(served, fitting);
    }
}

/// A folder walk reads its notes without resolving them again; what it serves must be
/// exactly what reading the same paths explicitly serves, links and odd bytes included.
// r[verify paging.read-notes.shape]
#[test]
fn a_folder_walk_serves_the_same_entries_as_explicit_paths() {
    let f = varied_vault();
    fs::write(f.root().join("bytes.md"), b"not \xff utf-8 \"q\"\n").unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(f.root().join("note-00.md"), f.root().join("alias.md")).unwrap();
        let outside = f.root().parent().unwrap().join("outside.md");
        fs::write(&outside, "secret outside").unwrap();
        std::os::unix::fs::symlink(&outside, f.root().join("escape.md")).unwrap();
    }
    let walked = all_notes(&read_all(&f.ctx(1_000_000), "alice", &folder_args("")));
    let paths: Vec<String> = walked
        .iter()
        .map(|n| n["path"].as_str().unwrap().to_owned())
        .collect();
    #[cfg(unix)]
    assert!(paths.contains(&"alias.md".to_owned()));
    assert!(
        !paths.contains(&"bytes.md".to_owned()),
        "not UTF-8: an error, not a note"
    );
    assert!(
        !paths.contains(&"escape.md".to_owned()),
        "a link out is never walked"
    );
    assert!(!walked.iter().any(|n| n["content"] == "secret outside"));
    let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
    let explicit = all_notes(&read_all(&f.ctx(1_000_000), "alice", &paths_args(&refs)));
    assert_eq!(walked, explicit);
    assert!(!walked.iter().any(|n| {
        n["content"]
            .as_str()
            .is_some_and(|c| c.contains('\u{fffd}'))
    }));
}
