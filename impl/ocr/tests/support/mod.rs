//! The tc-ocr tests' fixture: tc-tools' shared one over a registry holding `ocr_bulk`, and
//! real attachments made by the test: PDFs written by hand (a text layer in Helvetica, or a
//! page that is only an image), and images rendered from them by `pdftoppm`.
#![allow(dead_code, unused_imports)]

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::Value;
use tc_ocr::{Engines, OcrCache, OcrConfig};
pub use tc_tools::testing::{TempVault, Tools, caller, code, with_token};

thread_local! {
    /// The cache of the registry built last on this thread (a scenario's checks read it).
    static LAST_CACHE: RefCell<Option<Arc<OcrCache>>> = const { RefCell::new(None) };
    /// The configuration the next registry on this thread is built with.
    static NEXT_CONFIG: RefCell<Option<OcrConfig>> = const { RefCell::new(None) };
}

/// `ocr_bulk` with the default configuration and an in-memory cache.
pub struct OcrTools;

impl Tools for OcrTools {
    fn registry() -> tc_tools::Registry {
        let config = NEXT_CONFIG.with(|c| c.borrow().clone()).unwrap_or_default();
        let cache = Arc::new(OcrCache::in_memory().unwrap());
        LAST_CACHE.with(|c| *c.borrow_mut() = Some(Arc::clone(&cache)));
        let mut registry = tc_tools::Registry::new();
        tc_ocr::register_with(&mut registry, config, cache, std::env::temp_dir()).unwrap();
        registry
    }
}

pub type Fx = tc_tools::testing::Fx<OcrTools>;
pub type Scenario<'a> = tc_tools::testing::Scenario<'a, OcrTools>;

/// A fixture whose registry runs with `config`.
pub fn fx_with(config: OcrConfig) -> Fx {
    NEXT_CONFIG.with(|c| *c.borrow_mut() = Some(config));
    let fx = Fx::new();
    NEXT_CONFIG.with(|c| *c.borrow_mut() = None);
    fx
}

/// The cache of the fixture built last on this thread.
pub fn cache() -> Arc<OcrCache> {
    LAST_CACHE
        .with(|c| c.borrow().clone())
        .expect("a registry was built")
}

/// Engines with `tesseract` pointed at a program that does not exist.
pub fn without_tesseract() -> OcrConfig {
    OcrConfig::default().with_engines(Engines {
        tesseract: PathBuf::from("/nonexistent/bin/tesseract"),
        ..Engines::default()
    })
}

fn escape_pdf(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('(', "\\(")
        .replace(')', "\\)")
}

/// One page of a hand-written PDF.
pub enum Page<'a> {
    /// Lines of text in a text layer (Helvetica, 24 pt).
    Text(&'a [&'a str]),
    /// A grey image filling the page, from a binary PGM (no text layer: a "scan").
    Scan {
        width: usize,
        height: usize,
        pixels: Vec<u8>,
    },
}

