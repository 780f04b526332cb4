//! [`Silero`]: the Silero VAD network (v5/v6, 16 kHz) written out in plain Rust, its weights
//! read from the same `silero_vad.onnx` that `scripts/fetch-models` installs.
//!
//! No ONNX Runtime: that library costs the daemon about 44 MB of RSS and a download, for a
//! network this small (about 300 k weights, 0.7 M multiply-adds a frame). The graph is not
//! interpreted; its 16 kHz branch is transcribed here, as `onnx.rs` found it in silero-vad
//! 6.2.3's file:
//!
//! 1. the 576-sample window (64 of context, then the 512-sample frame) is reflect-padded by
//!    64 samples on the right, to 640;
//! 2. "STFT": a Conv1d of the padded window with a fixed basis of 258 filters (129 real, then
//!    129 imaginary) of 256 taps, stride 128, no padding: 4 time steps; then the magnitude
//!    `sqrt(re² + im²)`, 129 × 4;
//! 3. encoder: four Conv1d (kernel 3, padding 1) each followed by ReLU:
//!    129→128 stride 1, 128→64 stride 2, 64→64 stride 2, 64→128 stride 1: 128 × 1;
//! 4. decoder: one LSTM step on that vector (hidden 128; the state `(h, c)` carried from frame
//!    to frame), ReLU of `h`, a Conv1d 128→1 of kernel 1, sigmoid: the probability.
//!
//! The LSTM weights are stored in PyTorch's gate order (input, forget, cell, output): the ONNX
//! graph reorders them into ONNX's (input, output, forget, cell) with `Slice`s before its
//! `LSTM` node, so used as stored they give PyTorch's `LSTMCell`, which is what ONNX's `LSTM`
//! computes with its default activations (sigmoid, tanh, tanh) and no clipping.
//!
//! The weights are checked by name and shape when the model loads, so a model of another
//! architecture is refused there rather than scoring nonsense.

use std::path::Path;

use crate::{SpeechProb, VadError, onnx};

/// Frames and the context before each: the model's input window.
///
/// The window holds the last [`Silero::CONTEXT`] samples of the previous frame (zeros at the
/// start of a stream), then the frame; each new frame shifts the old one's tail to the front.
#[derive(Debug, Clone)]
pub(crate) struct Window {
    samples: [f32; WINDOW],
}

impl Window {
    pub(crate) fn new() -> Self {
        Self { samples: [0.0; WINDOW] }
    }

    /// The model's input for `frame`: the previous frame's tail, then `frame`, sanitised
    /// (clamped to `[-1, 1]`, non-finite samples as 0: one NaN would poison the recurrent
    /// state for good). A short frame is padded with zeros.
    pub(crate) fn push(&mut self, frame: &[f32]) -> &[f32; WINDOW] {
        self.samples.copy_within(Silero::FRAME_LEN.., 0);
        let (_, body) = self.samples.split_at_mut(Silero::CONTEXT);
        for (dst, &src) in body.iter_mut().zip(frame) {
            *dst = if src.is_finite() { src.clamp(-1.0, 1.0) } else { 0.0 };
        }
        let n = frame.len().min(Silero::FRAME_LEN);
        body[n..].fill(0.0);
        &self.samples
    }

    pub(crate) fn reset(&mut self) {
        self.samples.fill(0.0);
    }
}

/// Samples in the model's input: the context, then the frame.
const WINDOW: usize = Silero::CONTEXT + Silero::FRAME_LEN;
/// Samples of reflection padding on the right of the window.
const PAD: usize = 64;
/// The STFT's filter length and hop, in samples.
const FILTER: usize = 256;
const HOP: usize = 128;
/// STFT time steps per window: (576 + 64 − 256) / 128 + 1.
const STEPS: usize = (WINDOW + PAD - FILTER) / HOP + 1;
/// Frequency bins: the basis holds this many real filters, then as many imaginary ones.
const BINS: usize = FILTER / 2 + 1;
/// The LSTM's hidden size (and the encoder's output channels).
const HIDDEN: usize = 128;
/// Taps of every encoder convolution.
const KERNEL: usize = 3;

