//! `git_status` (spec/git.md `git.status`, `git.status.bounded`, `git.status.withheld`,
//! `git.paths.hidden`, `git.no-repo`).
//!
//! Branch, HEAD, the staged changes (index against HEAD's tree), the conflicted paths, the
//! unstaged changes (work tree against the index) and the untracked files, each path
//! vault-relative. Paths under `.obsidian/`, `.git/` or `.trash/`, and paths the caller may
//! not read under the folder ACL, are left out and only counted. The lists are filled in
//! that order up to the governor's page budget; what does not fit is counted, and
//! `truncated` says so.

use gix::bstr::ByteSlice;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, TargetState, Tool, ToolCx, ToolError, ToolSpec,
    wire_cost,
};
use tc_vault::path::VaultPath;

use crate::repo::{self, GitOptions, failed};

/// `git_status` takes no arguments beyond the common `vault`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitStatusArgs {}

/// One changed path.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq, Eq)]
pub struct PathChange {
    /// Vault-relative path.
    pub path: String,
    /// `added`, `modified`, `deleted` or `type_changed`.
    pub change: String,
}

/// How many entries each list has in all (before the budget cut).
#[derive(Debug, Clone, Default, Serialize, JsonSchema, PartialEq, Eq)]
pub struct StatusCounts {
    pub staged: usize,
    pub conflicted: usize,
    pub unstaged: usize,
    pub untracked: usize,
}

/// `git_status`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GitStatusOutput {
    pub vault: String,
    /// The branch HEAD names; null when HEAD is detached.
    pub branch: Option<String>,
    /// The commit HEAD resolves to; null before the first commit.
    pub head: Option<String>,
    pub detached: bool,
    /// Changes staged for the next commit (index against HEAD).
    pub staged: Vec<PathChange>,
    /// Paths in conflict (the next commit is refused until they are resolved).
    pub conflicted: Vec<String>,
    /// Changes in the work tree not staged (work tree against the index).
    pub unstaged: Vec<PathChange>,
    /// Files git does not track and does not ignore.
    pub untracked: Vec<String>,
    /// The full length of each list, shown or not.
    pub total: StatusCounts,
    /// Entries left out because they lie under .obsidian/, .git/ or .trash/ or the caller
    /// may not read them; counted in no list.
    pub withheld: usize,
    /// Whether some entries did not fit in the response (the lists are cut, `total` is not).
    pub truncated: bool,
}

#[derive(Debug, Clone, Default)]
pub struct GitStatus {
    pub options: GitOptions,
}

/// The space a result may fill before its lists: the envelope, counts and names.
const ENVELOPE_RESERVE: usize = 2048;

/// Whether the caller may see `path`: not hidden, a vault path, readable under the ACL.
fn visible(cx: &ToolCx<'_>, path: &str) -> bool {
    let trimmed = path.trim_end_matches('/');
    if repo::is_hidden(trimmed.as_bytes().as_bstr()) {
        return false;
    }
    VaultPath::parse(trimmed).is_ok_and(|p| {
        cx.binding
            .acl
            .can_read_at(cx.vault().root(), &p, &cx.caller.scopes)
    })
}

/// Adds items to `list` while their wire cost fits in `budget`.
fn fill<T: Serialize>(items: Vec<T>, list: &mut Vec<T>, budget: &mut usize) -> bool {
    let mut cut = false;
    for item in items {
        let cost = serde_json::to_vec(&item).map_or(usize::MAX, |json| wire_cost(&json) + 2);
        if cut || cost > *budget {
            cut = true;
            continue;
        }
        *budget -= cost;
        list.push(item);
    }
    cut
}

