//! The bookmark tools: `list_bookmarks`, `add_bookmark`, `remove_bookmark` (spec/formats.md
//! `formats.bookmarks.*`; spec/drift.md `drift.bind.remove-bookmark`; spec/tools.md
//! `tools.compose.remove-bookmark`).
//!
//! Bookmarks are the core Bookmarks plugin's `.obsidian/bookmarks.json`: `items`, each a
//! file, folder, URL, search, … bookmark or a `group` with `items` of its own. Listing leaves
//! out what the caller may not read; adding one is free; removing one always asks, bound to
//! the file's content.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tc_gate::ConfirmationTargets;
use tc_tools::{
    Annotations, Gating, HandlerFailure, KeysetPaging, Precheck, Summary, TargetState, Tool,
    ToolCx, ToolError, ToolSpec,
};
use tc_vault::acl::AclOp;
use tc_vault::path::VaultPath;

use crate::settings::{self, Json};

/// The file, relative to the vault root.
pub const FILE: &str = ".obsidian/bookmarks.json";

/// The schemes a URL bookmark may have: a click on a bookmark opens it, so `javascript:`,
/// `file:` and an app's own scheme an agent could plant are refused.
const URL_SCHEMES: &[&str] = &["http", "https", "mailto", "obsidian"];

/// What a bookmark points at: a vault path or a URL.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Path(String),
    Url(String),
}

impl Target {
    fn of(path: Option<&str>, url: Option<&str>) -> Result<Target, ToolError> {
        match (path, url) {
            (Some(path), None) => {
                let parsed = VaultPath::parse(path).map_err(|e| ToolError::from(&e))?;
                Ok(Target::Path(parsed.as_str().to_owned()))
            }
            // r[impl formats.bookmarks.url-schemes]
            (None, Some(url)) => {
                let scheme = url.split_once(':').map(|(s, _)| s).unwrap_or("");
                if !URL_SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()) {
                    return Err(ToolError::validation(
                        "/url",
                        format!(
                            "is not a URL a bookmark may open (schemes: {})",
                            URL_SCHEMES.join(", ")
                        ),
                    ));
                }
                Ok(Target::Url(url.to_owned()))
            }
            _ => Err(ToolError::validation(
                "",
                "give exactly one of `path` and `url`",
            )),
        }
    }

    fn shown(&self) -> &str {
        match self {
            Target::Path(p) | Target::Url(p) => p,
        }
    }

    /// Whether the bookmark `item` points here.
    fn matches(&self, item: &Json) -> bool {
        let kind = item.get("type").and_then(Json::as_str);
        match self {
            Target::Path(p) => {
                matches!(kind, Some("file" | "folder"))
                    && item.get("path").and_then(Json::as_str) == Some(p)
            }
            Target::Url(u) => {
                kind == Some("url") && item.get("url").and_then(Json::as_str) == Some(u)
            }
        }
    }
}

fn items_mut(json: &mut Json) -> Option<&mut Vec<Json>> {
    match json.get_mut("items") {
        Some(Json::Array(items)) => Some(items),
        _ => None,
    }
}

