//! The response governor (spec: `governor.cap`, `governor.measure`, `governor.counted`,
//! `governor.cost`).
//!
//! The governor judges a response as sent: the result's JSON, its copy in the text block
//! (every quote, backslash and control character escaped), and the frame around both. So a
//! result of `n` JSON bytes with `q` quotes costs `2n + q + RESPONSE_FRAME_BYTES`.

use std::cell::Cell;
use std::collections::BTreeMap;

use serde::ser::{Serialize, SerializeSeq, Serializer};
use serde_json::json;
use tc_gate::governor::{
    BoundedError, DEFAULT_MAX_RESPONSE_BYTES, Governor, Overflow, RESPONSE_FRAME_BYTES as FRAME,
    wire_cost,
};

// r[verify governor.cap]
// r[verify governor.measure]
#[test]
fn exactly_the_cap_fits_and_one_more_byte_is_refused() {
    // "12345678" serializes to 10 bytes with its quotes, and costs 22 as sent: the 10, and
    // 12 more in the text copy, where both quotes are escaped.
    assert_eq!(wire_cost(b"\"12345678\""), 22);
    let governor = Governor::new(FRAME + 22);
    assert_eq!(governor.limit(), FRAME + 22);
    let fits = governor.serialize_bounded("12345678");
    assert_eq!(fits.ok(), Some(b"\"12345678\"".to_vec()));
    let over = governor.serialize_bounded("123456789");
    match over {
        Err(BoundedError::Overflow(overflow)) => {
            assert_eq!(overflow.limit, FRAME + 22);
            assert_eq!(overflow.result_size_lower_bound, FRAME + 24);
            assert!(!overflow.exact);
        }
        other => panic!("expected an overflow, got {other:?}"),
    }
}

// r[verify governor.measure]
#[test]
fn the_text_copy_counts_every_escape() {
    assert_eq!(wire_cost(b"abc"), 6);
    assert_eq!(wire_cost(b"\"\\\n\t"), 8 + 4);
    // Other control characters become \u00XX in the copy.
    assert_eq!(wire_cost(&[0x01]), 2 + 5);
    // Non-ASCII text is not escaped by serde_json.
    assert_eq!(wire_cost("ü".as_bytes()), 4);
    for text in ["plain", "a \"quoted\" \\ line\n", "\u{1}\u{1f}ünï"] {
        let json = serde_json::to_string(text).unwrap();
        let copy = serde_json::to_string(&json).unwrap();
        // The copy's own two quotes are part of the frame.
        assert_eq!(
            wire_cost(json.as_bytes()),
            json.len() + copy.len() - 2,
            "{text:?}"
        );
    }
}

// r[verify governor.cap]
// r[verify governor.single-serialization]
#[test]
fn a_fitting_result_is_the_bytes_to_send() {
    let governor = Governor::new(DEFAULT_MAX_RESPONSE_BYTES);
    let value = json!({"vault": "main", "notes": [{"path": "a.md", "content": "ünï\n\"q\""}]});
    let bytes = governor.serialize_bounded(&value).ok();
    assert_eq!(bytes, serde_json::to_vec(&value).ok());
    assert_eq!(governor.truncations(), 0);
}

// r[verify governor.cap]
#[test]
fn the_overflow_carries_size_and_limit_for_the_error_details() {
    let cap = FRAME + 100;
    let governor = Governor::new(cap);
    let overflow = match governor.serialize_bounded(&"x".repeat(500)) {
        Err(BoundedError::Overflow(overflow)) => overflow,
        other => panic!("expected an overflow, got {other:?}"),
    };
    // serde_json writes an unescaped run in one piece: the bound is the size with it (the
    // frame, the opening quote and its escape, and the run twice).
    let bound = FRAME + 3 + 1_000;
    assert_eq!(overflow.result_size_lower_bound, bound);
    assert_eq!(
        overflow.details(),
        json!({"result_size": bound, "result_size_is_lower_bound": true, "limit": cap})
    );
    assert_eq!(
        overflow.to_string(),
        format!(
            "the result is at least {bound} bytes, over the response limit of {cap} bytes (governor.maxResponseBytes); narrow the request"
        )
    );
    let exact = governor.admit_serialized(vec![b'x'; 150]);
    assert_eq!(
        exact,
        Err(Overflow {
            result_size_lower_bound: FRAME + 300,
            limit: cap,
            exact: true
        })
    );
    assert!(exact.err().is_some_and(|o| {
        o.to_string()
            .starts_with(&format!("the result is {} bytes", FRAME + 300))
    }));
    assert_eq!(
        governor.admit_serialized(vec![b'x'; 50]).map(|b| b.len()),
        Ok(50)
    );
}

