//! Vault-relative paths and their resolution against the vault root (spec/config.md, spec/tools.md:
//! paths are vault-relative and `/`-separated; `..`, absolute paths and links that lead out
//! of the vault are refused with `path_invalid`; `.obsidian/`, `.git/` and `.trash/` are
//! never reachable through the tools).
//!
//! Two layers keep the rules apart:
//! - [`VaultPath::parse`] judges the *string* a caller sent: it normalizes `./` and
//!   duplicate slashes and refuses everything that could name a place outside the vault or
//!   inside a hidden system folder, without touching the disk.
//! - [`VaultRoot`] judges the *disk*: a path that parses can still lead out through a
//!   symbolic link, so resolution canonicalizes the deepest existing ancestor and checks it
//!   is still inside the canonical root (and not inside a hidden system folder either).
//!   Writes never follow the final component: they replace it by rename, and a rename
//!   replaces a link rather than writing through it.
//!
//! What stays open: a check-then-use race with another process that swaps a folder for a
//! link between resolution and use. The vault is a folder a person owns; defending against
//! a hostile local process with write access to it is out of scope.

use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::error::{VaultError, VaultResult};

/// Folder names that are never reachable through the tools, compared ASCII-case-
/// insensitively because macOS and Windows file systems fold case (`.Git` is `.git` there).
pub const HIDDEN_SYSTEM_DIRS: [&str; 3] = [".obsidian", ".git", ".trash"];

/// Longest path we accept, in bytes; longer ones cannot be opened on common systems anyway.
pub const MAX_PATH_BYTES: usize = 4096;
/// Longest single segment, in bytes (the usual `NAME_MAX`).
pub const MAX_SEGMENT_BYTES: usize = 255;

/// A normalized vault-relative path: non-empty, `/`-separated, no `.`/`..`/empty segments,
/// no control characters or backslashes, not under a hidden system folder.
///
/// Paths compare and sort by their UTF-8 bytes, which is the order the paging walk uses.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VaultPath(String);

impl VaultPath {
    /// Judges and normalizes a caller's path string.
    pub fn parse(raw: &str) -> VaultResult<Self> {
        let invalid = |reason: &str| VaultError::invalid(raw, reason);
        if raw.is_empty() {
            return Err(invalid("the path is empty"));
        }
        if raw.len() > MAX_PATH_BYTES {
            return Err(invalid("the path is too long"));
        }
        if raw.chars().any(char::is_control) {
            return Err(invalid("the path contains a control character"));
        }
        if raw.contains('\\') {
            return Err(invalid(
                "the path contains a backslash; use '/' to separate folders",
            ));
        }
        if raw.starts_with('/') {
            return Err(invalid(
                "the path is absolute; give it relative to the vault",
            ));
        }
        let mut normalized = String::with_capacity(raw.len());
        for segment in raw.split('/') {
            match segment {
                "" | "." => continue,
                ".." => return Err(invalid("the path contains a '..' segment")),
                _ => {}
            }
            if segment.len() > MAX_SEGMENT_BYTES {
                return Err(invalid("a path segment is too long"));
            }
            if is_hidden_system_dir(segment) {
                return Err(invalid(
                    "the path is inside .obsidian/, .git/ or .trash/, which are never reachable",
                ));
            }
            if !normalized.is_empty() {
                normalized.push('/');
            }
            normalized.push_str(segment);
        }
        if normalized.is_empty() {
            return Err(invalid("the path names the vault root, not a note"));
        }
        // Judged after normalization, so `./C:/x` is caught as well as `C:/x`.
        if has_drive_prefix(&normalized) {
            return Err(invalid(
                "the path names a drive; give it relative to the vault",
            ));
        }
        Ok(VaultPath(normalized))
    }

    /// Judges a note argument: like [`VaultPath::parse`], and the path must end in `.md`
    /// (spec `tools.notes-only`).
    pub fn parse_note(raw: &str) -> VaultResult<Self> {
        let path = VaultPath::parse(raw)?;
        if path.is_note() && path.file_name().len() > 3 {
            Ok(path)
        } else {
            Err(VaultError::invalid(raw, "a note path must end in .md"))
        }
    }

    /// The normalized path, e.g. `projects/plan.md`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The path's segments, first to last.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }

