//! Error replies: a stable machine-readable code and a message for a person.

use serde::{Deserialize, Serialize};

/// Stable error codes. Scripts match on these, so a code is never renamed; new codes may
/// appear, and a reader that does not know one sees [`ErrorCode::Other`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The line was not UTF-8 or not JSON.
    BadJson,
    /// The line was JSON but not a valid message: missing `type`, a missing field, a wrong
    /// field type, or a value out of range (an empty speaker name).
    BadMessage,
    /// The `type` is not one this peer knows.
    UnknownType,
    /// The line was longer than the limit; it was discarded and the connection stays open.
    TooLong,
    /// The other side speaks another protocol version.
    VersionMismatch,
    /// The inference queue is full.
    Busy,
    /// Execution was refused because the system is not ready (speech open, a segment not
    /// finalized, STT unhealthy, or no viewer attached when one is required).
    NotReady,
    /// The request is not valid in the current mode (execute while idle, say).
    WrongMode,
    /// No speaker with that id in the roster.
    UnknownSpeaker,
    /// A model reply was cut off by the output limit.
    Truncated,
    /// The subscriber fell behind and is being disconnected.
    Lagged,
    /// Nothing is waiting for a confirm/deny.
    NothingPending,
    /// No LLM executor is configured (`[llm].enabled = false`).
    NoExecutor,
    /// The LLM endpoint failed or could not be reached.
    LlmError,
    /// A tool failed.
    ToolError,
    /// The audio input failed.
    Audio,
    /// Speech recognition failed.
    Stt,
    /// A request this build does not serve yet.
    NotImplemented,
    /// A bug or an unexpected failure inside the peer.
    Internal,
    /// A code from a newer peer that this build does not know.
    #[serde(other)]
    Other,
}

impl ErrorCode {
    /// The code as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BadJson => "bad_json",
            Self::BadMessage => "bad_message",
            Self::UnknownType => "unknown_type",
            Self::TooLong => "too_long",
            Self::VersionMismatch => "version_mismatch",
            Self::Busy => "busy",
            Self::NotReady => "not_ready",
            Self::WrongMode => "wrong_mode",
            Self::UnknownSpeaker => "unknown_speaker",
            Self::Truncated => "truncated",
            Self::Lagged => "lagged",
            Self::NothingPending => "nothing_pending",
            Self::NoExecutor => "no_executor",
            Self::LlmError => "llm_error",
            Self::ToolError => "tool_error",
            Self::Audio => "audio",
            Self::Stt => "stt",
            Self::NotImplemented => "not_implemented",
            Self::Internal => "internal",
            Self::Other => "other",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `{"type":"error","code":"…","message":"…"}`: the body of every error on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorMsg {
    pub code: ErrorCode,
    pub message: String,
}

impl ErrorMsg {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { code, message: message.into() }
    }
}

impl std::fmt::Display for ErrorMsg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for ErrorMsg {}
