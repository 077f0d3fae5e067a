//! The link queries (spec/metadata.md `## Links`): the links of every kind the index parsed
//! ([`crate::parse::link_facts`]: wikilinks, embeds, Markdown links), each resolved against
//! the vault's current files as Obsidian resolves it (spec/vault.md `vault.links`,
//! `vault.links.markdown.resolve`). The caller judges the folder ACL on every path returned.

use std::collections::HashMap;
use std::sync::Arc;

use tc_tools::ToolError;
use tc_vault::links::LinkResolver;
use tc_vault::mdlinks::resolve_markdown;
use tc_vault::path::VaultPath;

use crate::VaultIndex;
use crate::parse::name_key;

fn failed(error: rusqlite::Error) -> ToolError {
    tracing::warn!("reading the links of the vault index: {error}");
    ToolError::internal("reading the links of the vault index")
}

/// One link as the index holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkRow {
    /// The note the link is in.
    pub src: VaultPath,
    /// The target as written (a Markdown link's path decoded).
    pub target: String,
    pub embed: bool,
    pub markdown: bool,
    /// 1-based.
    pub line: usize,
    /// The whole link as written.
    pub text: String,
}

impl LinkRow {
    /// The file the link leads to now, if any.
    pub fn resolve<'a>(&self, resolver: &'a LinkResolver) -> Option<&'a VaultPath> {
        if self.markdown {
            resolve_markdown(resolver, &self.src, &self.target)
        } else {
            resolver.resolve(&self.target)
        }
    }
}

/// The vault's links with the resolver they resolve against.
#[derive(Debug, Clone)]
pub struct Links {
    pub resolver: Arc<LinkResolver>,
    /// In (note, line) order.
    pub rows: Vec<LinkRow>,
}

impl Links {
    /// Where each row leads now, in row order. A vault repeats its link texts (a wikilink
    /// resolves the same from any note, a Markdown link the same from any note of one
    /// folder), so each distinct text is resolved once.
    pub fn resolved(&self) -> Vec<Option<&VaultPath>> {
        let mut memo: HashMap<(bool, &str, &str), Option<&VaultPath>> = HashMap::new();
        self.rows
            .iter()
            .map(|row| {
                let folder = if row.markdown {
                    row.src.as_str().rsplit_once('/').map_or("", |(f, _)| f)
                } else {
                    ""
                };
                *memo
                    .entry((row.markdown, folder, row.target.as_str()))
                    .or_insert_with(|| row.resolve(&self.resolver))
            })
            .collect()
    }
}

const COLUMNS: &str = "src, target, embed, markdown, line, raw";

fn row_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<(String, String, bool, bool, i64, String)> {
    Ok((
        row.get(0)?,
        row.get(1)?,
        row.get::<_, i64>(2)? != 0,
        row.get::<_, i64>(3)? != 0,
        row.get(4)?,
        row.get(5)?,
    ))
}

fn query(
    index: &VaultIndex,
    sql: &str,
    params: &[&dyn rusqlite::ToSql],
) -> Result<Vec<LinkRow>, ToolError> {
    let conn = index.conn();
    let mut stmt = conn.prepare_cached(sql).map_err(failed)?;
    let rows = stmt.query_map(params, row_of).map_err(failed)?;
    let mut out = Vec::new();
    // The rows of one note come together: its path is judged once.
    let mut last: Option<(String, Option<VaultPath>)> = None;
    for row in rows {
        let (src, target, embed, markdown, line, text) = row.map_err(failed)?;
        if last.as_ref().is_none_or(|(text, _)| *text != src) {
            let parsed = VaultPath::parse(&src).ok();
            last = Some((src, parsed));
        }
        // A row whose path no longer parses is no note of the vault.
        if let Some((_, Some(src))) = &last {
            out.push(LinkRow {
                src: src.clone(),
                target,
                embed,
                markdown,
                line: usize::try_from(line).unwrap_or(0),
                text,
            });
        }
    }
    out.sort_by(|a, b| a.src.cmp(&b.src).then(a.line.cmp(&b.line)));
    Ok(out)
}

// r[impl metadata.links.backlinks]
/// The links of other notes and of `path` itself that lead to `path`, in (note, line) order:
/// only links of `path`'s name key can (spec/index.md `index.links.name-key`), so the
/// index's name lookup finds them all.
pub fn backlinks(index: &VaultIndex, path: &VaultPath) -> Result<Links, ToolError> {
    let resolver = index.resolver();
    let key = name_key(path.as_str());
    let sql = format!(
        "SELECT {COLUMNS} FROM index_links INDEXED BY index_links_by_name
         WHERE vault = ?1 AND name_key = ?2"
    );
    let mut rows = query(index, &sql, &[&index.vault_id(), &key])?;
    rows.retain(|row| row.resolve(&resolver) == Some(path));
    Ok(Links { resolver, rows })
}

/// The links in the note `path`, in line order.
pub fn outgoing(index: &VaultIndex, path: &VaultPath) -> Result<Links, ToolError> {
    let resolver = index.resolver();
    let sql = format!(
        "SELECT {COLUMNS} FROM index_links INDEXED BY index_links_by_src
         WHERE vault = ?1 AND src = ?2"
    );
    let rows = query(index, &sql, &[&index.vault_id(), &path.as_str()])?;
    Ok(Links { resolver, rows })
}

/// Every link of the vault, in (note, line) order.
pub fn all_links(index: &VaultIndex) -> Result<Links, ToolError> {
    let resolver = index.resolver();
    let sql = format!(
        "SELECT {COLUMNS} FROM index_links INDEXED BY index_links_by_src
         WHERE vault = ?1 ORDER BY src"
    );
    let rows = query(index, &sql, &[&index.vault_id()])?;
    Ok(Links { resolver, rows })
}

/// Whether the index holds `path` as a note of the vault now.
pub fn is_indexed(index: &VaultIndex, path: &VaultPath) -> bool {
    index.resolver().contains(path)
}
