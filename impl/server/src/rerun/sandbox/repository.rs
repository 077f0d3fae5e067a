//! The sandbox's own repository (spec/sessions.md `sessions.rerun.sandbox.git`).
//!
//! The git tools work on the repository of the vault root (spec/git.md `git.repo.own`),
//! which need not lie inside the vault: `.git` may be a `gitdir:` file naming a git dir
//! elsewhere (`git init --separate-git-dir`, a linked worktree, a submodule) or a symbolic
//! link, and a `.git` folder may hold links into another repository (`git-new-workdir`). A
//! copy of the `.git` entry alone would still name the real repository, so a sandboxed
//! `git_stage` would write the real index. The sandbox therefore gets a copy of the whole
//! repository the vault uses, links followed, and its vault's `.git` names that copy:
//!
//! - a plain `.git` folder is copied into the vault copy's `.git`;
//! - any other git dir is copied to `<sandbox>/git`, and the vault copy's `.git` becomes a
//!   `gitdir:` file naming it; for a linked worktree (its git dir has a `commondir`) the
//!   common dir is copied whole, and the worktree's `commondir` and `gitdir` files in the
//!   copy are rewritten to name the copies.
//!
//! When that cannot be done (a `.git` file that names nothing, a worktree outside its common
//! dir, a link loop, a read error), the vault copy has no `.git` at all, so the sandbox's git
//! tools answer `git_no_repo` and nothing outside the sandbox is ever written.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The folder of a sandbox a repository outside the vault is copied to.
const GIT_COPY: &str = "git";
/// How deep a git dir copy may go (a git dir is a few levels deep; this stops a tree of
/// links that never ends).
const MAX_DEPTH: usize = 32;

// r[impl sessions.rerun.sandbox.git]
/// Gives `vault_copy` (a copy of `vault_root` made without its `.git`) a repository of its
/// own under `sandbox_dir`, or none; the error says why there is none (and what was copied
/// of it is removed).
pub(super) fn copy_repository(
    vault_root: &Path,
    vault_copy: &Path,
    sandbox_dir: &Path,
) -> Result<(), String> {
    let copied = try_copy(vault_root, vault_copy, sandbox_dir);
    if copied.is_err() {
        let dot_git = vault_copy.join(".git");
        let _ = fs::remove_dir_all(&dot_git).or_else(|_| fs::remove_file(&dot_git));
        let _ = fs::remove_dir_all(sandbox_dir.join(GIT_COPY));
    }
    copied
}

fn try_copy(vault_root: &Path, vault_copy: &Path, sandbox_dir: &Path) -> Result<(), String> {
    let dot_git = vault_root.join(".git");
    let kind = match fs::symlink_metadata(&dot_git) {
        Ok(meta) => meta.file_type(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("reading {}: {e}", dot_git.display())),
    };
    let git_dir = if kind.is_dir() {
        dot_git.clone()
    } else if kind.is_file() {
        named_git_dir(vault_root, &dot_git)?
    } else {
        // A link: wherever it leads.
        dot_git.clone()
    };
    let git_dir = git_dir
        .canonicalize()
        .map_err(|e| format!("{} names no git dir: {e}", dot_git.display()))?;
    let copied = match common_dir(&git_dir)? {
        None if kind.is_dir() => {
            let target = vault_copy.join(".git");
            copy_following(&git_dir, &target, 0).map_err(|e| copying(&git_dir, &e))?;
            return Ok(());
        }
        None => {
            let target = sandbox_dir.join(GIT_COPY);
            copy_following(&git_dir, &target, 0).map_err(|e| copying(&git_dir, &e))?;
            target
        }
        Some(common) => {
            let inner = git_dir.strip_prefix(&common).map_err(|_| {
                format!(
                    "the worktree's git dir {} is not inside its common dir {}",
                    git_dir.display(),
                    common.display()
                )
            })?;
            let target = sandbox_dir.join(GIT_COPY);
            copy_following(&common, &target, 0).map_err(|e| copying(&common, &e))?;
            let worktree = target.join(inner);
            // Relative or not, the copy's pointers name the copies.
            fs::write(
                worktree.join("commondir"),
                format!("{}\n", target.display()),
            )
            .map_err(|e| copying(&common, &e))?;
            if worktree.join("gitdir").exists() {
                fs::write(
                    worktree.join("gitdir"),
                    format!("{}\n", vault_copy.join(".git").display()),
                )
                .map_err(|e| copying(&common, &e))?;
            }
            worktree
        }
    };
    fs::write(
        vault_copy.join(".git"),
        format!("gitdir: {}\n", copied.display()),
    )
    .map_err(|e| format!("writing the sandbox's .git: {e}"))
}

