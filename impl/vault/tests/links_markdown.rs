//! Link rewrites of every kind (spec/vault.md `vault.links.rewrite-spans`,
//! `vault.links.markdown.style`, `vault.links.canvas`): a rewrite changes only the links'
//! characters, rewritten links lead to the new place, and a move carries Markdown links,
//! canvases and the moved note's own relative links along.

use std::fs;
use std::ops::Range;
use std::sync::Arc;

use proptest::prelude::*;
use tc_gate::clock::{ManualClock, SeededEntropy};
use tc_vault::links::{LinkMatcher, LinkResolver, LinkRewrite, find_links};
use tc_vault::mdlinks::{find_md_links, resolve_markdown};
use tc_vault::rewrite::{NoteRewrite, build_resolver, plan_backlinks, rewrite_note};
use tc_vault::{Precondition, Vault, VaultPath};

fn p(s: &str) -> VaultPath {
    VaultPath::parse(s).unwrap()
}

/// Every link's rewritable span (a wikilink's target, a Markdown link's path), in order,
/// with the file it resolves to from `source`.
fn spans(
    text: &str,
    source: &VaultPath,
    resolver: &LinkResolver,
) -> Vec<(Range<usize>, Option<VaultPath>)> {
    let mut all: Vec<(Range<usize>, Option<VaultPath>)> = find_links(text)
        .into_iter()
        .filter(|l| !l.target.trim().is_empty())
        .map(|l| (l.target_range, resolver.resolve(&l.target).cloned()))
        .collect();
    all.extend(find_md_links(text).into_iter().map(|l| {
        (
            l.path_range,
            resolve_markdown(resolver, source, &l.path).cloned(),
        )
    }));
    all.sort_by_key(|(r, _)| r.start);
    all
}

const PIECES: &[&str] = &[
    "plain words ",
    "[[Plan]]",
    "[[a/Plan|alias]]",
    "![[Plan#Head]]",
    "[t](a/Plan.md)",
    "[t](../a/Plan.md)",
    "[t](/a/Plan.md#h \"title\")",
    "[t](<Plan.md>)",
    "[t](Plan)",
    "![i](img%20one.png)",
    "[o](b/Other.md)",
    "`[[Plan]]` ",
    "\n```\n[[Plan]] [t](a/Plan.md)\n```\n",
    "\n",
    "[w](https://x.org/Plan.md)",
    "[[Other]]",
    "[[ghost]]",
    "[g](ghost.md)",
    "| [[Plan\\|x]] |",
    " (paren) ",
];

fn files() -> LinkResolver {
    LinkResolver::new(
        [
            "a/Plan.md",
            "b/Other.md",
            "img one.png",
            "a/src.md",
            "src.md",
            "c/src.md",
        ]
        .map(p),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    // r[verify vault.links.rewrite-spans]
    // r[verify vault.links.markdown.style]
    /// A move's rewrite changes exactly the spans of the links that led to the moved note,
    /// and each of them then leads to its new path.
    #[test]
    fn a_rewrite_changes_exactly_the_link_spans(
        picks in proptest::collection::vec(0..PIECES.len(), 0..24),
        source in prop_oneof![Just("src.md"), Just("a/src.md"), Just("c/src.md")],
        to in prop_oneof![Just("x/New Plan.md"), Just("a/Plan2.md"), Just("Plan (v2).md")],
    ) {
        let text: String = picks.iter().map(|&i| PIECES[i]).collect();
        let (source, from, to) = (p(source), p("a/Plan.md"), p(to));
        let before = files();
        let mut after = before.clone();
        after.remove(&from);
        after.insert(to.clone());
        let new_target = after.link_text_for(&to);
        let matcher = LinkMatcher::Resolved(from.clone());
        let rewrite = NoteRewrite {
            links: LinkRewrite { matcher: &matcher, new_target: &new_target, include_embeds: true },
            new_file: Some(&to),
            after: Some(&after),
            moved: Some((&from, &to)),
        };
        let old = spans(&text, &source, &before);
        let out = match rewrite_note(&text, &source, &before, &rewrite) {
            Some((out, n)) => {
                prop_assert_eq!(n, old.iter().filter(|(_, f)| f.as_ref() == Some(&from)).count());
                out
            }
            None => {
                prop_assert!(old.iter().all(|(_, f)| f.as_ref() != Some(&from)));
                text.clone()
            }
        };
        let new = spans(&out, &source, &after);
        prop_assert_eq!(old.len(), new.len(), "{:?} -> {:?}", text, out);
        let (mut a, mut b) = (0, 0);
        for ((old_range, old_file), (new_range, new_file)) in old.iter().zip(&new) {
            // The text between links is the same, byte for byte.
            prop_assert_eq!(&text[a..old_range.start], &out[b..new_range.start]);
            if old_file.as_ref() == Some(&from) {
                prop_assert_eq!(new_file.as_ref(), Some(&to), "{:?}", &out[new_range.clone()]);
            } else {
                prop_assert_eq!(&text[old_range.clone()], &out[new_range.clone()]);
            }
            a = old_range.end;
            b = new_range.end;
        }
        prop_assert_eq!(&text[a..], &out[b..]);
    }
}

fn fixture(files: &[(&str, &str)]) -> (tempfile::TempDir, Vault) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("vault");
    fs::create_dir_all(&root).unwrap();
    let vault = Vault::open(
        "main",
        &root,
        dir.path().join("snapshots"),
        Arc::new(ManualClock::new(0)),
        Arc::new(SeededEntropy::new(5)),
    )
    .unwrap();
    for (path, content) in files {
        vault
            .write(&p(path), content.as_bytes(), &Precondition::None)
            .unwrap();
    }
    (dir, vault)
}

