//! What keeping a version adds to a confirmed write (spec/versions.md
//! `versions.keep.confirmed`): the same guarded atomic write of a note, without and with the
//! snapshot of the bytes it replaces, for a 4 KiB and a 64 KiB note.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use tc_gate::clock::{OsEntropy, SystemClock};
use tc_vault::VaultPath;
use tc_vault::vault::{Precondition, Retention, Vault};

fn note(size: usize, fill: u8) -> Vec<u8> {
    let line = format!("- a line of a note, {} ", fill as char);
    line.bytes().cycle().take(size).collect()
}

fn writes(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("vault");
    std::fs::create_dir_all(&root).unwrap();
    let vault = Vault::open(
        "bench",
        &root,
        dir.path().join("cache/snapshots/bench"),
        Arc::new(SystemClock),
        Arc::new(OsEntropy),
    )
    .unwrap();
    let path = VaultPath::parse("notes/plan.md").unwrap();
    let mut group = c.benchmark_group("confirmed_write");
    for size in [4 * 1024, 64 * 1024] {
        let versions = [note(size, b'a'), note(size, b'b')];
        let mut hash = vault
            .write(&path, &versions[0], &Precondition::None)
            .unwrap()
            .hash;
        let mut turn = 1;
        group.bench_with_input(BenchmarkId::new("write", size), &size, |b, _| {
            b.iter(|| {
                let next = &versions[turn % 2];
                hash = vault
                    .write(&path, black_box(next), &Precondition::HashIs(hash.clone()))
                    .unwrap()
                    .hash;
                turn += 1;
            })
        });
        group.bench_with_input(BenchmarkId::new("write_keeping", size), &size, |b, _| {
            b.iter(|| {
                let next = &versions[turn % 2];
                hash = vault
                    .write_keeping(&path, black_box(next), &Precondition::HashIs(hash.clone()))
                    .unwrap()
                    .outcome
                    .hash;
                turn += 1;
            })
        });
        // The versions the run kept go, as the sweeper would take them.
        vault.prune_snapshots(&Retention::new(1, 1)).unwrap();
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = writes
}
criterion_main!(benches);
