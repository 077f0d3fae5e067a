//! Property tests of the lossless frontmatter editor (spec/vault.md
//! `vault.frontmatter.lossless`): on random blocks (comments, odd quoting, flow and block
//! sequences, blank lines, `\r\n`), setting a key to its own value changes no byte, and setting
//! it to another value changes only that key's lines.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use tc_vault::frontmatter_edit::{merge, remove};
use tc_vault::note::parse_note;

fn entry(i: usize) -> impl Strategy<Value = (String, String)> {
    let key = format!("k{i}");
    prop_oneof![
        Just(format!("{key}: plain value")),
        Just(format!("{key}: 'single quoted'  # a comment")),
        Just(format!("{key}: \"double: quoted\"")),
        Just(format!("{key}: [a, b]")),
        Just(format!("{key}:\n  - x\n  - y")),
        Just(format!("{key}:\n- x\n- y")),
        Just(format!("{key}: 42")),
        Just(format!("{key}: true # yes")),
    ]
    .prop_map(move |text| (format!("k{i}"), text))
}

fn note() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(0usize..4, 1..6),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_flat_map(|(gaps, crlf, comment)| {
            let entries: Vec<_> = (0..gaps.len()).map(entry).collect();
            (entries, Just(gaps), Just(crlf), Just(comment))
        })
        .prop_map(|(entries, gaps, crlf, comment)| {
            let mut yaml = String::new();
            if comment {
                yaml.push_str("# written by hand\n");
            }
            for ((_, text), gap) in entries.iter().zip(gaps) {
                yaml.push_str(text);
                yaml.push('\n');
                if gap == 0 {
                    yaml.push('\n');
                }
                if gap == 1 {
                    yaml.push_str("# between\n");
                }
            }
            let text = format!("---\n{yaml}---\n# Body\n\ntext # not yaml\n");
            if crlf {
                text.replace('\n', "\r\n")
            } else {
                text
            }
        })
}

fn one(key: &str, value: Value) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert(key.to_owned(), value);
    map
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    // r[verify vault.frontmatter.lossless]
    #[test]
    fn a_merge_of_the_same_value_is_a_byte_no_op_and_another_changes_one_entry(
        text in note(), pick in 0usize..8
    ) {
        let parsed = parse_note(&text).unwrap().frontmatter.unwrap().to_json();
        let keys: Vec<&String> = parsed.as_object().unwrap().keys().collect();
        let key = keys[pick % keys.len()].clone();
        let same = merge(&text, &one(&key, parsed[&key].clone())).unwrap();
        prop_assert_eq!(&same, &text);

        let changed = merge(&text, &one(&key, json!("new value"))).unwrap();
        let after = parse_note(&changed).unwrap().frontmatter.unwrap().to_json();
        prop_assert_eq!(&after[&key], &json!("new value"));
        for other in &keys {
            if **other != key {
                prop_assert_eq!(&after[other.as_str()], &parsed[other.as_str()]);
            }
        }
        // Every line that is not the key's entry is still there, in order.
        let old_lines: Vec<&str> = text.lines().filter(|l| !l.starts_with(&format!("{key}:")) && !l.starts_with("  - ") && !l.starts_with("- ")).collect();
        let new_lines: Vec<&str> = changed.lines().filter(|l| !l.starts_with(&format!("{key}:")) && !l.starts_with("  - ") && !l.starts_with("- ")).collect();
        prop_assert_eq!(old_lines, new_lines);
        let tail = if text.contains("\r\n") {
            "# Body\r\n\r\ntext # not yaml\r\n"
        } else {
            "# Body\n\ntext # not yaml\n"
        };
        prop_assert!(changed.ends_with(tail), "{:?}", changed);

        let removed = remove(&text, std::slice::from_ref(&key)).unwrap();
        let rest = parse_note(&removed).unwrap().frontmatter.unwrap_or_default().to_json();
        prop_assert!(rest.get(&key).is_none());
        prop_assert_eq!(rest.as_object().map_or(0, |m| m.len()), keys.len() - 1);
    }
}
