//! The bodies of `POST /v1/messages`, as much of them as stt uses, and how the
//! provider-neutral conversation becomes one.
//!
//! The messages API differs from OpenAI's in three ways that shape this module: the system
//! prompt is a top-level field, not a message; tool calls and their results are content
//! blocks (`tool_use` in the assistant's turn, `tool_result` in the user's); and the turns
//! must alternate user, assistant, user, so tool results and the text after them are merged
//! into one user turn.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::conversation;

/// The version of the API these bodies follow, sent as `anthropic-version`.
pub const API_VERSION: &str = "2023-06-01";

/// The model asked for when the endpoint names none: the API requires one, where an
/// OpenAI-compatible server picks its own. A current, mid-priced model that calls tools well.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";

/// Who said a turn. The API knows only these two: the system prompt has its own field and
/// tool results are the user's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One turn of the conversation sent to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<Block>,
}

/// A piece of a turn, as sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        text: String,
    },
    /// A call the assistant made; `input` is always an object.
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    /// A call's result, in the user's turn after it.
    ToolResult {
        tool_use_id: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        content: String,
    },
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments object.
    pub input_schema: Value,
}

/// The request body.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Request<'a> {
    pub model: &'a str,
    pub max_tokens: u32,
    pub temperature: f64,
    pub stream: bool,
    /// Every system message of the conversation, joined by blank lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    pub messages: Vec<Message>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool>,
}

impl<'a> Request<'a> {
    /// The body of `request` for `model` ([`DEFAULT_MODEL`] when empty).
    pub fn new(model: &'a str, request: &conversation::Request<'_>) -> Self {
        let system: Vec<&str> = request
            .messages
            .iter()
            .filter(|m| m.role == conversation::Role::System && !m.content.trim().is_empty())
            .map(|m| m.content.as_str())
            .collect();
        Self {
            model: if model.trim().is_empty() { DEFAULT_MODEL } else { model },
            max_tokens: request.max_tokens,
            // The API takes 0 to 1 where OpenAI's takes 0 to 2: a setting written for the
            // other kind of server is clamped rather than refused with a 400.
            temperature: request.temperature.clamp(0.0, 1.0),
            stream: request.stream,
            system: (!system.is_empty()).then(|| system.join("\n\n")),
            messages: messages(request.messages),
            tools: request.tools.iter().map(Tool::from_neutral).collect(),
        }
    }
}

/// The conversation's turns as the API wants them: no system messages, tool results as the
/// user's `tool_result` blocks, and consecutive turns of one role merged, since the roles
/// must alternate. A turn with nothing to say (an empty text) is left out: the API refuses
/// empty text blocks.
pub fn messages(conversation: &[conversation::Message]) -> Vec<Message> {
    let mut turns: Vec<Message> = Vec::new();
    for message in conversation {
        let text = (!message.content.trim().is_empty())
            .then(|| Block::Text { text: message.content.clone() });
        let (role, blocks) = match message.role {
            conversation::Role::System => continue,
            conversation::Role::User => (Role::User, text.into_iter().collect()),
            conversation::Role::Assistant => {
                let calls = message.tool_calls.iter().map(|call| Block::ToolUse {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    // A call whose arguments were not an object (`null`) is sent back as
                    // having none: the API refuses any other `input`.
                    input: if call.arguments.is_object() {
                        call.arguments.clone()
                    } else {
                        Value::Object(Map::new())
                    },
                });
                (Role::Assistant, text.into_iter().chain(calls).collect())
            }
            conversation::Role::Tool => (
                Role::User,
                vec![Block::ToolResult {
                    tool_use_id: message.tool_call_id.clone().unwrap_or_default(),
                    content: message.content.clone(),
                }],
            ),
        };
        let blocks: Vec<Block> = blocks;
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => turns.push(Message { role, content: blocks }),
        }
    }
    // The API wants a turn's tool results before any text in it; the sort is stable, so the
    // results keep the order of the calls.
    for turn in &mut turns {
        turn.content.sort_by_key(|block| !matches!(block, Block::ToolResult { .. }));
    }
    turns
}

impl Tool {
    /// The wire form of a tool spec.
    pub fn from_neutral(spec: &conversation::ToolSpec) -> Self {
        Self {
            name: spec.name.clone(),
            description: spec.description.clone(),
            input_schema: spec.parameters.clone(),
        }
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    StopSequence,
    /// Cut off by `max_tokens`.
    MaxTokens,
    ToolUse,
    /// `pause_turn`, `refusal`, and whatever the API adds next.
    #[serde(other)]
    Other,
}

impl StopReason {
    pub fn finish(self) -> conversation::Finish {
        match self {
            Self::EndTurn | Self::StopSequence => conversation::Finish::Stop,
            Self::MaxTokens => conversation::Finish::Length,
            Self::ToolUse => conversation::Finish::ToolCalls,
            Self::Other => conversation::Finish::Other,
        }
    }
}

/// A non-streamed response, or the message a stream starts with (its `content` empty).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Response {
    /// Required, so that JSON which is not a message at all is reported as such.
    pub content: Vec<ContentBlock>,
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
    #[serde(default)]
    pub usage: Option<ResponseUsage>,
}

