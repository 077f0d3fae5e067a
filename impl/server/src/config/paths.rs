//! Paths in the configuration: `~` expansion, absolute and canonical forms, and the rule
//! that the cache directory lies outside every served vault (spec/cli.md
//! `cli.cache-outside-vault`; spec/config.md `config.vaults.disjoint`).

use super::*;

/// `~/rest` → `$HOME/rest`, as a shell would; other paths unchanged.
pub(super) fn expand_home(
    key: &str,
    path: &Path,
    home: Option<&Path>,
) -> Result<PathBuf, ConfigError> {
    let Ok(rest) = path.strip_prefix("~") else {
        return Ok(path.to_owned());
    };
    match home {
        Some(home) => Ok(home.join(rest)),
        None => Err(ConfigError::invalid(
            key,
            format!("{} starts with ~ but $HOME is not set", path.display()),
        )),
    }
}

pub(super) fn absolutize(base: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_owned()
    } else {
        base.join(path)
    }
}

pub(super) fn canonical_dir(key: &str, path: &Path) -> Result<PathBuf, ConfigError> {
    let canonical = path.canonicalize().map_err(|e| {
        ConfigError::invalid(
            key,
            format!("{} does not exist or cannot be read: {e}", path.display()),
        )
    })?;
    if !canonical.is_dir() {
        return Err(ConfigError::invalid(
            key,
            format!("{} is not a directory", path.display()),
        ));
    }
    Ok(canonical)
}

/// `path` with symlinks resolved as far as it exists, and `.`/`..` folded in the rest, so a
/// cache directory that does not exist yet can still be compared with the vault roots.
pub(super) fn canonical_prefix(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut missing = Vec::new();
    loop {
        if let Ok(canonical) = existing.canonicalize() {
            let mut out = canonical;
            for part in missing.iter().rev() {
                out.push(part);
            }
            return normalize(&out);
        }
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                missing.push(name.to_os_string());
                existing = parent.to_path_buf();
            }
            _ => return normalize(path),
        }
    }
}

pub(super) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

pub(super) fn check_cache_outside_vaults(
    key: &str,
    cache_dir: &Path,
    vaults: &[VaultConfig],
) -> Result<(), ConfigError> {
    let cache = canonical_prefix(cache_dir);
    for vault in vaults {
        let root = canonical_prefix(&vault.root);
        if cache.starts_with(&root) {
            return Err(ConfigError::invalid(
                key,
                format!(
                    "{} lies inside vault `{}` ({}); secrets and cache.db must live outside \
                     every vault, so choose a cache directory elsewhere",
                    cache_dir.display(),
                    vault.id,
                    root.display()
                ),
            ));
        }
    }
    Ok(())
}
