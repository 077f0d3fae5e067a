//! moment.js date formats, as Obsidian's settings and templates write them (spec/periodic.md
//! `## Formats`): a format is cut into tokens exactly as moment's `formattingTokens` does
//! (alternatives in its order, `[literal]`, a backslash escaping one token, localized `L…`
//! tokens expanded first), then formatted ([`Format::format`]) or strictly parsed
//! ([`Format::parse`]) in moment's default locale `en`. A token moment knows but this module
//! does not (eras, time zones, timestamps) refuses the whole format, so nothing is ever
//! formatted differently from Obsidian.

pub mod calendar;
mod parse;

use chrono::{Datelike, NaiveDate, NaiveDateTime, Timelike};

use calendar::{ISO, LOCALE, week_of_year, weekday};

pub const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
pub const WEEKDAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// A unit a token formats or parses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// `Y`: the year, at least 4 digits.
    YearY,
    /// `YY`, `YYYY`, `YYYYY`, `YYYYYY` (the last signed).
    Year(u8),
    /// `M`, `MM`.
    Month(u8),
    MonthOrdinal,
    MonthShort,
    MonthLong,
    Quarter,
    QuarterOrdinal,
    /// `D`, `DD`.
    Day(u8),
    DayOrdinal,
    /// `DDD`, `DDDD` (3 digits).
    DayOfYear(u8),
    DayOfYearOrdinal,
    /// `d`: 0 = Sunday.
    Weekday,
    WeekdayOrdinal,
    WeekdayMin,
    WeekdayShort,
    WeekdayLong,
    /// `e`: the day in the locale week, 0 = its first day.
    LocaleWeekday,
    /// `E`: 1 = Monday … 7 = Sunday.
    IsoWeekday,
    /// `w`, `ww`.
    Week(u8),
    WeekOrdinal,
    /// `W`, `WW`.
    IsoWeek(u8),
    IsoWeekOrdinal,
    /// `gg`, `gggg`, `ggggg`.
    WeekYear(u8),
    /// `GG`, `GGGG`, `GGGGG`.
    IsoWeekYear(u8),
    /// `H`, `HH`.
    Hour(u8),
    /// `h`, `hh`: 1–12.
    Hour12(u8),
    /// `k`, `kk`: 1–24.
    Hour24(u8),
    Minute(u8),
    Second(u8),
    /// `A` (upper) or `a`.
    Meridiem(bool),
    /// `Hmm`, `Hmmss`, `hmm`, `hmmss`: (12-hour, with seconds).
    Compact(bool, bool),
    /// `S` … `SSSSSSSSS`: the fraction of the second.
    Fraction(u8),
}

/// One token of a format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    Literal(String),
    Unit(Unit),
}

/// A token moment formats that this module refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the moment.js token {token:?} is not supported (eras, time zones and timestamps are not)")]
pub struct Unsupported {
    pub token: String,
}

/// A format cut into tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format {
    tokens: Vec<Token>,
}

/// moment's `en` long date formats (`longDateFormat`), the lowercase ones derived as moment
/// derives them.
fn long_date_format(token: &str) -> Option<&'static str> {
    Some(match token {
        "LTS" => "h:mm:ss A",
        "LT" => "h:mm A",
        "L" => "MM/DD/YYYY",
        "LL" => "MMMM D, YYYY",
        "LLL" => "MMMM D, YYYY h:mm A",
        "LLLL" => "dddd, MMMM D, YYYY h:mm A",
        "l" => "M/D/YYYY",
        "ll" => "MMM D, YYYY",
        "lll" => "MMM D, YYYY h:mm A",
        "llll" => "ddd, MMM D, YYYY h:mm A",
        _ => return None,
    })
}

/// The length of a `[literal]` at the start of `s` (moment's `\[[^\[]*\]`: up to the last
/// `]` before the next `[`).
fn bracket_len(s: &str) -> Option<usize> {
    let rest = s.strip_prefix('[')?;
    let span = rest.find('[').map_or(rest, |at| &rest[..at]);
    span.rfind(']').map(|at| at + 2)
}

/// How many times `c` repeats at the start of `s`, at most `max`.
fn run(s: &str, c: char, max: usize) -> usize {
    s.chars().take(max).take_while(|&x| x == c).count()
}

