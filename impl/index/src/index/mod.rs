//! One vault's index: its files as last seen (size and mtime), kept in cache.db and in
//! memory, reconciled with the folder before every answer (spec/index.md `index.store`,
//! `index.reconcile`, `index.hidden`, `index.build.background`, `index.links.*`;
//! shared/DESIGN.md §7: "the index is the vault's memory, not its truth").
//!
//! A reconciliation walks the vault with tc-vault's own walk (the same files the note tools
//! see: no hidden names, so never `.obsidian/`, `.git/` or `.trash/`; no link to a folder or
//! out of the vault) and stats every file. A file whose size or mtime differs from what the
//! index holds, or that is new, is read and analyzed again; a file gone is dropped. The stat
//! comes before the read, so an edit racing the read leaves a newer mtime behind and is
//! picked up by the next reconciliation. Every answer of the index is given right after one,
//! inside the same call: an edit made behind the server's back is seen by the next call.
//!
//! The in-memory part (the stamps and the link resolver over every file) is what makes a
//! reconciliation of an unchanged vault cost a walk and one stat per file, with no SQLite.

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, UNIX_EPOCH};

use rusqlite::{Connection, params};
use tc_tools::context::{LinkCandidates, LinkIndex};
use tc_tools::{SubsystemDb, ToolCx, ToolError};
use tc_vault::error::VaultError;
use tc_vault::links::LinkResolver;
use tc_vault::path::{VaultPath, VaultRoot};

use crate::parse::{NoteFacts, analyze, name_key};

/// How many changed files one transaction of a build writes.
const BATCH: usize = 500;

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

/// What the index holds of one file to decide whether it changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    size: u64,
    mtime_ns: i64,
    is_note: bool,
}

#[derive(Debug, Default)]
pub(crate) struct Live {
    stamps: HashMap<VaultPath, Stamp>,
    /// Files indexed less than [`RACY_NS`] after their mtime: a same-size edit within the
    /// same timestamp tick would leave the stamp unchanged, so these are read again by every
    /// reconciliation until their stamp is old enough to be trusted (git's "racy" entries).
    racy: HashSet<VaultPath>,
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
    pub(crate) watcher: Mutex<Option<notify::RecommendedWatcher>>,
}

impl fmt::Debug for VaultIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VaultIndex")
            .field("vault", &self.vault_id)
            .field("root", &self.root.path())
            .finish_non_exhaustive()
    }
}

fn stamp_of(meta: &std::fs::Metadata, is_note: bool) -> Stamp {
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    Stamp {
        size: meta.len(),
        mtime_ns,
        is_note,
    }
}

/// A changed note, read and analyzed outside the database lock.
struct Changed {
    path: VaultPath,
    stamp: Stamp,
    facts: Option<NoteFacts>,
}

impl VaultIndex {
    /// The index of the vault `vault_id` at `root`, over the index tables of `db`, as cache.db
    /// holds it from a previous run (nothing is scanned here: see [`VaultIndex::start`]).
    pub fn open(
        db: Arc<SubsystemDb>,
        vault_id: &str,
        root: &std::path::Path,
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
        Ok(Arc::new(VaultIndex {
            vault_id: vault_id.to_owned(),
            root,
            db,
            live: Mutex::new(live),
            status: Mutex::new(BuildStatus::Building),
            status_changed: Condvar::new(),
            build_done: AtomicUsize::new(0),
            build_total: AtomicUsize::new(0),
            answered: AtomicU64::new(0),
            watcher: Mutex::new(None),
        }))
    }

    pub fn vault_id(&self) -> &str {
        &self.vault_id
    }

    pub(crate) fn root(&self) -> &VaultRoot {
        &self.root
    }

    /// The index tables' connection.
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
    /// meanwhile), reporting its progress on stderr, then watches the folder.
    pub fn start(self: &Arc<Self>) {
        let index = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name(format!("index-{}", self.vault_id))
            .spawn(move || index.first_build());
        if let Err(error) = spawned {
            self.set_status(BuildStatus::Failed(error.to_string()));
        }
    }

