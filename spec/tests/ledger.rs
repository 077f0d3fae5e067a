//! The ledger: every clause of `spec/*.md` is verified by some test, or `spec/todo.toml` says
//! which issue will verify it and why.
//!
//! It reads the clauses, scans the workspace's sources (`*.rs`, and the end-to-end tests'
//! `.ts`, `.mjs`, `.js`, `.py`) for `r[verify <id>]` and `r[impl <id>]` citations, and fails,
//! listing every problem at once, on: a clause defined twice; a citation of an unknown ID or
//! one it cannot read; a clause no `r[verify <id>]` cites that todo.toml does not name; a todo
//! entry for an unknown clause; a todo entry for a clause that is now cited. It then
//! snapshots (insta) clause → files that verify it, so coverage changes show in review.
//!
//! `TC_SPEC_WRITE_TODO=1` first rewrites todo.toml from the current citations: cited clauses
//! leave it, uncited ones keep their issue and reason or get the default of their area.
//! Without it the test only checks. See spec/README.md.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tc_spec::parse::{
    CitationKind, CitationScan, ClauseDef, MalformedCitation, SpecError, check_unique,
    parse_spec_file, scan_citations,
};

/// Source files whose comments may cite clauses.
const SCANNED_EXTENSIONS: &[&str] = &["rs", "ts", "mjs", "js", "py"];
/// Folders that hold build output, dependencies or fuzzer output, never our sources. Hidden
/// folders (`.git`, `.venv`, …) are skipped too.
const SKIPPED_DIR_NAMES: &[&str] = &["target", "node_modules", "venv", "__pycache__"];
const SKIPPED_DIR_PATHS: &[&str] = &["fuzz/corpus", "fuzz/artifacts", "fuzz/coverage"];

