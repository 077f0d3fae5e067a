//! A note's parts as Obsidian addresses them, and lossless edits at one of them (spec/vault.md
//! `vault.sections.*`): ATX headings outside code fences and the frontmatter, heading paths
//! `Parent::Child`, block ids `^id` at a line's end, and the frontmatter block.
//!
//! Everything works on the note's raw text: a byte-order mark, `\r\n` line ends and every byte
//! outside the edited span stay as they were. Text inserted takes the note's own line ends.

use crate::links::{closes_fence, opens_fence};

/// The UTF-8 byte-order mark, as text.
const BOM: &str = "\u{feff}";

/// One line of a note: where it starts, where its text ends and where the next line starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Line {
    start: usize,
    /// The end of the line's text (before `\r\n` or `\n`).
    text_end: usize,
    /// The start of the next line.
    end: usize,
}

/// A heading of a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    pub level: u8,
    pub text: String,
    /// 1-based.
    pub line: usize,
    /// The texts of the headings it sits under, outermost first.
    pub parents: Vec<String>,
    /// Byte offsets: the heading line's start, the start of the line after it, and the end
    /// of its section (the next heading of the same or a higher level, or the note's end).
    pub start: usize,
    pub body_start: usize,
    pub section_end: usize,
}

/// A block id (`^id` at a line's end) and the block it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub id: String,
    /// 1-based line of the id.
    pub line: usize,
    /// Byte offsets of the block: a list item's line, or a paragraph's lines.
    pub start: usize,
    pub end: usize,
}

/// Where the frontmatter block sits: its opening line, its YAML, its closing line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrontmatterBlock {
    /// The start of the opening `---` line (after a byte-order mark).
    pub start: usize,
    /// The YAML between the delimiter lines.
    pub yaml_start: usize,
    pub yaml_end: usize,
    /// The start of the line after the closing delimiter.
    pub end: usize,
}

/// A note's parts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Outline {
    pub headings: Vec<Heading>,
    pub blocks: Vec<Block>,
    pub frontmatter: Option<FrontmatterBlock>,
    /// Whether the note's lines end in `\r\n` (the most of them).
    pub crlf: bool,
}

/// What an edit is anchored at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor<'a> {
    /// A heading's text, or a path of heading texts `Parent::Child`.
    Heading(&'a str),
    /// A block id, without `^`.
    Block(&'a str),
    Frontmatter,
}

/// A heading or block an anchor could mean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub text: String,
    pub line: usize,
    /// The heading path it sits under (`A::B`), empty at the top.
    pub parent_path: String,
}

/// Why an anchor names no single part of the note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnchorError {
    /// Nothing matches; `candidates` are the note's headings or block ids (at most 20), so
    /// the caller can correct it.
    NotFound { candidates: Vec<Candidate> },
    /// Several parts match.
    Ambiguous { candidates: Vec<Candidate> },
}

/// How an edit changes the anchored part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchOp {
    /// After the part's last non-blank line.
    Append,
    /// Right under a heading's line, before a block, at the top of the frontmatter.
    Prepend,
    /// The part's content (a heading's body, a block, the frontmatter's YAML).
    Replace,
}

/// A note after an edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patched {
    pub text: String,
    /// Lines of the old text that the edit removed or rewrote.
    pub lines_removed: usize,
    pub bytes_removed: usize,
    /// The removed text (empty for an append or a prepend).
    pub removed: String,
    /// The span of the old text the edit replaced (a point for an insertion).
    pub span: (usize, usize),
}

/// The most candidates an anchor error lists.
const MAX_CANDIDATES: usize = 20;

fn lines(text: &str) -> Vec<Line> {
    let mut out = Vec::new();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let end = start + line.len();
        let body = line.trim_end_matches('\n').trim_end_matches('\r');
        out.push(Line {
            start,
            text_end: start + body.len(),
            end,
        });
        start = end;
    }
    out
}

/// The frontmatter block of `text`, if the note opens with one (after a byte-order mark).
pub fn frontmatter_block(text: &str) -> Option<FrontmatterBlock> {
    let offset = if text.starts_with(BOM) { BOM.len() } else { 0 };
    // Line by line from the top, stopping at the closing line: never the whole note.
    let mut starts = text[offset..]
        .split_inclusive('\n')
        .scan(offset, |at, line| {
            let start = *at;
            *at += line.len();
            let body = line.trim_end_matches('\n').trim_end_matches('\r');
            Some((start, body, line.ends_with('\n')))
        });
    let (first, opening, ended) = starts.next()?;
    if opening != "---" || !ended {
        return None;
    }
    let yaml_start = first + text[first..].find('\n')? + 1;
    for (start, body, _) in starts {
        if body == "---" {
            let end = text[start..]
                .find('\n')
                .map_or(text.len(), |i| start + i + 1);
            return Some(FrontmatterBlock {
                start: first,
                yaml_start,
                yaml_end: start,
                end,
            });
        }
    }
    None
}

