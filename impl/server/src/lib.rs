//! tc-server: the MCP server on rmcp (dispatch, confirmation round trips, transports).
//!
//! The foundations of issue 5 live here: [`config`] (CONTRACT §2), [`auth`] (callers and
//! HTTP authentication), [`metrics`] (Prometheus counters) and [`http`] (the axum scaffold
//! the Streamable HTTP service is nested into).

pub mod auth;
pub mod config;
pub mod http;
pub mod metrics;
