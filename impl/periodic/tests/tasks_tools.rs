//! The task tools on an indexed vault (spec/tasks.md `tasks.list*`, `tasks.add*`,
//! `tasks.status`).

use serde_json::{Value, json};
use tc_tools::ErrorCode;
use tc_tools::testing::{Tools, code};
use tc_vault::acl::AclConfig;

/// The tasks family's tools, as the server registers them.
struct TasksTools;

impl Tools for TasksTools {
    fn registry() -> tc_tools::Registry {
        let mut registry = tc_tools::Registry::new();
        tc_periodic::tasks::register(&mut registry).unwrap();
        registry
    }
}

type Fx = tc_tools::testing::Fx<TasksTools>;

/// Builds the index of the fixture's vault and attaches it to the pipeline's binding.
fn indexed(fx: &Fx) {
    let binding = fx.pipeline.vault("main").unwrap();
    if binding.index().is_some() {
        return;
    }
    let index = tc_index::open_indexes(
        &fx.cache(),
        [("main", fx.root.as_path())],
        &tc_index::SearchConfig::default(),
    )
    .unwrap()
    .remove(0);
    index.first_build();
    binding.attach_index(index);
}

fn vault_of(notes: &[(&str, &str)]) -> Fx {
    let fx = Fx::new();
    for (path, content) in notes {
        fx.put(path, content);
    }
    indexed(&fx);
    fx
}

