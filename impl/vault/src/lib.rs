//! tc-vault: the Obsidian vault under the gated tools (issue 4; CONTRACT.md §2, §3, §5).
//!
//! The layers, bottom up:
//! - [`path`]: caller strings judged into [`VaultPath`]s, resolved against the root without
//!   leaving it;
//! - [`vault`]: reading, hashing, atomic writing, moving, copying, deleting notes, and the
//!   delete snapshots `restore_note` restores from;
//! - [`note`], [`links`], [`tasks`]: what is inside a note (frontmatter, wikilinks and
//!   embeds, Tasks-plugin task lines);
//! - [`rewrite`]: what a link rewrite or a move's backlink update would touch, planned
//!   before anything is written, with the state a confirmation binds;
//! - [`acl`] and [`conventions`]: the folder ACL and the block rules of the write gate;
//! - [`walk`]: the sorted, resumable folder walk and the byte-budgeted page builder behind
//!   `read_notes` and `list_notes`.
//!
//! On top: [`tools`], the registry of the tools with their schemas, annotations and
//! confirmation declarations, and [`pipeline`], the dispatch stages from schema validation
//! to the handler that every confirmation route shares.

pub mod acl;
pub mod conventions;
pub mod error;
pub mod links;
pub mod note;
pub mod paging_tools;
pub mod path;
pub mod pipeline;
pub mod rewrite;
pub mod tasks;
pub mod tools;
pub mod vault;
pub mod walk;

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
    NoteContent, NoteStat, Precondition, SnapshotId, SnapshotInfo, Vault, VaultConfig,
    WriteOutcome, content_hash, snapshot_dir_for,
};
pub use walk::{Candidate, DeniedPolicy, Page, PageRequest, Walk, WalkFilter};
