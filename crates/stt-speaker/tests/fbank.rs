//! `stt_speaker::fbank` against the reference, Kaldi's fbank as kaldi-native-fbank computes it:
//! the features of a synthetic signal, which both sides compute from the same formula (see
//! `signal`), compared with `tests/data/fbank_reference.json`, which `tests/reference.py`
//! writes (its docstring says how to rerun it).

#![allow(clippy::expect_used, reason = "a test: a missing or broken fixture should panic")]

use serde::Deserialize;
use stt_speaker::fbank::{self, Fbank, Frame, LOG_FLOOR, NUM_BINS};

/// The largest difference allowed between a feature here and the reference's, in natural-log
/// units (so 1e-3 is a 0.1 % difference in a mel energy). The two run the same steps in the same
/// f32 arithmetic, except the FFT: Kaldi's runs in f64 and rounds its output to f32, realfft's
/// in f32, which leaves an error of about 1e-7 of a frame's strongest component in every FFT bin:
/// negligible in a strong mel bin, larger in relative terms in a weak one. Measured on this
/// signal: at most 3.5e-5 over the fixture's frames and 2.1e-4 over all 128 (both in the lowest
/// mel bins, where the pre-emphasis leaves little energy). The fixture's six decimals add 5e-7.
const TOLERANCE: f32 = 1e-3;

#[derive(Debug, Deserialize)]
struct Reference {
    signal: SignalParams,
    num_frames: usize,
    quiet_frame_floored_bins: usize,
    frames: Vec<ReferenceFrame>,
    /// The reference's mean over all frames, per bin.
    mean: Vec<f32>,
}

#[derive(Debug, Deserialize, PartialEq)]
struct SignalParams {
    sample_rate: u32,
    samples: usize,
    lcg_seed: u64,
    quiet_start: usize,
    quiet_end: usize,
    quiet_noise: f64,
    noise: f64,
}

#[derive(Debug, Deserialize)]
struct ReferenceFrame {
    name: String,
    index: usize,
    values: Vec<f32>,
}

/// The parameters of the signal, as `tests/reference.py` has them.
const PARAMS: SignalParams = SignalParams {
    sample_rate: 16_000,
    samples: 20_800,
    lcg_seed: 0x5EED,
    quiet_start: 12_800,
    quiet_end: 16_000,
    quiet_noise: 2e-5,
    noise: 0.05,
};

/// The test signal, exactly as `tests/reference.py` computes it (in f64, rounded to f32): three
/// steady tones, a chirp from 200 to 6700 Hz and pseudo-noise from a 64-bit LCG, but from 0.8
/// to 1.0 s only noise, far below one int16 step, where some mel bins fall to the log floor.
fn signal(p: &SignalParams) -> Vec<f32> {
    use std::f64::consts::PI;
    let mut state = p.lcg_seed;
    (0..p.samples)
        .map(|i| {
            // Knuth's MMIX LCG; the top 24 bits give a uniform value in [-1, 1).
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let noise = 2.0 * ((state >> 40) as f64 / 16_777_216.0) - 1.0;
            let x = if (p.quiet_start..p.quiet_end).contains(&i) {
                p.quiet_noise * noise
            } else {
                let t = i as f64 / f64::from(p.sample_rate);
                0.3 * (2.0 * PI * 440.0 * t).sin()
                    + 0.2 * (2.0 * PI * 1234.5 * t + 0.5).sin()
                    + 0.1 * (2.0 * PI * 5000.0 * t).sin()
                    + 0.15 * (2.0 * PI * (200.0 * t + 2500.0 * t * t)).sin()
                    + p.noise * noise
            };
            x as f32
        })
        .collect()
}

fn reference() -> Reference {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/fbank_reference.json");
    let text = std::fs::read_to_string(path).expect("the fixture is in the crate");
    serde_json::from_str(&text).expect("the fixture parses")
}

/// The largest difference between `ours` and `theirs`, and the bin where it is.
fn max_error(ours: &[f32], theirs: &[f32]) -> (f32, usize) {
    assert_eq!(ours.len(), theirs.len());
    ours.iter()
        .zip(theirs)
        .map(|(a, b)| (a - b).abs())
        .enumerate()
        .fold((0.0, 0), |(max, at), (bin, e)| if e > max { (e, bin) } else { (max, at) })
}

#[test]
fn features_match_kaldi() {
    let reference = reference();
    assert_eq!(
        reference.signal, PARAMS,
        "tests/reference.py and this test define different signals"
    );
    assert_eq!(reference.frames.len(), 6);

    let samples = signal(&PARAMS);
    let mut features = Fbank::new().compute(&samples);
    assert_eq!(features.len(), reference.num_frames);
    assert_eq!(features.len(), fbank::num_frames(samples.len()));

    let mut worst = 0f32;
    for frame in &reference.frames {
        let ours: &Frame = &features[frame.index];
        let (error, bin) = max_error(ours, &frame.values);
        println!("frame {:3} ({}): max abs error {error:.2e} (bin {bin})", frame.index, frame.name);
        assert!(
            error <= TOLERANCE,
            "frame {} ({}), bin {bin}: ours {} vs Kaldi's {}",
            frame.index,
            frame.name,
            ours[bin],
            frame.values[bin]
        );
        worst = worst.max(error);
    }
    println!("max abs error over the fixture's frames: {worst:.2e} (tolerance {TOLERANCE:.0e})");

    // The quiet frame floors the same bins as Kaldi does (and some stay above it, or the
    // signal would not test the floor).
    let quiet = reference.frames.iter().find(|f| f.name == "quiet").expect("a quiet frame");
    let floored = |values: &[f32]| values.iter().filter(|v| **v <= LOG_FLOOR + 1e-6).count();
    assert_eq!(floored(&features[quiet.index]), reference.quiet_frame_floored_bins);
    assert!((1..NUM_BINS).contains(&reference.quiet_frame_floored_bins));

    // And after the model's normalisation: the reference minus its own mean.
    fbank::subtract_mean(&mut features);
    for frame in &reference.frames {
        let theirs: Vec<f32> =
            frame.values.iter().zip(&reference.mean).map(|(v, m)| v - m).collect();
        let (error, bin) = max_error(&features[frame.index], &theirs);
        assert!(error <= TOLERANCE, "mean-normalised frame {}, bin {bin}: {error:e}", frame.index);
    }
}
