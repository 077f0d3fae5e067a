//! The outline of a note with tens of thousands of headings is found in one pass (spec
//! vault.md `vault.sections.outline`): parents and section ends come from a stack of open
//! sections, not from a scan of every earlier or later heading, which made a 1 MiB note's
//! outline cost 40 ms and a note of 50,000 headings minutes.

use std::time::{Duration, Instant};

use tc_vault::sections::{Anchor, PatchOp, outline, patch};

// r[verify vault.sections.outline]
#[test]
fn fifty_thousand_headings_outline_in_linear_time() {
    let mut note = String::from("# Top\n");
    for i in 0..50_000 {
        note.push_str(&format!("## H{i}\n### Sub {i}\ntext\n"));
    }
    let started = Instant::now();
    let found = outline(&note);
    // Generous for a debug build on a busy machine; the quadratic walk took minutes.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(found.headings.len(), 100_001);
    assert_eq!(found.headings[0].section_end, note.len());
    let last = &found.headings[100_000];
    assert_eq!(last.parents, ["Top", "H49999"]);
    assert_eq!(&note[last.start..last.section_end], "### Sub 49999\ntext\n");
    let patched = patch(&note, Anchor::Heading("H2::Sub 2"), PatchOp::Replace, "new").unwrap();
    assert_eq!(patched.removed, "text\n");
}
