//! Claude Code: `claude -p --output-format stream-json --verbose --include-partial-messages`,
//! with no prompt argument, so it reads the prompt from stdin; `--model` takes an alias
//! (`sonnet`) or a full id; `--resume <session_id>` carries on a session.
//!
//! Its stream is one JSON event a line, each with `session_id`:
//! - `{"type":"system","subtype":"init",…}` first;
//! - `{"type":"stream_event","event":{…}}`: the API's own stream events (with
//!   `--include-partial-messages`): `message_start` at each model message, and
//!   `content_block_delta` with a `text_delta` for each piece of text;
//! - `{"type":"assistant","message":{"content":[{"type":"text","text":…}]}}`: each whole
//!   message, the only text from a version that does not stream partial messages. Its own
//!   errors (signed out, say) come as a message of the model `<synthetic>`, with `error` set:
//!   never part of the answer;
//! - `{"type":"result","is_error":…,"result":…,"usage":{"input_tokens",
//!   "cache_creation_input_tokens","cache_read_input_tokens","output_tokens"}}` last.
//!
//! An unknown session id ends it at once, exit status 1, stderr "No conversation found with
//! session ID: …". `claude auth status` prints `{"loggedIn":…}` and exits 1 when signed out,
//! without the network.

use serde_json::Value;

use super::process::Output;
use super::stream::{Format, Turn, count_at, text_at};
use crate::conversation::Usage;

pub(super) const MODELS: &[&str] = &["sonnet", "opus", "haiku"];

pub(super) fn args(model: &str, resume: Option<&str>) -> Vec<String> {
    let mut args: Vec<String> =
        ["-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages"]
            .map(String::from)
            .into();
    if !model.is_empty() {
        args.extend(["--model".into(), model.into()]);
    }
    if let Some(id) = resume {
        args.extend(["--resume".into(), id.into()]);
    }
    args
}

/// The cheap auth check: `claude auth status`.
pub(super) const AUTH_STATUS: &[&str] = &["auth", "status"];

/// Whether `claude auth status` said signed out: exit status 1 with `"loggedIn": false`. An
/// older claude without the command says something else, and counts as present.
pub(super) fn signed_out(out: &Output) -> bool {
    !out.status.success()
        && serde_json::from_str::<Value>(out.stdout.trim())
            .is_ok_and(|v| v.get("loggedIn").and_then(Value::as_bool) == Some(false))
}

#[derive(Debug, Default)]
pub(super) struct Stream {
    /// Text has come as deltas, so whole messages repeat it.
    deltas: bool,
}

impl Format for Stream {
    fn event(&mut self, event: &Value, turn: &mut Turn) {
        turn.session_from(event, "/session_id");
        match text_at(event, "/type") {
            "stream_event" => match text_at(event, "/event/type") {
                "message_start" => turn.new_message(),
                "content_block_delta" if text_at(event, "/event/delta/type") == "text_delta" => {
                    self.deltas = true;
                    turn.text(text_at(event, "/event/delta/text"));
                }
                _ => {}
            },
            "assistant" if !self.deltas => {
                let synthetic = text_at(event, "/message/model") == "<synthetic>";
                if synthetic || event.get("error").is_some() {
                    turn.note = Some(message_text(event));
                    return;
                }
                turn.new_message();
                turn.text(&message_text(event));
            }
            "result" => {
                turn.done = true;
                let result = text_at(event, "/result");
                let subtype = text_at(event, "/subtype");
                let failed = event.get("is_error").and_then(Value::as_bool) == Some(true)
                    || subtype.starts_with("error");
                if failed {
                    let why = if result.is_empty() { subtype } else { result };
                    turn.error =
                        Some(if why.is_empty() { "it reported an error" } else { why }.into());
                } else if turn.content.is_empty() {
                    turn.text(result);
                }
                if event.get("usage").is_some() {
                    let cache_read = count_at(event, "/usage/cache_read_input_tokens");
                    // Anthropic counts cached input apart from `input_tokens`.
                    let prompt = count_at(event, "/usage/input_tokens")
                        .saturating_add(count_at(event, "/usage/cache_creation_input_tokens"))
                        .saturating_add(cache_read);
                    turn.add_usage(Usage {
                        prompt_tokens: prompt,
                        completion_tokens: count_at(event, "/usage/output_tokens"),
                        cached_tokens: cache_read,
                    });
                }
            }
            _ => {}
        }
    }
}

