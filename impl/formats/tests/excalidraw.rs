//! The drawing tools through the tool pipeline (spec/formats.md `formats.excalidraw.*`;
//! spec/drift.md `drift.bind.create-excalidraw`; spec/tools.md
//! `tools.compose.create-excalidraw`).

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use tc_formats::excalidraw::doc;
use tc_tools::ErrorCode;
use tc_tools::testing::{Tools, deny_write_all, forbid_all, with_token};

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

fn elements() -> Value {
    json!([
        {"id": "Txt1abcd", "type": "text", "text": "Plan", "x": 0, "y": 0, "width": 40, "height": 20,
         "customData": {"mine": [1, 2]}},
        {"id": "box-1", "type": "rectangle", "x": -10, "y": -10, "width": 60, "height": 40,
         "boundElements": [{"id": "Txt1abcd", "type": "text"}]}
    ])
}

fn drawing(compressed: bool) -> String {
    let els: Vec<Map<String, Value>> = serde_json::from_value(elements()).unwrap();
    doc::write(&els, compressed)
}

// r[verify formats.excalidraw.path]
// r[verify formats.excalidraw.read]
#[test]
fn read_excalidraw_reads_plain_and_compressed_drawings_and_refuses_the_rest() {
    let fx = Fx::new();
    for (path, compressed) in [("a.excalidraw.md", false), ("b/c.excalidraw.md", true)] {
        fx.put(path, &drawing(compressed));
        let out = fx.call("read_excalidraw", json!({"path": path})).unwrap();
        assert_eq!(out["compressed"], compressed);
        assert_eq!(out["elements"], elements());
        assert_eq!(
            out["text_elements"],
            json!([{"id": "Txt1abcd", "text": "Plan"}])
        );
    }
    let refused = |args: Value| fx.call("read_excalidraw", args).unwrap_err().code;
    assert_eq!(
        refused(json!({"path": "plan.md"})),
        ErrorCode::ValidationError
    );
    assert_eq!(
        refused(json!({"path": ".obsidian/x.excalidraw.md"})),
        ErrorCode::PathInvalid
    );
    assert_eq!(
        refused(json!({"path": "none.excalidraw.md"})),
        ErrorCode::NoteNotFound
    );
    fx.put("plain.excalidraw.md", "# not a drawing\n");
    assert_eq!(
        refused(json!({"path": "plain.excalidraw.md"})),
        ErrorCode::InvalidInput
    );
}

/// LZString data whose dictionary entries each grow by one character: `codes` codes expand
/// to about codes²/2 characters. Built bit by bit here, independently of the crate's coder.
fn bomb(codes: u32) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    let (mut value, mut position) = (0u32, 0u32);
    let mut put = |mut v: u32, n: u32, out: &mut String| {
        for _ in 0..n {
            value = (value << 1) | (v & 1);
            v >>= 1;
            if position == 5 {
                out.push(char::from(ALPHABET[value as usize]));
                value = 0;
                position = 0;
            } else {
                position += 1;
            }
        }
    };
    put(0, 2, &mut out);
    put(u32::from(b'a'), 8, &mut out);
    let (mut dict, mut enlarge, mut bits) = (4u32, 4u32, 3u32);
    for _ in 0..codes {
        put(dict, bits, &mut out);
        dict += 1;
        enlarge -= 1;
        if enlarge == 0 {
            enlarge = 1 << bits;
            bits += 1;
        }
    }
    put(2, bits, &mut out);
    put(0, 6, &mut out);
    out
}

// r[verify formats.excalidraw.bomb]
#[test]
fn a_decompression_bomb_is_refused() {
    let fx = Fx::new();
    let data = bomb(8_300);
    assert!(data.len() < 25_000, "{}", data.len());
    fx.put(
        "bomb.excalidraw.md",
        &format!("# Excalidraw Data\n\n## Drawing\n```compressed-json\n{data}\n```\n%%"),
    );
    let refusal = fx
        .call("read_excalidraw", json!({"path": "bomb.excalidraw.md"}))
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::InvalidInput, "{refusal}");
    assert!(refusal.message.contains("decompresses past"), "{refusal}");
    // A small one of the same shape is read, so the refusal is the size, not the form.
    fx.put(
        "small.excalidraw.md",
        &format!("## Drawing\n```compressed-json\n{}\n```\n", bomb(10)),
    );
    let small = fx.call("read_excalidraw", json!({"path": "small.excalidraw.md"}));
    // "aaa…" is not a JSON object: read as far as the scene, then refused for that.
    assert!(!small.unwrap_err().message.contains("decompresses past"));
}

