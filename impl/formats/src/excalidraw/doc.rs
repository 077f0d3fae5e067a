//! An Excalidraw plugin drawing, `<name>.excalidraw.md`, as the plugin reads and writes it
//! (spec/formats.md `formats.excalidraw.*`): a note whose `## Drawing` section holds the
//! scene as JSON in a ```` ```json ```` fence, or LZString-compressed in a
//! ```` ```compressed-json ```` fence split in lines of 256 characters, and whose
//! `## Text Elements` section repeats each text element's text with its id as a block
//! reference (`text ^id`).

use serde::Serialize;
use serde_json::{Map, Value};

use super::lz;

/// The most UTF-16 code units a compressed scene may decompress to: 32 Mi, far above any
/// drawing a person makes, and below what would strain the server.
pub const MAX_SCENE_UNITS: usize = 32 * 1024 * 1024;

/// The line length the plugin splits compressed data into.
const CHUNK: usize = 256;

/// The note's top as the plugin writes a new drawing (its `FRONTMATTER` constant and the
/// blank line the file manager adds after it).
pub const HEADER: &str = "---\n\nexcalidraw-plugin: parsed\ntags: [excalidraw]\n\n---\n==⚠  Switch to EXCALIDRAW VIEW in the MORE OPTIONS menu of this document. ⚠== You can decompress Drawing data with the command palette: 'Decompress current Excalidraw file'. For more info check in plugin settings under 'Saving'\n\n\n";

/// What the scene's `source` names.
const SOURCE: &str = "obsidian-tc";

/// One entry of the `## Text Elements` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TextElement {
    pub id: String,
    pub text: String,
}

/// A drawing as read: its scene (with `elements`), the form it was stored in, and the text
/// elements section.
#[derive(Debug, Clone)]
pub struct Drawing {
    pub compressed: bool,
    pub scene: Map<String, Value>,
    pub text_elements: Vec<TextElement>,
}

impl Drawing {
    /// The scene's elements (none when the scene has no list).
    pub fn elements(&self) -> &[Value] {
        self.scene
            .get("elements")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }
}

/// Where the `## Drawing` fence is: the start of its heading line, whether it is compressed,
/// and its body.
fn drawing_fence(text: &str) -> Option<(usize, bool, &str)> {
    // The last heading followed by a fence wins: the section is at the note's end, and a
    // text element could hold the same words.
    let mut found = None;
    let mut from = 0;
    while let Some(at) = text[from..].find("Drawing\n").map(|i| i + from) {
        from = at + 1;
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let heading = &text[line_start..at];
        if heading != "## " && heading != "# " {
            continue;
        }
        let after = &text[at + "Drawing\n".len()..];
        let Some(tick) = after.find('`') else {
            continue;
        };
        let fence = &after[tick..];
        let (compressed, open) = if fence.starts_with("```json\n") {
            (false, "```json\n")
        } else if fence.starts_with("```compressed-json\n") {
            (true, "```compressed-json\n")
        } else {
            continue;
        };
        let body = &fence[open.len()..];
        // The fence closes at a line starting with backticks; a JSON string may hold them
        // (a text element of "```"), but no line of the scene starts with them.
        let end = if body.starts_with("```") {
            0
        } else {
            body.find("\n```").map_or(body.len(), |i| i + 1)
        };
        let body = &body[..end];
        found = Some((line_start, compressed, body));
    }
    found
}

/// The `## Text Elements` entries before `end`: each `text ^id` (an id of 8 characters) and
/// the blank lines after it, as the plugin reads them.
fn text_elements(text: &str) -> Vec<TextElement> {
    let Some(heading) = text
        .find("## Text Elements\n")
        .map(|i| i + "## Text Elements\n".len())
        .or_else(|| {
            text.find("# Text Elements\n")
                .map(|i| i + "# Text Elements\n".len())
        })
    else {
        return Vec::new();
    };
    let section = &text[heading..];
    let section = [
        "## Element Links\n",
        "## Embedded Files\n",
        "# Element Links\n",
    ]
    .iter()
    .filter_map(|h| section.find(h))
    .min()
    .map_or(section, |end| &section[..end]);
    let mut out = Vec::new();
    let mut position = 0;
    let mut search = 0;
    while let Some(caret) = section[search..].find('^').map(|i| i + search) {
        search = caret + 1;
        let before = section[..caret].chars().next_back();
        if !before.is_some_and(char::is_whitespace) {
            continue;
        }
        let id: String = section[caret + 1..].chars().take(8).collect();
        if id.chars().count() != 8 || id.contains('\n') {
            continue;
        }
        let id_end = caret + 1 + id.len();
        let newlines = section[id_end..]
            .bytes()
            .take_while(|b| *b == b'\n')
            .count();
        if newlines == 0 {
            continue;
        }
        let ws_start = caret - before.map_or(0, char::len_utf8);
        if ws_start >= position {
            out.push(TextElement {
                id,
                text: section[position..ws_start].to_owned(),
            });
        }
        position = id_end + newlines;
        search = position;
    }
    out
}

