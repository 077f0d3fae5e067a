//! `ocr_bulk` (spec/tools.md; spec/ocr.md; spec/drift.md `drift.bind.ocr-bulk`).
//!
//! Always gated, scope `read:ocr`, bound to its candidates (see [`crate::candidates`]).
//! The precheck collects the candidates, refuses what could never run (no engine on the
//! host, a batch too large for one response) before the human is asked, and declares every
//! candidate for the folder ACL (read). The handler reads exactly the approved files: each
//! one not answered from the cache is copied into a private scratch folder, the copy's hash
//! is checked against the approved one, and only the copy goes to the engines, so a file
//! replaced after the approval is reported and never read.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tc_gate::ConfirmationTargets;
use tc_tools::{
    Annotations, ErrorCode, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx,
    ToolError, ToolSpec,
};
use tc_vault::acl::AclOp;
use tc_vault::path::VaultPath;

use crate::bound;
use crate::cache::OcrCache;
use crate::candidates::{self, Attachment, MAX_FILE_BYTES};
use crate::config::OcrConfig;
use crate::engine::{self, Engine, EngineError, one_line};
use crate::recognize::{Kind, RecognizeError, SUPPORTED_EXTENSIONS, recognize};

/// The longest message of a per-file error.
pub const MESSAGE_BYTES: usize = 300;

fn default_extensions() -> Vec<String> {
    [".pdf", ".png", ".jpg", ".jpeg", ".tiff"]
        .iter()
        .map(|e| (*e).to_owned())
        .collect()
}

/// `ocr_bulk` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OcrBulkArgs {
    /// Vault-relative paths of the PDFs and images to read. Give exactly one of paths and root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 1000), inner(length(max = 4096)))]
    pub paths: Option<Vec<String>>,
    /// Read every file with one of the extensions under this folder ("" = the whole vault).
    /// Give exactly one of paths and root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub root: Option<String>,
    /// Extensions read under root (case-insensitive): .pdf and the image types tesseract
    /// reads.
    #[serde(default = "default_extensions")]
    #[schemars(length(min = 1, max = 16), inner(length(min = 1, max = 16)))]
    pub extensions: Vec<String>,
    /// Read every file again even when text of the same content is cached.
    #[serde(default)]
    pub force: bool,
}

/// One file read.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OcrFile {
    pub path: String,
    pub kind: Kind,
    /// Its size in bytes.
    pub size: u64,
    /// SHA-256 of its bytes (lowercase hex), the content the text was read from.
    pub content_hash: String,
    /// A PDF's page count (null for an image); pages are separated by a form feed line.
    pub pages: Option<u32>,
    /// How many pages (or images) went through tesseract.
    pub ocr_pages: u32,
    /// Whether the text came from the cache.
    pub cached: bool,
    /// The text, cut to this file's share of the response when truncated is true.
    pub text: String,
    /// The size in bytes of the whole text.
    pub text_bytes: usize,
    pub truncated: bool,
}

/// One file that could not be read.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OcrFileError {
    pub path: String,
    /// `too_large`, `changed`, `ocr_failed`, `operation_timeout` or `note_not_found`.
    pub code: String,
    pub message: String,
    /// The file's size, when known.
    pub size: Option<u64>,
}

/// `ocr_bulk`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OcrBulkOutput {
    pub vault: String,
    /// The tesseract languages used (`-l`).
    pub languages: String,
    /// The files read, in path order.
    pub files: Vec<OcrFile>,
    /// The files that could not be read (the rest of the batch is unaffected).
    pub errors: Vec<OcrFileError>,
    /// How many files were read.
    pub read: usize,
    /// How many of them came from the cache.
    pub from_cache: usize,
    /// How many texts were cut to fit the response cap.
    pub truncated: usize,
}

/// The tool, with its configuration, its cache and where it renders scanned pages.
#[derive(Debug)]
pub struct OcrBulk {
    pub config: OcrConfig,
    pub cache: Arc<OcrCache>,
    /// A private folder outside the vault for copies and rendered pages.
    pub scratch: PathBuf,
    /// Set once tesseract listed every configured language: the listing spawns a process
    /// (about 30 ms), so it is made once per server, not on every call. A model removed
    /// afterwards is reported by the run itself, per file.
    pub languages_checked: std::sync::OnceLock<()>,
}

