//! Helpers for this crate's tests: signals, measurements and WAV files made on the spot.

use std::f64::consts::PI;
use std::path::Path;

/// `len` samples of a sine of `freq` Hz at `rate` Hz, starting at phase 0.
pub(crate) fn sine(rate: u32, freq: f64, amplitude: f64, len: usize) -> Vec<f32> {
    (0..len)
        .map(|n| (amplitude * (2.0 * PI * freq * n as f64 / f64::from(rate)).sin()) as f32)
        .collect()
}

pub(crate) fn rms(samples: &[f32]) -> f32 {
    let sum: f64 = samples.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
    (sum / samples.len().max(1) as f64).sqrt() as f32
}

/// The amplitude of the `freq` Hz component of `samples` (Goertzel), for a sine of
/// amplitude `a` about `a`.
pub(crate) fn tone_amplitude(samples: &[f32], rate: u32, freq: f64) -> f64 {
    let w = 2.0 * PI * freq / f64::from(rate);
    let coeff = 2.0 * w.cos();
    let (mut s1, mut s2) = (0.0, 0.0);
    for &x in samples {
        let s0 = f64::from(x) + coeff * s1 - s2;
        s2 = s1;
        s1 = s0;
    }
    let power = s1 * s1 + s2 * s2 - coeff * s1 * s2;
    2.0 * power.sqrt() / samples.len() as f64
}

/// The frequency of a clean tone, from its rising zero crossings.
pub(crate) fn zero_crossing_frequency(samples: &[f32], rate: u32) -> f64 {
    let rising: Vec<usize> = samples
        .windows(2)
        .enumerate()
        .filter(|(_, w)| w[0] < 0.0 && w[1] >= 0.0)
        .map(|(i, _)| i)
        .collect();
    let (Some(first), Some(last)) = (rising.first(), rising.last()) else { return 0.0 };
    (rising.len() - 1) as f64 * f64::from(rate) / (last - first) as f64
}

/// Writes a WAV file of `frames` (interleaved `channels`) as integers of `bits` bits, with
/// the samples given in [-1, 1].
pub(crate) fn write_int_wav(path: &Path, rate: u32, channels: u16, bits: u16, samples: &[f32]) {
    let spec = hound::WavSpec {
        channels,
        sample_rate: rate,
        bits_per_sample: bits,
        sample_format: hound::SampleFormat::Int,
    };
    let mut writer = hound::WavWriter::create(path, spec).expect("create wav");
    let full = (1i64 << (bits - 1)) as f64;
    for &s in samples {
        let v = (f64::from(s) * full).round().clamp(-full, full - 1.0) as i32;
        writer.write_sample(v).expect("write sample");
    }
    writer.finalize().expect("finalize wav");
}

pub(crate) fn write_float_wav(path: &Path, rate: u32, channels: u16, samples: &[f32]) {
    let spec = hound::WavSpec {
        channels,
        sample_rate: rate,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let mut writer = hound::WavWriter::create(path, spec).expect("create wav");
    for &s in samples {
        writer.write_sample(s).expect("write sample");
    }
    writer.finalize().expect("finalize wav");
}

/// Interleaves channels of equal length.
pub(crate) fn interleave(channels: &[Vec<f32>]) -> Vec<f32> {
    let len = channels.first().map_or(0, Vec::len);
    (0..len).flat_map(|i| channels.iter().map(move |c| c[i])).collect()
}
