//! The canvas tools through the tool pipeline (spec/formats.md `formats.canvas.*`;
//! spec/drift.md `drift.bind.create-canvas`, `drift.bind.update-canvas`; spec/tools.md
//! `tools.compose.create-canvas`, `tools.compose.update-canvas`).

use serde_json::{Value, json};
use tc_tools::ErrorCode;
use tc_tools::testing::{Tools, with_token};

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

const BOARD: &str = "{\n\t\"nodes\":[\n\t\t{\"id\":\"a\",\"type\":\"text\",\"text\":\"Idea\",\"x\":0,\"y\":0,\"width\":250,\"height\":60,\"pluginKey\":7},\n\t\t{\"id\":\"b\",\"type\":\"file\",\"file\":\"plan.md\",\"x\":300,\"y\":0,\"width\":400,\"height\":400}\n\t],\n\t\"edges\":[\n\t\t{\"id\":\"e\",\"fromNode\":\"a\",\"fromSide\":\"right\",\"toNode\":\"b\",\"toSide\":\"left\"}\n\t]\n}";

fn node(id: &str) -> Value {
    json!({"id": id, "type": "text", "text": id, "x": 0, "y": 0, "width": 10, "height": 10})
}

// r[verify formats.canvas.path]
// r[verify formats.canvas.round-trip]
#[test]
fn read_canvas_gives_every_field_and_refuses_what_is_not_a_canvas() {
    let fx = Fx::new();
    fx.put("boards/b.canvas", BOARD);
    let out = fx
        .call("read_canvas", json!({"path": "boards/b.canvas"}))
        .unwrap();
    assert_eq!(out["nodes"][0]["pluginKey"], 7);
    assert_eq!(out["edges"][0]["toNode"], "b");
    let not = fx
        .call("read_canvas", json!({"path": "plan.md"}))
        .unwrap_err();
    assert_eq!(not.code, ErrorCode::ValidationError);
    let hidden = fx
        .call("read_canvas", json!({"path": ".obsidian/x.canvas"}))
        .unwrap_err();
    assert_eq!(hidden.code, ErrorCode::PathInvalid);
    fx.put("broken.canvas", "{\"nodes\": 3}");
    let broken = fx
        .call("read_canvas", json!({"path": "broken.canvas"}))
        .unwrap_err();
    assert_eq!(broken.code, ErrorCode::InvalidInput, "{broken}");
}

// r[verify formats.canvas.create]
// r[verify tools.compose.create-canvas]
#[test]
fn create_is_free_at_a_free_path_and_asks_only_to_replace() {
    let fx = Fx::new();
    let args = json!({"path": "new.canvas", "nodes": [node("a"), node("b")],
                      "edges": [{"id": "e", "fromNode": "a", "toNode": "b"}]});
    let out = fx.call("create_canvas", args.clone()).unwrap();
    assert_eq!(out["created"], true);
    assert_eq!(fx.requested(), 0);
    let text = fx.get("new.canvas").unwrap();
    assert!(
        text.starts_with(
            "{\n\t\"nodes\":[\n\t\t{\"id\":\"a\",\"type\":\"text\",\"text\":\"a\",\"x\":0"
        ),
        "{text}"
    );
    // Over it without overwrite: note_exists; with overwrite: asks.
    assert_eq!(
        fx.call("create_canvas", args.clone()).unwrap_err().code,
        ErrorCode::NoteExists
    );
    let mut over = args.clone();
    over["overwrite"] = json!(true);
    over["nodes"] = json!([node("only")]);
    over["edges"] = json!([]);
    let token = fx.require("create_canvas", &over);
    fx.call("create_canvas", with_token(&over, &token)).unwrap();
    assert!(fx.get("new.canvas").unwrap().contains("\"only\""));
    // Bad nodes and edges are refused before anything is written.
    for bad in [
        json!({"path": "x.canvas", "nodes": [{"id": "a", "type": "text"}]}),
        json!({"path": "x.canvas", "nodes": [node("a"), node("a")]}),
        json!({"path": "x.canvas", "nodes": [node("a")], "edges": [{"id": "e", "fromNode": "a", "toNode": "zz"}]}),
    ] {
        assert_eq!(
            fx.call("create_canvas", bad).unwrap_err().code,
            ErrorCode::ValidationError
        );
    }
    assert_eq!(fx.get("x.canvas"), None);
}

// r[verify formats.canvas.update]
// r[verify formats.canvas.edges-follow]
// r[verify formats.canvas.round-trip]
#[test]
fn a_small_update_is_free_and_keeps_every_untouched_line() {
    let fx = Fx::new();
    fx.put("b.canvas", BOARD);
    let out = fx
        .call(
            "update_canvas",
            json!({"path": "b.canvas", "add_nodes": [node("c")],
                   "add_edges": [{"id": "f", "fromNode": "b", "toNode": "c"}]}),
        )
        .unwrap();
    assert_eq!(out["nodes"], json!(3));
    let text = fx.get("b.canvas").unwrap();
    // The two nodes and the edge that were there keep their lines byte for byte.
    for line in BOARD.lines().filter(|l| l.starts_with("\t\t")) {
        let line = line.trim_end_matches(',');
        assert!(text.contains(line), "{line} lost in {text}");
    }
    // Removing a node takes its edges with it.
    fx.call(
        "update_canvas",
        json!({"path": "b.canvas", "remove_node_ids": ["b"]}),
    )
    .unwrap();
    let after = fx.call("read_canvas", json!({"path": "b.canvas"})).unwrap();
    assert_eq!(after["edges"], json!([]));
    assert_eq!(after["nodes"].as_array().unwrap().len(), 2);
    // Unknown ids are refused, nothing written.
    let before = fx.get("b.canvas").unwrap();
    for bad in [
        json!({"path": "b.canvas", "remove_node_ids": ["nope"]}),
        json!({"path": "b.canvas", "update_nodes": [{"id": "nope", "x": 1}]}),
        json!({"path": "b.canvas", "add_nodes": [node("a")]}),
    ] {
        assert_eq!(
            fx.call("update_canvas", bad).unwrap_err().code,
            ErrorCode::ValidationError
        );
    }
    assert_eq!(fx.get("b.canvas").unwrap(), before);
    assert_eq!(fx.requested(), 0);
}

