//! The tc-notes tests' fixture: tc-tools' shared one (`tc_tools::testing`) over the note
//! tools' registry.
#![allow(dead_code, unused_imports)]

pub use tc_tools::testing::{
    HOSTILE, NOW_MS, PAGE_CAP, TempVault, Tools, binding, caller, code, deny_write_all, forbid_all,
    pipeline, verified, with_token,
};

/// The note tools, and `update_task` (the tasks family's), which the gate's tests compose
/// with them.
pub struct NoteTools;

impl Tools for NoteTools {
    fn registry() -> tc_tools::Registry {
        let mut registry = tc_notes::registry().unwrap();
        registry.add(tc_periodic::tasks::UpdateTask).unwrap();
        registry
    }
}

pub type Fx = tc_tools::testing::Fx<NoteTools>;
pub type Scenario<'a> = tc_tools::testing::Scenario<'a, NoteTools>;
