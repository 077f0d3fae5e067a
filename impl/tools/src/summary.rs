//! What the human approves: a bounded, escaped summary of a gated call (spec/tools.md
//! `tools.summary`, `tools.summary.escaped`, `tools.summary.bounded`).
//!
//! A summary names the tool, its targets and what would change (for a write the old and new
//! sizes and a short unified diff; for a move from → to and the backlinks it would rewrite;
//! for a delete the note and whether it is restorable). The gate stores the rendered text
//! with the raised request, so `obsidian-tc pending`, `obsidian-tc elicit` and the
//! confirmation form all show the same words. Rendering escapes every control, bidi and
//! zero-width character (a note's text cannot rewrite the approver's terminal or reorder
//! what they read) and marks what was cut.

use std::fmt::Write as _;

use crate::tool::Precheck;

/// The most bytes a rendered summary holds (the cut is marked inside it).
pub const MAX_SUMMARY_BYTES: usize = 4096;
/// The most lines of a diff a summary shows.
pub const MAX_DIFF_LINES: usize = 24;
/// How long a summary's diff is looked for before the one found so far is shown.
pub const DIFF_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(100);
/// The most bytes of one line of a summary.
pub const MAX_LINE_BYTES: usize = 240;
/// The most items (notes, links) a summary names one by one; the rest are counted.
pub const MAX_NAMED: usize = 20;

/// A gated call's summary, before rendering.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// One line: what the call does.
    pub headline: String,
    /// The paths (or other targets) it acts on.
    pub targets: Vec<String>,
    /// Further lines: sizes, a diff, the backlinks a move rewrites.
    pub details: Vec<String>,
}

impl Summary {
    pub fn new(headline: impl Into<String>) -> Self {
        Summary {
            headline: headline.into(),
            ..Summary::default()
        }
    }

    pub fn target(mut self, target: impl Into<String>) -> Self {
        self.targets.push(target.into());
        self
    }

    pub fn detail(mut self, line: impl Into<String>) -> Self {
        self.details.push(line.into());
        self
    }

    /// Adds the first [`MAX_NAMED`] of `lines` as details, then `rest(n)` for the `n` left.
    pub fn details_named(self, lines: Vec<String>, rest: impl FnOnce(usize) -> String) -> Self {
        self.named(lines, rest, false)
    }

    /// Adds the first [`MAX_NAMED`] of `lines` as targets, then `rest(n)` (a detail) for the
    /// `n` left.
    pub fn targets_named(self, lines: Vec<String>, rest: impl FnOnce(usize) -> String) -> Self {
        self.named(lines, rest, true)
    }

    fn named(
        mut self,
        lines: Vec<String>,
        rest: impl FnOnce(usize) -> String,
        targets: bool,
    ) -> Self {
        let left = lines.len().saturating_sub(MAX_NAMED);
        for line in lines.into_iter().take(MAX_NAMED) {
            if targets {
                self.targets.push(line);
            } else {
                self.details.push(line);
            }
        }
        if left > 0 {
            self.details.push(rest(left));
        }
        self
    }

    // r[impl tools.summary.diff-bounded]
    /// Adds a unified diff of `old` → `new` (at most [`MAX_DIFF_LINES`] lines, the rest
    /// counted). The diff is looked for for at most [`DIFF_TIMEOUT`]: Myers' algorithm on two
    /// long and unrelated texts would otherwise hold a thread for hours, and past the deadline
    /// `similar` gives a diff that is correct but not minimal. Only the lines shown are
    /// rendered; the rest are counted.
    pub fn diff(mut self, old: &str, new: &str) -> Self {
        let diff = similar::TextDiff::configure()
            .timeout(DIFF_TIMEOUT)
            .diff_lines(old, new);
        let mut unified = diff.unified_diff();
        unified.context_radius(2);
        let mut lines = DiffLines::default();
        for (index, hunk) in unified.iter_hunks().enumerate() {
            if index == 0 {
                lines.show(|| "--- before".to_owned());
                lines.show(|| "+++ after".to_owned());
            }
            lines.show(|| hunk.header().to_string());
            for change in hunk.iter_changes() {
                lines.show(|| {
                    let value = change.to_string_lossy();
                    let value = value.strip_suffix('\n').unwrap_or(&value);
                    let value = value.strip_suffix('\r').unwrap_or(value);
                    format!("{}{value}", change.tag())
                });
                if change.missing_newline() {
                    lines.show(|| "\\ No newline at end of file".to_owned());
                }
            }
        }
        self.details.extend(lines.shown);
        if lines.more > 0 {
            self.details
                .push(format!("[… {} more diff lines]", lines.more));
        }
        self
    }

