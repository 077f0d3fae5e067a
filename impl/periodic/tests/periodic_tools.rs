//! The periodic note tools on a vault laid out as a person's (spec/periodic.md `## Settings`,
//! `## Periods and paths`, `## The periodic note tools`): daily notes nested by year and
//! month from core Daily notes, weekly notes from the Periodic Notes plugin, templates with
//! moment formats and Templater code.

use serde_json::{Value, json};
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

const DAILY_TEMPLATE: &str = "---\ntags: [daily]  # journal\n---\n# {{date:dddd, MMMM D}}\n\n## Log\n\n<% tp.file.title %>\n";

/// Daily notes in `Journal/2026/12/2026-12-05.md` (core Daily notes), weekly notes
/// `gggg-[W]ww` (the Periodic Notes plugin), templates in `Templates/`.
fn person(fx: &Fx) {
    fx.put(
        ".obsidian/daily-notes.json",
        r#"{"folder": "Journal", "format": "YYYY/MM/YYYY-MM-DD", "template": "Templates/Daily", "autorun": false}"#,
    );
    fx.put(
        ".obsidian/plugins/periodic-notes/data.json",
        r#"{"showGettingStartedBanner": false,
            "daily": {"enabled": false, "format": "", "folder": "", "template": ""},
            "weekly": {"enabled": true, "format": "gggg-[W]ww", "folder": "Journal/Weekly", "template": "Templates/Weekly.md"},
            "monthly": {"enabled": false}}"#,
    );
    fx.put(
        ".obsidian/community-plugins.json",
        r#"["periodic-notes", "calendar"]"#,
    );
    fx.put(
        ".obsidian/templates.json",
        r#"{"folder": "Templates", "dateFormat": "YYYY-MM-DD", "timeFormat": "HH:mm"}"#,
    );
    fx.put("Templates/Daily.md", DAILY_TEMPLATE);
    fx.put("Templates/Weekly.md", "# Week of {{date}}\n");
    fx.put(
        "Journal/2026/12/2026-12-05.md",
        "# Saturday, December 5\n\n## Log\n- coffee\n\n## Ideas\nnone\n",
    );
}

fn person_vault() -> Fx {
    let fx = Fx::new();
    person(&fx);
    fx
}

// r[verify periodic.get]
// r[verify periodic.settings.daily]
// r[verify periodic.path]
#[test]
fn get_reads_the_note_where_the_settings_place_it() {
    let fx = person_vault();
    let out = fx
        .call(
            "get_periodic_note",
            json!({"period": "daily", "date": "2026-12-05"}),
        )
        .unwrap();
    assert_eq!(out["path"], "Journal/2026/12/2026-12-05.md");
    assert_eq!(out["start"], "2026-12-05");
    assert_eq!(out["exists"], true);
    assert!(out["content"].as_str().unwrap().starts_with("# Saturday"));
    assert!(out["content_hash"].is_string());
    let out = fx
        .call(
            "get_periodic_note",
            json!({"period": "daily", "date": "2026-12-06"}),
        )
        .unwrap();
    assert_eq!(out["path"], "Journal/2026/12/2026-12-06.md");
    assert_eq!(out["exists"], false);
    assert!(out["content"].is_null());
    assert!(
        fx.get("Journal/2026/12/2026-12-06.md").is_none(),
        "get never writes"
    );
}

// r[verify periodic.settings.plugin]
// r[verify periodic.period]
#[test]
fn weekly_notes_follow_the_plugin_and_name_the_week_by_its_sunday() {
    let fx = person_vault();
    for date in ["2026-11-29", "2026-12-02", "2026-12-05"] {
        let out = fx
            .call(
                "get_periodic_note",
                json!({"period": "weekly", "date": date}),
            )
            .unwrap();
        assert_eq!(out["path"], "Journal/Weekly/2026-W49.md", "{date}");
        assert_eq!(out["start"], "2026-11-29");
    }
    let out = fx
        .call(
            "get_periodic_note",
            json!({"period": "weekly", "date": "2026-12-31"}),
        )
        .unwrap();
    assert_eq!(
        out["path"], "Journal/Weekly/2027-W01.md",
        "the week holding January 1st"
    );
}

