//! What a bulk call over 1,000 notes costs (spec/bulk.md): the gated call that plans, binds
//! and raises the one confirmation, and the confirmed `bulk_set_property` that writes them.
//! `cargo bench -p tc-bulk`; `cargo test --benches` runs each once.

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

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("bulk_set_property_1000");
    group.sample_size(10);
    let fx = vault();
    group.bench_function("gated_call_raises", |b| {
        b.iter(|| {
            let refused = fx.call("bulk_set_property", args()).unwrap_err();
            black_box(refused);
        })
    });
    group.bench_function("confirmed_apply", |b| {
        b.iter_batched(
            || {
                let fx = vault();
                let token = fx.require("bulk_set_property", &args());
                (fx, token)
            },
            |(fx, token)| {
                let out = fx
                    .call("bulk_set_property", with_token(&args(), &token))
                    .unwrap();
                assert_eq!(out["changed"], NOTES);
                fx
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
