//! tc-vault: the Obsidian vault under the gated tools (spec/config.md, spec/tools.md, spec/paging.md; spec/vault.md).
//!
//! The layers, bottom up:
//! - [`path`]: caller strings judged into [`VaultPath`]s, resolved against the root without
//!   leaving it; [`locate`]: where a path really leads through links, for the rules that
//!   judge it there;
//! - [`vault`]: reading, hashing, atomic writing, moving, copying, deleting notes, and the
//!   delete snapshots `restore_note` restores from;
//! - [`note`], [`links`], [`tasks`]: what is inside a note (frontmatter, wikilinks and
//!   embeds, Tasks-plugin task lines);
//! - [`rewrite`]: what a link rewrite or a move's backlink update would touch, planned
//!   before anything is written, with the state a confirmation binds;
//! - [`acl`] and [`conventions`]: the folder ACL and the block rules of the write gate;
//! - [`walk`]: the sorted, resumable folder walk and the byte-budgeted page builder behind
//!   `read_notes` and `list_notes`;
//! - [`wiki`]: the seals of generated wiki pages (`commit_wiki_page`).
//!
//! The tools over the vault live above it: the framework in tc-tools, the note tools in
//! tc-notes.

pub mod acl;
pub mod canvas_refs;
pub mod conventions;
pub mod error;
pub mod frontmatter_edit;
#[doc(hidden)]
pub mod fuzz_bodies;
pub mod links;
pub mod locate;
pub mod mdlinks;
pub mod note;
pub mod path;
pub mod rewrite;
pub mod sections;
pub mod tasks;
#[cfg(test)]
pub(crate) mod test_support;
pub mod vault;
pub mod walk;
pub mod wiki;

pub use acl::{Acl, AclConfig, AclDenied, AclOp, Scopes};
pub use conventions::{
    ContentFacts, ConventionBlocked, ConventionConfig, Conventions, Prior, WriteIntent, WriteKind,
};
pub use error::{VaultError, VaultResult};
pub use links::{Link, LinkMatcher, LinkResolver, LinkRewrite};
pub use note::{Frontmatter, FrontmatterError, ParsedNote};
pub use path::{FolderPath, VaultPath, VaultRoot};
pub use rewrite::{RewritePlan, TouchedNote};
pub use tasks::{Date, Task, TaskStatus};
pub use vault::{
    LockedNote, NoteContent, NoteStat, Precondition, SnapshotId, SnapshotInfo, Vault, VaultConfig,
    WriteOutcome, content_hash, snapshot_dir_for,
};
pub use walk::{Candidate, DeniedPolicy, Page, PageRequest, Walk, WalkFilter};
pub use wiki::{SealState, WikiSealer, seal_dir_for};
