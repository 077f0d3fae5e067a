//! Keeping the index fresh while serving (spec/index.md `index.watch`, `index.fresh`): a
//! `notify` watcher on the vault folder flags the paths that changed, and a thread
//! re-indexes the flagged paths once a burst of events has settled, off the request path.
//!
//! While the watcher is trusted, a call reconciles only the flagged paths. For "an edit made
//! behind the server's back is seen by the next call" to hold, the call must not run before
//! the watcher has heard of every change made before it: the kernel queues a change's event
//! while the writing call runs (inotify), but the watcher's thread reads that queue a little
//! later. So each call first passes a fence: it creates a file of its own, named by a ticket
//! number, in a folder of the cache directory the same watcher watches, and waits until the
//! watcher reports that file (or one of a later ticket). One watcher reads one queue in
//! order, so by then every event queued before the fence has been delivered and flagged.
//!
//! The watcher is trusted only while it can be: not before it runs, not after it reported an
//! error (a folder it could not watch, a failed read), and a full reconciliation is owed
//! after it overflowed (`Rescan`). A fence that does not come back within [`FENCE_WAIT`]
//! makes that call reconcile in full; three in a row and the watcher is no longer trusted.
//! Platforms whose watcher does not deliver events in order (everything but Linux's inotify)
//! never trust it: every call reconciles in full there, as before.
//!
//! Events under hidden folders (`.obsidian/` is written every few seconds by Obsidian
//! itself) are ignored, as the index never holds them, and so are accesses other than a
//! closed write (opening or reading a file changes nothing, and the index's own reads would
//! otherwise wake it again and again).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecursiveMode, Watcher};

use crate::index::VaultIndex;

/// How long the thread waits for a burst of events to settle before reconciling.
const SETTLE: Duration = Duration::from_millis(50);
/// How long a call waits for its fence to come back through the watcher.
pub(crate) const FENCE_WAIT: Duration = Duration::from_millis(250);
/// Fences missed in a row after which the watcher is no longer trusted.
const MISSES_UNTRUSTED: u32 = 3;

/// Whether the platform's watcher delivers one ordered queue (the fence's premise).
const ORDERED_WATCHER: bool = cfg!(any(target_os = "linux", target_os = "android"));

#[derive(Debug, Default)]
struct Flags {
    /// The watcher runs, delivers in order, and has reported no error.
    trusted: bool,
    /// A full reconciliation is owed (the watcher overflowed or saw the root itself change).
    full: bool,
    /// Vault-relative paths changed since the last reconciliation took them.
    paths: BTreeSet<String>,
    next_ticket: u64,
    seen_ticket: u64,
    misses: u32,
}

/// What the watcher tells the index, shared with the watcher's callback.
#[derive(Debug)]
pub(crate) struct WatchState {
    flags: Mutex<Flags>,
    fence_seen: Condvar,
    /// Fences passed (tests and benches check the fast path is taken).
    pub(crate) fenced: AtomicU64,
    /// What this index's fence files are named by (`<tag>-<ticket>`): the process and the
    /// index, so another server over the same cache directory, whose fences the watcher
    /// also reports, never passes this one's fence.
    tag: String,
}

impl Default for WatchState {
    fn default() -> Self {
        static INDEXES: AtomicU64 = AtomicU64::new(0);
        WatchState {
            flags: Mutex::default(),
            fence_seen: Condvar::new(),
            fenced: AtomicU64::new(0),
            tag: format!(
                "{}-{}",
                std::process::id(),
                INDEXES.fetch_add(1, Ordering::Relaxed)
            ),
        }
    }
}

/// How a call may bring the index up to date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Freshness {
    /// The watcher has delivered every change made before the call: the flagged paths are
    /// all there is to look at.
    Flagged,
    /// Every file must be stat'ed.
    Full,
}

