//! Markdown links to files of the vault (spec/vault.md `vault.links.markdown*`): finding
//! them, resolving them as Obsidian does, and writing a new destination in the link's own
//! style.
//!
//! Syntax: `[text](dest)` and `![alt](dest)`, the destination bare (percent-encoded where it
//! must be: `my%20note.md`) or in angle brackets (`<my note.md>`), optionally followed by a
//! title (`"…"`, `'…'` or `(…)`), all on one line. A destination with a URI scheme
//! (`https:`, `mailto:`, `obsidian:`), one starting with `//`, and one holding only a
//! `#fragment` is not a link to a file. Links in fenced code blocks and inline code spans
//! are not links, as for wikilinks, and a `[…](…)` overlapping a wikilink is left to the
//! wikilink.
//!
//! Resolution of the decoded path (the fragment after `#` cut off), from the note `source`:
//! 1. a path starting with `/` is the vault path itself (`p`, then `p.md`);
//! 2. otherwise the path joined to `source`'s folder (`.` and `..` applied; a path leaving
//!    the vault resolves to nothing), `p` then `p.md`;
//! 3. otherwise, unless the path starts with `./` or `../` (explicitly relative), the
//!    wikilink rules ([`LinkResolver::resolve`]: exact path, then the shortest path of that
//!    name).
//!
//! So each of Obsidian's three link formats (shortest, relative, absolute) resolves to the
//! file Obsidian shows. A rewrite keeps the style the link was written in: absolute stays
//! absolute, relative stays relative to the linking note's (new) folder (a `./` kept),
//! shortest stays the shortest text that resolves (falling back to a relative path when the
//! linking note's folder holds another file of that text); `.md` is kept or left out as it
//! was, and the destination is percent-encoded as it was (angle brackets: raw; a bare one
//! that held a `%XX`: encoded like `encodeURI`; a bare one without: only what a bare
//! destination cannot hold, such as a space).

use std::ops::Range;

use crate::links::{Link, LinkResolver, closes_fence, find_links, opens_fence};
use crate::path::VaultPath;

/// One Markdown link to a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MdLink {
    /// The whole link, from `[` (or `![`) to `)`.
    pub range: Range<usize>,
    /// The path part of the destination as written (no angle brackets, no `#fragment`):
    /// what a rewrite replaces.
    pub path_range: Range<usize>,
    /// The path as written.
    pub raw: String,
    /// The path percent-decoded (and backslash escapes removed): what resolves.
    pub path: String,
    /// What follows `#`, without the `#`.
    pub fragment: Option<String>,
    /// The link's text (between the brackets).
    pub text: String,
    pub embed: bool,
    /// Written in angle brackets.
    pub angle: bool,
}

/// The kind of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkKind {
    Wiki,
    Markdown,
}

/// A link of either kind, as the index and the link tools see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteLink {
    pub kind: LinkKind,
    /// The whole link as written.
    pub range: Range<usize>,
    /// The target: a wikilink's as written, a Markdown link's decoded path.
    pub target: String,
    pub embed: bool,
    /// 1-based line of the link's start.
    pub line: usize,
}

// r[impl vault.links.markdown]
/// Finds every Markdown link to a file outside code, in order.
pub fn find_md_links(content: &str) -> Vec<MdLink> {
    let wikis = find_links(content);
    find_md_links_beside(content, &wikis)
}

pub(crate) fn find_md_links_beside(content: &str, wikis: &[Link]) -> Vec<MdLink> {
    let mut links = Vec::new();
    let mut fence: Option<(u8, usize)> = None;
    let mut line_start = 0;
    for line in content.split_inclusive('\n') {
        let text = line.trim_end_matches(['\n', '\r']);
        match fence {
            Some((ch, len)) => {
                if closes_fence(text, ch, len) {
                    fence = None;
                }
            }
            None => {
                if let Some(open) = opens_fence(text) {
                    fence = Some(open);
                } else if text.contains("](") {
                    scan_line(text, line_start, &mut links);
                }
            }
        }
        line_start += line.len();
    }
    links.retain(|md| {
        !wikis
            .iter()
            .any(|w| w.range.start < md.range.end && md.range.start < w.range.end)
    });
    links
}

