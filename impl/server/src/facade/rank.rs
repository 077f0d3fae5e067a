//! How `find_capability` ranks the registry's tools for a task phrase (spec/facade.md
//! `facade.find.bm25`, `facade.find.stemmed`).
//!
//! BM25 (k1 = 1.2, b = 0.75) over each tool's name words (counted twice), its scope's words
//! and its description, every word reduced to its Snowball English stem, so "removing",
//! "removes" and "removal" meet "remove". A person asks in their own words ("remove a note",
//! "undo a delete", "find text in my notes"), so each query word also counts as the product's
//! own word for the same thing ([`SYNONYMS`]), at a lower weight than the word itself. The
//! registry is a few dozen short documents: an index built once beats a search engine, and
//! ranking a query is microseconds.

use std::collections::{BTreeMap, BTreeSet};

use rust_stemmers::{Algorithm, Stemmer};
use tc_tools::ToolDef;

/// The weight of a query word's synonym against the word itself.
const SYNONYM_WEIGHT: f64 = 0.8;

/// Everyday words for what the tools do, each with the product's own words for it (the words
/// tool names, scopes and descriptions use). Matched on stems, in both directions of the
/// table's rows: a query word is looked up, and each word it maps to is scored.
const SYNONYMS: &[(&str, &[&str])] = &[
    (
        "remove",
        &["delete", "prune", "unrelate", "unlink", "trash"],
    ),
    ("erase", &["delete"]),
    ("trash", &["delete", "snapshot"]),
    ("discard", &["delete"]),
    ("destroy", &["delete", "permanent"]),
    ("wipe", &["delete", "reset"]),
    ("purge", &["delete", "reset", "permanent"]),
    ("forget", &["delete", "entity", "memory"]),
    ("undo", &["restore", "snapshot"]),
    ("undelete", &["restore"]),
    ("recover", &["restore", "snapshot"]),
    ("revert", &["restore", "snapshot"]),
    ("back", &["restore"]),
    ("find", &["search", "list"]),
    ("look", &["search", "read"]),
    ("lookup", &["search", "get"]),
    ("locate", &["search"]),
    ("grep", &["search", "text"]),
    ("query", &["search"]),
    ("text", &["search", "content"]),
    ("word", &["search", "text"]),
    ("phrase", &["search", "text"]),
    ("mention", &["search", "link"]),
    ("contain", &["search"]),
    ("similar", &["semantic", "search"]),
    ("meaning", &["semantic", "search"]),
    ("rename", &["move", "rewrite"]),
    ("relocate", &["move"]),
    ("reorganize", &["move"]),
    ("reorganise", &["move"]),
    ("duplicate", &["copy"]),
    ("clone", &["copy"]),
    ("edit", &["write", "update"]),
    ("change", &["write", "update"]),
    ("modify", &["write", "update"]),
    ("overwrite", &["write"]),
    ("replace", &["write", "rewrite"]),
    ("save", &["write", "commit"]),
    ("create", &["write", "capture"]),
    ("new", &["write", "create"]),
    ("make", &["write", "create"]),
    ("add", &["write", "append", "stage", "upsert"]),
    ("append", &["write"]),
    ("jot", &["capture", "write"]),
    ("open", &["read"]),
    ("show", &["read", "list", "get"]),
    ("view", &["read"]),
    ("see", &["read", "list"]),
    ("fetch", &["read", "get"]),
    ("content", &["read"]),
    ("browse", &["list"]),
    ("folder", &["list"]),
    ("directory", &["list", "folder"]),
    ("everything", &["list", "read"]),
    ("reference", &["link"]),
    ("wikilink", &["link"]),
    ("backlink", &["link", "rewrite"]),
    ("broken", &["link", "prune", "dead"]),
    ("dead", &["prune", "link"]),
    ("stale", &["prune"]),
    ("clean", &["prune"]),
    ("hub", &["prune", "link"]),
    ("property", &["frontmatter"]),
    ("properties", &["frontmatter"]),
    ("metadata", &["frontmatter"]),
    ("yaml", &["frontmatter"]),
    ("field", &["frontmatter"]),
    ("todo", &["task"]),
    ("checkbox", &["task"]),
    ("checklist", &["task"]),
    ("tick", &["task", "done"]),
    ("complete", &["task", "done"]),
    ("finish", &["task", "done"]),
    ("version", &["git", "commit"]),
    ("history", &["git", "commit", "session"]),
    ("repository", &["git"]),
    ("repo", &["git"]),
    ("uncommitted", &["git", "status"]),
    ("changed", &["git", "status"]),
    ("image", &["ocr"]),
    ("scan", &["ocr"]),
    ("picture", &["ocr"]),
    ("photo", &["ocr"]),
    ("screenshot", &["ocr"]),
    ("pdf", &["ocr"]),
    ("remember", &["entity", "memory", "upsert"]),
    ("fact", &["entity", "observation"]),
    ("person", &["entity"]),
    ("people", &["entity"]),
    ("knowledge", &["entity", "memory"]),
    ("relationship", &["relate", "entity"]),
    ("connect", &["relate"]),
    ("palette", &["command", "execute"]),
    ("plugin", &["command", "bridge", "obsidian"]),
    ("run", &["execute", "rerun", "trigger"]),
    ("macro", &["quickadd", "trigger"]),
    ("replay", &["rerun", "session"]),
    ("record", &["session", "start"]),
    ("recording", &["session"]),
    ("inbox", &["capture"]),
    ("idea", &["capture"]),
    ("later", &["capture"]),
    ("rebuild", &["reset", "cache"]),
    ("reindex", &["reset", "cache"]),
    ("label", &["tag"]),
    ("hashtag", &["tag"]),
    ("connected", &["bridge", "status"]),
    ("running", &["bridge", "status"]),
    ("capability", &["describe", "find"]),
    ("tool", &["capability"]),
];

