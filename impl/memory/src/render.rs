//! An entity's note: what the store owns of it, and how it is put together with what a
//! person added (spec/memory.md `memory.note.frontmatter`, `memory.note.layout`,
//! `memory.note.sorted`, `memory.edits.outside-kept`).
//!
//! The store owns three frontmatter keys ([`KEY_ID`], [`KEY_TYPE`], [`KEY_STATUS`],
//! namespaced so a person's own `id`, `type` or `status` is never taken) and the text
//! between the marker lines [`BEGIN`] and [`END`] (HTML comments, which Obsidian does not
//! show): a heading, the observations, the relations from the entity and the relations to
//! it, as wikilinks. Everything else, other frontmatter keys and text before or after the
//! markers, is the person's, and a re-render keeps it byte for byte.

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use tc_vault::note::{FrontmatterError, parse_note, split_frontmatter};

use crate::names::wikilink;
use crate::store::{Entity, Link, Neighbour, entity_id};

/// The frontmatter key holding the entity id.
pub const KEY_ID: &str = "memory_id";
/// The frontmatter key holding the entity type.
pub const KEY_TYPE: &str = "memory_type";
/// The frontmatter key holding the entity status.
pub const KEY_STATUS: &str = "memory_status";
/// The line that opens the store's section.
pub const BEGIN: &str = "<!-- memory:begin -->";
/// The line that closes the store's section.
pub const END: &str = "<!-- memory:end -->";

/// What the store owns of a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub id: String,
    pub kind: String,
    pub status: String,
    /// The text between the marker lines, each line ending in `\n`.
    pub body: String,
}

fn neighbour(other: &Neighbour) -> String {
    match &other.note_path {
        Some(path) => wikilink(path),
        None => format!("{} ({}, {})", other.name, other.kind, entity_id(other.id)),
    }
}

// r[impl memory.note.layout]
// r[impl memory.note.sorted]
/// The store's section of `entity`'s note, with its relations from ([`crate::store::links_of`]
/// order: relation, then the other end's type, name and id) and to it.
pub fn section(entity: &Entity, outgoing: &[Link], incoming: &[Link]) -> Section {
    let mut body = format!("# {}\n", entity.name);
    if !entity.observations.is_empty() {
        body.push_str("\n## Observations\n\n");
        for observation in &entity.observations {
            body.push_str(&format!("- {observation}\n"));
        }
    }
    if !outgoing.is_empty() {
        body.push_str("\n## Relations\n\n");
        for link in outgoing {
            body.push_str(&format!("- {} {}\n", link.relation, neighbour(&link.other)));
        }
    }
    if !incoming.is_empty() {
        body.push_str("\n## Referenced by\n\n");
        for link in incoming {
            body.push_str(&format!("- {} {}\n", neighbour(&link.other), link.relation));
        }
    }
    Section {
        id: entity_id(entity.id),
        kind: entity.kind.clone(),
        status: entity.status.as_str().to_owned(),
        body,
    }
}

/// The hash the store keeps of a section it wrote, to tell later whether a person edited it.
pub fn owned_hash(section: &Section) -> String {
    let mut hasher = Sha256::new();
    for part in [&section.id, &section.kind, &section.status, &section.body] {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part.as_bytes());
    }
    hex::encode(hasher.finalize())
}

/// Where the marker lines are in a note's body: (start of the opening line, end of it,
/// start of the closing line, end of it), when there is exactly one of each, in order.
fn markers(body: &str) -> Option<(usize, usize, usize, usize)> {
    let mut begin = Vec::new();
    let mut end = Vec::new();
    let mut offset = 0;
    for line in body.split_inclusive('\n') {
        let trimmed = line.trim_end_matches(['\n', '\r']);
        if trimmed == BEGIN {
            begin.push((offset, offset + line.len()));
        } else if trimmed == END {
            end.push((offset, offset + line.len()));
        }
        offset += line.len();
    }
    match (begin.as_slice(), end.as_slice()) {
        ([(b0, b1)], [(e0, e1)]) if b1 <= e0 => Some((*b0, *b1, *e0, *e1)),
        _ => None,
    }
}

