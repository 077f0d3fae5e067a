//! The journal of a memory change in flight (spec/memory.md `memory.sync.recovered`).
//!
//! A change writes its notes before its transaction commits, so a process killed between the
//! two leaves notes holding sections the store never recorded, and every later change that
//! re-renders them would refuse them as edited by hand. Before its first note write a change
//! therefore writes a journal file (durably) naming each note it will write, the bytes the
//! note held and the hash it will hold, and records the journal's id in the same
//! transaction as the change. The next change of the vault, holding the store's write lock
//! (so no change is in flight), finds a journal left behind: if its id was committed the
//! change happened and the journal is stale; if not, the notes still as the change wrote
//! them are put back. Either way the notes and the store agree again.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use tc_tools::{ToolCx, ToolError};
use tc_vault::path::VaultPath;
use tc_vault::vault::Precondition;

use crate::sync::NotePlan;

/// One note the change writes.
#[derive(Debug, Serialize, Deserialize)]
struct JournalNote {
    path: String,
    /// The note's bytes before the change (hex), `None` when there was no note.
    old: Option<String>,
    /// The hash of the bytes the change writes.
    new_hash: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    id: String,
    notes: Vec<JournalNote>,
}

/// The journal file of one vault.
#[derive(Debug, Clone)]
pub(crate) struct Journal {
    file: PathBuf,
}

fn io_error(what: &str) -> impl Fn(std::io::Error) -> ToolError + '_ {
    move |_| ToolError::internal(what)
}

impl Journal {
    /// The journal of vault `vault` under `dir`.
    pub(crate) fn of(dir: &Path, vault: &str) -> Self {
        let name: String = vault.bytes().map(|b| format!("{b:02x}")).collect();
        Journal {
            file: dir.join(format!("{name}.json")),
        }
    }

    // r[impl memory.sync.recovered]
    /// Brings the notes back in step with the store after a change that never finished; the
    /// caller holds the store's write transaction `tx`.
    pub(crate) fn recover(&self, cx: &ToolCx<'_>, tx: &Connection) -> Result<(), ToolError> {
        let text = match fs::read(&self.file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(_) => return Err(ToolError::internal("reading the memory journal")),
        };
        let Ok(entry) = serde_json::from_slice::<Entry>(&text) else {
            // Torn before it was complete: no note was written after it (writes follow a
            // durable journal), so there is nothing to put back.
            return self.remove();
        };
        let committed = tx
            .query_row(
                "SELECT 1 FROM memory_commits WHERE id = ?1",
                params![entry.id],
                |_| Ok(()),
            )
            .optional()
            .map_err(|_| ToolError::internal("reading the memory journal's commit"))?
            .is_some();
        let mut restored = 0;
        if !committed {
            for note in &entry.notes {
                let Ok(path) = VaultPath::parse(&note.path) else {
                    continue;
                };
                let still_written = cx
                    .vault()
                    .read_if_exists(&path)?
                    .is_some_and(|c| c.hash == note.new_hash);
                if !still_written {
                    continue;
                }
                let guard = Precondition::HashIs(note.new_hash.clone());
                match note.old.as_deref().map(hex::decode) {
                    Some(Ok(old)) => {
                        cx.vault().write(&path, &old, &guard)?;
                    }
                    Some(Err(_)) => continue,
                    None => {
                        cx.vault().delete(&path, &guard)?;
                    }
                }
                restored += 1;
            }
        }
        tx.execute(
            "DELETE FROM memory_commits WHERE id = ?1",
            params![entry.id],
        )
        .map_err(|_| ToolError::internal("clearing the memory journal's commit"))?;
        tracing::warn!(
            vault = cx.vault().id(),
            committed,
            restored,
            "memory: a change interrupted by a crash was {}",
            if committed {
                "complete; its journal is cleared"
            } else {
                "rolled back; the notes it had written are put back"
            }
        );
        self.remove()
    }

    /// Records the notes `plans` will write, durably, before the first of them is written,
    /// and the journal's id in the change's transaction `tx`; returns the id.
    pub(crate) fn begin(&self, tx: &Connection, plans: &[NotePlan]) -> Result<String, ToolError> {
        let id = format!(
            "{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        );
        let entry = Entry {
            id: id.clone(),
            notes: plans
                .iter()
                .map(|plan| JournalNote {
                    path: plan.path.as_str().to_owned(),
                    old: plan.current.as_ref().map(|c| hex::encode(&c.bytes)),
                    new_hash: tc_vault::content_hash(&plan.new),
                })
                .collect(),
        };
        let dir = self.file.parent().unwrap_or(Path::new("."));
        fs::create_dir_all(dir).map_err(io_error("creating the memory journal's folder"))?;
        let text = serde_json::to_vec(&entry)
            .map_err(|_| ToolError::internal("encoding the memory journal"))?;
        let partial = self.file.with_extension("json.partial");
        let mut file =
            fs::File::create(&partial).map_err(io_error("writing the memory journal"))?;
        file.write_all(&text)
            .and_then(|()| file.sync_all())
            .map_err(io_error("writing the memory journal"))?;
        fs::rename(&partial, &self.file).map_err(io_error("writing the memory journal"))?;
        if let Ok(folder) = fs::File::open(dir) {
            let _ = folder.sync_all();
        }
        tx.execute("INSERT INTO memory_commits (id) VALUES (?1)", params![id])
            .map_err(|_| ToolError::internal("recording the memory journal's commit"))?;
        Ok(id)
    }

    /// Forgets a committed change's journal and then its id.
    pub(crate) fn finish(&self, conn: &Connection, id: &str) -> Result<(), ToolError> {
        self.remove()?;
        // Best effort: an id left behind only names a change that happened.
        let _ = conn.execute("DELETE FROM memory_commits WHERE id = ?1", params![id]);
        Ok(())
    }

    /// Forgets the journal (the change committed, or was undone in the call).
    pub(crate) fn remove(&self) -> Result<(), ToolError> {
        match fs::remove_file(&self.file) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(_) => Err(ToolError::internal("removing the memory journal")),
        }
    }
}
