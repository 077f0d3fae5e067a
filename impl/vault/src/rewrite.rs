//! Link rewrites across the vault: what `rewrite_link` and `move_note.update_backlinks`
//! would change, computed before anything is written (seed: `rewrite_link`'s confirmation
//! is bound to "the set of notes the rewrite would touch, and their content: a note
//! changing, or a new note gaining a link to the target").
//!
//! [`plan_rewrite`] reads every note under the folder once and returns the notes a rewrite
//! would touch, each with its current content hash and its rewritten content. The set of
//! `(path, hash)` pairs is the state the confirmation binds: a touched note that changes
//! changes its hash, and a note that gains a link to the target joins the set. Applying the
//! plan writes each note guarded by its hash ([`RewritePlan::apply`]), so a note that
//! changed after planning is refused with `concurrent_modification` instead of being
//! overwritten. The notes are written one by one; there is no transaction across notes, so
//! a refusal part-way leaves the notes before it rewritten (the result says which).
//!
//! Notes that are not valid UTF-8 are not rewritten (a lossy rewrite would damage them).

use std::ops::Range;

use crate::canvas_refs::rewrite_canvas_refs;
use crate::error::{VaultError, VaultResult};
use crate::links::{LinkMatcher, LinkResolver, LinkRewrite, find_links};
use crate::mdlinks::{
    MdTarget, encode_like, find_md_links_beside, has_md, md_path_for, resolve_markdown,
};
use crate::path::{FolderPath, VaultPath};
use crate::vault::{Precondition, Vault, WriteOutcome, content_hash};
use crate::walk::{Walk, WalkFilter};

/// A rewrite of the links of every kind (wikilinks, embeds, Markdown links) that lead to a
/// target, and of canvases' references to it.
#[derive(Debug, Clone)]
pub struct NoteRewrite<'a> {
    /// Which links, the wikilink text they get, and whether embeds are rewritten.
    pub links: LinkRewrite<'a>,
    /// The file the rewritten links must lead to, when there is one: Markdown links get a
    /// path to it in their own style, canvases its path. Without one, a Markdown link gets
    /// `links.new_target` as its path and canvases are left alone.
    pub new_file: Option<&'a VaultPath>,
    /// The vault's files when the new text is read (after a move), when they differ from
    /// the resolver the links are matched with.
    pub after: Option<&'a LinkResolver>,
    /// The note this call moves (`from`, `to`): its own relative Markdown links are
    /// rewritten to lead where they led before, read from its new folder.
    pub moved: Option<(&'a VaultPath, &'a VaultPath)>,
}

// r[impl vault.links.rewrite-spans]
/// The note at `source` with every link the rewrite names replaced (only the target text
/// of a wikilink, only the path of a Markdown link), and how many were; `None` when none is.
pub fn rewrite_note(
    content: &str,
    source: &VaultPath,
    resolver: &LinkResolver,
    rewrite: &NoteRewrite<'_>,
) -> Option<(String, usize)> {
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    let wikis = find_links(content);
    let lr = &rewrite.links;
    for link in &wikis {
        if link.target.trim().is_empty() || (link.embed && !lr.include_embeds) {
            continue;
        }
        if lr
            .matcher
            .matches_resolved(resolver.resolve(&link.target), &link.target)
        {
            edits.push((link.target_range.clone(), lr.new_target.to_owned()));
        }
    }
    let after = rewrite.after.unwrap_or(resolver);
    let source_after = match rewrite.moved {
        Some((from, to)) if from == source => to,
        _ => source,
    };
    for link in find_md_links_beside(content, &wikis) {
        let resolved = resolve_markdown(resolver, source, &link.path);
        let named =
            (lr.include_embeds || !link.embed) && lr.matcher.matches_resolved(resolved, &link.path);
        let file = if named {
            rewrite.new_file
        } else if source_after != source {
            // The moved note's own link: rewritten only when its new folder would send it
            // elsewhere.
            match resolved {
                Some(file) if resolve_markdown(after, source_after, &link.path) != Some(file) => {
                    Some(file)
                }
                _ => continue,
            }
        } else {
            continue;
        };
        let text = match file {
            Some(file) => md_path_for(
                &link,
                source,
                resolver,
                &MdTarget {
                    source_after,
                    after,
                    file,
                },
            ),
            None => {
                let bare = lr.new_target;
                let has_ext = bare.rsplit('/').next().is_some_and(|n| n.contains('.'));
                if has_md(&link.path) && !has_ext {
                    encode_like(&link, &format!("{bare}.md"))
                } else {
                    encode_like(&link, bare)
                }
            }
        };
        edits.push((link.path_range.clone(), text));
    }
    if edits.is_empty() {
        return None;
    }
    edits.sort_by_key(|(range, _)| range.start);
    let mut out = String::with_capacity(content.len());
    let mut copied = 0;
    for (range, text) in &edits {
        out.push_str(&content[copied..range.start]);
        out.push_str(text);
        copied = range.end;
    }
    out.push_str(&content[copied..]);
    Some((out, edits.len()))
}

