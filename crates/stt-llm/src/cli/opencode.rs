//! opencode: `opencode run --format json`, with no message argument, so it reads the prompt
//! from stdin; `--model provider/model`; `--session <id>` carries on a session. `opencode
//! models` lists every model its providers offer, one `provider/model` a line.
//!
//! Its stream is one JSON event a line, each with `sessionID`:
//! - `{"type":"step_start",…}` at each step of its agent;
//! - `{"type":"text","part":{"text":…}}`: a whole text part (it prints a part once it ends);
//! - `{"type":"step_finish","part":{"reason":…,"tokens":{"input","output","reasoning",
//!   "cache":{"read","write"}}}}`: a step's end; a reason other than `tool-calls` ends the
//!   answer;
//! - `{"type":"error","error":{"name":…,"data":{"message":…}}}`;
//! - `{"type":"done",…}` last, in newer versions.
//!
//! The final `step_finish` is known to go missing (anomalyco/opencode#26855) and `done` is
//! recent, so a clean exit is a whole answer. An unknown session ends it with "Session not
//! found" and exit status 1. Without credentials for its provider, it reports a
//! `ProviderAuthError`.

use serde_json::Value;

use super::stream::{Format, Turn, count_at, text_at};
use crate::conversation::Usage;

pub(super) fn args(model: &str, resume: Option<&str>) -> Vec<String> {
    let mut args: Vec<String> = ["run", "--format", "json"].map(String::from).into();
    if !model.is_empty() {
        args.extend(["--model".into(), model.into()]);
    }
    if let Some(id) = resume {
        args.extend(["--session".into(), id.into()]);
    }
    args
}

/// The live model list: `opencode models`.
pub(super) const MODELS_COMMAND: &[&str] = &["models"];

/// The models in `opencode models`' output: its `provider/model` lines.
pub(super) fn models(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .map(str::trim)
        .filter(|l| l.contains('/') && !l.contains(char::is_whitespace))
        .map(str::to_owned)
        .collect()
}

#[derive(Debug, Default)]
pub(super) struct Stream;

impl Format for Stream {
    fn event(&mut self, event: &Value, turn: &mut Turn) {
        turn.session_from(event, "/sessionID");
        match text_at(event, "/type") {
            "text" => {
                turn.new_message();
                turn.text(text_at(event, "/part/text"));
            }
            "step_finish" => {
                if text_at(event, "/part/reason") != "tool-calls" {
                    turn.done = true;
                }
                // opencode counts cached input apart from `input`, reasoning apart from
                // `output`.
                let read = count_at(event, "/part/tokens/cache/read");
                turn.add_usage(Usage {
                    prompt_tokens: count_at(event, "/part/tokens/input")
                        .saturating_add(read)
                        .saturating_add(count_at(event, "/part/tokens/cache/write")),
                    completion_tokens: count_at(event, "/part/tokens/output")
                        .saturating_add(count_at(event, "/part/tokens/reasoning")),
                    cached_tokens: read,
                });
            }
            "done" => turn.done = true,
            "error" => {
                let name = text_at(event, "/error/name");
                let message = text_at(event, "/error/data/message");
                turn.error = Some(match (name, message) {
                    ("", "") => "it reported an error".to_owned(),
                    (name, "") => name.to_owned(),
                    ("", message) => message.to_owned(),
                    (name, message) => format!("{name}: {message}"),
                });
            }
            _ => {}
        }
    }

    fn needs_final_event(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::super::stream::tests::fold;
    use super::*;

    #[test]
    fn argv_has_the_flags_the_model_and_the_session_only() {
        assert_eq!(args("", None).join(" "), "run --format json");
        assert_eq!(
            args("anthropic/claude-sonnet-4-5", Some("ses_4a1")).join(" "),
            "run --format json --model anthropic/claude-sonnet-4-5 --session ses_4a1"
        );
    }

    #[test]
    fn text_parts_are_the_text_and_steps_are_summed() {
        let turn = fold(
            &mut Stream,
            &[
                r#"{"type":"step_start","timestamp":1778479990756,"sessionID":"ses_1ea5","part":{"id":"prt_1","messageID":"msg_1","sessionID":"ses_1ea5","type":"step-start"}}"#,
                r#"{"type":"tool_use","timestamp":1778479990800,"sessionID":"ses_1ea5","part":{"type":"tool","tool":"read","callID":"c1","state":{"status":"completed"}}}"#,
                r#"{"type":"step_finish","timestamp":1778479990850,"sessionID":"ses_1ea5","part":{"type":"step-finish","reason":"tool-calls","tokens":{"input":100,"output":10,"reasoning":5,"cache":{"read":1000,"write":0}},"cost":0}}"#,
                r#"{"type":"text","timestamp":1778479990912,"sessionID":"ses_1ea5","part":{"id":"prt_2","type":"text","text":"Paris.","time":{"start":1778479990757,"end":1778479990907}}}"#,
                r#"{"type":"step_finish","timestamp":1778479990950,"sessionID":"ses_1ea5","part":{"type":"step-finish","reason":"stop","tokens":{"input":20,"output":3,"reasoning":0,"cache":{"read":1100,"write":7}},"cost":0}}"#,
            ],
        );
        assert_eq!(turn.content, "Paris.");
        assert_eq!(turn.session.as_deref(), Some("ses_1ea5"));
        assert!(turn.done);
        let usage = turn.usage.unwrap_or_default();
        assert_eq!(
            (usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens),
            (2227, 18, 2100)
        );
    }

    #[test]
    fn an_error_names_itself() {
        let turn = fold(
            &mut Stream,
            &[
                r#"{"type":"error","timestamp":1,"sessionID":"ses_9","error":{"name":"ProviderAuthError","data":{"providerID":"anthropic","message":"invalid x-api-key"}}}"#,
            ],
        );
        assert_eq!(turn.error.as_deref(), Some("ProviderAuthError: invalid x-api-key"));
        assert!(!turn.done);
    }

    #[test]
    fn the_model_list_is_the_provider_model_lines() {
        let out = "anthropic/claude-sonnet-4-5\nopenai/gpt-5.4\n\nsome banner line\n";
        assert_eq!(models(out), ["anthropic/claude-sonnet-4-5", "openai/gpt-5.4"]);
    }
}
