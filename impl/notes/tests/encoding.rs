//! A note that is not valid UTF-8 is refused by the tools that would rewrite it, with the
//! contract's `invalid_input` and `details.reason = "not_utf8"` (spec/vault.md
//! `vault.note.utf8`), and left byte for byte as it was.

mod tools_support;

use serde_json::json;
use tc_tools::ErrorCode;
use tools_support::Fx;

// r[verify vault.note.utf8]
#[test]
fn rewriting_a_note_that_is_not_utf8_is_invalid_input_and_leaves_it() {
    let fx = Fx::new();
    let bytes: &[u8] = b"# Latin-1 \xe9t\xe9\n- [ ] a task\n";
    std::fs::write(fx.root.join("latin.md"), bytes).unwrap();
    for (tool, args) in [
        (
            "write_note",
            json!({"path": "latin.md", "content": "more\n", "mode": "append"}),
        ),
        (
            "update_frontmatter",
            json!({"path": "latin.md", "operation": "merge", "data": {"k": 1}}),
        ),
        (
            "update_task",
            json!({"path": "latin.md", "line": 2, "status": "done"}),
        ),
    ] {
        let error = fx.call(tool, args).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidInput, "{tool}: {error}");
        assert!(error.message.contains("not valid UTF-8"), "{tool}: {error}");
        assert_eq!(std::fs::read(fx.root.join("latin.md")).unwrap(), bytes);
    }
}