/// The Silero VAD in plain Rust: 32 ms frames, about 0.1 ms of CPU per frame on one thread
/// (as in ONNX Runtime), 1.2 MB of weights and nothing else loaded.
pub struct Silero {
    net: Box<Net>,
    window: Window,
    /// Whether the last frame came out non-finite (so a persistent failure is logged once).
    failing: bool,
}

impl Silero {
    /// 512 samples: 32 ms at 16 kHz, the frame the model is trained on.
    pub const FRAME_LEN: usize = 512;
    /// Samples of the previous frame prepended to each one.
    pub const CONTEXT: usize = 64;

    /// Reads the 16 kHz weights from the Silero v5/v6 ONNX file at `model`.
    pub fn load(model: &Path) -> Result<Self, VadError> {
        let bad_model = |reason: String| VadError::BadModel { path: model.to_owned(), reason };
        let bytes = match std::fs::read(model) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(VadError::NoModel { path: model.to_owned() });
            }
            Err(e) => return Err(bad_model(format!("cannot read it: {e}"))),
        };
        let net = Net::from_onnx(&bytes).map_err(bad_model)?;
        tracing::debug!(model = %model.display(), "Silero VAD (pure Rust) loaded");
        Ok(Self { net: Box::new(net), window: Window::new(), failing: false })
    }
}

impl std::fmt::Debug for Silero {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Silero").finish_non_exhaustive()
    }
}

impl SpeechProb for Silero {
    fn frame_len(&self) -> usize {
        Self::FRAME_LEN
    }

    fn prob(&mut self, frame: &[f32]) -> f32 {
        let p = self.net.step(self.window.push(frame));
        if p.is_finite() {
            self.failing = false;
            return p.clamp(0.0, 1.0);
        }
        // Not expected with finite weights and sanitised input; if it happens the state is
        // poisoned, so the stream goes on from a fresh one rather than scoring NaN forever.
        if !self.failing {
            tracing::warn!("Silero VAD gave a non-finite probability: resetting its state");
        }
        self.failing = true;
        self.net.reset();
        0.0
    }

    fn reset(&mut self) {
        self.window.reset();
        self.net.reset();
    }
}

/// A Conv1d of kernel 3, padding 1, over time-major activations.
///
/// Its weights are rearranged at load from ONNX's `[out][in][k]` to `[out][k][in]`, so that
/// with the input stored time-major (`[t][in]`, a zero row before and after) one output is a
/// single dot product of a weight row with `KERNEL` consecutive input rows: two contiguous
/// slices, which the compiler vectorises.
#[derive(Debug)]
struct Conv {
    inputs: usize,
    outputs: usize,
    stride: usize,
    /// `[outputs][KERNEL * inputs]`.
    weight: Vec<f32>,
    bias: Vec<f32>,
}

impl Conv {
    /// `padded` is the input, `[steps + 2][inputs]` with zero first and last rows; writes
    /// `ReLU(conv)` as `[out_steps][outputs]` into `out`.
    fn forward_relu(&self, padded: &[f32], out: &mut [f32]) {
        let span = KERNEL * self.inputs;
        for (t, row) in out.chunks_exact_mut(self.outputs).enumerate() {
            let x = &padded[t * self.stride * self.inputs..][..span];
            for ((y, w), b) in row.iter_mut().zip(self.weight.chunks_exact(span)).zip(&self.bias) {
                *y = (b + dot(w, x)).max(0.0);
            }
        }
    }
}

/// The weights, and the activations and state of one stream.
#[derive(Debug)]
struct Net {
    /// `[2 * BINS][FILTER]`: the real filters, then the imaginary ones.
    basis: Vec<f32>,
    encoder: [Conv; 4],
    /// `[4 * HIDDEN][2 * HIDDEN]`: each gate's row of `W_ih` then its row of `W_hh`, so one
    /// dot product with `[x; h]` gives the gate; gates in PyTorch's order (i, f, g, o).
    lstm: Vec<f32>,
    /// `b_ih + b_hh`.
    lstm_bias: Vec<f32>,
    head: Vec<f32>,
    head_bias: f32,

