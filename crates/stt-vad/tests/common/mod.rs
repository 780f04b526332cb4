//! Audio for comparing two classifiers frame by frame: sentences spoken by espeak-ng (when it
//! is installed) clean, in white and pink noise, clipped and very quiet, with silence and
//! noise alone between; and the reference Silero in ONNX Runtime ([`onnx_runtime`]). Shared by
//! `tests/silero.rs` and `examples/silero_compare.rs`.
//!
//! Everything but espeak-ng is made here, from a fixed seed, so a run is the same every time.

#![allow(dead_code, reason = "each user takes what it needs")]

pub mod onnx_runtime;

use std::path::Path;
use std::process::Command;

use stt_testkit::speech::{Line, Part, Speech};

/// The sample rate of everything here.
pub const RATE: usize = 16_000;

const SENTENCES: [(&str, u32, &str); 4] = [
    ("en-us", 160, "The quick brown fox jumps over the lazy dog, then rests in the shade."),
    ("en-gb", 140, "Please set a timer for ten minutes and remind me to call my sister."),
    ("en-us+f3", 190, "Voice activity detection decides which parts of a stream hold speech."),
    ("en-gb-x-rp", 175, "It is raining again, so bring an umbrella when you go out tonight."),
];

/// The test audio (16 kHz mono, about two minutes), and whether it holds real speech
/// (false when espeak-ng is missing: then the voices are synthetic buzzes, and a message says
/// so on stderr).
pub fn mixture() -> (Vec<f32>, bool) {
    let dir = tempfile::tempdir().ok();
    let spoken: Option<Vec<Vec<f32>>> = dir.as_ref().and_then(|d| {
        SENTENCES.iter().map(|&(v, wpm, text)| speak(d.path(), v, wpm, text)).collect()
    });
    let real = spoken.is_some();
    let voices = spoken.unwrap_or_else(|| {
        eprintln!(
            "espeak-ng is not installed (apt-get install -y espeak-ng): comparing on synthetic \
             voiced sounds and noise only"
        );
        (0..SENTENCES.len()).map(|i| buzz(3.0, 110.0 + 40.0 * i as f32)).collect()
    });

    let mut noise = Noise::new(0x5eed_1234_abcd_ef01);
    let mut out = silence(1.0);
    // Clean, then in noise at falling SNRs, then clipped and very quiet.
    type Mix = fn(&mut Noise, &[f32]) -> Vec<f32>;
    let conditions: [Mix; 6] = [
        |_, s| s.to_vec(),
        |n, s| n.add(s, 10.0, false),
        |n, s| n.add(s, 5.0, true),
        |n, s| n.add(s, 0.0, true),
        |_, s| s.iter().map(|x| x * 8.0).collect(),
        |_, s| s.iter().map(|x| x * 0.03).collect(),
    ];
    for mix in conditions {
        for voice in &voices {
            out.extend(mix(&mut noise, voice));
            out.extend(silence(0.6));
        }
    }
    // Noise alone, at several levels, and tones and a sweep: things that are not speech.
    out.extend(noise.pink(5.0, -30.0));
    out.extend(noise.white(4.0, -45.0));
    out.extend(noise.white(3.0, -20.0));
    out.extend(noise.pink(3.0, -12.0));
    out.extend(tones(4.0));
    out.extend(silence(1.0));
    (out, real)
}

/// `text` spoken by espeak-ng at 16 kHz (made by the test kit, which resamples with sox);
/// `None` if espeak-ng cannot run.
fn speak(dir: &Path, voice: &'static str, wpm: u32, text: &'static str) -> Option<Vec<f32>> {
    let runs =
        Command::new("espeak-ng").arg("--version").output().is_ok_and(|o| o.status.success());
    runs.then(|| Speech::new(dir).samples(&[Part::SayAt { line: Line { text, voice }, wpm }]))
}

pub fn silence(seconds: f32) -> Vec<f32> {
    vec![0.0; (seconds * RATE as f32) as usize]
}

