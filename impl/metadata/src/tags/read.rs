//! `list_tags`, `get_note_tags`, `find_notes_by_tag`: answered from the index, never from a
//! walk of the vault (spec/metadata.md `metadata.list-tags`, `metadata.get-note-tags`,
//! `metadata.find-notes-by-tag`, `metadata.tags.acl`).

use std::collections::BTreeMap;
use std::ops::Bound;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_index::meta::{self, tags as q};
use tc_tools::note_write::{not_found, note};
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, TargetState, Tool, ToolCx, ToolError, ToolSpec,
};

use super::edit::within;
use super::{Paging, Readable, by_note, folder_of, tag_argument};

const LIST_TAGS: &str = "list_tags";
const FIND_NOTES_BY_TAG: &str = "find_notes_by_tag";

const fn reads(name: &'static str, description: &'static str) -> ToolSpec {
    ToolSpec {
        name,
        description,
        annotations: Annotations::READS,
        scopes: &["read:notes"],
        changes_notes: false,
        gating: Gating::NEVER,
    }
}

// ---------------------------------------------------------------- list_tags

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTagsArgs {
    /// Count only notes under this folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub folder: Option<String>,
    /// Only tags starting with this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub prefix: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub cursor: Option<String>,
    /// Page size cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1024))]
    pub max_bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TagCount {
    pub tag: String,
    pub notes: usize,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ListTagsOutput {
    pub vault: String,
    pub tags: Vec<TagCount>,
    pub next_cursor: Option<String>,
}

#[derive(Debug)]
pub struct ListTags;

// r[impl metadata.list-tags]
/// Each tag and each ancestor of a nested tag, with the number of notes carrying it.
pub fn count_tags<'a>(notes: impl Iterator<Item = &'a [String]>) -> BTreeMap<String, usize> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut entries: Vec<&str> = Vec::new();
    for tags in notes {
        entries.clear();
        for tag in tags {
            entries.push(tag);
            entries.extend(tag.match_indices('/').map(|(at, _)| &tag[..at]));
        }
        entries.sort_unstable();
        entries.dedup();
        for entry in &entries {
            match counts.get_mut(*entry) {
                Some(n) => *n += 1,
                None => {
                    counts.insert((*entry).to_owned(), 1);
                }
            }
        }
    }
    counts
}

impl Tool for ListTags {
    type Args = ListTagsArgs;
    type Output = ListTagsOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        reads(
            LIST_TAGS,
            "List tags with how many notes carry each (frontmatter and inline; a/b also counts under a). Pages via cursor.",
        )
    }

    fn precheck(&self, _cx: &ToolCx<'_>, _args: &ListTagsArgs) -> Result<Precheck, ToolError> {
        Ok(Precheck::free())
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &ListTagsArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<ListTagsOutput, HandlerFailure> {
        let folder = folder_of(args.folder.as_deref())?;
        let prefix = args
            .prefix
            .as_deref()
            // Not a tag: a trailing `/` is kept (`project/` lists only the nested tags).
            .map(|p| p.trim().trim_start_matches('#').to_lowercase())
            .unwrap_or_default();
        let paging = Paging::open(cx, LIST_TAGS, args, args.cursor.as_deref(), args.max_bytes)?;
        let index = meta::fresh(cx)?;
        let readable = Readable::new(cx, &folder);
        let (tags, last) = if readable.shows_all() {
            // r[impl index.tag-counts]
            // The whole vault: the index's counts, read from where the page starts. An entry
            // costs at least 16 bytes of the budget, so this many rows outlast any page.
            let limit = paging.budget() / 16 + 2;
            let (from, exclusive) = match &paging.after {
                Some(after) if *after >= prefix => (after.as_str(), true),
                _ => (prefix.as_str(), false),
            };
            let rows = q::counts_from(index, from, exclusive, limit)?;
            let full = rows.len() == limit;
            let (tags, last) = paging.fill(
                rows.into_iter()
                    .take_while(|(tag, _)| tag.starts_with(&prefix))
                    .map(|(tag, notes)| {
                        let entry = TagCount {
                            tag: tag.clone(),
                            notes,
                        };
                        (tag, entry)
                    }),
            )?;
            match (&last, full, tags.last()) {
                (None, true, Some(end)) if tags.len() == limit => {
                    let end = end.tag.clone();
                    (tags, Some(end))
                }
                _ => (tags, last),
            }
        } else {
            let snapshot = q::snapshot(index)?;
            let counts = count_tags(
                snapshot
                    .notes
                    .iter()
                    .filter(|(path, _)| readable.admits(path))
                    .map(|(_, tags)| tags.as_slice()),
            );
            let from = match &paging.after {
                Some(after) => Bound::Excluded(after.clone()),
                None => Bound::Included(prefix.clone()),
            };
            let entries = counts
                .range((from, Bound::Unbounded))
                .take_while(|(tag, _)| tag.starts_with(&prefix))
                .map(|(tag, notes)| {
                    let entry = TagCount {
                        tag: tag.clone(),
                        notes: *notes,
                    };
                    (tag.clone(), entry)
                });
            paging.fill(entries)?
        };
        let next_cursor = last.map(|last| paging.next(cx, &last)).transpose()?;
        Ok(ListTagsOutput {
            vault: cx.vault().id().to_owned(),
            tags,
            next_cursor,
        })
    }
}