/// Where an uncited clause is expected to be covered when `TC_SPEC_WRITE_TODO=1` meets it for
/// the first time; the longest matching prefix wins. Issues: 3 tc-gate, 4 tc-vault,
/// 5 server, CLI, configuration and auth.
const DEFAULT_TODO: &[(&str, u32, &str)] = &[
    (
        "approval.",
        3,
        "redemption checks are tc-gate's, compared with tc-model in tc-conformance",
    ),
    ("auth.", 5, "authentication is the HTTP server's"),
    ("cli.", 5, "the obsidian-tc binary"),
    ("config.", 5, "configuration loading is the binary's"),
    ("dispatch.", 5, "the tools/call pipeline is the server's"),
    ("drift.", 3, "drift mechanics are tc-gate's"),
    (
        "drift.bind.",
        4,
        "each tool declares its binding in tc-vault",
    ),
    ("drift.every-route", 5, "the routes meet in the server"),
    ("drift.fresh-retry", 5, "the refusal text is the server's"),
    (
        "drift.residual.",
        4,
        "residuals of the tools' bindings, stated by tc-vault",
    ),
    (
        "drift.startup-refusal",
        4,
        "the tool registry is tc-vault's",
    ),
    (
        "drift.targets-declared",
        4,
        "the tool registry is tc-vault's",
    ),
    ("events.", 3, "the event store is tc-gate's"),
    (
        "floors.",
        4,
        "confirmation conditions are fixed in tc-vault's tools",
    ),
    (
        "floors.permissive-config",
        5,
        "needs the whole server under a permissive config",
    ),
    (
        "gate.",
        3,
        "the token store and raised requests are tc-gate's",
    ),
    ("gate.routes", 5, "the four routes meet in the server"),
    ("gate.sensitive.confirm", 5, "end to end through the server"),
    (
        "gate.token.unneeded",
        5,
        "the server's dispatch decides when a token is read",
    ),
    ("governor.", 3, "the governor is tc-gate's"),
    ("governor.shared", 5, "the server applies it to every tool"),
    ("metrics.", 5, "the HTTP server's /metrics"),
    ("paging.", 4, "read_notes and list_notes are tc-vault's"),
    ("paging.cursor.", 3, "the cursor codec is tc-gate's"),
    ("release.", 3, "release outcomes are tc-gate's API"),
    (
        "release.governor-keeps-spent",
        5,
        "the governor stage is the server's",
    ),
    (
        "release.preflight",
        4,
        "the conventions preflight is tc-vault's",
    ),
    ("release.update-task", 4, "update_task is tc-vault's"),
    ("resource.", 5, "resources/read is the server's"),
    (
        "results.",
        5,
        "result and error shapes on the wire are the server's",
    ),
    ("state.", 3, "requestState keys and codec are tc-gate's"),
    (
        "state.every-auth-mode",
        5,
        "needs the HTTP server in each auth mode",
    ),
    (
        "state.replay.",
        5,
        "replay across auth modes is the server's",
    ),
    ("tools.", 4, "the tools are tc-vault's"),
    ("trip.", 5, "the round trips are the server's"),
    ("vault.", 4, "the vault is tc-vault's"),
];
const FALLBACK_TODO: (u32, &str) = (5, "not yet verified by any test");

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TodoEntry {
    clause: String,
    issue: u32,
    reason: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TodoFile {
    #[serde(default)]
    todo: Vec<TodoEntry>,
}

/// Everything the ledger knows, built from texts so that tests can feed it in memory.
#[derive(Debug, Default)]
struct Ledger {
    clauses: Vec<ClauseDef>,
    spec_errors: Vec<SpecError>,
    /// Per source file (workspace-relative, `/`-separated), what it cites.
    sources: BTreeMap<String, CitationScan>,
    todo: Vec<TodoEntry>,
    todo_error: Option<String>,
}

impl Ledger {
    fn build<'a>(
        spec_files: impl IntoIterator<Item = (&'a str, &'a str)>,
        sources: impl IntoIterator<Item = (String, String)>,
        todo_toml: &str,
    ) -> Self {
        let mut ledger = Self::default();
        for (name, text) in spec_files {
            let (clauses, errors) = parse_spec_file(name, text);
            ledger.clauses.extend(clauses);
            ledger.spec_errors.extend(errors);
        }
        ledger.spec_errors.extend(check_unique(&ledger.clauses));
        ledger.sources = sources
            .into_iter()
            .map(|(path, text)| (path, scan_citations(&text)))
            .collect();
        match toml::from_str::<TodoFile>(todo_toml) {
            Ok(file) => ledger.todo = file.todo,
            Err(error) => ledger.todo_error = Some(error.to_string()),
        }
        ledger
    }

    fn clause_ids(&self) -> BTreeSet<&str> {
        self.clauses.iter().map(|c| c.id.as_str()).collect()
    }

    /// Clause → files that cite it with `kind` (only IDs that are clauses).
    fn citing_files(&self, kind: CitationKind) -> BTreeMap<&str, BTreeSet<&str>> {
        let ids = self.clause_ids();
        let mut map: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for (path, scan) in &self.sources {
            for citation in scan.citations.iter().filter(|c| c.kind == kind) {
                if let Some(id) = ids.get(citation.id.as_str()) {
                    map.entry(id).or_default().insert(path.as_str());
                }
            }
        }
        map
    }

    fn problems(&self) -> Vec<String> {
        let mut problems: Vec<String> = self.spec_errors.iter().map(|e| e.to_string()).collect();
        let ids = self.clause_ids();
        for (path, scan) in &self.sources {
            for MalformedCitation { line, text } in &scan.malformed {
                problems.push(format!(
                    "{path}:{line}: `{text}` is not a citation: write `r[verify <id>]` or \
                     `r[impl <id>]` with one clause ID (angle brackets mark a placeholder)"
                ));
            }
            for citation in &scan.citations {
                if !ids.contains(citation.id.as_str()) {
                    problems.push(format!(
                        "{path}:{}: cites unknown clause `{}` ({}); use an ID from spec/*.md or \
                         add the clause there",
                        citation.line,
                        citation.id,
                        citation.kind.keyword()
                    ));
                }
            }
        }
        if let Some(error) = &self.todo_error {
            problems.push(format!("spec/todo.toml does not parse: {error}"));
        }
        let verified = self.citing_files(CitationKind::Verify);
        let mut todo_seen = BTreeSet::new();
        for entry in &self.todo {
            if !todo_seen.insert(entry.clause.as_str()) {
                problems.push(format!(
                    "spec/todo.toml names `{}` twice; keep one entry",
                    entry.clause
                ));
            }
            // A regenerated entry carries the default reason of its clause's area: someone
            // must say why this clause is not verified yet, and by what.
            if entry.reason.trim().is_empty()
                || DEFAULT_TODO
                    .iter()
                    .any(|(_, _, reason)| *reason == entry.reason)
                || entry.reason == FALLBACK_TODO.1
            {
                problems.push(format!(
                    "spec/todo.toml gives `{}` no reason of its own (\"{}\"); write why it is not \
                     verified yet and what will verify it",
                    entry.clause, entry.reason
                ));
            }
            if !ids.contains(entry.clause.as_str()) {
                problems.push(format!(
                    "spec/todo.toml names `{}`, which is not a clause; delete the entry",
                    entry.clause
                ));
            } else if let Some(files) = verified.get(entry.clause.as_str()) {
                problems.push(format!(
                    "spec/todo.toml still lists `{}`, which is now verified by {}; delete the entry",
                    entry.clause,
                    files.iter().copied().collect::<Vec<_>>().join(", ")
                ));
            }
        }
        for id in &ids {
            if !verified.contains_key(id) && !todo_seen.contains(id) {
                problems.push(format!(
                    "clause `{id}` is verified by no test: cite it with `r[{} {id}]` in a \
                     test, or name it in spec/todo.toml with the issue that will",
                    CitationKind::Verify.keyword()
                ));
            }
        }
        problems
    }

    /// todo.toml as it should be now: uncited clauses only, keeping known issues and reasons.
    fn regenerated_todo(&self) -> TodoFile {
        let verified = self.citing_files(CitationKind::Verify);
        let existing: BTreeMap<&str, &TodoEntry> =
            self.todo.iter().map(|e| (e.clause.as_str(), e)).collect();
        let todo = self
            .clause_ids()
            .into_iter()
            .filter(|id| !verified.contains_key(id))
            .map(|id| match existing.get(id) {
                Some(entry) => (*entry).clone(),
                None => {
                    let (issue, reason) = default_todo(id);
                    TodoEntry {
                        clause: id.to_owned(),
                        issue,
                        reason: reason.to_owned(),
                    }
                }
            })
            .collect();
        TodoFile { todo }
    }

    /// One line per clause: the files that verify it, or the issue that will.
    fn coverage_table(&self) -> String {
        let verified = self.citing_files(CitationKind::Verify);
        let todo: BTreeMap<&str, u32> = self
            .todo
            .iter()
            .map(|e| (e.clause.as_str(), e.issue))
            .collect();
        let mut table = String::new();
        for id in self.clause_ids() {
            let cell = match (verified.get(id), todo.get(id)) {
                (Some(files), _) => files.iter().copied().collect::<Vec<_>>().join(", "),
                (None, Some(issue)) => format!("(todo #{issue})"),
                (None, None) => "(UNCOVERED)".to_owned(),
            };
            table.push_str(&format!("{id}: {cell}\n"));
        }
        table
    }
}

