//! Folding a reply, streamed or not, into text, tool calls, a finish reason and the usage.
//!
//! A stream says what it is doing in each event's `type`: the message starts (with the
//! prompt's usage), content blocks start, grow by deltas and stop, the message's stop reason
//! and output usage arrive, and `message_stop` ends it. A `tool_use` block's input arrives as
//! fragments of JSON text, parsed once the reply is whole.

use serde_json::{Map, Value};

use super::wire::{ContentBlock, Delta, Response, ResponseUsage, StreamEvent};
use crate::conversation::{Reply, ToolCall, Usage};

/// What one event meant for the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Carry on; the text the event added (often none), for streaming it on.
    Text(String),
    /// `message_stop`: the reply is whole.
    Done,
    /// An `error` event: the API gave up mid-answer, for this reason.
    Failed(String),
}

/// Builds a [`Reply`] from events (or from one whole response).
#[derive(Debug, Default)]
pub struct ReplyBuilder {
    reply: Reply,
    /// `tool_use` blocks being assembled.
    calls: Vec<PartialCall>,
    /// The usage so far: a stream's start counts the prompt, its end the output.
    usage: Option<ResponseUsage>,
}

#[derive(Debug)]
struct PartialCall {
    /// The content block's index in the stream.
    index: usize,
    id: String,
    name: String,
    /// The input the block started with (`{}` when streamed; the whole input otherwise).
    input: Value,
    /// The streamed input's JSON text so far.
    json: String,
}

impl ReplyBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// The text so far, for an interrupted reply.
    pub fn content(&self) -> &str {
        &self.reply.content
    }

    /// Folds one streamed event in.
    pub fn event(&mut self, event: StreamEvent) -> Step {
        match event {
            StreamEvent::MessageStart { message } => {
                self.add_usage(message.usage);
                // The content is empty at the start, but nothing says it must be.
                let mut added = String::new();
                for (index, block) in message.content.into_iter().enumerate() {
                    added.push_str(&self.block(index, block));
                }
                Step::Text(added)
            }
            StreamEvent::ContentBlockStart { index, content_block } => {
                Step::Text(self.block(index, content_block))
            }
            StreamEvent::ContentBlockDelta { index, delta } => match delta {
                Delta::TextDelta { text } => {
                    self.reply.content.push_str(&text);
                    Step::Text(text)
                }
                Delta::InputJsonDelta { partial_json } => {
                    if let Some(call) = self.calls.iter_mut().find(|c| c.index == index) {
                        call.json.push_str(&partial_json);
                    }
                    Step::Text(String::new())
                }
                Delta::Other => Step::Text(String::new()),
            },
            StreamEvent::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    self.reply.finish = Some(reason.finish());
                }
                self.add_usage(usage);
                Step::Text(String::new())
            }
            StreamEvent::MessageStop => Step::Done,
            StreamEvent::Error { error } => {
                Step::Failed(if error.message.is_empty() { error.kind } else { error.message })
            }
            StreamEvent::ContentBlockStop { .. } | StreamEvent::Ping | StreamEvent::Other => {
                Step::Text(String::new())
            }
        }
    }

    /// Folds a whole (non-streamed) response in; returns its text.
    pub fn whole(&mut self, response: Response) -> String {
        let mut added = String::new();
        for (index, block) in response.content.into_iter().enumerate() {
            added.push_str(&self.block(index, block));
        }
        self.reply.finish = response.stop_reason.map(|r| r.finish());
        self.add_usage(response.usage);
        added
    }

    pub fn finish(mut self) -> Reply {
        self.calls.sort_by_key(|c| c.index);
        self.reply.tool_calls = self.calls.into_iter().map(PartialCall::finish).collect();
        self.reply.usage = self.usage.map(|u| {
            let read = u.cache_read_input_tokens.unwrap_or(0);
            let fresh = u.input_tokens.unwrap_or(0);
            let written = u.cache_creation_input_tokens.unwrap_or(0);
            // The API counts cached prompt tokens apart from `input_tokens`; ours counts the
            // whole prompt, cached tokens included.
            Usage {
                prompt_tokens: fresh.saturating_add(written).saturating_add(read),
                completion_tokens: u.output_tokens.unwrap_or(0),
                cached_tokens: read,
            }
        });
        self.reply
    }

    /// A block's start: its text, or a call to assemble.
    fn block(&mut self, index: usize, block: ContentBlock) -> String {
        match block {
            ContentBlock::Text { text } => {
                self.reply.content.push_str(&text);
                text
            }
            ContentBlock::ToolUse { id, name, input } => {
                self.calls.push(PartialCall { index, id, name, input, json: String::new() });
                String::new()
            }
            ContentBlock::Other => String::new(),
        }
    }

    /// Takes the counts `usage` has; a stream's later events carry only some of them.
    fn add_usage(&mut self, usage: Option<ResponseUsage>) {
        let Some(new) = usage else { return };
        let old = self.usage.get_or_insert_with(ResponseUsage::default);
        old.input_tokens = new.input_tokens.or(old.input_tokens);
        old.output_tokens = new.output_tokens.or(old.output_tokens);
        old.cache_creation_input_tokens =
            new.cache_creation_input_tokens.or(old.cache_creation_input_tokens);
        old.cache_read_input_tokens = new.cache_read_input_tokens.or(old.cache_read_input_tokens);
    }
}

