//! Notes as Obsidian sees them: optional YAML frontmatter, then the body
//! (spec/tools.md `update_frontmatter`, spec/paging.md `frontmatter` in `read_notes`).
//!
//! Frontmatter is recognized only at the very start of the note: a line `---`, the YAML,
//! and a closing line `---` (a final line without newline may close it). `\r\n` line ends
//! are recognized and kept. YAML is parsed with `yaml_serde` (the YAML organization's
//! maintained serde_yaml). The mapping keeps its key order (`yaml_serde::Mapping` is ordered)
//! so that a merge edits the note the way a person would, appending new keys at the end.
//!
//! A UTF-8 byte-order mark before the opening `---` (spec `vault.frontmatter.bom`) does not
//! hide the block: it is skipped to find the frontmatter and kept, first, when the block is
//! rewritten, so a note's encoding marker survives every edit.
//!
//! Rewriting the frontmatter never touches the body: [`with_frontmatter`] copies the bytes
//! after the closing delimiter verbatim. An empty mapping removes the block entirely.
//! Malformed YAML, or YAML that is not a mapping, is a [`FrontmatterError`], never a panic.

use serde_json::{Map, Value as Json};
use yaml_serde::{Mapping, Value as Yaml};

/// The frontmatter could not be parsed, or the result is not a mapping.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct FrontmatterError {
    pub reason: String,
}

impl FrontmatterError {
    pub(crate) fn new(reason: impl Into<String>) -> Self {
        FrontmatterError {
            reason: reason.into(),
        }
    }

    /// This error as the vault's error for `path` (code `frontmatter_invalid`).
    pub fn at(self, path: &crate::VaultPath) -> crate::VaultError {
        crate::VaultError::FrontmatterInvalid {
            path: path.as_str().to_owned(),
            reason: self.reason,
        }
    }
}

/// Where a note's frontmatter block sits in its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrontmatterSpan<'a> {
    /// The YAML between the delimiters.
    pub yaml: &'a str,
    /// Everything after the closing delimiter line, byte for byte.
    pub body: &'a str,
    /// Whether the delimiters end in `\r\n`.
    pub crlf: bool,
}

/// The UTF-8 byte-order mark, as text.
const BOM: char = '\u{feff}';

/// Finds the frontmatter block, if the note opens with one (after a byte-order mark, if any).
pub fn split_frontmatter(content: &str) -> Option<FrontmatterSpan<'_>> {
    // r[impl vault.frontmatter.bom]
    let content = content.strip_prefix(BOM).unwrap_or(content);
    let (after_open, crlf) = if let Some(rest) = content.strip_prefix("---\n") {
        (rest, false)
    } else if let Some(rest) = content.strip_prefix("---\r\n") {
        (rest, true)
    } else {
        return None;
    };
    let mut offset = 0;
    for line in after_open.split_inclusive('\n') {
        let trimmed = line.trim_end_matches(['\n', '\r']);
        if trimmed == "---" {
            let yaml = &after_open[..offset];
            let body = &after_open[offset + line.len()..];
            return Some(FrontmatterSpan { yaml, body, crlf });
        }
        offset += line.len();
    }
    None
}

/// A note's frontmatter: an ordered YAML mapping.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Frontmatter {
    mapping: Mapping,
}

impl Frontmatter {
    /// An empty mapping.
    pub fn new() -> Self {
        Frontmatter::default()
    }

    /// Parses the YAML of a frontmatter block. Blank YAML is an empty mapping.
    pub fn parse_yaml(yaml: &str) -> Result<Self, FrontmatterError> {
        if yaml.trim().is_empty() {
            return Ok(Frontmatter::new());
        }
        let value: Yaml = yaml_serde::from_str(yaml)
            .map_err(|e| FrontmatterError::new(format!("the YAML does not parse: {e}")))?;
        match value {
            Yaml::Mapping(mapping) => {
                // Refuse keys JSON cannot carry now, rather than when a tool renders them.
                for key in mapping.keys() {
                    key_to_string(key)?;
                }
                Ok(Frontmatter { mapping })
            }
            Yaml::Null => Ok(Frontmatter::new()),
            _ => Err(FrontmatterError::new(
                "the frontmatter is not a mapping of keys",
            )),
        }
    }

    /// The frontmatter as a JSON object, for tool output.
    pub fn to_json(&self) -> Json {
        let mut object = Map::new();
        for (key, value) in &self.mapping {
            if let Ok(key) = key_to_string(key) {
                object.insert(key, yaml_to_json(value));
            }
        }
        Json::Object(object)
    }

