//! Editing part of a note (spec/vault.md `vault.sections.*`): a `patch_note`-style replace
//! and append on a 1 MiB note with many sections (target: at most 5 ms each), and the
//! frontmatter merge that changes one key.

use std::hint::black_box;

use criterion::{Criterion, criterion_group};
use serde_json::{Map, Value};
use tc_vault::frontmatter_edit;
use tc_vault::sections::{Anchor, PatchOp, outline, patch};

/// A note of about `size` bytes: a frontmatter block, then sections of prose, list items
/// with block ids and fenced code holding `#` lines, the heading `Target` in the middle.
fn note(size: usize) -> String {
    let mut out = String::from("---\n# a comment\ntitle: 'Plan'\ntags: [a, b]\n---\n");
    let mut i = 0;
    while out.len() < size {
        if i == 500 {
            out.push_str("## Target\nthe section to edit\n\n");
        }
        out.push_str(&format!(
            "## Section {i}\nSome prose for section {i}, long enough to look like a note.\n- item {i} ^b{i}\n\n```\n# not a heading {i}\n```\n\n"
        ));
        i += 1;
    }
    out
}

fn sections(c: &mut Criterion) {
    let text = note(1 << 20);
    let mut group = c.benchmark_group("sections_1MiB");
    group.bench_function("outline", |b| {
        b.iter(|| outline(black_box(&text)).headings.len())
    });
    group.bench_function("patch_replace", |b| {
        b.iter(|| {
            patch(
                black_box(&text),
                Anchor::Heading("Target"),
                PatchOp::Replace,
                "new text",
            )
            .map(|p| p.text.len())
        })
    });
    group.bench_function("patch_append_block", |b| {
        b.iter(|| {
            patch(
                black_box(&text),
                Anchor::Block("b900"),
                PatchOp::Append,
                "- after",
            )
            .map(|p| p.text.len())
        })
    });
    let mut data = Map::new();
    data.insert("status".into(), Value::String("done".into()));
    group.bench_function("frontmatter_merge", |b| {
        b.iter(|| frontmatter_edit::merge(black_box(&text), &data).map(|t| t.len()))
    });
    group.finish();
}

criterion_group!(benches, sections);
