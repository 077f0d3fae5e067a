//! Keeping the notes in step with the store (spec/memory.md `memory.sync.*`,
//! `memory.edits.inside-refused`, `memory.note.write-gate`).
//!
//! A change to the graph runs inside one SQLite transaction ([`transact`]): the change
//! itself, then a plan of every note it re-renders (the changed entity's, and the notes of
//! the entities at the other end of a changed relation), each planned against the note as
//! it is on disk. Planning refuses a note a person edited inside the store's section, and
//! the vault's write gate judges each planned note. A tool's precheck runs the same
//! transaction and rolls it back ([`Mode::Plan`]), so its refusals come before anything
//! changes and it knows the exact note paths to declare for the folder ACL; its handler
//! runs it again ([`Mode::Apply`]), writes the notes (each under its note lock, only if it
//! is still as planned), records what it wrote, and commits. A write that fails undoes the
//! notes written before it, and the transaction rolls back, so the store and the notes
//! never disagree about a change that was refused. A process killed between the note writes
//! and the commit is recovered from the change's journal ([`crate::journal`]) by the next
//! change of the vault.

use std::collections::BTreeSet;

use rusqlite::{Connection, TransactionBehavior};
use serde_json::json;
use tc_tools::{ErrorCode, HandlerFailure, ToolCx, ToolError};
use tc_vault::conventions::{ContentFacts, Prior, WriteIntent, WriteKind};
use tc_vault::error::VaultError;
use tc_vault::path::{FolderPath, VaultPath};
use tc_vault::vault::{NoteContent, Precondition};

use crate::Memory;
use crate::names::{note_path, suffixed_note_path};
use crate::render::{self, BEGIN, END};
use crate::store::{self, Entity, entity_id};

/// One note a change re-renders.
#[derive(Debug, Clone)]
pub struct NotePlan {
    pub entity: i64,
    pub path: VaultPath,
    /// The note as it was when planned; `None` when there was none.
    pub current: Option<NoteContent>,
    pub new: Vec<u8>,
    pub owned_hash: String,
}

impl NotePlan {
    /// Whether the note would change.
    pub fn changes(&self) -> bool {
        self.current.as_ref().is_none_or(|c| c.bytes != self.new)
    }

    fn intent(&self) -> WriteIntent {
        let (kind, prior) = match &self.current {
            Some(content) => (
                WriteKind::Overwrite,
                Prior::Known(ContentFacts::of(&content.bytes)),
            ),
            None => (WriteKind::Create, Prior::Absent),
        };
        WriteIntent::new(self.path.clone(), kind, &self.new, prior)
    }
}

/// A note a change wrote.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct NoteWritten {
    pub path: String,
    /// Whether the note did not exist before.
    pub created: bool,
    /// Null for a caller that may not read the note: its rendering holds the entity's
    /// observations (spec vault.acl.results-readable-only).
    pub content_hash: Option<String>,
    /// The hash written, for the undo of a change that fails after it; never shown.
    #[serde(skip)]
    #[schemars(skip)]
    written_hash: String,
}

pub(crate) fn db_error(_: rusqlite::Error) -> ToolError {
    ToolError::internal("reading or writing the memory tables")
}

pub(crate) fn entity_not_found(id: &str) -> ToolError {
    ToolError::new(
        ErrorCode::EntityNotFound,
        format!("no entity {id:?} in this vault's memory"),
    )
    .with_details(json!({"entity_id": id}))
    .with_recovery(
        "use an id that upsert_entity or search_entities returned for this vault",
        None,
    )
}

// r[impl memory.edits.inside-refused]
pub(crate) fn edited_by_hand(path: &VaultPath) -> ToolError {
    ToolError::new(
        ErrorCode::ConcurrentModification,
        format!(
            "the note {} was edited by hand inside its memory section (the lines between \
             {BEGIN} and {END}, or its memory_* keys); the store does not overwrite a person's \
             edit, so nothing was changed",
            path.as_str()
        ),
    )
    .with_details(json!({"path": path.as_str(), "reason": "edited_inside_memory_section"}))
    .with_recovery(
        "ask the person to move their edit outside the memory section (or undo it), then send \
         the call again",
        None,
    )
}

