//! The text on a picture: PP-OCRv6 small (from the `rapidocr` package, installed by
//! `scripts/fetch-models` as `<models>/ocr/det.onnx` and `ocr/rec.onnx`) run with ONNX Runtime.
//!
//! Two models, as PaddleOCR runs them. The detector (DB, "differentiable binarization") gives
//! each pixel a probability of being text; pixels over [`PIXEL_THRESHOLD`] that touch make a
//! region, a region whose mean probability is under [`BOX_THRESHOLD`] is dropped, and each
//! box is grown by DB's unclip ratio (the detector marks a shrunk core of each line). Each box
//! is then cut from the picture, scaled to 48 pixels high, and read by the recogniser, whose
//! output is decoded greedily (CTC: the likeliest class at each step, repeats and blanks
//! dropped) through the dictionary the model carries in its metadata (`character`).
//!
//! Boxes are axis-aligned: a screen's text is level. Lines come back top to bottom, and left
//! to right within a line.

use std::fmt;
use std::path::{Path, PathBuf};

use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::TensorRef;
use stt_onnx::RuntimeError;
use thiserror::Error;

/// The detector's file in the model directory.
pub const DETECTOR: &str = "det.onnx";
/// The recogniser's file in the model directory.
pub const RECOGNISER: &str = "rec.onnx";

/// A pixel is text above this probability.
pub const PIXEL_THRESHOLD: f32 = 0.3;
/// A region is a line of text when its mean probability is at least this.
pub const BOX_THRESHOLD: f32 = 0.5;
/// How much a region is grown: by its area times this over its perimeter on each side.
const UNCLIP_RATIO: f32 = 1.6;
/// The detector sees the picture scaled so that its longer side is at most this.
const MAX_SIDE: usize = 2048;
/// The recogniser's input height.
const LINE_HEIGHT: usize = 48;
/// The widest line the recogniser is given, in pixels at its height.
const MAX_LINE_WIDTH: usize = 2400;

/// Why OCR could not run, naming the fix.
#[derive(Debug, Error)]
pub enum OcrError {
    #[error("no OCR model at '{path}': run scripts/fetch-models")]
    ModelMissing { path: PathBuf },
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error(
        "ONNX Runtime cannot load the OCR model '{path}': {source}: run scripts/fetch-models --force"
    )]
    Model {
        path: PathBuf,
        #[source]
        source: ort::Error,
    },
    #[error(
        "'{path}' is not the OCR recogniser stt expects: {why}; run scripts/fetch-models --force"
    )]
    WrongModel { path: PathBuf, why: String },
    #[error("not a picture stt can read: {0} (a PNG is needed)")]
    Picture(String),
    #[error("ONNX Runtime failed while reading the picture: {0}")]
    Run(#[from] ort::Error),
}

/// A picture: 8-bit RGB, row by row.
#[derive(Clone, PartialEq, Eq)]
pub struct Picture {
    pub width: usize,
    pub height: usize,
    pub rgb: Vec<u8>,
}

impl fmt::Debug for Picture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Picture({}x{})", self.width, self.height)
    }
}

impl Picture {
    /// A PNG's pixels (grey, RGB, with or without alpha, 8 or 16 bits; a palette expanded).
    pub fn from_png(bytes: &[u8]) -> Result<Self, OcrError> {
        let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        decoder.set_transformations(png::Transformations::normalize_to_color8());
        let mut reader = decoder.read_info().map_err(|e| OcrError::Picture(e.to_string()))?;
        let size =
            reader.output_buffer_size().ok_or_else(|| OcrError::Picture("too large".into()))?;
        let mut buffer = vec![0; size];
        let info = reader.next_frame(&mut buffer).map_err(|e| OcrError::Picture(e.to_string()))?;
        let (width, height) = (info.width as usize, info.height as usize);
        let channels = info.color_type.samples();
        let mut rgb = Vec::with_capacity(width * height * 3);
        for px in buffer[..info.buffer_size()].chunks_exact(channels) {
            match channels {
                1 | 2 => rgb.extend_from_slice(&[px[0], px[0], px[0]]),
                _ => rgb.extend_from_slice(&px[..3]),
            }
        }
        Ok(Self { width, height, rgb })
    }

    fn at(&self, x: usize, y: usize) -> [u8; 3] {
        let i = (y * self.width + x) * 3;
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }

