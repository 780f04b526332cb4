//! The Anthropic client against the scripted server's messages shape: what only this API
//! does (usage with the cache, the request's form, a conversation with calls round-tripped,
//! its refusals and overload, the key on every request). What every HTTP provider does is
//! checked once over all of them, in `contract.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::json;
use stt_llm::anthropic::Client;
use stt_llm::{
    Endpoint, Finish, LlmError, Message, Provider, Request, Secret, ToolCall, ToolSpec, Usage,
};
use stt_testkit::llm_server::{LlmServer, Script};

fn endpoint(url: &str) -> Endpoint {
    Endpoint {
        url: url.into(),
        model: "claude-test".into(),
        api_key: Some(Secret::new("sk-ant-test")),
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_millis(500),
        slots: false,
    }
}

fn client(url: &str) -> Provider {
    Provider::Anthropic(Client::new(endpoint(url)).unwrap())
}

fn request<'a>(messages: &'a [Message], tools: &'a [ToolSpec], stream: bool) -> Request<'a> {
    Request { messages, tools, stream, max_tokens: 64, temperature: 0.0, resume: None, slot: None }
}

fn timer_tool() -> ToolSpec {
    ToolSpec {
        name: "set_timer".into(),
        description: "Sets a timer".into(),
        parameters: json!({"type": "object", "properties": {"minutes": {"type": "integer"}}}),
    }
}

#[tokio::test]
async fn a_streamed_answer_arrives_piece_by_piece() {
    let server = LlmServer::start();
    server.push(Script::Text("It is a sunny day.".into()));
    let messages = [Message::user("weather?")];
    let mut pieces = Vec::new();
    let reply = client(&server.messages_url())
        .complete(&request(&messages, &[], true), |p| pieces.push(p.to_owned()))
        .await
        .unwrap();
    assert_eq!(reply.content, "It is a sunny day.");
    assert!(pieces.len() > 1, "streamed in pieces: {pieces:?}");
    assert_eq!(pieces.concat(), "It is a sunny day.");
    assert_eq!(reply.finish, Some(Finish::Stop));
    // 6 fresh prompt tokens and 4 from the cache; one output token per word.
    assert_eq!(
        reply.usage,
        Some(Usage { prompt_tokens: 10, completion_tokens: 5, cached_tokens: 4 })
    );
    let sent = &server.requests()[0];
    assert_eq!(sent["model"], "claude-test");
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["max_tokens"], 64);
    assert_eq!(
        sent["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "weather?"}]}])
    );
    assert_eq!(server.received()[0].path, "/v1/messages");
}

#[tokio::test]
async fn a_tool_call_arrives_whole_with_what_the_request_carried() {
    let server = LlmServer::start();
    let calls = vec![("set_timer".to_owned(), json!({"minutes": 5, "label": "tea ☕"}))];
    server.push(Script::ToolCalls(calls.clone()));
    server.push(Script::ToolCalls(calls));
    let messages =
        [Message::system("You are terse."), Message::system("Use tools."), Message::user("timer")];
    let tools = [timer_tool()];
    for stream in [true, false] {
        let reply = client(&server.messages_url())
            .complete(&request(&messages, &tools, stream), |_| {})
            .await
            .unwrap();
        assert_eq!(reply.finish, Some(Finish::ToolCalls), "stream={stream}");
        assert_eq!(
            reply.tool_calls,
            [ToolCall {
                id: "toolu_0".into(),
                name: "set_timer".into(),
                arguments: json!({"minutes": 5, "label": "tea ☕"}),
            }],
            "stream={stream}"
        );
        assert_eq!(reply.content, "");
    }
    let received = &server.received()[0];
    assert_eq!(received.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(received.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(received.header("content-type"), Some("application/json"));
    assert_eq!(received.header("authorization"), None, "the key goes in x-api-key only");
    let sent = &received.body;
    assert_eq!(sent["system"], "You are terse.\n\nUse tools.");
    assert_eq!(sent["messages"].as_array().unwrap().len(), 1, "no system message: {sent}");
    assert_eq!(
        sent["tools"],
        json!([{"name": "set_timer", "description": "Sets a timer", "input_schema": tools[0].parameters}])
    );
}

#[tokio::test]
async fn a_conversation_with_calls_and_results_round_trips_as_the_api_expects() {
    let server = LlmServer::start();
    server.push(Script::ToolCalls(vec![
        ("set_timer".to_owned(), json!({"minutes": 5})),
        ("set_timer".to_owned(), json!({"minutes": 10})),
    ]));
    server.push(Script::Text("Both timers are set.".into()));
    let provider = client(&server.messages_url());
    let tools = [timer_tool()];
    let mut conversation = vec![Message::system("Be brief."), Message::user("tea and eggs")];
    let reply = provider.complete(&request(&conversation, &tools, true), |_| {}).await.unwrap();
    assert_eq!(reply.tool_calls.len(), 2);
    conversation.push(Message::calls(reply.tool_calls.clone()));
    for call in &reply.tool_calls {
        conversation
            .push(Message::tool(&call.id, format!("set for {}", call.arguments["minutes"])));
    }
    conversation.push(Message::user("thanks"));
    // The scripted server refuses, as the API does, turns that do not alternate and results
    // without their calls: a reply means the request was well formed.
    let reply = provider.complete(&request(&conversation, &tools, true), |_| {}).await.unwrap();
    assert_eq!(reply.content, "Both timers are set.");
    assert_eq!(
        server.requests()[1]["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "tea and eggs"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_0", "name": "set_timer", "input": {"minutes": 5}},
                {"type": "tool_use", "id": "toolu_1", "name": "set_timer", "input": {"minutes": 10}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_0", "content": "set for 5"},
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "set for 10"},
                {"type": "text", "text": "thanks"}
            ]}
        ])
    );
}

