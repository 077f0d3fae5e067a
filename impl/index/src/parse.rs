//! What the index keeps of one note, read from its bytes (spec/index.md `index.facts`,
//! `index.chunks`, `index.links.name-key`).
//!
//! Links (wikilinks, embeds and Markdown links to files) come from tc-vault's own parsers
//! ([`tc_vault::mdlinks::find_note_links`]: the same syntax, code-block rules and escaped
//! pipes the link tools rewrite with), so the index
//! and the tools can never disagree on what a link is. The index stores each link's target
//! as written and its name key (the last segment, lowercase, without `.md`), not the file it
//! resolves to: resolution depends on every other file of the vault (a new `Plan.md`
//! nearer the root changes where `[[Plan]]` goes), so it is done at query time against the
//! current file set, exactly as Obsidian re-resolves. A link can only resolve to a file of
//! the same name key, which is what makes the key a sound filter.
//!
//! Chunks follow the headings: each section under a heading is one chunk, cut at paragraph
//! boundaries into pieces of at most [`MAX_CHUNK_WORDS`] words, each carrying the heading
//! path it sits under, so a search hit says where in the note it is.

use std::sync::LazyLock;

use regex::Regex;
use tc_vault::note::{Frontmatter, split_frontmatter};
use tc_vault::vault::content_hash;

/// The most words one chunk holds (a few hundred tokens).
pub const MAX_CHUNK_WORDS: usize = 300;

/// One outgoing link: a wikilink, an embed or a Markdown link to a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkFact {
    /// The target as written (`Plan`, `folder/Plan.md`, `img.png`); a Markdown link's
    /// path decoded (`../My Plan.md`), resolved from its note's folder.
    pub target: String,
    /// [`name_key`] of the target.
    pub name_key: String,
    pub embed: bool,
    /// A Markdown link `[text](path)` rather than a wikilink.
    pub markdown: bool,
    /// 1-based line of the link in the file.
    pub line: usize,
    /// The whole link as written (`[[Plan|p]]`, `[p](Plan.md)`).
    pub text: String,
}

// r[impl index.links.markdown]
/// Every link of a note's text, of both kinds, as the index keeps them.
pub fn link_facts(text: &str) -> Vec<LinkFact> {
    tc_vault::mdlinks::find_note_links(text)
        .into_iter()
        .map(|l| LinkFact {
            name_key: name_key(&l.target),
            markdown: l.kind == tc_vault::mdlinks::LinkKind::Markdown,
            line: l.line,
            text: text[l.range].to_owned(),
            target: l.target,
            embed: l.embed,
        })
        .collect()
}

/// One heading of a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    pub level: u8,
    pub text: String,
}

/// One searchable piece of a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The headings it sits under, outermost first, joined with ` > `; empty before the
    /// first heading.
    pub heading: String,
    pub body: String,
}

/// What the index keeps of a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteFacts {
    pub hash: String,
    pub frontmatter_keys: Vec<String>,
    /// Frontmatter `tags`/`tag` and inline `#tags`, lowercase, without `#`, deduplicated.
    pub tags: Vec<String>,
    pub headings: Vec<Heading>,
    pub links: Vec<LinkFact>,
    pub chunks: Vec<Chunk>,
    /// The frontmatter's keys and values (spec/metadata.md `metadata.properties.index`).
    pub properties: Vec<crate::meta::properties::PropertyFact>,
    /// The task lines (spec/tasks.md `tasks.index`).
    pub tasks: Vec<crate::meta::tasks::TaskFact>,
}

// r[impl index.links.name-key]
/// The name a link target or a file path is known by for resolution: the last segment,
/// lowercase, without a leading `/` and without the `.md` of notes. A link resolves to a
/// file only if both have the same name key (tc-vault's resolver looks files up by it).
pub fn name_key(target: &str) -> String {
    let text = target.trim().trim_start_matches('/');
    let text = if text.len() > 3
        && text.is_char_boundary(text.len() - 3)
        && text[text.len() - 3..].eq_ignore_ascii_case(".md")
    {
        &text[..text.len() - 3]
    } else {
        text
    };
    let lower = text.to_lowercase();
    match lower.rsplit_once('/') {
        Some((_, last)) => last.to_owned(),
        None => lower,
    }
}

static INLINE_TAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[\s(,;])#([\p{L}\p{N}_/\-]+)").expect("the inline tag pattern compiles")
});

