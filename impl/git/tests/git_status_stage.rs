//! `git_status` and `git_stage` on real repositories made with the `git` binary, checked
//! with `git` itself.

mod support;

use serde_json::{Value, json};
use support::{Git, git, init, porcelain, repo_with_commit};
use tc_tools::ErrorCode;
use tc_tools::testing::{Fx, HOSTILE, code};
use tc_vault::acl::AclConfig;

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

fn changes(value: &Value) -> Vec<(String, String)> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["path"].as_str().unwrap().to_owned(),
                v["change"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

// r[verify git.status]
// r[verify git.paths.hidden]
// r[verify git.repo.own]
#[test]
fn status_shows_branch_head_staged_unstaged_and_untracked_as_git_does() {
    let fx = Fx::<Git>::new();
    repo_with_commit(&fx);
    fx.put("notes/b.md", "bee\n");
    fx.put("notes/gone.md", "soon gone\n");
    git(&fx.root, &["add", "notes/b.md", "notes/gone.md"]);
    git(&fx.root, &["commit", "-q", "-m", "second"]);
    fx.put("notes/a.md", "one, changed\n"); // unstaged modification
    fx.remove("notes/gone.md"); // unstaged deletion
    fx.put("notes/b.md", "bee, staged\n");
    git(&fx.root, &["add", "notes/b.md"]); // staged modification
    fx.put("notes/new.md", "new\n");
    git(&fx.root, &["add", "notes/new.md"]); // staged addition
    fx.put("notes/loose.md", "untracked\n");
    fx.put(".obsidian/workspace.json", "{}");
    fx.put(".trash/old.md", "old");

    let out = fx.call("git_status", json!({})).unwrap();
    assert_eq!(out["branch"], "main");
    assert_eq!(out["head"], support::head(&fx.root));
    assert_eq!(out["detached"], false);
    assert_eq!(
        changes(&out["staged"]),
        [
            ("notes/b.md".to_owned(), "modified".to_owned()),
            ("notes/new.md".to_owned(), "added".to_owned()),
        ]
    );
    assert_eq!(
        changes(&out["unstaged"]),
        [
            ("notes/a.md".to_owned(), "modified".to_owned()),
            ("notes/gone.md".to_owned(), "deleted".to_owned()),
        ]
    );
    assert_eq!(strings(&out["untracked"]), ["notes/loose.md"]);
    assert_eq!(out["truncated"], false);
    // .obsidian/ and .trash/ are counted, never named.
    assert_eq!(out["withheld"], 2);
    assert!(!out.to_string().contains(".obsidian"));
    // git itself agrees on every path the tool named.
    assert_eq!(
        porcelain(&fx.root)
            .into_iter()
            .filter(|l| !l.contains(".obsidian") && !l.contains(".trash"))
            .collect::<Vec<_>>(),
        [
            " D notes/gone.md",
            " M notes/a.md",
            "?? notes/loose.md",
            "A  notes/new.md",
            "M  notes/b.md",
        ]
    );
}

#[test]
fn status_of_a_fresh_repository_has_no_head_and_a_touch_is_no_change() {
    let fx = Fx::<Git>::new();
    init(&fx.root);
    fx.put("a.md", "x");
    git(&fx.root, &["add", "a.md"]);
    let out = fx.call("git_status", json!({})).unwrap();
    assert_eq!(out["head"], Value::Null);
    assert_eq!(out["branch"], "main");
    assert_eq!(changes(&out["staged"]), [("a.md".into(), "added".into())]);
    // A stat-only difference (same bytes, new mtime) is not an unstaged change.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    fx.put("a.md", "x");
    let out = fx.call("git_status", json!({})).unwrap();
    assert_eq!(out["unstaged"], json!([]));
}

// r[verify git.status.withheld]
#[test]
fn status_withholds_what_the_caller_may_not_read() {
    let fx = Fx::<Git>::with(
        Some(AclConfig {
            read_paths: Some(vec!["public/**".into()]),
            ..AclConfig::default()
        }),
        Vec::new(),
    );
    init(&fx.root);
    fx.put("public/a.md", "a");
    fx.put("private/secret-plans.md", "b");
    let out = fx.call("git_status", json!({})).unwrap();
    assert_eq!(strings(&out["untracked"]), ["public/a.md"]);
    assert_eq!(out["withheld"], 1);
    assert!(!out.to_string().contains("secret-plans"));
}

// r[verify git.status.bounded]
#[test]
fn a_status_too_big_for_one_response_is_cut_and_says_so() {
    let fx = Fx::<Git>::new();
    init(&fx.root);
    let long = "x".repeat(120);
    for i in 0..1500 {
        fx.put(&format!("inbox/{long}-{i:05}.md"), "");
    }
    let out = fx.call("git_status", json!({})).unwrap();
    assert_eq!(out["truncated"], true);
    assert_eq!(out["total"]["untracked"], 1500);
    let shown = out["untracked"].as_array().unwrap().len();
    assert!(shown > 100 && shown < 1500, "{shown}");
    let cost = tc_tools::wire_cost(out.to_string().as_bytes());
    let budget = tc_tools::PageLimits::new(tc_tools::testing::PAGE_CAP).page_budget();
    assert!(cost <= budget, "{cost} > {budget}");
}

// r[verify git.no-repo]
// r[verify git.repo.enclosing]
#[test]
fn no_repository_and_an_enclosing_one_are_git_no_repo_for_every_tool() {
    let fx = Fx::<Git>::new();
    fx.put("a.md", "a");
    for (tool, args) in [
        ("git_status", json!({})),
        ("git_stage", json!({"paths": ["a.md"]})),
        ("git_commit", json!({"message": "m"})),
    ] {
        let refusal = fx.call(tool, args).unwrap_err();
        assert_eq!(refusal.code, ErrorCode::GitNoRepo, "{tool}: {refusal}");
    }
    // A repository around the vault (the vault is a subfolder of its work tree) is not the
    // vault's own: refused, naming it, and nothing is staged in it.
    init(fx.dir.path());
    for (tool, args) in [
        ("git_status", json!({})),
        ("git_stage", json!({"paths": ["a.md"]})),
        ("git_commit", json!({"message": "m"})),
    ] {
        let refusal = fx.call(tool, args).unwrap_err();
        assert_eq!(refusal.code, ErrorCode::GitNoRepo, "{tool}: {refusal}");
        let outer = refusal.details.as_ref().unwrap()["enclosing_work_tree"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(
            std::path::Path::new(&outer).canonicalize().unwrap(),
            fx.dir.path().canonicalize().unwrap()
        );
    }
    assert!(git(fx.dir.path(), &["ls-files"]).is_empty());
    assert_eq!(fx.requested(), 0, "git_commit asked for no confirmation");
}

// r[verify git.stage]
#[test]
fn stage_writes_blobs_and_real_stat_data_as_git_add_would() {
    let fx = Fx::<Git>::new();
    repo_with_commit(&fx);
    fx.put("notes/b.md", "bee\n");
    git(&fx.root, &["add", "notes/b.md"]);
    git(&fx.root, &["commit", "-q", "-m", "b"]);
    fx.put("notes/a.md", "one, changed\n");
    fx.put("notes/new.md", "brand new\n");
    fx.put("attachments/pic.png", "\u{89}PNG fake");
    fx.remove("notes/b.md");
    let out = fx
        .call(
            "git_stage",
            json!({"paths": ["notes/a.md", "notes/new.md", "notes/b.md", "./attachments//pic.png"]}),
        )
        .unwrap();
    let staged = changes(&out["staged"]);
    assert_eq!(
        staged,
        [
            ("notes/a.md".to_owned(), "modified".to_owned()),
            ("notes/new.md".to_owned(), "added".to_owned()),
            ("notes/b.md".to_owned(), "deleted".to_owned()),
            ("attachments/pic.png".to_owned(), "added".to_owned()),
        ]
    );
    // The blob ids are git's own.
    let blob = out["staged"][0]["blob"].as_str().unwrap();
    assert_eq!(git(&fx.root, &["hash-object", "notes/a.md"]).trim(), blob);
    assert_eq!(
        porcelain(&fx.root),
        [
            "A  attachments/pic.png",
            "A  notes/new.md",
            "D  notes/b.md",
            "M  notes/a.md",
        ]
    );
    // Real stat data: git, comparing stat data alone, finds nothing to refresh.
    assert_eq!(git(&fx.root, &["diff-files", "--name-only"]), "");
    // Staging again what is staged changes nothing.
    let again = fx
        .call("git_stage", json!({"paths": ["notes/a.md"]}))
        .unwrap();
    assert_eq!(again["staged"][0]["change"], "unchanged");
}

// r[verify git.stage.paths]
#[test]
fn stage_refuses_hostile_paths_folders_and_unknown_files_and_stages_nothing() {
    let fx = Fx::<Git>::new();
    repo_with_commit(&fx);
    fx.put(".obsidian/app.json", "{}");
    fx.put("notes/ok.md", "ok");
    let outside = fx.dir.path().join("outside.md");
    std::fs::write(&outside, "outside").unwrap();
    std::os::unix::fs::symlink(&outside, fx.root.join("link.md")).unwrap();
    let mut hostile: Vec<&str> = HOSTILE
        .iter()
        .copied()
        .filter(|p| !p.ends_with(".txt"))
        .collect();
    hostile.extend([
        ".obsidian/app.json",
        ".trash/x.md",
        "link.md",
        ".GIT/config",
    ]);
    for path in hostile {
        let refusal = fx
            .call("git_stage", json!({"paths": ["notes/ok.md", path]}))
            .unwrap_err();
        assert_eq!(refusal.code, ErrorCode::PathInvalid, "{path}: {refusal}");
    }
    assert_eq!(
        code(fx.call("git_stage", json!({"paths": ["notes"]}))),
        ErrorCode::PathInvalid
    );
    assert_eq!(
        code(fx.call("git_stage", json!({"paths": ["notes/ok.md", "nope.md"]}))),
        ErrorCode::NoteNotFound
    );
    assert_eq!(
        code(fx.call("git_stage", json!({"paths": []}))),
        ErrorCode::ValidationError
    );
    // Nothing of any refused call reached the index.
    assert!(porcelain(&fx.root).iter().all(|l| l.starts_with("??")));
}

// r[verify git.stage.acl]
#[test]
fn stage_is_judged_by_the_folder_acl_for_write() {
    let fx = Fx::<Git>::with(
        Some(AclConfig {
            write_paths: Some(vec!["notes/**".into()]),
            ..AclConfig::default()
        }),
        Vec::new(),
    );
    repo_with_commit(&fx);
    fx.put("notes/b.md", "b");
    fx.put("private/p.md", "p");
    let refusal = fx
        .call(
            "git_stage",
            json!({"paths": ["notes/b.md", "private/p.md"]}),
        )
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::AclDenied, "{refusal}");
    assert_eq!(refusal.details.as_ref().unwrap()["path"], "private/p.md");
    assert!(porcelain(&fx.root).iter().all(|l| l.starts_with("??")));
    fx.call("git_stage", json!({"paths": ["notes/b.md"]}))
        .unwrap();
    assert!(porcelain(&fx.root).contains(&"A  notes/b.md".to_owned()));
}

// r[verify git.stage.git-locked]
#[test]
fn a_locked_index_is_refused_and_left_alone() {
    let fx = Fx::<Git>::new();
    repo_with_commit(&fx);
    fx.put("notes/b.md", "b");
    std::fs::write(fx.root.join(".git/index.lock"), "").unwrap();
    let refusal = fx
        .call("git_stage", json!({"paths": ["notes/b.md"]}))
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::GitLocked);
    let lock = refusal.details.as_ref().unwrap()["lock"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(lock.ends_with(".git/index.lock"), "{lock}");
    assert!(refusal.message.contains(&lock), "{}", refusal.message);
    assert!(
        fx.root.join(".git/index.lock").exists(),
        "not ours to remove"
    );
    std::fs::remove_file(fx.root.join(".git/index.lock")).unwrap();
    assert_eq!(porcelain(&fx.root), ["?? notes/b.md"]);
}

#[test]
fn staging_a_conflicted_path_resolves_it() {
    let fx = Fx::<Git>::new();
    repo_with_commit(&fx);
    support::make_conflict(&fx);
    let out = fx.call("git_status", json!({})).unwrap();
    assert_eq!(strings(&out["conflicted"]), ["notes/a.md"]);
    fx.put("notes/a.md", "resolved\n");
    fx.call("git_stage", json!({"paths": ["notes/a.md"]}))
        .unwrap();
    assert_eq!(porcelain(&fx.root), ["M  notes/a.md"]);
}

// r[verify git.stage.ignored]
#[test]
fn an_ignored_untracked_file_is_refused_as_git_add_refuses_it() {
    let fx = Fx::<Git>::new();
    repo_with_commit(&fx);
    fx.put(".gitignore", "*.secret\nprivate/\n");
    fx.put("keys.secret", "hunter2");
    fx.put("private/diary.md", "dear diary");
    fx.put("notes/ok.md", "ok");
    for path in ["keys.secret", "private/diary.md"] {
        let refusal = fx
            .call("git_stage", json!({"paths": ["notes/ok.md", path]}))
            .unwrap_err();
        assert_eq!(refusal.code, ErrorCode::InvalidInput, "{path}: {refusal}");
        assert_eq!(refusal.details.as_ref().unwrap()["reason"], "ignored");
    }
    assert!(!porcelain(&fx.root).iter().any(|l| l.starts_with('A')));
    // git agrees that they are ignored.
    assert!(
        !support::git_output(&fx.root, &["add", "keys.secret"])
            .status
            .success()
    );
    // A tracked file stays stageable even if a rule matches it now.
    fx.put(".gitignore", "notes/\n");
    fx.put("notes/a.md", "tracked, changed\n");
    fx.call("git_stage", json!({"paths": ["notes/a.md"]}))
        .unwrap();
    assert!(porcelain(&fx.root).contains(&"M  notes/a.md".to_owned()));
}

#[test]
fn staging_applies_the_clean_filters_as_git_add_does() {
    let fx = Fx::<Git>::new();
    repo_with_commit(&fx);
    git(&fx.root, &["config", "core.autocrlf", "true"]);
    fx.put("notes/crlf.md", "line one\r\nline two\r\n");
    let out = fx
        .call("git_stage", json!({"paths": ["notes/crlf.md"]}))
        .unwrap();
    let blob = out["staged"][0]["blob"].as_str().unwrap();
    // git's own clean of the file, and what the blob holds: LF line ends.
    assert_eq!(
        git(&fx.root, &["hash-object", "notes/crlf.md"]).trim(),
        blob
    );
    assert_eq!(
        git(&fx.root, &["cat-file", "-p", blob]),
        "line one\nline two\n"
    );
    assert_eq!(porcelain(&fx.root), ["A  notes/crlf.md"]);
}
