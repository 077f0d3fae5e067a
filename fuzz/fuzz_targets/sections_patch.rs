//! Fuzz target `sections_patch`: the body is tc_vault::fuzz_bodies::sections_patch (see its docs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tc_vault::fuzz_bodies::sections_patch(data));
