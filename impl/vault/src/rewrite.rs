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

use crate::error::{VaultError, VaultResult};
use crate::links::{LinkMatcher, LinkResolver, LinkRewrite, rewrite_links};
use crate::path::{FolderPath, VaultPath};
use crate::vault::{Precondition, Vault, WriteOutcome, content_hash};
use crate::walk::{Walk, WalkFilter};

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
            match vault.write(&note.path, note.new_content.as_bytes(), &precondition) {
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

/// What the rewrite would change under `folder` (recursively), considering only notes for
/// which `include` is true (the tool passes the caller's ACL).
pub fn plan_rewrite(
    vault: &Vault,
    folder: &FolderPath,
    resolver: &LinkResolver,
    rewrite: &LinkRewrite<'_>,
    include: &dyn Fn(&VaultPath) -> bool,
) -> VaultResult<RewritePlan> {
    let walk = Walk::new(vault.root(), folder, true, WalkFilter::Notes, None)?;
    let mut plan = RewritePlan::default();
    for path in walk {
        let path = path?;
        if !include(&path) {
            continue;
        }
        let content = match vault.read(&path) {
            Ok(content) => content,
            // Gone since the listing: nothing to rewrite.
            Err(VaultError::NoteNotFound { .. }) => continue,
            Err(e) => return Err(e),
        };
        let Ok(text) = std::str::from_utf8(&content.bytes) else {
            continue;
        };
        if let Some((new_content, links)) = rewrite_links(text, resolver, rewrite) {
            plan.notes.push(TouchedNote {
                path,
                hash: content.hash,
                new_content,
                links,
            });
        }
    }
    Ok(plan)
}

/// The backlink update of a move from `from` to `to`: links that resolve to `from` now are
/// pointed at `to`, with the shortest link text that will resolve to `to` after the move.
/// A touched note that is the moved note itself is listed at `to`, so the plan applies
/// after the move (its content, hence its hash, is unchanged by the move).
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
    let rewrite = LinkRewrite {
        matcher: &matcher,
        new_target: &new_target,
        include_embeds: true,
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
        let rewrite = LinkRewrite {
            matcher: &matcher,
            new_target: "renamed",
            include_embeds: false,
        };
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
        let rewrite = LinkRewrite {
            matcher: &matcher,
            new_target: "x",
            include_embeds: true,
        };
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
        let rewrite = LinkRewrite {
            matcher: &matcher,
            new_target: "x",
            include_embeds: true,
        };
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