/// A PDF with these pages, written object by object with a correct xref table.
pub fn pdf(pages: &[Page<'_>]) -> Vec<u8> {
    let mut objects: Vec<Vec<u8>> = Vec::new();
    // 1: catalog, 2: pages, 3: font; then per page: page, contents (and image).
    objects.push(b"<< /Type /Catalog /Pages 2 0 R >>".to_vec());
    objects.push(Vec::new());
    objects.push(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec());
    let mut kids = Vec::new();
    for page in pages {
        let page_id = objects.len() + 1;
        kids.push(format!("{page_id} 0 R"));
        let contents_id = page_id + 1;
        match page {
            Page::Text(lines) => {
                let mut content = String::from("BT /F1 24 Tf 72 720 Td 30 TL");
                for line in *lines {
                    content.push_str(&format!(" ({}) Tj T*", escape_pdf(line)));
                }
                content.push_str(" ET");
                objects.push(format!(
                    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {contents_id} 0 R \
                     /Resources << /Font << /F1 3 0 R >> >> >>"
                ).into_bytes());
                objects.push(stream(content.as_bytes(), ""));
            }
            Page::Scan {
                width,
                height,
                pixels,
            } => {
                let image_id = page_id + 2;
                objects.push(format!(
                    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {contents_id} 0 R \
                     /Resources << /XObject << /Im1 {image_id} 0 R >> >> >>"
                ).into_bytes());
                objects.push(stream(b"q 612 0 0 792 0 0 cm /Im1 Do Q", ""));
                objects.push(stream(
                    pixels,
                    &format!(
                        "/Type /XObject /Subtype /Image /Width {width} /Height {height} \
                         /ColorSpace /DeviceGray /BitsPerComponent 8"
                    ),
                ));
            }
        }
    }
    objects[1] = format!(
        "<< /Type /Pages /Kids [{}] /Count {} >>",
        kids.join(" "),
        pages.len()
    )
    .into_bytes();
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(object);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

fn stream(data: &[u8], dict: &str) -> Vec<u8> {
    let mut out = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\nendstream");
    out
}

/// Renders page 1 of `pdf_bytes` with the real `pdftoppm` (`-gray`, `dpi`), as PNG bytes
/// or as a binary PGM.
pub fn render(pdf_bytes: &[u8], dpi: u32, png: bool) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.pdf");
    std::fs::write(&input, pdf_bytes).unwrap();
    let stem = dir.path().join("out");
    let format = if png { "-png" } else { "-gray" };
    let mut command = Command::new("pdftoppm");
    command.args(["-r", &dpi.to_string(), "-gray", format, "-singlefile"]);
    let status = command.arg(&input).arg(&stem).status().unwrap();
    assert!(status.success());
    let ext = if png { "png" } else { "pgm" };
    std::fs::read(stem.with_extension(ext)).unwrap()
}

/// An image of `lines` (PNG, 150 dpi), rendered from a text PDF by the real `pdftoppm`.
pub fn text_png(lines: &[&str]) -> Vec<u8> {
    render(&pdf(&[Page::Text(lines)]), 150, true)
}

/// A page holding only an image of `lines` (no text layer).
pub fn scan_page(lines: &[&str]) -> Page<'static> {
    let pgm = render(&pdf(&[Page::Text(lines)]), 100, false);
    // "P5\n<w> <h>\n255\n" then the pixels.
    let mut fields = Vec::new();
    let mut at = 0;
    while fields.len() < 4 {
        while pgm[at].is_ascii_whitespace() {
            at += 1;
        }
        let start = at;
        while !pgm[at].is_ascii_whitespace() {
            at += 1;
        }
        fields.push(String::from_utf8(pgm[start..at].to_vec()).unwrap());
    }
    at += 1;
    assert_eq!(fields[0], "P5");
    Page::Scan {
        width: fields[1].parse().unwrap(),
        height: fields[2].parse().unwrap(),
        pixels: pgm[at..].to_vec(),
    }
}

/// Writes `bytes` at `rel` in the vault, making its folders.
pub fn put_bytes(fx: &TempVault, rel: &str, bytes: &[u8]) {
    let full = fx.root.join(rel);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, bytes).unwrap();
}

/// The words of `text`, lowercase, punctuation dropped.
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Asserts each of `expected` is among the words of `text`.
pub fn assert_words(text: &str, expected: &[&str]) {
    let found = words(text);
    for word in expected {
        assert!(
            found.contains(&word.to_lowercase()),
            "{word:?} not in {text:?}"
        );
    }
}

/// Sends `args` through a fresh confirmation and returns the result.
pub fn approved(fx: &Fx, args: &Value) -> Value {
    let token = fx.require("ocr_bulk", args);
    fx.call("ocr_bulk", with_token(args, &token))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// `path`'s entry in a result's files.
pub fn file<'a>(result: &'a Value, path: &str) -> &'a Value {
    result["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("{path} not in {result}"))
}
