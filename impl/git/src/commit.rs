//! `git_commit` (spec/git.md `git.commit`, `git.commit.exact`, `git.commit.conflicted`,
//! `git.commit.nothing-staged`, `git.commit.identity`, `git.commit.head-moved`,
//! `git.commit.binding`, `git.commit.acl`, `git.commit.summary`, `git.commit.locked`,
//! `git.commit.locked-after-approval`, `git.no-repo`; spec/drift.md `drift.bind.git-commit`,
//! `drift.residual.remote-git`).
//!
//! Always gated, bound to a custom target: HEAD and the index entries (see [`crate::binding`]).
//! Everything that would make the commit fail for certain (no repository, a lock file left
//! in the repository, a conflicted index, nothing staged, no author or committer) is refused
//! before the confirmation is asked for, so the human never approves a commit that cannot
//! happen. The handler reads the index again and refuses with `replay_drift` if it is not
//! the one approved, writes the tree of exactly those entries, and moves HEAD's branch with
//! a compare-and-swap from the approved parent, so a HEAD moved by anyone meanwhile gives
//! `git_head_moved` and never a commit on another parent.

use std::sync::Arc;

use gix::hash::ObjectId;
use gix::index::entry::{Flags, Mode, Stage};
use gix::objs::tree::EntryKind;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tc_gate::ConfirmationTargets;
use tc_tools::{
    Annotations, ErrorCode, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx,
    ToolError, ToolSpec,
};
use tc_vault::acl::AclOp;
use tc_vault::path::VaultPath;

use crate::binding;
use crate::identity::identity;
use crate::repo::{self, GitOptions, HeadState, StagedChange, failed};

/// What a lock found after the approval means for the call.
const LOCKED_AFTER_APPROVAL: &str =
    "nothing was committed, and the approval is spent: ask for a fresh one once the lock is gone";

/// The longest commit message taken.
pub const MAX_MESSAGE_BYTES: usize = 65_536;

/// `git_commit` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitCommitArgs {
    /// The commit message (not blank).
    #[schemars(length(min = 1, max = 65536))]
    pub message: String,
}

/// `git_commit`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GitCommitOutput {
    pub vault: String,
    /// The new commit's id.
    pub commit: String,
    /// Its tree's id.
    pub tree: String,
    /// The commit it was made on; null for the first commit.
    pub parent: Option<String>,
    /// The branch it moved; null when HEAD is detached.
    pub branch: Option<String>,
    /// How many paths it changed against its parent.
    pub changes: usize,
}

#[derive(Debug, Clone, Default)]
pub struct GitCommit {
    pub options: GitOptions,
}

/// What the state step saw: HEAD and the staged changes the approval is about.
#[derive(Debug, Clone)]
pub struct Plan {
    pub head: HeadState,
    pub changes: Vec<StagedChange>,
}

fn conflicted(paths: Vec<String>) -> ToolError {
    ToolError::new(
        ErrorCode::InvalidInput,
        format!(
            "the index has {} conflicted path(s); resolve them (stage the resolved files) before committing",
            paths.len()
        ),
    )
    .with_details(json!({"reason": "conflicted_index", "paths": paths}))
}

fn nothing_staged() -> ToolError {
    ToolError::new(
        ErrorCode::InvalidInput,
        "nothing is staged: the index is the same as HEAD's tree; stage changes with git_stage first",
    )
    .with_details(json!({"reason": "nothing_staged"}))
}

// r[impl git.commit.head-moved]
fn head_moved(approved: &HeadState, now: &HeadState) -> ToolError {
    ToolError::new(
        ErrorCode::GitHeadMoved,
        format!(
            "HEAD moved after the commit was approved (approved {}, now {}); nothing was committed",
            approved.describe(),
            now.describe()
        ),
    )
    .with_details(json!({
        "approved_head": approved.commit_hex(),
        "approved_branch": approved.branch(),
        "head": now.commit_hex(),
        "branch": now.branch(),
    }))
    .with_recovery(
        "look at git_status again and send git_commit with no token to ask for a fresh confirmation",
        None,
    )
}

