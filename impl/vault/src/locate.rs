//! Where a path really leads, for the rules that judge paths (spec/vault.md
//! `vault.path.links-judged-at-target`, `vault.path.hidden`, `vault.path.invalid`).
//!
//! A symbolic link inside the vault that leads to another place in the vault is followed,
//! and the folder ACL, the conventions and the hidden-folder rule judge the place it leads
//! to as well as the caller's spelling. [`VaultRoot::link_targets`] names those places,
//! vault-relative, after resolving every component; [`crate::Acl::check_at`] and
//! [`crate::Conventions::judge_at`] judge each of them, so a link never grants more than its
//! target allows. A link that leads out of the vault or into a hidden folder is refused with
//! `path_invalid` by the resolution itself ([`VaultRoot::resolve_for_read`] and
//! [`VaultRoot::resolve_for_write`]), which every read and write goes through.
//!
//! Which places a path leads to:
//! - the place of the entry itself: its containing folders resolved through their links,
//!   and its own name (a write replaces the entry by rename, a delete or a move takes the
//!   entry, not what it points at);
//! - when the entry is itself a link to a file inside the vault, that file too (a read, a
//!   copy or an edit reads through it), judged even for writes: replacing a link that
//!   points into a folder the caller may not write is refused rather than argued about.
//!
//! Reads open the resolved location one component at a time, each without following a link
//! ([`open_beneath`]), so a folder swapped for a link between resolution and use makes the
//! read fail instead of leading elsewhere. What stays open is stated in README's security
//! section: the window between the judgement of a call's paths and its own writes, which
//! go by path.

use std::fs::File;
use std::io;
use std::path::{Component, Path};

use crate::error::{VaultError, VaultResult};
use crate::path::{VaultPath, VaultRoot};

impl VaultRoot {
    /// The vault-relative path of `canonical`, a location with every link resolved, when it
    /// lies strictly inside the vault. `None` for the root itself and for places outside.
    pub fn relative_path(&self, canonical: &Path) -> Option<VaultPath> {
        let relative = canonical.strip_prefix(self.path()).ok()?;
        let mut text = String::new();
        for component in relative.components() {
            let Component::Normal(name) = component else {
                return None;
            };
            if !text.is_empty() {
                text.push('/');
            }
            text.push_str(name.to_str()?);
        }
        if text.is_empty() {
            return None;
        }
        VaultPath::parse(&text).ok()
    }

    // r[impl vault.path.links-judged-at-target]
    /// The places inside the vault `path` really leads to, other than its own spelling:
    /// empty when no link is on the path. Refuses with `path_invalid` when a containing
    /// folder leads out of the vault or into a hidden folder, or to a name that is not UTF-8.
    pub fn link_targets(&self, path: &VaultPath) -> VaultResult<Vec<VaultPath>> {
        let entry_location = self.resolve_for_write(path)?;
        let entry = self.relative_path(&entry_location).ok_or_else(|| {
            VaultError::invalid(
                path.as_str(),
                "the path leads through a link to a place that is not a vault path",
            )
        })?;
        let mut targets = Vec::new();
        if entry != *path {
            targets.push(entry);
        }
        let is_link = std::fs::symlink_metadata(&entry_location)
            .is_ok_and(|meta| meta.file_type().is_symlink());
        if is_link
            // A link out of the vault, into a hidden folder or nowhere: no read follows it
            // (resolve_for_read refuses), and a write replaces it, so there is nothing
            // more to judge here.
            && let Ok(canonical) = entry_location.canonicalize()
            && let Some(target) = self.relative_path(&canonical)
            && target != *path
            && !targets.contains(&target)
        {
            targets.push(target);
        }
        Ok(targets)
    }
}

/// Opens the file at `relative` (a location below `root` with no link left in it, as
/// [`VaultRoot::resolve_for_read`] returns it once the root is stripped) one component at a
/// time without following links: a component that became a link since the path was
/// resolved makes the open fail with `path_invalid` instead of leading elsewhere.
#[cfg(unix)]
pub(crate) fn open_beneath(root: &Path, relative: &Path, shown: &VaultPath) -> VaultResult<File> {
    use rustix::fs::{Mode, OFlags, openat};

    let changed = || {
        VaultError::invalid(
            shown.as_str(),
            "a folder on the path became a link while it was opened",
        )
    };
    let io_err = |e: rustix::io::Errno| io::Error::from(e);
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut dir = rustix::fs::open(root, dir_flags, Mode::empty())
        .map_err(|e| VaultError::io(shown.as_str(), "open vault root", io_err(e)))?;
    let names: Vec<&std::ffi::OsStr> = relative
        .components()
        .map(|component| match component {
            Component::Normal(name) => Ok(name),
            _ => Err(changed()),
        })
        .collect::<VaultResult<_>>()?;
    let Some((last, folders)) = names.split_last() else {
        return Err(VaultError::NoteNotFound {
            path: shown.as_str().to_owned(),
        });
    };
    let refused = |e: rustix::io::Errno, op: &'static str| match e {
        rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR => changed(),
        rustix::io::Errno::NOENT => VaultError::NoteNotFound {
            path: shown.as_str().to_owned(),
        },
        other => VaultError::io(shown.as_str(), op, io_err(other)),
    };
    for name in folders {
        dir = openat(&dir, *name, dir_flags, Mode::empty()).map_err(|e| refused(e, "open"))?;
    }
    let file_flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let file = openat(&dir, *last, file_flags, Mode::empty()).map_err(|e| refused(e, "read"))?;
    Ok(File::from(file))
}

