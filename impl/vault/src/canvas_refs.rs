//! The references a canvas holds to files of the vault (spec/vault.md `vault.links.canvas`):
//! JSON Canvas 1.0 file nodes (`{"type": "file", "file": "folder/note.md"}`), whose `file`
//! is the referenced file's vault path.
//!
//! A rewrite changes only the characters of the `file` values it replaces: the rest of the
//! canvas (key order, spacing, other nodes, escapes) stays byte for byte, as a person's
//! canvas edited by Obsidian expects. A canvas that is not valid JSON is never rewritten.

use std::ops::Range;

/// One `"file": "…"` value of a canvas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanvasRef {
    /// The value's span, quotes included.
    pub range: Range<usize>,
    /// The value decoded.
    pub file: String,
}

/// Every `file` value of a valid canvas, in order (none for text that is not JSON).
pub fn find_canvas_refs(text: &str) -> Vec<CanvasRef> {
    if serde_json::from_str::<serde_json::Value>(text).is_err() {
        return Vec::new();
    }
    let bytes = text.as_bytes();
    let mut refs = Vec::new();
    let mut i = 0;
    // Whether the last string token was the key `file`, and the `:` after it was seen.
    let mut after_file_key = false;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let Some(end) = string_end(bytes, i) else {
                    return refs;
                };
                let token = &text[i..end];
                let mut j = end;
                while j < bytes.len() && bytes[j].is_ascii_whitespace() {
                    j += 1;
                }
                let is_key = bytes.get(j) == Some(&b':');
                if after_file_key
                    && !is_key
                    && let Ok(file) = serde_json::from_str::<String>(token)
                {
                    refs.push(CanvasRef {
                        range: i..end,
                        file,
                    });
                }
                after_file_key =
                    is_key && serde_json::from_str::<String>(token).is_ok_and(|k| k == "file");
                i = end;
            }
            b':' | b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            _ => {
                after_file_key = false;
                i += 1;
            }
        }
    }
    refs
}

/// The end (exclusive) of the JSON string starting at `start`.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

// r[impl vault.links.canvas]
/// The canvas with every `file` equal to `from` set to `to`, and how many were; `None` when
/// none is.
pub fn rewrite_canvas_refs(text: &str, from: &str, to: &str) -> Option<(String, usize)> {
    let refs: Vec<CanvasRef> = find_canvas_refs(text)
        .into_iter()
        .filter(|r| r.file == from)
        .collect();
    if refs.is_empty() {
        return None;
    }
    let quoted = serde_json::to_string(to).ok()?;
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for r in &refs {
        out.push_str(&text[copied..r.range.start]);
        out.push_str(&quoted);
        copied = r.range.end;
    }
    out.push_str(&text[copied..]);
    Some((out, refs.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    // r[verify vault.links.canvas]
    #[test]
    fn rewrites_only_the_file_values_that_name_the_path() {
        let canvas = r##"{
  "nodes": [
    {"id":"1","type":"file","file":"old/Plan.md","x":0},
    {"id":"2", "type": "text", "text": "file: old/Plan.md"},
    {"id":"3","type":"file" ,"file" : "old\/Plan.md", "subpath":"#Goals"},
    {"id":"4","type":"file","file":"other.md"}
  ],
  "edges": []
}"##;
        let found: Vec<String> = find_canvas_refs(canvas)
            .into_iter()
            .map(|r| r.file)
            .collect();
        assert_eq!(found, ["old/Plan.md", "old/Plan.md", "other.md"]);
        let (out, n) = rewrite_canvas_refs(canvas, "old/Plan.md", "new/Plan \"x\".md").unwrap();
        assert_eq!(n, 2);
        let expected = canvas
            .replace(r#""file":"old/Plan.md""#, r#""file":"new/Plan \"x\".md""#)
            .replace(r#""old\/Plan.md""#, r#""new/Plan \"x\".md""#);
        assert_eq!(out, expected);
        assert!(rewrite_canvas_refs(canvas, "missing.md", "x.md").is_none());
        assert!(rewrite_canvas_refs("{\"file\": \"old/Plan.md\"", "old/Plan.md", "x").is_none());
    }
}
