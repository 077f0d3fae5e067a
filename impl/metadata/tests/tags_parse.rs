//! The tags the index reads equal those of a reference written here from the rules alone
//! (spec/metadata.md `metadata.tags.sources`, `metadata.tags.inline`), on random notes; and
//! the tag edits change exactly the tags they name (`metadata.rename-tag`,
//! `metadata.remove-tag`).
//!
//! The reference does not parse text: each random note is built from pieces that know what
//! they contribute (an inline tag, a tag in a code span, a wikilink's heading, a Markdown
//! link's anchor, a URL's fragment, a fenced block, a heading), so what the note's tags must
//! be follows from how it was built.

use std::collections::BTreeSet;

use proptest::prelude::*;
use tc_metadata::tags::edit::{Edited, remove_inline};
use tc_vault::path::VaultPath;

/// A tag name as written: a letter first, nested segments, any case.
fn name() -> impl Strategy<Value = String> {
    "[a-zA-Z][a-zA-Z0-9_-]{0,4}(/[a-zA-Z0-9]{1,3}){0,2}"
}

/// One piece of a body line: its text and the tag it makes (lowercase), if any.
fn piece() -> impl Strategy<Value = (String, Option<String>)> {
    prop_oneof![
        "[a-z]{1,6}".prop_map(|w| (w, None)),
        name().prop_map(|n| (format!("#{n}"), Some(n.to_lowercase()))),
        name().prop_map(|n| (format!("#{n}/"), Some(n.to_lowercase()))),
        name().prop_map(|n| (format!("(#{n})"), Some(n.to_lowercase()))),
        name().prop_map(|n| (format!(",#{n}"), Some(n.to_lowercase()))),
        "[0-9]{1,4}".prop_map(|d| (format!("#{d}"), None)),
        name().prop_map(|n| (format!("word#{n}"), None)),
        name().prop_map(|n| (format!("`code #{n}`"), None)),
        name().prop_map(|n| (format!("``a ` #{n}``"), None)),
        name().prop_map(|n| (format!("[[Note#{n}]]"), None)),
        name().prop_map(|n| (format!("[[#{n}|alias]]"), None)),
        name().prop_map(|n| (format!("[text](#{n})"), None)),
        name().prop_map(|n| (format!("[text](other.md#{n})"), None)),
        name().prop_map(|n| (format!("https://example.com/a#{n}"), None)),
        name().prop_map(|n| (format!("<https://example.com/(#{n})>"), None)),
    ]
}

#[derive(Debug, Clone)]
enum Line {
    Text(Vec<(String, Option<String>)>),
    Heading(Vec<(String, Option<String>)>),
    Fenced(Vec<(String, Option<String>)>),
}

fn line() -> impl Strategy<Value = Line> {
    let pieces = || proptest::collection::vec(piece(), 0..6);
    prop_oneof![
        4 => pieces().prop_map(Line::Text),
        1 => pieces().prop_map(Line::Heading),
        1 => pieces().prop_map(Line::Fenced),
    ]
}

#[derive(Debug, Clone)]
enum Front {
    None,
    Flow(String, Vec<String>),
    Block(Vec<String>),
    Joined(String, Vec<String>),
}

fn front() -> impl Strategy<Value = Front> {
    let names = || proptest::collection::vec(name(), 0..4);
    let key = || prop_oneof![Just("tags".to_owned()), Just("tag".to_owned())];
    prop_oneof![
        Just(Front::None),
        (key(), names()).prop_map(|(k, n)| Front::Flow(k, n)),
        names().prop_map(Front::Block),
        (key(), names()).prop_map(|(k, n)| Front::Joined(k, n)),
    ]
}

