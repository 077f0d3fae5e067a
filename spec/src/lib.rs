//! tc-spec: the clauses of obsidian-tc's written specification (`spec/*.md`) as Rust.
//!
//! Each clause of the specification is an ID line `r[<id>]` followed by one normative
//! sentence (see `spec/README.md`). `build.rs` reads every `spec/*.md` and generates:
//!
//! - one constant per clause, named after its ID uppercased with `.` and `-` turned into
//!   `_`: [`GATE_TOKEN_SINGLE_USE`] is `"gate.token.single-use"`, and its rustdoc is the
//!   clause's sentence;
//! - [`ALL`], every clause ID sorted;
//! - [`CLAUSES`], every [`Clause`] (ID, file, sentence) sorted by ID, behind [`clause`] and
//!   [`clause_text`].
//!
//! Code that names a clause in a message (the model's refusals, a conformance mismatch)
//! uses the constants, so a renamed or deleted clause is a compile error rather than a
//! dangling string. Tests cite the clauses they check with `// r[verify <id>]` comments,
//! which the ledger test (`tests/ledger.rs`) reads together with `spec/todo.toml`; the
//! notation's reader is [`parse`], shared with `build.rs`.

pub mod parse;

/// One clause of the specification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clause {
    /// The clause ID, e.g. `gate.token.single-use`.
    pub id: &'static str,
    /// The spec file that defines it, e.g. `gate.md`.
    pub file: &'static str,
    /// Its one normative sentence.
    pub text: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/clauses.rs"));

/// The clause with this ID, if the specification defines it.
pub fn clause(id: &str) -> Option<&'static Clause> {
    CLAUSES
        .binary_search_by(|clause| clause.id.cmp(id))
        .ok()
        .map(|index| &CLAUSES[index])
}

/// The sentence of the clause with this ID, if the specification defines it.
pub fn clause_text(id: &str) -> Option<&'static str> {
    clause(id).map(|clause| clause.text)
}

/// Whether the specification defines a clause with this ID.
pub fn is_clause(id: &str) -> bool {
    clause(id).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_name_their_clauses() {
        assert_eq!(GATE_TOKEN_SINGLE_USE, "gate.token.single-use");
        assert_eq!(TRIP_DECLINE_NO_REDISPATCH, "trip.decline.no-redispatch");
        assert!(ALL.contains(&STATE_EXT_SINGLE_USE));
    }

    #[test]
    fn all_is_sorted_unique_and_matches_clauses() {
        assert!(ALL.windows(2).all(|pair| pair[0] < pair[1]));
        assert_eq!(ALL.len(), CLAUSES.len());
        assert!(ALL.iter().zip(CLAUSES).all(|(id, clause)| *id == clause.id));
    }

    #[test]
    fn looks_up_sentences() {
        let text = clause_text(RELEASE_NO_EFFECT_ONLY).unwrap_or_default();
        assert!(text.contains("positively knows"), "{text}");
        assert_eq!(clause(DRIFT_REFUSE).map(|c| c.file), Some("drift.md"));
        assert_eq!(clause_text("no.such-clause"), None);
        assert!(!is_clause("gate"));
    }

    #[test]
    fn extensions_say_so() {
        for id in ALL.iter().filter(|id| id.starts_with("state.ext.")) {
            let text = clause_text(id).unwrap_or_default();
            assert!(text.starts_with("(extension)"), "{id}: {text}");
        }
    }

    #[test]
    fn every_sentence_is_one_sentence() {
        for clause in CLAUSES {
            assert!(clause.text.ends_with('.'), "{}: {}", clause.id, clause.text);
        }
    }
}