    /// The last segment, e.g. `plan.md`.
    pub fn file_name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or(&self.0)
    }

    /// The file name without a final `.md`, the way Obsidian shows a note's name.
    pub fn note_name(&self) -> &str {
        let name = self.file_name();
        name.strip_suffix(".md").unwrap_or(name)
    }

    /// The containing folder (the root when the path has one segment).
    pub fn parent(&self) -> FolderPath {
        match self.0.rfind('/') {
            Some(cut) => FolderPath(Some(VaultPath(self.0[..cut].to_owned()))),
            None => FolderPath(None),
        }
    }

    /// Whether the path names a Markdown note (ends in `.md`).
    pub fn is_note(&self) -> bool {
        self.0.ends_with(".md")
    }

    /// The path of a direct child named `name`; `name` is judged like any caller input.
    pub fn child(&self, name: &str) -> VaultResult<VaultPath> {
        if name.contains('/') || matches!(name, "" | "." | "..") {
            return Err(VaultError::invalid(name, "not a single path segment"));
        }
        VaultPath::parse(&format!("{}/{}", self.0, name))
    }

    /// Whether `self` is `folder` itself or lies somewhere beneath it.
    pub fn is_within(&self, folder: &FolderPath) -> bool {
        match &folder.0 {
            None => true,
            Some(f) => {
                self.0 == f.0
                    || (self.0.len() > f.0.len()
                        && self.0.starts_with(&f.0)
                        && self.0.as_bytes()[f.0.len()] == b'/')
            }
        }
    }
}

impl fmt::Display for VaultPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for VaultPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl AsRef<str> for VaultPath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl serde::Serialize for VaultPath {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// A folder argument (`list_notes.folder`, `read_notes.folder`, `rewrite_link.folder`):
/// the vault root or a [`VaultPath`] naming a folder.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct FolderPath(Option<VaultPath>);

impl FolderPath {
    /// The vault root.
    pub fn root() -> Self {
        FolderPath(None)
    }

    /// Judges a folder argument: `""`, `"."` and `"./"` name the root; anything else is
    /// judged like a note path (a trailing `/` is allowed and dropped).
    pub fn parse(raw: &str) -> VaultResult<Self> {
        if raw
            .split('/')
            .all(|segment| segment.is_empty() || segment == ".")
            && !raw.starts_with('/')
        {
            return Ok(FolderPath(None));
        }
        VaultPath::parse(raw).map(|p| FolderPath(Some(p)))
    }

    /// The folder as a path, `None` for the root.
    pub fn as_path(&self) -> Option<&VaultPath> {
        self.0.as_ref()
    }

    /// The folder as a string, `""` for the root.
    pub fn as_str(&self) -> &str {
        self.0.as_ref().map_or("", VaultPath::as_str)
    }

