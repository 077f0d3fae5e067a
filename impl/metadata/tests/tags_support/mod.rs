//! The tag tests' fixture: the metadata family's tools over tc-tools' shared fixture, with
//! the vault's index built and attached to the fixture's binding.
#![allow(dead_code, unused_imports)]

use serde_json::Value;
pub use tc_tools::testing::{Tools, code, with_token};

/// The metadata family's tools, as the server registers them.
pub struct MetadataTools;

impl Tools for MetadataTools {
    fn registry() -> tc_tools::Registry {
        let mut registry = tc_tools::Registry::new();
        tc_metadata::register(&mut registry).unwrap();
        registry
    }
}

pub type Fx = tc_tools::testing::Fx<MetadataTools>;

/// Builds the index of the fixture's vault and attaches it to the current pipeline's
/// binding (once: a binding that has one keeps it).
pub fn indexed(fx: &Fx) {
    let binding = fx.pipeline.vault("main").unwrap();
    if binding.index().is_some() {
        return;
    }
    let index = tc_index::open_indexes(
        &fx.cache(),
        [("main", fx.root.as_path())],
        &tc_index::SearchConfig::default(),
    )
    .unwrap()
    .remove(0);
    index.first_build();
    binding.attach_index(index);
}

/// A fixture holding `notes`, indexed.
pub fn vault_of(notes: &[(&str, &str)]) -> Fx {
    let fx = Fx::new();
    for (path, content) in notes {
        fx.put(path, content);
    }
    indexed(&fx);
    fx
}

/// The strings of `value[key]`.
pub fn strings(value: &Value, key: &str) -> Vec<String> {
    value[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

/// `list_tags`' entries as (tag, notes).
pub fn tag_counts(out: &Value) -> Vec<(String, u64)> {
    out["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["tag"].as_str().unwrap().to_owned(),
                t["notes"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// `find_notes_by_tag`'s note paths.
pub fn paths(out: &Value) -> Vec<String> {
    out["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["path"].as_str().unwrap().to_owned())
        .collect()
}
