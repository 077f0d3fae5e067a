//! What the property tools and a filter-only search cost on a 10,000-note vault
//! (spec/metadata.md `## Properties`, `## Recent changes`; spec/index.md
//! `search.filters.*`): `find_notes_by_property` and `search_notes` with a `property` filter
//! and no query, through the whole tool pipeline (the index reconciled in the call, the folder
//! ACL judged on every note), each with a printed p50/p99 over 1,000 calls; `list_properties`
//! and `recent_changes` in the criterion group.
//! `cargo bench -p tc-metadata --bench properties`; `cargo test --benches` runs each once.

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use tc_tools::testing::Tools;

struct Served;

impl Tools for Served {
    fn registry() -> tc_tools::Registry {
        let mut registry = tc_tools::Registry::new();
        tc_metadata::register(&mut registry).unwrap();
        tc_index::register(&mut registry, &tc_index::SearchConfig::default()).unwrap();
        registry
    }
}

type Fx = tc_tools::testing::Fx<Served>;

const NOTES: usize = 10_000;
const PER_FOLDER: usize = 100;
const STATUSES: [&str; 4] = ["active", "done", "waiting", "someday"];
const OWNERS: [&str; 8] = ["ann", "bob", "cid", "dee", "eve", "fay", "gus", "hal"];

fn note_path(i: usize) -> String {
    format!("area-{:02}/note-{i:05}.md", i / PER_FOLDER)
}

/// A small deterministic generator (xorshift), so every run builds the same vault.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// 10,000 notes in 100 folders, each with a frontmatter as people write them: a status
/// (one of four, so a value matches about 2,500 notes), a number, a date, a tag list and a
/// nested project with an owner; then a heading and some prose.
fn vault() -> Fx {
    let fx = Fx::new();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for i in 0..NOTES {
        let text = format!(
            "---\nstatus: {}\npriority: {}\ncreated: 2026-{:02}-{:02}\ntags: [t{}, area{}]\nproject:\n  phase: p{}\n  owner: {}  # who\n---\n# Note {i}\n\nSome prose of the note, a paragraph long enough to look like one.\n",
            STATUSES[rng.below(4)],
            rng.below(5),
            1 + rng.below(12),
            1 + rng.below(28),
            i % 17,
            i / PER_FOLDER,
            rng.below(3),
            OWNERS[rng.below(8)],
        );
        let path = fx.root.join(note_path(i));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let index = tc_index::open_indexes(
        &fx.cache(),
        [("main", fx.root.as_path())],
        &tc_index::SearchConfig::default(),
    )
    .unwrap()
    .remove(0);
    index.first_build();
    fx.pipeline.vault("main").unwrap().attach_index(index);
    fx
}

/// Each call's arguments.
type Args = Box<dyn FnMut() -> Value>;

/// p50 and p99 (ms) of 1,000 calls of `tool` with arguments from `args`.
fn percentiles(fx: &Fx, tool: &str, mut args: impl FnMut() -> Value) -> (f64, f64) {
    let mut times: Vec<f64> = (0..1_000)
        .map(|_| {
            let args = args();
            let started = Instant::now();
            let out = fx.call(tool, args).unwrap();
            black_box(out);
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], times[times.len() * 99 / 100])
}

fn bench(c: &mut Criterion) {
    let fx = vault();
    let (mut a, mut b, mut d) = (Rng(42), Rng(43), Rng(44));
    let cases: [(&str, &str, Args); 4] = [
        (
            "find_notes_by_property status=value (first page, 200 notes)",
            "find_notes_by_property",
            Box::new(move || json!({"key": "status", "value": STATUSES[a.below(4)]})),
        ),
        (
            "find_notes_by_property project.owner=value in a folder",
            "find_notes_by_property",
            Box::new(move || {
                json!({"key": "project.owner", "value": OWNERS[b.below(8)],
                       "folder": format!("area-{:02}", b.below(100))})
            }),
        ),
        (
            "search_notes property filter, no query (20 hits)",
            "search_notes",
            Box::new(move || json!({"property": {"key": "status", "value": STATUSES[d.below(4)]}})),
        ),
        (
            "search_notes property filter + modified_after, sorted by time",
            "search_notes",
            Box::new(|| {
                json!({"property": {"key": "tags", "value": "t3"},
                       "modified_after": "2000-01-01", "sort": "modified"})
            }),
        ),
    ];
    for (label, tool, args) in cases {
        let (p50, p99) = percentiles(&fx, tool, args);
        println!("{label} on {NOTES} notes: p50 {p50:.2} ms, p99 {p99:.2} ms");
    }

    let mut group = c.benchmark_group("properties_10000");
    group.sample_size(10);
    let mut rng = Rng(99);
    group.bench_function("find_notes_by_property", |b| {
        b.iter(|| {
            let value = STATUSES[rng.below(4)];
            black_box(
                fx.call(
                    "find_notes_by_property",
                    json!({"key": "status", "value": value}),
                )
                .unwrap(),
            )
        })
    });
    group.bench_function("search_notes_filter_only", |b| {
        b.iter(|| {
            let value = STATUSES[rng.below(4)];
            black_box(
                fx.call(
                    "search_notes",
                    json!({"property": {"key": "status", "value": value}}),
                )
                .unwrap(),
            )
        })
    });
    // Every chunk of the vault read and matched: regex mode has no index to narrow it.
    group.bench_function("search_notes_regex", |b| {
        b.iter(|| {
            black_box(
                fx.call(
                    "search_notes",
                    json!({"query": r"Note 12\d{3}\b", "mode": "regex"}),
                )
                .unwrap(),
            )
        })
    });
    group.bench_function("list_properties", |b| {
        b.iter(|| black_box(fx.call("list_properties", json!({})).unwrap()))
    });
    group.bench_function("recent_changes", |b| {
        b.iter(|| black_box(fx.call("recent_changes", json!({"limit": 50})).unwrap()))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