impl PartialCall {
    fn finish(self) -> ToolCall {
        let Self { id, name, input, json, .. } = self;
        let arguments = if json.trim().is_empty() {
            // Not streamed, or streamed with no input at all.
            match input {
                Value::Object(_) => input,
                _ => Value::Object(Map::new()),
            }
        } else {
            // A model that wrote something other than an object gets `null`, which the
            // tool's argument check reports back to it. The text is left out of the log:
            // it may quote what the user said.
            crate::toolcall::arguments(&Value::String(json.clone())).unwrap_or_else(|| {
                tracing::warn!(
                    "tool call {name}: the input is not a JSON object ({} bytes)",
                    json.len()
                );
                Value::Null
            })
        };
        ToolCall { id, name, arguments }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::conversation::Finish;

    /// Folds `events` (data lines as the API writes them); returns the steps' texts joined,
    /// the last step, and the reply.
    fn fold(events: &[&str]) -> (String, Step, Reply) {
        let mut builder = ReplyBuilder::new();
        let mut streamed = String::new();
        let mut last = Step::Text(String::new());
        for data in events {
            last = builder.event(serde_json::from_str(data).unwrap());
            if let Step::Text(text) = &last {
                streamed.push_str(text);
            }
        }
        (streamed, last, builder.finish())
    }

    const START: &str = r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":100,"output_tokens":1}}}"#;

    fn stop(reason: &str) -> String {
        format!(
            r#"{{"type":"message_delta","delta":{{"stop_reason":"{reason}","stop_sequence":null}},"usage":{{"output_tokens":15}}}}"#
        )
    }

    #[test]
    fn text_arrives_piece_by_piece_with_the_usage_and_cached_tokens() {
        let (streamed, last, reply) = fold(&[
            START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type": "ping"}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"It is "}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"noon."}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            &stop("end_turn"),
            r#"{"type":"message_stop"}"#,
        ]);
        assert_eq!(streamed, "It is noon.");
        assert_eq!(last, Step::Done);
        assert_eq!(reply.content, "It is noon.");
        assert_eq!(reply.finish, Some(Finish::Stop));
        assert_eq!(
            reply.usage,
            Some(Usage { prompt_tokens: 125, completion_tokens: 15, cached_tokens: 100 })
        );
        assert!(reply.tool_calls.is_empty());
    }

    #[test]
    fn a_tool_use_block_is_assembled_from_its_fragments() {
        let (streamed, _, reply) = fold(&[
            START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Setting it."}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_7","name":"set_timer","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"minu"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"tes\": 5}"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_8","name":"get_datetime","input":{}}}"#,
            r#"{"type":"content_block_stop","index":2}"#,
            &stop("tool_use"),
            r#"{"type":"message_stop"}"#,
        ]);
        assert_eq!(streamed, "Setting it.");
        assert_eq!(reply.finish, Some(Finish::ToolCalls));
        assert_eq!(
            reply.tool_calls,
            [
                ToolCall {
                    id: "toolu_7".into(),
                    name: "set_timer".into(),
                    arguments: json!({"minutes": 5})
                },
                ToolCall {
                    id: "toolu_8".into(),
                    name: "get_datetime".into(),
                    arguments: json!({})
                },
            ]
        );
    }

    #[test]
    fn input_that_is_not_an_object_becomes_null() {
        let (_, _, reply) = fold(&[
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"x","input":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"[1, 2"}}"#,
        ]);
        assert_eq!(reply.tool_calls[0].arguments, Value::Null);
    }

    #[test]
    fn every_stop_reason_has_its_finish() {
        let cases = [
            ("end_turn", Finish::Stop),
            ("stop_sequence", Finish::Stop),
            ("max_tokens", Finish::Length),
            ("tool_use", Finish::ToolCalls),
            ("refusal", Finish::Other),
            ("pause_turn", Finish::Other),
        ];
        for (reason, finish) in cases {
            let (_, _, reply) = fold(&[&stop(reason)]);
            assert_eq!(reply.finish, Some(finish), "{reason}");
        }
    }

    #[test]
    fn an_error_event_fails_the_stream_and_keeps_what_came_before() {
        let mut builder = ReplyBuilder::new();
        for data in [
            START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"The answer"}}"#,
        ] {
            builder.event(serde_json::from_str(data).unwrap());
        }
        let step = builder.event(
            serde_json::from_str(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            )
            .unwrap(),
        );
        assert_eq!(step, Step::Failed("Overloaded".into()));
        assert_eq!(builder.content(), "The answer");
        let bare = builder.event(
            serde_json::from_str(r#"{"type":"error","error":{"type":"api_error"}}"#).unwrap(),
        );
        assert_eq!(bare, Step::Failed("api_error".into()));
    }

    #[test]
    fn a_whole_response_is_folded_at_once() {
        let response: Response = serde_json::from_str(
            r#"{"content":[{"type":"text","text":"On it."},{"type":"tool_use","id":"toolu_1","name":"set_timer","input":{"minutes":5}},{"type":"tool_use","id":"toolu_2","name":"x","input":null}],"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":4}}"#,
        )
        .unwrap();
        let mut builder = ReplyBuilder::new();
        assert_eq!(builder.whole(response), "On it.");
        let reply = builder.finish();
        assert_eq!(reply.content, "On it.");
        assert_eq!(reply.finish, Some(Finish::ToolCalls));
        assert_eq!(reply.tool_calls[0].arguments, json!({"minutes": 5}));
        assert_eq!(reply.tool_calls[1].arguments, json!({}));
        assert_eq!(
            reply.usage,
            Some(Usage { prompt_tokens: 10, completion_tokens: 4, cached_tokens: 0 })
        );
    }
}