/// The length of the token moment's `formattingTokens` cuts at the start of `s` (without the
/// bracket and backslash alternatives), in its order of alternatives.
fn token_len(s: &str) -> usize {
    let b = s.as_bytes();
    let starts = |p: &str| s.starts_with(p);
    for p in ["Hmmss", "Hmm", "hmmss", "hmm", "Mo"] {
        if starts(p) {
            return p.len();
        }
    }
    match b.first() {
        Some(b'M') => return run(s, 'M', 4),
        Some(b'D') => {
            if starts("Do") {
                return 2;
            }
            if starts("DDDo") {
                return 4;
            }
            return run(s, 'D', 4);
        }
        Some(b'd') => {
            let n = run(s, 'd', 4);
            if n >= 2 {
                return n;
            }
            return if starts("do") { 2 } else { 1 };
        }
        Some(&c @ (b'w' | b'W')) => {
            return match b.get(1) {
                Some(&n) if n == b'o' || n == b'|' || n == c => 2,
                _ => 1,
            };
        }
        Some(b'Q') => return if starts("Qo") { 2 } else { 1 },
        Some(b'N') => return run(s, 'N', 5),
        Some(b'Y') => {
            let n = run(s, 'Y', 6);
            // YYYYYY|YYYYY|YYYY|YY, and a lone Y falls to the catch-all.
            return if n == 3 { 2 } else { n };
        }
        Some(b'y') => {
            let n = run(s, 'y', 4);
            if n >= 2 {
                return n;
            }
            return if starts("yo") { 2 } else { 1 };
        }
        Some(&c @ (b'g' | b'G')) => {
            let n = run(s, char::from(c), 5);
            return match n {
                5 => 5,
                4 => 4,
                2 | 3 => 2,
                _ => 1,
            };
        }
        Some(&c @ (b'h' | b'H' | b'k' | b'm' | b's' | b'z' | b'Z')) => {
            return run(s, char::from(c), 2);
        }
        Some(b'S') => return run(s, 'S', 9),
        _ => {}
    }
    s.chars().next().map_or(0, char::len_utf8)
}

/// The unit of a token moment formats, `Ok(None)` for one it copies as text.
fn unit_of(token: &str) -> Result<Option<Unit>, Unsupported> {
    use Unit::*;
    let n = u8::try_from(token.len()).unwrap_or(u8::MAX);
    let unit = match token {
        "Y" => YearY,
        "YY" | "YYYY" | "YYYYY" | "YYYYYY" => Year(n),
        "M" | "MM" => Month(n),
        "Mo" => MonthOrdinal,
        "MMM" => MonthShort,
        "MMMM" => MonthLong,
        "Q" => Quarter,
        "Qo" => QuarterOrdinal,
        "D" | "DD" => Day(n),
        "Do" => DayOrdinal,
        "DDD" | "DDDD" => DayOfYear(n),
        "DDDo" => DayOfYearOrdinal,
        "d" => Weekday,
        "do" => WeekdayOrdinal,
        "dd" => WeekdayMin,
        "ddd" => WeekdayShort,
        "dddd" => WeekdayLong,
        "e" => LocaleWeekday,
        "E" => IsoWeekday,
        "w" | "ww" => Week(n),
        "wo" => WeekOrdinal,
        "W" | "WW" => IsoWeek(n),
        "Wo" => IsoWeekOrdinal,
        "gg" | "gggg" | "ggggg" => WeekYear(n),
        "GG" | "GGGG" | "GGGGG" => IsoWeekYear(n),
        "H" | "HH" => Hour(n),
        "h" | "hh" => Hour12(n),
        "k" | "kk" => Hour24(n),
        "m" | "mm" => Minute(n),
        "s" | "ss" => Second(n),
        "A" => Meridiem(true),
        "a" => Meridiem(false),
        "Hmm" => Compact(false, false),
        "Hmmss" => Compact(false, true),
        "hmm" => Compact(true, false),
        "hmmss" => Compact(true, true),
        t if !t.is_empty() && t.chars().all(|c| c == 'S') => Fraction(n),
        "N" | "NN" | "NNN" | "NNNN" | "NNNNN" | "y" | "yy" | "yyy" | "yyyy" | "yo" | "x" | "X"
        | "z" | "zz" | "Z" | "ZZ" => {
            return Err(Unsupported {
                token: token.to_owned(),
            });
        }
        _ => return Ok(None),
    };
    Ok(Some(unit))
}

