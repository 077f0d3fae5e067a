//! The base tools through the tool pipeline (spec/formats.md `formats.bases.*`;
//! spec/drift.md `drift.bind.create-base`, `drift.bind.update-base`; spec/tools.md
//! `tools.compose.create-base`, `tools.compose.update-base`).

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use tc_formats::bases::{UpdateBase, UpdateBaseArgs, doc};
use tc_gate::clock::SeededEntropy;
use tc_gate::cursor::CursorCodec;
use tc_gate::keys::ServerSecret;
use tc_tools::testing::{TempVault, Tools, deny_write_all, forbid_all, with_token};
use tc_tools::{CallControl, ErrorCode, PageLimits, PagingSetup, TargetState, Tool, ToolCx};

struct FormatTools;

impl Tools for FormatTools {
    fn registry() -> tc_tools::Registry {
        let mut registry = tc_tools::Registry::new();
        tc_formats::register(&mut registry).unwrap();
        registry
    }
}

type Fx = tc_tools::testing::Fx<FormatTools>;
type Scenario<'a> = tc_tools::testing::Scenario<'a, FormatTools>;

/// A base as a person keeps it: a comment, quoting styles, a key Obsidian does not know.
const BOOKS: &str = "# reading list\nfilters:\n  and:\n    - file.hasTag(\"book\")\n    - 'status != \"done\"'   # open ones\nformulas:\n  ppu: \"(price / pages).toFixed(2)\"\nx-plugin: {keep: true}\nviews:\n  - type: table\n    name: \"Books\"\n";

// r[verify formats.bases.path]
// r[verify formats.bases.read]
#[test]
fn read_base_gives_every_key_and_refuses_what_is_not_a_base() {
    let fx = Fx::new();
    fx.put("lists/books.base", BOOKS);
    let out = fx
        .call("read_base", json!({"path": "lists/books.base"}))
        .unwrap();
    assert_eq!(out["definition"]["filters"]["and"][1], "status != \"done\"");
    assert_eq!(out["definition"]["x-plugin"], json!({"keep": true}));
    let refused = |args: Value| fx.call("read_base", args).unwrap_err().code;
    assert_eq!(
        refused(json!({"path": "books.md"})),
        ErrorCode::ValidationError
    );
    assert_eq!(
        refused(json!({"path": ".obsidian/b.base"})),
        ErrorCode::PathInvalid
    );
    fx.put("bad.base", "filters: [unclosed\n");
    assert_eq!(
        refused(json!({"path": "bad.base"})),
        ErrorCode::InvalidInput
    );
    fx.put("list.base", "- a\n- b\n");
    assert_eq!(
        refused(json!({"path": "list.base"})),
        ErrorCode::InvalidInput
    );
}

// r[verify formats.bases.create]
// r[verify formats.bases.check]
// r[verify tools.compose.create-base]
#[test]
fn create_base_is_free_at_a_free_path_and_asks_only_to_replace() {
    let fx = Fx::new();
    let definition = json!({"filters": {"or": ["file.hasTag(\"a\")", {"not": ["x"]}]},
                            "views": [{"type": "table", "name": "All"}], "mine": [1, 2]});
    let args = json!({"path": "a.base", "definition": definition});
    let out = fx.call("create_base", args.clone()).unwrap();
    assert_eq!(out["created"], true);
    assert_eq!(fx.requested(), 0);
    let back = fx.call("read_base", json!({"path": "a.base"})).unwrap();
    assert_eq!(back["definition"], definition);
    assert_eq!(
        fx.call("create_base", args.clone()).unwrap_err().code,
        ErrorCode::NoteExists
    );
    // overwrite with nothing there is free; over a base it asks.
    fx.call(
        "create_base",
        json!({"path": "b.base", "definition": {}, "overwrite": true}),
    )
    .unwrap();
    assert_eq!(fx.requested(), 0);
    let over = json!({"path": "a.base", "definition": {"views": []}, "overwrite": true});
    let token = fx.require("create_base", &over);
    fx.call("create_base", with_token(&over, &token)).unwrap();
    assert_eq!(fx.get("a.base").unwrap(), "views: []\n");
    for bad in [
        json!({"filters": 3}),
        json!({"filters": {"xor": ["a"]}}),
        json!({"views": [{"name": "no type"}]}),
        json!({"formulas": {"f": 1}}),
    ] {
        let refusal = fx
            .call("create_base", json!({"path": "c.base", "definition": bad}))
            .unwrap_err();
        assert_eq!(refusal.code, ErrorCode::ValidationError, "{refusal}");
    }
    assert_eq!(fx.get("c.base"), None);
}

