//! Reading the two notations the ledger is built on: clause definitions in `spec/*.md`
//! (an ID line `r[<id>]` followed by its one-sentence paragraph) and citations in source
//! files (`r[verify <id>]`, `r[impl <id>]`).
//!
//! This file is compiled twice: by `build.rs` (which turns the clauses into constants and
//! refuses duplicates) and as the module `tc_spec::parse` (which the ledger test uses), so
//! the build and the ledger can never disagree on what a clause or a citation is. It
//! therefore depends on nothing but `std`.

use std::collections::BTreeMap;
use std::fmt;

/// One clause as written in a spec file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClauseDef {
    pub id: String,
    /// The normative sentence, its lines joined by single spaces.
    pub text: String,
    /// The spec file's name, e.g. `gate.md`.
    pub file: String,
    /// 1-based line of the ID line.
    pub line: usize,
}

/// Something wrong in the spec files; every variant names where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpecError {
    /// A line starting with `r[` that is not a well-formed ID line.
    MalformedIdLine {
        file: String,
        line: usize,
        text: String,
    },
    /// An ID line not directly followed by its sentence.
    MissingSentence {
        file: String,
        line: usize,
        id: String,
    },
    /// The same ID defined twice.
    DuplicateId {
        id: String,
        first: String,
        second: String,
    },
    /// Two IDs that map to the same Rust constant name.
    ConstNameCollision {
        name: String,
        first: String,
        second: String,
    },
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MalformedIdLine { file, line, text } => write!(
                f,
                "{file}:{line}: `{text}` starts like an ID line but is not `r[<id>]` with an id of \
                 lowercase dot-separated segments of [a-z0-9-] starting with a letter"
            ),
            Self::MissingSentence { file, line, id } => write!(
                f,
                "{file}:{line}: clause `{id}` must be followed on the next line by its sentence"
            ),
            Self::DuplicateId { id, first, second } => {
                write!(
                    f,
                    "clause `{id}` is defined twice: at {first} and at {second}"
                )
            }
            Self::ConstNameCollision {
                name,
                first,
                second,
            } => write!(
                f,
                "clauses `{first}` and `{second}` both become the constant `{name}`; rename one"
            ),
        }
    }
}

/// Whether `id` is a clause ID: dot-separated, non-empty segments of `[a-z0-9-]`, starting
/// with a lowercase letter (so its constant name is a valid Rust identifier).
pub fn is_valid_id(id: &str) -> bool {
    id.starts_with(|c: char| c.is_ascii_lowercase())
        && id.split('.').all(|segment| {
            !segment.is_empty()
                && segment
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        })
}

/// The Rust constant name of a clause ID: uppercased, `.` and `-` become `_`.
pub fn const_name(id: &str) -> String {
    id.chars()
        .map(|c| match c {
            '.' | '-' => '_',
            other => other.to_ascii_uppercase(),
        })
        .collect()
}

/// Names the generated code uses for itself, which no clause constant may take.
pub const RESERVED_CONST_NAMES: &[&str] = &["ALL", "CLAUSES"];

fn is_fence(line: &str) -> bool {
    let trimmed = line.trim_start();
    trimmed.starts_with("```") || trimmed.starts_with("~~~")
}

/// Reads the clauses of one spec file. Fenced code blocks are skipped, so examples of the
/// notation in prose define nothing.
pub fn parse_spec_file(file: &str, text: &str) -> (Vec<ClauseDef>, Vec<SpecError>) {
    let mut clauses = Vec::new();
    let mut errors = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut in_fence = false;
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index].trim_end();
        index += 1;
        if is_fence(line) {
            in_fence = !in_fence;
            continue;
        }
        if in_fence || !line.starts_with("r[") {
            continue;
        }
        let line_number = index;
        let id = line
            .strip_prefix("r[")
            .and_then(|rest| rest.strip_suffix(']'))
            .filter(|id| is_valid_id(id));
        let Some(id) = id else {
            errors.push(SpecError::MalformedIdLine {
                file: file.to_owned(),
                line: line_number,
                text: line.to_owned(),
            });
            continue;
        };
        let mut sentence = Vec::new();
        while index < lines.len() {
            let next = lines[index].trim();
            if next.is_empty() || next.starts_with("r[") || next.starts_with('#') || is_fence(next)
            {
                break;
            }
            sentence.push(next);
            index += 1;
        }
        if sentence.is_empty() {
            errors.push(SpecError::MissingSentence {
                file: file.to_owned(),
                line: line_number,
                id: id.to_owned(),
            });
            continue;
        }
        clauses.push(ClauseDef {
            id: id.to_owned(),
            text: sentence.join(" "),
            file: file.to_owned(),
            line: line_number,
        });
    }
    (clauses, errors)
}

