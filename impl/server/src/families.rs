//! Every tool family the server can serve, in the order `tools/list` shows their tools
//! (spec/tools.md `tools.families`, `tools.families.one-door`).
//!
//! A family is one type in the crate where its data lives, built here with its part of the
//! configuration; this list is the only place the server names them, and what
//! `tools.families` may name follows from it.

use std::sync::Arc;

use tc_tools::{Family, Registry, RegistryBuildError, SubsystemSetup};

use crate::config::Config;

/// The families of a server with `config`; `sessions` is the store the server keeps for its
/// recording hook and replayer.
pub fn families(config: &Config, sessions: &Arc<tc_sessions::Sessions>) -> Vec<Box<dyn Family>> {
    vec![
        Box::new(tc_notes::NotesFamily),
        Box::new(tc_notes::SectionsFamily),
        Box::new(tc_memory::MemoryFamily::new(
            config
                .vaults
                .iter()
                .map(|v| (v.id.clone(), v.memory.clone().unwrap_or_default())),
        )),
        Box::new(tc_bridge::BridgeFamily::new(config.vaults.iter().map(
            |v| tc_bridge::VaultSettings {
                vault: v.id.clone(),
                bridge: v.bridge.clone(),
                commands: v.commands.clone(),
            },
        ))),
        Box::new(tc_ocr::OcrFamily::new(config.ocr.clone())),
        Box::new(tc_index::SearchFamily::new(config.search.clone())),
        Box::new(tc_git::GitFamily),
        Box::new(tc_sessions::SessionsFamily::new(Arc::clone(sessions))),
        Box::new(tc_metadata::MetadataFamily),
        Box::new(tc_periodic::PeriodicFamily),
        Box::new(tc_periodic::TasksFamily),
        Box::new(tc_attachments::AttachmentsFamily::new(config.attachments)),
        Box::new(tc_bulk::BulkFamily),
        Box::new(tc_formats::FormatsFamily),
    ]
}

/// A name in `tools.families` that no family has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "tools.families names `{name}`, which is no tool family of this server; the families are: {known}"
)]
pub struct UnknownFamily {
    pub name: String,
    pub known: String,
}

// r[impl tools.families]
/// The registry of the families `config` serves (`tools.families`, or every family).
pub fn registry(
    config: &Config,
    setup: &SubsystemSetup<'_>,
    families: &[Box<dyn Family>],
) -> Result<Registry, RegistryBuildError> {
    let served = served(config, families).map_err(|e| RegistryBuildError::Subsystem {
        subsystem: "tools.families",
        message: e.to_string(),
    })?;
    let mut registry = Registry::new();
    for family in families {
        if served.contains(&family.name()) {
            family.register(&mut registry, setup)?;
        }
    }
    Ok(registry)
}

/// The names of the families `config` serves, each checked against `families`.
pub fn served<'a>(
    config: &Config,
    families: &'a [Box<dyn Family>],
) -> Result<Vec<&'a str>, UnknownFamily> {
    let known: Vec<&str> = families.iter().map(|f| f.name()).collect();
    let Some(wanted) = &config.tools.families else {
        return Ok(known);
    };
    for name in wanted {
        if !known.contains(&name.as_str()) {
            return Err(UnknownFamily {
                name: name.clone(),
                known: known.join(", "),
            });
        }
    }
    Ok(known
        .into_iter()
        .filter(|name| wanted.iter().any(|w| w == name))
        .collect())
}
