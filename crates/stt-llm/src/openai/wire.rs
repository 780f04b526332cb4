//! The bodies of `POST /v1/chat/completions`, as much of them as stt uses, and how the
//! provider-neutral conversation becomes one.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::conversation;

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// One message of the conversation sent to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Calls the assistant made (assistant messages only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The call this message answers (tool messages only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

/// A tool call as the OpenAI API writes it: the arguments are a JSON *string*.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub function: FunctionCall,
}

fn function_type() -> String {
    "function".into()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    /// JSON text.
    #[serde(default)]
    pub arguments: String,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    #[serde(rename = "type")]
    pub kind: String,
    pub function: FunctionSpec,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionSpec {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: Value,
}

impl Tool {
    pub fn function(name: &str, description: &str, parameters: Value) -> Self {
        Self {
            kind: "function".into(),
            function: FunctionSpec {
                name: name.into(),
                description: description.into(),
                parameters,
            },
        }
    }
}

/// The request body.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Request<'a> {
    #[serde(skip_serializing_if = "str::is_empty")]
    pub model: &'a str,
    pub messages: Vec<Message>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool>,
    pub stream: bool,
    /// Asks a streamed reply to end with its usage (OpenAI's form; llama-server, vLLM and
    /// ollama read it too), so every turn's tokens are counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    pub max_tokens: u32,
    pub temperature: f64,
    /// llama-server's slot (its own field, sent only to llama-server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_slot: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StreamOptions {
    pub include_usage: bool,
}

impl<'a> Request<'a> {
    /// The body of `request` for `model` (empty: the server's choice); `slots`: the server
    /// is llama-server, which takes the request's slot.
    pub fn new(model: &'a str, request: &conversation::Request<'_>, slots: bool) -> Self {
        Self {
            model,
            messages: request.messages.iter().map(Message::from_neutral).collect(),
            tools: request.tools.iter().map(Tool::from_neutral).collect(),
            stream: request.stream,
            stream_options: request.stream.then_some(StreamOptions { include_usage: true }),
            max_tokens: request.max_tokens,
            temperature: request.temperature,
            id_slot: request.slot.filter(|_| slots),
        }
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    /// Cut off by `max_tokens`.
    Length,
    ToolCalls,
    ContentFilter,
    #[serde(other)]
    Other,
}

/// A non-streamed response (or one streamed chunk: the same shape with `delta` for
/// `message`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Response {
    #[serde(default)]
    pub choices: Vec<Choice>,
    /// What the request cost (in the whole response, or the last chunk of a stream).
    #[serde(default)]
    pub usage: Option<ResponseUsage>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct ResponseUsage {
    #[serde(default)]
    pub prompt_tokens: u32,
    #[serde(default)]
    pub completion_tokens: u32,
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
}

/// How the prompt's tokens were served (OpenAI; llama-server and others may leave it out).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct PromptTokensDetails {
    #[serde(default)]
    pub cached_tokens: u32,
}

impl Message {
    /// The wire form of a conversation message.
    pub fn from_neutral(m: &conversation::Message) -> Self {
        let role = match m.role {
            conversation::Role::System => Role::System,
            conversation::Role::User => Role::User,
            conversation::Role::Assistant => Role::Assistant,
            conversation::Role::Tool => Role::Tool,
        };
        let tool_calls: Vec<ToolCall> = m
            .tool_calls
            .iter()
            .map(|call| ToolCall {
                id: call.id.clone(),
                kind: "function".into(),
                function: FunctionCall {
                    name: call.name.clone(),
                    arguments: call.arguments.to_string(),
                },
            })
            .collect();
        // A turn that only calls tools has no content at all, as the API writes it.
        let content = (!m.content.is_empty() || tool_calls.is_empty()).then(|| m.content.clone());
        Self { role, content, tool_calls, tool_call_id: m.tool_call_id.clone() }
    }
}

impl Tool {
    /// The wire form of a tool spec.
    pub fn from_neutral(spec: &conversation::ToolSpec) -> Self {
        Self::function(&spec.name, &spec.description, spec.parameters.clone())
    }
}

