//! `write_attachment` (spec/attachments.md `attachments.write`, `attachments.write.cap`,
//! `attachments.write.confirm`): bytes given as base64 written at a new path for free; over
//! an existing file only with `overwrite`, confirmed by the human and bound to the old bytes,
//! which are kept as a snapshot first.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_gate::ConfirmationTargets;
use tc_tools::note_write::{guard_for, read_as_observed};
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx, ToolError,
    ToolSpec,
};
use tc_vault::acl::AclOp;
use tc_vault::conventions::WriteKind;

use crate::common::{attachment, judge};
use crate::mime::sniff;

/// The default `attachments.maxWriteBytes`: 10 MiB.
pub const DEFAULT_MAX_WRITE_BYTES: u64 = 10 * 1024 * 1024;

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteAttachmentArgs {
    #[schemars(length(min = 1, max = 4096))]
    pub path: String,
    /// Standard base64.
    pub data_base64: String,
    /// Replace a file already there.
    #[serde(default)]
    pub overwrite: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WriteAttachmentOutput {
    pub path: String,
    pub size: u64,
    pub mime: String,
    pub content_hash: String,
    pub overwrote: bool,
    /// The replaced bytes' snapshot (restore_note).
    pub snapshot_id: Option<String>,
}

#[derive(Debug)]
pub struct WriteAttachment {
    /// `attachments.maxWriteBytes`.
    pub max_bytes: u64,
}

impl Default for WriteAttachment {
    fn default() -> Self {
        WriteAttachment {
            max_bytes: DEFAULT_MAX_WRITE_BYTES,
        }
    }
}

impl WriteAttachment {
    // r[impl attachments.write.cap]
    fn decode(&self, args: &WriteAttachmentArgs) -> Result<Vec<u8>, ToolError> {
        // Judged on the text before decoding: base64 is 4 characters for 3 bytes.
        if (args.data_base64.len() as u64) / 4 * 3 > self.max_bytes + 3 {
            return Err(self.over_cap());
        }
        let bytes = STANDARD
            .decode(args.data_base64.trim())
            .map_err(|e| ToolError::validation("/data_base64", format!("is not base64: {e}")))?;
        if bytes.len() as u64 > self.max_bytes {
            return Err(self.over_cap());
        }
        Ok(bytes)
    }

    fn over_cap(&self) -> ToolError {
        ToolError::validation(
            "/data_base64",
            format!(
                "decodes to more than {} bytes (attachments.maxWriteBytes)",
                self.max_bytes
            ),
        )
    }
}

/// What the precheck decoded.
#[derive(Debug)]
pub struct Decoded {
    bytes: Vec<u8>,
    exists: bool,
}

// r[impl attachments.write]
// r[impl attachments.write.confirm]
// r[impl drift.bind.write-attachment]
impl Tool for WriteAttachment {
    type Args = WriteAttachmentArgs;
    type Output = WriteAttachmentOutput;
    type Plan = Decoded;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write_attachment",
            description: "Write an attachment from base64 at a new path. Replacing an existing file (overwrite) needs the human's confirmation.",
            annotations: Annotations::writes(true, true),
            scopes: &["write:attachments"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::PathAcl),
        }
    }

    fn check(&self, args: &WriteAttachmentArgs) -> Result<(), ToolError> {
        attachment(&args.path, "/path")?;
        self.decode(args).map(|_| ())
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &WriteAttachmentArgs,
    ) -> Result<Precheck<Decoded>, ToolError> {
        let path = attachment(&args.path, "/path")?;
        let bytes = self.decode(args)?;
        let exists = cx.vault().exists(&path)?;
        if exists && !args.overwrite {
            return Err(tc_tools::note_write::exists_error(&path));
        }
        let kind = if exists {
            WriteKind::Overwrite
        } else {
            WriteKind::Create
        };
        judge(cx, &path, kind, &bytes)?;
        Ok(Precheck {
            needs_confirmation: exists,
            acl: vec![(AclOp::Write, path)],
            plan: Arc::new(Decoded { bytes, exists }),
        })
    }

    fn summary(
        &self,
        cx: &ToolCx<'_>,
        args: &WriteAttachmentArgs,
        precheck: &Precheck<Decoded>,
        _state: &TargetState,
    ) -> Summary {
        let new = &precheck.plan.bytes;
        let mut summary =
            Summary::new(format!("replace the attachment {}", args.path)).target(&args.path);
        if let Ok(path) = attachment(&args.path, "/path")
            && let Ok(Some(old)) = cx.vault().read_if_exists(&path)
        {
            summary = summary.detail(format!(
                "{} bytes ({}) -> {} bytes ({}); the old file is kept as a snapshot",
                old.bytes.len(),
                sniff(&old.bytes, true).mime,
                new.len(),
                sniff(new, true).mime
            ));
        }
        summary
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &WriteAttachmentArgs,
        precheck: &Precheck<Decoded>,
        state: &TargetState,
    ) -> Result<WriteAttachmentOutput, HandlerFailure> {
        let path = attachment(&args.path, "/path")?;
        let plan = &precheck.plan;
        let current = read_as_observed(cx, state, &path)?;
        if current.is_some() && !plan.exists {
            // Created by someone else since the precheck: this call was never confirmed.
            return Err(tc_tools::note_write::exists_error(&path).into());
        }
        let kind = if current.is_some() {
            WriteKind::Overwrite
        } else {
            WriteKind::Create
        };
        cx.judge(&tc_vault::conventions::WriteIntent::new(
            path.clone(),
            kind,
            &plan.bytes,
            tc_vault::conventions::Prior::Unknown,
        ))
        .map_err(HandlerFailure::ConventionBlockedBeforeWrite)?;
        let written = cx
            .vault()
            .write_keeping(&path, &plan.bytes, &guard_for(current.as_ref()))?;
        Ok(WriteAttachmentOutput {
            path: path.as_str().to_owned(),
            size: plan.bytes.len() as u64,
            mime: sniff(&plan.bytes, true).mime.to_owned(),
            content_hash: written.outcome.hash,
            overwrote: !written.outcome.created,
            snapshot_id: written.kept.map(|info| info.id.as_str().to_owned()),
        })
    }
}
