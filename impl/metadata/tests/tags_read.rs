//! The tag reading tools on an indexed vault (spec/metadata.md `metadata.tags.*`,
//! `metadata.list-tags`, `metadata.get-note-tags`, `metadata.find-notes-by-tag`).

mod tags_support;

use serde_json::json;
use tags_support::{Fx, code, indexed, paths, strings, tag_counts, vault_of};
use tc_tools::ErrorCode;
use tc_vault::acl::AclConfig;

fn person_vault() -> Fx {
    vault_of(&[
        (
            "notes/plan.md",
            "---\ntags: [Project/Alpha, area/work]  # a comment\n---\n# Plan #Idea\nSee `#notatag` and [[Other#heading]] and [x](#anchor) https://x.y/#frag #2024\n",
        ),
        (
            "notes/daily.md",
            "---\ntag: project, journal\n---\nToday #project/beta and #idea.\n```\n#fenced\n```\n",
        ),
        ("notes/other.md", "Nothing tagged here (#projects) ;#idea\n"),
        (
            "private/secret.md",
            "---\ntags:\n  - hidden\n  - project/alpha\n---\n#idea\n",
        ),
    ])
}

// r[verify metadata.tags.sources]
// r[verify metadata.tags.inline]
// r[verify metadata.list-tags]
#[test]
fn list_tags_counts_notes_per_tag_and_under_each_ancestor() {
    let fx = person_vault();
    let out = fx.call("list_tags", json!({})).unwrap();
    assert_eq!(
        tag_counts(&out),
        [
            ("area".to_owned(), 1),
            ("area/work".to_owned(), 1),
            ("hidden".to_owned(), 1),
            ("idea".to_owned(), 4),
            ("journal".to_owned(), 1),
            ("project".to_owned(), 3),
            ("project/alpha".to_owned(), 2),
            ("project/beta".to_owned(), 1),
            ("projects".to_owned(), 1),
        ]
    );
    assert!(out["next_cursor"].is_null());
    // An edit made by hand is counted by the next call.
    fx.put("notes/other.md", "now #journal\n");
    let out = fx.call("list_tags", json!({"prefix": "j"})).unwrap();
    assert_eq!(tag_counts(&out), [("journal".to_owned(), 2)]);
    fx.put("notes/other.md", "Nothing tagged here (#projects) ;#idea\n");
    // folder and prefix (a leading # is allowed, the case ignored).
    let out = fx.call("list_tags", json!({"prefix": "project/"})).unwrap();
    assert_eq!(
        tag_counts(&out),
        [
            ("project/alpha".to_owned(), 2),
            ("project/beta".to_owned(), 1)
        ]
    );
    let out = fx
        .call("list_tags", json!({"folder": "notes", "prefix": "#Proj"}))
        .unwrap();
    assert_eq!(
        tag_counts(&out),
        [
            ("project".to_owned(), 2),
            ("project/alpha".to_owned(), 1),
            ("project/beta".to_owned(), 1),
            ("projects".to_owned(), 1),
        ]
    );
}

// r[verify metadata.tags.acl]
#[test]
fn what_the_folder_acl_hides_is_neither_listed_nor_counted() {
    let acl = AclConfig {
        read_paths: Some(vec!["notes/**".to_owned()]),
        ..AclConfig::default()
    };
    let fx = Fx::with(Some(acl), Vec::new());
    fx.put("notes/a.md", "#idea #project/alpha\n");
    fx.put("private/secret.md", "#hidden #idea #project/alpha/x\n");
    indexed(&fx);
    let out = fx.call("list_tags", json!({})).unwrap();
    assert_eq!(
        tag_counts(&out),
        [
            ("idea".to_owned(), 1),
            ("project".to_owned(), 1),
            ("project/alpha".to_owned(), 1),
        ]
    );
    let found = fx
        .call("find_notes_by_tag", json!({"tag": "project"}))
        .unwrap();
    assert_eq!(paths(&found), ["notes/a.md"]);
    assert_eq!(
        code(fx.call("get_note_tags", json!({"path": "private/secret.md"}))),
        ErrorCode::AclDenied
    );
}

// r[verify metadata.get-note-tags]
#[test]
fn get_note_tags_gives_the_note_s_tags_from_the_index() {
    let fx = person_vault();
    let out = fx
        .call("get_note_tags", json!({"path": "notes/plan.md"}))
        .unwrap();
    assert_eq!(
        strings(&out, "tags"),
        ["area/work", "idea", "project/alpha"]
    );
    // An edit made behind the server's back is seen by the next call.
    fx.put("notes/plan.md", "#fresh\n");
    let out = fx
        .call("get_note_tags", json!({"path": "notes/plan.md"}))
        .unwrap();
    assert_eq!(strings(&out, "tags"), ["fresh"]);
    assert_eq!(
        code(fx.call("get_note_tags", json!({"path": "notes/none.md"}))),
        ErrorCode::NoteNotFound
    );
}

// r[verify metadata.find-notes-by-tag]
// r[verify metadata.tags.argument]
#[test]
fn find_notes_by_tag_is_hierarchical_and_exact_on_segments() {
    let fx = person_vault();
    let out = fx
        .call("find_notes_by_tag", json!({"tag": "#PROJECT"}))
        .unwrap();
    assert_eq!(
        paths(&out),
        ["notes/daily.md", "notes/plan.md", "private/secret.md"]
    );
    assert_eq!(out["notes"][0]["tags"], json!(["project", "project/beta"]));
    let out = fx
        .call(
            "find_notes_by_tag",
            json!({"tag": "project/alpha", "folder": "notes"}),
        )
        .unwrap();
    assert_eq!(paths(&out), ["notes/plan.md"]);
    for bad in ["", "#", "2024", "a b", "a//b", "/a"] {
        assert_eq!(
            code(fx.call("find_notes_by_tag", json!({"tag": bad}))),
            ErrorCode::ValidationError,
            "{bad:?}"
        );
    }
}

