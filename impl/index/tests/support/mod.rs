//! The tc-index tests' fixture: tc-tools' shared one over the note tools and the index's
//! tools, with the vault's index built and attached to the fixture's binding.
#![allow(dead_code, unused_imports)]

use std::sync::Arc;

pub mod embed_server;

use tc_index::{EmbeddingsConfig, SearchConfig, VaultIndex};
pub use tc_tools::testing::{Tools, code, with_token};

/// The note tools and the index's tools, as the server registers them.
pub struct IndexTools;

impl Tools for IndexTools {
    fn registry() -> tc_tools::Registry {
        let mut registry = tc_notes::registry().unwrap();
        tc_index::register(&mut registry, &SearchConfig::default()).unwrap();
        registry
    }
}

pub type Fx = tc_tools::testing::Fx<IndexTools>;

/// Builds the index of the fixture's vault (in its cache folder) and attaches it.
pub fn indexed(fx: &Fx) -> Arc<VaultIndex> {
    let index = tc_index::open_indexes(
        &fx.cache(),
        [("main", fx.root.as_path())],
        &tc_index::SearchConfig::default(),
    )
    .unwrap()
    .remove(0);
    index.first_build();
    assert!(
        fx.pipeline
            .vault("main")
            .unwrap()
            .attach_index(index.clone())
    );
    index
}

/// The `[search]` config of an endpoint at `url` (model `bag-of-words`).
pub fn embeddings_at(url: &str) -> SearchConfig {
    SearchConfig {
        enabled: true,
        embeddings: Some(EmbeddingsConfig {
            url: url.to_owned(),
            model: "bag-of-words".to_owned(),
            api_key_env: None,
        }),
    }
}

/// Builds the index with `config`'s embeddings endpoint and attaches it; the first build's
/// embedding run is waited for, so the tests start from every chunk embedded.
pub fn indexed_with(fx: &Fx, config: &SearchConfig) -> Arc<VaultIndex> {
    let index = tc_index::open_indexes(&fx.cache(), [("main", fx.root.as_path())], config)
        .unwrap()
        .remove(0);
    index.first_build();
    index
        .embed_pending(None, tc_index::embed::RunWait::Block)
        .unwrap();
    assert!(
        fx.pipeline
            .vault("main")
            .unwrap()
            .attach_index(index.clone())
    );
    index
}
