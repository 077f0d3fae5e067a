//! Wikilinks and embeds: finding, resolving and rewriting them the way Obsidian does
//! (spec/tools.md `rewrite_link`, `move_note.update_backlinks`; seed:
//! `rewrite_link` binds "the set of notes the rewrite would touch, and their content").
//!
//! Syntax: `[[target]]`, `[[target|alias]]`, `[[target#heading]]`,
//! `[[target#heading|alias]]`, `[[target#^block]]`, each optionally embedded with a leading
//! `!`. Inside a table the alias separator is written `\|`; that is recognized and kept.
//! Links inside fenced code blocks (```` ``` ```` or `~~~`) and inline code spans are not
//! links. Inline code is recognized within one line (a code span that wraps a line is rare
//! in notes and treated as text). Markdown links `[text](path)` and links inside `%%`
//! comments are out of scope: this module handles wikilinks only, and finds them in comments
//! too.
//!
//! Resolution (Obsidian's "shortest path when possible" model), for a target `t`:
//! 1. the exact vault path `t.md`, then `t` (so `[[a]]` and `[[a.md]]` reach `a.md`, and
//!    `[[img.png]]` reaches `img.png`);
//! 2. otherwise every file whose path ends with `t` on a folder boundary, comparing case-
//!    insensitively and without the `.md` of notes; the shortest such path wins, ties broken
//!    by the lexicographically first path (a documented choice: Obsidian's own tie-break
//!    depends on its file index order).
//!
//! A link with an empty target (`[[#heading]]`) points into its own note and is never
//! rewritten. Rewriting replaces only the target text of a link, so alias, heading, block
//! reference, embed marker and escaped pipe stay byte for byte.

use std::collections::{BTreeSet, HashMap};
use std::ops::Range;

use crate::path::VaultPath;

/// One wikilink or embed found in a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The whole link, from `[[` (or `![[`) to `]]`.
    pub range: Range<usize>,
    /// The target text alone.
    pub target_range: Range<usize>,
    pub target: String,
    /// What follows `#`, without the `#` (a heading, or `^block` for a block reference).
    pub heading: Option<String>,
    pub alias: Option<String>,
    pub embed: bool,
}

/// Finds every wikilink and embed outside code, in order.
pub fn find_links(content: &str) -> Vec<Link> {
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
                } else {
                    scan_line(text, line_start, &mut links);
                }
            }
        }
        line_start += line.len();
    }
    links
}

/// A fence opens with 3+ backticks or tildes after at most 3 spaces.
pub(crate) fn opens_fence(line: &str) -> Option<(u8, usize)> {
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
    // A backtick fence's info string may not contain backticks.
    if run < 3 || (ch == b'`' && rest[run..].contains('`')) {
        return None;
    }
    Some((ch, run))
}

pub(crate) fn closes_fence(line: &str, ch: u8, len: usize) -> bool {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return false;
    }
    let rest = &line[indent..];
    let run = rest.bytes().take_while(|&b| b == ch).count();
    run >= len && rest[run..].trim().is_empty()
}

fn scan_line(line: &str, offset: usize, links: &mut Vec<Link>) {
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'`' {
            let run = bytes[i..].iter().take_while(|&&b| b == b'`').count();
            i += run;
            if let Some(close) = find_backtick_run(bytes, i, run) {
                i = close + run;
            }
            continue;
        }
        if bytes[i] == b'[' && bytes.get(i + 1) == Some(&b'[') {
            let inner_start = i + 2;
            let Some(close) = line[inner_start..].find("]]").map(|c| inner_start + c) else {
                return;
            };
            let inner = &line[inner_start..close];
            if inner.contains("[[") || inner.trim().is_empty() {
                i += 1;
                continue;
            }
            let embed = i > 0 && bytes[i - 1] == b'!';
            let start = if embed { i - 1 } else { i };
            links.push(parse_inner(
                inner,
                offset + inner_start,
                offset + start,
                offset + close + 2,
                embed,
            ));
            i = close + 2;
            continue;
        }
        i += 1;
    }
}

/// The start of the next run of exactly `run` backticks at or after `from`.
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

fn parse_inner(inner: &str, inner_offset: usize, start: usize, end: usize, embed: bool) -> Link {
    let (before_alias, alias) = match inner.find('|') {
        Some(bar) => {
            // `\|` inside a table: the backslash belongs to the separator, not the target.
            let cut = if inner[..bar].ends_with('\\') {
                bar - 1
            } else {
                bar
            };
            (&inner[..cut], Some(inner[bar + 1..].to_owned()))
        }
        None => (inner, None),
    };
    let (target, heading) = match before_alias.find('#') {
        Some(hash) => (
            &before_alias[..hash],
            Some(before_alias[hash + 1..].to_owned()),
        ),
        None => (before_alias, None),
    };
    Link {
        range: start..end,
        target_range: inner_offset..inner_offset + target.len(),
        target: target.to_owned(),
        heading,
        alias,
        embed,
    }
}

