//! The link tools (spec/metadata.md `## Links`): `get_backlinks`, `get_outgoing_links`,
//! `find_orphans` and `find_unresolved_links`, answered from the vault's index
//! ([`tc_index::meta::links`]) for links of every kind (wikilinks, embeds, Markdown links),
//! each resolved against the vault's current files as Obsidian resolves it.
//!
//! The folder ACL is judged on every note a result names: a linking note the caller may not
//! read is left out (and so is its link when orphans are judged), a link target it may not
//! read is shown unresolved, and the counts follow. Each result pages with a signed cursor
//! bound to the caller, the tool and the arguments, under the page budget.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_gate::cursor::CursorError;
use tc_index::meta::links::{LinkRow, all_links, backlinks, outgoing};
use tc_tools::{
    Annotations, ErrorCode, Gating, HandlerFailure, KeysetPaging, Precheck, TargetState, Tool,
    ToolCx, ToolError, ToolSpec,
};
use tc_vault::acl::AclOp;
use tc_vault::path::{FolderPath, VaultPath};

/// The most entries one page holds (the byte budget may cut it shorter).
const PAGE_ITEMS: usize = 200;

fn cursor_error(error: CursorError) -> ToolError {
    ToolError::new(ErrorCode::InvalidInput, error.to_string())
        .detail("reason", serde_json::json!(error.reason()))
}

// r[impl metadata.links.paging]
/// One page of `items` for a call of `tool` with `args` (whose `cursor` says where it
/// resumes, by the position of the next entry): the entries that fit, and the cursor of the
/// next page when some are left.
fn page<T: Serialize>(
    cx: &ToolCx<'_>,
    tool: &'static str,
    args: &impl Serialize,
    (cursor, max_bytes): (Option<&str>, Option<u64>),
    items: Vec<T>,
) -> Result<(Vec<T>, Option<String>), ToolError> {
    let paging = KeysetPaging::open(cx, tool, args, cursor, max_bytes)?;
    let skip = match &paging.after {
        Some(position) => position
            .parse::<usize>()
            .map_err(|_| cursor_error(CursorError::Invalid))?,
        None => 0,
    };
    let total = items.len();
    let (out, _) = paging.fill(
        items
            .into_iter()
            .skip(skip)
            .take(PAGE_ITEMS)
            .enumerate()
            .map(|(i, item)| ((skip + i + 1).to_string(), item)),
    )?;
    let next = skip + out.len();
    let next_cursor = if next < total {
        Some(paging.next(cx, &next.to_string())?)
    } else {
        None
    };
    Ok((out, next_cursor))
}

fn folder_of(folder: Option<&str>) -> Result<FolderPath, ToolError> {
    match folder {
        Some(folder) => Ok(FolderPath::parse(folder)?),
        None => Ok(FolderPath::root()),
    }
}

// ---------------------------------------------------------------- get_backlinks

/// `get_backlinks` and `get_outgoing_links` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinksOfArgs {
    /// The note (or attachment).
    #[schemars(length(min = 1, max = 4096))]
    pub path: String,
    /// The previous page's next_cursor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 8192))]
    pub cursor: Option<String>,
    /// Page size cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1024))]
    pub max_bytes: Option<u64>,
}

/// One link to the note.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Backlink {
    /// The linking note.
    pub source: String,
    pub line: usize,
    /// The link as written.
    pub text: String,
    pub embed: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BacklinksOutput {
    pub path: String,
    pub backlinks: Vec<Backlink>,
    pub next_cursor: Option<String>,
}

#[derive(Debug)]
pub struct GetBacklinks;

const GET_BACKLINKS: &str = "get_backlinks";

fn read_path(path: &str) -> Result<Precheck, ToolError> {
    let path = VaultPath::parse(path)?;
    Ok(Precheck {
        acl: vec![(AclOp::Read, path)],
        ..Precheck::free()
    })
}

