//! The wire protocol of stt: every message that crosses its Unix sockets.
//!
//! Two sockets, both newline-delimited JSON (one object per line, UTF-8, at most
//! [`MAX_LINE_BYTES`] per line), every object tagged `{"type": "...", ...}` in snake_case:
//!
//! 1. **`stt-daemon.sock`** is publish-only. On connect the daemon sends a [`Hello`], then a
//!    stream of [`DaemonEvent`]s. It never reads commands from this socket.
//! 2. **`stt-assistant.sock`** is the control socket. On connect the assistant sends a
//!    [`Hello`]. A client may send its own `hello` first (the assistant then checks the
//!    versions match), then [`Request`]s; each request gets exactly one direct reply
//!    ([`AssistantEvent::Ack`], [`AssistantEvent::Status`], [`AssistantEvent::SpeakerList`]
//!    or [`AssistantEvent::Error`]).
//! 3. Sending [`Request::Subscribe`] turns the connection into an event stream as well: from
//!    then on every [`AssistantEvent`] the assistant publishes is written to it, interleaved
//!    with the replies to any further requests.
//! 4. A peer whose `hello` carries another [`PROTOCOL_VERSION`] is told so, with the fix.
//!    Message types a reader does not know come from a newer peer: readers skip them
//!    ([`ProtoError::is_unknown_type`]), they are never fatal.
//! 5. A subscriber that cannot keep up is sent a final `error` with code
//!    [`ErrorCode::Lagged`] and disconnected; it never slows anyone else down.
//!
//! Modules, in reading order: [`messages`] (the types), [`error`] (error codes),
//! [`decode`] (bytes → message, with the error code each failure earns), [`frame`] (the
//! NDJSON codec with its line limit), [`speaker_files`] (the two files the assistant writes
//! for the daemon about speakers: names, forgets and merges); with the `cli` feature, `cli`
//! (the one argument of `stt-ctl`'s verbs that is not derived: free text).
//!
//! # Invariants
//!
//! Only this crate defines types that cross a socket. Every message is `{"type": ...}` in
//! snake_case; golden lines (`tests/golden.rs`) pin the bytes of each one, and
//! `tests/protocol_doc.rs` parses every example in `docs/PROTOCOL.md`. A line over the limit
//! costs the sender a `too_long` error, never the connection, and never more than the limit in
//! memory.

#[cfg(feature = "cli")]
mod cli;
pub mod decode;
pub mod error;
pub mod frame;
pub mod messages;
pub mod speaker_files;

pub use decode::{
    IN_REPLY_TO, ProtoError, REQUEST_ID, encode_line, error_line, parse, reply_line, request_id,
};
pub use error::{ErrorCode, ErrorMsg};
pub use frame::{Frame, NdjsonCodec};
pub use messages::*;

/// The protocol version both ends must agree on; bumped on any incompatible change.
pub const PROTOCOL_VERSION: u32 = 3;

/// The longest line either socket accepts, in bytes, without its newline.
pub const MAX_LINE_BYTES: usize = 1 << 20;
