//! Voice activity detection: which stretches of a 16 kHz mono stream are speech, cut into
//! segments that whisper can transcribe without a word clipped at either edge.
//!
//! Modules, in reading order:
//! - [`prob`]: the [`SpeechProb`] trait (one speech probability per fixed-size frame) and
//!   [`Earshot`]: pure Rust, its weights compiled in, no runtime library and no model file.
//! - [`silero`]: [`Silero`], the Silero VAD network written out in plain Rust, its weights
//!   read from `silero_vad.onnx` (which `scripts/fetch-models` installs) through `onnx`, a
//!   minimal reader of ONNX's protobuf. No ONNX Runtime: `tests/silero.rs` checks it frame by
//!   frame against ONNX Runtime running the same file. The measurements in
//!   `docs/PERFORMANCE.md` ("Voice activity detection") found Silero clearly more accurate
//!   than earshot in noise, so it is the daemon's default; earshot is the fallback that needs
//!   no model file.
//! - [`gate`]: [`Gated`], a noise gate in front of a classifier: frames that are only the
//!   room's steady noise skip it (most of an open microphone's idle CPU).
//! - [`config`]: [`VadConfig`], the thresholds, whose defaults are the measured ones.
//! - [`pitch`]: the pitch of the voice where it stops against the seconds before (a
//!   statement's final fall), for `end_of_turn = "prosody"`.
//! - [`segmenter`]: [`Segmenter`], which takes audio in chunks of any size and emits
//!   [`SegEvent`]s: a segment opens after `onset_ms` of speech with `pre_roll_ms` of audio
//!   before it, closes after `hangover_ms` of non-speech keeping a short tail, is flagged
//!   `too_short` under `min_speech_ms`, and is split at its quietest point when it reaches
//!   `max_segment_s`.
//!
//! Everything here is synchronous and bounded in memory: the daemon calls it on its VAD
//! thread (per second of audio, earshot takes about 0.5 ms of CPU and Silero about 3.5 ms, on one
//! thread), and it never holds more than one maximal segment plus the pre-roll ring.
//!
//! # Invariants
//!
//! `Silero` matches ONNX Runtime on the same file to 1e-4 per frame with no decision at 0.5
//! different (`tests/silero.rs`); a model of another shape is refused at load, never scored. The
//! gate never resets the classifier's state (only its input context is refreshed). Segments
//! never overlap or exceed `max_segment_s`; a split loses or repeats no sample; the events do
//! not depend on how the audio was chunked.

pub mod config;
pub mod gate;
mod onnx;
pub mod pitch;
pub mod prob;
pub mod segmenter;
pub mod silero;

use std::path::PathBuf;

pub use config::VadConfig;
pub use gate::Gated;
pub use prob::{Earshot, SpeechProb};
pub use segmenter::{Growing, SegEvent, Segmenter, Settled};
pub use silero::Silero;

/// The sample rate every function here expects, in Hz (mono `f32` in `[-1, 1]`).
pub const SAMPLE_RATE: u32 = 16_000;

/// A [`VadConfig`] that cannot work, or a [`Silero`] classifier that cannot load; worded with
/// what to run or the config key to change.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VadError {
    #[error("vad_threshold is {0}: it must be above 0 and below 1")]
    Threshold(f64),

    #[error("vad_max_segment_s is {0}: it must be at least 1")]
    MaxSegment(u32),

    #[error(
        "vad_min_speech_ms ({min_speech_ms}) must be shorter than vad_max_segment_s \
         ({max_segment_s} s): lower it, or raise vad_max_segment_s"
    )]
    MinSpeech { min_speech_ms: u32, max_segment_s: u32 },

    #[error(
        "vad_pre_roll_ms + vad_onset_ms ({total_ms} ms) must be at most half of \
         vad_max_segment_s ({max_segment_s} s): lower them, or raise vad_max_segment_s"
    )]
    PreRoll { total_ms: u64, max_segment_s: u32 },

    #[error(
        "no Silero VAD model at '{path}': run scripts/fetch-models (or set [daemon].vad = \"earshot\")"
    )]
    NoModel { path: PathBuf },

    #[error(
        "'{path}' is not a Silero VAD model that works here ({reason}): run scripts/fetch-models \
         to reinstall silero_vad.onnx, or set [daemon].vad = \"earshot\""
    )]
    BadModel { path: PathBuf, reason: String },
}