// r[verify vault.links.canvas]
// r[verify vault.links.markdown.resolve]
#[test]
fn a_move_carries_markdown_links_canvases_and_its_own_relative_links() {
    let canvas = "{\"nodes\":[{\"id\":\"n1\",\"type\":\"file\",\"file\":\"old/Plan.md\",\"x\":1},\n {\"id\":\"n2\",\"type\":\"text\",\"text\":\"old/Plan.md\"}],\"edges\":[]}";
    let (_dir, vault) = fixture(&[
        (
            "old/Plan.md",
            "see [sibling](Sib.md) and [up](../top.md) and [[Sib]]\n",
        ),
        (
            "old/Sib.md",
            "[back](Plan.md) [abs](/old/Plan.md#Goals) [enc](<Plan.md>)\n",
        ),
        ("top.md", "[p](old/Plan.md \"t\") and ![e](./old/Plan.md)\n"),
        ("board.canvas", canvas),
        ("other.canvas", "{\"nodes\":[]}"),
    ]);
    let resolver = build_resolver(&vault).unwrap();
    let (from, to) = (p("old/Plan.md"), p("new/deep/My Plan.md"));
    let (plan, _) = plan_backlinks(&vault, &resolver, &from, &to, &|_| true).unwrap();
    let touched: Vec<&str> = plan.notes.iter().map(|n| n.path.as_str()).collect();
    assert_eq!(
        touched,
        [
            "board.canvas",
            "new/deep/My Plan.md",
            "old/Sib.md",
            "top.md"
        ]
    );
    vault
        .rename(&from, &to, &Precondition::None, &Precondition::MustNotExist)
        .unwrap();
    plan.apply(&vault).unwrap();
    let read = |path: &str| String::from_utf8(vault.read(&p(path)).unwrap().bytes).unwrap();
    assert_eq!(
        read("old/Sib.md"),
        "[back](../new/deep/My%20Plan.md) [abs](/new/deep/My%20Plan.md#Goals) [enc](<../new/deep/My Plan.md>)\n"
    );
    assert_eq!(
        read("top.md"),
        "[p](new/deep/My%20Plan.md \"t\") and ![e](./new/deep/My%20Plan.md)\n"
    );
    assert_eq!(
        read("new/deep/My Plan.md"),
        // Sib.md still resolves from the new folder (by name), so only ../top.md follows.
        "see [sibling](Sib.md) and [up](../../top.md) and [[Sib]]\n"
    );
    assert_eq!(
        read("board.canvas"),
        canvas.replace(
            "\"file\":\"old/Plan.md\"",
            "\"file\":\"new/deep/My Plan.md\""
        )
    );
    assert_eq!(read("other.canvas"), "{\"nodes\":[]}");
}
