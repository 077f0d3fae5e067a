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
                        // The value keeps the spaces that set it off from its key, as written
                        // (a block whose values are aligned stays aligned).
                        let value = value_part.trim_start_matches(' ');
                        let old_after = &line[(raw_key_end + 1).min(line.len())..];
                        let old_gap =
                            &old_after[..old_after.len() - old_after.trim_start_matches(' ').len()];
                        let gap = if old_gap.is_empty() || value.is_empty() {
                            &value_part[..value_part.len() - value.len()]
                        } else {
                            old_gap
                        };
                        new = format!("{}:{gap}{value}", &line[..raw_key_end]);
                        let old_text = &yaml[entry.start..text_end];
                        if let Some(comment) = trailing_comment(old_text) {
                            // The comment keeps the spaces that set it off, as written.
                            let code = old_text.trim_end();
                            let before = &code[..code.len() - comment.len()];
                            let gap = &before[before.trim_end_matches([' ', '\t']).len()..];
                            new.push_str(if gap.is_empty() { " " } else { gap });
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

// r[impl vault.frontmatter.list-append]
/// `content` with `item` appended to the list at top-level key `key`, in the list's own
/// style: a flow list (`key: [a, b]`) gains `, item` before its `]` (a trailing comment
/// kept), a block list gains a `- item` line after its last item, at that item's indent. Any
/// other shape (no such key, a scalar) is set by [`merge`] to the old items plus `item`.
pub fn push_item(content: &str, key: &str, item: &Json) -> Result<String, FrontmatterError> {
    let parsed = parse_note(content)?;
    let old_items = parsed
        .frontmatter
        .as_ref()
        .and_then(|fm| fm.to_json().get(key).cloned());
    let Some(Json::Array(mut items)) = old_items else {
        let mut data = Map::new();
        let mut items = match old_items {
            Some(Json::Null) | None => Vec::new(),
            Some(other) => vec![other],
        };
        items.push(item.clone());
        data.insert(key.to_owned(), Json::Array(items));
        return merge(content, &data);
    };
    let fallback = |items: Vec<Json>| {
        let mut data = Map::new();
        data.insert(key.to_owned(), Json::Array(items));
        merge(content, &data)
    };
    let empty = items.is_empty();
    items.push(item.clone());
    let mut expected = parsed.frontmatter.clone().unwrap_or_default();
    let mut data = Map::new();
    data.insert(key.to_owned(), Json::Array(items.clone()));
    expected.merge(&data)?;
    // The item as the YAML serializer writes a scalar in a block list.
    let written = entry_text("k", &Json::Array(vec![item.clone()]))?;
    let Some(scalar) = written
        .lines()
        .nth(1)
        .and_then(|l| l.trim_start().strip_prefix("- "))
    else {
        return fallback(items);
    };
    let scalar = scalar.to_owned();
    let edited = edit(content, &expected, |yaml, list| {
        let entry = list
            .iter()
            .find(|e| e.key == key)
            .ok_or_else(|| refused("the key is not a top-level line"))?;
        let text = &yaml[entry.start..entry.end];
        if let Some(text_end) = entry.single_line_text_end {
            // A flow list on the key's line: insert before its closing bracket.
            let line = &yaml[entry.start..text_end];
            let (_, close) = flow_brackets(line)?;
            let insert = if empty {
                scalar.clone()
            } else {
                format!(", {scalar}")
            };
            let at = entry.start + close;
            return Ok(format!("{}{insert}{}", &yaml[..at], &yaml[at..]));
        }
        // A block list: after its last `- ` line, at that line's indent.
        let mut last_item_end = None;
        let mut prefix = String::new();
        let mut offset = entry.start;
        for line in text.split_inclusive('\n') {
            let trimmed = line.trim_start();
            if trimmed.starts_with("- ") || trimmed.trim_end() == "-" {
                prefix = line[..line.len() - trimmed.len()].to_owned();
                last_item_end = Some(offset + line.len());
            }
            offset += line.len();
        }
        let at = last_item_end.ok_or_else(|| refused("not a block list"))?;
        let eol = if yaml[..at].ends_with("\r\n") {
            "\r\n"
        } else {
            "\n"
        };
        let mut before = yaml[..at].to_owned();
        if !before.ends_with('\n') {
            before.push_str(eol);
        }
        Ok(format!("{before}{prefix}- {scalar}{eol}{}", &yaml[at..]))
    });
    match edited {
        Ok(text) => Ok(text),
        // A shape the line edit does not handle: the plain merge, itself read back.
        Err(_) => fallback(items),
    }
}

/// The byte offsets of a one-line flow list's `[` and `]` in `line` (a key line), the
/// closing bracket found before any trailing comment.
fn flow_brackets(line: &str) -> Result<(usize, usize), FrontmatterError> {
    let code_end = trailing_comment(line).map_or(line.len(), |c| {
        line[..line.len() - c.len()].trim_end().len()
    });
    let open = line.find('[').ok_or_else(|| refused("not a flow list"))?;
    let close = line[..code_end]
        .rfind(']')
        .filter(|close| *close > open)
        .ok_or_else(|| refused("not a flow list"))?;
    Ok((open, close))
}

/// The value a YAML scalar written as `text` reads as (`None` when it does not parse).
fn scalar_value(text: &str) -> Option<Json> {
    Frontmatter::parse_yaml(&format!("k: {text}\n"))
        .ok()
        .and_then(|fm| fm.to_json().get("k").cloned())
}

/// The byte ranges of a flow list's items in `inner` (the text between its brackets), split
/// at commas outside quotes.
fn flow_items(inner: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let (mut start, mut quote) = (0, None::<char>);
    for (at, ch) in inner.char_indices() {
        match quote {
            Some(q) if ch == q => quote = None,
            Some(_) => {}
            None if ch == '"' || ch == '\'' => quote = Some(ch),
            None if ch == ',' => {
                out.push((start, at));
                start = at + 1;
            }
            None => {}
        }
    }
    if !inner[start..].trim().is_empty() || !out.is_empty() {
        out.push((start, inner.len()));
    }
    out
}

// r[impl vault.frontmatter.list-remove]
/// `content` without the items of the list at `key` that `gone` picks, in the list's own
/// style: a flow list loses those elements (and their commas), a block list loses their
/// `- ` lines; comments and every other line stay. A list left empty is written `[]` (flow)
/// or the key removed (block). Any other shape goes through [`merge`]/[`remove`].
pub fn remove_items(
    content: &str,
    key: &str,
    gone: &dyn Fn(&Json) -> bool,
) -> Result<String, FrontmatterError> {
    let parsed = parse_note(content)?;
    let Some(Json::Array(items)) = parsed
        .frontmatter
        .as_ref()
        .and_then(|fm| fm.to_json().get(key).cloned())
    else {
        return Ok(content.to_owned());
    };
    let kept: Vec<Json> = items.iter().filter(|item| !gone(item)).cloned().collect();
    if kept.len() == items.len() {
        return Ok(content.to_owned());
    }
    let fallback = || {
        if kept.is_empty() {
            remove(content, &[key.to_owned()])
        } else {
            let mut data = Map::new();
            data.insert(key.to_owned(), Json::Array(kept.clone()));
            merge(content, &data)
        }
    };
    let mut expected = parsed.frontmatter.clone().unwrap_or_default();
    let mut data = Map::new();
    data.insert(key.to_owned(), Json::Array(kept.clone()));
    expected.merge(&data)?;
    let edited = edit(content, &expected, |yaml, list| {
        let entry = list
            .iter()
            .find(|e| e.key == key)
            .ok_or_else(|| refused("the key is not a top-level line"))?;
        if let Some(text_end) = entry.single_line_text_end {
            let line = &yaml[entry.start..text_end];
            let (open, close) = flow_brackets(line)?;
            let inner = &line[open + 1..close];
            let parts: Vec<&str> = flow_items(inner)
                .into_iter()
                .map(|(a, b)| &inner[a..b])
                .filter(|part| !scalar_value(part.trim()).is_some_and(|v| gone(&v)))
                .collect();
            let rebuilt = parts
                .iter()
                .enumerate()
                .map(|(i, part)| if i == 0 { part.trim_start() } else { part })
                .collect::<Vec<_>>()
                .join(",");
            let at = entry.start;
            return Ok(format!(
                "{}{}{}",
                &yaml[..at + open + 1],
                rebuilt,
                &yaml[at + close..]
            ));
        }
        let mut out = String::with_capacity(yaml.len());
        out.push_str(&yaml[..entry.start]);
        let text = &yaml[entry.start..entry.end];
        for line in text.split_inclusive('\n') {
            let trimmed = line.trim_start();
            let dropped = trimmed.strip_prefix("- ").is_some_and(|item| {
                let item = item.trim_end_matches(['\n', '\r']);
                let code = trailing_comment(item)
                    .map_or(item, |c| item[..item.len() - c.len()].trim_end());
                scalar_value(code.trim()).is_some_and(|v| gone(&v))
            });
            if !dropped {
                out.push_str(line);
            }
        }
        out.push_str(&yaml[entry.end..]);
        Ok(out)
    });
    match edited {
        Ok(text) => Ok(text),
        Err(_) => fallback(),
    }
}

/// A scalar as the YAML serializer writes it in a list.
fn scalar_text(value: &Json) -> Result<Option<String>, FrontmatterError> {
    let written = entry_text("k", &Json::Array(vec![value.clone()]))?;
    Ok(written
        .lines()
        .nth(1)
        .and_then(|l| l.trim_start().strip_prefix("- "))
        .map(str::to_owned))
}

// r[impl vault.frontmatter.list-replace]
/// `content` with each item of the list at `key` for which `new` gives a value replaced by
/// it, in place: only that element's characters change (a flow element, or a block item's
/// text before its comment). Any other shape goes through [`merge`].
pub fn replace_items(
    content: &str,
    key: &str,
    new: &dyn Fn(&Json) -> Option<Json>,
) -> Result<String, FrontmatterError> {
    let parsed = parse_note(content)?;
    let Some(Json::Array(items)) = parsed
        .frontmatter
        .as_ref()
        .and_then(|fm| fm.to_json().get(key).cloned())
    else {
        return Ok(content.to_owned());
    };
    let replaced: Vec<Json> = items
        .iter()
        .map(|item| new(item).unwrap_or_else(|| item.clone()))
        .collect();
    if replaced == items {
        return Ok(content.to_owned());
    }
    let mut expected = parsed.frontmatter.clone().unwrap_or_default();
    let mut data = Map::new();
    data.insert(key.to_owned(), Json::Array(replaced.clone()));
    expected.merge(&data)?;
    let substitute = |code: &str| -> Result<Option<String>, FrontmatterError> {
        match scalar_value(code.trim()).and_then(|v| new(&v)) {
            Some(value) => scalar_text(&value),
            None => Ok(None),
        }
    };
    let edited = edit(content, &expected, |yaml, list| {
        let entry = list
            .iter()
            .find(|e| e.key == key)
            .ok_or_else(|| refused("the key is not a top-level line"))?;
        let mut out = String::with_capacity(yaml.len() + 16);
        out.push_str(&yaml[..entry.start]);
        if let Some(text_end) = entry.single_line_text_end {
            let line = &yaml[entry.start..text_end];
            let (open, close) = flow_brackets(line)?;
            let inner = &line[open + 1..close];
            out.push_str(&line[..open + 1]);
            let mut at = 0;
            for (a, b) in flow_items(inner) {
                out.push_str(&inner[at..a]);
                let part = &inner[a..b];
                let lead = &part[..part.len() - part.trim_start().len()];
                let tail = &part[lead.len() + part.trim().len()..];
                match substitute(part)? {
                    Some(text) => {
                        out.push_str(lead);
                        out.push_str(&text);
                        out.push_str(tail);
                    }
                    None => out.push_str(part),
                }
                at = b;
            }
            out.push_str(&inner[at..]);
            out.push_str(&yaml[entry.start + close..entry.end]);
        } else {
            for line in yaml[entry.start..entry.end].split_inclusive('\n') {
                let trimmed = line.trim_start();
                let Some(item) = trimmed.strip_prefix("- ") else {
                    out.push_str(line);
                    continue;
                };
                let body = item.trim_end_matches(['\n', '\r']);
                let code = trailing_comment(body)
                    .map_or(body, |c| body[..body.len() - c.len()].trim_end());
                match substitute(code)? {
                    Some(text) => {
                        out.push_str(&line[..line.len() - trimmed.len()]);
                        out.push_str("- ");
                        out.push_str(&text);
                        out.push_str(&item[code.len()..]);
                    }
                    None => out.push_str(line),
                }
            }
        }
        out.push_str(&yaml[entry.end..]);
        Ok(out)
    });
    match edited {
        Ok(text) => Ok(text),
        Err(_) => {
            let mut data = Map::new();
            data.insert(key.to_owned(), Json::Array(replaced));
            merge(content, &data)
        }
    }
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
        // A changed value keeps its comment and the spaces that set the comment off.
        assert_eq!(
            merge(NOTE, &data(json!({"author": "Grace"}))).unwrap(),
            NOTE.replace("'Ada'   #", "Grace   #")
        );
        let aligned = "---\nstatus:   todo    # spaced\npriority: 2         # number\n---\n";
        assert_eq!(
            merge(aligned, &data(json!({"status": "done", "priority": 3}))).unwrap(),
            "---\nstatus:   done    # spaced\npriority: 3         # number\n---\n"
        );
        let tabbed = "---\nstatus: todo\t# tab\n---\n";
        assert_eq!(
            merge(tabbed, &data(json!({"status": "done"}))).unwrap(),
            "---\nstatus: done\t# tab\n---\n"
        );
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

    // r[verify vault.frontmatter.list-append]
    #[test]
    fn an_item_joins_a_list_in_the_lists_own_style() {
        let c = json!("c");
        let flow = "---\ntitle: 'T'  # kept\ntags: [a, b]   # mine\n---\nbody\n";
        assert_eq!(
            push_item(flow, "tags", &c).unwrap(),
            "---\ntitle: 'T'  # kept\ntags: [a, b, c]   # mine\n---\nbody\n"
        );
        let empty = "---\ntags: []\n---\n";
        assert_eq!(
            push_item(empty, "tags", &c).unwrap(),
            "---\ntags: [c]\n---\n"
        );
        let block = "---\ntags:\n  - a # first\n  - b\n# a comment\ntitle: x\n---\n";
        assert_eq!(
            push_item(block, "tags", &c).unwrap(),
            "---\ntags:\n  - a # first\n  - b\n  - c\n# a comment\ntitle: x\n---\n"
        );
        let column = "---\r\ntags:\r\n- a\r\n---\r\n";
        assert_eq!(
            push_item(column, "tags", &c).unwrap(),
            "---\r\ntags:\r\n- a\r\n- c\r\n---\r\n"
        );
        // No list yet: the key is added, the rest untouched.
        let none = "---\n# top\ntitle: x\n---\n";
        let added = push_item(none, "tags", &c).unwrap();
        assert!(added.starts_with("---\n# top\ntitle: x\n"), "{added}");
        assert!(added.contains("tags:\n- c\n"), "{added}");
        // A value that needs quoting is quoted as YAML needs.
        let quoted = push_item(flow, "tags", &json!("x: y")).unwrap();
        assert!(
            quoted.contains("tags: [a, b, 'x: y']") || quoted.contains("tags: [a, b, \"x: y\"]"),
            "{quoted}"
        );
    }

    // r[verify vault.frontmatter.list-remove]
    #[test]
    fn items_leave_a_list_in_the_lists_own_style() {
        let b = |v: &Json| v == &json!("b");
        let flow = "---\ntitle: x # kept\ntags: [a, b, c]   # mine\n---\nbody\n";
        assert_eq!(
            remove_items(flow, "tags", &b).unwrap(),
            "---\ntitle: x # kept\ntags: [a, c]   # mine\n---\nbody\n"
        );
        let block = "---\ntags:\n  - a # first\n  - b # goes\n  - c\n# a comment\n---\n";
        assert_eq!(
            remove_items(block, "tags", &b).unwrap(),
            "---\ntags:\n  - a # first\n  - c\n# a comment\n---\n"
        );
        let last = "---\ntags: [b]\nx: 1\n---\n";
        assert_eq!(
            remove_items(last, "tags", &b).unwrap(),
            "---\ntags: []\nx: 1\n---\n"
        );
        let quoted = "---\ntags: ['a, z', \"b\"]\n---\n";
        assert_eq!(
            remove_items(quoted, "tags", &b).unwrap(),
            "---\ntags: ['a, z']\n---\n"
        );
        assert_eq!(
            remove_items(flow, "tags", &|v: &Json| v == &json!("q")).unwrap(),
            flow
        );
    }

    // r[verify vault.frontmatter.list-replace]
    #[test]
    fn items_are_replaced_in_place() {
        let rename = |v: &Json| (v == &json!("todo")).then(|| json!("task"));
        let flow = "---\ntags: [a, todo, c]   # mine\n---\n";
        assert_eq!(
            replace_items(flow, "tags", &rename).unwrap(),
            "---\ntags: [a, task, c]   # mine\n---\n"
        );
        let block = "---\ntags:\n  - a # first\n  - todo # this one\n# a comment\n---\n";
        assert_eq!(
            replace_items(block, "tags", &rename).unwrap(),
            "---\ntags:\n  - a # first\n  - task # this one\n# a comment\n---\n"
        );
        assert_eq!(replace_items(flow, "tags", &|_: &Json| None).unwrap(), flow);
    }
}
