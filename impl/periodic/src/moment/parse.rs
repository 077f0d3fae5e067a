//! moment.js strict parsing (`moment(input, format, true)`) of the date tokens
//! (spec/periodic.md `periodic.moment.parse`): each token must match at the start of what is
//! left, with moment's strict regular expression for it (`YYYY` four digits, `MM` two, `M`
//! one or two, greedily; month and weekday names in any case, the longest first); nothing may
//! be left over; then the fields are resolved as moment's `configFromArray` does (week fields
//! only without a month or a day, a day of the year over the month and day, the missing
//! leading fields from today, the rest the lowest) and overflows and a weekday that does not
//! match the date are refused.

use chrono::{Datelike, NaiveDate};

use super::calendar::{
    ISO, LOCALE, WeekSpec, days_in_month, days_in_year, from_ordinal, from_week, from_ymd,
    week_of_year, weekday, weeks_in_year,
};
use super::{Format, MONTHS, Token, Unit, Unsupported, WEEKDAYS};

/// A parsed date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parsed {
    pub date: NaiveDate,
    /// Whether a field of the date came from today (the input did not say it).
    pub from_today: bool,
}

/// The fields the tokens set, as moment's `_a`, `_dayOfYear` and `_w` hold them.
#[derive(Debug, Default)]
struct Fields {
    year: Option<i64>,
    /// 0-based, as moment's.
    month: Option<i64>,
    day: Option<i64>,
    day_of_year: Option<i64>,
    hour: Option<i64>,
    minute: Option<i64>,
    second: Option<i64>,
    week: WeekFields,
    any_week: bool,
}

/// moment's `_w`: `gg`, `w`, `d`, `e` (locale weeks) and `GG`, `W`, `E` (ISO weeks).
#[derive(Debug, Default)]
struct WeekFields {
    gg: Option<i64>,
    w: Option<i64>,
    d: Option<i64>,
    e: Option<i64>,
    iso_gg: Option<i64>,
    iso_w: Option<i64>,
    iso_e: Option<i64>,
}

/// Up to `max` ASCII digits at the start of `s` (greedy), at least `min`: value and length.
fn digits(s: &str, min: usize, max: usize) -> Option<(i64, usize)> {
    let n = s.bytes().take(max).take_while(u8::is_ascii_digit).count();
    if n < min {
        return None;
    }
    s[..n].parse().ok().map(|v| (v, n))
}

/// moment's `parseTwoDigitYear`.
fn two_digit_year(v: i64) -> i64 {
    v + if v > 68 { 1900 } else { 2000 }
}

/// The longest of `names` that starts `s`, in any ASCII case: its index and length.
fn name(s: &str, names: &[&str]) -> Option<(i64, usize)> {
    names
        .iter()
        .enumerate()
        .filter(|(_, n)| {
            s.get(..n.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(n))
        })
        .max_by_key(|(_, n)| n.len())
        .map(|(i, n)| (i as i64, n.len()))
}

/// `\d{1,2}(th|st|nd|rd)` at the start of `s`: the day and the length.
fn day_ordinal(s: &str) -> Option<(i64, usize)> {
    let n = s.bytes().take(2).take_while(u8::is_ascii_digit).count();
    (1..=n).rev().find_map(|len| {
        let suffix = s.get(len..len + 2)?;
        matches!(suffix, "th" | "st" | "nd" | "rd")
            .then(|| s[..len].parse().ok().map(|v| (v, len + 2)))?
    })
}

/// moment's name of a token, for a refusal.
fn token_text(unit: Unit) -> String {
    use Unit::*;
    let text = match unit {
        YearY => "Y",
        Year(n) | Month(n) | Day(n) | DayOfYear(n) | Week(n) | IsoWeek(n) | WeekYear(n)
        | IsoWeekYear(n) | Hour(n) | Hour12(n) | Hour24(n) | Minute(n) | Second(n)
        | Fraction(n) => {
            let c = match unit {
                Year(_) => 'Y',
                Month(_) => 'M',
                Day(_) => 'D',
                DayOfYear(_) => 'D',
                Week(_) => 'w',
                IsoWeek(_) => 'W',
                WeekYear(_) => 'g',
                IsoWeekYear(_) => 'G',
                Hour(_) => 'H',
                Hour12(_) => 'h',
                Hour24(_) => 'k',
                Minute(_) => 'm',
                Second(_) => 's',
                _ => 'S',
            };
            return std::iter::repeat_n(c, usize::from(n)).collect();
        }
        MonthOrdinal => "Mo",
        MonthShort => "MMM",
        MonthLong => "MMMM",
        Quarter => "Q",
        QuarterOrdinal => "Qo",
        DayOrdinal => "Do",
        DayOfYearOrdinal => "DDDo",
        Weekday => "d",
        WeekdayOrdinal => "do",
        WeekdayMin => "dd",
        WeekdayShort => "ddd",
        WeekdayLong => "dddd",
        LocaleWeekday => "e",
        IsoWeekday => "E",
        WeekOrdinal => "wo",
        IsoWeekOrdinal => "Wo",
        Meridiem(true) => "A",
        Meridiem(false) => "a",
        Compact(false, false) => "Hmm",
        Compact(false, true) => "Hmmss",
        Compact(true, false) => "hmm",
        Compact(true, true) => "hmmss",
    };
    text.to_owned()
}

