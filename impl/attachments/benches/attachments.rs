//! What `get_attachment` costs on a photo (spec/attachments.md `attachments.get.image-fits`):
//! a 4000 x 3000 JPEG (about a phone camera's) read from the vault, its header checked,
//! decoded and scaled down until its base64 fits the default 1 MB response cap less the
//! metadata's room (`cargo bench -p tc-attachments --bench attachments`). On the 2-core
//! development machine: 136 ms (a JPEG decoded at half size, then scaled to 1,568 x 1,176 and
//! encoded); a full-size decode alone, for comparison, is 86 ms.

use std::hint::black_box;
use std::io::Cursor;

use criterion::{Criterion, criterion_group, criterion_main};
use tc_attachments::fit::{base64_len, fit_image};

/// A photo-like image: smooth gradients with a little noise, as a camera JPEG at quality 90.
fn photo(width: u32, height: u32) -> Vec<u8> {
    let mut seed = 7u32;
    let image = image::RgbImage::from_fn(width, height, |x, y| {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
        let n = (seed >> 29) as u8;
        image::Rgb([
            ((x * 255 / width) as u8).wrapping_add(n),
            ((y * 255 / height) as u8).wrapping_add(n),
            (((x / 7 + y / 5) % 256) as u8).wrapping_add(n),
        ])
    });
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut Cursor::new(&mut out), 90)
        .encode_image(&image)
        .unwrap();
    out
}

fn get_photo(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("photo.jpg");
    std::fs::write(&file, photo(4000, 3000)).unwrap();
    // The default cap less the frame, the metadata (twice: object and text) and the slack.
    let budget = 1_000_000 - 2_000;
    let size = std::fs::metadata(&file).unwrap().len() as usize;
    assert!(
        base64_len(size) > budget,
        "the photo must need scaling ({size} bytes)"
    );
    let mut group = c.benchmark_group("get_attachment");
    group.sample_size(10);
    group.bench_function("jpeg_4000x3000_under_1mb", |b| {
        b.iter(|| {
            let bytes = std::fs::read(&file).unwrap();
            let fitted = fit_image(black_box(&bytes), "image/jpeg", budget).unwrap();
            assert!(fitted.data.len() <= budget);
            fitted
        })
    });
    // For comparison: the general decoder at full size, which the half-size decode avoids.
    let bytes = std::fs::read(&file).unwrap();
    group.bench_function("decode_only", |b| {
        b.iter(|| image::load_from_memory(black_box(&bytes)).unwrap())
    });
    let fitted = fit_image(&bytes, "image/jpeg", budget).unwrap();
    eprintln!(
        "source {} bytes -> sent {}x{} ({} base64 bytes)",
        bytes.len(),
        fitted.sent_width,
        fitted.sent_height,
        fitted.data.len()
    );
    group.finish();
}

criterion_group!(benches, get_photo);
criterion_main!(benches);