/// moment's `expandFormat`: the localized `LTS`, `LT`, `L`…`LLLL`, `l`…`llll` tokens replaced
/// by their formats (up to six rounds, as moment does).
fn expand(format: &str) -> String {
    let mut current = format.to_owned();
    for _ in 0..6 {
        let mut out = String::with_capacity(current.len());
        let mut changed = false;
        let mut rest = current.as_str();
        while let Some(c) = rest.chars().next() {
            if let Some(len) = bracket_len(rest) {
                out.push_str(&rest[..len]);
                rest = &rest[len..];
                continue;
            }
            let (escaped, body) = match rest.strip_prefix('\\') {
                Some(body) => (true, body),
                None => (false, rest),
            };
            let len = if body.starts_with("LTS") {
                3
            } else if body.starts_with("LT") {
                2
            } else if body.starts_with('L') {
                run(body, 'L', 4)
            } else {
                run(body, 'l', 4)
            };
            if len > 0 {
                let token = &body[..len];
                let whole = usize::from(escaped) + len;
                match long_date_format(token).filter(|_| !escaped) {
                    Some(expanded) => {
                        out.push_str(expanded);
                        changed = true;
                    }
                    None => out.push_str(&rest[..whole]),
                }
                rest = &rest[whole..];
            } else {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
        current = out;
        if !changed {
            break;
        }
    }
    current
}

impl Format {
    /// Cuts `format` into tokens as moment does; a token it does not support is refused.
    pub fn new(format: &str) -> Result<Format, Unsupported> {
        let format = expand(format);
        let mut tokens: Vec<Token> = Vec::new();
        let push_text = |tokens: &mut Vec<Token>, text: &str| {
            if text.is_empty() {
                return;
            }
            if let Some(Token::Literal(last)) = tokens.last_mut() {
                last.push_str(text);
            } else {
                tokens.push(Token::Literal(text.to_owned()));
            }
        };
        let mut rest = format.as_str();
        while !rest.is_empty() {
            if let Some(len) = bracket_len(rest) {
                push_text(&mut tokens, &rest[1..len - 1]);
                rest = &rest[len..];
                continue;
            }
            if let Some(body) = rest.strip_prefix('\\').filter(|b| !b.is_empty()) {
                // A backslash makes the token after it text (moment strips every backslash).
                let len = token_len(body);
                push_text(&mut tokens, &body[..len].replace('\\', ""));
                rest = &body[len..];
                continue;
            }
            let len = token_len(rest);
            let token = &rest[..len];
            match unit_of(token)? {
                Some(unit) => tokens.push(Token::Unit(unit)),
                None => push_text(&mut tokens, &token.replace('\\', "")),
            }
            rest = &rest[len..];
        }
        Ok(Format { tokens })
    }

    pub fn tokens(&self) -> &[Token] {
        &self.tokens
    }

    /// Whether the format names weeks the ISO way (`GG…`, `W`, `WW`, `Wo`, `E`).
    pub fn uses_iso_weeks(&self) -> bool {
        self.tokens.iter().any(|t| {
            matches!(
                t,
                Token::Unit(
                    Unit::IsoWeekYear(_)
                        | Unit::IsoWeek(_)
                        | Unit::IsoWeekOrdinal
                        | Unit::IsoWeekday
                )
            )
        })
    }

    /// `at` written in this format, as moment's `format` writes it in the `en` locale.
    pub fn format(&self, at: NaiveDateTime) -> String {
        let mut out = String::new();
        for token in &self.tokens {
            match token {
                Token::Literal(text) => out.push_str(text),
                Token::Unit(unit) => out.push_str(&format_unit(*unit, at)),
            }
        }
        out
    }

    /// The date of a day written in this format (the day at midnight).
    pub fn format_date(&self, date: NaiveDate) -> String {
        self.format(date.and_time(chrono::NaiveTime::MIN))
    }

    /// The part of a nested format after its last `/` (a literal one, not one inside a
    /// token): the format of the file name alone, `None` when the format has no folder.
    pub fn split_last_folder(&self) -> Option<Format> {
        let (at, slash) = self
            .tokens
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, t)| match t {
                Token::Literal(text) => text.rfind('/').map(|s| (i, s)),
                Token::Unit(_) => None,
            })?;
        let mut tokens = Vec::new();
        if let Token::Literal(text) = &self.tokens[at] {
            let tail = &text[slash + 1..];
            if !tail.is_empty() {
                tokens.push(Token::Literal(tail.to_owned()));
            }
        }
        tokens.extend(self.tokens[at + 1..].iter().cloned());
        Some(Format { tokens })
    }
}

/// moment's `zeroFill`.
fn zero_fill(number: i64, width: usize, force_sign: bool) -> String {
    let sign = if number < 0 {
        "-"
    } else if force_sign {
        "+"
    } else {
        ""
    };
    format!("{sign}{:0>width$}", number.unsigned_abs())
}

