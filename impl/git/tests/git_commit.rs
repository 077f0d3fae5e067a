//! `git_commit` through the gate: the standard scenarios, its binding (HEAD and the index
//! entries, nothing of stat data), HEAD moving, and the refusals before the gate; on real
//! repositories, checked with `git cat-file` and `git log`.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use support::{Git, commit_args, git, head, init, porcelain, repo_with_commit};
use tc_tools::ErrorCode;
use tc_tools::testing::{Fx, Scenario, deny_write_all, with_token};

const MESSAGE: &str = "Vault notes of today\n\nWritten by the agent.";

static EDITS: AtomicUsize = AtomicUsize::new(0);

/// A repository with one commit and a fresh change to notes/a.md staged.
fn staged_change(fx: &Fx<Git>) {
    if !fx.root.join(".git").exists() {
        repo_with_commit(fx);
    }
    let n = EDITS.fetch_add(1, Ordering::SeqCst);
    fx.put("notes/a.md", &format!("edit {n}\n"));
    git(&fx.root, &["add", "notes/a.md"]);
}

fn last_subject(fx: &Fx<Git>) -> String {
    git(&fx.root, &["log", "-1", "--format=%s"])
        .trim()
        .to_owned()
}

fn scenario() -> Scenario<'static, Git> {
    Scenario {
        tool: "git_commit",
        args: commit_args(MESSAGE),
        setup: &staged_change,
        applied: &|fx| {
            assert_eq!(last_subject(fx), "Vault notes of today");
            assert_eq!(porcelain(&fx.root), Vec::<String>::new());
        },
        untouched: &|fx| {
            assert_eq!(last_subject(fx), "first");
            assert_eq!(porcelain(&fx.root), ["M  notes/a.md"]);
        },
        // `git add` of a changed file: a new blob id in the index.
        drift: &|fx| {
            fx.put("notes/a.md", "changed again\n");
            git(&fx.root, &["add", "notes/a.md"]);
        },
    }
}

// r[verify git.commit]
#[test]
fn approve_then_replay() {
    scenario().approve_then_replay();
}

// r[verify drift.bind.git-commit]
#[test]
fn git_add_of_a_changed_file_is_drift() {
    scenario().drift_refused();
}

// r[verify git.commit.acl]
#[test]
fn an_acl_refusal_after_the_gate_gives_the_token_back() {
    scenario().acl_releases(deny_write_all());
}

// r[verify git.commit.binding]
// r[verify drift.bind.git-commit]
#[test]
fn a_stat_only_refresh_is_not_drift() {
    let fx = Fx::<Git>::new();
    staged_change(&fx);
    let token = fx.require("git_commit", &commit_args(MESSAGE));
    // touch + update-index --refresh: new stat data in the index, same entries.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let bytes = std::fs::read(fx.root.join("notes/a.md")).unwrap();
    std::fs::write(fx.root.join("notes/a.md"), bytes).unwrap();
    let index_before = std::fs::read(fx.root.join(".git/index")).unwrap();
    git(&fx.root, &["update-index", "--refresh"]);
    let index_after = std::fs::read(fx.root.join(".git/index")).unwrap();
    assert_ne!(
        index_before, index_after,
        "the refresh rewrote the stat data"
    );
    let out = fx
        .call("git_commit", with_token(&commit_args(MESSAGE), &token))
        .unwrap();
    assert_eq!(out["commit"], head(&fx.root));
}

#[test]
fn a_branch_switch_to_the_same_commit_is_drift() {
    let fx = Fx::<Git>::new();
    staged_change(&fx);
    let token = fx.require("git_commit", &commit_args(MESSAGE));
    git(&fx.root, &["checkout", "-q", "-b", "elsewhere"]);
    let refusal = fx
        .call("git_commit", with_token(&commit_args(MESSAGE), &token))
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::ReplayDrift, "{refusal}");
    assert_eq!(last_subject(&fx), "first");
}