fn changed_after_approval() -> ToolError {
    ToolError::new(
        ErrorCode::ReplayDrift,
        "the index or HEAD changed after the drift check of this approval; nothing was committed",
    )
    .with_recovery(
        "send git_commit again with no token to ask for a fresh confirmation",
        None,
    )
}

/// The tree of the index's entries (stage 0, intent-to-add left out), written to the odb.
fn write_tree(repo: &gix::Repository, index: &gix::index::State) -> Result<ObjectId, ToolError> {
    let mut editor = repo
        .empty_tree()
        .edit()
        .map_err(|_| failed("building the tree"))?;
    for entry in index.entries() {
        if entry.stage() != Stage::Unconflicted || entry.flags.contains(Flags::INTENT_TO_ADD) {
            continue;
        }
        let kind = match entry.mode {
            Mode::FILE_EXECUTABLE => EntryKind::BlobExecutable,
            Mode::SYMLINK => EntryKind::Link,
            Mode::COMMIT => EntryKind::Commit,
            _ => EntryKind::Blob,
        };
        let path = entry.path(index);
        let path = std::str::from_utf8(path).map_err(|_| failed("building the tree"))?;
        editor
            .upsert(path, kind, entry.id)
            .map_err(|_| failed("building the tree"))?;
    }
    editor
        .write()
        .map(gix::Id::detach)
        .map_err(|_| failed("writing the tree"))
}

/// The commit step itself, given what was approved: refuses if the index or HEAD is not
/// the approved one, writes the tree of the index and moves the branch from `approved.head`
/// by compare-and-swap. Public so the race after the drift check can be tested directly.
pub fn commit_approved(
    repo: &gix::Repository,
    approved_fp: &tc_gate::StateFp,
    approved: &Plan,
    message: &str,
) -> Result<(ObjectId, ObjectId), ToolError> {
    let index = repo::read_index(repo)?;
    let now = repo::head(repo)?;
    if now != approved.head {
        return Err(head_moved(&approved.head, &now));
    }
    if &binding::fingerprint(&now, &index) != approved_fp {
        return Err(changed_after_approval());
    }
    // r[impl git.commit.locked-after-approval]
    if let Some(lock) = repo::held_lock(repo, &now) {
        return Err(repo::locked(&lock, LOCKED_AFTER_APPROVAL));
    }
    let who = identity(repo)?;
    // r[impl git.commit.exact]
    let tree = write_tree(repo, &index)?;
    let parents: Vec<ObjectId> = approved.head.commit.into_iter().collect();
    match repo.commit_as(
        who.committer.to_ref(&mut Default::default()),
        who.author.to_ref(&mut Default::default()),
        "HEAD",
        message,
        tree,
        parents,
    ) {
        Ok(id) => Ok((id.detach(), tree)),
        Err(_) => {
            let after = repo::head(repo)?;
            if after != approved.head {
                Err(head_moved(&approved.head, &after))
            } else if let Some(lock) = repo::held_lock(repo, &after) {
                // Taken by another git process between the check above and the move.
                Err(repo::locked(&lock, LOCKED_AFTER_APPROVAL))
            } else {
                Err(failed("moving the branch to the new commit"))
            }
        }
    }
}

/// HEAD, the index and the staged changes, or the refusals that come before the gate.
fn plan(
    repo: &gix::Repository,
) -> Result<(HeadState, gix::index::File, Vec<StagedChange>), ToolError> {
    let head = repo::head(repo)?;
    let index = repo::read_index(repo)?;
    let tree = repo::head_tree_index(repo, &head)?;
    let changes = repo::staged_changes(&tree, &index);
    Ok((head, index, changes))
}