    /// The channels of the part `(x, y, w, h)` scaled to `to_w` x `to_h` (bilinear), as the
    /// models take them: planes of blue, green, red (PaddleOCR reads with OpenCV), each value
    /// `(v / 255 - 0.5) / 0.5`.
    fn tensor(
        &self,
        (x, y, w, h): (usize, usize, usize, usize),
        to_w: usize,
        to_h: usize,
        pad_w: usize,
        pad_h: usize,
    ) -> Vec<f32> {
        let plane = pad_w * pad_h;
        let mut out = vec![0.0f32; plane * 3];
        #[allow(clippy::cast_precision_loss, reason = "pixel coordinates")]
        let (sx, sy) = (w as f32 / to_w as f32, h as f32 / to_h as f32);
        for ty in 0..to_h {
            #[allow(clippy::cast_precision_loss, reason = "pixel coordinates")]
            let fy = ((ty as f32 + 0.5) * sy - 0.5).clamp(0.0, (h - 1) as f32);
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "clamped")]
            let y0 = fy as usize;
            let y1 = (y0 + 1).min(h - 1);
            #[allow(clippy::cast_precision_loss, reason = "pixel coordinates")]
            let wy = fy - y0 as f32;
            for tx in 0..to_w {
                #[allow(clippy::cast_precision_loss, reason = "pixel coordinates")]
                let fx = ((tx as f32 + 0.5) * sx - 0.5).clamp(0.0, (w - 1) as f32);
                #[allow(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    reason = "clamped"
                )]
                let x0 = fx as usize;
                let x1 = (x0 + 1).min(w - 1);
                #[allow(clippy::cast_precision_loss, reason = "pixel coordinates")]
                let wx = fx - x0 as f32;
                let (a, b, c, d) = (
                    self.at(x + x0, y + y0),
                    self.at(x + x1, y + y0),
                    self.at(x + x0, y + y1),
                    self.at(x + x1, y + y1),
                );
                for (plane_i, channel) in [2usize, 1, 0].into_iter().enumerate() {
                    let top = f32::from(a[channel]) * (1.0 - wx) + f32::from(b[channel]) * wx;
                    let bottom = f32::from(c[channel]) * (1.0 - wx) + f32::from(d[channel]) * wx;
                    let v = top * (1.0 - wy) + bottom * wy;
                    out[plane_i * plane + ty * pad_w + tx] = (v / 255.0 - 0.5) / 0.5;
                }
            }
        }
        out
    }
}

/// One line of text found.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub text: String,
    /// The recogniser's mean confidence over its characters.
    pub score: f32,
    /// `(x, y, width, height)` in the picture.
    pub bbox: (usize, usize, usize, usize),
}

/// The two models, loaded.
pub struct Ocr {
    detector: Session,
    recogniser: Session,
    /// The recogniser's classes after the blank: the dictionary, then a space.
    classes: Vec<String>,
}

impl fmt::Debug for Ocr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ocr").field("classes", &self.classes.len()).finish_non_exhaustive()
    }
}

impl Ocr {
    /// Loads `<dir>/det.onnx` and `<dir>/rec.onnx` with ONNX Runtime from `runtime`, on
    /// `threads` threads.
    pub fn load(dir: &Path, runtime: &Path, threads: usize) -> Result<Self, OcrError> {
        let det = dir.join(DETECTOR);
        let rec = dir.join(RECOGNISER);
        for path in [&det, &rec] {
            if !path.is_file() {
                return Err(OcrError::ModelMissing { path: path.clone() });
            }
        }
        stt_onnx::check(runtime)?;
        let environment = stt_onnx::environment(runtime)?;
        let session = |path: &Path| {
            Session::builder(&environment)
                .and_then(|b| {
                    let b = b.with_intra_threads(threads.max(1))?.with_inter_threads(1)?;
                    // Spinning would keep idle pool threads busy, taking cores from whisper.
                    let b = b.with_intra_op_spinning(false)?;
                    Ok(b.with_optimization_level(GraphOptimizationLevel::Level3)?)
                })
                .and_then(|mut b| b.commit_from_file(path))
                .map_err(|source| OcrError::Model { path: path.to_owned(), source })
        };
        let detector = session(&det)?;
        let recogniser = session(&rec)?;
        let dictionary =
            recogniser.metadata().ok().and_then(|m| m.custom("character")).ok_or_else(|| {
                OcrError::WrongModel {
                    path: rec.clone(),
                    why: "it carries no 'character' dictionary in its metadata".into(),
                }
            })?;
        let mut classes: Vec<String> = dictionary.lines().map(str::to_owned).collect();
        classes.push(" ".into());
        Ok(Self { detector, recogniser, classes })
    }

