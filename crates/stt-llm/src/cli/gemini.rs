//! The Gemini CLI: `gemini --output-format stream-json`, with no `-p`: a stdin that is not a
//! terminal makes it headless and is the prompt. `--resume <session_id>` (or `latest`)
//! carries on a session; `--model` takes a name or an alias (`pro`, `flash`).
//!
//! Headless, it refuses to start in a folder the person has not trusted. The assistant runs
//! it wherever it runs, so it sets `GEMINI_CLI_TRUST_WORKSPACE=true` (what `--skip-trust`
//! sets), which versions without the check ignore, where the flag would be an error.
//!
//! Its stream is one JSON event a line:
//! - `{"type":"init","session_id":…,"model":…}` first;
//! - `{"type":"message","role":"user"|"assistant","content":…,"delta":true}`: the prompt
//!   echoed, then the answer in pieces;
//! - `{"type":"tool_use",…}`, `{"type":"tool_result",…}` between messages;
//! - `{"type":"error","severity":…,"message":…}`: a warning it carries on after;
//! - `{"type":"result","status":"success"|"error","error":{"message"},"stats":{"input_tokens",
//!   "output_tokens","cached"}}` last.
//!
//! Signed out, it writes "Please set an Auth method in your …/settings.json …" to stderr and
//! exits 41 before any event. An unknown session ends it with "Error resuming session:
//! Invalid session identifier …" and exit status 42.

use serde_json::Value;

use super::stream::{Format, Turn, count_at, text_at};
use crate::conversation::Usage;

pub(super) const MODELS: &[&str] = &["auto", "pro", "flash", "flash-lite"];

/// The handle when the stream named no session: the newest one, which is this turn's.
pub(super) const LATEST: &str = "latest";

pub(super) const ENV: &[(&str, &str)] = &[("GEMINI_CLI_TRUST_WORKSPACE", "true")];

pub(super) fn args(model: &str, resume: Option<&str>) -> Vec<String> {
    let mut args: Vec<String> = ["--output-format", "stream-json"].map(String::from).into();
    if !model.is_empty() {
        args.extend(["--model".into(), model.into()]);
    }
    if let Some(id) = resume {
        args.extend(["--resume".into(), id.into()]);
    }
    args
}

#[derive(Debug, Default)]
pub(super) struct Stream;

impl Format for Stream {
    fn event(&mut self, event: &Value, turn: &mut Turn) {
        match text_at(event, "/type") {
            "init" => turn.session_from(event, "/session_id"),
            "message" if text_at(event, "/role") == "assistant" => {
                turn.text(text_at(event, "/content"));
            }
            "tool_use" | "tool_result" => turn.new_message(),
            "error" => turn.note = Some(text_at(event, "/message").to_owned()),
            "result" => {
                turn.done = true;
                if text_at(event, "/status") == "error" {
                    let why = text_at(event, "/error/message");
                    turn.error =
                        Some(if why.is_empty() { "it reported an error" } else { why }.into());
                }
                if event.get("stats").is_some() {
                    // `cached` is the part of `input_tokens` served from the cache.
                    turn.add_usage(Usage {
                        prompt_tokens: count_at(event, "/stats/input_tokens"),
                        completion_tokens: count_at(event, "/stats/output_tokens"),
                        cached_tokens: count_at(event, "/stats/cached"),
                    });
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::stream::tests::fold;
    use super::*;

    #[test]
    fn argv_has_the_flags_the_model_and_the_session_only() {
        assert_eq!(args("", None).join(" "), "--output-format stream-json");
        assert_eq!(
            args("flash", Some("c0ffee-1")).join(" "),
            "--output-format stream-json --model flash --resume c0ffee-1"
        );
    }

    #[test]
    fn assistant_pieces_are_the_text_and_the_echoed_prompt_is_not() {
        let turn = fold(
            &mut Stream,
            &[
                r#"{"type":"init","timestamp":"2026-05-01T10:00:00.000Z","session_id":"8a7b-44","model":"gemini-2.5-pro"}"#,
                r#"{"type":"message","timestamp":"2026-05-01T10:00:00.100Z","role":"user","content":"capital of France?"}"#,
                r#"{"type":"message","timestamp":"2026-05-01T10:00:01.000Z","role":"assistant","content":"Paris","delta":true}"#,
                r#"{"type":"message","timestamp":"2026-05-01T10:00:01.100Z","role":"assistant","content":" is the capital.","delta":true}"#,
                r#"{"type":"result","timestamp":"2026-05-01T10:00:01.200Z","status":"success","stats":{"total_tokens":120,"input_tokens":100,"output_tokens":20,"cached":40,"input":60,"duration_ms":1200,"tool_calls":0}}"#,
            ],
        );
        assert_eq!(turn.content, "Paris is the capital.");
        assert_eq!(turn.session.as_deref(), Some("8a7b-44"));
        assert!(turn.done);
        let usage = turn.usage.unwrap_or_default();
        assert_eq!(
            (usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens),
            (100, 20, 40)
        );
    }

    #[test]
    fn an_error_result_says_why() {
        let turn = fold(
            &mut Stream,
            &[
                r#"{"type":"result","status":"error","error":{"type":"Error","message":"[API Error: quota exceeded]"},"stats":{"input_tokens":0,"output_tokens":0,"cached":0}}"#,
            ],
        );
        assert_eq!(turn.error.as_deref(), Some("[API Error: quota exceeded]"));
    }
}
