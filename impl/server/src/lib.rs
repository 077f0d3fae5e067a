//! tc-server: the MCP server on rmcp (dispatch, confirmation round trips, transports).
//!
//! [`config`] (CONTRACT §2), [`auth`] (callers and HTTP authentication), [`metrics`]
//! (Prometheus counters), [`http`] (the axum scaffold the Streamable HTTP service is nested
//! into), [`dispatch`] (the one `tools/call` pipeline with every confirmation route),
//! [`trips`] (round-trip wire shapes), `routes` (the round trips and the legacy shim), [`results`] (result envelopes), [`resources`] (notes
//! as MCP resources), [`handler`] (the rmcp `ServerHandler`), [`serve`] (start-up and the
//! stdio and HTTP transports), with [`stdio`] the newline-delimited JSON-RPC transport of
//! stdio.

pub mod approve;
pub mod auth;
pub mod config;
pub mod dispatch;
pub mod facade;
pub mod handler;
pub mod http;
pub mod metrics;
pub mod rerun;
pub mod resources;
pub mod results;
mod routes;
pub mod serve;
mod stages;
pub mod stdio;
pub mod trips;

/// The tools this server offers: each subsystem crate's `register`, in `tools/list` order,
/// given its part of `config` and `setup` (where its tables live, the clock). Adding a
/// subsystem adds a line here; the dispatch pipeline does not change.
pub fn registry(
    config: &config::Config,
    setup: &tc_tools::SubsystemSetup<'_>,
) -> Result<tc_tools::Registry, tc_tools::RegistryBuildError> {
    let mut registry = tc_tools::Registry::new();
    tc_notes::register(&mut registry)?;
    tc_memory::register(
        &mut registry,
        setup,
        config
            .vaults
            .iter()
            .map(|v| (v.id.clone(), v.memory.clone().unwrap_or_default())),
    )?;
    tc_bridge::register(
        &mut registry,
        setup,
        config.vaults.iter().map(|v| tc_bridge::VaultSettings {
            vault: v.id.clone(),
            bridge: v.bridge.clone(),
            commands: v.commands.clone(),
        }),
    )?;
    tc_ocr::register(&mut registry, &config.ocr, setup)?;
    tc_index::register(&mut registry, &config.search)?;
    tc_git::register(&mut registry, setup)?;
    Ok(registry)
}
