//! The fields of a task's description as the Tasks plugin writes them, and as Dataview
//! inline fields (spec/tasks.md `tasks.fields.emoji`, `tasks.fields.dataview`,
//! `tasks.add.form`).
//!
//! The Tasks plugin reads its emoji fields from the END of the description, one after the
//! other, until what is left ends in none (its `DefaultTaskSerializer`): trailing `#tags`
//! and a trailing block id (`^id`) may sit among them. An emoji inside the description
//! ("ship 📅 2026-01-01 prep notes") is text to the plugin, so it is text here too. The
//! symbols (each with an optional variation selector U+FE0F):
//! priority 🔺 highest, ⏫ high, 🔼 medium, 🔽 low, ⏬ lowest; dates `YYYY-MM-DD` after
//! 🛫 start, ➕ created, ⏳/⌛ scheduled, 📅/📆/🗓 due, ✅ done, ❌ cancelled; 🔁 recurrence
//! (letters, digits, `,`, ` `, `!`), 🏁 on completion, 🆔 id, ⛔ depends on.
//!
//! Dataview's inline fields `[key:: value]` (and `(key:: value)`) count wherever they are on
//! the line, as Dataview reads them: `due`, `scheduled`, `start`, `created`, `completion`,
//! `cancelled`, `priority`, `repeat`. An emoji field wins over a Dataview field of the same
//! kind.

use super::Date;

/// A Tasks-plugin priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    Highest,
    High,
    Medium,
    Low,
    Lowest,
}

impl Priority {
    const ALL: [Priority; 5] = [
        Priority::Highest,
        Priority::High,
        Priority::Medium,
        Priority::Low,
        Priority::Lowest,
    ];

    /// The plugin's emoji for it.
    pub fn emoji(self) -> char {
        match self {
            Priority::Highest => '🔺',
            Priority::High => '⏫',
            Priority::Medium => '🔼',
            Priority::Low => '🔽',
            Priority::Lowest => '⏬',
        }
    }

    /// `highest`, `high`, `medium`, `low`, `lowest`.
    pub fn name(self) -> &'static str {
        match self {
            Priority::Highest => "highest",
            Priority::High => "high",
            Priority::Medium => "medium",
            Priority::Low => "low",
            Priority::Lowest => "lowest",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Priority::ALL.into_iter().find(|p| p.name() == name)
    }

    fn from_emoji(c: char) -> Option<Self> {
        Priority::ALL.into_iter().find(|p| p.emoji() == c)
    }
}

/// What a task's description says besides its text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskFields {
    pub due: Option<Date>,
    pub scheduled: Option<Date>,
    pub start: Option<Date>,
    pub created: Option<Date>,
    pub done: Option<Date>,
    pub cancelled: Option<Date>,
    pub priority: Option<Priority>,
    /// The recurrence rule as written (`every week on Monday`).
    pub recurrence: Option<String>,
}

#[derive(Clone, Copy)]
enum DateKind {
    Due,
    Scheduled,
    Start,
    Created,
    Done,
    Cancelled,
}

const DATE_SYMBOLS: &[(char, DateKind)] = &[
    ('📅', DateKind::Due),
    ('📆', DateKind::Due),
    ('🗓', DateKind::Due),
    ('⏳', DateKind::Scheduled),
    ('⌛', DateKind::Scheduled),
    ('🛫', DateKind::Start),
    ('➕', DateKind::Created),
    ('✅', DateKind::Done),
    ('❌', DateKind::Cancelled),
];

const DATAVIEW_DATES: &[(&str, DateKind)] = &[
    ("due", DateKind::Due),
    ("scheduled", DateKind::Scheduled),
    ("start", DateKind::Start),
    ("created", DateKind::Created),
    ("completion", DateKind::Done),
    ("cancelled", DateKind::Cancelled),
];

const VARIATION_SELECTOR: char = '\u{FE0F}';