#[tokio::test]
async fn a_result_without_its_call_is_refused_with_the_apis_reason() {
    let server = LlmServer::start();
    server.push(Script::Text("never sent".into()));
    let messages = [Message::user("hi"), Message::tool("toolu_gone", "done")];
    let err = client(&server.messages_url())
        .complete(&request(&messages, &[], true), |_| {})
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Status { status: 400, .. }), "{err}");
    assert!(err.to_string().contains("tool_use_id"), "{err}");
    assert_eq!(server.pending(), 1, "the refused request leaves the script queued");
}

#[tokio::test]
async fn a_bad_key_is_a_401_that_carries_the_servers_words() {
    let server = LlmServer::start();
    server.push(Script::Status(401, "invalid x-api-key".into()));
    let messages = [Message::user("hi")];
    let err = client(&server.messages_url())
        .complete(&request(&messages, &[], true), |_| {})
        .await
        .unwrap_err();
    match &err {
        LlmError::Status { status, body, url } => {
            assert_eq!(*status, 401);
            assert!(body.contains("invalid x-api-key"), "{body}");
            assert!(body.contains("authentication_error"), "{body}");
            assert_eq!(url, &server.messages_url());
        }
        other => panic!("expected Status, got {other}"),
    }
    assert!(err.before_first_token());
}

#[tokio::test]
async fn an_overloaded_api_mid_answer_says_so_and_keeps_the_partial_text() {
    let server = LlmServer::start();
    server.push(Script::FailMidStream("Let me think".into()));
    server.push(Script::FailMidStream("Let me think".into()));
    let messages = [Message::user("hi")];
    let err = client(&server.messages_url())
        .complete(&request(&messages, &[], true), |_| {})
        .await
        .unwrap_err();
    match err {
        LlmError::Interrupted { partial, why } => {
            assert_eq!(partial, "Let me think");
            assert_eq!(why, "Overloaded");
        }
        other => panic!("expected Interrupted, got {other}"),
    }
    let err = client(&server.messages_url())
        .complete(&request(&messages, &[], false), |_| {})
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Status { status: 529, .. }), "{err}");
}

#[tokio::test]
async fn models_are_listed_and_the_probe_sends_the_key() {
    let server = LlmServer::start();
    let provider = client(&server.messages_url());
    assert_eq!(provider.models().await.unwrap(), ["scripted"]);
    provider.probe().await.unwrap();
    assert_eq!(server.probes(), 2);
    let received = server.received();
    assert!(received[0].path.starts_with("/v1/models"), "{}", received[0].path);
    for get in &received {
        assert_eq!(get.method, "GET");
        assert_eq!(get.header("x-api-key"), Some("sk-ant-test"));
        assert_eq!(get.header("anthropic-version"), Some("2023-06-01"));
    }
}

#[cfg(not(feature = "https"))]
#[tokio::test]
async fn an_https_endpoint_without_tls_names_the_fix() {
    let provider = client("https://127.0.0.1:1/v1/messages");
    let messages = [Message::user("hi")];
    let err = provider.complete(&request(&messages, &[], true), |_| {}).await.unwrap_err();
    assert!(matches!(err, LlmError::NoTls { .. }), "{err}");
}
