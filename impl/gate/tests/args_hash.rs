//! args_hash and its canonical JSON (spec/gate.md, `gate.hash.args-hash`).

use std::fmt::Write as _;

use proptest::prelude::*;
use serde_json::{Value, json};
use tc_gate::args_hash::{ArgsHash, args_hash, canonical_json};

/// Golden vectors: every rule of the canonical form, pinned as text and as hash.
// r[verify gate.hash.args-hash]
#[test]
fn golden_vectors() {
    let deep_key_order = r#"{"b":{"z":1,"a":{"d":[{"y":2,"x":1}],"c":null}},"a":[]}"#;
    let cases: Vec<(&str, &str, Value)> = vec![
        ("empty object", "delete_note", json!({})),
        ("null args", "execute_command", Value::Null),
        (
            "key order at every depth",
            "move_note",
            serde_json::from_str(deep_key_order).unwrap_or(Value::Null),
        ),
        (
            "keys sorted by UTF-8 bytes, not UTF-16",
            "write_note",
            // U+FF61 sorts before U+1F600 in UTF-8/code-point order but after it in UTF-16.
            json!({"\u{1F600}": 1, "\u{FF61}": 2, "Z": 3, "a": 4, "é": 5, "": 6}),
        ),
        (
            "unicode text stays raw",
            "write_note",
            json!({"path": "Notes/ünïcødé 📝.md", "content": "日本語 עברית"}),
        ),
        (
            "escapes",
            "write_note",
            json!({"s": "quote \" backslash \\ slash / tab \t nl \n cr \r bs \u{8} ff \u{c}"}),
        ),
        (
            "control chars, DEL, U+2028/2029",
            "write_note",
            json!({"s": "\u{0}\u{1}\u{1f}\u{7f}\u{2028}\u{2029}"}),
        ),
        (
            "integers",
            "update_task",
            json!({"zero": 0, "neg": -12, "i64min": i64::MIN, "u64max": u64::MAX}),
        ),
        (
            "floats and exponents",
            "update_task",
            serde_json::from_str(
                r#"{"one": 1.0, "half": 0.5, "neg": -2.5, "exp": 1e100, "small": 1.5e-7, "E": 2E3, "beyond_u64": 18446744073709551616}"#,
            )
            .unwrap_or(Value::Null),
        ),
        ("1 and 1.0 differ (integer)", "update_task", json!({"n": 1})),
        ("1 and 1.0 differ (float)", "update_task", json!({"n": 1.0})),
        (
            "arrays keep order",
            "rewrite_link",
            json!({"paths": ["b.md", "a.md", "c.md"], "nested": [[3, 2], [1]]}),
        ),
        (
            "top-level elicit_token dropped, nested kept",
            "delete_note",
            json!({"path": "a.md", "elicit_token": "0123", "meta": {"elicit_token": "kept"}}),
        ),
        ("non-object args kept whole", "execute_command", json!(["elicit_token", 1])),
    ];
    let mut table = String::new();
    for (name, tool, args) in &cases {
        // What is hashed: the canonical form without the top-level elicit_token.
        let mut hashed = args.clone();
        if let Value::Object(map) = &mut hashed {
            map.remove("elicit_token");
        }
        let canonical = canonical_json(&hashed);
        let _ = writeln!(
            table,
            "# {name}\npreimage: {tool} {canonical}\nescaped:  {canonical:?}\nargs_hash: {}\n",
            args_hash(tool, args)
        );
    }
    insta::assert_snapshot!("golden_vectors", table);
}

/// Hashes computed independently (Python's hashlib and json.dumps with sort_keys,
/// compact separators and ensure_ascii=False, which agree with our rules for these inputs).
// r[verify gate.hash.args-hash]
#[test]
fn matches_an_independent_implementation() {
    let write_note = json!({
        "vault": "main", "path": "inbox/a.md", "content": "hello\nworld",
        "mode": "overwrite", "elicit_token": "abc"
    });
    assert_eq!(
        args_hash("write_note", &write_note).as_str(),
        "aa7aec110f69e5e72e8de9f68510f72c"
    );
    let delete_note = json!({
        "path": "Notes/ünïcødé 📝.md", "permanent": false, "z": [3, 1, 2],
        "a": {"y": null, "b": true}
    });
    assert_eq!(
        canonical_json(&delete_note),
        r#"{"a":{"b":true,"y":null},"path":"Notes/ünïcødé 📝.md","permanent":false,"z":[3,1,2]}"#
    );
    assert_eq!(
        args_hash("delete_note", &delete_note).as_str(),
        "c4f27b194f5badc5435a12fe0c7ed2bc"
    );
    let rewrite_link = json!({
        "from_target": "a\u{2028}b\u{1}\"\\", "dry_run": false, "n": -12,
        "big": 18_446_744_073_709_551_615_u64
    });
    assert_eq!(
        args_hash("rewrite_link", &rewrite_link).as_str(),
        "f012c6609ec0731d9632c217b0c517a4"
    );
}

// r[verify gate.hash.args-hash]
#[test]
fn tool_name_is_part_of_the_hash() {
    let args = json!({"path": "a.md"});
    assert_ne!(
        args_hash("delete_note", &args),
        args_hash("restore_note", &args)
    );
}

