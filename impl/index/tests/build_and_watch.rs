//! The index's life: its tables in cache.db, the background build, the watcher
//! (spec/index.md `index.store`, `index.build.background`, `index.watch`).

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{Fx, indexed};
use tc_index::{BuildStatus, VaultIndex};
use tc_tools::ProgressSink;

// r[verify index.store]
#[test]
fn the_index_lives_in_cache_db_and_survives_a_restart() {
    let fx = Fx::new();
    fx.put("a.md", "---\ntags: [x]\nk: 1\n---\n# H\n[[b]] #y\n");
    fx.put("img.png", "png");
    // Stamps older than the racy window, so a reopened index can trust them.
    let hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    for name in ["a.md", "img.png"] {
        let file = std::fs::File::options()
            .write(true)
            .open(fx.root.join(name))
            .unwrap();
        file.set_modified(hour_ago).unwrap();
    }
    drop(indexed(&fx));
    let db = rusqlite::Connection::open(fx.cache().join("cache.db")).unwrap();
    let (size, hash, keys): (i64, String, String) = db
        .query_row(
            "SELECT size, hash, frontmatter_keys FROM index_files WHERE vault = 'main' AND path = 'a.md'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(size as usize, fx.get("a.md").unwrap().len());
    assert_eq!(
        hash,
        tc_vault::vault::content_hash(fx.get("a.md").unwrap().as_bytes())
    );
    assert_eq!(keys, r#"["tags","k"]"#);
    let tags: Vec<String> = db
        .prepare("SELECT tag FROM index_tags WHERE path = 'a.md' ORDER BY tag")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(tags, ["x", "y"]);
    let files: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM index_files WHERE vault = 'main'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(files, 2, "attachments are files of the index too");
    // Reopened over the same cache.db, nothing needs reading again.
    let index = tc_index::open_indexes(
        &fx.cache(),
        [("main", fx.root.as_path())],
        &tc_index::SearchConfig::default(),
    )
    .unwrap()
    .remove(0);
    assert_eq!(index.reconcile().unwrap().reindexed, 0);
}

struct Recorder(std::sync::Mutex<Vec<(f64, Option<String>)>>);

impl ProgressSink for Recorder {
    fn report(&self, progress: f64, _total: Option<f64>, message: Option<&str>) {
        self.0
            .lock()
            .unwrap()
            .push((progress, message.map(str::to_owned)));
    }
}

// r[verify index.build.background]
#[test]
fn the_first_build_runs_in_the_background_and_a_waiting_search_reports_progress() {
    let fx = Fx::new();
    for i in 0..3000 {
        fx.put(
            &format!("f{}/n{i}.md", i % 30),
            &format!("# N{i}\nword{i} common\n"),
        );
    }
    let index: Arc<VaultIndex> = tc_index::open_indexes(
        &fx.cache(),
        [("main", fx.root.as_path())],
        &tc_index::SearchConfig::default(),
    )
    .unwrap()
    .remove(0);
    fx.pipeline
        .vault("main")
        .unwrap()
        .attach_index(index.clone());
    let started = Instant::now();
    index.start();
    assert!(
        started.elapsed() < Duration::from_millis(50),
        "start returns at once"
    );
    assert_eq!(index.status(), BuildStatus::Building);
    let recorder = Arc::new(Recorder(Default::default()));
    let control = tc_tools::CallControl {
        cancel: Default::default(),
        progress: recorder.clone(),
    };
    let prepared = fx
        .pipeline
        .prepare(
            &tc_tools::testing::caller(),
            "search_notes",
            &json!({"query": "word2999"}),
        )
        .unwrap();
    let out = fx
        .pipeline
        .execute(&prepared, prepared.token_approval(), &control)
        .unwrap()
        .to_value();
    assert_eq!(out["results"][0]["path"], "f29/n2999.md", "{out}");
    assert_eq!(index.status(), BuildStatus::Ready);
    let reports = recorder.0.lock().unwrap();
    assert!(!reports.is_empty(), "the waiting call heard of the build");
    assert_eq!(reports[0].1.as_deref(), Some("building the vault index"));
}

// r[verify index.watch]
#[test]
fn the_watcher_reindexes_a_change_before_any_call() {
    let fx = Fx::new();
    fx.put("a.md", "alpha\n");
    let index = indexed(&fx);
    fx.put("b.md", "beta, written by another program\n");
    fx.put(".obsidian/workspace.json", "{}");
    let deadline = Instant::now() + Duration::from_secs(5);
    let db = rusqlite::Connection::open(fx.cache().join("cache.db")).unwrap();
    let seen = || -> i64 {
        db.query_row(
            "SELECT COUNT(*) FROM index_files WHERE vault = 'main' AND path = 'b.md'",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    while seen() == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(seen(), 1, "indexed by the watcher, no call made");
    drop(index);
}

// r[verify vault.write.temps-swept]
#[test]
fn the_scan_sweeps_the_temp_files_a_killed_write_left_and_nothing_else() {
    let fx = Fx::new();
    fx.put("notes/a.md", "alpha\n");
    let dir = fx.root.join("notes");
    let aged = |name: &str| {
        let location = dir.join(name);
        std::fs::write(&location, "text no note showed").unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&location)
            .unwrap()
            .set_modified(old)
            .unwrap();
        location
    };
    let left = aged(".tc-write-AbC123.tmp");
    let live = dir.join(".tc-write-live01.tmp");
    std::fs::write(&live, "a write under way").unwrap();
    // Not a write's temp file: a delete's note set aside, and a file of the user's own.
    let aside = aged(".tc-delete-0123456789abcdef.tmp");
    let own = aged(".tc-write-notes.md");
    indexed(&fx);
    assert!(!left.exists(), "the stale temp file is swept");
    assert!(live.exists(), "a fresh one may belong to a live write");
    assert!(aside.exists() && own.exists());
    assert_eq!(
        std::fs::read_to_string(dir.join("a.md")).unwrap(),
        "alpha\n"
    );
}
