//! The refusals the confirmation gate answers with, and the approval command they carry
//! (spec/results.md `results.elicit-required`, `results.elicit-required.directive`,
//! `results.approval-not-obtained`, `results.replay-drift`, `results.cancelled`;
//! spec/gate.md `gate.token.refused`), and what a `concurrent_modification` withholds
//! (`results.concurrent-modification.unreadable`).

use serde_json::json;
use tc_gate::{RaisedRequest, RedeemError};

use tc_vault::path::VaultPath;

use crate::context::{CallerContext, VaultBinding};
use crate::error::{ErrorCode, ToolError};
use crate::pipeline::{Pipeline, Prepared};

/// Why a CLI token approved nothing (spec `gate.token.refused`).
pub(crate) fn token_rejected(error: &RedeemError) -> &'static str {
    match error {
        RedeemError::Expired => "expired",
        RedeemError::AlreadySpent => "spent",
        _ => "invalid",
    }
}

// r[impl results.concurrent-modification.unreadable]
/// A `concurrent_modification` about a note the caller may not read, with the hashes the
/// server saw withheld: a hash lets anyone test guesses at the content offline, so it is
/// shown only to a caller the folder ACL lets read the note (judged at its link target).
/// The `prev_hash` the caller sent itself is told back as it was; `"absent"` is kept.
/// Every other refusal is returned as it is.
pub(crate) fn withhold_unreadable_hash(
    binding: &VaultBinding,
    caller: &CallerContext,
    sent_prev_hash: Option<&str>,
    mut error: ToolError,
) -> ToolError {
    if error.code != ErrorCode::ConcurrentModification {
        return error;
    }
    let Some(details) = error.details.as_mut() else {
        return error;
    };
    let Some(path) = details["path"].as_str().map(str::to_owned) else {
        return error;
    };
    let readable = VaultPath::parse(&path).is_ok_and(|parsed| {
        binding
            .acl
            .can_read_at(binding.vault.root(), &parsed, &caller.scopes)
    });
    if readable {
        return error;
    }
    let mut withheld = false;
    for field in ["expected", "actual"] {
        let Some(seen) = details[field].as_str() else {
            continue;
        };
        if seen != "absent" && Some(seen) != sent_prev_hash {
            details[field] = json!(HASH_NOT_SHOWN);
            withheld = true;
        }
    }
    if withheld {
        error.message = format!(
            "note {path:?} changed since the call was prepared (its hashes are not shown: the \
             folder ACL does not let this caller read the note)"
        );
    }
    error
}

/// What `details.expected` or `details.actual` says when the caller may not read the note.
pub const HASH_NOT_SHOWN: &str =
    "not shown (the folder ACL does not let this caller read the note)";

/// Quotes `word` for a POSIX shell when it holds anything but plainly safe characters.
pub fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(b, b'-' | b'_' | b'.' | b'/' | b':' | b'@' | b'+' | b'=')
        });
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

impl Pipeline {
    // r[impl cli.elicit.command-works]
    /// The `obsidian-tc elicit` command that approves `prepared` (spec
    /// `results.elicit-required`): with the server's own `--config` / `--cache-dir`, and
    /// `--vault` when several vaults are served, so it works when pasted as it is.
    pub fn elicit_command(&self, prepared: &Prepared) -> String {
        let mut command = format!(
            "{} elicit --hash {} --tool {}",
            shell_word(self.approval_program()),
            shell_word(prepared.args_hash()),
            shell_word(prepared.tool())
        );
        for flag in self.approval_flags() {
            command.push(' ');
            command.push_str(&shell_word(flag));
        }
        if self.vault_count() > 1 {
            command.push_str(&format!(" --vault {}", shell_word(prepared.vault_id())));
        }
        command.push_str(&format!(
            " --caller {} --state-fp {}",
            shell_word(&prepared.caller().id),
            shell_word(prepared.state_fp().as_str())
        ));
        command
    }