/// The note's text and the tags the rules say it has.
fn note() -> impl Strategy<Value = (String, BTreeSet<String>)> {
    (front(), proptest::collection::vec(line(), 0..8)).prop_map(|(front, lines)| {
        let mut text = String::new();
        let mut tags = BTreeSet::new();
        let names = match &front {
            Front::None => Vec::new(),
            Front::Flow(key, names) => {
                text.push_str(&format!(
                    "---\n{key}: [{}]\ntitle: x\n---\n",
                    names.join(", ")
                ));
                names.clone()
            }
            Front::Block(names) => {
                text.push_str("---\n# a comment\ntags:\n");
                for n in names {
                    text.push_str(&format!("  - {n}\n"));
                }
                text.push_str("---\n");
                names.clone()
            }
            Front::Joined(key, names) => {
                text.push_str(&format!("---\n{key}: \"{}\"\n---\n", names.join(", ")));
                names.clone()
            }
        };
        tags.extend(names.iter().map(|n| n.to_lowercase()));
        for line in lines {
            let (pieces, prefix, fenced) = match &line {
                Line::Text(p) => (p, "", false),
                Line::Heading(p) => (p, "## Title ", false),
                Line::Fenced(p) => (p, "", true),
            };
            let joined: Vec<&str> = pieces.iter().map(|(t, _)| t.as_str()).collect();
            if fenced {
                text.push_str(&format!("```\n{}\n```\n", joined.join(" ")));
                continue;
            }
            text.push_str(&format!("{prefix}{}\n", joined.join(" ")));
            tags.extend(pieces.iter().filter_map(|(_, tag)| tag.clone()));
        }
        (text, tags)
    })
}

fn parsed(text: &str) -> BTreeSet<String> {
    tc_index::parse::analyze(text.as_bytes())
        .tags
        .into_iter()
        .collect()
}

fn path() -> VaultPath {
    VaultPath::parse("n.md").unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    // r[verify metadata.tags.sources]
    // r[verify metadata.tags.inline]
    #[test]
    fn the_index_reads_the_tags_the_rules_give((text, expected) in note()) {
        prop_assert_eq!(parsed(&text), expected, "{}", text);
    }

    // r[verify metadata.rename-tag]
    /// A rename changes exactly the renamed tags (and their nested ones), wherever they are.
    #[test]
    fn a_rename_renames_exactly_the_tag_and_its_nested_tags(
        (text, before) in note(),
        pick in any::<prop::sample::Index>(),
        to in "[a-z]{1,4}(/[a-z]{1,3})?",
    ) {
        prop_assume!(!before.is_empty());
        let all: Vec<&String> = before.iter().collect();
        let from = all[pick.index(all.len())].clone();
        let edited = tc_metadata::tags::rename_text(&path(), &text, &from, &to).unwrap();
        let expected: BTreeSet<String> = before
            .iter()
            .map(|t| tc_metadata::tags::edit::renamed(t, &from, &to).unwrap_or_else(|| t.clone()))
            .collect();
        prop_assert_eq!(parsed(&edited.text), expected, "{}\n=>\n{}", text, edited.text);
        // Only the tags' characters change in the body: the lines after the frontmatter
        // are as many as before.
        let body_lines = |t: &str| tc_metadata::tags::edit::body_of(t).1.lines().count();
        prop_assert_eq!(body_lines(&edited.text), body_lines(&text));
    }

    // r[verify metadata.remove-tag]
    /// Removing an inline tag takes only that tag (not its nested tags) out of the body.
    #[test]
    fn an_inline_removal_removes_only_that_tag(
        (text, before) in note(),
        pick in any::<prop::sample::Index>(),
    ) {
        prop_assume!(!before.is_empty());
        let all: Vec<&String> = before.iter().collect();
        let tag = all[pick.index(all.len())].clone();
        let mut out = Edited::default();
        let removed = remove_inline(&text, &tag, &mut out);
        let after = parsed(&removed);
        for t in &before {
            if *t != tag {
                prop_assert!(after.contains(t), "{} lost\n{}\n=>\n{}", t, text, removed);
            }
        }
        let body_tags: BTreeSet<String> = parsed(tc_metadata::tags::edit::body_of(&removed).1);
        prop_assert!(!body_tags.contains(&tag), "{}\n=>\n{}", text, removed);
    }
}