/// The body of `GET …/models`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ModelList {
    #[serde(default)]
    pub data: Vec<ModelEntry>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ModelEntry {
    pub id: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Choice {
    #[serde(default, alias = "delta")]
    pub message: Option<ResponseMessage>,
    #[serde(default)]
    pub finish_reason: Option<FinishReason>,
}

/// The assistant's message, or a streamed piece of it.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct ResponseMessage {
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ToolCallDelta>,
}

/// A tool call or, when streaming, a fragment of one (fragments share an `index`).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct ToolCallDelta {
    #[serde(default)]
    pub index: Option<usize>,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub function: Option<FunctionDelta>,
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct FunctionDelta {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub arguments: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_serializes_as_the_api_expects() {
        use crate::conversation as c;
        let messages = [c::Message::system("be brief"), c::Message::user("what time is it")];
        let tools = [c::ToolSpec {
            name: "get_datetime".into(),
            description: "The current date and time".into(),
            parameters: serde_json::json!({"type": "object", "properties": {}}),
        }];
        let request = c::Request {
            messages: &messages,
            tools: &tools,
            stream: true,
            max_tokens: 256,
            temperature: 0.2,
            resume: None,
            slot: Some(1),
        };
        // Another server is not sent llama-server's slot.
        let body = serde_json::to_value(Request::new("", &request, false)).unwrap();
        assert_eq!(
            body,
            serde_json::json!({
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "what time is it"}
                ],
                "tools": [{"type": "function", "function": {"name": "get_datetime", "description": "The current date and time", "parameters": {"type": "object", "properties": {}}}}],
                "stream": true,
                "stream_options": {"include_usage": true},
                "max_tokens": 256,
                "temperature": 0.2
            })
        );
    }

    #[test]
    fn llama_server_is_told_the_slot_and_nothing_else_is() {
        use crate::conversation as c;
        let messages = [c::Message::user("hi")];
        let request = c::Request {
            messages: &messages,
            tools: &[],
            stream: false,
            max_tokens: 8,
            temperature: 0.0,
            resume: None,
            slot: Some(0),
        };
        let body = serde_json::to_value(Request::new("", &request, true)).unwrap();
        assert_eq!(body["id_slot"], 0);
        let unslotted = c::Request { slot: None, ..request };
        let body = serde_json::to_value(Request::new("", &unslotted, true)).unwrap();
        assert!(body.get("id_slot").is_none(), "{body}");
    }

    #[test]
    fn a_turn_of_calls_and_its_results_are_written_as_the_api_expects() {
        use crate::conversation as c;
        let call = c::ToolCall {
            id: "c1".into(),
            name: "set_timer".into(),
            arguments: serde_json::json!({"minutes": 5}),
        };
        let calls = serde_json::to_value(Message::from_neutral(&c::Message::calls(vec![call])));
        assert_eq!(
            calls.unwrap(),
            serde_json::json!({"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "set_timer", "arguments": "{\"minutes\":5}"}}]})
        );
        let result = serde_json::to_value(Message::from_neutral(&c::Message::tool("c1", "set")));
        assert_eq!(
            result.unwrap(),
            serde_json::json!({"role": "tool", "content": "set", "tool_call_id": "c1"})
        );
    }

    #[test]
    fn responses_and_chunks_parse() {
        let full: Response = serde_json::from_str(
            r#"{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_datetime","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#,
        )
        .unwrap();
        let choice = &full.choices[0];
        assert_eq!(choice.finish_reason, Some(FinishReason::ToolCalls));
        let call = &choice.message.as_ref().unwrap().tool_calls[0];
        assert_eq!(call.function.as_ref().unwrap().name.as_deref(), Some("get_datetime"));

        let chunk: Response = serde_json::from_str(
            r#"{"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}"#,
        )
        .unwrap();
        assert_eq!(chunk.choices[0].message.as_ref().unwrap().content.as_deref(), Some("Hel"));
        let odd: Response =
            serde_json::from_str(r#"{"choices":[{"delta":{},"finish_reason":"eos_token"}]}"#)
                .unwrap();
        assert_eq!(odd.choices[0].finish_reason, Some(FinishReason::Other));
    }
}
