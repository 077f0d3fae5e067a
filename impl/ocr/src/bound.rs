//! The result under the governor's cap (spec/ocr.md `ocr.bounded`, `ocr.bounded.fair`,
//! `ocr.bounded.batch`; spec/governor.md).
//!
//! The cap counts the response as sent: the result's JSON, its escaped copy in the text
//! block, and the frame ([`tc_tools::wire_cost`], [`tc_tools::PageLimits::page_budget`]).
//! Everything but the texts is measured first (with every `truncated` flag set, its longest
//! spelling); what is left is shared among the texts by water-filling: a text that fits in
//! an equal share keeps all of it and leaves the rest to the others, and a longer one is
//! cut at a character boundary to its share, with `truncated: true` and `text_bytes` still
//! the size of the whole text. A batch whose entries alone could not fit is refused before
//! the gate (`ocr.bounded.batch`), so a call that runs never overflows.

use serde::Serialize;
use tc_tools::wire_cost;

use crate::tool::{OcrBulkOutput, OcrFile, OcrFileError};

/// Room kept free under the budget for what measuring cannot see exactly.
pub const SLACK: usize = 64;

/// What one character of a JSON string costs on the wire (see [`wire_cost`]): its escaped
/// bytes twice, plus one for each byte the text copy escapes again.
fn char_cost(c: char) -> usize {
    match c {
        '"' | '\\' => 6,
        '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 5,
        c if (c as u32) < 0x20 => 13,
        c => 2 * c.len_utf8(),
    }
}

/// The wire cost of `text` inside a JSON string (without its quotes).
pub fn text_cost(text: &str) -> usize {
    text.chars().map(char_cost).sum()
}

/// The longest prefix of `text` costing at most `room`.
fn prefix_within(text: &str, room: usize) -> &str {
    let mut used = 0;
    for (at, c) in text.char_indices() {
        used += char_cost(c);
        if used > room {
            return &text[..at];
        }
    }
    text
}

fn cost_of<T: Serialize>(value: &T) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX, |json| wire_cost(&json))
}

/// An upper bound of what one file's entry costs without its text, whether it is read or
/// fails: used before the gate to refuse a batch that could never fit.
pub fn entry_estimate(path: &str) -> usize {
    let file = OcrFile {
        path: path.to_owned(),
        kind: crate::recognize::Kind::Image,
        size: u64::MAX,
        content_hash: "0".repeat(64),
        pages: Some(u32::MAX),
        ocr_pages: u32::MAX,
        cached: false,
        text: String::new(),
        text_bytes: usize::MAX,
        truncated: true,
    };
    let error = OcrFileError {
        path: path.to_owned(),
        code: "operation_timeout".into(),
        // An error's message is one line of at most MESSAGE_BYTES bytes with no control
        // characters; '"' and '\' are its costliest characters.
        message: "\"".repeat(crate::tool::MESSAGE_BYTES + 8),
        size: Some(u64::MAX),
    };
    cost_of(&file).max(cost_of(&error)) + 2
}

/// The envelope of a result without files (vault id and languages at their longest).
pub fn envelope_estimate(vault: &str, languages: &str) -> usize {
    cost_of(&OcrBulkOutput {
        vault: vault.to_owned(),
        languages: languages.to_owned(),
        files: Vec::new(),
        errors: Vec::new(),
        read: usize::MAX,
        from_cache: usize::MAX,
        truncated: usize::MAX,
    })
}

// r[impl ocr.bounded]
// r[impl ocr.bounded.fair]
/// Cuts the texts of `output` so its wire cost stays within `budget`.
pub fn fit(output: &mut OcrBulkOutput, budget: usize) {
    let texts: Vec<String> = output
        .files
        .iter_mut()
        .map(|f| {
            f.truncated = true;
            std::mem::take(&mut f.text)
        })
        .collect();
    output.truncated = usize::MAX;
    let base = cost_of(output);
    let mut room = budget.saturating_sub(base).saturating_sub(SLACK);
    for _ in 0..4 {
        let shares = water_fill(
            &texts.iter().map(|t| text_cost(t)).collect::<Vec<_>>(),
            room,
        );
        let mut cut = 0;
        for ((file, text), share) in output.files.iter_mut().zip(&texts).zip(&shares) {
            let kept = prefix_within(text, *share);
            file.truncated = kept.len() < text.len();
            cut += usize::from(file.truncated);
            file.text = kept.to_owned();
        }
        output.truncated = cut;
        let total = cost_of(output);
        if total <= budget {
            return;
        }
        room = room.saturating_sub(total - budget + SLACK);
    }
    // Nothing measured above can still be over; keep the promise regardless.
    for file in &mut output.files {
        file.truncated = file.truncated || !file.text.is_empty();
        file.text.clear();
    }
    output.truncated = output.files.iter().filter(|f| f.truncated).count();
}

/// Shares `room` among wants: each gets at most an equal share of what is left, smallest
/// first, so what a small one leaves goes to the bigger ones.
fn water_fill(wants: &[usize], room: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..wants.len()).collect();
    order.sort_by_key(|&i| wants[i]);
    let mut shares = vec![0; wants.len()];
    let mut left = room;
    for (done, &i) in order.iter().enumerate() {
        let share = left / (wants.len() - done);
        shares[i] = wants[i].min(share);
        left -= shares[i];
    }
    shares
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn char_costs_match_the_measure() {
        for text in ["plain", "é€😀", "a\"b\\c\nd\te\u{1}f\u{c}", ""] {
            let json = serde_json::to_vec(text).unwrap();
            assert_eq!(
                text_cost(text) + wire_cost(b"\"\""),
                wire_cost(&json),
                "{text:?}"
            );
        }
    }

    #[test]
    fn water_filling_gives_small_ones_all_and_shares_the_rest() {
        assert_eq!(water_fill(&[10, 1000, 1000], 610), vec![10, 300, 300]);
        assert_eq!(water_fill(&[10, 20], 1000), vec![10, 20]);
        assert_eq!(water_fill(&[], 10), Vec::<usize>::new());
    }

    #[test]
    fn a_cut_falls_on_a_character_boundary() {
        assert_eq!(prefix_within("aé", 3), "a");
        assert_eq!(prefix_within("aé", 6), "aé");
    }
}
