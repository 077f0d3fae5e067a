//! Tasks-plugin task lines (spec/tools.md `update_task`: confirmation
//! needed when "it reopens a task marked done more than 7 days ago (Tasks-plugin
//! `✅ YYYY-MM-DD`)"; spec/tools.md `tools.update-task.*`, spec/floors.md
//! `floors.update-task-steps`).
//!
//! A task line is a list item with a checkbox: optional indentation (and `>` of a
//! blockquote), a bullet `-`, `*`, `+` or `1.`/`1)`, the box `[c]`, then the description.
//! Status by box character: space = todo, `x`/`X` = done, `/` = in progress, `-` =
//! cancelled; any other character is kept as [`TaskStatus::Other`]. A line holding a
//! carriage return is not a task line: editors that split lines on a lone CR would see two
//! lines where this module sees one.
//!
//! The completion record of a task is the earliest `✅ YYYY-MM-DD` of its description
//! outside wikilinks ([`Task::done_date`]). Wikilinks are left out because a free rename
//! rewrites their targets (`move_note`'s backlink update), and the earliest date counts
//! because a rename can also put a newer date on the line; neither can then move a record
//! (the wikilinks are found by their brackets alone, see `wikilink_spans`).
//!
//! Setting a status rewrites only the box character and the record: marking done appends
//! `✅ <today>` unless the task already has a record, cancelling (or keeping a custom box)
//! keeps the record, and only setting todo or in progress removes it. A new description
//! keeps the task's record too ([`Task::text_problem`] refuses one that would move it). The
//! Tasks plugin's other markers (📅 due, ❌ cancelled, 🔁 recurrence …) are kept as text;
//! this module does not add a `❌` date when cancelling.
//!
//! "Reopening" means setting todo or in progress on a task whose box is neither
//! ([`reopens_old_done`]); since the record survives a cancellation, cancelling a long-done
//! task and then reopening it is judged like reopening it at once. A task without a record
//! cannot be dated, so it never counts as done "more than 7 days ago".

pub mod fields;

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
    /// The completion record: the earliest `✅ YYYY-MM-DD` outside wikilinks, if any.
    pub done_date: Option<Date>,
}

