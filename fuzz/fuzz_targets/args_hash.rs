//! Fuzz target `args_hash`: the body is tc_conformance::fuzz_bodies::args_hash_json (see its docs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tc_conformance::fuzz_bodies::args_hash_json(data));
