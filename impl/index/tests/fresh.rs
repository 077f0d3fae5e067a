//! The next call sees what was done behind the server's back, on the watcher's fast path
//! (spec/index.md `index.fresh`): each edit below is made by hand and searched for at once,
//! with no sleep, many times over, while the watcher stays trusted.

mod support;

use proptest::prelude::*;
use serde_json::json;
use support::{Fx, indexed};

fn hits(fx: &Fx, query: &str) -> Vec<String> {
    let out = fx.call("search_notes", json!({"query": query})).unwrap();
    out["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["path"].as_str().unwrap().to_owned())
        .collect()
}

// r[verify index.fresh]
#[test]
fn edits_made_by_hand_are_seen_by_the_very_next_call_through_the_fence() {
    let fx = Fx::new();
    fx.put("a.md", "alpha\n");
    let index = indexed(&fx);
    let fenced = index.fenced();
    for round in 0..40 {
        let word = format!("w{round}x");
        // A new note.
        fx.put(&format!("n{round}.md"), &format!("{word} new\n"));
        assert_eq!(
            hits(&fx, &word),
            [format!("n{round}.md")],
            "new, round {round}"
        );
        // The same size, in the same timestamp tick.
        let other = format!("v{round}x");
        fx.put(&format!("n{round}.md"), &format!("{other} new\n"));
        assert_eq!(
            hits(&fx, &other),
            [format!("n{round}.md")],
            "edit, round {round}"
        );
        assert!(hits(&fx, &word).is_empty(), "the old words are gone");
        // A new folder with a note written right after it was made (before the watcher
        // watches the folder), then the folder renamed, then removed.
        std::fs::create_dir(fx.root.join(format!("d{round}"))).unwrap();
        std::fs::write(
            fx.root.join(format!("d{round}/inner.md")),
            format!("{word}z inner\n"),
        )
        .unwrap();
        assert_eq!(
            hits(&fx, &format!("{word}z")),
            [format!("d{round}/inner.md")]
        );
        std::fs::rename(
            fx.root.join(format!("d{round}")),
            fx.root.join(format!("e{round}")),
        )
        .unwrap();
        assert_eq!(
            hits(&fx, &format!("{word}z")),
            [format!("e{round}/inner.md")]
        );
        std::fs::remove_dir_all(fx.root.join(format!("e{round}"))).unwrap();
        assert!(
            hits(&fx, &format!("{word}z")).is_empty(),
            "a removed folder"
        );
        // A deleted note.
        std::fs::remove_file(fx.root.join(format!("n{round}.md"))).unwrap();
        assert!(hits(&fx, &other).is_empty(), "deleted, round {round}");
    }
    assert!(
        index.fenced() >= fenced + 40 * 7,
        "the calls took the watcher's path ({} fences)",
        index.fenced() - fenced
    );
}

#[test]
fn a_file_written_into_a_new_folder_a_little_later_is_still_seen() {
    let fx = Fx::new();
    fx.put("a.md", "alpha\n");
    let _index = indexed(&fx);
    std::fs::create_dir_all(fx.root.join("p/q")).unwrap();
    assert!(hits(&fx, "later").is_empty());
    std::fs::write(fx.root.join("p/q/late.md"), "later words\n").unwrap();
    assert_eq!(hits(&fx, "later"), ["p/q/late.md"]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]

    /// Whatever is done by hand, the flagged reconciliation leaves the index as a full one
    /// would: the search answers equal before and after a full reconcile.
    #[test]
    fn the_flagged_reconciliation_agrees_with_a_full_one(
        ops in proptest::collection::vec((0u8..5, 0usize..4, 0usize..3), 1..25)
    ) {
        let fx = Fx::new();
        fx.put("seed.md", "seed\n");
        let index = indexed(&fx);
        for (n, (op, file, folder)) in ops.iter().enumerate() {
            let dir = format!("f{folder}");
            let path = format!("{dir}/n{file}.md");
            let full = fx.root.join(&path);
            match op {
                0 | 1 => {
                    std::fs::create_dir_all(fx.root.join(&dir)).unwrap();
                    std::fs::write(&full, format!("common t{n} word{file}\n")).unwrap();
                }
                2 => { let _ = std::fs::remove_file(&full); }
                3 => { let _ = std::fs::remove_dir_all(fx.root.join(&dir)); }
                _ => {
                    let to = fx.root.join(format!("f{}", (folder + 1) % 3));
                    if !to.exists() {
                        let _ = std::fs::rename(fx.root.join(&dir), to);
                    }
                }
            }
            let flagged = hits(&fx, "common");
            index.reconcile().unwrap();
            let full_hits = hits(&fx, "common");
            prop_assert_eq!(flagged, full_hits, "after op {} ({:?})", n, (op, file, folder));
        }
    }
}

// r[verify index.reconcile]
#[test]
fn without_a_watcher_every_call_reconciles_in_full() {
    let fx = Fx::new();
    fx.put("a.md", "alpha\n");
    // No watcher runs, so nothing is trusted.
    let index = tc_index::open_indexes(
        &fx.cache(),
        [("main", fx.root.as_path())],
        &tc_index::SearchConfig::default(),
    )
    .unwrap()
    .remove(0);
    index.first_build_unwatched();
    assert!(
        fx.pipeline
            .vault("main")
            .unwrap()
            .attach_index(index.clone())
    );
    fx.put("a.md", "gamma\n");
    assert_eq!(
        hits(&fx, "gamma"),
        ["a.md"],
        "a same-size edit in the same tick"
    );
    fx.put("b/c.md", "delta\n");
    assert_eq!(hits(&fx, "delta"), ["b/c.md"]);
    std::fs::remove_file(fx.root.join("a.md")).unwrap();
    assert!(hits(&fx, "gamma").is_empty());
    assert_eq!(index.fenced(), 0, "no fence without a watcher");
}
