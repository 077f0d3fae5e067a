//! What a file is, from its first bytes rather than its name (spec/attachments.md
//! `attachments.get.mime`): a photo saved as `scan.pdf` is served as the image it is, and a
//! file named `.png` that is not one is never handed to a decoder as one.

/// How `get_attachment` serves a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An image this server decodes (png, jpeg, gif, webp).
    Image,
    /// An image format the server does not decode (svg, bmp, tiff, …): metadata only.
    OtherImage,
    Pdf,
    /// Valid UTF-8 with no NUL byte.
    Text,
    Other,
}

/// A file's MIME type and how it is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sniffed {
    pub mime: &'static str,
    pub kind: Kind,
}

const fn sniffed(mime: &'static str, kind: Kind) -> Sniffed {
    Sniffed { mime, kind }
}

// r[impl attachments.get.mime]
/// The type of `bytes` (a file's whole content, or its head when `whole` is false: then a
/// text file is judged by that head, where a multi-byte character cut at the end is allowed).
pub fn sniff(bytes: &[u8], whole: bool) -> Sniffed {
    let starts = |magic: &[u8]| bytes.starts_with(magic);
    if starts(b"\x89PNG\r\n\x1a\n") {
        return sniffed("image/png", Kind::Image);
    }
    if starts(b"\xFF\xD8\xFF") {
        return sniffed("image/jpeg", Kind::Image);
    }
    if starts(b"GIF87a") || starts(b"GIF89a") {
        return sniffed("image/gif", Kind::Image);
    }
    if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        return sniffed("image/webp", Kind::Image);
    }
    if starts(b"%PDF-") {
        return sniffed("application/pdf", Kind::Pdf);
    }
    if starts(b"BM") && bytes.len() >= 14 {
        return sniffed("image/bmp", Kind::OtherImage);
    }
    if starts(b"II*\0") || starts(b"MM\0*") {
        return sniffed("image/tiff", Kind::OtherImage);
    }
    if bytes.len() >= 12 && &bytes[4..8] == b"ftyp" {
        let brand = &bytes[8..12];
        if brand == b"avif" || brand == b"avis" {
            return sniffed("image/avif", Kind::OtherImage);
        }
        if brand == b"heic" || brand == b"heix" || brand == b"mif1" {
            return sniffed("image/heic", Kind::OtherImage);
        }
        return sniffed("video/mp4", Kind::Other);
    }
    if starts(b"PK\x03\x04") {
        return sniffed("application/zip", Kind::Other);
    }
    if starts(b"ID3") || (bytes.len() >= 2 && bytes[0] == 0xFF && bytes[1] & 0xE0 == 0xE0) {
        return sniffed("audio/mpeg", Kind::Other);
    }
    if starts(b"OggS") {
        return sniffed("audio/ogg", Kind::Other);
    }
    if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WAVE" {
        return sniffed("audio/wav", Kind::Other);
    }
    if starts(b"\x1A\x45\xDF\xA3") {
        return sniffed("video/webm", Kind::Other);
    }
    if is_text(bytes, whole) {
        let head = String::from_utf8_lossy(&bytes[..bytes.len().min(512)]);
        let head = head.trim_start_matches('\u{feff}').trim_start();
        if head.starts_with("<svg") || (head.starts_with("<?xml") && head.contains("<svg")) {
            return sniffed("image/svg+xml", Kind::OtherImage);
        }
        return sniffed("text/plain", Kind::Text);
    }
    sniffed("application/octet-stream", Kind::Other)
}

/// Whether `bytes` read as text: UTF-8 without NUL (a head may end inside a character).
fn is_text(bytes: &[u8], whole: bool) -> bool {
    if bytes.contains(&0) {
        return false;
    }
    match std::str::from_utf8(bytes) {
        Ok(_) => true,
        Err(e) => !whole && e.error_len().is_none() && bytes.len() - e.valid_up_to() < 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_bytes_decide_not_the_name() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n....", true).mime, "image/png");
        assert_eq!(sniff(b"\xFF\xD8\xFF\xE0", true).kind, Kind::Image);
        assert_eq!(sniff(b"GIF89a..", true).mime, "image/gif");
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 ", true).mime, "image/webp");
        assert_eq!(sniff(b"%PDF-1.7\n", true).kind, Kind::Pdf);
        assert_eq!(sniff(b"hello\n", true).kind, Kind::Text);
        assert_eq!(sniff(b"<svg xmlns='x'/>", true).mime, "image/svg+xml");
        assert_eq!(sniff(b"a\0b", true).kind, Kind::Other);
        assert_eq!(sniff(b"", true).kind, Kind::Text);
        // A head cut inside a character is still text; a whole file so cut is not.
        let cut = "é".as_bytes()[..1].to_vec();
        assert_eq!(sniff(&cut, false).kind, Kind::Text);
        assert_eq!(sniff(&cut, true).kind, Kind::Other);
    }
}
