//! The tag edits as pure functions of a note's text (spec/metadata.md `metadata.add-tag`,
//! `metadata.remove-tag`, `metadata.rename-tag`).
//!
//! The frontmatter is changed only through tc-vault's lossless editor (the `tags`/`tag`
//! key's lines, nothing else), and the body only at the inline tags the index itself finds
//! ([`tc_index::parse::inline_tag_spans`]), so an edit and the index never disagree on what
//! a tag is.

use std::ops::Range;

use serde_json::{Map, Value as Json};
use tc_vault::frontmatter_edit;
use tc_vault::note::{FrontmatterError, parse_note, split_frontmatter};

/// The frontmatter keys Obsidian reads tags from, in the order they are tried.
pub const TAG_KEYS: [&str; 2] = ["tags", "tag"];

/// A tag as compared: without `#`, trailing `/` or surrounding blanks, lowercased.
pub fn normalized(raw: &str) -> String {
    raw.trim()
        .trim_start_matches('#')
        .trim_end_matches('/')
        .to_lowercase()
}

/// Whether `tag` (normalized) is `query` or nested under it.
pub fn within(tag: &str, query: &str) -> bool {
    tag == query
        || tag
            .strip_prefix(query)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// `tag` (as written) renamed from `from` to `to` when it is `from` or nested under it: the
/// first segments that spell `from` become `to`, the rest of the tag is kept as written.
pub fn renamed(tag: &str, from: &str, to: &str) -> Option<String> {
    let bare = tag.trim().trim_start_matches('#');
    let depth = from.split('/').count();
    let mut parts = bare.splitn(depth + 1, '/');
    let head: Vec<&str> = parts.by_ref().take(depth).collect();
    if head.len() < depth || head.join("/").to_lowercase() != from {
        return None;
    }
    Some(match parts.next() {
        Some(rest) => format!("{to}/{rest}"),
        None => to.to_owned(),
    })
}

/// One tag of the frontmatter's lists as the note holds it.
fn item_text(item: &Json) -> Option<&str> {
    item.as_str()
}

/// The tag keys present in the frontmatter, each with its items (a string value split at
/// commas and spaces, as the index reads it; a null value as no items).
fn tag_lists(text: &str) -> Result<Vec<(String, Vec<Json>)>, FrontmatterError> {
    let parsed = parse_note(text)?;
    let Some(frontmatter) = parsed.frontmatter else {
        return Ok(Vec::new());
    };
    let json = frontmatter.to_json();
    let mut lists = Vec::new();
    for key in TAG_KEYS {
        let items = match json.get(key) {
            None => continue,
            Some(Json::String(value)) => value
                .split([',', ' '])
                .filter(|part| !part.trim().is_empty())
                .map(|part| Json::String(part.trim().to_owned()))
                .collect(),
            Some(Json::Array(items)) => items.clone(),
            Some(Json::Null) => Vec::new(),
            // Another kind of value is not a tag list; it is left alone.
            Some(_) => continue,
        };
        lists.push((key.to_owned(), items));
    }
    Ok(lists)
}

/// `text` with `key` set to `items` (removed when `items` is empty), through the lossless
/// editor.
fn set_list(text: &str, key: &str, items: Vec<Json>) -> Result<String, FrontmatterError> {
    if items.is_empty() {
        return frontmatter_edit::remove(text, &[key.to_owned()]);
    }
    let mut data = Map::new();
    data.insert(key.to_owned(), Json::Array(items));
    frontmatter_edit::merge(text, &data)
}

/// Whether the frontmatter carries `tag` (normalized) itself.
pub fn frontmatter_has(text: &str, tag: &str) -> Result<bool, FrontmatterError> {
    Ok(tag_lists(text)?.iter().any(|(_, items)| {
        items
            .iter()
            .filter_map(item_text)
            .any(|t| normalized(t) == tag)
    }))
}

// r[impl metadata.add-tag]
/// `text` with `tag` (as written, without `#`) added to the frontmatter's tag list, or
/// `None` when the frontmatter carries it already.
pub fn add_to_frontmatter(text: &str, tag: &str) -> Result<Option<String>, FrontmatterError> {
    let wanted = normalized(tag);
    let lists = tag_lists(text)?;
    if lists.iter().any(|(_, items)| {
        items
            .iter()
            .filter_map(item_text)
            .any(|t| normalized(t) == wanted)
    }) {
        return Ok(None);
    }
    let (key, mut items) = lists
        .into_iter()
        .next()
        .unwrap_or_else(|| ("tags".to_owned(), Vec::new()));
    // r[impl vault.frontmatter.list-append]
    // A list written as a list gains the tag in its own style (flow or block, comments
    // kept); a tag string (`tags: a, b`) is rewritten as the list it stands for.
    let is_list = tc_vault::note::parse_note(text)?
        .frontmatter
        .is_some_and(|fm| matches!(fm.to_json().get(&key), Some(Json::Array(_))));
    if is_list {
        return frontmatter_edit::push_item(text, &key, &Json::String(tag.to_owned())).map(Some);
    }
    items.push(Json::String(tag.to_owned()));
    set_list(text, &key, items).map(Some)
}

/// `text` with a line `#tag` appended, or `None` when the body carries the tag already.
pub fn add_inline(text: &str, tag: &str) -> Option<String> {
    let wanted = normalized(tag);
    let (_, body) = body_of(text);
    if inline_tags(body).any(|(_, t)| normalized(t) == wanted) {
        return None;
    }
    let mut out = String::with_capacity(text.len() + tag.len() + 2);
    out.push_str(text);
    if !text.is_empty() && !text.ends_with('\n') {
        out.push_str(line_end(text));
    }
    out.push('#');
    out.push_str(tag);
    out.push_str(line_end(text));
    Some(out)
}

/// The note's line end (`\r\n` when its first line ends so).
fn line_end(text: &str) -> &'static str {
    match text.find('\n') {
        Some(at) if at > 0 && text.as_bytes()[at - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

/// What a removal or rename did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Edited {
    pub text: String,
    /// Each tag changed, as written before and after (`None` after: removed), and whether
    /// it was inline.
    pub changes: Vec<TagChange>,
}

/// One tag changed in a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagChange {
    pub old: String,
    pub new: Option<String>,
    pub inline: bool,
}

impl Edited {
    /// Whether any body line changed.
    pub fn touches_body(&self) -> bool {
        self.changes.iter().any(|c| c.inline)
    }
}

/// `text` without `tag` (normalized) in its frontmatter lists.
pub fn remove_from_frontmatter(
    text: &str,
    tag: &str,
    out: &mut Edited,
) -> Result<String, FrontmatterError> {
    if !frontmatter_mentions(text, tag) {
        return Ok(text.to_owned());
    }
    let mut current = text.to_owned();
    for (key, items) in tag_lists(text)? {
        let (gone, kept): (Vec<Json>, Vec<Json>) = items
            .into_iter()
            .partition(|item| item_text(item).is_some_and(|t| normalized(t) == tag));
        if gone.is_empty() {
            continue;
        }
        out.changes
            .extend(gone.iter().filter_map(item_text).map(|t| TagChange {
                old: t.to_owned(),
                new: None,
                inline: false,
            }));
        // r[impl vault.frontmatter.list-remove]
        // A list written as a list loses the tag in its own style; a tag string is
        // rewritten as the list it stands for.
        let is_list = tc_vault::note::parse_note(&current)?
            .frontmatter
            .is_some_and(|fm| matches!(fm.to_json().get(&key), Some(Json::Array(_))));
        current = if is_list {
            frontmatter_edit::remove_items(&current, &key, &|item: &Json| {
                item_text(item).is_some_and(|t| normalized(t) == tag)
            })?
        } else {
            set_list(&current, &key, kept)?
        };
    }
    Ok(current)
}

/// `text` with every frontmatter tag that is `from` or nested under it renamed to `to`.
pub fn rename_in_frontmatter(
    text: &str,
    from: &str,
    to: &str,
    out: &mut Edited,
) -> Result<String, FrontmatterError> {
    if !frontmatter_mentions(text, from) {
        return Ok(text.to_owned());
    }
    let mut current = text.to_owned();
    for (key, items) in tag_lists(text)? {
        let items_len = items.len();
        let mut changed = false;
        let mut seen: Vec<String> = Vec::new();
        let mut new_items = Vec::with_capacity(items.len());
        for item in items {
            let new =
                item_text(&item).and_then(|t| renamed(t, from, to).map(|n| (t.to_owned(), n)));
            let item = match new {
                Some((old, new)) => {
                    changed = true;
                    out.changes.push(TagChange {
                        old,
                        new: Some(new.clone()),
                        inline: false,
                    });
                    Json::String(new)
                }
                None => item,
            };
            // A rename onto a tag the list holds already leaves one entry.
            if let Some(t) = item_text(&item) {
                let key = normalized(t);
                if seen.contains(&key) {
                    changed = true;
                    continue;
                }
                seen.push(key);
            }
            new_items.push(item);
        }
        if changed {
            // r[impl vault.frontmatter.list-replace]
            // A list written as a list has each renamed tag replaced in place, unless the
            // rename merged two entries (then the list is written anew).
            let is_list = tc_vault::note::parse_note(&current)?
                .frontmatter
                .is_some_and(|fm| matches!(fm.to_json().get(&key), Some(Json::Array(_))));
            let merged_two = new_items.len() != items_len;
            current = if is_list && !merged_two {
                frontmatter_edit::replace_items(&current, &key, &|item: &Json| {
                    item_text(item)
                        .and_then(|t| renamed(t, from, to))
                        .map(Json::String)
                })?
            } else {
                set_list(&current, &key, new_items)?
            };
        }
    }
    Ok(current)
}

/// Whether the frontmatter's text holds `tag` (lowercase) anywhere: a note whose block
/// does not is spared parsing it.
fn frontmatter_mentions(text: &str, tag: &str) -> bool {
    split_frontmatter(text).is_some_and(|span| span.yaml.to_lowercase().contains(tag))
}

/// The note's body and where it starts in `text`.
pub fn body_of(text: &str) -> (usize, &str) {
    match split_frontmatter(text) {
        Some(span) => (text.len() - span.body.len(), span.body),
        None => (0, text),
    }
}

/// The body's inline tags: each one's range (without `#`) and text.
fn inline_tags(body: &str) -> impl Iterator<Item = (Range<usize>, &str)> {
    tc_index::parse::inline_tag_spans(body)
        .into_iter()
        .map(move |r| (r.clone(), &body[r]))
}

/// `text` with every inline tag that is `from` or nested under it renamed to `to`, only
/// the tags' characters changed.
pub fn rename_inline(text: &str, from: &str, to: &str, out: &mut Edited) -> String {
    let (offset, body) = body_of(text);
    let mut result = String::with_capacity(text.len());
    let mut copied = 0;
    for (range, tag) in inline_tags(body) {
        if let Some(new) = renamed(tag, from, to) {
            result.push_str(&text[copied..offset + range.start]);
            result.push_str(&new);
            copied = offset + range.end;
            out.changes.push(TagChange {
                old: tag.to_owned(),
                new: Some(new),
                inline: true,
            });
        }
    }
    result.push_str(&text[copied..]);
    result
}

// r[impl metadata.remove-tag]
/// `text` without its inline `#tag`s (`tag` normalized; not the tags nested under it): each
/// goes with one blank before it (or after it, at a line's start), and a line the removal
/// leaves blank goes whole.
pub fn remove_inline(text: &str, tag: &str, out: &mut Edited) -> String {
    let (offset, body) = body_of(text);
    let mut cuts: Vec<Range<usize>> = Vec::new();
    let mut last_end = 0;
    for (range, found) in inline_tags(body) {
        if normalized(found) != tag {
            continue;
        }
        out.changes.push(TagChange {
            old: found.to_owned(),
            new: None,
            inline: true,
        });
        // The `#` and the tag, plus a trailing `/` the tag's range leaves out.
        let mut start = offset + range.start - 1;
        let mut end = offset + range.end;
        while text.as_bytes().get(end) == Some(&b'/') {
            end += 1;
        }
        let bytes = text.as_bytes();
        if start > last_end && matches!(bytes[start - 1], b' ' | b'\t') {
            start -= 1;
        } else if matches!(bytes.get(end), Some(b' ' | b'\t')) {
            end += 1;
        }
        last_end = end;
        cuts.push(start..end);
    }
    if cuts.is_empty() {
        return text.to_owned();
    }
    let mut result = String::with_capacity(text.len());
    let mut pending = cuts.iter().peekable();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let end = start + line.len();
        let mut kept = String::with_capacity(line.len());
        let mut copied = start;
        let mut cut_here = false;
        while let Some(cut) = pending.next_if(|c| c.start < end) {
            kept.push_str(&text[copied..cut.start]);
            copied = cut.end;
            cut_here = true;
        }
        kept.push_str(&text[copied..end]);
        if !(cut_here && kept.trim().is_empty()) {
            result.push_str(&kept);
        }
        start = end;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    // r[verify metadata.rename-tag]
    #[test]
    fn renamed_keeps_what_follows_the_renamed_segments() {
        assert_eq!(
            renamed("Project", "project", "work").as_deref(),
            Some("work")
        );
        assert_eq!(
            renamed("#project/Alpha/x", "project", "area/work").as_deref(),
            Some("area/work/Alpha/x")
        );
        assert_eq!(renamed("projects", "project", "work"), None);
        assert_eq!(renamed("a/b", "a/b/c", "x"), None);
        assert_eq!(renamed("A/B/c", "a/b", "x").as_deref(), Some("x/c"));
        assert!(within("a/b", "a") && within("a", "a") && !within("ab", "a"));
    }
}