impl<'a> From<LinkRewrite<'a>> for NoteRewrite<'a> {
    /// A rewrite of links to a target with no file to lead to instead.
    fn from(links: LinkRewrite<'a>) -> Self {
        NoteRewrite {
            links,
            new_file: None,
            after: None,
            moved: None,
        }
    }
}

/// Whether a path is a canvas (`.canvas`).
pub fn is_canvas(path: &VaultPath) -> bool {
    path.as_str()
        .rsplit_once('.')
        .is_some_and(|(_, ext)| ext.eq_ignore_ascii_case("canvas"))
}

/// What `rewrite` changes in the file at `path` with this `text` (a note's links, a
/// canvas's references), and how many links.
pub fn rewrite_file(
    path: &VaultPath,
    text: &str,
    resolver: &LinkResolver,
    rewrite: &NoteRewrite<'_>,
) -> Option<(String, usize)> {
    if is_canvas(path) {
        let (LinkMatcher::Resolved(from), Some(to)) = (rewrite.links.matcher, rewrite.new_file)
        else {
            return None;
        };
        rewrite_canvas_refs(text, from.as_str(), to.as_str())
    } else if path.is_note() {
        rewrite_note(text, path, resolver, rewrite)
    } else {
        None
    }
}

/// Indexes every file of the vault (notes and attachments) for link resolution.
pub fn build_resolver(vault: &Vault) -> VaultResult<LinkResolver> {
    let walk = Walk::new(
        vault.root(),
        &FolderPath::root(),
        true,
        WalkFilter::AllFiles,
        None,
    )?;
    let mut resolver = LinkResolver::default();
    for file in walk {
        resolver.insert(file?);
    }
    Ok(resolver)
}

/// One note a rewrite would change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TouchedNote {
    pub path: VaultPath,
    /// The content hash the note has now (what the confirmation binds).
    pub hash: String,
    pub new_content: String,
    /// How many links in it are rewritten.
    pub links: usize,
}

/// The notes a rewrite would touch, in path order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RewritePlan {
    pub notes: Vec<TouchedNote>,
}

impl RewritePlan {
    /// `(path, current hash)` of every touched note: the state a confirmation binds.
    pub fn state(&self) -> impl Iterator<Item = (&VaultPath, &str)> {
        self.notes.iter().map(|n| (&n.path, n.hash.as_str()))
    }

    pub fn links(&self) -> usize {
        self.notes.iter().map(|n| n.links).sum()
    }

    /// Writes every touched note, each only if it still has the hash it was planned with.
    /// On the first refusal, returns the paths already written and the error.
    pub fn apply(&self, vault: &Vault) -> Result<Vec<WriteOutcome>, (Vec<VaultPath>, VaultError)> {
        self.apply_reporting(vault, &mut |_| {})
    }