impl TaskFields {
    fn slot(&mut self, kind: DateKind) -> &mut Option<Date> {
        match kind {
            DateKind::Due => &mut self.due,
            DateKind::Scheduled => &mut self.scheduled,
            DateKind::Start => &mut self.start,
            DateKind::Created => &mut self.created,
            DateKind::Done => &mut self.done,
            DateKind::Cancelled => &mut self.cancelled,
        }
    }
}

/// Which characters a value field's value may hold.
type ValueChars = fn(char) -> bool;

/// `rest` without a trailing symbol `symbol` (and its variation selector), if it ends so.
fn strip_symbol(rest: &str, symbol: char) -> Option<&str> {
    let rest = rest.strip_suffix(VARIATION_SELECTOR).unwrap_or(rest);
    rest.strip_suffix(symbol)
}

/// The trailing field of `rest` (already trimmed at its end), applied to `fields`; what is
/// left before it, or `None` when `rest` ends in no field.
fn strip_one<'a>(rest: &'a str, fields: &mut TaskFields) -> Option<&'a str> {
    // A priority emoji alone.
    if let Some(last) = rest
        .trim_end_matches(VARIATION_SELECTOR)
        .chars()
        .next_back()
        && let Some(priority) = Priority::from_emoji(last)
    {
        fields.priority = Some(priority);
        return strip_symbol(rest, last);
    }
    // A date field: the symbol, spaces, `YYYY-MM-DD`.
    if rest.len() >= 10
        && rest.is_char_boundary(rest.len() - 10)
        && let Some(date) = Date::parse(&rest[rest.len() - 10..])
    {
        let before = rest[..rest.len() - 10].trim_end_matches(' ');
        for (symbol, kind) in DATE_SYMBOLS {
            if let Some(left) = strip_symbol(before, *symbol) {
                *fields.slot(*kind) = Some(date);
                return Some(left);
            }
        }
    }
    // A value field: the symbol, then a value of the characters the plugin allows.
    let value_fields: [(char, ValueChars); 4] = [
        ('🔁', |c| {
            c.is_ascii_alphanumeric() || matches!(c, ',' | ' ' | '!')
        }),
        ('🏁', |c| c.is_ascii_alphabetic()),
        ('🆔', |c| {
            c.is_ascii_alphanumeric() || matches!(c, '-' | '_')
        }),
        ('⛔', |c| {
            c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ',' | ' ')
        }),
    ];
    for (symbol, allowed) in value_fields {
        if let Some(at) = rest.rfind(symbol) {
            let after = &rest[at + symbol.len_utf8()..];
            // The symbol, spaces, then the value (`🏁 *([a-zA-Z]+)$` in the plugin).
            let value = after
                .strip_prefix(VARIATION_SELECTOR)
                .unwrap_or(after)
                .trim_start_matches(' ');
            if !value.trim().is_empty() && value.chars().all(allowed) {
                if symbol == '🔁' {
                    fields.recurrence = Some(value.trim().to_owned());
                }
                return Some(&rest[..at]);
            }
        }
    }
    None
}

/// `rest` without one trailing `#tag` or `^block-id`, if it ends in one.
fn strip_tag_or_block(rest: &str) -> Option<&str> {
    let start = rest.rfind([' ', '\t']).map_or(0, |at| at + 1);
    let word = &rest[start..];
    let is_tag = word.len() > 1
        && word.starts_with('#')
        && word[1..]
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '/'));
    let is_block = word.len() > 1
        && word.starts_with('^')
        && word[1..]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-');
    (is_tag || is_block).then(|| &rest[..start])
}

