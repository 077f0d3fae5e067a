//! `replace_in_note`: find and replace in a note's body (spec/tools.md.1; spec/tools.md
//! `tools.replace-in-note`, `tools.replace-in-note.confirm`, `tools.replace-in-note.regex`;
//! spec/drift.md `drift.bind.part-tools`).
//!
//! The frontmatter is never searched: a match starts and ends in the body. A regex is the
//! `regex` crate's, which runs in time linear in the note, with a cap on the compiled pattern
//! and on the note's size, so no pattern can hold a worker.

use std::sync::Arc;

use regex::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_gate::ConfirmationTargets;
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx, ToolError,
    ToolSpec,
};
use tc_vault::acl::AclOp;
use tc_vault::conventions::{WriteIntent, WriteKind};
use tc_vault::error::VaultError;
use tc_vault::path::VaultPath;
use tc_vault::sections::{self, Patched};
use tc_vault::vault::NoteContent;

use crate::common::{check_observed, check_prev_hash, not_found, note, preflight, prior_of};
use crate::patch::{PartPlan, part_summary, write_part};

/// The largest compiled regex, in bytes.
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// The largest note a regex runs over, in bytes.
pub const REGEX_INPUT_LIMIT: usize = 16 << 20;
/// The most matches a dry run lists (the count says how many in all).
const LISTED_MATCHES: usize = 100;

/// `replace_in_note` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplaceInNoteArgs {
    /// The note.
    #[schemars(length(min = 1, max = 4096))]
    pub path: String,
    /// Text, or a Rust regex.
    #[schemars(length(min = 1, max = 4096))]
    pub find: String,
    /// $1, $name expand (regex).
    pub replace: String,
    /// Treat find as a regex.
    #[serde(default)]
    pub regex: bool,
    /// First N only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_replacements: Option<u64>,
    /// content_hash as last read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 128))]
    pub prev_hash: Option<String>,
    /// List matches only.
    #[serde(default)]
    pub dry_run: bool,
}

/// One match, as a dry run lists it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MatchEntry {
    pub line: usize,
    pub text: String,
    pub replacement: String,
}

/// `replace_in_note`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReplaceInNoteOutput {
    pub path: String,
    pub replacements: usize,
    pub matches: Vec<MatchEntry>,
    /// Null on a dry run.
    pub content_hash: Option<String>,
    pub lines_removed: usize,
    pub bytes_removed: usize,
}

#[derive(Debug)]
pub struct ReplaceInNote;

/// The planned replacement.
#[derive(Debug)]
pub struct ReplacePlan {
    part: PartPlan,
    matches: Vec<MatchEntry>,
    count: usize,
}

fn compile(args: &ReplaceInNoteArgs) -> Result<Regex, ToolError> {
    let pattern = if args.regex {
        args.find.clone()
    } else {
        regex::escape(&args.find)
    };
    // r[impl tools.replace-in-note.regex]
    RegexBuilder::new(&pattern)
        .multi_line(true)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| ToolError::validation("/find", format!("not a usable regex: {e}")))
}

fn plan(
    args: &ReplaceInNoteArgs,
    path: &VaultPath,
    current: &NoteContent,
) -> Result<ReplacePlan, ToolError> {
    let text = current.utf8(path).map_err(ToolError::from)?;
    if args.regex && text.len() > REGEX_INPUT_LIMIT {
        return Err(ToolError::from(VaultError::TooLarge {
            path: path.as_str().to_owned(),
            size: text.len() as u64,
            limit: REGEX_INPUT_LIMIT as u64,
        }));
    }
    let re = compile(args)?;
    // r[impl tools.replace-in-note]
    let body_start = sections::frontmatter_block(text)
        .map(|f| f.end)
        .unwrap_or_else(|| if text.starts_with('\u{feff}') { 3 } else { 0 });
    let body = &text[body_start..];
    let limit = args
        .max_replacements
        .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let mut new_body = String::with_capacity(body.len());
    let mut last = 0;
    let mut matches = Vec::new();
    let mut count = 0;
    let mut first = None;
    let mut end_of_last = 0;
    for caps in re.captures_iter(body).take(limit) {
        let Some(m) = caps.get(0) else { continue };
        let mut replacement = String::new();
        if args.regex {
            caps.expand(&args.replace, &mut replacement);
        } else {
            replacement.push_str(&args.replace);
        }
        count += 1;
        first.get_or_insert(m.start());
        end_of_last = m.end();
        if matches.len() < LISTED_MATCHES {
            matches.push(MatchEntry {
                line: text[..body_start + m.start()].matches('\n').count() + 1,
                text: m.as_str().to_owned(),
                replacement: replacement.clone(),
            });
        }
        new_body.push_str(&body[last..m.start()]);
        new_body.push_str(&replacement);
        last = m.end();
    }
    new_body.push_str(&body[last..]);
    let new = format!("{}{}", &text[..body_start], new_body);
    // The span of whole lines the replacements touched, for the counts and the diff.
    let (span, removed) = match first {
        Some(start) => {
            let from = body_start + body[..start].rfind('\n').map_or(0, |i| i + 1);
            let to = body_start
                + body[end_of_last..]
                    .find('\n')
                    .map_or(body.len(), |i| end_of_last + i + 1);
            (from..to, &text[from..to])
        }
        None => (body_start..body_start, ""),
    };
    let changed = new != text;
    let patched = Patched {
        lines_removed: if changed {
            removed.split_inclusive('\n').count()
        } else {
            0
        },
        bytes_removed: if changed { removed.len() } else { 0 },
        removed: removed.to_owned(),
        span: (span.start, span.end),
        text: new,
    };
    Ok(ReplacePlan {
        part: PartPlan {
            old: text.to_owned(),
            patched,
            // r[impl tools.replace-in-note.confirm]
            needs_confirmation: changed && !args.dry_run,
        },
        matches,
        count,
    })
}