// r[verify gate.hash.args-hash]
#[test]
fn elicit_token_is_removed_only_at_the_top_level() {
    let bare = json!({"path": "a.md", "meta": {"elicit_token": "x"}});
    let with_token = json!({"path": "a.md", "meta": {"elicit_token": "x"}, "elicit_token": "t"});
    let other_token = json!({"path": "a.md", "meta": {"elicit_token": "x"}, "elicit_token": 7});
    assert_eq!(
        args_hash("write_note", &bare),
        args_hash("write_note", &with_token)
    );
    assert_eq!(
        args_hash("write_note", &bare),
        args_hash("write_note", &other_token)
    );
    let nested_changed = json!({"path": "a.md", "meta": {"elicit_token": "y"}});
    assert_ne!(
        args_hash("write_note", &bare),
        args_hash("write_note", &nested_changed)
    );
    // canonical_json itself is a faithful rendering: it keeps the key.
    assert!(canonical_json(&with_token).contains("\"elicit_token\":\"t\""));
}

#[test]
fn args_hash_parse_accepts_only_32_lowercase_hex() {
    let good = "0123456789abcdef0123456789abcdef";
    assert_eq!(
        ArgsHash::parse(good).map(|h| h.to_string()),
        Ok(good.to_owned())
    );
    for bad in [
        "",
        "0123456789abcdef0123456789abcde",
        "0123456789abcdef0123456789abcdef0",
        "0123456789ABCDEF0123456789ABCDEF",
        "0123456789abcdef0123456789abcdeg",
        "0123456789abcdef0123456789abcd\u{e9}",
        " 0123456789abcdef0123456789abcde",
    ] {
        assert!(ArgsHash::parse(bad).is_err(), "accepted {bad:?}");
    }
    let computed = args_hash("delete_note", &json!({"path": "a.md"}));
    assert_eq!(ArgsHash::parse(computed.as_str()), Ok(computed.clone()));
}

#[test]
fn args_hash_serde_is_a_validated_string() {
    let hash = args_hash("delete_note", &json!({"path": "a.md"}));
    let text = serde_json::to_string(&hash).unwrap_or_default();
    assert_eq!(text, format!("\"{hash}\""));
    let back: Result<ArgsHash, _> = serde_json::from_str(&text);
    assert_eq!(back.ok(), Some(hash));
    let refused: Result<ArgsHash, _> = serde_json::from_str("\"not-a-hash\"");
    assert!(refused.is_err());
}

#[test]
fn deep_nesting_does_not_overflow_the_stack() {
    let mut value = json!("leaf");
    for depth in 0..100_000 {
        // Built by hand: json!(expr) would clone `value` recursively through to_value.
        value = if depth % 2 == 0 {
            Value::Array(vec![value])
        } else {
            Value::Object(std::iter::once(("k".to_owned(), value)).collect())
        };
    }
    // Dropping a Value this deep recurses inside serde_json, also while a failed
    // assertion unwinds; never drop it.
    let value = std::mem::ManuallyDrop::new(value);
    let text = canonical_json(&value);
    assert!(text.starts_with("{\"k\":[{\"k\":["), "{}", &text[..40]);
    assert!(text.ends_with("]}]}"));
    assert_eq!(text.len(), 50_000 * 2 + 50_000 * 6 + "\"leaf\"".len());
    assert_eq!(args_hash("write_note", &value).as_str().len(), 32);
}

/// Arbitrary JSON trees, bounded in depth and width.
fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            // serde_json's default float parser may miss by one ULP; keep the floats it
            // reads back exactly, so the properties test our code, not its parser.
            .prop_filter("finite and round-tripping", |f| {
                f.is_finite()
                    && serde_json::to_string(f)
                        .ok()
                        .and_then(|text| serde_json::from_str::<f64>(&text).ok())
                        == Some(*f)
            })
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(".{0,6}", inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// Writes `value` as JSON text with every object's keys in an order chosen by `seed`
/// (and with whitespace), independent of the map's own iteration order.
fn write_shuffled(value: &Value, seed: &mut u64, out: &mut String) {
    match value {
        Value::Array(items) => {
            out.push_str("[ ");
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str(" , ");
                }
                write_shuffled(item, seed, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            // Fisher-Yates with a xorshift driven by the proptest-chosen seed.
            for index in (1..entries.len()).rev() {
                *seed ^= *seed << 13;
                *seed ^= *seed >> 7;
                *seed ^= *seed << 17;
                let pick = usize::try_from(*seed % (index as u64 + 1)).unwrap_or(0);
                entries.swap(index, pick);
            }
            out.push_str("{\n");
            for (index, (key, item)) in entries.iter().enumerate() {
                if index > 0 {
                    out.push_str(",\n");
                }
                out.push_str(&serde_json::to_string(key).unwrap_or_default());
                out.push_str(" : ");
                write_shuffled(item, seed, out);
            }
            out.push('}');
        }
        leaf => out.push_str(&serde_json::to_string(leaf).unwrap_or_default()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    // r[verify gate.hash.args-hash]
    #[test]
    fn stable_under_key_reordering(value in arb_json(), seed in 1u64..) {
        let mut seed = seed;
        let mut text = String::new();
        write_shuffled(&value, &mut seed, &mut text);
        let reparsed: Value = serde_json::from_str(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(canonical_json(&reparsed), canonical_json(&value));
        prop_assert_eq!(args_hash("write_note", &reparsed), args_hash("write_note", &value));
    }

    #[test]
    fn canonical_json_is_valid_compact_json_of_the_same_value(value in arb_json()) {
        let text = canonical_json(&value);
        let reparsed: Value = serde_json::from_str(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&reparsed, &value);
        prop_assert_eq!(canonical_json(&reparsed), text);
    }
}