/// The folder notes go under in the call's vault.
pub(crate) fn folder(memory: &Memory, cx: &ToolCx<'_>) -> Result<FolderPath, ToolError> {
    memory
        .config(cx.vault().id())
        .folder_path()
        .map_err(|reason| ToolError::internal(&format!("reading memory.folder ({reason})")))
}

fn free(
    cx: &ToolCx<'_>,
    conn: &Connection,
    entity: &Entity,
    path: &VaultPath,
) -> Result<bool, ToolError> {
    if store::path_taken(conn, &entity.vault, path.as_str(), Some(entity.id)).map_err(db_error)? {
        return Ok(false);
    }
    Ok(match cx.vault().read_if_exists(path)? {
        None => true,
        // A note there is another's, unless it carries this entity's own id.
        Some(content) => {
            render::note_entity_id(&content.text()).as_deref() == Some(&entity_id(entity.id))
        }
    })
}

// r[impl memory.note.path-collision]
fn choose_path(
    cx: &ToolCx<'_>,
    conn: &Connection,
    folder: &FolderPath,
    entity: &Entity,
) -> Result<VaultPath, ToolError> {
    let first = note_path(folder, &entity.kind, &entity.name)?;
    if free(cx, conn, entity, &first)? {
        return Ok(first);
    }
    let second = suffixed_note_path(folder, &entity.kind, &entity.name)?;
    if free(cx, conn, entity, &second)? {
        return Ok(second);
    }
    Err(VaultError::NoteExists {
        path: second.as_str().to_owned(),
    }
    .into())
}

// r[impl memory.note.followed]
/// When `entity`'s note is no longer at the path the store recorded, the note of the memory
/// folder that carries its `memory_id` (a person renamed or moved it) becomes its note:
/// first its own folder is looked through, then the whole memory folder. Nothing found, the
/// recorded path stays and the note is written there again (`memory.edits.note-deleted`).
fn relocate(
    cx: &ToolCx<'_>,
    conn: &Connection,
    folder: &FolderPath,
    entity: &mut Entity,
) -> Result<Option<Moved>, ToolError> {
    let Some(recorded) = entity.note_path.clone() else {
        return Ok(None);
    };
    if !entity.materialized {
        return Ok(None);
    }
    let recorded = VaultPath::parse_note(&recorded)?;
    if cx.vault().exists(&recorded)? {
        return Ok(None);
    }
    let own = recorded.parent();
    let wanted = entity_id(entity.id);
    for (scope, recursive) in [(&own, false), (folder, true)] {
        let walk = match tc_vault::Walk::new(
            cx.vault().root(),
            scope,
            recursive,
            tc_vault::WalkFilter::Notes,
            None,
        ) {
            Ok(walk) => walk,
            Err(_) => continue,
        };
        for path in walk.flatten() {
            let Some(content) = cx.vault().read_if_exists(&path)? else {
                continue;
            };
            if render::note_entity_id(&content.text()).as_deref() == Some(wanted.as_str())
                && !store::path_taken(conn, &entity.vault, path.as_str(), Some(entity.id))
                    .map_err(db_error)?
            {
                store::set_note_path(conn, entity.id, path.as_str()).map_err(db_error)?;
                entity.note_path = Some(path.as_str().to_owned());
                return Ok(Some(Moved {
                    from: recorded,
                    to: path,
                }));
            }
        }
    }
    Ok(None)
}

/// An entity's note found at a new path, and where the store had it.
#[derive(Debug, Clone)]
pub(crate) struct Moved {
    from: VaultPath,
    to: VaultPath,
}

