//! Benchmarks of the memory tools through the dispatch pipeline on a store of 10,000
//! entities (spec/memory.md): `upsert_entity` adding an observation to an existing entity
//! (with its note re-rendered and written atomically, fsync included, and without a note),
//! creating a new materialized entity, and `search_entities` for a word many entities
//! share and for one that is rare.
//!
//! `cargo bench -p tc-memory`

use std::sync::{Arc, OnceLock};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use tc_memory::{Memory, MemoryConfig};
use tc_tools::Registry;
use tc_tools::testing::{Fx, Tools};

const ENTITIES: usize = 10_000;

static MEMORY: OnceLock<Arc<Memory>> = OnceLock::new();

struct Bench;

impl Tools for Bench {
    fn registry() -> Registry {
        let memory = MEMORY.get_or_init(|| {
            Arc::new(Memory::in_memory([("main".to_owned(), MemoryConfig::default())]).unwrap())
        });
        let mut registry = Registry::new();
        tc_memory::add_tools(&mut registry, memory).unwrap();
        registry
    }
}

const KINDS: [&str; 3] = ["person", "project", "place"];

const WORDS: [&str; 8] = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
];

fn seeded() -> Fx<Bench> {
    let fx = Fx::<Bench>::new();
    for i in 0..ENTITIES {
        let observations = vec![
            format!("observation {i} about {}", WORDS[i % WORDS.len()]),
            format!("tag{}", i % 97),
        ];
        let kind = KINDS[i % 3];
        fx.call(
            "upsert_entity",
            json!({
                "type": kind,
                "name": format!("entity {i:05}"),
                "observations": observations,
                "materialize": i < 100,
            }),
        )
        .unwrap();
    }
    fx
}

fn benches(c: &mut Criterion) {
    let fx = seeded();
    let mut n = 0u64;
    let mut group = c.benchmark_group("memory_10k");
    group.sample_size(30);
    group.bench_function("upsert_entity add observation, note re-rendered", |b| {
        b.iter(|| {
            n += 1;
            // Rotates over the materialized entities (an entity holds at most 1,000).
            let i = (n % 100) as usize;
            fx.call(
                "upsert_entity",
                json!({"type": KINDS[i % 3], "name": format!("entity {i:05}"), "observations": [format!("new {n}")]}),
            )
            .unwrap()
        })
    });
    group.bench_function("upsert_entity add observation, no note", |b| {
        b.iter(|| {
            n += 1;
            let i = 100 + (n % 9_900) as usize;
            fx.call(
                "upsert_entity",
                json!({"type": KINDS[i % 3], "name": format!("entity {i:05}"), "observations": [format!("new {n}")], "materialize": false}),
            )
            .unwrap()
        })
    });
    group.bench_function("upsert_entity create with note", |b| {
        b.iter(|| {
            n += 1;
            fx.call(
                "upsert_entity",
                json!({"type": "fresh", "name": format!("created {n}"), "observations": ["one"]}),
            )
            .unwrap()
        })
    });
    group.bench_function("search_entities common word, first page of 20", |b| {
        b.iter(|| {
            fx.call("search_entities", json!({"query": "alpha"}))
                .unwrap()
        })
    });
    group.bench_function("search_entities rare word", |b| {
        b.iter(|| {
            fx.call("search_entities", json!({"query": "observation 4242"}))
                .unwrap()
        })
    });
    group.bench_function("search_entities by type, no words, 100", |b| {
        b.iter(|| {
            fx.call(
                "search_entities",
                json!({"query": "", "type": "project", "limit": 100}),
            )
            .unwrap()
        })
    });
    group.finish();
}

criterion_group!(memory, benches);
criterion_main!(memory);