/// Every link of both kinds outside code, in order, with its line.
pub fn find_note_links(content: &str) -> Vec<NoteLink> {
    let wikis = find_links(content);
    let mds = find_md_links_beside(content, &wikis);
    let mut all: Vec<NoteLink> = wikis
        .into_iter()
        .filter(|l| !l.target.trim().is_empty())
        .map(|l| NoteLink {
            kind: LinkKind::Wiki,
            range: l.range,
            target: l.target,
            embed: l.embed,
            line: 0,
        })
        .chain(mds.into_iter().map(|l| NoteLink {
            kind: LinkKind::Markdown,
            range: l.range,
            target: l.path,
            embed: l.embed,
            line: 0,
        }))
        .collect();
    all.sort_by_key(|l| l.range.start);
    let bytes = content.as_bytes();
    let (mut line, mut at) = (1, 0);
    for link in &mut all {
        line += bytes[at..link.range.start]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        at = link.range.start;
        link.line = line;
    }
    all
}

fn scan_line(line: &str, offset: usize, links: &mut Vec<MdLink>) {
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'`' => {
                let run = bytes[i..].iter().take_while(|&&b| b == b'`').count();
                i += run;
                if let Some(close) = find_backtick_run(bytes, i, run) {
                    i = close + run;
                }
            }
            b'[' => match parse_at(line, i) {
                Some(mut link) => {
                    i = link.range.end;
                    link.range = shift(&link.range, offset);
                    link.path_range = shift(&link.path_range, offset);
                    links.push(link);
                }
                None => i += 1,
            },
            _ => i += 1,
        }
    }
}

fn shift(range: &Range<usize>, by: usize) -> Range<usize> {
    range.start + by..range.end + by
}

fn find_backtick_run(bytes: &[u8], from: usize, run: usize) -> Option<usize> {
    let mut j = from;
    while j < bytes.len() {
        if bytes[j] == b'`' {
            let len = bytes[j..].iter().take_while(|&&b| b == b'`').count();
            if len == run {
                return Some(j);
            }
            j += len;
        } else {
            j += 1;
        }
    }
    None
}

/// The link whose `[` is at `open`, if the text there is one to a file.
fn parse_at(line: &str, open: usize) -> Option<MdLink> {
    let bytes = line.as_bytes();
    // The text: up to the matching `]`, nested brackets balanced, escapes skipped.
    let mut depth = 0usize;
    let mut j = open;
    let close = loop {
        match bytes.get(j)? {
            b'\\' => j += 1,
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    break j;
                }
            }
            b'`' => return None,
            _ => {}
        }
        j += 1;
    };
    if bytes.get(close + 1) != Some(&b'(') {
        return None;
    }
    let mut k = close + 2;
    while matches!(bytes.get(k), Some(b' ' | b'\t')) {
        k += 1;
    }
    let (dest_start, dest_end, angle) = if bytes.get(k) == Some(&b'<') {
        let start = k + 1;
        let end = start + line[start..].find(['>', '<'])?;
        if bytes[end] != b'>' {
            return None;
        }
        k = end + 1;
        (start, end, true)
    } else {
        let start = k;
        let mut parens = 0usize;
        while let Some(&b) = bytes.get(k) {
            match b {
                b'\\' => k += 1,
                b'(' => parens += 1,
                b')' if parens == 0 => break,
                b')' => parens -= 1,
                b' ' | b'\t' => break,
                _ if b < 0x20 => return None,
                _ => {}
            }
            k += 1;
        }
        (start, k.min(bytes.len()), false)
    };
    // An optional title, then the closing parenthesis.
    let mut m = dest_end + usize::from(angle);
    let had_space = matches!(bytes.get(m), Some(b' ' | b'\t'));
    while matches!(bytes.get(m), Some(b' ' | b'\t')) {
        m += 1;
    }
    if had_space && let Some(&q) = bytes.get(m).filter(|b| matches!(b, b'"' | b'\'' | b'(')) {
        let end_q = if q == b'(' { b')' } else { q };
        let rest = &line[m + 1..];
        m += 2 + rest.find(end_q as char)?;
        while matches!(bytes.get(m), Some(b' ' | b'\t')) {
            m += 1;
        }
    }
    if bytes.get(m) != Some(&b')') {
        return None;
    }
    let _ = k;
    let dest = &line[dest_start..dest_end];
    let (raw, fragment) = match dest.find('#') {
        Some(hash) => (&dest[..hash], Some(dest[hash + 1..].to_owned())),
        None => (dest, None),
    };
    if raw.is_empty() || is_external(raw) {
        return None;
    }
    let embed = open > 0 && bytes[open - 1] == b'!';
    let start = if embed { open - 1 } else { open };
    Some(MdLink {
        range: start..m + 1,
        path_range: dest_start..dest_start + raw.len(),
        raw: raw.to_owned(),
        path: decode(raw, angle),
        fragment,
        text: line[open + 1..close].to_owned(),
        embed,
        angle,
    })
}

