//! `ocr_bulk` on one scanned page through the whole pipeline (raise, mint, redeem, handler),
//! uncached (`force`, so tesseract runs) against answered from the cache by content hash
//! (`cargo bench -p tc-ocr`). The gap between the two is what the cache saves a re-read.

#[path = "../tests/support/mod.rs"]
mod support;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use support::{Fx, approved, put_bytes, text_png};

fn ocr_one_page(c: &mut Criterion) {
    let fx = Fx::new();
    put_bytes(
        &fx,
        "scans/page.png",
        &text_png(&["Quartz harbor lantern", "violet meadow"]),
    );
    let mut group = c.benchmark_group("ocr_bulk_one_150dpi_page");
    group.sample_size(10);
    group.bench_function("uncached (tesseract)", |b| {
        let args = json!({"paths": ["scans/page.png"], "force": true});
        b.iter(|| approved(&fx, &args))
    });
    group.bench_function("cached", |b| {
        let args = json!({"paths": ["scans/page.png"]});
        approved(&fx, &args);
        b.iter(|| approved(&fx, &args))
    });
    group.finish();
}

criterion_group!(benches, ocr_one_page);
criterion_main!(benches);
