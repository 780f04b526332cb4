//! The client against the scripted OpenAI-compatible server: what only this shape does (the
//! request's form, calls written as text, the registry's fix for a dead local server). What
//! every HTTP provider does is checked once over all of them, in `contract.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::json;
use stt_llm::{Endpoint, Finish, LlmError, Message, Provider, Request, ToolSpec, calls_in_content};
use stt_testkit::llm_server::{LlmServer, Script};

fn client(url: &str) -> Provider {
    Provider::new(Endpoint {
        url: url.into(),
        model: "test-model".into(),
        api_key: Some(stt_llm::Secret::new("sk-test")),
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_millis(500),
        slots: false,
    })
    .unwrap()
}

fn request<'a>(messages: &'a [Message], tools: &'a [ToolSpec], stream: bool) -> Request<'a> {
    Request { messages, tools, stream, max_tokens: 64, temperature: 0.0, resume: None, slot: None }
}

#[tokio::test]
async fn a_streamed_answer_arrives_piece_by_piece() {
    let server = LlmServer::start();
    server.push(Script::Text("It is a sunny day.".into()));
    let messages = [Message::user("weather?")];
    let mut pieces = Vec::new();
    let reply = client(&server.url())
        .complete(&request(&messages, &[], true), |p| pieces.push(p.to_owned()))
        .await
        .unwrap();
    assert_eq!(reply.content, "It is a sunny day.");
    assert!(pieces.len() > 1, "streamed in pieces: {pieces:?}");
    assert_eq!(pieces.concat(), "It is a sunny day.");
    assert_eq!(reply.finish, Some(Finish::Stop));
    let sent = &server.requests()[0];
    assert_eq!(sent["model"], "test-model");
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["messages"][0]["content"], "weather?");
}

#[tokio::test]
async fn tool_calls_arrive_whole_from_fragments_and_from_a_plain_reply() {
    let server = LlmServer::start();
    let calls = vec![("set_timer".to_owned(), json!({"minutes": 5, "label": "tea"}))];
    server.push(Script::ToolCalls(calls.clone()));
    server.push(Script::ToolCalls(calls));
    let messages = [Message::user("timer")];
    let tools = [ToolSpec {
        name: "set_timer".into(),
        description: "timer".into(),
        parameters: json!({"type": "object"}),
    }];
    for stream in [true, false] {
        let reply = client(&server.url())
            .complete(&request(&messages, &tools, stream), |_| {})
            .await
            .unwrap();
        assert_eq!(reply.finish, Some(Finish::ToolCalls), "stream={stream}");
        assert_eq!(reply.tool_calls.len(), 1);
        assert_eq!(reply.tool_calls[0].name, "set_timer");
        assert_eq!(reply.tool_calls[0].arguments, json!({"minutes": 5, "label": "tea"}));
    }
    assert_eq!(server.requests()[0]["tools"][0]["function"]["name"], "set_timer");
}

#[tokio::test]
async fn a_call_written_as_text_is_found_in_the_content() {
    let server = LlmServer::start();
    server.push(Script::ContentCall(
        "<tool_call>\n{\"name\": \"get_datetime\", \"arguments\": {}}\n</tool_call>".into(),
    ));
    let messages = [Message::user("what time is it")];
    let reply =
        client(&server.url()).complete(&request(&messages, &[], true), |_| {}).await.unwrap();
    assert!(reply.tool_calls.is_empty());
    let calls = calls_in_content(&reply.content, |name| name == "get_datetime");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].name, "get_datetime");
}

#[tokio::test]
async fn nothing_listening_names_the_url_and_the_registry_the_fix() {
    // Bind and drop a listener to get a port nobody serves.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
    let messages = [Message::user("hi")];
    let err = client(&url).complete(&request(&messages, &[], true), |_| {}).await.unwrap_err();
    assert!(matches!(err, LlmError::Unreachable { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains(&url), "{text}");
    let registry = stt_llm::registry::Registry::new(stt_llm::registry::Settings::default());
    let explained = registry.explain(stt_llm::registry::Id::LlamaCpp, "", &err);
    assert!(explained.contains(&url) && explained.contains("stt-daemon up"), "{explained}");
}
