//! Common words' postings (spec/index.md `search.bm25.common-words`).
//!
//! FTS5 ranks a query by computing BM25 for every chunk that matches it: cheap for a rare
//! word, about 2 µs a chunk for a word in most of them (27 ms on the 10,000-note bench vault,
//! 117 ms on 100,000). BM25 over several words is the sum of each word's own BM25 (the same
//! IDF, the same average length), so a word's scores, read once, rank every query made of
//! such words: the chunks holding all of them are found by merging their postings (sorted by
//! chunk id) and their scores summed in the query's order, which is the very floating-point
//! sum FTS5 makes. The result is the full scan's, bit for bit; the test
//! `common_words_rank_as_the_full_scan` checks it against FTS5 on random vaults.
//!
//! Every score depends on the whole table (the number of chunks, the chunks holding the word,
//! the average length), so postings are valid for one write epoch only: `index_epoch`, which
//! every transaction that writes chunks advances, in whatever process. A query reads the
//! epoch under the same lock as its ranking and takes the postings only when all its words'
//! are of that epoch; otherwise FTS5 answers as before and the words are asked for.
//!
//! A thread of the index (the warmer) builds the postings, on a connection of its own so the
//! shared one is not held while it reads, once the writes have paused: the words searched
//! recently first, then the words in the most chunks, within [`BUDGET_BYTES`].

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::index::VaultIndex;

/// Fewer chunks than this hold a word FTS5 ranks cheaply: its postings are not kept.
pub(crate) const COMMON_CHUNKS: usize = 1_000;
/// The most memory the postings of one index take.
pub(crate) const BUDGET_BYTES: usize = 48 << 20;
/// How many of the words in the most chunks are built without having been searched.
const TOP_WORDS: usize = 32;
/// How many searched words are remembered (most recent first).
const WANTED_WORDS: usize = 64;
/// How long the chunks must go unwritten before the postings are rebuilt.
const QUIET: Duration = Duration::from_millis(250);
/// An index no one searched for this long gets no rebuild after a write.
const IDLE: Duration = Duration::from_secs(300);
/// How long the warmer waits for work before it checks that its index still exists.
const PARK: Duration = Duration::from_secs(30);

/// The write epoch of the chunks.
pub(crate) fn epoch(conn: &Connection) -> rusqlite::Result<i64> {
    Ok(conn
        .query_row("SELECT n FROM index_epoch WHERE id = 0", [], |row| {
            row.get(0)
        })
        .optional()?
        .unwrap_or(0))
}

/// Advances the write epoch: called in every transaction that writes chunks.
pub(crate) fn advance_epoch(conn: &Connection) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE index_epoch SET n = n + 1 WHERE id = 0")?
        .execute([])?;
    Ok(())
}

/// The words of an FTS5 query as [`super::fts_query`] writes it, when every one can have
/// postings: a whole word (not a prefix) of ASCII characters, lowercased (FTS5's unicode61
/// folds ASCII case the same way, so the word matches the same chunks).
pub(crate) fn plain_words(fts: &str) -> Option<Vec<String>> {
    fts.split(' ')
        .map(|term| {
            let word = term.strip_prefix('"')?.strip_suffix('"')?;
            (!word.is_empty() && word.is_ascii() && !word.contains('"'))
                .then(|| word.to_ascii_lowercase())
        })
        .collect()
}

/// One word's postings: every chunk holding it, by id, with FTS5's BM25 for the word alone.
#[derive(Debug)]
pub(crate) struct Postings {
    epoch: i64,
    rows: Vec<(i64, f64)>,
}

impl Postings {
    fn bytes(&self) -> usize {
        self.rows.len() * std::mem::size_of::<(i64, f64)>()
    }
}