/// Words that say nothing about which tool is meant.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "any", "are", "about", "all", "be", "by", "can", "do", "does", "for", "from",
    "how", "i", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "our", "please",
    "so", "some", "that", "the", "their", "them", "this", "to", "what", "which", "with", "you",
    "your", "one", "out", "up", "where", "want", "need",
];

/// One tool's document: its name, its terms with their counts, its length.
#[derive(Debug)]
struct Doc {
    name: String,
    /// The stems of the tool's name.
    name_words: BTreeSet<String>,
    terms: BTreeMap<String, u32>,
    length: u32,
}

/// The index over the registry's tools.
#[derive(Debug)]
pub(crate) struct ToolIndex {
    docs: Vec<Doc>,
    document_frequency: BTreeMap<String, u32>,
    average_length: f64,
    /// The synonyms' table on stems.
    synonyms: BTreeMap<String, Vec<String>>,
}

impl ToolIndex {
    const K1: f64 = 1.2;
    const B: f64 = 0.75;

    pub(crate) fn over<'a>(defs: impl Iterator<Item = &'a ToolDef>) -> Self {
        let stemmer = Stemmer::create(Algorithm::English);
        let mut docs = Vec::new();
        let mut document_frequency: BTreeMap<String, u32> = BTreeMap::new();
        for def in defs {
            let mut terms: BTreeMap<String, u32> = BTreeMap::new();
            let mut length = 0;
            let name_words = stems(&stemmer, &def.name);
            let text = format!("{} {}", def.scopes.join(" "), def.description);
            for word in name_words
                .iter()
                .chain(name_words.iter())
                .cloned()
                .chain(stems(&stemmer, &text))
            {
                *terms.entry(word).or_default() += 1;
                length += 1;
            }
            for term in terms.keys() {
                *document_frequency.entry(term.clone()).or_default() += 1;
            }
            docs.push(Doc {
                name: def.name.clone(),
                name_words: name_words.iter().cloned().collect(),
                terms,
                length,
            });
        }
        let total: u32 = docs.iter().map(|doc| doc.length).sum();
        let average_length = if docs.is_empty() {
            1.0
        } else {
            f64::from(total) / docs.len() as f64
        };
        let mut synonyms: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (word, meant) in SYNONYMS {
            let key = stem(&stemmer, word);
            let entry = synonyms.entry(key.clone()).or_default();
            for other in *meant {
                let other = stem(&stemmer, other);
                if other != key && !entry.contains(&other) {
                    entry.push(other);
                }
            }
        }
        ToolIndex {
            docs,
            document_frequency,
            average_length,
            synonyms,
        }
    }

    /// The documents among `visible` that match `query`, best first (ties by name); a query
    /// of no words matches every visible document with score 0, by name.
    pub(crate) fn rank<'a>(&'a self, query: &str, visible: &BTreeSet<&str>) -> Vec<(&'a str, f64)> {
        let stemmer = Stemmer::create(Algorithm::English);
        let query_words: BTreeSet<String> = stems(&stemmer, query)
            .into_iter()
            .filter(|word| !STOPWORDS.contains(&word.as_str()))
            .collect();
        let mut ranked: Vec<(&str, f64)> = self
            .docs
            .iter()
            .filter(|doc| visible.contains(doc.name.as_str()))
            .filter_map(|doc| {
                if query_words.is_empty() {
                    return Some((doc.name.as_str(), 0.0));
                }
                let score: f64 = query_words
                    .iter()
                    .map(|word| {
                        let own = self.term_score(doc, word);
                        let meant = self
                            .synonyms
                            .get(word)
                            .into_iter()
                            .flatten()
                            .map(|other| SYNONYM_WEIGHT * self.term_score(doc, other))
                            .fold(0.0, f64::max);
                        own.max(meant)
                    })
                    .sum();
                // r[impl facade.find.name-coverage]
                // A tool whose name says what the query asks, word for word or through a
                // synonym, is the tool meant: its score grows with the share of the query's
                // words its name covers.
                let covered = query_words
                    .iter()
                    .filter(|word| {
                        doc.name_words.contains(*word)
                            || self.synonyms.get(*word).is_some_and(|meant| {
                                meant.iter().any(|m| doc.name_words.contains(m))
                            })
                    })
                    .count();
                let coverage = covered as f64 / query_words.len() as f64;
                let score = score * (1.0 + coverage);
                (score > 0.0).then_some((doc.name.as_str(), score))
            })
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        ranked
    }

    /// BM25's contribution of one term to one document.
    fn term_score(&self, doc: &Doc, term: &str) -> f64 {
        let Some(&tf) = doc.terms.get(term) else {
            return 0.0;
        };
        let count = self.docs.len() as f64;
        let tf = f64::from(tf);
        let df = f64::from(self.document_frequency[term]);
        let idf = ((count - df + 0.5) / (df + 0.5) + 1.0).ln();
        let norm =
            Self::K1 * (1.0 - Self::B + Self::B * f64::from(doc.length) / self.average_length);
        idf * tf * (Self::K1 + 1.0) / (tf + norm)
    }
}

fn stem(stemmer: &Stemmer, word: &str) -> String {
    stemmer.stem(&word.to_lowercase()).into_owned()
}

/// The stems of the words of `text` (letters and digits; `move_note` is `move`, `note`).
pub(crate) fn stems(stemmer: &Stemmer, text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(|word| stem(stemmer, word))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_split_at_names_and_prose_and_stemmed() {
        let stemmer = Stemmer::create(Algorithm::English);
        assert_eq!(stems(&stemmer, "move_note"), vec!["move", "note"]);
        assert_eq!(
            stems(&stemmer, "Removing the Notes, links"),
            vec!["remov", "the", "note", "link"]
        );
        assert_eq!(stems(&stemmer, "removes removal"), vec!["remov", "remov"]);
        assert!(stems(&stemmer, "  -- ").is_empty());
    }
}
