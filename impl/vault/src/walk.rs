//! The sorted, resumable folder walk and the byte-budgeted page builder behind `read_notes`
//! and `list_notes` (spec/paging.md; seed: "read_notes … stays under the
//! cap by paging … Every page makes progress; a note that could never fit is reported as a
//! per-path too_large error (with its size and the budget) and skipped … The folder ACL is
//! re-checked per note on every page").
//!
//! The walk yields vault paths in byte order of their UTF-8 text, one directory listing at
//! a time: entries of a folder are sorted by `name` for files and `name/` for folders, which
//! is exactly the order of the full paths. Resuming "strictly after" a path skips whole
//! subtrees that sort before it without listing them, so a page costs the same in a vault of
//! a thousand notes as in one of a hundred thousand. Because the resume point is a path, not
//! an index, notes added or removed mid-walk are neither skipped nor repeated: a note added
//! before the cursor was not there to emit and is not emitted later; one added after it is
//! emitted when the walk reaches it.
//!
//! What the walk leaves out: names starting with `.` (Obsidian does not index hidden files;
//! this also covers `.obsidian/`, `.git/`, `.trash/` and the vault's own temp files), names
//! that are not UTF-8 or not a valid [`VaultPath`] segment, symbolic links to folders (a
//! link cycle could never end), and links to files outside the vault. With
//! [`WalkFilter::Notes`] only `.md` files are yielded; `list_notes` and `read_notes` both
//! walk notes only, and [`WalkFilter::AllFiles`] is for link resolution, where embeds reach
//! attachments.
//!
//! The page builder encodes each entry once with `serde_json` into its own buffer, adds its
//! size (plus the separating comma) to the running total, and keeps the buffer: the page is
//! then assembled from these fragments ([`Page::write_json`]) without encoding any note
//! again.

use std::fs;
use std::io;
use std::iter::Peekable;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tc_gate::governor::wire_cost;

use crate::acl::{Acl, AclOp, Scopes};
use crate::error::{VaultError, VaultResult};
use crate::note::frontmatter_json;
use crate::path::{FolderPath, VaultPath, VaultRoot};
use crate::vault::Vault;

/// Which files the walk yields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalkFilter {
    /// Markdown notes (`*.md`).
    Notes,
    /// Every file (notes and attachments).
    AllFiles,
}

#[derive(Debug)]
struct Frame {
    /// `""` for the vault root, else `folder/` with a trailing slash.
    prefix: String,
    /// Sorted by sort key, consumed from the front.
    entries: std::vec::IntoIter<DirEntry>,
}

#[derive(Debug)]
struct DirEntry {
    name: String,
    is_dir: bool,
}

impl DirEntry {
    fn sort_key(&self) -> String {
        if self.is_dir {
            format!("{}/", self.name)
        } else {
            self.name.clone()
        }
    }
}

/// A sorted walk over the files under a folder, resumable after any path.
#[derive(Debug)]
pub struct Walk<'a> {
    root: &'a VaultRoot,
    filter: WalkFilter,
    recursive: bool,
    after: Option<String>,
    stack: Vec<Frame>,
    /// Folders listed so far (tests check that resuming skips subtrees unlisted).
    folders_listed: usize,
}

impl<'a> Walk<'a> {
    /// Starts a walk of `folder`, yielding only paths strictly after `after` (if given).
    /// Refuses with `note_not_found` when the folder does not exist, and with `path_invalid`
    /// when it leads out of the vault.
    pub fn new(
        root: &'a VaultRoot,
        folder: &FolderPath,
        recursive: bool,
        filter: WalkFilter,
        after: Option<&VaultPath>,
    ) -> VaultResult<Self> {
        let location = match folder.as_path() {
            Some(path) => {
                let location = root.resolve_for_read(path)?;
                if !location.is_dir() {
                    return Err(VaultError::NoteNotFound {
                        path: path.as_str().to_owned(),
                    });
                }
                location
            }
            None => root.path().to_path_buf(),
        };
        let prefix = match folder.as_path() {
            Some(path) => format!("{path}/"),
            None => String::new(),
        };
        let mut walk = Walk {
            root,
            filter,
            recursive,
            after: after.map(|p| p.as_str().to_owned()),
            stack: Vec::new(),
            folders_listed: 0,
        };
        let entries = walk
            .list(&location, &prefix)
            .map_err(|e| VaultError::io(folder.as_str(), "list folder", e))?;
        walk.stack.push(Frame {
            prefix,
            entries: entries.into_iter(),
        });
        Ok(walk)
    }

    /// One folder's entries, filtered and sorted.
    fn list(&mut self, location: &std::path::Path, prefix: &str) -> io::Result<Vec<DirEntry>> {
        self.folders_listed += 1;
        let mut entries = Vec::new();
        for entry in fs::read_dir(location)? {
            let entry = entry?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if name.starts_with('.') || VaultPath::parse(&format!("{prefix}{name}")).is_err() {
                continue;
            }
            let file_type = entry.file_type()?;
            let is_dir = if file_type.is_symlink() {
                // Follow a link to a file only if it stays inside the vault; never a link to
                // a folder.
                let Ok(path) = VaultPath::parse(&format!("{prefix}{name}")) else {
                    continue;
                };
                match self.root.resolve_for_read(&path) {
                    Ok(target) if target.is_file() => false,
                    _ => continue,
                }
            } else if file_type.is_dir() {
                true
            } else if file_type.is_file() {
                false
            } else {
                continue;
            };
            if is_dir && !self.recursive {
                continue;
            }
            if !is_dir && self.filter == WalkFilter::Notes && !name.ends_with(".md") {
                continue;
            }
            entries.push(DirEntry { name, is_dir });
        }
        entries.sort_by_cached_key(DirEntry::sort_key);
        Ok(entries)
    }
}