#[derive(Debug, Default)]
struct Inner {
    lists: HashMap<String, Arc<Postings>>,
    /// Words found in fewer than [`COMMON_CHUNKS`] chunks, at that epoch.
    rare: HashMap<String, i64>,
    wanted: VecDeque<String>,
    last_search: Option<Instant>,
    /// A rebuild is asked for.
    pending: bool,
    /// The warmer thread runs.
    running: bool,
    /// The words in the most chunks, and the epoch they were counted at.
    top: Option<(i64, Vec<String>)>,
    /// A rebuild has run: from then on only a searched index gets one.
    prepared: bool,
}

/// The postings of the common words, and what the warmer is asked to build.
#[derive(Debug, Default)]
pub(crate) struct CommonWords {
    inner: Mutex<Inner>,
    wake: Condvar,
}

/// How [`CommonWords::lookup`] answered.
pub(crate) enum Lookup {
    /// Every word's postings, of the current epoch, in the query's order.
    Fresh(Vec<Arc<Postings>>),
    /// Some word has none of this epoch: rank with FTS5.
    Missing,
}

impl CommonWords {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The postings of `words` at `epoch`; a search, remembered for the warmer, who is
    /// asked for what is missing.
    pub(crate) fn lookup(&self, words: &[String], epoch: i64) -> Lookup {
        let mut inner = self.lock();
        inner.last_search = Some(Instant::now());
        for word in words.iter().rev() {
            if inner.wanted.front() != Some(word) {
                inner.wanted.retain(|w| w != word);
                inner.wanted.push_front(word.clone());
            }
        }
        inner.wanted.truncate(WANTED_WORDS);
        let found: Option<Vec<Arc<Postings>>> = words
            .iter()
            .map(|w| inner.lists.get(w).filter(|p| p.epoch == epoch).cloned())
            .collect();
        if let Some(found) = found {
            return Lookup::Fresh(found);
        }
        // A rare word makes the full scan cheap: nothing to build.
        let known_rare = words.iter().any(|w| inner.rare.get(w) == Some(&epoch));
        if !known_rare {
            inner.pending = true;
            self.wake.notify_all();
        }
        Lookup::Missing
    }

    /// The chunks' postings may be stale: rebuild them after the writes pause, if the index
    /// was searched lately, or was never rebuilt (the first build prepares the common words).
    pub(crate) fn written(&self) {
        let mut inner = self.lock();
        let wanted = match inner.last_search {
            Some(at) => at.elapsed() < IDLE,
            None => !inner.prepared,
        };
        if wanted {
            inner.pending = true;
            self.wake.notify_all();
        }
    }

    /// Whether a warmer thread must be started (the caller starts it).
    pub(crate) fn claim_warmer(&self) -> bool {
        let mut inner = self.lock();
        let start = inner.pending && !inner.running;
        if start {
            inner.running = true;
        }
        start
    }

    /// How many words have postings, and their bytes (tests and benches).
    pub fn held(&self) -> (usize, usize) {
        let inner = self.lock();
        (
            inner.lists.len(),
            inner.lists.values().map(|p| p.bytes()).sum(),
        )
    }
}

/// The chunks holding every word, best first as FTS5 orders them (`ORDER BY bm25, rowid`),
/// handed out in growing sorted runs so a page never sorts every match.
pub(crate) struct BestFirst {
    rows: Vec<(f64, i64)>,
    next: usize,
    sorted: usize,
}

fn best_first(a: &(f64, i64), b: &(f64, i64)) -> std::cmp::Ordering {
    a.0.partial_cmp(&b.0)
        .unwrap_or(std::cmp::Ordering::Equal)
        .then(a.1.cmp(&b.1))
}

