//! Talking to the model, whoever serves it. The assistant speaks [`conversation`]'s types,
//! which no provider owns; [`Provider`] is the closed set of ways to reach a model, each a
//! module that turns the conversation into its wire format and back.
//!
//! Modules, in reading order:
//! - [`conversation`]: messages, roles, tool specs and calls, the reply, its usage and a
//!   provider's resume handle.
//! - [`openai`]: OpenAI-compatible chat completions (`llama-server`, ollama, any other), its
//!   wire bodies and its streamed deltas.
//! - [`anthropic`]: Anthropic's messages API, streamed, with its `tool_use` blocks.
//! - [`cli`]: subscription CLIs (claude, codex, gemini, opencode), one process per turn,
//!   each with its stream format and its resume handle.
//! - [`registry`]: every provider stt knows, probing them all at once, choosing one, and
//!   the fix for each failure.
//! - [`sse`]: server-sent events, the framing of a streamed reply.
//! - [`toolcall`]: tool calls small local models write as JSON in their text (bare, fenced,
//!   in `<tool_call>` or `<tools>` tags, in double braces), for providers that return them
//!   that way: calls to known tools, checked against their schemas; a call cut off or not
//!   fitting its schema is refused with a reason for the model.
//!
//! # Invariants
//!
//! The assistant speaks only `conversation` types: a new provider is a new variant and
//! module, never an `if provider ==` in the tool loop. A call found in the text is only taken for
//! a tool that exists, and run only when it is whole and fits the tool's schema. Every failure
//! is an `LlmError` whose message names the fix.

pub mod anthropic;
pub mod cli;
pub mod conversation;
mod http;
pub mod openai;
pub mod registry;
pub mod sse;
pub mod toolcall;

use std::time::Duration;

pub use conversation::{Finish, Message, Reply, Request, Resume, Role, ToolCall, ToolSpec, Usage};
pub use toolcall::{
    Found, Refused, calls_in_content, check_arguments, find_calls, find_calls_among,
};

/// Where and how to reach the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    /// The full URL of the chat completions route.
    pub url: String,
    /// Sent as `model`; empty to let the server choose.
    pub model: String,
    /// The API key, if the server wants one.
    pub api_key: Option<Secret>,
    pub connect_timeout: Duration,
    /// Longest wait for the response to start, and for each next piece of a stream.
    pub idle_timeout: Duration,
    /// The server is llama.cpp's `llama-server`, which keeps a prompt cache per slot: a
    /// request's [`slot`](Request::slot) is sent as `id_slot`. Other servers may refuse a
    /// field they do not know, so it is off for them.
    pub slots: bool,
}

/// A key or token: its `Debug` never shows it, so a logged struct cannot leak it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

/// What went wrong, worded for the person who has to fix it. Each message says what
/// happened; [`registry::Registry::explain`] adds the fix for the provider it happened with.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("could not reach {url}: {why}")]
    Unreachable { url: String, why: String },

    /// The server answered with an error status; `body` is the first 200 characters of what
    /// it said.
    #[error("{url} answered {status}: {body}")]
    Status { url: String, status: u16, body: String },

    #[error(
        "{url} sent nothing for {seconds} s; it may be overloaded (see [llm].request_timeout_s)"
    )]
    Timeout { url: String, seconds: u64 },

    /// The reply stopped before it was finished; `partial` is what had arrived.
    #[error("the model's reply stopped mid-answer ({why})")]
    Interrupted { partial: String, why: String },

    #[error("{url} sent something that is not a chat completion: {why}")]
    Malformed { url: String, why: String },

    #[error(
        "{url} is an https endpoint, but this build has no TLS: rebuild the assistant with \
         `cargo build --release -p stt-assistant --features https` (docs/PROVIDERS.md), \
         or use a model on this machine"
    )]
    NoTls { url: String },

    /// A CLI provider's program is not on `PATH`.
    #[error("`{program}` is not installed (not found on PATH)")]
    NotInstalled { program: String },

    /// A CLI provider's program runs but is not signed in.
    #[error("{program} is installed but not signed in ({why})")]
    NotLoggedIn { program: String, why: String },

    /// A CLI provider's program failed: its exit status and the end of what it wrote to
    /// stderr. `partial` is the text it had streamed before.
    #[error("{program} failed: {why}")]
    Cli { program: String, why: String, partial: String },
}