/// Reads a drawing note; the scene decompresses to at most `limit` UTF-16 code units.
pub fn parse(text: &str, limit: usize) -> Result<Drawing, String> {
    let (at, compressed, body) =
        drawing_fence(text).ok_or("it has no `## Drawing` section with a json fence")?;
    let scene_text = if compressed {
        lz::decompress_from_base64(body.trim(), limit).map_err(|e| e.to_string())?
    } else {
        body.to_owned()
    };
    // As the plugin does: the scene ends at its last closing brace.
    let end = scene_text.rfind('}').map_or(0, |i| i + 1);
    let scene: Map<String, Value> = serde_json::from_str(&scene_text[..end])
        .map_err(|e| format!("its scene is not a JSON object: {e}"))?;
    if scene.get("elements").is_some_and(|e| !e.is_array()) {
        return Err("its scene's `elements` is not an array".into());
    }
    Ok(Drawing {
        compressed,
        scene,
        text_elements: text_elements(&text[..at]),
    })
}

/// Whether `id` can be a text element's block reference as the plugin makes them: 8 letters
/// or digits.
pub fn block_id(id: &str) -> bool {
    id.len() == 8 && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Checks a drawing's elements: objects with a unique non-empty string `id` and a string
/// `type`; a text element has a string `text` and an id usable as a block reference.
pub fn check_elements(elements: &[Map<String, Value>]) -> Result<(), String> {
    let mut ids = std::collections::BTreeSet::new();
    for (i, element) in elements.iter().enumerate() {
        let id = element.get("id").and_then(Value::as_str).unwrap_or("");
        if id.is_empty() {
            return Err(format!("element {i} needs a non-empty string `id`"));
        }
        if !ids.insert(id) {
            return Err(format!("the id {id} is used twice"));
        }
        let Some(kind) = element.get("type").and_then(Value::as_str) else {
            return Err(format!("element {id} needs a string `type`"));
        };
        if kind == "text" {
            if !element.get("text").is_some_and(Value::is_string) {
                return Err(format!("text element {id} needs a string `text`"));
            }
            if !block_id(id) {
                return Err(format!(
                    "text element {id}: a text element's id is 8 letters or digits (the plugin's block reference)"
                ));
            }
        }
    }
    Ok(())
}

/// `value` as `JSON.stringify(value, null, "\t")` writes it.
fn tab_json(value: &Value) -> String {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"\t");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    // Serializing a Value into a Vec cannot fail.
    let _ = value.serialize(&mut ser);
    String::from_utf8(out).unwrap_or_default()
}

