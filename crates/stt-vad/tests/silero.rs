//! [`Silero`] (the network in plain Rust) against the same model file run by ONNX Runtime
//! (`common::onnx_runtime`, the reference), frame by frame on speech and noise
//! (`common::mixture`).
//!
//! The model is found where the daemon finds it (`$STT_MODELS_DIR`, else `<data_dir>/models`);
//! without it a test passes having printed why it was skipped. The ONNX Runtime library is
//! looked for next to it: once the model is there, a missing library fails the comparison with
//! the command that installs it (`scripts/test` does), so it cannot be skipped by accident.

#![allow(clippy::unwrap_used, clippy::print_stderr, reason = "a test: a failure should panic")]

mod common;

use common::onnx_runtime::OrtSilero;

use std::path::{Path, PathBuf};

use stt_vad::{Silero, SpeechProb};

/// Largest difference allowed between the two probabilities of a frame.
const TOLERANCE: f32 = 1e-4;

/// The installed model, or `None` with a message saying what is missing. Under
/// `scripts/test` (`STT_TEST_STRICT` set) a missing model fails the test instead: CI must
/// never pass a test that did not run.
fn model(test: &str) -> Option<PathBuf> {
    let model = stt_config::dirs::model_path(Path::new("silero_vad.onnx")).unwrap();
    if model.is_file() {
        return Some(model);
    }
    let why = format!("no Silero model at '{}': run scripts/fetch-models", model.display());
    assert!(std::env::var_os("STT_TEST_STRICT").is_none(), "{test}: {why}");
    eprintln!("{test}: SKIPPED, {why}");
    None
}

fn probs(vad: &mut dyn SpeechProb, audio: &[f32]) -> Vec<f32> {
    audio.chunks_exact(vad.frame_len()).map(|frame| vad.prob(frame)).collect()
}

#[test]
fn pure_rust_silero_matches_onnx_runtime_frame_by_frame() {
    let test = "pure_rust_silero_matches_onnx_runtime_frame_by_frame";
    let Some(model) = model(test) else { return };
    let mut reference = OrtSilero::load(&model).unwrap_or_else(|e| panic!("{e}"));
    let mut ours = Silero::load(&model).unwrap_or_else(|e| panic!("{e}"));
    let (audio, real_speech) = common::mixture();

    let expected = probs(&mut reference, &audio);
    let got = probs(&mut ours, &audio);
    assert_eq!(got.len(), expected.len());

    let mut worst = (0.0f32, 0);
    let mut flipped = Vec::new();
    for (i, (&a, &b)) in got.iter().zip(&expected).enumerate() {
        let diff = (a - b).abs();
        if diff > worst.0 || diff.is_nan() {
            worst = (diff, i);
        }
        if (a >= 0.5) != (b >= 0.5) {
            flipped.push((i, a, b));
        }
    }
    let speech = expected.iter().filter(|&&p| p >= 0.5).count();
    eprintln!(
        "{} frames ({speech} speech by ONNX Runtime): max |diff| {:.2e} at frame {}",
        got.len(),
        worst.0,
        worst.1
    );
    assert!(
        worst.0 <= TOLERANCE,
        "frame {}: pure Rust {} vs ONNX Runtime {}",
        worst.1,
        got[worst.1],
        expected[worst.1]
    );
    assert!(flipped.is_empty(), "decisions at 0.5 differ (frame, ours, ONNX Runtime): {flipped:?}");
    // The audio must exercise both sides of the threshold, or the comparison proves little.
    assert!(got.len() > 3000, "{} frames", got.len());
    if real_speech {
        assert!(speech > 500 && got.len() - speech > 1000, "{speech} of {} speech", got.len());
    }
}

#[test]
fn reset_starts_a_fresh_stream() {
    let Some(model) = model("reset_starts_a_fresh_stream") else { return };
    let mut noise = common::Noise::new(7);
    let audio: Vec<f32> = [noise.pink(1.0, -20.0), noise.white(1.0, -30.0)].concat();
    let mut fresh = Silero::load(&model).unwrap();
    let first = probs(&mut fresh, &audio);
    // After a stream, reset, the same audio gives bit for bit the same probabilities.
    let _ = probs(&mut fresh, &noise.pink(2.0, -10.0));
    fresh.reset();
    assert_eq!(probs(&mut fresh, &audio), first);
}

#[test]
fn silence_scores_low_and_out_of_range_input_is_survived() {
    let Some(model) = model("silence_scores_low_and_out_of_range_input_is_survived") else {
        return;
    };
    let mut vad = Silero::load(&model).unwrap();
    assert_eq!(vad.frame_len(), 512);
    for p in probs(&mut vad, &common::silence(1.0)) {
        assert!(p < 0.1, "{p}");
    }
    let mut bad = vec![0.0f32; 512];
    bad[..4].copy_from_slice(&[3.0, -7.5, f32::NAN, f32::INFINITY]);
    for _ in 0..5 {
        let p = vad.prob(&bad);
        assert!((0.0..=1.0).contains(&p), "{p}");
    }
    // A short frame is padded rather than refused.
    assert!((0.0..=1.0).contains(&vad.prob(&[0.1; 100])));
}