/// Elsewhere the location is opened by path (no `O_NOFOLLOW` to lean on).
#[cfg(not(unix))]
pub(crate) fn open_beneath(root: &Path, relative: &Path, shown: &VaultPath) -> VaultResult<File> {
    File::open(root.join(relative)).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => VaultError::NoteNotFound {
            path: shown.as_str().to_owned(),
        },
        _ => VaultError::io(shown.as_str(), "read", e),
    })
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn p(s: &str) -> VaultPath {
        VaultPath::parse(s).unwrap()
    }

    fn vault() -> (tempfile::TempDir, VaultRoot) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("vault");
        std::fs::create_dir_all(root.join("private/deep")).unwrap();
        std::fs::create_dir_all(root.join("public")).unwrap();
        std::fs::create_dir_all(root.join(".obsidian")).unwrap();
        std::fs::write(root.join("private/diary.md"), "secret").unwrap();
        std::fs::write(root.join("public/plain.md"), "plain").unwrap();
        symlink(root.join("private"), root.join("public/link")).unwrap();
        symlink("../private/diary.md", root.join("public/diary.md")).unwrap();
        symlink(root.join(".obsidian"), root.join("public/cfg")).unwrap();
        let root = VaultRoot::new(&root).unwrap();
        (dir, root)
    }

    // r[verify vault.path.links-judged-at-target]
    #[test]
    fn link_targets_name_the_real_places() {
        let (_dir, root) = vault();
        assert!(root.link_targets(&p("public/plain.md")).unwrap().is_empty());
        assert!(root.link_targets(&p("public/new.md")).unwrap().is_empty());
        assert_eq!(
            root.link_targets(&p("public/link/diary.md")).unwrap(),
            [p("private/diary.md")]
        );
        // Not there yet: the folder still leads to private/.
        assert_eq!(
            root.link_targets(&p("public/link/deep/new.md")).unwrap(),
            [p("private/deep/new.md")]
        );
        // A link to a file: the entry is where it is, and it leads to the file.
        assert_eq!(
            root.link_targets(&p("public/diary.md")).unwrap(),
            [p("private/diary.md")]
        );
        // A folder that leads into .obsidian/ is refused outright.
        let err = root.link_targets(&p("public/cfg/app.json")).unwrap_err();
        assert_eq!(err.code(), "path_invalid");
    }

    #[test]
    fn relative_paths_of_canonical_places() {
        let (_dir, root) = vault();
        let inside = root.path().join("private/diary.md");
        assert_eq!(root.relative_path(&inside), Some(p("private/diary.md")));
        assert_eq!(root.relative_path(root.path()), None);
        assert_eq!(root.relative_path(Path::new("/etc/passwd")), None);
        assert_eq!(root.relative_path(&root.path().join(".obsidian/x")), None);
    }

    #[test]
    fn open_beneath_refuses_a_folder_swapped_for_a_link() {
        let (dir, root) = vault();
        let shown = p("private/diary.md");
        let mut text = String::new();
        io::Read::read_to_string(
            &mut open_beneath(root.path(), Path::new("private/diary.md"), &shown).unwrap(),
            &mut text,
        )
        .unwrap();
        assert_eq!(text, "secret");
        // After resolution, private/ is replaced by a link to a folder outside.
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("diary.md"), "elsewhere").unwrap();
        std::fs::rename(root.path().join("private"), dir.path().join("moved")).unwrap();
        symlink(&outside, root.path().join("private")).unwrap();
        let err = open_beneath(root.path(), Path::new("private/diary.md"), &shown).unwrap_err();
        assert_eq!(err.code(), "path_invalid", "{err}");
        // The final component swapped for a link is refused the same way.
        std::fs::remove_file(root.path().join("private")).unwrap();
        std::fs::rename(dir.path().join("moved"), root.path().join("private")).unwrap();
        std::fs::rename(
            root.path().join("private/diary.md"),
            root.path().join("private/was.md"),
        )
        .unwrap();
        symlink(
            outside.join("diary.md"),
            root.path().join("private/diary.md"),
        )
        .unwrap();
        let err = open_beneath(root.path(), Path::new("private/diary.md"), &shown).unwrap_err();
        assert_eq!(err.code(), "path_invalid", "{err}");
    }
}
