//! tc-server: the MCP server on rmcp (dispatch, confirmation round trips, transports).
//!
//! [`config`] (spec/config.md), [`auth`] (callers and HTTP authentication), [`metrics`]
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
pub mod families;
pub mod handler;
pub mod http;
pub mod metrics;
pub mod rerun;
pub mod resources;
pub mod results;
pub mod routes;
pub mod serve;
pub mod server;
mod stages;
pub mod stdio;
pub mod trips;
