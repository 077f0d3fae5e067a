//! LZString's Base64 form, as the Excalidraw plugin compresses a drawing's scene
//! (spec/formats.md `formats.excalidraw.compressed`, `formats.excalidraw.bomb`).
//!
//! LZString works on UTF-16 code units (JavaScript strings), so both directions go through
//! them: a scene with characters outside the BMP compresses to the very text the plugin
//! writes. Decompression stops at a limit on what it produces, so a small input that would
//! expand without end (each dictionary entry is the previous one plus a character) is refused
//! after a bounded amount of work.

use std::collections::HashMap;

const ALPHABET: &[u8; 65] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=";

/// Why a compressed scene could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LzError {
    /// A character outside the Base64 alphabet (line ends are skipped before).
    NotBase64(char),
    /// The data ends before its end marker, or names an entry it has not made.
    Corrupt,
    /// The text would be longer than the limit (in UTF-16 code units).
    TooLarge { limit: usize },
    /// The text is not valid UTF-16.
    NotText,
}

impl std::fmt::Display for LzError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LzError::NotBase64(c) => write!(f, "{c:?} is not Base64"),
            LzError::Corrupt => f.write_str("the compressed data is cut short or corrupt"),
            LzError::TooLarge { limit } => {
                write!(f, "it decompresses past {limit} characters")
            }
            LzError::NotText => f.write_str("it decompresses to invalid text"),
        }
    }
}

/// Writes values a bit at a time into 6-bit Base64 characters, as LZString does.
struct Bits {
    out: String,
    value: u32,
    position: u32,
}

impl Bits {
    fn bit(&mut self, bit: u32) {
        self.value = (self.value << 1) | (bit & 1);
        if self.position == 5 {
            self.position = 0;
            self.out.push(char::from(ALPHABET[self.value as usize]));
            self.value = 0;
        } else {
            self.position += 1;
        }
    }

    /// The last character padded with zero bits, then `=` to a multiple of four, as
    /// `compressToBase64` ends.
    fn finish(mut self) -> String {
        loop {
            self.value <<= 1;
            if self.position == 5 {
                self.out
                    .push(char::from(ALPHABET[self.value as usize & 63]));
                break;
            }
            self.position += 1;
        }
        let pad = match self.out.len() % 4 {
            1 => "===",
            2 => "==",
            3 => "=",
            _ => "",
        };
        self.out.push_str(pad);
        self.out
    }

    /// `value`'s low `count` bits, lowest first.
    fn value(&mut self, mut value: u32, count: u32) {
        for _ in 0..count {
            self.bit(value & 1);
            value >>= 1;
        }
    }
}

/// The compressor's state: dictionary codes are numbered from 3 (0, 1, 2 are the markers of
/// an 8-bit literal, a 16-bit literal and the end).
struct Encoder {
    bits: Bits,
    singles: HashMap<u16, u32>,
    pairs: HashMap<(u32, u16), u32>,
    /// Characters seen but not yet sent as literals.
    to_create: std::collections::HashSet<u16>,
    dict_size: u32,
    enlarge_in: u32,
    num_bits: u32,
}

impl Encoder {
    fn shrink(&mut self) {
        self.enlarge_in -= 1;
        if self.enlarge_in == 0 {
            self.enlarge_in = 1 << self.num_bits;
            self.num_bits += 1;
        }
    }

    /// Sends the context `w`: a literal the first time a character is sent, else its code.
    fn emit(&mut self, w: Context) {
        match w {
            Context::Single(c) if self.to_create.remove(&c) => {
                if c < 256 {
                    self.bits.value(0, self.num_bits);
                    self.bits.value(u32::from(c), 8);
                } else {
                    self.bits.value(1, self.num_bits);
                    self.bits.value(u32::from(c), 16);
                }
                self.shrink();
            }
            Context::Single(c) => self.bits.value(self.singles[&c], self.num_bits),
            Context::Code(code) => self.bits.value(code, self.num_bits),
        }
        self.shrink();
    }
}

#[derive(Clone, Copy)]
enum Context {
    Single(u16),
    Code(u32),
}

impl Context {
    fn code(self, enc: &Encoder) -> u32 {
        match self {
            Context::Single(c) => enc.singles[&c],
            Context::Code(code) => code,
        }
    }
}

