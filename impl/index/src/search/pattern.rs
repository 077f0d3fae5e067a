//! Regex mode (spec/index.md `search.regex`, `search.regex.refused`): the `regex` crate, whose
//! matching is linear in the text (no backtracking, no backreferences), with its compiled
//! program held to [`SIZE_LIMIT`], over each chunk's heading and text as the index keeps them.

use std::collections::HashSet;

use regex::{Regex, RegexBuilder};
use tc_tools::ToolError;
use tc_vault::path::FolderPath;

use super::text::{Ranked, in_scope};
use crate::index::VaultIndex;

/// The most bytes a compiled pattern (and each of its lazy DFAs) may take.
pub const SIZE_LIMIT: usize = 1 << 20;
/// The characters of a snippet on each side of the match.
const CONTEXT_CHARS: usize = 60;

// r[impl search.regex.refused]
/// The caller's pattern, compiled under the size limit, or `validation_error` at `/query`.
pub fn compile(pattern: &str) -> Result<Regex, ToolError> {
    RegexBuilder::new(pattern)
        .size_limit(SIZE_LIMIT)
        .dfa_size_limit(SIZE_LIMIT)
        .build()
        .map_err(|error| {
            let why = match error {
                regex::Error::CompiledTooBig(_) => {
                    "is too large once compiled (over 1 MiB); use a simpler pattern".to_owned()
                }
                other => format!("is not a valid regular expression: {other}"),
            };
            ToolError::validation("/query", why)
        })
}

// r[impl search.regex]
/// The notes under `folder` (and in `only`) with a chunk matching `re`, that `keep` lets
/// through: by the number of matching chunks, then path; each by its first matching chunk.
pub(crate) fn regex_ranked(
    index: &VaultIndex,
    re: &Regex,
    folder: &FolderPath,
    only: Option<&HashSet<String>>,
    keep: impl Fn(&str) -> bool,
) -> rusqlite::Result<Vec<Ranked>> {
    let conn = index.conn();
    let mut query = conn.prepare_cached(
        "SELECT c.path, c.id, f.heading, f.body FROM index_chunks c
         JOIN index_fts f ON f.rowid = c.id
         WHERE c.vault = ?1 ORDER BY c.path, c.ord",
    )?;
    let mut rows = query.query([index.vault_id()])?;
    let mut out: Vec<Ranked> = Vec::new();
    // The note being read: its path, whether it is in scope, its hit so far.
    let mut current: Option<(String, bool)> = None;
    while let Some(row) = rows.next()? {
        let path: String = row.get(0)?;
        if current.as_ref().is_none_or(|(p, _)| *p != path) {
            let wanted = in_scope(&path, folder, only) && keep(&path);
            current = Some((path.clone(), wanted));
        }
        if !current.as_ref().is_some_and(|(_, wanted)| *wanted) {
            continue;
        }
        let heading: String = row.get(2)?;
        let body: String = row.get(3)?;
        if !(re.is_match(&body) || re.is_match(&heading)) {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.path == path => last.score += 1.0,
            _ => out.push(Ranked {
                path,
                chunk: row.get(1)?,
                score: 1.0,
                text_match: false,
            }),
        }
    }
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.path.cmp(&b.path))
    });
    Ok(out)
}

/// The snippet of a regex hit's chunk.
pub(crate) fn chunk_snippet(
    index: &VaultIndex,
    re: &Regex,
    chunk: i64,
) -> rusqlite::Result<String> {
    use rusqlite::OptionalExtension;
    let body: Option<String> = index
        .conn()
        .prepare_cached("SELECT body FROM index_fts WHERE rowid = ?1")?
        .query_row([chunk], |r| r.get(0))
        .optional()?;
    Ok(body.map(|b| snippet(re, &b)).unwrap_or_default())
}

/// The passage of `body` around the first match of `re`, the match between `**`; the
/// opening of the text when only the heading matched.
pub(crate) fn snippet(re: &Regex, body: &str) -> String {
    let Some(found) = re.find(body).filter(|m| !m.as_str().is_empty()) else {
        return super::text::opening(body);
    };
    let before: String = {
        let head = &body[..found.start()];
        let skip = head.chars().count().saturating_sub(CONTEXT_CHARS);
        let kept: String = head.chars().skip(skip).collect();
        if skip > 0 { format!("…{kept}") } else { kept }
    };
    let after: String = {
        let tail = &body[found.end()..];
        let kept: String = tail.chars().take(CONTEXT_CHARS).collect();
        if kept.len() < tail.len() {
            format!("{kept}…")
        } else {
            kept
        }
    };
    let shown: String = found.as_str().chars().take(4 * CONTEXT_CHARS).collect();
    format!("{before}**{shown}**{after}")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    // r[verify search.regex.refused]
    #[test]
    fn oversized_and_invalid_patterns_are_refused_and_nested_repeats_stay_linear() {
        for bad in [
            "(a",
            "a{1000}{1000}{1000}",
            r"(\w{500}){500}",
            "(?=a)b",
            r"(a)\1",
        ] {
            let error = compile(bad).unwrap_err();
            assert_eq!(error.code, tc_tools::ErrorCode::ValidationError, "{bad}");
        }
        // A pattern that takes a backtracking engine exponential time.
        let re = compile("(a+)+$").unwrap();
        let text = format!("{}b", "a".repeat(50_000));
        let started = std::time::Instant::now();
        assert!(!re.is_match(&text));
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn snippets_mark_the_match() {
        let re = compile(r"id-\d+").unwrap();
        assert_eq!(snippet(&re, "see id-42 here"), "see **id-42** here");
        let long = format!("{} id-7 {}", "x ".repeat(100), "y ".repeat(100));
        let s = snippet(&re, &long);
        assert!(
            s.starts_with('…') && s.ends_with('…') && s.contains("**id-7**"),
            "{s}"
        );
    }
}
