//! Periods and the paths of their notes (spec/periodic.md `## Periods and paths`,
//! `periodic.list`, `periodic.list.today`): a date's period, the note that names it, and
//! which vault paths are notes of a period.

use chrono::{Datelike, Months, NaiveDate};
use tc_tools::{ErrorCode, ToolError};
use tc_vault::path::VaultPath;

use crate::moment::calendar::{ISO, LOCALE, start_of_week};
use crate::settings::{Period, PeriodSettings, normalize_path};

// r[impl periodic.period]
/// The first day of the period of `date`.
pub fn period_start(settings: &PeriodSettings, date: NaiveDate) -> NaiveDate {
    let first_of_month = |d: NaiveDate| d.with_day(1).unwrap_or(d);
    match settings.period {
        Period::Daily => date,
        Period::Weekly => {
            let spec = if settings.format.uses_iso_weeks() {
                ISO
            } else {
                LOCALE
            };
            start_of_week(date, spec)
        }
        Period::Monthly => first_of_month(date),
        Period::Quarterly => {
            let month0 = date.month0() - date.month0() % 3;
            NaiveDate::from_ymd_opt(date.year(), month0 + 1, 1).unwrap_or(date)
        }
        Period::Yearly => NaiveDate::from_ymd_opt(date.year(), 1, 1).unwrap_or(date),
    }
}

/// The last day of the period that starts on `start`.
pub fn period_end(period: Period, start: NaiveDate) -> NaiveDate {
    let next = match period {
        Period::Daily => start.succ_opt(),
        Period::Weekly => start.checked_add_days(chrono::Days::new(7)),
        Period::Monthly => start.checked_add_months(Months::new(1)),
        Period::Quarterly => start.checked_add_months(Months::new(3)),
        Period::Yearly => start.checked_add_months(Months::new(12)),
    };
    next.and_then(|n| n.pred_opt()).unwrap_or(start)
}

/// `folder/name.md`, normalized as Obsidian does.
fn join(folder: &str, name: &str) -> String {
    normalize_path(&format!("{folder}/{name}.md"))
}

// r[impl periodic.path]
/// The path of the note of the period starting on `start`.
pub fn note_path(settings: &PeriodSettings, start: NaiveDate) -> Result<VaultPath, ToolError> {
    let name = settings.format.format_date(start);
    let raw = join(&settings.folder, &name);
    VaultPath::parse_note(&raw).map_err(|e| {
        ToolError::new(
            ErrorCode::PeriodicNotConfigured,
            format!(
                "the {} note's path {raw:?} (folder {:?}, format {:?}) is not a note path of this vault: {e}",
                settings.period.name(),
                settings.folder,
                settings.format_text
            ),
        )
    })
}