fn default_todo(id: &str) -> (u32, &'static str) {
    DEFAULT_TODO
        .iter()
        .filter(|(prefix, _, _)| id.starts_with(prefix))
        .max_by_key(|(prefix, _, _)| prefix.len())
        .map_or(FALLBACK_TODO, |(_, issue, reason)| (*issue, *reason))
}

fn render_todo(file: &TodoFile) -> Result<String, toml::ser::Error> {
    let header = "# Clauses no test verifies yet: the issue that will verify each, and why.\n\
                  # Checked by spec/tests/ledger.rs. Regenerate from the current citations with\n\
                  #   TC_SPEC_WRITE_TODO=1 cargo test -p tc-spec --test ledger\n\
                  # (kept entries keep their issue and reason; edit reasons by hand as needed).\n\n";
    Ok(format!("{header}{}", toml::to_string(file)?))
}

// ---------------------------------------------------------------------------------------
// Reading the real workspace.

fn spec_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn workspace_root() -> PathBuf {
    spec_dir()
        .parent()
        .map_or_else(|| spec_dir().to_path_buf(), Path::to_path_buf)
}

fn read_spec_files() -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(spec_dir())
        .expect("spec/ lists")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .map(|path| {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let text = std::fs::read_to_string(&path).expect("spec file reads");
            (name, text)
        })
        .collect();
    files.sort();
    files
}

