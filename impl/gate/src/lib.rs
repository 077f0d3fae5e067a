//! tc-gate: the confirmation gate as an embeddable, SQLite-backed library.