// r[verify formats.bases.update]
// r[verify formats.bases.lossless]
// r[verify formats.bases.check]
#[test]
fn a_patch_that_leaves_the_filters_is_free_and_keeps_every_other_line() {
    let fx = Fx::new();
    fx.put("books.base", BOOKS);
    let out = fx
        .call(
            "update_base",
            json!({"path": "books.base", "patch": {"formulas": {"half": "price / 2"}, "x-plugin": null}}),
        )
        .unwrap();
    assert_eq!(out["changed"], json!(["formulas", "x-plugin"]));
    assert_eq!(fx.requested(), 0);
    let text = fx.get("books.base").unwrap();
    assert!(
        text.starts_with("# reading list\nfilters:\n  and:\n    - file.hasTag(\"book\")\n    - 'status != \"done\"'   # open ones\n"),
        "{text}"
    );
    assert!(
        text.ends_with("views:\n  - type: table\n    name: \"Books\"\n"),
        "{text}"
    );
    assert!(!text.contains("x-plugin"));
    let back = fx.call("read_base", json!({"path": "books.base"})).unwrap();
    assert_eq!(
        back["definition"]["formulas"],
        json!({"ppu": "(price / pages).toFixed(2)", "half": "price / 2"})
    );
    // A patch that changes nothing writes nothing; one that breaks the base is refused.
    let before = fx.get("books.base").unwrap();
    let same = json!({"path": "books.base", "patch": {"formulas": {"half": "price / 2"}}});
    assert_eq!(fx.call("update_base", same).unwrap()["changed"], json!([]));
    let breaking = json!({"path": "books.base", "patch": {"views": [{"name": "x"}]}});
    assert_eq!(
        fx.call("update_base", breaking).unwrap_err().code,
        ErrorCode::ValidationError
    );
    assert_eq!(fx.get("books.base").unwrap(), before);
    // A view's own filters are free; the top-level filters ask, even to remove them.
    let view = json!({"path": "books.base", "patch": {"views": [{"type": "table", "filters": "price > 2"}]}});
    fx.call("update_base", view).unwrap();
    assert_eq!(fx.requested(), 0);
    for patch in [
        json!({"filters": "file.inFolder(\"Books\")"}),
        json!({"filters": null}),
    ] {
        let args = json!({"path": "books.base", "patch": patch});
        let refusal = fx.call("update_base", args).unwrap_err();
        assert_eq!(refusal.code, ErrorCode::ElicitRequired, "{refusal}");
    }
    // A base that is missing, or cannot be edited in place, is refused.
    assert_eq!(
        fx.call("update_base", json!({"path": "none.base", "patch": {}}))
            .unwrap_err()
            .code,
        ErrorCode::NoteNotFound
    );
    fx.put("marked.base", "---\nfilters: a\n");
    assert_eq!(
        fx.call(
            "update_base",
            json!({"path": "marked.base", "patch": {"views": []}})
        )
        .unwrap_err()
        .code,
        ErrorCode::InvalidInput
    );
    assert_eq!(fx.get("marked.base").unwrap(), "---\nfilters: a\n");
}

// r[verify formats.bases.update]
/// A free patch planned on one base and run after the base changed so that the same patch
/// would change its filters: refused, nothing written.
#[test]
fn a_free_patch_never_changes_the_filters_of_a_base_changed_meanwhile() {
    let temp = TempVault::new();
    let vault = temp.open(temp.dir.path().join("snapshots"), 3);
    let secret = ServerSecret::ephemeral(&SeededEntropy::new(1));
    let binding = tc_tools::testing::binding(vault, &temp.cache(), &secret, None, &[]);
    let caller = tc_tools::testing::caller();
    let paging = PagingSetup {
        codec: CursorCodec::new(&secret),
        limits: PageLimits::new(65_536),
    };
    let control = CallControl::default();
    let cx = ToolCx {
        binding: &binding,
        caller: &caller,
        clock: &temp.clock,
        paging: &paging,
        control: &control,
    };
    temp.put("b.base", "filters: a\nviews: []\n");
    let args = UpdateBaseArgs {
        path: "b.base".into(),
        patch: json!({"filters": "a", "formulas": {"f": "1"}})
            .as_object()
            .cloned()
            .unwrap(),
    };
    let precheck = UpdateBase.precheck(&cx, &args).unwrap();
    assert!(!precheck.needs_confirmation);
    // Another key changed meanwhile: the free patch applies to the base as it is now.
    temp.put("b.base", "filters: a\nviews: [{type: cards}]\n");
    let out = UpdateBase
        .run(&cx, &args, &precheck, &TargetState::default())
        .unwrap();
    assert_eq!(out.changed, vec!["formulas"]);
    assert!(
        temp.get("b.base")
            .unwrap()
            .starts_with("filters: a\nviews: [{type: cards}]\n")
    );
    // The filters changed meanwhile: the same patch would now change them back.
    temp.put("b.base", "filters: b\nviews: []\n");
    let refusal = UpdateBase
        .run(&cx, &args, &precheck, &TargetState::default())
        .unwrap_err();
    assert!(
        format!("{refusal:?}").contains("ConcurrentModification"),
        "{refusal:?}"
    );
    assert_eq!(temp.get("b.base").unwrap(), "filters: b\nviews: []\n");
}