// ------------------------------------------------------------------ list_bookmarks

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListBookmarksArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub cursor: Option<String>,
    /// Page size cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1024))]
    pub max_bytes: Option<u64>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ListBookmarksOutput {
    /// Each bookmark's fields, with `group` (the titles of its groups, joined by `/`).
    pub bookmarks: Vec<Value>,
    /// Every group, on the first page.
    pub groups: Vec<String>,
    pub next_cursor: Option<String>,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ListBookmarks;

// r[impl formats.bookmarks.list]
/// The bookmarks of `items` the caller may read, flattened, each with its group's titles.
fn flatten(cx: &ToolCx<'_>, items: &[Json], group: &str, out: &mut ListBookmarksOutput) {
    for item in items {
        let kind = item.get("type").and_then(Json::as_str).unwrap_or("");
        if kind == "group" {
            let title = item.get("title").and_then(Json::as_str).unwrap_or("");
            let path = under(group, title);
            out.groups.push(path.clone());
            if let Some(Json::Array(inner)) = item.get("items") {
                flatten(cx, inner, &path, out);
            }
            continue;
        }
        // A bookmark of a path is shown only when the caller may read that path.
        if let Some(path) = item.get("path").and_then(Json::as_str)
            && !VaultPath::parse(path).is_ok_and(|p| cx.may_read(&p))
        {
            continue;
        }
        let mut fields: Map<String, Value> = match item.to_value() {
            Value::Object(map) => map,
            _ => continue,
        };
        if !group.is_empty() {
            fields.insert("group".into(), Value::from(group));
        }
        out.bookmarks.push(Value::Object(fields));
    }
}

impl Tool for ListBookmarks {
    type Args = ListBookmarksArgs;
    type Output = ListBookmarksOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "list_bookmarks",
            description: "List the bookmarks (notes, folders, URLs, searches) with their groups, in pages.",
            annotations: Annotations::READS,
            scopes: &["read:bookmarks"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, _cx: &ToolCx<'_>, _args: &ListBookmarksArgs) -> Result<Precheck, ToolError> {
        Ok(Precheck::free())
    }

    // r[impl formats.bookmarks.list-pages]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &ListBookmarksArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<ListBookmarksOutput, HandlerFailure> {
        let file = settings::read(cx, FILE)?;
        let mut all = ListBookmarksOutput {
            bookmarks: Vec::new(),
            groups: Vec::new(),
            next_cursor: None,
        };
        if let Some(Json::Array(items)) = file.json.get("items") {
            flatten(cx, items, "", &mut all);
        }
        // A cursor resumes after a bookmark's place in the file it was issued for: bound to
        // that file's hash, so a file changed between pages refuses the cursor rather than
        // skip or repeat a bookmark.
        let paging = KeysetPaging::open(
            cx,
            "list_bookmarks",
            &serde_json::json!({"vault": cx.vault().id(), "file": file.hash}),
            args.cursor.as_deref(),
            args.max_bytes,
        )?;
        let start = match paging.after.as_deref() {
            None => 0,
            Some(key) => key
                .parse::<usize>()
                .map_err(|_| ToolError::internal("reading the cursor's place"))?
                .saturating_add(1),
        };
        let entries = all
            .bookmarks
            .into_iter()
            .enumerate()
            .skip(start)
            .map(|(place, bookmark)| (format!("{place:08}"), bookmark));
        let (bookmarks, last) = paging.fill(entries)?;
        Ok(ListBookmarksOutput {
            bookmarks,
            groups: if start == 0 { all.groups } else { Vec::new() },
            next_cursor: last.map(|key| paging.next(cx, &key)).transpose()?,
        })
    }
}