fn copying(from: &Path, error: &io::Error) -> String {
    format!("copying the repository {}: {error}", from.display())
}

/// The git dir a `gitdir:` file names, relative to the folder holding it.
fn named_git_dir(vault_root: &Path, dot_git: &Path) -> Result<PathBuf, String> {
    let text =
        fs::read_to_string(dot_git).map_err(|e| format!("reading {}: {e}", dot_git.display()))?;
    let named = text
        .strip_prefix("gitdir:")
        .map(|rest| rest.trim_end_matches(['\n', '\r']).trim_start())
        .filter(|named| !named.is_empty())
        .ok_or_else(|| format!("{} is not a `gitdir:` file", dot_git.display()))?;
    Ok(vault_root.join(named))
}

/// The common dir a linked worktree's git dir names in its `commondir` file, canonical;
/// `None` for a git dir that is its own.
fn common_dir(git_dir: &Path) -> Result<Option<PathBuf>, String> {
    let file = git_dir.join("commondir");
    let text = match fs::read_to_string(&file) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("reading {}: {e}", file.display())),
    };
    let named = text.trim_end_matches(['\n', '\r']);
    git_dir
        .join(named)
        .canonicalize()
        .map(Some)
        .map_err(|e| format!("{} names no common dir: {e}", file.display()))
}

/// Copies the tree at `from` to `to` (folders 0700), following links so the copy holds
/// what they lead to; a link that leads nowhere is left out, and so are sockets and pipes.
fn copy_following(from: &Path, to: &Path, depth: usize) -> io::Result<()> {
    if depth > MAX_DEPTH {
        return Err(io::Error::other(format!(
            "more than {MAX_DEPTH} folders deep (a link loop?) at {}",
            from.display()
        )));
    }
    tc_gate::private_fs::create_private_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let source = entry.path();
        let target = to.join(entry.file_name());
        let meta = match fs::metadata(&source) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        if meta.is_dir() {
            copy_following(&source, &target, depth + 1)?;
        } else if meta.is_file() {
            fs::copy(&source, &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gitdir_file_that_names_nothing_leaves_the_sandbox_without_a_repository() {
        let dir = tempfile::tempdir().unwrap();
        let vault = dir.path().join("vault");
        let copy = dir.path().join("sandbox/vault");
        fs::create_dir_all(&vault).unwrap();
        fs::create_dir_all(&copy).unwrap();
        fs::write(vault.join(".git"), "gitdir: /nonexistent/repo.git\n").unwrap();
        let why = copy_repository(&vault, &copy, &dir.path().join("sandbox")).unwrap_err();
        assert!(why.contains("names no git dir"), "{why}");
        assert!(!copy.join(".git").exists());
        fs::write(vault.join(".git"), "not a pointer\n").unwrap();
        let why = copy_repository(&vault, &copy, &dir.path().join("sandbox")).unwrap_err();
        assert!(why.contains("not a `gitdir:` file"), "{why}");
    }

    #[test]
    fn links_in_a_git_folder_are_copied_as_what_they_lead_to() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere/objects");
        fs::create_dir_all(elsewhere.join("ab")).unwrap();
        fs::write(elsewhere.join("ab/cdef"), "blob").unwrap();
        let vault = dir.path().join("vault");
        fs::create_dir_all(vault.join(".git")).unwrap();
        fs::write(vault.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::os::unix::fs::symlink(&elsewhere, vault.join(".git/objects")).unwrap();
        std::os::unix::fs::symlink("/nonexistent", vault.join(".git/svn")).unwrap();
        let copy = dir.path().join("sandbox/vault");
        fs::create_dir_all(&copy).unwrap();
        copy_repository(&vault, &copy, &dir.path().join("sandbox")).unwrap();
        let objects = copy.join(".git/objects");
        assert!(!fs::symlink_metadata(&objects).unwrap().is_symlink());
        assert_eq!(fs::read_to_string(objects.join("ab/cdef")).unwrap(), "blob");
        assert!(fs::symlink_metadata(copy.join(".git/svn")).is_err());
    }

    #[test]
    fn a_link_loop_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let vault = dir.path().join("vault");
        fs::create_dir_all(vault.join(".git")).unwrap();
        std::os::unix::fs::symlink(vault.join(".git"), vault.join(".git/loop")).unwrap();
        let copy = dir.path().join("sandbox/vault");
        fs::create_dir_all(&copy).unwrap();
        let why = copy_repository(&vault, &copy, &dir.path().join("sandbox")).unwrap_err();
        assert!(why.contains("link loop"), "{why}");
        assert!(!copy.join(".git").exists(), "the partial copy is removed");
    }
}