    /// The first build, in the calling thread.
    pub fn first_build(self: &Arc<Self>) {
        let started = std::time::Instant::now();
        let id = self.vault_id.clone();
        let report = |done: usize, total: usize| {
            if total >= BATCH && (done.is_multiple_of(BATCH * 4) || done == total) {
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
                crate::watch::watch(self);
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
    /// Brings the index up to date with the folder.
    pub fn reconcile(&self) -> Result<Reconciled, IndexError> {
        self.reconcile_reporting(&|_, _| {})
    }

    fn reconcile_reporting(&self, report: &dyn Fn(usize, usize)) -> Result<Reconciled, IndexError> {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        let mut seen: HashSet<VaultPath> = HashSet::with_capacity(live.stamps.len());
        let mut changed: Vec<(VaultPath, Stamp)> = Vec::new();
        self.scan(&live, &mut seen, &mut changed)?;
        let removed: Vec<VaultPath> = live
            .stamps
            .keys()
            .filter(|p| !seen.contains(*p))
            .cloned()
            .collect();
        let total = changed.len();
        self.build_total.store(total, Ordering::SeqCst);
        self.build_done.store(0, Ordering::SeqCst);
        if !removed.is_empty() {
            self.write_batch(&mut live, &[], &removed)?;
        }
        let mut done = 0;
        for batch in changed.chunks(BATCH) {
            let mut analyzed = Vec::with_capacity(batch.len());
            for (path, stamp) in batch {
                let facts = if stamp.is_note {
                    match std::fs::read(self.root.join(path)) {
                        Ok(bytes) => Some(analyze(&bytes)),
                        // Gone since the stat: the next reconciliation drops it.
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                        Err(source) => {
                            return Err(IndexError::Io {
                                path: path.as_str().to_owned(),
                                source,
                            });
                        }
                    }
                } else {
                    None
                };
                analyzed.push(Changed {
                    path: path.clone(),
                    stamp: *stamp,
                    facts,
                });
            }
            self.write_batch(&mut live, &analyzed, &[])?;
            done += batch.len();
            self.build_done.store(done, Ordering::SeqCst);
            report(done, total);
        }
        Ok(Reconciled {
            reindexed: total,
            removed: removed.len(),
        })
    }

    /// Every file of the vault with its stamp, as tc-vault's walk would list them (no hidden
    /// name, no name that is not a valid vault path, no link to a folder, a link to a file
    /// only when it stays inside the vault), stat'ed through each folder's own entries so
    /// an unchanged vault costs one listing per folder and one stat per file.
    fn scan(
        &self,
        live: &Live,
        seen: &mut HashSet<VaultPath>,
        changed: &mut Vec<(VaultPath, Stamp)>,
    ) -> Result<(), IndexError> {
        let mut folders = vec![(self.root.path().to_path_buf(), String::new())];
        while let Some((dir, prefix)) = folders.pop() {
            let entries = std::fs::read_dir(&dir).map_err(|source| IndexError::Io {
                path: prefix.clone(),
                source,
            })?;
            for entry in entries.flatten() {
                let Ok(name) = entry.file_name().into_string() else {
                    continue;
                };
                if name.starts_with('.') {
                    continue;
                }
                let Ok(file_type) = entry.file_type() else {
                    continue;
                };
                let rel = format!("{prefix}{name}");
                if file_type.is_dir() {
                    if VaultPath::parse(&rel).is_ok() {
                        folders.push((entry.path(), format!("{rel}/")));
                    }
                    continue;
                }
                let Ok(path) = VaultPath::parse(&rel) else {
                    continue;
                };
                let meta = if file_type.is_symlink() {
                    match self.root.resolve_for_read(&path) {
                        Ok(target) if target.is_file() => std::fs::metadata(target),
                        _ => continue,
                    }
                } else if file_type.is_file() {
                    entry.metadata()
                } else {
                    continue;
                };
                // Gone since the listing: dropped like any file not seen.
                let Ok(meta) = meta else { continue };
                let stamp = stamp_of(&meta, path.is_note());
                if live.stamps.get(&path) != Some(&stamp) || live.racy.contains(&path) {
                    changed.push((path.clone(), stamp));
                }
                seen.insert(path);
            }
        }
        changed.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(())
    }

    /// Writes one batch in one transaction, then updates the in-memory stamps and resolver.
    fn write_batch(
        &self,
        live: &mut Live,
        changed: &[Changed],
        removed: &[VaultPath],
    ) -> Result<(), IndexError> {
        let vault = self.vault_id.as_str();
        {
            let mut conn = self.db.lock();
            let tx = conn.transaction()?;
            for path in removed {
                forget(&tx, vault, path.as_str())?;
                tx.execute(
                    "DELETE FROM index_files WHERE vault = ?1 AND path = ?2",
                    params![vault, path.as_str()],
                )?;
            }
            for note in changed {
                store(&tx, vault, note)?;
            }
            tx.commit()?;
        }
        let now = wall_ns();
        let Live {
            stamps,
            racy,
            resolver,
            by_key,
        } = live;
        let resolver = Arc::make_mut(resolver);
        for path in removed {
            resolver.remove(path);
            stamps.remove(path);
            racy.remove(path);
            let key = name_key(path.as_str());
            if let Some(set) = by_key.get_mut(&key) {
                set.remove(path);
                if set.is_empty() {
                    by_key.remove(&key);
                }
            }
        }
        for note in changed {
            if !stamps.contains_key(&note.path) {
                resolver.insert(note.path.clone());
                by_key
                    .entry(name_key(note.path.as_str()))
                    .or_default()
                    .insert(note.path.clone());
            }
            stamps.insert(note.path.clone(), note.stamp);
            if now.saturating_sub(note.stamp.mtime_ns) < RACY_NS {
                racy.insert(note.path.clone());
            } else {
                racy.remove(&note.path);
            }
        }
        Ok(())
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
            "UPDATE index_files SET mtime_ns = -1 WHERE vault = ?1",
            [&self.vault_id],
        )?;
        for stamp in live.stamps.values_mut() {
            stamp.mtime_ns = -1;
        }
        Ok(())
    }

    /// The notes holding a link whose target has one of `keys` as its name key.
    fn notes_linking(&self, keys: &[String]) -> Result<Vec<VaultPath>, IndexError> {
        let conn = self.db.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT DISTINCT src FROM index_links WHERE vault = ?1 AND name_key = ?2",
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

/// Drops what the index holds of one note's content (links, tags, chunks).
fn forget(conn: &Connection, vault: &str, path: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM index_links WHERE vault = ?1 AND src = ?2")?
        .execute(params![vault, path])?;
    conn.prepare_cached("DELETE FROM index_tags WHERE vault = ?1 AND path = ?2")?
        .execute(params![vault, path])?;
    conn.prepare_cached(
        "DELETE FROM index_fts WHERE rowid IN
             (SELECT id FROM index_chunks WHERE vault = ?1 AND path = ?2)",
    )?
    .execute(params![vault, path])?;
    conn.prepare_cached("DELETE FROM index_chunks WHERE vault = ?1 AND path = ?2")?
        .execute(params![vault, path])?;
    Ok(())
}

// r[impl index.facts]
fn store(conn: &Connection, vault: &str, note: &Changed) -> rusqlite::Result<()> {
    let path = note.path.as_str();
    forget(conn, vault, path)?;
    let facts = note.facts.as_ref();
    let keys = facts.map(|f| serde_json::json!(f.frontmatter_keys).to_string());
    let headings = facts.map(|f| {
        serde_json::Value::Array(
            f.headings
                .iter()
                .map(|h| serde_json::json!({"level": h.level, "text": h.text}))
                .collect(),
        )
        .to_string()
    });
    conn.prepare_cached(
        "INSERT INTO index_files (vault, path, size, mtime_ns, is_note, hash, frontmatter_keys, headings)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT (vault, path) DO UPDATE SET size = excluded.size,
             mtime_ns = excluded.mtime_ns, is_note = excluded.is_note, hash = excluded.hash,
             frontmatter_keys = excluded.frontmatter_keys, headings = excluded.headings",
    )?
    .execute(params![
        vault,
        path,
        note.stamp.size as i64,
        note.stamp.mtime_ns,
        note.stamp.is_note,
        facts.map(|f| f.hash.as_str()),
        keys,
        headings,
    ])?;
    let Some(facts) = facts else {
        return Ok(());
    };
    let mut link = conn.prepare_cached(
        "INSERT INTO index_links (vault, src, name_key, target, embed) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for l in &facts.links {
        link.execute(params![vault, path, l.name_key, l.target, l.embed])?;
    }
    let mut tag = conn.prepare_cached(
        "INSERT OR IGNORE INTO index_tags (vault, path, tag) VALUES (?1, ?2, ?3)",
    )?;
    for t in &facts.tags {
        tag.execute(params![vault, path, t])?;
    }
    let mut chunk = conn.prepare_cached(
        "INSERT INTO index_chunks (vault, path, ord, heading) VALUES (?1, ?2, ?3, ?4)",
    )?;
    let mut fts =
        conn.prepare_cached("INSERT INTO index_fts (rowid, heading, body) VALUES (?1, ?2, ?3)")?;
    for (ord, c) in facts.chunks.iter().enumerate() {
        chunk.execute(params![vault, path, ord as i64, c.heading])?;
        fts.execute(params![conn.last_insert_rowid(), c.heading, c.body])?;
    }
    Ok(())
}

// r[impl index.links.candidates]
impl LinkIndex for VaultIndex {
    fn link_candidates(&self, names: &[&str]) -> Result<Option<LinkCandidates>, ToolError> {
        match self.status() {
            BuildStatus::Ready => {}
            // The first build is running (or failed): the caller scans, which is always right.
            BuildStatus::Building | BuildStatus::Failed(_) => return Ok(None),
        }
        self.reconcile()
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

    fn as_any(&self) -> &dyn Any {
        self
    }
}