/// A destination with a URI scheme or a network path is not a file of the vault.
fn is_external(raw: &str) -> bool {
    if raw.starts_with("//") {
        return true;
    }
    let Some(colon) = raw.find(':') else {
        return false;
    };
    let scheme = &raw[..colon];
    scheme.len() >= 2
        && scheme.as_bytes()[0].is_ascii_alphabetic()
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'))
}

/// Percent-decodes (a malformed escape stays as written) and drops backslash escapes of
/// punctuation; bytes that do not decode to UTF-8 are kept as written.
pub fn decode(raw: &str, angle: bool) -> String {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len()
                && hex(bytes[i + 1]).is_some()
                && hex(bytes[i + 2]).is_some() =>
            {
                out.push(hex(bytes[i + 1]).unwrap_or(0) * 16 + hex(bytes[i + 2]).unwrap_or(0));
                i += 3;
                continue;
            }
            b'\\' if !angle && bytes.get(i + 1).is_some_and(|b| b.is_ascii_punctuation()) => {
                out.push(bytes[i + 1]);
                i += 2;
                continue;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| raw.to_owned())
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// `path` joined to `source`'s folder, `.` and `..` applied; `None` when it leaves the
/// vault.
fn join_relative(source: &VaultPath, path: &str) -> Option<String> {
    let mut parts: Vec<&str> = source.as_str().split('/').collect();
    parts.pop();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

fn exact<'a>(resolver: &'a LinkResolver, path: &str) -> Option<&'a VaultPath> {
    resolver
        .exact(path)
        .or_else(|| resolver.exact(&format!("{path}.md")))
}

// r[impl vault.links.markdown.resolve]
/// The file a Markdown link's decoded `path` in the note `source` leads to, if any.
pub fn resolve_markdown<'a>(
    resolver: &'a LinkResolver,
    source: &VaultPath,
    path: &str,
) -> Option<&'a VaultPath> {
    if let Some(absolute) = path.strip_prefix('/') {
        return exact(resolver, absolute);
    }
    if let Some(found) = join_relative(source, path).and_then(|p| exact(resolver, &p)) {
        return Some(found);
    }
    if path.starts_with("./") || path.starts_with("../") {
        return None;
    }
    resolver.resolve(path)
}

/// How a Markdown link names its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Absolute,
    Relative { dot: bool },
    Shortest,
}

fn style_of(resolver: &LinkResolver, source: &VaultPath, path: &str) -> Style {
    if path.starts_with('/') {
        Style::Absolute
    } else if path.starts_with("./") {
        Style::Relative { dot: true }
    } else if path.starts_with("../")
        || join_relative(source, path).is_some_and(|p| exact(resolver, &p).is_some())
    {
        Style::Relative { dot: false }
    } else {
        Style::Shortest
    }
}

