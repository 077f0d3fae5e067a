//! The text of one attachment (spec/ocr.md `ocr.image`, `ocr.pdf.text-layer`,
//! `ocr.pdf.scanned-page`).
//!
//! An image goes through tesseract with the configured languages. A PDF goes through
//! `pdftotext`, which ends every page with a form feed; a page whose text layer is empty
//! (a scan) is rendered alone by `pdftoppm` at 300 dpi in grey into a private scratch
//! folder and read by tesseract, and its text takes that page's place.

use std::path::Path;

use crate::config::OcrConfig;
use crate::engine::{self, Engine, EngineError};

/// The resolution a scanned PDF page is rendered at (tesseract reads best near 300 dpi).
pub const RENDER_DPI: u32 = 300;

/// What kind of attachment a file is, by its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Pdf,
    Image,
}

/// The extensions `ocr_bulk` reads, lowercase with their dot; `.pdf` is a PDF, the rest are
/// images tesseract's image library (leptonica) opens.
pub const SUPPORTED_EXTENSIONS: &[&str] = &[
    ".pdf", ".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".gif", ".webp", ".pnm",
];

/// The kind of a file named `name`, when `ocr_bulk` reads that extension.
pub fn kind_of(name: &str) -> Option<Kind> {
    let extension = extension_of(name)?;
    if extension == ".pdf" {
        Some(Kind::Pdf)
    } else if SUPPORTED_EXTENSIONS.contains(&extension.as_str()) {
        Some(Kind::Image)
    } else {
        None
    }
}

/// `.png` of `scan.PNG`: the lowercase extension with its dot.
pub fn extension_of(name: &str) -> Option<String> {
    let file = name.rsplit('/').next().unwrap_or(name);
    let dot = file.rfind('.')?;
    (dot > 0).then(|| file[dot..].to_ascii_lowercase())
}

/// The text of one file, and how it was obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recognized {
    pub text: String,
    /// The PDF's page count (`None` for an image).
    pub pages: Option<u32>,
    /// How many pages (or images) went through tesseract.
    pub ocr_pages: u32,
}

/// Why a file has no text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecognizeError {
    Engine(EngineError),
    /// The client cancelled between two pages.
    Cancelled,
    /// The scratch folder for a rendered page could not be made.
    Scratch(String),
}

impl From<EngineError> for RecognizeError {
    fn from(error: EngineError) -> Self {
        RecognizeError::Engine(error)
    }
}

/// Reads the text of `file` (an absolute path) of `kind`; `scratch` is where a scanned page
/// is rendered; `cancelled` is polled between pages.
pub fn recognize(
    config: &OcrConfig,
    kind: Kind,
    file: &Path,
    scratch: &Path,
    cancelled: &dyn Fn() -> bool,
) -> Result<Recognized, RecognizeError> {
    match kind {
        Kind::Image => Ok(Recognized {
            text: tesseract(config, file)?,
            pages: None,
            ocr_pages: 1,
        }),
        Kind::Pdf => pdf(config, file, scratch, cancelled),
    }
}

// r[impl ocr.image]
fn tesseract(config: &OcrConfig, image: &Path) -> Result<String, EngineError> {
    engine::check_languages(
        &config.engines().tesseract,
        config.languages(),
        config.limits(),
    )?;
    let languages = config.language_arg();
    let out = engine::run(
        Engine::Tesseract,
        &config.engines().tesseract,
        [
            image.as_os_str(),
            "stdout".as_ref(),
            "-l".as_ref(),
            languages.as_ref(),
        ],
        config.limits(),
    )?;
    Ok(String::from_utf8_lossy(&out).trim_end().to_owned())
}

// r[impl ocr.pdf.text-layer]
// r[impl ocr.pdf.scanned-page]
fn pdf(
    config: &OcrConfig,
    file: &Path,
    scratch: &Path,
    cancelled: &dyn Fn() -> bool,
) -> Result<Recognized, RecognizeError> {
    let out = engine::run(
        Engine::PdfToText,
        &config.engines().pdftotext,
        [
            "-enc".as_ref(),
            "UTF-8".as_ref(),
            file.as_os_str(),
            "-".as_ref(),
        ],
        config.limits(),
    )?;
    let text = String::from_utf8_lossy(&out);
    let mut pages: Vec<String> = text.split('\u{c}').map(str::to_owned).collect();
    // pdftotext ends every page with a form feed, so the last piece is what follows the
    // last page: nothing.
    if pages.len() > 1 && pages.last().is_some_and(|p| p.trim().is_empty()) {
        pages.pop();
    }
    let mut ocr_pages = 0;
    let mut dir: Option<tempfile::TempDir> = None;
    for (index, page) in pages.iter_mut().enumerate() {
        if !page.trim().is_empty() {
            continue;
        }
        if cancelled() {
            return Err(RecognizeError::Cancelled);
        }
        let dir = match &dir {
            Some(dir) => dir,
            None => dir.insert(
                tempfile::Builder::new()
                    .prefix("ocr-page-")
                    .tempdir_in(scratch)
                    .map_err(|e| RecognizeError::Scratch(e.to_string()))?,
            ),
        };
        let number = (index + 1).to_string();
        let stem = dir.path().join(format!("page-{number}"));
        engine::run(
            Engine::PdfToPpm,
            &config.engines().pdftoppm,
            [
                "-r".as_ref(),
                RENDER_DPI.to_string().as_ref(),
                "-gray".as_ref(),
                "-png".as_ref(),
                "-f".as_ref(),
                number.as_ref(),
                "-l".as_ref(),
                number.as_ref(),
                "-singlefile".as_ref(),
                file.as_os_str(),
                stem.as_os_str(),
            ],
            config.limits(),
        )?;
        let image = stem.with_extension("png");
        let recognized = tesseract(config, &image);
        let _ = std::fs::remove_file(&image);
        *page = recognized?;
        ocr_pages += 1;
    }
    let count = u32::try_from(pages.len()).unwrap_or(u32::MAX);
    let text = pages
        .iter()
        .map(|p| p.trim_end())
        .collect::<Vec<_>>()
        .join("\n\u{c}\n");
    Ok(Recognized {
        text: text.trim_end().to_owned(),
        pages: Some(count),
        ocr_pages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_extension_ignore_case() {
        assert_eq!(kind_of("a/b/Scan.PDF"), Some(Kind::Pdf));
        assert_eq!(kind_of("photo.JPeG"), Some(Kind::Image));
        assert_eq!(kind_of("note.md"), None);
        assert_eq!(kind_of(".png"), None);
        assert_eq!(kind_of("noext"), None);
    }
}