/// A new link target must not break the link syntax around it.
pub fn validate_link_target(target: &str) -> Result<(), String> {
    let target_trimmed = target.trim();
    if target_trimmed.is_empty() {
        return Err("the link target is empty".to_owned());
    }
    if target.contains(['[', ']', '|', '#', '^', '\n', '\r']) {
        return Err("a link target may not contain [ ] | # ^ or a line break".to_owned());
    }
    Ok(())
}

/// The comparison key of a target or a file: lowercase, without a leading `/`, without the
/// `.md` of notes.
pub(crate) fn key_of(text: &str) -> String {
    let text = text.trim().trim_start_matches('/');
    let text = strip_md(text);
    text.to_lowercase()
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

fn last_segment(key: &str) -> &str {
    key.rsplit('/').next().unwrap_or(key)
}

/// The vault's files, indexed for link resolution.
#[derive(Debug, Clone, Default)]
pub struct LinkResolver {
    files: BTreeSet<VaultPath>,
    /// Lowercase last segment (without `.md`) → files with that name.
    by_name: HashMap<String, BTreeSet<VaultPath>>,
}

impl LinkResolver {
    /// Indexes the given files (notes and attachments alike).
    pub fn new(files: impl IntoIterator<Item = VaultPath>) -> Self {
        let mut resolver = LinkResolver::default();
        for file in files {
            resolver.insert(file);
        }
        resolver
    }

    pub fn insert(&mut self, file: VaultPath) {
        let name = last_segment(&key_of(file.as_str())).to_owned();
        self.by_name.entry(name).or_default().insert(file.clone());
        self.files.insert(file);
    }

    pub fn remove(&mut self, file: &VaultPath) {
        let name = last_segment(&key_of(file.as_str())).to_owned();
        if let Some(set) = self.by_name.get_mut(&name) {
            set.remove(file);
            if set.is_empty() {
                self.by_name.remove(&name);
            }
        }
        self.files.remove(file);
    }

    pub fn contains(&self, file: &VaultPath) -> bool {
        self.files.contains(file)
    }

    /// The file at exactly this vault path, if there is one.
    pub fn exact(&self, path: &str) -> Option<&VaultPath> {
        let path = VaultPath::parse(path).ok()?;
        self.files.get(&path)
    }

    /// Every file whose path ends with `.{extension}` (ASCII case-insensitive), in path order.
    pub fn files_with_extension<'a>(
        &'a self,
        extension: &'a str,
    ) -> impl Iterator<Item = &'a VaultPath> + 'a {
        self.files.iter().filter(move |f| {
            f.as_str()
                .rsplit_once('.')
                .is_some_and(|(_, ext)| ext.eq_ignore_ascii_case(extension))
        })
    }

    /// The file a link target points at, if any.
    pub fn resolve(&self, target: &str) -> Option<&VaultPath> {
        let trimmed = target.trim().trim_start_matches('/');
        if trimmed.is_empty() {
            return None;
        }
        for exact in [format!("{trimmed}.md"), trimmed.to_owned()] {
            if let Ok(path) = VaultPath::parse(&exact)
                && let Some(found) = self.files.get(&path)
            {
                return Some(found);
            }
        }
        let key = key_of(trimmed);
        let candidates = self.by_name.get(last_segment(&key))?;
        candidates
            .iter()
            .filter(|file| {
                let file_key = key_of(file.as_str());
                file_key == key
                    || (file_key.len() > key.len()
                        && file_key.ends_with(&key)
                        && file_key.as_bytes()[file_key.len() - key.len() - 1] == b'/')
            })
            .min_by(|a, b| {
                a.as_str()
                    .len()
                    .cmp(&b.as_str().len())
                    .then_with(|| a.cmp(b))
            })
    }

    /// The shortest link text that resolves to `file`: its name when that is unambiguous
    /// (without `.md` for notes), else its full path (without `.md` for notes). This is what
    /// `move_note` writes into backlinks.
    pub fn link_text_for(&self, file: &VaultPath) -> String {
        let short = strip_md(file.file_name()).to_owned();
        if self.resolve(&short) == Some(file) {
            return short;
        }
        let long = strip_md(file.as_str()).to_owned();
        if self.resolve(&long) == Some(file) {
            return long;
        }
        file.as_str().to_owned()
    }
}

/// Which links a rewrite replaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkMatcher {
    /// Links that resolve to this file.
    Resolved(VaultPath),
    /// Links that resolve to nothing and whose target reads the same (case-insensitively,
    /// without `.md`): for a `from_target` that names no file.
    Dangling(String),
}