    /// [`RewritePlan::apply`], telling `written` how many notes are done after each write
    /// (a long rewrite reports its progress with it).
    pub fn apply_reporting(
        &self,
        vault: &Vault,
        written: &mut dyn FnMut(usize),
    ) -> Result<Vec<WriteOutcome>, (Vec<VaultPath>, VaultError)> {
        let mut outcomes = Vec::with_capacity(self.notes.len());
        for (i, note) in self.notes.iter().enumerate() {
            let precondition = Precondition::HashIs(note.hash.clone());
            // r[impl versions.keep.links-and-tags]
            // Applying a rewrite is always confirmed, so each note keeps what it replaces.
            match vault
                .write_keeping(&note.path, note.new_content.as_bytes(), &precondition)
                .map(|kept| kept.outcome)
            {
                Ok(outcome) => {
                    outcomes.push(outcome);
                    written(i + 1);
                }
                Err(e) => {
                    let written = self.notes[..i].iter().map(|n| n.path.clone()).collect();
                    return Err((written, e));
                }
            }
        }
        Ok(outcomes)
    }
}

/// What the rewrite would change under `folder` (recursively), in notes and canvases,
/// considering only files for which `include` is true (the tool passes the caller's ACL).
pub fn plan_rewrite(
    vault: &Vault,
    folder: &FolderPath,
    resolver: &LinkResolver,
    rewrite: &NoteRewrite<'_>,
    include: &dyn Fn(&VaultPath) -> bool,
) -> VaultResult<RewritePlan> {
    let walk = Walk::new(vault.root(), folder, true, WalkFilter::AllFiles, None)?;
    let mut plan = RewritePlan::default();
    for path in walk {
        let path = path?;
        if !(path.is_note() || is_canvas(&path)) || !include(&path) {
            continue;
        }
        if let Some(touched) = plan_file(vault, &path, resolver, rewrite)? {
            plan.notes.push(touched);
        }
    }
    plan.notes.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(plan)
}

/// What `rewrite` changes in the file at `path`, read now; `None` when nothing, when the
/// file is gone, or when it is not UTF-8.
pub fn plan_file(
    vault: &Vault,
    path: &VaultPath,
    resolver: &LinkResolver,
    rewrite: &NoteRewrite<'_>,
) -> VaultResult<Option<TouchedNote>> {
    let content = match vault.read_if_exists(path)? {
        Some(content) => content,
        // Gone since the listing: nothing to rewrite.
        None => return Ok(None),
    };
    let Ok(text) = std::str::from_utf8(&content.bytes) else {
        return Ok(None);
    };
    Ok(
        rewrite_file(path, text, resolver, rewrite).map(|(new_content, links)| TouchedNote {
            path: path.clone(),
            hash: content.hash,
            new_content,
            links,
        }),
    )
}

/// The backlink update of a move from `from` to `to`: links of every kind that resolve to
/// `from` now are pointed at `to` (wikilinks with the shortest link text that will resolve
/// to `to` after the move), canvases' references follow, and the moved note's own relative
/// Markdown links are kept leading where they led. A touched note that is the moved note
/// itself is listed at `to`, so the plan applies after the move (its content, hence its
/// hash, is unchanged by the move).
pub fn plan_backlinks(
    vault: &Vault,
    resolver: &LinkResolver,
    from: &VaultPath,
    to: &VaultPath,
    include: &dyn Fn(&VaultPath) -> bool,
) -> VaultResult<(RewritePlan, String)> {
    let mut after = resolver.clone();
    after.remove(from);
    after.insert(to.clone());
    let new_target = after.link_text_for(to);
    let matcher = LinkMatcher::Resolved(from.clone());
    let rewrite = NoteRewrite {
        links: LinkRewrite {
            matcher: &matcher,
            new_target: &new_target,
            include_embeds: true,
        },
        new_file: Some(to),
        after: Some(&after),
        moved: Some((from, to)),
    };
    let mut plan = plan_rewrite(vault, &FolderPath::root(), resolver, &rewrite, include)?;
    for note in &mut plan.notes {
        if &note.path == from {
            note.path = to.clone();
        }
    }
    plan.notes.sort_by(|a, b| a.path.cmp(&b.path));
    Ok((plan, new_target))
}

