//! The bodies of the fuzz targets `sections_patch` and `frontmatter_merge` (fuzz/README.md),
//! kept here so `cargo test -p tc-vault --test fuzz_seeds` replays every committed seed on
//! stable Rust. Each never panics on input and panics only when a property of spec/vault.md
//! `vault.sections.lossless` or `vault.frontmatter.lossless` fails.
//!
//! Input layout (bytes): a selector byte, then NUL-separated fields, the last one running to
//! the end; text is decoded lossily, so every input is a case.

use serde_json::{Map, Value};

use crate::frontmatter_edit;
use crate::note::parse_note;
use crate::sections::{self, Anchor, PatchOp};

fn fields(data: &[u8], n: usize) -> (u8, Vec<String>) {
    let (&selector, rest) = data.split_first().unwrap_or((&0, &[]));
    let mut out: Vec<String> = rest
        .splitn(n, |b| *b == 0)
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect();
    out.resize(n, String::new());
    (selector, out)
}

/// An edit at any anchor of any note changes exactly its span (`vault.sections.lossless`):
/// the text before and after the span is the old text's, an append or a prepend removes
/// nothing and adds whole lines, and a replace removes exactly the span.
pub fn sections_patch(data: &[u8]) {
    let (selector, f) = fields(data, 3);
    let (target, content, note) = (&f[0], &f[1], &f[2]);
    let op = match selector % 3 {
        0 => PatchOp::Append,
        1 => PatchOp::Prepend,
        _ => PatchOp::Replace,
    };
    let anchor = match (selector / 3) % 3 {
        0 => Anchor::Heading(target),
        1 => Anchor::Block(target),
        _ => Anchor::Frontmatter,
    };
    let outline = sections::outline(note);
    for h in &outline.headings {
        assert!(h.start <= h.body_start && h.body_start <= h.section_end);
        assert!(h.section_end <= note.len());
    }
    let Ok(patched) = sections::patch(note, anchor, op, content) else {
        return;
    };
    let (start, end) = patched.span;
    assert!(start <= end && end <= note.len(), "span in the note");
    assert_eq!(
        &patched.text[..start],
        &note[..start],
        "the text before the span"
    );
    assert!(
        patched.text.ends_with(&note[end..]),
        "the text after the span"
    );
    assert_eq!(patched.removed, &note[start..end]);
    assert_eq!(patched.bytes_removed, end - start);
    if op != PatchOp::Replace {
        assert_eq!(patched.bytes_removed, 0, "an insertion removes nothing");
        let added = &patched.text[start..patched.text.len() - (note.len() - end)];
        // Whole lines: what is added ends a line, and starts one unless a missing last line
        // end had to be supplied first.
        assert!(added.is_empty() || added.ends_with('\n'), "{added:?}");
    }
    if let Some(section) = anchor_heading(anchor) {
        let _ = sections::section_text(note, section);
    }
}

fn anchor_heading(anchor: Anchor<'_>) -> Option<&str> {
    match anchor {
        Anchor::Heading(h) => Some(h),
        _ => None,
    }
}

/// A frontmatter merge (`vault.frontmatter.lossless`): when it succeeds, the note reads back
/// with the key set to the value and every other key as it was, and merging the same value
/// again changes no byte; a refusal leaves nothing to check.
pub fn frontmatter_merge(data: &[u8]) {
    let (selector, f) = fields(data, 3);
    let (key, value, yaml) = (&f[0], &f[1], &f[2]);
    let eol = if selector & 1 == 1 { "\r\n" } else { "\n" };
    let note = format!("---{eol}{yaml}{eol}---{eol}body{eol}");
    let value = match selector % 4 {
        0 | 1 => Value::String(value.clone()),
        2 => serde_json::from_str(value).unwrap_or(Value::Null),
        _ => Value::from(value.len()),
    };
    if key.is_empty() {
        return;
    }
    let mut data = Map::new();
    data.insert(key.clone(), value.clone());
    let Ok(before) = parse_note(&note) else {
        return;
    };
    let before = before.frontmatter.map(|f| f.to_json());
    let Ok(merged) = frontmatter_edit::merge(&note, &data) else {
        return;
    };
    let after = parse_note(&merged)
        .expect("a merge that succeeded reads back")
        .frontmatter
        .expect("a frontmatter block")
        .to_json();
    let Value::Object(after) = after else {
        panic!("a mapping");
    };
    assert_eq!(after.get(key), Some(&value), "the merged key");
    if let Some(Value::Object(before)) = before {
        for (k, v) in &before {
            if k != key {
                assert_eq!(after.get(k), Some(v), "key {k} kept");
            }
        }
    }
    let again = frontmatter_edit::merge(&merged, &data).expect("merging the same value again");
    assert_eq!(again, merged, "the same value again is a byte no-op");
}
