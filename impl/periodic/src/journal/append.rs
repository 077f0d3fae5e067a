//! `append_to_periodic_note` (spec/periodic.md `periodic.append`, `periodic.append.anchor`;
//! spec/tools.md `tools.compose.append-to-periodic-note`).
//!
//! Free: it adds whole lines and changes no other byte, under a heading through tc-vault's
//! section editor (`PatchOp::Append`, the editor `patch_note` appends with), after a new
//! heading at the end, or at the end. A missing note is created from its template first. The
//! note is read, edited and written under its lock, so racing appends all land.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tc_tools::note_write::{guard_for, prior_of};
use tc_tools::{
    Annotations, ErrorCode, Gating, HandlerFailure, Precheck, TargetState, Tool, ToolCx, ToolError,
    ToolSpec,
};
use tc_vault::conventions::{WriteIntent, WriteKind};
use tc_vault::sections::{self, Anchor, AnchorError, PatchOp};

use super::Target;
use crate::settings::Period;

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppendToPeriodicNoteArgs {
    pub period: Period,
    /// YYYY-MM-DD; default: the server's local today.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 10))]
    pub date: Option<String>,
    // Whole lines (the description says it).
    #[schemars(length(min = 1))]
    pub content: String,
    /// Heading text or A::B.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub heading: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AppendToPeriodicNoteOutput {
    pub path: String,
    pub created: bool,
    /// 1-based line of the first added line.
    pub line: u64,
    pub content_hash: Option<String>,
}

#[derive(Debug)]
pub struct AppendToPeriodicNote;

/// An anchor that names no single heading, as the tool's error (`details.candidates`).
fn anchor_error(error: AnchorError, heading: &str) -> ToolError {
    let (code, message, candidates) = match error {
        AnchorError::NotFound { candidates } => (
            ErrorCode::AnchorNotFound,
            format!(
                "the heading path {heading:?} is not in the note; details.candidates lists its headings"
            ),
            candidates,
        ),
        AnchorError::Ambiguous { candidates } => (
            ErrorCode::AnchorAmbiguous,
            format!(
                "the heading {heading:?} names several headings; give a path A::B from details.candidates"
            ),
            candidates,
        ),
    };
    let candidates: Vec<_> = candidates
        .iter()
        .map(|c| json!({"text": c.text, "line": c.line, "parent_path": c.parent_path}))
        .collect();
    ToolError::new(code, message).with_details(json!({ "candidates": candidates }))
}

/// `content` as whole lines ending in `eol`.
fn as_lines(content: &str, eol: &str) -> String {
    let mut out = String::with_capacity(content.len() + 2);
    for line in content.split_inclusive('\n') {
        out.push_str(line.trim_end_matches('\n').trim_end_matches('\r'));
        out.push_str(eol);
    }
    out
}

/// The 1-based number of the line that starts at byte `at` of `old` once lines are added
/// there (a note without a final line end gets one first).
fn line_at(old: &str, at: usize) -> usize {
    let joined = at > 0 && at == old.len() && !old.ends_with('\n');
    old[..at].matches('\n').count() + 1 + usize::from(joined)
}

// r[impl periodic.append]
// r[impl periodic.append.anchor]
/// `text` with `content` added as whole lines (under `heading`, or at the end) and the
/// 1-based number of the first added line.
pub fn with_lines(
    text: &str,
    heading: Option<&str>,
    content: &str,
) -> Result<(String, usize), ToolError> {
    let eol = if sections::outline(text).crlf {
        "\r\n"
    } else {
        "\n"
    };
    // The lines put before the content: a blank line and a new heading.
    let mut before = String::new();
    let mut before_lines = 0;
    if let Some(heading) = heading {
        match sections::patch(text, Anchor::Heading(heading), PatchOp::Append, content) {
            Ok(patched) => return Ok((patched.text, line_at(text, patched.span.0))),
            Err(AnchorError::NotFound { .. }) if !heading.contains("::") => {
                let ends_blank =
                    text.ends_with('\n') && text.lines().last().is_none_or(|l| l.trim().is_empty());
                if !text.trim().is_empty() && !ends_blank {
                    before.push_str(eol);
                    before_lines += 1;
                }
                let name = heading.trim().trim_start_matches('#').trim();
                before.push_str(&format!("## {name}{eol}"));
                before_lines += 1;
            }
            Err(error) => return Err(anchor_error(error, heading)),
        }
    }
    let mut out = String::with_capacity(text.len() + before.len() + content.len() + 4);
    out.push_str(text);
    if !text.is_empty() && !text.ends_with('\n') {
        out.push_str(eol);
    }
    out.push_str(&before);
    out.push_str(&as_lines(content, eol));
    Ok((out, line_at(text, text.len()) + before_lines))
}