// r[impl periodic.list]
// r[impl periodic.list.today]
/// The first day of the period whose note `path` is, when it is one: its path below the
/// period's folder (without `.md`) read in the format, or its file name read in the format's
/// last part. A name read only with today's help is none.
pub fn note_period(settings: &PeriodSettings, path: &str, today: NaiveDate) -> Option<NaiveDate> {
    let below = if settings.folder.is_empty() {
        path
    } else {
        path.strip_prefix(settings.folder.as_str())?
            .strip_prefix('/')?
    };
    let stem = below.strip_suffix(".md")?;
    let read = |format: &crate::moment::Format, input: &str| {
        format
            .parse(input, today)
            .ok()
            .flatten()
            .filter(|p| !p.from_today)
            .map(|p| p.date)
    };
    let date = read(&settings.format, stem).or_else(|| {
        let name_format = settings.format.split_last_folder()?;
        let name = stem.rsplit('/').next().unwrap_or(stem);
        read(&name_format, name)
    })?;
    Some(period_start(settings, date))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::moment::Format;

    fn settings(period: Period, folder: &str, format: &str) -> PeriodSettings {
        PeriodSettings {
            period,
            folder: folder.to_owned(),
            format: Format::new(format).unwrap(),
            format_text: format.to_owned(),
            template: None,
            source: None,
        }
    }

    fn day(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap()
    }

    // r[verify periodic.period]
    #[test]
    fn a_period_starts_on_its_first_day_and_iso_weeks_on_monday() {
        let wed = day(2026, 12, 9);
        let weekly = settings(Period::Weekly, "", "gggg-[W]ww");
        assert_eq!(period_start(&weekly, wed), day(2026, 12, 6));
        assert_eq!(
            period_end(Period::Weekly, day(2026, 12, 6)),
            day(2026, 12, 12)
        );
        let iso = settings(Period::Weekly, "", "GGGG-[W]WW");
        assert_eq!(period_start(&iso, wed), day(2026, 12, 7));
        assert_eq!(
            note_path(&iso, day(2026, 12, 7)).unwrap().as_str(),
            "2026-W50.md"
        );
        let q = settings(Period::Quarterly, "", "YYYY-[Q]Q");
        assert_eq!(period_start(&q, wed), day(2026, 10, 1));
        assert_eq!(
            period_end(Period::Quarterly, day(2026, 10, 1)),
            day(2026, 12, 31)
        );
        let m = settings(Period::Monthly, "", "YYYY-MM");
        assert_eq!(period_start(&m, wed), day(2026, 12, 1));
        assert_eq!(
            period_end(Period::Monthly, day(2026, 2, 1)),
            day(2026, 2, 28)
        );
        let y = settings(Period::Yearly, "", "YYYY");
        assert_eq!(period_start(&y, wed), day(2026, 1, 1));
    }

    // r[verify periodic.path]
    #[test]
    fn the_path_is_the_folder_and_the_formatted_name_normalized() {
        let daily = settings(Period::Daily, "/Journal//", "YYYY/MM/YYYY-MM-DD");
        let s = PeriodSettings {
            folder: normalize_path(&daily.folder),
            ..daily
        };
        assert_eq!(
            note_path(&s, day(2026, 12, 5)).unwrap().as_str(),
            "Journal/2026/12/2026-12-05.md"
        );
        let hidden = settings(Period::Daily, ".obsidian", "YYYY");
        let err = note_path(&hidden, day(2026, 12, 5)).unwrap_err();
        assert_eq!(err.code, ErrorCode::PeriodicNotConfigured);
    }

    // r[verify periodic.list]
    // r[verify periodic.list.today]
    #[test]
    fn notes_of_a_period_are_recognized_by_their_names() {
        let today = day(2026, 12, 9);
        let s = settings(Period::Daily, "Journal", "YYYY/MM/YYYY-MM-DD");
        let read = |p: &str| note_period(&s, p, today);
        assert_eq!(
            read("Journal/2026/12/2026-12-05.md"),
            Some(day(2026, 12, 5))
        );
        // Moved out of its month folder: the file name still reads.
        assert_eq!(read("Journal/2026-12-05.md"), Some(day(2026, 12, 5)));
        assert_eq!(read("Journal/2026/12/2026-12-05 notes.md"), None);
        assert_eq!(read("Other/2026/12/2026-12-05.md"), None);
        assert_eq!(read("Journal/2026/12/2026-12-32.md"), None);
        let weekly = settings(Period::Weekly, "", "gggg-[W]ww");
        assert_eq!(
            note_period(&weekly, "2026-W49.md", today),
            Some(day(2026, 11, 29))
        );
        let no_year = settings(Period::Daily, "", "MM-DD");
        assert_eq!(note_period(&no_year, "12-05.md", today), None);
        let fragile = settings(Period::Daily, "", "YYYY/MM/DD");
        assert_eq!(
            note_period(&fragile, "2026/12/05.md", today),
            Some(day(2026, 12, 5))
        );
        // The file name alone ("05") would need today's year and month.
        assert_eq!(note_period(&fragile, "elsewhere/05.md", today), None);
    }
}
