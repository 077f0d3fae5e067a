//! The server is built from one list of tool families, and `tools.families` serves a part of
//! it (spec/tools.md `tools.families`, `tools.families.one-door`).

mod mcp_support;

use std::collections::BTreeSet;
use std::sync::Arc;

use mcp_support::*;
use serde_json::json;
use tc_server::config::Config;
use tc_tools::{
    Annotations, Family, Gating, Precheck, Registry, RegistryBuildError, SubsystemSetup, Tool,
    ToolCx, ToolError, ToolSpec,
};

/// The families and tools a default server serves, family by family.
fn served_by_family(h: &Harness) -> Vec<(String, Vec<String>)> {
    let sessions = Arc::new(
        tc_sessions::Sessions::open(
            &h.cache,
            tc_sessions::SessionsConfig::default(),
            Arc::new(tc_gate::clock::SystemClock),
        )
        .unwrap(),
    );
    let setup = SubsystemSetup {
        cache_dir: &h.cache,
        clock: Arc::new(tc_gate::clock::SystemClock),
    };
    tc_server::families::families(&h.config, &sessions)
        .iter()
        .map(|family| {
            let mut registry = Registry::new();
            family.register(&mut registry, &setup).unwrap();
            (
                family.name().to_owned(),
                registry.iter().map(|d| d.name.clone()).collect(),
            )
        })
        .collect()
}

// r[verify tools.families]
// r[verify tools.families.one-door]
#[tokio::test]
async fn the_server_is_built_from_its_families_and_serves_what_tools_families_names() {
    let h = Harness::new();
    let by_family = served_by_family(&h);
    let names: Vec<&str> = by_family.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "notes",
            "sections",
            "memory",
            "bridge",
            "ocr",
            "search",
            "git",
            "sessions",
            "metadata",
            "periodic",
            "tasks",
            "attachments",
            "bulk",
            "formats"
        ]
    );
    // Every served tool comes from exactly one family, and nothing else registers one.
    let mut from_families = BTreeSet::new();
    for (family, tools) in &by_family {
        assert!(!tools.is_empty(), "{family} registers no tool");
        for tool in tools {
            assert!(from_families.insert(tool.clone()), "{tool} twice");
        }
    }
    let served: BTreeSet<String> = h.core.registry().iter().map(|d| d.name.clone()).collect();
    assert_eq!(served, from_families);

    // Two families only: their tools, none of the others'.
    let h = Harness::with(|c: &mut Config| {
        c.tools.families = Some(vec!["git".to_owned(), "notes".to_owned()]);
    });
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let listed: BTreeSet<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    let expected: BTreeSet<String> = by_family
        .iter()
        .filter(|(family, _)| family == "git" || family == "notes")
        .flat_map(|(_, tools)| tools.iter().cloned())
        .collect();
    assert_eq!(listed, expected);
    assert!(!listed.contains("search_notes"));
    // A tool of a family not served is no tool of this server.
    let outcome = client
        .call_tool_once(
            rmcp::model::CallToolRequestParams::new("search_notes")
                .with_arguments(args(json!({"query": "x"}))),
        )
        .await;
    assert!(outcome.is_err(), "{outcome:?}");
}

// r[verify tools.families]
#[test]
fn tools_families_naming_no_family_is_refused_at_start_up_with_the_names() {
    let vault = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    config.add_vault_dir(vault.path()).unwrap();
    config.tools.families = Some(vec!["notes".to_owned(), "periodical".to_owned()]);
    let built = tc_server::serve::assemble(
        &config,
        cache.path(),
        false,
        Arc::new(tc_server::metrics::Metrics::new()),
        Vec::new(),
        None,
    );
    let message = built.unwrap_err().to_string();
    assert!(
        message.starts_with("tools.families names `periodical`"),
        "{message}"
    );
    assert!(
        message.contains("notes, sections, memory, bridge"),
        "{message}"
    );
}

/// A family a new crate would add: one type implementing [`Family`].
#[derive(Debug)]
struct Clocks;

#[derive(Debug)]
struct WhatTimeIsIt;

#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
struct NoArgs {}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Now {
    ms: i64,
}

impl Tool for WhatTimeIsIt {
    type Args = NoArgs;
    type Output = Now;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "what_time_is_it",
            description: "The server's clock.",
            annotations: Annotations::READS,
            scopes: &["read:notes"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, _cx: &ToolCx<'_>, _args: &NoArgs) -> Result<Precheck, ToolError> {
        Ok(Precheck::free())
    }

    fn run(
        &self,
        _cx: &ToolCx<'_>,
        _args: &NoArgs,
        _precheck: &Precheck,
        _state: &tc_tools::TargetState,
    ) -> Result<Now, tc_tools::HandlerFailure> {
        Ok(Now { ms: 1 })
    }
}

impl Family for Clocks {
    fn name(&self) -> &'static str {
        "clocks"
    }

    fn register(
        &self,
        registry: &mut Registry,
        _setup: &SubsystemSetup<'_>,
    ) -> Result<(), RegistryBuildError> {
        registry.add(WhatTimeIsIt)
    }
}

// r[verify tools.families.one-door]
/// A family beside the server's own is served by naming it in the list, nothing else.
#[test]
fn a_new_family_is_one_type_and_one_entry_in_the_list() {
    let h = Harness::new();
    let sessions = Arc::new(
        tc_sessions::Sessions::open(
            &h.cache,
            tc_sessions::SessionsConfig::default(),
            Arc::new(tc_gate::clock::SystemClock),
        )
        .unwrap(),
    );
    let mut families = tc_server::families::families(&h.config, &sessions);
    families.push(Box::new(Clocks));
    let setup = SubsystemSetup {
        cache_dir: &h.cache,
        clock: Arc::new(tc_gate::clock::SystemClock),
    };
    let mut config = h.config.clone();
    config.tools.families = Some(vec!["clocks".to_owned()]);
    let registry = tc_server::families::registry(&config, &setup, &families).unwrap();
    let names: Vec<&str> = registry.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["what_time_is_it"]);
}

// r[verify tools.families.one-door]
/// No family crate depends on another: what two need lives below them (tc-tools, tc-vault,
/// tc-gate, and the index, which the search family serves and the metadata, journal and bulk
/// families read), so a family is added, or taken out, alone.
#[test]
fn no_family_crate_depends_on_another() {
    let families = [
        "notes",
        "memory",
        "git",
        "ocr",
        "bridge",
        "sessions",
        "metadata",
        "periodic",
        "attachments",
        "bulk",
        "formats",
    ];
    let impl_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let depends_on = |krate: &str, name: &str| {
        let manifest = std::fs::read_to_string(impl_dir.join(krate).join("Cargo.toml")).unwrap();
        // The normal dependencies: from `[dependencies]` to the next table.
        let start = manifest.find("[dependencies]").expect("[dependencies]");
        let rest = &manifest[start + "[dependencies]".len()..];
        let end = rest.find("\n[").unwrap_or(rest.len());
        rest[..end].lines().any(|line| {
            line.trim_start().starts_with(&format!("{name}."))
                || line.trim_start().starts_with(&format!("{name} "))
        })
    };
    for family in families {
        for other in families.iter().filter(|other| **other != family) {
            let name = format!("tc-{other}");
            assert!(!depends_on(family, &name), "tc-{family} depends on {name}");
        }
        // The index is a layer below the families: it depends on none of them.
        let name = format!("tc-{family}");
        assert!(!depends_on("index", &name), "tc-index depends on {name}");
    }
}
