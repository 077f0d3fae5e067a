//! Template expansion as the core Templates plugin does it (spec/periodic.md
//! `templates.expand`, `templates.variables`, `templates.format-unsupported`,
//! `periodic.template`): one pass over the text, each `{{…}}` replaced at most once, so a
//! value put in is never expanded again; Templater's `<% … %>` is text here.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use serde_json::json;
use tc_tools::{ErrorCode, ToolError};

use crate::moment::{Format, Unsupported};

/// What a template's placeholders are filled with.
#[derive(Debug)]
pub struct Fill<'a> {
    /// The new note's file name without `.md`.
    pub title: &'a str,
    /// The moment `{{date}}` and `{{time}}` write.
    pub at: NaiveDateTime,
    pub date_format: &'a Format,
    pub time_format: &'a Format,
    pub variables: &'a BTreeMap<String, String>,
}

fn unsupported(error: Unsupported) -> ToolError {
    ToolError::new(
        ErrorCode::InvalidInput,
        format!("the template's date format cannot be written: {error}"),
    )
    .with_details(json!({"reason": "template_format", "token": error.token}))
}

/// The value of the placeholder whose text between the braces is `inner`, `None` when it is
/// not one this expansion fills.
fn value(inner: &str, fill: &Fill<'_>) -> Result<Option<String>, ToolError> {
    let name = inner.trim();
    if let Some(value) = fill.variables.get(name) {
        return Ok(Some(value.clone()));
    }
    if name.eq_ignore_ascii_case("title") {
        return Ok(Some(fill.title.to_owned()));
    }
    let (head, format) = match inner.split_once(':') {
        Some((head, format)) => (head.trim(), Some(format.trim())),
        None => (name, None),
    };
    let default = if head.eq_ignore_ascii_case("date") {
        fill.date_format
    } else if head.eq_ignore_ascii_case("time") {
        fill.time_format
    } else {
        return Ok(None);
    };
    let text = match format.filter(|f| !f.is_empty()) {
        Some(format) => Format::new(format).map_err(unsupported)?.format(fill.at),
        None => default.format(fill.at),
    };
    Ok(Some(text))
}

// r[impl templates.expand]
// r[impl templates.variables]
// r[impl templates.format-unsupported]
/// `template` with its placeholders filled.
pub fn expand(template: &str, fill: &Fill<'_>) -> Result<String, ToolError> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let filled = match after.find("}}") {
            Some(close) if !after[..close].contains('\n') => {
                value(&after[..close], fill)?.map(|v| (v, close))
            }
            _ => None,
        };
        match filled {
            Some((value, close)) => {
                out.push_str(&rest[..open]);
                out.push_str(&value);
                rest = &after[close + 2..];
            }
            None => {
                // Not a placeholder here: keep one brace and look again from the next one,
                // as a regular expression would (`{{{date}}}` is `{` + the date + `}`).
                out.push_str(&rest[..open + 1]);
                rest = &rest[open + 1..];
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;
    use proptest::prelude::*;

    fn at() -> NaiveDateTime {
        NaiveDate::from_ymd_opt(2026, 12, 5)
            .unwrap()
            .and_hms_opt(9, 7, 3)
            .unwrap()
    }

    fn run(template: &str, variables: &[(&str, &str)]) -> Result<String, ToolError> {
        let date = Format::new("YYYY-MM-DD").unwrap();
        let time = Format::new("HH:mm").unwrap();
        let variables: BTreeMap<String, String> = variables
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        expand(
            template,
            &Fill {
                title: "2026-12-05",
                at: at(),
                date_format: &date,
                time_format: &time,
                variables: &variables,
            },
        )
    }

    // r[verify templates.expand]
    #[test]
    fn the_core_placeholders_are_filled() {
        assert_eq!(
            run("# {{title}}\n{{date}} {{time}} {{ Date }} {{TIME}}\n", &[]).unwrap(),
            "# 2026-12-05\n2026-12-05 09:07 2026-12-05 09:07\n"
        );
        assert_eq!(
            run(
                "{{date:dddd, MMMM D}} | {{time:YYYY}} | {{ date : [W]ww }}",
                &[]
            )
            .unwrap(),
            "Saturday, December 5 | 2026 | W49"
        );
        assert_eq!(run("{{{date}}}", &[]).unwrap(), "{2026-12-05}");
    }

    // r[verify templates.variables]
    #[test]
    fn variables_fill_their_names_and_nothing_else_changes() {
        assert_eq!(
            run(
                "{{ who }} met {{what}} on {{date}}; {{other}} <% tp.date.now() %>",
                &[("who", "Ann"), ("what", "{{date}}")]
            )
            .unwrap(),
            "Ann met {{date}} on 2026-12-05; {{other}} <% tp.date.now() %>"
        );
        assert_eq!(run("{{title}}", &[("title", "Mine")]).unwrap(), "Mine");
        assert_eq!(run("{{date\n}}", &[]).unwrap(), "{{date\n}}");
    }

    // r[verify templates.format-unsupported]
    #[test]
    fn a_format_with_a_token_not_written_is_refused() {
        let err = run("{{date:X}}", &[]).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidInput);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        // r[verify templates.variables]
        #[test]
        fn text_without_placeholders_is_copied(text in "[^{}]{0,40}|[a-z{}:<%> ]{0,40}") {
            let out = run(&text, &[]);
            if !text.contains("{{") {
                prop_assert_eq!(out.unwrap(), text);
            }
        }
    }
}