/// The state hash of a plan, for callers that want one string: SHA-256 (first 32 hex) over
/// `path\0hash\n` of every touched note in path order. Empty plans hash the empty input.
pub fn plan_state_hash(plan: &RewritePlan) -> String {
    let mut text = String::new();
    for (path, hash) in plan.state() {
        text.push_str(path.as_str());
        text.push('\0');
        text.push_str(hash);
        text.push('\n');
    }
    content_hash(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::sync::Arc;
    use tc_gate::clock::{ManualClock, SeededEntropy};

    fn p(s: &str) -> VaultPath {
        VaultPath::parse(s).unwrap()
    }

    fn fixture(files: &[(&str, &str)]) -> (tempfile::TempDir, Vault) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("vault");
        fs::create_dir_all(&root).unwrap();
        let vault = Vault::open(
            "main",
            &root,
            dir.path().join("snapshots"),
            Arc::new(ManualClock::new(0)),
            Arc::new(SeededEntropy::new(5)),
        )
        .unwrap();
        for (path, content) in files {
            vault
                .write(&p(path), content.as_bytes(), &Precondition::None)
                .unwrap();
        }
        (dir, vault)
    }

    #[test]
    fn plan_lists_touched_notes_with_hashes_and_applies_them() {
        let (_dir, vault) = fixture(&[
            ("target.md", "T"),
            ("a.md", "see [[target]] and ![[target]]"),
            ("sub/b.md", "[[target|T]] `[[target]]`"),
            ("c.md", "nothing here"),
            ("d.png", "binary-ish"),
        ]);
        let resolver = build_resolver(&vault).unwrap();
        assert!(resolver.contains(&p("d.png")));
        let matcher = LinkMatcher::for_target(&resolver, "target");
        let rewrite: NoteRewrite = LinkRewrite {
            matcher: &matcher,
            new_target: "renamed",
            include_embeds: false,
        }
        .into();
        let plan =
            plan_rewrite(&vault, &FolderPath::root(), &resolver, &rewrite, &|_| true).unwrap();
        let paths: Vec<&str> = plan.notes.iter().map(|n| n.path.as_str()).collect();
        assert_eq!(paths, ["a.md", "sub/b.md"]);
        assert_eq!(plan.links(), 2);
        assert_eq!(
            plan.notes[0].hash,
            content_hash(b"see [[target]] and ![[target]]")
        );
        assert_eq!(plan.notes[0].new_content, "see [[renamed]] and ![[target]]");
        // Restricting by folder or by the include filter narrows the set.
        let sub = plan_rewrite(
            &vault,
            &FolderPath::parse("sub").unwrap(),
            &resolver,
            &rewrite,
            &|_| true,
        )
        .unwrap();
        assert_eq!(sub.notes.len(), 1);
        let filtered = plan_rewrite(&vault, &FolderPath::root(), &resolver, &rewrite, &|p| {
            p.as_str() != "a.md"
        })
        .unwrap();
        assert_eq!(filtered.notes.len(), 1);

        plan.apply(&vault).unwrap();
        assert_eq!(
            vault.read(&p("sub/b.md")).unwrap().bytes,
            b"[[renamed|T]] `[[target]]`"
        );
    }

    #[test]
    fn the_plan_state_changes_when_a_touched_note_changes_or_a_new_note_gains_a_link() {
        let (_dir, vault) =
            fixture(&[("target.md", "T"), ("a.md", "[[target]]"), ("b.md", "none")]);
        let resolver = build_resolver(&vault).unwrap();
        let matcher = LinkMatcher::for_target(&resolver, "target");
        let rewrite: NoteRewrite = LinkRewrite {
            matcher: &matcher,
            new_target: "x",
            include_embeds: true,
        }
        .into();
        let plan =
            || plan_rewrite(&vault, &FolderPath::root(), &resolver, &rewrite, &|_| true).unwrap();
        let before = plan_state_hash(&plan());
        assert_eq!(
            plan_state_hash(&plan()),
            before,
            "stable while nothing changes"
        );
        vault
            .write(&p("b.md"), b"still none", &Precondition::None)
            .unwrap();
        assert_eq!(
            plan_state_hash(&plan()),
            before,
            "an untouched note changing is not drift"
        );
        vault
            .write(&p("a.md"), b"[[target]] edited", &Precondition::None)
            .unwrap();
        let edited = plan_state_hash(&plan());
        assert_ne!(edited, before);
        vault
            .write(&p("new.md"), b"[[target]]", &Precondition::None)
            .unwrap();
        assert_ne!(plan_state_hash(&plan()), edited);
    }

    #[test]
    fn a_stale_plan_is_refused_note_by_note() {
        let (_dir, vault) = fixture(&[
            ("target.md", "T"),
            ("a.md", "[[target]]"),
            ("b.md", "[[target]]"),
        ]);
        let resolver = build_resolver(&vault).unwrap();
        let matcher = LinkMatcher::for_target(&resolver, "target");
        let rewrite: NoteRewrite = LinkRewrite {
            matcher: &matcher,
            new_target: "x",
            include_embeds: true,
        }
        .into();
        let plan =
            plan_rewrite(&vault, &FolderPath::root(), &resolver, &rewrite, &|_| true).unwrap();
        vault
            .write(&p("b.md"), b"[[target]] changed", &Precondition::None)
            .unwrap();
        let (written, error) = plan.apply(&vault).unwrap_err();
        assert_eq!(written, [p("a.md")]);
        assert_eq!(error.code(), "concurrent_modification");
        assert_eq!(vault.read(&p("b.md")).unwrap().bytes, b"[[target]] changed");
    }

    #[test]
    fn backlinks_follow_a_move() {
        let (_dir, vault) = fixture(&[
            ("old/Plan.md", "self [[Plan#Goals]]"),
            ("a.md", "[[Plan]] [[old/Plan|p]] ![[Plan]]"),
            ("other/Plan.md", "a second Plan, further away"),
        ]);
        let resolver = build_resolver(&vault).unwrap();
        assert_eq!(resolver.resolve("Plan"), Some(&p("old/Plan.md")));
        let (plan, new_target) = plan_backlinks(
            &vault,
            &resolver,
            &p("old/Plan.md"),
            &p("new/deeper/Plan.md"),
            &|_| true,
        )
        .unwrap();
        // After the move "Plan" would resolve to other/Plan.md (shorter), so the full path is used.
        assert_eq!(new_target, "new/deeper/Plan");
        let paths: Vec<&str> = plan.notes.iter().map(|n| n.path.as_str()).collect();
        assert_eq!(paths, ["a.md", "new/deeper/Plan.md"]);
        vault
            .rename(
                &p("old/Plan.md"),
                &p("new/deeper/Plan.md"),
                &Precondition::None,
                &Precondition::MustNotExist,
            )
            .unwrap();
        plan.apply(&vault).unwrap();
        assert_eq!(
            vault.read(&p("a.md")).unwrap().bytes,
            b"[[new/deeper/Plan]] [[new/deeper/Plan|p]] ![[new/deeper/Plan]]"
        );
        assert_eq!(
            vault.read(&p("new/deeper/Plan.md")).unwrap().bytes,
            b"self [[new/deeper/Plan#Goals]]"
        );
    }
}
