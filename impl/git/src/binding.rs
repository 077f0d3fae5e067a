//! What a `git_commit` confirmation is bound to (spec/drift.md `drift.bind.git-commit`,
//! `drift.residual.remote-git`; spec/git.md `git.commit.binding`).
//!
//! HEAD (the reference it names and the commit it resolves to) and every index entry as
//! (stage, path, mode, blob id, intent-to-add): what the commit would record and on which
//! parent. Nothing of an entry's stat data (times, size, inode) goes in, so
//! `git update-index --refresh` after a `touch` leaves the fingerprint as it was, while
//! `git add` of a changed file gives the entry a new blob id and changes it.

use gix::index::entry::Flags;
use tc_gate::{StateFp, fingerprint_custom};

use crate::repo::HeadState;

const TAG: &[u8] = b"git_commit/v1";

// r[impl drift.bind.git-commit]
/// The fingerprint of HEAD and the index.
pub fn fingerprint(head: &HeadState, index: &gix::index::State) -> StateFp {
    let entries = index.entries();
    let mut buf = Vec::with_capacity(entries.len() * 64);
    for entry in entries {
        let path = entry.path(index);
        buf.push(entry.stage_raw() as u8);
        buf.push(u8::from(entry.flags.contains(Flags::INTENT_TO_ADD)));
        buf.extend_from_slice(&entry.mode.bits().to_be_bytes());
        buf.extend_from_slice(entry.id.as_bytes());
        buf.extend_from_slice(&(path.len() as u64).to_be_bytes());
        buf.extend_from_slice(path);
    }
    let reference = head.reference.as_deref().unwrap_or("");
    let commit = head.commit_hex().unwrap_or_default();
    let count = (entries.len() as u64).to_be_bytes();
    fingerprint_custom(&[TAG, reference.as_bytes(), commit.as_bytes(), &count, &buf])
}

// r[impl drift.residual.remote-git]
/// The binding of a vault with no repository on this host: empty.
pub fn no_repository() -> StateFp {
    StateFp::none()
}