/// The candidates, observed: what the state step saw.
fn state_of(attachments: Vec<Attachment>) -> TargetState<Option<Vec<Attachment>>> {
    TargetState {
        fp: candidates::fingerprint(&attachments),
        observed: attachments
            .iter()
            .map(|a| (a.path.clone(), a.hash.clone()))
            .collect(),
        seen: Arc::new(Some(attachments)),
    }
}

// r[impl ocr.unavailable]
fn unavailable(error: &EngineError) -> ToolError {
    ToolError::new(ErrorCode::OcrUnavailable, error.to_string()).with_details(match error {
        EngineError::Missing { engine, .. } => {
            json!({"engine": engine.name(), "package": engine.package()})
        }
        EngineError::MissingLanguage { language, package } => {
            json!({"engine": "tesseract", "language": language, "package": package})
        }
        _ => json!({}),
    })
}

impl OcrBulk {
    fn collect(
        &self,
        cx: &ToolCx<'_>,
        args: &OcrBulkArgs,
    ) -> Result<Vec<(VaultPath, Kind)>, ToolError> {
        let list = match (&args.paths, &args.root) {
            (Some(paths), None) => candidates::from_paths(paths)?,
            (None, Some(root)) => candidates::from_root(cx, root, &normalized(&args.extensions))?,
            _ => {
                return Err(ToolError::validation(
                    "",
                    "give exactly one of paths and root",
                ));
            }
        };
        candidates::check_count(list.len())?;
        Ok(list)
    }

    /// Refuses, before the gate, a call the host cannot run.
    fn check_engines(&self, list: &[(VaultPath, Kind)]) -> Result<(), ToolError> {
        let engines = self.config.engines();
        let mut needed = Vec::new();
        if list.iter().any(|(_, k)| *k == Kind::Image) {
            needed.push((Engine::Tesseract, &engines.tesseract));
        }
        if list.iter().any(|(_, k)| *k == Kind::Pdf) {
            needed.push((Engine::PdfToText, &engines.pdftotext));
        }
        for (engine, program) in needed {
            if engine::locate(program).is_none() {
                return Err(unavailable(&EngineError::Missing {
                    engine,
                    program: program.clone(),
                }));
            }
            if engine == Engine::Tesseract && self.languages_checked.get().is_none() {
                engine::check_languages(program, self.config.languages(), self.config.limits())
                    .map_err(|e| unavailable(&e))?;
                let _ = self.languages_checked.set(());
            }
        }
        Ok(())
    }

    // r[impl ocr.bounded.batch]
    fn check_fits(&self, cx: &ToolCx<'_>, list: &[(VaultPath, Kind)]) -> Result<(), ToolError> {
        let budget = cx.paging.limits.page_budget();
        let mut need = bound::envelope_estimate(cx.vault().id(), &self.config.language_arg());
        for (count, (path, _)) in list.iter().enumerate() {
            need += bound::entry_estimate(path.as_str());
            if need > budget {
                return Err(ToolError::new(
                    ErrorCode::InvalidInput,
                    format!(
                        "the results of {} files cannot fit in one response under \
                         governor.maxResponseBytes; send at most {count} paths per call",
                        list.len()
                    ),
                )
                .with_details(json!({"reason": "too_many_files", "fits": count})));
            }
        }
        Ok(())
    }