impl Tool for GetBacklinks {
    type Args = LinksOfArgs;
    type Output = BacklinksOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: GET_BACKLINKS,
            description: "Links to a note from other notes (wikilinks, embeds, Markdown links): linking note, line, link text. Pages via cursor.",
            annotations: Annotations::READS,
            scopes: &["read:notes"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, _cx: &ToolCx<'_>, args: &LinksOfArgs) -> Result<Precheck, ToolError> {
        read_path(&args.path)
    }

    // r[impl metadata.links.backlinks]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &LinksOfArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<BacklinksOutput, HandlerFailure> {
        let path = VaultPath::parse(&args.path)?;
        let index = tc_index::meta::fresh(cx)?;
        let found = backlinks(index, &path)?;
        // r[impl metadata.links.acl]
        let items: Vec<Backlink> = found
            .rows
            .into_iter()
            .filter(|row| row.src != path && cx.may_read(&row.src))
            .map(|row| Backlink {
                source: row.src.as_str().to_owned(),
                line: row.line,
                text: row.text,
                embed: row.embed,
            })
            .collect();
        let (backlinks, next_cursor) = page(
            cx,
            GET_BACKLINKS,
            args,
            (args.cursor.as_deref(), args.max_bytes),
            items,
        )?;
        Ok(BacklinksOutput {
            path: path.as_str().to_owned(),
            backlinks,
            next_cursor,
        })
    }
}

// ---------------------------------------------------------------- get_outgoing_links

/// One link of the note.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OutgoingLink {
    pub line: usize,
    /// The link as written.
    pub text: String,
    /// The target as written (a Markdown link's path decoded).
    pub target: String,
    /// The file it leads to; null when unresolved.
    pub resolved: Option<String>,
    pub embed: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OutgoingOutput {
    pub path: String,
    pub links: Vec<OutgoingLink>,
    pub next_cursor: Option<String>,
}

#[derive(Debug)]
pub struct GetOutgoingLinks;

const GET_OUTGOING_LINKS: &str = "get_outgoing_links";

impl Tool for GetOutgoingLinks {
    type Args = LinksOfArgs;
    type Output = OutgoingOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: GET_OUTGOING_LINKS,
            description: "The links in a note (wikilinks, embeds, Markdown links), each with the file it resolves to or null when unresolved.",
            annotations: Annotations::READS,
            scopes: &["read:notes"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, _cx: &ToolCx<'_>, args: &LinksOfArgs) -> Result<Precheck, ToolError> {
        read_path(&args.path)
    }

    // r[impl metadata.links.outgoing]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &LinksOfArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<OutgoingOutput, HandlerFailure> {
        let path = VaultPath::parse(&args.path)?;
        let index = tc_index::meta::fresh(cx)?;
        let found = outgoing(index, &path)?;
        let items: Vec<OutgoingLink> = found
            .rows
            .iter()
            .map(|row| OutgoingLink {
                line: row.line,
                resolved: row
                    .resolve(&found.resolver)
                    .filter(|file| cx.may_read(file))
                    .map(|file| file.as_str().to_owned()),
                text: row.text.clone(),
                target: row.target.clone(),
                embed: row.embed,
            })
            .collect();
        let (links, next_cursor) = page(
            cx,
            GET_OUTGOING_LINKS,
            args,
            (args.cursor.as_deref(), args.max_bytes),
            items,
        )?;
        Ok(OutgoingOutput {
            path: path.as_str().to_owned(),
            links,
            next_cursor,
        })
    }
}

// ---------------------------------------------------------------- find_orphans

/// `find_orphans` and `find_unresolved_links` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FolderArgs {
    /// Only notes under this folder; the whole vault when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub folder: Option<String>,
    /// The previous page's next_cursor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 8192))]
    pub cursor: Option<String>,
    /// Page size cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1024))]
    pub max_bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OrphansOutput {
    /// Notes no other note links to, in path order.
    pub notes: Vec<String>,
    pub next_cursor: Option<String>,
}

#[derive(Debug)]
pub struct FindOrphans;

const FIND_ORPHANS: &str = "find_orphans";

