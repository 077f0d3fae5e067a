//! Fuzz target `lifecycle`: the body is tc_conformance::fuzz_bodies::lifecycle (see its docs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tc_conformance::fuzz_bodies::lifecycle(data));
