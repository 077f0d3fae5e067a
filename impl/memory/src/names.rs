//! Entity names as note paths and wikilinks (spec/memory.md `memory.note.path`,
//! `memory.note.safe-name`, `memory.note.path-collision`).
//!
//! An entity's note is `<folder>/<type>/<name>.md`, each of type and name made into one safe
//! path segment: characters a file name cannot hold on the platforms Obsidian runs on
//! (`/ \ : * ? " < > |`), the ones that break a wikilink (`# ^ [ ] |`) and controls become
//! `-`, runs of white space one space, leading dots and trailing dots and spaces go (no hidden
//! or Windows-invalid names), and the segment is cut at [`MAX_SEGMENT_BYTES`]. Two names that
//! become the same segment, or a name whose path already holds a person's note, take the
//! path with a short suffix derived from the entity's type and name instead
//! ([`suffixed_note_path`]), so a second entity never writes over a first one's note.

use sha2::{Digest, Sha256};
use tc_vault::error::VaultError;
use tc_vault::path::{FolderPath, VaultPath};

/// The longest safe segment, in bytes (well under the 255 a file name may have, leaving
/// room for the collision suffix and `.md`).
pub const MAX_SEGMENT_BYTES: usize = 120;

/// What a segment that is empty once made safe is called.
pub const UNTITLED: &str = "untitled";

fn replaced(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '/' | '\\' | ':' | '*' | '?' | '"' | '<' | '>' | '|' | '#' | '^' | '[' | ']'
        )
}

// r[impl memory.note.safe-name]
/// `raw` as one path segment that is safe as a file name and inside a wikilink.
pub fn safe_segment(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut space = false;
    for c in raw.chars() {
        let c = if replaced(c) { '-' } else { c };
        if c.is_whitespace() {
            space = true;
            continue;
        }
        if space && !out.is_empty() {
            out.push(' ');
        }
        space = false;
        out.push(c);
    }
    let trimmed = out.trim_start_matches(['.', ' ']);
    let mut cut = trimmed.len().min(MAX_SEGMENT_BYTES);
    while !trimmed.is_char_boundary(cut) {
        cut -= 1;
    }
    let segment = trimmed[..cut].trim_end_matches(['.', ' ']);
    if segment.is_empty() {
        UNTITLED.to_owned()
    } else {
        segment.to_owned()
    }
}

fn join(folder: &FolderPath, kind: &str, file: &str) -> Result<VaultPath, VaultError> {
    VaultPath::parse_note(&format!(
        "{}/{}/{file}.md",
        folder.as_str(),
        safe_segment(kind)
    ))
}

// r[impl memory.note.path]
/// The note path an entity of `kind` named `name` takes first.
pub fn note_path(folder: &FolderPath, kind: &str, name: &str) -> Result<VaultPath, VaultError> {
    join(folder, kind, &safe_segment(name))
}

// r[impl memory.note.path-collision]
/// The path it takes when [`note_path`] is another's: the name with ` ~` and eight hex digits
/// of SHA-256 over the type and name, so the same entity always lands on the same path.
pub fn suffixed_note_path(
    folder: &FolderPath,
    kind: &str,
    name: &str,
) -> Result<VaultPath, VaultError> {
    let digest = Sha256::digest(format!("{kind}\n{name}").as_bytes());
    let suffix = &hex::encode(digest)[..8];
    join(folder, kind, &format!("{} ~{suffix}", safe_segment(name)))
}

/// The wikilink to a note: its path without `.md`, shown as its file name.
pub fn wikilink(path: &str) -> String {
    let target = path.strip_suffix(".md").unwrap_or(path);
    let shown = target.rsplit('/').next().unwrap_or(target);
    format!("[[{target}|{shown}]]")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn unsafe_characters_become_dashes_and_dots_go() {
        assert_eq!(safe_segment("a/b\\c:d*e?f"), "a-b-c-d-e-f");
        assert_eq!(safe_segment("[[x|y]]#^"), "--x-y----");
        assert_eq!(safe_segment("..hidden"), "hidden");
        assert_eq!(safe_segment(".obsidian"), "obsidian");
        assert_eq!(safe_segment("  many   spaces  "), "many spaces");
        assert_eq!(safe_segment("end. . "), "end");
        assert_eq!(safe_segment("..."), UNTITLED);
        assert_eq!(safe_segment("line\nbreak"), "line-break");
        assert_eq!(safe_segment("Zoë Ångström"), "Zoë Ångström");
    }

    #[test]
    fn the_path_is_folder_type_name() {
        let folder = FolderPath::parse("memory").unwrap();
        let path = note_path(&folder, "person", "Ada Lovelace").unwrap();
        assert_eq!(path.as_str(), "memory/person/Ada Lovelace.md");
        let other = suffixed_note_path(&folder, "person", "Ada Lovelace").unwrap();
        assert!(other.as_str().starts_with("memory/person/Ada Lovelace ~"));
        assert_eq!(
            other,
            suffixed_note_path(&folder, "person", "Ada Lovelace").unwrap()
        );
        assert_eq!(
            wikilink(path.as_str()),
            "[[memory/person/Ada Lovelace|Ada Lovelace]]"
        );
    }

    // r[verify memory.note.safe-name]
    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn every_name_makes_a_valid_note_path_and_link(kind in any::<String>(), name in any::<String>()) {
            let folder = FolderPath::parse("memory").unwrap();
            let path = note_path(&folder, &kind, &name).unwrap();
            prop_assert!(path.as_str().starts_with("memory/"));
            prop_assert_eq!(path.segments().count(), 3);
            let file = path.note_name();
            prop_assert!(!file.starts_with('.'));
            prop_assert!(file.len() <= MAX_SEGMENT_BYTES);
            prop_assert!(tc_vault::links::validate_link_target(file).is_ok(), "{}", file);
            prop_assert!(suffixed_note_path(&folder, &kind, &name).is_ok());
        }
    }
}