impl Tool for ReplaceInNote {
    type Args = ReplaceInNoteArgs;
    type Output = ReplaceInNoteOutput;
    type Plan = ReplacePlan;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "replace_in_note",
            description: "Find and replace in a note's body, never the frontmatter. dry_run lists matches with lines. A change asks the human.",
            annotations: Annotations::writes(true, false),
            scopes: &["write:notes"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::PathAcl),
        }
    }

    fn check(&self, args: &ReplaceInNoteArgs) -> Result<(), ToolError> {
        compile(args).map(|_| ())
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &ReplaceInNoteArgs,
    ) -> Result<Precheck<Self::Plan>, ToolError> {
        let path = note(&args.path)?;
        cx.require_read(&path)?;
        let current = cx
            .vault()
            .read_if_exists(&path)?
            .ok_or_else(|| not_found(&path))?;
        check_prev_hash(&path, args.prev_hash.as_deref(), Some(&current))?;
        let plan = plan(args, &path, &current)?;
        if !args.dry_run {
            preflight(
                cx,
                &WriteIntent::new(
                    path.clone(),
                    WriteKind::Overwrite,
                    plan.part.patched.text.as_bytes(),
                    prior_of(Some(&current)),
                ),
            )?;
        }
        Ok(Precheck {
            needs_confirmation: plan.part.needs_confirmation,
            // r[impl drift.bind.part-tools]
            acl: vec![(AclOp::Read, path.clone()), (AclOp::Write, path)],
            plan: Arc::new(plan),
        })
    }

    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &ReplaceInNoteArgs,
        precheck: &Precheck<Self::Plan>,
        _state: &TargetState,
    ) -> Summary {
        let plan = &precheck.plan;
        part_summary(
            format!("replace {} match(es) in {}", plan.count, args.path),
            &args.path,
            &plan.part,
        )
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &ReplaceInNoteArgs,
        precheck: &Precheck<Self::Plan>,
        state: &TargetState,
    ) -> Result<ReplaceInNoteOutput, HandlerFailure> {
        let path = note(&args.path)?;
        cx.vault().with_note_lock(&path, |locked| {
            let current = locked.read_if_exists()?.ok_or_else(|| not_found(&path))?;
            check_observed(state, &path, Some(&current))?;
            check_prev_hash(&path, args.prev_hash.as_deref(), Some(&current))?;
            let plan = plan(args, &path, &current)?;
            let unchanged = plan.part.patched.text.len() == plan.part.old.len()
                && plan.part.patched.text == plan.part.old;
            let content_hash = if args.dry_run || unchanged {
                (!args.dry_run).then(|| current.hash.clone())
            } else {
                Some(write_part(cx, locked, &path, &current, &plan.part, precheck)?.content_hash)
            };
            Ok(ReplaceInNoteOutput {
                path: path.as_str().to_owned(),
                replacements: plan.count,
                matches: plan.matches,
                content_hash,
                lines_removed: plan.part.patched.lines_removed,
                bytes_removed: plan.part.patched.bytes_removed,
            })
        })
    }
}