/// Every scanned source file under `dir`, as (workspace-relative path, text). Symbolic links
/// are not followed, so a link cannot make the walk leave the workspace or loop.
fn collect_sources(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let path = entry.path();
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        let relative = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        let name = entry.file_name().to_string_lossy().into_owned();
        if file_type.is_dir() {
            if name.starts_with('.')
                || SKIPPED_DIR_NAMES.contains(&name.as_str())
                || SKIPPED_DIR_PATHS.contains(&relative.as_str())
            {
                continue;
            }
            collect_sources(root, &path, out);
        } else if file_type.is_file()
            && path
                .extension()
                .is_some_and(|ext| SCANNED_EXTENSIONS.iter().any(|e| ext == *e))
            && let Ok(bytes) = std::fs::read(&path)
        {
            out.push((relative, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
}

fn todo_path() -> PathBuf {
    spec_dir().join("todo.toml")
}

fn load_workspace_ledger() -> Ledger {
    let spec_files = read_spec_files();
    let root = workspace_root();
    let mut sources = Vec::new();
    collect_sources(&root, &root, &mut sources);
    let todo = std::fs::read_to_string(todo_path()).unwrap_or_default();
    Ledger::build(
        spec_files.iter().map(|(n, t)| (n.as_str(), t.as_str())),
        sources,
        &todo,
    )
}

#[test]
fn every_clause_is_verified_or_has_a_todo() {
    let mut ledger = load_workspace_ledger();
    if std::env::var_os("TC_SPEC_WRITE_TODO").is_some_and(|v| v == "1") {
        let regenerated = ledger.regenerated_todo();
        let text = render_todo(&regenerated).expect("todo.toml renders");
        // Write beside and rename, so a concurrent reader never sees half a file.
        let temporary = spec_dir().join("todo.toml.tmp");
        std::fs::write(&temporary, text).expect("todo.toml.tmp writes");
        std::fs::rename(&temporary, todo_path()).expect("todo.toml is replaced");
        ledger.todo = regenerated.todo;
        ledger.todo_error = None;
    }

    let problems = ledger.problems();
    assert!(
        problems.is_empty(),
        "the spec ledger has {} problem(s):\n  - {}\n\nTo rewrite spec/todo.toml from the current \
         citations: TC_SPEC_WRITE_TODO=1 cargo test -p tc-spec --test ledger",
        problems.len(),
        problems.join("\n  - ")
    );

    let verified = ledger.citing_files(CitationKind::Verify).len();
    let summary = format!(
        "# {verified} of {} clauses verified; the rest name their issue in spec/todo.toml\n",
        ledger.clauses.len()
    );
    insta::assert_snapshot!(
        "coverage",
        summary + &ledger.coverage_table(),
        "clause -> files that verify it (accept a change: INSTA_UPDATE=always cargo test -p tc-spec --test ledger)"
    );
}

// ---------------------------------------------------------------------------------------
// The ledger's own rules, on inputs built in memory.

/// A citation assembled at run time, so this file cites nothing itself.
fn cite(kind: &str, id: &str) -> String {
    format!("// r[{kind} {id}]\n")
}

const SPEC: &str = "r[a.one]\nOne.\n\nr[a.two]\nTwo.\n";

fn ledger_with(sources: &[(&str, String)], todo: &str) -> Ledger {
    Ledger::build(
        [("a.md", SPEC)],
        sources.iter().map(|(p, t)| ((*p).to_owned(), t.clone())),
        todo,
    )
}

fn todo_for(ids: &[&str]) -> String {
    ids.iter()
        .map(|id| format!("[[todo]]\nclause = \"{id}\"\nissue = 3\nreason = \"later\"\n"))
        .collect()
}

#[test]
fn a_fully_covered_spec_has_no_problems() {
    let tests = cite("verify", "a.one") + &cite("verify", "a.two");
    let ledger = ledger_with(&[("x/tests/t.rs", tests)], "");
    assert_eq!(ledger.problems(), Vec::<String>::new());
    assert_eq!(
        ledger.coverage_table(),
        "a.one: x/tests/t.rs\na.two: x/tests/t.rs\n"
    );
}

#[test]
fn an_unknown_citation_fails() {
    let tests = cite("verify", "a.one") + &cite("impl", "a.bogus");
    let ledger = ledger_with(&[("t.rs", tests)], &todo_for(&["a.two"]));
    let problems = ledger.problems();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("unknown clause `a.bogus`"),
        "{problems:?}"
    );
    assert!(problems[0].starts_with("t.rs:2:"), "{problems:?}");
}

#[test]
fn a_malformed_citation_fails() {
    let tests = cite("verify", "a.one") + &cite("verify", "A.Two");
    let ledger = ledger_with(&[("t.rs", tests)], &todo_for(&["a.two"]));
    let problems = ledger.problems();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("is not a citation"), "{problems:?}");
}

#[test]
fn an_uncited_clause_needs_a_todo_and_impl_does_not_count() {
    let sources = cite("verify", "a.one") + &cite("impl", "a.two");
    let ledger = ledger_with(&[("t.rs", sources.clone())], "");
    let problems = ledger.problems();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("clause `a.two` is verified by no test"));

    let ledger = ledger_with(&[("t.rs", sources)], &todo_for(&["a.two"]));
    assert_eq!(ledger.problems(), Vec::<String>::new());
    assert_eq!(ledger.coverage_table(), "a.one: t.rs\na.two: (todo #3)\n");
}

