//! Folding a reply, streamed or not, into text, tool calls, a finish reason and the usage.

use serde_json::Value;

use super::wire::{FinishReason, Response};
use crate::conversation::{Finish, Reply, ToolCall, Usage};

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
            if let Some(reason) = &choice.finish_reason {
                self.reply.finish = Some(match reason {
                    FinishReason::Stop => Finish::Stop,
                    FinishReason::Length => Finish::Length,
                    FinishReason::ToolCalls => Finish::ToolCalls,
                    FinishReason::ContentFilter | FinishReason::Other => Finish::Other,
                });
            }
        }
        if let Some(usage) = &chunk.usage {
            self.reply.usage = Some(Usage {
                prompt_tokens: usage.prompt_tokens,
                completion_tokens: usage.completion_tokens,
                cached_tokens: usage.prompt_tokens_details.map_or(0, |d| d.cached_tokens),
            });
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
            .map(|(n, (_, id, name, text))| {
                // The API writes the arguments as a JSON string; a model that wrote something
                // else gets `null`, which the tool's argument check reports back to it.
                let arguments = crate::toolcall::arguments(&Value::String(text.clone()))
                    .unwrap_or_else(|| {
                        tracing::warn!(
                            "tool call {name}: the arguments are not a JSON object: {text}"
                        );
                        Value::Null
                    });
                ToolCall {
                    id: if id.is_empty() { format!("call_{n}") } else { id },
                    name,
                    arguments,
                }
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
        assert_eq!(reply.finish, Some(Finish::ToolCalls));
        assert_eq!(reply.tool_calls.len(), 1);
        assert_eq!(reply.tool_calls[0].id, "c7");
        assert_eq!(reply.tool_calls[0].name, "set_timer");
        assert_eq!(reply.tool_calls[0].arguments, serde_json::json!({"minutes": 5}));
    }

    #[test]
    fn arguments_that_are_not_an_object_become_null_and_the_usage_is_kept() {
        let mut b = ReplyBuilder::new();
        b.add(&chunk(r#"{"choices":[{"message":{"tool_calls":[{"id":"a","function":{"name":"x","arguments":"[1]"}},{"id":"b","function":{"name":"y","arguments":""}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":31,"completion_tokens":9,"total_tokens":40}}"#));
        let reply = b.finish();
        assert_eq!(reply.tool_calls[0].arguments, Value::Null);
        assert_eq!(reply.tool_calls[1].arguments, serde_json::json!({}));
        assert_eq!(
            reply.usage,
            Some(Usage { prompt_tokens: 31, completion_tokens: 9, cached_tokens: 0 })
        );
    }

    #[test]
    fn a_whole_response_is_one_chunk() {
        let mut b = ReplyBuilder::new();
        b.add(&chunk(r#"{"choices":[{"message":{"content":"Hi"},"finish_reason":"length"}]}"#));
        let reply = b.finish();
        assert_eq!(reply.content, "Hi");
        assert_eq!(reply.finish, Some(Finish::Length));
    }
}