/// `text` as LZString's `compressToBase64` gives it.
pub fn compress_to_base64(text: &str) -> String {
    let mut enc = Encoder {
        bits: Bits {
            out: String::new(),
            value: 0,
            position: 0,
        },
        singles: HashMap::new(),
        pairs: HashMap::new(),
        to_create: Default::default(),
        dict_size: 3,
        enlarge_in: 2,
        num_bits: 2,
    };
    let mut w: Option<Context> = None;
    for c in text.encode_utf16() {
        if !enc.singles.contains_key(&c) {
            enc.singles.insert(c, enc.dict_size);
            enc.dict_size += 1;
            enc.to_create.insert(c);
        }
        let Some(context) = w else {
            w = Some(Context::Single(c));
            continue;
        };
        let key = (context.code(&enc), c);
        if let Some(&code) = enc.pairs.get(&key) {
            w = Some(Context::Code(code));
        } else {
            enc.emit(context);
            enc.pairs.insert(key, enc.dict_size);
            enc.dict_size += 1;
            w = Some(Context::Single(c));
        }
    }
    if let Some(context) = w {
        enc.emit(context);
    }
    enc.bits.value(2, enc.num_bits);
    enc.bits.finish()
}

/// Reads the Base64 input a bit at a time, as LZString does (bits past the end read as 0).
struct Reader {
    values: Vec<u8>,
    index: usize,
    value: u8,
    position: u8,
}

impl Reader {
    fn bits(&mut self, count: u32) -> u32 {
        let mut out = 0;
        for i in 0..count {
            let bit = u32::from(self.value & self.position != 0);
            self.position >>= 1;
            if self.position == 0 {
                self.position = 32;
                self.value = self.values.get(self.index).copied().unwrap_or(0);
                self.index += 1;
            }
            out |= bit << i;
        }
        out
    }
}