    // r[impl results.elicit-required]
    // r[impl results.elicit-required.directive]
    // r[impl results.error-text.actionable]
    /// The `elicit_required` refusal for a raised request.
    pub fn elicit_required(
        &self,
        prepared: &Prepared,
        raised: RaisedRequest,
        rejected: Option<&str>,
    ) -> ToolError {
        let lead = match rejected {
            Some(why) => format!("The elicit_token sent was not accepted ({why}). "),
            None => String::new(),
        };
        let command = self.elicit_command(prepared);
        let mut error = ToolError::new(
            ErrorCode::ElicitRequired,
            format!(
                "STOP and ask the human before running anything else: this {tool} call needs \
                 their explicit confirmation. {lead}Show them this command; `obsidian-tc \
                 pending` shows them what it would approve, and running it approves this exact \
                 call:\n\n    {command}\n\nIf they approve, they give you the token it \
                 prints and you send the same call again with elicit_token set to it. Do not \
                 edit the vault directly or otherwise work around this gate.",
                tool = prepared.tool()
            ),
        )
        .with_details(json!({
            "args_hash": prepared.args_hash(),
            "state_fp": prepared.state_fp().as_str(),
            "tool": prepared.tool(),
            "vault": prepared.vault_id(),
        }))
        .with_recovery(
            "ask the human to approve this exact call by running the command, then send the same call again with elicit_token",
            Some(command),
        );
        if let Some(why) = rejected {
            error = error.detail("token_rejected", json!(why));
        }
        error.raised = Some(Box::new(raised));
        error
    }

    // r[impl results.approval-not-obtained]
    /// The refusal for a round-trip prompt answered with cancel (spec `trip.cancel`).
    pub fn approval_not_obtained(&self, prepared: &Prepared) -> ToolError {
        let command = self.elicit_command(prepared);
        ToolError::new(
            ErrorCode::ApprovalNotObtained,
            format!(
                "Approval was not obtained for this {tool} call: the prompt was dismissed and \
                 nobody declined it. Nothing was applied. Ask the human to approve it out of \
                 band by running this command (`obsidian-tc pending` shows what it would \
                 approve):\n\n    {command}\n\nthen send the same call again with \
                 elicit_token set to the token it prints.",
                tool = prepared.tool()
            ),
        )
        .with_details(json!({
            "reason": "approval_not_obtained",
            "args_hash": prepared.args_hash(),
            "state_fp": prepared.state_fp().as_str(),
            "tool": prepared.tool(),
        }))
        .with_recovery(
            "ask the human to approve this exact call by running the command, then send the same call again with elicit_token",
            Some(command),
        )
    }

    // r[impl results.replay-drift]
    pub(crate) fn replay_drift(prepared: &Prepared, token: bool) -> ToolError {
        let spent = if token { " and the token is spent" } else { "" };
        ToolError::new(
            ErrorCode::ReplayDrift,
            format!(
                "The target of this {} call changed between the confirmation request and its \
                 redemption: nothing was applied{spent}. Send the original call again with no \
                 elicit_token to request a fresh confirmation of the current state.",
                prepared.tool()
            ),
        )
        .with_details(json!({"tool": prepared.tool(), "args_hash": prepared.args_hash()}))
        .with_recovery(
            "send the original call again with no elicit_token; it asks for a fresh confirmation",
            None,
        )
    }

    /// The refusal for a call cancelled before its handler ran, outside the pipeline (a
    /// call cancelled while its shim prompt was open, spec `trip.legacy-shim.cancel`).
    pub fn cancelled_call(&self, prepared: &Prepared) -> ToolError {
        Self::cancelled(prepared, None)
    }

    pub(crate) fn cancelled(prepared: &Prepared, released: Option<bool>) -> ToolError {
        let mut error = ToolError::new(
            ErrorCode::InternalError,
            format!(
                "The {} call was cancelled before its handler ran; nothing was applied.",
                prepared.tool()
            ),
        )
        .with_details(json!({"reason": "cancelled"}));
        if let Some(released) = released {
            error = error.detail("token_released", json!(released));
        }
        error
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // r[verify cli.elicit.command-works]
    /// What the printed command passes through a shell is exactly the word: plain words as
    /// they are, anything else single-quoted, a quote inside closed, escaped and reopened.
    #[test]
    fn a_shell_word_is_quoted_unless_plainly_safe() {
        for plain in [
            "stdio",
            "delete_note",
            "/home/me/vault.toml",
            "a-b_c.d:e@f+g=h",
        ] {
            assert_eq!(shell_word(plain), plain);
        }
        for (word, quoted) in [
            ("", "''"),
            ("my vault", "'my vault'"),
            ("$(rm -rf ~)", "'$(rm -rf ~)'"),
            ("a;b", "'a;b'"),
            ("it's", r"'it'\''s'"),
            ("tab\there", "'tab\there'"),
            ("ünïcode", "'ünïcode'"),
        ] {
            assert_eq!(shell_word(word), quoted, "{word:?}");
        }
    }

    #[test]
    fn a_refused_token_says_why() {
        assert_eq!(token_rejected(&RedeemError::Expired), "expired");
        assert_eq!(token_rejected(&RedeemError::AlreadySpent), "spent");
        assert_eq!(token_rejected(&RedeemError::UnknownToken), "invalid");
    }
}
