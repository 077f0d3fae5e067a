//! Fuzz target `summary_render`: the body is tc_conformance::fuzz_bodies::summary_render (see
//! its docs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tc_conformance::fuzz_bodies::summary_render(data));