// ---------------------------------------------------------------- get_note_tags

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetNoteTagsArgs {
    #[schemars(length(min = 1, max = 4096))]
    pub path: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GetNoteTagsOutput {
    pub path: String,
    pub tags: Vec<String>,
}

#[derive(Debug)]
pub struct GetNoteTags;

impl Tool for GetNoteTags {
    type Args = GetNoteTagsArgs;
    type Output = GetNoteTagsOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        reads(
            "get_note_tags",
            "A note's tags (frontmatter and inline, lowercase).",
        )
    }

    fn precheck(&self, cx: &ToolCx<'_>, args: &GetNoteTagsArgs) -> Result<Precheck, ToolError> {
        let path = note(&args.path)?;
        cx.require_read(&path)?;
        Ok(Precheck::free())
    }

    // r[impl metadata.get-note-tags]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &GetNoteTagsArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<GetNoteTagsOutput, HandlerFailure> {
        let path = note(&args.path)?;
        let index = meta::fresh(cx)?;
        if !q::is_indexed_note(index, path.as_str())? {
            return Err(not_found(&path).into());
        }
        Ok(GetNoteTagsOutput {
            tags: q::tags_of(index, path.as_str())?,
            path: path.as_str().to_owned(),
        })
    }
}

// ---------------------------------------------------------------- find_notes_by_tag

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindNotesByTagArgs {
    /// `project` also matches `project/x`.
    #[schemars(length(min = 1, max = 1024))]
    pub tag: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub folder: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub cursor: Option<String>,
    /// Page size cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1024))]
    pub max_bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TaggedNote {
    pub path: String,
    /// The note's tags that matched.
    pub tags: Vec<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FindNotesByTagOutput {
    pub vault: String,
    pub notes: Vec<TaggedNote>,
    pub next_cursor: Option<String>,
}

#[derive(Debug)]
pub struct FindNotesByTag;

impl Tool for FindNotesByTag {
    type Args = FindNotesByTagArgs;
    type Output = FindNotesByTagOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        reads(
            FIND_NOTES_BY_TAG,
            "Notes carrying a tag or one nested under it, in path order. Pages via cursor.",
        )
    }

    fn check(&self, args: &FindNotesByTagArgs) -> Result<(), ToolError> {
        tag_argument(&args.tag, "/tag").map(|_| ())
    }

    fn precheck(
        &self,
        _cx: &ToolCx<'_>,
        _args: &FindNotesByTagArgs,
    ) -> Result<Precheck, ToolError> {
        Ok(Precheck::free())
    }

    // r[impl metadata.find-notes-by-tag]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &FindNotesByTagArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<FindNotesByTagOutput, HandlerFailure> {
        let (_, tag) = tag_argument(&args.tag, "/tag")?;
        let folder = folder_of(args.folder.as_deref())?;
        let paging = Paging::open(
            cx,
            FIND_NOTES_BY_TAG,
            args,
            args.cursor.as_deref(),
            args.max_bytes,
        )?;
        let index = meta::fresh(cx)?;
        let start = paging.after.clone();
        let pairs: Vec<(String, String)> = q::tagged(index, &tag)?
            .into_iter()
            .filter(|(path, t)| start.as_ref().is_none_or(|after| path > after) && within(t, &tag))
            .collect();
        let readable = Readable::new(cx, &folder);
        let entries = by_note(pairs)
            .into_iter()
            .filter(|(path, _)| readable.admits(path))
            .map(|(path, tags)| (path.clone(), TaggedNote { path, tags }));
        let (notes, last) = paging.fill(entries)?;
        let next_cursor = last.map(|last| paging.next(cx, &last)).transpose()?;
        Ok(FindNotesByTagOutput {
            vault: cx.vault().id().to_owned(),
            notes,
            next_cursor,
        })
    }
}
