//! tc-ocr: `ocr_bulk`, the text of the vault's scans and PDFs read on the server host
//! (spec/config.md `[ocr]`; spec/tools.md; spec/ocr.md; spec/drift.md `drift.bind.ocr-bulk`).
//!
//! - [`config`]: `[ocr]` (`languages`, `timeoutSeconds`, `maxMemoryMb`), validated while it is parsed;
//! - [`engine`]: tesseract and poppler as child processes, no shell, each in a process group
//!   killed at the timeout, their memory capped;
//! - [`recognize`]: one file's text (an image through tesseract; a PDF's text layer through
//!   `pdftotext`, a page without one rendered by `pdftoppm` and read by tesseract);
//! - [`cache`]: tc-ocr's table in cache.db, text by content hash and languages;
//! - [`candidates`]: the files a call would read and the state its confirmation binds;
//! - [`bound`]: the result under the governor's cap;
//! - [`tool`]: the tool itself.
//!
//! [`register`] adds it to a registry.

pub mod bound;
pub mod cache;
pub mod candidates;
pub mod config;
pub mod engine;
pub mod recognize;
pub mod tool;

use std::path::PathBuf;
use std::sync::Arc;

pub use cache::OcrCache;
pub use config::{Engines, OcrConfig, OcrConfigError};
use tc_tools::{Registry, RegistryBuildError, SubsystemSetup};
pub use tool::OcrBulk;

/// The name of the folder under the cache directory where copies of the files being read
/// and rendered PDF pages live while a call runs (private, removed after each call).
pub const SCRATCH_DIR: &str = "ocr-scratch";

/// Adds `ocr_bulk` to `registry`, its cache in `<cacheDir>/cache.db`.
pub fn register(
    registry: &mut Registry,
    config: &OcrConfig,
    setup: &SubsystemSetup<'_>,
) -> Result<(), RegistryBuildError> {
    let cache =
        OcrCache::open(setup.cache_dir).map_err(|e| RegistryBuildError::subsystem("ocr", e))?;
    let scratch = setup.cache_dir.join(SCRATCH_DIR);
    tc_gate::private_fs::create_private_dir_all(&scratch).map_err(|e| {
        RegistryBuildError::subsystem("ocr", format!("cannot create {}: {e}", scratch.display()))
    })?;
    register_with(registry, config.clone(), Arc::new(cache), scratch)
}

/// `ocr_bulk` with its cache as the family `ocr` (spec `tools.families`), with `[ocr]`.
#[derive(Debug, Clone)]
pub struct OcrFamily {
    config: OcrConfig,
}

impl OcrFamily {
    pub fn new(config: OcrConfig) -> Self {
        OcrFamily { config }
    }
}

impl tc_tools::Family for OcrFamily {
    fn name(&self) -> &'static str {
        "ocr"
    }

    fn register(
        &self,
        registry: &mut Registry,
        setup: &SubsystemSetup<'_>,
    ) -> Result<(), RegistryBuildError> {
        register(registry, &self.config, setup)
    }
}

/// Adds `ocr_bulk` with this cache and scratch folder (tests, embedders).
pub fn register_with(
    registry: &mut Registry,
    config: OcrConfig,
    cache: Arc<OcrCache>,
    scratch: PathBuf,
) -> Result<(), RegistryBuildError> {
    registry.add(OcrBulk {
        config,
        cache,
        scratch,
        languages_checked: std::sync::OnceLock::new(),
    })
}