/// An ATX heading: up to 3 spaces, 1 to 6 `#`, then a space, a tab or the line's end; its
/// text without a closing run of `#`.
fn atx_heading(line: &str) -> Option<(u8, String)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let level = rest.bytes().take_while(|&b| b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let after = &rest[level..];
    if !(after.is_empty() || after.starts_with(' ') || after.starts_with('\t')) {
        return None;
    }
    let mut text = after.trim();
    let closing = text.trim_end_matches('#');
    if closing.is_empty() || closing.ends_with(' ') || closing.ends_with('\t') {
        text = closing.trim_end();
    }
    Some((level as u8, text.to_owned()))
}

/// A block id at the line's end: ` ^id` of letters, digits and `-`.
fn block_id(line: &str) -> Option<&str> {
    let trimmed = line.trim_end();
    let at = trimmed.rfind('^')?;
    let id = &trimmed[at + 1..];
    let before = &trimmed[..at];
    let valid = !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    (valid && (before.is_empty() || before.ends_with(' ') || before.ends_with('\t'))).then_some(id)
}

fn is_list_item(line: &str) -> bool {
    let rest = line.trim_start();
    if let Some(after) = rest.strip_prefix(['-', '*', '+']) {
        return after.starts_with(' ') || after.is_empty();
    }
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && rest[digits..].starts_with(". ")
}

// r[impl vault.sections.outline]
/// The headings, block ids and frontmatter of `text`, as Obsidian finds them: nothing inside
/// a fenced code block or the frontmatter is a heading or a block id.
pub fn outline(text: &str) -> Outline {
    let all = lines(text);
    let frontmatter = frontmatter_block(text);
    let crlf =
        all.iter().filter(|l| l.end - l.text_end == 2).count() * 2 > all.len() && !all.is_empty();
    let mut headings: Vec<Heading> = Vec::new();
    // Indices of the headings whose sections are still open (each runs to the next heading
    // of the same or a higher level, or the note's end).
    let mut open: Vec<usize> = Vec::new();
    let mut blocks = Vec::new();
    let mut fence: Option<(u8, usize)> = None;
    // The start of the paragraph the current line belongs to.
    let mut paragraph: Option<usize> = None;
    for (index, line) in all.iter().enumerate() {
        if frontmatter.is_some_and(|f| line.start < f.end) {
            continue;
        }
        let body = &text[line.start..line.text_end];
        let body = body.strip_prefix(BOM).unwrap_or(body);
        if let Some((ch, len)) = fence {
            if closes_fence(body, ch, len) {
                fence = None;
            }
            paragraph = None;
            continue;
        }
        if let Some(open) = opens_fence(body) {
            fence = Some(open);
            paragraph = None;
            continue;
        }
        if body.trim().is_empty() {
            paragraph = None;
            continue;
        }
        if let Some((level, heading)) = atx_heading(body) {
            paragraph = None;
            // The open sections, outermost first, each of a lower level than the next: a
            // heading closes those of its level or deeper, and sits under the rest. One
            // pass, so a note of thousands of headings is outlined in linear time.
            while let Some(&top) = open.last() {
                if headings[top].level < level {
                    break;
                }
                headings[top].section_end = line.start;
                open.pop();
            }
            let parents = open.iter().map(|&i| headings[i].text.clone()).collect();
            open.push(headings.len());
            headings.push(Heading {
                level,
                text: heading,
                line: index + 1,
                parents,
                start: line.start,
                body_start: line.end,
                section_end: text.len(),
            });
            continue;
        }
        let para_start = *paragraph.get_or_insert(line.start);
        if let Some(id) = block_id(body) {
            let start = if is_list_item(body) {
                line.start
            } else {
                para_start
            };
            blocks.push(Block {
                id: id.to_owned(),
                line: index + 1,
                start,
                end: line.end,
            });
        }
    }
    Outline {
        headings,
        blocks,
        frontmatter,
        crlf,
    }
}

