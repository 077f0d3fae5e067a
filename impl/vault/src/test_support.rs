//! The temp vault tc-vault's unit tests share (`vault`, `vault::snapshots`, `walk`): a vault
//! folder in a temp dir, opened with a manual clock and seeded entropy (spec/vault.md).

use std::fs;
use std::path::Path;
use std::sync::Arc;

use tc_gate::clock::{ManualClock, SeededEntropy};

use crate::path::VaultPath;
use crate::vault::Vault;

/// A vault at `<dir>/vault`, its snapshots under a folder of `dir` (outside the vault).
pub(crate) struct TempVault {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) vault: Vault,
    pub(crate) clock: ManualClock,
}

impl TempVault {
    /// The vault tests' vault: "main" at 1_800_000_000_000 ms, its snapshots where the
    /// server keeps them (`cache/snapshots/main`).
    pub(crate) fn new() -> Self {
        TempVault::open("main", "cache/snapshots/main", 1_800_000_000_000, 7)
    }

    /// Vault `id`, snapshots at `<dir>/<snapshots>`, the clock at `now_ms`, entropy seeded
    /// with `seed`.
    pub(crate) fn open(id: &str, snapshots: &str, now_ms: i64, seed: u64) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("vault");
        fs::create_dir_all(&root).unwrap();
        let clock = ManualClock::new(now_ms);
        let vault = Vault::open(
            id,
            &root,
            dir.path().join(snapshots),
            Arc::new(clock.clone()),
            Arc::new(SeededEntropy::new(seed)),
        )
        .unwrap();
        TempVault { dir, vault, clock }
    }

    /// The same vault with `files` put in it.
    pub(crate) fn with_files(self, files: &[(&str, &str)]) -> Self {
        for (path, content) in files {
            self.put(path, content);
        }
        self
    }

    /// Writes `content` at `path` straight into the folder (not through [`Vault::write`]),
    /// making its folders.
    pub(crate) fn put(&self, path: &str, content: &str) {
        let location = self.vault.root().path().join(path);
        fs::create_dir_all(location.parent().unwrap()).unwrap();
        fs::write(location, content).unwrap();
    }
}

pub(crate) fn p(s: &str) -> VaultPath {
    VaultPath::parse(s).unwrap()
}

/// The sorted names of the entries of `dir`.
pub(crate) fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
