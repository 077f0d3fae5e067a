//! One vault's index: its files as last seen (size and mtime), kept in cache.db and in
//! memory, brought up to date with the folder before every answer (spec/index.md
//! `index.store`, `index.reconcile`, `index.fresh`, `index.hidden`, `index.build.background`,
//! `index.links.*`).
//!
//! A full reconciliation walks the vault as tc-vault's own walk does (see [`scan`]) and stats
//! every file. A file whose size or mtime differs from what the index holds, or that is new,
//! is read and analyzed again; a file gone is dropped. The stat comes before the read, so an
//! edit racing the read leaves a newer mtime behind and is picked up by the next one.
//!
//! While the watcher is trusted, a call looks only at the paths it flagged, after a fence
//! that proves the watcher has delivered every change made before the call (see `watch`);
//! otherwise (at start-up, without a watcher, after an error or an overflow) the call
//! reconciles in full. Either way an edit made behind the server's back is seen by the next
//! call.
//!
//! The in-memory part (the stamps and the link resolver over every file) is what makes a
//! reconciliation of an unchanged vault cost no SQLite.

use std::any::Any;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant, UNIX_EPOCH};

use rusqlite::{Connection, params};
use tc_tools::context::{LinkCandidates, LinkIndex};
use tc_tools::{SubsystemDb, ToolCx, ToolError};
use tc_vault::error::VaultError;
use tc_vault::links::LinkResolver;
use tc_vault::path::{VaultPath, VaultRoot};

use crate::embed::{EmbedError, Embedder, Embeddings, RunWait};
use crate::parse::name_key;
use crate::search::common::CommonWords;
use crate::watch::{Freshness, WatchState};
use scan::{Looked, Seen, Stamp};

mod scan;
mod store;

pub(crate) use store::unsynced;

/// How many files a build reports its progress by.
const REPORT_EVERY: usize = 500;