// r[impl memory.edits.store-rendered]
/// `found` with each wikilink to a moved note written back as the store wrote it before the
/// move (the move's backlink rewrite is the store's own edit, not a person's).
fn before_moves(found: &render::Section, moved: &[Moved]) -> render::Section {
    let key = |target: &str| {
        let name = target.trim().rsplit('/').next().unwrap_or(target);
        name.strip_suffix(".md").unwrap_or(name).to_lowercase()
    };
    let mut body = String::with_capacity(found.body.len());
    let mut copied = 0;
    for link in tc_vault::links::find_links(&found.body) {
        let Some(m) = moved
            .iter()
            .find(|m| key(&link.target) == key(m.to.as_str()) && !link.embed)
        else {
            continue;
        };
        body.push_str(&found.body[copied..link.range.start]);
        body.push_str(&crate::names::wikilink(m.from.as_str()));
        copied = link.range.end;
    }
    body.push_str(&found.body[copied..]);
    render::Section {
        body,
        ..found.clone()
    }
}

/// The plan of `entity`'s note as the store holds it now (`None` when not materialized);
/// `placed` when its path was chosen by this change (so a note there is not its own yet).
pub(crate) fn plan_note(
    cx: &ToolCx<'_>,
    conn: &Connection,
    entity: &Entity,
    (placed, moved): (bool, &[Moved]),
) -> Result<Option<NotePlan>, ToolError> {
    if !entity.materialized {
        return Ok(None);
    }
    let Some(path) = &entity.note_path else {
        return Err(ToolError::internal("rendering a note without its path"));
    };
    let path = VaultPath::parse_note(path)?;
    let current = cx.vault().read_if_exists(&path)?;
    // Every path of this change is in the store already (see transact), so the links
    // of the section point at each note, this one included.
    let (outgoing, incoming) = store::links_of(conn, entity.id).map_err(db_error)?;
    let section = render::section(entity, &outgoing, &incoming);
    if let (Some(content), false) = (&current, placed) {
        let found = render::found_section(&content.text());
        // As the store last wrote it, but for the links a move of a neighbour's note
        // rewrote (the store's own edit, not a person's).
        let intact = found.is_some_and(|found| {
            let stored = entity.owned_hash.as_deref();
            Some(render::owned_hash(&found)).as_deref() == stored
                || (!moved.is_empty()
                    && Some(render::owned_hash(&before_moves(&found, moved))).as_deref() == stored)
        });
        if !intact {
            return Err(edited_by_hand(&path));
        }
    }
    let text = current.as_ref().map(|c| c.text().into_owned());
    let new = render::compose(text.as_deref(), &section)
        .map_err(|e| ToolError::from(e.at(&path)))?
        .into_bytes();
    Ok(Some(NotePlan {
        entity: entity.id,
        path,
        current,
        new,
        owned_hash: render::owned_hash(&section),
    }))
}

/// Whether [`transact`] only plans (a precheck) or applies.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mode<'a> {
    /// Roll back after planning.
    Plan,
    /// Write the planned notes and commit; every note must be one of `declared` (the paths
    /// the precheck declared for the folder ACL).
    Apply { declared: &'a [VaultPath] },
}

/// What a change hands back: its own result and the entities whose notes it re-renders.
pub(crate) struct Changed<T> {
    pub value: T,
    pub render: Vec<i64>,
}

/// What [`transact`] did.
#[derive(Debug)]
pub(crate) struct Outcome<T> {
    pub value: T,
    /// The plans of the notes that change (in Plan mode) or changed (in Apply mode).
    pub plans: Vec<NotePlan>,
    /// The notes written (Apply mode).
    pub written: Vec<NoteWritten>,
}

/// A last step of an Apply, between the note writes and the commit (delete_entity removes
/// its own note there); an error undoes the note writes and rolls back.
pub(crate) type Finish<'a> = &'a mut dyn FnMut(&Connection) -> Result<(), HandlerFailure>;