/// The text blocks of an `assistant` event's message, joined.
fn message_text(event: &Value) -> String {
    let blocks = event.pointer("/message/content").and_then(Value::as_array);
    blocks
        .into_iter()
        .flatten()
        .filter(|b| text_at(b, "/type") == "text")
        .map(|b| text_at(b, "/text"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::stream::tests::fold;
    use super::*;

    #[test]
    fn argv_has_the_flags_the_model_and_the_session_only() {
        let base = "-p --output-format stream-json --verbose --include-partial-messages";
        assert_eq!(args("", None).join(" "), base);
        assert_eq!(args("opus", None).join(" "), format!("{base} --model opus"));
        assert_eq!(args("", Some("abc-123")).join(" "), format!("{base} --resume abc-123"));
    }

    const STREAMED: &[&str] = &[
        r#"{"type":"system","subtype":"init","cwd":"/home/u","session_id":"5f3c","tools":[],"model":"claude-sonnet-4-5"}"#,
        r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1","role":"assistant","content":[]}},"session_id":"5f3c","parent_tool_use_id":null}"#,
        r#"{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}},"session_id":"5f3c"}"#,
        r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Paris is"}},"session_id":"5f3c"}"#,
        r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" the capital."}},"session_id":"5f3c"}"#,
        r#"{"type":"assistant","message":{"id":"msg_1","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"text","text":"Paris is the capital."}]},"session_id":"5f3c"}"#,
        r#"{"type":"stream_event","event":{"type":"message_stop"},"session_id":"5f3c"}"#,
        r#"{"type":"result","subtype":"success","is_error":false,"duration_ms":1200,"num_turns":1,"result":"Paris is the capital.","session_id":"5f3c","total_cost_usd":0.01,"usage":{"input_tokens":4,"cache_creation_input_tokens":10,"cache_read_input_tokens":300,"output_tokens":7}}"#,
    ];

    #[test]
    fn deltas_are_the_text_and_the_result_ends_it() {
        let turn = fold(&mut Stream::default(), STREAMED);
        assert_eq!(turn.content, "Paris is the capital.");
        assert_eq!(turn.session.as_deref(), Some("5f3c"));
        assert!(turn.done);
        assert_eq!(turn.error, None);
        let usage = turn.usage.unwrap_or_default();
        assert_eq!(
            (usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens),
            (314, 7, 300)
        );
    }

    #[test]
    fn without_deltas_whole_messages_are_the_text() {
        let lines: Vec<&str> =
            STREAMED.iter().copied().filter(|l| !l.contains("stream_event")).collect();
        let turn = fold(&mut Stream::default(), &lines);
        assert_eq!(turn.content, "Paris is the capital.");
        assert!(turn.done);
    }

    #[test]
    fn a_stream_cut_short_has_no_result() {
        let turn = fold(&mut Stream::default(), &STREAMED[..4]);
        assert_eq!(turn.content, "Paris is");
        assert!(!turn.done);
    }

    #[test]
    fn signed_out_is_an_error_result_and_never_the_answer() {
        let turn = fold(
            &mut Stream::default(),
            &[
                r#"{"type":"system","subtype":"init","session_id":"77"}"#,
                r#"{"type":"assistant","message":{"model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"Invalid API key · Please run /login"}]},"session_id":"77","error":"authentication_failed"}"#,
                r#"{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key · Please run /login","session_id":"77"}"#,
            ],
        );
        assert_eq!(turn.content, "");
        assert_eq!(turn.error.as_deref(), Some("Invalid API key · Please run /login"));
    }

    #[test]
    fn an_error_subtype_without_text_names_itself() {
        let turn = fold(
            &mut Stream::default(),
            &[r#"{"type":"result","subtype":"error_max_turns","session_id":"9"}"#],
        );
        assert_eq!(turn.error.as_deref(), Some("error_max_turns"));
    }

    #[test]
    fn auth_status_says_signed_out_only_in_its_own_words() {
        let out = |code: i32, stdout: &str| Output::new(code, stdout, "a warning on stderr");
        assert!(signed_out(&out(1, r#"{"loggedIn": false, "authMethod": "none"}"#)));
        assert!(!signed_out(&out(0, r#"{"loggedIn": true, "authMethod": "claude.ai"}"#)));
        assert!(!signed_out(&out(1, "error: unknown command 'auth'")));
    }
}
