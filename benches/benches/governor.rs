//! The governor on 1 KB, ~1 MB and 100 MB results with a 1 MB cap
//! (the design targets: refusing 100 MB must cost at most 1.2× refusing 1.01 MB).

use std::hint::black_box;

use criterion::{Criterion, criterion_group};
use tc_benches::notes_result;
use tc_gate::governor::Governor;

const CAP: usize = 1_000_000;

fn governor(c: &mut Criterion) {
    let governor = Governor::new(CAP);
    // Built once, outside the timed loops.
    let cases = [
        ("fits_1KB", notes_result(1_000)),
        ("fits_0.99MB", notes_result(990_000)),
        ("refuse_1.01MB", notes_result(1_010_000)),
        ("refuse_100MB", notes_result(100_000_000)),
    ];
    let mut group = c.benchmark_group("governor");
    for (name, value) in &cases {
        group.bench_function(*name, |b| {
            b.iter(|| {
                governor
                    .serialize_bounded(black_box(value))
                    .map(|bytes| bytes.len())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, governor);
