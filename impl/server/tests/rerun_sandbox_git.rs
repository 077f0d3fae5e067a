//! A sandboxed re-run of a session that used the git tools, on a vault whose repository lives
//! outside it (a `gitdir:` file, `git init --separate-git-dir`, and a linked worktree): the
//! sandbox works on its own copy of that repository, and the real index is never written
//! (spec/sessions.md `sessions.rerun.sandbox`, `sessions.rerun.sandbox.git`).

mod mcp_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use mcp_support::*;
use serde_json::{Value, json};

/// Runs `git` in `dir` with no system or global configuration.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn identity(dir: &Path) {
    git(dir, &["config", "user.name", "Vault Tester"]);
    git(dir, &["config", "user.email", "tester@example.invalid"]);
    git(dir, &["config", "commit.gpgsign", "false"]);
}

fn recording() -> Harness {
    Harness::with(|config| config.sessions.trace_content = true)
}

/// A session that stages `notes/b.md`, ended; then the real index is put back as it was
/// (b.md untracked) so the re-run has something to stage again.
async fn session_staging_b(h: &Harness) -> String {
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let started = success(&call(&client, "start_session", json!({"label": "git"})).await);
    let id = started["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    h.write("notes/b.md", "b\n");
    let staged = success(&call(&client, "git_stage", json!({"paths": ["notes/b.md"]})).await);
    assert_eq!(staged["staged"][0]["path"], "notes/b.md", "{staged}");
    success(&call(&client, "end_session", json!({"session_id": id})).await);
    git(&h.vault, &["reset", "-q"]);
    assert_eq!(porcelain(&h.vault), ["?? notes/b.md"]);
    id
}

fn porcelain(dir: &Path) -> Vec<String> {
    git(dir, &["status", "--porcelain", "--untracked-files=all"])
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Re-runs session `id` in a sandbox, as `obsidian-tc rerun --sandbox` does.
async fn rerun_in_sandbox(h: &Harness, id: &str) -> Value {
    let core = h.core.clone();
    let id = id.to_owned();
    let report = tokio::task::spawn_blocking(move || core.rerun_session(&id, None, true))
        .await
        .unwrap()
        .unwrap();
    serde_json::to_value(report).unwrap()
}

fn git_stage_call(report: &Value) -> &Value {
    report["calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["tool"] == "git_stage")
        .unwrap_or_else(|| panic!("no git_stage in {report}"))
}

/// The real repository's index and refs, byte for byte.
fn snapshot(git_dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![git_dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                files.push((path, bytes));
            }
        }
    }
    files.sort();
    files
}

fn assert_sandboxes_gone(h: &Harness) {
    let left: Vec<_> = std::fs::read_dir(h.cache.join("sandboxes"))
        .unwrap()
        .collect();
    assert!(left.is_empty(), "the sandbox is deleted");
}

// r[verify sessions.rerun.sandbox]
// r[verify sessions.rerun.sandbox.git]
#[tokio::test]
async fn a_separate_git_dir_is_copied_into_the_sandbox_and_the_real_index_is_untouched() {
    let h = recording();
    let outside = tempfile::tempdir().unwrap();
    let git_dir = outside.path().join("vault.git");
    git(
        &h.vault,
        &[
            "init",
            "-q",
            "-b",
            "main",
            "--separate-git-dir",
            git_dir.to_str().unwrap(),
        ],
    );
    identity(&h.vault);
    h.write("notes/a.md", "a\n");
    git(&h.vault, &["add", "notes/a.md"]);
    git(&h.vault, &["commit", "-q", "-m", "first"]);
    assert!(h.vault.join(".git").is_file(), "a gitdir: file");
    let id = session_staging_b(&h).await;
    let before = snapshot(&git_dir);

    let report = rerun_in_sandbox(&h, &id).await;
    let staged = git_stage_call(&report);
    assert_eq!(staged["verdict"], "runnable", "{report}");
    assert_eq!(staged["divergence"], "none", "staged in the copy: {report}");
    assert_eq!(porcelain(&h.vault), ["?? notes/b.md"], "the real index");
    assert!(
        snapshot(&git_dir) == before,
        "the real git dir is not written"
    );
    assert!(
        std::fs::read_to_string(h.vault.join(".git"))
            .unwrap()
            .contains(git_dir.to_str().unwrap()),
        "the vault's own .git file is left alone"
    );
    assert_sandboxes_gone(&h);
}

// r[verify sessions.rerun.sandbox.git]
#[tokio::test]
async fn a_linked_worktree_s_repository_is_copied_whole_into_the_sandbox() {
    let outside = tempfile::tempdir().unwrap();
    let main = outside.path().join("main");
    std::fs::create_dir(&main).unwrap();
    git(&main, &["init", "-q", "-b", "main"]);
    identity(&main);
    std::fs::create_dir_all(main.join("notes")).unwrap();
    std::fs::write(main.join("notes/a.md"), "a\n").unwrap();
    git(&main, &["add", "notes/a.md"]);
    git(&main, &["commit", "-q", "-m", "first"]);
    // The vault is a linked worktree of `main`: its .git names main/.git/worktrees/vault,
    // whose refs and objects are main/.git's.
    let h = recording();
    // The vault folder exists and is empty: `git worktree add` fills it.
    git(
        &main,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "vault-branch",
            h.vault.to_str().unwrap(),
        ],
    );
    let id = session_staging_b(&h).await;
    let before = snapshot(&main.join(".git"));

    let report = rerun_in_sandbox(&h, &id).await;
    let staged = git_stage_call(&report);
    assert_eq!(staged["verdict"], "runnable", "{report}");
    assert_eq!(staged["divergence"], "none", "{report}");
    assert_eq!(porcelain(&h.vault), ["?? notes/b.md"]);
    assert!(
        snapshot(&main.join(".git")) == before,
        "main/.git is not written"
    );
    assert_sandboxes_gone(&h);
}

// r[verify sessions.rerun.sandbox.git]
#[tokio::test]
async fn a_git_folder_in_the_vault_is_copied_with_it_and_left_alone() {
    let h = recording();
    git(&h.vault, &["init", "-q", "-b", "main"]);
    identity(&h.vault);
    h.write("notes/a.md", "a\n");
    git(&h.vault, &["add", "notes/a.md"]);
    git(&h.vault, &["commit", "-q", "-m", "first"]);
    let id = session_staging_b(&h).await;
    let before = snapshot(&h.vault.join(".git"));

    let report = rerun_in_sandbox(&h, &id).await;
    let staged = git_stage_call(&report);
    assert_eq!(staged["verdict"], "runnable", "{report}");
    assert_eq!(staged["divergence"], "none", "{report}");
    assert_eq!(porcelain(&h.vault), ["?? notes/b.md"]);
    assert!(snapshot(&h.vault.join(".git")) == before);
    assert_sandboxes_gone(&h);
}
