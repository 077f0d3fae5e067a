//! The link tools: `rewrite_link` and `prune_hub_links` (spec/tools.md `tools.rewrite-link`,
//! `tools.prune-hub-links`, `tools.dry-run-reports`; spec/drift.md `drift.bind.rewrite-link`,
//! `drift.bind.path-tools`).
//!
//! `rewrite_link` binds the set of notes the rewrite would touch with their content hashes
//! (the plan's state): a touched note changing changes its hash, and a note gaining a link
//! to the target joins the set, so either is drift. It plans only over notes the caller may
//! read, so it never reveals one the folder ACL hides, and declares every touched note for
//! the folder ACL (write, or read for a dry run): a touched note the caller may not change
//! is refused by name after the gate (giving a CLI token back), never silently skipped.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_gate::{ConfirmationTargets, fingerprint_targets};
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx, ToolError,
    ToolSpec, path_state,
};
use tc_vault::acl::AclOp;
use tc_vault::conventions::{ContentFacts, Prior, WriteIntent, WriteKind};
use tc_vault::error::VaultError;
use tc_vault::links::{LinkMatcher, LinkResolver, LinkRewrite, find_links, validate_link_target};
use tc_vault::mdlinks::{find_md_links, resolve_markdown};
use tc_vault::path::{FolderPath, VaultPath};
use tc_vault::rewrite::{NoteRewrite, RewritePlan, build_resolver, plan_rewrite};
use tc_vault::vault::{NoteContent, Precondition};

use crate::common::{check_prev_hash, link_sources, not_found, note, plan_over, with_canvases};

fn yes() -> bool {
    true
}

// ---------------------------------------------------------------- rewrite_link

/// `rewrite_link` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RewriteLinkArgs {
    /// The link target to replace (a note name or path).
    #[schemars(length(min = 1, max = 4096))]
    pub from_target: String,
    /// The new link target.
    #[schemars(length(min = 1, max = 4096))]
    pub to_target: String,
    /// Limit the rewrite to this folder; the whole vault when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub folder: Option<String>,
    /// Rewrite ![[embeds]] too.
    #[serde(default = "yes")]
    pub include_embeds: bool,
    /// Only report what would change.
    #[serde(default = "yes")]
    pub dry_run: bool,
}

/// One note a rewrite touches.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TouchedLinks {
    pub path: String,
    /// How many links in it are rewritten.
    pub links: usize,
}

/// `rewrite_link`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RewriteLinkOutput {
    pub dry_run: bool,
    /// The first notes touched (at most 100; `notes_count` has them all).
    pub notes: Vec<TouchedLinks>,
    /// How many notes the rewrite touches.
    pub notes_count: usize,
    /// How many links are (or would be) rewritten in all.
    pub links: usize,
    pub applied: bool,
}

#[derive(Debug)]
pub struct RewriteLink;

fn plan_for(cx: &ToolCx<'_>, args: &RewriteLinkArgs) -> Result<RewritePlan, ToolError> {
    validate_link_target(&args.to_target)
        .map_err(|why| ToolError::validation("/to_target", why))?;
    let folder = match &args.folder {
        Some(folder) => FolderPath::parse(folder)?,
        None => FolderPath::root(),
    };
    let acl = &cx.binding.acl;
    let scopes = &cx.caller.scopes;
    let include = |p: &VaultPath| acl.can_read_at(cx.vault().root(), p, scopes);
    let plan_with = |resolver: &LinkResolver, notes: Option<&[VaultPath]>| {
        let matcher = LinkMatcher::for_target(resolver, &args.from_target);
        // r[impl metadata.links.rewrite-link-kinds]
        // Markdown links and canvases get a path to the file to_target names, when it names
        // one: they cannot carry a bare link text.
        let rewrite = NoteRewrite {
            links: LinkRewrite {
                matcher: &matcher,
                new_target: &args.to_target,
                include_embeds: args.include_embeds,
            },
            new_file: resolver.resolve(&args.to_target),
            after: None,
            moved: None,
        };
        match notes {
            Some(notes) => plan_over(
                cx,
                &with_canvases(notes, resolver),
                &folder,
                resolver,
                &rewrite,
                &include,
            ),
            None => Ok(plan_rewrite(
                cx.vault(),
                &folder,
                resolver,
                &rewrite,
                &include,
            )?),
        }
    };
    // A link can only resolve to a file of the target's name, so the notes the index names
    // for it are every note the rewrite can touch.
    match link_sources(cx, &[&args.from_target])? {
        Some(found) => plan_with(&found.resolver, Some(&found.notes)),
        None => plan_with(&build_resolver(cx.vault())?, None),
    }
}