/// Runs `change` in one transaction, then plans, judges and (in Apply mode) writes the
/// notes of the entities it names (see the module documentation).
pub(crate) fn transact<T>(
    memory: &Memory,
    cx: &ToolCx<'_>,
    mode: Mode<'_>,
    change: impl FnOnce(&Connection) -> Result<Changed<T>, ToolError>,
    finish: Option<Finish<'_>>,
) -> Result<Outcome<T>, HandlerFailure> {
    let folder = folder(memory, cx)?;
    let journal = memory.journal(cx.vault().id());
    let mut guard = memory.db().lock();
    let tx = guard
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(db_error)?;
    // Holding the write lock, no change of this vault is in flight: a journal left now is
    // a crashed one's.
    if let Some(journal) = &journal {
        journal.recover(cx, &tx)?;
    }
    let changed = change(&tx)?;
    // Every note gets its path first, so each note rendered after links to the others.
    let mut entities = Vec::new();
    let mut placed = BTreeSet::new();
    let mut seen = BTreeSet::new();
    for id in changed.render {
        if !seen.insert(id) {
            continue;
        }
        let Some(mut entity) = store::get(&tx, cx.vault().id(), id).map_err(db_error)? else {
            continue;
        };
        if entity.materialized && entity.note_path.is_none() {
            let path = choose_path(cx, &tx, &folder, &entity)?;
            store::set_note_path(&tx, id, path.as_str()).map_err(db_error)?;
            entity.note_path = Some(path.as_str().to_owned());
            placed.insert(id);
        }
        entities.push(entity);
    }
    // A note renamed or moved since the store wrote it is followed to its new path, for the
    // entities rendered and for every neighbour their sections link to; the neighbours of a
    // note followed are rendered again, their links to it being out of date.
    let mut moved: Vec<Moved> = Vec::new();
    let mut moved_ids: Vec<i64> = Vec::new();
    let mut looked_at = BTreeSet::new();
    for entity in &mut entities {
        if !placed.contains(&entity.id)
            && looked_at.insert(entity.id)
            && let Some(m) = relocate(cx, &tx, &folder, entity)?
        {
            moved.push(m);
            moved_ids.push(entity.id);
        }
    }
    let rendered: Vec<i64> = entities.iter().map(|e| e.id).collect();
    for id in rendered {
        let (outgoing, incoming) = store::links_of(&tx, id).map_err(db_error)?;
        for other in outgoing.iter().chain(&incoming).map(|l| l.other.id) {
            if looked_at.insert(other)
                && let Some(mut neighbour) =
                    store::get(&tx, cx.vault().id(), other).map_err(db_error)?
                && let Some(m) = relocate(cx, &tx, &folder, &mut neighbour)?
            {
                moved.push(m);
                moved_ids.push(other);
            }
        }
    }
    for id in moved_ids {
        let (outgoing, incoming) = store::links_of(&tx, id).map_err(db_error)?;
        for other in outgoing.iter().chain(&incoming).map(|l| l.other.id) {
            if seen.insert(other)
                && let Some(entity) = store::get(&tx, cx.vault().id(), other).map_err(db_error)?
            {
                entities.push(entity);
            }
        }
    }
    let mut plans = Vec::new();
    for entity in &entities {
        if let Some(plan) = plan_note(cx, &tx, entity, (placed.contains(&entity.id), &moved))? {
            // Recorded now, so the notes planned after it link to its path.
            store::set_note(&tx, plan.entity, plan.path.as_str(), &plan.owned_hash)
                .map_err(db_error)?;
            if plan.changes() {
                plans.push(plan);
            }
        }
    }
    let declared = match mode {
        Mode::Plan => {
            for plan in &plans {
                cx.judge(&plan.intent())
                    .map_err(|blocked| ToolError::convention(&blocked))?;
            }
            drop(tx);
            return Ok(Outcome {
                value: changed.value,
                plans,
                written: Vec::new(),
            });
        }
        Mode::Apply { declared } => declared,
    };
    for plan in &plans {
        if !declared.contains(&plan.path) {
            return Err(ToolError::new(
                ErrorCode::ConcurrentModification,
                format!(
                    "the memory changed while this call was prepared: it would now also \
                     write {}; nothing was changed",
                    plan.path.as_str()
                ),
            )
            .with_details(json!({"path": plan.path.as_str(), "reason": "memory_changed"}))
            .with_recovery("send the call again", None)
            .into());
        }
        cx.judge(&plan.intent())
            .map_err(HandlerFailure::ConventionBlockedBeforeWrite)?;
    }
    let mut written: Vec<(NotePlan, NoteWritten)> = Vec::new();
    let mut journal_id = None;
    let result = (|| -> Result<(), HandlerFailure> {
        if let (Some(journal), false) = (&journal, plans.is_empty()) {
            journal_id = Some(journal.begin(&tx, &plans)?);
        }
        for plan in &plans {
            let outcome = write_planned(cx, plan)?;
            written.push((plan.clone(), outcome));
        }
        if let Some(finish) = finish {
            finish(&tx)?;
        }
        tx.commit().map_err(db_error)?;
        Ok(())
    })();
    if let Err(failure) = result {
        undo(cx, &written);
        if let Some(journal) = &journal {
            // The transaction rolls back and the notes are put back: nothing to recover.
            let _ = journal.remove();
        }
        return Err(failure);
    }
    if let (Some(journal), Some(id)) = (&journal, &journal_id)
        && journal.finish(&guard, id).is_err()
    {
        // Committed all the same: the next change finds the journal's id committed.
        tracing::warn!("memory: a committed change's journal could not be removed");
    }
    let (plans, written) = written.into_iter().unzip();
    Ok(Outcome {
        value: changed.value,
        plans,
        written,
    })
}