impl GitStatus {
    fn collect(&self, cx: &ToolCx<'_>) -> Result<GitStatusOutput, ToolError> {
        use gix::status::index_worktree::Item;
        use gix::status::plumbing::index_as_worktree::{Change, EntryStatus};

        let repo = repo::open(cx.vault().root().path(), &self.options)?;
        let head = repo::head(&repo)?;
        let index = repo::read_index(&repo)?;
        let tree = repo::head_tree_index(&repo, &head)?;
        let mut withheld = 0usize;

        let mut staged = Vec::new();
        for change in repo::staged_changes(&tree, &index) {
            if change.hidden || !visible(cx, &change.path) {
                withheld += 1;
                continue;
            }
            staged.push(PathChange {
                path: change.path,
                change: change.kind.as_str().to_owned(),
            });
        }
        let mut conflicted = Vec::new();
        for path in repo::conflicted_paths(&index) {
            if visible(cx, &path) {
                conflicted.push(path);
            } else {
                withheld += 1;
            }
        }

        let mut unstaged = Vec::new();
        let mut untracked = Vec::new();
        let iter = repo
            .status(gix::progress::Discard)
            .map_err(|_| failed("reading the status"))?
            .untracked_files(gix::status::UntrackedFiles::Files)
            .index_worktree_rewrites(None)
            .index_worktree_submodules(gix::status::Submodule::Given {
                ignore: gix::submodule::config::Ignore::All,
                check_dirty: false,
            })
            .into_index_worktree_iter(Vec::new())
            .map_err(|_| failed("reading the status"))?;
        for item in iter {
            let item = item.map_err(|_| failed("reading the status"))?;
            let (path, change) = match &item {
                Item::Modification {
                    rela_path, status, ..
                } => {
                    let change = match status {
                        EntryStatus::Change(Change::Removed) => "deleted",
                        EntryStatus::Change(Change::Type { .. }) => "type_changed",
                        EntryStatus::Change(Change::Modification { .. })
                        | EntryStatus::Change(Change::SubmoduleModification(_)) => "modified",
                        // Conflicts are listed from the index; a stat-only difference and an
                        // intent-to-add entry are not changes.
                        EntryStatus::Conflict { .. }
                        | EntryStatus::NeedsUpdate(_)
                        | EntryStatus::IntentToAdd => continue,
                    };
                    (rela_path.to_str_lossy().into_owned(), Some(change))
                }
                Item::DirectoryContents { entry, .. } => {
                    if entry.status != gix::dir::entry::Status::Untracked {
                        continue;
                    }
                    let mut path = entry.rela_path.to_str_lossy().into_owned();
                    if matches!(
                        entry.disk_kind,
                        Some(gix::dir::entry::Kind::Directory | gix::dir::entry::Kind::Repository)
                    ) {
                        path.push('/');
                    }
                    (path, None)
                }
                // Rename tracking is off.
                Item::Rewrite { .. } => continue,
            };
            if !visible(cx, &path) {
                withheld += 1;
                continue;
            }
            match change {
                Some(change) => unstaged.push(PathChange {
                    path,
                    change: change.to_owned(),
                }),
                None => untracked.push(path),
            }
        }
        unstaged.sort_by(|a, b| a.path.cmp(&b.path));
        unstaged.dedup();
        untracked.sort();

        // r[impl git.status.bounded]
        let total = StatusCounts {
            staged: staged.len(),
            conflicted: conflicted.len(),
            unstaged: unstaged.len(),
            untracked: untracked.len(),
        };
        let mut budget = cx
            .paging
            .limits
            .page_budget()
            .saturating_sub(ENVELOPE_RESERVE);
        let mut out = GitStatusOutput {
            vault: cx.vault().id().to_owned(),
            branch: head.branch().map(str::to_owned),
            head: head.commit_hex(),
            detached: head.reference.is_none(),
            staged: Vec::new(),
            conflicted: Vec::new(),
            unstaged: Vec::new(),
            untracked: Vec::new(),
            total,
            withheld,
            truncated: false,
        };
        let mut cut = fill(staged, &mut out.staged, &mut budget);
        cut |= fill(conflicted, &mut out.conflicted, &mut budget);
        cut |= fill(unstaged, &mut out.unstaged, &mut budget);
        cut |= fill(untracked, &mut out.untracked, &mut budget);
        out.truncated = cut;
        Ok(out)
    }
}

impl Tool for GitStatus {
    type Args = GitStatusArgs;
    type Output = GitStatusOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "git_status",
            description: "The vault's git repository: branch, HEAD, staged, conflicted, unstaged and untracked paths (vault-relative; .obsidian/, .git/ and .trash/ left out). The lists are cut to fit one response; `total` gives their full lengths and `truncated` says whether anything was cut.",
            annotations: Annotations::READS,
            scopes: &["read:git"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, cx: &ToolCx<'_>, _args: &GitStatusArgs) -> Result<Precheck, ToolError> {
        repo::open(cx.vault().root().path(), &self.options)?;
        Ok(Precheck::free())
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        _args: &GitStatusArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<GitStatusOutput, HandlerFailure> {
        Ok(self.collect(cx)?)
    }
}
