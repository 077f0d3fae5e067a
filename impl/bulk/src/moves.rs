//! `bulk_move_notes`: many notes moved, with every link to them rewritten, under one
//! confirmation bound to every source, destination and backlinking note, applied all or
//! nothing (spec/bulk.md `bulk.move.*`, `bulk.dry-run.free`, `bulk.precheck.whole-call`;
//! spec/drift.md `drift.bind.bulk-move-notes`; spec/tools.md `tools.compose.bulk-move-notes`).
//!
//! Each move is planned as `move_note` plans one (the same functions), against the vault as
//! it is. Applied, the moves run one after another, each journaled with its link rewrites
//! (`vault.move.journaled`) and planned again against the vault the earlier moves left, so a
//! note linking to several moved notes ends with every link rewritten. A move that fails puts
//! back every note the call changed before it, in reverse order, and the call fails naming it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_gate::ConfirmationTargets;
use tc_tools::backlinks::move_backlinks;
use tc_tools::note_write::{exists_error, not_found, note, preflight};
use tc_tools::{
    Annotations, ErrorCode, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx,
    ToolError, ToolSpec, path_state,
};
use tc_vault::acl::AclOp;
use tc_vault::conventions::{ContentFacts, Prior, WriteIntent, WriteKind};
use tc_vault::links::validate_link_target;
use tc_vault::path::VaultPath;
use tc_vault::rewrite::RewritePlan;
use tc_vault::vault::{Precondition, Rewrite, SnapshotInfo};

use crate::common::{ItemResult, check_paths};

fn yes() -> bool {
    true
}

/// One move.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Move {
    pub from: String,
    pub to: String,
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkMoveNotesArgs {
    /// The moves, at most 1000; no destination may be another move's source.
    pub moves: Vec<Move>,
    /// Replace notes already at destinations.
    #[serde(default)]
    pub overwrite: bool,
    /// Rewrite links to the moved notes across the vault.
    #[serde(default = "yes")]
    pub update_backlinks: bool,
    /// Only report the plan (free; the default).
    #[serde(default = "yes")]
    pub dry_run: bool,
}

/// One planned move.
#[derive(Debug)]
pub struct PlannedMove {
    pub from: VaultPath,
    pub to: VaultPath,
    pub replaces: bool,
    pub backlinks: Option<RewritePlan>,
}

