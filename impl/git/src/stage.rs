//! `git_stage` (spec/git.md `git.stage`, `git.stage.acl`, `git.stage.paths`,
//! `git.stage.git-locked`, `git.paths.hidden`, `git.no-repo`).
//!
//! Each path is judged as every tool judges a path (`..`, absolute paths, hidden folders
//! and links leading out of the vault are `path_invalid`) and declared for the folder ACL
//! as a write, so the central ACL refuses what the caller may not change. A file that
//! exists is hashed into a blob and its index entry set with the file's real stat data; a
//! file that is gone but tracked has its entry removed (the deletion is staged); staging a
//! conflicted path resolves the conflict, as `git add` does. The index is read and written
//! under git's own `index.lock`, so a concurrent `git` never loses an update to us or we to
//! it.

use std::path::Path;

use gix::bstr::{BStr, ByteSlice};
use gix::index::entry::{Flags, Mode, Stage, Stat};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tc_tools::{
    Annotations, ErrorCode, Gating, HandlerFailure, Precheck, TargetState, Tool, ToolCx, ToolError,
    ToolSpec,
};
use tc_vault::acl::AclOp;
use tc_vault::path::VaultPath;

use crate::repo::{self, GitOptions, failed};

/// `git_stage` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitStageArgs {
    /// Vault-relative paths of files to stage (a deleted tracked file stages its deletion).
    #[schemars(length(min = 1, max = 1000))]
    pub paths: Vec<String>,
}

/// One staged path.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq, Eq)]
pub struct StagedPath {
    pub path: String,
    /// `added`, `modified`, `deleted` or `unchanged` (against the index before the call).
    pub change: String,
    /// The blob id now in the index; null for a staged deletion, and for a path the caller
    /// may not read (spec vault.acl.results-readable-only).
    pub blob: Option<String>,
}

/// `git_stage`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GitStageOutput {
    pub vault: String,
    pub staged: Vec<StagedPath>,
}

#[derive(Debug, Clone, Default)]
pub struct GitStage {
    pub options: GitOptions,
}

// r[impl git.stage.paths]
fn judged(cx: &ToolCx<'_>, raw: &str) -> Result<VaultPath, ToolError> {
    let path = VaultPath::parse(raw)?;
    cx.vault().root().resolve_for_read(&path)?;
    Ok(path)
}

/// What is on disk at a path, as an index entry would record it.
struct OnDisk {
    mode: Mode,
    bytes: Vec<u8>,
    stat: Stat,
}

/// What is at `full` (the vault path `shown`), with a file's bytes run through git's clean
/// filters (`core.autocrlf`, `.gitattributes` eol, ident, filter drivers) by `clean`.
fn on_disk(
    full: &Path,
    shown: &str,
    clean: &mut dyn FnMut(std::fs::File) -> Result<Vec<u8>, ToolError>,
) -> Result<Option<OnDisk>, ToolError> {
    let meta = match std::fs::symlink_metadata(full) {
        Ok(meta) => meta,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(_) => return Err(failed("reading a file to stage")),
    };
    let (mode, bytes) = if meta.file_type().is_symlink() {
        let target = std::fs::read_link(full).map_err(|_| failed("reading a link to stage"))?;
        let target = gix::path::into_bstr(target)
            .map_err(|_| failed("reading a link to stage"))?
            .into_owned();
        (Mode::SYMLINK, Vec::from(target))
    } else if meta.is_file() {
        let file = std::fs::File::open(full).map_err(|_| failed("reading a file to stage"))?;
        let bytes = clean(file)?;
        let exec = is_executable(&meta);
        (
            if exec {
                Mode::FILE_EXECUTABLE
            } else {
                Mode::FILE
            },
            bytes,
        )
    } else if meta.is_dir() {
        return Err(ToolError::new(
            ErrorCode::PathInvalid,
            format!(
                "{} is a folder; name the files in it to stage",
                full.display()
            ),
        )
        .with_details(json!({"path": shown, "reason": "folder"})));
    } else {
        return Ok(None);
    };
    let fs_meta = gix::index::fs::Metadata::from_path_no_follow(full)
        .map_err(|_| failed("reading a file's stat data"))?;
    let stat = Stat::from_fs(&fs_meta).map_err(|_| failed("reading a file's stat data"))?;
    Ok(Some(OnDisk { mode, bytes, stat }))
}

#[cfg(unix)]
fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_meta: &std::fs::Metadata) -> bool {
    false
}