impl LinkMatcher {
    /// The matcher for a caller's `from_target`: the file it resolves to, else its text.
    pub fn for_target(resolver: &LinkResolver, from_target: &str) -> Self {
        match resolver.resolve(from_target) {
            Some(file) => LinkMatcher::Resolved(file.clone()),
            None => LinkMatcher::Dangling(key_of(from_target)),
        }
    }

    fn matches(&self, resolver: &LinkResolver, link: &Link) -> bool {
        if link.target.trim().is_empty() {
            return false;
        }
        self.matches_resolved(resolver.resolve(&link.target), &link.target)
    }

    /// Whether a link whose target text is `target` and that resolves to `resolved` is one
    /// this matcher names.
    pub fn matches_resolved(&self, resolved: Option<&VaultPath>, target: &str) -> bool {
        match self {
            LinkMatcher::Resolved(file) => resolved == Some(file),
            LinkMatcher::Dangling(key) => resolved.is_none() && key_of(target) == *key,
        }
    }
}

/// A rewrite of link targets.
#[derive(Debug, Clone)]
pub struct LinkRewrite<'a> {
    pub matcher: &'a LinkMatcher,
    pub new_target: &'a str,
    /// Whether `![[…]]` embeds are rewritten too.
    pub include_embeds: bool,
}

