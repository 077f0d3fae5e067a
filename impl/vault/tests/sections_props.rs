//! Property tests of the section editor (spec/vault.md `vault.sections.patch`,
//! `vault.sections.lossless`): on random notes (headings at random levels, code fences
//! holding `#` lines, block ids, `\r\n`, a byte-order mark, frontmatter with comments), an edit
//! changes exactly its span and every other byte stays.

use proptest::prelude::*;
use tc_vault::sections::{Anchor, PatchOp, outline, patch};

fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        (1usize..=6, 0usize..4).prop_map(|(level, name)| format!(
            "{} {}",
            "#".repeat(level),
            ["Log", "Ideas", "Tasks", "Notes"][name]
        )),
        Just("```".to_owned()),
        Just("~~~".to_owned()),
        Just("# inside a fence maybe".to_owned()),
        Just(String::new()),
        Just("  ".to_owned()),
        (0usize..3).prop_map(|n| format!("some text {n}")),
        (0usize..3).prop_map(|n| format!("- item {n} ^b{n}")),
        Just("a paragraph line ^para".to_owned()),
        Just("#notatag heading".to_owned()),
    ]
}

fn note() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(line(), 0..24),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(lines, crlf, bom, frontmatter, last_eol)| {
            let eol = if crlf { "\r\n" } else { "\n" };
            let mut text = String::new();
            if bom {
                text.push('\u{feff}');
            }
            if frontmatter {
                text.push_str(&format!(
                    "---{eol}title: 'x' # a comment{eol}tags: [a, b]{eol}---{eol}"
                ));
            }
            let n = lines.len();
            for (i, line) in lines.into_iter().enumerate() {
                text.push_str(&line);
                if i + 1 < n || last_eol {
                    text.push_str(eol);
                }
            }
            text
        })
}

fn heading_paths(text: &str) -> Vec<String> {
    outline(text)
        .headings
        .iter()
        .map(|h| {
            let mut path = h.parents.clone();
            path.push(h.text.clone());
            path.join("::")
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    // r[verify vault.sections.patch]
    // r[verify vault.sections.lossless]
    #[test]
    fn an_edit_changes_its_span_and_nothing_else(text in note(), which in 0usize..32, op in 0u8..3) {
        let op = [PatchOp::Append, PatchOp::Prepend, PatchOp::Replace][op as usize];
        let headings = outline(&text).headings;
        let blocks = outline(&text).blocks;
        let paths = heading_paths(&text);
        let mut anchors: Vec<Anchor<'_>> = paths.iter().map(|p| Anchor::Heading(p)).collect();
        anchors.extend(blocks.iter().map(|b| Anchor::Block(&b.id)));
        anchors.push(Anchor::Frontmatter);
        let anchor = anchors[which % anchors.len()];
        let Ok(patched) = patch(&text, anchor, op, "NEW LINE") else {
            // Only an ambiguous anchor may be refused.
            return Ok(());
        };
        let (start, end) = patched.span;
        let before = &text[..start];
        let after = &text[end..];
        prop_assert!(patched.text.starts_with(before), "{:?} -> {:?}", text, patched.text);
        prop_assert!(patched.text.ends_with(after), "{:?} -> {:?}", text, patched.text);
        prop_assert_eq!(patched.bytes_removed, end - start);
        prop_assert_eq!(&patched.removed, &text[start..end]);
        if op != PatchOp::Replace {
            prop_assert_eq!(start, end);
            prop_assert_eq!(patched.lines_removed, 0);
        }
        prop_assert!(patched.text.contains("NEW LINE"));
        // An insertion adds no heading and loses none (a replace may drop the subsections of
        // the section it replaces: they are part of it).
        let kept: Vec<(u8, String)> = outline(&patched.text).headings.iter().map(|h| (h.level, h.text.clone())).collect();
        let had: Vec<(u8, String)> = headings.iter().map(|h| (h.level, h.text.clone())).collect();
        if op != PatchOp::Replace {
            prop_assert_eq!(kept, had);
        }
    }
}