/// A canvas of twelve nodes, n0 … n11, as Obsidian writes it.
fn big_board() -> String {
    let lines: Vec<String> = (0..12)
        .map(|i| format!("\t\t{}", node(&format!("n{i}"))))
        .collect();
    format!(
        "{{\n\t\"nodes\":[\n{}\n\t],\n\t\"edges\":[]\n}}",
        lines.join(",\n")
    )
}

// r[verify drift.bind.update-canvas]
// r[verify tools.compose.update-canvas]
#[test]
fn removing_more_than_ten_nodes_asks_bound_to_the_canvas() {
    let remove: Vec<String> = (0..11).map(|i| format!("n{i}")).collect();
    Scenario {
        tool: "update_canvas",
        args: json!({"path": "big.canvas", "remove_node_ids": remove}),
        setup: &|fx| fx.put("big.canvas", &big_board()),
        applied: &|fx| {
            let text = fx.get("big.canvas").unwrap();
            assert!(
                text.contains("\"n11\"") && !text.contains("\"n3\""),
                "{text}"
            );
        },
        untouched: &|fx| assert!(fx.get("big.canvas").unwrap().contains("\"n3\"")),
        drift: &|fx| {
            let text = fx.get("big.canvas").unwrap();
            fx.put(
                "big.canvas",
                &text.replace("\"text\":\"n5\"", "\"text\":\"edited\""),
            );
        },
    }
    .drift_refused();
}

// r[verify drift.bind.create-canvas]
#[test]
fn replacing_a_canvas_is_bound_to_its_bytes() {
    Scenario {
        tool: "create_canvas",
        args: json!({"path": "b.canvas", "nodes": [node("z")], "overwrite": true}),
        setup: &|fx| fx.put("b.canvas", BOARD),
        applied: &|fx| assert!(fx.get("b.canvas").unwrap().contains("\"z\"")),
        untouched: &|fx| assert_eq!(fx.get("b.canvas").unwrap(), BOARD),
        drift: &|fx| fx.put("b.canvas", &BOARD.replace("Idea", "Idea, edited")),
    }
    .drift_refused();
}

mod round_trip {
    use proptest::prelude::*;
    use serde_json::{Map, Value};
    use tc_formats::canvas::doc::{self, Canvas, EDGE_KEYS, Item, NODE_KEYS};

    fn value() -> impl Strategy<Value = Value> {
        let scalar = prop_oneof![
            any::<i32>().prop_map(Value::from),
            any::<bool>().prop_map(Value::from),
            "\\PC{0,10}".prop_map(Value::from),
            Just(Value::Null),
        ];
        scalar.prop_recursive(2, 10, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
                prop::collection::btree_map("[a-zA-Z]{1,6}", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn fields(keys: usize) -> impl Strategy<Value = Map<String, Value>> {
        prop::collection::btree_map("[a-zA-Z]{1,8}", value(), 0..keys)
            .prop_map(|m| m.into_iter().collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        // r[verify formats.canvas.round-trip]
        /// write → read → write loses no field of any node, edge or top-level key (unknown ones
        /// included) and gives the same bytes.
        #[test]
        fn a_canvas_round_trips_every_field(
            nodes in prop::collection::vec(fields(5), 1..6),
            edges in prop::collection::vec(fields(3), 0..4),
            rest in prop::collection::btree_map("x[a-z]{1,5}", value(), 0..3),
        ) {
            let mut canvas = Canvas::default();
            for (i, mut node) in nodes.into_iter().enumerate() {
                node.insert("id".into(), Value::from(format!("n{i}")));
                canvas.nodes.push(Item::new(node, NODE_KEYS));
            }
            for (i, mut edge) in edges.into_iter().enumerate() {
                edge.insert("id".into(), Value::from(format!("e{i}")));
                edge.insert("fromNode".into(), Value::from("n0"));
                edge.insert("toNode".into(), Value::from("n0"));
                canvas.edges.push(Item::new(edge, EDGE_KEYS));
            }
            canvas.rest = rest.iter().map(|(k, v)| (k.clone(), v.to_string())).collect();
            let text = doc::write(&canvas);
            let back = doc::parse(&text).unwrap();
            let of = |items: &[Item]| items.iter().map(|i| i.fields.clone()).collect::<Vec<_>>();
            prop_assert_eq!(of(&back.nodes), of(&canvas.nodes));
            prop_assert_eq!(of(&back.edges), of(&canvas.edges));
            let kept: Vec<(String, Value)> = back
                .rest
                .iter()
                .map(|(k, raw)| (k.clone(), serde_json::from_str(raw).unwrap()))
                .collect();
            prop_assert_eq!(kept, rest.into_iter().collect::<Vec<_>>());
            prop_assert_eq!(doc::write(&back), text);
        }
    }
}