    /// The window, reflect-padded.
    padded: [f32; WINDOW + PAD],
    /// The activations between layers, time-major with a zero row at each end (the
    /// convolutions' padding): the STFT magnitude and the first three encoder outputs.
    act: [Vec<f32>; 4],
    /// `[x; h]`: the encoder's output, then the LSTM's hidden state (carried).
    xh: [f32; 2 * HIDDEN],
    /// The LSTM's cell state (carried).
    cell: [f32; HIDDEN],
    gates: [f32; 4 * HIDDEN],
}

impl Net {
    fn from_onnx(bytes: &[u8]) -> Result<Self, String> {
        let tensors = onnx::tensors(bytes)?;
        // The 16 kHz weights are those next to the 16 kHz STFT basis: the 8 kHz branch has a
        // basis of another shape, and its other weights the same names under another prefix.
        const BASIS: &str = "stft.forward_basis_buffer";
        let basis_dims = [2 * BINS as i64, 1, FILTER as i64];
        let basis = tensors
            .iter()
            .find(|t| t.name.ends_with(BASIS) && t.dims == basis_dims)
            .ok_or_else(|| {
                format!(
                    "it has no tensor '{BASIS}' of shape {basis_dims:?}, as the 16 kHz Silero \
                     v5/v6 model has"
                )
            })?;
        let prefix = &basis.name[..basis.name.len() - BASIS.len()];
        let weight = |name: &str, dims: &[usize]| -> Result<Vec<f32>, String> {
            let full = format!("{prefix}{name}");
            let t = tensors
                .iter()
                .find(|t| t.name == full)
                .ok_or_else(|| format!("it has no tensor '{full}', which Silero v5/v6 has"))?;
            if !t.dims.iter().map(|&d| usize::try_from(d).ok()).eq(dims.iter().map(|&d| Some(d))) {
                return Err(format!("tensor '{full}' has shape {:?}, not {dims:?}", t.dims));
            }
            let values = t.floats()?;
            if !values.iter().all(|v| v.is_finite()) {
                return Err(format!("tensor '{full}' holds NaN or infinity"));
            }
            Ok(values)
        };
        let conv = |i: usize, inputs: usize, outputs: usize, stride: usize| {
            let w =
                weight(&format!("encoder.{i}.reparam_conv.weight"), &[outputs, inputs, KERNEL])?;
            let bias = weight(&format!("encoder.{i}.reparam_conv.bias"), &[outputs])?;
            // [out][in][k] -> [out][k][in].
            let mut weight = vec![0.0; w.len()];
            for o in 0..outputs {
                for c in 0..inputs {
                    for k in 0..KERNEL {
                        weight[(o * KERNEL + k) * inputs + c] = w[(o * inputs + c) * KERNEL + k];
                    }
                }
            }
            Ok::<_, String>(Conv { inputs, outputs, stride, weight, bias })
        };
        let encoder = [
            conv(0, BINS, HIDDEN, 1)?,
            conv(1, HIDDEN, 64, 2)?,
            conv(2, 64, 64, 2)?,
            conv(3, 64, HIDDEN, 1)?,
        ];
        let w_ih = weight("decoder.rnn.weight_ih", &[4 * HIDDEN, HIDDEN])?;
        let w_hh = weight("decoder.rnn.weight_hh", &[4 * HIDDEN, HIDDEN])?;
        let b_ih = weight("decoder.rnn.bias_ih", &[4 * HIDDEN])?;
        let b_hh = weight("decoder.rnn.bias_hh", &[4 * HIDDEN])?;
        let lstm = w_ih
            .chunks_exact(HIDDEN)
            .zip(w_hh.chunks_exact(HIDDEN))
            .flat_map(|(i, h)| i.iter().chain(h))
            .copied()
            .collect();
        let head_bias = weight("decoder.decoder.2.bias", &[1])?;

        // Each activation buffer holds its layer's output steps between two padding rows.
        let mut act: [Vec<f32>; 4] = Default::default();
        act[0] = vec![0.0; (STEPS + 2) * BINS];
        let mut steps = STEPS;
        for (buf, conv) in act[1..].iter_mut().zip(&encoder) {
            steps = conv_steps(steps, conv.stride);
            *buf = vec![0.0; (steps + 2) * conv.outputs];
        }
        Ok(Self {
            basis: weight(BASIS, &[2 * BINS, 1, FILTER])?,
            encoder,
            lstm,
            lstm_bias: b_ih.iter().zip(&b_hh).map(|(a, b)| a + b).collect(),
            head: weight("decoder.decoder.2.weight", &[1, HIDDEN, 1])?,
            head_bias: head_bias[0],
            padded: [0.0; WINDOW + PAD],
            act,
            xh: [0.0; 2 * HIDDEN],
            cell: [0.0; HIDDEN],
            gates: [0.0; 4 * HIDDEN],
        })
    }