    /// One file's text: from the cache, or from the engines on a private copy whose hash is
    /// the approved one.
    fn read_one(
        &self,
        cx: &ToolCx<'_>,
        attachment: &Attachment,
        force: bool,
        scratch: &Path,
    ) -> Result<Result<OcrFile, OcrFileError>, ToolError> {
        let languages = self.config.language_arg();
        let fail = |code: &str, message: String| {
            Ok(Err(OcrFileError {
                path: attachment.path.as_str().to_owned(),
                code: code.to_owned(),
                message: one_line(&message, MESSAGE_BYTES),
                size: Some(attachment.size),
            }))
        };
        let Some(hash) = &attachment.hash else {
            return fail(
                "too_large",
                format!("the file is over {MAX_FILE_BYTES} bytes, the most ocr_bulk reads"),
            );
        };
        let file = |recognized: crate::recognize::Recognized, cached: bool| OcrFile {
            path: attachment.path.as_str().to_owned(),
            kind: attachment.kind,
            size: attachment.size,
            content_hash: hash.clone(),
            pages: recognized.pages,
            ocr_pages: recognized.ocr_pages,
            cached,
            text_bytes: recognized.text.len(),
            text: recognized.text,
            truncated: false,
        };
        // r[impl ocr.cache.force]
        if !force && let Ok(Some(recognized)) = self.cache.get(hash, &languages) {
            return Ok(Ok(file(recognized, true)));
        }
        // r[impl ocr.reads-approved]
        let name = format!(
            "input{}",
            crate::recognize::extension_of(attachment.path.as_str()).unwrap_or_default()
        );
        let copy = scratch.join(name);
        if let Err(e) = std::fs::copy(&attachment.location, &copy) {
            return fail("note_not_found", format!("the file could not be read: {e}"));
        }
        match candidates::hash_file(&copy) {
            Ok(now) if &now == hash => {}
            _ => {
                let _ = std::fs::remove_file(&copy);
                return fail(
                    "changed",
                    "the file changed after the call was approved; it was not read (send the \
                     call again for a fresh confirmation)"
                        .into(),
                );
            }
        }
        let cancelled = || cx.cancelled();
        let result = recognize(&self.config, attachment.kind, &copy, scratch, &cancelled);
        let _ = std::fs::remove_file(&copy);
        match result {
            Ok(recognized) => {
                // A cache that cannot be written costs the next call time, not this one its text.
                let _ = self
                    .cache
                    .put(hash, &languages, &recognized, cx.clock.now_ms());
                Ok(Ok(file(recognized, false)))
            }
            Err(RecognizeError::Engine(error)) if error.is_unavailable() => {
                Err(unavailable(&error))
            }
            Err(RecognizeError::Engine(error @ EngineError::Timeout { .. })) => {
                fail("operation_timeout", error.to_string())
            }
            Err(RecognizeError::Engine(error)) => fail("ocr_failed", error.to_string()),
            Err(RecognizeError::Cancelled) => Err(cancelled_error()),
            Err(RecognizeError::Scratch(why)) => Err(ToolError::internal(&format!(
                "making a scratch folder ({})",
                one_line(&why, 80)
            ))),
        }
    }
}

fn cancelled_error() -> ToolError {
    ToolError::new(
        ErrorCode::InternalError,
        "The ocr_bulk call was cancelled; what was read before the cancel is cached, so the \
         same call sent again (with a fresh confirmation) is quick.",
    )
    .with_details(json!({"reason": "cancelled"}))
}

/// `extensions` lowercase with their dot.
fn normalized(extensions: &[String]) -> Vec<String> {
    extensions
        .iter()
        .map(|e| {
            let e = e.to_ascii_lowercase();
            if e.starts_with('.') {
                e
            } else {
                format!(".{e}")
            }
        })
        .collect()
}