impl Tool for AppendToPeriodicNote {
    type Args = AppendToPeriodicNoteArgs;
    type Output = AppendToPeriodicNoteOutput;
    type Plan = Target;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "append_to_periodic_note",
            description: "Append lines to a periodic note (default today), under a heading made if missing; creates the note from its template. Never asks.",
            annotations: Annotations::writes(false, false),
            scopes: &["write:periodic"],
            changes_notes: true,
            gating: Gating::NEVER,
        }
    }

    fn check(&self, args: &AppendToPeriodicNoteArgs) -> Result<(), ToolError> {
        if args.content.trim().is_empty() {
            return Err(ToolError::validation("/content", "has no text to add"));
        }
        Ok(())
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &AppendToPeriodicNoteArgs,
    ) -> Result<Precheck<Target>, ToolError> {
        let target = Target::of(cx, args.period, args.date.as_deref())?;
        if !cx.vault().exists(&target.path)? {
            target.check_template(cx)?;
        }
        Ok(Precheck {
            acl: target.creating_acl(),
            ..Precheck::with_plan(target)
        })
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &AppendToPeriodicNoteArgs,
        precheck: &Precheck<Target>,
        _state: &TargetState,
    ) -> Result<AppendToPeriodicNoteOutput, HandlerFailure> {
        let target = &precheck.plan;
        let path = &target.path;
        cx.vault().with_note_lock(path, |locked| {
            let current = locked.read_if_exists()?;
            let old = match &current {
                Some(note) => note.utf8(path)?.to_owned(),
                None => target.new_text(cx)?,
            };
            let (new, line) = with_lines(&old, args.heading.as_deref(), &args.content)?;
            let kind = if current.is_some() {
                WriteKind::Overwrite
            } else {
                WriteKind::Create
            };
            cx.judge(&WriteIntent::new(
                path.clone(),
                kind,
                new.as_bytes(),
                prior_of(current.as_ref()),
            ))
            .map_err(HandlerFailure::ConventionBlockedBeforeWrite)?;
            let outcome = locked.write(new.as_bytes(), &guard_for(current.as_ref()))?;
            Ok(AppendToPeriodicNoteOutput {
                path: path.as_str().to_owned(),
                created: current.is_none(),
                line: line as u64,
                content_hash: cx.may_read(path).then_some(outcome.hash),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Whether `old`'s lines are, in order and whole, among `new`'s.
    fn keeps_every_line(old: &str, new: &str) -> bool {
        let mut new_lines = new.lines();
        old.lines().all(|line| new_lines.any(|n| n == line))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        // r[verify tools.compose.append-to-periodic-note]
        // r[verify periodic.append]
        #[test]
        fn appending_adds_whole_lines_and_rewrites_none(
            lines in proptest::collection::vec("(#{1,2} [AB]|- [a-c]{0,3}|text|  |)", 0..12),
            crlf in any::<bool>(),
            last_eol in any::<bool>(),
            heading in proptest::option::of("(A|B|C|A::B|## C)"),
            content in "[a-z# -]{1,8}(\n[a-z# -]{0,8}){0,3}\n?",
        ) {
            let eol = if crlf { "\r\n" } else { "\n" };
            let mut text = lines.join(eol);
            if last_eol && !text.is_empty() {
                text.push_str(eol);
            }
            if let Ok((out, first)) = with_lines(&text, heading.as_deref(), &content) {
                prop_assert!(keeps_every_line(&text, &out), "{:?} -> {:?}", text, out);
                let added: Vec<&str> = content.lines().collect();
                let old: Vec<&str> = text.lines().collect();
                let mut new: Vec<&str> = out.lines().collect();
                prop_assert_eq!(&new[first - 1..first - 1 + added.len()], &added[..]);
                // Besides the content, at most a blank line and a new heading, right before it.
                let extra = new.len() - old.len() - added.len();
                prop_assert!(extra <= 2);
                new.drain(first - 1 - extra..first - 1 + added.len());
                prop_assert_eq!(new, old);
            }
        }
    }

    #[test]
    fn a_new_heading_goes_at_the_end_after_a_blank_line() {
        let (out, first) = with_lines("# A\ntext", Some("Log"), "x").unwrap();
        assert_eq!((out.as_str(), first), ("# A\ntext\n\n## Log\nx\n", 5));
        let (out, first) = with_lines("", Some("## Log"), "x\ny\n").unwrap();
        assert_eq!((out.as_str(), first), ("## Log\nx\ny\n", 2));
        let (out, first) = with_lines("a\r\n\r\n", Some("Log"), "x").unwrap();
        assert_eq!((out.as_str(), first), ("a\r\n\r\n## Log\r\nx\r\n", 4));
    }
}