/// A voiced-sounding stand-in for speech: a pulse train at `pitch` Hz through a rough vowel
/// resonance, its loudness rising and falling at syllable rate.
fn buzz(seconds: f32, pitch: f32) -> Vec<f32> {
    let n = (seconds * RATE as f32) as usize;
    let mut y = [0.0f32; 2];
    (0..n)
        .map(|i| {
            let t = i as f32 / RATE as f32;
            let phase = (t * pitch * (1.0 + 0.1 * (t * 1.3).sin())).fract();
            let pulse = if phase < 0.05 { 1.0 } else { 0.0 };
            // A two-pole resonator near 700 Hz.
            let (r, w) = (0.97f32, 2.0 * std::f32::consts::PI * 700.0 / RATE as f32);
            let v = pulse + 2.0 * r * w.cos() * y[0] - r * r * y[1];
            y = [v, y[0]];
            let envelope = (0.5 - 0.5 * (2.0 * std::f32::consts::PI * 4.0 * t).cos()).powi(2);
            0.02 * v * envelope
        })
        .collect()
}

/// Two beeps and a sweep.
fn tones(seconds: f32) -> Vec<f32> {
    let n = (seconds * RATE as f32) as usize;
    (0..n)
        .map(|i| {
            let t = i as f32 / RATE as f32;
            let beep = if t.fract() < 0.3 {
                0.3 * (2.0 * std::f32::consts::PI * 1000.0 * t).sin()
            } else {
                0.0
            };
            let sweep = 0.2 * (2.0 * std::f32::consts::PI * (200.0 * t + 400.0 * t * t)).sin();
            if t < seconds / 2.0 { beep } else { sweep }
        })
        .collect()
}

/// White and pink noise from a fixed seed.
pub struct Noise {
    state: u64,
}

impl Noise {
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// Uniform in [-1, 1) (xorshift64*).
    fn next(&mut self) -> f32 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let bits = self.state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40;
        bits as f32 / (1u64 << 23) as f32 - 1.0
    }

    fn white_raw(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.next()).collect()
    }

    /// Paul Kellet's economy filter: white noise to about −3 dB per octave.
    fn pink_raw(&mut self, n: usize) -> Vec<f32> {
        let mut b = [0.0f32; 3];
        (0..n)
            .map(|_| {
                let w = self.next();
                b[0] = 0.99765 * b[0] + w * 0.099_046;
                b[1] = 0.96300 * b[1] + w * 0.296_516_4;
                b[2] = 0.57000 * b[2] + w * 1.052_691_3;
                b[0] + b[1] + b[2] + w * 0.1848
            })
            .collect()
    }

    pub fn white(&mut self, seconds: f32, dbfs: f32) -> Vec<f32> {
        let x = self.white_raw((seconds * RATE as f32) as usize);
        scale_to(x, dbfs)
    }

    pub fn pink(&mut self, seconds: f32, dbfs: f32) -> Vec<f32> {
        let x = self.pink_raw((seconds * RATE as f32) as usize);
        scale_to(x, dbfs)
    }

    /// `speech` plus noise `snr_db` below it (RMS over the whole clip).
    fn add(&mut self, speech: &[f32], snr_db: f32, pink: bool) -> Vec<f32> {
        let dbfs = 20.0 * rms(speech).log10() - snr_db;
        let noise = if pink { self.pink_raw(speech.len()) } else { self.white_raw(speech.len()) };
        speech.iter().zip(scale_to(noise, dbfs)).map(|(s, n)| s + n).collect()
    }
}

fn rms(x: &[f32]) -> f32 {
    (x.iter().map(|s| s * s).sum::<f32>() / x.len().max(1) as f32).sqrt().max(1e-9)
}

fn scale_to(x: Vec<f32>, dbfs: f32) -> Vec<f32> {
    let gain = 10f32.powf(dbfs / 20.0) / rms(&x);
    x.into_iter().map(|s| s * gain).collect()
}
