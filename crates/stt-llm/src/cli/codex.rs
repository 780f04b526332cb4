//! The Codex CLI: `codex exec --json … -`, the `-` telling it to read the prompt from stdin;
//! `codex exec … resume <thread_id> -` carries on a thread. `--skip-git-repo-check` lets it
//! run outside a git repository (the assistant runs anywhere), and `--sandbox read-only`
//! keeps a chat from changing files: codex runs its own agent, and a spoken question is not
//! a request to edit. The flags go before `resume`, which inherits them.
//!
//! Its stream is one JSON event a line:
//! - `{"type":"thread.started","thread_id":…}` first: the id to resume;
//! - `{"type":"item.completed","item":{"type":"agent_message","text":…}}`: a whole message
//!   (codex does not stream a message's text; other item types are its reasoning and tools);
//! - `{"type":"error","message":…}`: a complaint it may recover from (a reconnect);
//! - `{"type":"turn.completed","usage":{"input_tokens","cached_input_tokens",
//!   "output_tokens"}}` last, or `{"type":"turn.failed","error":{"message":…}}`.
//!
//! Signed out, it retries for a while, then fails the turn with "401 Unauthorized: Missing
//! bearer …" and exit status 1. An unknown thread id ends it at once, exit status 1, with
//! "no rollout found for thread id …" (older versions: "No saved session found with ID …").
//! `codex login status` exits 1 saying "Not logged in", without the network.

use serde_json::Value;

use super::process::Output;
use super::stream::{Format, Turn, count_at, text_at};
use crate::conversation::Usage;

pub(super) const MODELS: &[&str] = &["gpt-5.5", "gpt-5.4", "gpt-5.4-mini"];

pub(super) fn args(model: &str, resume: Option<&str>) -> Vec<String> {
    let mut args: Vec<String> =
        ["exec", "--json", "--skip-git-repo-check", "--sandbox", "read-only"]
            .map(String::from)
            .into();
    if !model.is_empty() {
        args.extend(["--model".into(), model.into()]);
    }
    if let Some(id) = resume {
        args.extend(["resume".into(), id.into()]);
    }
    args.push("-".into());
    args
}

/// The cheap auth check: `codex login status`.
pub(super) const AUTH_STATUS: &[&str] = &["login", "status"];

/// Whether `codex login status` said signed out: a failure that says "not logged in" (it
/// also fails when it cannot read its credentials, which is not the same).
pub(super) fn signed_out(out: &Output) -> bool {
    let said = format!("{}\n{}", out.stdout, out.stderr).to_lowercase();
    !out.status.success() && said.contains("not logged in")
}

#[derive(Debug, Default)]
pub(super) struct Stream;

impl Format for Stream {
    fn event(&mut self, event: &Value, turn: &mut Turn) {
        match text_at(event, "/type") {
            "thread.started" => turn.session_from(event, "/thread_id"),
            "item.completed" if text_at(event, "/item/type") == "agent_message" => {
                turn.new_message();
                turn.text(text_at(event, "/item/text"));
            }
            "error" => turn.note = Some(text_at(event, "/message").to_owned()),
            "turn.completed" => {
                turn.done = true;
                // OpenAI counts cached input inside `input_tokens`.
                turn.add_usage(Usage {
                    prompt_tokens: count_at(event, "/usage/input_tokens"),
                    completion_tokens: count_at(event, "/usage/output_tokens"),
                    cached_tokens: count_at(event, "/usage/cached_input_tokens"),
                });
            }
            "turn.failed" => {
                turn.done = true;
                let why = text_at(event, "/error/message");
                turn.error = Some(if why.is_empty() { "the turn failed" } else { why }.into());
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
    fn argv_has_the_flags_the_model_and_the_thread_only() {
        let base = "exec --json --skip-git-repo-check --sandbox read-only";
        assert_eq!(args("", None).join(" "), format!("{base} -"));
        assert_eq!(args("gpt-5.5", None).join(" "), format!("{base} --model gpt-5.5 -"));
        assert_eq!(
            args("gpt-5.5", Some("0199a213-81c0")).join(" "),
            format!("{base} --model gpt-5.5 resume 0199a213-81c0 -")
        );
    }

    #[test]
    fn agent_messages_are_the_text_and_the_turn_ends_it() {
        let turn = fold(
            &mut Stream,
            &[
                r#"{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}"#,
                r#"{"type":"turn.started"}"#,
                r#"{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Thinking about capitals**"}}"#,
                r#"{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
                r#"{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"Paris."}}"#,
                r#"{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"Anything else?"}}"#,
                r#"{"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122}}"#,
            ],
        );
        assert_eq!(turn.content, "Paris.\n\nAnything else?");
        assert_eq!(turn.session.as_deref(), Some("0199a213-81c0-7800-8aa1-bbab2a035a53"));
        assert!(turn.done);
        let usage = turn.usage.unwrap_or_default();
        assert_eq!(
            (usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens),
            (24763, 122, 24448)
        );
    }

    #[test]
    fn a_failed_turn_says_why_and_a_reconnect_is_only_a_note() {
        let turn = fold(
            &mut Stream,
            &[
                r#"{"type":"thread.started","thread_id":"t1"}"#,
                r#"{"type":"error","message":"Reconnecting... 1/5"}"#,
                r#"{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized: Missing bearer or basic authentication in header"}}"#,
            ],
        );
        assert!(turn.done);
        assert_eq!(turn.note.as_deref(), Some("Reconnecting... 1/5"));
        assert!(turn.error.unwrap_or_default().contains("401 Unauthorized"));
    }

    #[test]
    fn login_status_says_signed_out_only_when_it_fails_saying_so() {
        assert!(signed_out(&Output::new(1, "", "Not logged in\n")));
        assert!(!signed_out(&Output::new(0, "", "Logged in using ChatGPT\n")));
        assert!(!signed_out(&Output::new(1, "", "Error reading auth.json: permission denied")));
    }
}