impl Tool for FindOrphans {
    type Args = FolderArgs;
    type Output = OrphansOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: FIND_ORPHANS,
            description: "Notes in folder that no other note links to (any kind of link). Pages via cursor.",
            annotations: Annotations::READS,
            scopes: &["read:notes"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, _cx: &ToolCx<'_>, args: &FolderArgs) -> Result<Precheck, ToolError> {
        folder_of(args.folder.as_deref())?;
        Ok(Precheck::free())
    }

    // r[impl metadata.links.orphans]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &FolderArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<OrphansOutput, HandlerFailure> {
        let folder = folder_of(args.folder.as_deref())?;
        let index = tc_index::meta::fresh(cx)?;
        let found = all_links(index)?;
        let mut readable: std::collections::HashMap<&VaultPath, bool> =
            std::collections::HashMap::new();
        let mut linked = std::collections::HashSet::new();
        for (row, file) in found.rows.iter().zip(found.resolved()) {
            let Some(file) = file else {
                continue;
            };
            if *file == row.src || linked.contains(file) {
                continue;
            }
            if *readable
                .entry(&row.src)
                .or_insert_with(|| cx.may_read(&row.src))
            {
                linked.insert(file.clone());
            }
        }
        let items: Vec<String> = found
            .resolver
            .files_with_extension("md")
            .filter(|note| note.is_within(&folder) && !linked.contains(*note))
            .filter(|note| cx.may_read(note))
            .map(|note| note.as_str().to_owned())
            .collect();
        let (notes, next_cursor) = page(
            cx,
            FIND_ORPHANS,
            args,
            (args.cursor.as_deref(), args.max_bytes),
            items,
        )?;
        Ok(OrphansOutput { notes, next_cursor })
    }
}

// ---------------------------------------------------------------- find_unresolved_links

/// A link that leads to no file.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct UnresolvedLink {
    /// The note holding it.
    pub source: String,
    pub line: usize,
    /// The link as written.
    pub text: String,
    /// The target as written (a Markdown link's path decoded).
    pub target: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct UnresolvedOutput {
    pub links: Vec<UnresolvedLink>,
    pub next_cursor: Option<String>,
}

#[derive(Debug)]
pub struct FindUnresolvedLinks;

const FIND_UNRESOLVED_LINKS: &str = "find_unresolved_links";

impl Tool for FindUnresolvedLinks {
    type Args = FolderArgs;
    type Output = UnresolvedOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: FIND_UNRESOLVED_LINKS,
            description: "Links in notes under folder that lead to no file: note, line, link text. Pages via cursor.",
            annotations: Annotations::READS,
            scopes: &["read:notes"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, _cx: &ToolCx<'_>, args: &FolderArgs) -> Result<Precheck, ToolError> {
        folder_of(args.folder.as_deref())?;
        Ok(Precheck::free())
    }

    // r[impl metadata.links.unresolved]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &FolderArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<UnresolvedOutput, HandlerFailure> {
        let folder = folder_of(args.folder.as_deref())?;
        let index = tc_index::meta::fresh(cx)?;
        let found = all_links(index)?;
        let mut readable: Option<(VaultPath, bool)> = None;
        let mut items = Vec::new();
        let dead: Vec<bool> = found.resolved().iter().map(Option::is_none).collect();
        for (row, dead) in found.rows.into_iter().zip(dead) {
            if !dead || !row.src.is_within(&folder) {
                continue;
            }
            // The rows come in note order: each note's ACL is judged once.
            let may = match &readable {
                Some((src, may)) if *src == row.src => *may,
                _ => {
                    let may = cx.may_read(&row.src);
                    readable = Some((row.src.clone(), may));
                    may
                }
            };
            if may {
                items.push(unresolved(row));
            }
        }
        let (links, next_cursor) = page(
            cx,
            FIND_UNRESOLVED_LINKS,
            args,
            (args.cursor.as_deref(), args.max_bytes),
            items,
        )?;
        Ok(UnresolvedOutput { links, next_cursor })
    }
}

fn unresolved(row: LinkRow) -> UnresolvedLink {
    UnresolvedLink {
        source: row.src.as_str().to_owned(),
        line: row.line,
        text: row.text,
        target: row.target,
    }
}
