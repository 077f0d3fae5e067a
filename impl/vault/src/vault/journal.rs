//! A move and the link rewrites it needs, recoverable after a crash (spec/vault.md
//! `vault.move.journaled`, `vault.move.recovered`).
//!
//! A confirmed move renames one note and then rewrites every note that links to it. A process
//! killed in between leaves the note moved and the links pointing at the old path, silently.
//! So before the rename the whole plan is written durably to the vault's move journal (each
//! rewrite with the content hash it expects and the bytes it writes); the journal is removed
//! once the last rewrite is done. A vault opened again finds a journal left behind
//! ([`Vault::recover_interrupted_move`]): if the source is still where it was the move never
//! happened and the journal is dropped; otherwise every rewrite whose note still holds the
//! expected content is written, so the links point at the note again.

use std::fs;
use std::io::Write;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{Precondition, Vault, sync_dir};
use crate::error::{VaultError, VaultResult};
use crate::path::VaultPath;
use crate::vault::SnapshotInfo;

/// One link rewrite a move makes: the note, the content it must still hold, and its new bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    pub path: VaultPath,
    pub expected_hash: String,
    pub content: Vec<u8>,
}

/// A rewrite as the journal holds it.
#[derive(Debug, Serialize, Deserialize)]
struct Journaled {
    path: String,
    expected_hash: String,
    #[serde(with = "hex_bytes")]
    content: Vec<u8>,
}

mod hex_bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        hex::decode(text).map_err(serde::de::Error::custom)
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    from: String,
    to: String,
    /// The hash of the moved note: a source still holding it was never moved.
    source_hash: String,
    rewrites: Vec<Journaled>,
}

/// What a journaled move did.
#[derive(Debug)]
pub struct MoveOutcome {
    /// The version of the note the move replaced at its destination.
    pub kept: Option<SnapshotInfo>,
    /// Each rewrite's outcome, in order: a note that changed since it was planned keeps its
    /// old links and is reported.
    pub rewrites: Vec<VaultResult<()>>,
}

/// What [`Vault::recover_interrupted_move`] found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveredMove {
    pub from: VaultPath,
    pub to: VaultPath,
    /// Whether the rename had happened (the rewrites were then finished); `false` when the
    /// note was never moved and nothing was changed.
    pub moved: bool,
    /// The notes whose links were rewritten now.
    pub rewritten: Vec<VaultPath>,
    /// The notes left as they were: written before the crash, or changed since.
    pub left: Vec<VaultPath>,
}