impl Walk<'_> {
    /// How many folders the walk has listed so far.
    pub fn folders_listed(&self) -> usize {
        self.folders_listed
    }
}

impl Iterator for Walk<'_> {
    type Item = VaultResult<VaultPath>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let frame = self.stack.last_mut()?;
            let Some(entry) = frame.entries.next() else {
                self.stack.pop();
                continue;
            };
            let full = format!("{}{}", frame.prefix, entry.name);
            if entry.is_dir {
                let dir_prefix = format!("{full}/");
                if let Some(after) = &self.after
                    && after.as_str() > dir_prefix.as_str()
                    && !after.starts_with(&dir_prefix)
                {
                    // Everything below sorts before the resume point: never list it.
                    continue;
                }
                let Ok(path) = VaultPath::parse(&full) else {
                    continue;
                };
                let location = self.root.join(&path);
                match self.list(&location, &dir_prefix) {
                    Ok(entries) => self.stack.push(Frame {
                        prefix: dir_prefix,
                        entries: entries.into_iter(),
                    }),
                    Err(e) => return Some(Err(VaultError::io(full, "list folder", e))),
                }
                continue;
            }
            if self
                .after
                .as_deref()
                .is_some_and(|after| full.as_str() <= after)
            {
                continue;
            }
            match VaultPath::parse(&full) {
                Ok(path) => return Some(Ok(path)),
                Err(_) => continue,
            }
        }
    }
}

/// One thing a page may hold: a path to encode, or a path already refused.
#[derive(Debug)]
pub enum Candidate {
    Path(VaultPath),
    /// A caller's path that did not parse, or a folder the walk could not list.
    Refused {
        path: String,
        error: VaultError,
    },
}

impl Candidate {
    fn path_text(&self) -> &str {
        match self {
            Candidate::Path(path) => path.as_str(),
            Candidate::Refused { path, .. } => path,
        }
    }
}

/// The candidates of a folder walk.
pub fn walk_candidates<'a>(walk: Walk<'a>) -> impl Iterator<Item = Candidate> + 'a {
    walk.map(|item| match item {
        Ok(path) => Candidate::Path(path),
        Err(error) => Candidate::Refused {
            path: error.details()["path"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            error,
        },
    })
}

/// The candidates of an explicit `paths` list, from index `start` on.
pub fn path_candidates(paths: &[String], start: usize) -> impl Iterator<Item = Candidate> + '_ {
    paths
        .iter()
        .skip(start)
        .map(|raw| match VaultPath::parse(raw) {
            Ok(path) => Candidate::Path(path),
            Err(error) => Candidate::Refused {
                path: raw.clone(),
                error,
            },
        })
}

/// The most bytes of note an entry can hold within `budget` (a response counts every byte
/// of its result twice: once as `structuredContent`, once in the text copy; see
/// [`wire_cost`]). A `too_large` error reports this as its budget.
pub fn note_room(budget: usize) -> usize {
    budget / 2
}

/// Encodes one page entry.
pub trait EntryEncoder {
    /// The entry for `path` as JSON, reading the note at most once. An entry whose
    /// [`wire_cost`] could never fit in `budget` returns `too_large` (ideally without
    /// reading the note).
    fn encode(&mut self, vault: &Vault, path: &VaultPath, budget: usize) -> VaultResult<Vec<u8>>;
}

/// `read_notes` entries: `{path, content, frontmatter, content_hash}`.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoteEntryEncoder;

#[derive(Serialize)]
struct NoteEntry<'a> {
    path: &'a str,
    content: &'a str,
    frontmatter: Value,
    content_hash: &'a str,
}

impl EntryEncoder for NoteEntryEncoder {
    fn encode(&mut self, vault: &Vault, path: &VaultPath, budget: usize) -> VaultResult<Vec<u8>> {
        let budget_u64 = note_room(budget) as u64;
        // The entry costs at least twice the note, so a note over the room can be refused
        // from its size alone, unread.
        let note = vault.read_limited(path, budget_u64).map_err(|e| match e {
            VaultError::TooLarge { size, .. } => VaultError::TooLarge {
                path: path.as_str().to_owned(),
                size,
                limit: budget_u64,
            },
            other => other,
        })?;
        // r[impl vault.note.utf8-read]
        // Never lossy: a note that is not UTF-8 is a per-path error on the page.
        let text = note.utf8(path)?;
        let entry = NoteEntry {
            path: path.as_str(),
            content: text,
            frontmatter: frontmatter_json(text),
            content_hash: &note.hash,
        };
        let encoded = serde_json::to_vec(&entry)
            .map_err(|e| VaultError::io(path.as_str(), "encode", io::Error::other(e)))?;
        // r[impl paging.too-large.compared]
        // The sizes compared are the ones reported: the entry as sent against the budget.
        let cost = wire_cost(&encoded);
        if cost > budget {
            return Err(VaultError::TooLarge {
                path: path.as_str().to_owned(),
                size: cost as u64,
                limit: budget as u64,
            });
        }
        Ok(encoded)
    }
}

/// `list_notes` entries: `{path, size}`, from metadata alone.
#[derive(Debug, Default, Clone, Copy)]
pub struct ListEntryEncoder;