// r[verify metadata.list-tags]
// r[verify metadata.find-notes-by-tag]
#[test]
fn long_listings_page_with_a_cursor_bound_to_the_request() {
    let fx = Fx::new();
    let long = "x".repeat(200);
    for i in 0..400 {
        fx.put(
            &format!("n/{i:04}.md"),
            &format!("#t{i:04}{long} #common\n"),
        );
    }
    indexed(&fx);
    let mut all = Vec::new();
    let mut cursor = None::<String>;
    let mut pages = 0;
    loop {
        let mut args = json!({});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let out = fx.call("list_tags", args).unwrap();
        assert!(out.to_string().len() < 64 * 1024);
        all.extend(tag_counts(&out));
        pages += 1;
        match out["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert!(pages > 1, "{pages}");
    assert_eq!(all.len(), 401);
    assert_eq!(all[0], ("common".to_owned(), 400));
    assert!(all.windows(2).all(|w| w[0].0 < w[1].0));
    // A cursor of list_tags is refused for another request.
    let first = fx.call("list_tags", json!({})).unwrap();
    let token = first["next_cursor"].as_str().unwrap();
    assert_eq!(
        code(fx.call("list_tags", json!({"prefix": "t", "cursor": token}))),
        ErrorCode::InvalidInput
    );
    // find_notes_by_tag pages by path.
    let mut found = Vec::new();
    let mut cursor = None::<String>;
    loop {
        let mut args = json!({"tag": "common"});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let out = fx.call("find_notes_by_tag", args).unwrap();
        found.extend(paths(&out));
        match out["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(found.len(), 400);
    assert!(found.windows(2).all(|w| w[0] < w[1]));
}

// r[verify metadata.tags.acl]
/// A scope rule the caller lacks hides its folder as a `readPaths` list does: the listing
/// is then judged note by note, not read whole.
#[test]
fn a_scope_rule_the_caller_lacks_hides_its_notes_from_the_counts() {
    let acl = AclConfig {
        rules: vec![tc_vault::acl::ScopeRuleConfig {
            glob: "private/**".to_owned(),
            scopes: vec!["read:private".to_owned()],
        }],
        ..AclConfig::default()
    };
    let fx = Fx::with(Some(acl), Vec::new());
    fx.put("notes/a.md", "#idea\n");
    fx.put("private/secret.md", "#idea #hidden\n");
    indexed(&fx);
    let reader =
        tc_tools::CallerContext::new("reader", tc_vault::acl::Scopes::granted(["read:notes"]));
    let out = fx.call_as(&reader, "list_tags", json!({})).unwrap();
    assert_eq!(tag_counts(&out), [("idea".to_owned(), 1)]);
    // A caller holding the scope sees both notes.
    let out = fx.call("list_tags", json!({})).unwrap();
    assert_eq!(
        tag_counts(&out),
        [("hidden".to_owned(), 1), ("idea".to_owned(), 2)]
    );
}

mod counts_follow_edits {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{BTreeMap, BTreeSet};

    /// One step: a note (of four) written with these tags, or removed.
    #[derive(Debug, Clone)]
    enum Step {
        Write(usize, Vec<String>),
        Remove(usize),
    }

    fn tag() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(vec!["a", "b", "ab"]), 1..4)
            .prop_map(|parts| parts.join("/"))
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            3 => (0..4usize, prop::collection::vec(tag(), 0..4)).prop_map(|(n, t)| Step::Write(n, t)),
            1 => (0..4usize).prop_map(Step::Remove),
        ]
    }

    /// What list_tags must say of `notes`: each tag and each ancestor, a note counted once.
    fn reference(notes: &BTreeMap<usize, Vec<String>>) -> Vec<(String, u64)> {
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for tags in notes.values() {
            let mut entries = BTreeSet::new();
            for tag in tags {
                entries.insert(tag.clone());
                entries.extend(tag.match_indices('/').map(|(at, _)| tag[..at].to_owned()));
            }
            for entry in entries {
                *counts.entry(entry).or_default() += 1;
            }
        }
        counts.into_iter().collect()
    }

    fn listed(fx: &Fx) -> Vec<(String, u64)> {
        let mut all = Vec::new();
        let mut args = json!({"max_bytes": 1024});
        loop {
            let out = fx.call("list_tags", args.clone()).unwrap();
            all.extend(tag_counts(&out));
            match out["next_cursor"].as_str() {
                Some(next) => args["cursor"] = json!(next),
                None => return all,
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        // r[verify index.tag-counts]
        // r[verify metadata.list-tags]
        /// The counts the index keeps as notes are written and removed equal a recount of the
        /// notes as they are, page by page.
        #[test]
        fn the_kept_counts_equal_a_recount_after_every_edit(
            steps in prop::collection::vec(step(), 1..10)
        ) {
            let fx = vault_of(&[("seed.md", "# nothing tagged\n")]);
            let mut notes: BTreeMap<usize, Vec<String>> = BTreeMap::new();
            for step in steps {
                match step {
                    Step::Write(n, tags) => {
                        let inline: Vec<String> = tags.iter().map(|t| format!("#{t}")).collect();
                        fx.put(&format!("n{n}.md"), &format!("# Note {n}\n{}\n", inline.join(" ")));
                        notes.insert(n, tags);
                    }
                    Step::Remove(n) => {
                        if notes.remove(&n).is_some() {
                            fx.remove(&format!("n{n}.md"));
                        }
                    }
                }
                prop_assert_eq!(listed(&fx), reference(&notes));
            }
        }
    }
}
