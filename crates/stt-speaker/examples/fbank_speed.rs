//! How long the features of 10 s of audio take, on one thread:
//!
//! ```text
//! cargo run --release -p stt-speaker --example fbank_speed
//! cargo run -p stt-speaker --example fbank_speed   # dev: stt-speaker at opt-level 0, realfft at 3
//! ```
//!
//! The audio is a tone plus pseudo-noise (the features take as long whatever the samples); the
//! figure is the best of 20 rounds, so a busy machine shows less.

#![allow(clippy::print_stdout, reason = "a command-line report")]

use std::time::{Duration, Instant};

use stt_speaker::fbank::{self, Fbank, SAMPLE_RATE};

const SECONDS: u32 = 10;

fn main() {
    let mut state = 1u32;
    let samples: Vec<f32> = (0..SECONDS * SAMPLE_RATE)
        .map(|i| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let noise = (state >> 8) as f32 / (1 << 24) as f32 - 0.5;
            0.3 * (i as f32 * 0.1).sin() + 0.05 * noise
        })
        .collect();

    let start = Instant::now();
    let mut fbank = Fbank::new();
    println!("Fbank::new: {:?}", start.elapsed());

    let mut frames = Vec::new();
    let mut best = Duration::MAX;
    for _ in 0..20 {
        let start = Instant::now();
        fbank.compute_into(&samples, &mut frames);
        fbank::subtract_mean(&mut frames);
        best = best.min(start.elapsed());
    }
    println!(
        "{SECONDS} s of audio ({} frames), features and mean subtraction: {:.2} ms ({:.0}x real time)",
        frames.len(),
        best.as_secs_f64() * 1e3,
        f64::from(SECONDS) / best.as_secs_f64()
    );
}
