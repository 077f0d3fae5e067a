//! Tasks-plugin task lines (CONTRACT.md §3 `update_task`: confirmation
//! needed when "it reopens a task marked done more than 7 days ago (Tasks-plugin
//! `✅ YYYY-MM-DD`)").
//!
//! A task line is a list item with a checkbox: optional indentation (and `>` of a
//! blockquote), a bullet `-`, `*`, `+` or `1.`/`1)`, the box `[c]`, then the description.
//! Status by box character: space = todo, `x`/`X` = done, `/` = in progress, `-` =
//! cancelled; any other character is kept as [`TaskStatus::Other`].
//!
//! Setting a status rewrites only the box character and the done date: marking done appends
//! `✅ <today>` unless the line already carries a done date, and any other status removes
//! it. The Tasks plugin's other markers (📅 due, ❌ cancelled, 🔁 recurrence …) are kept as
//! text; this module does not add a `❌` date when cancelling.
//!
//! "Reopening" means setting a done task to todo or in progress ([`reopens_old_done`]). A
//! done task without a `✅` date cannot be dated, so it never counts as done "more than 7
//! days ago".

use std::fmt;

/// A task's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskStatus {
    Todo,
    Done,
    InProgress,
    Cancelled,
    /// A custom box character (some themes use `>`, `!`, `?` …).
    Other(char),
}

impl TaskStatus {
    /// The character written in the box.
    pub fn marker(self) -> char {
        match self {
            TaskStatus::Todo => ' ',
            TaskStatus::Done => 'x',
            TaskStatus::InProgress => '/',
            TaskStatus::Cancelled => '-',
            TaskStatus::Other(c) => c,
        }
    }

    pub fn from_marker(marker: char) -> Self {
        match marker {
            ' ' => TaskStatus::Todo,
            'x' | 'X' => TaskStatus::Done,
            '/' => TaskStatus::InProgress,
            '-' => TaskStatus::Cancelled,
            other => TaskStatus::Other(other),
        }
    }

    /// The `update_task.status` names: `todo`, `done`, `in_progress`, `cancelled`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "todo" => Some(TaskStatus::Todo),
            "done" => Some(TaskStatus::Done),
            "in_progress" => Some(TaskStatus::InProgress),
            "cancelled" => Some(TaskStatus::Cancelled),
            _ => None,
        }
    }

    /// The name for tool output (`other` for a custom box).
    pub fn name(self) -> &'static str {
        match self {
            TaskStatus::Todo => "todo",
            TaskStatus::Done => "done",
            TaskStatus::InProgress => "in_progress",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Other(_) => "other",
        }
    }
}

/// A calendar date (proleptic Gregorian), as the Tasks plugin writes it: `YYYY-MM-DD`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date {
    year: i32,
    month: u8,
    day: u8,
}

impl Date {
    pub fn new(year: i32, month: u8, day: u8) -> Option<Self> {
        if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
            return None;
        }
        Some(Date { year, month, day })
    }

    /// Parses exactly `YYYY-MM-DD`.
    pub fn parse(text: &str) -> Option<Self> {
        let bytes = text.as_bytes();
        if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
            return None;
        }
        let digits = |range: std::ops::Range<usize>| -> Option<u32> {
            let part = &text[range];
            part.bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| part.parse().ok())?
        };
        let year = i32::try_from(digits(0..4)?).ok()?;
        let month = u8::try_from(digits(5..7)?).ok()?;
        let day = u8::try_from(digits(8..10)?).ok()?;
        Date::new(year, month, day)
    }

    /// The UTC date of a Unix time in milliseconds (what a [`tc_gate::clock::Clock`] gives).
    pub fn from_unix_ms(ms: i64) -> Self {
        Date::from_days(ms.div_euclid(86_400_000))
    }

    /// Days since 1970-01-01 (Howard Hinnant's `days_from_civil`).
    pub fn days_since_epoch(self) -> i64 {
        let y = i64::from(self.year) - i64::from(self.month <= 2);
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let m = i64::from(self.month);
        let mp = (m + 9) % 12;
        let doy = (153 * mp + 2) / 5 + i64::from(self.day) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    /// The date `days` after 1970-01-01 (`civil_from_days`).
    pub fn from_days(days: i64) -> Self {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
        let month = (if mp < 10 { mp + 3 } else { mp - 9 }) as u8;
        let year = yoe + era * 400 + i64::from(month <= 2);
        Date {
            year: i32::try_from(year).unwrap_or(if year < 0 { i32::MIN } else { i32::MAX }),
            month,
            day,
        }
    }
}