// r[verify periodic.settings.not-configured]
#[test]
fn a_period_no_settings_enable_is_refused() {
    let fx = person_vault();
    for period in ["monthly", "quarterly", "yearly"] {
        let err = fx
            .call(
                "create_periodic_note",
                json!({"period": period, "date": "2026-12-05"}),
            )
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::PeriodicNotConfigured, "{period}");
        assert!(
            err.to_string().contains("periodic-notes/data.json"),
            "{err}"
        );
    }
    // With no settings at all, daily notes are on with Obsidian's defaults.
    let bare = Fx::new();
    let out = bare
        .call(
            "find_or_create_periodic_note",
            json!({"period": "daily", "date": "2026-12-05"}),
        )
        .unwrap();
    assert_eq!(out["path"], "2026-12-05.md");
    assert_eq!(out["created"], true);
    assert_eq!(bare.get("2026-12-05.md").unwrap(), "");
    assert_eq!(
        code(bare.call("get_periodic_note", json!({"period": "weekly"}))),
        ErrorCode::PeriodicNotConfigured
    );
}

// r[verify periodic.create]
// r[verify periodic.template]
// r[verify tools.compose.create-periodic-note]
#[test]
fn create_expands_the_template_and_refuses_an_existing_note() {
    let fx = person_vault();
    let out = fx
        .call(
            "create_periodic_note",
            json!({"period": "daily", "date": "2026-12-06"}),
        )
        .unwrap();
    assert_eq!(out["created"], true);
    let written = fx.get("Journal/2026/12/2026-12-06.md").unwrap();
    assert_eq!(
        written,
        "---\ntags: [daily]  # journal\n---\n# Sunday, December 6\n\n## Log\n\n<% tp.file.title %>\n"
    );
    assert_eq!(out["content"], written.as_str());
    let err = fx
        .call(
            "create_periodic_note",
            json!({"period": "daily", "date": "2026-12-06"}),
        )
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::NoteExists);
    assert_eq!(fx.get("Journal/2026/12/2026-12-06.md").unwrap(), written);
    // A weekly note's {{date}} is its week's first day.
    fx.call(
        "create_periodic_note",
        json!({"period": "weekly", "date": "2026-12-02"}),
    )
    .unwrap();
    assert_eq!(
        fx.get("Journal/Weekly/2026-W49.md").unwrap(),
        "# Week of 2026-11-29\n"
    );
}

// r[verify periodic.find-or-create]
// r[verify tools.compose.find-or-create-periodic-note]
#[test]
fn find_or_create_answers_the_note_or_makes_it() {
    let fx = person_vault();
    let before = fx.get("Journal/2026/12/2026-12-05.md").unwrap();
    let out = fx
        .call(
            "find_or_create_periodic_note",
            json!({"period": "daily", "date": "2026-12-05"}),
        )
        .unwrap();
    assert_eq!(out["created"], false);
    assert_eq!(out["content"], before.as_str());
    let out = fx
        .call(
            "find_or_create_periodic_note",
            json!({"period": "daily", "date": "2026-12-07"}),
        )
        .unwrap();
    assert_eq!(out["created"], true);
    assert!(
        fx.get("Journal/2026/12/2026-12-07.md")
            .unwrap()
            .contains("# Monday, December 7")
    );
    let again = fx
        .call(
            "find_or_create_periodic_note",
            json!({"period": "daily", "date": "2026-12-07"}),
        )
        .unwrap();
    assert_eq!(again["created"], false);
    assert_eq!(again["content_hash"], out["content_hash"]);
}