fn string_of(frontmatter: &Value, key: &str) -> String {
    match frontmatter.get(key) {
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

// r[impl memory.edits.inside-refused]
/// The store's section as `text` holds it now; `None` when the note no longer has its
/// marker lines (once each, in order) or its frontmatter does not parse.
pub fn found_section(text: &str) -> Option<Section> {
    let note = parse_note(text).ok()?;
    let frontmatter = note
        .frontmatter
        .map_or_else(|| json!({}), |fm| fm.to_json());
    let (_, open_end, close_start, _) = markers(note.body)?;
    Some(Section {
        id: string_of(&frontmatter, KEY_ID),
        kind: string_of(&frontmatter, KEY_TYPE),
        status: string_of(&frontmatter, KEY_STATUS),
        body: note.body[open_end..close_start].replace("\r\n", "\n"),
    })
}

/// The memory id a note carries in its frontmatter, if any.
pub fn note_entity_id(text: &str) -> Option<String> {
    let note = parse_note(text).ok()?;
    let frontmatter = note.frontmatter?.to_json();
    frontmatter.get(KEY_ID)?.as_str().map(str::to_owned)
}

/// `text` as a YAML scalar: plain when it cannot be read as anything but that string,
/// else double-quoted (a JSON string is a valid YAML double-quoted scalar).
fn yaml_scalar(text: &str) -> String {
    let plain = text.chars().next().is_some_and(|c| c.is_alphabetic())
        && text
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, ' ' | '_' | '-' | '.'))
        && !text.ends_with(' ')
        && !matches!(
            text.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "y" | "n" | "null" | "nan" | "inf"
        );
    if plain {
        text.to_owned()
    } else {
        serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
    }
}