    /// The summary of a tool that says nothing more than its declared paths.
    pub fn targets_only<P: ?Sized>(tool: &str, precheck: &Precheck<P>) -> Self {
        let mut summary = Summary::new(format!("{tool} on the paths it declares"));
        for (op, path) in &precheck.acl {
            summary.targets.push(format!("{} ({op})", path.as_str()));
        }
        summary
    }

    /// The text a human reads: tool, vault, caller and args_hash (never cut), then the
    /// headline, targets and details, each line escaped and bounded, the whole at most
    /// [`MAX_SUMMARY_BYTES`] with the cut marked.
    pub fn render(&self, tool: &str, vault: &str, caller: &str, args_hash: &str) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} in vault {} for caller {}",
            line(tool),
            line(vault),
            line(caller)
        );
        let _ = writeln!(out, "args_hash {}", line(args_hash));
        let head_len = out.len();
        let mut body = String::new();
        let _ = writeln!(body, "{}", line(&self.headline));
        for target in &self.targets {
            let _ = writeln!(body, "  target: {}", line(target));
        }
        for detail in &self.details {
            let _ = writeln!(body, "  {}", line(detail));
        }
        let room = MAX_SUMMARY_BYTES.saturating_sub(head_len);
        if body.len() > room {
            // Room for the marker itself: "[… summary cut: N more bytes]" with N < 10^20.
            let keep = floor_char_boundary(&body, room.saturating_sub(64));
            let cut_bytes = body.len() - keep;
            body.truncate(keep);
            let _ = write!(body, "\n[… summary cut: {cut_bytes} more bytes]\n");
        }
        out.push_str(&body);
        out.trim_end().to_owned()
    }
}

/// The lines of a diff a summary shows, and how many more there were (never rendered).
#[derive(Default)]
struct DiffLines {
    shown: Vec<String>,
    more: usize,
}

impl DiffLines {
    fn show(&mut self, line: impl FnOnce() -> String) {
        if self.shown.len() < MAX_DIFF_LINES {
            self.shown.push(line());
        } else {
            self.more += 1;
        }
    }
}

/// The largest char boundary of `text` at or before `at`.
pub(crate) fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while at > 0 && !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// What looks like a credential in text a summary shows: a bearer token, a JWT, an API key
/// of the common `sk-`/`ghp_`-style prefixes, a PEM private key line, and `key = value`
/// assignments of names like token, secret, password or api key.
fn secret_patterns() -> &'static [(regex::Regex, &'static str)] {
    static PATTERNS: std::sync::OnceLock<Vec<(regex::Regex, &'static str)>> =
        std::sync::OnceLock::new();
    PATTERNS.get_or_init(|| {
        [
            (r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}", "$1 [redacted]"),
            (r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}", "[redacted JWT]"),
            (r"\b(sk|pk|rk|ghp|gho|ghs|xox[abpr])[-_][A-Za-z0-9_-]{12,}", "[redacted key]"),
            (r"-----BEGIN [A-Z ]*PRIVATE KEY-----", "[redacted private key]"),
            (
                r#"(?i)\b([A-Za-z0-9_]*(?:token|secret|password|passwd|api[_-]?key)[A-Za-z0-9_]*)(\s*[:=]\s*)["']?[^\s"']{6,}"#,
                "$1$2[redacted]",
            ),
        ]
        .into_iter()
        .filter_map(|(pattern, with)| regex::Regex::new(pattern).ok().map(|re| (re, with)))
        .collect()
    })
}

// r[impl tools.summary.redacted]
/// `text` with anything that looks like a credential replaced (see [`secret_patterns`]).
pub fn redact_secrets(text: &str) -> String {
    let mut out = std::borrow::Cow::Borrowed(text);
    for (pattern, with) in secret_patterns() {
        if pattern.is_match(&out) {
            out = std::borrow::Cow::Owned(pattern.replace_all(&out, *with).into_owned());
        }
    }
    out.into_owned()
}

/// Whether a line of `text` still shows a token-shaped credential (a bearer token, a JWT, a
/// prefixed API key, a private key header): what a rendered summary must never do. Judged
/// line by line, as the summary is made: two lines side by side (a detail ending in
/// `Bearer`, the next one starting with a word) are two texts, not one credential.
pub fn shows_credential(text: &str) -> bool {
    let patterns = secret_patterns();
    // The last pattern (a `name = value` assignment) matches its own `[redacted]`.
    let token_shaped = &patterns[..patterns.len().saturating_sub(1)];
    text.lines().any(|line| {
        token_shaped
            .iter()
            .any(|(pattern, _)| pattern.is_match(line))
    })
}

/// One line of a summary: redacted as given (a credential split by a tab or a line break
/// is still one), escaped, redacted again (what is shown is what is judged), and cut at
/// [`MAX_LINE_BYTES`] with the cut marked.
fn line(text: &str) -> String {
    let escaped = redact_secrets(&escape_for_terminal(&redact_secrets(text)));
    if escaped.len() <= MAX_LINE_BYTES {
        return escaped;
    }
    let keep = floor_char_boundary(&escaped, MAX_LINE_BYTES);
    format!(
        "{}[… {} more bytes]",
        &escaped[..keep],
        escaped.len() - keep
    )
}

/// Whether `c` would change how a terminal shows what follows it, or hide itself: C0 and
/// C1 controls (newline included: a summary line is one line), DEL, the bidi embeddings,
/// overrides, isolates and marks, and the zero-width characters.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{2069}'
                | '\u{FEFF}'
                | '\u{FFF9}'..='\u{FFFB}'
        )
}