fn days_in_month(year: i32, month: u8) -> u8 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

const DONE_MARK: char = '✅';

/// One parsed task line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// Indentation, blockquote markers and bullet, up to the box: kept verbatim.
    pub prefix: String,
    pub status: TaskStatus,
    /// The description after the box, with any `✅` date still in it.
    pub text: String,
    /// The `✅ YYYY-MM-DD` date, if the line has one.
    pub done_date: Option<Date>,
}

/// Parses one line (without its line ending) as a task; `None` if it is not one.
pub fn parse_task_line(line: &str) -> Option<Task> {
    let lead = line.len() - line.trim_start_matches([' ', '\t', '>']).len();
    let rest = &line[lead..];
    let bullet_len = if rest.starts_with(['-', '*', '+']) {
        1
    } else {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 9 || !rest[digits..].starts_with(['.', ')']) {
            return None;
        }
        digits + 1
    };
    let after_bullet = &rest[bullet_len..];
    let spaces = after_bullet.len() - after_bullet.trim_start_matches([' ', '\t']).len();
    if spaces == 0 {
        return None;
    }
    let boxed = after_bullet[spaces..].strip_prefix('[')?;
    let mut chars = boxed.chars();
    let marker = chars.next()?;
    let after_box = chars.as_str().strip_prefix(']')?;
    let text = match after_box.strip_prefix([' ', '\t']) {
        Some(text) => text,
        None if after_box.is_empty() => "",
        None => return None,
    };
    let prefix_len = lead + bullet_len + spaces;
    Some(Task {
        prefix: line[..prefix_len].to_owned(),
        status: TaskStatus::from_marker(marker),
        text: text.to_owned(),
        done_date: done_date_of(text),
    })
}

/// The first `✅ YYYY-MM-DD` in `text`.
fn done_date_of(text: &str) -> Option<Date> {
    text.match_indices(DONE_MARK).find_map(|(at, mark)| {
        let after = text[at + mark.len()..].trim_start_matches(' ');
        after.get(..10).and_then(Date::parse)
    })
}

/// `text` without any `✅ YYYY-MM-DD` (and the spaces before it).
fn without_done_date(text: &str) -> String {
    let mut out = text.to_owned();
    while let Some((at, end)) = out.match_indices(DONE_MARK).find_map(|(at, mark)| {
        let after = &out[at + mark.len()..];
        let gap = after.len() - after.trim_start_matches(' ').len();
        let date_at = at + mark.len() + gap;
        out.get(date_at..date_at + 10)
            .and_then(Date::parse)
            .map(|_| (at, date_at + 10))
    }) {
        let start = out[..at].trim_end_matches(' ').len();
        out.replace_range(start..end, "");
    }
    out
}

impl Task {
    /// The line with a new status (see the module docs for the done date), and optionally a
    /// new description. A new description's own `✅` date is respected.
    pub fn render(&self, status: TaskStatus, text: Option<&str>, today: Date) -> String {
        let text = text.unwrap_or(&self.text);
        let text = match status {
            TaskStatus::Done if done_date_of(text).is_some() => text.to_owned(),
            TaskStatus::Done => {
                let base = text.trim_end_matches(' ');
                if base.is_empty() {
                    format!("{DONE_MARK} {today}")
                } else {
                    format!("{base} {DONE_MARK} {today}")
                }
            }
            _ => without_done_date(text),
        };
        if text.is_empty() {
            format!("{}[{}]", self.prefix, status.marker())
        } else {
            format!("{}[{}] {}", self.prefix, status.marker(), text)
        }
    }
}

/// Whether moving `task` to `new_status` reopens a task marked done more than 7 days
/// before `today`: the `update_task` confirmation condition.
pub fn reopens_old_done(task: &Task, new_status: TaskStatus, today: Date) -> bool {
    let reopening = task.status == TaskStatus::Done
        && matches!(new_status, TaskStatus::Todo | TaskStatus::InProgress);
    reopening
        && task
            .done_date
            .is_some_and(|done| today.days_since_epoch() - done.days_since_epoch() > 7)
}