// r[verify git.commit.exact]
#[test]
fn the_commit_holds_exactly_what_was_staged() {
    let fx = Fx::<Git>::new();
    staged_change(&fx);
    let staged = fx.get("notes/a.md").unwrap();
    fx.put("notes/a.md", "not staged\n");
    fx.put("notes/loose.md", "untracked\n");
    let token = fx.require("git_commit", &commit_args(MESSAGE));
    let out = fx
        .call("git_commit", with_token(&commit_args(MESSAGE), &token))
        .unwrap();
    let commit = out["commit"].as_str().unwrap();
    assert_eq!(git(&fx.root, &["show", "HEAD:notes/a.md"]), staged);
    assert_eq!(
        git(&fx.root, &["ls-tree", "-r", "--name-only", "HEAD"]),
        "notes/a.md\n"
    );
    // The commit object git reads: our tree, our parent, the message, the repository's
    // identity.
    let raw = git(&fx.root, &["cat-file", "-p", commit]);
    assert!(raw.contains(&format!("tree {}", out["tree"].as_str().unwrap())));
    assert!(raw.contains(&format!("parent {}", out["parent"].as_str().unwrap())));
    assert!(raw.contains("author Vault Tester <tester@example.invalid>"));
    assert!(raw.contains("committer Vault Tester <tester@example.invalid>"));
    assert!(raw.ends_with(&format!("{MESSAGE}\n")) || raw.ends_with(MESSAGE));
    assert_eq!(out["branch"], "main");
    assert_eq!(git(&fx.root, &["rev-parse", "main"]).trim(), commit);
    // The tree is the one git would write from the index.
    assert_eq!(
        git(&fx.root, &["write-tree"]).trim(),
        out["tree"].as_str().unwrap()
    );
    assert_eq!(git(&fx.root, &["fsck", "--no-progress"]), "");
    assert_eq!(porcelain(&fx.root), [" M notes/a.md", "?? notes/loose.md"]);
}

#[test]
fn the_first_commit_of_a_fresh_repository_has_no_parent() {
    let fx = Fx::<Git>::new();
    init(&fx.root);
    fx.put("a.md", "first note\n");
    git(&fx.root, &["add", "a.md"]);
    let token = fx.require("git_commit", &commit_args("root"));
    let out = fx
        .call("git_commit", with_token(&commit_args("root"), &token))
        .unwrap();
    assert_eq!(out["parent"], serde_json::Value::Null);
    assert_eq!(git(&fx.root, &["rev-list", "--count", "HEAD"]).trim(), "1");
    assert_eq!(git(&fx.root, &["log", "--format=%s"]).trim(), "root");
}

// r[verify git.commit.head-moved]
#[test]
fn head_moved_after_the_drift_check_is_git_head_moved_and_commits_nothing() {
    let fx = Fx::<Git>::new();
    staged_change(&fx);
    // What the approval covers, taken as the pipeline takes it.
    let prepared = fx
        .pipeline
        .prepare(
            &tc_tools::testing::caller(),
            "git_commit",
            &commit_args(MESSAGE),
        )
        .unwrap();
    let approved_fp = prepared.state_fp().clone();
    let repo = tc_git::repo::open(&fx.root, &support::OPTIONS).unwrap();
    let plan = tc_git::commit::Plan {
        head: tc_git::repo::head(&repo).unwrap(),
        changes: Vec::new(),
    };
    // Someone commits meanwhile.
    git(&fx.root, &["commit", "-q", "-m", "by someone else"]);
    let moved = head(&fx.root);
    let repo = tc_git::repo::open(&fx.root, &support::OPTIONS).unwrap();
    let refusal = tc_git::commit::commit_approved(&repo, &approved_fp, &plan, MESSAGE).unwrap_err();
    assert_eq!(refusal.code, ErrorCode::GitHeadMoved, "{refusal}");
    assert_eq!(head(&fx.root), moved, "nothing committed on the new HEAD");
    assert_eq!(last_subject(&fx), "by someone else");
}