/// Reads one unit at the start of `s` into `fields`: the length read, `None` when the unit's
/// expression does not match there.
fn read_unit(unit: Unit, s: &str, f: &mut Fields) -> Result<Option<usize>, Unsupported> {
    use Unit::*;
    let short = |list: &[&'static str], len: usize| -> Vec<&'static str> {
        list.iter().map(|n| &n[..len]).collect()
    };
    let read = match unit {
        YearY => {
            let sign = usize::from(s.starts_with(['+', '-']));
            digits(&s[sign..], 1, usize::MAX).map(|(v, n)| {
                f.year = Some(if s.starts_with('-') { -v } else { v });
                n + sign
            })
        }
        Year(2) => digits(s, 2, 2).map(|(v, n)| {
            f.year = Some(two_digit_year(v));
            n
        }),
        Year(4) => digits(s, 4, 4).map(|(v, n)| {
            f.year = Some(v);
            n
        }),
        Month(n) => digits(s, n.into(), 2).map(|(v, n)| {
            f.month = Some(v - 1);
            n
        }),
        MonthShort | MonthLong => {
            let names = if unit == MonthShort {
                short(&MONTHS, 3)
            } else {
                MONTHS.to_vec()
            };
            name(s, &names).map(|(i, n)| {
                f.month = Some(i);
                n
            })
        }
        Quarter => digits(s, 1, 1).map(|(v, n)| {
            f.month = Some((v - 1) * 3);
            n
        }),
        Day(n) => digits(s, n.into(), 2).map(|(v, n)| {
            f.day = Some(v);
            n
        }),
        DayOrdinal => day_ordinal(s).map(|(v, n)| {
            f.day = Some(v);
            n
        }),
        DayOfYear(n) => {
            let (min, max) = if n == 3 { (1, 3) } else { (3, 3) };
            digits(s, min, max).map(|(v, n)| {
                f.day_of_year = Some(v);
                n
            })
        }
        Weekday | LocaleWeekday | IsoWeekday => digits(s, 1, 2).map(|(v, n)| {
            let slot = match unit {
                Weekday => &mut f.week.d,
                LocaleWeekday => &mut f.week.e,
                _ => &mut f.week.iso_e,
            };
            *slot = Some(v);
            f.any_week = true;
            n
        }),
        WeekdayMin | WeekdayShort | WeekdayLong => {
            let names = match unit {
                WeekdayMin => short(&WEEKDAYS, 2),
                WeekdayShort => short(&WEEKDAYS, 3),
                _ => WEEKDAYS.to_vec(),
            };
            name(s, &names).map(|(i, n)| {
                f.week.d = Some(i);
                f.any_week = true;
                n
            })
        }
        Week(n) | IsoWeek(n) => digits(s, n.into(), 2).map(|(v, len)| {
            let slot = if matches!(unit, Week(_)) {
                &mut f.week.w
            } else {
                &mut f.week.iso_w
            };
            *slot = Some(v);
            f.any_week = true;
            len
        }),
        WeekYear(n @ (2 | 4)) | IsoWeekYear(n @ (2 | 4)) => {
            digits(s, n.into(), n.into()).map(|(v, len)| {
                let v = if n == 2 { two_digit_year(v) } else { v };
                let slot = if matches!(unit, WeekYear(_)) {
                    &mut f.week.gg
                } else {
                    &mut f.week.iso_gg
                };
                *slot = Some(v);
                f.any_week = true;
                len
            })
        }
        Hour(n) | Minute(n) | Second(n) => digits(s, n.into(), 2).map(|(v, len)| {
            let slot = match unit {
                Hour(_) => &mut f.hour,
                Minute(_) => &mut f.minute,
                _ => &mut f.second,
            };
            *slot = Some(v);
            len
        }),
        other => {
            return Err(Unsupported {
                token: token_text(other),
            });
        }
    };
    Ok(read)
}

/// The date moment makes of `f` on `today`, `None` where moment's date is invalid.
fn resolve(mut f: Fields, today: NaiveDate) -> Option<Parsed> {
    let mut from_today = false;
    let this_year = i64::from(today.year());
    if f.any_week && f.day.is_none() && f.month.is_none() {
        let w = &f.week;
        let (spec, week_year, week, day): (WeekSpec, i64, i64, i64) =
            if w.iso_gg.is_some() || w.iso_w.is_some() || w.iso_e.is_some() {
                let week_year = w.iso_gg.or(f.year).unwrap_or_else(|| {
                    from_today = true;
                    week_of_year(today, ISO).0
                });
                let day = w.iso_e.unwrap_or(1);
                if !(1..=7).contains(&day) {
                    return None;
                }
                (ISO, week_year, w.iso_w.unwrap_or(1), day)
            } else {
                let (this_week_year, this_week) = week_of_year(today, LOCALE);
                let week_year = w.gg.or(f.year).unwrap_or_else(|| {
                    from_today = true;
                    this_week_year
                });
                let week = w.w.unwrap_or_else(|| {
                    from_today = true;
                    this_week
                });
                let day = match (w.d, w.e) {
                    (Some(d), _) if (0..=6).contains(&d) => d,
                    (Some(_), _) => return None,
                    (None, Some(e)) if (0..=6).contains(&e) => e + LOCALE.dow,
                    (None, Some(_)) => return None,
                    (None, None) => LOCALE.dow,
                };
                (LOCALE, week_year, week, day)
            };
        if week < 1 || week > weeks_in_year(week_year, spec) {
            return None;
        }
        let date = from_week(week_year, week, day, spec)?;
        f.year = Some(i64::from(date.year()));
        f.day_of_year = Some(i64::from(date.ordinal()));
    }
    if let Some(day_of_year) = f.day_of_year {
        let year = f.year.unwrap_or_else(|| {
            from_today = true;
            this_year
        });
        if day_of_year == 0 || day_of_year > days_in_year(year) {
            return None;
        }
        let date = from_ordinal(year, day_of_year)?;
        f.month = Some(i64::from(date.month0()));
        f.day = Some(i64::from(date.day()));
    }
    // The leading fields the input leaves out are today's; the rest the lowest.
    let year = match f.year {
        Some(year) => year,
        None => {
            from_today = true;
            if f.month.is_none() {
                f.month = Some(i64::from(today.month0()));
                if f.day.is_none() {
                    f.day = Some(i64::from(today.day()));
                }
            }
            this_year
        }
    };
    let month = f.month.unwrap_or(0);
    let day = f.day.unwrap_or(1);
    if !(0..=11).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let (hour, minute, second) = (
        f.hour.unwrap_or(0),
        f.minute.unwrap_or(0),
        f.second.unwrap_or(0),
    );
    if !(0..=24).contains(&hour)
        || (hour == 24 && (minute != 0 || second != 0))
        || !(0..=59).contains(&minute)
        || !(0..=59).contains(&second)
    {
        return None;
    }
    let date = from_ymd(year, month, day)?;
    // `24:00` is the next day's midnight (moment's `_nextDay`); the weekday is the given day's.
    let next_day = if hour == 24 { date.succ_opt()? } else { date };
    if f.week.d.is_some_and(|d| d != weekday(date)) {
        return None;
    }
    Some(Parsed {
        date: next_day,
        from_today,
    })
}

impl Format {
    /// `input` read strictly in this format on `today`: `Ok(None)` when moment would call
    /// the result invalid, `Err` when the format holds a token this module does not parse
    /// (ordinals but `Do`, 12-hour clocks, fractions).
    pub fn parse(&self, input: &str, today: NaiveDate) -> Result<Option<Parsed>, Unsupported> {
        let mut fields = Fields::default();
        let mut rest = input;
        let mut any_unit = false;
        for token in &self.tokens {
            match token {
                Token::Literal(text) => match rest.strip_prefix(text.as_str()) {
                    Some(after) => rest = after,
                    None => return self.check_all().map(|()| None),
                },
                Token::Unit(unit) => match read_unit(*unit, rest, &mut fields)? {
                    Some(len) => {
                        any_unit = true;
                        rest = &rest[len..];
                    }
                    None => return self.check_all().map(|()| None),
                },
            }
        }
        if !rest.is_empty() || !any_unit {
            return Ok(None);
        }
        Ok(resolve(fields, today))
    }

    /// Refuses a format holding a token this module does not parse, whatever the input.
    fn check_all(&self) -> Result<(), Unsupported> {
        let mut scratch = Fields::default();
        for token in &self.tokens {
            if let Token::Unit(unit) = token {
                read_unit(*unit, "", &mut scratch)?;
            }
        }
        Ok(())
    }
}