impl EntryEncoder for ListEntryEncoder {
    fn encode(&mut self, vault: &Vault, path: &VaultPath, _budget: usize) -> VaultResult<Vec<u8>> {
        let stat = vault.stat(path)?;
        serde_json::to_vec(&json!({"path": path.as_str(), "size": stat.size}))
            .map_err(|e| VaultError::io(path.as_str(), "encode", io::Error::other(e)))
    }
}

/// What to do with a note the ACL refuses to the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeniedPolicy {
    /// Leave it out silently (folder walks: listings leave out what the caller may not read).
    Omit,
    /// Report it as an `acl_denied` errors entry (explicit `paths`).
    Report,
}

/// The fixed inputs of one page.
#[derive(Debug, Clone, Copy)]
pub struct PageRequest<'a> {
    pub vault: &'a Vault,
    pub acl: &'a Acl,
    pub scopes: &'a Scopes,
    /// The [`wire_cost`] available for the entries of both arrays, commas included: the
    /// page budget minus [`envelope_overhead`].
    pub budget: usize,
    /// The most a page holding one note alone may use (the response cap's room, at least
    /// `budget`): a note larger than a page but within the cap is served on a page of its
    /// own, so that a note fits by every route or by none (spec `paging.alone-under-cap`).
    pub ceiling: usize,
    pub denied: DeniedPolicy,
}

/// One page: pre-encoded entries and where the walk stands.
#[derive(Debug, Default)]
pub struct Page {
    /// Encoded note entries, in walk order.
    pub notes: Vec<Box<str>>,
    /// Encoded `{path, code, message, details}` entries.
    pub errors: Vec<Box<str>>,
    /// The [`wire_cost`] of both arrays' contents, commas included.
    pub used: usize,
    /// How many candidates the page consumed (emitted, reported or omitted).
    pub consumed: usize,
    /// The last candidate consumed; a folder walk resumes strictly after it.
    pub last_path: Option<String>,
    /// Whether no candidate is left: `next_cursor` is null.
    pub exhausted: bool,
}

impl Page {
    /// The page as `{"vault":…,"notes":[…],"errors":[…],"next_cursor":…}`, assembled from
    /// the entries' bytes (no entry is encoded again).
    pub fn write_json(&self, vault_id: &str, next_cursor: Option<&str>) -> Vec<u8> {
        let vault = serde_json::to_string(vault_id).unwrap_or_else(|_| "\"\"".to_owned());
        let cursor = next_cursor.map_or_else(
            || "null".to_owned(),
            |c| serde_json::to_string(c).unwrap_or_else(|_| "null".to_owned()),
        );
        let mut out = Vec::with_capacity(self.used + vault.len() + cursor.len() + 48);
        out.extend_from_slice(b"{\"vault\":");
        out.extend_from_slice(vault.as_bytes());
        out.extend_from_slice(b",\"notes\":[");
        join_into(&mut out, &self.notes);
        out.extend_from_slice(b"],\"errors\":[");
        join_into(&mut out, &self.errors);
        out.extend_from_slice(b"],\"next_cursor\":");
        out.extend_from_slice(cursor.as_bytes());
        out.push(b'}');
        out
    }

    /// The page as one raw JSON value, for callers that need a serde type. This checks the
    /// assembled text once; it does not encode the notes again.
    pub fn to_raw_value(
        &self,
        vault_id: &str,
        next_cursor: Option<&str>,
    ) -> VaultResult<Box<RawValue>> {
        let text = String::from_utf8(self.write_json(vault_id, next_cursor))
            .map_err(|e| VaultError::io(vault_id, "assemble page", io::Error::other(e)))?;
        RawValue::from_string(text)
            .map_err(|e| VaultError::io(vault_id, "assemble page", io::Error::other(e)))
    }
}

fn join_into(out: &mut Vec<u8>, entries: &[Box<str>]) {
    for (i, entry) in entries.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(entry.as_bytes());
    }
}

/// The [`wire_cost`] of the page outside the entries, for a cursor of at most `cursor_len`
/// characters that JSON does not escape (the cursor is base64url). Budget = page budget −
/// this.
pub fn envelope_overhead(vault_id: &str, cursor_len: usize) -> usize {
    let empty = Page::default();
    let with_null = wire_cost(&empty.write_json(vault_id, None));
    let with_cursor = wire_cost(&empty.write_json(vault_id, Some(&"x".repeat(cursor_len))));
    with_null.max(with_cursor)
}

/// The most bytes of a path an `errors` entry echoes whole: a longer one would, escaped in
/// the result and again in its text copy, not fit the smallest accepted cap beside the cursor
/// after it.
pub const ECHOED_PATH_BYTES: usize = 256;
/// The most bytes of an `errors` entry's message.
const MESSAGE_BYTES: usize = 200;

// r[impl paging.errors.path-shortened]
/// `path` as an `errors` entry shows it: whole up to [`ECHOED_PATH_BYTES`], else its first
/// 100 and last 50 bytes (at character boundaries) around `…`.
pub fn shown_path(path: &str) -> std::borrow::Cow<'_, str> {
    if path.len() <= ECHOED_PATH_BYTES {
        return std::borrow::Cow::Borrowed(path);
    }
    let head = path.floor_char_boundary(100);
    let tail = path.ceil_char_boundary(path.len() - 50);
    std::borrow::Cow::Owned(format!("{}…{}", &path[..head], &path[tail..]))
}

