//! The attachment tools through the pipeline (spec/attachments.md): paths and refusals, the
//! index-backed listing, reading images (scaled, bombs refused), text and PDFs, and the gated
//! write, move and delete with their bindings.

use std::io::Cursor;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use tc_tools::testing::{Tools, code, with_token};
use tc_tools::{CallControl, ErrorCode, ToolOutput};
use tc_vault::VaultPath;
use tc_vault::acl::AclConfig;
use tc_vault::conventions::ConventionConfig;

struct AttachmentTools;

impl Tools for AttachmentTools {
    fn registry() -> tc_tools::Registry {
        let mut registry = tc_tools::Registry::new();
        tc_attachments::register_with(
            &mut registry,
            &tc_attachments::AttachmentsConfig {
                max_write_bytes: 4096,
            },
        )
        .unwrap();
        registry
    }
}

type Fx = tc_tools::testing::Fx<AttachmentTools>;

fn indexed(fx: &Fx) {
    let binding = fx.pipeline.vault("main").unwrap();
    if binding.index().is_some() {
        return;
    }
    let index = tc_index::open_indexes(
        &fx.cache(),
        [("main", fx.root.as_path())],
        &tc_index::SearchConfig::default(),
    )
    .unwrap()
    .remove(0);
    index.first_build();
    binding.attach_index(index);
}

fn put_bytes(fx: &Fx, path: &str, bytes: &[u8]) {
    let file = fx.root.join(path);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, bytes).unwrap();
}

fn bytes_at(fx: &Fx, path: &str) -> Option<Vec<u8>> {
    std::fs::read(fx.root.join(path)).ok()
}

/// A noisy RGB image (noise does not compress, so it is large as PNG).
fn noisy_png(width: u32, height: u32) -> Vec<u8> {
    let mut seed = 12345u32;
    let image = image::RgbImage::from_fn(width, height, |_, _| {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
        let v = seed.to_le_bytes();
        image::Rgb([v[1], v[2], v[3]])
    });
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(image)
        .write_to(&mut Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn chunk(kind: &[u8], data: &[u8]) -> Vec<u8> {
    let mut out = (data.len() as u32).to_be_bytes().to_vec();
    let mut body = kind.to_vec();
    body.extend_from_slice(data);
    out.extend_from_slice(&body);
    out.extend_from_slice(&crc32(&body).to_be_bytes());
    out
}

/// A valid PNG header declaring `side` × `side` RGBA pixels (40 GB decoded), with one tiny
/// deflate stream: a decompression bomb of a few dozen bytes.
fn bomb_png(side: u32) -> Vec<u8> {
    let mut ihdr = side.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&side.to_be_bytes());
    ihdr.extend_from_slice(&[8, 6, 0, 0, 0]);
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    out.extend(chunk(b"IHDR", &ihdr));
    out.extend(chunk(
        b"IDAT",
        &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01],
    ));
    out.extend(chunk(b"IEND", &[]));
    out
}

/// The raw output of a free call (the image block is not in `call`'s value).
fn raw(fx: &Fx, tool: &str, args: Value) -> Result<ToolOutput, tc_tools::ToolError> {
    let caller = tc_tools::testing::caller();
    let prepared = fx.pipeline.prepare(&caller, tool, &args)?;
    fx.pipeline.execute(
        &prepared,
        prepared.token_approval(),
        &CallControl::default(),
    )
}

fn summary_of(fx: &Fx, tool: &str, args: &Value) -> String {
    let caller = tc_tools::testing::caller();
    let prepared = fx.pipeline.prepare(&caller, tool, args).unwrap();
    fx.pipeline.summary(&prepared)
}

// r[verify attachments.paths]
#[test]
fn paths_out_of_the_vault_hidden_or_notes_are_refused() {
    let fx = Fx::new();
    put_bytes(&fx, ".obsidian/x.png", b"x");
    fx.put("n.md", "note");
    for path in [
        "../x.png",
        "/etc/passwd",
        ".obsidian/x.png",
        ".git/config",
        ".trash/a.png",
        "n.md",
    ] {
        let got = code(fx.call("get_attachment", json!({"path": path})));
        assert!(
            matches!(got, ErrorCode::PathInvalid | ErrorCode::ValidationError),
            "{path}: {got:?}"
        );
        let written = code(fx.call(
            "write_attachment",
            json!({"path": path, "data_base64": "eA=="}),
        ));
        assert!(
            matches!(written, ErrorCode::PathInvalid | ErrorCode::ValidationError),
            "{path}: {written:?}"
        );
    }
    assert_eq!(fx.get("n.md").as_deref(), Some("note"));
}