/// The path of `file` relative to the folder of `source`.
fn relative_path(source: &VaultPath, file: &str) -> String {
    let from: Vec<&str> = source.as_str().split('/').collect();
    let from = &from[..from.len() - 1];
    let to: Vec<&str> = file.split('/').collect();
    let common = from
        .iter()
        .zip(&to)
        .take_while(|(a, b)| a == b)
        .count()
        .min(to.len() - 1);
    let mut out: Vec<&str> = vec![".."; from.len() - common];
    out.extend(&to[common..]);
    out.join("/")
}

fn strip_md(text: &str) -> &str {
    if text.len() > 3
        && text.is_char_boundary(text.len() - 3)
        && text[text.len() - 3..].eq_ignore_ascii_case(".md")
    {
        &text[..text.len() - 3]
    } else {
        text
    }
}

pub(crate) fn has_md(text: &str) -> bool {
    strip_md(text).len() != text.len()
}

/// Where a rewritten Markdown link will be read, and the file it must lead to.
#[derive(Debug, Clone, Copy)]
pub struct MdTarget<'a> {
    /// The linking note's path when the new text is read (after a move of that note).
    pub source_after: &'a VaultPath,
    /// The vault's files when the new text is read.
    pub after: &'a LinkResolver,
    pub file: &'a VaultPath,
}

// r[impl vault.links.markdown.style]
/// The new path text of `link` (found in a note at `source`, resolved with `before`) so that
/// it leads to `target.file`, in the link's own style and encoding.
pub fn md_path_for(
    link: &MdLink,
    source: &VaultPath,
    before: &LinkResolver,
    target: &MdTarget<'_>,
) -> String {
    let keep_md = has_md(&link.path);
    let file = target.file.as_str();
    let spell = |path: &str| -> String {
        if target.file.is_note() && !keep_md {
            strip_md(path).to_owned()
        } else {
            path.to_owned()
        }
    };
    let relative = |dot: bool| {
        let rel = spell(&relative_path(target.source_after, file));
        if dot && !rel.starts_with("../") {
            format!("./{rel}")
        } else {
            rel
        }
    };
    let text = match style_of(before, source, &link.path) {
        Style::Absolute => format!("/{}", spell(file)),
        Style::Relative { dot } => relative(dot),
        Style::Shortest => {
            let short = target.after.link_text_for(target.file);
            let short = if keep_md && target.file.is_note() && !has_md(&short) {
                format!("{short}.md")
            } else {
                short
            };
            if resolve_markdown(target.after, target.source_after, &short) == Some(target.file) {
                short
            } else {
                relative(false)
            }
        }
    };
    encode_like(link, &text)
}

/// `text` encoded as the destination of `link` was: raw in angle brackets (but `<` and
/// `>`); like `encodeURI` when the link held a `%XX` escape; else only what a bare
/// destination cannot hold.
pub fn encode_like(link: &MdLink, text: &str) -> String {
    let encoded = !link.angle && has_escape(&link.raw);
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        let must = match ch {
            '<' | '>' => true,
            _ if link.angle => false,
            ' ' | '(' | ')' | '%' | '\\' => true,
            c if c.is_control() => true,
            c if encoded => !(c.is_ascii_alphanumeric() || "-_.!~*'/;,?:@&=+$#".contains(c)),
            _ => false,
        };
        if must {
            let mut buf = [0u8; 4];
            for b in ch.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(ch);
        }
    }
    out
}