// r[verify periodic.append]
#[test]
fn append_adds_lines_under_a_heading_making_what_is_missing() {
    let fx = person_vault();
    let out = fx
        .call(
            "append_to_periodic_note",
            json!({"period": "daily", "date": "2026-12-05", "heading": "Log", "content": "- tea\n- walk"}),
        )
        .unwrap();
    assert_eq!(out["created"], false);
    assert_eq!(out["line"], 5);
    assert_eq!(
        fx.get("Journal/2026/12/2026-12-05.md").unwrap(),
        "# Saturday, December 5\n\n## Log\n- coffee\n- tea\n- walk\n\n## Ideas\nnone\n"
    );
    // A missing heading is made at the end.
    let out = fx
        .call(
            "append_to_periodic_note",
            json!({"period": "daily", "date": "2026-12-05", "heading": "Gratitude", "content": "sun"}),
        )
        .unwrap();
    assert_eq!(out["line"], 12);
    assert!(
        fx.get("Journal/2026/12/2026-12-05.md")
            .unwrap()
            .ends_with("## Ideas\nnone\n\n## Gratitude\nsun\n")
    );
    // A missing note is made from its template first.
    let out = fx
        .call(
            "append_to_periodic_note",
            json!({"period": "daily", "date": "2026-12-08", "heading": "Log", "content": "- started"}),
        )
        .unwrap();
    assert_eq!(out["created"], true);
    assert_eq!(
        fx.get("Journal/2026/12/2026-12-08.md").unwrap(),
        "---\ntags: [daily]  # journal\n---\n# Tuesday, December 8\n\n## Log\n\n<% tp.file.title %>\n- started\n"
    );
    // Without a heading, at the end.
    fx.call(
        "append_to_periodic_note",
        json!({"period": "daily", "date": "2026-12-08", "content": "end"}),
    )
    .unwrap();
    assert!(
        fx.get("Journal/2026/12/2026-12-08.md")
            .unwrap()
            .ends_with("<% tp.file.title %>\n- started\nend\n")
    );
}

