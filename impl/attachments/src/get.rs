//! `get_attachment` (spec/attachments.md `attachments.get.*`): an image as MCP `image`
//! content scaled down until the response fits the governor's cap, text and a PDF's text
//! layer as text cut to fit, anything else as metadata; the type judged from the bytes.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_tools::{
    Annotations, ErrorCode, Gating, HandlerFailure, IMAGE_BLOCK_BYTES, Precheck, TargetState, Tool,
    ToolCx, ToolError, ToolOutput, ToolSpec, wire_cost,
};
use tc_vault::acl::AclOp;

use crate::common::{attachment, require_file, vault_error};
use crate::fit::{FitError, fit_image};
use crate::mime::{Kind, sniff};
use crate::pdf::{PdfError, pdf_text};

/// The largest file read (a bigger one is `invalid_input`, too large).
pub const MAX_READ_BYTES: u64 = 64 * 1024 * 1024;
/// Room kept under the cap for what measuring cannot see exactly.
const SLACK: usize = 512;

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetAttachmentArgs {
    #[schemars(length(min = 1, max = 4096))]
    pub path: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GetAttachmentOutput {
    pub path: String,
    /// From the content, not the name.
    pub mime: String,
    pub size: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
    /// image | text | pdf | other
    pub kind: String,
    /// Text, or a PDF's text layer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The text was cut to fit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// The image block's type and size when scaled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_mime: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_width: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_height: Option<u32>,
    /// The image block (sent as `image` content, not in this object).
    #[serde(skip)]
    #[schemars(skip)]
    pub image: Option<(String, String)>,
}

#[derive(Debug)]
pub struct GetAttachment {
    /// The pdftotext program (poppler-utils).
    pub pdftotext: PathBuf,
}

impl Default for GetAttachment {
    fn default() -> Self {
        GetAttachment {
            pdftotext: PathBuf::from("pdftotext"),
        }
    }
}

/// What one character of a JSON string costs on the wire (twice, escaped).
fn char_cost(c: char) -> usize {
    match c {
        '"' | '\\' => 6,
        '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 5,
        c if (c as u32) < 0x20 => 13,
        c => 2 * c.len_utf8(),
    }
}

fn cost<T: Serialize>(value: &T) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX, |json| wire_cost(&json))
}

/// Puts the longest prefix of `text` that keeps `out` within `budget` into `out.text`.
fn fit_text(out: &mut GetAttachmentOutput, text: &str, budget: usize) {
    out.truncated = Some(true);
    out.text = Some(String::new());
    let room = budget.saturating_sub(cost(out));
    let mut used = 0;
    let mut end = text.len();
    for (at, c) in text.char_indices() {
        used += char_cost(c);
        if used > room {
            end = at;
            break;
        }
    }
    out.truncated = Some(end < text.len());
    out.text = Some(text[..end].to_owned());
}

fn too_large(path: &str, why: &FitError) -> ToolError {
    ToolError::new(ErrorCode::InvalidInput, format!("{path}: {why}"))
        .with_details(serde_json::json!({"path": path, "reason": "too_large"}))
}

// r[impl attachments.get]
impl Tool for GetAttachment {
    type Args = GetAttachmentArgs;
    type Output = GetAttachmentOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "get_attachment",
            description: "Read an attachment: an image as image content scaled to fit, text and PDF text as text, anything else as metadata (mime, size, width, height).",
            annotations: Annotations::READS,
            scopes: &["read:attachments"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, cx: &ToolCx<'_>, args: &GetAttachmentArgs) -> Result<Precheck, ToolError> {
        let path = attachment(&args.path, "/path")?;
        cx.require_read(&path)?;
        require_file(cx, &path)?;
        Ok(Precheck {
            needs_confirmation: false,
            acl: vec![(AclOp::Read, path)],
            plan: Default::default(),
        })
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &GetAttachmentArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<GetAttachmentOutput, HandlerFailure> {
        let path = attachment(&args.path, "/path")?;
        let content = cx
            .vault()
            .read_limited(&path, MAX_READ_BYTES)
            .map_err(|e| vault_error(&path, e))?;
        let bytes = &content.bytes;
        let sniffed = sniff(bytes, true);
        let mut out = GetAttachmentOutput {
            path: path.as_str().to_owned(),
            mime: sniffed.mime.to_owned(),
            size: bytes.len() as u64,
            width: None,
            height: None,
            kind: "other".to_owned(),
            text: None,
            truncated: None,
            sent_mime: None,
            sent_width: None,
            sent_height: None,
            image: None,
        };
        let cap = cx.paging.limits.ceiling_budget().saturating_sub(SLACK);
        match sniffed.kind {
            // r[impl attachments.get.image-fits]
            Kind::Image => {
                out.kind = "image".to_owned();
                // The metadata at its longest, then what is left for the image's base64.
                let mut longest = out.clone();
                longest.width = Some(u32::MAX);
                longest.height = Some(u32::MAX);
                longest.sent_mime = Some("image/jpeg".to_owned());
                longest.sent_width = Some(u32::MAX);
                longest.sent_height = Some(u32::MAX);
                let budget = cap
                    .saturating_sub(cost(&longest))
                    .saturating_sub(IMAGE_BLOCK_BYTES + 16);
                let fitted = fit_image(bytes, sniffed.mime, budget)
                    .map_err(|e| too_large(path.as_str(), &e))?;
                out.width = Some(fitted.width);
                out.height = Some(fitted.height);
                out.sent_mime = Some(fitted.mime.to_owned());
                out.sent_width = Some(fitted.sent_width);
                out.sent_height = Some(fitted.sent_height);
                out.image = Some((fitted.data, fitted.mime.to_owned()));
            }
            Kind::Text => {
                out.kind = "text".to_owned();
                let text = String::from_utf8_lossy(bytes).into_owned();
                fit_text(&mut out, &text, cap);
            }
            Kind::Pdf => {
                out.kind = "pdf".to_owned();
                let file = cx
                    .vault()
                    .root()
                    .resolve_for_read(&path)
                    .map_err(|e| vault_error(&path, e))?;
                let (text, cut) = pdf_text(&self.pdftotext, &file).map_err(|e| match e {
                    PdfError::Missing => ToolError::new(ErrorCode::OcrUnavailable, e.to_string()),
                    other => ToolError::new(
                        ErrorCode::InvalidInput,
                        format!("{}: {other}", path.as_str()),
                    ),
                })?;
                let text = text.trim_end().to_owned();
                fit_text(&mut out, &text, cap);
                if cut {
                    out.truncated = Some(true);
                }
            }
            Kind::OtherImage | Kind::Other => {}
        }
        Ok(out)
    }

    fn encode(&self, mut output: GetAttachmentOutput) -> Result<ToolOutput, ToolError> {
        match output.image.take() {
            Some((data, mime_type)) => Ok(ToolOutput::Image {
                value: serde_json::to_value(&output)
                    .map_err(|_| ToolError::internal("encoding the result"))?,
                data,
                mime_type,
            }),
            None => ToolOutput::encode(&output),
        }
    }
}