impl BestFirst {
    /// Merges the postings (one per query word, in the query's order, a word repeated as
    /// often as it is written) into each chunk's query score.
    pub(crate) fn merge(lists: &[Arc<Postings>]) -> BestFirst {
        let mut rows = Vec::new();
        let Some(shortest) = lists.iter().min_by_key(|p| p.rows.len()) else {
            return BestFirst {
                rows,
                next: 0,
                sorted: 0,
            };
        };
        let mut at = vec![0usize; lists.len()];
        'chunks: for &(chunk, _) in &shortest.rows {
            for (list, pos) in lists.iter().zip(at.iter_mut()) {
                let rows = &list.rows;
                // Galloping would help a very short list; a linear walk is enough here.
                while *pos < rows.len() && rows[*pos].0 < chunk {
                    *pos += 1;
                }
                if *pos == rows.len() || rows[*pos].0 != chunk {
                    continue 'chunks;
                }
            }
            // FTS5 adds the words' terms in the query's order, from 0.0 (bm25() returns
            // the sum negated, and negation commutes with rounding).
            let score = lists
                .iter()
                .zip(&at)
                .fold(0.0f64, |sum, (list, &pos)| sum + list.rows[pos].1);
            rows.push((score, chunk));
        }
        BestFirst {
            rows,
            next: 0,
            sorted: 0,
        }
    }
}

impl Iterator for BestFirst {
    /// (chunk, score).
    type Item = (i64, f64);

    fn next(&mut self) -> Option<(i64, f64)> {
        if self.next == self.rows.len() {
            return None;
        }
        if self.next == self.sorted {
            let rest = &mut self.rows[self.sorted..];
            let run = rest.len().min(self.sorted.max(64));
            if run < rest.len() {
                rest.select_nth_unstable_by(run - 1, best_first);
            }
            rest[..run].sort_unstable_by(best_first);
            self.sorted += run;
        }
        let (score, chunk) = self.rows[self.next];
        self.next += 1;
        Some((chunk, score))
    }
}

/// Starts the warmer of `index` when one is asked for and none runs.
pub(crate) fn ensure_warmer(index: &VaultIndex, me: &Weak<VaultIndex>) {
    if !index.common().claim_warmer() {
        return;
    }
    let me = me.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("index-words-{}", index.vault_id()))
        .spawn(move || warmer(me));
    if let Err(error) = spawned {
        tracing::warn!("cannot start the common words' warmer: {error}");
        index.common().lock().running = false;
    }
}

/// The warmer's loop: waits to be asked, waits for the writes to pause, rebuilds; ends when
/// its index is gone.
fn warmer(me: Weak<VaultIndex>) {
    let mut own: Option<Connection> = None;
    loop {
        {
            let Some(index) = me.upgrade() else { return };
            let common = index.common();
            let mut inner = common.lock();
            if !inner.pending {
                let (guard, _) = common
                    .wake
                    .wait_timeout(inner, PARK)
                    .unwrap_or_else(|e| e.into_inner());
                inner = guard;
            }
            if !inner.pending {
                continue;
            }
            inner.pending = false;
        }
        // The writes pause: the epoch stays the same for QUIET.
        loop {
            let Some(index) = me.upgrade() else { return };
            let before = read_epoch(&index, &mut own);
            drop(index);
            std::thread::sleep(QUIET);
            let Some(index) = me.upgrade() else { return };
            if read_epoch(&index, &mut own) == before {
                break;
            }
        }
        let Some(index) = me.upgrade() else { return };
        if let Err(error) = rebuild(&index, &mut own) {
            tracing::warn!(vault = %index.vault_id(), "building the common words' postings: {error}");
        }
    }
}

