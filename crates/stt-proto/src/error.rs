//! Error replies: a stable machine-readable code and a message for a person.

use serde::{Deserialize, Serialize};

/// Declares [`ErrorCode`] once: each variant with its wire name, from which the enum, its
/// serde names, [`ErrorCode::as_str`] and [`ErrorCode::ALL`] are all made.
macro_rules! error_codes {
    ($($(#[doc = $doc:literal])* $variant:ident = $wire:literal,)*) => {
        /// Stable error codes. Scripts match on these, so a code is never renamed; new codes
        /// may appear, and a reader that does not know one sees [`ErrorCode::Other`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum ErrorCode {
            $($(#[doc = $doc])* #[serde(rename = $wire)] $variant,)*
            /// A code from a newer peer that this build does not know.
            #[serde(other, rename = "other")]
            Other,
        }

        impl ErrorCode {
            /// Every code, [`ErrorCode::Other`] last.
            pub const ALL: &'static [ErrorCode] = &[$(Self::$variant,)* Self::Other];

            /// The code as it appears on the wire.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $wire,)*
                    Self::Other => "other",
                }
            }
        }
    };
}

error_codes! {
    /// The line was not UTF-8 or not JSON.
    BadJson = "bad_json",
    /// The line was JSON but not a valid message: missing `type`, a missing field, a wrong
    /// field type, or a value out of range (an empty speaker name).
    BadMessage = "bad_message",
    /// The `type` is not one this peer knows.
    UnknownType = "unknown_type",
    /// The line was longer than the limit; it was discarded and the connection stays open.
    TooLong = "too_long",
    /// The other side speaks another protocol version.
    VersionMismatch = "version_mismatch",
    /// The inference queue is full.
    Busy = "busy",
    /// Execution was refused because the system is not ready (speech open, a segment not
    /// finalized, STT unhealthy, or no viewer attached when one is required).
    NotReady = "not_ready",
    /// The request is not valid in the current mode (execute while idle, say).
    WrongMode = "wrong_mode",
    /// No speaker with that id in the roster.
    UnknownSpeaker = "unknown_speaker",
    /// A model reply was cut off by the output limit.
    Truncated = "truncated",
    /// The subscriber fell behind and is being disconnected.
    Lagged = "lagged",
    /// Nothing is waiting for a confirm/deny (or no such timer is set).
    NothingPending = "nothing_pending",
    /// No LLM executor is configured (`[llm].enabled = false`).
    NoExecutor = "no_executor",
    /// Long-term memory is off: `[memory].enabled = false`, its database could not be
    /// opened, or (for the memory tree) `[memory].tree = false`.
    MemoryOff = "memory_off",
    /// What a request named is not there (a memory item or tree node id).
    NotFound = "not_found",
    /// Memory failed to read or write (the message says why: a full disk, a locked file).
    Memory = "memory",
    /// The LLM endpoint failed or could not be reached.
    LlmError = "llm_error",
    /// A tool failed.
    ToolError = "tool_error",
    /// The audio input failed.
    Audio = "audio",
    /// Speech recognition failed.
    Stt = "stt",
    /// Speaker identification failed (its model, or writing its roster).
    Speaker = "speaker",
    /// Listening for the wake phrase failed (its models, no phrase enrolled) or fell behind.
    Wake = "wake",
    /// Dictation could not type a phrase into the focused window (no tool for the session,
    /// or the tool failed; the message names what to install).
    DictateFailed = "dictate_failed",
    /// A request this build does not serve yet.
    NotImplemented = "not_implemented",
    /// A bug or an unexpected failure inside the peer.
    Internal = "internal",
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
