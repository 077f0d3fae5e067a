//! Criterion benchmarks of obsidian-tc, one module per area.

fn main() {}
