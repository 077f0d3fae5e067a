//! Criterion benchmarks of obsidian-tc, one module per area.
//!
//! `cargo bench -p tc-benches` measures; `cargo bench -p tc-benches -- --test` runs each
//! benchmark once (CI).

mod gate_codecs;
mod gate_store;
mod governor;
mod index;
mod paging;
mod sections;

criterion::criterion_main!(
    gate_codecs::benches,
    gate_store::benches,
    governor::benches,
    index::benches,
    paging::benches,
    sections::benches,
);