#[test]
fn head_moved_before_the_redemption_is_drift_and_nothing_is_committed() {
    let fx = Fx::<Git>::new();
    staged_change(&fx);
    let token = fx.require("git_commit", &commit_args(MESSAGE));
    // HEAD moves to a new commit of the same tree; the index (still staged) is untouched.
    let moved = git(
        &fx.root,
        &["commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "moved"],
    );
    git(&fx.root, &["update-ref", "refs/heads/main", moved.trim()]);
    let refusal = fx
        .call("git_commit", with_token(&commit_args(MESSAGE), &token))
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::ReplayDrift, "{refusal}");
    assert_eq!(last_subject(&fx), "moved");
}

// r[verify git.commit.locked]
#[test]
fn a_lock_left_in_the_repository_is_git_locked_before_the_gate() {
    for lock in [
        ".git/HEAD.lock",
        ".git/index.lock",
        ".git/refs/heads/main.lock",
    ] {
        let fx = Fx::<Git>::new();
        staged_change(&fx);
        // What a git process that crashed leaves behind.
        std::fs::write(fx.root.join(lock), "").unwrap();
        let refusal = fx.call("git_commit", commit_args(MESSAGE)).unwrap_err();
        assert_eq!(refusal.code, ErrorCode::GitLocked, "{lock}: {refusal}");
        assert!(refusal.message.contains(lock), "{lock}: {refusal}");
        let recovery = refusal.to_structured()["recovery"]["instruction"].to_string();
        assert!(
            recovery.contains("if no git process is running") && recovery.contains(lock),
            "{recovery}"
        );
        let named = refusal.details.as_ref().unwrap()["lock"].as_str().unwrap();
        assert!(named.ends_with(lock), "{named}");
        assert_eq!(fx.requested(), 0, "{lock}: no confirmation is asked for");
        assert_eq!(last_subject(&fx), "first");
        // Once the stale lock is removed, the commit goes through.
        std::fs::remove_file(fx.root.join(lock)).unwrap();
        let token = fx.require("git_commit", &commit_args(MESSAGE));
        fx.call("git_commit", with_token(&commit_args(MESSAGE), &token))
            .unwrap_or_else(|e| panic!("{lock}: {e}"));
        assert_eq!(last_subject(&fx), "Vault notes of today");
    }
}

// r[verify git.commit.locked]
#[test]
fn a_lock_in_a_separate_git_dir_is_found_there() {
    let fx = Fx::<Git>::new();
    let outside = tempfile::tempdir().unwrap();
    let git_dir = outside.path().join("vault.git");
    git(
        &fx.root,
        &[
            "init",
            "-q",
            "-b",
            "main",
            "--separate-git-dir",
            git_dir.to_str().unwrap(),
        ],
    );
    git(&fx.root, &["config", "user.name", "Vault Tester"]);
    git(
        &fx.root,
        &["config", "user.email", "tester@example.invalid"],
    );
    fx.put("notes/a.md", "one\n");
    git(&fx.root, &["add", "notes/a.md"]);
    std::fs::write(git_dir.join("HEAD.lock"), "").unwrap();
    let refusal = fx.call("git_commit", commit_args(MESSAGE)).unwrap_err();
    assert_eq!(refusal.code, ErrorCode::GitLocked, "{refusal}");
    assert!(
        refusal
            .message
            .contains(&git_dir.join("HEAD.lock").display().to_string()),
        "{refusal}"
    );
    assert_eq!(fx.requested(), 0);
}

// r[verify git.commit.locked]
#[test]
fn a_lock_present_at_the_redemption_spends_no_token() {
    let fx = Fx::<Git>::new();
    staged_change(&fx);
    let token = fx.require("git_commit", &commit_args(MESSAGE));
    std::fs::write(fx.root.join(".git/HEAD.lock"), "").unwrap();
    // The precheck runs again on the approved call, before the token is redeemed.
    let refusal = fx
        .call("git_commit", with_token(&commit_args(MESSAGE), &token))
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::GitLocked, "{refusal}");
    std::fs::remove_file(fx.root.join(".git/HEAD.lock")).unwrap();
    fx.call("git_commit", with_token(&commit_args(MESSAGE), &token))
        .unwrap_or_else(|e| panic!("the same token commits once the lock is gone: {e}"));
    assert_eq!(last_subject(&fx), "Vault notes of today");
}