// r[impl tasks.fields.emoji]
// r[impl tasks.fields.dataview]
/// The fields of a task description (the text after its box).
pub fn fields_of(description: &str) -> TaskFields {
    let mut fields = TaskFields::default();
    dataview_fields(description, &mut fields);
    // Emoji fields, read from the end as the plugin does; they win over Dataview's.
    let mut emoji = TaskFields::default();
    let mut rest = description.trim_end();
    loop {
        if let Some(left) = strip_one(rest, &mut emoji) {
            rest = left.trim_end();
        } else if let Some(left) = strip_tag_or_block(rest) {
            rest = left.trim_end();
        } else {
            break;
        }
    }
    let TaskFields {
        due,
        scheduled,
        start,
        created,
        done,
        cancelled,
        priority,
        recurrence,
    } = emoji;
    fields.due = due.or(fields.due);
    fields.scheduled = scheduled.or(fields.scheduled);
    fields.start = start.or(fields.start);
    fields.created = created.or(fields.created);
    fields.done = done.or(fields.done);
    fields.cancelled = cancelled.or(fields.cancelled);
    fields.priority = priority.or(fields.priority);
    fields.recurrence = recurrence.or(fields.recurrence);
    fields
}

/// Dataview's `[key:: value]` and `(key:: value)` fields anywhere on the line.
fn dataview_fields(text: &str, fields: &mut TaskFields) {
    if !text.contains("::") {
        return;
    }
    let mut from = 0;
    while let Some(found) = text[from..].find(['[', '(']) {
        let open = from + found;
        let close_char = if text[open..].starts_with('[') {
            ']'
        } else {
            ')'
        };
        let Some(len) = text[open + 1..].find(close_char) else {
            break;
        };
        let inner = &text[open + 1..open + 1 + len];
        from = open + 1;
        let Some((key, value)) = inner.split_once("::") else {
            continue;
        };
        let key = key.trim().to_ascii_lowercase();
        let value = value.trim();
        if let Some((_, kind)) = DATAVIEW_DATES.iter().find(|(name, _)| *name == key) {
            if let Some(date) = value.get(..10).and_then(Date::parse) {
                let slot = fields.slot(*kind);
                slot.get_or_insert(date);
            }
        } else if key == "priority" {
            if let Some(p) = Priority::from_name(&value.to_ascii_lowercase()) {
                fields.priority.get_or_insert(p);
            }
        } else if key == "repeat" && !value.is_empty() {
            fields.recurrence.get_or_insert_with(|| value.to_owned());
        }
    }
}