impl WatchState {
    fn lock(&self) -> std::sync::MutexGuard<'_, Flags> {
        self.flags.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The flagged paths, taken (the caller holds the index's lock, so a reconciliation
    /// running meanwhile has finished with the paths it took).
    pub(crate) fn take_paths(&self) -> BTreeSet<String> {
        std::mem::take(&mut self.lock().paths)
    }

    /// Before a full reconciliation: it covers every path flagged so far.
    pub(crate) fn full_started(&self) {
        let mut flags = self.lock();
        flags.full = false;
        flags.paths.clear();
    }

    /// Makes the next reconciliation a full one.
    pub(crate) fn owe_full(&self) {
        self.lock().full = true;
    }

    /// Whether the watcher's own reconciliation must be a full one.
    pub(crate) fn owes_full(&self) -> bool {
        let flags = self.lock();
        flags.full || !flags.trusted
    }

    fn distrust(&self, why: &str) {
        let mut flags = self.lock();
        if flags.trusted {
            tracing::warn!(
                "the vault watcher is no longer trusted ({why}); the index is reconciled in full on each call"
            );
        }
        flags.trusted = false;
        drop(flags);
        self.fence_seen.notify_all();
    }

    // r[impl index.fresh]
    /// Passes a fence through the watcher in `fence_dir`, or says why the call must
    /// reconcile in full.
    pub(crate) fn fence(&self, fence_dir: &Path) -> Freshness {
        let ticket = {
            let mut flags = self.lock();
            if !flags.trusted {
                return Freshness::Full;
            }
            flags.next_ticket += 1;
            flags.next_ticket
        };
        let file = fence_dir.join(format!("{}-{ticket}", self.tag));
        if let Err(error) = std::fs::File::create(&file) {
            self.distrust(&format!(
                "cannot write its fence in {}: {error}",
                fence_dir.display()
            ));
            return Freshness::Full;
        }
        let _unused = std::fs::remove_file(&file);
        let deadline = Instant::now() + FENCE_WAIT;
        let mut flags = self.lock();
        while flags.trusted && flags.seen_ticket < ticket {
            let now = Instant::now();
            if now >= deadline {
                flags.misses += 1;
                let misses = flags.misses;
                drop(flags);
                if misses >= MISSES_UNTRUSTED {
                    self.distrust("its fences do not come back");
                }
                return Freshness::Full;
            }
            flags = self
                .fence_seen
                .wait_timeout(flags, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        if !flags.trusted {
            return Freshness::Full;
        }
        flags.misses = 0;
        self.fenced.fetch_add(1, Ordering::Relaxed);
        if flags.full {
            Freshness::Full
        } else {
            Freshness::Flagged
        }
    }

    /// Takes one event of the watcher; true when a vault path was flagged.
    fn on_event(
        &self,
        root: &Path,
        fence_dir: &Path,
        event: notify::Result<notify::Event>,
    ) -> bool {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                self.distrust(&error.to_string());
                return false;
            }
        };
        let mut flags = self.lock();
        let mut flagged = false;
        if event.need_rescan() {
            flags.full = true;
            flagged = true;
        }
        let change = !matches!(event.kind, EventKind::Access(kind)
            if kind != AccessKind::Close(AccessMode::Write));
        for path in &event.paths {
            if let Ok(name) = path.strip_prefix(fence_dir) {
                let ticket = name
                    .to_str()
                    .and_then(|n| n.strip_prefix(self.tag.as_str()))
                    .and_then(|n| n.strip_prefix('-'))
                    .and_then(|n| n.parse::<u64>().ok());
                if let Some(ticket) = ticket {
                    flags.seen_ticket = flags.seen_ticket.max(ticket);
                    self.fence_seen.notify_all();
                }
                continue;
            }
            if !change {
                continue;
            }
            match relative(root, path) {
                Some(Rel::Root) => {
                    flags.full = true;
                    flagged = true;
                }
                Some(Rel::Path(rel)) => {
                    flags.paths.insert(rel);
                    flagged = true;
                }
                None => {}
            }
        }
        flagged
    }
}

enum Rel {
    Root,
    Path(String),
}

/// `path` relative to `root`, `/`-separated, unless it is outside, hidden or not UTF-8
/// (never indexed).
fn relative(root: &Path, path: &Path) -> Option<Rel> {
    let rel = path.strip_prefix(root).ok()?;
    let mut parts = Vec::new();
    for part in rel.components() {
        let part = part.as_os_str().to_str()?;
        if part.starts_with('.') {
            return None;
        }
        parts.push(part);
    }
    Some(if parts.is_empty() {
        Rel::Root
    } else {
        Rel::Path(parts.join("/"))
    })
}

// r[impl index.watch]
/// Starts watching the vault of `index` (a platform without a watcher leaves a warning on
/// stderr and the full per-call reconciliation alone). Called before the first build, so a
/// change made during the build is flagged.
pub(crate) fn watch(index: &Arc<VaultIndex>) {
    let root = index.root().path().to_path_buf();
    let fence_dir: PathBuf = index.fence_dir().to_path_buf();
    let state = Arc::clone(index.watch_state());
    let (tx, rx) = mpsc::channel::<()>();
    let (cb_root, cb_fence, cb_state) = (root.clone(), fence_dir.clone(), Arc::clone(&state));
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if cb_state.on_event(&cb_root, &cb_fence, event) {
            let _unused = tx.send(());
        }
    });
    let mut watcher = match watcher {
        Ok(watcher) => watcher,
        Err(error) => {
            tracing::warn!(vault = %index.vault_id(), "no filesystem watcher ({error}); the index is reconciled in full on each call");
            return;
        }
    };
    if let Err(error) = watcher.watch(&root, RecursiveMode::Recursive) {
        tracing::warn!(vault = %index.vault_id(), "cannot watch {} ({error}); the index is reconciled in full on each call", root.display());
        return;
    }
    let fences = tc_gate::private_fs::create_private_dir_all(&fence_dir)
        .map_err(|e| e.to_string())
        .and_then(|()| {
            watcher
                .watch(&fence_dir, RecursiveMode::NonRecursive)
                .map_err(|e| e.to_string())
        });
    match fences {
        Ok(()) if ORDERED_WATCHER => state.lock().trusted = true,
        Ok(()) => {}
        Err(error) => {
            tracing::warn!(vault = %index.vault_id(), "cannot watch the index's fence folder {} ({error}); the index is reconciled in full on each call", fence_dir.display());
        }
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
                if let Err(error) = index.refresh_unfenced() {
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
    fn hidden_and_outside_paths_are_not_flagged() {
        let root = Path::new("/v");
        assert!(relative(root, Path::new("/v/.obsidian/workspace.json")).is_none());
        assert!(relative(root, Path::new("/v/a/.trash/x.md")).is_none());
        assert!(relative(root, Path::new("/w/a.md")).is_none());
        assert!(matches!(relative(root, Path::new("/v")), Some(Rel::Root)));
        assert!(matches!(
            relative(root, Path::new("/v/a/b.md")),
            Some(Rel::Path(p)) if p == "a/b.md"
        ));
    }

    #[test]
    fn a_fence_waits_for_its_ticket_and_an_untrusted_watcher_means_full() {
        let state = WatchState::default();
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(state.fence(dir.path()), Freshness::Full, "not trusted yet");
        state.lock().trusted = true;
        // No watcher delivers the ticket: the call reconciles in full, and after three
        // misses the watcher is no longer trusted.
        for _ in 0..MISSES_UNTRUSTED {
            assert_eq!(state.fence(dir.path()), Freshness::Full);
        }
        assert!(!state.lock().trusted);
        // Another index's fence (same folder, another tag) passes nothing of this one's.
        state.lock().trusted = true;
        let root = Path::new("/v");
        let foreign = dir.path().join("1-999999");
        let event = notify::Event::new(EventKind::Create(notify::event::CreateKind::File))
            .add_path(foreign);
        state.on_event(root, dir.path(), Ok(event));
        assert_eq!(state.lock().seen_ticket, 0);
        let own = dir.path().join(format!("{}-7", state.tag));
        let event =
            notify::Event::new(EventKind::Create(notify::event::CreateKind::File)).add_path(own);
        state.on_event(root, dir.path(), Ok(event));
        assert_eq!(state.lock().seen_ticket, 7);
        // A delivered ticket (the callback's path) lets the call take the flagged paths.
        let mut flags = state.lock();
        flags.trusted = true;
        flags.seen_ticket = u64::MAX;
        drop(flags);
        assert_eq!(state.fence(dir.path()), Freshness::Flagged);
        state.lock().full = true;
        assert_eq!(
            state.fence(dir.path()),
            Freshness::Full,
            "an overflow is owed"
        );
    }
}