/// Whether a line opens or closes a fenced code block (``` or ~~~, up to three spaces in).
pub(crate) fn fence_marker(line: &str) -> Option<(u8, usize)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let ch = *rest.as_bytes().first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let run = rest.bytes().take_while(|&b| b == ch).count();
    (run >= 3).then_some((ch, run))
}

/// An ATX heading (`# Title` … `###### Title`).
fn heading_of(line: &str) -> Option<Heading> {
    let trimmed = line.trim_end();
    let indent = trimmed.len() - trimmed.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &trimmed[indent..];
    let level = rest.bytes().take_while(|&b| b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let after = &rest[level..];
    if !after.is_empty() && !after.starts_with([' ', '\t']) {
        return None;
    }
    let text = after.trim().trim_end_matches('#').trim_end().to_owned();
    Some(Heading {
        level: level as u8,
        text,
    })
}

// r[impl metadata.tags.inline]
/// The byte ranges of a line's inline tags, without their `#` or a trailing `/`: a `#`
/// at the start or after whitespace, `(`, `,` or `;`, then letters, digits, `_`, `-`, `/`,
/// with at least one character that is not a digit. Nothing inside a code span, a wikilink,
/// a Markdown link's destination or a URL is a tag; those spans are masked with a byte that
/// neither starts nor ends a tag, so the ranges are the line's own.
pub fn line_tag_spans(line: &str) -> Vec<std::ops::Range<usize>> {
    if !line.contains('#') {
        return Vec::new();
    }
    let bytes = line.as_bytes();
    let mut masked = bytes.to_vec();
    let mut mask = |from: usize, to: usize| masked[from..to].fill(0x01);
    let mut at = 0;
    while at < bytes.len() {
        let rest = &line[at..];
        let end = if rest.starts_with('`') {
            let run = rest.bytes().take_while(|&b| b == b'`').count();
            match code_span_end(rest, run) {
                Some(end) => at + end,
                None => {
                    // A run of backticks with no closing run of the same length is text.
                    at += run;
                    continue;
                }
            }
        } else if rest.starts_with("[[") {
            rest.find("]]").map_or(at + 2, |e| at + e + 2)
        } else if rest.starts_with("](") {
            rest.find(')').map_or(at + 2, |e| at + e + 1)
        } else if let Some(scheme) = url_scheme_len(line, at) {
            at + scheme
                + rest[scheme..]
                    .find(char::is_whitespace)
                    .unwrap_or(rest.len() - scheme)
        } else {
            at += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        mask(at, end);
        at = end;
    }
    let masked = String::from_utf8(masked).unwrap_or_default();
    INLINE_TAG
        .captures_iter(&masked)
        .filter_map(|found| {
            let range = found.get(1)?.range();
            let text = line[range.clone()].trim_end_matches('/');
            (!text.is_empty() && !text.chars().all(|c| c.is_ascii_digit()))
                .then(|| range.start..range.start + text.len())
        })
        .collect()
}

/// Where a code span opened by `run` backticks at the start of `rest` ends: after the next
/// run of exactly as many backticks.
fn code_span_end(rest: &str, run: usize) -> Option<usize> {
    let bytes = rest.as_bytes();
    let mut at = run;
    while at < bytes.len() {
        if bytes[at] == b'`' {
            let close = bytes[at..].iter().take_while(|&&b| b == b'`').count();
            if close == run {
                return Some(at + close);
            }
            at += close;
        } else {
            at += 1;
        }
    }
    None
}

/// The length of `scheme://` when a URL starts at `at` (a word start followed by `://`).
fn url_scheme_len(line: &str, at: usize) -> Option<usize> {
    let rest = &line[at..];
    let word = rest
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
        .count();
    let starts_word = at == 0 || !line.as_bytes()[at - 1].is_ascii_alphanumeric();
    (word > 0 && starts_word && rest[word..].starts_with("://")).then_some(word + 3)
}

/// The byte ranges of a note body's inline tags (as [`line_tag_spans`]), fenced code
/// blocks left out; the ranges are into `body`.
pub fn inline_tag_spans(body: &str) -> Vec<std::ops::Range<usize>> {
    let mut spans = Vec::new();
    let mut fence: Option<(u8, usize)> = None;
    let mut start = 0;
    for raw in body.split_inclusive('\n') {
        let line = raw.trim_end_matches(['\n', '\r']);
        if let Some((ch, len)) = fence {
            if closes_fence(line, ch, len) {
                fence = None;
            }
        } else if let Some(marker) = fence_marker(line) {
            fence = Some(marker);
        } else {
            spans.extend(
                line_tag_spans(line)
                    .into_iter()
                    .map(|r| r.start + start..r.end + start),
            );
        }
        start += raw.len();
    }
    spans
}

pub(crate) fn closes_fence(line: &str, ch: u8, len: usize) -> bool {
    fence_marker(line).is_some_and(|(c, l)| c == ch && l >= len)
        && line.trim().bytes().all(|b| b == ch)
}

fn push_tag(tags: &mut Vec<String>, raw: &str) {
    let tag = raw.trim().trim_start_matches('#').trim_end_matches('/');
    // Obsidian: a tag needs at least one character that is not a digit.
    if tag.is_empty() || tag.chars().all(|c| c.is_ascii_digit()) {
        return;
    }
    let tag = tag.to_lowercase();
    if !tags.contains(&tag) {
        tags.push(tag);
    }
}

fn frontmatter_tags(frontmatter: &Frontmatter, tags: &mut Vec<String>) {
    let json = frontmatter.to_json();
    for key in ["tags", "tag"] {
        match json.get(key) {
            Some(serde_json::Value::String(text)) => {
                for part in text.split([',', ' ']) {
                    push_tag(tags, part);
                }
            }
            Some(serde_json::Value::Array(items)) => {
                for item in items {
                    if let Some(text) = item.as_str() {
                        push_tag(tags, text);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Collects a section into chunks of at most [`MAX_CHUNK_WORDS`] words, cut at blank lines
/// (a paragraph longer than that is cut by words).
struct Chunker {
    chunks: Vec<Chunk>,
    heading: String,
    current: String,
    words: usize,
}

impl Chunker {
    fn flush(&mut self) {
        let body = self.current.trim();
        if !body.is_empty() {
            self.chunks.push(Chunk {
                heading: self.heading.clone(),
                body: body.to_owned(),
            });
        }
        self.current.clear();
        self.words = 0;
    }

    fn paragraph(&mut self, text: &str) {
        let words = text.split_whitespace().count();
        if words == 0 {
            return;
        }
        if self.words + words > MAX_CHUNK_WORDS && self.words > 0 {
            self.flush();
        }
        if words > MAX_CHUNK_WORDS {
            let all: Vec<&str> = text.split_whitespace().collect();
            for piece in all.chunks(MAX_CHUNK_WORDS) {
                self.current.push_str(&piece.join(" "));
                self.words = piece.len();
                self.flush();
            }
            return;
        }
        if !self.current.is_empty() {
            self.current.push_str("\n\n");
        }
        self.current.push_str(text.trim_end());
        self.words += words;
    }
}

/// Reads what the index keeps of a note from its bytes (a note that is not UTF-8 is read
/// lossily: it is still found by its hash and size, and searched as well as it can be).
pub fn analyze(bytes: &[u8]) -> NoteFacts {
    let hash = content_hash(bytes);
    let text = String::from_utf8_lossy(bytes);
    let (frontmatter, body) = match split_frontmatter(&text) {
        Some(span) => (Frontmatter::parse_yaml(span.yaml).ok(), span.body),
        None => (None, text.as_ref()),
    };
    let mut tags = Vec::new();
    let properties = frontmatter
        .as_ref()
        .map(|fm| crate::meta::properties::facts_of(&fm.to_json()))
        .unwrap_or_default();
    let frontmatter_keys = match &frontmatter {
        Some(fm) => {
            frontmatter_tags(fm, &mut tags);
            fm.keys()
        }
        None => Vec::new(),
    };
    let links = link_facts(&text);

    let mut headings = Vec::new();
    let mut path: Vec<Heading> = Vec::new();
    let mut chunker = Chunker {
        chunks: Vec::new(),
        heading: String::new(),
        current: String::new(),
        words: 0,
    };
    let mut paragraph = String::new();
    let mut fence: Option<(u8, usize)> = None;
    for line in body.lines() {
        if let Some((ch, len)) = fence {
            if closes_fence(line, ch, len) {
                fence = None;
            }
            paragraph.push_str(line);
            paragraph.push('\n');
            continue;
        }
        if let Some(marker) = fence_marker(line) {
            fence = Some(marker);
            paragraph.push_str(line);
            paragraph.push('\n');
            continue;
        }
        for range in line_tag_spans(line) {
            push_tag(&mut tags, &line[range]);
        }
        if let Some(heading) = heading_of(line) {
            chunker.paragraph(&paragraph);
            paragraph.clear();
            chunker.flush();
            path.retain(|h| h.level < heading.level);
            path.push(heading.clone());
            chunker.heading = path
                .iter()
                .map(|h| h.text.as_str())
                .collect::<Vec<_>>()
                .join(" > ");
            headings.push(heading);
            continue;
        }
        if line.trim().is_empty() {
            chunker.paragraph(&paragraph);
            paragraph.clear();
        } else {
            paragraph.push_str(line);
            paragraph.push('\n');
        }
    }
    chunker.paragraph(&paragraph);
    chunker.flush();
    let tasks = crate::meta::tasks::facts_of(&text, body);
    NoteFacts {
        hash,
        frontmatter_keys,
        tags,
        headings,
        links,
        chunks: chunker.chunks,
        properties,
        tasks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tc_vault::links::LinkResolver;
    use tc_vault::path::VaultPath;

    // r[verify index.facts]
    #[test]
    fn facts_of_a_note() {
        let note = "---\ntags: [Project, area/work]\nstatus: open\n---\n# Plan\nIntro #idea and `#notatag` #2024\n\n## Goals\nSee [[Other|o]] and ![[img.png]] [[#local]]\n```\n# not a heading #nottag [[notalink]]\n```\n";
        let facts = analyze(note.as_bytes());
        assert_eq!(facts.frontmatter_keys, ["tags", "status"]);
        assert_eq!(facts.tags, ["project", "area/work", "idea"]);
        let headings: Vec<(u8, &str)> = facts
            .headings
            .iter()
            .map(|h| (h.level, h.text.as_str()))
            .collect();
        assert_eq!(headings, [(1, "Plan"), (2, "Goals")]);
        let links: Vec<(&str, &str, bool)> = facts
            .links
            .iter()
            .map(|l| (l.target.as_str(), l.name_key.as_str(), l.embed))
            .collect();
        assert_eq!(
            links,
            [("Other", "other", false), ("img.png", "img.png", true)]
        );
        let chunks: Vec<&str> = facts.chunks.iter().map(|c| c.heading.as_str()).collect();
        assert_eq!(chunks, ["Plan", "Plan > Goals"]);
        assert!(facts.chunks[1].body.contains("# not a heading"));
        assert_eq!(facts.hash, content_hash(note.as_bytes()));
    }

    // r[verify index.chunks]
    #[test]
    fn long_sections_are_cut_at_paragraphs_and_words() {
        let para = vec!["word"; 200].join(" ");
        let huge = vec!["big"; 700].join(" ");
        let note = format!("# A\n{para}\n\n{para}\n\n{huge}\n# B\nshort\n");
        let facts = analyze(note.as_bytes());
        let sizes: Vec<(String, usize)> = facts
            .chunks
            .iter()
            .map(|c| (c.heading.clone(), c.body.split_whitespace().count()))
            .collect();
        assert_eq!(
            sizes,
            [
                ("A".to_owned(), 200),
                ("A".to_owned(), 200),
                ("A".to_owned(), 300),
                ("A".to_owned(), 300),
                ("A".to_owned(), 100),
                ("B".to_owned(), 1),
            ]
        );
        assert!(
            facts
                .chunks
                .iter()
                .all(|c| c.body.split_whitespace().count() <= MAX_CHUNK_WORDS)
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        // r[verify index.links.name-key]
        /// Whatever a link resolves to has the link's name key: the index's filter never
        /// drops a note the resolver would match.
        #[test]
        fn a_link_resolves_only_to_a_file_of_its_name_key(
            files in proptest::collection::btree_set("[a-cA-C]{1,2}(/[a-cA-C]{1,2}){0,2}(\\.md|\\.png)", 1..8),
            target in "/?([a-cA-C]{1,2}/){0,2}[a-cA-C]{1,2}(\\.md|\\.png)?",
        ) {
            let paths: Vec<VaultPath> = files.iter().filter_map(|f| VaultPath::parse(f).ok()).collect();
            let resolver = LinkResolver::new(paths);
            if let Some(file) = resolver.resolve(&target) {
                prop_assert_eq!(name_key(file.as_str()), name_key(&target));
            }
        }
    }
}
