//! Test fixtures written once for the whole workspace (dev-only, never published):
//!
//! - [`race`]: the multi-process race harness of the lock and startup tests (spec/vault.md
//!   `vault.write.locked`, spec/config.md `config.cache-dir.shared-startup`): a test binary
//!   re-run as children that start an action at one instant and report its outcome, and N
//!   actions (threads, or processes spawned from them) let go at once;
//! - [`mcp`] (feature `mcp`): rmcp's own client as the server's tests and the conformance
//!   suite drive the server with, in either protocol era, and the readers of a tool result's
//!   shape (spec/results.md `results.error-blocks`).

pub mod race;

#[cfg(feature = "mcp")]
pub mod mcp;
