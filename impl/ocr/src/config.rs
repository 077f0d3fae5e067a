//! `[ocr]` of the configuration file (spec/config.md; spec/ocr.md `ocr.config.languages`,
//! `ocr.config.timeout`, `ocr.config.memory`, `ocr.config.unknown-key`).
//!
//! The section is read through a raw mirror that denies unknown keys, then validated in
//! `TryFrom`, so a bad value is refused while the file is parsed, with the key named, like
//! every other key of the server's configuration. The engines' program paths are not keys
//! of the file: they default to the names Debian installs on `PATH` and can be pointed
//! elsewhere by a library caller (the tests point one at a binary that does not exist).

use std::path::PathBuf;

use serde::Deserialize;

/// The default `ocr.languages`.
pub const DEFAULT_LANGUAGES: &[&str] = &["eng"];
/// The default `ocr.timeoutSeconds`.
pub const DEFAULT_TIMEOUT_SECONDS: i64 = 30;
/// The most languages one configuration may name (tesseract loads each model per run).
pub const MAX_LANGUAGES: usize = 16;
/// The longest language code accepted (tesseract's codes are short: `chi_sim_vert`).
pub const MAX_LANGUAGE_BYTES: usize = 32;
/// The longest timeout accepted: one hour.
pub const MAX_TIMEOUT_SECONDS: i64 = 3600;
/// The default `ocr.maxMemoryMb`: a 300 dpi page takes tesseract about 50 MB and a poster
/// a few hundred, while a small PNG that decompresses to a 30,000-pixel square takes it
/// past 3 GB.
pub const DEFAULT_MAX_MEMORY_MB: i64 = 1024;
/// The smallest `ocr.maxMemoryMb` accepted: tesseract with its English model needs about
/// this much address space to start at all.
pub const MIN_MAX_MEMORY_MB: i64 = 128;
/// The largest `ocr.maxMemoryMb` accepted (64 GiB).
pub const MAX_MAX_MEMORY_MB: i64 = 65_536;

/// The programs `ocr_bulk` runs (each a child process, never a shell).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Engines {
    /// OCR of images and of PDF pages with no text layer (Debian `tesseract-ocr`).
    pub tesseract: PathBuf,
    /// A PDF's text layer (Debian `poppler-utils`).
    pub pdftotext: PathBuf,
    /// Renders a PDF page with no text layer to an image for tesseract (`poppler-utils`).
    pub pdftoppm: PathBuf,
}

impl Default for Engines {
    fn default() -> Self {
        Engines {
            tesseract: PathBuf::from("tesseract"),
            pdftotext: PathBuf::from("pdftotext"),
            pdftoppm: PathBuf::from("pdftoppm"),
        }
    }
}

/// `[ocr]`, validated.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawOcrConfig")]
pub struct OcrConfig {
    /// `languages`: tesseract language codes, joined with `+` for `-l`.
    languages: Vec<String>,
    /// `timeoutSeconds`: how long one engine run may take before it is killed.
    timeout_seconds: i64,
    /// `maxMemoryMb`: the address space each engine process may map, in MiB.
    max_memory_mb: i64,
    engines: Engines,
}

impl Default for OcrConfig {
    fn default() -> Self {
        OcrConfig {
            languages: DEFAULT_LANGUAGES.iter().map(|l| (*l).to_owned()).collect(),
            timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
            max_memory_mb: DEFAULT_MAX_MEMORY_MB,
            engines: Engines::default(),
        }
    }
}

/// `[ocr]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawOcrConfig {
    #[serde(default = "default_languages")]
    languages: Vec<String>,
    #[serde(default = "default_timeout")]
    timeout_seconds: i64,
    #[serde(default = "default_max_memory")]
    max_memory_mb: i64,
}

fn default_languages() -> Vec<String> {
    OcrConfig::default().languages
}

fn default_timeout() -> i64 {
    DEFAULT_TIMEOUT_SECONDS
}

fn default_max_memory() -> i64 {
    DEFAULT_MAX_MEMORY_MB
}

/// A value of `[ocr]` that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ocr.{key}: {problem}")]
pub struct OcrConfigError {
    /// The key, e.g. `languages[1]`.
    pub key: String,
    pub problem: String,
}

impl TryFrom<RawOcrConfig> for OcrConfig {
    type Error = OcrConfigError;

    fn try_from(raw: RawOcrConfig) -> Result<Self, OcrConfigError> {
        OcrConfig::new(raw.languages, raw.timeout_seconds)?.with_max_memory_mb(raw.max_memory_mb)
    }
}

