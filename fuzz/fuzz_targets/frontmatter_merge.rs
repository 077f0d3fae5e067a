//! Fuzz target `frontmatter_merge`: the body is tc_vault::fuzz_bodies::frontmatter_merge (see its docs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tc_vault::fuzz_bodies::frontmatter_merge(data));
