//! Speech recognition: whisper (through whisper-rs) on one dedicated worker thread.
//!
//! Modules, in reading order:
//! - [`whisper`]: loading a GGML model with errors that name the fix, and transcribing one
//!   segment of 16 kHz mono audio, with an encoder window sized to the segment.
//! - [`filter`]: whisper's known failures on silence and noise ("Thank you.",
//!   "[BLANK_AUDIO]", a phrase repeated over and over), caught before anyone sees them.
//! - [`agreement`]: which words of a segment still being spoken are settled (two passes in a
//!   row agree on them), for live partial transcripts.
//! - [`bias`]: the vocabulary's tokens favoured while whisper decodes.
//! - [`spelling`]: near misses of the user's vocabulary spelled as the user wrote them.
//! - [`turn`]: whether the text heard at a pause ends what the person was saying.
//! - [`rescore`]: the user's own words heard where greedy decoding wrote others.
//! - [`remote`]: a transcription server elsewhere (OpenAI's /v1/audio/transcriptions), the
//!   local model as its fallback.
//! - [`worker`]: the one thread that owns the whisper context (it is not thread-safe), fed
//!   by a bounded queue of closed segments whose depth is the daemon's backlog.
//!
//! # Invariants
//!
//! No published text has more words than its segment's speech can hold
//! (`filter::word_capacity`); the guard is deterministic (greedy decoding, no temperature), so
//! the same audio always gives the same text. Exactly one thread touches the whisper context.
//! Every job is reported back, success or failure. Between utterances the worker holds what it
//! held idle (`Whisper::shed` whenever the queue empties): nothing grows with the number of
//! segments.

pub mod agreement;
pub mod bias;
pub mod filter;
pub mod remote;
pub mod rescore;
pub mod spelling;
pub mod turn;
pub mod whisper;
pub mod worker;

pub use whisper::{AsrConfig, Transcription, Whisper};
pub use worker::{Done, Job, Offered, Pass, QueuePolicy, Submitted, Worker};

use std::path::PathBuf;

/// What can go wrong, worded for the person who has to fix it.
#[derive(Debug, thiserror::Error)]
pub enum AsrError {
    #[error("no whisper model at '{path}': run scripts/fetch-models (or set [daemon].model)")]
    ModelMissing { path: PathBuf },

    #[error(
        "'{path}' is not a whisper GGML model ({why}): run scripts/fetch-models --force to \
         reinstall it, or point [daemon].model at a ggml-*.bin file"
    )]
    ModelCorrupt { path: PathBuf, why: String },

    #[error("cannot read the whisper model '{path}': {source}")]
    ModelUnreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("unknown language '{0}': use a code such as \"en\" or \"de\", or \"auto\"")]
    UnknownLanguage(String),

    #[error(
        "the model '{model}' only knows English; set [daemon].language = \"en\" or use a multilingual model"
    )]
    EnglishOnlyModel { model: String },

    #[error("whisper failed: {0}")]
    Whisper(String),

    /// The remote server failed and there is no local fallback (`[daemon].remote_fallback`).
    #[error("{0}")]
    Remote(String),
}
