//! What a bulk call over 1,000 notes costs (spec/bulk.md): the gated call that plans, binds
//! and raises the one confirmation, and the confirmed `bulk_set_property` that writes them.
//! `cargo bench -p tc-bulk`; `cargo test --benches` runs each once.
//!
//! Measured on the two-core ext4 development machine (its file system has no journal, so
//! every new file's inode search skips the inodes freed in the last minutes). Each note
//! applied makes one new file, its atomic replacement; its version is the replaced file
//! itself, linked into the batch's version folder. `confirmed_apply` keeps every sample's
//! vault until the group ends; `confirmed_apply_after_deletions` removes each sample's vault
//! (2,000 files) before the next is made, the worst case for the inode search. Figures are in
//! benches/README.md.

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use tc_tools::testing::{Tools, with_token};

struct BulkTools;

impl Tools for BulkTools {
    fn registry() -> tc_tools::Registry {
        let mut registry = tc_tools::Registry::new();
        tc_bulk::register(&mut registry).unwrap();
        registry
    }
}

type Fx = tc_tools::testing::Fx<BulkTools>;

const NOTES: usize = 1_000;

fn vault() -> Fx {
    let fx = Fx::new();
    for i in 0..NOTES {
        fx.put(
            &format!("projects/{:02}/{i:04}.md", i % 20),
            &format!("---\n# owner: someone\ntitle: 'Note {i}'\nstatus: todo\ntags: [a, b]\n---\n# Note {i}\n\nSome text of the note, a paragraph long enough to look like one.\n"),
        );
    }
    fx
}

fn args() -> Value {
    json!({"folder": "projects", "key": "status", "value": "done"})
}

/// One confirmed apply timed on its own, before criterion's loop.
fn one_apply() {
    let fx = vault();
    let token = fx.require("bulk_set_property", &args());
    let started = std::time::Instant::now();
    let out = fx
        .call("bulk_set_property", with_token(&args(), &token))
        .unwrap();
    let took = started.elapsed();
    assert_eq!(out["changed"], NOTES);
    println!(
        "bulk_set_property on 1,000 notes, one confirmed apply: {:.2} s",
        took.as_secs_f64()
    );
}

fn setup() -> (Fx, String) {
    let fx = vault();
    let token = fx.require("bulk_set_property", &args());
    (fx, token)
}

fn apply(fx: Fx, token: &str) -> Fx {
    let out = fx
        .call("bulk_set_property", with_token(&args(), token))
        .unwrap();
    assert_eq!(out["changed"], NOTES);
    fx
}

fn bench(c: &mut Criterion) {
    // Only under `cargo bench` (criterion passes --bench), not in the one-shot test run.
    if std::env::args().any(|a| a == "--bench") {
        one_apply();
    }
    let mut group = c.benchmark_group("bulk_set_property_1000");
    group.sample_size(10);
    let fx = vault();
    group.bench_function("gated_call_raises", |b| {
        b.iter(|| {
            let refused = fx.call("bulk_set_property", args()).unwrap_err();
            black_box(refused);
        })
    });
    // Every sample's vault is kept until the group ends: nothing is removed between samples.
    let kept = std::cell::RefCell::new(Vec::new());
    group.bench_function("confirmed_apply", |b| {
        b.iter_batched(
            setup,
            |(fx, token)| kept.borrow_mut().push(apply(fx, &token)),
            BatchSize::PerIteration,
        )
    });
    drop(kept);
    group.bench_function("confirmed_apply_after_deletions", |b| {
        b.iter_batched(
            setup,
            |(fx, token)| apply(fx, &token),
            BatchSize::PerIteration,
        )
    });
    group.finish();

    let mut group = c.benchmark_group("bulk_create_notes_1000");
    group.sample_size(10);
    let kept = std::cell::RefCell::new(Vec::new());
    group.bench_function("confirmed_apply", |b| {
        b.iter_batched(
            || {
                let fx = Fx::new();
                let token = fx.require("bulk_create_notes", &create_args());
                (fx, token)
            },
            |(fx, token)| {
                let out = fx
                    .call("bulk_create_notes", with_token(&create_args(), &token))
                    .unwrap();
                assert_eq!(out["created"], NOTES);
                kept.borrow_mut().push(fx);
            },
            BatchSize::PerIteration,
        )
    });
    drop(kept);
    group.finish();
}

fn create_args() -> Value {
    let items: Vec<Value> = (0..NOTES)
        .map(|i| {
            json!({
                "path": format!("inbox/{:02}/{i:04}.md", i % 20),
                "content": format!("# Note {i}\n\nSome text of the note, a paragraph long enough to look like one.\n"),
                "frontmatter": {"status": "todo"},
            })
        })
        .collect();
    json!({"items": items})
}

criterion_group!(benches, bench);
criterion_main!(benches);