#[derive(Debug, Default)]
pub struct MovePlan {
    pub moves: Vec<PlannedMove>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct BulkMoveNotesOutput {
    pub dry_run: bool,
    pub moved: usize,
    /// Links rewritten (planned, on a dry run) in `notes_rewritten` notes.
    pub links_rewritten: usize,
    pub notes_rewritten: usize,
    pub items: Vec<ItemResult>,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct BulkMoveNotes;

fn plan(cx: &ToolCx<'_>, args: &BulkMoveNotesArgs) -> Result<MovePlan, ToolError> {
    let mut moves = Vec::with_capacity(args.moves.len());
    let (mut missing, mut taken) = (Vec::new(), Vec::new());
    for item in &args.moves {
        let (from, to) = (note(&item.from)?, note(&item.to)?);
        // r[impl bulk.move.reveals]
        // A note moved anywhere by a bulk call is one the caller reads: its plan shows it.
        cx.require_read(&from)?;
        let Some(source) = cx.vault().read_if_exists(&from)? else {
            missing.push(from);
            continue;
        };
        let replaces = cx.vault().exists(&to)?;
        if replaces && !args.overwrite {
            taken.push(to.clone());
        }
        preflight(
            cx,
            &WriteIntent::new(
                to.clone(),
                WriteKind::Move { from: from.clone() },
                &source.bytes,
                Prior::Absent,
            ),
        )?;
        let backlinks = if args.update_backlinks {
            validate_link_target(to.as_str()).map_err(|why| {
                ToolError::validation(
                    "/moves",
                    format!("{}: {why}, so links to it could not name it (pass update_backlinks: false)", to.as_str()),
                )
            })?;
            let plan = move_backlinks(cx, &from, &to)?;
            for touched in plan.notes.iter().filter(|n| n.path != to) {
                let prior = cx
                    .vault()
                    .read_if_exists(&touched.path)?
                    .map_or(Prior::Unknown, |c| Prior::Known(ContentFacts::of(&c.bytes)));
                preflight(
                    cx,
                    &WriteIntent::new(
                        touched.path.clone(),
                        WriteKind::Overwrite,
                        touched.new_content.as_bytes(),
                        prior,
                    ),
                )?;
            }
            Some(plan)
        } else {
            None
        };
        moves.push(PlannedMove {
            from,
            to,
            replaces,
            backlinks,
        });
    }
    if let Some(first) = missing.first() {
        return Err(not_found(first).detail("paths", paths_json(&missing)));
    }
    if let Some(first) = taken.first() {
        return Err(exists_error(first).detail("paths", paths_json(&taken)));
    }
    Ok(MovePlan { moves })
}

fn paths_json(paths: &[VaultPath]) -> serde_json::Value {
    serde_json::json!(paths.iter().map(VaultPath::as_str).collect::<Vec<_>>())
}

/// Every path the call reads or writes: each source and destination and every backlinking
/// note, once, in order.
fn declared(plan: &MovePlan) -> Vec<(AclOp, VaultPath)> {
    let mut acl = Vec::new();
    let mut seen = BTreeSet::new();
    let mut add = |op: AclOp, path: &VaultPath, acl: &mut Vec<(AclOp, VaultPath)>| {
        if seen.insert((op as u8, path.clone())) {
            acl.push((op, path.clone()));
        }
    };
    for m in &plan.moves {
        add(AclOp::Read, &m.from, &mut acl);
        add(AclOp::Write, &m.from, &mut acl);
        add(AclOp::Write, &m.to, &mut acl);
        for touched in m.backlinks.iter().flat_map(|b| &b.notes) {
            if touched.path != m.to {
                add(AclOp::Write, &touched.path, &mut acl);
            }
        }
    }
    acl
}

/// What one applied move changed, to put it back.
struct Applied {
    from: VaultPath,
    to: VaultPath,
    /// The moved note's hash at `to` after the move.
    moved_hash: String,
    kept: Option<SnapshotInfo>,
    /// Each rewritten note, its bytes before and its hash after.
    rewritten: Vec<(VaultPath, Vec<u8>, String)>,
}

// r[impl bulk.move.all-or-nothing]
/// Puts back, newest first, everything `applied` changed; what cannot be put back (a note
/// changed by someone since) is named in the log.
fn put_back(cx: &ToolCx<'_>, applied: &[Applied]) {
    for done in applied.iter().rev() {
        let mut at_to = done.moved_hash.clone();
        for (path, old, new_hash) in done.rewritten.iter().rev() {
            let restored = cx
                .vault()
                .write(path, old, &Precondition::HashIs(new_hash.clone()));
            match restored {
                Ok(outcome) if path == &done.to => at_to = outcome.hash,
                Ok(_) => {}
                Err(e) => tracing::warn!(
                    path = path.as_str(),
                    "bulk_move_notes could not put back: {e}"
                ),
            }
        }
        if let Err(e) = cx.vault().rename(
            &done.to,
            &done.from,
            &Precondition::HashIs(at_to),
            &Precondition::MustNotExist,
        ) {
            tracing::warn!(
                from = done.to.as_str(),
                "bulk_move_notes could not move back: {e}"
            );
            continue;
        }
        if let Some(kept) = &done.kept
            && let Err(e) = cx.vault().restore(&done.to, Some(kept.id.as_str()))
        {
            tracing::warn!(
                path = done.to.as_str(),
                "bulk_move_notes could not restore: {e}"
            );
        }
    }
}

/// A move that failed, with what it had applied before failing (to be put back).
struct Failed {
    applied: Option<Box<Applied>>,
    error: Box<ToolError>,
}

impl From<ToolError> for Failed {
    fn from(error: ToolError) -> Self {
        Failed {
            applied: None,
            error: Box::new(error),
        }
    }
}

impl From<tc_vault::error::VaultError> for Failed {
    fn from(error: tc_vault::error::VaultError) -> Self {
        ToolError::from(error).into()
    }
}

/// One move applied against the vault the earlier moves left; `expected` holds each path's
/// content hash as the approval (and this call's own writes) left it.
fn apply_one(
    cx: &ToolCx<'_>,
    m: &PlannedMove,
    update_backlinks: bool,
    declared: &BTreeSet<VaultPath>,
    expected: &mut BTreeMap<VaultPath, Option<String>>,
) -> Result<Applied, Failed> {
    let changed = |path: &VaultPath| {
        ToolError::new(
            ErrorCode::ConcurrentModification,
            format!("{} changed while the moves were applied", path.as_str()),
        )
    };
    let source = cx
        .vault()
        .read_if_exists(&m.from)?
        .ok_or_else(|| not_found(&m.from))?;
    if expected.get(&m.from).cloned().flatten().as_deref() != Some(source.hash.as_str()) {
        return Err(changed(&m.from).into());
    }
    let target_guard = match expected.get(&m.to).cloned().flatten() {
        Some(hash) => Precondition::HashIs(hash),
        None => Precondition::MustNotExist,
    };
    let mut rewrites = Vec::new();
    let mut olds = Vec::new();
    if update_backlinks {
        // Planned again against the vault as the earlier moves left it, so a note linking
        // to several moved notes gets each of its links rewritten in turn.
        let plan = move_backlinks(cx, &m.from, &m.to)?;
        for touched in plan.notes {
            let before = if touched.path == m.to {
                &m.from
            } else {
                &touched.path
            };
            if touched.path != m.to && !declared.contains(&touched.path) {
                return Err(changed(&touched.path).into());
            }
            if expected.get(before).cloned().flatten().as_deref() != Some(touched.hash.as_str()) {
                return Err(changed(before).into());
            }
            let old = if touched.path == m.to {
                source.bytes.clone()
            } else {
                cx.vault()
                    .read_if_exists(&touched.path)?
                    .ok_or_else(|| changed(&touched.path))?
                    .bytes
            };
            olds.push(old);
            rewrites.push(Rewrite {
                path: touched.path,
                expected_hash: touched.hash,
                content: touched.new_content.into_bytes(),
            });
        }
    }
    let outcome = cx.vault().move_rewriting(
        &m.from,
        &m.to,
        &Precondition::HashIs(source.hash.clone()),
        &target_guard,
        true,
        &rewrites,
    )?;
    let mut applied = Applied {
        from: m.from.clone(),
        to: m.to.clone(),
        moved_hash: source.hash.clone(),
        kept: outcome.kept,
        rewritten: Vec::new(),
    };
    expected.insert(m.from.clone(), None);
    expected.insert(m.to.clone(), Some(source.hash));
    let mut failed = None;
    for ((rewrite, old), result) in rewrites.into_iter().zip(olds).zip(outcome.rewrites) {
        match result {
            Ok(()) => {
                let hash = tc_vault::content_hash(&rewrite.content);
                expected.insert(rewrite.path.clone(), Some(hash.clone()));
                if rewrite.path == m.to {
                    applied.moved_hash = hash.clone();
                }
                applied.rewritten.push((rewrite.path, old, hash));
            }
            Err(e) => failed = Some((rewrite.path, ToolError::from(&e))),
        }
    }
    match failed {
        // The move and the rewrites that landed are put back by the caller with the rest.
        Some((path, error)) => Err(Failed {
            applied: Some(Box::new(applied)),
            error: Box::new(ToolError::new(
                error.code,
                format!(
                    "rewriting the links in {}: {}",
                    path.as_str(),
                    error.message
                ),
            )),
        }),
        None => Ok(applied),
    }
}

impl Tool for BulkMoveNotes {
    type Args = BulkMoveNotesArgs;
    type Output = BulkMoveNotesOutput;
    type Plan = MovePlan;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "bulk_move_notes",
            description: "Move up to 1000 notes, rewriting every link to them, all or nothing. dry_run (default) shows the plan for free; a real run asks the human once.",
            annotations: Annotations::writes(true, false),
            scopes: &["write:notes", "delete:notes", "bulk:notes"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::PathAcl),
        }
    }

