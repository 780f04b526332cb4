//! Pictures of known text for the OCR tests: lines drawn with the DejaVu font Debian ships
//! (`fonts-dejavu-core`, which `scripts/setup` installs), as RGB pixels or a PNG.

use ab_glyph::{Font, FontVec, PxScale, ScaleFont, point};

/// The font the lines are drawn in.
pub const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// `lines` of `(x, y, text)` (y: the top of the line) drawn `size` pixels high, grey `ink` on
/// grey `paper`, on a `w` x `h` picture: its RGB pixels, row by row.
pub fn draw(
    w: usize,
    h: usize,
    size: f32,
    ink: u8,
    paper: u8,
    lines: &[(f32, f32, &str)],
) -> Vec<u8> {
    let bytes = std::fs::read(FONT)
        .unwrap_or_else(|e| panic!("{FONT}: {e}: apt-get install fonts-dejavu-core"));
    let font = FontVec::try_from_vec(bytes).unwrap_or_else(|e| panic!("{FONT}: {e}"));
    let scaled = font.as_scaled(PxScale::from(size));
    let mut rgb = vec![paper; w * h * 3];
    for &(x, y, text) in lines {
        let mut caret = point(x, y + scaled.ascent());
        let mut last = None;
        for c in text.chars() {
            let id = font.glyph_id(c);
            if let Some(prev) = last {
                caret.x += scaled.kern(prev, id);
            }
            let glyph = id.with_scale_and_position(size, caret);
            caret.x += scaled.h_advance(id);
            last = Some(id);
            let Some(outline) = font.outline_glyph(glyph) else { continue };
            let bounds = outline.px_bounds();
            outline.draw(|gx, gy, coverage| {
                #[allow(clippy::cast_possible_truncation, reason = "pixel coordinates")]
                let (px, py) =
                    (bounds.min.x as i64 + i64::from(gx), bounds.min.y as i64 + i64::from(gy));
                let (Ok(px), Ok(py)) = (usize::try_from(px), usize::try_from(py)) else { return };
                if px >= w || py >= h {
                    return;
                }
                let i = (py * w + px) * 3;
                let v = f32::from(paper) + (f32::from(ink) - f32::from(paper)) * coverage.min(1.0);
                #[allow(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    reason = "0..=255"
                )]
                rgb[i..i + 3].fill(v.round() as u8);
            });
        }
    }
    rgb
}

/// `rgb` (`w` x `h`) as a PNG file's bytes.
pub fn png(w: usize, h: usize, rgb: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let (Ok(w), Ok(h)) = (u32::try_from(w), u32::try_from(h)) else {
        panic!("a picture too large")
    };
    let mut encoder = png::Encoder::new(&mut out, w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().unwrap_or_else(|e| panic!("a PNG header: {e}"));
    writer.write_image_data(rgb).unwrap_or_else(|e| panic!("a PNG: {e}"));
    drop(writer);
    out
}
