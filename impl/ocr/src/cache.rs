//! Recognized text cached in `cache.db` by content hash and languages (spec/ocr.md
//! `ocr.cache`, `ocr.cache.force`).
//!
//! A row is keyed by the file's content hash (SHA-256 of its bytes) and the `-l` argument
//! the text was read with, so the same scan under another name is read once, a changed file
//! is read again, and a change of `ocr.languages` is never answered from text read with
//! other models. The table is tc-ocr's own ([`tc_tools::SubsystemDb`], component `ocr`).

use rusqlite::{OptionalExtension, params};
use tc_tools::{SubsystemDb, SubsystemDbError};

use crate::recognize::Recognized;

/// The component name of tc-ocr's tables.
pub const COMPONENT: &str = "ocr";

/// tc-ocr's migrations (append only).
pub const MIGRATIONS: &[&str] = &["CREATE TABLE ocr_results (
         content_hash TEXT NOT NULL,
         languages    TEXT NOT NULL,
         text         TEXT NOT NULL,
         pages        INTEGER,
         ocr_pages    INTEGER NOT NULL,
         created_ms   INTEGER NOT NULL,
         PRIMARY KEY (content_hash, languages)
     ) STRICT;"];

/// The OCR cache.
#[derive(Debug)]
pub struct OcrCache {
    db: SubsystemDb,
}

/// A cache read or write that failed (the call goes on without the cache).
#[derive(Debug, thiserror::Error)]
#[error("the OCR cache in cache.db failed: {0}")]
pub struct CacheError(#[from] rusqlite::Error);

impl OcrCache {
    /// tc-ocr's tables in `<cache_dir>/cache.db`.
    pub fn open(cache_dir: &std::path::Path) -> Result<Self, SubsystemDbError> {
        Ok(OcrCache {
            db: SubsystemDb::open(cache_dir, COMPONENT, MIGRATIONS)?,
        })
    }

    /// A private in-memory cache (tests, and a server with nowhere to keep one).
    pub fn in_memory() -> Result<Self, SubsystemDbError> {
        Ok(OcrCache {
            db: SubsystemDb::open_in_memory(COMPONENT, MIGRATIONS)?,
        })
    }

    // r[impl ocr.cache]
    /// The text cached for `content_hash` read with `languages`.
    pub fn get(
        &self,
        content_hash: &str,
        languages: &str,
    ) -> Result<Option<Recognized>, CacheError> {
        let conn = self.db.lock();
        let row = conn
            .query_row(
                "SELECT text, pages, ocr_pages FROM ocr_results
                 WHERE content_hash = ?1 AND languages = ?2",
                params![content_hash, languages],
                |row| {
                    Ok(Recognized {
                        text: row.get(0)?,
                        pages: row.get::<_, Option<i64>>(1)?.map(clamp_u32),
                        ocr_pages: clamp_u32(row.get(2)?),
                    })
                },
            )
            .optional()?;
        Ok(row)
    }

    /// Keeps `recognized` for `content_hash` read with `languages` (replacing an older row).
    pub fn put(
        &self,
        content_hash: &str,
        languages: &str,
        recognized: &Recognized,
        now_ms: i64,
    ) -> Result<(), CacheError> {
        self.db.lock().execute(
            "INSERT INTO ocr_results (content_hash, languages, text, pages, ocr_pages, created_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (content_hash, languages) DO UPDATE SET
                 text = excluded.text, pages = excluded.pages,
                 ocr_pages = excluded.ocr_pages, created_ms = excluded.created_ms",
            params![
                content_hash,
                languages,
                recognized.text,
                recognized.pages.map(i64::from),
                i64::from(recognized.ocr_pages),
                now_ms
            ],
        )?;
        Ok(())
    }

    /// How many results are cached (tests).
    pub fn len(&self) -> Result<usize, CacheError> {
        let count: i64 =
            self.db
                .lock()
                .query_row("SELECT COUNT(*) FROM ocr_results", [], |row| row.get(0))?;
        Ok(usize::try_from(count).unwrap_or(0))
    }

    pub fn is_empty(&self) -> Result<bool, CacheError> {
        Ok(self.len()? == 0)
    }
}

fn clamp_u32(value: i64) -> u32 {
    u32::try_from(value.max(0)).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_by_hash_and_languages_and_kept_across_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let cache = OcrCache::open(dir.path()).unwrap();
        let text = Recognized {
            text: "hello".into(),
            pages: Some(2),
            ocr_pages: 1,
        };
        cache.put("h1", "eng", &text, 1).unwrap();
        assert_eq!(cache.get("h1", "eng").unwrap(), Some(text.clone()));
        assert_eq!(cache.get("h1", "eng+deu").unwrap(), None);
        assert_eq!(cache.get("h2", "eng").unwrap(), None);
        drop(cache);
        let cache = OcrCache::open(dir.path()).unwrap();
        assert_eq!(cache.get("h1", "eng").unwrap(), Some(text));
        assert_eq!(cache.len().unwrap(), 1);
    }
}