/// Refuses an ID defined twice (in one file or across files) and two IDs whose constant
/// names collide, including with [`RESERVED_CONST_NAMES`].
pub fn check_unique(clauses: &[ClauseDef]) -> Vec<SpecError> {
    let mut errors = Vec::new();
    let mut by_id: BTreeMap<&str, &ClauseDef> = BTreeMap::new();
    let mut by_const: BTreeMap<String, &str> = RESERVED_CONST_NAMES
        .iter()
        .map(|name| ((*name).to_owned(), "<generated code>"))
        .collect();
    for clause in clauses {
        if let Some(first) = by_id.get(clause.id.as_str()) {
            errors.push(SpecError::DuplicateId {
                id: clause.id.clone(),
                first: format!("{}:{}", first.file, first.line),
                second: format!("{}:{}", clause.file, clause.line),
            });
            continue;
        }
        by_id.insert(&clause.id, clause);
        let name = const_name(&clause.id);
        if let Some(first) = by_const.get(&name) {
            errors.push(SpecError::ConstNameCollision {
                name,
                first: (*first).to_owned(),
                second: clause.id.clone(),
            });
            continue;
        }
        by_const.insert(name, &clause.id);
    }
    errors
}

/// Which way a source file cites a clause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CitationKind {
    /// `r[verify <id>]`: a test checks the clause; this is what counts as coverage.
    Verify,
    /// `r[impl <id>]`: code realizes the clause.
    Impl,
}

impl CitationKind {
    pub fn keyword(self) -> &'static str {
        match self {
            Self::Verify => "verify",
            Self::Impl => "impl",
        }
    }
}

/// A well-formed citation. The ID is well-formed but not necessarily a known clause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Citation {
    pub kind: CitationKind,
    pub id: String,
    /// 1-based line.
    pub line: usize,
}

/// Text that starts a citation but cannot be read as one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedCitation {
    /// 1-based line.
    pub line: usize,
    /// The text from `r[` to the end of the citation (or of the line).
    pub text: String,
}

/// The citations found in one file, and the ones that could not be read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CitationScan {
    pub citations: Vec<Citation>,
    pub malformed: Vec<MalformedCitation>,
    /// `verify` citations on a test marked `#[ignore]`: a test that does not run verifies
    /// nothing, so the ledger does not count these.
    pub ignored: Vec<Citation>,
}

/// Finds every `r[verify <id>]` and `r[impl <id>]` in `text`.
///
/// One citation names one clause. A placeholder in angle brackets (`r[verify <id>]`) is prose
/// about the notation and is skipped; any other content that is not a clause ID is reported
/// as malformed, so a typo cannot silently fail to count.
pub fn scan_citations(text: &str) -> CitationScan {
    let mut scan = CitationScan::default();
    for (line_index, line) in text.lines().enumerate() {
        let mut rest = line;
        let mut consumed = 0;
        while let Some(found) = rest.find("r[") {
            let start = consumed + found;
            let preceded_by_word = line[..start]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_');
            let after = &line[start + 2..];
            let kind = [CitationKind::Verify, CitationKind::Impl]
                .into_iter()
                .find(|kind| {
                    after.strip_prefix(kind.keyword()).is_some_and(|tail| {
                        tail.starts_with(' ') || tail.starts_with(']') || tail.is_empty()
                    })
                });
            consumed = start + 2;
            rest = &line[consumed..];
            let Some(kind) = kind.filter(|_| !preceded_by_word) else {
                continue;
            };
            let body = &after[kind.keyword().len()..];
            let Some(close) = body.find(']') else {
                scan.malformed.push(MalformedCitation {
                    line: line_index + 1,
                    text: line[start..].to_owned(),
                });
                continue;
            };
            let id = body[..close].trim();
            let whole = &line[start..start + 2 + kind.keyword().len() + close + 1];
            if id.starts_with('<') && id.ends_with('>') {
                continue;
            }
            if is_valid_id(id) && body.starts_with(' ') {
                let citation = Citation {
                    kind,
                    id: id.to_owned(),
                    line: line_index + 1,
                };
                if kind == CitationKind::Verify && cites_an_ignored_test(text, line_index) {
                    scan.ignored.push(citation);
                } else {
                    scan.citations.push(citation);
                }
            } else {
                scan.malformed.push(MalformedCitation {
                    line: line_index + 1,
                    text: whole.to_owned(),
                });
            }
        }
    }
    scan
}

