//! What the tag tools cost on a 10,000-note vault (spec/metadata.md `## Tags`): `list_tags`
//! (the whole vault's counts, the first page; on an unchanged vault, and right after a note
//! was edited) and a `rename_tag` dry run over the 1,000 notes carrying the renamed tag. Each note has frontmatter tags and inline tags, nested
//! ones among them. `cargo bench -p tc-metadata --bench tags` (it also prints p50/p99 over
//! 200 calls of each); `cargo test --benches` runs each once.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use tc_tools::testing::Tools;

struct MetadataTools;

impl Tools for MetadataTools {
    fn registry() -> tc_tools::Registry {
        let mut registry = tc_tools::Registry::new();
        tc_metadata::register(&mut registry).unwrap();
        registry
    }
}

type Fx = tc_tools::testing::Fx<MetadataTools>;

const NOTES: usize = 10_000;
/// Every tenth note carries `project/<n>`: the 1,000 notes the rename touches.
const RENAMED_EVERY: usize = 10;

fn vault() -> Fx {
    let fx = Fx::new();
    for i in 0..NOTES {
        let area = format!("area/{}", i % 37);
        let topic = format!("topic-{}", i % 211);
        let project = if i % RENAMED_EVERY == 0 {
            format!(" #project/{}", i % 50)
        } else {
            String::new()
        };
        fx.put(
            &format!("notes/{:03}/{i:05}.md", i % 100),
            &format!(
                "---\ntitle: 'Note {i}'\ntags: [{area}, {topic}]\n---\n# Note {i}\n\nA paragraph about #{topic} and #status/{}{project}, with `#code` and [[Other#heading]].\n",
                ["todo", "doing", "done"][i % 3]
            ),
        );
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

fn percentiles(label: &str, mut samples: Vec<Duration>) {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    println!(
        "{label}: p50 {:.2} ms, p99 {:.2} ms over {} calls",
        at(0.50).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        samples.len()
    );
}

fn bench(c: &mut Criterion) {
    let fx = vault();
    let list = || fx.call("list_tags", json!({})).unwrap();
    let dry_run = || {
        fx.call("rename_tag", json!({"from": "project", "to": "work"}))
            .unwrap()
    };
    let out = dry_run();
    assert_eq!(out["notes_count"], NOTES / RENAMED_EVERY);
    assert!(list()["tags"].as_array().unwrap().len() > 200);
    // Only under `cargo bench` (criterion passes --bench), not in the one-shot test run.
    if std::env::args().any(|a| a == "--bench") {
        for (label, call) in [
            (
                "list_tags, 10,000 notes",
                &list as &dyn Fn() -> serde_json::Value,
            ),
            ("rename_tag dry run, 1,000 of 10,000 notes", &dry_run),
        ] {
            let samples = (0..200)
                .map(|_| {
                    let started = Instant::now();
                    black_box(call());
                    started.elapsed()
                })
                .collect();
            percentiles(label, samples);
        }
        // The first listing after a note changed: the index reconciles the edit, whose
        // transaction also moves the kept counts (index.tag-counts), and the page is read.
        let samples = (0..200)
            .map(|round| {
                fx.put(
                    "notes/000/00000.md",
                    &format!("---\ntags: [edited]\n---\n#round-{round}\n"),
                );
                let started = Instant::now();
                black_box(list());
                started.elapsed()
            })
            .collect();
        percentiles("list_tags right after a note was edited", samples);
    }
    let mut group = c.benchmark_group("tags_10000");
    group.sample_size(20);
    group.bench_function("list_tags", |b| b.iter(|| black_box(list())));
    group.bench_function("rename_tag_dry_run_1000", |b| {
        b.iter(|| black_box(dry_run()))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
