//! What a tool step sees of its call: the vault binding, the caller, the clock, the paging
//! setup, and the call's controls (cancellation and progress) (spec/dispatch.md
//! `dispatch.scopes`; spec/tools.md `tools.progress`, `tools.cancellation`).

use std::any::Any;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use tc_gate::clock::Clock;
use tc_vault::acl::{Acl, AclConfig, AclOp, GlobConfigError, Scopes};
use tc_vault::conventions::{
    ConventionBlocked, ConventionConfig, ConventionConfigError, Conventions, WriteIntent,
};
use tc_vault::links::LinkResolver;
use tc_vault::path::VaultPath;
use tc_vault::tasks::Date;
use tc_vault::vault::Vault;
use tc_vault::wiki::WikiSealer;

use crate::error::ToolError;
use crate::paging::PagingSetup;

/// What the link tools ask of the vault's index (spec/index.md `index.links.*`): the
/// vault's files for link resolution and the notes that may link to a name, both as of a
/// reconciliation with the files done by this very call. The index only narrows which
/// notes are read: a tool still reads every note it plans over, and judges its links
/// against the file it read.
///
/// tc-tools defines it and the index crate implements it, so the note tools use the index
/// without depending on it.
pub trait LinkIndex: Send + Sync + fmt::Debug {
    /// Reconciles the index with the files, then returns the resolver over every file of the
    /// vault and the notes holding a link whose target names one of `names` (a path or a
    /// link target; compared as Obsidian compares them: by the last segment,
    /// case-insensitively, without `.md`). `Ok(None)` when the index cannot answer yet (its
    /// first build is still running): the caller scans the vault instead.
    fn link_candidates(&self, names: &[&str]) -> Result<Option<LinkCandidates>, ToolError>;

    /// The files whose name is `name`'s (compared as above), as of the last
    /// reconciliation: every file a link spelled from that name can resolve to, so a
    /// resolver over them alone resolves such a link as one over the whole vault does.
    fn files_named(&self, name: &str) -> Vec<VaultPath>;

    /// Forgets a note deleted permanently: its rows (chunks, words, links, tags,
    /// embeddings) go at once, overwritten, and no older copy stays in the database's log
    /// (spec `vault.delete.permanent-gone`).
    fn purge(&self, path: &VaultPath) -> Result<(), ToolError>;

    /// The implementation, for the index crate's own tools.
    fn as_any(&self) -> &dyn Any;
}

/// The answer of [`LinkIndex::link_candidates`].
#[derive(Debug, Clone)]
pub struct LinkCandidates {
    pub resolver: Arc<LinkResolver>,
    /// The notes that may link to one of the names, in path order.
    pub notes: Vec<VaultPath>,
}

/// One vault as the tools see it: the vault, its folder ACL (and whether it is read-only),
/// its conventions, the sealer of its generated wiki pages, and its index when search is
/// enabled.
#[derive(Debug)]
pub struct VaultBinding {
    pub vault: Vault,
    pub acl: Acl,
    /// `readOnly = true` in the vault's ACL: every tool that changes notes is refused.
    pub read_only: bool,
    pub conventions: Conventions,
    pub sealer: WikiSealer,
    /// Attached once, after the binding is made (the server attaches it when `[search]` is
    /// enabled; a test attaches it to its fixture's binding).
    index: OnceLock<Arc<dyn LinkIndex>>,
}

/// A vault's ACL or conventions that do not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindingError {
    #[error(transparent)]
    Acl(#[from] GlobConfigError),
    #[error(transparent)]
    Conventions(#[from] ConventionConfigError),
}

impl VaultBinding {
    /// Binds `vault` with its configured ACL (absent = unrestricted) and conventions.
    pub fn from_config(
        vault: Vault,
        acl: Option<&AclConfig>,
        conventions: &[ConventionConfig],
        sealer: WikiSealer,
    ) -> Result<Self, BindingError> {
        Ok(VaultBinding {
            vault,
            acl: match acl {
                Some(config) => Acl::compile(config)?,
                None => Acl::unrestricted(),
            },
            read_only: acl.is_some_and(|config| config.read_only),
            conventions: Conventions::compile(conventions)?,
            sealer,
            index: OnceLock::new(),
        })
    }

    /// Attaches the vault's index; `false` (and nothing changes) when one is attached already.
    pub fn attach_index(&self, index: Arc<dyn LinkIndex>) -> bool {
        self.index.set(index).is_ok()
    }

    /// The vault's index, when one is attached.
    pub fn index(&self) -> Option<&Arc<dyn LinkIndex>> {
        self.index.get()
    }
}

/// The caller as the server authenticated it: its id and scopes (spec `dispatch.scopes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerContext {
    pub id: String,
    pub scopes: Scopes,
    /// A caller limited to one vault (a JWT `vault` claim); `None` for any vault.
    pub only_vault: Option<String>,
}

impl CallerContext {
    pub fn new(id: impl Into<String>, scopes: Scopes) -> Self {
        CallerContext {
            id: id.into(),
            scopes,
            only_vault: None,
        }
    }
}

