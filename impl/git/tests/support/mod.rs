//! What the git tools' tests share: the fixture over the git tools, and the `git` binary run
//! on the repositories the tests make (with no system or global configuration, so the
//! machine's own git setup changes nothing).
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use tc_git::{ConfigScope, GitOptions};
use tc_tools::Registry;
use tc_tools::testing::{Fx, Tools};

/// The git tools, reading the repository's own configuration only.
pub struct Git;

impl Tools for Git {
    fn registry() -> Registry {
        tc_git::registry(OPTIONS).unwrap()
    }
}

pub const OPTIONS: GitOptions = GitOptions {
    config: ConfigScope::RepositoryOnly,
};

/// Runs `git` in `dir` and returns its stdout; panics with stderr if it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_output(dir, args);
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

pub fn git_output(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .unwrap()
}

/// `git init -b main` in `dir` with a local identity.
pub fn init(dir: &Path) {
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["config", "user.name", "Vault Tester"]);
    git(dir, &["config", "user.email", "tester@example.invalid"]);
    git(dir, &["config", "commit.gpgsign", "false"]);
}

/// A vault with a repository and one commit holding `notes/a.md`.
pub fn repo_with_commit(fx: &Fx<Git>) {
    init(&fx.root);
    fx.put("notes/a.md", "one\n");
    git(&fx.root, &["add", "notes/a.md"]);
    git(&fx.root, &["commit", "-q", "-m", "first"]);
}

pub fn head(dir: &Path) -> String {
    git(dir, &["rev-parse", "HEAD"]).trim().to_owned()
}

/// `git status --porcelain` lines, sorted.
pub fn porcelain(dir: &Path) -> Vec<String> {
    let mut lines: Vec<String> = git(dir, &["status", "--porcelain", "--untracked-files=all"])
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

pub fn commit_args(message: &str) -> Value {
    json!({"message": message})
}

/// Leaves `notes/a.md` in conflict: two branches change its one line, and a merge stops.
pub fn make_conflict(fx: &Fx<Git>) {
    git(&fx.root, &["checkout", "-q", "-b", "other"]);
    fx.put("notes/a.md", "theirs\n");
    git(&fx.root, &["commit", "-q", "-am", "theirs"]);
    git(&fx.root, &["checkout", "-q", "main"]);
    fx.put("notes/a.md", "ours\n");
    git(&fx.root, &["commit", "-q", "-am", "ours"]);
    let merge = git_output(&fx.root, &["merge", "-q", "other"]);
    assert!(
        !merge.status.success(),
        "the merge should stop on the conflict"
    );
}
