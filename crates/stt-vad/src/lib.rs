//! Voice activity detection: which stretches of a 16 kHz mono stream are speech, cut into
//! segments that whisper can transcribe without a word clipped at either edge.
//!
//! Modules, in reading order:
//! - [`prob`]: the [`SpeechProb`] trait (one speech probability per fixed-size frame) and
//!   [`Earshot`]: pure Rust, its weights compiled in, no runtime library and no model file.
//!   The measurements in `docs/PERFORMANCE.md` ("Voice activity detection") found Silero
//!   clearly more accurate in noise; it needs ONNX Runtime, and will be a second
//!   `SpeechProb` beside this one.
//! - [`config`]: [`VadConfig`], the thresholds, whose defaults are the measured ones.
//! - [`segmenter`]: [`Segmenter`], which takes audio in chunks of any size and emits
//!   [`SegEvent`]s: a segment opens after `onset_ms` of speech with `pre_roll_ms` of audio
//!   before it, closes after `hangover_ms` of non-speech keeping a short tail, is flagged
//!   `too_short` under `min_speech_ms`, and is split at its quietest point when it reaches
//!   `max_segment_s`.
//!
//! Everything here is synchronous and bounded in memory: the daemon calls it on its audio
//! thread (earshot takes under 10 µs of CPU per 16 ms frame), and it never holds more than one
//! maximal segment plus the pre-roll ring.

pub mod config;
pub mod prob;
pub mod segmenter;

pub use config::VadConfig;
pub use prob::{Earshot, SpeechProb};
pub use segmenter::{SegEvent, Segmenter};

/// The sample rate every function here expects, in Hz (mono `f32` in `[-1, 1]`).
pub const SAMPLE_RATE: u32 = 16_000;

/// A [`VadConfig`] that cannot work, worded with the config key to change.
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
}
