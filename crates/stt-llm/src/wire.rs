//! The bodies of `POST /v1/chat/completions`, as much of them as stt uses.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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

impl Message {
    pub fn system(text: impl Into<String>) -> Self {
        Self {
            role: Role::System,
            content: Some(text.into()),
            tool_calls: vec![],
            tool_call_id: None,
        }
    }

    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: Some(text.into()),
            tool_calls: vec![],
            tool_call_id: None,
        }
    }

    pub fn assistant(text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: Some(text.into()),
            tool_calls: vec![],
            tool_call_id: None,
        }
    }

    /// The result of a tool call, answering `call_id`.
    pub fn tool(call_id: impl Into<String>, result: impl Into<String>) -> Self {
        Self {
            role: Role::Tool,
            content: Some(result.into()),
            tool_calls: vec![],
            tool_call_id: Some(call_id.into()),
        }
    }
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
    pub messages: &'a [Message],
    #[serde(skip_serializing_if = "<[Tool]>::is_empty")]
    pub tools: &'a [Tool],
    pub stream: bool,
    pub max_tokens: u32,
    pub temperature: f64,
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
        let messages = [Message::system("be brief"), Message::user("what time is it")];
        let tools = [Tool::function(
            "get_datetime",
            "The current date and time",
            serde_json::json!({"type": "object", "properties": {}}),
        )];
        let body = serde_json::to_value(Request {
            model: "",
            messages: &messages,
            tools: &tools,
            stream: true,
            max_tokens: 256,
            temperature: 0.2,
        })
        .unwrap();
        assert_eq!(
            body,
            serde_json::json!({
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "what time is it"}
                ],
                "tools": [{"type": "function", "function": {"name": "get_datetime", "description": "The current date and time", "parameters": {"type": "object", "properties": {}}}}],
                "stream": true,
                "max_tokens": 256,
                "temperature": 0.2
            })
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
