//! The template tools (spec/periodic.md `## Templates`): the core Templates plugin's folder
//! and formats from `.obsidian/templates.json`, templates expanded into new notes.

use serde_json::json;
use tc_tools::ErrorCode;
use tc_tools::testing::{Tools, code};
use tc_vault::acl::AclConfig;

struct PeriodicTools;

impl Tools for PeriodicTools {
    fn registry() -> tc_tools::Registry {
        let mut registry = tc_tools::Registry::new();
        tc_periodic::register(&mut registry).unwrap();
        registry
    }
}

type Fx = tc_tools::testing::Fx<PeriodicTools>;

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

fn templates(fx: &Fx) {
    fx.put(
        ".obsidian/templates.json",
        r#"{"folder": "Meta/Templates/", "dateFormat": "D MMM YYYY", "timeFormat": "h:mm A"}"#,
    );
    fx.put(
        "Meta/Templates/Meeting.md",
        "---\ntype: meeting  # kept\n---\n# {{title}}\nOn {{date}} at {{time}} with {{who}} ({{date:dddd}}, week {{date:ww}})\n<%* tR += tp.date.now() %>\n{{unknown}}\n",
    );
    fx.put("Meta/Templates/sub/Book.md", "# {{Title}}\n");
    fx.put("Meta/Other.md", "not a template\n");
}

// r[verify templates.settings]
// r[verify templates.list]
#[test]
fn list_templates_names_the_notes_under_the_templates_folder() {
    let acl = AclConfig {
        read_paths: Some(vec!["Meta/Templates/*.md".to_owned()]),
        ..AclConfig::default()
    };
    let fx = Fx::with(Some(acl), Vec::new());
    templates(&fx);
    indexed(&fx);
    let out = fx.call("list_templates", json!({})).unwrap();
    assert_eq!(out["folder"], "Meta/Templates");
    assert_eq!(out["templates"], json!(["Meta/Templates/Meeting.md"]));
    assert_eq!(out["truncated"], false);
    let bare = Fx::new();
    indexed(&bare);
    let out = bare.call("list_templates", json!({})).unwrap();
    assert!(out["folder"].is_null());
    assert_eq!(out["templates"], json!([]));
}

// r[verify templates.create]
// r[verify tools.compose.create-from-template]
// r[verify templates.expand]
// r[verify templates.variables]
#[test]
fn create_from_template_expands_into_a_new_note_only() {
    let fx = Fx::new();
    templates(&fx);
    let out = fx
        .call(
            "create_from_template",
            json!({"template": "Meta/Templates/Meeting.md", "path": "Meetings/Budget review.md",
                   "variables": {"who": "Ann {{date}}"}}),
        )
        .unwrap();
    assert_eq!(out["path"], "Meetings/Budget review.md");
    let written = fx.get("Meetings/Budget review.md").unwrap();
    let now = chrono::DateTime::from_timestamp_millis(tc_tools::testing::NOW_MS)
        .unwrap()
        .with_timezone(&chrono::Local)
        .naive_local();
    let date = tc_periodic::moment::Format::new("D MMM YYYY")
        .unwrap()
        .format(now);
    let time = tc_periodic::moment::Format::new("h:mm A")
        .unwrap()
        .format(now);
    let weekday = now.format("%A").to_string();
    let week = tc_periodic::moment::Format::new("ww").unwrap().format(now);
    assert_eq!(
        written,
        format!(
            "---\ntype: meeting  # kept\n---\n# Budget review\nOn {date} at {time} with Ann {{{{date}}}} ({weekday}, week {week})\n<%* tR += tp.date.now() %>\n{{{{unknown}}}}\n"
        )
    );
    assert_eq!(out["bytes"], written.len());
    let again = fx
        .call(
            "create_from_template",
            json!({"template": "Meta/Templates/Meeting.md", "path": "Meetings/Budget review.md"}),
        )
        .unwrap_err();
    assert_eq!(again.code, ErrorCode::NoteExists);
    assert_eq!(fx.get("Meetings/Budget review.md").unwrap(), written);
    // Names in any case.
    fx.call(
        "create_from_template",
        json!({"template": "Meta/Templates/sub/Book.md", "path": "Books/Dune.md"}),
    )
    .unwrap();
    assert_eq!(fx.get("Books/Dune.md").unwrap(), "# Dune\n");
}

// r[verify templates.not-found]
#[test]
fn a_template_outside_the_folder_or_missing_is_not_found() {
    let fx = Fx::new();
    templates(&fx);
    for template in [
        "Meta/Other.md",
        "Meta/Templates/Gone.md",
        "Meta/Templates/../Other.md",
        ".obsidian/templates.json",
    ] {
        let err = fx
            .call(
                "create_from_template",
                json!({"template": template, "path": "New.md"}),
            )
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::TemplateNotFound, "{template}");
    }
    assert!(fx.get("New.md").is_none());
    let bare = Fx::new();
    bare.put("Templates/T.md", "x");
    assert_eq!(
        code(bare.call(
            "create_from_template",
            json!({"template": "Templates/T.md", "path": "New.md"})
        )),
        ErrorCode::TemplateNotFound
    );
}

// r[verify templates.format-unsupported]
// r[verify templates.settings.broken]
#[test]
fn a_format_not_written_or_broken_settings_write_nothing() {
    let fx = Fx::new();
    templates(&fx);
    fx.put("Meta/Templates/Stamp.md", "{{date:X}}\n");
    let err = fx
        .call(
            "create_from_template",
            json!({"template": "Meta/Templates/Stamp.md", "path": "New.md"}),
        )
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert!(fx.get("New.md").is_none());
    fx.put(".obsidian/templates.json", "[1, 2");
    let err = fx
        .call(
            "create_from_template",
            json!({"template": "Meta/Templates/Meeting.md", "path": "New.md"}),
        )
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert!(err.to_string().contains("templates.json"), "{err}");
    assert!(fx.get("New.md").is_none());
}

// r[verify templates.name]
/// A template is found by its vault path or by its name in the templates folder, with or
/// without `.md`; nothing outside the folder is reached that way.
#[test]
fn a_template_is_named_as_the_templates_picker_names_it() {
    for (template, expected) in [
        ("Meeting", "Meta/Templates/Meeting.md"),
        ("Meeting.md", "Meta/Templates/Meeting.md"),
        ("Meta/Templates/Meeting", "Meta/Templates/Meeting.md"),
        ("sub/Book", "Meta/Templates/sub/Book.md"),
    ] {
        let fx = Fx::new();
        templates(&fx);
        let out = fx
            .call(
                "create_from_template",
                json!({"template": template, "path": "New.md"}),
            )
            .unwrap();
        assert_eq!(out["template"], expected, "{template}");
        assert!(fx.get("New.md").is_some(), "{template}");
    }
    let fx = Fx::new();
    templates(&fx);
    for template in ["Other", "../Other", "Templates/Meeting"] {
        assert_eq!(
            code(fx.call(
                "create_from_template",
                json!({"template": template, "path": "New.md"}),
            )),
            ErrorCode::TemplateNotFound,
            "{template}"
        );
    }
}