/// A 1-based line of a note, with its line ending split off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoteLine<'a> {
    pub text: &'a str,
    pub ending: &'a str,
    /// Byte offset of the line in the note.
    pub start: usize,
}

/// Line `number` (1-based) of `content`, if there is one.
pub fn line_at(content: &str, number: usize) -> Option<NoteLine<'_>> {
    let mut start = 0;
    for (index, line) in content.split_inclusive('\n').enumerate() {
        if index + 1 == number {
            let text = line.trim_end_matches(['\n', '\r']);
            return Some(NoteLine {
                text,
                ending: &line[text.len()..],
                start,
            });
        }
        start += line.len();
    }
    None
}

/// `content` with line `number` replaced by `new_text` (the line ending is kept).
pub fn replace_line(content: &str, number: usize, new_text: &str) -> Option<String> {
    let line = line_at(content, number)?;
    let end = line.start + line.text.len();
    let mut out = String::with_capacity(content.len() + new_text.len());
    out.push_str(&content[..line.start]);
    out.push_str(new_text);
    out.push_str(&content[end..]);
    Some(out)
}

/// Every task in a note with its 1-based line number.
pub fn find_tasks(content: &str) -> Vec<(usize, Task)> {
    content
        .split_inclusive('\n')
        .enumerate()
        .filter_map(|(index, line)| {
            parse_task_line(line.trim_end_matches(['\n', '\r'])).map(|t| (index + 1, t))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn d(s: &str) -> Date {
        Date::parse(s).unwrap()
    }

    #[test]
    fn parses_task_lines() {
        let t = parse_task_line("- [ ] buy milk").unwrap();
        assert_eq!(
            (t.status, t.text.as_str(), t.done_date),
            (TaskStatus::Todo, "buy milk", None)
        );
        let t = parse_task_line("  * [x] ship it ✅ 2026-11-01").unwrap();
        assert_eq!(t.status, TaskStatus::Done);
        assert_eq!(t.done_date, Some(d("2026-11-01")));
        assert_eq!(t.prefix, "  * ");
        assert_eq!(
            parse_task_line("1. [/] half").unwrap().status,
            TaskStatus::InProgress
        );
        assert_eq!(
            parse_task_line("> - [-] dropped").unwrap().status,
            TaskStatus::Cancelled
        );
        assert_eq!(
            parse_task_line("- [?] q").unwrap().status,
            TaskStatus::Other('?')
        );
        assert_eq!(parse_task_line("- [X]").unwrap().text, "");
        for not_task in [
            "- [] x",
            "-[ ] x",
            "- [ ]x",
            "text",
            "- item",
            "[ ] x",
            "12345678901. [ ] x",
            "",
        ] {
            assert!(parse_task_line(not_task).is_none(), "{not_task:?}");
        }
    }

    #[test]
    fn marking_done_adds_the_date_and_reopening_removes_it() {
        let today = d("2026-11-30");
        let t = parse_task_line("- [ ] write report 📅 2026-12-01").unwrap();
        assert_eq!(
            t.render(TaskStatus::Done, None, today),
            "- [x] write report 📅 2026-12-01 ✅ 2026-11-30"
        );
        let done = parse_task_line("- [x] write report ✅ 2026-11-01 #tag").unwrap();
        assert_eq!(
            done.render(TaskStatus::Todo, None, today),
            "- [ ] write report #tag"
        );
        assert_eq!(
            done.render(TaskStatus::InProgress, None, today),
            "- [/] write report #tag"
        );
        assert_eq!(
            done.render(TaskStatus::Cancelled, None, today),
            "- [-] write report #tag"
        );
        // Already dated: marking done again keeps the original date.
        assert_eq!(
            done.render(TaskStatus::Done, None, today),
            "- [x] write report ✅ 2026-11-01 #tag"
        );
        assert_eq!(
            done.render(TaskStatus::Done, Some("new text"), today),
            "- [x] new text ✅ 2026-11-30"
        );
        let empty = parse_task_line("- [ ]").unwrap();
        assert_eq!(
            empty.render(TaskStatus::Done, None, today),
            "- [x] ✅ 2026-11-30"
        );
        assert_eq!(
            TaskStatus::from_name("in_progress"),
            Some(TaskStatus::InProgress)
        );
        assert_eq!(TaskStatus::from_name("doing"), None);
    }

    // r[verify tools.update-task.confirm]
    // r[verify floors.update-task-window]
    #[test]
    fn reopening_old_done_tasks() {
        let done_on = |date: &str| parse_task_line(&format!("- [x] t ✅ {date}")).unwrap();
        let today = d("2026-11-30");
        assert!(
            reopens_old_done(&done_on("2026-11-22"), TaskStatus::Todo, today),
            "8 days"
        );
        assert!(
            !reopens_old_done(&done_on("2026-11-23"), TaskStatus::Todo, today),
            "7 days"
        );
        assert!(reopens_old_done(
            &done_on("2025-01-01"),
            TaskStatus::InProgress,
            today
        ));
        assert!(!reopens_old_done(
            &done_on("2025-01-01"),
            TaskStatus::Cancelled,
            today
        ));
        assert!(!reopens_old_done(
            &done_on("2025-01-01"),
            TaskStatus::Done,
            today
        ));
        let undated = parse_task_line("- [x] t").unwrap();
        assert!(!reopens_old_done(&undated, TaskStatus::Todo, today));
        let todo = parse_task_line("- [ ] t ✅ 2025-01-01").unwrap();
        assert!(!reopens_old_done(&todo, TaskStatus::Todo, today));
        // Across a year boundary and a leap day.
        assert!(reopens_old_done(
            &done_on("2027-12-24"),
            TaskStatus::Todo,
            d("2028-01-01")
        ));
        assert!(!reopens_old_done(
            &done_on("2028-02-23"),
            TaskStatus::Todo,
            d("2028-03-01")
        ));
    }

    #[test]
    fn dates() {
        assert_eq!(Date::from_unix_ms(0).to_string(), "1970-01-01");
        assert_eq!(
            Date::from_unix_ms(1_800_000_000_000).to_string(),
            "2027-01-15"
        );
        assert_eq!(Date::from_unix_ms(-1).to_string(), "1969-12-31");
        assert!(Date::parse("2026-02-29").is_none());
        assert!(Date::parse("2028-02-29").is_some());
        assert!(Date::parse("2026-13-01").is_none());
        assert!(Date::parse("2026-1-01").is_none());
        assert!(Date::parse("+026-01-01").is_none());
    }

    #[test]
    fn lines_are_replaced_with_their_endings() {
        let note = "# T\r\n- [ ] a\r\n- [x] b ✅ 2026-01-01\nlast";
        assert_eq!(
            find_tasks(note).iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            [2, 3]
        );
        let line = line_at(note, 2).unwrap();
        assert_eq!((line.text, line.ending), ("- [ ] a", "\r\n"));
        let out = replace_line(note, 2, "- [x] a").unwrap();
        assert_eq!(out, "# T\r\n- [x] a\r\n- [x] b ✅ 2026-01-01\nlast");
        assert_eq!(
            replace_line(note, 4, "x").unwrap(),
            "# T\r\n- [ ] a\r\n- [x] b ✅ 2026-01-01\nx"
        );
        assert!(replace_line(note, 5, "x").is_none());
        assert!(line_at(note, 0).is_none());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn date_round_trip(days in -800_000i64..800_000) {
            let date = Date::from_days(days);
            prop_assert_eq!(date.days_since_epoch(), days);
            if date.year >= 0 && date.year <= 9999 {
                prop_assert_eq!(Date::parse(&date.to_string()), Some(date));
            }
        }

        #[test]
        fn any_line_parses_without_panic(line in "[ >\\-*+0-9.)\\[\\]xX/ a✅]{0,30}[0-9\\-]{0,12}") {
            if let Some(task) = parse_task_line(&line) {
                let today = Date::new(2026, 11, 30).unwrap();
                for status in [TaskStatus::Todo, TaskStatus::Done, TaskStatus::InProgress, TaskStatus::Cancelled] {
                    let rendered = task.render(status, None, today);
                    let back = parse_task_line(&rendered).unwrap();
                    prop_assert_eq!(back.status, status);
                    prop_assert_eq!(back.done_date.is_some(), status == TaskStatus::Done);
                }
            }
        }
    }
}
