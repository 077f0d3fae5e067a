//! The tc-notes tests' fixture: tc-tools' shared one (`tc_tools::testing`) over the note
//! tools' registry.
#![allow(dead_code, unused_imports)]

pub use tc_tools::testing::{
    HOSTILE, NOW_MS, PAGE_CAP, TempVault, Tools, binding, caller, code, deny_write_all, forbid_all,
    pipeline, verified, with_token,
};

/// The twelve note tools.
pub struct NoteTools;

impl Tools for NoteTools {
    fn registry() -> tc_tools::Registry {
        tc_notes::registry().unwrap()
    }
}

pub type Fx = tc_tools::testing::Fx<NoteTools>;
pub type Scenario<'a> = tc_tools::testing::Scenario<'a, NoteTools>;
