//! The vault's own repository: how it is found, what HEAD and the index say, and the errors
//! every git tool shares (spec/git.md `git.repo.own`, `git.repo.enclosing`, `git.no-repo`,
//! `git.paths.hidden`, `git.commit.identity`, `git.commit.locked`).
//!
//! The repository is the one whose work tree is the vault root itself (`<root>/.git`, a
//! folder or a `gitdir:` file). A vault that is only a subfolder of a larger work tree has no
//! repository of its own: the git tools answer `git_no_repo` there and say where the
//! enclosing one is, because committing to it would record (and the status would show)
//! files outside the vault, which nothing else of the server may reach.
//!
//! Each call opens the repository afresh, so what a step sees is the disk now, never a
//! cached index or HEAD from an earlier call.

use std::path::{Path, PathBuf};

use gix::bstr::{BStr, ByteSlice};
use gix::hash::ObjectId;
use gix::index::entry::{Mode, Stage};
use serde_json::json;
use tc_tools::{ErrorCode, ToolError};
use tc_vault::path::is_hidden_system_dir;

/// Which git configuration the tools read (the author and committer among it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConfigScope {
    /// As `git` itself: the system, global (`~/.gitconfig`) and repository files and the
    /// `GIT_*` environment.
    #[default]
    Full,
    /// The repository's own `.git/config` alone, nothing of the user or the environment
    /// (a server that must not depend on whose account it runs under).
    RepositoryOnly,
}

/// How the git tools open the vault's repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GitOptions {
    pub config: ConfigScope,
}

impl GitOptions {
    fn open_options(&self) -> gix::open::Options {
        match self.config {
            ConfigScope::Full => gix::open::Options::default(),
            ConfigScope::RepositoryOnly => gix::open::Options::isolated(),
        }
    }
}

/// A repository failure that is not the caller's doing: one sentence, no detail leaked.
pub(crate) fn failed(what: &str) -> ToolError {
    ToolError::internal(&format!("{what} in the vault's git repository"))
}

// r[impl git.no-repo]
fn no_repo(root: &Path, enclosing: Option<&Path>) -> ToolError {
    let message = match enclosing {
        Some(outer) => format!(
            "the vault root {} has no git repository of its own; it lies inside the work tree \
             of {}, which the git tools do not use (they would reach files outside the vault)",
            root.display(),
            outer.display()
        ),
        None => format!(
            "the vault root {} is not a git repository (no .git on this host)",
            root.display()
        ),
    };
    let mut details = json!({"root": root.display().to_string()});
    if let Some(outer) = enclosing {
        details["enclosing_work_tree"] = json!(outer.display().to_string());
    }
    ToolError::new(ErrorCode::GitNoRepo, message)
        .with_details(details)
        .with_recovery(
            "run `git init` in the vault root (or clone the vault's repository there) on the \
             server host, then send the call again",
            None,
        )
}

// r[impl git.repo.own]
// r[impl git.repo.enclosing]
/// Opens the repository whose work tree is `root`, or answers `git_no_repo`.
pub fn open(root: &Path, options: &GitOptions) -> Result<gix::Repository, ToolError> {
    let canonical_root = root
        .canonicalize()
        .map_err(|_| failed("reading the vault root"))?;
    let has_dot_git = std::fs::symlink_metadata(canonical_root.join(".git")).is_ok();
    if has_dot_git && let Ok(repo) = gix::open_opts(&canonical_root, options.open_options()) {
        let own = repo
            .workdir()
            .and_then(|dir| dir.canonicalize().ok())
            .is_some_and(|dir| dir == canonical_root);
        if own {
            return Ok(repo);
        }
    }
    let enclosing = canonical_root.parent().and_then(|parent| {
        gix::discover(parent)
            .ok()
            .and_then(|repo| repo.workdir().map(Path::to_path_buf))
    });
    Err(no_repo(&canonical_root, enclosing.as_deref()))
}

// r[impl git.commit.locked]
/// The first lock file a commit on `head` would be stopped by, when one exists: the index's
/// (another git process is writing the index that is about to be committed), `HEAD`'s, and
/// that of the branch HEAD names. A git process that crashed leaves its lock behind, and
/// every later attempt fails on it until someone removes it.
pub fn held_lock(repo: &gix::Repository, head: &HeadState) -> Option<PathBuf> {
    let mut index_lock = repo.index_path().into_os_string();
    index_lock.push(".lock");
    let mut locks = vec![PathBuf::from(index_lock), repo.git_dir().join("HEAD.lock")];
    if let Some(reference) = &head.reference {
        // A branch's loose file lives in the common dir (shared by linked worktrees).
        locks.push(repo.common_dir().join(format!("{reference}.lock")));
    }
    locks
        .into_iter()
        .find(|lock| std::fs::symlink_metadata(lock).is_ok())
}

/// `git_locked` for `lock`, saying how to clear it.
pub fn locked(lock: &Path, what: &str) -> ToolError {
    ToolError::new(
        ErrorCode::GitLocked,
        format!(
            "the vault's git repository is locked: {} exists (another git process is at work, \
             or one crashed and left it behind); {what}",
            lock.display()
        ),
    )
    .with_details(json!({"lock": lock.display().to_string()}))
    .with_recovery(
        format!(
            "wait for the other git command to finish; if no git process is running in the \
             vault's repository, remove {} on the server host; then send the call again",
            lock.display()
        ),
        None,
    )
}