// r[impl drift.bind.rewrite-link]
// r[impl drift.bind.rewrite-link.canvases]
fn plan_state(plan: RewritePlan) -> TargetState<Option<RewritePlan>> {
    let observed: Vec<(VaultPath, Option<String>)> = plan
        .state()
        .map(|(p, h)| (p.clone(), Some(h.to_owned())))
        .collect();
    TargetState::from_observed(observed, Some(plan))
}

impl Tool for RewriteLink {
    type Args = RewriteLinkArgs;
    type Output = RewriteLinkOutput;
    type Plan = RewritePlan;
    type Seen = Option<RewritePlan>;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "rewrite_link",
            description: "Rewrite links of every kind (wikilinks, embeds, Markdown links, canvas cards) that point at from_target so they point at to_target, in folder (the whole vault when absent). dry_run (default true) only reports; applying needs the human's confirmation.",
            annotations: Annotations::writes(true, true),
            scopes: &["write:notes"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::Custom),
        }
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &RewriteLinkArgs,
    ) -> Result<Precheck<Self::Plan>, ToolError> {
        let plan = plan_for(cx, args)?;
        let op = if args.dry_run {
            AclOp::Read
        } else {
            AclOp::Write
        };
        let acl = plan.notes.iter().map(|n| (op, n.path.clone())).collect();
        Ok(Precheck {
            needs_confirmation: !args.dry_run,
            acl,
            plan: Arc::new(plan),
        })
    }

    fn state(
        &self,
        cx: &ToolCx<'_>,
        args: &RewriteLinkArgs,
        _precheck: &Precheck<Self::Plan>,
    ) -> Result<TargetState<Self::Seen>, ToolError> {
        Ok(plan_state(plan_for(cx, args)?))
    }

    fn state_after_precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &RewriteLinkArgs,
        precheck: &Precheck<Self::Plan>,
    ) -> Result<TargetState<Self::Seen>, ToolError> {
        let _ = (cx, args);
        Ok(plan_state(RewritePlan::clone(&precheck.plan)))
    }

    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &RewriteLinkArgs,
        _precheck: &Precheck<Self::Plan>,
        state: &TargetState<Self::Seen>,
    ) -> Summary {
        let mut summary = Summary::new(format!(
            "rewrite links to {} so they point at {}{}",
            args.from_target,
            args.to_target,
            args.folder
                .as_deref()
                .map_or_else(String::new, |f| format!(" in folder {f}"))
        ));
        if let Some(plan) = (*state.seen).as_ref() {
            summary = summary.detail(format!(
                "{} link(s) in {} note(s)",
                plan.links(),
                plan.notes.len()
            ));
            let named = plan
                .notes
                .iter()
                .map(|touched| format!("{} ({} link(s))", touched.path.as_str(), touched.links))
                .collect();
            summary = summary.targets_named(named, |n| format!("… and {n} more note(s)"));
        }
        summary
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &RewriteLinkArgs,
        _precheck: &Precheck<Self::Plan>,
        state: &TargetState<Self::Seen>,
    ) -> Result<RewriteLinkOutput, HandlerFailure> {
        let plan = (*state.seen)
            .as_ref()
            .ok_or_else(|| ToolError::internal("planning the rewrite"))?;
        let notes_count = plan.notes.len();
        let notes: Vec<TouchedLinks> = plan
            .notes
            .iter()
            .take(crate::common::LISTED_PATHS)
            .map(|n| TouchedLinks {
                path: n.path.as_str().to_owned(),
                links: n.links,
            })
            .collect();
        if args.dry_run {
            // r[impl tools.dry-run-reports]
            return Ok(RewriteLinkOutput {
                dry_run: true,
                notes,
                notes_count,
                links: plan.links(),
                applied: false,
            });
        }
        // Every touched note is judged before the first write, so a refusal here is
        // before any write of the call.
        for touched in &plan.notes {
            let prior = cx
                .vault()
                .read_if_exists(&touched.path)?
                .map_or(Prior::Absent, |c| Prior::Known(ContentFacts::of(&c.bytes)));
            cx.judge(&WriteIntent::new(
                touched.path.clone(),
                WriteKind::Overwrite,
                touched.new_content.as_bytes(),
                prior,
            ))
            .map_err(HandlerFailure::ConventionBlockedBeforeWrite)?;
        }
        // r[impl tools.progress]
        let total = plan.notes.len() as f64;
        cx.progress(0.0, Some(total), Some("rewriting links"));
        let mut report = |done: usize| cx.progress(done as f64, Some(total), None);
        match plan.apply_reporting(cx.vault(), &mut report) {
            Ok(_) => Ok(RewriteLinkOutput {
                dry_run: false,
                notes,
                notes_count,
                links: plan.links(),
                applied: true,
            }),
            Err((written, error)) => Err(ToolError::from(&error)
                .detail(
                    "written",
                    serde_json::json!(written.iter().map(VaultPath::as_str).collect::<Vec<_>>()),
                )
                .into()),
        }
    }
}

