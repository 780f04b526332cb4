//! What every HTTP provider promises its caller, checked once over each of them against the
//! scripted server (OpenAI's chat completions shape and Anthropic's messages shape): a
//! streamed reply arrives in pieces and whole, a cut-off one says so, a tool call arrives
//! whole, an error status carries the server's words, a silent server times out, a stream
//! dropped midway keeps what came, and nothing listening names the URL. What only one API
//! does is in its own file (`client.rs`, `anthropic.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use serde_json::json;
use stt_llm::{Endpoint, Finish, LlmError, Message, Provider, Request, Secret, ToolSpec};
use stt_testkit::llm_server::{LlmServer, Script};

/// One HTTP provider: its name, how it is made for an endpoint, and its URL on a server.
struct Api {
    name: &'static str,
    make: fn(Endpoint) -> Provider,
    url: fn(&LlmServer) -> String,
    /// A URL on `port` in its shape.
    at: fn(u16) -> String,
}

const APIS: [Api; 2] = [
    Api {
        name: "openai",
        make: |endpoint| Provider::new(endpoint).unwrap(),
        url: LlmServer::url,
        at: |port| format!("http://127.0.0.1:{port}/v1/chat/completions"),
    },
    Api {
        name: "anthropic",
        make: |endpoint| Provider::Anthropic(stt_llm::anthropic::Client::new(endpoint).unwrap()),
        url: LlmServer::messages_url,
        at: |port| format!("http://127.0.0.1:{port}/v1/messages"),
    },
];

impl Api {
    fn client(&self, url: &str) -> Provider {
        (self.make)(Endpoint {
            url: url.into(),
            model: "test-model".into(),
            api_key: Some(Secret::new("sk-test")),
            connect_timeout: Duration::from_secs(2),
            idle_timeout: Duration::from_millis(500),
            slots: false,
        })
    }
}

fn request<'a>(messages: &'a [Message], tools: &'a [ToolSpec], stream: bool) -> Request<'a> {
    Request { messages, tools, stream, max_tokens: 64, temperature: 0.0, resume: None, slot: None }
}

#[tokio::test]
async fn an_answer_arrives_in_pieces_when_streamed_and_whole_either_way() {
    let messages = [Message::user("weather?")];
    for api in &APIS {
        let server = LlmServer::start();
        server.push(Script::Text("It is a sunny day.".into()));
        server.push(Script::Text("It is a sunny day.".into()));
        let client = api.client(&(api.url)(&server));
        let mut pieces = Vec::new();
        let reply = client
            .complete(&request(&messages, &[], true), |p| pieces.push(p.to_owned()))
            .await
            .unwrap();
        assert_eq!(reply.content, "It is a sunny day.", "{}", api.name);
        assert!(pieces.len() > 1, "{}: streamed in pieces: {pieces:?}", api.name);
        assert_eq!(pieces.concat(), reply.content, "{}", api.name);
        assert_eq!(reply.finish, Some(Finish::Stop), "{}", api.name);
        let mut whole = Vec::new();
        let reply = client
            .complete(&request(&messages, &[], false), |p| whole.push(p.to_owned()))
            .await
            .unwrap();
        assert_eq!(
            (reply.content.as_str(), reply.finish),
            ("It is a sunny day.", Some(Finish::Stop))
        );
        assert_eq!(whole, ["It is a sunny day."], "{}: one piece, the whole", api.name);
        let sent = server.requests();
        assert_eq!(
            (sent[0]["model"].as_str(), sent[0]["stream"].as_bool()),
            (Some("test-model"), Some(true))
        );
        assert!(!sent[1]["stream"].as_bool().unwrap_or(false), "{}", api.name);
    }
}

#[tokio::test]
async fn a_reply_cut_off_by_the_limit_says_so() {
    let messages = [Message::user("story")];
    for api in &APIS {
        let server = LlmServer::start();
        for stream in [true, false] {
            server.push(Script::Length("Once upon a".into()));
            let reply = api
                .client(&(api.url)(&server))
                .complete(&request(&messages, &[], stream), |_| {})
                .await
                .unwrap();
            let name = api.name;
            assert_eq!(reply.finish, Some(Finish::Length), "{name} stream={stream}");
            assert_eq!(reply.content, "Once upon a", "{name} stream={stream}");
        }
    }
}

