//! Where `serve`'s log lines go and which are written (spec/cli.md `cli.serve.stderr`,
//! `cli.serve.log-lines`, `cli.serve.log-private`).
//!
//! `RUST_LOG` (default `info`) chooses the level, but only this workspace's own crates
//! (`obsidian_tc`, `tc_*`) are heard at every level: their lines name tools, callers, codes
//! and paths, never note text, arguments, results, tokens or secrets. Every other crate is
//! capped, whatever `RUST_LOG` says: rmcp logs whole messages (a `tools/call`'s arguments,
//! an `elicit_token` among them, and whole results, which carry note text) at DEBUG and the
//! client's `peer_info` at INFO, so it is heard only at ERROR; the rest (hyper, h2, reqwest,
//! rusqlite...) at WARN, where they report failures, not traffic.

use tracing::level_filters::LevelFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{EnvFilter, FilterExt, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

// r[impl cli.serve.stderr]
// r[impl cli.serve.log-private]
/// Installs the stderr logger of `serve`.
pub fn init() {
    let chosen = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_filter(chosen.and(caps()));
    // Another subscriber already set (never in the binary) leaves that one in place.
    let _ = tracing_subscriber::registry().with(layer).try_init();
}

/// The most each crate may log, whatever `RUST_LOG` asks for.
fn caps() -> Targets {
    Targets::new()
        .with_default(LevelFilter::WARN)
        .with_target("rmcp", LevelFilter::ERROR)
        .with_target("obsidian_tc", LevelFilter::TRACE)
        // Every workspace library crate is named tc_<name>; a target matches by prefix.
        .with_target("tc_", LevelFilter::TRACE)
}

#[cfg(test)]
mod tests {
    use tracing::Level;

    use super::*;

    #[test]
    fn other_crates_are_capped() {
        let caps = caps();
        assert!(caps.would_enable("tc_server::stages", &Level::TRACE));
        assert!(caps.would_enable("obsidian_tc::serve", &Level::DEBUG));
        assert!(!caps.would_enable("rmcp::service", &Level::WARN));
        assert!(caps.would_enable("rmcp::service", &Level::ERROR));
        assert!(!caps.would_enable("hyper::proto", &Level::INFO));
        assert!(caps.would_enable("hyper::proto", &Level::WARN));
    }
}