// r[verify governor.counted]
#[test]
fn each_tool_overflow_counts_once_and_resource_checks_never_count() {
    let cap = FRAME + 64;
    let governor = Governor::new(cap);
    assert!(governor.serialize_bounded(&"small").is_ok());
    assert_eq!(governor.truncations(), 0);
    for round in 1..=3u64 {
        assert!(governor.serialize_bounded(&"y".repeat(100)).is_err());
        assert_eq!(governor.truncations(), round);
    }
    assert!(governor.admit_serialized(vec![b'z'; 33]).is_err());
    assert_eq!(governor.truncations(), 4);
    // resources/read stat checks (the file's bytes, against the cap): no count either way.
    assert!(governor.fits(cap as u64));
    assert!(!governor.fits(cap as u64 + 1));
    assert!(!governor.fits(u64::MAX));
    assert_eq!(governor.truncations(), 4);
    // Counters are per governor.
    assert_eq!(Governor::new(cap).truncations(), 0);
}

#[test]
fn an_unserializable_value_is_a_fault_not_an_overflow() {
    let governor = Governor::new(1_000);
    let mut map = BTreeMap::new();
    map.insert(vec![1u8], "non-string key");
    let result = governor.serialize_bounded(&map);
    assert!(
        matches!(result, Err(BoundedError::Serialize(_))),
        "{result:?}"
    );
    assert_eq!(governor.truncations(), 0);
}

/// A sequence of `len` strings of `item_len` bytes that counts how many items serde
/// actually asked for.
struct CountingSeq<'a> {
    len: usize,
    item: String,
    produced: &'a Cell<usize>,
}

impl Serialize for CountingSeq<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.len))?;
        for _ in 0..self.len {
            self.produced.set(self.produced.get() + 1);
            seq.serialize_element(&self.item)?;
        }
        seq.end()
    }
}

// r[verify governor.cost]
#[test]
fn serialization_stops_just_past_the_cap() {
    const CAP: usize = 1_000_000;
    let governor = Governor::new(CAP);
    let produced = Cell::new(0);
    // 100 MB worth of 1 KB strings, produced lazily: only what serde asks for is made.
    let item = "n".repeat(1_000);
    let huge = CountingSeq {
        len: 100_000,
        item,
        produced: &produced,
    };
    let result = governor.serialize_bounded(&huge);
    assert!(matches!(result, Err(BoundedError::Overflow(_))));
    // As sent, the frame and "[" cost FRAME + 2, each item 2,006 ("…" with its quotes
    // escaped in the copy) and each comma 2: the cap is crossed in the first item that
    // takes the cost past it.
    let cost_after = |items: usize| FRAME + 2 + items * 2_006 + items.saturating_sub(1) * 2;
    let items_to_cross = (1..).find(|&n| cost_after(n) > CAP).unwrap();
    assert_eq!(
        produced.get(),
        items_to_cross,
        "serialization went on past the cap"
    );
    assert_eq!(governor.truncations(), 1);
}

// r[verify governor.cost]
#[test]
fn a_real_100_mb_value_is_refused_after_about_cap_bytes() {
    let governor = Governor::new(1_000_000);
    let huge: Vec<String> = (0..100_000).map(|i| format!("{i:0>1000}")).collect();
    let produced = Cell::new(0);
    let counted = CountingSeq {
        len: huge.len(),
        item: huge[0].clone(),
        produced: &produced,
    };
    match governor.serialize_bounded(&huge) {
        Err(BoundedError::Overflow(overflow)) => {
            assert!(overflow.result_size_lower_bound > 1_000_000);
            assert!(overflow.result_size_lower_bound <= 1_000_000 + 2_008);
        }
        other => panic!("expected an overflow, got {:?}", other.map(|b| b.len())),
    }
    assert!(governor.serialize_bounded(&counted).is_err());
    assert!(produced.get() < 1_000, "{}", produced.get());
}