/// Where a cancellation comes from beyond the flag itself: the server backs it with the
/// request's cancellation token, so a `notifications/cancelled` reaches a running handler.
pub trait CancelSource: Send + Sync {
    fn is_cancelled(&self) -> bool;
}

impl<F: Fn() -> bool + Send + Sync> CancelSource for F {
    fn is_cancelled(&self) -> bool {
        self()
    }
}

// r[impl tools.cancellation]
/// Set when the client cancels the call. The pipeline checks it right before the handler is
/// entered (a cancel there releases a spent token); a long handler polls it between units
/// of work and stops early.
#[derive(Clone, Default)]
pub struct CancellationFlag {
    local: Arc<AtomicBool>,
    source: Option<Arc<dyn CancelSource>>,
}

impl fmt::Debug for CancellationFlag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancellationFlag")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl CancellationFlag {
    pub fn new() -> Self {
        CancellationFlag::default()
    }

    /// A flag that also reads as cancelled once `source` is.
    pub fn backed_by(source: Arc<dyn CancelSource>) -> Self {
        CancellationFlag {
            local: Arc::default(),
            source: Some(source),
        }
    }

    pub fn cancel(&self) {
        self.local.store(true, Ordering::SeqCst);
    }

    pub fn is_cancelled(&self) -> bool {
        self.local.load(Ordering::SeqCst) || self.source.as_ref().is_some_and(|s| s.is_cancelled())
    }
}

// r[impl tools.progress]
/// Where a handler reports progress. The server turns a report into
/// `notifications/progress` when the request carried a `progressToken`, and drops it
/// otherwise.
pub trait ProgressSink: Send + Sync {
    /// `progress` grows with every report; `total` when known.
    fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>);
}

/// A sink that drops every report (no `progressToken`, or a library caller).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl ProgressSink for NoProgress {
    fn report(&self, _progress: f64, _total: Option<f64>, _message: Option<&str>) {}
}

/// The controls of one call: its cancellation and its progress sink.
#[derive(Clone)]
pub struct CallControl {
    pub cancel: CancellationFlag,
    pub progress: Arc<dyn ProgressSink>,
}

impl Default for CallControl {
    fn default() -> Self {
        CallControl {
            cancel: CancellationFlag::new(),
            progress: Arc::new(NoProgress),
        }
    }
}

impl fmt::Debug for CallControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallControl")
            .field("cancel", &self.cancel)
            .finish_non_exhaustive()
    }
}

impl CallControl {
    /// The controls with this cancellation flag and no progress reporting.
    pub fn with_cancel(cancel: CancellationFlag) -> Self {
        CallControl {
            cancel,
            progress: Arc::new(NoProgress),
        }
    }
}

/// What a tool step sees of the call's context.
#[derive(Clone, Copy)]
pub struct ToolCx<'a> {
    pub binding: &'a VaultBinding,
    pub caller: &'a CallerContext,
    pub clock: &'a dyn Clock,
    pub paging: &'a PagingSetup,
    pub control: &'a CallControl,
}

impl fmt::Debug for ToolCx<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolCx")
            .field("vault", &self.binding.vault.id())
            .field("caller", &self.caller.id)
            .finish_non_exhaustive()
    }
}

impl ToolCx<'_> {
    pub fn vault(&self) -> &Vault {
        &self.binding.vault
    }

    /// The server's current UTC date.
    pub fn today(&self) -> Date {
        Date::from_unix_ms(self.clock.now_ms())
    }

    /// The vault's write gate.
    pub fn judge(&self, intent: &WriteIntent) -> Result<(), ConventionBlocked> {
        self.binding
            .conventions
            .judge_at(self.binding.vault.root(), intent)
    }

    /// Whether the caller may write `path` under the folder ACL.
    pub fn may_write(&self, path: &VaultPath) -> bool {
        self.binding
            .acl
            .check_at(
                self.binding.vault.root(),
                AclOp::Write,
                path,
                &self.caller.scopes,
            )
            .is_ok()
    }

    /// Whether the folder ACL lets the caller read `path` (judged at its link targets too):
    /// for a result that would say something of the note's content (spec
    /// vault.acl.results-readable-only).
    pub fn may_read(&self, path: &VaultPath) -> bool {
        self.require_read(path).is_ok()
    }

    /// Refuses with `acl_denied`, as the folder ACL would after the gate, unless the caller
    /// may read `path` (judged at its link targets too): for a precheck that is about to
    /// read a note whose content its refusals or its result would show.
    pub fn require_read(&self, path: &VaultPath) -> Result<(), ToolError> {
        self.binding
            .acl
            .check_at(
                self.binding.vault.root(),
                AclOp::Read,
                path,
                &self.caller.scopes,
            )
            .map_err(|denied| ToolError::acl(&denied))
    }

    /// Whether the client cancelled the call (a handler polls this between units of work).
    pub fn cancelled(&self) -> bool {
        self.control.cancel.is_cancelled()
    }

    /// Reports progress (sent as `notifications/progress` when the request asked for it).
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        self.control.progress.report(progress, total, message);
    }
}