fn normalized(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

fn heading_candidate(h: &Heading) -> Candidate {
    Candidate {
        text: h.text.clone(),
        line: h.line,
        parent_path: h.parents.join("::"),
    }
}

/// The headings `path` (`A::B::C`) names: C, under a B, itself under an A (not necessarily
/// directly); texts compared as Obsidian compares them, case and runs of spaces aside.
fn matching_headings<'o>(outline: &'o Outline, path: &str) -> Vec<&'o Heading> {
    let parts: Vec<String> = path.split("::").map(normalized).collect();
    let Some((last, ancestors)) = parts.split_last() else {
        return Vec::new();
    };
    outline
        .headings
        .iter()
        .filter(|h| normalized(&h.text) == *last)
        .filter(|h| {
            let mut wanted = ancestors.iter().peekable();
            for parent in &h.parents {
                if wanted.peek().is_some_and(|w| **w == normalized(parent)) {
                    wanted.next();
                }
            }
            wanted.peek().is_none()
        })
        .collect()
}

/// What an anchor resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    Heading(Heading),
    Block(Block),
    /// The frontmatter block, or none yet.
    Frontmatter(Option<FrontmatterBlock>),
}

// r[impl vault.sections.anchor]
/// The one part of `text` that `anchor` names.
pub fn resolve(text: &str, anchor: Anchor<'_>) -> Result<(Outline, Resolved), AnchorError> {
    let outline = outline(text);
    let resolved = match anchor {
        Anchor::Frontmatter => Resolved::Frontmatter(outline.frontmatter),
        Anchor::Heading(path) => {
            let found = matching_headings(&outline, path.trim().trim_start_matches('#').trim());
            let one = the_one(&found, &outline.headings, heading_candidate)?;
            Resolved::Heading(one.clone())
        }
        Anchor::Block(id) => {
            let id = id.trim().trim_start_matches('^');
            let found: Vec<&Block> = outline.blocks.iter().filter(|b| b.id == id).collect();
            let candidate = |b: &Block| Candidate {
                text: format!("^{}", b.id),
                line: b.line,
                parent_path: parent_path_at(&outline, b.start),
            };
            let one = the_one(&found, &outline.blocks, candidate)?;
            Resolved::Block(one.clone())
        }
    };
    Ok((outline, resolved))
}

/// The one part `found` holds; none is `NotFound` listing every part of the kind, several
/// `Ambiguous` listing them (at most [`MAX_CANDIDATES`] either way).
fn the_one<'a, T>(
    found: &[&'a T],
    all: &[T],
    candidate: impl Fn(&T) -> Candidate,
) -> Result<&'a T, AnchorError> {
    match found {
        [one] => Ok(one),
        [] => Err(AnchorError::NotFound {
            candidates: all.iter().take(MAX_CANDIDATES).map(&candidate).collect(),
        }),
        many => Err(AnchorError::Ambiguous {
            candidates: many
                .iter()
                .take(MAX_CANDIDATES)
                .map(|part| candidate(part))
                .collect(),
        }),
    }
}

/// The heading path a byte offset sits under.
fn parent_path_at(outline: &Outline, at: usize) -> String {
    outline
        .headings
        .iter()
        .rev()
        .find(|h| h.start <= at && at < h.section_end)
        .map(|h| {
            let mut path = h.parents.clone();
            path.push(h.text.clone());
            path.join("::")
        })
        .unwrap_or_default()
}

/// `content` as whole lines in the note's line ends: `\r\n` or `\n` throughout, ending in one.
fn as_lines(content: &str, crlf: bool) -> String {
    let eol = if crlf { "\r\n" } else { "\n" };
    let mut out = String::with_capacity(content.len() + 2);
    for line in content.split_inclusive('\n') {
        out.push_str(line.trim_end_matches('\n').trim_end_matches('\r'));
        out.push_str(eol);
    }
    out
}

/// The end of the last non-blank line in `text[start..end]` (the start of the line after
/// it), or `start` when every line there is blank.
fn after_last_non_blank(text: &str, start: usize, end: usize) -> usize {
    let mut at = start;
    for line in lines(&text[start..end]) {
        if !text[start + line.start..start + line.text_end]
            .trim()
            .is_empty()
        {
            at = start + line.end;
        }
    }
    at
}

fn count_lines(text: &str) -> usize {
    text.split_inclusive('\n').count()
}