// r[verify git.commit.locked-after-approval]
#[test]
fn a_lock_taken_between_the_precheck_and_the_handler_is_git_locked_and_the_token_stays_spent() {
    for lock in [
        ".git/HEAD.lock",
        ".git/index.lock",
        ".git/refs/heads/main.lock",
    ] {
        let fx = Fx::<Git>::new();
        staged_change(&fx);
        let token = fx.require("git_commit", &commit_args(MESSAGE));
        let args = with_token(&commit_args(MESSAGE), &token);
        let prepared = fx
            .pipeline
            .prepare(&tc_tools::testing::caller(), "git_commit", &args)
            .unwrap();
        // Another git process takes its lock after the precheck passed.
        std::fs::write(fx.root.join(lock), "").unwrap();
        let refusal = fx
            .pipeline
            .execute(
                &prepared,
                prepared.token_approval(),
                &tc_tools::CallControl::default(),
            )
            .unwrap_err();
        assert_eq!(refusal.code, ErrorCode::GitLocked, "{lock}: {refusal}");
        assert!(refusal.message.contains(lock), "{refusal}");
        assert!(refusal.message.contains("spent"), "{refusal}");
        assert_eq!(last_subject(&fx), "first", "nothing committed");
        assert_eq!(porcelain(&fx.root), ["M  notes/a.md"]);
        // An error the handler raised itself: the token is not given back.
        assert_eq!(fx.released(), 0);
        std::fs::remove_file(fx.root.join(lock)).unwrap();
        let again = fx.call("git_commit", args).unwrap_err();
        assert_eq!(again.code, ErrorCode::ElicitRequired, "{again}");
        assert_eq!(again.details.as_ref().unwrap()["token_rejected"], "spent");
    }
}

// r[verify git.commit.conflicted]
#[test]
fn a_conflicted_index_is_refused_before_the_gate() {
    let fx = Fx::<Git>::new();
    repo_with_commit(&fx);
    support::make_conflict(&fx);
    let refusal = fx.call("git_commit", commit_args(MESSAGE)).unwrap_err();
    assert_eq!(refusal.code, ErrorCode::InvalidInput, "{refusal}");
    let details = refusal.details.as_ref().unwrap();
    assert_eq!(details["reason"], "conflicted_index");
    assert_eq!(details["paths"], json!(["notes/a.md"]));
    assert_eq!(fx.requested(), 0);
}

// r[verify git.commit.nothing-staged]
#[test]
fn nothing_staged_is_refused_before_the_gate() {
    let fx = Fx::<Git>::new();
    repo_with_commit(&fx);
    fx.put("notes/a.md", "changed but not staged\n");
    let refusal = fx.call("git_commit", commit_args(MESSAGE)).unwrap_err();
    assert_eq!(
        refusal.details.as_ref().unwrap()["reason"],
        "nothing_staged"
    );
    assert_eq!(fx.requested(), 0);
}

// r[verify git.commit.identity]
#[test]
fn a_missing_identity_names_the_key() {
    let fx = Fx::<Git>::new();
    repo_with_commit(&fx);
    git(&fx.root, &["config", "--unset", "user.email"]);
    staged_change(&fx);
    let refusal = fx.call("git_commit", commit_args(MESSAGE)).unwrap_err();
    assert_eq!(refusal.code, ErrorCode::InvalidInput, "{refusal}");
    assert_eq!(refusal.details.as_ref().unwrap()["key"], "user.email");
    assert!(refusal.message.contains("user.email"));
    git(&fx.root, &["config", "--unset", "user.name"]);
    let refusal = fx.call("git_commit", commit_args(MESSAGE)).unwrap_err();
    assert_eq!(refusal.details.as_ref().unwrap()["key"], "user.name");
    assert_eq!(fx.requested(), 0);
}