    fn check(&self, args: &BulkMoveNotesArgs) -> Result<(), ToolError> {
        check_paths("moves", args.moves.iter().map(|m| m.from.as_str()))?;
        check_paths("moves", args.moves.iter().map(|m| m.to.as_str()))?;
        let sources: BTreeSet<&str> = args.moves.iter().map(|m| m.from.as_str()).collect();
        if let Some(chained) = args.moves.iter().find(|m| sources.contains(m.to.as_str())) {
            return Err(ToolError::validation(
                "/moves",
                format!(
                    "{} is both a destination and a source; move in two calls",
                    chained.to
                ),
            ));
        }
        Ok(())
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &BulkMoveNotesArgs,
    ) -> Result<Precheck<MovePlan>, ToolError> {
        let plan = plan(cx, args)?;
        // r[impl drift.bind.bulk-move-notes]
        let acl = declared(&plan);
        Ok(Precheck {
            // r[impl bulk.dry-run.free]
            needs_confirmation: !args.dry_run,
            acl,
            plan: Arc::new(plan),
        })
    }

    // r[impl drift.bind.bulk-move-notes]
    /// Every declared path, and every note that links to a moved note now: a check made
    /// without a new precheck (the shim's) plans the backlinks again, so a note that gained
    /// a link meanwhile joins the binding and is drift.
    fn state(
        &self,
        cx: &ToolCx<'_>,
        args: &BulkMoveNotesArgs,
        precheck: &Precheck<MovePlan>,
    ) -> Result<TargetState, ToolError> {
        let mut paths = precheck.declared_paths();
        if args.update_backlinks {
            for m in &precheck.plan.moves {
                for touched in move_backlinks(cx, &m.from, &m.to)?.notes {
                    if touched.path != m.to && !paths.contains(&touched.path) {
                        paths.push(touched.path);
                    }
                }
            }
        }
        path_state(cx.vault(), &paths)
    }