impl Tool for OcrBulk {
    type Args = OcrBulkArgs;
    type Output = OcrBulkOutput;
    type Plan = Vec<Attachment>;
    type Seen = Option<Vec<Attachment>>;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "ocr_bulk",
            description: "Read the text of PDFs and images in the vault (PDF text layer, else tesseract OCR): give paths or root, exactly one. Cached by content unless force. Always asks the human, bound to exactly the files it reads. Long texts are cut to fit the response cap; failures are listed in errors.",
            annotations: Annotations::READS,
            scopes: &["read:ocr"],
            changes_notes: false,
            gating: Gating::bound_to(ConfirmationTargets::Custom),
        }
    }

    fn check(&self, args: &OcrBulkArgs) -> Result<(), ToolError> {
        if args.paths.is_some() == args.root.is_some() {
            return Err(ToolError::validation(
                "",
                "give exactly one of paths and root",
            ));
        }
        for (i, extension) in normalized(&args.extensions).iter().enumerate() {
            if !SUPPORTED_EXTENSIONS.contains(&extension.as_str()) {
                return Err(ToolError::validation(
                    &format!("/extensions/{i}"),
                    format!(
                        "{:?} is not an extension ocr_bulk reads ({})",
                        args.extensions[i],
                        SUPPORTED_EXTENSIONS.join(" ")
                    ),
                ));
            }
        }
        Ok(())
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &OcrBulkArgs,
    ) -> Result<Precheck<Self::Plan>, ToolError> {
        let list = self.collect(cx, args)?;
        self.check_engines(&list)?;
        self.check_fits(cx, &list)?;
        let attachments = candidates::observe(cx, &list)?;
        Ok(Precheck {
            // r[impl ocr.always-gated]
            needs_confirmation: true,
            acl: list.into_iter().map(|(p, _)| (AclOp::Read, p)).collect(),
            plan: Arc::new(attachments),
        })
    }

    fn state(
        &self,
        cx: &ToolCx<'_>,
        args: &OcrBulkArgs,
        _precheck: &Precheck<Self::Plan>,
    ) -> Result<TargetState<Self::Seen>, ToolError> {
        let list = self.collect(cx, args)?;
        Ok(state_of(candidates::observe(cx, &list)?))
    }

    fn state_after_precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &OcrBulkArgs,
        precheck: &Precheck<Self::Plan>,
    ) -> Result<TargetState<Self::Seen>, ToolError> {
        let _ = (cx, args);
        Ok(state_of(precheck.plan.to_vec()))
    }

    // r[impl ocr.always-gated]
    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &OcrBulkArgs,
        _precheck: &Precheck<Self::Plan>,
        state: &TargetState<Self::Seen>,
    ) -> Summary {
        let attachments = (*state.seen).as_deref().unwrap_or_default();
        let total: u64 = attachments.iter().map(|a| a.size).sum();
        let source = match &args.root {
            Some(root) if root.is_empty() => format!(
                " under the vault root ({})",
                normalized(&args.extensions).join(" ")
            ),
            Some(root) => format!(" under {root} ({})", normalized(&args.extensions).join(" ")),
            None => String::new(),
        };
        let lines = attachments
            .iter()
            .map(|a| format!("{} ({} bytes)", a.path, a.size))
            .collect();
        Summary::new(format!(
            "read the text of {} file(s){source}, {total} bytes in all, with tesseract \
             languages {}{}",
            attachments.len(),
            self.config.language_arg(),
            if args.force {
                ", ignoring the cache"
            } else {
                ""
            }
        ))
        .targets_named(lines, |n| format!("… and {n} more file(s)"))
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &OcrBulkArgs,
        _precheck: &Precheck<Self::Plan>,
        state: &TargetState<Self::Seen>,
    ) -> Result<OcrBulkOutput, HandlerFailure> {
        let attachments = (*state.seen)
            .as_deref()
            .ok_or_else(|| ToolError::internal("reading the approved files"))?;
        let scratch = tempfile::Builder::new()
            .prefix("ocr-")
            .tempdir_in(&self.scratch)
            .map_err(|_| ToolError::internal("making a scratch folder"))?;
        let total = attachments.len() as f64;
        let mut output = OcrBulkOutput {
            vault: cx.vault().id().to_owned(),
            languages: self.config.language_arg(),
            files: Vec::new(),
            errors: Vec::new(),
            read: 0,
            from_cache: 0,
            truncated: 0,
        };
        for (done, attachment) in attachments.iter().enumerate() {
            // r[impl ocr.cancel]
            if cx.cancelled() {
                return Err(cancelled_error().into());
            }
            // r[impl ocr.progress]
            cx.progress(done as f64, Some(total), Some(attachment.path.as_str()));
            match self.read_one(cx, attachment, args.force, scratch.path())? {
                Ok(file) => output.files.push(file),
                Err(error) => output.errors.push(error),
            }
        }
        cx.progress(total, Some(total), Some("done"));
        output.read = output.files.len();
        output.from_cache = output.files.iter().filter(|f| f.cached).count();
        bound::fit(&mut output, cx.paging.limits.page_budget());
        Ok(output)
    }
}