impl OcrConfig {
    // r[impl ocr.config.languages]
    // r[impl ocr.config.timeout]
    /// A validated configuration with the default engines.
    pub fn new(languages: Vec<String>, timeout_seconds: i64) -> Result<Self, OcrConfigError> {
        let error = |key: String, problem: &str| OcrConfigError {
            key,
            problem: problem.to_owned(),
        };
        if languages.is_empty() {
            return Err(error(
                "languages".into(),
                "must name at least one tesseract language, e.g. [\"eng\"]",
            ));
        }
        if languages.len() > MAX_LANGUAGES {
            return Err(error(
                "languages".into(),
                &format!("names more than {MAX_LANGUAGES} languages"),
            ));
        }
        for (i, language) in languages.iter().enumerate() {
            let valid = !language.is_empty()
                && language.len() <= MAX_LANGUAGE_BYTES
                && language
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'_');
            if !valid {
                return Err(error(
                    format!("languages[{i}]"),
                    &format!(
                        "{language:?} is not a tesseract language code (lowercase letters and \
                         '_', at most {MAX_LANGUAGE_BYTES} bytes, e.g. \"eng\" or \"chi_sim\")"
                    ),
                ));
            }
            if languages[..i].contains(language) {
                return Err(error(
                    format!("languages[{i}]"),
                    &format!("{language:?} is named twice"),
                ));
            }
        }
        if timeout_seconds <= 0 || timeout_seconds > MAX_TIMEOUT_SECONDS {
            return Err(error(
                "timeoutSeconds".into(),
                &format!("must be between 1 and {MAX_TIMEOUT_SECONDS}, not {timeout_seconds}"),
            ));
        }
        Ok(OcrConfig {
            languages,
            timeout_seconds,
            max_memory_mb: DEFAULT_MAX_MEMORY_MB,
            engines: Engines::default(),
        })
    }

    // r[impl ocr.config.memory]
    /// The same configuration with engines limited to `mb` MiB of address space each.
    pub fn with_max_memory_mb(mut self, mb: i64) -> Result<Self, OcrConfigError> {
        if !(MIN_MAX_MEMORY_MB..=MAX_MAX_MEMORY_MB).contains(&mb) {
            return Err(OcrConfigError {
                key: "maxMemoryMb".into(),
                problem: format!(
                    "must be between {MIN_MAX_MEMORY_MB} and {MAX_MAX_MEMORY_MB} (MiB), not {mb}"
                ),
            });
        }
        self.max_memory_mb = mb;
        Ok(self)
    }

    /// The same configuration running these programs.
    pub fn with_engines(mut self, engines: Engines) -> Self {
        self.engines = engines;
        self
    }

    pub fn languages(&self) -> &[String] {
        &self.languages
    }

    /// The languages as tesseract's `-l` takes them (`eng+deu`); also the cache's key.
    pub fn language_arg(&self) -> String {
        self.languages.join("+")
    }

    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.timeout_seconds.unsigned_abs())
    }

    pub fn timeout_seconds(&self) -> i64 {
        self.timeout_seconds
    }

    pub fn max_memory_mb(&self) -> i64 {
        self.max_memory_mb
    }

    /// What one engine run may use: the timeout and the memory cap.
    pub fn limits(&self) -> crate::engine::Limits {
        crate::engine::Limits {
            timeout: self.timeout(),
            memory_bytes: self.max_memory_mb.unsigned_abs() * crate::engine::MIB,
        }
    }

    pub fn engines(&self) -> &Engines {
        &self.engines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct File {
        #[serde(default)]
        ocr: OcrConfig,
    }

    fn parse(text: &str) -> Result<OcrConfig, String> {
        toml::from_str::<File>(text)
            .map(|f| f.ocr)
            .map_err(|e| e.to_string())
    }

    // r[verify ocr.config.languages]
    // r[verify ocr.config.timeout]
    // r[verify ocr.config.memory]
    #[test]
    fn defaults_and_values_as_written() {
        let default = parse("").unwrap();
        assert_eq!(default.languages(), ["eng"]);
        assert_eq!(default.timeout_seconds(), 30);
        assert_eq!(default.max_memory_mb(), 1024);
        assert_eq!(default.limits().memory_bytes, 1024 * 1024 * 1024);
        let set = parse(
            "[ocr]\nlanguages = [\"eng\", \"chi_sim\"]\ntimeoutSeconds = 5\nmaxMemoryMb = 300\n",
        )
        .unwrap();
        assert_eq!(set.language_arg(), "eng+chi_sim");
        assert_eq!(set.timeout(), std::time::Duration::from_secs(5));
        assert_eq!(set.limits().memory_bytes, 300 * 1024 * 1024);
    }

    // r[verify ocr.config.languages]
    // r[verify ocr.config.timeout]
    // r[verify ocr.config.memory]
    #[test]
    fn bad_values_are_refused_naming_the_key() {
        for (text, key) in [
            ("[ocr]\nlanguages = []\n", "ocr.languages"),
            (
                "[ocr]\nlanguages = [\"eng\", \"Deu\"]\n",
                "ocr.languages[1]",
            ),
            ("[ocr]\nlanguages = [\"eng;rm\"]\n", "ocr.languages[0]"),
            (
                "[ocr]\nlanguages = [\"eng\", \"eng\"]\n",
                "ocr.languages[1]",
            ),
            ("[ocr]\ntimeoutSeconds = 0\n", "ocr.timeoutSeconds"),
            ("[ocr]\ntimeoutSeconds = -3\n", "ocr.timeoutSeconds"),
            ("[ocr]\nmaxMemoryMb = 64\n", "ocr.maxMemoryMb"),
            ("[ocr]\nmaxMemoryMb = 100000\n", "ocr.maxMemoryMb"),
            ("[ocr]\nmaxMemoryMb = 1.5\n", "maxMemoryMb"),
        ] {
            let error = parse(text).unwrap_err();
            assert!(error.contains(key), "{text}: {error}");
        }
    }

    // r[verify ocr.config.unknown-key]
    #[test]
    fn an_unknown_key_is_named() {
        let error = parse("[ocr]\nlanguage = [\"eng\"]\n").unwrap_err();
        assert!(error.contains("unknown field `language`"), "{error}");
    }
}