/// A piece of the reply, as received.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        /// The whole input in a non-streamed reply; `{}` at a streamed block's start, the
        /// input then following as JSON fragments.
        #[serde(default)]
        input: Value,
    },
    /// `thinking`, server tools' blocks, and whatever the API adds next.
    #[serde(other)]
    Other,
}

/// What a reply cost, as the API counts it. Every field may be missing or `null`: a stream's
/// `message_delta` carries only what changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub struct ResponseUsage {
    /// Prompt tokens read fresh: those after the last cache breakpoint.
    #[serde(default)]
    pub input_tokens: Option<u32>,
    #[serde(default)]
    pub output_tokens: Option<u32>,
    /// Prompt tokens written to the cache.
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u32>,
    /// Prompt tokens served from the cache.
    #[serde(default)]
    pub cache_read_input_tokens: Option<u32>,
}

/// One streamed event's data; its `type` says which.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// The message, with no content yet and the prompt's usage.
    MessageStart {
        message: Response,
    },
    ContentBlockStart {
        index: usize,
        content_block: ContentBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: Delta,
    },
    ContentBlockStop {
        index: usize,
    },
    /// The stop reason and the output's usage so far.
    MessageDelta {
        #[serde(default)]
        delta: MessageDelta,
        #[serde(default)]
        usage: Option<ResponseUsage>,
    },
    /// The reply is whole.
    MessageStop,
    Ping,
    /// The API failed mid-answer (overloaded, say).
    Error {
        error: ApiError,
    },
    /// Whatever the API adds next: ignored, as its versioning policy asks.
    #[serde(other)]
    Other,
}

/// A piece of a content block.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Delta {
    TextDelta {
        text: String,
    },
    /// A fragment of a `tool_use` block's input, as JSON text.
    InputJsonDelta {
        partial_json: String,
    },
    /// `thinking_delta`, `signature_delta`, `citations_delta`, and what comes next.
    #[serde(other)]
    Other,
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct MessageDelta {
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
}

/// An error as the API writes it, in an error response's body or a stream's `error` event.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
pub struct ApiError {
    /// `overloaded_error`, `rate_limit_error`, ….
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub message: String,
}

