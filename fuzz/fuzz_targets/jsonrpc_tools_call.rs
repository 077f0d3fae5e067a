//! Fuzz target `jsonrpc_tools_call`: the body is tc_conformance::fuzz_bodies::jsonrpc_tools_call
//! (see its docs): bytes as one JSON-RPC message into the in-process server's stdio framing.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tc_conformance::fuzz_bodies::jsonrpc_tools_call(data));
