//! moment.js formats against dates computed independently (spec/periodic.md `## Formats`):
//! chrono's own `strftime` fields (ISO weeks included) and moment's `en` locale weeks worked
//! out from their definition (a week runs Sunday to Saturday and is numbered in the year of
//! its Saturday, so week 1 holds January 1st), on random days of four centuries.

use chrono::{Datelike, Days, NaiveDate};
use proptest::prelude::*;
use tc_periodic::moment::Format;

fn day() -> impl Strategy<Value = NaiveDate> {
    // 1900-01-01 .. 2299-12-31
    (0u64..146_097).prop_map(|n| NaiveDate::from_ymd_opt(1900, 1, 1).unwrap() + Days::new(n))
}

fn fmt(format: &str, date: NaiveDate) -> String {
    Format::new(format).unwrap().format_date(date)
}

/// The `en` locale week-year and week of `date`: those of the Saturday ending its week.
fn locale_week(date: NaiveDate) -> (i32, u32) {
    let saturday = date + Days::new(u64::from(6 - date.weekday().num_days_from_sunday()));
    (saturday.year(), (saturday.ordinal() - 1) / 7 + 1)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    // r[verify periodic.moment.format]
    // r[verify periodic.moment.weeks]
    #[test]
    fn fields_are_the_calendar_s(date in day()) {
        prop_assert_eq!(fmt("YYYY-MM-DD", date), date.format("%Y-%m-%d").to_string());
        prop_assert_eq!(fmt("GGGG-[W]WW", date), date.format("%G-W%V").to_string());
        prop_assert_eq!(fmt("DDDD E d", date), date.format("%j %u %w").to_string());
        prop_assert_eq!(fmt("dddd ddd MMMM MMM", date), date.format("%A %a %B %b").to_string());
        prop_assert_eq!(fmt("Q", date), date.month().div_ceil(3).to_string());
        let (year, week) = locale_week(date);
        prop_assert_eq!(fmt("gggg-[W]ww", date), format!("{year:04}-W{week:02}"));
        prop_assert_eq!(fmt("w", date), week.to_string());
    }

    // r[verify periodic.moment.parse]
    #[test]
    fn a_written_date_reads_back(date in day()) {
        let today = NaiveDate::from_ymd_opt(2026, 12, 9).unwrap();
        let back = |format: &str| {
            let f = Format::new(format).unwrap();
            f.parse(&f.format_date(date), today).unwrap()
        };
        for format in ["YYYY-MM-DD", "YYYY/MM/YYYY-MM-DD", "dddd, MMMM Do YYYY", "YYYY-DDDD", "GGGG-[W]WW-E", "gggg-ww-e"] {
            let parsed = back(format).unwrap();
            prop_assert_eq!(parsed.date, date, "{}", format);
            prop_assert!(!parsed.from_today);
        }
        // A week's note reads back as the week's first day: Sunday, or Monday for ISO weeks.
        let sunday = date - Days::new(u64::from(date.weekday().num_days_from_sunday()));
        prop_assert_eq!(back("gggg-[W]ww").unwrap().date, sunday);
        let monday = date - Days::new(u64::from(date.weekday().num_days_from_monday()));
        prop_assert_eq!(back("GGGG-[W]WW").unwrap().date, monday);
        prop_assert_eq!(back("YYYY-MM").unwrap().date, date.with_day(1).unwrap());
        prop_assert_eq!(back("MM-DD").unwrap().from_today, true);
    }

    // r[verify periodic.moment.parse]
    #[test]
    fn reading_never_panics(format in "[-YMDdwWgGQ/\\[\\] ]{0,12}", input in "[0-9a-zA-Z /-]{0,16}") {
        if let Ok(f) = Format::new(&format) {
            let _ = f.parse(&input, NaiveDate::from_ymd_opt(2026, 1, 1).unwrap());
        }
    }
}