impl Vault {
    /// The vault's move journal: beside its snapshot folder, outside the vault.
    fn move_journal(&self) -> PathBuf {
        let name = self
            .snapshot_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "vault".to_owned());
        let base = self
            .snapshot_dir
            .parent()
            .and_then(|p| p.parent())
            .unwrap_or(&self.snapshot_dir);
        base.join("move-journal").join(format!("{name}.json"))
    }

    // r[impl vault.move.journaled]
    /// Moves `from` to `to` as [`Vault::rename_keeping`] does (`keep`: keeping a note it
    /// replaces as a version) and then writes each of `rewrites`, guarded by its expected
    /// hash, with the whole plan journaled durably before the rename and the journal removed
    /// after the last write.
    pub fn move_rewriting(
        &self,
        from: &VaultPath,
        to: &VaultPath,
        from_expected: &Precondition,
        to_expected: &Precondition,
        keep: bool,
        rewrites: &[Rewrite],
    ) -> VaultResult<MoveOutcome> {
        let source_hash = match from_expected {
            Precondition::HashIs(hash) => hash.clone(),
            _ => match self.read_if_exists(from)? {
                Some(content) => content.hash,
                None => {
                    return Err(VaultError::NoteNotFound {
                        path: from.as_str().to_owned(),
                    });
                }
            },
        };
        let journal = self.move_journal();
        let journaled = !rewrites.is_empty();
        if journaled {
            let entry = Entry {
                from: from.as_str().to_owned(),
                to: to.as_str().to_owned(),
                source_hash,
                rewrites: rewrites
                    .iter()
                    .map(|r| Journaled {
                        path: r.path.as_str().to_owned(),
                        expected_hash: r.expected_hash.clone(),
                        content: r.content.clone(),
                    })
                    .collect(),
            };
            write_durably(&journal, &entry)?;
        }
        let kept = match self.rename_with(from, to, from_expected, to_expected, keep) {
            Ok(kept) => kept,
            Err(e) => {
                // Nothing moved: nothing to recover.
                if journaled {
                    let _ = fs::remove_file(&journal);
                }
                return Err(e);
            }
        };
        let results = rewrites
            .iter()
            .map(|rewrite| {
                self.write(
                    &rewrite.path,
                    &rewrite.content,
                    &Precondition::HashIs(rewrite.expected_hash.clone()),
                )
                .map(|_| ())
            })
            .collect();
        if journaled {
            fs::remove_file(&journal)
                .map_err(|e| VaultError::io("(the move journal)", "remove the move journal", e))?;
        }
        Ok(MoveOutcome {
            kept,
            rewrites: results,
        })
    }

    // r[impl vault.move.recovered]
    /// Finishes or drops a move a crash interrupted (see the module documentation); `None`
    /// when there was none.
    pub fn recover_interrupted_move(&self) -> VaultResult<Option<RecoveredMove>> {
        let journal = self.move_journal();
        let text = match fs::read(&journal) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(VaultError::io(
                    "(the move journal)",
                    "read the move journal",
                    e,
                ));
            }
        };
        let parsed = serde_json::from_slice::<Entry>(&text)
            .ok()
            .and_then(|entry| {
                let from = VaultPath::parse(&entry.from).ok()?;
                let to = VaultPath::parse(&entry.to).ok()?;
                Some((entry, from, to))
            });
        let Some((entry, from, to)) = parsed else {
            // A journal torn while it was written: the rename comes after it, so nothing
            // of the move happened.
            let _ = fs::remove_file(&journal);
            return Ok(None);
        };
        let source_still_there = self
            .read_if_exists(&from)?
            .is_some_and(|c| c.hash == entry.source_hash);
        let mut recovered = RecoveredMove {
            from,
            to,
            moved: !source_still_there,
            rewritten: Vec::new(),
            left: Vec::new(),
        };
        if recovered.moved {
            for rewrite in &entry.rewrites {
                let Ok(path) = VaultPath::parse(&rewrite.path) else {
                    continue;
                };
                let written = self
                    .write(
                        &path,
                        &rewrite.content,
                        &Precondition::HashIs(rewrite.expected_hash.clone()),
                    )
                    .is_ok();
                if written {
                    recovered.rewritten.push(path);
                } else {
                    recovered.left.push(path);
                }
            }
        }
        fs::remove_file(&journal)
            .map_err(|e| VaultError::io("(the move journal)", "remove the move journal", e))?;
        Ok(Some(recovered))
    }
}

