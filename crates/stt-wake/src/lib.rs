//! Wake-word detection: hearing "hey jarvis" (or a phrase of the user's own) in a stream of
//! 16 kHz mono audio, in steps of 80 ms, on the CPU.
//!
//! Every phrase is recognised by the same features: openWakeWord's ONNX port of Google's
//! speech_embedding, a mel spectrogram model and an embedding model that turn each 80 ms of
//! audio into one 96-value embedding of the 0.76 s before it. A phrase is then either
//! openWakeWord's pre-trained head for it (a small classifier over the last 16 embeddings,
//! giving a score in [0, 1]), or a phrase enrolled from 3 to 5 of the user's own recordings,
//! matched by the distance of the live embeddings from the enrolled ones.
//!
//! `scripts/fetch-wake` installs the feature models (Apache-2.0) into `<models>/wake/`, and a
//! head only when asked by name (`--head hey_jarvis`): the heads are CC BY-NC-SA 4.0, for
//! non-commercial use only. An enrolled phrase needs no head, so no licence question.
//!
//! Modules, in reading order:
//!
//! - [`features`]: audio to embeddings, streaming ([`Features::push`]) or for a whole
//!   recording ([`Features::embed_clip`]), exactly as openWakeWord's Python computes them;
//!   checked against it on espeak-ng clips (`tests/reference.rs`).
//! - [`head`]: an openWakeWord head, the last 16 embeddings to a score ([`Head::score`]).
//! - [`enrolled`]: a phrase of the user's own: recordings in, the embedding sequences kept
//!   ([`Enrolled::from_clips`]), the live sequence compared with them by dynamic time
//!   warping over cosine distance ([`Enrolled::distance`]), and the JSON it is kept in.
//! - [`detector`]: the features and any number of phrases together; audio in, a
//!   [`Detection`] out, at most one per utterance.
//!
//! Everything here is blocking CPU work (about 1.5 ms of one thread per 80 ms step for the
//! features, 0.03 ms per head: `examples/wake_speed.rs`): run it on a thread of its own. Errors are [`WakeError`]s, each naming the path at fault and
//! the fix.

pub mod detector;
pub mod enrolled;
pub mod features;
pub mod head;

use std::path::{Path, PathBuf};

pub use detector::{Detection, Detector};
pub use enrolled::Enrolled;
pub use features::{DIM, Embedding, Features, SAMPLE_RATE, STEP};
pub use head::Head;
pub use stt_onnx::{RuntimeError, runtime_library};
use thiserror::Error;

/// The folder of the models directory `scripts/fetch-wake` installs into.
pub const DIR_NAME: &str = "wake";

/// `<models_dir>/wake`, where `scripts/fetch-wake` installs the feature models and heads.
pub fn wake_dir(models_dir: &Path) -> PathBuf {
    models_dir.join(DIR_NAME)
}

/// What went wrong, with the path at fault and what to do about it.
#[derive(Debug, Error)]
pub enum WakeError {
    /// A feature model (mel spectrogram or embedding) is not there.
    #[error("no wake-word feature model at '{path}': run scripts/fetch-wake")]
    FeaturesMissing { path: PathBuf },
    /// A phrase's head is not there.
    #[error("no wake-word head at '{path}': run scripts/fetch-wake --head {name}")]
    HeadMissing { path: PathBuf, name: String },
    /// ONNX Runtime could not be had.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// ONNX Runtime refused a model file.
    #[error(
        "ONNX Runtime cannot load the wake-word model '{path}': {source}: run scripts/fetch-wake --force"
    )]
    Model {
        path: PathBuf,
        #[source]
        source: ort::Error,
    },
    /// The model loads but does not have the inputs and outputs stt feeds and reads.
    #[error(
        "'{path}' is not the wake-word model stt expects ({why}): run scripts/fetch-wake --force"
    )]
    WrongModel { path: PathBuf, why: String },
    /// ONNX Runtime failed while running a model.
    #[error("ONNX Runtime failed while listening for the wake word: {0}")]
    Run(#[from] ort::Error),
    /// The recordings given to enrol a phrase cannot make one.
    #[error("cannot enrol the wake phrase: {0}")]
    Enrol(String),
    /// A kept enrolled phrase cannot be read back.
    #[error("the enrolled wake phrase cannot be read ({0}): enrol the phrase again")]
    Enrolled(String),
}