// r[impl memory.note.write-gate]
/// Writes one planned note under its lock, only if it is still as planned.
fn write_planned(cx: &ToolCx<'_>, plan: &NotePlan) -> Result<NoteWritten, ToolError> {
    cx.vault().with_note_lock(&plan.path, |locked| {
        let now = locked.read_if_exists()?;
        if now.as_ref().map(|c| &c.hash) != plan.current.as_ref().map(|c| &c.hash) {
            return Err(ToolError::from(VaultError::ConcurrentModification {
                path: plan.path.as_str().to_owned(),
                expected: plan
                    .current
                    .as_ref()
                    .map_or("absent", |c| c.hash.as_str())
                    .to_owned(),
                actual: now
                    .as_ref()
                    .map_or("absent", |c| c.hash.as_str())
                    .to_owned(),
            }));
        }
        let guard = match &plan.current {
            Some(content) => Precondition::HashIs(content.hash.clone()),
            None => Precondition::MustNotExist,
        };
        let outcome = locked.write(&plan.new, &guard)?;
        // r[impl vault.acl.results-readable-only]
        Ok(NoteWritten {
            path: plan.path.as_str().to_owned(),
            created: outcome.created,
            content_hash: cx.may_read(&plan.path).then(|| outcome.hash.clone()),
            written_hash: outcome.hash,
        })
    })
}

