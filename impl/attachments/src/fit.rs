//! An image scaled down until its base64 fits a byte budget (spec/attachments.md
//! `attachments.get.image-fits`, `attachments.get.bomb`).
//!
//! The header is read first and an image whose declared size is past [`MAX_SIDE`] or
//! [`MAX_PIXELS`] is refused before any pixel is decoded: a PNG of a few hundred bytes can
//! declare 100,000 × 100,000 pixels, 40 GB once decoded. Decoding itself runs under
//! `image::Limits` (the same sides, and at most [`MAX_ALLOC`] bytes allocated) in case a
//! header lies. An image whose file already fits is sent as it is, without decoding.

use std::io::Cursor;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use image::{DynamicImage, ImageFormat, ImageReader, Limits};

/// The longest side decoded, in pixels.
pub const MAX_SIDE: u32 = 16_384;
/// The most pixels decoded (a 48-megapixel photo fits; 4 bytes each).
pub const MAX_PIXELS: u64 = 64_000_000;
/// The most bytes the decoder may allocate.
pub const MAX_ALLOC: u64 = 512 * 1024 * 1024;
/// The smallest side a scaled image is given; below it the image is refused as too large.
const MIN_SIDE: u32 = 16;
/// JPEG quality of a scaled image without transparency.
const JPEG_QUALITY: u8 = 82;

/// An image as sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fitted {
    /// Standard base64 of the bytes sent.
    pub data: String,
    /// The MIME type of the bytes sent.
    pub mime: &'static str,
    /// The file's own dimensions.
    pub width: u32,
    pub height: u32,
    /// The dimensions sent (the file's own when it was not scaled).
    pub sent_width: u32,
    pub sent_height: u32,
}

/// Why an image cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FitError {
    #[error(
        "the image declares {width} x {height} pixels, over the {MAX_SIDE}-pixel side or {MAX_PIXELS}-pixel limit; it is not decoded"
    )]
    TooManyPixels { width: u32, height: u32 },
    #[error("the image could not be decoded: {0}")]
    Decode(String),
    #[error("even scaled to {MIN_SIDE} pixels the image does not fit the response limit")]
    CannotFit,
}

/// How many base64 characters `n` bytes take.
pub fn base64_len(n: usize) -> usize {
    n.div_ceil(3) * 4
}

fn format_of(mime: &str) -> Option<ImageFormat> {
    match mime {
        "image/png" => Some(ImageFormat::Png),
        "image/jpeg" => Some(ImageFormat::Jpeg),
        "image/gif" => Some(ImageFormat::Gif),
        "image/webp" => Some(ImageFormat::WebP),
        _ => None,
    }
}

fn limits() -> Limits {
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_ALLOC);
    limits
}

fn reader<'a>(bytes: &'a [u8], mime: &str) -> Result<ImageReader<Cursor<&'a [u8]>>, FitError> {
    let format =
        format_of(mime).ok_or_else(|| FitError::Decode(format!("{mime} is not decoded")))?;
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    reader.limits(limits());
    Ok(reader)
}

// r[impl attachments.get.bomb]
/// The dimensions the image's header declares, refused when past the limits.
pub fn dimensions(bytes: &[u8], mime: &str) -> Result<(u32, u32), FitError> {
    // The header is read without limits on the sides, so a bomb is named with its size.
    let format =
        format_of(mime).ok_or_else(|| FitError::Decode(format!("{mime} is not decoded")))?;
    let (width, height) = ImageReader::with_format(Cursor::new(bytes), format)
        .into_dimensions()
        .map_err(|e| FitError::Decode(e.to_string()))?;
    if width > MAX_SIDE || height > MAX_SIDE || u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(FitError::TooManyPixels { width, height });
    }
    Ok((width, height))
}

// r[impl attachments.get.image-fits]
/// The image `bytes` (of type `mime`) as base64 of at most `budget` characters: as it is when
/// it fits, else decoded and scaled down (JPEG, or PNG when it has transparency) until it does.
pub fn fit_image(bytes: &[u8], mime: &'static str, budget: usize) -> Result<Fitted, FitError> {
    let (width, height) = dimensions(bytes, mime)?;
    if base64_len(bytes.len()) <= budget {
        return Ok(Fitted {
            data: STANDARD.encode(bytes),
            mime,
            width,
            height,
            sent_width: width,
            sent_height: height,
        });
    }
    let image = reader(bytes, mime)?
        .decode()
        .map_err(|e| FitError::Decode(e.to_string()))?;
    let alpha = image.color().has_alpha();
    let room = budget / 4 * 3;
    // A first guess from the file's own size, then down by the ratio of what came out.
    let mut scale = ((room as f64) / (bytes.len() as f64)).sqrt().min(1.0);
    for _ in 0..10 {
        let w = ((f64::from(width) * scale) as u32).max(1);
        let h = ((f64::from(height) * scale) as u32).max(1);
        if w.max(h) < MIN_SIDE {
            break;
        }
        let scaled = image.thumbnail(w, h);
        let (encoded, out_mime) = encode(&scaled, alpha)?;
        if base64_len(encoded.len()) <= budget {
            return Ok(Fitted {
                data: STANDARD.encode(&encoded),
                mime: out_mime,
                width,
                height,
                sent_width: scaled.width(),
                sent_height: scaled.height(),
            });
        }
        scale *= ((room as f64) / (encoded.len() as f64)).sqrt().min(0.95) * 0.95;
    }
    Err(FitError::CannotFit)
}

fn encode(image: &DynamicImage, alpha: bool) -> Result<(Vec<u8>, &'static str), FitError> {
    let mut out = Vec::new();
    let failed = |e: image::ImageError| FitError::Decode(e.to_string());
    if alpha {
        image
            .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
            .map_err(failed)?;
        Ok((out, "image/png"))
    } else {
        let rgb = image.to_rgb8();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY)
            .encode_image(&rgb)
            .map_err(failed)?;
        Ok((out, "image/jpeg"))
    }
}
