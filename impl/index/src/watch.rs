//! Keeping the index fresh while serving (spec/index.md `index.watch`): a `notify` watcher
//! on the vault folder wakes a thread that reconciles the index once the burst of events
//! has settled, so the re-reading happens off the request path and the reconciliation a
//! call runs first finds nothing left to read.
//!
//! The watcher is an optimisation, never the guarantee: every answer is still preceded by a
//! reconciliation (`index.reconcile`), so an event the watcher drops, or a platform without
//! one, costs time and never freshness. Events under hidden folders (`.obsidian/` is
//! written every few seconds by Obsidian itself) are ignored, as the index never holds them,
//! and so are accesses (opening or reading a file changes nothing, and the index's own reads
//! would otherwise wake it again and again).

use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Weak};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};

use crate::index::VaultIndex;

/// How long the thread waits for a burst of events to settle before reconciling.
const SETTLE: Duration = Duration::from_millis(50);

/// Whether any part of `path` below `root` is hidden.
fn hidden_below(root: &Path, path: &Path) -> bool {
    path.strip_prefix(root).is_ok_and(|rel| {
        rel.components()
            .any(|c| c.as_os_str().to_str().is_some_and(|s| s.starts_with('.')))
    })
}

// r[impl index.watch]
/// Starts watching the vault of `index` (a platform without a watcher leaves a warning on
/// stderr and the per-call reconciliation alone).
pub(crate) fn watch(index: &Arc<VaultIndex>) {
    let root = index.root().path().to_path_buf();
    let (tx, rx) = mpsc::channel::<()>();
    let filter_root = root.clone();
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let relevant = match &event {
            // Reads (the index's own, the tools') are no change: reacting to them would loop.
            Ok(event) if matches!(event.kind, notify::EventKind::Access(_)) => false,
            Ok(event) => event.paths.iter().any(|p| !hidden_below(&filter_root, p)),
            // An overflowed queue or a watcher error: reconcile to be safe.
            Err(_) => true,
        };
        if relevant {
            let _unused = tx.send(());
        }
    });
    let mut watcher = match watcher {
        Ok(watcher) => watcher,
        Err(error) => {
            tracing::warn!(vault = %index.vault_id(), "no filesystem watcher ({error}); the index is reconciled on each call only");
            return;
        }
    };
    if let Err(error) = watcher.watch(&root, RecursiveMode::Recursive) {
        tracing::warn!(vault = %index.vault_id(), "cannot watch {} ({error}); the index is reconciled on each call only", root.display());
        return;
    }
    *index.watcher.lock().unwrap_or_else(|e| e.into_inner()) = Some(watcher);
    let weak: Weak<VaultIndex> = Arc::downgrade(index);
    let spawned = std::thread::Builder::new()
        .name(format!("index-watch-{}", index.vault_id()))
        .spawn(move || {
            // Ends when the index (and with it the watcher and its sender) is dropped.
            while rx.recv().is_ok() {
                while rx.recv_timeout(SETTLE).is_ok() {}
                let Some(index) = weak.upgrade() else { return };
                if let Err(error) = index.reconcile() {
                    tracing::warn!(vault = %index.vault_id(), "re-indexing after a change: {error}");
                }
            }
        });
    if let Err(error) = spawned {
        tracing::warn!("cannot start the index watcher thread: {error}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_folders_are_ignored() {
        let root = Path::new("/v");
        assert!(hidden_below(root, Path::new("/v/.obsidian/workspace.json")));
        assert!(hidden_below(root, Path::new("/v/a/.trash/x.md")));
        assert!(!hidden_below(root, Path::new("/v/a/b.md")));
    }
}