impl LlmError {
    /// Whether the provider failed before saying anything: the request can go to another
    /// provider without a person seeing half an answer twice.
    pub fn before_first_token(&self) -> bool {
        match self {
            Self::Unreachable { .. }
            | Self::Status { .. }
            | Self::Timeout { .. }
            | Self::NoTls { .. }
            | Self::NotInstalled { .. }
            | Self::NotLoggedIn { .. }
            | Self::Malformed { .. } => true,
            Self::Interrupted { partial, .. } | Self::Cli { partial, .. } => partial.is_empty(),
        }
    }

    /// The text that arrived before the failure, if any.
    pub fn partial(&self) -> &str {
        match self {
            Self::Interrupted { partial, .. } | Self::Cli { partial, .. } => partial,
            _ => "",
        }
    }
}

/// A way to reach a model. Every provider is a variant and a module of this crate; the
/// assistant never asks which one it has, only whether it runs tools.
#[derive(Debug, Clone)]
pub enum Provider {
    /// An OpenAI-compatible chat completions endpoint (llama-server, ollama, LM Studio,
    /// vLLM, OpenAI, z.ai, any other).
    OpenAi(openai::Client),
    /// Anthropic's messages API.
    Anthropic(anthropic::Client),
    /// A subscription CLI the user is signed in to (claude, codex, gemini, opencode), run
    /// once per turn.
    Cli(cli::Client),
}

impl Provider {
    /// An OpenAI-compatible provider at `endpoint`.
    pub fn new(endpoint: Endpoint) -> Result<Self, LlmError> {
        openai::Client::new(endpoint).map(Self::OpenAi)
    }

    /// Whether the provider takes tool specs and returns tool calls (the command flow needs
    /// that). CLI providers run their own agents, not our tool loop: chat only.
    pub fn supports_tools(&self) -> bool {
        match self {
            Self::OpenAi(_) | Self::Anthropic(_) => true,
            Self::Cli(_) => false,
        }
    }

    /// Where requests go, for messages and the TUI's header: a URL, or the CLI's program.
    pub fn target(&self) -> String {
        match self {
            Self::OpenAi(client) => client.endpoint().url.clone(),
            Self::Anthropic(client) => client.endpoint().url.clone(),
            Self::Cli(client) => client.program().to_owned(),
        }
    }

    /// The model requests name; empty when the server or CLI chooses.
    pub fn model(&self) -> &str {
        match self {
            Self::OpenAi(client) => &client.endpoint().model,
            Self::Anthropic(client) => &client.endpoint().model,
            Self::Cli(client) => client.model(),
        }
    }

    /// Whether the provider is there at all: the server answers, or the CLI is installed
    /// (and signed in, where that can be checked cheaply). Takes at most the connect timeout.
    pub async fn probe(&self) -> Result<(), LlmError> {
        match self {
            Self::OpenAi(client) => client.probe().await,
            Self::Anthropic(client) => client.probe().await,
            Self::Cli(client) => client.probe().await,
        }
    }

    /// The models the provider offers right now (a server's `/models`, `opencode models`);
    /// empty when it has no live list.
    pub async fn models(&self) -> Result<Vec<String>, LlmError> {
        match self {
            Self::OpenAi(client) => client.models().await,
            Self::Anthropic(client) => client.models().await,
            Self::Cli(client) => client.models().await,
        }
    }

    /// Sends one request. With `request.stream`, `on_text` is called with each piece of text
    /// as it arrives; either way the whole reply is returned. Dropping the future stops the
    /// request (a CLI's process is killed).
    pub async fn complete(
        &self,
        request: &Request<'_>,
        on_text: impl FnMut(&str),
    ) -> Result<Reply, LlmError> {
        match self {
            Self::OpenAi(client) => client.complete(request, on_text).await,
            Self::Anthropic(client) => client.complete(request, on_text).await,
            Self::Cli(client) => client.complete(request, on_text).await,
        }
    }
}
