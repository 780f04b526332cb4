//! Chat turns and compaction against the scripted model: a long conversation never sends a
//! request over the budget, compaction leaves a note, and trimming takes over when the
//! summarizer fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::Value;
use stt_assistant::exec::{Executor, Settings, estimate_tokens};
use stt_bus::Publisher;
use stt_llm::{Client, Endpoint};
use stt_proto::{AssistantEvent, ChatRole, ErrorCode};
use stt_tests::llm_server::{LlmServer, Script};

const SUMMARIZE: &str = "Summarize the conversation.";
const BUDGET: u32 = 300;

fn executor(server: &LlmServer, publisher: &Publisher) -> Executor {
    let client = Client::new(Endpoint {
        url: server.url(),
        model: String::new(),
        api_key: None,
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(5),
    })
    .unwrap();
    let settings = Settings {
        command_system_prompt: "You run commands.".into(),
        chat_system_prompt: "You are a helpful voice assistant.".into(),
        max_tool_iterations: 3,
        confirmation_timeout: Duration::from_secs(1),
        max_tokens: 64,
        temperature: 0.0,
        prompt_budget: BUDGET,
        compaction_trigger_ratio: 0.8,
        compaction_keep_turns: 2,
        compaction_max_tokens: 60,
        compaction_system_prompt: SUMMARIZE.into(),
        trim_block_turns: 2,
    };
    let registry = stt_tools::Registry::new(&[]).unwrap();
    Executor::new(Some(client), registry, publisher.clone(), None, settings)
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

fn drain(rx: &mut tokio::sync::broadcast::Receiver<bytes::Bytes>) -> Vec<AssistantEvent> {
    let mut events = Vec::new();
    while let Ok(line) = rx.try_recv() {
        events.push(stt_proto::parse::<AssistantEvent>(&line[..line.len() - 1]).unwrap());
    }
    events
}

fn notes(events: &[AssistantEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AssistantEvent::ChatMessage(m) if m.role == ChatRole::Note => Some(m.text.clone()),
            _ => None,
        })
        .collect()
}

async fn long_chat(executor: &Executor) {
    for n in 0..14 {
        executor
            .run_chat(&format!("Unknown: this is turn number {n} of a long conversation about the weather and the garden"))
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
    let publisher = Publisher::default();
    let mut rx = publisher.subscribe();
    let executor = executor(&server, &publisher);
    long_chat(&executor).await;

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
    let events = drain(&mut rx);
    assert!(notes(&events).iter().any(|n| n.starts_with("context compacted")), "{events:?}");
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
    let publisher = Publisher::default();
    let mut rx = publisher.subscribe();
    let executor = executor(&server, &publisher);
    long_chat(&executor).await;
    for request in server.requests() {
        assert!(request_tokens(&request) <= BUDGET as usize, "over budget: {request}");
    }
    let notes = notes(&drain(&mut rx));
    assert!(
        notes.iter().any(|n| n.contains("context trimmed") && n.contains("summarizing failed")),
        "{notes:?}"
    );
    assert!(executor.chat.lock().unwrap().summary.is_none());
}

#[tokio::test]
async fn a_truncated_reply_is_an_error_and_an_empty_one_is_not_stored() {
    let server = LlmServer::start();
    server.push(Script::Length(String::new()));
    server.push(Script::Length("Once upon a".into()));
    let publisher = Publisher::default();
    let mut rx = publisher.subscribe();
    let executor = executor(&server, &publisher);
    executor.run_chat("Unknown: tell me a story").await;
    assert_eq!(
        executor.chat.lock().unwrap().turns.len(),
        1,
        "the empty truncated answer is not stored"
    );
    executor.run_chat("Unknown: go on").await;
    assert_eq!(executor.chat.lock().unwrap().turns.len(), 3);
    let events = drain(&mut rx);
    let truncated = events
        .iter()
        .filter(|e| matches!(e, AssistantEvent::Error(err) if err.code == ErrorCode::Truncated))
        .count();
    assert_eq!(truncated, 2);
    let final_text = events.iter().rev().find_map(|e| match e {
        AssistantEvent::ChatMessage(m) if m.role == ChatRole::Assistant && !m.partial => {
            Some(m.text.clone())
        }
        _ => None,
    });
    assert_eq!(final_text.as_deref(), Some("Once upon a"));
}

#[tokio::test]
async fn clear_forgets_the_conversation() {
    let server = LlmServer::start();
    server.respond_with(|_| Script::Text("Hello.".into()));
    let publisher = Publisher::default();
    let executor = executor(&server, &publisher);
    executor.run_chat("Unknown: hi").await;
    executor.clear();
    executor.run_chat("Unknown: again").await;
    let last = server.requests().pop().unwrap();
    let contents: Vec<&str> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["You are a helpful voice assistant.", "Unknown: again"]);
}
