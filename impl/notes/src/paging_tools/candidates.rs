//! The candidates a page is filled from and the cursor positions a walk resumes at (spec
//! `paging.order`, `paging.paths`, `paging.acl-per-page`, `paging.walk-unlistable`,
//! `tools.notes-only`).

use std::fmt;

use tc_vault::acl::{Acl, Scopes};
use tc_vault::path::{VaultPath, VaultRoot};
use tc_vault::walk::Candidate;

/// The candidates of explicit `paths` from index `start`: each must be a note path
/// (`tools.notes-only`); one that is not is a `path_invalid` entry (`paging.paths`).
pub(super) fn note_path_candidates(
    paths: &[String],
    start: usize,
) -> impl Iterator<Item = Candidate> + '_ {
    paths
        .iter()
        .skip(start)
        .map(|raw| match VaultPath::parse_note(raw) {
            Ok(path) => Candidate::Path(path),
            Err(error) => Candidate::Refused {
                path: raw.clone(),
                error,
            },
        })
}

/// A folder walk's candidates as one page sees them: what the caller may not read is left
/// out here already (so every candidate the page consumes becomes an entry, and the page's
/// position is always a path it emitted); a candidate whose position would be longer than
/// the page reserved cursor room for ends the page before it; and the positions of the last
/// two candidates handed out are kept, because the page builder looks one past the last one
/// it consumes.
pub(super) struct FolderCandidates<'r, I> {
    inner: I,
    root: &'r VaultRoot,
    acl: &'r Acl,
    scopes: &'r Scopes,
    pub(super) max_position_len: usize,
    pending: Option<Candidate>,
    handed_out: usize,
    /// Positions of the last two candidates handed out, the latest last.
    recent: [Option<String>; 2],
    /// Whether the page was ended early by a long position (more candidates remain).
    pub(super) cut: bool,
}

impl<'r, I: Iterator<Item = Candidate>> FolderCandidates<'r, I> {
    pub(super) fn new(
        inner: I,
        root: &'r VaultRoot,
        acl: &'r Acl,
        scopes: &'r Scopes,
        max_position_len: usize,
    ) -> Self {
        FolderCandidates {
            inner,
            root,
            acl,
            scopes,
            max_position_len,
            pending: None,
            handed_out: 0,
            recent: [None, None],
            cut: false,
        }
    }

    fn next_readable(&mut self) -> Option<Candidate> {
        self.inner.find(|candidate| match candidate {
            Candidate::Path(path) => self.acl.can_read_at(self.root, path, self.scopes),
            Candidate::Refused { .. } => true,
        })
    }

    /// The position length of the first candidate, fetched ahead.
    pub(super) fn first_position_len(&mut self) -> Option<usize> {
        if self.pending.is_none() {
            self.pending = self.next_readable();
        }
        self.pending.as_ref().map(|c| position_of(c).len())
    }

    /// The position to resume after, once the page consumed `consumed` candidates.
    pub(super) fn position_after(&mut self, consumed: usize) -> Option<String> {
        if consumed == 0 {
            return None;
        }
        let [before_last, last] = &mut self.recent;
        if consumed == self.handed_out {
            last.take()
        } else {
            before_last.take()
        }
    }
}

/// Where a walk resumes after `candidate`: after its path, or, for a folder the walk could
/// not list, after everything below it (`a/b0` is the first string past every `a/b/…`, since
/// `0` follows `/`).
fn position_of(candidate: &Candidate) -> String {
    match candidate {
        Candidate::Path(path) => path.as_str().to_owned(),
        Candidate::Refused { path, .. } => format!("{path}0"),
    }
}

impl<I: Iterator<Item = Candidate>> Iterator for FolderCandidates<'_, I> {
    type Item = Candidate;

    fn next(&mut self) -> Option<Candidate> {
        let candidate = match self.pending.take() {
            Some(candidate) => candidate,
            None => self.next_readable()?,
        };
        let position = position_of(&candidate);
        if self.handed_out > 0 && position.len() > self.max_position_len {
            self.cut = true;
            return None;
        }
        self.handed_out += 1;
        self.recent.swap(0, 1);
        self.recent[1] = Some(position);
        Some(candidate)
    }
}

impl<I> fmt::Debug for FolderCandidates<'_, I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FolderCandidates")
            .field("handed_out", &self.handed_out)
            .field("cut", &self.cut)
            .finish_non_exhaustive()
    }
}