/// `value` with every string equal to `from` replaced by `to`.
fn replace_strings(value: &mut Value, from: &str, to: &str) {
    match value {
        Value::String(text) if text == from => *text = to.to_owned(),
        Value::Array(items) => items.iter_mut().for_each(|v| replace_strings(v, from, to)),
        Value::Object(map) => map.values_mut().for_each(|v| replace_strings(v, from, to)),
        _ => {}
    }
}

/// An `errors` entry; a long path is shown shortened in `path` and `message`, with
/// `path_bytes` saying how long it is, and not repeated in `details`.
fn error_entry(path: &str, error: &VaultError) -> Box<str> {
    let shown = shown_path(path);
    let mut message = error
        .to_string()
        .replace(&format!("{path:?}"), &format!("{shown:?}"));
    if message.len() > MESSAGE_BYTES {
        message.truncate(message.floor_char_boundary(MESSAGE_BYTES));
        message.push('…');
    }
    let mut details = error_details(error);
    let mut entry = json!({
        "path": shown,
        "code": error.code(),
        "message": message,
    });
    if shown.len() != path.len() {
        if let Value::Object(map) = &mut details {
            map.retain(|_, value| value.as_str() != Some(path));
        }
        replace_strings(&mut details, path, &shown);
        entry["path_bytes"] = json!(path.len());
    }
    entry["details"] = details;
    entry.to_string().into_boxed_str()
}

/// `too_large` carries `{size, budget}` (spec/paging.md); other codes their own details.
fn error_details(error: &VaultError) -> Value {
    match error {
        VaultError::TooLarge { size, limit, .. } => json!({"size": size, "budget": limit}),
        other => other.details(),
    }
}