// ---------------------------------------------------------------- prune_hub_links

/// `prune_hub_links` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PruneHubLinksArgs {
    /// The hub note.
    #[schemars(length(min = 1, max = 4096))]
    pub path: String,
    /// The note's content_hash as last read; the call is refused with
    /// concurrent_modification if the note changed since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev_hash: Option<String>,
    /// Only report the links that would go.
    #[serde(default = "yes")]
    pub dry_run: bool,
}

/// `prune_hub_links`' result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PruneHubLinksOutput {
    pub path: String,
    pub dry_run: bool,
    /// The targets of the first links that resolve to no note (at most 100;
    /// `removed_count` has them all).
    pub removed: Vec<String>,
    /// How many links resolve to no note.
    pub removed_count: usize,
    pub applied: bool,
    pub content_hash: String,
}

#[derive(Debug)]
pub struct PruneHubLinks;

/// The hub note without its links that resolve to no file, and the targets removed. A
/// line left with nothing but a list or task marker is dropped whole.
// r[impl tools.prune-hub-links.markdown]
fn prune(cx: &ToolCx<'_>, hub: &VaultPath, text: &str) -> Result<(String, Vec<String>), ToolError> {
    // Only the hub is read; the index, when it can answer, spares the walk of the vault
    // that resolving its links would otherwise need.
    let indexed = link_sources(cx, &[])?;
    let scanned;
    let resolver = match &indexed {
        Some(found) => found.resolver.as_ref(),
        None => {
            scanned = build_resolver(cx.vault())?;
            &scanned
        }
    };
    // Dead links of both kinds, as (range, the target as written), in the note's order.
    let mut dead: Vec<(std::ops::Range<usize>, String)> = find_links(text)
        .into_iter()
        .filter(|l| !l.target.trim().is_empty() && resolver.resolve(&l.target).is_none())
        .map(|l| (l.range, l.target))
        .chain(
            find_md_links(text)
                .into_iter()
                .filter(|l| resolve_markdown(resolver, hub, &l.path).is_none())
                .map(|l| (l.range, l.raw)),
        )
        // A link never spans lines; one that seems to is left alone.
        .filter(|(range, _)| !text[range.clone()].contains('\n'))
        .collect();
    dead.sort_by_key(|(range, _)| range.start);
    let removed: Vec<String> = dead.iter().map(|(_, target)| target.clone()).collect();
    let mut out = String::with_capacity(text.len());
    let mut pending = dead.iter().peekable();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let end = start + line.len();
        let mut kept = String::with_capacity(line.len());
        let mut copied = start;
        let mut pruned_here = false;
        while let Some((range, _)) = pending.next_if(|(range, _)| range.start < end) {
            kept.push_str(&text[copied..range.start]);
            copied = range.end;
            pruned_here = true;
        }
        kept.push_str(&text[copied..end]);
        if !(pruned_here && is_bare_marker(kept.trim_end_matches(['\n', '\r']))) {
            out.push_str(&kept);
        }
        start = end;
    }
    Ok((out, removed))
}

/// A line holding nothing but whitespace and perhaps a list or task marker.
fn is_bare_marker(line: &str) -> bool {
    let rest = line.trim();
    let rest = rest
        .strip_prefix(['-', '*', '+'])
        .map(str::trim_start)
        .unwrap_or(rest);
    let rest = rest
        .strip_prefix("[ ]")
        .or_else(|| rest.strip_prefix("[x]"))
        .unwrap_or(rest);
    rest.trim().is_empty()
}

/// The dead links a prune_hub_links precheck found.
fn removed_of(precheck: &Precheck<Vec<String>>) -> &[String] {
    &precheck.plan
}

fn hub_text(path: &VaultPath, content: &NoteContent) -> Result<String, ToolError> {
    Ok(content.utf8(path)?.to_owned())
}