/// Stages `paths` in the repository at `root` (the handler's work, on the blocking pool).
pub fn stage_paths(
    repo: &gix::Repository,
    root: &Path,
    paths: &[VaultPath],
) -> Result<Vec<StagedPath>, ToolError> {
    // r[impl git.stage.git-locked]
    let lock = gix::lock::File::acquire_to_update_resource(
        repo.index_path(),
        gix::lock::acquire::Fail::Immediately,
        None,
        // git's own default (the umask), as `git add` without core.sharedRepository.
        Default::default(),
    )
    .map_err(|_| {
        let mut lock = repo.index_path().into_os_string();
        lock.push(".lock");
        repo::locked(Path::new(&lock), "nothing was staged")
    })?;
    let mut index = repo::read_index(repo)?;
    let (mut pipeline, _) = repo
        .filter_pipeline(None)
        .map_err(|_| failed("reading the attributes"))?;
    let mut excludes = repo
        .excludes(
            &index,
            None,
            gix::worktree::stack::state::ignore::Source::WorktreeThenIdMappingIfNotSkipped,
        )
        .map_err(|_| failed("reading the ignore rules"))?;
    let mut staged = Vec::with_capacity(paths.len());
    for path in paths {
        let rela: &BStr = path.as_str().as_bytes().as_bstr();
        let before = index
            .entry_by_path_and_stage(rela, Stage::Unconflicted)
            .map(|e| (e.mode, e.id));
        let conflicted = index
            .entries()
            .iter()
            .any(|e| e.stage() != Stage::Unconflicted && e.path(&index) == rela);
        let mut clean = |file: std::fs::File| -> Result<Vec<u8>, ToolError> {
            clean_bytes(&mut pipeline, file, path, &index)
        };
        let disk = on_disk(&root.join(path.as_str()), path.as_str(), &mut clean)?;
        // r[impl git.stage.ignored]
        if before.is_none() && !conflicted && disk.is_some() {
            let ignored = excludes
                .at_entry(rela, disk.as_ref().map(|d| d.mode))
                .map_err(|_| failed("reading the ignore rules"))?
                .is_excluded();
            if ignored {
                return Err(ignored_path(path));
            }
        }
        // Any previous entries of the path (conflict stages included) go; the new one, if
        // any, is pushed below.
        index.remove_entries(|_, entry_path, _| entry_path == rela);
        let change = match disk {
            Some(disk) => {
                let id = repo
                    .write_blob(&disk.bytes)
                    .map_err(|_| failed("writing a blob"))?
                    .detach();
                index.dangerously_push_entry(disk.stat, id, Flags::empty(), disk.mode, rela);
                let change = match before {
                    None => "added",
                    Some((mode, old)) if mode == disk.mode && old == id && !conflicted => {
                        "unchanged"
                    }
                    Some(_) => "modified",
                };
                StagedPath {
                    path: path.as_str().to_owned(),
                    change: change.to_owned(),
                    blob: Some(id.to_hex().to_string()),
                }
            }
            None if before.is_some() || conflicted => StagedPath {
                path: path.as_str().to_owned(),
                change: "deleted".to_owned(),
                blob: None,
            },
            None => {
                return Err(ToolError::new(
                    ErrorCode::NoteNotFound,
                    format!(
                        "{} is neither a file in the vault nor tracked by git",
                        path.as_str()
                    ),
                )
                .with_details(json!({"path": path.as_str()})));
            }
        };
        index.sort_entries();
        staged.push(change);
    }
    let mut lock = lock;
    index
        .write_to(&mut lock, gix::index::write::Options::default())
        .map_err(|_| failed("writing the index"))?;
    lock.commit().map_err(|_| failed("writing the index"))?;
    Ok(staged)
}

/// The blob git would store for `file` at `path`: its bytes after the clean filters.
fn clean_bytes(
    pipeline: &mut gix::filter::Pipeline<'_>,
    file: std::fs::File,
    path: &VaultPath,
    index: &gix::index::State,
) -> Result<Vec<u8>, ToolError> {
    use gix::filter::plumbing::pipeline::convert::ToGitOutcome;
    use std::io::Read;
    let outcome = pipeline
        .convert_to_git(file, Path::new(path.as_str()), index)
        .map_err(|_| failed("running the clean filters of a file to stage"))?;
    let mut bytes = Vec::new();
    let read = match outcome {
        ToGitOutcome::Unchanged(mut file) => file.read_to_end(&mut bytes),
        ToGitOutcome::Process(mut stream) => stream.read_to_end(&mut bytes),
        ToGitOutcome::Buffer(buffer) => {
            bytes.extend_from_slice(buffer);
            Ok(buffer.len())
        }
    };
    read.map_err(|_| failed("reading a file to stage"))?;
    Ok(bytes)
}

fn ignored_path(path: &VaultPath) -> ToolError {
    ToolError::new(
        ErrorCode::InvalidInput,
        format!(
            "{} is ignored by the repository's .gitignore rules and is not tracked; nothing was staged",
            path.as_str()
        ),
    )
    .with_details(json!({"reason": "ignored", "path": path.as_str()}))
    .with_recovery(
        "leave it out of the call (ignored files stay out of the repository), or change the ignore rules on the server host",
        None,
    )
}

impl Tool for GitStage {
    type Args = GitStageArgs;
    type Output = GitStageOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "git_stage",
            description: "Stage files of the vault for the next git commit, as `git add <paths>` would (a deleted tracked file stages its deletion). Paths are vault-relative; .obsidian/, .git/ and .trash/ are refused, and each path must be writable under the folder ACL.",
            annotations: Annotations::writes(false, true),
            scopes: &["write:git"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    // r[impl git.stage.acl]
    fn precheck(&self, cx: &ToolCx<'_>, args: &GitStageArgs) -> Result<Precheck, ToolError> {
        let mut acl = Vec::with_capacity(args.paths.len());
        for raw in &args.paths {
            let path = judged(cx, raw)?;
            if !acl.iter().any(|(_, p)| p == &path) {
                acl.push((AclOp::Write, path));
            }
        }
        repo::open(cx.vault().root().path(), &self.options)?;
        Ok(Precheck {
            needs_confirmation: false,
            acl,
            plan: Default::default(),
        })
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        _args: &GitStageArgs,
        precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<GitStageOutput, HandlerFailure> {
        let root = cx.vault().root().path();
        let repo = repo::open(root, &self.options)?;
        let paths = precheck.declared_paths();
        let mut staged = stage_paths(&repo, root, &paths)?;
        // r[impl vault.acl.results-readable-only]
        // A blob id is the SHA-1 of the file's bytes: for a file the caller may not read, an
        // oracle for guesses of its content.
        for (entry, path) in staged.iter_mut().zip(&paths) {
            debug_assert_eq!(entry.path, path.as_str(), "one entry per path, in order");
            if !cx.may_read(path) {
                entry.blob = None;
            }
        }
        Ok(GitStageOutput {
            vault: cx.vault().id().to_owned(),
            staged,
        })
    }
}