/// Parses one line (without its line ending) as a task; `None` if it is not one.
pub fn parse_task_line(line: &str) -> Option<Task> {
    // r[impl tools.update-task.cr-line]
    if line.contains('\r') {
        return None;
    }
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

/// The wikilinks of a line found by their brackets alone, as Obsidian's `[[…]]` (the same
/// rule as [`crate::links`], without its code spans): from a `[[` to the first `]]` after it,
/// unless what lies between is blank or holds another `[[`.
///
/// Code spans are left out on purpose. A rename rewrites only the text between a link's
/// `[[` and its `]]`; with brackets alone, whatever that new text holds (even `]]` or a
/// backtick), every `✅` outside the rewritten link is read as it was before, so no rename
/// can hide a record. A code span could be re-paired by a backtick in the new name.
fn wikilink_spans(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("[[") {
        let start = from + found;
        let Some(close) = text[start + 2..].find("]]").map(|c| start + 2 + c) else {
            break;
        };
        let inner = &text[start + 2..close];
        if inner.contains("[[") || inner.trim().is_empty() {
            from = start + 1;
            continue;
        }
        spans.push(start..close + 2);
        from = close + 2;
    }
    spans
}

/// Every `✅ YYYY-MM-DD` of `text` outside wikilinks: the byte range from the spaces before
/// the mark to the end of the date, and the date.
fn records(text: &str) -> Vec<(std::ops::Range<usize>, Date)> {
    let links = wikilink_spans(text);
    text.match_indices(DONE_MARK)
        .filter(|(at, _)| !links.iter().any(|link| link.contains(at)))
        .filter_map(|(at, mark)| {
            let after = &text[at + mark.len()..];
            let gap = after.len() - after.trim_start_matches(' ').len();
            let date_at = at + mark.len() + gap;
            let date = text.get(date_at..date_at + 10).and_then(Date::parse)?;
            let start = text[..at].trim_end_matches(' ').len();
            Some((start..date_at + 10, date))
        })
        .collect()
}

// r[impl tools.update-task.record]
/// The completion record of a description: its earliest `✅ YYYY-MM-DD` outside wikilinks.
fn done_date_of(text: &str) -> Option<Date> {
    records(text).into_iter().map(|(_, date)| date).min()
}

/// `text` without any `✅ YYYY-MM-DD` outside wikilinks (and the spaces before each),
/// looked for again after each pass, since a removal can join a `✅` to a later date.
fn without_done_date(text: &str) -> String {
    let mut out = text.to_owned();
    loop {
        let found = records(&out);
        if found.is_empty() {
            return out;
        }
        for (range, _) in found.into_iter().rev() {
            out.replace_range(range, "");
        }
    }
}

/// `text` with ` ✅ <date>` at its end.
fn with_done_date(text: &str, date: Date) -> String {
    let base = text.trim_end_matches(' ');
    if base.is_empty() {
        format!("{DONE_MARK} {date}")
    } else {
        format!("{base} {DONE_MARK} {date}")
    }
}

impl Task {
    /// Whether the box is open (todo or in progress).
    pub fn is_open(&self) -> bool {
        matches!(self.status, TaskStatus::Todo | TaskStatus::InProgress)
    }

    // r[impl tools.update-task.one-line]
    // r[impl tools.update-task.text-date]
    /// Why `text` may not become this task's description, if it may not: it holds a line
    /// break, or a `✅` date (outside wikilinks) other than the task's record, or, for a task
    /// without one, other than `today`. The completion record is the tool's to keep.
    pub fn text_problem(&self, text: &str, today: Date) -> Option<String> {
        if text.contains(['\r', '\n']) {
            return Some("is one line: it may not hold a line break".to_owned());
        }
        let allowed = self.done_date.unwrap_or(today);
        let (_, date) = records(text)
            .into_iter()
            .find(|(_, date)| *date != allowed)?;
        Some(match self.done_date {
            Some(record) => format!(
                "carries {DONE_MARK} {date}, but the task was completed on {record}: leave the \
                 date out and update_task keeps it"
            ),
            None => format!(
                "carries {DONE_MARK} {date}, but the task has no completion date: leave the \
                 date out and update_task writes {today} when it marks the task done"
            ),
        })
    }

    /// The line after `update_task` sets `status` and perhaps a new description, or why
    /// it may not: [`Task::text_problem`], then [`Task::render`], then a check that the line
    /// written has the status asked for and the completion record the task keeps (none when
    /// open; when done, its record or `today`; when cancelled, its record, or `today` given
    /// in the text of a task without one), so no description can put another date there.
    pub fn edit(
        &self,
        status: TaskStatus,
        text: Option<&str>,
        today: Date,
    ) -> Result<String, String> {
        if let Some(problem) = text.and_then(|text| self.text_problem(text, today)) {
            return Err(problem);
        }
        let line = self.render(status, text, today);
        let written = parse_task_line(&line).map(|task| (task.status, task.done_date));
        let keeps_record = match written {
            Some((written, record)) if written == status => match status {
                TaskStatus::Todo | TaskStatus::InProgress => record.is_none(),
                TaskStatus::Done => record == Some(self.done_date.unwrap_or(today)),
                TaskStatus::Cancelled | TaskStatus::Other(_) => {
                    record == self.done_date || (self.done_date.is_none() && record == Some(today))
                }
            },
            _ => false,
        };
        if keeps_record {
            Ok(line)
        } else {
            Err(format!(
                "would leave the task with another completion date than its own: leave \
                 {DONE_MARK} dates out of the text"
            ))
        }
    }

    // r[impl tools.update-task.record-kept]
    /// The line with a new status (see the module docs for the record), and optionally a new
    /// description. A new description without a `✅` date keeps the task's record; callers
    /// check one that carries a date with [`Task::text_problem`] first.
    pub fn render(&self, status: TaskStatus, text: Option<&str>, today: Date) -> String {
        let text = text.unwrap_or(&self.text);
        let text = match status {
            TaskStatus::Todo | TaskStatus::InProgress => without_done_date(text),
            _ if done_date_of(text).is_some() => text.to_owned(),
            TaskStatus::Done => with_done_date(text, self.done_date.unwrap_or(today)),
            TaskStatus::Cancelled | TaskStatus::Other(_) => match self.done_date {
                Some(date) => with_done_date(text, date),
                None => text.to_owned(),
            },
        };
        if text.is_empty() {
            format!("{}[{}]", self.prefix, status.marker())
        } else {
            format!("{}[{}] {}", self.prefix, status.marker(), text)
        }
    }
}

// r[impl tools.update-task.reopen]
// r[impl tools.update-task.confirm]
/// Whether moving `task` to `new_status` reopens a task marked done more than 7 days
/// before `today`: the `update_task` confirmation condition. The task is marked done on its
/// completion record, whatever its box (a cancelled task keeps its record), and reopening is
/// setting todo or in progress on a task whose box is neither.
pub fn reopens_old_done(task: &Task, new_status: TaskStatus, today: Date) -> bool {
    let reopening =
        !task.is_open() && matches!(new_status, TaskStatus::Todo | TaskStatus::InProgress);
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
        // Cancelling keeps the completion record.
        assert_eq!(
            done.render(TaskStatus::Cancelled, None, today),
            "- [-] write report ✅ 2026-11-01 #tag"
        );
        // Already dated: marking done again keeps the original date.
        assert_eq!(
            done.render(TaskStatus::Done, None, today),
            "- [x] write report ✅ 2026-11-01 #tag"
        );
        // A new description keeps the record too.
        assert_eq!(
            done.render(TaskStatus::Done, Some("new text"), today),
            "- [x] new text ✅ 2026-11-01"
        );
        assert_eq!(
            done.render(TaskStatus::Cancelled, Some("new text"), today),
            "- [-] new text ✅ 2026-11-01"
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

    // r[verify tools.update-task.record]
    // r[verify tools.update-task.reopen]
    #[test]
    fn the_record_is_the_earliest_date_outside_wikilinks_whatever_the_box() {
        let today = d("2026-11-30");
        let task = |line: &str| parse_task_line(line).unwrap();
        assert_eq!(
            task("- [x] a ✅ 2026-11-29 b ✅ 2026-11-01").done_date,
            Some(d("2026-11-01"))
        );
        assert_eq!(
            task("- [x] a [[n ✅ 2026-11-29]] ✅ 2026-11-01").done_date,
            Some(d("2026-11-01"))
        );
        assert_eq!(task("- [x] a [[n ✅ 2026-11-01]]").done_date, None);
        assert_eq!(task("- [x] a ![[n|✅ 2026-11-01]]").done_date, None);
        assert_eq!(task("- [x] ✅2026-11-01").done_date, Some(d("2026-11-01")));
        // Stripping leaves wikilinks alone, and looks again after each pass.
        let linked = task("- [x] [[n ✅ 2026-11-29]] ✅ 2026-11-01");
        assert_eq!(
            linked.render(TaskStatus::Todo, None, today),
            "- [ ] [[n ✅ 2026-11-29]]"
        );
        let joined = task("- [x] a ✅ ✅ 2026-11-01 2099-01-01");
        assert_eq!(joined.render(TaskStatus::Todo, None, today), "- [ ] a");
        // A cancelled or custom box with an old record is reopened like a done one; an open
        // box is not reopened.
        for line in ["- [-] t ✅ 2026-11-01", "- [?] t ✅ 2026-11-01"] {
            assert!(
                reopens_old_done(&task(line), TaskStatus::Todo, today),
                "{line}"
            );
            assert!(reopens_old_done(&task(line), TaskStatus::InProgress, today));
            assert!(!reopens_old_done(&task(line), TaskStatus::Cancelled, today));
            assert!(!reopens_old_done(&task(line), TaskStatus::Done, today));
        }
        let open = task("- [/] t ✅ 2026-11-01");
        assert!(!reopens_old_done(&open, TaskStatus::Todo, today));
    }

    #[test]
    fn a_backtick_in_a_new_name_cannot_pull_a_record_into_a_link() {
        use crate::links::{LinkMatcher, LinkResolver, LinkRewrite, rewrite_links};
        let line = "- [x] [[a]] `[[` ✅ 2026-11-01 ]]";
        let resolver = LinkResolver::default();
        let matcher = LinkMatcher::for_target(&resolver, "a");
        let rewrite = LinkRewrite {
            matcher: &matcher,
            new_target: "a]] `",
            include_embeds: true,
        };
        let (after, _) = rewrite_links(line, &resolver, &rewrite).unwrap();
        assert_eq!(after, "- [x] [[a]] `]] `[[` ✅ 2026-11-01 ]]");
        assert_eq!(
            parse_task_line(&after).unwrap().done_date,
            parse_task_line(line).unwrap().done_date
        );
    }

    /// Every sequence of up to `len` pieces.
    fn sequences(pieces: &[&str], len: usize) -> Vec<String> {
        let mut all = vec![String::new()];
        let mut last = vec![String::new()];
        for _ in 0..len {
            last = last
                .iter()
                .flat_map(|head| pieces.iter().map(move |piece| format!("{head}{piece}")))
                .collect();
            all.extend(last.iter().cloned());
        }
        all
    }

    // r[verify tools.compose.update-task]
    // r[verify tools.update-task.record]
    #[test]
    fn no_rename_hides_or_postpones_a_record_on_any_short_line() {
        // Exhaustive over short lines built from the pieces that make links and code spans,
        // and over short names: a rewrite of the link `[[a]]` never leaves the line undated
        // or dated later.
        use crate::links::{LinkMatcher, LinkResolver, LinkRewrite, rewrite_links};
        let resolver = LinkResolver::default();
        let matcher = LinkMatcher::for_target(&resolver, "a");
        let lines = sequences(&["`", "[[", "]]", " ✅ 2026-11-01 ", "[[a]]"], 6);
        let names = sequences(&["n", "]]", "`", "[["], 3);
        let mut checked = 0;
        for line in lines
            .iter()
            .filter(|body| body.contains("[[a]]"))
            .map(|body| format!("- [x] {body}"))
        {
            let Some(record) = parse_task_line(&line).unwrap().done_date else {
                continue;
            };
            for name in names.iter().filter(|n| !n.trim().is_empty()) {
                let rewrite = LinkRewrite {
                    matcher: &matcher,
                    new_target: name,
                    include_embeds: true,
                };
                if let Some((after, _)) = rewrite_links(&line, &resolver, &rewrite) {
                    let after_record = parse_task_line(&after).unwrap().done_date;
                    assert!(
                        after_record.is_some_and(|d| d <= record),
                        "{line:?} renamed to {name:?}: {after:?}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 10_000, "{checked}");
    }

    // r[verify tools.update-task.cr-line]
    #[test]
    fn a_line_with_a_carriage_return_is_not_a_task() {
        assert!(parse_task_line("- [ ] a\r- [x] b").is_none());
        assert!(parse_task_line("- [ ] a\r").is_none());
        let note = "- [ ] a\r\n- [ ] b\r- [x] c\n";
        assert_eq!(
            find_tasks(note).iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            [1]
        );
    }

    // r[verify tools.update-task.text-date]
    // r[verify tools.update-task.one-line]
    #[test]
    fn a_text_keeps_the_record_where_it_is() {
        let today = d("2026-11-30");
        let done = parse_task_line("- [x] a ✅ 2026-11-01").unwrap();
        let undated = parse_task_line("- [ ] a").unwrap();
        for (task, text) in [
            (&done, "a\nb"),
            (&done, "a\rb"),
            (&done, "a ✅ 2026-11-29"),
            (&done, "a ✅ 2026-11-01 ✅ 2026-11-30"),
            (&undated, "a ✅ 2026-11-29"),
            (&undated, "a ✅ 2099-01-01"),
        ] {
            assert!(task.text_problem(text, today).is_some(), "{text:?}");
            for status in [TaskStatus::Done, TaskStatus::Cancelled, TaskStatus::Todo] {
                assert!(task.edit(status, Some(text), today).is_err(), "{text:?}");
            }
        }
        for (task, text) in [
            (&done, "a ✅ 2026-11-01 #t"),
            (&done, "a [[n ✅ 2026-11-29]]"),
            (&undated, "a ✅ 2026-11-30"),
            (&undated, "a ✅ done"),
        ] {
            assert_eq!(task.text_problem(text, today), None, "{text:?}");
        }
        assert_eq!(
            done.edit(TaskStatus::Done, Some("b [[n ✅ 2026-11-29]]"), today),
            Ok("- [x] b [[n ✅ 2026-11-29]] ✅ 2026-11-01".to_owned())
        );
        assert_eq!(
            undated.edit(TaskStatus::Done, Some("a ✅ 2026-11-30"), today),
            Ok("- [x] a ✅ 2026-11-30".to_owned())
        );
        // A text whose date only forms once the record is stripped is refused too.
        let crafted = parse_task_line("- [ ] a").unwrap();
        assert!(
            crafted
                .edit(TaskStatus::Todo, Some("✅ ✅ 2026-11-30 2099-01-01"), today)
                .is_ok_and(|line| line == "- [ ]")
        );
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

    /// Pieces of a task line around a link, and of a note name a rename could write.
    const LINE_PIECE: &[&str] = &[
        "✅ 2026-11-01",
        "✅ 2026-11-29",
        "✅ ",
        "2026-11-20",
        " ",
        "`",
        "[[",
        "]]",
        "`[[",
        "]]`",
        "[[a]]",
        "|",
    ];
    const NAME_PIECE: &[&str] = &["n", " ", "✅ 2026-11-29", "]]", "[[", "`", "]] `", "|", "#"];

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
                    let record = match status {
                        TaskStatus::Todo | TaskStatus::InProgress => None,
                        TaskStatus::Done => Some(task.done_date.unwrap_or(today)),
                        _ => task.done_date,
                    };
                    prop_assert_eq!(back.done_date, record);
                }
            }
        }

        // r[verify tools.compose.update-task]
        // r[verify tools.update-task.record]
        #[test]
        fn a_rename_of_any_name_never_hides_or_postpones_a_record(
            pre in proptest::collection::vec(proptest::sample::select(LINE_PIECE), 0..8),
            post in proptest::collection::vec(proptest::sample::select(LINE_PIECE), 0..8),
            name in proptest::collection::vec(proptest::sample::select(NAME_PIECE), 1..4),
        ) {
            use crate::links::{LinkMatcher, LinkResolver, LinkRewrite, rewrite_links};
            let line = format!("- [x] {}[[a]]{}", pre.concat(), post.concat());
            let before = parse_task_line(&line).unwrap();
            // What move_note's backlink update does to links naming the moved note.
            let resolver = LinkResolver::default();
            let matcher = LinkMatcher::for_target(&resolver, "a");
            let new_target = name.concat();
            let rewrite = LinkRewrite { matcher: &matcher, new_target: &new_target, include_embeds: true };
            if let Some((after, _)) = rewrite_links(&line, &resolver, &rewrite) {
                let after = parse_task_line(&after).unwrap();
                prop_assert_eq!(after.status, before.status);
                if let Some(record) = before.done_date {
                    prop_assert!(
                        after.done_date.is_some_and(|d| d <= record),
                        "{:?} -> {:?}", line, after
                    );
                }
            }
        }

        // r[verify tools.update-task.transitions]
        // r[verify tools.update-task.record-kept]
        #[test]
        fn no_text_changes_the_box_or_moves_the_record(
            line in "(- |  \\* |> 1\\. )\\[[ xX/\\-?]\\]( [a\\[\\] ✅0-9\\-]{0,24})?",
            text in "[a\\[\\] ✅x/\\-`|0-9]{0,16}(✅ ?2026-11-(01|29|30)|2099-01-01)?[a\\] ]{0,4}",
        ) {
            let today = Date::new(2026, 11, 30).unwrap();
            let task = parse_task_line(&line).unwrap();
            for status in [TaskStatus::Todo, TaskStatus::Done, TaskStatus::InProgress, TaskStatus::Cancelled] {
                if let Ok(written) = task.edit(status, Some(&text), today) {
                    let back = parse_task_line(&written).unwrap();
                    prop_assert_eq!(&back.prefix, &task.prefix);
                    prop_assert_eq!(back.status, status);
                    match status {
                        TaskStatus::Todo | TaskStatus::InProgress => {
                            prop_assert_eq!(back.done_date, None)
                        }
                        TaskStatus::Done => {
                            prop_assert_eq!(back.done_date, Some(task.done_date.unwrap_or(today)))
                        }
                        _ => prop_assert!(
                            back.done_date == task.done_date
                                || (task.done_date.is_none() && back.done_date == Some(today))
                        ),
                    }
                } else {
                    // Only a text with a ✅ in it is ever refused.
                    prop_assert!(text.contains('✅'), "{:?} refused for {:?}", text, line);
                }
            }
        }
    }
}