// r[verify periodic.append.anchor]
#[test]
fn an_ambiguous_or_missing_heading_path_writes_nothing() {
    let fx = person_vault();
    fx.put(
        "Journal/2026/12/2026-12-09.md",
        "# A\n## Log\n# B\n## Log\n",
    );
    let ask = |heading: &str| {
        fx.call(
            "append_to_periodic_note",
            json!({"period": "daily", "date": "2026-12-09", "heading": heading, "content": "x"}),
        )
    };
    let err = ask("Log").unwrap_err();
    assert_eq!(err.code, ErrorCode::AnchorAmbiguous);
    assert_eq!(
        err.details.as_ref().unwrap()["candidates"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(code(ask("C::Log")), ErrorCode::AnchorNotFound);
    assert_eq!(
        fx.get("Journal/2026/12/2026-12-09.md").unwrap(),
        "# A\n## Log\n# B\n## Log\n"
    );
    ask("B::Log").unwrap();
    assert_eq!(
        fx.get("Journal/2026/12/2026-12-09.md").unwrap(),
        "# A\n## Log\n# B\n## Log\nx\n"
    );
    assert_eq!(
        code(fx.call(
            "append_to_periodic_note",
            json!({"period": "daily", "date": "2026-12-09", "content": " \n "}),
        )),
        ErrorCode::ValidationError
    );
}

// r[verify periodic.date]
#[test]
fn the_date_is_a_day_and_defaults_to_the_local_today() {
    let fx = person_vault();
    for bad in ["2026-13-01", "2026-02-30", "26-12-05", "2026-12-5", "today"] {
        assert_eq!(
            code(fx.call("get_periodic_note", json!({"period": "daily", "date": bad}))),
            ErrorCode::ValidationError,
            "{bad}"
        );
    }
    let out = fx
        .call("get_periodic_note", json!({"period": "daily"}))
        .unwrap();
    let local = chrono::DateTime::from_timestamp_millis(tc_tools::testing::NOW_MS)
        .unwrap()
        .with_timezone(&chrono::Local)
        .date_naive();
    assert_eq!(out["start"], local.format("%Y-%m-%d").to_string());
}

// r[verify periodic.settings.wins]
// r[verify periodic.settings.plugin-off]
#[test]
fn the_plugin_wins_for_daily_notes_while_it_is_on() {
    let fx = person_vault();
    fx.put(
        ".obsidian/plugins/periodic-notes/data.json",
        r#"{"calendarSets": [
              {"id": "Other", "day": {"enabled": true, "format": "YYYY", "folder": "X"}},
              {"id": "Default", "day": {"enabled": true, "openAtStartup": false, "format": "DD.MM.YYYY", "folder": "Days", "templatePath": ""},
               "month": {"enabled": true, "format": "", "folder": "Months"}}],
            "activeCalendarSet": "Default"}"#,
    );
    let path = |period: &str| {
        fx.call(
            "get_periodic_note",
            json!({"period": period, "date": "2026-12-05"}),
        )
        .map(|out| out["path"].as_str().unwrap().to_owned())
    };
    assert_eq!(path("daily").unwrap(), "Days/05.12.2026.md");
    assert_eq!(
        path("monthly").unwrap(),
        "Months/2026-12.md",
        "the plugin's default format"
    );
    // Turned off in community-plugins.json: core Daily notes again, and no monthly notes.
    fx.put(".obsidian/community-plugins.json", r#"["calendar"]"#);
    assert_eq!(path("daily").unwrap(), "Journal/2026/12/2026-12-05.md");
    assert_eq!(
        path("monthly").unwrap_err().code,
        ErrorCode::PeriodicNotConfigured
    );
    // Core Daily notes turned off too.
    fx.put(
        ".obsidian/core-plugins.json",
        r#"{"daily-notes": false, "templates": true}"#,
    );
    assert_eq!(
        path("daily").unwrap_err().code,
        ErrorCode::PeriodicNotConfigured
    );
    fx.put(".obsidian/core-plugins.json", r#"["daily-notes"]"#);
    assert!(path("daily").is_ok());
}

// r[verify periodic.settings.broken]
// r[verify periodic.settings.template-path]
#[test]
fn broken_settings_and_missing_templates_are_refused_before_writing() {
    let fx = person_vault();
    fx.remove("Templates/Daily.md");
    let err = fx
        .call(
            "create_periodic_note",
            json!({"period": "daily", "date": "2026-12-06"}),
        )
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::TemplateNotFound);
    assert!(fx.get("Journal/2026/12/2026-12-06.md").is_none());
    fx.put(".obsidian/daily-notes.json", "{\"folder\": ");
    let err = fx
        .call("get_periodic_note", json!({"period": "daily"}))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::PeriodicNotConfigured);
    assert!(err.to_string().contains("daily-notes.json"), "{err}");
    fx.put(
        ".obsidian/daily-notes.json",
        r#"{"format": "YYYY-MM-DD X"}"#,
    );
    let err = fx
        .call("get_periodic_note", json!({"period": "daily"}))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::PeriodicNotConfigured);
    assert!(err.to_string().contains("\"X\""), "{err}");
    fx.put(".obsidian/daily-notes.json", r#"{"folder": ".obsidian/x"}"#);
    assert_eq!(
        code(fx.call("create_periodic_note", json!({"period": "daily"}))),
        ErrorCode::PeriodicNotConfigured
    );
}