// r[verify attachments.not-found]
#[test]
fn a_missing_attachment_is_attachment_not_found() {
    let fx = Fx::new();
    for (tool, args) in [
        ("get_attachment", json!({"path": "a/none.png"})),
        ("delete_attachment", json!({"path": "a/none.png"})),
        (
            "move_attachment",
            json!({"from": "a/none.png", "to": "b/none.png"}),
        ),
    ] {
        let refusal = fx.call(tool, args).unwrap_err();
        assert_eq!(
            refusal.code,
            ErrorCode::AttachmentNotFound,
            "{tool}: {refusal}"
        );
        assert!(refusal.to_string().contains("a/none.png"), "{refusal}");
    }
}

// r[verify attachments.list]
// r[verify attachments.list.embeds]
// r[verify attachments.list.acl]
#[test]
fn the_listing_comes_from_the_index_with_embed_counts_and_the_acl() {
    let fx = Fx::with(
        Some(AclConfig {
            read_paths: Some(vec!["public/**".into(), "assets/**".into()]),
            ..AclConfig::default()
        }),
        Vec::new(),
    );
    put_bytes(&fx, "assets/a.png", &noisy_png(4, 4));
    put_bytes(&fx, "assets/b.PDF", b"%PDF-1.4\n");
    put_bytes(&fx, "secret/c.png", b"x");
    fx.put("public/one.md", "![[a.png]] and again ![[a.png]]\n");
    fx.put("public/two.md", "![chart](../assets/a.png)\n");
    fx.put("public/link.md", "[[a.png]] is a link, not an embed\n");
    fx.put("secret/three.md", "![[a.png]]\n");
    indexed(&fx);
    let page = fx.call("list_attachments", json!({})).unwrap();
    let listed: Vec<(&str, u64)> = page["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["path"].as_str().unwrap(),
                a["embedded_by"].as_u64().unwrap(),
            )
        })
        .collect();
    // secret/ is neither listed nor counted.
    assert_eq!(listed, vec![("assets/a.png", 2), ("assets/b.PDF", 0)]);
    assert!(
        page["attachments"][0]["modified"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    let pdfs = fx
        .call("list_attachments", json!({"extensions": [".pdf"]}))
        .unwrap();
    assert_eq!(pdfs["attachments"].as_array().unwrap().len(), 1);
    let none = fx
        .call("list_attachments", json!({"folder": "public"}))
        .unwrap();
    assert_eq!(none["attachments"], json!([]));
}

#[test]
fn the_listing_pages_with_a_cursor() {
    let fx = Fx::new();
    for i in 0..230 {
        put_bytes(&fx, &format!("files/f{i:03}.bin"), b"\0\x01");
    }
    indexed(&fx);
    let first = fx.call("list_attachments", json!({})).unwrap();
    let cursor = first["next_cursor"].as_str().unwrap().to_owned();
    let second = fx
        .call("list_attachments", json!({"cursor": cursor}))
        .unwrap();
    let count = |v: &Value| v["attachments"].as_array().unwrap().len();
    assert_eq!(count(&first) + count(&second), 230);
    assert!(second["next_cursor"].is_null());
    assert_eq!(
        second["attachments"][0]["path"],
        format!("files/f{:03}.bin", count(&first))
    );
}

// r[verify attachments.get]
// r[verify attachments.get.mime]
#[test]
fn text_is_text_other_files_are_metadata_and_the_type_comes_from_the_bytes() {
    let fx = Fx::new();
    put_bytes(&fx, "docs/readme.txt", "héllo\nworld\n".as_bytes());
    put_bytes(&fx, "docs/blob.bin", b"\0\x01\x02\x03");
    // A PNG named .pdf is an image; a "png" that is text is text.
    let png = noisy_png(3, 2);
    put_bytes(&fx, "docs/photo.pdf", &png);
    put_bytes(&fx, "docs/fake.png", b"not an image at all");
    let text = fx
        .call("get_attachment", json!({"path": "docs/readme.txt"}))
        .unwrap();
    assert_eq!(text["kind"], "text");
    assert_eq!(text["text"], "héllo\nworld\n");
    assert_eq!(text["truncated"], false);
    let blob = fx
        .call("get_attachment", json!({"path": "docs/blob.bin"}))
        .unwrap();
    assert_eq!(blob["kind"], "other");
    assert_eq!(blob["mime"], "application/octet-stream");
    assert_eq!(blob["size"], 4);
    assert!(blob.get("text").is_none());
    let ToolOutput::Image {
        value,
        data,
        mime_type,
    } = raw(&fx, "get_attachment", json!({"path": "docs/photo.pdf"})).unwrap()
    else {
        panic!("an image block")
    };
    assert_eq!(value["mime"], "image/png");
    assert_eq!(
        (value["width"].as_u64(), value["height"].as_u64()),
        (Some(3), Some(2))
    );
    assert_eq!(mime_type, "image/png");
    // Small enough: sent as it is.
    assert_eq!(STANDARD.decode(data).unwrap(), png);
    let fake = fx
        .call("get_attachment", json!({"path": "docs/fake.png"}))
        .unwrap();
    assert_eq!(fake["kind"], "text");
    // A long text is cut to fit the cap.
    put_bytes(&fx, "docs/long.txt", "word ".repeat(40_000).as_bytes());
    let long = fx
        .call("get_attachment", json!({"path": "docs/long.txt"}))
        .unwrap();
    assert_eq!(long["truncated"], true);
    assert!(serde_json::to_vec(&long).unwrap().len() * 2 < tc_tools::testing::PAGE_CAP);
}

// r[verify attachments.get.image-fits]
#[test]
fn an_image_over_the_cap_is_scaled_down_until_the_response_fits() {
    let fx = Fx::new();
    let png = noisy_png(600, 400);
    assert!(png.len() > tc_tools::testing::PAGE_CAP);
    put_bytes(&fx, "img/big.png", &png);
    let ToolOutput::Image {
        value,
        data,
        mime_type,
    } = raw(&fx, "get_attachment", json!({"path": "img/big.png"})).unwrap()
    else {
        panic!("an image block")
    };
    assert_eq!(
        (value["width"].as_u64(), value["height"].as_u64()),
        (Some(600), Some(400))
    );
    let (w, h) = (
        value["sent_width"].as_u64().unwrap(),
        value["sent_height"].as_u64().unwrap(),
    );
    assert!(w < 600 && h < 400, "{w}x{h}");
    assert_eq!(mime_type, "image/jpeg");
    assert_eq!(value["sent_mime"], "image/jpeg");
    let json = serde_json::to_vec(&value).unwrap();
    let total = tc_tools::wire_cost(&json)
        + tc_tools::paging::RESPONSE_FRAME_BYTES
        + data.len()
        + mime_type.len()
        + tc_tools::IMAGE_BLOCK_BYTES;
    assert!(total <= tc_tools::testing::PAGE_CAP, "{total}");
    let decoded = image::load_from_memory(&STANDARD.decode(data).unwrap()).unwrap();
    assert_eq!(
        (u64::from(decoded.width()), u64::from(decoded.height())),
        (w, h)
    );
}

// r[verify attachments.get.bomb]
#[test]
fn a_png_declaring_100000_by_100000_pixels_is_refused_without_decoding() {
    let fx = Fx::new();
    let bomb = bomb_png(100_000);
    assert!(bomb.len() < 100);
    put_bytes(&fx, "img/bomb.png", &bomb);
    let started = std::time::Instant::now();
    let refusal = fx
        .call("get_attachment", json!({"path": "img/bomb.png"}))
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::InvalidInput, "{refusal}");
    assert!(refusal.to_string().contains("100000 x 100000"), "{refusal}");
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    // The pure function says the same, for any budget.
    assert!(matches!(
        tc_attachments::fit::fit_image(&bomb, "image/png", usize::MAX),
        Err(tc_attachments::fit::FitError::TooManyPixels {
            width: 100_000,
            height: 100_000
        })
    ));
}