// r[impl git.paths.hidden]
/// Whether a repository path lies under `.obsidian/`, `.git/` or `.trash/`.
pub fn is_hidden(path: &BStr) -> bool {
    path.split(|&b| b == b'/')
        .any(|segment| segment.to_str().is_ok_and(is_hidden_system_dir))
}

/// What HEAD is: the branch it names (None when detached) and the commit (None when the
/// branch is unborn).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadState {
    /// The full reference name, e.g. `refs/heads/main`; None when HEAD is detached.
    pub reference: Option<String>,
    pub commit: Option<ObjectId>,
}

impl HeadState {
    /// The branch's short name (`main`), None when detached.
    pub fn branch(&self) -> Option<&str> {
        self.reference
            .as_deref()
            .map(|full| full.strip_prefix("refs/heads/").unwrap_or(full))
    }

    pub fn commit_hex(&self) -> Option<String> {
        self.commit.map(|id| id.to_hex().to_string())
    }

    /// How a summary names it: `main @ 1a2b3c4d…`, `main (no commit yet)`, `detached @ …`.
    pub fn describe(&self) -> String {
        let at = match self.commit_hex() {
            Some(hex) => format!("@ {hex}"),
            None => "(no commit yet)".to_owned(),
        };
        match self.branch() {
            Some(branch) => format!("{branch} {at}"),
            None => format!("detached HEAD {at}"),
        }
    }
}

pub fn head(repo: &gix::Repository) -> Result<HeadState, ToolError> {
    let head = repo.head().map_err(|_| failed("reading HEAD"))?;
    Ok(HeadState {
        reference: head.referent_name().map(|name| name.as_bstr().to_string()),
        commit: head.id().map(gix::Id::detach),
    })
}

/// The index as it is on disk now, or an empty one when the repository has none yet.
pub fn read_index(repo: &gix::Repository) -> Result<gix::index::File, ToolError> {
    if repo.index_path().exists() {
        repo.open_index().map_err(|_| failed("reading the index"))
    } else {
        Ok(gix::index::File::from_state(
            gix::index::State::new(repo.object_hash()),
            repo.index_path(),
        ))
    }
}

/// The index HEAD's tree would give (empty when unborn): what "staged" is measured against.
pub fn head_tree_index(
    repo: &gix::Repository,
    head: &HeadState,
) -> Result<gix::index::State, ToolError> {
    match head.commit {
        None => Ok(gix::index::State::new(repo.object_hash())),
        Some(commit) => {
            let tree = repo
                .find_commit(commit)
                .and_then(|commit| commit.tree_id())
                .map_err(|_| failed("reading HEAD's tree"))?;
            repo.index_from_tree(&tree)
                .map(gix::index::File::into)
                .map_err(|_| failed("reading HEAD's tree"))
        }
    }
}

/// How a path differs between HEAD's tree and the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
    /// The mode changed (a file became a link, or the executable bit flipped).
    TypeChanged,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Added => "added",
            ChangeKind::Modified => "modified",
            ChangeKind::Deleted => "deleted",
            ChangeKind::TypeChanged => "type_changed",
        }
    }
}

/// One staged change: a path whose index entry differs from HEAD's tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagedChange {
    pub path: String,
    pub kind: ChangeKind,
    pub hidden: bool,
}

/// The staged changes (index against HEAD's tree), by path, conflicts left out (they are
/// reported on their own).
pub fn staged_changes(
    head_tree: &gix::index::State,
    index: &gix::index::State,
) -> Vec<StagedChange> {
    use std::collections::BTreeMap;
    let tree: BTreeMap<&BStr, (Mode, ObjectId)> = head_tree
        .entries()
        .iter()
        .map(|e| (e.path(head_tree), (e.mode, e.id)))
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for entry in index.entries() {
        let path = entry.path(index);
        if entry.stage() != Stage::Unconflicted {
            seen.insert(path);
            continue;
        }
        if entry
            .flags
            .contains(gix::index::entry::Flags::INTENT_TO_ADD)
        {
            continue;
        }
        seen.insert(path);
        let kind = match tree.get(path) {
            None => Some(ChangeKind::Added),
            Some((mode, _)) if *mode != entry.mode => Some(ChangeKind::TypeChanged),
            Some((_, id)) if *id != entry.id => Some(ChangeKind::Modified),
            Some(_) => None,
        };
        if let Some(kind) = kind {
            out.push(StagedChange {
                path: path.to_str_lossy().into_owned(),
                kind,
                hidden: is_hidden(path),
            });
        }
    }
    for path in tree.keys() {
        if !seen.contains(path) {
            out.push(StagedChange {
                path: path.to_str_lossy().into_owned(),
                kind: ChangeKind::Deleted,
                hidden: is_hidden(path),
            });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The paths of the index that are in conflict (an entry at stage 1, 2 or 3).
pub fn conflicted_paths(index: &gix::index::State) -> Vec<String> {
    let mut paths: Vec<String> = index
        .entries()
        .iter()
        .filter(|e| e.stage() != Stage::Unconflicted)
        .map(|e| e.path(index).to_str_lossy().into_owned())
        .collect();
    paths.dedup();
    paths
}