/// The body of `GET …/v1/models`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ModelList {
    #[serde(default)]
    pub data: Vec<ModelEntry>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ModelEntry {
    pub id: String,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::conversation as c;

    fn call(id: &str, name: &str, arguments: Value) -> c::ToolCall {
        c::ToolCall { id: id.into(), name: name.into(), arguments }
    }

    #[track_caller]
    fn check(model: &str, messages: &[c::Message], tools: &[c::ToolSpec], expected: Value) {
        let request = c::Request {
            messages,
            tools,
            stream: true,
            max_tokens: 256,
            temperature: 0.2,
            resume: None,
            slot: None,
        };
        let body = serde_json::to_value(Request::new(model, &request)).unwrap();
        assert_eq!(body, expected);
    }

    #[test]
    fn the_system_prompt_is_lifted_out_and_the_tools_carry_their_schema() {
        check(
            "claude-haiku-4-5",
            &[c::Message::system("be brief"), c::Message::user("what time is it")],
            &[c::ToolSpec {
                name: "get_datetime".into(),
                description: "The current date and time".into(),
                parameters: json!({"type": "object", "properties": {}}),
            }],
            json!({
                "model": "claude-haiku-4-5",
                "max_tokens": 256,
                "temperature": 0.2,
                "stream": true,
                "system": "be brief",
                "messages": [{"role": "user", "content": [{"type": "text", "text": "what time is it"}]}],
                "tools": [{"name": "get_datetime", "description": "The current date and time", "input_schema": {"type": "object", "properties": {}}}]
            }),
        );
    }

    #[test]
    fn system_messages_are_joined_and_a_model_is_always_named() {
        check(
            "",
            &[
                c::Message::system("be brief"),
                c::Message::user("hi"),
                c::Message::system("the user is in Berlin"),
            ],
            &[],
            json!({
                "model": DEFAULT_MODEL,
                "max_tokens": 256,
                "temperature": 0.2,
                "stream": true,
                "system": "be brief\n\nthe user is in Berlin",
                "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
            }),
        );
    }

    #[test]
    fn calls_and_results_become_blocks_in_alternating_turns() {
        let cases: Vec<(Vec<c::Message>, Value)> = vec![
            // A call with words before it, its result, and the model's answer.
            (
                vec![
                    c::Message::user("tea timer"),
                    c::Message {
                        tool_calls: vec![call("toolu_1", "set_timer", json!({"minutes": 5}))],
                        ..c::Message::assistant("Setting it.")
                    },
                    c::Message::tool("toolu_1", "set for 5 minutes"),
                    c::Message::assistant("Done."),
                ],
                json!([
                    {"role": "user", "content": [{"type": "text", "text": "tea timer"}]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "Setting it."},
                        {"type": "tool_use", "id": "toolu_1", "name": "set_timer", "input": {"minutes": 5}}
                    ]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "set for 5 minutes"}]},
                    {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}
                ]),
            ),
            // Two calls: their results, and the user's next words, are one user turn.
            (
                vec![
                    c::Message::user("time and weather"),
                    c::Message::calls(vec![
                        call("a", "get_datetime", json!({})),
                        call("b", "weather", Value::Null),
                    ]),
                    c::Message::tool("a", "noon"),
                    c::Message::tool("b", ""),
                    c::Message::user("and tomorrow?"),
                ],
                json!([
                    {"role": "user", "content": [{"type": "text", "text": "time and weather"}]},
                    {"role": "assistant", "content": [
                        {"type": "tool_use", "id": "a", "name": "get_datetime", "input": {}},
                        {"type": "tool_use", "id": "b", "name": "weather", "input": {}}
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "a", "content": "noon"},
                        {"type": "tool_result", "tool_use_id": "b"},
                        {"type": "text", "text": "and tomorrow?"}
                    ]}
                ]),
            ),
            // Two user turns in a row, and an empty one, still alternate; results go first.
            (
                vec![
                    c::Message::user("one"),
                    c::Message::user(""),
                    c::Message::user("two"),
                    c::Message::calls(vec![call("x", "get_datetime", json!({}))]),
                    c::Message::user("hurry"),
                    c::Message::tool("x", "noon"),
                ],
                json!([
                    {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "x", "name": "get_datetime", "input": {}}]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "x", "content": "noon"},
                        {"type": "text", "text": "hurry"}
                    ]}
                ]),
            ),
        ];
        for (conversation, expected) in cases {
            assert_eq!(serde_json::to_value(messages(&conversation)).unwrap(), expected);
        }
    }

    #[test]
    fn a_temperature_meant_for_openai_is_clamped() {
        let messages = [c::Message::user("hi")];
        let request = c::Request {
            messages: &messages,
            tools: &[],
            stream: false,
            max_tokens: 8,
            temperature: 1.5,
            resume: None,
            slot: None,
        };
        assert!((Request::new("m", &request).temperature - 1.0).abs() < f64::EPSILON);
    }

    #[test]
    fn responses_and_events_parse() {
        let whole: Response = serde_json::from_str(
            r#"{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"Hi"},{"type":"tool_use","id":"toolu_1","name":"x","input":{"a":1}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"cache_creation_input_tokens":null,"cache_read_input_tokens":2,"output_tokens":3}}"#,
        )
        .unwrap();
        assert_eq!(
            whole.content,
            [
                ContentBlock::Other,
                ContentBlock::Text { text: "Hi".into() },
                ContentBlock::ToolUse {
                    id: "toolu_1".into(),
                    name: "x".into(),
                    input: json!({"a": 1})
                }
            ]
        );
        assert_eq!(whole.stop_reason, Some(StopReason::ToolUse));
        assert_eq!(whole.usage.unwrap().cache_read_input_tokens, Some(2));
        assert!(serde_json::from_str::<Response>(r#"{"type":"error"}"#).is_err());

        let events = [
            (r#"{"type": "ping"}"#, StreamEvent::Ping),
            (r#"{"type":"message_stop"}"#, StreamEvent::MessageStop),
            (
                r#"{"type":"content_block_stop","index":2}"#,
                StreamEvent::ContentBlockStop { index: 2 },
            ),
            (r#"{"type":"something_new","x":1}"#, StreamEvent::Other),
            (
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"s"}}"#,
                StreamEvent::ContentBlockDelta { index: 0, delta: Delta::Other },
            ),
            (
                r#"{"type":"message_delta","delta":{"stop_reason":"pause_turn","stop_sequence":null},"usage":{"output_tokens":15}}"#,
                StreamEvent::MessageDelta {
                    delta: MessageDelta { stop_reason: Some(StopReason::Other) },
                    usage: Some(ResponseUsage {
                        output_tokens: Some(15),
                        ..ResponseUsage::default()
                    }),
                },
            ),
            (
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                StreamEvent::Error {
                    error: ApiError {
                        kind: "overloaded_error".into(),
                        message: "Overloaded".into(),
                    },
                },
            ),
        ];
        for (data, expected) in events {
            assert_eq!(serde_json::from_str::<StreamEvent>(data).unwrap(), expected, "{data}");
        }
    }
}
