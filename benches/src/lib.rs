//! tc-benches: shared fixtures for the criterion benchmarks.
