//! The attachment tools through the real MCP server (spec/attachments.md): an image comes
//! back as an MCP `image` content block beside the metadata, scaled so the whole response
//! fits `governor.maxResponseBytes`, directly and through `call_capability`; each tool lists
//! in at most about 1,000 bytes. The gated tools' drift on every route is driven by their
//! `DriftCase` entries in mcp_facade.rs.

mod mcp_support;

use std::io::Cursor;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcp_support::*;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;

const CAP: usize = 131_072;

/// A photo-like image (smooth gradients with noise) as JPEG, too large for `CAP`.
fn photo(width: u32, height: u32) -> Vec<u8> {
    let mut seed = 7u32;
    let image = image::RgbImage::from_fn(width, height, |x, y| {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
        let n = (seed >> 24) as u8 / 4;
        image::Rgb([
            (x * 255 / width) as u8 ^ n,
            (y * 255 / height) as u8 ^ n,
            ((x + y) % 256) as u8,
        ])
    });
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(image)
        .write_to(&mut Cursor::new(&mut out), image::ImageFormat::Jpeg)
        .unwrap();
    out
}

fn image_block(result: &CallToolResult) -> (Vec<u8>, String) {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(result.content.len(), 2, "a text block and an image block");
    let text = &result.content[0].as_text().unwrap().text;
    let parsed: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_eq!(Some(&parsed), result.structured_content.as_ref());
    match &result.content[1] {
        ContentBlock::Image(image) => (
            STANDARD.decode(&image.data).unwrap(),
            image.mime_type.clone(),
        ),
        other => panic!("expected an image block, got {other:?}"),
    }
}

// r[verify attachments.get.image-fits]
#[tokio::test]
async fn an_image_comes_back_as_image_content_that_fits_the_cap_on_both_routes() {
    // Lean mode serves call_capability beside every tool called by its own name.
    let h = Harness::with(|c| {
        c.governor.max_response_bytes = CAP as u64;
        c.tool_facade.mode = tc_server::facade::FacadeMode::Lean;
    });
    let jpeg = photo(1600, 1200);
    assert!(jpeg.len() > CAP, "{}", jpeg.len());
    let file = h.vault.join("assets/photo.jpg");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, &jpeg).unwrap();
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let direct = call(
        &client,
        "get_attachment",
        json!({"path": "assets/photo.jpg"}),
    )
    .await;
    let via = call(
        &client,
        "call_capability",
        json!({"name": "get_attachment", "args": {"path": "assets/photo.jpg"}}),
    )
    .await;
    for result in [direct, via] {
        let wire = serde_json::to_vec(&result).unwrap().len();
        assert!(wire <= CAP, "the response is {wire} bytes");
        let meta = result.structured_content.clone().unwrap();
        assert_eq!(meta["path"], "assets/photo.jpg");
        assert_eq!(meta["mime"], "image/jpeg");
        assert_eq!(
            (meta["width"].as_u64(), meta["height"].as_u64()),
            (Some(1600), Some(1200))
        );
        let (bytes, mime) = image_block(&result);
        assert_eq!(mime, "image/jpeg");
        let sent = image::load_from_memory(&bytes).unwrap();
        assert!(sent.width() < 1600 && sent.height() < 1200);
        assert_eq!(
            u64::from(sent.width()),
            meta["sent_width"].as_u64().unwrap()
        );
    }
}

#[tokio::test]
async fn the_attachment_tools_each_list_in_about_a_thousand_bytes() {
    let h = Harness::new();
    let client = connect(h.core.clone(), modern(Reply::Approve)).await;
    let tools = client.list_all_tools().await.unwrap();
    for name in [
        "list_attachments",
        "get_attachment",
        "write_attachment",
        "move_attachment",
        "delete_attachment",
    ] {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        let size = serde_json::to_vec(tool).unwrap().len();
        eprintln!("{name}: {size} bytes listed");
        assert!(size <= 1_100, "{name} lists in {size} bytes");
    }
}
