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

use serde_json::{Value, json};
use tc_gate::fingerprint_targets;

use super::notes::Args;
use super::{HandlerFailure, Precheck, TargetState, ToolCx, ToolError, ToolHandler, ToolOutput};
use crate::acl::AclOp;
use crate::conventions::{ContentFacts, Prior, WriteIntent, WriteKind};
use crate::error::VaultError;
use crate::links::{LinkMatcher, LinkRewrite, find_links, validate_link_target};
use crate::path::{FolderPath, VaultPath};
use crate::rewrite::{RewritePlan, build_resolver, plan_rewrite};
use crate::vault::{NoteContent, Precondition};

// ---------------------------------------------------------------- rewrite_link

#[derive(Debug)]
pub(crate) struct RewriteLink;

fn plan_for(cx: &ToolCx<'_>, args: &Value) -> Result<RewritePlan, ToolError> {
    let a = Args(args);
    let from_target = a.str("from_target")?;
    let to_target = a.str("to_target")?;
    validate_link_target(to_target).map_err(|why| ToolError::validation("/to_target", why))?;
    let folder = match a.opt_str("folder")? {
        Some(folder) => FolderPath::parse(folder)?,
        None => FolderPath::root(),
    };
    let resolver = build_resolver(cx.vault())?;
    let matcher = LinkMatcher::for_target(&resolver, from_target);
    let rewrite = LinkRewrite {
        matcher: &matcher,
        new_target: to_target,
        include_embeds: a.bool("include_embeds")?,
    };
    let acl = &cx.binding.acl;
    let scopes = &cx.caller.scopes;
    let include = |p: &VaultPath| acl.can_read(p, scopes);
    Ok(plan_rewrite(
        cx.vault(),
        &folder,
        &resolver,
        &rewrite,
        &include,
    )?)
}

// r[impl drift.bind.rewrite-link]
fn plan_state(plan: RewritePlan) -> TargetState {
    let observed: Vec<(VaultPath, Option<String>)> = plan
        .state()
        .map(|(p, h)| (p.clone(), Some(h.to_owned())))
        .collect();
    let targets: Vec<(String, Option<String>)> = observed
        .iter()
        .map(|(p, h)| (p.as_str().to_owned(), h.clone()))
        .collect();
    TargetState {
        fp: fingerprint_targets(&targets),
        observed,
        payload: Some(Arc::new(plan)),
    }
}

fn plan_of(payload: &super::Payload) -> Option<&RewritePlan> {
    payload
        .as_ref()
        .and_then(|p| p.downcast_ref::<RewritePlan>())
}

impl ToolHandler for RewriteLink {
    fn precheck(&self, cx: &ToolCx<'_>, args: &Value) -> Result<Precheck, ToolError> {
        let plan = plan_for(cx, args)?;
        let dry_run = Args(args).bool("dry_run")?;
        let op = if dry_run { AclOp::Read } else { AclOp::Write };
        let acl = plan.notes.iter().map(|n| (op, n.path.clone())).collect();
        Ok(Precheck {
            needs_confirmation: !dry_run,
            acl,
            payload: Some(Arc::new(plan)),
        })
    }

    fn state(
        &self,
        cx: &ToolCx<'_>,
        args: &Value,
        _precheck: &Precheck,
    ) -> Result<TargetState, ToolError> {
        Ok(plan_state(plan_for(cx, args)?))
    }

    fn state_after_precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &Value,
        precheck: &Precheck,
    ) -> Result<TargetState, ToolError> {
        match plan_of(&precheck.payload) {
            Some(plan) => Ok(plan_state(plan.clone())),
            None => self.state(cx, args, precheck),
        }
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &Value,
        _precheck: &Precheck,
        state: &TargetState,
    ) -> Result<ToolOutput, HandlerFailure> {
        let plan =
            plan_of(&state.payload).ok_or_else(|| ToolError::internal("planning the rewrite"))?;
        let notes: Vec<Value> = plan
            .notes
            .iter()
            .map(|n| json!({"path": n.path.as_str(), "links": n.links}))
            .collect();
        if Args(args).bool("dry_run")? {
            // r[impl tools.dry-run-reports]
            return Ok(ToolOutput::from(json!({
                "dry_run": true,
                "notes": notes,
                "links": plan.links(),
                "applied": false,
            })));
        }
        // Every touched note is judged before the first write, so a refusal here is
        // before any write of the call.
        for note in &plan.notes {
            let prior = cx
                .vault()
                .read_if_exists(&note.path)?
                .map_or(Prior::Absent, |c| Prior::Known(ContentFacts::of(&c.bytes)));
            cx.judge(&WriteIntent::new(
                note.path.clone(),
                WriteKind::Overwrite,
                note.new_content.as_bytes(),
                prior,
            ))
            .map_err(HandlerFailure::ConventionBlockedBeforeWrite)?;
        }
        match plan.apply(cx.vault()) {
            Ok(_) => Ok(ToolOutput::from(json!({
                "dry_run": false,
                "notes": notes,
                "links": plan.links(),
                "applied": true,
            }))),
            Err((written, error)) => Err(ToolError::from(&error)
                .detail(
                    "written",
                    json!(written.iter().map(VaultPath::as_str).collect::<Vec<_>>()),
                )
                .into()),
        }
    }
}

