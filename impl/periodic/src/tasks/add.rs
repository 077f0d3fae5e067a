//! `add_task` (spec/tasks.md `tasks.add`, `tasks.add.form`, `tasks.add.anchor`,
//! `tasks.add.text`; spec/tools.md `tools.compose.add-task`).
//!
//! Free: it adds one whole line and changes no other byte, under a heading through tc-vault's
//! section editor (`PatchOp::Append`, the editor `patch_note` appends with) or at the end of
//! the note. The note is read, edited and written under its lock, so racing adds all land.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tc_tools::note_write::{guard_for, not_found, note, prior_of};
use tc_tools::{
    Annotations, ErrorCode, Gating, HandlerFailure, Precheck, TargetState, Tool, ToolCx, ToolError,
    ToolSpec,
};
use tc_vault::acl::AclOp;
use tc_vault::conventions::{WriteIntent, WriteKind};
use tc_vault::sections::{self, Anchor, AnchorError, PatchOp};
use tc_vault::tasks::fields::{Priority, new_task_line};

use super::date_arg;

// A Tasks-plugin priority (a plain comment: the enum says it in the schema).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PriorityArg {
    Highest,
    High,
    Medium,
    Low,
    Lowest,
}

impl PriorityArg {
    fn priority(self) -> Priority {
        match self {
            PriorityArg::Highest => Priority::Highest,
            PriorityArg::High => Priority::High,
            PriorityArg::Medium => Priority::Medium,
            PriorityArg::Low => Priority::Low,
            PriorityArg::Lowest => Priority::Lowest,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddTaskArgs {
    #[schemars(length(min = 1, max = 4096))]
    pub path: String,
    // One non-blank line (the pattern says it; a doc comment would only repeat it).
    #[schemars(length(max = 4096), regex(pattern = r"^[^\r\n]*\S[^\r\n]*$"))]
    pub text: String,
    /// Heading text or A::B.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub heading: Option<String>,
    /// YYYY-MM-DD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 10))]
    pub due: Option<String>,
    /// YYYY-MM-DD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 10))]
    pub scheduled: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<PriorityArg>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AddTaskOutput {
    pub path: String,
    /// 1-based line of the new task.
    pub line: u64,
    pub task: String,
    pub content_hash: String,
}

#[derive(Debug)]
pub struct AddTask;

/// An anchor that names no single heading, as the tool's error (`details.candidates`).
fn anchor_error(error: AnchorError, heading: &str) -> ToolError {
    let (code, message, candidates) = match error {
        AnchorError::NotFound { candidates } => (
            ErrorCode::AnchorNotFound,
            format!("the heading {heading:?} is not in the note; details.candidates lists what is"),
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

// r[impl tasks.add.text]
/// The line the call writes, or why its arguments are refused.
fn task_line(args: &AddTaskArgs) -> Result<String, ToolError> {
    if args.text.contains(['\r', '\n']) || args.text.trim().is_empty() {
        return Err(ToolError::validation("/text", "must be one non-blank line"));
    }
    let due = args
        .due
        .as_deref()
        .map(|d| date_arg(d, "/due"))
        .transpose()?;
    let scheduled = args
        .scheduled
        .as_deref()
        .map(|d| date_arg(d, "/scheduled"))
        .transpose()?;
    Ok(new_task_line(
        &args.text,
        args.priority.map(PriorityArg::priority),
        scheduled,
        due,
    ))
}

// r[impl tasks.add]
// r[impl tasks.add.anchor]
/// `text` with `line` added (under `heading`, or at the end) and the new line's 1-based
/// number.
pub fn with_task(
    text: &str,
    heading: Option<&str>,
    line: &str,
) -> Result<(String, usize), ToolError> {
    let at = |old: &str, at: usize| {
        let joined = at > 0 && at == old.len() && !old.ends_with('\n');
        old[..at].matches('\n').count() + 1 + usize::from(joined)
    };
    match heading {
        Some(heading) => {
            let patched = sections::patch(text, Anchor::Heading(heading), PatchOp::Append, line)
                .map_err(|e| anchor_error(e, heading))?;
            let number = at(text, patched.span.0);
            Ok((patched.text, number))
        }
        None => {
            let crlf = sections::outline(text).crlf;
            let eol = if crlf { "\r\n" } else { "\n" };
            let mut out = String::with_capacity(text.len() + line.len() + 4);
            out.push_str(text);
            if !text.is_empty() && !text.ends_with('\n') {
                out.push_str(eol);
            }
            out.push_str(line);
            out.push_str(eol);
            Ok((out, at(text, text.len())))
        }
    }
}

impl Tool for AddTask {
    type Args = AddTaskArgs;
    type Output = AddTaskOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "add_task",
            description: "Add a Tasks-plugin task line (due, scheduled, priority as emoji) under a heading or at the end. Never asks.",
            annotations: Annotations::writes(false, false),
            scopes: &["write:tasks"],
            changes_notes: true,
            gating: Gating::NEVER,
        }
    }

    fn check(&self, args: &AddTaskArgs) -> Result<(), ToolError> {
        task_line(args).map(|_| ())
    }

    fn precheck(&self, _cx: &ToolCx<'_>, args: &AddTaskArgs) -> Result<Precheck, ToolError> {
        let path = note(&args.path)?;
        Ok(Precheck {
            needs_confirmation: false,
            acl: vec![(AclOp::Write, path)],
            plan: Arc::new(()),
        })
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &AddTaskArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<AddTaskOutput, HandlerFailure> {
        let path = note(&args.path)?;
        let line = task_line(args)?;
        cx.vault().with_note_lock(&path, |locked| {
            let current = locked.read_if_exists()?.ok_or_else(|| not_found(&path))?;
            let text = current.utf8(&path)?;
            let (new, number) = with_task(text, args.heading.as_deref(), &line)?;
            cx.judge(&WriteIntent::new(
                path.clone(),
                WriteKind::Overwrite,
                new.as_bytes(),
                prior_of(Some(&current)),
            ))
            .map_err(HandlerFailure::ConventionBlockedBeforeWrite)?;
            let outcome = locked.write(new.as_bytes(), &guard_for(Some(&current)))?;
            Ok(AddTaskOutput {
                path: path.as_str().to_owned(),
                line: number as u64,
                task: line.clone(),
                content_hash: outcome.hash,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        // r[verify tools.compose.add-task]
        #[test]
        fn adding_a_task_keeps_every_old_line_and_adds_exactly_one(
            lines in proptest::collection::vec("(# [AB]|- \\[[ x]\\] t ✅ 2026-01-0[1-9]|text|)", 0..12),
            crlf in any::<bool>(),
            last_eol in any::<bool>(),
            heading in proptest::option::of("[AB]"),
        ) {
            let eol = if crlf { "\r\n" } else { "\n" };
            let mut text = lines.join(eol);
            if last_eol && !text.is_empty() {
                text.push_str(eol);
            }
            let line = "- [ ] new 📅 2026-02-01";
            if let Ok((out, number)) = with_task(&text, heading.as_deref(), line) {
                let old: Vec<&str> = text.lines().collect();
                let new: Vec<&str> = out.lines().collect();
                prop_assert_eq!(new.len(), old.len() + 1);
                prop_assert_eq!(new[number - 1], line);
                let mut rest = new.clone();
                rest.remove(number - 1);
                prop_assert_eq!(rest, old);
            }
        }
    }

    // r[verify tasks.add]
    #[test]
    fn the_line_lands_under_its_heading_or_at_the_end_and_nothing_else_moves() {
        let note = "# A\nx\n\n# B\ny\n";
        let (out, n) = with_task(note, Some("A"), "- [ ] t").unwrap();
        assert_eq!(out, "# A\nx\n- [ ] t\n\n# B\ny\n");
        assert_eq!(n, 3);
        let (out, n) = with_task(note, None, "- [ ] t").unwrap();
        assert_eq!(out, "# A\nx\n\n# B\ny\n- [ ] t\n");
        assert_eq!(n, 6);
        // The note's line ends, as the section editor judges them (most lines').
        let (out, n) = with_task("a\r\nb\r\nc", None, "- [ ] t").unwrap();
        assert_eq!((out.as_str(), n), ("a\r\nb\r\nc\r\n- [ ] t\r\n", 4));
        let (out, n) = with_task("", None, "- [ ] t").unwrap();
        assert_eq!((out.as_str(), n), ("- [ ] t\n", 1));
        let (out, n) = with_task("# A", Some("A"), "- [ ] t").unwrap();
        assert_eq!((out.as_str(), n), ("# A\n- [ ] t\n", 2));
        // The line number is the one update_task reads.
        let (out, n) = with_task(note, Some("B"), "- [ ] t").unwrap();
        assert!(
            tc_vault::tasks::find_tasks(&out)
                .iter()
                .any(|(at, _)| *at == n)
        );
    }

    // r[verify tasks.add.anchor]
    #[test]
    fn a_missing_or_ambiguous_heading_is_refused() {
        let err = with_task("# A\n# A\n", Some("B"), "- [ ] t").unwrap_err();
        assert_eq!(err.code, ErrorCode::AnchorNotFound);
        let err = with_task("# A\n# A\n", Some("A"), "- [ ] t").unwrap_err();
        assert_eq!(err.code, ErrorCode::AnchorAmbiguous);
    }
}