    /// The lines of text in `picture`, top to bottom.
    pub fn read(&mut self, picture: &Picture) -> Result<Vec<Line>, OcrError> {
        if picture.width < 4 || picture.height < 4 {
            return Ok(Vec::new());
        }
        let boxes = self.detect(picture)?;
        let mut lines = Vec::new();
        for bbox in boxes {
            let (text, score) = self.recognise(picture, bbox)?;
            if !text.trim().is_empty() {
                lines.push(Line { text: text.trim().to_owned(), score, bbox });
            }
        }
        Ok(order(lines))
    }

    /// The boxes of text, in the picture's pixels.
    fn detect(&mut self, picture: &Picture) -> Result<Vec<(usize, usize, usize, usize)>, OcrError> {
        let (w, h) = (picture.width, picture.height);
        let scale = (MAX_SIDE as f32 / w.max(h) as f32).min(1.0);
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let (to_w, to_h) = (
            ((w as f32 * scale).round() as usize).max(1),
            ((h as f32 * scale).round() as usize).max(1),
        );
        let (pad_w, pad_h) = (to_w.div_ceil(32) * 32, to_h.div_ceil(32) * 32);
        let input = picture.tensor((0, 0, w, h), to_w, to_h, pad_w, pad_h);
        let outputs = self
            .detector
            .run(ort::inputs![TensorRef::from_array_view(([1, 3, pad_h, pad_w], &input[..]))?])?;
        let (shape, map) = outputs[0].try_extract_tensor::<f32>()?;
        let (map_h, map_w) =
            (usize::try_from(shape[2]).unwrap_or(0), usize::try_from(shape[3]).unwrap_or(0));
        let regions = regions(map, map_w, map_h.min(to_h), to_w.min(map_w));
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let boxes = regions
            .into_iter()
            .map(|(x0, y0, x1, y1)| {
                let (bw, bh) = ((x1 - x0 + 1) as f32, (y1 - y0 + 1) as f32);
                let grow = bw * bh * UNCLIP_RATIO / (2.0 * (bw + bh));
                let back = |v: f32, most: usize| ((v / scale).round().max(0.0) as usize).min(most);
                let (ax, ay) = (back(x0 as f32 - grow, w - 1), back(y0 as f32 - grow, h - 1));
                let (bx, by) = (back(x1 as f32 + 1.0 + grow, w), back(y1 as f32 + 1.0 + grow, h));
                (ax, ay, bx.saturating_sub(ax).max(1), by.saturating_sub(ay).max(1))
            })
            .collect();
        Ok(boxes)
    }

    /// The text in `bbox`, and the mean confidence of its characters.
    fn recognise(
        &mut self,
        picture: &Picture,
        bbox: (usize, usize, usize, usize),
    ) -> Result<(String, f32), OcrError> {
        let (_, _, w, h) = bbox;
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let to_w =
            ((w as f32 * LINE_HEIGHT as f32 / h as f32).round() as usize).clamp(8, MAX_LINE_WIDTH);
        let input = picture.tensor(bbox, to_w, LINE_HEIGHT, to_w, LINE_HEIGHT);
        let outputs = self.recogniser.run(ort::inputs![TensorRef::from_array_view((
            [1, 3, LINE_HEIGHT, to_w],
            &input[..]
        ))?])?;
        let (shape, scores) = outputs[0].try_extract_tensor::<f32>()?;
        let (steps, classes) =
            (usize::try_from(shape[1]).unwrap_or(0), usize::try_from(shape[2]).unwrap_or(0));
        Ok(ctc(scores, steps, classes, &self.classes))
    }
}

/// The regions of `map` (`w` x `h`, row by row, `stride` wide) over [`PIXEL_THRESHOLD`]
/// whose mean is at least [`BOX_THRESHOLD`], as inclusive `(x0, y0, x1, y1)`: 4-connected
/// pixels, found by flood fill.
fn regions(map: &[f32], stride: usize, h: usize, w: usize) -> Vec<(usize, usize, usize, usize)> {
    let mut seen = vec![false; stride * h];
    let mut found = Vec::new();
    let mut stack = Vec::new();
    for start in 0..h * stride {
        let (sx, sy) = (start % stride, start / stride);
        if sx >= w || seen[start] || map[start] <= PIXEL_THRESHOLD {
            continue;
        }
        let (mut x0, mut y0, mut x1, mut y1) = (sx, sy, sx, sy);
        let (mut sum, mut count) = (0.0f32, 0usize);
        seen[start] = true;
        stack.push(start);
        while let Some(i) = stack.pop() {
            let (x, y) = (i % stride, i / stride);
            (x0, y0, x1, y1) = (x0.min(x), y0.min(y), x1.max(x), y1.max(y));
            sum += map[i];
            count += 1;
            let mut visit = |j: usize| {
                if !seen[j] && map[j] > PIXEL_THRESHOLD {
                    seen[j] = true;
                    stack.push(j);
                }
            };
            if x > 0 {
                visit(i - 1);
            }
            if x + 1 < w {
                visit(i + 1);
            }
            if y > 0 {
                visit(i - stride);
            }
            if y + 1 < h {
                visit(i + stride);
            }
        }
        #[allow(clippy::cast_precision_loss, reason = "a pixel count")]
        let mean = sum / count as f32;
        // Specks: a line of text is a few pixels high at the least.
        if mean >= BOX_THRESHOLD && x1 - x0 >= 2 && y1 - y0 >= 2 {
            found.push((x0, y0, x1, y1));
        }
    }
    found
}

