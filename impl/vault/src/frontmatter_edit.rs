//! Frontmatter edits that lose nothing (spec/vault.md `vault.frontmatter.lossless`,
//! `vault.frontmatter.lossless-refused`).
//!
//! A merge or a removal changes only the lines of the top-level keys it touches: comments,
//! quoting, key order, flow or block style and blank lines elsewhere stay byte for byte, a key
//! set to the value it has leaves the note as it was, and a written value is quoted only where
//! YAML needs it (the YAML serializer's choice). The block is edited as lines: a top-level
//! entry is its key line and the lines under it (indented, or `- ` items of a sequence at the
//! key's own column). The result is read back, and one that does not parse to exactly the
//! mapping a plain merge would give is refused rather than written.
//!
//! Why lines and not a format-preserving YAML editor: the well-kept one (`yamlpatch`, on
//! tree-sitter) needs a newer Rust than this project's toolchain; the read-back check is what
//! makes the line edit safe.

use serde_json::{Map, Value as Json};

use crate::note::{Frontmatter, FrontmatterError, parse_note, with_frontmatter};
use crate::sections::frontmatter_block;

fn refused(reason: impl Into<String>) -> FrontmatterError {
    FrontmatterError::new(format!(
        "the frontmatter cannot be edited in place ({}); nothing was changed",
        reason.into()
    ))
}

/// One top-level entry of a block mapping: its key as written and its lines' byte span.
#[derive(Debug)]
struct Entry {
    key: String,
    start: usize,
    end: usize,
    /// The end of the entry's text when it is one line (before the line end).
    single_line_text_end: Option<usize>,
}

/// The key of a top-level key line (`key: …`, `"key": …`, `'key': …`), if it is one.
fn key_of(line: &str) -> Option<String> {
    let first = line.chars().next()?;
    if first.is_whitespace() || first == '#' || first == '-' || first == '[' || first == '{' {
        return None;
    }
    if let Some(quote @ ('"' | '\'')) = line.chars().next() {
        let close = line[1..].find(quote)? + 1;
        let rest = line[close + 1..].trim_start();
        return rest.starts_with(':').then(|| line[1..close].to_owned());
    }
    let colon = line
        .find(": ")
        .or_else(|| line.ends_with(':').then(|| line.len() - 1))?;
    Some(line[..colon].trim_end().to_owned())
}

/// The top-level entries of `yaml`, or `None` when the block is not a plain block mapping
/// (a flow mapping, a document marker, a tab-indented line at the top).
fn entries(yaml: &str) -> Option<Vec<Entry>> {
    let mut out: Vec<Entry> = Vec::new();
    let mut start = 0;
    for line in yaml.split_inclusive('\n') {
        let end = start + line.len();
        let text = line.trim_end_matches('\n').trim_end_matches('\r');
        let continuation = text.starts_with(' ')
            || text.starts_with('\t')
            || text.starts_with("- ")
            || text == "-";
        if let Some(key) = key_of(text) {
            out.push(Entry {
                key,
                start,
                end,
                single_line_text_end: Some(start + text.len()),
            });
        } else if continuation && !text.trim().is_empty() && !text.trim_start().starts_with('#') {
            let last = out.last_mut()?;
            last.end = end;
            last.single_line_text_end = None;
        } else if !(text.trim().is_empty() || text.starts_with('#')) {
            return None;
        }
        start = end;
    }
    Some(out)
}

/// `key: value` as the YAML serializer writes it (block style for collections), ending in
/// `\n`.
fn entry_text(key: &str, value: &Json) -> Result<String, FrontmatterError> {
    let mut one = Map::new();
    one.insert(key.to_owned(), value.clone());
    let mut fm = Frontmatter::new();
    fm.merge(&one)?;
    fm.to_yaml()
}

/// A single-line entry's trailing comment (` # …` outside quotes), if any.
fn trailing_comment(line: &str) -> Option<&str> {
    let mut quote: Option<char> = None;
    let mut previous = ' ';
    for (at, ch) in line.char_indices() {
        match quote {
            Some(q) if ch == q => quote = None,
            Some(_) => {}
            None if ch == '"' || ch == '\'' => quote = Some(ch),
            None if ch == '#' && (previous == ' ' || previous == '\t') => {
                return Some(line[at..].trim_end());
            }
            None => {}
        }
        previous = ch;
    }
    None
}

// r[impl vault.frontmatter.lossless]
/// `content` with every key of `data` set (a shallow merge, as [`Frontmatter::merge`] does),
/// changing only the lines of the keys whose value changes.
pub fn merge(content: &str, data: &Map<String, Json>) -> Result<String, FrontmatterError> {
    let parsed = parse_note(content)?;
    let Some(old) = parsed.frontmatter else {
        // No block yet: one is added; nothing existing is rewritten.
        let mut fresh = Frontmatter::new();
        fresh.merge(data)?;
        return with_frontmatter(content, &fresh);
    };
    let old_json = old.to_json();
    let changed: Vec<(&String, &Json)> = data
        .iter()
        .filter(|(key, value)| old_json.get(key.as_str()) != Some(*value))
        .collect();
    if changed.is_empty() {
        return Ok(content.to_owned());
    }
    let mut expected = old.clone();
    expected.merge(data)?;
    edit(content, &expected, |yaml, list| {
        let mut replaced: Vec<(usize, usize, String)> = Vec::new();
        let mut added = String::new();
        for (key, value) in &changed {
            let text = entry_text(key, value)?;
            match list.iter().find(|e| &e.key == *key) {
                Some(entry) => {
                    let line = &yaml[entry.start..entry.end];
                    let eol = &line[line.trim_end_matches(['\n', '\r']).len()..];
                    let mut new = text.trim_end_matches('\n').to_owned();
                    // A one-line entry keeps its key as written and its comment.
                    if let Some(text_end) = entry.single_line_text_end
                        && !new.contains('\n')
                    {
                        let value_part = &new[new.find(':').map_or(0, |c| c + 1)..];
                        let raw_key_end = line.find(':').unwrap_or(0);
                        new = format!("{}:{value_part}", &line[..raw_key_end]);
                        if let Some(comment) = trailing_comment(&yaml[entry.start..text_end]) {
                            new.push(' ');
                            new.push_str(comment);
                        }
                    }
                    new.push_str(if eol.is_empty() { "\n" } else { eol });
                    replaced.push((entry.start, entry.end, new));
                }
                None => added.push_str(&text),
            }
        }
        replaced.sort_by_key(|r| r.0);
        let mut out = String::with_capacity(yaml.len() + added.len());
        let mut at = 0;
        for (start, end, new) in replaced {
            out.push_str(&yaml[at..start]);
            out.push_str(&new);
            at = end;
        }
        out.push_str(&yaml[at..]);
        if !added.is_empty() {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&added);
        }
        Ok(out)
    })
}