/// `(path, line)` of each listed task.
fn places(out: &Value) -> Vec<(String, u64)> {
    out["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["path"].as_str().unwrap().to_owned(),
                t["line"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn person_vault() -> Fx {
    vault_of(&[
        (
            "daily/2026-03-01.md",
            "---\ntags: [daily]  # kept\n---\n# Today\n- [ ] call Bob ⏫ 📅 2026-03-02 #work/calls\n- [x] pay rent ✅ 2026-03-01\n- [/] write report 🛫 2026-02-20 ⏳ 2026-03-01 📅 2026-03-05\n```\n- [ ] not a task\n```\n",
        ),
        (
            "projects/house.md",
            "# House\n* [-] old plan ❌ 2026-01-10\n1. [ ] paint [due:: 2026-04-01] [priority:: low] #home\n- [?] ask the bank 🔁 every month 📅 2026-03-03\n",
        ),
        ("notes/plain.md", "no tasks here [x] or - [] here\n"),
    ])
}

// r[verify tasks.list]
// r[verify tasks.status]
// r[verify tasks.fields.emoji]
// r[verify tasks.fields.dataview]
#[test]
fn list_tasks_reads_the_plugin_s_lines_and_filters_them() {
    let fx = person_vault();
    let out = fx.call("list_tasks", json!({})).unwrap();
    assert_eq!(
        places(&out),
        [
            ("daily/2026-03-01.md".to_owned(), 5),
            ("daily/2026-03-01.md".to_owned(), 6),
            ("daily/2026-03-01.md".to_owned(), 7),
            ("projects/house.md".to_owned(), 2),
            ("projects/house.md".to_owned(), 3),
            ("projects/house.md".to_owned(), 4),
        ]
    );
    let first = &out["tasks"][0];
    assert_eq!(first["status"], "todo");
    assert_eq!(first["due"], "2026-03-02");
    assert_eq!(first["priority"], "high");
    assert_eq!(first["tags"], json!(["work/calls"]));
    assert_eq!(first["text"], "call Bob ⏫ 📅 2026-03-02 #work/calls");
    let report = &out["tasks"][2];
    assert_eq!(report["status"], "in_progress");
    assert_eq!(
        (&report["start"], &report["scheduled"], &report["due"]),
        (
            &json!("2026-02-20"),
            &json!("2026-03-01"),
            &json!("2026-03-05")
        )
    );
    assert_eq!(out["tasks"][1]["done"], "2026-03-01");
    assert_eq!(out["tasks"][3]["status"], "cancelled");
    assert_eq!(out["tasks"][3]["cancelled"], "2026-01-10");
    let paint = &out["tasks"][4];
    assert_eq!(
        (&paint["due"], &paint["priority"]),
        (&json!("2026-04-01"), &json!("low"))
    );
    let bank = &out["tasks"][5];
    assert_eq!(
        (&bank["status"], &bank["marker"]),
        (&json!("other"), &json!("?"))
    );
    assert_eq!(bank["recurrence"], "every month");

    let filtered = |args: Value| places(&fx.call("list_tasks", args).unwrap());
    assert_eq!(
        filtered(json!({"status": "todo"})),
        [
            ("daily/2026-03-01.md".to_owned(), 5),
            ("projects/house.md".to_owned(), 3)
        ]
    );
    assert_eq!(
        filtered(json!({"due_before": "2026-03-03", "due_after": "2026-03-03"})),
        [("projects/house.md".to_owned(), 4)]
    );
    assert_eq!(
        filtered(json!({"due_before": "2026-03-05"})).len(),
        3,
        "a task without a due date matches no due filter"
    );
    assert_eq!(
        filtered(json!({"tag": "#Work"})),
        [("daily/2026-03-01.md".to_owned(), 5)]
    );
    assert_eq!(filtered(json!({"tag": "work/calls"})).len(), 1);
    assert_eq!(filtered(json!({"tag": "wor"})).len(), 0);
    assert_eq!(filtered(json!({"folder": "projects"})).len(), 3);
    assert_eq!(filtered(json!({"folder": "proj"})).len(), 0);
    // An edit behind the server's back is seen by the next call.
    fx.put("notes/plain.md", "- [ ] new one\n");
    assert_eq!(
        filtered(json!({"folder": "notes"})),
        [("notes/plain.md".to_owned(), 1)]
    );
}

// r[verify tasks.list.dates]
#[test]
fn bad_dates_are_refused_by_name() {
    let fx = person_vault();
    for (key, value) in [("due_before", "2026-3-1"), ("due_after", "tomorrow")] {
        let err = fx.call("list_tasks", json!({ key: value })).unwrap_err();
        assert_eq!(err.code, ErrorCode::ValidationError);
        assert!(err.to_string().contains(key), "{err}");
    }
}

// r[verify tasks.list.acl]
#[test]
fn tasks_of_notes_the_caller_may_not_read_are_left_out() {
    let acl = AclConfig {
        read_paths: Some(vec!["notes/**".to_owned()]),
        ..AclConfig::default()
    };
    let fx = Fx::with(Some(acl), Vec::new());
    fx.put("notes/a.md", "- [ ] mine\n");
    fx.put("private/b.md", "- [ ] secret 📅 2026-01-01\n");
    indexed(&fx);
    let out = fx.call("list_tasks", json!({})).unwrap();
    assert_eq!(places(&out), [("notes/a.md".to_owned(), 1)]);
    assert!(out["next_cursor"].is_null());
    let out = fx.call("list_tasks", json!({"folder": "private"})).unwrap();
    assert!(places(&out).is_empty());
}

#[test]
fn long_listings_page_with_a_cursor_bound_to_the_request() {
    let fx = Fx::new();
    let long = "x".repeat(400);
    for n in 0..40 {
        let body: String = (0..10).map(|i| format!("- [ ] {long} {i}\n")).collect();
        fx.put(&format!("n/{n:02}.md"), &body);
    }
    indexed(&fx);
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut args = json!({"folder": "n"});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let out = fx.call("list_tasks", args).unwrap();
        seen.extend(places(&out));
        pages += 1;
        match out["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert!(pages > 1, "{pages}");
    assert_eq!(seen.len(), 400);
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted, seen, "in order, each once");
    let first = fx.call("list_tasks", json!({"folder": "n"})).unwrap();
    let token = first["next_cursor"].as_str().unwrap();
    assert_eq!(
        code(fx.call("list_tasks", json!({"status": "todo", "cursor": token}))),
        ErrorCode::InvalidInput
    );
}

// r[verify tasks.add]
// r[verify tasks.add.form]
#[test]
fn add_task_adds_one_line_that_list_tasks_reads_back() {
    let fx = person_vault();
    let out = fx
        .call(
            "add_task",
            json!({"path": "projects/house.md", "text": "fix roof", "heading": "House",
                   "due": "2026-05-01", "scheduled": "2026-04-20", "priority": "highest"}),
        )
        .unwrap();
    assert_eq!(out["task"], "- [ ] fix roof 🔺 ⏳ 2026-04-20 📅 2026-05-01");
    assert_eq!(out["line"], 5);
    assert_eq!(
        fx.get("projects/house.md").unwrap(),
        "# House\n* [-] old plan ❌ 2026-01-10\n1. [ ] paint [due:: 2026-04-01] [priority:: low] #home\n- [?] ask the bank 🔁 every month 📅 2026-03-03\n- [ ] fix roof 🔺 ⏳ 2026-04-20 📅 2026-05-01\n"
    );
    let listed = fx
        .call("list_tasks", json!({"due_after": "2026-05-01"}))
        .unwrap();
    let task = &listed["tasks"][0];
    assert_eq!(
        (&task["path"], &task["line"]),
        (&json!("projects/house.md"), &json!(5))
    );
    assert_eq!(
        (&task["priority"], &task["scheduled"]),
        (&json!("highest"), &json!("2026-04-20"))
    );
    // Without a heading: at the end; never a confirmation.
    let out = fx
        .call("add_task", json!({"path": "notes/plain.md", "text": "a"}))
        .unwrap();
    assert_eq!(out["line"], 2);
    assert_eq!(
        fx.get("notes/plain.md").unwrap(),
        "no tasks here [x] or - [] here\n- [ ] a\n"
    );
}

// r[verify tasks.add.anchor]
// r[verify tasks.add.text]
#[test]
fn add_task_refusals_write_nothing() {
    let fx = person_vault();
    let before = fx.get("projects/house.md").unwrap();
    let err = fx
        .call(
            "add_task",
            json!({"path": "projects/house.md", "text": "x", "heading": "Garden"}),
        )
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::AnchorNotFound);
    for bad in [
        json!({"path": "projects/house.md", "text": "a\nb"}),
        json!({"path": "projects/house.md", "text": "   "}),
        json!({"path": "projects/house.md", "text": "x", "due": "2026-02-30"}),
        json!({"path": "projects/house.md", "text": "x", "scheduled": "soon"}),
        json!({"path": "projects/house.md", "text": "x", "priority": "urgent"}),
    ] {
        assert_eq!(
            code(fx.call("add_task", bad.clone())),
            ErrorCode::ValidationError,
            "{bad}"
        );
    }
    assert_eq!(
        code(fx.call("add_task", json!({"path": "none.md", "text": "x"}))),
        ErrorCode::NoteNotFound
    );
    assert_eq!(fx.get("projects/house.md").unwrap(), before);
}
