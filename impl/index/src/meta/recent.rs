//! Notes by modification time (spec/metadata.md `## Recent changes`), from the stamps the
//! index keeps of every file, through an index on (vault, note, mtime) so the newest come
//! first without sorting the vault. RFC 3339 times are read and written here too, for
//! `recent_changes`' `since` and `search_notes`' `modified_after`/`modified_before`. The
//! caller judges the folder ACL on every path returned.

use rusqlite::params;
use tc_tools::ToolError;
use tc_vault::path::FolderPath;
use tc_vault::tasks::Date;

use super::properties::folder_range;
use crate::VaultIndex;

/// One note and its stamp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    pub path: String,
    pub mtime_ns: i64,
    pub size: u64,
}

fn failed(error: rusqlite::Error) -> ToolError {
    tracing::warn!("reading the stamps of the vault index: {error}");
    ToolError::internal("reading the stamps of the vault index")
}

/// At most `take` notes under `folder` modified at or after `since_ns`, newest first (equal
/// times in path order), starting after `after` (the last `(mtime_ns, path)` of a page).
pub fn changed_since(
    index: &VaultIndex,
    folder: &FolderPath,
    since_ns: i64,
    after: Option<(i64, &str)>,
    take: usize,
) -> Result<Vec<Changed>, ToolError> {
    let (low, high) = folder_range(folder);
    let (before_ns, after_path) = match after {
        Some((ns, path)) => (ns, path.to_owned()),
        // Past every time, so the first page starts at the newest.
        None => (i64::MAX, String::new()),
    };
    let conn = index.conn();
    let mut query = conn
        .prepare_cached(
            "SELECT path, mtime_ns, size FROM index_files INDEXED BY index_files_by_mtime
             WHERE vault = ?1 AND is_note = 1 AND mtime_ns >= ?2
               AND (mtime_ns < ?3 OR (mtime_ns = ?3 AND path > ?4))
               AND path >= ?5 AND path < ?6
             ORDER BY mtime_ns DESC, path LIMIT ?7",
        )
        .map_err(failed)?;
    let rows = query
        .query_map(
            params![
                index.vault_id(),
                since_ns,
                before_ns,
                after_path,
                low,
                high,
                i64::try_from(take).unwrap_or(i64::MAX)
            ],
            |r| {
                Ok(Changed {
                    path: r.get(0)?,
                    mtime_ns: r.get(1)?,
                    size: u64::try_from(r.get::<_, i64>(2)?).unwrap_or(0),
                })
            },
        )
        .map_err(failed)?;
    rows.collect::<Result<_, _>>().map_err(failed)
}

/// The notes modified in `[from_ns, to_ns)` (the `search_notes` filter).
pub(crate) fn paths_modified(
    index: &VaultIndex,
    from_ns: i64,
    to_ns: i64,
) -> rusqlite::Result<std::collections::HashSet<String>> {
    let conn = index.conn();
    conn.prepare_cached(
        "SELECT path FROM index_files INDEXED BY index_files_by_mtime
         WHERE vault = ?1 AND is_note = 1 AND mtime_ns >= ?2 AND mtime_ns < ?3",
    )?
    .query_map(params![index.vault_id(), from_ns, to_ns], |r| r.get(0))?
    .collect()
}

/// The modification time of the file at `path`, in nanoseconds, if the index holds it.
pub(crate) fn mtime_of(index: &VaultIndex, path: &str) -> rusqlite::Result<Option<i64>> {
    use rusqlite::OptionalExtension;
    index
        .conn()
        .prepare_cached("SELECT mtime_ns FROM index_files WHERE vault = ?1 AND path = ?2")?
        .query_row(params![index.vault_id(), path], |r| r.get(0))
        .optional()
}

// r[impl metadata.recent.time]
/// An RFC 3339 date-time (`2026-01-05T10:00:00Z`, `…T10:00:00.5+02:00`, `t`/space for `T`)
/// or a bare date (its midnight UTC), as nanoseconds since 1970 UTC.
pub fn parse_time(text: &str) -> Option<i64> {
    let text = text.trim();
    let date = Date::parse(text.get(..10)?)?;
    let day_ns = date.days_since_epoch().checked_mul(86_400_000_000_000)?;
    let rest = &text[10..];
    if rest.is_empty() {
        return Some(day_ns);
    }
    let rest = rest
        .strip_prefix(['T', 't', ' '])
        .filter(|r| r.len() >= 8)?;
    let two = |s: &str| -> Option<i64> {
        (s.len() == 2 && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok())?
    };
    let (h, m, s) = (
        two(rest.get(..2)?)?,
        two(rest.get(3..5)?)?,
        two(rest.get(6..8)?)?,
    );
    if rest.as_bytes()[2] != b':' || rest.as_bytes()[5] != b':' || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let mut rest = &rest[8..];
    let mut frac_ns = 0i64;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let kept = &frac[..digits.min(9)];
        frac_ns = kept.parse::<i64>().ok()? * 10i64.pow(9 - kept.len() as u32);
        rest = &frac[digits..];
    }
    let offset_s = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            if rest.len() != 6 || rest.as_bytes()[3] != b':' {
                return None;
            }
            let (oh, om) = (two(rest.get(1..3)?)?, two(rest.get(4..6)?)?);
            if oh > 23 || om > 59 {
                return None;
            }
            sign * (oh * 3600 + om * 60)
        }
    };
    let secs = h * 3600 + m * 60 + s - offset_s;
    day_ns
        .checked_add(secs.checked_mul(1_000_000_000)?)?
        .checked_add(frac_ns)
}

/// A time in nanoseconds since 1970 as RFC 3339 UTC with milliseconds
/// (`2026-01-05T10:00:00.000Z`).
pub fn format_time(ns: i64) -> String {
    let ms = ns.div_euclid(1_000_000);
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    let date = Date::from_days(days);
    format!(
        "{date}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_and_written() {
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_time("1970-01-02"), Some(86_400_000_000_000));
        assert_eq!(parse_time("1970-01-01T01:00:00.5+01:00"), Some(500_000_000));
        assert_eq!(
            parse_time("1970-01-01 00:00:01-00:30"),
            Some(1_801_000_000_000)
        );
        for bad in [
            "",
            "yesterday",
            "2026-13-01",
            "2026-01-01T25:00:00Z",
            "2026-01-01T10:00:00",
            "2026-01-01T10:00:00+2",
        ] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
        let t = parse_time("2026-02-28T23:59:58.123Z").unwrap();
        assert_eq!(format_time(t), "2026-02-28T23:59:58.123Z");
        assert_eq!(format_time(0), "1970-01-01T00:00:00.000Z");
    }
}
