//! moment.js formats against moment.js itself (spec/periodic.md `## Formats`): the table in
//! fixtures/moment_table.json was written by moment 2.29.4 (the version Obsidian bundles)
//! through fixtures/moment_table.mjs, for every format there on dates around year and week
//! boundaries and leap days, and for strict parses of those outputs and of hand-made inputs
//! (padding, names in any case, overflows, weeks 53 and 54, a weekday that does not match).

use chrono::{NaiveDate, NaiveDateTime};
use serde_json::Value;
use tc_periodic::moment::Format;

fn table() -> Value {
    serde_json::from_str(include_str!("fixtures/moment_table.json")).unwrap()
}

// r[verify periodic.moment.tokens]
// r[verify periodic.moment.format]
// r[verify periodic.moment.weeks]
#[test]
fn every_format_writes_what_moment_writes() {
    let table = table();
    let time = table["time"].as_str().unwrap();
    let dates: Vec<NaiveDateTime> = table["dates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            NaiveDateTime::parse_from_str(
                &format!("{}{time}", d.as_str().unwrap()),
                "%Y-%m-%dT%H:%M:%S%.3f",
            )
            .unwrap()
        })
        .collect();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (format, outputs) in table["format"].as_object().unwrap() {
        let parsed = Format::new(format).unwrap_or_else(|e| panic!("{format:?}: {e}"));
        for (at, expected) in dates.iter().zip(outputs.as_array().unwrap()) {
            let got = parsed.format(*at);
            if got != expected.as_str().unwrap() {
                wrong.push(format!("{format:?} on {at}: {got:?}, moment {expected}"));
            }
            checked += 1;
        }
    }
    assert!(checked > 5_000, "{checked}");
    assert!(
        wrong.is_empty(),
        "{} of {checked} differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

// r[verify periodic.moment.parse]
#[test]
fn every_strict_parse_agrees_with_moment() {
    let table = table();
    let today = NaiveDate::from_ymd_opt(2026, 12, 9).unwrap();
    let mut wrong = Vec::new();
    let mut valid = 0;
    let rows = table["parse"].as_array().unwrap();
    for row in rows {
        let (format, input) = (row[0].as_str().unwrap(), row[1].as_str().unwrap());
        let expected = row[2].as_str();
        let got = Format::new(format)
            .unwrap()
            .parse(input, today)
            .unwrap_or_else(|e| panic!("{format:?}: {e}"))
            .map(|p| p.date.format("%Y-%m-%d").to_string());
        valid += usize::from(expected.is_some());
        if got.as_deref() != expected {
            wrong.push(format!(
                "{format:?} reading {input:?}: {got:?}, moment {expected:?}"
            ));
        }
    }
    // Both kinds are in the table.
    assert!(
        valid > 1_000 && rows.len() - valid > 500,
        "{valid} of {}",
        rows.len()
    );
    assert!(
        wrong.is_empty(),
        "{} of {} differ:\n{}",
        wrong.len(),
        rows.len(),
        wrong.join("\n")
    );
}