// r[impl tools.summary.escaped]
/// `text` with every character that could rewrite a terminal or hide itself shown as
/// `\u{XXXX}` (a backslash itself is doubled so an escape cannot be forged).
pub fn escape_for_terminal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\\' {
            out.push_str("\\\\");
        } else if needs_escape(c) {
            let _ = write!(out, "\\u{{{:04X}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // r[verify tools.summary.escaped]
    #[test]
    fn controls_bidi_and_zero_width_are_shown_not_obeyed() {
        let shown = escape_for_terminal("a\u{1b}[2Jb\u{202E}c\u{200B}d\ne\\u{41}");
        assert_eq!(
            shown,
            "a\\u{001B}[2Jb\\u{202E}c\\u{200B}d\\u{000A}e\\\\u{41}"
        );
    }

    // r[verify tools.summary.redacted]
    #[test]
    fn credentials_in_shown_text_are_redacted() {
        for secret in [
            "Authorization: Bearer abcdefghijklmnop1234",
            "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXZhbHVl",
            "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuv",
            "github: ghp_abcdefghijklmnopqrstuvwxyz0123",
            "elicit_token: 0123456789abcdef0123456789abcdef",
            "password = \"hunter22hunter\"",
            "-----BEGIN OPENSSH PRIVATE KEY-----",
        ] {
            let shown = redact_secrets(secret);
            assert!(shown.contains("[redacted"), "{secret} -> {shown}");
            for word in [
                "abcdefghijklmnop1234",
                "c2lnbmF0dXJlLXZhbHVl",
                "abcdefghijklmnopqrstuv",
                "0123456789abcdef0123456789abcdef",
                "hunter22hunter",
            ] {
                assert!(!shown.contains(word), "{secret} -> {shown}");
            }
        }
        // Ordinary prose and hashes stay as they are.
        for plain in [
            "args_hash 0123456789abcdef",
            "the token bucket is full",
            "size: 14 bytes -> 12 bytes",
        ] {
            assert_eq!(redact_secrets(plain), plain);
        }
    }

    // r[verify tools.summary.redacted]
    #[test]
    fn a_credential_split_by_a_tab_or_a_line_break_is_redacted_before_it_is_escaped() {
        for secret in [
            "Authorization: Bearer\tabcdefghijklmnop1234",
            "Authorization: Bearer\nabcdefghijklmnop1234",
            "password =\n hunter22hunter",
        ] {
            let shown = Summary::new("a call").detail(secret).render(
                "write_note",
                "main",
                "stdio",
                "0123456789abcdef",
            );
            assert!(shown.contains("[redacted]"), "{secret:?} -> {shown}");
            assert!(!shown.contains("abcdefghijklmnop1234"), "{shown}");
            assert!(!shown.contains("hunter22hunter"), "{shown}");
        }
        // Two details side by side are judged as the two lines they are shown as (the fuzz
        // seed split_bearer_across_lines): the header's hash line stays as it is.
        let shown = Summary::new("a call")
            .detail("the word Bearer")
            .detail("abcdefghijklmnop1234")
            .render("write_note", "main", "Bearer", "0123456789abcdef");
        assert!(!shows_credential(&shown), "{shown}");
        assert_eq!(shown.lines().nth(1), Some("args_hash 0123456789abcdef"));
        assert!(shows_credential("one line\nBearer abcdefghijklmnop1234\n"));
    }

    #[test]
    fn a_long_summary_is_cut_and_says_so_but_keeps_the_hash() {
        let mut summary = Summary::new("overwrite big.md");
        for i in 0..2000 {
            summary = summary.detail(format!("line {i}"));
        }
        let text = summary.render("write_note", "main", "stdio", "0123456789abcdef");
        assert!(text.len() <= MAX_SUMMARY_BYTES, "{}", text.len());
        assert!(text.contains("args_hash 0123456789abcdef"));
        assert!(text.contains("summary cut"));
    }

    #[test]
    fn a_diff_is_bounded() {
        let old: String = (0..100).map(|i| format!("{i}\n")).collect();
        let new: String = (0..100).map(|i| format!("{}\n", i * 2)).collect();
        let summary = Summary::new("x").diff(&old, &new);
        assert!(summary.details.len() <= MAX_DIFF_LINES + 1);
        assert!(summary.details.last().unwrap().contains("more diff lines"));
    }

    // r[verify tools.summary.diff-bounded]
    /// Two long texts with no line in common: without a deadline Myers' search on them runs
    /// for hours. Run on its own thread, so a hang fails the test instead of stalling it.
    #[test]
    fn a_diff_of_long_unrelated_texts_is_found_promptly_and_counted_exactly() {
        let (sent, received) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let old: String = (0..200_000).map(|i| format!("a{i}\n")).collect();
            let new: String = (0..200_000).map(|i| format!("b{i}\n")).collect();
            let _ = sent.send(Summary::new("x").diff(&old, &new));
        });
        let summary = received
            .recv_timeout(std::time::Duration::from_secs(300))
            .expect("the diff of two long unrelated texts never came");
        assert_eq!(summary.details.len(), MAX_DIFF_LINES + 1);
        assert_eq!(
            summary.details[..3],
            ["--- before", "+++ after", "@@ -1,200000 +1,200000 @@"]
        );
        // No line in common: every diff deletes all 200,000 and inserts all 200,000.
        let total = 3 + 400_000;
        assert_eq!(
            summary.details[MAX_DIFF_LINES],
            format!("[… {} more diff lines]", total - MAX_DIFF_LINES)
        );
    }

    // r[verify tools.summary.write]
    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// The lines shown, and the count of the rest, are those of `similar`'s own rendering
        /// of the whole unified diff (for lines ended by `\n` or `\r\n`; a lone `\r`, which
        /// `similar` also takes for a line end, is shown on a line of its own here).
        #[test]
        fn the_diff_shown_is_the_start_of_the_whole_unified_diff(
            old in proptest::collection::vec("[ab]{0,3}(\r?\n)?", 0..40),
            new in proptest::collection::vec("[ab]{0,3}(\r?\n)?", 0..40),
        ) {
            let (old, new) = (old.concat(), new.concat());
            let whole = similar::TextDiff::from_lines(&old, &new)
                .unified_diff()
                .context_radius(2)
                .header("before", "after")
                .to_string();
            let mut expected: Vec<String> = whole.lines().map(str::to_owned).collect();
            if expected.len() > MAX_DIFF_LINES {
                let more = expected.len() - MAX_DIFF_LINES;
                expected.truncate(MAX_DIFF_LINES);
                expected.push(format!("[… {more} more diff lines]"));
            }
            prop_assert_eq!(Summary::new("x").diff(&old, &new).details, expected);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn rendered_summaries_hold_no_raw_control_or_bidi(text in any::<String>(), n in 0usize..50) {
            let mut summary = Summary::new(text.clone()).target(text.clone());
            for _ in 0..n { summary = summary.detail(text.clone()); }
            let shown = summary.render(&text, "v", "c", "h");
            prop_assert!(shown.len() <= MAX_SUMMARY_BYTES);
            for c in shown.chars() {
                prop_assert!(c == '\n' || !needs_escape(c), "{:?}", c);
            }
        }
    }
}