fn has_escape(raw: &str) -> bool {
    let b = raw.as_bytes();
    (0..b.len()).any(|i| {
        b[i] == b'%' && b.len() > i + 2 && hex(b[i + 1]).is_some() && hex(b[i + 2]).is_some()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> VaultPath {
        VaultPath::parse(s).unwrap()
    }

    // r[verify vault.links.markdown]
    #[test]
    fn finds_markdown_links_to_files_only() {
        let note = "[a](x/Note.md) ![img](pic%20one.png) [b](<my note.md#Head> \"t\") \
                    [web](https://x.org/a.md) [mail](mailto:a@b) [top](#h) [e]() \
                    `[c](code.md)` [[w|[d](in.md)]] [nest [x]](n.md) \\[no](esc.md)";
        let found: Vec<(String, Option<String>, bool, bool)> = find_md_links(note)
            .into_iter()
            .map(|l| (l.path, l.fragment, l.embed, l.angle))
            .collect();
        assert_eq!(
            found,
            vec![
                ("x/Note.md".into(), None, false, false),
                ("pic one.png".into(), None, true, false),
                ("my note.md".into(), Some("Head".into()), false, true),
                ("n.md".into(), None, false, false),
            ]
        );
        let fenced = "```\n[a](b.md)\n```\n[c](d.md)\n";
        let links = find_note_links(fenced);
        assert_eq!(links.len(), 1);
        assert_eq!((links[0].target.as_str(), links[0].line), ("d.md", 4));
    }

    // r[verify vault.links.markdown.resolve]
    #[test]
    fn resolution_absolute_relative_then_by_name() {
        let r = LinkResolver::new(
            [
                "a/b/Note.md",
                "a/Note.md",
                "Note.md",
                "a/other.md",
                "z/deep/unique.md",
            ]
            .map(p),
        );
        let src = p("a/b/src.md");
        let res = |path: &str| resolve_markdown(&r, &src, path).map(|f| f.as_str().to_owned());
        assert_eq!(
            res("Note.md").as_deref(),
            Some("a/b/Note.md"),
            "folder first"
        );
        assert_eq!(res("../Note.md").as_deref(), Some("a/Note.md"));
        assert_eq!(
            res("../other").as_deref(),
            Some("a/other.md"),
            ".md optional"
        );
        assert_eq!(res("/Note.md").as_deref(), Some("Note.md"));
        assert_eq!(
            res("unique.md").as_deref(),
            Some("z/deep/unique.md"),
            "by name"
        );
        assert_eq!(res("./unique.md"), None, "explicitly relative: no fallback");
        assert_eq!(res("../../../x.md"), None, "leaves the vault");
        assert_eq!(res("/unique.md"), None, "absolute is exact");
    }

    // r[verify vault.links.markdown.style]
    #[test]
    fn new_paths_keep_the_link_style_and_encoding() {
        let before = LinkResolver::new(["a/My Note.md", "a/src.md", "b/src2.md"].map(p));
        let mut after = before.clone();
        after.remove(&p("a/My Note.md"));
        after.insert(p("c/d/My Note.md"));
        let target = |src: &VaultPath| (src.clone(), p("c/d/My Note.md"));
        let path_for = |note: &str, src: &str| {
            let src = p(src);
            let (source_after, file) = target(&src);
            let link = &find_md_links(note)[0];
            md_path_for(
                link,
                &src,
                &before,
                &MdTarget {
                    source_after: &source_after,
                    after: &after,
                    file: &file,
                },
            )
        };
        assert_eq!(
            path_for("[x](My%20Note.md)", "a/src.md"),
            "../c/d/My%20Note.md"
        );
        assert_eq!(path_for("[x](<./My Note>)", "a/src.md"), "../c/d/My Note");
        assert_eq!(
            path_for("[x](/a/My%20Note.md)", "b/src2.md"),
            "/c/d/My%20Note.md"
        );
        assert_eq!(path_for("[x](My%20Note.md)", "b/src2.md"), "My%20Note.md");
        assert_eq!(path_for("[x](<My Note>)", "b/src2.md"), "My Note");
        let link = &find_md_links("[x](caf%C3%A9.md)")[0];
        assert_eq!(link.path, "café.md");
        assert_eq!(encode_like(link, "a b/café.md"), "a%20b/caf%C3%A9.md");
        let raw = &find_md_links("[x](café.md)")[0];
        assert_eq!(
            encode_like(raw, "a b/café (1).md"),
            "a%20b/café%20%281%29.md"
        );
    }
}