#[test]
fn stale_unknown_and_repeated_todos_fail() {
    let tests = cite("verify", "a.one");
    let ledger = ledger_with(
        &[("t.rs", tests)],
        &todo_for(&["a.one", "a.two", "a.two", "b.x"]),
    );
    let problems = ledger.problems();
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(problems[0].contains("still lists `a.one`, which is now verified by t.rs"));
    assert!(problems[1].contains("names `a.two` twice"));
    assert!(problems[2].contains("`b.x`, which is not a clause"));
}

#[test]
fn a_todo_needs_a_reason_of_its_own() {
    let tests = cite("verify", "a.one");
    let default_reason = FALLBACK_TODO.1;
    let todo = format!("[[todo]]\nclause = \"a.two\"\nissue = 3\nreason = \"{default_reason}\"\n");
    let problems = ledger_with(&[("t.rs", tests.clone())], &todo).problems();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("no reason of its own"), "{problems:?}");
    let todo = "[[todo]]\nclause = \"a.two\"\nissue = 3\nreason = \"  \"\n";
    assert_eq!(ledger_with(&[("t.rs", tests)], todo).problems().len(), 1);
}

#[test]
fn a_duplicate_clause_fails() {
    let ledger = Ledger::build(
        [("a.md", SPEC), ("b.md", "r[a.one]\nAgain.\n")],
        [(
            "t.rs".to_owned(),
            cite("verify", "a.one") + &cite("verify", "a.two"),
        )],
        "",
    );
    let problems = ledger.problems();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("`a.one` is defined twice: at a.md:1 and at b.md:1"));
}

#[test]
fn a_broken_todo_file_fails() {
    let tests = cite("verify", "a.one") + &cite("verify", "a.two");
    let ledger = ledger_with(&[("t.rs", tests)], "[[todo]]\nclause = \"a.one\"\n");
    assert!(ledger.problems()[0].contains("todo.toml does not parse"));
}

#[test]
fn regenerating_keeps_known_entries_and_drops_cited_ones() {
    let tests = cite("verify", "a.one");
    let kept = "[[todo]]\nclause = \"a.two\"\nissue = 4\nreason = \"vault\"\n";
    let stale = "[[todo]]\nclause = \"a.one\"\nissue = 3\nreason = \"old\"\n";
    let ledger = ledger_with(&[("t.rs", tests.clone())], &format!("{kept}{stale}"));
    let regenerated = ledger.regenerated_todo();
    assert_eq!(
        regenerated.todo,
        vec![TodoEntry {
            clause: "a.two".into(),
            issue: 4,
            reason: "vault".into()
        }]
    );
    // A clause met for the first time gets its area's default, and the file round-trips.
    let ledger = ledger_with(&[("t.rs", tests)], "");
    let regenerated = ledger.regenerated_todo();
    assert_eq!(regenerated.todo.len(), 1);
    assert_eq!(regenerated.todo[0].issue, FALLBACK_TODO.0);
    let text = render_todo(&regenerated).expect("renders");
    let reread: TodoFile = toml::from_str(&text).expect("parses");
    assert_eq!(reread.todo, regenerated.todo);
}

#[test]
fn default_issues_take_the_longest_prefix() {
    assert_eq!(default_todo("drift.refuse").0, 3);
    assert_eq!(default_todo("drift.bind.git-commit").0, 4);
    assert_eq!(default_todo("drift.every-route").0, 5);
    assert_eq!(default_todo("paging.cursor.bound").0, 3);
    assert_eq!(default_todo("paging.order").0, 4);
}

#[test]
fn the_walk_skips_build_output_and_reads_the_spec_crate() {
    let root = workspace_root();
    let mut sources = Vec::new();
    collect_sources(&root, &root, &mut sources);
    let paths: Vec<&str> = sources.iter().map(|(p, _)| p.as_str()).collect();
    assert!(paths.contains(&"spec/tests/ledger.rs"), "{paths:?}");
    assert!(paths.contains(&"spec/build.rs"), "{paths:?}");
    assert!(
        paths
            .iter()
            .all(|p| !p.starts_with("target/") && !p.contains("/target/") && !p.contains(".git/")),
        "{paths:?}"
    );
}
