//! The links the index records equal an independent reference parser's on random notes
//! (spec/metadata.md `index.links.markdown`): wikilinks, embeds and Markdown links, with
//! fences, code spans, external links, titles, fragments, angle brackets and encodings.
//!
//! The reference below is written from the syntax alone, with regular expressions over
//! each line (code blocks and code spans blanked first), and shares no code with tc-vault's
//! scanners.

use std::sync::LazyLock;

use proptest::prelude::*;
use regex::Regex;
use tc_index::parse::analyze;

/// (target, embed, markdown, line)
type Found = (String, bool, bool, usize);

static WIKI: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(!?)\[\[([^\[\]|#\\]*)(?:#[^\[\]|]*)?(?:\\?\|[^\[\]]*)?\]\]").unwrap()
});
static MD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(!?)\[[^\[\]`]*\]\((?:<([^<>\n]*)>|([^\s()<>]+))(?:\s+"[^"]*")?\)"#).unwrap()
});
static CODE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"`[^`]*`").unwrap());

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(&text[i + 1..i + 3], 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap()
}

fn reference(note: &str) -> Vec<Found> {
    let mut found = Vec::new();
    let mut fenced = false;
    for (n, line) in note.lines().enumerate() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Code spans blanked with a byte no link holds, keeping offsets.
        let line = CODE.replace_all(line, |c: &regex::Captures| "\u{1}".repeat(c[0].len()));
        let mut spans: Vec<(usize, Found)> = Vec::new();
        let mut wiki_ranges = Vec::new();
        for c in WIKI.captures_iter(&line) {
            let target = c[2].to_owned();
            wiki_ranges.push(c.get(0).unwrap().range());
            if !target.trim().is_empty() {
                spans.push((
                    c.get(0).unwrap().start(),
                    (target, !c[1].is_empty(), false, n + 1),
                ));
            }
        }
        for c in MD.captures_iter(&line) {
            let whole = c.get(0).unwrap().range();
            if wiki_ranges
                .iter()
                .any(|w| w.start < whole.end && whole.start < w.end)
            {
                continue;
            }
            let dest = c.get(2).or(c.get(3)).unwrap().as_str();
            let path = dest.split('#').next().unwrap();
            let external = path.contains("://") || path.starts_with("mailto:");
            if path.is_empty() || external {
                continue;
            }
            spans.push((
                whole.start,
                (percent_decode(path), !c[1].is_empty(), true, n + 1),
            ));
        }
        spans.sort_by_key(|(at, _)| *at);
        found.extend(spans.into_iter().map(|(_, f)| f));
    }
    found
}

fn name() -> impl Strategy<Value = String> {
    "[A-Za-z][A-Za-z0-9 ]{0,6}[A-Za-z0-9]".prop_map(|s| s)
}

fn path() -> impl Strategy<Value = String> {
    (
        prop_oneof![Just(""), Just("./"), Just("../"), Just("/"), Just("a/b/")],
        name(),
        prop_oneof![Just(".md"), Just(""), Just(".png")],
    )
        .prop_map(|(prefix, name, ext)| format!("{prefix}{name}{ext}"))
}

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{1,6} ".prop_map(|s| s),
        Just("\n".to_owned()),
        (name(), any::<bool>()).prop_map(|(t, e)| format!("{}[[{t}]]", if e { "!" } else { "" })),
        (name(), name()).prop_map(|(t, a)| format!("[[{t}|{a}]]")),
        (name(), name()).prop_map(|(t, h)| format!("![[{t}#{h}]]")),
        (name(), name()).prop_map(|(t, a)| format!("| [[{t}\\|{a}]] |")),
        (path(), any::<bool>(), any::<bool>()).prop_map(|(p, e, title)| format!(
            "{}[txt]({}{})",
            if e { "!" } else { "" },
            p.replace(' ', "%20"),
            if title { " \"a title\"" } else { "" }
        )),
        (path(), name()).prop_map(|(p, h)| format!("[x](<{p}#{h}>)")),
        Just("[web](https://example.org/a.md) ".to_owned()),
        Just("[mail](mailto:me@example.org) ".to_owned()),
        Just("[top](#heading) ".to_owned()),
        name().prop_map(|t| format!("`[[{t}]] [c]({t}.md)` ")),
        name().prop_map(|t| format!("\n```\n[[{t}]] [c]({t}.md)\n```\n")),
        Just("caf%C3%A9 ".to_owned()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    // r[verify index.links.markdown]
    #[test]
    fn the_index_records_the_links_a_reference_parser_finds(
        pieces in proptest::collection::vec(piece(), 0..30),
    ) {
        let note: String = pieces.concat();
        let facts = analyze(note.as_bytes());
        let got: Vec<Found> = facts
            .links
            .iter()
            .map(|l| (l.target.clone(), l.embed, l.markdown, l.line))
            .collect();
        prop_assert_eq!(got, reference(&note), "{:?}", note);
    }
}