// r[verify git.commit.summary]
#[test]
fn the_summary_names_branch_head_changes_and_message() {
    let fx = Fx::<Git>::new();
    staged_change(&fx);
    fx.put("notes/new.md", "n");
    git(&fx.root, &["add", "notes/new.md"]);
    let prepared = fx
        .pipeline
        .prepare(
            &tc_tools::testing::caller(),
            "git_commit",
            &commit_args(MESSAGE),
        )
        .unwrap();
    let text = fx.pipeline.summary(&prepared);
    let head = head(&fx.root);
    assert!(text.contains(&format!("main @ {head}")), "{text}");
    assert!(text.contains("target: notes/a.md (modified)"), "{text}");
    assert!(text.contains("target: notes/new.md (added)"), "{text}");
    assert!(text.contains("message: Vault notes of today"), "{text}");
    // Many staged changes: twenty named, the rest counted.
    for i in 0..30 {
        fx.put(&format!("bulk/{i:02}.md"), "b");
    }
    git(&fx.root, &["add", "bulk"]);
    let prepared = fx
        .pipeline
        .prepare(
            &tc_tools::testing::caller(),
            "git_commit",
            &commit_args(MESSAGE),
        )
        .unwrap();
    let text = fx.pipeline.summary(&prepared);
    assert!(text.contains("[… 12 more staged changes]"), "{text}");
}

// r[verify drift.residual.remote-git]
#[test]
fn a_vault_with_no_repository_binds_nothing_and_commits_nothing() {
    let fx = Fx::<Git>::new();
    fx.put("a.md", "a");
    let refusal = fx.call("git_commit", commit_args(MESSAGE)).unwrap_err();
    assert_eq!(refusal.code, ErrorCode::GitNoRepo);
    assert_eq!(fx.requested(), 0, "no confirmation for an empty binding");
    assert!(tc_git::binding::no_repository().is_none());
    // A repository that disappears after the approval: the call is refused before the
    // token is looked at, and the token still works once the repository is back.
    staged_change(&fx);
    let token = fx.require("git_commit", &commit_args(MESSAGE));
    std::fs::rename(fx.root.join(".git"), fx.dir.path().join("git-away")).unwrap();
    let refusal = fx
        .call("git_commit", with_token(&commit_args(MESSAGE), &token))
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::GitNoRepo);
    std::fs::rename(fx.dir.path().join("git-away"), fx.root.join(".git")).unwrap();
    fx.call("git_commit", with_token(&commit_args(MESSAGE), &token))
        .unwrap();
    assert_eq!(last_subject(&fx), "Vault notes of today");
}

#[test]
fn the_binding_ignores_stat_data_and_sees_every_entry() {
    let fx = Fx::<Git>::new();
    staged_change(&fx);
    let fp = || {
        fx.pipeline
            .prepare(
                &tc_tools::testing::caller(),
                "git_commit",
                &commit_args("m"),
            )
            .unwrap()
            .state_fp()
            .clone()
    };
    let first = fp();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let bytes = std::fs::read(fx.root.join("notes/a.md")).unwrap();
    std::fs::write(fx.root.join("notes/a.md"), bytes).unwrap();
    git(&fx.root, &["update-index", "--refresh"]);
    assert_eq!(fp(), first, "stat data is not bound");
    git(&fx.root, &["update-index", "--chmod=+x", "notes/a.md"]);
    let exec = fp();
    assert_ne!(exec, first, "the mode is bound");
    git(&fx.root, &["update-index", "--chmod=-x", "notes/a.md"]);
    assert_eq!(fp(), first);
    // An entry that is in HEAD already (unchanged) is bound too: removing it is drift.
    fx.put("notes/b.md", "b");
    git(&fx.root, &["add", "notes/b.md"]);
    let with_b = fp();
    git(&fx.root, &["rm", "-q", "--cached", "notes/b.md"]);
    assert_eq!(fp(), first);
    assert_ne!(with_b, first);
}
