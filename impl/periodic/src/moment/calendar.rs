//! Weeks as moment.js counts them (spec/periodic.md `periodic.moment.weeks`): a week
//! convention is the first day of the week (`dow`, 0 = Sunday) and the day of January that
//! week 1 always holds (`7 + dow - doy`), exactly moment's `firstWeekOffset`, `weekOfYear`,
//! `weeksInYear` and `dayOfYearFromWeeks`, over chrono's proleptic Gregorian calendar.

use chrono::{Datelike, Days, NaiveDate};

/// A week convention, as a moment locale's `week: {dow, doy}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WeekSpec {
    /// The first day of the week, 0 = Sunday.
    pub dow: i64,
    /// moment's `doy`: week 1 is the week holding January `7 + dow - doy`.
    pub doy: i64,
}

/// moment's default locale `en`: weeks start on Sunday and week 1 holds January 1st.
pub const LOCALE: WeekSpec = WeekSpec { dow: 0, doy: 6 };

/// ISO 8601: weeks start on Monday and week 1 holds January 4th.
pub const ISO: WeekSpec = WeekSpec { dow: 1, doy: 4 };

pub fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

pub fn days_in_year(year: i64) -> i64 {
    if is_leap(year) { 366 } else { 365 }
}

/// Days in `month` (0-based, as moment counts months) of `year`.
pub fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        1 => {
            if is_leap(year) {
                29
            } else {
                28
            }
        }
        3 | 5 | 8 | 10 => 30,
        _ => 31,
    }
}

/// The date `day_of_year` (1-based) of `year`, when the calendar holds it.
pub fn from_ordinal(year: i64, day_of_year: i64) -> Option<NaiveDate> {
    let year = i32::try_from(year).ok()?;
    let day = u32::try_from(day_of_year).ok()?;
    NaiveDate::from_yo_opt(year, day)
}

/// The date `year-month-day` (month 0-based), when the calendar holds it.
pub fn from_ymd(year: i64, month: i64, day: i64) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(
        i32::try_from(year).ok()?,
        u32::try_from(month + 1).ok()?,
        u32::try_from(day).ok()?,
    )
}

/// The weekday, 0 = Sunday (moment's `day()`).
pub fn weekday(date: NaiveDate) -> i64 {
    i64::from(date.weekday().num_days_from_sunday())
}

/// Start of the first week minus start of the year, in days (moment's `firstWeekOffset`).
fn first_week_offset(year: i64, spec: WeekSpec) -> i64 {
    // The day of January that is always in the first week.
    let fwd = 7 + spec.dow - spec.doy;
    let jan = from_ymd(year, 0, fwd).map_or(0, weekday);
    let fwdlw = (7 + jan - spec.dow).rem_euclid(7);
    -fwdlw + fwd - 1
}

/// How many weeks `year` has under `spec`.
pub fn weeks_in_year(year: i64, spec: WeekSpec) -> i64 {
    let offset = first_week_offset(year, spec);
    let next = first_week_offset(year + 1, spec);
    (days_in_year(year) - offset + next) / 7
}

/// The week-year and week of `date` under `spec`.
pub fn week_of_year(date: NaiveDate, spec: WeekSpec) -> (i64, i64) {
    let year = i64::from(date.year());
    let offset = first_week_offset(year, spec);
    let week = (i64::from(date.ordinal()) - offset - 1).div_euclid(7) + 1;
    if week < 1 {
        (year - 1, week + weeks_in_year(year - 1, spec))
    } else if week > weeks_in_year(year, spec) {
        (year + 1, week - weeks_in_year(year, spec))
    } else {
        (year, week)
    }
}

/// The date of `weekday` (0 = Sunday) in `week` of week-year `year` under `spec`.
pub fn from_week(year: i64, week: i64, weekday: i64, spec: WeekSpec) -> Option<NaiveDate> {
    let local_weekday = (7 + weekday - spec.dow).rem_euclid(7);
    let day_of_year = 1 + 7 * (week - 1) + local_weekday + first_week_offset(year, spec);
    if day_of_year <= 0 {
        from_ordinal(year - 1, days_in_year(year - 1) + day_of_year)
    } else if day_of_year > days_in_year(year) {
        from_ordinal(year + 1, day_of_year - days_in_year(year))
    } else {
        from_ordinal(year, day_of_year)
    }
}

/// The first day of the week holding `date` under `spec`.
pub fn start_of_week(date: NaiveDate, spec: WeekSpec) -> NaiveDate {
    let back = (weekday(date) - spec.dow).rem_euclid(7);
    date.checked_sub_days(Days::new(back.unsigned_abs()))
        .unwrap_or(date)
}
