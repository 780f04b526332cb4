//! Folding a reply, streamed or not, into text, tool calls and a finish reason.

use crate::wire::{FinishReason, FunctionCall, Response, ToolCall};

/// A whole reply.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reply {
    pub content: String,
    /// Calls from the API's `tool_calls` (not the ones written in `content`; see
    /// [`crate::toolcall`]).
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: Option<FinishReason>,
}

/// Builds a [`Reply`] from chunks (or from one whole response).
#[derive(Debug, Default)]
pub struct ReplyBuilder {
    reply: Reply,
    /// Tool calls being assembled, by their stream index.
    partial: Vec<(usize, String, String, String)>,
}

impl ReplyBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one chunk (or a whole response); returns the text it added, for streaming it on.
    pub fn add(&mut self, chunk: &Response) -> String {
        let mut added = String::new();
        for choice in chunk.choices.iter().take(1) {
            if let Some(message) = &choice.message {
                if let Some(text) = &message.content {
                    added.push_str(text);
                }
                for (position, delta) in message.tool_calls.iter().enumerate() {
                    let index = delta.index.unwrap_or(position);
                    let slot = match self.partial.iter_mut().position(|p| p.0 == index) {
                        Some(i) => &mut self.partial[i],
                        None => {
                            self.partial.push((index, String::new(), String::new(), String::new()));
                            let last = self.partial.len() - 1;
                            &mut self.partial[last]
                        }
                    };
                    if let Some(id) = &delta.id {
                        slot.1.clone_from(id);
                    }
                    if let Some(function) = &delta.function {
                        if let Some(name) = &function.name {
                            slot.2.push_str(name);
                        }
                        if let Some(arguments) = &function.arguments {
                            slot.3.push_str(arguments);
                        }
                    }
                }
            }
            if choice.finish_reason.is_some() {
                self.reply.finish_reason.clone_from(&choice.finish_reason);
            }
        }
        self.reply.content.push_str(&added);
        added
    }

    pub fn finish(mut self) -> Reply {
        self.partial.sort_by_key(|p| p.0);
        self.reply.tool_calls = self
            .partial
            .into_iter()
            .filter(|p| !p.2.is_empty())
            .enumerate()
            .map(|(n, (_, id, name, arguments))| ToolCall {
                id: if id.is_empty() { format!("call_{n}") } else { id },
                kind: "function".into(),
                function: FunctionCall { name, arguments },
            })
            .collect();
        self.reply
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(json: &str) -> Response {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn text_and_tool_call_fragments_are_assembled() {
        let mut b = ReplyBuilder::new();
        assert_eq!(b.add(&chunk(r#"{"choices":[{"delta":{"content":"It is "}}]}"#)), "It is ");
        assert_eq!(b.add(&chunk(r#"{"choices":[{"delta":{"content":"noon."}}]}"#)), "noon.");
        b.add(&chunk(r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c7","function":{"name":"set_timer","arguments":"{\"min"}}]}}]}"#));
        b.add(&chunk(r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"utes\": 5}"}}]}}]}"#));
        b.add(&chunk(r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#));
        let reply = b.finish();
        assert_eq!(reply.content, "It is noon.");
        assert_eq!(reply.finish_reason, Some(FinishReason::ToolCalls));
        assert_eq!(reply.tool_calls.len(), 1);
        assert_eq!(reply.tool_calls[0].id, "c7");
        assert_eq!(reply.tool_calls[0].function.name, "set_timer");
        assert_eq!(reply.tool_calls[0].function.arguments, "{\"minutes\": 5}");
    }

    #[test]
    fn a_whole_response_is_one_chunk() {
        let mut b = ReplyBuilder::new();
        b.add(&chunk(r#"{"choices":[{"message":{"content":"Hi"},"finish_reason":"length"}]}"#));
        let reply = b.finish();
        assert_eq!(reply.content, "Hi");
        assert_eq!(reply.finish_reason, Some(FinishReason::Length));
    }
}
