//! requestState and read_notes cursor: seal and open.

use std::hint::black_box;

use criterion::{Criterion, criterion_group};
use serde_json::json;
use tc_gate::clock::{OsEntropy, SeededEntropy};
use tc_gate::cursor::{CursorClaims, CursorCodec, request_digest};
use tc_gate::keys::ServerSecret;
use tc_gate::request_state::{RequestStateSealer, StateBinding};

const NOW: i64 = 1_800_000_000_000;

fn request_state(c: &mut Criterion) {
    let secret = ServerSecret::ephemeral(&SeededEntropy::new(1));
    let sealer = RequestStateSealer::new(&secret);
    let binding = StateBinding {
        caller: "stdio",
        vault: "main",
        tool: "delete_note",
        args_hash: "0123456789abcdef0123456789abcdef",
        state_fp: "0f1e2d3c4b5a69780f1e2d3c4b5a69780f1e2d3c4b5a69780f1e2d3c4b5a6978",
    };
    let sealed = sealer.seal(&binding, 300_000, NOW, &OsEntropy);
    let mut group = c.benchmark_group("request_state");
    group.bench_function("seal", |b| {
        b.iter(|| sealer.seal(black_box(&binding), 300_000, NOW, &OsEntropy))
    });
    group.bench_function("open", |b| {
        b.iter(|| sealer.open(black_box(&sealed.token), &binding, NOW + 1))
    });
    group.finish();
}

fn cursor(c: &mut Criterion) {
    let secret = ServerSecret::ephemeral(&SeededEntropy::new(2));
    let codec = CursorCodec::new(&secret);
    let args = json!({"vault": "main", "folder": "projects", "recursive": true});
    let digest = request_digest(&args);
    let claims = CursorClaims {
        caller: "stdio",
        tool: "read_notes",
        request_digest: &digest,
        position: "projects/2026/notes/meeting-notes-0421.md",
        page: 17,
    };
    let token = codec.seal(&claims, NOW).unwrap_or_default();
    let mut group = c.benchmark_group("cursor");
    group.bench_function("seal", |b| b.iter(|| codec.seal(black_box(&claims), NOW)));
    group.bench_function("open", |b| {
        b.iter(|| codec.open(black_box(&token), "stdio", "read_notes", &digest, NOW + 1))
    });
    group.bench_function("request_digest", |b| {
        b.iter(|| request_digest(black_box(&args)))
    });
    group.finish();
}

criterion_group!(benches, request_state, cursor);
