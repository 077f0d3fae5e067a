//! Fuzz target `request_state_open`: the body is tc_conformance::fuzz_bodies::request_state_open (see its docs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tc_conformance::fuzz_bodies::request_state_open(data));