    fn state_after_precheck(
        &self,
        cx: &ToolCx<'_>,
        _args: &BulkMoveNotesArgs,
        precheck: &Precheck<MovePlan>,
    ) -> Result<TargetState, ToolError> {
        path_state(cx.vault(), &precheck.declared_paths())
    }

    // r[impl bulk.summary.items]
    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        _args: &BulkMoveNotesArgs,
        precheck: &Precheck<MovePlan>,
        _state: &TargetState,
    ) -> Summary {
        let moves = &precheck.plan.moves;
        let replacing = moves.iter().filter(|m| m.replaces).count();
        let touched: BTreeSet<&VaultPath> = moves
            .iter()
            .flat_map(|m| m.backlinks.iter().flat_map(|b| &b.notes))
            .map(|n| &n.path)
            .collect();
        let links: usize = moves
            .iter()
            .flat_map(|m| m.backlinks.iter())
            .map(RewritePlan::links)
            .sum();
        let lines = moves
            .iter()
            .map(|m| {
                let links = m.backlinks.as_ref().map_or(0, RewritePlan::links);
                let over = if m.replaces {
                    ", replacing the note there"
                } else {
                    ""
                };
                format!(
                    "{} -> {} ({links} link(s){over})",
                    m.from.as_str(),
                    m.to.as_str()
                )
            })
            .collect();
        Summary::new(format!(
            "move {} note(s), {replacing} over an existing note; rewrite {links} link(s) in {} note(s); all or nothing",
            moves.len(),
            touched.len()
        ))
        .targets_named(lines, |rest| format!("… and {rest} more move(s)"))
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &BulkMoveNotesArgs,
        precheck: &Precheck<MovePlan>,
        state: &TargetState,
    ) -> Result<BulkMoveNotesOutput, HandlerFailure> {
        let moves = &precheck.plan.moves;
        let planned_links = |m: &PlannedMove| m.backlinks.as_ref().map_or(0, RewritePlan::links);
        if args.dry_run {
            let touched: BTreeSet<&VaultPath> = moves
                .iter()
                .flat_map(|m| m.backlinks.iter().flat_map(|b| &b.notes))
                .map(|n| &n.path)
                .collect();
            return Ok(BulkMoveNotesOutput {
                dry_run: true,
                moved: 0,
                links_rewritten: moves.iter().map(planned_links).sum(),
                notes_rewritten: touched.len(),
                items: moves
                    .iter()
                    .map(|m| ItemResult::done(&m.to, "planned", None))
                    .collect(),
            });
        }
        let declared: BTreeSet<VaultPath> = precheck.declared_paths().into_iter().collect();
        let mut expected: BTreeMap<VaultPath, Option<String>> = state
            .observed
            .iter()
            .map(|(path, hash)| (path.clone(), hash.clone()))
            .collect();
        let mut applied: Vec<Applied> = Vec::new();
        for (index, m) in moves.iter().enumerate() {
            match apply_one(cx, m, args.update_backlinks, &declared, &mut expected) {
                Ok(done) => applied.push(done),
                Err(Failed {
                    applied: half,
                    error,
                }) => {
                    applied.extend(half.map(|b| *b));
                    put_back(cx, &applied);
                    return Err(ToolError::new(
                        error.code,
                        format!(
                            "move {} of {} ({} -> {}) failed: {}; every note the call had changed is put back",
                            index + 1,
                            moves.len(),
                            m.from.as_str(),
                            m.to.as_str(),
                            error.message
                        ),
                    )
                    .detail("failed_move", serde_json::json!(index))
                    .into());
                }
            }
        }
        let touched: BTreeSet<&VaultPath> = applied
            .iter()
            .flat_map(|a| a.rewritten.iter().map(|(p, _, _)| p))
            .collect();
        Ok(BulkMoveNotesOutput {
            dry_run: false,
            moved: applied.len(),
            links_rewritten: moves.iter().map(planned_links).sum(),
            notes_rewritten: touched.len(),
            items: applied
                .iter()
                .map(|a| ItemResult::done(&a.to, "moved", Some(a.moved_hash.clone())))
                .collect(),
        })
    }
}