fn listed(out: &Value) -> Vec<(String, String)> {
    out["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["start"].as_str().unwrap().to_owned(),
                n["path"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

// r[verify periodic.list]
// r[verify periodic.list.today]
#[test]
fn list_names_the_notes_that_read_as_dates_in_date_order() {
    let fx = person_vault();
    fx.put("Journal/2026/11/2026-11-30.md", "");
    fx.put("Journal/2026-12-01.md", "moved out of its month folder\n");
    fx.put("Journal/2026/12/2026-12-05 meeting.md", "");
    fx.put("Journal/2026/12/2026-12-32.md", "");
    fx.put("Journal/Weekly/2026-W48.md", "");
    fx.put("Journal/Weekly/2026-W49.md", "");
    fx.put("Journal/Weekly/2026-W50.md", "");
    fx.put("Elsewhere/2026-12-02.md", "");
    indexed(&fx);
    let out = fx
        .call("list_periodic_notes", json!({"period": "daily"}))
        .unwrap();
    assert_eq!(
        listed(&out),
        [
            (
                "2026-11-30".to_owned(),
                "Journal/2026/11/2026-11-30.md".to_owned()
            ),
            ("2026-12-01".to_owned(), "Journal/2026-12-01.md".to_owned()),
            (
                "2026-12-05".to_owned(),
                "Journal/2026/12/2026-12-05.md".to_owned()
            ),
        ]
    );
    let out = fx
        .call(
            "list_periodic_notes",
            json!({"period": "daily", "from": "2026-12-01", "to": "2026-12-04"}),
        )
        .unwrap();
    assert_eq!(listed(&out).len(), 1);
    // A week is listed when it meets the range.
    let out = fx
        .call(
            "list_periodic_notes",
            json!({"period": "weekly", "from": "2026-12-01", "to": "2026-12-06"}),
        )
        .unwrap();
    assert_eq!(
        listed(&out),
        [
            (
                "2026-11-29".to_owned(),
                "Journal/Weekly/2026-W49.md".to_owned()
            ),
            (
                "2026-12-06".to_owned(),
                "Journal/Weekly/2026-W50.md".to_owned()
            ),
        ]
    );
    assert_eq!(
        code(fx.call(
            "list_periodic_notes",
            json!({"period": "daily", "from": "Dec 1"})
        )),
        ErrorCode::ValidationError
    );
    // Names that need today's year are not periodic notes.
    fx.put(
        ".obsidian/daily-notes.json",
        r#"{"folder": "Journal", "format": "MM-DD"}"#,
    );
    fx.put("Journal/12-05.md", "");
    let out = fx
        .call("list_periodic_notes", json!({"period": "daily"}))
        .unwrap();
    assert!(listed(&out).is_empty(), "{out}");
}

// r[verify periodic.list.acl]
#[test]
fn list_leaves_out_what_the_caller_may_not_read_and_pages() {
    let acl = AclConfig {
        read_paths: Some(vec!["Journal/**".to_owned()]),
        ..AclConfig::default()
    };
    let fx = Fx::with(Some(acl), Vec::new());
    let folder = format!("Journal/{}", "deep folder name ".repeat(12).trim());
    fx.put(
        ".obsidian/daily-notes.json",
        &format!(r#"{{"folder": "{folder}"}}"#),
    );
    fx.put(
        ".obsidian/plugins/periodic-notes/data.json",
        r#"{"monthly": {"enabled": true}}"#,
    );
    for day in 0..400u64 {
        let date = chrono::NaiveDate::from_ymd_opt(2025, 1, 1).unwrap() + chrono::Days::new(day);
        fx.put(&format!("{folder}/{date}.md"), "");
    }
    fx.put(
        "2026-01.md",
        "a monthly note outside what the caller may read\n",
    );
    indexed(&fx);
    let out = fx
        .call("list_periodic_notes", json!({"period": "monthly"}))
        .unwrap();
    assert!(listed(&out).is_empty());
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut args = json!({"period": "daily"});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let out = fx.call("list_periodic_notes", args).unwrap();
        seen.extend(listed(&out));
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
}

// r[verify periodic.find-or-create]
// r[verify periodic.get]
#[test]
fn each_tool_needs_its_scopes_and_find_or_create_both() {
    use tc_tools::CallerContext;
    use tc_vault::acl::Scopes;
    let fx = person_vault();
    let args = json!({"period": "daily", "date": "2026-12-06"});
    let reader = CallerContext::new("stdio", Scopes::granted(["read:periodic"]));
    let writer = CallerContext::new("stdio", Scopes::granted(["write:periodic"]));
    assert!(
        fx.call_as(&reader, "get_periodic_note", args.clone())
            .is_ok()
    );
    for who in [&reader, &writer] {
        assert_eq!(
            code(fx.call_as(who, "find_or_create_periodic_note", args.clone())),
            ErrorCode::AclDenied
        );
    }
    assert_eq!(
        code(fx.call_as(&reader, "create_periodic_note", args.clone())),
        ErrorCode::AclDenied
    );
    assert!(fx.get("Journal/2026/12/2026-12-06.md").is_none());
    let both = CallerContext::new(
        "stdio",
        Scopes::granted(["read:periodic", "write:periodic"]),
    );
    assert!(
        fx.call_as(&both, "find_or_create_periodic_note", args)
            .is_ok()
    );
}
