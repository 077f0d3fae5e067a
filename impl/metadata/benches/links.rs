//! What the link tools cost on a 10,000-note vault (spec/metadata.md `## Links`):
//! `get_backlinks` of a note, through the whole tool pipeline (the index reconciled in the
//! call, the folder ACL judged on every linking note), with a printed p50/p99 over 1,000
//! calls; `find_orphans` and `find_unresolved_links`, which resolve every link of the vault.
//! `cargo bench -p tc-metadata --bench links`; `cargo test --benches` runs each once.

use std::hint::black_box;
use std::time::Instant;

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
const PER_FOLDER: usize = 100;

fn note_path(i: usize) -> String {
    format!("area-{:02}/note-{i:05}.md", i / PER_FOLDER)
}

/// A small deterministic generator (xorshift), so every run links the same notes.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// 10,000 notes in 100 folders, each with five wikilinks (one an embed, one with an alias),
/// a relative and an absolute Markdown link, a dead link and some prose.
fn vault() -> Fx {
    let fx = Fx::new();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for i in 0..NOTES {
        let mut text = format!("---\ntags: [t{}]\n---\n# Note {i}\n\n", i % 17);
        for k in 0..5 {
            let other = rng.below(NOTES);
            match k {
                0 => text.push_str(&format!("![[note-{other:05}]]\n")),
                1 => text.push_str(&format!("See [[note-{other:05}|an alias]] for more.\n")),
                _ => text.push_str(&format!("- [[note-{other:05}]]\n")),
            }
        }
        let near = (i / PER_FOLDER) * PER_FOLDER + rng.below(PER_FOLDER);
        text.push_str(&format!("A [sibling](note-{near:05}.md) and "));
        text.push_str(&format!(
            "[far](/{}) and [[missing-{i}]].\n",
            note_path(rng.below(NOTES))
        ));
        text.push_str("Some prose of the note, a paragraph long enough to look like one.\n");
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

fn bench(c: &mut Criterion) {
    let fx = vault();
    let mut rng = Rng(42);
    // p50/p99 of single calls, as an agent makes them.
    let mut times: Vec<f64> = (0..1_000)
        .map(|_| {
            let path = note_path(rng.below(NOTES));
            let started = Instant::now();
            let out = fx.call("get_backlinks", json!({"path": path})).unwrap();
            black_box(out);
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    println!(
        "get_backlinks on {NOTES} notes: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        times[times.len() / 2],
        times[times.len() * 99 / 100],
        times[times.len() - 1]
    );

    let mut group = c.benchmark_group("links_10000");
    group.sample_size(10);
    group.bench_function("get_backlinks", |b| {
        b.iter(|| {
            let path = note_path(rng.below(NOTES));
            black_box(fx.call("get_backlinks", json!({"path": path})).unwrap())
        })
    });
    group.bench_function("find_orphans", |b| {
        b.iter(|| black_box(fx.call("find_orphans", json!({})).unwrap()))
    });
    group.bench_function("find_unresolved_links", |b| {
        b.iter(|| black_box(fx.call("find_unresolved_links", json!({})).unwrap()))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