#[tokio::test]
async fn a_tool_call_arrives_whole_streamed_or_not() {
    let messages = [Message::user("timer")];
    let tools = [ToolSpec {
        name: "set_timer".into(),
        description: "Sets a timer".into(),
        parameters: json!({"type": "object", "properties": {"minutes": {"type": "integer"}}}),
    }];
    for api in &APIS {
        let server = LlmServer::start();
        for stream in [true, false] {
            let calls = vec![("set_timer".to_owned(), json!({"minutes": 5, "label": "tea ☕"}))];
            server.push(Script::ToolCalls(calls));
            let reply = api
                .client(&(api.url)(&server))
                .complete(&request(&messages, &tools, stream), |_| {})
                .await
                .unwrap();
            let name = api.name;
            assert_eq!(reply.finish, Some(Finish::ToolCalls), "{name} stream={stream}");
            assert_eq!(reply.tool_calls.len(), 1, "{name} stream={stream}");
            assert_eq!(reply.tool_calls[0].name, "set_timer");
            assert_eq!(reply.tool_calls[0].arguments, json!({"minutes": 5, "label": "tea ☕"}));
        }
    }
}

#[tokio::test]
async fn an_error_status_carries_the_servers_own_words_before_the_first_token() {
    let messages = [Message::user("hi")];
    for api in &APIS {
        let server = LlmServer::start();
        server.push(Script::Status(500, "model is loading".into()));
        let url = (api.url)(&server);
        let err =
            api.client(&url).complete(&request(&messages, &[], true), |_| {}).await.unwrap_err();
        match &err {
            LlmError::Status { status: 500, body, url: named } => {
                assert!(body.contains("model is loading"), "{}: {body}", api.name);
                assert_eq!(named, &url);
            }
            other => panic!("{}: expected a status, got {other}", api.name),
        }
        assert!(err.before_first_token(), "{}", api.name);
    }
}

#[tokio::test]
async fn a_server_that_hangs_times_out_within_the_idle_timeout() {
    let messages = [Message::user("hi")];
    for api in &APIS {
        let server = LlmServer::start();
        server.push(Script::Hang);
        let started = Instant::now();
        let err = api
            .client(&(api.url)(&server))
            .complete(&request(&messages, &[], true), |_| {})
            .await
            .unwrap_err();
        assert!(matches!(err, LlmError::Timeout { .. }), "{}: {err}", api.name);
        assert!(err.to_string().contains("sent nothing for"), "{}: {err}", api.name);
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{}: {:?}",
            api.name,
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn a_stream_dropped_mid_answer_keeps_the_partial_text() {
    let messages = [Message::user("hi")];
    for api in &APIS {
        let server = LlmServer::start();
        server.push(Script::DropMidStream("The answer is".into()));
        let mut seen = String::new();
        let err = api
            .client(&(api.url)(&server))
            .complete(&request(&messages, &[], true), |p| seen.push_str(p))
            .await
            .unwrap_err();
        match &err {
            LlmError::Interrupted { partial, why } => {
                assert_eq!(partial, "The answer is", "{}", api.name);
                assert!(!why.is_empty(), "{}: says why", api.name);
            }
            other => panic!("{}: expected Interrupted, got {other}", api.name),
        }
        assert_eq!(seen, "The answer is", "{}", api.name);
        assert!(!err.before_first_token(), "{}", api.name);
    }
}

#[tokio::test]
async fn nothing_listening_fails_fast_naming_the_url() {
    // Bind and drop a listener to get a port nobody serves.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let messages = [Message::user("hi")];
    for api in &APIS {
        let url = (api.at)(port);
        let client = api.client(&url);
        let started = Instant::now();
        let err = client.probe().await.unwrap_err();
        assert!(matches!(err, LlmError::Unreachable { .. }), "{}: {err}", api.name);
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{}: {:?}",
            api.name,
            started.elapsed()
        );
        let err = client.complete(&request(&messages, &[], true), |_| {}).await.unwrap_err();
        assert!(matches!(err, LlmError::Unreachable { .. }), "{}: {err}", api.name);
        assert!(err.to_string().contains(&url), "{}: {err}", api.name);
    }
}