    fn reset(&mut self) {
        self.xh.fill(0.0);
        self.cell.fill(0.0);
    }

    /// One window through the network: the speech probability; the LSTM state moves on.
    fn step(&mut self, window: &[f32; WINDOW]) -> f32 {
        // Reflection without repeating the edge sample (ONNX `Pad`, mode reflect).
        let (body, pad) = self.padded.split_at_mut(WINDOW);
        body.copy_from_slice(window);
        for (k, p) in pad.iter_mut().enumerate() {
            *p = window[WINDOW - 2 - k];
        }

        // STFT magnitude into act[0], rows 1..=STEPS.
        let [mag, e0, e1, e2] = &mut self.act;
        let (real, imag) = self.basis.split_at(BINS * FILTER);
        for (t, row) in between_padding(mag, BINS).chunks_exact_mut(BINS).enumerate() {
            let x = &self.padded[t * HOP..][..FILTER];
            let filters = real.chunks_exact(FILTER).zip(imag.chunks_exact(FILTER));
            for (m, (re, im)) in row.iter_mut().zip(filters) {
                let (re, im) = (dot(re, x), dot(im, x));
                *m = (re * re + im * im).sqrt();
            }
        }

        // Each layer writes between its output's padding rows, which stay zero; the last
        // (one step) into the x of [x; h].
        let [c0, c1, c2, c3] = &self.encoder;
        c0.forward_relu(mag, between_padding(e0, c0.outputs));
        c1.forward_relu(e0, between_padding(e1, c1.outputs));
        c2.forward_relu(e1, between_padding(e2, c2.outputs));
        c3.forward_relu(e2, &mut self.xh[..HIDDEN]);

        // One LSTM step (PyTorch's LSTMCell; ONNX's LSTM with default activations).
        let rows = self.lstm.chunks_exact(2 * HIDDEN);
        for ((g, w), b) in self.gates.iter_mut().zip(rows).zip(&self.lstm_bias) {
            *g = b + dot(w, &self.xh);
        }
        let (i, rest) = self.gates.split_at(HIDDEN);
        let (f, rest) = rest.split_at(HIDDEN);
        let (g, o) = rest.split_at(HIDDEN);
        let h = &mut self.xh[HIDDEN..];
        for k in 0..HIDDEN {
            let c = sigmoid(f[k]) * self.cell[k] + sigmoid(i[k]) * g[k].tanh();
            self.cell[k] = c;
            h[k] = sigmoid(o[k]) * c.tanh();
        }

        // The head: ReLU, a 1×1 convolution to one channel, sigmoid.
        let logit = h.iter().zip(&self.head).map(|(h, w)| h.max(0.0) * w).sum::<f32>();
        sigmoid(self.head_bias + logit)
    }
}

/// The rows of a time-major buffer `width` wide, without its first and last (padding) rows.
fn between_padding(buf: &mut [f32], width: usize) -> &mut [f32] {
    let end = buf.len() - width;
    &mut buf[width..end]
}