/// The text LZString's `decompressFromBase64` gives for `data` (line ends skipped, as the
/// plugin does), refused once it would pass `limit` UTF-16 code units.
pub fn decompress_from_base64(data: &str, limit: usize) -> Result<String, LzError> {
    let mut values = Vec::with_capacity(data.len());
    for ch in data.chars().filter(|c| *c != '\n' && *c != '\r') {
        let at = u8::try_from(ch)
            .ok()
            .and_then(|b| ALPHABET.iter().position(|a| *a == b))
            .ok_or(LzError::NotBase64(ch))?;
        // `=` is the alphabet's 65th character: its bits read as none of the six.
        values.push(u8::try_from(at).unwrap_or(0) & 63);
    }
    if values.is_empty() {
        return Err(LzError::Corrupt);
    }
    let length = values.len();
    let mut reader = Reader {
        value: values[0],
        values,
        index: 1,
        position: 32,
    };
    // Every entry is a run of the output: (start, length), so the dictionary costs no more
    // than the output (each new entry is the previous output plus the next one's first unit).
    let mut out: Vec<u16> = Vec::new();
    let mut dict: Vec<(usize, usize)> = vec![(0, 0); 3];
    let mut enlarge_in: u32 = 4;
    let mut num_bits: u32 = 3;
    let first = match reader.bits(2) {
        0 => reader.bits(8),
        1 => reader.bits(16),
        2 => return Ok(String::new()),
        _ => return Err(LzError::Corrupt),
    };
    if limit == 0 {
        return Err(LzError::TooLarge { limit });
    }
    out.push(u16::try_from(first).map_err(|_| LzError::Corrupt)?);
    dict.push((0, 1));
    let mut w = (0usize, 1usize);
    loop {
        if reader.index > length {
            return Err(LzError::Corrupt);
        }
        let c = reader.bits(num_bits) as usize;
        let literal = match c {
            0 => Some(reader.bits(8)),
            1 => Some(reader.bits(16)),
            2 => break,
            _ => None,
        };
        if literal.is_some() {
            // The literal is the next thing output: its entry is that one unit.
            dict.push((out.len(), 1));
            enlarge_in -= 1;
        }
        if enlarge_in == 0 {
            enlarge_in = 1 << num_bits;
            num_bits += 1;
        }
        let at = out.len();
        let too_large = |len: usize| at.saturating_add(len) > limit;
        let entry_len = if let Some(unit) = literal {
            if too_large(1) {
                return Err(LzError::TooLarge { limit });
            }
            out.push(u16::try_from(unit).map_err(|_| LzError::Corrupt)?);
            1
        } else if c < dict.len() {
            let (start, len) = dict[c];
            if too_large(len) {
                return Err(LzError::TooLarge { limit });
            }
            out.extend_from_within(start..start + len);
            len
        } else if c == dict.len() {
            // The entry being made: the previous output plus its own first unit.
            if too_large(w.1 + 1) {
                return Err(LzError::TooLarge { limit });
            }
            out.extend_from_within(w.0..w.0 + w.1);
            out.push(out[w.0]);
            w.1 + 1
        } else {
            return Err(LzError::Corrupt);
        };
        // `w` was output just before this entry, so `w` plus the entry's first unit is the
        // run from `w`'s start, one longer.
        dict.push((w.0, w.1 + 1));
        w = (at, entry_len);
        enlarge_in -= 1;
        if enlarge_in == 0 {
            enlarge_in = 1 << num_bits;
            num_bits += 1;
        }
        if num_bits > 30 {
            return Err(LzError::Corrupt);
        }
    }
    String::from_utf16(&out).map_err(|_| LzError::NotText)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `compressToBase64` of the LZString the plugin bundles, run on these inputs.
    const VECTORS: &[(&str, &str)] = &[
        ("", "Q==="),
        ("a", "IZA="),
        ("hello world", "BYUwNmD2AEDukCcwBMg="),
        ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "IY18ZJA="),
        (
            "{\n\t\"type\": \"excalidraw\",\n\t\"elements\": []\n}",
            "N4KAkARALgngDgUwgLgAQQQDwMYEMA2AlgCYBOuA7hADTgb4IC2CAdlAM4qoDaAuiAF8gA==",
        ),
        (
            "h\u{e9}llo \u{2713} \u{1f600} \u{fc}n\u{ef}c\u{f6}d\u{e9}",
            "BYS4NmD2AEjI5NheDcAB70A/A7A9wYwG8BMQg===",
        ),
        ("TOBEORNOTTOBEORTOBEORNOT#", "CoeQQgoiBKByLFJGSpwQYiA="),
    ];

    // r[verify formats.excalidraw.compressed]
    #[test]
    fn the_plugins_own_outputs_are_matched_both_ways() {
        for (text, compressed) in VECTORS {
            assert_eq!(compress_to_base64(text), *compressed, "{text:?}");
            assert_eq!(
                decompress_from_base64(compressed, 1 << 20).as_deref(),
                Ok(*text)
            );
        }
        // A longer text, where the codes grow past a dozen bits: LZString's output for it.
        let long: String = (0..400)
            .map(|i| {
                let han = char::from_u32(0x4e00 + i % 50).unwrap_or('?');
                format!(
                    "{{\"id\":\"e{i}\",\"x\":{},\"t\":\"\u{e9}{han}\"}},",
                    i * 7919 % 1000
                )
            })
            .collect();
        let expected = include_str!("../../tests/fixtures/lzstring-12k.b64");
        assert_eq!(compress_to_base64(&long), expected);
        assert_eq!(decompress_from_base64(expected, 1 << 20), Ok(long));
        // Line ends inside the data are skipped, as the plugin splits it in lines.
        assert_eq!(
            decompress_from_base64("BYUwNmD2\n\nAEDukCcw\r\nBMg=", 100).as_deref(),
            Ok("hello world")
        );
    }

    // r[verify formats.excalidraw.bomb]
    #[test]
    fn a_bomb_is_refused_after_bounded_work() {
        let compressed = compress_to_base64(&"a".repeat(200_000));
        assert!(compressed.len() < 2_000, "{}", compressed.len());
        assert_eq!(
            decompress_from_base64(&compressed, 100_000),
            Err(LzError::TooLarge { limit: 100_000 })
        );
        assert_eq!(
            decompress_from_base64(&compressed, 200_000).map(|s| s.len()),
            Ok(200_000)
        );
    }

    #[test]
    fn broken_data_is_refused_not_panicked_on() {
        assert_eq!(decompress_from_base64("", 10), Err(LzError::Corrupt));
        assert_eq!(
            decompress_from_base64("ab!c", 10),
            Err(LzError::NotBase64('!'))
        );
        // Cut short: the end marker never comes.
        let whole = compress_to_base64("hello world, hello world");
        assert!(decompress_from_base64(&whole[..4], 100).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        // r[verify formats.excalidraw.compressed]
        #[test]
        fn any_text_round_trips(text in "\\PC{0,300}") {
            let compressed = compress_to_base64(&text);
            prop_assert_eq!(decompress_from_base64(&compressed, 10_000), Ok(text));
        }

        #[test]
        fn any_input_decompresses_or_is_refused(data in "[A-Za-z0-9+/=\\n]{0,200}") {
            let _ = decompress_from_base64(&data, 10_000);
        }
    }
}
