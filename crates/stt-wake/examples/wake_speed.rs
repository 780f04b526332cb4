//! How long listening takes per 80 ms step, on one ONNX Runtime thread: the features (mel
//! spectrogram and embedding) and each installed head.
//!
//! ```text
//! cargo run -p stt-wake --example wake_speed
//! ```
//!
//! The models and ONNX Runtime are found where `scripts/fetch-wake` and
//! `scripts/fetch-models` install them; the heads timed are those installed of hey_jarvis,
//! alexa, hey_mycroft and hey_rhasspy. The audio is 20 s of noise-like signal (the models'
//! cost does not depend on what is said); each figure is the best of 3 rounds, so a busy
//! machine shows less.

#![allow(clippy::print_stdout, reason = "a command-line report")]

use std::error::Error;
use std::time::{Duration, Instant};

use stt_wake::{Features, Head, STEP};

const SECONDS: usize = 20;

fn main() -> Result<(), Box<dyn Error>> {
    let models = stt_config::dirs::models_dir_with(&stt_config::dirs::Env::from_process())?;
    let start = Instant::now();
    let mut features = Features::load(&models)?;
    println!("load (ONNX Runtime, both feature models, one warm-up clip): {:?}", start.elapsed());

    // A repeatable signal with some structure: a chirp under a little pseudo-random noise.
    let mut seed = 1u32;
    let audio: Vec<f32> = (0..SECONDS * 16_000)
        .map(|i| {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let noise = (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5;
            let t = i as f32 / 16_000.0;
            0.2 * (t * (200.0 + 50.0 * t) * std::f32::consts::TAU).sin() + 0.05 * noise
        })
        .collect();
    let steps = audio.len() / STEP;

    let mut best = Duration::MAX;
    for _ in 0..3 {
        features.reset();
        let start = Instant::now();
        for chunk in audio.chunks(STEP) {
            features.push(chunk)?;
        }
        best = best.min(start.elapsed());
    }
    println!("features: {:.2} ms per step", best.as_secs_f64() * 1e3 / steps as f64);

    for name in ["hey_jarvis", "alexa", "hey_mycroft", "hey_rhasspy"] {
        let Ok(mut head) = Head::installed(&models, name) else { continue };
        let history = features.history().to_vec();
        let mut best = Duration::MAX;
        for _ in 0..3 {
            let start = Instant::now();
            for end in head.frames()..=history.len() {
                head.score(&history[..end])?;
            }
            best = best.min(start.elapsed());
        }
        let runs = history.len() + 1 - head.frames();
        println!("head {name}: {:.3} ms per step", best.as_secs_f64() * 1e3 / runs as f64);
    }
    Ok(())
}