// r[verify attachments.get.pdf]
#[test]
fn a_pdf_is_read_through_pdftotext_and_a_missing_engine_is_named() {
    let fx = Fx::new();
    put_bytes(&fx, "docs/a.pdf", &minimal_pdf("Hello attachments"));
    let engine = tc_attachments::pdf::pdf_text(
        std::path::Path::new("/nonexistent/pdftotext"),
        &fx.root.join("docs/a.pdf"),
    );
    assert_eq!(engine, Err(tc_attachments::pdf::PdfError::Missing));
    if tc_attachments::pdf::pdf_text(
        std::path::Path::new("pdftotext"),
        &fx.root.join("docs/a.pdf"),
    ) == Err(tc_attachments::pdf::PdfError::Missing)
    {
        eprintln!("pdftotext is not installed: the PDF's text is not checked");
        return;
    }
    let pdf = fx
        .call("get_attachment", json!({"path": "docs/a.pdf"}))
        .unwrap();
    assert_eq!(pdf["kind"], "pdf");
    assert_eq!(pdf["mime"], "application/pdf");
    assert!(
        pdf["text"].as_str().unwrap().contains("Hello attachments"),
        "{pdf}"
    );
    // A file name that could read as an option is given as an absolute path.
    put_bytes(&fx, "-v.pdf", &minimal_pdf("dash"));
    let dashed = fx
        .call("get_attachment", json!({"path": "-v.pdf"}))
        .unwrap();
    assert!(
        dashed["text"].as_str().unwrap().contains("dash"),
        "{dashed}"
    );
}

