//! Talking to the model, whoever serves it. The assistant speaks [`conversation`]'s types,
//! which no provider owns; [`Provider`] is the closed set of ways to reach a model, each a
//! module that turns the conversation into its wire format and back.
//!
//! Modules, in reading order:
//! - [`conversation`]: messages, roles, tool specs and calls, the reply, its usage and a
//!   provider's resume handle.
//! - [`openai`]: OpenAI-compatible chat completions (`llama-server`, ollama, any other), its
//!   wire bodies and its streamed deltas.
//! - [`sse`]: server-sent events, the framing of a streamed reply.
//! - [`toolcall`]: tool calls small local models write as JSON in their text (bare, fenced,
//!   or wrapped in `<tool_call>` tags), for providers that return them that way.
//!
//! # Invariants
//!
//! The assistant speaks only `conversation` types: a new provider is a new variant and
//! module, never an `if provider ==` in the tool loop. A call found in the text is only taken for
//! a tool that exists. Every failure is an `LlmError` whose message names the fix.

pub mod conversation;
pub mod openai;
pub mod sse;
pub mod toolcall;

use std::time::Duration;

pub use conversation::{Finish, Message, Reply, Request, Resume, Role, ToolCall, ToolSpec, Usage};
pub use toolcall::calls_in_content;

/// Where and how to reach the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    /// The full URL of the chat completions route.
    pub url: String,
    /// Sent as `model`; empty to let the server choose.
    pub model: String,
    /// The API key, if the server wants one (read from the env var the config names).
    pub api_key: Option<String>,
    pub connect_timeout: Duration,
    /// Longest wait for the response to start, and for each next piece of a stream.
    pub idle_timeout: Duration,
}

/// What went wrong, worded for the person who has to fix it.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error(
        "could not reach the model at {url}: {why}; start llama-server (or ollama) there, or \
         set [llm].endpoint"
    )]
    Unreachable { url: String, why: String },

    #[error("the model at {url} answered {status}: {body}")]
    Status { url: String, status: u16, body: String },

    #[error(
        "the model at {url} sent nothing for {seconds} s; it may be overloaded (see [llm].request_timeout_s)"
    )]
    Timeout { url: String, seconds: u64 },

    #[error("the model's reply stopped mid-answer ({why})")]
    Interrupted { partial: String, why: String },

    #[error("the model at {url} sent something that is not a chat completion: {why}")]
    Malformed { url: String, why: String },

    #[error(
        "{url} is an https endpoint, but this build has no TLS: rebuild with `--features https`, or use http on this machine"
    )]
    NoTls { url: String },
}

/// A way to reach a model. Every provider is a variant and a module of this crate; the
/// assistant never asks which one it has.
#[derive(Debug, Clone)]
pub enum Provider {
    /// An OpenAI-compatible chat completions endpoint.
    OpenAi(openai::Client),
}

impl Provider {
    /// The provider for `endpoint` (an OpenAI-compatible one: the only kind so far).
    pub fn new(endpoint: Endpoint) -> Result<Self, LlmError> {
        openai::Client::new(endpoint).map(Self::OpenAi)
    }

    pub fn endpoint(&self) -> &Endpoint {
        match self {
            Self::OpenAi(client) => client.endpoint(),
        }
    }

    /// Whether the model's server answers at all.
    pub async fn probe(&self) -> Result<(), LlmError> {
        match self {
            Self::OpenAi(client) => client.probe().await,
        }
    }

    /// Sends one request. With `request.stream`, `on_text` is called with each piece of text
    /// as it arrives; either way the whole reply is returned.
    pub async fn complete(
        &self,
        request: &Request<'_>,
        on_text: impl FnMut(&str),
    ) -> Result<Reply, LlmError> {
        match self {
            Self::OpenAi(client) => client.complete(request, on_text).await,
        }
    }
}
