//! A conversation as the assistant keeps it, in words no provider owns: who said what, the
//! tools on offer, the calls the model made, its reply and what it cost. Each provider module
//! ([`crate::openai`] today) turns these into its own wire format and back.

use serde_json::Value;

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
    /// The result of a tool call.
    Tool,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: Role,
    /// The text; empty for an assistant message that only calls tools.
    pub content: String,
    /// The calls the model made (assistant messages only).
    pub tool_calls: Vec<ToolCall>,
    /// The call this message answers (tool messages only).
    pub tool_call_id: Option<String>,
}

impl Message {
    fn new(role: Role, content: impl Into<String>) -> Self {
        Self { role, content: content.into(), tool_calls: Vec::new(), tool_call_id: None }
    }

    pub fn system(text: impl Into<String>) -> Self {
        Self::new(Role::System, text)
    }

    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, text)
    }

    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, text)
    }

    /// The model's turn that made `calls` (and said nothing).
    pub fn calls(calls: Vec<ToolCall>) -> Self {
        Self { tool_calls: calls, ..Self::new(Role::Assistant, "") }
    }

    /// The result of a tool call, answering `call_id`.
    pub fn tool(call_id: impl Into<String>, result: impl Into<String>) -> Self {
        Self { tool_call_id: Some(call_id.into()), ..Self::new(Role::Tool, result) }
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: Value,
}

/// A call the model made.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// An object; `null` when the model's arguments were not one (the tool then says so).
    pub arguments: Value,
}

/// One request: the conversation so far and what the reply may be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Request<'a> {
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
    /// Stream the reply's text as it comes.
    pub stream: bool,
    pub max_tokens: u32,
    pub temperature: f64,
    /// Carry on the provider's own session (CLI providers keep one); `None` to start afresh.
    pub resume: Option<&'a Resume>,
    /// The llama-server slot to run in, so that one kind of work keeps its prompt cache from
    /// another's (commands' from dreams'); sent only to an endpoint with
    /// [`slots`](crate::Endpoint::slots), ignored by every other provider.
    pub slot: Option<u32>,
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    Stop,
    /// Cut off by `max_tokens`.
    Length,
    ToolCalls,
    /// Anything else the provider says (a content filter, say).
    Other,
}

/// What a reply cost, as the provider counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    /// Prompt tokens the provider served from its cache (counted in `prompt_tokens` too).
    pub cached_tokens: u32,
}

/// A provider's handle on its own copy of the conversation (a CLI's session id), to carry on
/// from next time instead of sending it all again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resume(pub String);

/// A whole reply.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reply {
    pub content: String,
    /// Calls the provider returned as such (not the ones a model wrote in `content`; see
    /// [`crate::toolcall`]).
    pub tool_calls: Vec<ToolCall>,
    pub finish: Option<Finish>,
    pub usage: Option<Usage>,
    /// Where to carry on from, for providers that keep a session.
    pub resume: Option<Resume>,
}