// r[verify formats.excalidraw.create]
// r[verify formats.excalidraw.style]
// r[verify tools.compose.create-excalidraw]
#[test]
fn create_is_free_at_a_free_path_and_asks_only_over_a_file() {
    let fx = Fx::new();
    let args = json!({"path": "d/sketch.excalidraw.md", "elements": elements()});
    let out = fx.call("create_excalidraw", args.clone()).unwrap();
    assert_eq!(
        (out["created"].clone(), out["compressed"].clone()),
        (json!(true), json!(true))
    );
    assert_eq!(fx.requested(), 0);
    let text = fx.get("d/sketch.excalidraw.md").unwrap();
    assert!(text.starts_with(doc::HEADER), "{text}");
    assert!(
        text.contains("## Text Elements\nPlan ^Txt1abcd\n\n%%\n## Drawing\n```compressed-json\n")
    );
    let back = fx
        .call("read_excalidraw", json!({"path": "d/sketch.excalidraw.md"}))
        .unwrap();
    assert_eq!(back["elements"], elements());
    // Over it without overwrite: note_exists; overwrite with nothing there: free.
    assert_eq!(
        fx.call("create_excalidraw", args.clone()).unwrap_err().code,
        ErrorCode::NoteExists
    );
    let fresh = json!({"path": "e.excalidraw.md", "elements": [], "overwrite": true});
    fx.call("create_excalidraw", fresh).unwrap();
    assert_eq!(fx.requested(), 0);
    // Over a plain drawing: asks, and the replacement stays plain.
    fx.put("p.excalidraw.md", &drawing(false));
    let over = json!({"path": "p.excalidraw.md", "overwrite": true,
                      "elements": [{"id": "only", "type": "ellipse", "x": 1, "y": 2}]});
    let token = fx.require("create_excalidraw", &over);
    let out = fx
        .call("create_excalidraw", with_token(&over, &token))
        .unwrap();
    assert_eq!(out["compressed"], false);
    assert!(
        fx.get("p.excalidraw.md")
            .unwrap()
            .contains("```json\n{\n\t\"type\": \"excalidraw\"")
    );
    // The plugin's setting decides a new drawing's form.
    fx.put(
        ".obsidian/plugins/obsidian-excalidraw-plugin/data.json",
        "{\"folder\": \"Excalidraw\", \"compress\": false}",
    );
    let out = fx
        .call(
            "create_excalidraw",
            json!({"path": "q.excalidraw.md", "elements": []}),
        )
        .unwrap();
    assert_eq!(out["compressed"], false);
    // Bad elements are refused before anything is written.
    for bad in [
        json!([{"id": "t1", "type": "text", "text": "short id"}]),
        json!([{"id": "a", "type": "line"}, {"id": "a", "type": "line"}]),
        json!([{"type": "line"}]),
    ] {
        let refusal = fx
            .call(
                "create_excalidraw",
                json!({"path": "x.excalidraw.md", "elements": bad}),
            )
            .unwrap_err();
        assert_eq!(refusal.code, ErrorCode::ValidationError);
    }
    assert_eq!(fx.get("x.excalidraw.md"), None);
    assert_eq!(
        fx.call("create_excalidraw", json!({"path": "x.md", "elements": []}))
            .unwrap_err()
            .code,
        ErrorCode::ValidationError
    );
}

#[test]
fn conventions_and_the_acl_hold_for_a_new_drawing() {
    let fx = Fx::with(None, forbid_all());
    let args = json!({"path": "n.excalidraw.md", "elements": []});
    assert_eq!(
        fx.call("create_excalidraw", args.clone()).unwrap_err().code,
        ErrorCode::ConventionBlocked
    );
    let fx = Fx::with(Some(deny_write_all()), Vec::new());
    assert_eq!(
        fx.call("create_excalidraw", args).unwrap_err().code,
        ErrorCode::AclDenied
    );
    assert_eq!(fx.get("n.excalidraw.md"), None);
}

fn replacing() -> Scenario<'static> {
    Scenario {
        tool: "create_excalidraw",
        args: json!({"path": "s.excalidraw.md", "overwrite": true,
                     "elements": [{"id": "zz", "type": "diamond", "x": 0, "y": 0}]}),
        setup: &|fx| fx.put("s.excalidraw.md", &drawing(true)),
        applied: &|fx| {
            let out = fx
                .call("read_excalidraw", json!({"path": "s.excalidraw.md"}))
                .unwrap();
            assert_eq!(out["elements"][0]["id"], "zz");
        },
        untouched: &|fx| assert_eq!(fx.get("s.excalidraw.md").unwrap(), drawing(true)),
        drift: &|fx| fx.put("s.excalidraw.md", &drawing(false)),
    }
}

// r[verify drift.bind.create-excalidraw]
#[test]
fn replacing_a_drawing_is_bound_to_its_bytes() {
    replacing().drift_refused();
    replacing().approve_then_replay();
    replacing().preflight_keeps_token(forbid_all());
    replacing().acl_releases(deny_write_all());
}

fn element() -> impl Strategy<Value = Map<String, Value>> {
    let scalar = prop_oneof![
        any::<i32>().prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::from),
        Just(Value::Null),
    ];
    let value = scalar.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-zA-Z]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    (
        prop_oneof![Just("rectangle"), Just("text"), Just("arrow")],
        "\\PC{0,20}",
        prop::collection::btree_map("[a-z][a-zA-Z]{0,8}", value, 0..6),
    )
        .prop_map(|(kind, text, extra)| {
            let mut m: Map<String, Value> = extra.into_iter().collect();
            m.insert("type".into(), Value::from(kind));
            if kind == "text" {
                m.insert("text".into(), Value::from(text));
            }
            m
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    // r[verify formats.excalidraw.read]
    // r[verify formats.excalidraw.compressed]
    /// read → write → read loses no field of any element, unknown ones included.
    #[test]
    fn a_drawing_round_trips_every_field(
        mut els in prop::collection::vec(element(), 0..8),
        compressed in any::<bool>(),
    ) {
        for (i, el) in els.iter_mut().enumerate() {
            el.insert("id".into(), Value::from(format!("Id{i:06}")));
        }
        let text = doc::write(&els, compressed);
        let first = doc::parse(&text, doc::MAX_SCENE_UNITS).unwrap();
        let again: Vec<Map<String, Value>> = first
            .elements()
            .iter()
            .map(|v| v.as_object().cloned().unwrap())
            .collect();
        prop_assert_eq!(&again, &els);
        let second = doc::parse(&doc::write(&again, compressed), doc::MAX_SCENE_UNITS).unwrap();
        prop_assert_eq!(second.elements(), first.elements());
        let texts: Vec<&Map<String, Value>> = els.iter().filter(|e| e["type"] == "text").collect();
        prop_assert_eq!(first.text_elements.len(), texts.len());
    }
}
