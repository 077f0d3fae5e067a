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
/// The longest side of a scaled image (`attachments.get.image-side`).
pub const MAX_SENT_SIDE: u32 = 1_568;
/// The smallest side a scaled image is given; below it the image is refused as too large.
const MIN_SIDE: u32 = 16;
/// What a scaled photo is expected to cost as JPEG at [`JPEG_QUALITY`], in bytes a pixel.
const BYTES_PER_PIXEL: f64 = 0.3;
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
// r[impl attachments.get.image-side]
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
    let room = budget / 4 * 3;
    // A first guess from the file's own size and from what a photo costs as JPEG (about a
    // third of a byte a pixel), then down by the ratio of what came out.
    let pixels = f64::from(width) * f64::from(height);
    let mut scale = ((room as f64) / (bytes.len() as f64))
        .sqrt()
        .min((room as f64 / BYTES_PER_PIXEL / pixels).sqrt())
        .min(f64::from(MAX_SENT_SIDE) / f64::from(width.max(height)))
        .min(1.0);
    let wanted = |side: u32| ((f64::from(side) * scale).ceil() as u32).max(1);
    let image = match mime {
        "image/jpeg" => decode_jpeg_at_least(bytes, wanted(width), wanted(height)),
        _ => None,
    };
    let image = match image {
        Some(image) => image,
        None => reader(bytes, mime)?
            .decode()
            .map_err(|e| FitError::Decode(e.to_string()))?,
    };
    let alpha = image.color().has_alpha();
    // Scales only go down, so the halved copy made for one try serves the later ones.
    let mut base = image;
    for _ in 0..10 {
        let w = ((f64::from(width) * scale).round() as u32).clamp(1, width);
        let h = ((f64::from(height) * scale).round() as u32).clamp(1, height);
        if w.max(h) < MIN_SIDE {
            break;
        }
        while base.width() / 2 >= w && base.height() / 2 >= h {
            base = halve(&base);
        }
        let scaled = shrink(&base, w, h);
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

/// A JPEG decoded straight to the smallest of 1/8, 2/8 … 8/8 of its size that is at least
/// `width` x `height`: the decoder's inverse DCT then computes fewer pixels, which for a photo
/// scaled to a quarter of its pixels halves the decode. None when this decoder cannot give an
/// RGB or grey image of it (CMYK, a broken file), and the general decoder is used.
fn decode_jpeg_at_least(bytes: &[u8], width: u32, height: u32) -> Option<DynamicImage> {
    let mut decoder = jpeg_decoder::Decoder::new(Cursor::new(bytes));
    decoder.set_max_decoding_buffer_size(MAX_ALLOC as usize);
    let side = |n: u32| u16::try_from(n).unwrap_or(u16::MAX);
    let (w, h) = decoder.scale(side(width), side(height)).ok()?;
    let pixels = decoder.decode().ok()?;
    let info = decoder.info()?;
    let (w, h) = (u32::from(w), u32::from(h));
    match info.pixel_format {
        jpeg_decoder::PixelFormat::RGB24 => {
            image::RgbImage::from_raw(w, h, pixels).map(DynamicImage::ImageRgb8)
        }
        jpeg_decoder::PixelFormat::L8 => {
            image::GrayImage::from_raw(w, h, pixels).map(DynamicImage::ImageLuma8)
        }
        _ => None,
    }
}

/// The image at half its size, each pixel the mean of a 2 x 2 block (an odd last row or column
/// dropped). `thumbnail` averages the same way, but over a photo's 12 million pixels it costs
/// several times this integer pass, so an image is halved while it stays at least the size
/// asked for, and only the last step is `thumbnail`'s.
fn halve(image: &DynamicImage) -> DynamicImage {
    fn halve_raw(src: &[u8], width: u32, height: u32, channels: usize) -> Vec<u8> {
        let (w, h) = ((width / 2) as usize, (height / 2) as usize);
        let stride = width as usize * channels;
        let mut out = Vec::with_capacity(w * h * channels);
        // Each pair of rows is summed column by column first (a straight pass the compiler
        // vectorizes), then each pair of pixels of that sum becomes one pixel.
        let mut sums = vec![0u16; stride];
        for y in 0..h {
            let top = &src[2 * y * stride..][..stride];
            let bottom = &src[(2 * y + 1) * stride..][..stride];
            for ((sum, &a), &b) in sums.iter_mut().zip(top).zip(bottom) {
                *sum = u16::from(a) + u16::from(b);
            }
            for pair in sums.chunks_exact(2 * channels).take(w) {
                let (left, right) = pair.split_at(channels);
                out.extend(left.iter().zip(right).map(|(l, r)| ((l + r + 2) / 4) as u8));
            }
        }
        out
    }
    let (width, height) = (image.width(), image.height());
    let (w, h) = (width / 2, height / 2);
    match image {
        DynamicImage::ImageRgb8(rgb) => {
            image::RgbImage::from_raw(w, h, halve_raw(rgb, width, height, 3))
                .map(DynamicImage::ImageRgb8)
        }
        DynamicImage::ImageRgba8(rgba) => {
            image::RgbaImage::from_raw(w, h, halve_raw(rgba, width, height, 4))
                .map(DynamicImage::ImageRgba8)
        }
        DynamicImage::ImageLuma8(luma) => {
            image::GrayImage::from_raw(w, h, halve_raw(luma, width, height, 1))
                .map(DynamicImage::ImageLuma8)
        }
        other => Some(other.thumbnail_exact(w.max(1), h.max(1))),
    }
    .unwrap_or_else(|| image.thumbnail_exact(w.max(1), h.max(1)))
}

/// The image scaled to `width` x `height`, at most halving it: each pixel is read between the
/// four source pixels around its centre (bilinear), which for a step under two loses no detail
/// a box filter keeps and costs a fraction of `thumbnail`'s area sums on a photo.
fn shrink(image: &DynamicImage, width: u32, height: u32) -> DynamicImage {
    fn bilinear(src: &[u8], sw: u32, sh: u32, channels: usize, w: u32, h: u32) -> Vec<u8> {
        // Positions in 16.16 fixed point, the centre of each output pixel mapped back.
        let step = |from: u32, to: u32| ((u64::from(from) << 16) / u64::from(to)) as i64;
        let (sx, sy) = (step(sw, w), step(sh, h));
        let at = |i: u32, step: i64, last: u32| {
            let pos = (i64::from(i) * step + step / 2 - (1 << 15)).max(0);
            let lo = ((pos >> 16) as u32).min(last);
            (
                lo as usize,
                (lo + 1).min(last) as usize,
                (pos & 0xffff) as u32,
            )
        };
        let columns: Vec<_> = (0..w).map(|x| at(x, sx, sw - 1)).collect();
        let stride = sw as usize * channels;
        let mut out = Vec::with_capacity(w as usize * h as usize * channels);
        for y in 0..h {
            let (y0, y1, fy) = at(y, sy, sh - 1);
            let (top, bottom) = (&src[y0 * stride..][..stride], &src[y1 * stride..][..stride]);
            for &(x0, x1, fx) in &columns {
                for c in 0..channels {
                    let mix = |row: &[u8]| {
                        let a = u32::from(row[x0 * channels + c]);
                        let b = u32::from(row[x1 * channels + c]);
                        a * (65536 - fx) + b * fx
                    };
                    let v = (u64::from(mix(top)) * u64::from(65536 - fy)
                        + u64::from(mix(bottom)) * u64::from(fy)
                        + (1 << 31))
                        >> 32;
                    out.push(v as u8);
                }
            }
        }
        out
    }
    if (image.width(), image.height()) == (width, height) {
        return image.clone();
    }
    let (sw, sh) = (image.width(), image.height());
    match image {
        DynamicImage::ImageRgb8(rgb) => {
            image::RgbImage::from_raw(width, height, bilinear(rgb, sw, sh, 3, width, height))
                .map(DynamicImage::ImageRgb8)
        }
        DynamicImage::ImageRgba8(rgba) => {
            image::RgbaImage::from_raw(width, height, bilinear(rgba, sw, sh, 4, width, height))
                .map(DynamicImage::ImageRgba8)
        }
        DynamicImage::ImageLuma8(luma) => {
            image::GrayImage::from_raw(width, height, bilinear(luma, sw, sh, 1, width, height))
                .map(DynamicImage::ImageLuma8)
        }
        _ => None,
    }
    .unwrap_or_else(|| image.thumbnail_exact(width, height))
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
        // jpeg-encoder rather than image's own encoder: the same baseline JPEG in a third of
        // the time (an AVX2 DCT where the processor has one), which is most of what scaling a
        // photo costs. Sides here are under MAX_SIDE, so they fit its u16.
        let rgb = image.to_rgb8();
        let side = |n: u32| u16::try_from(n).map_err(|_| FitError::Decode(format!("{n} px")));
        jpeg_encoder::Encoder::new(&mut out, JPEG_QUALITY)
            .encode(
                rgb.as_raw(),
                side(rgb.width())?,
                side(rgb.height())?,
                jpeg_encoder::ColorType::Rgb,
            )
            .map_err(|e| FitError::Decode(e.to_string()))?;
        Ok((out, "image/jpeg"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // r[verify attachments.get.image-fits]
    #[test]
    fn halving_averages_each_two_by_two_block_and_drops_an_odd_edge() {
        // 5 x 3: the last column and row have no partner and are dropped.
        let image = image::RgbImage::from_fn(5, 3, |x, y| {
            image::Rgb([(x * 10 + y) as u8, (y * 50) as u8, 255 - (x as u8)])
        });
        let halved = halve(&DynamicImage::ImageRgb8(image.clone()));
        assert_eq!((halved.width(), halved.height()), (2, 1));
        let halved = halved.to_rgb8();
        for x in 0..2u32 {
            for c in 0..3 {
                let sum: u16 = [(2 * x, 0), (2 * x + 1, 0), (2 * x, 1), (2 * x + 1, 1)]
                    .iter()
                    .map(|&(sx, sy)| u16::from(image.get_pixel(sx, sy).0[c]))
                    .sum();
                assert_eq!(halved.get_pixel(x, 0).0[c], ((sum + 2) / 4) as u8);
            }
        }
        let gray = DynamicImage::ImageLuma8(
            image::GrayImage::from_raw(2, 2, vec![0, 100, 200, 255]).unwrap(),
        );
        assert_eq!(halve(&gray).to_luma8().into_raw(), vec![139]);
    }

    // r[verify attachments.get.image-fits]
    #[test]
    fn a_large_photo_is_halved_then_fitted_under_the_budget() {
        let image = image::RgbImage::from_fn(1200, 900, |x, y| {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, ((x ^ y) % 256) as u8])
        });
        let mut bytes = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut bytes, 95)
            .encode_image(&image)
            .unwrap();
        let budget = 40_000;
        assert!(base64_len(bytes.len()) > budget);
        let fitted = fit_image(&bytes, "image/jpeg", budget).unwrap();
        assert!(fitted.data.len() <= budget);
        assert_eq!((fitted.width, fitted.height), (1200, 900));
        assert!(fitted.sent_width < 1200 && fitted.sent_width > 16);
        // What is sent decodes to the size it claims.
        use base64::Engine as _;
        let sent = base64::engine::general_purpose::STANDARD
            .decode(&fitted.data)
            .unwrap();
        let decoded = image::load_from_memory(&sent).unwrap();
        assert_eq!(
            (decoded.width(), decoded.height()),
            (fitted.sent_width, fitted.sent_height)
        );
        // The aspect ratio survives the halving and the final step.
        let ratio = f64::from(fitted.sent_width) / f64::from(fitted.sent_height);
        assert!((ratio - 4.0 / 3.0).abs() < 0.02, "{ratio}");
    }

    // r[verify attachments.get.image-side]
    #[test]
    fn a_scaled_image_is_at_most_1568_pixels_on_its_long_side() {
        let image = image::RgbImage::from_fn(3000, 1000, |x, y| {
            image::Rgb([(x % 251) as u8, (y % 241) as u8, ((x * y) % 239) as u8])
        });
        let mut bytes = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut bytes, 90)
            .encode_image(&image)
            .unwrap();
        // A budget the file misses by a little: the cap on the side, not the budget, decides.
        let budget = base64_len(bytes.len()) - 1;
        let fitted = fit_image(&bytes, "image/jpeg", budget).unwrap();
        assert_eq!(fitted.sent_width, MAX_SENT_SIDE);
        assert!(
            (fitted.sent_height as i64 - 523).abs() <= 1,
            "{}",
            fitted.sent_height
        );
        // An image that fits is sent as it is, whatever its size.
        let fitted = fit_image(&bytes, "image/jpeg", base64_len(bytes.len())).unwrap();
        assert_eq!(fitted.sent_width, 3000);
    }

    // r[verify attachments.get.image-fits]
    #[test]
    fn shrinking_keeps_flat_colour_and_the_order_of_a_gradient() {
        let flat = DynamicImage::ImageRgb8(image::RgbImage::from_pixel(
            37,
            23,
            image::Rgb([9, 128, 250]),
        ));
        let small = shrink(&flat, 20, 13).to_rgb8();
        assert_eq!((small.width(), small.height()), (20, 13));
        assert!(small.pixels().all(|p| p.0 == [9, 128, 250]));
        let ramp = DynamicImage::ImageLuma8(image::GrayImage::from_fn(200, 3, |x, _| {
            image::Luma([x as u8])
        }));
        let small = shrink(&ramp, 120, 2).to_luma8();
        let row: Vec<u8> = (0..120).map(|x| small.get_pixel(x, 0).0[0]).collect();
        assert!(row.windows(2).all(|w| w[0] <= w[1]), "{row:?}");
        assert!(row[0] <= 1 && row[119] >= 197, "{row:?}");
    }
}
