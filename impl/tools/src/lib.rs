//! tc-tools: the tool framework every subsystem crate builds its tools on (spec/dispatch.md,
//! spec/tools.md `tools.schema`, `tools.output-schema`, `tools.annotations`,
//! `tools.summary`, `tools.progress`; spec/drift.md `drift.targets-declared`,
//! `drift.startup-refusal`; spec/results.md; spec/tools.md, spec/results.md).
//!
//! A tool is a type implementing [`Tool`]: typed arguments (a serde struct deriving
//! `schemars::JsonSchema`, the one source of the advertised `inputSchema`, the validation,
//! the defaults and the value `args_hash` is computed over), a typed result (its schema is
//! the `outputSchema`), the gate declarations of its [`ToolSpec`], and the steps the
//! [`Pipeline`] calls: precheck, the state of its confirmation targets, the summary the
//! human approves, and the handler. A family of tools (a [`Family`]) adds its tools to a
//! [`Registry`] through its one `register`; the pipeline never changes when a tool is added.

pub mod backlinks;
pub mod context;
pub mod db;
pub mod error;
pub mod family;
pub mod note_write;
pub mod paging;
pub mod pipeline;
mod refusals;
pub use refusals::shell_word;
pub mod registry;
pub mod schema;
pub mod summary;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod tool;

pub use context::{
    BindingError, CallControl, CallerContext, CancelSource, CancellationFlag, NoProgress,
    ProgressSink, ToolCx, VaultBinding,
};
pub use db::{SubsystemDb, SubsystemDbError};
pub use error::{
    ErrorCode, MAX_DETAILS_BYTES, MAX_FAILURE_TEXT_BYTES, MAX_MESSAGE_BYTES, Recovery, ToolError,
    with_causes,
};
pub use family::Family;
pub use paging::{KeysetPaging, PageLimits, PagingSetup, wire_cost};
pub use pipeline::{Approval, Pipeline, Prepared};
pub use registry::{Registry, RegistryBuildError, SubsystemSetup, ToolDef};
pub use summary::{Summary, escape_for_terminal, redact_secrets};
pub use tool::{
    Annotations, AnyPlan, Gating, HandlerFailure, IMAGE_BLOCK_BYTES, Precheck, TargetState, Tool,
    ToolOutput, ToolSpec, path_state,
};