impl Tool for GitCommit {
    type Args = GitCommitArgs;
    type Output = GitCommitOutput;
    type Plan = ();
    type Seen = Option<Plan>;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "git_commit",
            description: "Commit exactly what is staged in the vault's git repository, with this message; author and committer come from the repository's git config. Always needs the human's confirmation, which covers HEAD and every staged entry: a change to either before the commit refuses it.",
            annotations: Annotations::writes(false, false),
            scopes: &["execute:git"],
            changes_notes: false,
            gating: Gating::bound_to(ConfirmationTargets::Custom),
        }
    }

    fn check(&self, args: &GitCommitArgs) -> Result<(), ToolError> {
        if args.message.trim().is_empty() {
            return Err(ToolError::validation("/message", "the message is blank"));
        }
        if args.message.len() > MAX_MESSAGE_BYTES {
            return Err(ToolError::validation(
                "/message",
                format!("the message is longer than {MAX_MESSAGE_BYTES} bytes"),
            ));
        }
        Ok(())
    }

    fn precheck(&self, cx: &ToolCx<'_>, _args: &GitCommitArgs) -> Result<Precheck, ToolError> {
        let repo = repo::open(cx.vault().root().path(), &self.options)?;
        let (head, index, changes) = plan(&repo)?;
        // r[impl git.commit.locked]
        if let Some(lock) = repo::held_lock(&repo, &head) {
            return Err(repo::locked(
                &lock,
                "nothing can be committed until it is gone, so no confirmation is asked for",
            ));
        }
        // r[impl git.commit.conflicted]
        let conflicts = repo::conflicted_paths(&index);
        if !conflicts.is_empty() {
            return Err(conflicted(conflicts));
        }
        // r[impl git.commit.nothing-staged]
        if changes.is_empty() {
            return Err(nothing_staged());
        }
        identity(&repo)?;
        // r[impl git.commit.acl]
        let acl = changes
            .iter()
            .filter(|c| !c.hidden)
            .filter_map(|c| VaultPath::parse(&c.path).ok())
            .map(|p| (AclOp::Write, p))
            .collect();
        Ok(Precheck {
            needs_confirmation: true,
            acl,
            plan: Default::default(),
        })
    }

    // r[impl git.commit.binding]
    fn state(
        &self,
        cx: &ToolCx<'_>,
        _args: &GitCommitArgs,
        _precheck: &Precheck,
    ) -> Result<TargetState<Self::Seen>, ToolError> {
        let repo = match repo::open(cx.vault().root().path(), &self.options) {
            Ok(repo) => repo,
            Err(error) if error.code == ErrorCode::GitNoRepo => {
                return Ok(TargetState {
                    fp: binding::no_repository(),
                    observed: Vec::new(),
                    seen: Default::default(),
                });
            }
            Err(error) => return Err(error),
        };
        let (head, index, changes) = plan(&repo)?;
        Ok(TargetState {
            fp: binding::fingerprint(&head, &index),
            observed: Vec::new(),
            seen: Arc::new(Some(Plan { head, changes })),
        })
    }

    // r[impl git.commit.summary]
    fn summary(
        &self,
        cx: &ToolCx<'_>,
        args: &GitCommitArgs,
        _precheck: &Precheck,
        state: &TargetState<Self::Seen>,
    ) -> Summary {
        let Some(plan) = (*state.seen).as_ref() else {
            return Summary::new(format!("commit in vault {}", cx.vault().id()));
        };
        let mut summary = Summary::new(format!(
            "commit {} staged change(s) on {}",
            plan.changes.len(),
            plan.head.describe()
        ));
        let mut message = args.message.lines();
        if let Some(first) = message.next() {
            summary = summary.detail(format!("message: {first}"));
        }
        let more = message.count();
        if more > 0 {
            summary = summary.detail(format!("  (+{more} more message line(s))"));
        }
        summary.targets_named(
            plan.changes
                .iter()
                .map(|c| format!("{} ({})", c.path, c.kind.as_str()))
                .collect(),
            |n| format!("[… {n} more staged changes]"),
        )
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &GitCommitArgs,
        _precheck: &Precheck,
        state: &TargetState<Self::Seen>,
    ) -> Result<GitCommitOutput, HandlerFailure> {
        let repo = repo::open(cx.vault().root().path(), &self.options)?;
        let plan = (*state.seen)
            .as_ref()
            .ok_or_else(|| ToolError::internal("reading the approved commit plan"))?;
        let (commit, tree) = commit_approved(&repo, &state.fp, plan, &args.message)?;
        Ok(GitCommitOutput {
            vault: cx.vault().id().to_owned(),
            commit: commit.to_hex().to_string(),
            tree: tree.to_hex().to_string(),
            parent: plan.head.commit_hex(),
            branch: plan.head.branch().map(str::to_owned),
            changes: plan.changes.len(),
        })
    }
}