    /// The top-level keys, in the note's order.
    pub fn keys(&self) -> Vec<String> {
        self.mapping
            .keys()
            .filter_map(|k| key_to_string(k).ok())
            .collect()
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.mapping.contains_key(key)
    }

    pub fn is_empty(&self) -> bool {
        self.mapping.is_empty()
    }

    /// Sets every key of `data` (a shallow merge: a nested object replaces the old value
    /// whole; a JSON `null` sets the key to null rather than removing it). Existing keys keep
    /// their place; new ones are appended in `data`'s order.
    pub fn merge(&mut self, data: &Map<String, Json>) -> Result<(), FrontmatterError> {
        for (key, value) in data {
            let value = json_to_yaml(value)?;
            if let Some(slot) = self.mapping.get_mut(key.as_str()) {
                *slot = value;
            } else {
                self.mapping.insert(Yaml::String(key.clone()), value);
            }
        }
        Ok(())
    }

    /// Replaces the whole mapping with `data`.
    pub fn replace(&mut self, data: &Map<String, Json>) -> Result<(), FrontmatterError> {
        let mut fresh = Frontmatter::new();
        fresh.merge(data)?;
        *self = fresh;
        Ok(())
    }

    /// Removes the named keys; returns how many were present.
    pub fn remove(&mut self, keys: &[String]) -> usize {
        keys.iter()
            .filter(|key| self.mapping.shift_remove(key.as_str()).is_some())
            .count()
    }

    /// The YAML text of the mapping, ending in a newline (empty when the mapping is).
    pub fn to_yaml(&self) -> Result<String, FrontmatterError> {
        if self.mapping.is_empty() {
            return Ok(String::new());
        }
        yaml_serde::to_string(&self.mapping)
            .map_err(|e| FrontmatterError::new(format!("the frontmatter does not serialize: {e}")))
    }
}

/// A note split into its frontmatter and body.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedNote<'a> {
    /// `None` when the note has no frontmatter block.
    pub frontmatter: Option<Frontmatter>,
    /// The text after the frontmatter block (the whole note when there is none).
    pub body: &'a str,
}

/// Parses a note. A block that opens but never closes is not frontmatter (Obsidian shows
/// it as text), so only YAML inside a closed block can fail.
pub fn parse_note(content: &str) -> Result<ParsedNote<'_>, FrontmatterError> {
    match split_frontmatter(content) {
        Some(span) => Ok(ParsedNote {
            frontmatter: Some(Frontmatter::parse_yaml(span.yaml)?),
            body: span.body,
        }),
        None => Ok(ParsedNote {
            frontmatter: None,
            body: content,
        }),
    }
}

/// The note's frontmatter as a JSON object for `read_notes`; empty when the note has none
/// (spec `vault.frontmatter`) and when it does not parse (the note itself is still served
/// whole in `content`; `update_frontmatter` reports the parse error).
pub fn frontmatter_json(content: &str) -> Json {
    match parse_note(content) {
        Ok(ParsedNote {
            frontmatter: Some(fm),
            ..
        }) => fm.to_json(),
        _ => Json::Object(Map::new()),
    }
}

/// The note with its frontmatter block replaced by `frontmatter` (removed when empty) and
/// the body kept byte for byte. A note without a block gains one at the top.
pub fn with_frontmatter(
    content: &str,
    frontmatter: &Frontmatter,
) -> Result<String, FrontmatterError> {
    // r[impl vault.frontmatter.bom]
    // A byte-order mark stays the first thing in the note.
    let (bom, unmarked) = match content.strip_prefix(BOM) {
        Some(rest) => ("\u{feff}", rest),
        None => ("", content),
    };
    let (body, crlf) = match split_frontmatter(unmarked) {
        Some(span) => (span.body, span.crlf),
        None => (unmarked, unmarked.contains("\r\n")),
    };
    if frontmatter.is_empty() {
        return Ok(format!("{bom}{body}"));
    }
    let yaml = frontmatter.to_yaml()?;
    let newline = if crlf { "\r\n" } else { "\n" };
    let yaml = if crlf {
        yaml.replace('\n', "\r\n")
    } else {
        yaml
    };
    let mut out = String::with_capacity(yaml.len() + body.len() + 13);
    out.push_str(bom);
    out.push_str("---");
    out.push_str(newline);
    out.push_str(&yaml);
    out.push_str("---");
    out.push_str(newline);
    out.push_str(body);
    Ok(out)
}

fn key_to_string(key: &Yaml) -> Result<String, FrontmatterError> {
    match key {
        Yaml::String(s) => Ok(s.clone()),
        Yaml::Number(n) => Ok(n.to_string()),
        Yaml::Bool(b) => Ok(b.to_string()),
        Yaml::Null => Ok("null".to_owned()),
        Yaml::Tagged(tagged) => key_to_string(&tagged.value),
        Yaml::Sequence(_) | Yaml::Mapping(_) => Err(FrontmatterError::new(
            "a frontmatter key is a list or mapping; keys must be plain values",
        )),
    }
}