/// Output steps of a kernel-3, padding-1 convolution over `steps` inputs.
fn conv_steps(steps: usize, stride: usize) -> usize {
    (steps + 2 - KERNEL) / stride + 1
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// `a · b` over their common length.
///
/// Written for the compiler to vectorise: a float sum is not reassociated for us, so the
/// products go to `LANES` independent accumulators (four SSE registers, enough to hide the
/// adds' latency), summed pairwise at the end in a fixed order.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 16;
    let n = a.len().min(b.len());
    let (a_chunks, a_tail) = a[..n].as_chunks::<LANES>();
    let (b_chunks, b_tail) = b[..n].as_chunks::<LANES>();
    let mut acc = [0.0f32; LANES];
    for (x, y) in a_chunks.iter().zip(b_chunks) {
        for k in 0..LANES {
            acc[k] += x[k] * y[k];
        }
    }
    let tail: f32 = a_tail.iter().zip(b_tail).map(|(x, y)| x * y).sum();
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for k in 0..width {
            acc[k] += acc[k + width];
        }
    }
    acc[0] + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(start: f32) -> Vec<f32> {
        (0..Silero::FRAME_LEN).map(|i| (start + i as f32) / 4096.0).collect()
    }

    #[test]
    fn each_frame_is_preceded_by_the_last_64_samples_of_the_one_before() {
        let mut w = Window::new();
        let first = frame(0.0);
        let input = w.push(&first).to_vec();
        assert_eq!(input.len(), 576);
        assert!(input[..64].iter().all(|&s| s == 0.0), "no context at the start of a stream");
        assert_eq!(input[64..], first[..]);

        let second = frame(512.0);
        let input = w.push(&second).to_vec();
        assert_eq!(input[..64], first[448..]);
        assert_eq!(input[64..], second[..]);

        w.reset();
        let input = w.push(&second).to_vec();
        assert!(input[..64].iter().all(|&s| s == 0.0), "reset forgets the context");
    }

    #[test]
    fn samples_are_sanitised_and_short_frames_padded() {
        let mut w = Window::new();
        w.push(&[0.5; Silero::FRAME_LEN]);
        let input = w.push(&[3.0, -7.5, f32::NAN, f32::INFINITY, 0.25]).to_vec();
        assert_eq!(input[..64], [0.5; 64]);
        assert_eq!(input[64..69], [1.0, -1.0, 0.0, 0.0, 0.25]);
        assert!(input[69..].iter().all(|&s| s == 0.0));
    }

    #[test]
    fn dot_matches_the_plain_sum_at_every_length() {
        for n in [0, 1, 3, 15, 16, 17, 64, 387] {
            let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            let plain: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(x * y)).sum();
            assert!((f64::from(dot(&a, &b)) - plain).abs() < 1e-4, "n = {n}");
        }
        assert_eq!(dot(&[1.0, 2.0, 3.0], &[4.0, 5.0]), 14.0, "the common length");
    }

    #[test]
    fn encoder_lengths_follow_the_strides() {
        // 640 padded samples make 4 STFT steps; the strides (1, 2, 2, 1) take them to one.
        assert_eq!(STEPS, 4);
        assert_eq!(conv_steps(4, 1), 4);
        assert_eq!(conv_steps(4, 2), 2);
        assert_eq!(conv_steps(2, 2), 1);
        assert_eq!(conv_steps(1, 1), 1);
    }

    #[test]
    fn a_missing_model_says_to_fetch_it() {
        let err = Silero::load(Path::new("/nonexistent/silero_vad.onnx")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no Silero VAD model at '/nonexistent/silero_vad.onnx': run scripts/fetch-models \
             (or set [daemon].vad = \"earshot\")"
        );
    }

    #[test]
    fn a_file_that_is_not_the_model_says_to_reinstall_it() {
        let dir = tempfile::tempdir().unwrap();
        let check = |name: &str, bytes: &[u8], reason: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            let err = Silero::load(&path).unwrap_err();
            let msg = err.to_string();
            assert!(matches!(err, VadError::BadModel { .. }), "{msg}");
            assert!(msg.contains(reason), "{name}: {msg}");
            assert!(msg.contains("run scripts/fetch-models to reinstall silero_vad.onnx"), "{msg}");
        };
        check("html.onnx", b"<html>404</html>", "not an ONNX model");
        // A valid ONNX file with an empty graph.
        check("empty.onnx", &[7 << 3 | 2, 0], "no tensor 'stft.forward_basis_buffer' of shape");
        let err = Silero::load(dir.path()).unwrap_err();
        assert!(err.to_string().contains("(cannot read it: Is a directory"), "{err}");
    }
}
