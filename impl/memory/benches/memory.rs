//! Benchmarks of the memory store: `upsert_entity` and `search_entities` on 10,000 entities.
fn main() {}
