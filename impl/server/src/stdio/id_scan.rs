//! Reading the id of a message too long to parse (spec/config.md
//! `config.message-limit.addressed`): the top-level `"id"` of a JSON object, found in the
//! first [`ID_SCAN_BYTES`] of the line by a small scanner that walks the object's members
//! and skips their values without building them, so an oversized request is answered under
//! its own id and its client does not wait forever for an answer.

use rmcp::model::RequestId;

/// How much of an oversized message is searched for its id.
pub const ID_SCAN_BYTES: usize = 64 * 1024;

/// The id of the JSON-RPC request `head` begins, when `head` (the start of a message, perhaps
/// cut anywhere) shows a top-level `"id"` member whose value is a string or an integer.
/// `None` when there is none in `head`, when the text is not a JSON object up to there, or
/// when the id is of a kind JSON-RPC does not allow.
pub fn request_id_in(head: &[u8]) -> Option<RequestId> {
    let head = &head[..head.len().min(ID_SCAN_BYTES)];
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let mut at = skip_ws(head, 0);
    if head.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    loop {
        at = skip_ws(head, at);
        match head.get(at)? {
            b'"' => {}
            _ => return None,
        }
        let key_end = string_end(head, at)?;
        let key: String = serde_json::from_slice(&head[at..key_end]).ok()?;
        at = skip_ws(head, key_end);
        if head.get(at) != Some(&b':') {
            return None;
        }
        at = skip_ws(head, at + 1);
        let value_end = value_end(head, at)?;
        if key == "id" {
            return serde_json::from_slice::<RequestId>(&head[at..value_end]).ok();
        }
        at = skip_ws(head, value_end);
        match head.get(at)? {
            b',' => at += 1,
            _ => return None,
        }
    }
}

fn skip_ws(text: &[u8], mut at: usize) -> usize {
    while text
        .get(at)
        .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
    {
        at += 1;
    }
    at
}

/// The index just past the string that opens at `at` (a `"`), if it closes within `text`.
fn string_end(text: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    loop {
        match text.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
}

/// The index just past the value that starts at `at`, if it ends within `text`. Nested
/// objects and arrays are skipped by counting brackets outside strings; a scalar ends at the
/// first byte that cannot continue it (a number or literal cut by the end of `text` has no
/// end here, since more digits might have followed).
fn value_end(text: &[u8], at: usize) -> Option<usize> {
    match text.get(at)? {
        b'"' => string_end(text, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            loop {
                match text.get(i)? {
                    b'"' => {
                        i = string_end(text, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let mut i = at;
            while text
                .get(i)
                .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.'))
            {
                i += 1;
            }
            (i > at && i < text.len()).then_some(i)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> Option<RequestId> {
        request_id_in(text.as_bytes())
    }

    #[test]
    fn the_top_level_id_is_found_wherever_it_stands() {
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"x":"#),
            Some(RequestId::Number(7))
        );
        assert_eq!(
            id(r#" {"method":"tools/call","params":{"id":1,"a":["}",{"id":2}]},"id" : "abc","#),
            Some(RequestId::String("abc".into()))
        );
        assert_eq!(
            id(r#"{"params":{"s":"a \"quoted\" }"},"i\u0064":3,"#),
            Some(RequestId::Number(3))
        );
    }

    #[test]
    fn no_id_is_guessed() {
        for text in [
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"id":1,"content":"#,
            r#"{"jsonrpc":"2.0","id":12"#,
            r#"{"id":null,"#,
            r#"{"id":1.5,"#,
            r#"{"id":{"a":1},"#,
            r#"["id",1]"#,
            r#"not json "id":3"#,
            r#"{"content":"....... "id":4 ..."#,
        ] {
            assert_eq!(id(text), None, "{text}");
        }
    }

    #[test]
    fn only_the_first_64_kib_are_searched() {
        let filler = "x".repeat(ID_SCAN_BYTES);
        let late = format!(r#"{{"pad":"{filler}","id":9,"#);
        assert_eq!(id(&late), None);
        let early = format!(r#"{{"pad":"{}","id":9,"#, &filler[..ID_SCAN_BYTES - 40]);
        assert_eq!(id(&early), Some(RequestId::Number(9)));
    }
}
