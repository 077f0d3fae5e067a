//! Seals of generated wiki pages (spec `vault.wiki-seal`, `tools.commit-wiki-page`,
//! `drift.bind.commit-wiki-page`; seed: the server secret "seals generated wiki pages", and a
//! recreated `server-secrets/` "makes every generated wiki page read as edited").
//!
//! Decision: the seal lives in a sidecar outside the vault, one file per page under
//! `<cacheDir>/wiki-seals/<vault-id>/<sha256(path)>.seal`, holding the hex HMAC-SHA256,
//! under the server secret's WikiSeal key (its own HKDF label), of the page's path and exact
//! bytes. Not frontmatter: a seal inside the note would be part of what it seals, would show
//! in Obsidian, and would be carried along by copies. A page is
//! - [`SealState::Absent`]: no note at the path;
//! - [`SealState::Sealed`]: its bytes are the ones `commit_wiki_page` last wrote there;
//! - [`SealState::Edited`]: a note is there and no valid seal covers its bytes: a person
//!   edited it since it was sealed, the key changed (a recreated `server-secrets/`), or it
//!   was never a generated page. All three read as edited, since the server cannot tell a
//!   person's note from a page it can no longer authenticate, and overwriting one needs
//!   confirmation.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};
use tc_gate::keys::DerivedKey;

use crate::error::{VaultError, VaultResult};
use crate::path::VaultPath;
use crate::vault::snapshot_dir_for;

type HmacSha256 = Hmac<Sha256>;

/// Domain tag so a seal can never be confused with another MAC under a related key.
const SEAL_TAG: &[u8] = b"obsidian-tc/wiki-seal/v1";

/// `<cacheDir>/wiki-seals/<vault-id>/`, judged like the snapshot folder (one plain segment).
pub fn seal_dir_for(cache_dir: &Path, vault_id: &str) -> VaultResult<PathBuf> {
    // Reuse the snapshot folder's judgement of the vault id, then swap the parent.
    snapshot_dir_for(cache_dir, vault_id)?;
    Ok(cache_dir.join("wiki-seals").join(vault_id))
}

/// What a page's seal says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SealState {
    Absent,
    /// The page holds exactly what was sealed; `seal` is the hex MAC.
    Sealed {
        seal: String,
    },
    /// A note is there that no valid seal covers.
    Edited,
}

impl SealState {
    /// A stable text for fingerprints and results.
    pub fn label(&self) -> &str {
        match self {
            SealState::Absent => "absent",
            SealState::Sealed { seal } => seal,
            SealState::Edited => "edited",
        }
    }
}

/// Seals and checks generated pages of one vault.
pub struct WikiSealer {
    key: [u8; 32],
    dir: PathBuf,
}

impl std::fmt::Debug for WikiSealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WikiSealer")
            .field("key", &"<redacted>")
            .field("dir", &self.dir)
            .finish()
    }
}

impl WikiSealer {
    /// A sealer with the WikiSeal key derived from the server secret, keeping its seals in
    /// `dir` (see [`seal_dir_for`]); `dir` must lie outside the vault.
    pub fn new(key: &DerivedKey, dir: impl Into<PathBuf>) -> Self {
        WikiSealer {
            key: *key.as_bytes(),
            dir: dir.into(),
        }
    }

    fn mac(&self, path: &VaultPath, bytes: &[u8]) -> HmacSha256 {
        // HMAC takes keys of any length, so a 32-byte key is never refused.
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC accepts 32-byte keys");
        mac.update(SEAL_TAG);
        mac.update(&(path.as_str().len() as u64).to_be_bytes());
        mac.update(path.as_str().as_bytes());
        mac.update(bytes);
        mac
    }

    fn sidecar(&self, path: &VaultPath) -> PathBuf {
        let name = hex::encode(Sha256::digest(path.as_str().as_bytes()));
        self.dir.join(format!("{name}.seal"))
    }

    /// The seal of `bytes` at `path`, as hex.
    pub fn seal_of(&self, path: &VaultPath, bytes: &[u8]) -> String {
        hex::encode(self.mac(path, bytes).finalize().into_bytes())
    }

    /// What the seal says about `current` (the page's bytes, `None` when absent).
    pub fn state(&self, path: &VaultPath, current: Option<&[u8]>) -> VaultResult<SealState> {
        let Some(bytes) = current else {
            return Ok(SealState::Absent);
        };
        let stored = match fs::read_to_string(self.sidecar(path)) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(SealState::Edited),
            Err(e) => return Err(seal_io(path, "read the seal of", e)),
        };
        let stored = stored.trim();
        let Ok(tag) = hex::decode(stored) else {
            return Ok(SealState::Edited);
        };
        if self.mac(path, bytes).verify_slice(&tag).is_ok() {
            Ok(SealState::Sealed {
                seal: stored.to_owned(),
            })
        } else {
            Ok(SealState::Edited)
        }
    }

    /// Records the seal of `bytes`, just written at `path` (atomically replaced).
    pub fn store(&self, path: &VaultPath, bytes: &[u8]) -> VaultResult<String> {
        let seal = self.seal_of(path, bytes);
        // r[impl gate.files.private]
        // (tempfile creates the seal itself 0600.)
        tc_gate::private_fs::create_private_dir_all(&self.dir)
            .map_err(|e| seal_io(path, "create the seal folder of", e))?;
        let mut file = tempfile::NamedTempFile::new_in(&self.dir)
            .map_err(|e| seal_io(path, "write the seal of", e))?;
        file.write_all(seal.as_bytes())
            .and_then(|()| file.as_file().sync_all())
            .map_err(|e| seal_io(path, "write the seal of", e))?;
        file.persist(self.sidecar(path))
            .map_err(|e| seal_io(path, "write the seal of", e.error))?;
        Ok(seal)
    }
}

fn seal_io(path: &VaultPath, op: &'static str, source: io::Error) -> VaultError {
    VaultError::Io {
        path: path.as_str().to_owned(),
        op,
        source,
    }
}