/// A one-page PDF with `text` in Helvetica, with a correct cross-reference table.
fn minimal_pdf(text: &str) -> Vec<u8> {
    let stream = format!("BT /F1 24 Tf 72 700 Td ({text}) Tj ET");
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_owned(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>".to_owned(),
        format!("<< /Length {} >>\nstream\n{stream}\nendstream", stream.len()),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_owned(),
    ];
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{body}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

// r[verify attachments.write]
// r[verify attachments.write.confirm]
// r[verify drift.bind.write-attachment]
// r[verify tools.compose.write-attachment]
#[test]
fn a_write_is_free_at_a_new_path_and_confirmed_over_a_file_bound_to_its_bytes() {
    let fx = Fx::new();
    let args = json!({"path": "assets/new.png", "data_base64": STANDARD.encode(b"first")});
    let out = fx.call("write_attachment", args.clone()).unwrap();
    assert_eq!(out["overwrote"], false);
    assert_eq!(bytes_at(&fx, "assets/new.png").unwrap(), b"first");
    // Again without overwrite: note_exists, nothing asked.
    assert_eq!(
        code(fx.call("write_attachment", args)),
        ErrorCode::NoteExists
    );
    // With overwrite: confirmation, bound to the old bytes.
    let over = json!({"path": "assets/new.png", "data_base64": STANDARD.encode(b"second"), "overwrite": true});
    let token = fx.require("write_attachment", &over);
    assert_eq!(bytes_at(&fx, "assets/new.png").unwrap(), b"first");
    let out = fx
        .call("write_attachment", with_token(&over, &token))
        .unwrap();
    assert_eq!(out["overwrote"], true);
    assert_eq!(bytes_at(&fx, "assets/new.png").unwrap(), b"second");
    // The replaced bytes are a snapshot.
    let snapshots = fx
        .pipeline
        .vault("main")
        .unwrap()
        .vault
        .snapshots(Some(&VaultPath::parse("assets/new.png").unwrap()))
        .unwrap();
    assert_eq!(snapshots.len(), 1);
    assert_eq!(out["snapshot_id"], snapshots[0].id.as_str());
    // Drift: the file changes between the request and the approval.
    let again = json!({"path": "assets/new.png", "data_base64": STANDARD.encode(b"third"), "overwrite": true});
    let token = fx.require("write_attachment", &again);
    put_bytes(&fx, "assets/new.png", b"edited by hand");
    assert_eq!(
        code(fx.call("write_attachment", with_token(&again, &token))),
        ErrorCode::ReplayDrift
    );
    assert_eq!(bytes_at(&fx, "assets/new.png").unwrap(), b"edited by hand");
    // overwrite on a free path is a free create.
    let free = json!({"path": "assets/other.png", "data_base64": "eA==", "overwrite": true});
    fx.call("write_attachment", free).unwrap();
}

// r[verify attachments.write.cap]
#[test]
fn data_over_the_cap_or_not_base64_is_a_validation_error() {
    let fx = Fx::new();
    for data in [STANDARD.encode(vec![7u8; 4097]), "not base64!".to_owned()] {
        let refusal = fx
            .call(
                "write_attachment",
                json!({"path": "a.bin", "data_base64": data}),
            )
            .unwrap_err();
        assert_eq!(refusal.code, ErrorCode::ValidationError, "{refusal}");
    }
    assert!(bytes_at(&fx, "a.bin").is_none());
    fx.call(
        "write_attachment",
        json!({"path": "a.bin", "data_base64": STANDARD.encode(vec![7u8; 4096])}),
    )
    .unwrap();
}

// r[verify attachments.conventions]
#[test]
fn conventions_judge_attachments_by_forbid_writes_alone() {
    let fx = Fx::with(
        None,
        vec![
            ConventionConfig {
                glob: "**".into(),
                require_frontmatter: vec!["status".into()],
                max_bytes: Some(2),
                ..ConventionConfig::default()
            },
            ConventionConfig {
                glob: "archive/**".into(),
                forbid_writes: true,
                ..ConventionConfig::default()
            },
        ],
    );
    fx.call(
        "write_attachment",
        json!({"path": "assets/x.png", "data_base64": STANDARD.encode(b"more than two bytes")}),
    )
    .unwrap();
    assert_eq!(
        code(fx.call(
            "write_attachment",
            json!({"path": "archive/x.png", "data_base64": "eA=="})
        )),
        ErrorCode::ConventionBlocked
    );
    assert_eq!(
        code(fx.call(
            "move_attachment",
            json!({"from": "assets/x.png", "to": "archive/x.png", "update_embeds": false})
        )),
        ErrorCode::ConventionBlocked
    );
}

fn move_vault() -> Fx {
    let fx = Fx::new();
    put_bytes(&fx, "assets/a.png", &noisy_png(2, 2));
    fx.put("notes/one.md", "Look: ![[a.png]]\n");
    fx.put(
        "notes/two.md",
        "![chart](../assets/a.png) and [[a.png|link]]\n",
    );
    fx.put("board.canvas", r#"{"nodes":[{"id":"1","type":"file","file":"assets/a.png","x":0,"y":0,"width":1,"height":1}],"edges":[]}"#);
    fx.put("notes/none.md", "nothing\n");
    fx
}

// r[verify attachments.move]
// r[verify attachments.move.embeds]
#[test]
fn a_rename_in_its_folder_is_free_and_rewrites_every_embed_and_canvas_reference() {
    let fx = move_vault();
    let out = fx
        .call(
            "move_attachment",
            json!({"from": "assets/a.png", "to": "assets/chart.png"}),
        )
        .unwrap();
    assert!(bytes_at(&fx, "assets/a.png").is_none());
    assert!(bytes_at(&fx, "assets/chart.png").is_some());
    assert_eq!(fx.get("notes/one.md").unwrap(), "Look: ![[chart.png]]\n");
    assert_eq!(
        fx.get("notes/two.md").unwrap(),
        "![chart](../assets/chart.png) and [[chart.png|link]]\n"
    );
    assert!(
        fx.get("board.canvas")
            .unwrap()
            .contains("\"file\":\"assets/chart.png\"")
    );
    assert_eq!(fx.get("notes/none.md").unwrap(), "nothing\n");
    assert_eq!(out["notes_count"], 3);
    assert_eq!(out["links_updated"], 4);
    // Onto an existing file without overwrite: note_exists.
    put_bytes(&fx, "assets/b.png", b"b");
    assert_eq!(
        code(fx.call(
            "move_attachment",
            json!({"from": "assets/chart.png", "to": "assets/b.png"})
        )),
        ErrorCode::NoteExists
    );
}

// r[verify attachments.move.confirm]
// r[verify drift.bind.move-attachment]
// r[verify tools.compose.move-attachment]
#[test]
fn a_move_to_another_folder_or_over_a_file_is_confirmed_and_bound_to_the_notes_it_rewrites() {
    let fx = move_vault();
    let args = json!({"from": "assets/a.png", "to": "img/a.png"});
    let summary = summary_of(&fx, "move_attachment", &args);
    assert!(
        summary.contains("notes/one.md") && summary.contains("board.canvas"),
        "{summary}"
    );
    let token = fx.require("move_attachment", &args);
    assert!(
        bytes_at(&fx, "assets/a.png").is_some(),
        "nothing moved before approval"
    );
    // A note gains an embed of it meanwhile: drift, nothing moved.
    fx.put("notes/none.md", "now ![[a.png]]\n");
    assert_eq!(
        code(fx.call("move_attachment", with_token(&args, &token))),
        ErrorCode::ReplayDrift
    );
    assert!(bytes_at(&fx, "assets/a.png").is_some());
    let token = fx.require("move_attachment", &args);
    fx.call("move_attachment", with_token(&args, &token))
        .unwrap();
    assert!(bytes_at(&fx, "img/a.png").is_some());
    assert_eq!(fx.get("notes/none.md").unwrap(), "now ![[a.png]]\n");
    // Over an existing file in the same folder: confirmed too, the replaced file kept.
    put_bytes(&fx, "img/b.png", b"old b");
    let over = json!({"from": "img/a.png", "to": "img/b.png", "overwrite": true});
    let token = fx.require("move_attachment", &over);
    fx.call("move_attachment", with_token(&over, &token))
        .unwrap();
    let kept = fx
        .pipeline
        .vault("main")
        .unwrap()
        .vault
        .snapshots(Some(&VaultPath::parse("img/b.png").unwrap()))
        .unwrap();
    assert_eq!(kept.len(), 1);
}

// r[verify attachments.delete]
// r[verify attachments.delete.summary]
// r[verify drift.bind.delete-attachment]
// r[verify tools.compose.delete-attachment]
#[test]
fn a_delete_is_always_confirmed_names_the_embedding_notes_and_keeps_a_snapshot() {
    let fx = move_vault();
    let args = json!({"path": "assets/a.png"});
    let summary = summary_of(&fx, "delete_attachment", &args);
    assert!(
        summary.contains("notes/one.md") && summary.contains("notes/two.md"),
        "{summary}"
    );
    assert!(!summary.contains("notes/none.md"), "{summary}");
    let token = fx.require("delete_attachment", &args);
    put_bytes(&fx, "assets/a.png", b"changed");
    assert_eq!(
        code(fx.call("delete_attachment", with_token(&args, &token))),
        ErrorCode::ReplayDrift
    );
    assert!(bytes_at(&fx, "assets/a.png").is_some());
    let token = fx.require("delete_attachment", &args);
    let out = fx
        .call("delete_attachment", with_token(&args, &token))
        .unwrap();
    assert!(bytes_at(&fx, "assets/a.png").is_none());
    assert_eq!(
        out["still_linked_by"],
        json!(["notes/one.md", "notes/two.md"])
    );
    let vault = &fx.pipeline.vault("main").unwrap().vault;
    let path = VaultPath::parse("assets/a.png").unwrap();
    let snapshots = vault.snapshots(Some(&path)).unwrap();
    assert_eq!(out["snapshot_id"], snapshots[0].id.as_str());
    assert_eq!(vault.read_snapshot(&snapshots[0]).unwrap(), b"changed");
    // Permanent: no snapshot of the path is left.
    put_bytes(&fx, "assets/a.png", b"again");
    let forever = json!({"path": "assets/a.png", "permanent": true});
    let token = fx.require("delete_attachment", &forever);
    let out = fx
        .call("delete_attachment", with_token(&forever, &token))
        .unwrap();
    assert!(out["snapshot_id"].is_null());
    assert!(vault.snapshots(Some(&path)).unwrap().is_empty());
}