// -------------------------------------------------------------------- add_bookmark

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddBookmarkArgs {
    /// A vault file or folder (or give `url`).
    pub path: Option<String>,
    pub url: Option<String>,
    pub title: Option<String>,
    /// A top-level group's title; made when missing.
    pub group: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct BookmarkAdded {
    /// False when the bookmark was there already.
    pub added: bool,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct AddBookmark;

// r[impl formats.bookmarks.add]
/// `file` with a bookmark of `target` added (in `group`), or `None` when it is there.
fn with_bookmark(
    mut json: Json,
    target: &Target,
    kind: &str,
    args: &AddBookmarkArgs,
    now_ms: i64,
) -> Option<Json> {
    if items_mut(&mut json).is_none() {
        json.set("items", Json::Array(Vec::new()));
    }
    let top = items_mut(&mut json)?;
    let list: &mut Vec<Json> = match &args.group {
        None => top,
        Some(title) => {
            let at = top.iter().position(|item| {
                item.get("type").and_then(Json::as_str) == Some("group")
                    && item.get("title").and_then(Json::as_str) == Some(title)
            });
            let at = at.unwrap_or_else(|| {
                top.push(Json::Object(vec![
                    ("type".into(), Json::String("group".into())),
                    ("ctime".into(), Json::Number(now_ms.into())),
                    ("items".into(), Json::Array(Vec::new())),
                    ("title".into(), Json::String(title.clone())),
                ]));
                top.len() - 1
            });
            let group = &mut top[at];
            if !matches!(group.get("items"), Some(Json::Array(_))) {
                group.set("items", Json::Array(Vec::new()));
            }
            items_mut(group)?
        }
    };
    if list.iter().any(|item| target.matches(item)) {
        return None;
    }
    let mut item = vec![
        ("type".into(), Json::String(kind.into())),
        ("ctime".into(), Json::Number(now_ms.into())),
    ];
    match target {
        Target::Path(p) => item.push(("path".into(), Json::String(p.clone()))),
        Target::Url(u) => item.push(("url".into(), Json::String(u.clone()))),
    }
    if let Some(title) = &args.title {
        item.push(("title".into(), Json::String(title.clone())));
    }
    list.push(Json::Object(item));
    Some(json)
}

impl Tool for AddBookmark {
    type Args = AddBookmarkArgs;
    type Output = BookmarkAdded;
    type Plan = String;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "add_bookmark",
            description: "Bookmark a note or folder (`path`) or a `url`, optionally in a group. Never asks.",
            annotations: Annotations::writes(false, true),
            scopes: &["write:bookmarks"],
            changes_notes: true,
            gating: Gating::NEVER,
        }
    }

    fn check(&self, args: &AddBookmarkArgs) -> Result<(), ToolError> {
        Target::of(args.path.as_deref(), args.url.as_deref()).map(|_| ())
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &AddBookmarkArgs,
    ) -> Result<Precheck<String>, ToolError> {
        let target = Target::of(args.path.as_deref(), args.url.as_deref())?;
        let (kind, acl) = match &target {
            Target::Url(_) => ("url", Vec::new()),
            Target::Path(p) => {
                let path = VaultPath::parse(p).map_err(|e| ToolError::from(&e))?;
                cx.require_read(&path)?;
                let full = cx.vault().root().path().join(path.as_str());
                let kind = match std::fs::metadata(&full) {
                    Ok(meta) if meta.is_dir() => "folder",
                    Ok(_) => "file",
                    Err(_) => return Err(tc_tools::note_write::not_found(&path)),
                };
                (kind, vec![(AclOp::Read, path)])
            }
        };
        settings::preflight(cx, FILE)?;
        Ok(Precheck {
            needs_confirmation: false,
            acl,
            plan: Arc::new(kind.to_owned()),
        })
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &AddBookmarkArgs,
        precheck: &Precheck<String>,
        _state: &TargetState,
    ) -> Result<BookmarkAdded, HandlerFailure> {
        let target = Target::of(args.path.as_deref(), args.url.as_deref())?;
        let file = settings::read(cx, FILE)?;
        let Some(json) = with_bookmark(
            file.json.clone(),
            &target,
            &precheck.plan,
            args,
            cx.clock.now_ms(),
        ) else {
            return Ok(BookmarkAdded { added: false });
        };
        settings::write(cx, FILE, &file.text_of(&json), file.hash.as_deref())?;
        Ok(BookmarkAdded { added: true })
    }
}

// ----------------------------------------------------------------- remove_bookmark

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveBookmarkArgs {
    /// The bookmarked vault path (or give `url`).
    pub path: Option<String>,
    pub url: Option<String>,
}