// r[impl tasks.add.form]
/// A new task line as the Tasks plugin writes it: `- [ ] text`, then the priority, the
/// scheduled date and the due date in the plugin's order (`⏫ ⏳ … 📅 …`).
pub fn new_task_line(
    text: &str,
    priority: Option<Priority>,
    scheduled: Option<Date>,
    due: Option<Date>,
) -> String {
    let mut line = format!("- [ ] {}", text.trim());
    if let Some(p) = priority {
        line.push(' ');
        line.push(p.emoji());
    }
    if let Some(date) = scheduled {
        line.push_str(&format!(" ⏳ {date}"));
    }
    if let Some(date) = due {
        line.push_str(&format!(" 📅 {date}"));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn d(s: &str) -> Option<Date> {
        Date::parse(s)
    }

    // r[verify tasks.fields.emoji]
    #[test]
    fn emoji_fields_are_read_from_the_end_as_the_plugin_does() {
        let f = fields_of(
            "Do exercises #todo #health 🔼 🔁 every day when done ➕ 2023-07-01 🛫 2023-07-02 ⏳ 2023-07-03 📅 2023-07-04 ✅ 2023-07-05 ^dcf64c",
        );
        assert_eq!(f.priority, Some(Priority::Medium));
        assert_eq!(f.recurrence.as_deref(), Some("every day when done"));
        assert_eq!(f.created, d("2023-07-01"));
        assert_eq!(f.start, d("2023-07-02"));
        assert_eq!(f.scheduled, d("2023-07-03"));
        assert_eq!(f.due, d("2023-07-04"));
        assert_eq!(f.done, d("2023-07-05"));
        // The other due and scheduled symbols, variation selectors, no space, a cancel date.
        let f = fields_of("a 📆2026-01-02 ⌛\u{FE0F} 2026-01-01 ❌ 2026-01-03 ⏬\u{FE0F}");
        assert_eq!(
            (f.due, f.scheduled, f.cancelled, f.priority),
            (
                d("2026-01-02"),
                d("2026-01-01"),
                d("2026-01-03"),
                Some(Priority::Lowest)
            )
        );
        assert_eq!(fields_of("b 🗓 2026-02-01 #x").due, d("2026-02-01"));
        for (emoji, p) in [
            ("🔺", Priority::Highest),
            ("⏫", Priority::High),
            ("🔽", Priority::Low),
        ] {
            assert_eq!(fields_of(&format!("t {emoji}")).priority, Some(p));
        }
        // Inside the description a field is text, as it is to the plugin.
        let f = fields_of("ship 📅 2026-01-01 prep notes");
        assert_eq!(f, TaskFields::default());
        // An id, a dependency and an on-completion action are read past, not kept.
        let f = fields_of("t 📅 2026-05-01 🆔 abc123 ⛔ x1,y2 🏁 delete");
        assert_eq!(f.due, d("2026-05-01"));
        // An invalid date is not a field.
        assert_eq!(fields_of("t 📅 2026-02-30").due, None);
    }

    // r[verify tasks.fields.dataview]
    #[test]
    fn dataview_fields_count_anywhere_and_emoji_wins() {
        let f = fields_of(
            "call [due:: 2026-03-01] Bob (scheduled:: 2026-02-27) [priority:: High] [repeat:: every week]",
        );
        assert_eq!(f.due, d("2026-03-01"));
        assert_eq!(f.scheduled, d("2026-02-27"));
        assert_eq!(f.priority, Some(Priority::High));
        assert_eq!(f.recurrence.as_deref(), Some("every week"));
        assert_eq!(
            fields_of("x [completion:: 2026-01-05]").done,
            d("2026-01-05")
        );
        let f = fields_of("x [due:: 2026-03-01] 📅 2026-04-01");
        assert_eq!(f.due, d("2026-04-01"));
        assert_eq!(fields_of("x [due:: soon]").due, None);
    }

    // r[verify tasks.add.form]
    #[test]
    fn a_new_line_reads_back_as_written() {
        let line = new_task_line(
            " call Bob ",
            Some(Priority::High),
            d("2026-03-01"),
            d("2026-03-02"),
        );
        assert_eq!(line, "- [ ] call Bob ⏫ ⏳ 2026-03-01 📅 2026-03-02");
        let task = super::super::parse_task_line(&line).unwrap();
        let f = fields_of(&task.text);
        assert_eq!(
            (f.priority, f.scheduled, f.due),
            (Some(Priority::High), d("2026-03-01"), d("2026-03-02"))
        );
        assert_eq!(new_task_line("x", None, None, None), "- [ ] x");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn any_description_parses_without_panic(text in "[ a#^\\[\\]():✅📅⏳🔁⏫🔼\u{FE0F}0-9\\-]{0,40}") {
            let _ = fields_of(&text);
        }

        #[test]
        fn written_fields_read_back(
            words in "[a-z]{1,8}( [a-z]{1,8}){0,3}",
            p in proptest::option::of(0usize..5),
            s in proptest::option::of(0i64..40_000),
            due in proptest::option::of(0i64..40_000),
        ) {
            let priority = p.map(|i| Priority::ALL[i]);
            let scheduled = s.map(Date::from_days);
            let due = due.map(Date::from_days);
            let line = new_task_line(&words, priority, scheduled, due);
            let task = super::super::parse_task_line(&line).unwrap();
            let f = fields_of(&task.text);
            prop_assert_eq!((f.priority, f.scheduled, f.due), (priority, scheduled, due));
        }
    }
}