/// A new drawing of `elements` as the plugin saves one: its header, the text elements
/// section, and the scene (compressed, or as tab-indented JSON).
pub fn write(elements: &[Map<String, Value>], compressed: bool) -> String {
    let mut scene = Map::new();
    scene.insert("type".into(), Value::from("excalidraw"));
    scene.insert("version".into(), Value::from(2));
    scene.insert("source".into(), Value::from(SOURCE));
    scene.insert(
        "elements".into(),
        Value::Array(elements.iter().cloned().map(Value::Object).collect()),
    );
    let mut app_state = Map::new();
    app_state.insert("gridSize".into(), Value::Null);
    app_state.insert("viewBackgroundColor".into(), Value::from("#ffffff"));
    scene.insert("appState".into(), Value::Object(app_state));
    scene.insert("files".into(), Value::Object(Map::new()));
    // The plugin's key order, which a Map would sort.
    let mut json = String::from("{");
    let keys = ["type", "version", "source", "elements", "appState", "files"];
    for (i, key) in keys.iter().enumerate() {
        let value = tab_json(&scene[*key]).replace('\n', "\n\t");
        let comma = if i + 1 < keys.len() { "," } else { "" };
        json.push_str(&format!("\n\t\"{key}\": {value}{comma}"));
    }
    json.push_str("\n}");
    let mut out = String::from(HEADER);
    out.push_str("# Excalidraw Data\n\n## Text Elements\n");
    for element in elements {
        if element.get("type").and_then(Value::as_str) != Some("text") {
            continue;
        }
        let text = ["rawText", "originalText", "text"]
            .iter()
            .find_map(|k| element.get(*k).and_then(Value::as_str))
            .unwrap_or("");
        let id = element.get("id").and_then(Value::as_str).unwrap_or("");
        out.push_str(&format!("{text} ^{id}\n\n"));
    }
    out.push_str("%%\n## Drawing\n");
    if compressed {
        let data = lz::compress_to_base64(&json);
        let lines: Vec<&str> = data
            .as_bytes()
            .chunks(CHUNK)
            .map(|c| std::str::from_utf8(c).unwrap_or(""))
            .collect();
        out.push_str("```compressed-json\n");
        out.push_str(&lines.join("\n\n"));
    } else {
        out.push_str("```json\n");
        out.push_str(&json);
    }
    out.push_str("\n```\n%%");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    /// A drawing as the plugin saved it, uncompressed, with a multi-line text element.
    const PLAIN: &str = "---\n\nexcalidraw-plugin: parsed\ntags: [excalidraw]\n\n---\n==⚠  Switch to EXCALIDRAW VIEW in the MORE OPTIONS menu of this document. ⚠== You can decompress Drawing data with the command palette: 'Decompress current Excalidraw file'. For more info check in plugin settings under 'Saving'\n\n\n# Excalidraw Data\n\n## Text Elements\nHello\nworld ^Ab3dE5gH\n\nsee [[plan]] ^Zz9yY8xX\n\n## Element Links\nQ1w2E3r4: [[plan]]\n\n%%\n## Drawing\n```json\n{\n\t\"type\": \"excalidraw\",\n\t\"version\": 2,\n\t\"source\": \"https://github.com/zsviczian/obsidian-excalidraw-plugin/releases/tag/2.9.0\",\n\t\"elements\": [\n\t\t{\n\t\t\t\"id\": \"Ab3dE5gH\",\n\t\t\t\"type\": \"text\",\n\t\t\t\"text\": \"Hello\\nworld\",\n\t\t\t\"x\": 1,\n\t\t\t\"customData\": {\"mine\": true}\n\t\t}\n\t],\n\t\"appState\": {\n\t\t\"gridSize\": null\n\t},\n\t\"files\": {}\n}\n```\n%%";

    // r[verify formats.excalidraw.read]
    #[test]
    fn a_plain_drawing_reads_with_its_text_elements() {
        let drawing = parse(PLAIN, 1000).unwrap();
        assert!(!drawing.compressed);
        assert_eq!(drawing.elements().len(), 1);
        assert_eq!(drawing.elements()[0]["customData"]["mine"], true);
        assert_eq!(
            drawing.text_elements,
            vec![
                TextElement {
                    id: "Ab3dE5gH".into(),
                    text: "Hello\nworld".into()
                },
                TextElement {
                    id: "Zz9yY8xX".into(),
                    text: "see [[plan]]".into()
                },
            ]
        );
    }

    // r[verify formats.excalidraw.compressed]
    #[test]
    fn a_written_drawing_is_the_plugins_layout_and_reads_back() {
        let elements = vec![
            obj(
                json!({"id": "Ab3dE5gH", "type": "text", "text": "Hi", "x": 0, "y": 0, "extra": {"k": [1, 2]}}),
            ),
            obj(json!({"id": "rect-1", "type": "rectangle", "x": 10.5, "y": -3})),
        ];
        for compressed in [false, true] {
            let text = write(&elements, compressed);
            assert!(text.starts_with(HEADER));
            assert!(text.contains("## Text Elements\nHi ^Ab3dE5gH\n\n%%\n## Drawing\n```"));
            assert!(text.ends_with("\n```\n%%"));
            let back = parse(&text, MAX_SCENE_UNITS).unwrap();
            assert_eq!(back.compressed, compressed);
            let els: Vec<Value> = elements.iter().cloned().map(Value::Object).collect();
            assert_eq!(back.elements(), els.as_slice());
            assert_eq!(back.scene["type"], "excalidraw");
        }
        let plain = write(&elements, false);
        assert!(plain.contains("```json\n{\n\t\"type\": \"excalidraw\",\n\t\"version\": 2,"));
        // Compressed data is split in lines of 256 characters with a blank line between.
        let many: Vec<Map<String, Value>> = (0..200)
            .map(|i| obj(json!({"id": format!("e{i}"), "type": "ellipse", "x": i * 7919 % 1000})))
            .collect();
        let text = write(&many, true);
        let fence = text.split("```compressed-json\n").nth(1).unwrap();
        let body = fence.split("\n```").next().unwrap();
        let lines: Vec<&str> = body.split("\n\n").collect();
        assert!(lines.len() > 1);
        assert!(lines[..lines.len() - 1].iter().all(|l| l.len() == 256));
    }

    #[test]
    fn what_is_not_a_drawing_is_refused() {
        assert!(parse("# just a note\n", 100).is_err());
        assert!(parse("## Drawing\n```json\n[1]\n```\n", 100).is_err());
        assert!(parse("x\n## Drawing\n```compressed-json\n!!\n```\n", 100).is_err());
    }

    #[test]
    fn elements_are_checked() {
        let ok = [obj(json!({"id": "Ab3dE5gH", "type": "text", "text": "x"}))];
        assert!(check_elements(&ok).is_ok());
        for bad in [
            json!({"type": "rectangle"}),
            json!({"id": "a", "type": 3}),
            json!({"id": "t1", "type": "text", "text": "x"}),
            json!({"id": "Ab3dE5gH", "type": "text"}),
        ] {
            assert!(check_elements(&[obj(bad.clone())]).is_err(), "{bad}");
        }
        let twice = [
            obj(json!({"id": "a", "type": "line"})),
            obj(json!({"id": "a", "type": "line"})),
        ];
        assert!(check_elements(&twice).is_err());
    }
}