/// Fills one page from `candidates`, in order, until the next entry would not fit.
///
/// - Every page makes progress: its first entry is emitted if it fits the budget alone; a
///   note that can never fit becomes a `too_large` errors entry and is skipped. (An errors
///   entry is emitted first on a page even if the budget is smaller than it, so a budget
///   too small for anything still advances; the governor then judges the response.)
/// - The ACL is checked for every note when the page reaches it, at its spelling and at
///   every place a link on its path leads to (spec `vault.path.links-judged-at-target`).
/// - A candidate is consumed only when its entry is emitted, reported or omitted; an entry
///   that does not fit is left for the next page (and read again there).
pub fn fill_page<I, E>(request: &PageRequest<'_>, candidates: I, encoder: &mut E) -> Page
where
    I: Iterator<Item = Candidate>,
    E: EntryEncoder,
{
    let mut candidates: Peekable<I> = candidates.peekable();
    let mut page = Page::default();
    while let Some(candidate) = candidates.peek() {
        let outcome = match candidate {
            Candidate::Refused { path, error } => Outcome::Error(error_entry(path, error)),
            Candidate::Path(path) => {
                match request
                    .acl
                    .check_at(request.vault.root(), AclOp::Read, path, request.scopes)
                {
                    Err(denied) => match request.denied {
                        DeniedPolicy::Omit => Outcome::Omit,
                        DeniedPolicy::Report => {
                            Outcome::Error(error_entry(path.as_str(), &VaultError::from(denied)))
                        }
                    },
                    Ok(()) => match encoder.encode(
                        request.vault,
                        path,
                        request.ceiling.max(request.budget),
                    ) {
                        Ok(bytes) => match String::from_utf8(bytes) {
                            Ok(text) => Outcome::Note(text.into_boxed_str()),
                            Err(e) => Outcome::Error(error_entry(
                                path.as_str(),
                                &VaultError::io(path.as_str(), "encode", io::Error::other(e)),
                            )),
                        },
                        Err(error) => Outcome::Error(error_entry(path.as_str(), &error)),
                    },
                }
            }
        };
        let page_empty = page.notes.is_empty() && page.errors.is_empty();
        // A note over the page budget but within the ceiling goes alone on its page.
        let mut alone = false;
        match outcome {
            Outcome::Omit => {}
            Outcome::Note(entry) => {
                let cost = cost_of(&page.notes, &entry);
                if page.used + cost > request.budget {
                    // r[impl paging.alone-under-cap]
                    if page_empty && cost <= request.ceiling.max(request.budget) {
                        page.used += cost;
                        page.notes.push(entry);
                        alone = true;
                    } else if page_empty {
                        // Unreachable in practice (the encoder refuses what cannot fit),
                        // but an encoder that overshoots must not stall the walk.
                        let error = VaultError::TooLarge {
                            path: candidate.path_text().to_owned(),
                            size: entry.len() as u64,
                            limit: note_room(request.budget) as u64,
                        };
                        let entry = error_entry(candidate.path_text(), &error);
                        page.used += cost_of(&page.errors, &entry);
                        page.errors.push(entry);
                    } else {
                        break;
                    }
                } else {
                    page.used += cost;
                    page.notes.push(entry);
                }
            }
            Outcome::Error(entry) => {
                let cost = cost_of(&page.errors, &entry);
                if page.used + cost > request.budget && !page_empty {
                    break;
                }
                page.used += cost;
                page.errors.push(entry);
            }
        }
        page.last_path = Some(candidate.path_text().to_owned());
        page.consumed += 1;
        candidates.next();
        if alone {
            break;
        }
    }
    page.exhausted = candidates.peek().is_none();
    page
}

/// What `entry` adds to a page as sent: its [`wire_cost`], and a comma (twice) after the
/// first.
fn cost_of(array: &[Box<str>], entry: &str) -> usize {
    wire_cost(entry.as_bytes()) + 2 * usize::from(!array.is_empty())
}

enum Outcome {
    Note(Box<str>),
    Error(Box<str>),
    Omit,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::{AclConfig, ScopeRuleConfig};
    use crate::test_support::TempVault;
    use crate::vault::Precondition;
    use proptest::prelude::*;

    /// A vault "main" holding `files`.
    fn fixture(files: &[(&str, &str)]) -> TempVault {
        TempVault::open("main", "snapshots", 0, 3).with_files(files)
    }

    fn walk_all(
        vault: &Vault,
        folder: &str,
        recursive: bool,
        filter: WalkFilter,
        after: Option<&str>,
    ) -> Vec<String> {
        let after = after.map(|a| VaultPath::parse(a).unwrap());
        Walk::new(
            vault.root(),
            &FolderPath::parse(folder).unwrap(),
            recursive,
            filter,
            after.as_ref(),
        )
        .unwrap()
        .map(|p| p.unwrap().as_str().to_owned())
        .collect()
    }

    const TRICKY: &[(&str, &str)] = &[
        ("a.md", "a"),
        ("a-b.md", "ab"),
        ("a b.md", "a b"),
        ("a/b.md", "a/b"),
        ("a/c/d.md", "acd"),
        ("A.md", "A"),
        ("é.md", "e"),
        ("z/y/x.md", "zyx"),
        ("ab/c.md", "abc"),
        ("img.png", "png"),
        (".obsidian/app.md", "hidden"),
        (".git/HEAD.md", "hidden"),
        (".trash/old.md", "hidden"),
        (".hidden.md", "hidden"),
        ("notes/.tc-write-x.tmp", "temp"),
    ];

    // r[verify paging.order]
    // r[verify vault.path.hidden]
    #[test]
    fn walks_in_full_path_byte_order_and_skips_hidden() {
        let f = fixture(TRICKY);
        let walked = walk_all(&f.vault, "", true, WalkFilter::Notes, None);
        let mut expected: Vec<String> = TRICKY
            .iter()
            .map(|(p, _)| (*p).to_owned())
            .filter(|p| p.ends_with(".md") && !p.split('/').any(|s| s.starts_with('.')))
            .collect();
        expected.sort();
        assert_eq!(walked, expected);
        assert_eq!(walked[..4], ["A.md", "a b.md", "a-b.md", "a.md"]);
        let all = walk_all(&f.vault, "", true, WalkFilter::AllFiles, None);
        assert!(all.contains(&"img.png".to_owned()));
        assert_eq!(
            walk_all(&f.vault, "", false, WalkFilter::Notes, None),
            ["A.md", "a b.md", "a-b.md", "a.md", "é.md"]
        );
        assert_eq!(
            walk_all(&f.vault, "a", true, WalkFilter::Notes, None),
            ["a/b.md", "a/c/d.md"]
        );
        assert_eq!(
            walk_all(&f.vault, "a/", false, WalkFilter::Notes, None),
            ["a/b.md"]
        );
        let missing = Walk::new(
            f.vault.root(),
            &FolderPath::parse("nope").unwrap(),
            true,
            WalkFilter::Notes,
            None,
        );
        assert_eq!(missing.unwrap_err().code(), "note_not_found");
        let file = Walk::new(
            f.vault.root(),
            &FolderPath::parse("a.md").unwrap(),
            true,
            WalkFilter::Notes,
            None,
        );
        assert_eq!(file.unwrap_err().code(), "note_not_found");
    }

    // r[verify paging.order]
    #[test]
    fn resuming_after_any_path_yields_exactly_the_rest() {
        let f = fixture(TRICKY);
        let full = walk_all(&f.vault, "", true, WalkFilter::Notes, None);
        for (i, cursor) in full.iter().enumerate() {
            let rest = walk_all(&f.vault, "", true, WalkFilter::Notes, Some(cursor));
            assert_eq!(rest, full[i + 1..], "after {cursor}");
        }
        // A resume point that is not (or no longer) a note works the same.
        assert_eq!(
            walk_all(&f.vault, "", true, WalkFilter::Notes, Some("a/bz")),
            ["a/c/d.md", "ab/c.md", "z/y/x.md", "é.md"]
        );
        assert_eq!(
            walk_all(&f.vault, "", true, WalkFilter::Notes, Some("zz")),
            ["é.md"]
        );
    }

    #[test]
    fn resuming_skips_earlier_subtrees_without_listing_them() {
        let mut files = Vec::new();
        let names: Vec<String> = (0..50).map(|i| format!("d{i:02}/n.md")).collect();
        for name in &names {
            files.push((name.as_str(), "x"));
        }
        let f = fixture(&files);
        let after = VaultPath::parse("d48/n.md").unwrap();
        let mut walk = notes_walk(&f.vault, Some(&after));
        assert_eq!(walk.next().unwrap().unwrap().as_str(), "d49/n.md");
        assert!(walk.next().is_none());
        // The root, d48 (the resume point's own folder) and d49: not the 48 folders before.
        assert_eq!(walk.folders_listed(), 3);
    }

    #[cfg(unix)]
    #[test]
    fn links_to_files_inside_are_walked_and_others_are_not() {
        let f = fixture(&[("real.md", "r"), ("dir/x.md", "x")]);
        let root = f.vault.root().path();
        let outside = f.dir.path().join("outside.md");
        fs::write(&outside, "o").unwrap();
        std::os::unix::fs::symlink(root.join("real.md"), root.join("alias.md")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("escape.md")).unwrap();
        std::os::unix::fs::symlink(root.join("dir"), root.join("loop")).unwrap();
        std::os::unix::fs::symlink(root, root.join("dir/up")).unwrap();
        assert_eq!(
            walk_all(&f.vault, "", true, WalkFilter::Notes, None),
            ["alias.md", "dir/x.md", "real.md"]
        );
    }

    /// A recursive walk of every note of the vault, after `after` (if given).
    fn notes_walk<'a>(vault: &'a Vault, after: Option<&VaultPath>) -> Walk<'a> {
        Walk::new(
            vault.root(),
            &FolderPath::root(),
            true,
            WalkFilter::Notes,
            after,
        )
        .unwrap()
    }

    fn read_request<'a>(
        vault: &'a Vault,
        acl: &'a Acl,
        scopes: &'a Scopes,
        budget: usize,
        denied: DeniedPolicy,
    ) -> PageRequest<'a> {
        PageRequest {
            vault,
            acl,
            scopes,
            budget,
            ceiling: 0,
            denied,
        }
    }

    /// Pages through a folder the way the tool does; returns each page's note paths and
    /// errors entries as JSON.
    fn paginate(
        vault: &Vault,
        acl: &Acl,
        scopes: &Scopes,
        budget: usize,
    ) -> Vec<(Vec<String>, Vec<Value>)> {
        let mut pages = Vec::new();
        let mut after: Option<VaultPath> = None;
        loop {
            let walk = notes_walk(vault, after.as_ref());
            let request = read_request(vault, acl, scopes, budget, DeniedPolicy::Omit);
            let page = fill_page(&request, walk_candidates(walk), &mut NoteEntryEncoder);
            let json: Value = serde_json::from_slice(&page.write_json("main", Some("c"))).unwrap();
            assert!(page.used <= budget || page.notes.is_empty() && page.errors.len() == 1);
            let paths = json["notes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n["path"].as_str().unwrap().to_owned())
                .collect();
            pages.push((paths, json["errors"].as_array().unwrap().clone()));
            if page.exhausted {
                return pages;
            }
            assert!(page.consumed > 0, "every page makes progress");
            after = Some(VaultPath::parse(page.last_path.as_deref().unwrap()).unwrap());
        }
    }

    // r[verify paging.read-notes.shape]
    #[test]
    fn entries_carry_content_frontmatter_and_hash() {
        let f = fixture(&[("n.md", "---\nstatus: done\n---\nbody \"quoted\"\n")]);
        let acl = Acl::unrestricted();
        let scopes = Scopes::all();
        let walk = notes_walk(&f.vault, None);
        let page = fill_page(
            &read_request(&f.vault, &acl, &scopes, 10_000, DeniedPolicy::Omit),
            walk_candidates(walk),
            &mut NoteEntryEncoder,
        );
        let bytes = page.write_json("main", None);
        let json: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            json,
            json!({
                "vault": "main",
                "notes": [{
                    "path": "n.md",
                    "content": "---\nstatus: done\n---\nbody \"quoted\"\n",
                    "frontmatter": {"status": "done"},
                    "content_hash": crate::content_hash(b"---\nstatus: done\n---\nbody \"quoted\"\n"),
                }],
                "errors": [],
                "next_cursor": null,
            })
        );
        assert!(page.exhausted);
        assert_eq!(wire_cost(&bytes), envelope_overhead("main", 0) + page.used);
        let raw = page.to_raw_value("main", Some("abc")).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(raw.get()).unwrap()["next_cursor"],
            "abc"
        );
        assert_eq!(
            wire_cost(&page.write_json("main", Some("abcdef"))),
            envelope_overhead("main", 6) + page.used
        );
    }

    // r[verify paging.progress]
    // r[verify paging.too-large]
    #[test]
    fn pages_fill_the_budget_make_progress_and_skip_what_never_fits() {
        let body = |n: usize| "x".repeat(n);
        let (b100, b300, b5000) = (body(100), body(300), body(5000));
        let f = fixture(&[
            ("a.md", &b100),
            ("b.md", &b100),
            ("c.md", &b5000),
            ("d.md", &b300),
            ("e.md", &b100),
        ]);
        let acl = Acl::unrestricted();
        let scopes = Scopes::all();
        // One encoded 300-byte note costs ~890 bytes as sent (its JSON twice, the copy's
        // quotes escaped); a 100-byte one ~490. A budget of 1,040 has room for a note of 520.
        let pages = paginate(&f.vault, &acl, &scopes, 1_040);
        let all_notes: Vec<String> = pages.iter().flat_map(|(n, _)| n.clone()).collect();
        assert_eq!(all_notes, ["a.md", "b.md", "d.md", "e.md"]);
        let errors: Vec<&Value> = pages.iter().flat_map(|(_, e)| e).collect();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0]["path"], "c.md");
        assert_eq!(errors[0]["code"], "too_large");
        assert_eq!(errors[0]["details"], json!({"size": 5000, "budget": 520}));
        assert_eq!(
            pages[0].0,
            ["a.md", "b.md"],
            "the first page is filled as far as it goes"
        );
        assert!(pages.len() >= 3);
    }

    #[test]
    fn a_note_exactly_the_budget_is_emitted_alone() {
        let f = fixture(&[("a.md", "hello"), ("b.md", "hello")]);
        let acl = Acl::unrestricted();
        let scopes = Scopes::all();
        let path = VaultPath::parse("a.md").unwrap();
        let size = wire_cost(
            &NoteEntryEncoder
                .encode(&f.vault, &path, usize::MAX)
                .unwrap(),
        );
        let pages = paginate(&f.vault, &acl, &scopes, size);
        assert_eq!(
            pages.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(),
            [vec!["a.md".to_owned()], vec!["b.md".to_owned()]]
        );
        let pages = paginate(&f.vault, &acl, &scopes, size - 1);
        assert!(pages.iter().all(|(n, _)| n.is_empty()));
        assert_eq!(pages.iter().map(|(_, e)| e.len()).sum::<usize>(), 2);
    }

    // r[verify paging.acl-per-page]
    // r[verify vault.acl.list-hides]
    // r[verify paging.paths]
    #[test]
    fn the_acl_is_checked_for_every_note_on_every_page() {
        let f = fixture(&[("a.md", "a"), ("private/p.md", "p"), ("z.md", "z")]);
        let acl = Acl::compile(&AclConfig {
            rules: vec![ScopeRuleConfig {
                glob: "private/**".into(),
                scopes: vec!["read:private".into()],
            }],
            ..AclConfig::default()
        })
        .unwrap();
        let plain = Scopes::granted(Vec::<String>::new());
        let pages = paginate(&f.vault, &acl, &plain, 10_000);
        assert_eq!(pages[0].0, ["a.md", "z.md"], "omitted from a folder walk");
        assert!(pages[0].1.is_empty());
        // Explicit paths: reported as acl_denied, with unknown and hostile paths beside it.
        let paths: Vec<String> = ["private/p.md", "a.md", "missing.md", "../x"]
            .map(String::from)
            .to_vec();
        let request = read_request(&f.vault, &acl, &plain, 10_000, DeniedPolicy::Report);
        let page = fill_page(&request, path_candidates(&paths, 0), &mut NoteEntryEncoder);
        let json: Value = serde_json::from_slice(&page.write_json("main", None)).unwrap();
        let codes: Vec<&str> = json["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["code"].as_str().unwrap())
            .collect();
        assert_eq!(codes, ["acl_denied", "note_not_found", "path_invalid"]);
        assert_eq!(json["notes"][0]["path"], "a.md");
        assert_eq!(page.consumed, 4);
        // A path revoked between pages is not served on the next page.
        let open = Acl::unrestricted();
        let request = read_request(&f.vault, &open, &plain, 10_000, DeniedPolicy::Omit);
        let walk = notes_walk(&f.vault, None);
        let first = fill_page(
            &PageRequest {
                budget: 300,
                ceiling: 0,
                ..request
            },
            walk_candidates(walk),
            &mut NoteEntryEncoder,
        );
        assert_eq!(first.last_path.as_deref(), Some("a.md"));
        let after = VaultPath::parse("a.md").unwrap();
        let walk = notes_walk(&f.vault, Some(&after));
        let second = fill_page(
            &read_request(&f.vault, &acl, &plain, 10_000, DeniedPolicy::Omit),
            walk_candidates(walk),
            &mut NoteEntryEncoder,
        );
        let json: Value = serde_json::from_slice(&second.write_json("main", None)).unwrap();
        assert_eq!(json["notes"].as_array().unwrap().len(), 1);
        assert_eq!(json["notes"][0]["path"], "z.md");
    }

    // r[verify paging.order]
    #[test]
    fn notes_added_or_removed_mid_walk_are_neither_skipped_nor_repeated() {
        let f = fixture(&[("b.md", "b"), ("d.md", "d"), ("f.md", "f"), ("h.md", "h")]);
        let acl = Acl::unrestricted();
        let scopes = Scopes::all();
        let one = wire_cost(
            &NoteEntryEncoder
                .encode(&f.vault, &VaultPath::parse("b.md").unwrap(), usize::MAX)
                .unwrap(),
        );
        // Two entries and the comma between them (counted twice, as sent).
        let budget = 2 * one + 2;
        let page_at = |after: Option<&VaultPath>| {
            let walk = notes_walk(&f.vault, after);
            let page = fill_page(
                &read_request(&f.vault, &acl, &scopes, budget, DeniedPolicy::Omit),
                walk_candidates(walk),
                &mut NoteEntryEncoder,
            );
            let json: Value = serde_json::from_slice(&page.write_json("main", None)).unwrap();
            let paths: Vec<String> = json["notes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n["path"].as_str().unwrap().to_owned())
                .collect();
            (
                paths,
                page.last_path.map(|p| VaultPath::parse(&p).unwrap()),
                page.exhausted,
            )
        };
        let (first, cursor, done) = page_at(None);
        assert_eq!(
            (first.as_slice(), done),
            (["b.md".to_owned(), "d.md".to_owned()].as_slice(), false)
        );
        // Mid-walk: one note before the cursor, one after; one not-yet-emitted note removed;
        // the cursor's own note removed too.
        f.put("a.md", "a");
        f.put("c.md", "c");
        f.put("e.md", "e");
        f.vault
            .delete(&VaultPath::parse("f.md").unwrap(), &Precondition::None)
            .unwrap();
        f.vault
            .delete(&VaultPath::parse("d.md").unwrap(), &Precondition::None)
            .unwrap();
        let (second, cursor, done) = page_at(cursor.as_ref());
        assert_eq!(second, ["e.md", "h.md"]);
        assert!(done);
        assert_eq!(cursor.unwrap().as_str(), "h.md");
        let mut seen = first.clone();
        seen.extend(second);
        let unique: std::collections::BTreeSet<_> = seen.iter().collect();
        assert_eq!(unique.len(), seen.len(), "nothing repeated");
        // A write through the vault (temp file + rename) mid-walk leaves no stray entries.
        f.vault
            .write(
                &VaultPath::parse("g.md").unwrap(),
                b"g",
                &Precondition::None,
            )
            .unwrap();
        let (third, _, _) = page_at(Some(&VaultPath::parse("f.md").unwrap()));
        assert_eq!(third, ["g.md", "h.md"]);
    }

    // r[verify paging.memory]
    #[test]
    fn a_page_reads_each_note_once_and_holds_at_most_its_budget() {
        #[derive(Default)]
        struct Counting(Vec<String>);
        impl EntryEncoder for Counting {
            fn encode(
                &mut self,
                vault: &Vault,
                path: &VaultPath,
                budget: usize,
            ) -> VaultResult<Vec<u8>> {
                self.0.push(path.as_str().to_owned());
                NoteEntryEncoder.encode(vault, path, budget)
            }
        }
        let names: Vec<String> = (0..30).map(|i| format!("n{i:02}.md")).collect();
        let files: Vec<(&str, &str)> = names
            .iter()
            .map(|n| (n.as_str(), "some text of a note"))
            .collect();
        let f = fixture(&files);
        let acl = Acl::unrestricted();
        let scopes = Scopes::all();
        let budget = 1000;
        let mut counting = Counting::default();
        let walk = notes_walk(&f.vault, None);
        let page = fill_page(
            &read_request(&f.vault, &acl, &scopes, budget, DeniedPolicy::Omit),
            walk_candidates(walk),
            &mut counting,
        );
        let held: usize = page.notes.iter().map(|n| n.len()).sum();
        assert!(held <= budget && page.used <= budget);
        assert!(page.notes.len() > 1 && !page.exhausted);
        // Every note emitted was read once; the one that did not fit was read once and left.
        assert_eq!(counting.0.len(), page.notes.len() + 1);
        let unique: std::collections::BTreeSet<_> = counting.0.iter().collect();
        assert_eq!(unique.len(), counting.0.len());
    }

    #[test]
    fn list_entries_are_small_and_page_too() {
        let f = fixture(&[("a.md", "aaaa"), ("b/c.md", "c")]);
        let acl = Acl::unrestricted();
        let scopes = Scopes::all();
        let walk = notes_walk(&f.vault, None);
        let page = fill_page(
            &read_request(&f.vault, &acl, &scopes, 1000, DeniedPolicy::Omit),
            walk_candidates(walk),
            &mut ListEntryEncoder,
        );
        let json: Value = serde_json::from_slice(&page.write_json("main", None)).unwrap();
        assert_eq!(
            json["notes"],
            json!([{"path": "a.md", "size": 4}, {"path": "b/c.md", "size": 1}])
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        // r[verify paging.order]
        // r[verify paging.progress]
        #[test]
        fn paging_any_vault_emits_every_fitting_note_once_in_order(
            files in proptest::collection::btree_map("[ab]{1,2}(/[ab][ab.]?){0,2}", 0usize..400, 1..12),
            budget in 240usize..1_800,
        ) {
            let temp = TempVault::open("v", "s", 0, 1);
            let vault = &temp.vault;
            let mut written = Vec::new();
            for (stem, size) in &files {
                let Ok(path) = VaultPath::parse(&format!("{stem}.md")) else { continue };
                if vault.write(&path, "y".repeat(*size).as_bytes(), &Precondition::None).is_ok() {
                    written.push(path);
                }
            }
            // Keep only what is still a note (a later path may have turned an earlier note's
            // name into a folder on the way, or been refused for it).
            let mut expected_fit = Vec::new();
            let mut expected_too_large = Vec::new();
            for path in &written {
                if vault.exists(path).unwrap() {
                    let size = wire_cost(&NoteEntryEncoder.encode(vault, path, usize::MAX).unwrap());
                    if size <= budget { expected_fit.push(path.as_str().to_owned()) } else { expected_too_large.push(path.as_str().to_owned()) }
                }
            }
            expected_fit.sort();
            expected_too_large.sort();
            let acl = Acl::unrestricted();
            let pages = paginate(vault, &acl, &Scopes::all(), budget);
            let emitted: Vec<String> = pages.iter().flat_map(|(n, _)| n.clone()).collect();
            prop_assert_eq!(emitted, expected_fit);
            let errors: Vec<String> = pages.iter().flat_map(|(_, e)| e.iter().map(|e| e["path"].as_str().unwrap().to_owned())).collect();
            prop_assert_eq!(errors, expected_too_large);
        }
    }

    // r[verify vault.note.utf8-read]
    #[test]
    fn a_note_that_is_not_utf8_is_a_per_path_error_on_the_page() {
        let f = fixture(&[("a.md", "a"), ("z.md", "z")]);
        std::fs::write(f.vault.root().path().join("m.md"), b"bad \xff\xfe bytes").unwrap();
        let open = Acl::unrestricted();
        let plain = Scopes::granted(Vec::<String>::new());
        let request = read_request(&f.vault, &open, &plain, 10_000, DeniedPolicy::Omit);
        let page = fill_page(
            &request,
            walk_candidates(notes_walk(&f.vault, None)),
            &mut NoteEntryEncoder,
        );
        let json: Value = serde_json::from_slice(&page.write_json("main", None)).unwrap();
        let notes: Vec<&str> = json["notes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["path"].as_str().unwrap())
            .collect();
        assert_eq!(notes, ["a.md", "z.md"]);
        let error = &json["errors"][0];
        assert_eq!(error["path"], "m.md");
        assert_eq!(error["code"], "invalid_input");
        assert_eq!(error["details"]["reason"], "not_utf8");
        assert!(
            !json.to_string().contains('\u{fffd}'),
            "no replacement characters"
        );
    }
}