impl Tool for PruneHubLinks {
    type Args = PruneHubLinksArgs;
    type Output = PruneHubLinksOutput;
    type Plan = Vec<String>;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "prune_hub_links",
            description: "Remove from a hub note the links that resolve to no note. dry_run (default true) only reports; removing at least one link needs the human's confirmation.",
            annotations: Annotations::writes(true, true),
            scopes: &["write:notes"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::Custom),
        }
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &PruneHubLinksArgs,
    ) -> Result<Precheck<Self::Plan>, ToolError> {
        let path = note(&args.path)?;
        // r[impl vault.acl.declared.edits-read]
        cx.require_read(&path)?;
        let current = cx
            .vault()
            .read_if_exists(&path)?
            .ok_or_else(|| not_found(&path))?;
        check_prev_hash(&path, args.prev_hash.as_deref(), Some(&current))?;
        let (new, removed) = prune(cx, &path, &hub_text(&path, &current)?)?;
        if !args.dry_run && !removed.is_empty() {
            cx.judge(&WriteIntent::new(
                path.clone(),
                WriteKind::Overwrite,
                new.as_bytes(),
                Prior::Known(ContentFacts::of(&current.bytes)),
            ))
            .map_err(|b| ToolError::convention(&b))?;
        }
        // The result names the dead links, so a real run reads the hub as well as writing it.
        let mut acl = vec![(AclOp::Read, path.clone())];
        if !args.dry_run {
            acl.push((AclOp::Write, path));
        }
        Ok(Precheck {
            needs_confirmation: !args.dry_run && !removed.is_empty(),
            acl,
            plan: Arc::new(removed),
        })
    }

    // r[impl drift.bind.prune-hub-links]
    /// The hub's content and the dead links the call would remove (worked out again by each
    /// call's precheck from the vault's files): a link that became dead since the request,
    /// with the hub unchanged, would otherwise go without the human having seen it.
    fn state(
        &self,
        cx: &ToolCx<'_>,
        _args: &PruneHubLinksArgs,
        precheck: &Precheck<Self::Plan>,
    ) -> Result<TargetState, ToolError> {
        let hub = path_state(cx.vault(), &precheck.declared_paths())?;
        let mut targets: Vec<(String, Option<String>)> = hub
            .observed
            .iter()
            .map(|(path, hash)| (path.as_str().to_owned(), hash.clone()))
            .collect();
        // NUL is in no vault path, so a dead link's entry never stands for a note's.
        targets.extend(
            removed_of(precheck)
                .iter()
                .map(|target| (format!("\0dead link\0{target}"), None)),
        );
        Ok(TargetState {
            fp: fingerprint_targets(&targets),
            ..hub
        })
    }

    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &PruneHubLinksArgs,
        precheck: &Precheck<Self::Plan>,
        _state: &TargetState,
    ) -> Summary {
        let removed = removed_of(precheck).to_vec();
        let summary = Summary::new(format!(
            "remove {} dead link(s) from {}",
            removed.len(),
            args.path
        ))
        .target(&args.path);
        let named = removed
            .iter()
            .map(|target| format!("- [[{target}]]"))
            .collect();
        summary.details_named(named, |n| format!("… and {n} more"))
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &PruneHubLinksArgs,
        _precheck: &Precheck<Self::Plan>,
        state: &TargetState,
    ) -> Result<PruneHubLinksOutput, HandlerFailure> {
        let path = note(&args.path)?;
        let current = cx.vault().read(&path)?;
        if let Some(Some(observed)) = state.observed_hash(&path)
            && observed != current.hash
        {
            return Err(ToolError::from(VaultError::ConcurrentModification {
                path: path.as_str().to_owned(),
                expected: observed.to_owned(),
                actual: current.hash.clone(),
            })
            .into());
        }
        let (new, mut removed) = prune(cx, &path, &hub_text(&path, &current)?)?;
        let removed_count = removed.len();
        removed.truncate(crate::common::LISTED_PATHS);
        if args.dry_run || removed.is_empty() {
            return Ok(PruneHubLinksOutput {
                path: path.as_str().to_owned(),
                dry_run: args.dry_run,
                removed,
                removed_count,
                applied: false,
                content_hash: current.hash,
            });
        }
        // r[impl versions.keep.confirmed]
        // Applying removes links (always confirmed): the hub as it was is kept first.
        let outcome = cx
            .vault()
            .write_keeping(
                &path,
                new.as_bytes(),
                &Precondition::HashIs(current.hash.clone()),
            )?
            .outcome;
        Ok(PruneHubLinksOutput {
            path: path.as_str().to_owned(),
            dry_run: false,
            removed,
            removed_count,
            applied: true,
            content_hash: outcome.hash,
        })
    }
}
