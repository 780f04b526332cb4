//! Talking to an OpenAI-compatible chat completions endpoint (llama.cpp's `llama-server`,
//! ollama, or any other).
//!
//! Modules, in reading order:
//! - [`wire`]: the request and response bodies of `/v1/chat/completions`.
//! - [`sse`]: server-sent events, the framing of a streamed reply.
//! - [`stream`]: folding streamed deltas (text and tool-call fragments) into one reply.
//! - [`toolcall`]: tool calls, whether they arrive as `tool_calls` or, as small local
//!   models write them, as JSON in the reply's text (bare, fenced, or wrapped in
//!   `<tool_call>` tags).
//! - [`client`]: the HTTP client, with a message naming the fix for every failure (nothing
//!   listening, an error status with the server's own words, a stall, a reply cut off).

pub mod client;
pub mod sse;
pub mod stream;
pub mod toolcall;
pub mod wire;

pub use client::{Client, Endpoint, LlmError};
pub use stream::{Reply, ReplyBuilder};
pub use toolcall::{Call, calls_in_content};