/// Whether the item the comment on line `index` stands above is a Rust test marked
/// `#[ignore]`: an attribute line `#[ignore…]` before the next `fn`.
fn cites_an_ignored_test(text: &str, index: usize) -> bool {
    for line in text.lines().skip(index + 1).take(40) {
        let line = line.trim_start();
        if line.starts_with("#[ignore") {
            return true;
        }
        if line.starts_with("fn ") || line.contains(" fn ") || line.starts_with("async fn ") {
            return false;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    // Citations are assembled at run time so that this file itself cites nothing: the ledger
    // scans every source file of the workspace, this one included.
    fn cite(kind: &str, id: &str) -> String {
        format!("// r[{kind} {id}]")
    }

    #[test]
    fn reads_verify_and_impl_citations_with_their_lines() {
        let text = format!(
            "fn a() {{}}\n{}\n    {}\n",
            cite("verify", "gate.token.single-use"),
            cite("impl", "release.acl")
        );
        let scan = scan_citations(&text);
        assert_eq!(scan.malformed, vec![]);
        assert_eq!(
            scan.citations,
            vec![
                Citation {
                    kind: CitationKind::Verify,
                    id: "gate.token.single-use".into(),
                    line: 2
                },
                Citation {
                    kind: CitationKind::Impl,
                    id: "release.acl".into(),
                    line: 3
                },
            ]
        );
    }

    #[test]
    fn reports_a_bogus_citation_instead_of_ignoring_it() {
        for bogus in [
            "Gate.Token",
            "gate token",
            "gate..token",
            "gate.token,release.acl",
            "",
        ] {
            let text = cite("verify", bogus);
            let scan = scan_citations(&text);
            assert!(
                scan.citations.is_empty(),
                "{bogus:?} was read as a citation"
            );
            assert_eq!(scan.malformed.len(), 1, "{bogus:?} was not reported");
        }
        let unclosed = format!("// r[{} gate.token.single-use", "verify");
        assert_eq!(scan_citations(&unclosed).malformed.len(), 1);
    }

    #[test]
    fn an_unknown_but_well_formed_id_is_a_citation_for_the_ledger_to_refuse() {
        let scan = scan_citations(&cite("verify", "gate.token.no-such-clause"));
        assert_eq!(scan.citations.len(), 1);
        assert_eq!(scan.citations[0].id, "gate.token.no-such-clause");
    }

    #[test]
    fn a_citation_on_an_ignored_test_does_not_count() {
        let text = format!(
            "{}\n#[test]\n#[ignore = \"divergence\"]\nfn a() {{}}\n{}\n#[test]\nfn b() {{}}\n",
            cite("verify", "a.one"),
            cite("verify", "a.two")
        );
        let scan = scan_citations(&text);
        let counted: Vec<&str> = scan.citations.iter().map(|c| c.id.as_str()).collect();
        let ignored: Vec<&str> = scan.ignored.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(counted, ["a.two"]);
        assert_eq!(ignored, ["a.one"]);
    }

    #[test]
    fn skips_placeholders_and_lookalikes() {
        let text = format!(
            "{}\nlet x = arr[verify_index];\nfoo_r[impl x]\nr[implement x]\n",
            cite("verify", "<clause-id>")
        );
        assert_eq!(scan_citations(&text), CitationScan::default());
    }

    #[test]
    fn reads_several_citations_on_one_line() {
        let text = format!("{} {}", cite("verify", "a.b"), cite("impl", "c.d"));
        let ids: Vec<_> = scan_citations(&text)
            .citations
            .into_iter()
            .map(|c| c.id)
            .collect();
        assert_eq!(ids, ["a.b", "c.d"]);
    }

    #[test]
    fn id_grammar() {
        assert!(is_valid_id("gate.token.single-use"));
        assert!(is_valid_id("trip.decline.no-redispatch"));
        assert!(!is_valid_id("Gate.token"));
        assert!(!is_valid_id("gate..token"));
        assert!(!is_valid_id(".gate"));
        assert!(!is_valid_id("1gate.token"));
        assert!(!is_valid_id("gate_token"));
        assert_eq!(const_name("gate.token.single-use"), "GATE_TOKEN_SINGLE_USE");
    }

    #[test]
    fn parses_clauses_and_skips_fenced_examples() {
        let text = "# Title\n\nr[a.one]\nFirst sentence\ncontinued.\n\n```text\nr[a.example]\nIgnored.\n```\n\nr[a.two]\nSecond.\n";
        let (clauses, errors) = parse_spec_file("a.md", text);
        assert_eq!(errors, vec![]);
        assert_eq!(clauses.len(), 2);
        assert_eq!(clauses[0].id, "a.one");
        assert_eq!(clauses[0].text, "First sentence continued.");
        assert_eq!(clauses[0].line, 3);
        assert_eq!(clauses[1].id, "a.two");
    }

    #[test]
    fn refuses_malformed_id_lines_and_missing_sentences() {
        let text = "r[A.bad]\nText.\n\nr[a.alone]\n\nr[a.ok] trailing\nText.\n";
        let (clauses, errors) = parse_spec_file("a.md", text);
        assert!(clauses.is_empty());
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(matches!(
            errors[1],
            SpecError::MissingSentence { line: 4, .. }
        ));
    }

    #[test]
    fn refuses_duplicates_and_const_collisions() {
        let (mut clauses, _) = parse_spec_file("a.md", "r[a.b-c]\nOne.\n\nr[all]\nTwo.\n");
        let (more, _) = parse_spec_file("b.md", "r[a.b-c]\nThree.\n\nr[a-b.c]\nFour.\n");
        clauses.extend(more);
        let errors = check_unique(&clauses);
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(matches!(&errors[0], SpecError::ConstNameCollision { name, .. } if name == "ALL"));
        assert!(
            matches!(&errors[1], SpecError::DuplicateId { first, second, .. } if first == "a.md:1" && second == "b.md:1")
        );
        assert!(
            matches!(&errors[2], SpecError::ConstNameCollision { name, .. } if name == "A_B_C")
        );
    }
}
