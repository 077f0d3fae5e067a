//! `[versions]`: how long the snapshots of replaced and deleted files are kept (spec/versions.md
//! `versions.retention`, `versions.retention.sweep`).

use serde::Deserialize;
use tc_vault::vault::Retention;

use super::ConfigError;

/// The most snapshots of one path `keepPerPath` may ask for.
const MAX_KEEP_PER_PATH: u32 = 10_000;
/// The oldest `maxAgeDays` may let a snapshot grow (a hundred years).
const MAX_AGE_DAYS: u32 = 36_500;

/// `[versions]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VersionsConfig {
    /// `keepPerPath`: the newest snapshots of one path that are kept.
    #[serde(default = "default_keep")]
    pub keep_per_path: u32,
    /// `maxAgeDays`: snapshots older than this many days are removed.
    #[serde(default = "default_age")]
    pub max_age_days: u32,
}

fn default_keep() -> u32 {
    Retention::DEFAULT_KEEP_PER_PATH as u32
}

fn default_age() -> u32 {
    Retention::DEFAULT_MAX_AGE_DAYS
}

impl Default for VersionsConfig {
    fn default() -> Self {
        VersionsConfig {
            keep_per_path: default_keep(),
            max_age_days: default_age(),
        }
    }
}

impl VersionsConfig {
    /// The retention the sweeper applies to every vault's snapshots.
    pub fn retention(&self) -> Retention {
        Retention::new(self.keep_per_path as usize, self.max_age_days)
    }

    // r[impl versions.retention]
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=MAX_KEEP_PER_PATH).contains(&self.keep_per_path) {
            return Err(ConfigError::invalid(
                "versions.keepPerPath",
                format!(
                    "must be from 1 to {MAX_KEEP_PER_PATH} snapshots a path, not {}",
                    self.keep_per_path
                ),
            ));
        }
        if !(1..=MAX_AGE_DAYS).contains(&self.max_age_days) {
            return Err(ConfigError::invalid(
                "versions.maxAgeDays",
                format!(
                    "must be from 1 to {MAX_AGE_DAYS} days, not {}",
                    self.max_age_days
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::config::Config;

    fn parse(text: &str) -> Result<Config, String> {
        Config::parse(text, "test.toml", Path::new("/")).map_err(|e| e.to_string())
    }

    // r[verify versions.retention]
    #[test]
    fn versions_keys_default_and_are_judged() {
        let config = parse("").unwrap();
        assert_eq!(config.versions.keep_per_path, 20);
        assert_eq!(config.versions.max_age_days, 30);
        assert_eq!(config.versions.retention().max_age_ms, 30 * 86_400_000);
        let set = parse("[versions]\nkeepPerPath = 3\nmaxAgeDays = 7\n").unwrap();
        assert_eq!(set.versions.retention().keep_per_path, 3);
        assert_eq!(set.versions.retention().max_age_ms, 7 * 86_400_000);
        for (text, key) in [
            ("[versions]\nkeepPerPath = 0\n", "versions.keepPerPath"),
            ("[versions]\nmaxAgeDays = 0\n", "versions.maxAgeDays"),
            ("[versions]\nmaxAgeDays = 40000\n", "versions.maxAgeDays"),
            ("[versions]\nkeep = 3\n", "keep"),
        ] {
            let error = parse(text).unwrap_err();
            assert!(error.contains(key), "{text}: {error}");
        }
    }
}