    pub fn is_root(&self) -> bool {
        self.0.is_none()
    }
}

impl From<VaultPath> for FolderPath {
    fn from(path: VaultPath) -> Self {
        FolderPath(Some(path))
    }
}

/// Whether a segment names one of the never-reachable folders.
pub fn is_hidden_system_dir(segment: &str) -> bool {
    HIDDEN_SYSTEM_DIRS
        .iter()
        .any(|hidden| segment.eq_ignore_ascii_case(hidden))
}

/// `C:`, `c:foo`: a Windows drive prefix, absolute or drive-relative, both outside the vault.
fn has_drive_prefix(raw: &str) -> bool {
    let bytes = raw.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

/// The vault root on disk, canonicalized once, against which [`VaultPath`]s are resolved.
#[derive(Debug, Clone)]
pub struct VaultRoot {
    canonical: PathBuf,
}

impl VaultRoot {
    /// Canonicalizes `root`; it must be an existing folder.
    pub fn new(root: &Path) -> VaultResult<Self> {
        let shown = root.display().to_string();
        let canonical = root
            .canonicalize()
            .map_err(|e| VaultError::io(&shown, "open vault root", e))?;
        if !canonical.is_dir() {
            return Err(VaultError::io(
                shown,
                "open vault root",
                io::Error::new(
                    io::ErrorKind::NotADirectory,
                    "the vault root is not a folder",
                ),
            ));
        }
        Ok(VaultRoot { canonical })
    }

    /// The canonical root folder.
    pub fn path(&self) -> &Path {
        &self.canonical
    }

    /// The on-disk location of `path`, without any check. Used for folder walks, whose
    /// entries come from the disk rather than from a caller.
    pub fn join(&self, path: &VaultPath) -> PathBuf {
        self.canonical.join(path.as_str())
    }

    /// The on-disk location of a folder argument.
    pub fn join_folder(&self, folder: &FolderPath) -> PathBuf {
        match folder.as_path() {
            Some(path) => self.join(path),
            None => self.canonical.clone(),
        }
    }

    /// Resolves a path for reading. If the file exists, the whole path (a final link
    /// included) must lead to a place inside the vault and outside the hidden system
    /// folders; otherwise its deepest existing ancestor must. Returns the canonical location
    /// when the file exists, else the lexical one.
    pub fn resolve_for_read(&self, path: &VaultPath) -> VaultResult<PathBuf> {
        let full = self.join(path);
        match std::fs::symlink_metadata(&full) {
            Ok(_) => {
                let canonical = full.canonicalize().map_err(|_| {
                    VaultError::invalid(path.as_str(), "a link in the path leads nowhere")
                })?;
                self.check_inside(path, &canonical)?;
                Ok(canonical)
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                self.resolve_ancestors(path, &full)?;
                Ok(full)
            }
            Err(e) => Err(VaultError::io(path.as_str(), "inspect", e)),
        }
    }

    /// Resolves a path for writing. The containing folders (existing ones through their
    /// links) must stay inside the vault; the final component is not followed, because
    /// writes replace it by rename. Returns the location with the existing part of the
    /// parent canonicalized, so folders created later are created inside the vault.
    pub fn resolve_for_write(&self, path: &VaultPath) -> VaultResult<PathBuf> {
        let full = self.join(path);
        let parent = full.parent().unwrap_or(&self.canonical);
        let canonical_parent = self.resolve_ancestors(path, parent)?;
        Ok(canonical_parent.join(path.file_name()))
    }

    /// Canonicalizes the deepest existing ancestor of `location` (itself included), checks
    /// it is inside the vault, and returns it joined with the part that does not exist yet.
    fn resolve_ancestors(&self, path: &VaultPath, location: &Path) -> VaultResult<PathBuf> {
        let mut existing = location;
        let mut missing: Vec<&std::ffi::OsStr> = Vec::new();
        loop {
            match std::fs::symlink_metadata(existing) {
                Ok(_) => break,
                // A file where a folder should be: nothing exists below it either.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                    ) =>
                {
                    let (Some(name), Some(up)) = (existing.file_name(), existing.parent()) else {
                        return Err(VaultError::invalid(path.as_str(), "the vault root is gone"));
                    };
                    missing.push(name);
                    existing = up;
                }
                Err(e) => return Err(VaultError::io(path.as_str(), "inspect", e)),
            }
        }
        let canonical = existing
            .canonicalize()
            .map_err(|_| VaultError::invalid(path.as_str(), "a link in the path leads nowhere"))?;
        self.check_inside(path, &canonical)?;
        let mut resolved = canonical;
        for name in missing.iter().rev() {
            resolved.push(name);
        }
        Ok(resolved)
    }

    /// A canonical location must be the root or beneath it, and not inside a hidden system
    /// folder (a link can point there even when the caller's string did not).
    fn check_inside(&self, path: &VaultPath, canonical: &Path) -> VaultResult<()> {
        let Ok(relative) = canonical.strip_prefix(&self.canonical) else {
            return Err(VaultError::invalid(
                path.as_str(),
                "the path leads out of the vault through a link",
            ));
        };
        for component in relative.components() {
            match component {
                Component::Normal(name) if is_hidden_system_dir(&name.to_string_lossy()) => {
                    return Err(VaultError::invalid(
                        path.as_str(),
                        "the path leads into .obsidian/, .git/ or .trash/ through a link",
                    ));
                }
                Component::Normal(_) => {}
                _ => {
                    return Err(VaultError::invalid(
                        path.as_str(),
                        "the path leads out of the vault through a link",
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn refused(raw: &str) -> String {
        match VaultPath::parse(raw) {
            Err(VaultError::PathInvalid { reason, .. }) => reason,
            other => panic!("{raw:?} should be refused, got {other:?}"),
        }
    }

    // r[verify vault.path.relative]
    #[test]
    fn normalizes_dot_segments_and_duplicate_slashes() {
        assert_eq!(
            VaultPath::parse("./a//b/./c.md").unwrap().as_str(),
            "a/b/c.md"
        );
        assert_eq!(VaultPath::parse("a/").unwrap().as_str(), "a");
        assert_eq!(
            VaultPath::parse("notes/ü ñ.md").unwrap().as_str(),
            "notes/ü ñ.md"
        );
    }

    // r[verify vault.path.invalid]
    // r[verify vault.path.hidden]
    // r[verify results.path-invalid]
    #[test]
    fn refuses_hostile_strings_with_path_invalid() {
        assert!(refused("").contains("empty"));
        assert!(refused("/etc/passwd").contains("absolute"));
        assert!(refused("C:/x.md").contains("drive"));
        assert!(refused("c:x.md").contains("drive"));
        assert!(refused(".//C:/x.md").contains("drive"));
        assert!(refused("\\\\server\\share").contains("backslash"));
        assert!(refused("a\\b.md").contains("backslash"));
        assert!(refused("a/../../b.md").contains(".."));
        assert!(refused("..").contains(".."));
        assert!(refused("a\0b").contains("control"));
        assert!(refused("a\nb").contains("control"));
        assert!(refused("a\u{85}b").contains("control"));
        assert!(refused(".obsidian/app.json").contains(".obsidian"));
        assert!(refused(".git").contains(".git"));
        assert!(refused("sub/.Git/config").contains(".git"));
        assert!(refused("./.trash/x.md").contains(".trash"));
        assert!(refused("./").contains("root"));
        assert!(refused(&"a/".repeat(3000)).contains("too long"));
        assert!(refused(&"x".repeat(300)).contains("too long"));
        let err = VaultPath::parse("//x").unwrap_err();
        assert_eq!(err.code(), "path_invalid");
        assert_eq!(err.details()["path"], "//x", "the path as given");
        assert!(
            err.details()["reason"]
                .as_str()
                .unwrap()
                .contains("absolute")
        );
    }

    #[test]
    fn names_and_parents() {
        let p = VaultPath::parse("a/b/Plan.md").unwrap();
        assert_eq!(p.file_name(), "Plan.md");
        assert_eq!(p.note_name(), "Plan");
        assert_eq!(p.parent().as_str(), "a/b");
        assert!(p.is_note());
        assert!(VaultPath::parse("top.md").unwrap().parent().is_root());
        assert!(p.is_within(&FolderPath::parse("a").unwrap()));
        assert!(p.is_within(&FolderPath::parse("a/b/").unwrap()));
        assert!(!p.is_within(&FolderPath::parse("a/b/P").unwrap()));
        assert!(
            !VaultPath::parse("ab/x.md")
                .unwrap()
                .is_within(&FolderPath::parse("a").unwrap())
        );
        for bad in ["x/y", "", ".", "..", ".git"] {
            assert!(p.child(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            VaultPath::parse("a")
                .unwrap()
                .child("b.md")
                .unwrap()
                .as_str(),
            "a/b.md"
        );
    }

    #[test]
    fn note_arguments_end_in_md() {
        assert_eq!(VaultPath::parse_note("a/b.md").unwrap().as_str(), "a/b.md");
        for bad in ["a/b", "a.png", ".md", "a/.md", "a.MD"] {
            let err = VaultPath::parse_note(bad).unwrap_err();
            assert_eq!(err.code(), "path_invalid", "{bad:?}");
        }
    }

    #[test]
    fn folder_arguments() {
        assert!(FolderPath::parse("").unwrap().is_root());
        assert!(FolderPath::parse(".").unwrap().is_root());
        assert!(FolderPath::parse("./").unwrap().is_root());
        assert_eq!(FolderPath::parse("inbox/").unwrap().as_str(), "inbox");
        assert!(FolderPath::parse("/").is_err());
        assert!(FolderPath::parse("../x").is_err());
        assert!(FolderPath::parse(".obsidian").is_err());
    }

    #[cfg(unix)]
    fn vault_with_links() -> (tempfile::TempDir, VaultRoot) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("vault");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join("inner/deep")).unwrap();
        std::fs::create_dir_all(root.join(".obsidian")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.md"), "secret").unwrap();
        std::fs::write(root.join("inner/note.md"), "note").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("out")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret.md"), root.join("secret-link.md")).unwrap();
        std::os::unix::fs::symlink(root.join("inner"), root.join("in")).unwrap();
        std::os::unix::fs::symlink(root.join(".obsidian"), root.join("cfg")).unwrap();
        std::os::unix::fs::symlink(root.join("nowhere"), root.join("dangling")).unwrap();
        let vault_root = VaultRoot::new(&root).unwrap();
        (dir, vault_root)
    }

    // r[verify vault.path.invalid]
    #[cfg(unix)]
    #[test]
    fn links_that_lead_out_are_refused() {
        let (_dir, root) = vault_with_links();
        let p = |s: &str| VaultPath::parse(s).unwrap();
        for hostile in [
            "out/secret.md",
            "out/new.md",
            "out/a/b/c.md",
            "secret-link.md",
            "cfg/app.json",
        ] {
            let read = root.resolve_for_read(&p(hostile));
            assert_eq!(read.unwrap_err().code(), "path_invalid", "read {hostile}");
        }
        for hostile in ["out/secret.md", "out/new.md", "out/a/b.md", "cfg/x.md"] {
            let write = root.resolve_for_write(&p(hostile));
            assert_eq!(write.unwrap_err().code(), "path_invalid", "write {hostile}");
        }
        assert!(root.resolve_for_read(&p("dangling")).is_err());
        // A link inside the vault is fine, and resolves to its target.
        let inside = root.resolve_for_read(&p("in/note.md")).unwrap();
        assert_eq!(inside, root.path().join("inner/note.md"));
        let new = root.resolve_for_write(&p("in/deep/x/new.md")).unwrap();
        assert_eq!(new, root.path().join("inner/deep/x/new.md"));
        // A write to a final-component link replaces the link: it resolves to the link itself.
        let replaced = root.resolve_for_write(&p("secret-link.md")).unwrap();
        assert_eq!(replaced, root.path().join("secret-link.md"));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn hostile_strings_never_panic(raw in "\\PC{0,40}|[./\\\\a:\\x00-\\x1f]{0,20}") {
            let _ = VaultPath::parse(&raw);
            let _ = FolderPath::parse(&raw);
        }

        // r[verify vault.path.invalid]
        // r[verify vault.path.hidden]
        #[test]
        fn accepted_paths_stay_lexically_inside(
            segments in proptest::collection::vec(
                prop_oneof![
                    Just(".."), Just("."), Just(""), Just("a"), Just("b.md"), Just(".git"),
                    Just(".obsidianx"), Just("C:"), Just("\\"), Just("..."), Just(".trash"),
                ],
                0..8,
            ),
            leading_slash in any::<bool>(),
        ) {
            let raw = format!("{}{}", if leading_slash { "/" } else { "" }, segments.join("/"));
            if let Ok(path) = VaultPath::parse(&raw) {
                let joined = Path::new("/vault").join(path.as_str());
                prop_assert!(joined.starts_with("/vault"));
                for component in Path::new(path.as_str()).components() {
                    prop_assert!(matches!(component, Component::Normal(_)), "{raw:?} -> {path:?}");
                }
                prop_assert!(!path.segments().any(is_hidden_system_dir));
                // Normalization is idempotent.
                prop_assert_eq!(VaultPath::parse(path.as_str()).unwrap(), path.clone());
            }
        }
    }

    #[cfg(unix)]
    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        // r[verify vault.path.invalid]
        #[test]
        fn no_resolved_path_escapes_the_root(
            segments in proptest::collection::vec(
                prop_oneof![
                    Just("out"), Just("in"), Just("inner"), Just("deep"), Just("cfg"),
                    Just("secret.md"), Just("note.md"), Just("secret-link.md"), Just("x"),
                    Just(".."), Just("dangling"),
                ],
                1..5,
            ),
        ) {
            let (_dir, root) = vault_with_links();
            let raw = segments.join("/");
            let Ok(path) = VaultPath::parse(&raw) else { return Ok(()); };
            let canonical_root = root.path().to_path_buf();
            if let Ok(read) = root.resolve_for_read(&path) {
                let existing = deepest_existing(&read);
                let canonical = existing.canonicalize().unwrap();
                prop_assert!(canonical.starts_with(&canonical_root), "{raw} -> {read:?}");
            }
            if let Ok(write) = root.resolve_for_write(&path) {
                let parent = write.parent().unwrap();
                let canonical = deepest_existing(parent).canonicalize().unwrap();
                prop_assert!(canonical.starts_with(&canonical_root), "{raw} -> {write:?}");
            }
        }
    }

    #[cfg(unix)]
    fn deepest_existing(path: &Path) -> PathBuf {
        let mut p = path.to_path_buf();
        while std::fs::symlink_metadata(&p).is_err() {
            p.pop();
        }
        p
    }
}