/// Why the index could not answer.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("the index tables: {0}")]
    Db(#[from] rusqlite::Error),
    #[error(transparent)]
    Vault(#[from] VaultError),
    #[error("reading {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl IndexError {
    /// The tool failure for this error (a vault error keeps its code; the rest is internal).
    pub fn to_tool_error(&self, what: &str) -> ToolError {
        match self {
            IndexError::Vault(vault) => ToolError::from(vault),
            _ => ToolError::internal(what),
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct Live {
    stamps: HashMap<VaultPath, Stamp>,
    /// Files indexed less than [`RACY_NS`] after their mtime: a same-size edit within the
    /// same timestamp tick would leave the stamp unchanged, so these are read again by every
    /// reconciliation until their stamp is old enough to be trusted (git's "racy" entries).
    racy: HashSet<VaultPath>,
    /// The links to files of the vault (see [`scan::Seen::link`]).
    links: HashSet<VaultPath>,
    /// Folders the watcher flagged in the last [`RACY_NS`], looked at again by every flagged
    /// reconciliation: the watcher watches a new folder only after reporting it, so a file
    /// written into it meanwhile has no event of its own.
    recent_dirs: Vec<(String, Instant)>,
    /// Files read while another process changed them (`index.fresh.newest-wins`): not
    /// written, and read again by the next flagged reconciliation.
    reread: HashSet<VaultPath>,
    resolver: Arc<LinkResolver>,
    /// The files by name key (what a link to that name can resolve to).
    by_key: HashMap<String, std::collections::BTreeSet<VaultPath>>,
}

/// How recent an mtime must be, when its file is indexed, for the stamp not to be trusted
/// yet: file timestamps advance by a coarse tick (a few ms on Linux, 2 s on FAT).
const RACY_NS: i64 = 2_000_000_000;

fn wall_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Where the first build stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuildStatus {
    Building,
    Ready,
    Failed(String),
}

/// What one reconciliation changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reconciled {
    /// Files read and analyzed again (new or changed).
    pub reindexed: usize,
    /// Files dropped (gone from the folder).
    pub removed: usize,
}

/// The index of one vault.
pub struct VaultIndex {
    vault_id: String,
    root: VaultRoot,
    db: Arc<SubsystemDb>,
    live: Mutex<Live>,
    status: Mutex<BuildStatus>,
    status_changed: Condvar,
    build_done: AtomicUsize,
    build_total: AtomicUsize,
    /// How many link questions the index answered (tests check the index path is taken).
    answered: AtomicU64,
    /// What the watcher flagged, and whether it can be trusted.
    watch: Arc<WatchState>,
    /// The folder of the cache directory where the fences pass (see `watch`).
    fence_dir: PathBuf,
    pub(crate) watcher: Mutex<Option<notify::RecommendedWatcher>>,
    /// The embeddings side, when `[search.embeddings]` is configured.
    embeddings: Option<Embeddings>,
    /// The common words' postings (see `search::common`).
    common: CommonWords,
    /// This index, for the threads it starts itself.
    me: Weak<VaultIndex>,
}

impl fmt::Debug for VaultIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VaultIndex")
            .field("vault", &self.vault_id)
            .field("root", &self.root.path())
            .finish_non_exhaustive()
    }
}

impl VaultIndex {
    /// The index of the vault `vault_id` at `root`, over the index tables of `db`, as cache.db
    /// holds it from a previous run (nothing is scanned here: see [`VaultIndex::start`]);
    /// `fence_dir` is a folder of the cache directory of its own (see `watch`).
    pub fn open(
        db: Arc<SubsystemDb>,
        vault_id: &str,
        root: &std::path::Path,
        fence_dir: &std::path::Path,
        embedder: Option<Result<Arc<Embedder>, EmbedError>>,
    ) -> Result<Arc<Self>, IndexError> {
        let root = VaultRoot::new(root)?;
        let mut live = Live::default();
        {
            let conn = db.lock();
            let mut stmt = conn.prepare_cached(
                "SELECT path, size, mtime_ns, is_note FROM index_files WHERE vault = ?1",
            )?;
            let rows = stmt.query_map([vault_id], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    Stamp {
                        size: row.get::<_, i64>(1)? as u64,
                        mtime_ns: row.get(2)?,
                        is_note: row.get::<_, i64>(3)? != 0,
                    },
                ))
            })?;
            let now = wall_ns();
            let resolver = Arc::make_mut(&mut live.resolver);
            for row in rows {
                let (path, stamp) = row?;
                if let Ok(path) = VaultPath::parse(&path) {
                    resolver.insert(path.clone());
                    live.by_key
                        .entry(name_key(path.as_str()))
                        .or_default()
                        .insert(path.clone());
                    // Indexed by an earlier run at a time not kept: a recent stamp is racy.
                    if now.saturating_sub(stamp.mtime_ns) < RACY_NS {
                        live.racy.insert(path.clone());
                    }
                    live.stamps.insert(path, stamp);
                }
            }
        }
        Ok(Arc::new_cyclic(|me| VaultIndex {
            vault_id: vault_id.to_owned(),
            root,
            db,
            live: Mutex::new(live),
            status: Mutex::new(BuildStatus::Building),
            status_changed: Condvar::new(),
            build_done: AtomicUsize::new(0),
            build_total: AtomicUsize::new(0),
            answered: AtomicU64::new(0),
            watch: Arc::new(WatchState::default()),
            fence_dir: fence_dir.to_path_buf(),
            watcher: Mutex::new(None),
            embeddings: embedder.map(Embeddings::new),
            common: CommonWords::default(),
            me: me.clone(),
        }))
    }

    pub fn vault_id(&self) -> &str {
        &self.vault_id
    }

    pub(crate) fn root(&self) -> &VaultRoot {
        &self.root
    }

    pub(crate) fn embeddings(&self) -> Option<&Embeddings> {
        self.embeddings.as_ref()
    }

    /// Starts an embedding run in a thread of its own, unless none is configured or one is
    /// going on (which finds the new chunks too).
    pub(crate) fn kick_embeddings(&self) {
        if self.embeddings.as_ref().is_none_or(|e| e.embedder.is_err()) {
            return;
        }
        let Some(index) = self.me.upgrade() else {
            return;
        };
        let spawned = std::thread::Builder::new()
            .name(format!("index-embed-{}", self.vault_id))
            .spawn(move || match index.embed_pending(None, RunWait::IfIdle) {
                Ok(0) => {}
                Ok(n) => tracing::info!(vault = %index.vault_id, "embedded {n} chunk(s)"),
                Err(error) => {
                    tracing::warn!(vault = %index.vault_id, "embedding the chunks: {error}")
                }
            });
        if let Err(error) = spawned {
            tracing::warn!("cannot start an embedding run: {error}");
        }
    }

    pub(crate) fn watch_state(&self) -> &Arc<WatchState> {
        &self.watch
    }

    pub(crate) fn fence_dir(&self) -> &std::path::Path {
        &self.fence_dir
    }

    /// The common words' postings.
    pub(crate) fn common(&self) -> &CommonWords {
        &self.common
    }

    /// How many words have postings in memory, and their bytes.
    pub fn common_words_held(&self) -> (usize, usize) {
        self.common.held()
    }

    /// The chunks changed, or a search found a word's postings missing: the warmer is
    /// started if it is asked for and not running.
    pub(crate) fn wake_warmer(&self) {
        crate::search::common::ensure_warmer(self, &self.me);
    }

    /// The file of cache.db.
    pub(crate) fn db_path(&self) -> &std::path::Path {
        self.db.path()
    }

    /// The index tables' connection.
    /// Empties cache.db's write-ahead log into the file (see [`SubsystemDb::scrub_wal`]);
    /// false when a reader kept it busy or the checkpoint failed (logged).
    pub(crate) fn scrub_wal(&self) -> bool {
        match self.db.scrub_wal() {
            Ok(done) => done,
            Err(error) => {
                tracing::warn!(%error, "index: checkpointing cache.db");
                false
            }
        }
    }

    pub(crate) fn conn(&self) -> MutexGuard<'_, Connection> {
        self.db.lock()
    }

    pub fn status(&self) -> BuildStatus {
        self.status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set_status(&self, status: BuildStatus) {
        *self.status.lock().unwrap_or_else(|e| e.into_inner()) = status;
        self.status_changed.notify_all();
    }

    /// How many link questions were answered from the index.
    pub fn answered(&self) -> u64 {
        self.answered.load(Ordering::SeqCst)
    }

    // r[impl index.build.background]
    /// Runs the first build in a thread of its own (the server answers `tools/list`
    /// meanwhile), reporting its progress on stderr, and watches the folder.
    pub fn start(self: &Arc<Self>) {
        let index = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name(format!("index-{}", self.vault_id))
            .spawn(move || index.first_build());
        if let Err(error) = spawned {
            self.set_status(BuildStatus::Failed(error.to_string()));
        }
    }

    /// The first build, in the calling thread: the watcher starts first, so a change made
    /// while the build runs is flagged, then every file is stat'ed.
    pub fn first_build(self: &Arc<Self>) {
        crate::watch::watch(self);
        self.build();
    }

    /// The first build with no watcher, in the calling thread: every answer then reconciles
    /// in full (for a folder whose filesystem reports no changes, such as some network
    /// mounts, and for tests of that path).
    pub fn first_build_unwatched(&self) {
        self.build();
    }

    fn build(&self) {
        let started = std::time::Instant::now();
        let id = self.vault_id.clone();
        let report = |done: usize, total: usize| {
            if total >= REPORT_EVERY && (done.is_multiple_of(REPORT_EVERY * 4) || done == total) {
                tracing::info!(vault = %id, "indexing the vault: {done}/{total} files");
            }
        };
        match self.reconcile_reporting(&report) {
            Ok(done) => {
                tracing::info!(
                    vault = %self.vault_id,
                    "vault index ready: {} file(s) read, {} dropped, in {} ms",
                    done.reindexed,
                    done.removed,
                    started.elapsed().as_millis()
                );
                self.set_status(BuildStatus::Ready);
                self.kick_embeddings();
            }
            Err(error) => {
                tracing::warn!(vault = %self.vault_id, "the vault index could not be built: {error}");
                self.set_status(BuildStatus::Failed(error.to_string()));
            }
        }
    }

    /// Waits for the first build, reporting its progress to the call; a build that failed
    /// is tried again here, in the call.
    pub fn wait_ready(&self, cx: &ToolCx<'_>) -> Result<(), ToolError> {
        loop {
            match self.status() {
                BuildStatus::Ready => return Ok(()),
                BuildStatus::Failed(_) => {
                    self.reconcile()
                        .map_err(|e| e.to_tool_error("building the vault index"))?;
                    self.set_status(BuildStatus::Ready);
                    self.kick_embeddings();
                    return Ok(());
                }
                BuildStatus::Building => {
                    if cx.cancelled() {
                        return Err(ToolError::new(
                            tc_tools::ErrorCode::OperationTimeout,
                            "the call was cancelled while the vault index was being built",
                        ));
                    }
                    let total = self.build_total.load(Ordering::SeqCst);
                    cx.progress(
                        self.build_done.load(Ordering::SeqCst) as f64,
                        (total > 0).then_some(total as f64),
                        Some("building the vault index"),
                    );
                    let guard = self.status.lock().unwrap_or_else(|e| e.into_inner());
                    if *guard == BuildStatus::Building {
                        let _unused = self
                            .status_changed
                            .wait_timeout(guard, Duration::from_millis(200));
                    }
                }
            }
        }
    }

    // r[impl index.reconcile]
    /// Brings the index up to date with the folder in full: every file stat'ed.
    pub fn reconcile(&self) -> Result<Reconciled, IndexError> {
        self.reconcile_reporting(&|_, _| {})
    }

    /// Brings the index up to date before it answers: the flagged paths only when the
    /// watcher has delivered every change made before this call, else in full.
    pub fn refresh(&self) -> Result<Reconciled, IndexError> {
        match self.watch.fence(&self.fence_dir) {
            Freshness::Flagged => self.reconcile_flagged(),
            Freshness::Full => self.reconcile(),
        }
    }

    /// The watcher thread's reconciliation, after a burst of events (no fence: the events
    /// it reacts to are already flagged).
    pub(crate) fn refresh_unfenced(&self) -> Result<Reconciled, IndexError> {
        let done = if self.watch.owes_full() {
            self.reconcile()
        } else {
            self.reconcile_flagged()
        }?;
        if done.reindexed > 0 {
            self.kick_embeddings();
        }
        Ok(done)
    }

    /// How many calls found the index fresh through the watcher's fence.
    pub fn fenced(&self) -> u64 {
        self.watch.fenced.load(Ordering::Relaxed)
    }

    fn reconcile_reporting(&self, report: &dyn Fn(usize, usize)) -> Result<Reconciled, IndexError> {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        self.watch.full_started();
        let mut seen = Vec::with_capacity(live.stamps.len());
        scan::scan_folder(&self.root, "", &mut seen)?;
        let present: HashSet<&VaultPath> = seen.iter().map(|s| &s.path).collect();
        let removed: Vec<VaultPath> = live
            .stamps
            .keys()
            .filter(|p| !present.contains(*p))
            .cloned()
            .collect();
        drop(present);
        live.links = seen
            .iter()
            .filter(|s| s.link)
            .map(|s| s.path.clone())
            .collect();
        let mut changed: Vec<Seen> = seen
            .into_iter()
            .filter(|s| live.stamps.get(&s.path) != Some(&s.stamp) || live.racy.contains(&s.path))
            .collect();
        changed.sort_by(|a, b| a.path.cmp(&b.path));
        live.recent_dirs.clear();
        self.apply(&mut live, changed, removed, report)
    }

    // r[impl index.fresh]
    /// Looks at the paths the watcher flagged (a folder's whole tree when the path is a
    /// folder or was one), the folders flagged in the last two seconds (files written into
    /// a new folder before the watcher watched it), and the links to files (whose target
    /// changes under another name).
    fn reconcile_flagged(&self) -> Result<Reconciled, IndexError> {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        let mut flagged = self.watch.take_paths();
        let now = Instant::now();
        live.recent_dirs
            .retain(|(_, at)| now.duration_since(*at) < Duration::from_nanos(RACY_NS as u64));
        flagged.extend(live.recent_dirs.iter().map(|(rel, _)| rel.clone()));
        flagged.extend(live.links.iter().map(|p| p.as_str().to_owned()));
        flagged.extend(live.reread.drain().map(|p| p.as_str().to_owned()));
        if flagged.is_empty() {
            return Ok(Reconciled::default());
        }
        let mut changed: BTreeMap<VaultPath, Seen> = BTreeMap::new();
        let mut gone: HashSet<VaultPath> = HashSet::new();
        for rel in &flagged {
            match scan::look_at(&self.root, rel) {
                Looked::Folder => {
                    let mut seen = Vec::new();
                    scan::scan_folder(&self.root, &format!("{rel}/"), &mut seen)?;
                    let mut before = scan::at_or_under(live.stamps.keys(), rel);
                    for s in seen {
                        before.remove(&s.path);
                        if live.stamps.get(&s.path) != Some(&s.stamp) || live.racy.contains(&s.path)
                        {
                            changed.insert(s.path.clone(), s);
                        }
                    }
                    gone.extend(before);
                    if !live.recent_dirs.iter().any(|(r, _)| r == rel) {
                        live.recent_dirs.push((rel.clone(), now));
                    }
                }
                Looked::File(s) => {
                    let mut before = scan::at_or_under(live.stamps.keys(), rel);
                    before.remove(&s.path);
                    gone.extend(before);
                    // Flagged: read again even when the stamp looks the same (an edit
                    // within one timestamp tick, or one that kept the mtime).
                    if !s.link || live.stamps.get(&s.path) != Some(&s.stamp) {
                        changed.insert(s.path.clone(), s);
                    }
                }
                Looked::Nothing => gone.extend(scan::at_or_under(live.stamps.keys(), rel)),
            }
        }
        let removed: Vec<VaultPath> = gone
            .into_iter()
            .filter(|p| !changed.contains_key(p))
            .collect();
        self.apply(
            &mut live,
            changed.into_values().collect(),
            removed,
            &|_, _| {},
        )
    }

    /// The link resolver over every file of the vault, as of the last reconciliation.
    pub(crate) fn resolver(&self) -> Arc<LinkResolver> {
        Arc::clone(&self.lock_live().resolver)
    }

    /// The in-memory part, locked (always before the connection: the one lock order).
    pub(crate) fn lock_live(&self) -> MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Forgets every stamp, so the next reconciliation reads every note again (after
    /// reset_vault_cache dropped the chunks).
    pub(crate) fn forget_stamps(
        &self,
        live: &mut Live,
        conn: &Connection,
    ) -> Result<(), IndexError> {
        conn.execute(
            "UPDATE index_files SET mtime_ns = -1, hash = NULL WHERE vault = ?1",
            [&self.vault_id],
        )?;
        for stamp in live.stamps.values_mut() {
            stamp.mtime_ns = -1;
        }
        // No event tells the watcher: the next answer must look at every file.
        self.watch.owe_full();
        Ok(())
    }

    /// The notes holding a link whose target has one of `keys` as its name key.
    fn notes_linking(&self, keys: &[String]) -> Result<Vec<VaultPath>, IndexError> {
        let conn = self.db.lock();
        // By the name index, always: with DISTINCT (or without statistics) SQLite may walk
        // the by-source index over every link of the vault instead (about 2,600 page reads
        // a question on the bench vault); the notes are deduplicated below.
        let mut stmt = conn.prepare_cached(
            "SELECT src FROM index_links INDEXED BY index_links_by_name
             WHERE vault = ?1 AND name_key = ?2",
        )?;
        let mut notes = Vec::new();
        for key in keys {
            let rows =
                stmt.query_map(params![self.vault_id, key], |row| row.get::<_, String>(0))?;
            for row in rows {
                if let Ok(path) = VaultPath::parse(&row?) {
                    notes.push(path);
                }
            }
        }
        notes.sort();
        notes.dedup();
        Ok(notes)
    }
}

// r[impl index.links.candidates]
impl LinkIndex for VaultIndex {
    fn link_candidates(&self, names: &[&str]) -> Result<Option<LinkCandidates>, ToolError> {
        match self.status() {
            BuildStatus::Ready => {}
            // The first build is running (or failed): the caller scans, which is always right.
            BuildStatus::Building | BuildStatus::Failed(_) => return Ok(None),
        }
        self.refresh()
            .map_err(|e| e.to_tool_error("reconciling the vault index"))?;
        let resolver = Arc::clone(&self.live.lock().unwrap_or_else(|e| e.into_inner()).resolver);
        let keys: Vec<String> = names.iter().map(|n| name_key(n)).collect();
        let notes = self
            .notes_linking(&keys)
            .map_err(|e| e.to_tool_error("reading the vault index"))?;
        self.answered.fetch_add(1, Ordering::SeqCst);
        Ok(Some(LinkCandidates { resolver, notes }))
    }

    fn files_named(&self, name: &str) -> Vec<VaultPath> {
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        live.by_key
            .get(&name_key(name))
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }

    // r[impl vault.delete.permanent-gone]
    fn purge(&self, path: &VaultPath) -> Result<(), ToolError> {
        // The file is gone: reconciling removes its rows, overwritten (secure_delete).
        let _ = path;
        self.refresh()
            .map_err(|e| e.to_tool_error("purging a deleted note from the vault index"))?;
        if !self.scrub_wal() {
            tracing::warn!(
                "index: a reader kept the write-ahead log busy after a permanent delete"
            );
        }
        Ok(())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
