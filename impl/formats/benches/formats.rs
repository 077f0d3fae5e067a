//! The format parsers at sizes a heavy user reaches: a canvas of 5,000 nodes read and written
//! back, a compressed drawing of 5,000 elements read (LZString decompression and JSON), and a
//! base patched in place (`cargo bench -p tc-formats`).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use tc_formats::bases::doc as base;
use tc_formats::canvas::doc as canvas;
use tc_formats::excalidraw::doc as drawing;

const ITEMS: usize = 5_000;

fn canvas_text() -> String {
    let nodes: Vec<String> = (0..ITEMS)
        .map(|i| {
            format!(
                "\t\t{{\"id\":\"n{i}\",\"type\":\"text\",\"text\":\"note {i}\",\"x\":{},\"y\":{},\"width\":250,\"height\":60}}",
                i % 100 * 300,
                i / 100 * 100
            )
        })
        .collect();
    let edges: Vec<String> = (1..ITEMS)
        .map(|i| {
            format!(
                "\t\t{{\"id\":\"e{i}\",\"fromNode\":\"n{}\",\"toNode\":\"n{i}\"}}",
                i - 1
            )
        })
        .collect();
    format!(
        "{{\n\t\"nodes\":[\n{}\n\t],\n\t\"edges\":[\n{}\n\t]\n}}",
        nodes.join(",\n"),
        edges.join(",\n")
    )
}

fn elements() -> Vec<Map<String, Value>> {
    (0..ITEMS)
        .map(|i| {
            let v = json!({"id": format!("el{i:06}"), "type": "rectangle", "x": i % 100 * 30,
                "y": i / 100 * 30, "width": 20, "height": 20, "angle": 0, "strokeColor": "#1e1e1e",
                "backgroundColor": "transparent", "fillStyle": "solid", "strokeWidth": 2,
                "roughness": 1, "opacity": 100, "groupIds": [], "seed": i * 7919,
                "version": 3, "isDeleted": false, "boundElements": null});
            v.as_object().cloned().unwrap_or_default()
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let text = canvas_text();
    c.bench_function("canvas: read and write back 5,000 nodes", |b| {
        b.iter(|| canvas::write(&canvas::parse(black_box(&text)).unwrap()))
    });
    let compressed = drawing::write(&elements(), true);
    c.bench_function("drawing: read 5,000 compressed elements", |b| {
        b.iter(|| drawing::parse(black_box(&compressed), drawing::MAX_SCENE_UNITS).unwrap())
    });
    let definition = json!({"filters": {"and": ["file.hasTag(\"book\")"]},
        "formulas": (0..200).map(|i| (format!("f{i}"), json!(format!("price * {i}")))).collect::<Map<String, Value>>(),
        "views": [{"type": "table", "name": "All"}]});
    let base_text = base::write(definition.as_object().unwrap()).unwrap();
    let patch = json!({"views": [{"type": "cards", "name": "Shelf"}]});
    c.bench_function("base: patch one key of a 200-formula base", |b| {
        b.iter(|| base::patch(black_box(&base_text), patch.as_object().unwrap()).unwrap())
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
