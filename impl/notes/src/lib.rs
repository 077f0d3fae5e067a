//! tc-notes: the twelve note tools, on the tool framework of tc-tools (spec/tools.md;
//! spec/tools.md; spec/drift.md `drift.bind.path-tools`, `drift.bind.rewrite-link`,
//! `drift.bind.restore-note.version`, `drift.bind.commit-wiki-page`; spec/versions.md;
//! spec/paging.md).
//!
//! - [`paging`]: `read_notes` and `list_notes`, one page per call under the governor's cap;
//! - [`write`]: `write_note` and `commit_wiki_page`;
//! - [`transfer`]: `move_note` and `copy_note`;
//! - [`delete`]: `delete_note` and `restore_note`;
//! - [`edit`]: `update_frontmatter` (`update_task` is the tasks family's, in tc-periodic);
//! - [`links`]: `rewrite_link` and `prune_hub_links`;
//! - [`patch`], [`replace_in`], [`outline`]: `patch_note`, `replace_in_note`,
//!   `get_note_outline` and `note_exists` (spec/tools.md.1).
//!
//! [`register`] adds them all to a registry, in the order `tools/list` shows them.

mod common;
pub mod delete;
pub mod edit;
pub mod links;
pub mod outline;
pub mod paging;
pub mod paging_tools;
pub mod patch;
pub mod replace_in;
pub mod section_read;
pub mod transfer;
pub mod write;

use tc_tools::{Registry, RegistryBuildError};

/// Adds the note tools and the section tools to `registry`.
pub fn register(registry: &mut Registry) -> Result<(), RegistryBuildError> {
    register_notes(registry)?;
    register_sections(registry)
}

/// Adds the whole-note tools (the family `notes`) to `registry`.
pub fn register_notes(registry: &mut Registry) -> Result<(), RegistryBuildError> {
    registry.add(write::WriteNote)?;
    registry.add(transfer::MoveNote)?;
    registry.add(transfer::CopyNote)?;
    registry.add(delete::DeleteNote)?;
    registry.add(delete::RestoreNote)?;
    registry.add(edit::UpdateFrontmatter)?;
    registry.add(links::RewriteLink)?;
    registry.add(links::PruneHubLinks)?;
    registry.add(write::CommitWikiPage)?;
    registry.add(paging::ReadNotes)?;
    registry.add(paging::ListNotes)?;
    Ok(())
}

/// Adds the tools that read or edit part of a note (the family `sections`) to `registry`.
pub fn register_sections(registry: &mut Registry) -> Result<(), RegistryBuildError> {
    registry.add(patch::PatchNote)?;
    registry.add(replace_in::ReplaceInNote)?;
    registry.add(outline::GetNoteOutline)?;
    registry.add(outline::NoteExists)?;
    Ok(())
}

/// The note tools as the family `notes` (spec `tools.families`).
#[derive(Debug, Clone, Copy, Default)]
pub struct NotesFamily;

impl tc_tools::Family for NotesFamily {
    fn name(&self) -> &'static str {
        "notes"
    }

    fn register(
        &self,
        registry: &mut Registry,
        _setup: &tc_tools::SubsystemSetup<'_>,
    ) -> Result<(), RegistryBuildError> {
        register_notes(registry)
    }
}

/// The section tools as the family `sections` (spec `tools.families`): a person who wants
/// whole-note tools only leaves it out.
#[derive(Debug, Clone, Copy, Default)]
pub struct SectionsFamily;

impl tc_tools::Family for SectionsFamily {
    fn name(&self) -> &'static str {
        "sections"
    }

    fn register(
        &self,
        registry: &mut Registry,
        _setup: &tc_tools::SubsystemSetup<'_>,
    ) -> Result<(), RegistryBuildError> {
        register_sections(registry)
    }
}

/// A registry holding the note tools alone.
pub fn registry() -> Result<Registry, RegistryBuildError> {
    let mut registry = Registry::new();
    register(&mut registry)?;
    Ok(registry)
}