/// Greedy CTC: at each of `steps` steps the likeliest of `n` classes (0: blank); a class
/// repeated in a row is one character. Returns the text and the mean confidence of its
/// characters.
fn ctc(scores: &[f32], steps: usize, n: usize, classes: &[String]) -> (String, f32) {
    let mut text = String::new();
    let (mut sum, mut count) = (0.0f32, 0usize);
    let mut last = 0usize;
    for step in scores.chunks_exact(n).take(steps) {
        let (best, p) = step
            .iter()
            .copied()
            .enumerate()
            .fold((0, f32::MIN), |(bi, bp), (i, p)| if p > bp { (i, p) } else { (bi, bp) });
        if best != 0
            && best != last
            && let Some(class) = classes.get(best - 1)
        {
            text.push_str(class);
            sum += p;
            count += 1;
        }
        last = best;
    }
    #[allow(clippy::cast_precision_loss, reason = "a character count")]
    let score = if count == 0 { 0.0 } else { sum / count as f32 };
    (text, score)
}

/// Lines top to bottom; boxes whose middles are within half a line's height of each other
/// are one line, left to right.
fn order(mut lines: Vec<Line>) -> Vec<Line> {
    lines.sort_by_key(|l| (l.bbox.1 + l.bbox.3 / 2, l.bbox.0));
    let mut rows: Vec<Vec<Line>> = Vec::new();
    for line in lines {
        let middle = line.bbox.1 + line.bbox.3 / 2;
        match rows.last_mut() {
            Some(row)
                if row.first().is_some_and(|f| {
                    let fm = f.bbox.1 + f.bbox.3 / 2;
                    middle.abs_diff(fm) <= f.bbox.3.min(line.bbox.3) / 2
                }) =>
            {
                row.push(line);
            }
            _ => rows.push(vec![line]),
        }
    }
    rows.into_iter()
        .flat_map(|mut row| {
            row.sort_by_key(|l| l.bbox.0);
            row
        })
        .collect()
}

/// The lines as text: one line of the picture a line, boxes on one line joined by spaces.
pub fn text(lines: &[Line]) -> String {
    let mut out = String::new();
    let mut last_middle: Option<(usize, usize)> = None;
    for line in lines {
        let middle = line.bbox.1 + line.bbox.3 / 2;
        match last_middle {
            Some((m, h)) if middle.abs_diff(m) <= h.min(line.bbox.3) / 2 => out.push(' '),
            Some(_) => out.push('\n'),
            None => {}
        }
        out.push_str(&line.text);
        last_middle = Some((middle, line.bbox.3));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctc_drops_blanks_and_repeats_and_a_space_is_the_last_class() {
        let classes: Vec<String> = ["a", "b", " "].iter().map(|s| (*s).to_owned()).collect();
        // Steps: a a blank a b space b -> "aab b"
        let best = [1, 1, 0, 1, 2, 3, 2];
        let mut scores = Vec::new();
        for b in best {
            let mut step = vec![0.0f32; 4];
            step[b] = 0.9;
            scores.extend(step);
        }
        let (text, score) = ctc(&scores, 7, 4, &classes);
        assert_eq!(text, "aab b");
        assert!((score - 0.9).abs() < 1e-6);
    }

    #[test]
    fn regions_are_touching_pixels_over_the_threshold_and_specks_are_dropped() {
        let (w, h) = (12, 6);
        let mut map = vec![0.0f32; w * h];
        for y in 1..4 {
            for x in 1..6 {
                map[y * w + x] = 0.9;
            }
        }
        map[5 * w + 10] = 0.9; // a speck
        assert_eq!(regions(&map, w, h, w), [(1, 1, 5, 3)]);
    }
}