/// A read-only connection of the warmer's own on the file, or `None` for an in-memory one
/// (tests), where the shared connection is used.
fn own_connection(index: &VaultIndex, own: &mut Option<Connection>) {
    if own.is_some() {
        return;
    }
    let path = index.db_path();
    if path.as_os_str() == ":memory:" {
        return;
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    match Connection::open_with_flags(path, flags) {
        Ok(conn) => {
            let _ = conn.busy_timeout(tc_tools::db::BUSY_TIMEOUT);
            *own = Some(conn);
        }
        Err(error) => {
            tracing::warn!("the common words' warmer reads on the shared connection: {error}")
        }
    }
}

fn read_epoch(index: &VaultIndex, own: &mut Option<Connection>) -> Option<i64> {
    own_connection(index, own);
    match own {
        Some(conn) => epoch(conn).ok(),
        None => epoch(&index.conn()).ok(),
    }
}

/// Builds, in one snapshot, the postings of the wanted words and then of the words in the
/// most chunks, within the budget, and drops every other.
fn rebuild(index: &VaultIndex, own: &mut Option<Connection>) -> rusqlite::Result<()> {
    own_connection(index, own);
    match own {
        Some(conn) => in_snapshot(conn, |conn| rebuild_in(index.common(), conn)),
        None => in_snapshot(&index.conn(), |conn| rebuild_in(index.common(), conn)),
    }
}

/// Runs `f` in one read transaction, so every word's postings see the same chunks.
fn in_snapshot(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    conn.execute_batch("BEGIN")?;
    let built = f(conn);
    let ended = conn.execute_batch(if built.is_ok() { "COMMIT" } else { "ROLLBACK" });
    built?;
    ended
}

fn rebuild_in(common: &CommonWords, conn: &Connection) -> rusqlite::Result<()> {
    let now = epoch(conn)?;
    let (wanted, top) = {
        let inner = common.lock();
        let top = match &inner.top {
            Some((at, words)) if *at == now => Some(words.clone()),
            _ => None,
        };
        (inner.wanted.iter().cloned().collect::<Vec<_>>(), top)
    };
    let top = match top {
        Some(top) => top,
        None => {
            let top = top_words(conn)?;
            common.lock().top = Some((now, top.clone()));
            top
        }
    };
    let mut chosen: HashSet<String> = HashSet::new();
    let mut spent = 0usize;
    let mut scan = conn.prepare_cached(
        "SELECT rowid, bm25(index_fts, 2.0, 1.0) FROM index_fts WHERE index_fts MATCH ?1
         ORDER BY rowid",
    )?;
    for word in wanted.iter().chain(top.iter()) {
        if spent >= BUDGET_BYTES || chosen.contains(word) {
            continue;
        }
        let held = {
            let inner = common.lock();
            if inner.rare.get(word) == Some(&now) {
                continue;
            }
            inner.lists.get(word).filter(|p| p.epoch == now).cloned()
        };
        let postings = match held {
            Some(postings) => postings,
            None => {
                let quoted = format!("\"{word}\"");
                let rows = scan
                    .query_map([quoted], |row| Ok((row.get::<_, i64>(0)?, row.get(1)?)))?
                    .collect::<rusqlite::Result<Vec<(i64, f64)>>>()?;
                if rows.len() < COMMON_CHUNKS {
                    common.lock().rare.insert(word.clone(), now);
                    continue;
                }
                let postings = Arc::new(Postings { epoch: now, rows });
                // Published at once: a query of these words need not wait for the rest.
                common
                    .lock()
                    .lists
                    .insert(word.clone(), Arc::clone(&postings));
                postings
            }
        };
        if spent + postings.bytes() > BUDGET_BYTES {
            continue;
        }
        spent += postings.bytes();
        chosen.insert(word.clone());
    }
    let mut inner = common.lock();
    inner
        .lists
        .retain(|word, p| p.epoch == now && chosen.contains(word));
    inner.rare.retain(|_, at| *at == now);
    inner.prepared = true;
    Ok(())
}

/// The words in the most chunks (FTS5's vocabulary, read in full: the warmer's own time).
fn top_words(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    conn.execute_batch(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.index_vocab USING fts5vocab(main, index_fts, row)",
    )?;
    let mut stmt = conn.prepare_cached(
        "SELECT term FROM temp.index_vocab WHERE doc >= ?1 ORDER BY doc DESC LIMIT ?2",
    )?;
    stmt.query_map(
        rusqlite::params![COMMON_CHUNKS as i64, TOP_WORDS as i64],
        |row| row.get::<_, String>(0),
    )?
    .filter(|word| match word {
        Ok(word) => word.is_ascii(),
        Err(_) => true,
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const WORDS: [&str; 6] = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"];

    /// A vault of `notes` notes of three sections each, their words drawn from [`WORDS`]
    /// with lengths from 1 to 24 words (so a word is in most chunks, not all), indexed.
    fn vault(notes: usize) -> (tempfile::TempDir, tempfile::TempDir, Arc<VaultIndex>) {
        let root = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |below: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % below as u64) as usize
        };
        for n in 0..notes {
            let mut text = String::new();
            for section in 0..3 {
                text.push_str(&format!("# Part {section} {}\n", WORDS[next(6)]));
                let words: Vec<&str> = (0..1 + next(24)).map(|_| WORDS[next(6)]).collect();
                text.push_str(&words.join(" "));
                text.push_str("\n\n");
            }
            std::fs::write(root.path().join(format!("n{n:05}.md")), text).unwrap();
        }
        let index = crate::open_indexes(
            cache.path(),
            [("main", root.path())],
            &crate::SearchConfig::default(),
        )
        .unwrap()
        .remove(0);
        index.first_build_unwatched();
        (root, cache, index)
    }

    fn fts_of(words: &[String]) -> String {
        words
            .iter()
            .map(|w| format!("\"{w}\""))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// FTS5's own ranking of every match.
    fn full_scan(index: &VaultIndex, fts: &str) -> Vec<(i64, u64)> {
        let conn = index.conn();
        let mut stmt = conn
            .prepare(
                "SELECT rowid, bm25(index_fts, 2.0, 1.0) AS score FROM index_fts
                 WHERE index_fts MATCH ?1 ORDER BY score, rowid",
            )
            .unwrap();
        stmt.query_map([fts], |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, f64>(1)?.to_bits()))
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
    }

    /// The ranking from the postings, when they are of the current epoch.
    fn from_postings(index: &VaultIndex, fts: &str) -> Option<Vec<(i64, u64)>> {
        let words = plain_words(fts)?;
        let now = epoch(&index.conn()).unwrap();
        match index.common().lookup(&words, now) {
            Lookup::Fresh(lists) => Some(
                BestFirst::merge(&lists)
                    .map(|(chunk, score)| (chunk, score.to_bits()))
                    .collect(),
            ),
            Lookup::Missing => None,
        }
    }

    // r[verify search.bm25.common-words]
    #[test]
    fn common_words_rank_as_the_full_scan() {
        let (root, _cache, index) = vault(1_200);
        rebuild(&index, &mut None).unwrap();
        let (held, _) = index.common().held();
        assert!(held >= WORDS.len(), "every word is in 1,000 chunks or more");

        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
            cases: 48,
            ..ProptestConfig::default()
        });
        let query = proptest::collection::vec((0..WORDS.len(), any::<bool>()), 1..5);
        runner
            .run(&query, |picked| {
                let words: Vec<String> = picked
                    .iter()
                    .map(|&(i, upper)| {
                        if upper {
                            WORDS[i].to_ascii_uppercase()
                        } else {
                            WORDS[i].to_owned()
                        }
                    })
                    .collect();
                let fts = fts_of(&words);
                let fast = from_postings(&index, &fts).expect("fresh postings");
                prop_assert!(!fast.is_empty());
                prop_assert_eq!(fast, full_scan(&index, &fts), "{}", fts);
                Ok(())
            })
            .unwrap();

        // A write advances the epoch: the postings are not used until they are rebuilt.
        let fts = fts_of(&["alpha".to_owned(), "zeta".to_owned()]);
        std::fs::write(root.path().join("n00007.md"), "alpha alpha zeta\n").unwrap();
        std::fs::remove_file(root.path().join("n00008.md")).unwrap();
        let before = epoch(&index.conn()).unwrap();
        index.reconcile().unwrap();
        assert!(
            epoch(&index.conn()).unwrap() > before,
            "the write advanced the epoch"
        );
        assert_eq!(
            from_postings(&index, &fts),
            None,
            "stale postings are not used"
        );
        rebuild(&index, &mut None).unwrap();
        assert_eq!(from_postings(&index, &fts), Some(full_scan(&index, &fts)));

        // A reconciliation that writes no chunk keeps them.
        let now = epoch(&index.conn()).unwrap();
        index.reconcile().unwrap();
        assert_eq!(epoch(&index.conn()).unwrap(), now);
        assert!(from_postings(&index, &fts).is_some());
    }

    // r[verify search.bm25.common-words]
    #[test]
    fn an_index_no_one_searches_is_prepared_once() {
        // A CommonWords of its own: no warmer thread takes `pending` meanwhile.
        let common = CommonWords::default();
        common.written();
        assert!(
            common.lock().pending,
            "the first build prepares the common words"
        );
        {
            let mut inner = common.lock();
            inner.pending = false;
            inner.prepared = true;
        }
        common.written();
        assert!(
            !common.lock().pending,
            "no rebuild for an index never searched"
        );
        assert!(matches!(
            common.lookup(&["alpha".to_owned()], 0),
            Lookup::Missing
        ));
        common.lock().pending = false;
        common.written();
        assert!(
            common.lock().pending,
            "a searched index is rebuilt after a write"
        );
        // (An Instant before the machine's boot cannot be made: then this part is skipped.)
        if let Some(long_ago) = Instant::now().checked_sub(IDLE + Duration::from_secs(1)) {
            common.lock().last_search = Some(long_ago);
            common.lock().pending = false;
            common.written();
            assert!(!common.lock().pending, "not one searched five minutes ago");
        }

        let (_root, _cache, index) = vault(10);
        rebuild(&index, &mut None).unwrap();
        assert!(
            index.common().lock().prepared,
            "a rebuild marks the index prepared"
        );
    }

    #[test]
    fn rare_words_get_no_postings() {
        let (_root, _cache, index) = vault(40);
        rebuild(&index, &mut None).unwrap();
        assert_eq!(index.common().held().0, 0);
        let fts = fts_of(&["alpha".to_owned()]);
        assert_eq!(from_postings(&index, &fts), None);
        rebuild(&index, &mut None).unwrap();
        assert_eq!(
            index.common().held().0,
            0,
            "a searched rare word is not kept"
        );
    }

    #[test]
    fn plain_words_are_whole_ascii_words() {
        assert_eq!(
            plain_words("\"Garden\" \"review\""),
            Some(vec!["garden".to_owned(), "review".to_owned()])
        );
        assert_eq!(plain_words("\"proj\"*"), None);
        assert_eq!(plain_words("\"café\""), None);
        assert_eq!(plain_words("\"a\" \"b\"* \"c\""), None);
    }

    #[test]
    fn best_first_orders_by_score_then_chunk() {
        let list = |rows: Vec<(i64, f64)>| Arc::new(Postings { epoch: 0, rows });
        let a = list((0..500).map(|i| (i, -((i % 7) as f64))).collect());
        let b = list((0..500).filter(|i| i % 2 == 0).map(|i| (i, -1.0)).collect());
        let merged: Vec<(i64, f64)> = BestFirst::merge(&[a, b]).collect();
        assert_eq!(merged.len(), 250);
        let mut expected: Vec<(i64, f64)> = (0..500)
            .filter(|i| i % 2 == 0)
            .map(|i| (i, -((i % 7) as f64) - 1.0))
            .collect();
        expected.sort_by(|x, y| x.1.partial_cmp(&y.1).unwrap().then(x.0.cmp(&y.0)));
        assert_eq!(merged, expected);
    }
}
