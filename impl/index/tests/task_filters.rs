//! The task-line filters on the index (spec/index.md `index.task-filters`): a listing by
//! tag or status, read through the index kept for it, gives the lines a scan of the notes
//! gives, also after notes were rewritten or deleted between listings.

mod support;

use proptest::prelude::*;
use support::{Fx, indexed};
use tc_index::meta::tasks::{TaskFilter, tasks};

const TAGS: &[&str] = &["a", "a/b", "a/b/c", "ab", "b", "b/a"];
const BOXES: &[(char, &str)] = &[(' ', "todo"), ('x', "done"), ('/', "in_progress")];

/// One task line: its box, its tags (indexes into [`TAGS`]) and its due day in January.
type Line = (usize, Vec<usize>, Option<u8>);

fn line() -> impl Strategy<Value = Line> {
    (
        0..BOXES.len(),
        prop::collection::vec(0..TAGS.len(), 0..3),
        prop::option::of(1u8..29),
    )
}

fn text_of(lines: &[Line]) -> String {
    let mut text = String::from("# Tasks\n");
    for (n, (status, tags, due)) in lines.iter().enumerate() {
        text.push_str(&format!("- [{}] task {n}", BOXES[*status].0));
        for tag in tags {
            text.push_str(&format!(" #{}", TAGS[*tag]));
        }
        if let Some(day) = due {
            text.push_str(&format!(" 📅 2026-01-{day:02}"));
        }
        text.push('\n');
    }
    text
}

/// The (path, line) of every task line matching, from the notes as written.
fn reference(
    notes: &std::collections::BTreeMap<usize, Vec<Line>>,
    filter: &TaskFilter,
) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for (note, lines) in notes {
        for (n, (status, tags, due)) in lines.iter().enumerate() {
            let due = due.map(|day| format!("2026-01-{day:02}"));
            let tagged = filter.tag.as_deref().is_none_or(|want| {
                tags.iter().any(|t| {
                    let t = TAGS[*t];
                    t == want || t.starts_with(&format!("{want}/"))
                })
            });
            let status_ok = filter
                .status
                .as_deref()
                .is_none_or(|want| BOXES[*status].1 == want);
            let due_ok = filter
                .due_before
                .as_deref()
                .is_none_or(|before| due.as_deref().is_some_and(|d| d <= before));
            if tagged && status_ok && due_ok {
                out.push((format!("n{note:02}.md"), n as u64 + 2));
            }
        }
    }
    out
}

/// Every matching line through the index, in pages of three.
fn listed(index: &tc_index::VaultIndex, filter: &TaskFilter) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = Vec::new();
    loop {
        let after = out.last().map(|(p, l)| (p.as_str(), *l));
        let page = tasks(index, filter, after, 3).unwrap();
        let done = page.len() < 3;
        out.extend(page.into_iter().map(|row| (row.path, row.line)));
        if done {
            return out;
        }
    }
}

fn filters() -> Vec<TaskFilter> {
    let mut all = Vec::new();
    for tag in [
        None,
        Some("a"),
        Some("a/b"),
        Some("b"),
        Some("ab"),
        Some("c"),
    ] {
        for status in [None, Some("todo"), Some("done")] {
            for due_before in [None, Some("2026-01-14")] {
                all.push(TaskFilter {
                    tag: tag.map(str::to_owned),
                    status: status.map(str::to_owned),
                    due_before: due_before.map(str::to_owned),
                    ..TaskFilter::default()
                });
            }
        }
    }
    all
}

/// A rewrite of note `.0` with `.1` (`None`: the note is deleted).
type Edit = (usize, Option<Vec<Line>>);

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    // r[verify index.task-filters]
    #[test]
    fn filtered_listings_equal_a_scan_of_the_notes_after_every_edit(
        start in prop::collection::vec(prop::collection::vec(line(), 0..6), 1..8),
        edits in prop::collection::vec(
            (0usize..10, prop::option::weighted(0.8, prop::collection::vec(line(), 0..6))),
            1..6,
        ),
    ) {
        let fx = Fx::new();
        let mut notes = std::collections::BTreeMap::new();
        for (n, lines) in start.into_iter().enumerate() {
            fx.put(&format!("n{n:02}.md"), &text_of(&lines));
            notes.insert(n, lines);
        }
        let index = indexed(&fx);
        let check = |notes: &std::collections::BTreeMap<usize, Vec<Line>>| {
            index.refresh().unwrap();
            for filter in filters() {
                assert_eq!(listed(&index, &filter), reference(notes, &filter), "{filter:?}");
            }
        };
        check(&notes);
        let edits: Vec<Edit> = edits;
        for (note, lines) in edits {
            let path = format!("n{note:02}.md");
            match lines {
                Some(lines) => {
                    fx.put(&path, &text_of(&lines));
                    notes.insert(note, lines);
                }
                None => {
                    if notes.remove(&note).is_some() {
                        fx.remove(&path);
                    }
                }
            }
            check(&notes);
        }
    }
}