// ---------------------------------------------------------------- prune_hub_links

#[derive(Debug)]
pub(crate) struct PruneHubLinks;

/// The hub note without its links that resolve to no file, and the targets removed. A
/// line left with nothing but a list or task marker is dropped whole.
fn prune(cx: &ToolCx<'_>, text: &str) -> Result<(String, Vec<String>), ToolError> {
    let resolver = build_resolver(cx.vault())?;
    let dead: Vec<_> = find_links(text)
        .into_iter()
        .filter(|l| !l.target.trim().is_empty() && resolver.resolve(&l.target).is_none())
        // A wikilink never spans lines; one that seems to is left alone.
        .filter(|l| !text[l.range.clone()].contains('\n'))
        .collect();
    let removed: Vec<String> = dead.iter().map(|l| l.target.clone()).collect();
    let mut out = String::with_capacity(text.len());
    let mut pending = dead.iter().peekable();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let end = start + line.len();
        let mut kept = String::with_capacity(line.len());
        let mut copied = start;
        let mut pruned_here = false;
        while let Some(link) = pending.next_if(|l| l.range.start < end) {
            kept.push_str(&text[copied..link.range.start]);
            copied = link.range.end;
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

fn hub_text(path: &VaultPath, content: &NoteContent) -> Result<String, ToolError> {
    String::from_utf8(content.bytes.clone())
        .map_err(|_| ToolError::validation("/path", format!("{path} is not valid UTF-8")))
}

impl ToolHandler for PruneHubLinks {
    fn precheck(&self, cx: &ToolCx<'_>, args: &Value) -> Result<Precheck, ToolError> {
        let a = Args(args);
        let path = a.note("path")?;
        let current = cx.vault().read_if_exists(&path)?.ok_or_else(|| {
            ToolError::from(VaultError::NoteNotFound {
                path: path.as_str().to_owned(),
            })
        })?;
        if let Some(expected) = a.opt_str("prev_hash")?
            && expected != current.hash
        {
            return Err(VaultError::ConcurrentModification {
                path: path.as_str().to_owned(),
                expected: expected.to_owned(),
                actual: current.hash.clone(),
            }
            .into());
        }
        let (new, removed) = prune(cx, &hub_text(&path, &current)?)?;
        let dry_run = a.bool("dry_run")?;
        if !dry_run && !removed.is_empty() {
            cx.judge(&WriteIntent::new(
                path.clone(),
                WriteKind::Overwrite,
                new.as_bytes(),
                Prior::Known(ContentFacts::of(&current.bytes)),
            ))
            .map_err(|b| ToolError::convention(&b))?;
        }
        let op = if dry_run { AclOp::Read } else { AclOp::Write };
        Ok(Precheck {
            needs_confirmation: !dry_run && !removed.is_empty(),
            acl: vec![(op, path)],
            payload: None,
        })
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &Value,
        _precheck: &Precheck,
        state: &TargetState,
    ) -> Result<ToolOutput, HandlerFailure> {
        let a = Args(args);
        let path = a.note("path")?;
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
        let (new, removed) = prune(cx, &hub_text(&path, &current)?)?;
        if a.bool("dry_run")? || removed.is_empty() {
            return Ok(ToolOutput::from(json!({
                "path": path.as_str(),
                "dry_run": a.bool("dry_run")?,
                "removed": removed,
                "applied": false,
                "content_hash": current.hash,
            })));
        }
        let outcome = cx.vault().write(
            &path,
            new.as_bytes(),
            &Precondition::HashIs(current.hash.clone()),
        )?;
        Ok(ToolOutput::from(json!({
            "path": path.as_str(),
            "dry_run": false,
            "removed": removed,
            "applied": true,
            "content_hash": outcome.hash,
        })))
    }
}