/// Puts back the notes a failed change wrote (each only if it is still as written).
fn undo(cx: &ToolCx<'_>, written: &[(NotePlan, NoteWritten)]) {
    for (plan, outcome) in written.iter().rev() {
        let still_ours = cx
            .vault()
            .read_if_exists(&plan.path)
            .ok()
            .flatten()
            .is_some_and(|c| c.hash == outcome.written_hash);
        if !still_ours {
            continue;
        }
        let _ = match &plan.current {
            Some(old) => cx
                .vault()
                .write(
                    &plan.path,
                    &old.bytes,
                    &Precondition::HashIs(outcome.written_hash.clone()),
                )
                .map(|_| ()),
            None => cx.vault().delete(
                &plan.path,
                &Precondition::HashIs(outcome.written_hash.clone()),
            ),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tc_gate::clock::SeededEntropy;
    use tc_gate::cursor::CursorCodec;
    use tc_gate::keys::ServerSecret;
    use tc_tools::testing::{TempVault, binding, caller};
    use tc_tools::{CallControl, PageLimits, PagingSetup};
    use tc_vault::vault::snapshot_dir_for;

    use crate::store::{Relation, Status};

    fn entity(name: &str) -> Entity {
        Entity {
            id: 0,
            vault: "main".into(),
            kind: "person".into(),
            name: name.into(),
            observations: vec![format!("{name} exists")],
            status: Status::Active,
            materialized: true,
            note_path: None,
            owned_hash: None,
            created_ms: 0,
            updated_ms: 0,
        }
    }

    // r[verify memory.sync.atomic]
    #[test]
    fn a_change_that_fails_after_writing_puts_the_notes_back_and_rolls_the_store_back() {
        let temp = TempVault::new();
        let secret = ServerSecret::ephemeral(&SeededEntropy::new(1));
        let vault = temp.open(snapshot_dir_for(&temp.cache(), "main").unwrap(), 1);
        let binding = binding(vault, &temp.cache(), &secret, None, &[]);
        let who = caller();
        let paging = PagingSetup {
            codec: CursorCodec::new(&secret),
            limits: PageLimits::new(1 << 16),
        };
        let control = CallControl::default();
        let cx = ToolCx {
            binding: &binding,
            caller: &who,
            clock: &temp.clock,
            paging: &paging,
            control: &control,
        };
        let memory = Memory::in_memory([]).unwrap();
        let (a, b) = {
            let conn = memory.db().lock();
            (
                store::insert(&conn, &entity("A")).unwrap().id,
                store::insert(&conn, &entity("B")).unwrap().id,
            )
        };
        let knows = Relation {
            source: a,
            target: b,
            relation: "knows".into(),
        };
        let declared = [
            VaultPath::parse("memory/person/A.md").unwrap(),
            VaultPath::parse("memory/person/B.md").unwrap(),
        ];
        let relate = |conn: &Connection| {
            store::relate(conn, &knows, 1).map_err(db_error)?;
            Ok(Changed {
                value: (),
                render: vec![a, b],
            })
        };
        let done = transact(
            &memory,
            &cx,
            Mode::Apply {
                declared: &declared,
            },
            relate,
            None,
        )
        .unwrap();
        assert_eq!(done.written.len(), 2);
        let before = (
            temp.get("memory/person/A.md"),
            temp.get("memory/person/B.md"),
        );
        assert!(
            before
                .0
                .as_deref()
                .unwrap()
                .contains("knows [[memory/person/B|B]]")
        );

        // The same kind of change, failing after both notes were written.
        let unrelate = |conn: &Connection| {
            store::unrelate(conn, &knows).map_err(db_error)?;
            Ok(Changed {
                value: (),
                render: vec![a, b],
            })
        };
        let mut fail = |_: &Connection| -> Result<(), HandlerFailure> {
            Err(ToolError::internal("a step after the writes").into())
        };
        let error = transact(
            &memory,
            &cx,
            Mode::Apply {
                declared: &declared,
            },
            unrelate,
            Some(&mut fail),
        )
        .unwrap_err();
        assert!(matches!(error, HandlerFailure::Failed(_)));
        assert_eq!(
            (
                temp.get("memory/person/A.md"),
                temp.get("memory/person/B.md")
            ),
            before,
            "both notes are as they were"
        );
        let conn = memory.db().lock();
        assert_eq!(
            store::relation_count(&conn, a).unwrap(),
            1,
            "the store rolled back"
        );

        // A note the change would write that the precheck did not declare: refused, nothing
        // written.
        drop(conn);
        let only_a = [declared[0].clone()];
        let error = transact(
            &memory,
            &cx,
            Mode::Apply { declared: &only_a },
            unrelate,
            None,
        )
        .unwrap_err();
        assert!(
            matches!(error, HandlerFailure::Failed(ref e) if e.code == ErrorCode::ConcurrentModification)
        );
        assert_eq!(temp.get("memory/person/A.md"), before.0);
    }

    // r[verify memory.sync.recovered]
    #[test]
    fn a_change_killed_after_writing_is_rolled_back_by_the_next_change() {
        let temp = TempVault::new();
        let secret = ServerSecret::ephemeral(&SeededEntropy::new(1));
        let vault = temp.open(snapshot_dir_for(&temp.cache(), "main").unwrap(), 1);
        let binding = binding(vault, &temp.cache(), &secret, None, &[]);
        let who = caller();
        let paging = PagingSetup {
            codec: CursorCodec::new(&secret),
            limits: PageLimits::new(1 << 16),
        };
        let control = CallControl::default();
        let cx = ToolCx {
            binding: &binding,
            caller: &who,
            clock: &temp.clock,
            paging: &paging,
            control: &control,
        };
        let memory = Memory::in_memory([])
            .unwrap()
            .journaled_in(temp.cache().join("memory-journal"));
        let (a, b) = {
            let conn = memory.db().lock();
            (
                store::insert(&conn, &entity("A")).unwrap().id,
                store::insert(&conn, &entity("B")).unwrap().id,
            )
        };
        let knows = Relation {
            source: a,
            target: b,
            relation: "knows".into(),
        };
        let declared = [
            VaultPath::parse("memory/person/A.md").unwrap(),
            VaultPath::parse("memory/person/B.md").unwrap(),
        ];
        let apply = Mode::Apply {
            declared: &declared,
        };
        let relate = |conn: &Connection| {
            store::relate(conn, &knows, 1).map_err(db_error)?;
            Ok(Changed {
                value: (),
                render: vec![a, b],
            })
        };
        transact(&memory, &cx, apply, relate, None).unwrap();
        let before = (
            temp.get("memory/person/A.md"),
            temp.get("memory/person/B.md"),
        );
        let journal = temp.cache().join("memory-journal");
        assert_eq!(
            std::fs::read_dir(&journal).unwrap().count(),
            0,
            "a committed change leaves no journal"
        );

        // The process dies after writing both notes, before the commit: a panic unwinds past
        // the undo, as a kill would skip it.
        let unrelate = |conn: &Connection| {
            store::unrelate(conn, &knows).map_err(db_error)?;
            Ok(Changed {
                value: (),
                render: vec![a, b],
            })
        };
        let killed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut die = |_: &Connection| -> Result<(), HandlerFailure> {
                panic!("killed between the note writes and the commit")
            };
            let _ = transact(&memory, &cx, apply, unrelate, Some(&mut die));
        }));
        assert!(killed.is_err());
        assert_ne!(
            temp.get("memory/person/A.md"),
            before.0,
            "written, not committed"
        );
        assert_eq!(std::fs::read_dir(&journal).unwrap().count(), 1);

        // The next change of the vault puts the notes back first, so it does not find them
        // edited by hand, and then applies.
        let observe = |conn: &Connection| {
            let mut entity = store::get(conn, "main", a).unwrap().unwrap();
            entity.observations.push("A was here".into());
            store::update(conn, &entity).map_err(db_error)?;
            Ok(Changed {
                value: (),
                render: vec![a],
            })
        };
        transact(&memory, &cx, apply, observe, None).unwrap();
        let now = temp.get("memory/person/A.md").unwrap();
        assert!(now.contains("A was here"), "{now}");
        assert!(now.contains("knows [[memory/person/B|B]]"), "{now}");
        assert_eq!(temp.get("memory/person/B.md"), before.1);
        assert_eq!(std::fs::read_dir(&journal).unwrap().count(), 0);
    }
}
