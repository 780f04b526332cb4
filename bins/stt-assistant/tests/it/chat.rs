//! Chat turns and compaction against the scripted model: a long conversation never sends a
//! request over the budget, compaction leaves a note, and trimming takes over when the
//! summarizer fails.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use stt_assistant::lane::Sink;
use stt_assistant::llm::{self, Chat, JobEnv, Report, Settings, estimate_tokens};
use stt_proto::{AssistantEvent, ErrorCode};
use stt_testkit::llm_server::{LlmServer, Script};

use crate::common;

const SUMMARIZE: &str = "Summarize the conversation.";
const BUDGET: u32 = 300;

fn env(server: &LlmServer) -> JobEnv {
    let settings = Settings {
        max_tool_iterations: 3,
        prompt_budget: BUDGET,
        compaction_system_prompt: SUMMARIZE.into(),
        ..common::settings()
    };
    common::env(server, settings, None)
}

/// What the assistant's loop does with a chat job's reports, for one conversation: keeps
/// the conversation each turn leaves, and everything else it was told.
struct Conversation {
    env: JobEnv,
    chat: Chat,
    reports: Arc<Mutex<Vec<Report>>>,
}

impl Conversation {
    fn new(server: &LlmServer) -> Self {
        Self { env: env(server), chat: Chat::default(), reports: Arc::default() }
    }

    async fn turn(&mut self, text: &str) {
        let reports = Arc::clone(&self.reports);
        let out = Sink::new(move |r| reports.lock().unwrap().push(r));
        let turn =
            llm::chat::Turn { text, system: &self.env.settings.chat_system_prompt, resume: None };
        llm::chat::turn(&self.env, turn, self.chat.clone(), &out).await;
        let left = self.reports.lock().unwrap().iter().rev().find_map(|r| match r {
            Report::Conversation(chat) => Some(chat.clone()),
            _ => None,
        });
        if let Some(chat) = left {
            self.chat = chat;
        }
        // The next turn's conversation is the one this one left, not an older report.
        self.reports.lock().unwrap().retain(|r| !matches!(r, Report::Conversation(_)));
    }

    /// What `pick` takes from every report so far.
    fn picked<T>(&self, pick: impl Fn(&Report) -> Option<T>) -> Vec<T> {
        self.reports.lock().unwrap().iter().filter_map(pick).collect()
    }

    fn notes(&self) -> Vec<String> {
        self.picked(|r| match r {
            Report::Note(text) => Some(text.clone()),
            _ => None,
        })
    }

    fn errors(&self) -> Vec<ErrorCode> {
        self.picked(|r| match r {
            Report::Publish(AssistantEvent::Error(e)) => Some(e.code),
            _ => None,
        })
    }

    fn final_replies(&self) -> Vec<String> {
        self.picked(|r| match r {
            Report::Reply { text, partial: false, .. } => Some(text.clone()),
            _ => None,
        })
    }
}

fn request_tokens(request: &Value) -> usize {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| estimate_tokens(m["content"].as_str().unwrap_or("")))
        .sum()
}

fn is_summary_request(request: &Value) -> bool {
    request["messages"][0]["content"] == SUMMARIZE
}

async fn long_chat(conversation: &mut Conversation) {
    for n in 0..14 {
        conversation
            .turn(&format!("Unknown: this is turn number {n} of a long conversation about the weather and the garden"))
            .await;
    }
}

#[tokio::test]
async fn a_long_chat_is_compacted_and_never_exceeds_the_budget() {
    let server = LlmServer::start();
    server.respond_with(|request| {
        if is_summary_request(request) {
            Script::Text("They talked about the weather and the garden.".into())
        } else {
            Script::Text("That sounds lovely, tell me more about it please.".into())
        }
    });
    let mut conversation = Conversation::new(&server);
    long_chat(&mut conversation).await;

    let requests = server.requests();
    let chat_requests: Vec<&Value> = requests.iter().filter(|r| !is_summary_request(r)).collect();
    assert_eq!(chat_requests.len(), 14);
    for request in &requests {
        assert!(request_tokens(request) <= BUDGET as usize, "over budget: {request}");
    }
    assert!(requests.iter().any(is_summary_request), "compaction never ran");
    // The summary rides as a second system message, and the newest turns stay verbatim.
    let last = chat_requests.last().unwrap();
    assert_eq!(last["messages"][1]["role"], "system");
    assert!(last["messages"][1]["content"].as_str().unwrap().contains("weather and the garden"));
    assert!(
        last["messages"].as_array().unwrap().last().unwrap()["content"]
            .as_str()
            .unwrap()
            .contains("turn number 13")
    );
    // Notes are for people only: never sent to the model.
    for request in &requests {
        assert!(!request.to_string().contains("context compacted"), "a note reached the model");
    }
    let notes = conversation.notes();
    assert!(notes.iter().any(|n| n.starts_with("context compacted")), "{notes:?}");
}

#[tokio::test]
async fn when_summarizing_fails_the_oldest_turns_are_trimmed() {
    let server = LlmServer::start();
    server.respond_with(|request| {
        if is_summary_request(request) {
            Script::Status(500, "out of memory".into())
        } else {
            Script::Text("Sure, I can help with that in a moment.".into())
        }
    });
    let mut conversation = Conversation::new(&server);
    long_chat(&mut conversation).await;
    for request in server.requests() {
        assert!(request_tokens(&request) <= BUDGET as usize, "over budget: {request}");
    }
    let notes = conversation.notes();
    assert!(
        notes.iter().any(|n| n.contains("context trimmed") && n.contains("summarizing failed")),
        "{notes:?}"
    );
    assert!(conversation.chat.summary.is_none());
}

#[tokio::test]
async fn a_truncated_reply_is_an_error_and_an_empty_one_is_not_stored() {
    let server = LlmServer::start();
    server.push(Script::Length(String::new()));
    server.push(Script::Length("Once upon a".into()));
    let mut conversation = Conversation::new(&server);
    conversation.turn("Unknown: tell me a story").await;
    assert_eq!(conversation.chat.turns.len(), 1, "the empty truncated answer is not stored");
    conversation.turn("Unknown: go on").await;
    assert_eq!(conversation.chat.turns.len(), 3);
    let truncated = conversation.errors().iter().filter(|c| **c == ErrorCode::Truncated).count();
    assert_eq!(truncated, 2);
    assert_eq!(conversation.final_replies().last().map(String::as_str), Some("Once upon a"));
}

#[tokio::test]
async fn a_turn_sends_only_the_conversation_it_was_given() {
    let server = LlmServer::start();
    server.respond_with(|_| Script::Text("Hello.".into()));
    let mut conversation = Conversation::new(&server);
    conversation.turn("Unknown: hi").await;
    assert_eq!(conversation.chat.turns.len(), 2);
    // What `clear` leaves: an empty conversation, and the next turn starts from it.
    conversation.chat = Chat::default();
    conversation.turn("Unknown: again").await;
    let last = server.requests().pop().unwrap();
    let contents: Vec<&str> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["You are a helpful voice assistant.", "Unknown: again"]);
}