/// The note with every matching link's target replaced, and how many were; `None` when no
/// link matches.
pub fn rewrite_links(
    content: &str,
    resolver: &LinkResolver,
    rewrite: &LinkRewrite<'_>,
) -> Option<(String, usize)> {
    let mut out = String::with_capacity(content.len());
    let mut copied = 0;
    let mut count = 0;
    for link in find_links(content) {
        if (link.embed && !rewrite.include_embeds) || !rewrite.matcher.matches(resolver, &link) {
            continue;
        }
        out.push_str(&content[copied..link.target_range.start]);
        out.push_str(rewrite.new_target);
        copied = link.target_range.end;
        count += 1;
    }
    if count == 0 {
        return None;
    }
    out.push_str(&content[copied..]);
    Some((out, count))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(s: &str) -> VaultPath {
        VaultPath::parse(s).unwrap()
    }

    fn targets(content: &str) -> Vec<(String, Option<String>, Option<String>, bool)> {
        find_links(content)
            .into_iter()
            .map(|l| (l.target, l.heading, l.alias, l.embed))
            .collect()
    }

    // r[verify vault.links]
    #[test]
    fn finds_every_link_form() {
        let note = "[[a]] [[b|Alias]] [[c#Head]] [[d#Head|Al]] ![[e]] ![[f.png]] [[g#^blk]]";
        let s = |x: &str| Some(x.to_owned());
        assert_eq!(
            targets(note),
            vec![
                ("a".into(), None, None, false),
                ("b".into(), None, s("Alias"), false),
                ("c".into(), s("Head"), None, false),
                ("d".into(), s("Head"), s("Al"), false),
                ("e".into(), None, None, true),
                ("f.png".into(), None, None, true),
                ("g".into(), s("^blk"), None, false),
            ]
        );
        let link = &find_links("x ![[e|y]]")[0];
        assert_eq!(&"x ![[e|y]]"[link.range.clone()], "![[e|y]]");
        assert_eq!(&"x ![[e|y]]"[link.target_range.clone()], "e");
    }

    #[test]
    fn skips_code_and_malformed_links() {
        let note = "\
real [[one]]
```
[[fenced]]
```
~~~~md
[[tilde]]
~~~
still fenced [[tilde2]]
~~~~
`[[inline]]` and ``x [[double]] ` y`` then [[two]]
unclosed ` tick [[three]]
[[]] [[ ]] [[open [[four]] [[no close
";
        let found: Vec<String> = find_links(note).into_iter().map(|l| l.target).collect();
        assert_eq!(found, ["one", "two", "three", "four"]);
    }

    #[test]
    fn table_escaped_pipe_is_kept() {
        let note = "| [[a\\|Alias]] |";
        let link = &find_links(note)[0];
        assert_eq!(link.target, "a");
        assert_eq!(link.alias.as_deref(), Some("Alias"));
        let resolver = LinkResolver::new([p("a.md")]);
        let matcher = LinkMatcher::Resolved(p("a.md"));
        let rw = LinkRewrite {
            matcher: &matcher,
            new_target: "b",
            include_embeds: true,
        };
        assert_eq!(
            rewrite_links(note, &resolver, &rw).unwrap().0,
            "| [[b\\|Alias]] |"
        );
    }

    fn vault_files() -> LinkResolver {
        LinkResolver::new(
            [
                "a.md",
                "x/a.md",
                "x/y/b.md",
                "z/b.md",
                "img.png",
                "docs/img.png",
                "Note.md",
                "q/c.md",
                "p/c.md",
            ]
            .map(p),
        )
    }

    // r[verify vault.links]
    #[test]
    fn resolution_exact_then_shortest_basename() {
        let r = vault_files();
        let res = |t: &str| r.resolve(t).map(|f| f.as_str().to_owned());
        assert_eq!(res("a").as_deref(), Some("a.md"));
        assert_eq!(res("a.md").as_deref(), Some("a.md"));
        assert_eq!(res("x/a").as_deref(), Some("x/a.md"));
        assert_eq!(res("b").as_deref(), Some("z/b.md"), "shortest path");
        assert_eq!(res("y/b").as_deref(), Some("x/y/b.md"), "folder suffix");
        assert_eq!(res("img.png").as_deref(), Some("img.png"));
        assert_eq!(res("note").as_deref(), Some("Note.md"), "case-insensitive");
        assert_eq!(
            res("c").as_deref(),
            Some("p/c.md"),
            "tie: lexicographically first"
        );
        assert_eq!(res("missing"), None);
        assert_eq!(res("/x/a").as_deref(), Some("x/a.md"));
        assert_eq!(res("").as_deref(), None);
        assert_eq!(res("b/"), None);
    }

    #[test]
    fn link_text_is_the_shortest_that_resolves() {
        let r = vault_files();
        assert_eq!(r.link_text_for(&p("z/b.md")), "b");
        assert_eq!(r.link_text_for(&p("x/y/b.md")), "x/y/b");
        assert_eq!(r.link_text_for(&p("docs/img.png")), "docs/img.png");
        assert_eq!(r.link_text_for(&p("Note.md")), "Note");
        let mut r = r;
        r.remove(&p("z/b.md"));
        assert_eq!(r.link_text_for(&p("x/y/b.md")), "b");
        assert_eq!(r.resolve("b").map(VaultPath::as_str), Some("x/y/b.md"));
    }

    #[test]
    fn rewrite_preserves_alias_heading_and_embed_marker() {
        let r = vault_files();
        let note = "[[b]] [[b|B]] [[z/b#H|x]] ![[b]] [[x/y/b]] `[[b]]` [[#b]]";
        let m = LinkMatcher::for_target(&r, "z/b");
        assert_eq!(m, LinkMatcher::Resolved(p("z/b.md")));
        let rw = LinkRewrite {
            matcher: &m,
            new_target: "new/place",
            include_embeds: false,
        };
        let (out, n) = rewrite_links(note, &r, &rw).unwrap();
        assert_eq!(n, 3);
        assert_eq!(
            out,
            "[[new/place]] [[new/place|B]] [[new/place#H|x]] ![[b]] [[x/y/b]] `[[b]]` [[#b]]"
        );
        let rw = LinkRewrite {
            include_embeds: true,
            ..rw
        };
        let (out, n) = rewrite_links(note, &r, &rw).unwrap();
        assert_eq!(n, 4);
        assert!(out.contains("![[new/place]]"));
        let none = LinkMatcher::Resolved(p("a.md"));
        let rw = LinkRewrite {
            matcher: &none,
            new_target: "q",
            include_embeds: true,
        };
        assert!(rewrite_links(note, &r, &rw).is_none());
    }

    #[test]
    fn dangling_targets_match_by_text() {
        let r = vault_files();
        let m = LinkMatcher::for_target(&r, "Ghost.md");
        assert_eq!(m, LinkMatcher::Dangling("ghost".into()));
        let rw = LinkRewrite {
            matcher: &m,
            new_target: "a",
            include_embeds: true,
        };
        let (out, n) = rewrite_links("[[ghost]] [[GHOST|g]] [[a]]", &r, &rw).unwrap();
        assert_eq!((out.as_str(), n), ("[[a]] [[a|g]] [[a]]", 2));
    }

    #[test]
    fn new_targets_are_judged() {
        assert!(validate_link_target("folder/Note").is_ok());
        for bad in ["", "  ", "a|b", "a]]", "a#h", "a\nb", "[[a"] {
            assert!(validate_link_target(bad).is_err(), "{bad:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn any_text_parses_without_panic_and_ranges_are_valid(content in "[\\[\\]!|#`~a-zé\n ]{0,80}") {
            for link in find_links(&content) {
                prop_assert!(content.is_char_boundary(link.range.start));
                prop_assert!(content.is_char_boundary(link.target_range.end));
                prop_assert!(content[link.range.clone()].ends_with("]]"));
                prop_assert_eq!(&content[link.target_range.clone()], link.target.as_str());
            }
            let r = LinkResolver::new([VaultPath::parse("a.md").unwrap()]);
            let m = LinkMatcher::for_target(&r, "a");
            let rw = LinkRewrite { matcher: &m, new_target: "b", include_embeds: true };
            if let Some((out, n)) = rewrite_links(&content, &r, &rw) {
                prop_assert!(n > 0);
                prop_assert_eq!(find_links(&out).len(), find_links(&content).len());
            }
        }
    }
}
