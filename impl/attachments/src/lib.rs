//! Attachments in and out, and the versions every confirmed change keeps
//! (spec/attachments.md, spec/versions.md).

use serde::Deserialize;
use tc_tools::{Registry, RegistryBuildError};

pub mod common;
pub mod delete;
pub mod fit;
pub mod get;
pub mod list;
pub mod mime;
pub mod pdf;
pub mod transfer;
pub mod versions;
pub mod write;

/// `[attachments]` of the configuration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AttachmentsConfig {
    /// `maxWriteBytes`: the most bytes one `write_attachment` writes (default 10 MiB).
    #[serde(default = "default_max_write_bytes")]
    pub max_write_bytes: u64,
}

fn default_max_write_bytes() -> u64 {
    write::DEFAULT_MAX_WRITE_BYTES
}

impl Default for AttachmentsConfig {
    fn default() -> Self {
        AttachmentsConfig {
            max_write_bytes: write::DEFAULT_MAX_WRITE_BYTES,
        }
    }
}

/// Adds the family's tools to `registry`, in the order `tools/list` shows them.
pub fn register(registry: &mut Registry) -> Result<(), RegistryBuildError> {
    register_with(registry, &AttachmentsConfig::default())
}

/// [`register`] with the family's configuration.
pub fn register_with(
    registry: &mut Registry,
    config: &AttachmentsConfig,
) -> Result<(), RegistryBuildError> {
    registry.add(list::ListAttachments)?;
    registry.add(get::GetAttachment::default())?;
    registry.add(write::WriteAttachment {
        max_bytes: config.max_write_bytes,
    })?;
    registry.add(transfer::MoveAttachment)?;
    registry.add(delete::DeleteAttachment)?;
    registry.add(versions::ListSnapshots)?;
    registry.add(versions::ReadSnapshot)?;
    Ok(())
}

/// The family `attachments` (spec/tools.md `tools.families`).
#[derive(Debug, Clone, Copy, Default)]
pub struct AttachmentsFamily {
    pub config: AttachmentsConfig,
}

impl AttachmentsFamily {
    pub fn new(config: AttachmentsConfig) -> Self {
        AttachmentsFamily { config }
    }
}

impl tc_tools::Family for AttachmentsFamily {
    fn name(&self) -> &'static str {
        "attachments"
    }

    fn register(
        &self,
        registry: &mut Registry,
        _setup: &tc_tools::SubsystemSetup<'_>,
    ) -> Result<(), RegistryBuildError> {
        register_with(registry, &self.config)
    }
}