/// The bookmarks a removal takes out (their groups and titles), and the file after.
#[derive(Debug, Default)]
pub struct Removal {
    pub removed: Vec<String>,
    pub text: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct BookmarkRemoved {
    pub removed: usize,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct RemoveBookmark;

/// `title` under the group path `group`.
fn under(group: &str, title: &str) -> String {
    if group.is_empty() {
        title.to_owned()
    } else {
        format!("{group}/{title}")
    }
}

/// Takes every bookmark of `target` out of `items` (groups included), naming each.
fn take_out(items: &mut Vec<Json>, target: &Target, group: &str, removed: &mut Vec<String>) {
    items.retain(|item| {
        if target.matches(item) {
            let title = item
                .get("title")
                .and_then(Json::as_str)
                .unwrap_or("untitled");
            removed.push(under(group, title));
            false
        } else {
            true
        }
    });
    for item in items.iter_mut() {
        if item.get("type").and_then(Json::as_str) == Some("group") {
            let title = item
                .get("title")
                .and_then(Json::as_str)
                .unwrap_or("")
                .to_owned();
            if let Some(inner) = items_mut(item) {
                take_out(inner, target, &under(group, &title), removed);
            }
        }
    }
}

fn plan_removal(
    cx: &ToolCx<'_>,
    args: &RemoveBookmarkArgs,
) -> Result<(Removal, Option<String>), ToolError> {
    let target = Target::of(args.path.as_deref(), args.url.as_deref())?;
    let file = settings::read(cx, FILE)?;
    let mut json = file.json.clone();
    let mut removed = Vec::new();
    if let Some(items) = items_mut(&mut json) {
        take_out(items, &target, "", &mut removed);
    }
    if removed.is_empty() {
        let pointer = if args.path.is_some() { "/path" } else { "/url" };
        return Err(ToolError::validation(
            pointer,
            format!("no bookmark of {}", target.shown()),
        ));
    }
    Ok((
        Removal {
            removed,
            text: file.text_of(&json),
        },
        file.hash,
    ))
}

// r[impl formats.bookmarks.remove]
impl Tool for RemoveBookmark {
    type Args = RemoveBookmarkArgs;
    type Output = BookmarkRemoved;
    type Plan = Removal;
    /// The hash of the bookmarks file the approval covers.
    type Seen = Option<String>;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "remove_bookmark",
            description: "Remove the bookmarks of a vault `path` or a `url` (in any group). Always asks the human.",
            annotations: Annotations::writes(true, true),
            scopes: &["delete:bookmarks"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::Custom),
        }
    }

    fn check(&self, args: &RemoveBookmarkArgs) -> Result<(), ToolError> {
        Target::of(args.path.as_deref(), args.url.as_deref()).map(|_| ())
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &RemoveBookmarkArgs,
    ) -> Result<Precheck<Removal>, ToolError> {
        let (removal, _) = plan_removal(cx, args)?;
        settings::preflight(cx, FILE)?;
        Ok(Precheck {
            needs_confirmation: true,
            acl: Vec::new(),
            plan: Arc::new(removal),
        })
    }

    // r[impl drift.bind.remove-bookmark]
    fn state(
        &self,
        cx: &ToolCx<'_>,
        _args: &RemoveBookmarkArgs,
        _precheck: &Precheck<Removal>,
    ) -> Result<TargetState<Option<String>>, ToolError> {
        settings::bound_state(cx, "remove_bookmark", FILE)
    }

    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &RemoveBookmarkArgs,
        precheck: &Precheck<Removal>,
        _state: &TargetState<Option<String>>,
    ) -> Summary {
        let target = args.path.as_deref().or(args.url.as_deref()).unwrap_or("");
        Summary::new(format!(
            "remove {} bookmark(s) of {target} from {FILE}",
            precheck.plan.removed.len()
        ))
        .target(FILE)
        .details_named(
            precheck
                .plan
                .removed
                .iter()
                .map(|r| format!("  removes {r}"))
                .collect(),
            |n| format!("  … and {n} more"),
        )
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &RemoveBookmarkArgs,
        _precheck: &Precheck<Removal>,
        state: &TargetState<Option<String>>,
    ) -> Result<BookmarkRemoved, HandlerFailure> {
        let (removal, hash) = plan_removal(cx, args)?;
        // The file must still be the one approved; the write checks it again under its lock.
        let approved = state.seen.as_ref().clone();
        if hash != approved {
            return Err(tc_vault::VaultError::ConcurrentModification {
                path: FILE.into(),
                expected: approved.unwrap_or_else(|| "absent".into()),
                actual: hash.unwrap_or_else(|| "absent".into()),
            }
            .into());
        }
        settings::write(cx, FILE, &removal.text, approved.as_deref())?;
        Ok(BookmarkRemoved {
            removed: removal.removed.len(),
        })
    }
}