// r[impl vault.sections.patch]
/// `text` with `content` put at `anchor` by `op`; every byte outside the edited span stays.
/// An append or a prepend only adds whole lines; a replace swaps the part's content (a
/// heading's body up to its last non-blank line, a block's lines keeping its `^id`, the
/// frontmatter's YAML) for `content`.
pub fn patch(
    text: &str,
    anchor: Anchor<'_>,
    op: PatchOp,
    content: &str,
) -> Result<Patched, AnchorError> {
    let (outline, resolved) = resolve(text, anchor)?;
    let crlf = outline.crlf;
    let eol = if crlf { "\r\n" } else { "\n" };
    // A note whose last line has no line end gets one before a line is added after it.
    let insert_at = |at: usize, added: String| -> Patched {
        let mut out = String::with_capacity(text.len() + added.len() + 2);
        out.push_str(&text[..at]);
        if at > 0 && at == text.len() && !text.ends_with('\n') {
            out.push_str(eol);
        }
        out.push_str(&added);
        out.push_str(&text[at..]);
        Patched {
            text: out,
            lines_removed: 0,
            bytes_removed: 0,
            removed: String::new(),
            span: (at, at),
        }
    };
    let replace = |start: usize, end: usize, added: String| -> Patched {
        let removed = &text[start..end];
        Patched {
            text: format!("{}{}{}", &text[..start], added, &text[end..]),
            lines_removed: count_lines(removed),
            bytes_removed: removed.len(),
            removed: removed.to_owned(),
            span: (start, end),
        }
    };
    Ok(match resolved {
        Resolved::Heading(h) => match op {
            PatchOp::Prepend => insert_at(h.body_start, as_lines(content, crlf)),
            PatchOp::Append => {
                let at = after_last_non_blank(text, h.start, h.section_end).max(h.body_start);
                insert_at(at, as_lines(content, crlf))
            }
            PatchOp::Replace => {
                let end = after_last_non_blank(text, h.body_start, h.section_end);
                let end = end.max(h.body_start);
                let added = if content.is_empty() {
                    String::new()
                } else {
                    as_lines(content, crlf)
                };
                if h.body_start == text.len() && !text.ends_with('\n') && !added.is_empty() {
                    // The heading is the note's last line, without a line end.
                    let mut patched = insert_at(text.len(), added);
                    patched.span = (text.len(), text.len());
                    patched
                } else {
                    replace(h.body_start, end, added)
                }
            }
        },
        Resolved::Block(b) => match op {
            PatchOp::Prepend => insert_at(b.start, as_lines(content, crlf)),
            PatchOp::Append => insert_at(b.end, as_lines(content, crlf)),
            PatchOp::Replace => {
                let mut added = as_lines(content, crlf);
                // The block keeps its id, so links to it keep working.
                if block_id(added.trim_end()) != Some(b.id.as_str()) {
                    let body_end = added.trim_end_matches(['\n', '\r']).len();
                    added.insert_str(body_end, &format!(" ^{}", b.id));
                }
                replace(b.start, b.end, added)
            }
        },
        Resolved::Frontmatter(block) => {
            let yaml = as_lines(content, crlf);
            match block {
                None => {
                    let at = if text.starts_with(BOM) { BOM.len() } else { 0 };
                    let added = format!(
                        "---{eol}{}---{eol}",
                        if content.is_empty() { "" } else { &yaml }
                    );
                    insert_at(at, added)
                }
                Some(f) => match op {
                    PatchOp::Prepend => insert_at(f.yaml_start, yaml),
                    PatchOp::Append => insert_at(f.yaml_end, yaml),
                    PatchOp::Replace => replace(
                        f.yaml_start,
                        f.yaml_end,
                        if content.is_empty() {
                            String::new()
                        } else {
                            yaml
                        },
                    ),
                },
            }
        }
    })
}