// r[impl vault.frontmatter.lossless]
/// `content` without the named keys, every other line of the block as it was.
pub fn remove(content: &str, keys: &[String]) -> Result<String, FrontmatterError> {
    let parsed = parse_note(content)?;
    let Some(old) = parsed.frontmatter else {
        return Ok(content.to_owned());
    };
    if !keys.iter().any(|k| old.contains_key(k)) {
        return Ok(content.to_owned());
    }
    let mut expected = old.clone();
    expected.remove(keys);
    let block = frontmatter_block(content).ok_or_else(|| refused("no frontmatter block"))?;
    let comments = content[block.yaml_start..block.yaml_end]
        .lines()
        .any(|line| line.trim_start().starts_with('#'));
    if expected.is_empty() && !comments {
        // Nothing is left in the block: it goes, as a block with no key would be dropped.
        return with_frontmatter(content, &expected);
    }
    edit(content, &expected, |yaml, list| {
        let mut out = String::with_capacity(yaml.len());
        let mut at = 0;
        for entry in list.iter().filter(|e| keys.contains(&e.key)) {
            out.push_str(&yaml[at..entry.start]);
            at = entry.end;
        }
        out.push_str(&yaml[at..]);
        Ok(out)
    })
}

// r[impl vault.frontmatter.lossless-refused]
/// Edits the YAML of `content`'s block with `change` and checks the result reads as
/// `expected`; the rest of the note is kept byte for byte.
fn edit(
    content: &str,
    expected: &Frontmatter,
    change: impl FnOnce(&str, &[Entry]) -> Result<String, FrontmatterError>,
) -> Result<String, FrontmatterError> {
    let block = frontmatter_block(content).ok_or_else(|| refused("no frontmatter block"))?;
    let yaml = &content[block.yaml_start..block.yaml_end];
    let list = entries(yaml).ok_or_else(|| refused("it is not a plain block mapping"))?;
    let crlf = yaml.contains("\r\n");
    let mut new_yaml = change(yaml, &list)?;
    if crlf {
        new_yaml = new_yaml.replace("\r\n", "\n").replace('\n', "\r\n");
    }
    let reread = if new_yaml.trim().is_empty() {
        Frontmatter::new()
    } else {
        Frontmatter::parse_yaml(&new_yaml).map_err(|e| refused(e.reason))?
    };
    if reread != *expected {
        return Err(refused(
            "the edited block would not read as the intended values",
        ));
    }
    Ok(format!(
        "{}{}{}",
        &content[..block.yaml_start],
        new_yaml,
        &content[block.yaml_end..]
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn data(value: Json) -> Map<String, Json> {
        match value {
            Json::Object(map) => map,
            _ => unreachable!(),
        }
    }

    const NOTE: &str = "---\n# who wrote it\nauthor: 'Ada'   # single quotes, kept\ntags: [a, b]\n\nstatus: draft\n---\nbody # not yaml\n";

    // r[verify vault.frontmatter.lossless]
    #[test]
    fn a_merge_changes_only_the_lines_of_the_keys_it_sets() {
        let out = merge(NOTE, &data(json!({"status": "done"}))).unwrap();
        assert_eq!(
            out,
            "---\n# who wrote it\nauthor: 'Ada'   # single quotes, kept\ntags: [a, b]\n\nstatus: done\n---\nbody # not yaml\n"
        );
        let out = merge(NOTE, &data(json!({"due": "2026-12-24"}))).unwrap();
        assert!(out.starts_with("---\n# who wrote it\nauthor: 'Ada'   # single quotes, kept\ntags: [a, b]\n\nstatus: draft\n"), "{out}");
        assert!(out.contains("due:"), "{out}");
        assert!(out.ends_with("---\nbody # not yaml\n"));
        // The same value again is a byte no-op.
        assert_eq!(merge(NOTE, &data(json!({"author": "Ada"}))).unwrap(), NOTE);
    }

    // r[verify vault.frontmatter.lossless]
    #[test]
    fn a_removal_keeps_every_other_line_and_crlf() {
        let out = remove(NOTE, &["status".to_owned()]).unwrap();
        assert!(
            out.starts_with(
                "---\n# who wrote it\nauthor: 'Ada'   # single quotes, kept\ntags: [a, b]\n"
            ),
            "{out}"
        );
        assert!(!out.contains("status"));
        let crlf = NOTE.replace('\n', "\r\n");
        let out = merge(&crlf, &data(json!({"status": "done"}))).unwrap();
        assert_eq!(out, crlf.replace("status: draft", "status: done"));
    }
}