fn replacing() -> Scenario<'static> {
    Scenario {
        tool: "create_base",
        args: json!({"path": "books.base", "definition": {"views": []}, "overwrite": true}),
        setup: &|fx| fx.put("books.base", BOOKS),
        applied: &|fx| assert_eq!(fx.get("books.base").unwrap(), "views: []\n"),
        untouched: &|fx| assert_eq!(fx.get("books.base").unwrap(), BOOKS),
        drift: &|fx| fx.put("books.base", &BOOKS.replace("Books", "Novels")),
    }
}

fn refiltering() -> Scenario<'static> {
    Scenario {
        tool: "update_base",
        args: json!({"path": "books.base", "patch": {"filters": "file.inFolder(\"Books\")"}}),
        setup: &|fx| fx.put("books.base", BOOKS),
        applied: &|fx| {
            let text = fx.get("books.base").unwrap();
            assert!(
                text.starts_with("# reading list\nfilters: file.inFolder(\"Books\")\nformulas:\n"),
                "{text}"
            );
        },
        untouched: &|fx| assert_eq!(fx.get("books.base").unwrap(), BOOKS),
        drift: &|fx| fx.put("books.base", &BOOKS.replace("Books", "Novels")),
    }
}

// r[verify drift.bind.create-base]
// r[verify drift.bind.update-base]
// r[verify tools.compose.update-base]
#[test]
fn replacing_a_base_or_its_filters_is_bound_to_its_bytes() {
    for scenario in [replacing(), refiltering()] {
        scenario.drift_refused();
        scenario.approve_then_replay();
        scenario.preflight_keeps_token(forbid_all());
        scenario.acl_releases(deny_write_all());
    }
}

fn yaml_value() -> impl Strategy<Value = Value> {
    let scalar = prop_oneof![
        any::<i32>().prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        "[a-zA-Z0-9 #:'\"-]{0,12}".prop_map(Value::from),
    ];
    scalar.prop_recursive(2, 10, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
            prop::collection::btree_map("[a-z]{1,5}", inner, 1..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    // r[verify formats.bases.read]
    // r[verify formats.bases.lossless]
    /// write → read gives the definition back, unknown keys included; a patch of one key
    /// gives the merge-patched definition and keeps every other key's lines.
    #[test]
    fn a_base_round_trips_and_a_patch_keeps_the_rest(
        extra in prop::collection::btree_map("x-[a-z]{1,5}", yaml_value(), 0..4),
        key in "x-[a-z]{1,5}",
        value in yaml_value(),
    ) {
        let mut definition: Map<String, Value> = extra.into_iter().collect();
        definition.insert("filters".into(), json!({"and": ["a == 1"]}));
        definition.insert("views".into(), json!([{"type": "table"}]));
        let text = doc::write(&definition).unwrap();
        prop_assert_eq!(doc::parse(&text).unwrap(), definition.clone());
        let mut patch = Map::new();
        patch.insert(key.clone(), value.clone());
        let patched = doc::patch(&text, &patch).unwrap();
        let mut want = definition.clone();
        let merged = doc::merge_patch(definition.get(&key), &value);
        want.insert(key.clone(), merged);
        prop_assert_eq!(&patched.definition, &want);
        prop_assert_eq!(doc::parse(&patched.text).unwrap(), want);
        prop_assert!(patched.text.contains("filters:\n  and:\n  - a == 1\n"), "{}", patched.text);
    }
}