/// The text of one heading's section (its heading line included), by heading path.
pub fn section_text<'t>(text: &'t str, path: &str) -> Result<&'t str, AnchorError> {
    match resolve(text, Anchor::Heading(path))?.1 {
        Resolved::Heading(h) => Ok(&text[h.start..h.section_end]),
        _ => Err(AnchorError::NotFound {
            candidates: Vec::new(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOTE: &str = "---\ntitle: x # a comment\n---\n# Top\nintro\n\n## Log\n- one\n- two ^item\n\n```\n## not a heading\nfenced ^nope\n```\n\n## Ideas\nA paragraph\nthat ends here ^para\n\n# Other\n## Log\nother log\n";

    // r[verify vault.sections.outline]
    #[test]
    fn the_outline_skips_fences_and_the_frontmatter() {
        let o = outline(NOTE);
        let texts: Vec<(u8, &str, usize)> = o
            .headings
            .iter()
            .map(|h| (h.level, h.text.as_str(), h.line))
            .collect();
        assert_eq!(
            texts,
            [
                (1, "Top", 4),
                (2, "Log", 7),
                (2, "Ideas", 16),
                (1, "Other", 20),
                (2, "Log", 21)
            ]
        );
        assert_eq!(o.headings[1].parents, ["Top"]);
        let ids: Vec<&str> = o.blocks.iter().map(|b| b.id.as_str()).collect();
        assert_eq!(ids, ["item", "para"]);
        assert_eq!(&NOTE[o.blocks[0].start..o.blocks[0].end], "- two ^item\n");
        assert_eq!(
            &NOTE[o.blocks[1].start..o.blocks[1].end],
            "A paragraph\nthat ends here ^para\n"
        );
        assert!(o.frontmatter.is_some());
        assert_eq!(
            &NOTE[o.headings[0].start..o.headings[0].section_end],
            "# Top\nintro\n\n## Log\n- one\n- two ^item\n\n```\n## not a heading\nfenced ^nope\n```\n\n## Ideas\nA paragraph\nthat ends here ^para\n\n"
        );
    }

    // r[verify vault.sections.anchor]
    #[test]
    fn a_heading_path_tells_same_named_sections_apart() {
        match resolve(NOTE, Anchor::Heading("Log")) {
            Err(AnchorError::Ambiguous { candidates }) => {
                assert_eq!(candidates.len(), 2);
                assert_eq!(candidates[0].parent_path, "Top");
                assert_eq!(candidates[1].parent_path, "Other");
                assert_eq!(candidates[1].line, 21);
            }
            other => panic!("{other:?}"),
        }
        let (_, found) = resolve(NOTE, Anchor::Heading("Other::Log")).unwrap();
        assert!(matches!(found, Resolved::Heading(h) if h.line == 21));
        assert!(matches!(
            resolve(NOTE, Anchor::Heading("not a heading")),
            Err(AnchorError::NotFound { .. })
        ));
        assert!(matches!(
            resolve(NOTE, Anchor::Block("nope")),
            Err(AnchorError::NotFound { .. })
        ));
    }

    // r[verify vault.sections.patch]
    #[test]
    fn append_prepend_and_replace_touch_only_their_span() {
        let appended = patch(
            NOTE,
            Anchor::Heading("Top::Log"),
            PatchOp::Append,
            "- three",
        )
        .unwrap();
        // After the section's last non-blank line: the closing fence of its code block.
        assert!(
            appended
                .text
                .contains("fenced ^nope\n```\n- three\n\n## Ideas"),
            "{}",
            appended.text
        );
        assert_eq!(appended.lines_removed, 0);
        let prepended = patch(NOTE, Anchor::Heading("Ideas"), PatchOp::Prepend, "first").unwrap();
        assert!(prepended.text.contains("## Ideas\nfirst\nA paragraph"));
        let replaced = patch(NOTE, Anchor::Heading("Other::Log"), PatchOp::Replace, "new").unwrap();
        assert!(
            replaced.text.ends_with("## Log\nnew\n"),
            "{}",
            replaced.text
        );
        assert_eq!(replaced.lines_removed, 1);
        assert_eq!(replaced.removed, "other log\n");
        let block = patch(NOTE, Anchor::Block("para"), PatchOp::Replace, "One line").unwrap();
        assert!(block.text.contains("## Ideas\nOne line ^para\n\n# Other"));
        assert_eq!(block.lines_removed, 2);
        let fm = patch(NOTE, Anchor::Frontmatter, PatchOp::Append, "tags: [a]").unwrap();
        assert!(
            fm.text
                .starts_with("---\ntitle: x # a comment\ntags: [a]\n---\n")
        );
    }

    #[test]
    fn crlf_a_bom_and_a_missing_last_line_end_are_kept() {
        let note = "\u{feff}# A\r\nbody\r\n# B\r\nend";
        let out = patch(note, Anchor::Heading("B"), PatchOp::Append, "more\nlines").unwrap();
        assert_eq!(
            out.text,
            "\u{feff}# A\r\nbody\r\n# B\r\nend\r\nmore\r\nlines\r\n"
        );
        let out = patch(note, Anchor::Heading("A"), PatchOp::Append, "x").unwrap();
        assert_eq!(out.text, "\u{feff}# A\r\nbody\r\nx\r\n# B\r\nend");
        let out = patch(note, Anchor::Frontmatter, PatchOp::Append, "k: v").unwrap();
        assert_eq!(
            out.text,
            "\u{feff}---\r\nk: v\r\n---\r\n# A\r\nbody\r\n# B\r\nend"
        );
    }
}