/// Writes `entry` to `file` so that it is on disk before anything it describes happens.
fn write_durably(file: &PathBuf, entry: &Entry) -> VaultResult<()> {
    let io = |e: std::io::Error| VaultError::io("(the move journal)", "write the move journal", e);
    let dir = file.parent().map(PathBuf::from).unwrap_or_default();
    fs::create_dir_all(&dir).map_err(io)?;
    let text = serde_json::to_vec(entry).map_err(|e| io(std::io::Error::other(e)))?;
    let partial = file.with_extension("json.partial");
    let mut out = fs::File::create(&partial).map_err(io)?;
    out.write_all(&text)
        .and_then(|()| out.sync_all())
        .map_err(io)?;
    fs::rename(&partial, file).map_err(io)?;
    sync_dir(&dir).map_err(io)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{TempVault, p};

    fn read(f: &TempVault, path: &str) -> Option<String> {
        fs::read_to_string(f.vault.root().path().join(path)).ok()
    }

    fn rewrite(f: &TempVault, path: &str, new: &str) -> Rewrite {
        Rewrite {
            path: p(path),
            expected_hash: f.vault.read_if_exists(&p(path)).unwrap().unwrap().hash,
            content: new.as_bytes().to_vec(),
        }
    }

    /// A vault with `a.md` linked from three notes, and the rewrites of a move to `b/a.md`.
    fn linked() -> (TempVault, Vec<Rewrite>, String) {
        let f = TempVault::new().with_files(&[
            ("a.md", "the note"),
            ("x.md", "see [[a]]"),
            ("y.md", "and [[a]] too"),
            ("z.md", "![[a]]"),
        ]);
        let rewrites = vec![
            rewrite(&f, "x.md", "see [[b/a]]"),
            rewrite(&f, "y.md", "and [[b/a]] too"),
            rewrite(&f, "z.md", "![[b/a]]"),
        ];
        let source = f.vault.read_if_exists(&p("a.md")).unwrap().unwrap().hash;
        (f, rewrites, source)
    }

    // r[verify vault.move.journaled]
    #[test]
    fn a_move_rewrites_its_links_and_leaves_no_journal() {
        let (f, rewrites, source) = linked();
        let done = f
            .vault
            .move_rewriting(
                &p("a.md"),
                &p("b/a.md"),
                &Precondition::HashIs(source),
                &Precondition::MustNotExist,
                true,
                &rewrites,
            )
            .unwrap();
        assert!(done.rewrites.iter().all(Result::is_ok));
        assert_eq!(read(&f, "b/a.md").unwrap(), "the note");
        assert_eq!(read(&f, "y.md").unwrap(), "and [[b/a]] too");
        assert!(!f.vault.move_journal().exists());
        assert_eq!(f.vault.recover_interrupted_move().unwrap(), None);
    }

    // r[verify vault.move.recovered]
    #[test]
    fn a_move_killed_after_the_rename_is_finished_when_the_vault_opens_again() {
        let (f, rewrites, source) = linked();
        // The crash: the journal and the rename happened, one rewrite of three, then nothing.
        let entry = Entry {
            from: "a.md".into(),
            to: "b/a.md".into(),
            source_hash: source.clone(),
            rewrites: rewrites
                .iter()
                .map(|r| Journaled {
                    path: r.path.as_str().to_owned(),
                    expected_hash: r.expected_hash.clone(),
                    content: r.content.clone(),
                })
                .collect(),
        };
        write_durably(&f.vault.move_journal(), &entry).unwrap();
        f.vault
            .rename(
                &p("a.md"),
                &p("b/a.md"),
                &Precondition::HashIs(source),
                &Precondition::MustNotExist,
            )
            .unwrap();
        f.vault
            .write(&p("x.md"), b"see [[b/a]]", &Precondition::None)
            .unwrap();
        // A person edits z.md before the server comes back: it keeps what they wrote.
        f.put("z.md", "![[a]] and my own words");

        let recovered = f.vault.recover_interrupted_move().unwrap().unwrap();
        assert!(recovered.moved);
        assert_eq!(recovered.rewritten, vec![p("y.md")]);
        assert_eq!(recovered.left, vec![p("x.md"), p("z.md")]);
        assert_eq!(read(&f, "y.md").unwrap(), "and [[b/a]] too");
        assert_eq!(read(&f, "x.md").unwrap(), "see [[b/a]]");
        assert_eq!(read(&f, "z.md").unwrap(), "![[a]] and my own words");
        assert!(!f.vault.move_journal().exists());
    }

    // r[verify vault.move.recovered]
    #[test]
    fn a_move_killed_before_the_rename_changes_nothing() {
        let (f, rewrites, source) = linked();
        let entry = Entry {
            from: "a.md".into(),
            to: "b/a.md".into(),
            source_hash: source,
            rewrites: rewrites
                .iter()
                .map(|r| Journaled {
                    path: r.path.as_str().to_owned(),
                    expected_hash: r.expected_hash.clone(),
                    content: r.content.clone(),
                })
                .collect(),
        };
        write_durably(&f.vault.move_journal(), &entry).unwrap();
        let recovered = f.vault.recover_interrupted_move().unwrap().unwrap();
        assert!(!recovered.moved);
        assert!(recovered.rewritten.is_empty());
        assert_eq!(read(&f, "x.md").unwrap(), "see [[a]]");
        assert_eq!(read(&f, "a.md").unwrap(), "the note");
        assert!(!f.vault.move_journal().exists());
        // A torn journal is dropped the same way.
        fs::create_dir_all(f.vault.move_journal().parent().unwrap()).unwrap();
        fs::write(f.vault.move_journal(), b"{\"from\": \"a.m").unwrap();
        assert_eq!(f.vault.recover_interrupted_move().unwrap(), None);
        assert!(!f.vault.move_journal().exists());
    }
}
