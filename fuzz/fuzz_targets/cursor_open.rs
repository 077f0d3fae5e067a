//! Fuzz target `cursor_open`: the body is tc_conformance::fuzz_bodies::cursor_open (see its docs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tc_conformance::fuzz_bodies::cursor_open(data));