fn owned_lines(section: &Section) -> [(&'static str, String); 3] {
    [
        (KEY_ID, format!("{KEY_ID}: {}", yaml_scalar(&section.id))),
        (
            KEY_TYPE,
            format!("{KEY_TYPE}: {}", yaml_scalar(&section.kind)),
        ),
        (
            KEY_STATUS,
            format!("{KEY_STATUS}: {}", yaml_scalar(&section.status)),
        ),
    ]
}

/// The YAML of a frontmatter block with the owned keys' lines set: a top-level line of an
/// owned key is replaced where it is, a missing key is added at the end; every other line
/// is kept as it is.
fn with_owned_lines(yaml: &str, section: &Section, newline: &str) -> String {
    let mut out = String::with_capacity(yaml.len() + 96);
    let lines = owned_lines(section);
    let mut placed = [false; 3];
    for line in yaml.split_inclusive('\n') {
        let key = line.split(':').next().unwrap_or("");
        match lines.iter().position(|(k, _)| *k == key) {
            Some(i) if !placed[i] => {
                out.push_str(&lines[i].1);
                out.push_str(newline);
                placed[i] = true;
            }
            Some(_) => {}
            None => out.push_str(line),
        }
    }
    if !out.is_empty() && !out.ends_with('\n') {
        out.push_str(newline);
    }
    for (i, (_, line)) in lines.iter().enumerate() {
        if !placed[i] {
            out.push_str(line);
            out.push_str(newline);
        }
    }
    out
}

/// Whether `text`'s frontmatter holds the owned keys with `section`'s values.
fn owned_keys_hold(text: &str, section: &Section) -> bool {
    let Ok(note) = parse_note(text) else {
        return false;
    };
    let frontmatter = note
        .frontmatter
        .map_or_else(|| json!({}), |fm| fm.to_json());
    frontmatter.get(KEY_ID) == Some(&json!(section.id))
        && frontmatter.get(KEY_TYPE) == Some(&json!(section.kind))
        && frontmatter.get(KEY_STATUS) == Some(&json!(section.status))
}

// r[impl memory.note.frontmatter]
// r[impl memory.edits.outside-kept]
/// The note holding `section`: `existing` with its owned keys' lines set (every other line
/// of its frontmatter kept byte for byte) and the text between its markers replaced,
/// everything else kept as it was; a fresh note when there is none (or the section added at
/// the end of a note that lost its markers).
pub fn compose(existing: Option<&str>, section: &Section) -> Result<String, FrontmatterError> {
    let (yaml, body, newline) = match existing.map(|text| (text, split_frontmatter(text))) {
        Some((_, Some(span))) => (span.yaml, span.body, if span.crlf { "\r\n" } else { "\n" }),
        Some((text, None)) => ("", text, "\n"),
        None => ("", "", "\n"),
    };
    let block = format!("{BEGIN}\n{}{END}\n", section.body);
    let new_body = match markers(body) {
        Some((open_start, _, _, close_end)) => {
            format!("{}{block}{}", &body[..open_start], &body[close_end..])
        }
        None if body.is_empty() => block,
        None => {
            let sep = if body.ends_with("\n\n") {
                ""
            } else if body.ends_with('\n') {
                "\n"
            } else {
                "\n\n"
            };
            format!("{body}{sep}{block}")
        }
    };
    let text = format!(
        "---{newline}{}---{newline}{new_body}",
        with_owned_lines(yaml, section, newline)
    );
    if owned_keys_hold(&text, section) {
        return Ok(text);
    }
    // An owned key written over several lines by hand (or YAML that does not parse):
    // serialize the mapping instead, which sets the keys whatever their shape was.
    let mut frontmatter = parse_note(existing.unwrap_or(""))?
        .frontmatter
        .unwrap_or_default();
    let mut owned = Map::new();
    owned.insert(KEY_ID.to_owned(), json!(section.id));
    owned.insert(KEY_TYPE.to_owned(), json!(section.kind));
    owned.insert(KEY_STATUS.to_owned(), json!(section.status));
    frontmatter.merge(&owned)?;
    Ok(format!("---\n{}---\n{new_body}", frontmatter.to_yaml()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Status;

    fn ada() -> Entity {
        Entity {
            id: 7,
            vault: "main".into(),
            kind: "person".into(),
            name: "Ada Lovelace".into(),
            observations: vec!["wrote the first program".into(), "born 1815".into()],
            status: Status::Active,
            materialized: true,
            note_path: Some("memory/person/Ada Lovelace.md".into()),
            owned_hash: None,
            created_ms: 0,
            updated_ms: 0,
        }
    }

    fn engine() -> Link {
        Link {
            relation: "worked_on".into(),
            other: Neighbour {
                id: 8,
                kind: "machine".into(),
                name: "Analytical Engine".into(),
                note_path: Some("memory/machine/Analytical Engine.md".into()),
            },
        }
    }

    #[test]
    fn a_fresh_note_has_the_owned_keys_heading_observations_and_links() {
        let section = section(&ada(), &[engine()], &[]);
        let text = compose(None, &section).unwrap();
        assert_eq!(
            text,
            "---\nmemory_id: e7\nmemory_type: person\nmemory_status: active\n---\n\
             <!-- memory:begin -->\n# Ada Lovelace\n\n## Observations\n\n\
             - wrote the first program\n- born 1815\n\n## Relations\n\n\
             - worked_on [[memory/machine/Analytical Engine|Analytical Engine]]\n\
             <!-- memory:end -->\n"
        );
        assert_eq!(found_section(&text), Some(section));
    }

    #[test]
    fn a_persons_keys_and_text_outside_the_markers_are_kept() {
        let first = section(&ada(), &[], &[]);
        let written = compose(None, &first).unwrap();
        let edited = written
            .replace("---\nmemory_id", "---\ntags: [math]\nmemory_id")
            .replace(
                "<!-- memory:begin -->",
                "Intro by hand.\n\n<!-- memory:begin -->",
            )
            + "\n## My notes\n\nShe met Babbage.\n";
        let found = found_section(&edited).unwrap();
        assert_eq!(owned_hash(&found), owned_hash(&first));
        let next = section(&ada(), &[engine()], &[]);
        let text = compose(Some(&edited), &next).unwrap();
        assert!(
            text.starts_with("---\ntags: [math]\nmemory_id: e7\n"),
            "{text}"
        );
        assert!(text.contains("Intro by hand.\n\n<!-- memory:begin -->\n# Ada"));
        assert!(text.ends_with("<!-- memory:end -->\n\n## My notes\n\nShe met Babbage.\n"));
        assert!(text.contains("worked_on [["));
    }

    #[test]
    fn an_edit_inside_the_markers_changes_the_owned_hash() {
        let first = section(&ada(), &[], &[]);
        let written = compose(None, &first).unwrap();
        let edited = written.replace("- born 1815", "- born 1816");
        assert_ne!(
            owned_hash(&found_section(&edited).unwrap()),
            owned_hash(&first)
        );
        let retyped = written.replace("memory_type: person", "memory_type: poet");
        assert_ne!(
            owned_hash(&found_section(&retyped).unwrap()),
            owned_hash(&first)
        );
        let unmarked = written.replace("<!-- memory:end -->\n", "");
        assert_eq!(found_section(&unmarked), None);
    }
}