fn yaml_to_json(value: &Yaml) -> Json {
    match value {
        Yaml::Null => Json::Null,
        Yaml::Bool(b) => Json::Bool(*b),
        Yaml::Number(n) => {
            if let Some(i) = n.as_i64() {
                Json::from(i)
            } else if let Some(u) = n.as_u64() {
                Json::from(u)
            } else {
                // NaN and infinities have no JSON number; keep their YAML spelling.
                n.as_f64()
                    .and_then(serde_json::Number::from_f64)
                    .map_or_else(|| Json::String(n.to_string()), Json::Number)
            }
        }
        Yaml::String(s) => Json::String(s.clone()),
        Yaml::Sequence(items) => Json::Array(items.iter().map(yaml_to_json).collect()),
        Yaml::Mapping(mapping) => Json::Object(
            mapping
                .iter()
                .filter_map(|(k, v)| key_to_string(k).ok().map(|k| (k, yaml_to_json(v))))
                .collect(),
        ),
        Yaml::Tagged(tagged) => yaml_to_json(&tagged.value),
    }
}

fn json_to_yaml(value: &Json) -> Result<Yaml, FrontmatterError> {
    yaml_serde::to_value(value)
        .map_err(|e| FrontmatterError::new(format!("the value does not convert to YAML: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    // r[verify vault.frontmatter.bom]
    #[test]
    fn a_byte_order_mark_before_the_frontmatter_is_skipped_and_kept() {
        let note = "\u{feff}---\ntitle: Plan\n---\nbody\n";
        assert_eq!(frontmatter_json(note), json!({"title": "Plan"}));
        let span = split_frontmatter(note).unwrap();
        assert_eq!(span.body, "body\n");
        let mut fm = Frontmatter::parse_yaml(span.yaml).unwrap();
        fm.merge(&object(json!({"status": "done"}))).unwrap();
        let rewritten = with_frontmatter(note, &fm).unwrap();
        assert_eq!(
            rewritten,
            "\u{feff}---\ntitle: Plan\nstatus: done\n---\nbody\n"
        );
        // Removing every key keeps the mark; a note with a mark and no block gains one
        // after the mark.
        assert_eq!(
            with_frontmatter(note, &Frontmatter::new()).unwrap(),
            "\u{feff}body\n"
        );
        let bare = "\u{feff}just text\n";
        assert_eq!(frontmatter_json(bare), json!({}));
        assert_eq!(
            with_frontmatter(bare, &fm).unwrap(),
            "\u{feff}---\ntitle: Plan\nstatus: done\n---\njust text\n"
        );
        // A mark anywhere else is text: no block there.
        assert!(split_frontmatter("x\u{feff}---\na: 1\n---\n").is_none());
    }

    fn object(v: Json) -> Map<String, Json> {
        match v {
            Json::Object(m) => m,
            _ => unreachable!("test data is an object"),
        }
    }

    // r[verify vault.frontmatter]
    #[test]
    fn splits_frontmatter_only_at_the_very_start() {
        let note = "---\ntitle: A\ntags: [x, y]\n---\n# Body\n---\nmore\n";
        let span = split_frontmatter(note).unwrap();
        assert_eq!(span.yaml, "title: A\ntags: [x, y]\n");
        assert_eq!(span.body, "# Body\n---\nmore\n");
        assert!(split_frontmatter("\n---\na: 1\n---\n").is_none());
        assert!(
            split_frontmatter("---\na: 1\n").is_none(),
            "unclosed is not frontmatter"
        );
        assert_eq!(split_frontmatter("---\na: 1\n---").unwrap().body, "");
        assert_eq!(split_frontmatter("---\n---\nbody").unwrap().yaml, "");
        let crlf = split_frontmatter("---\r\na: 1\r\n---\r\nbody\r\n").unwrap();
        assert!(crlf.crlf);
        assert_eq!(crlf.body, "body\r\n");
    }

    // r[verify vault.frontmatter]
    #[test]
    fn parses_to_json_object() {
        let parsed = parse_note("---\ntitle: Plan\nn: 3\nf: 1.5\nwhen: 2026-11-01\ntags:\n  - a\n  - b\n1: one\n---\nbody").unwrap();
        let fm = parsed.frontmatter.unwrap();
        assert_eq!(
            fm.to_json(),
            json!({"title": "Plan", "n": 3, "f": 1.5, "when": "2026-11-01", "tags": ["a", "b"], "1": "one"})
        );
        assert_eq!(parsed.body, "body");
        assert_eq!(fm.keys(), ["title", "n", "f", "when", "tags", "1"]);
        assert_eq!(frontmatter_json("no frontmatter"), json!({}));
        assert_eq!(frontmatter_json("---\n---\n"), json!({}));
    }

    #[test]
    fn malformed_frontmatter_is_a_typed_error() {
        for bad in [
            "---\ntitle: [unclosed\n---\n",
            "---\n- a list\n---\n",
            "---\njust a string\n---\n",
            "---\n? [a, b]\n: complex key\n---\n",
            "---\na: 1\na: 2\n---\n",
            "---\n\t- tab: indent\n  : x\n---\n",
        ] {
            let err = parse_note(bad).unwrap_err();
            assert!(!err.reason.is_empty(), "{bad:?}");
            assert_eq!(frontmatter_json(bad), json!({}));
        }
        let path = crate::VaultPath::parse("a.md").unwrap();
        let err = parse_note("---\n- x\n---\n").unwrap_err().at(&path);
        assert_eq!(err.code(), "frontmatter_invalid");
    }

    #[test]
    fn merge_replace_remove_keep_the_body_byte_identical() {
        let body = "\n# Heading\n\n---\nnot: frontmatter\n---\n  trailing spaces  \n\n";
        let note = format!("---\ntitle: Old\nstatus: draft\n---\n{body}");
        let mut fm = parse_note(&note).unwrap().frontmatter.unwrap();
        fm.merge(&object(json!({"status": "done", "new": {"k": [1, 2]}})))
            .unwrap();
        let merged = with_frontmatter(&note, &fm).unwrap();
        let reparsed = parse_note(&merged).unwrap();
        assert_eq!(reparsed.body, body);
        assert_eq!(
            reparsed.frontmatter.as_ref().unwrap().to_json(),
            json!({"title": "Old", "status": "done", "new": {"k": [1, 2]}})
        );
        assert_eq!(
            reparsed.frontmatter.unwrap().keys(),
            ["title", "status", "new"]
        );

        fm.replace(&object(json!({"only": true}))).unwrap();
        let replaced = with_frontmatter(&merged, &fm).unwrap();
        assert_eq!(replaced, format!("---\nonly: true\n---\n{body}"));

        assert_eq!(fm.remove(&["only".into(), "absent".into()]), 1);
        assert_eq!(with_frontmatter(&replaced, &fm).unwrap(), body);
    }

    #[test]
    fn a_note_without_frontmatter_gains_one() {
        let mut fm = Frontmatter::new();
        fm.merge(&object(json!({"status": "todo"}))).unwrap();
        assert_eq!(
            with_frontmatter("body\n", &fm).unwrap(),
            "---\nstatus: todo\n---\nbody\n"
        );
        let crlf = with_frontmatter("---\r\na: 1\r\n---\r\nbody\r\n", &fm).unwrap();
        assert_eq!(crlf, "---\r\nstatus: todo\r\n---\r\nbody\r\n");
    }

    #[test]
    fn strings_that_look_like_other_types_round_trip() {
        let mut fm = Frontmatter::new();
        fm.merge(&object(
            json!({"a": "true", "b": "1.0", "c": "---", "d": "x: y", "e": ""}),
        ))
        .unwrap();
        let text = with_frontmatter("", &fm).unwrap();
        let back = parse_note(&text).unwrap().frontmatter.unwrap().to_json();
        assert_eq!(
            back,
            json!({"a": "true", "b": "1.0", "c": "---", "d": "x: y", "e": ""})
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn arbitrary_notes_never_panic(content in "(---\n)?[-a-z:{}\\[\\],'\"&*!|>#\n \t]{0,80}(\n---\n)?[a-z\n]{0,10}") {
            let _ = parse_note(&content);
            let _ = frontmatter_json(&content);
        }

        #[test]
        fn merge_keeps_any_body(
            body in "\\PC{0,60}",
            key in "[a-z]{1,8}",
            value in "\\PC{0,20}",
        ) {
            let note = format!("---\nexisting: 1\n---\n{body}");
            let mut fm = parse_note(&note).unwrap().frontmatter.unwrap();
            let mut data = Map::new();
            data.insert(key.clone(), Json::String(value.clone()));
            fm.merge(&data).unwrap();
            let written = with_frontmatter(&note, &fm).unwrap();
            let reparsed = parse_note(&written).unwrap();
            prop_assert_eq!(reparsed.body, body.as_str());
            let json = reparsed.frontmatter.unwrap().to_json();
            prop_assert_eq!(&json[&key], &Json::String(value));
        }
    }
}