/// The `en` locale's ordinal: `1st`, `2nd`, `3rd`, `4th`, `11th`, `21st`.
pub fn ordinal(n: i64) -> String {
    let suffix = if (n % 100) / 10 == 1 {
        "th"
    } else {
        match n % 10 {
            1 => "st",
            2 => "nd",
            3 => "rd",
            _ => "th",
        }
    };
    format!("{n}{suffix}")
}

fn format_unit(unit: Unit, at: NaiveDateTime) -> String {
    use Unit::*;
    let date = at.date();
    let year = i64::from(date.year());
    let month = i64::from(date.month());
    let day = i64::from(date.day());
    let wd = weekday(date);
    let hour = i64::from(at.hour());
    let h12 = if hour % 12 == 0 { 12 } else { hour % 12 };
    let pad = |n: i64, width: u8| {
        if width >= 2 {
            zero_fill(n, usize::from(width), false)
        } else {
            n.to_string()
        }
    };
    match unit {
        YearY => {
            if year <= 9999 {
                zero_fill(year, 4, false)
            } else {
                format!("+{year}")
            }
        }
        Year(2) => zero_fill(year % 100, 2, false),
        Year(n) => zero_fill(year, usize::from(n), n == 6),
        Month(n) => pad(month, n),
        MonthOrdinal => ordinal(month),
        MonthShort => MONTHS[month as usize - 1][..3].to_owned(),
        MonthLong => MONTHS[month as usize - 1].to_owned(),
        Quarter => ((month + 2) / 3).to_string(),
        QuarterOrdinal => ordinal((month + 2) / 3),
        Day(n) => pad(day, n),
        DayOrdinal => ordinal(day),
        // `DDD` is not padded, `DDDD` to 3 digits.
        DayOfYear(3) => date.ordinal().to_string(),
        DayOfYear(_) => zero_fill(i64::from(date.ordinal()), 3, false),
        DayOfYearOrdinal => ordinal(i64::from(date.ordinal())),
        Weekday => wd.to_string(),
        WeekdayOrdinal => ordinal(wd),
        WeekdayMin => WEEKDAYS[wd as usize][..2].to_owned(),
        WeekdayShort => WEEKDAYS[wd as usize][..3].to_owned(),
        WeekdayLong => WEEKDAYS[wd as usize].to_owned(),
        LocaleWeekday => (wd - LOCALE.dow).rem_euclid(7).to_string(),
        IsoWeekday => (if wd == 0 { 7 } else { wd }).to_string(),
        Week(n) => pad(week_of_year(date, LOCALE).1, n),
        WeekOrdinal => ordinal(week_of_year(date, LOCALE).1),
        IsoWeek(n) => pad(week_of_year(date, ISO).1, n),
        IsoWeekOrdinal => ordinal(week_of_year(date, ISO).1),
        WeekYear(2) => zero_fill(week_of_year(date, LOCALE).0 % 100, 2, false),
        WeekYear(n) => zero_fill(week_of_year(date, LOCALE).0, usize::from(n), false),
        IsoWeekYear(2) => zero_fill(week_of_year(date, ISO).0 % 100, 2, false),
        IsoWeekYear(n) => zero_fill(week_of_year(date, ISO).0, usize::from(n), false),
        Hour(n) => pad(hour, n),
        Hour12(n) => pad(h12, n),
        Hour24(n) => pad(if hour == 0 { 24 } else { hour }, n),
        Minute(n) => pad(i64::from(at.minute()), n),
        Second(n) => pad(i64::from(at.second()), n),
        Meridiem(upper) => match (hour > 11, upper) {
            (true, true) => "PM".to_owned(),
            (true, false) => "pm".to_owned(),
            (false, true) => "AM".to_owned(),
            (false, false) => "am".to_owned(),
        },
        Compact(twelve, seconds) => {
            let mut out = format!(
                "{}{}",
                if twelve { h12 } else { hour },
                zero_fill(i64::from(at.minute()), 2, false)
            );
            if seconds {
                out.push_str(&zero_fill(i64::from(at.second()), 2, false));
            }
            out
        }
        Fraction(n) => {
            let ms = i64::from(at.nanosecond() / 1_000_000).min(999);
            let value = match n {
                1 => ms / 100,
                2 => ms / 10,
                _ => ms * 10_i64.pow(u32::from(n) - 3),
            };
            zero_fill(value, usize::from(n), false)
        }
    }
}

pub use parse::Parsed;
