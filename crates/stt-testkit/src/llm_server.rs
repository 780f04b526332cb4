//! A scripted chat server, OpenAI-compatible or Anthropic's messages API: the one stand-in
//! the tests allow.
//!
//! Each request takes the next [`Script`] from the queue and is answered with it, streamed
//! as server-sent events when the request asks for `stream: true`, as one JSON body
//! otherwise. Every request body is recorded for assertions, and with its path and headers
//! in [`LlmServer::received`]. With the queue empty, the server asks the responder set with
//! [`LlmServer::respond_with`], if any, and otherwise answers 500 "no scripted reply left",
//! so an unexpected call is visible.
//!
//! A `POST` to a path ending in `/messages` ([`LlmServer::messages_url`]) is answered in
//! Anthropic's shape: `event:`/`data:` pairs from `message_start` to `message_stop`, text as
//! `text_delta`s, calls as `tool_use` blocks whose input comes in two `input_json_delta`
//! fragments, a fixed usage (6 fresh input tokens and 4 read from the cache; one output token
//! per piece), and errors as `{"type":"error","error":{…}}`. A request the real API would
//! refuse (roles that do not alternate, a `tool_result` without its `tool_use`, an empty text
//! block, …) is answered 400 with the reason, and leaves the queue alone. Any other path is
//! answered in OpenAI's shape.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

/// One scripted reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Script {
    /// A plain answer, streamed in word-sized pieces.
    Text(String),
    /// Calls as the API's `tool_calls`: (name, arguments object).
    ToolCalls(Vec<(String, Value)>),
    /// A call written as text in `content`, the way small local models do.
    ContentCall(String),
    /// Text cut off by the output limit (`finish_reason: "length"`).
    Length(String),
    /// An error status with a body.
    Status(u16, String),
    /// Reads the request and never answers (until the server is dropped).
    Hang,
    /// Streams this text, then closes the connection without finishing.
    DropMidStream(String),
    /// Streams this text, then sends nothing more (only keep-alive comments) until the
    /// client goes away, which [`LlmServer::disconnects`] counts (OpenAI shape, streamed).
    Stall(String),
    /// Streams this text, then fails the way a busy API does mid-answer (Anthropic's `error`
    /// event with an `overloaded_error`, an `error` chunk in OpenAI's shape) and closes.
    /// Not streamed: 529 "Overloaded".
    FailMidStream(String),
}

/// A request as the server received it, for checking more than its body.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    /// `GET` or `POST`.
    pub method: String,
    /// The path, with its query if any.
    pub path: String,
    /// Each header's name (lowercased) and value, in the order sent.
    pub headers: Vec<(String, String)>,
    /// The JSON body; `null` for a `GET` or a body that is not JSON.
    pub body: Value,
}

impl Received {
    /// The value of header `name` (any case), if it was sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Chooses a reply from the request, for when the queue of scripts is empty.
type Responder = Box<dyn Fn(&Value) -> Script + Send + Sync>;

#[derive(Default)]
struct Shared {
    scripts: Mutex<VecDeque<Script>>,
    responder: Mutex<Option<Responder>>,
    requests: Mutex<Vec<Value>>,
    received: Mutex<Vec<Received>>,
    /// `GET …/models` requests answered (the assistant's reachability probes).
    probes: AtomicUsize,
    stop: AtomicBool,
    /// Clients that hung up on a [`Script::Stall`].
    disconnects: AtomicUsize,
    /// Answer every `GET` 503 "Loading model", as llama-server does while it loads.
    loading: AtomicBool,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").field("scripts", &self.scripts).finish_non_exhaustive()
    }
}

/// The server; stops when dropped.
#[derive(Debug)]
pub struct LlmServer {
    port: u16,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl LlmServer {
    /// Starts on a free loopback port.
    pub fn start() -> Self {
        Self::start_on(0)
    }

    /// Starts on loopback `port` (0: a free one), as a server a person starts on a port the
    /// assistant already looks at.
    pub fn start_on(port: u16) -> Self {
        let listener =
            TcpListener::bind(("127.0.0.1", port)).unwrap_or_else(|e| panic!("bind {port}: {e}"));
        let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
        listener.set_nonblocking(true).unwrap_or_else(|e| panic!("nonblocking: {e}"));
        let shared = Arc::new(Shared::default());
        let thread = {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || accept_loop(&listener, &shared))
        };
        Self { port, shared, thread: Some(thread) }
    }

    /// The chat completions URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1/chat/completions", self.port)
    }

    /// Anthropic's messages URL: requests to it are answered in that API's shape.
    pub fn messages_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1/messages", self.port)
    }

    /// Queues the reply to the next request.
    pub fn push(&self, script: Script) {
        lock(&self.shared.scripts).push_back(script);
    }

    /// Answers every request the queue does not cover with `responder(request body)`.
    pub fn respond_with(&self, responder: impl Fn(&Value) -> Script + Send + Sync + 'static) {
        *lock(&self.shared.responder) = Some(Box::new(responder));
    }

    /// Every request body received so far (the `POST`s).
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.shared.requests).clone()
    }

    /// Every request received so far, `GET`s (probes, model lists) included, with its path
    /// and headers.
    pub fn received(&self) -> Vec<Received> {
        lock(&self.shared.received).clone()
    }

    /// How many `GET …/models` probes the server has answered.
    pub fn probes(&self) -> usize {
        self.shared.probes.load(Ordering::SeqCst)
    }

    /// Whether the server acts as one still loading its model: every `GET` (its `/health`,
    /// its model list) answers 503 "Loading model", as llama-server's do.
    pub fn set_loading(&self, loading: bool) {
        self.shared.loading.store(loading, Ordering::SeqCst);
    }

    /// Clients that hung up on a stalled stream ([`Script::Stall`]).
    pub fn disconnects(&self) -> usize {
        self.shared.disconnects.load(Ordering::SeqCst)
    }

    /// Scripted replies not yet used.
    pub fn pending(&self) -> usize {
        lock(&self.shared.scripts).len()
    }
}

impl Drop for LlmServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    let mut connections = Vec::new();
    while !shared.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => {
                let shared = Arc::clone(shared);
                connections.push(std::thread::spawn(move || {
                    let _ = serve(stream, &shared);
                }));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    for connection in connections {
        let _ = connection.join();
    }
}

fn serve(stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut length = 0usize;
    let mut request_line = String::new();
    if reader.read_line(&mut request_line)? == 0 {
        return Ok(());
    }
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let mut words = request_line.split_whitespace();
    let method = words.next().unwrap_or_default().to_owned();
    let path = words.next().unwrap_or_default().to_owned();
    let anthropic = path.split(['?', '#']).next().unwrap_or_default().ends_with("/messages");
    let mut received = Received { method, path, headers, body: Value::Null };
    if received.method == "GET" && shared.loading.load(Ordering::SeqCst) {
        // As llama-server answers while it loads its model.
        lock(&shared.received).push(received);
        let mut out = stream;
        return respond_status(&mut out, 503, "Loading model");
    }
    if received.method == "GET" {
        // A reachability probe (or a client listing models): not a scripted exchange.
        shared.probes.fetch_add(1, Ordering::SeqCst);
        let asks_anthropic = received.header("anthropic-version").is_some();
        lock(&shared.received).push(received);
        if asks_anthropic {
            return anthropic_models(stream);
        }
        let body = json!({"object": "list", "data": [{"id": "scripted", "object": "model"}]});
        let body = body.to_string();
        let mut out = stream;
        return write!(
            out,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let streaming = request["stream"].as_bool().unwrap_or(false);
    lock(&shared.requests).push(request.clone());
    received.body = request.clone();
    lock(&shared.received).push(received);
    let mut out = stream;
    if anthropic && let Some(problem) = anthropic_problem(&request) {
        return anthropic_status(&mut out, 400, &problem);
    }
    let script = lock(&shared.scripts)
        .pop_front()
        .or_else(|| lock(&shared.responder).as_ref().map(|respond| respond(&request)));
    let status = if anthropic { anthropic_status } else { respond_status };
    match script {
        None => status(&mut out, 500, "no scripted reply left"),
        Some(Script::Status(code, text)) => status(&mut out, code, &text),
        Some(Script::Hang) => {
            while !shared.stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(())
        }
        Some(Script::FailMidStream(_)) if !streaming => status(&mut out, 529, "Overloaded"),
        Some(script) if anthropic => {
            let model = request["model"].as_str().unwrap_or_default();
            if streaming {
                anthropic_stream(&mut out, &script, model)
            } else {
                anthropic_whole(&mut out, &script, model)
            }
        }
        Some(Script::Stall(text)) => stall(&mut out, &text, shared),
        Some(script) if streaming => stream_script(&mut out, &script),
        Some(script) => whole_script(&mut out, &script),
    }
}

fn respond_status(out: &mut TcpStream, code: u16, text: &str) -> std::io::Result<()> {
    let body = json!({"error": {"message": text, "code": code}}).to_string();
    write!(
        out,
        "HTTP/1.1 {code} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// (content pieces, tool calls, finish reason, finished properly)
fn plan(script: &Script) -> (Vec<String>, Vec<(String, Value)>, &'static str, bool) {
    let words =
        |text: &str| -> Vec<String> { text.split_inclusive(' ').map(str::to_owned).collect() };
    match script {
        Script::Text(text) | Script::ContentCall(text) => (words(text), vec![], "stop", true),
        Script::ToolCalls(calls) => (vec![], calls.clone(), "tool_calls", true),
        Script::Length(text) => (words(text), vec![], "length", true),
        Script::DropMidStream(text) | Script::FailMidStream(text) => {
            (words(text), vec![], "stop", false)
        }
        Script::Status(..) | Script::Hang => (vec![], vec![], "stop", true),
        Script::Stall(text) => (words(text), vec![], "stop", false),
    }
}

/// Streams `text`, then keep-alive comments until the client hangs up (counted) or the
/// server stops.
fn stall(out: &mut TcpStream, text: &str, shared: &Shared) -> std::io::Result<()> {
    write!(
        out,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n"
    )?;
    for piece in text.split_inclusive(' ') {
        let chunk =
            json!({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]});
        write!(out, "data: {chunk}\n\n")?;
    }
    out.flush()?;
    while !shared.stop.load(Ordering::SeqCst) {
        if write!(out, ": still thinking\n\n").and_then(|()| out.flush()).is_err() {
            shared.disconnects.fetch_add(1, Ordering::SeqCst);
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

fn stream_script(out: &mut TcpStream, script: &Script) -> std::io::Result<()> {
    write!(
        out,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n"
    )?;
    let (pieces, calls, finish, finished) = plan(script);
    let mut send = |chunk: Value| -> std::io::Result<()> {
        write!(out, "data: {chunk}\n\n")?;
        out.flush()
    };
    send(json!({"choices": [{"index": 0, "delta": {"role": "assistant"}}]}))?;
    for piece in &pieces {
        send(
            json!({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]}),
        )?;
    }
    for (index, (name, args)) in calls.iter().enumerate() {
        let arguments = args.to_string();
        let (first, second) = halves(&arguments);
        send(
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": index, "id": format!("call_{index}"), "type": "function", "function": {"name": name, "arguments": first}}]}}]}),
        )?;
        send(
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": index, "function": {"arguments": second}}]}}]}),
        )?;
    }
    if !finished {
        if matches!(script, Script::FailMidStream(_)) {
            send(json!({"error": {"message": "Overloaded", "type": "server_error"}}))?;
        }
        return out.shutdown(std::net::Shutdown::Both);
    }
    send(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}))?;
    write!(out, "data: [DONE]\n\n")?;
    out.flush()
}

fn whole_script(out: &mut TcpStream, script: &Script) -> std::io::Result<()> {
    let (pieces, calls, finish, finished) = plan(script);
    if !finished {
        write!(
            out,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{{\"choices\":"
        )?;
        return out.shutdown(std::net::Shutdown::Both);
    }
    let tool_calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| json!({"id": format!("call_{i}"), "type": "function", "function": {"name": name, "arguments": args.to_string()}}))
        .collect();
    let content: String = pieces.concat();
    let mut message = json!({"role": "assistant", "content": if content.is_empty() { Value::Null } else { Value::String(content) }});
    if !tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls);
    }
    let body = json!({"id": "scripted", "object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": finish}]}).to_string();
    write!(
        out,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// `text` split in two near its middle, on a character boundary.
fn halves(text: &str) -> (&str, &str) {
    let mut middle = text.len() / 2;
    while !text.is_char_boundary(middle) {
        middle += 1;
    }
    text.split_at(middle)
}

/// Anthropic's name for the kind of error a status means.
fn anthropic_error_type(code: u16) -> &'static str {
    match code {
        400 => "invalid_request_error",
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        504 => "timeout_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

fn anthropic_status(out: &mut TcpStream, code: u16, text: &str) -> std::io::Result<()> {
    let error = json!({"type": anthropic_error_type(code), "message": text});
    let body = json!({"type": "error", "error": error}).to_string();
    write!(
        out,
        "HTTP/1.1 {code} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn anthropic_models(mut out: TcpStream) -> std::io::Result<()> {
    let model = json!({"type": "model", "id": "scripted", "display_name": "Scripted", "created_at": "2025-01-01T00:00:00Z"});
    let body =
        json!({"data": [model], "has_more": false, "first_id": "scripted", "last_id": "scripted"});
    let body = body.to_string();
    write!(
        out,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// What the messages API would refuse in `request` with a 400, as far as the requests stt
/// makes go; the wording follows the API's.
fn anthropic_problem(request: &Value) -> Option<String> {
    if request["model"].as_str().is_none_or(str::is_empty) {
        return Some("model: Field required".into());
    }
    if !request["max_tokens"].is_u64() {
        return Some("max_tokens: Field required".into());
    }
    if let Some(temperature) = request["temperature"].as_f64()
        && !(0.0..=1.0).contains(&temperature)
    {
        return Some("temperature: Input should be less than or equal to 1".into());
    }
    if request.get("system").is_some_and(|system| !system.is_string()) {
        return Some("system: Input should be a valid string".into());
    }
    let Some(messages) = request["messages"].as_array().filter(|m| !m.is_empty()) else {
        return Some("messages: at least one message is required".into());
    };
    // The ids of the calls the previous assistant turn made: the next user turn answers each.
    let mut calls: Vec<&str> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or_default();
        let expected = if i % 2 == 0 { "user" } else { "assistant" };
        if role != expected {
            return Some(format!(
                "messages.{i}.role: expected \"{expected}\", got {role:?}: roles must alternate \
                 between \"user\" and \"assistant\", starting with \"user\""
            ));
        }
        let blocks = match &message["content"] {
            Value::String(text) if !text.is_empty() => Vec::new(),
            Value::Array(blocks) if !blocks.is_empty() => blocks.iter().collect(),
            _ => return Some(format!("messages.{i}: all messages must have non-empty content")),
        };
        let mut made = Vec::new();
        let mut answered = Vec::new();
        let mut after_results = false;
        for (j, block) in blocks.into_iter().enumerate() {
            let at = format!("messages.{i}.content.{j}");
            match (block["type"].as_str().unwrap_or_default(), role) {
                ("text", _) => {
                    if block["text"].as_str().is_none_or(|t| t.trim().is_empty()) {
                        return Some(format!("{at}: text content blocks must be non-empty"));
                    }
                    after_results = true;
                }
                ("tool_use", "assistant") => {
                    if !block["input"].is_object() {
                        return Some(format!("{at}.input: Input should be a valid dictionary"));
                    }
                    made.push(block["id"].as_str().unwrap_or_default());
                }
                ("tool_result", "user") => {
                    let id = block["tool_use_id"].as_str().unwrap_or_default();
                    if after_results {
                        return Some(format!(
                            "{at}: tool_result blocks must come first in the user message"
                        ));
                    }
                    if !calls.contains(&id) {
                        return Some(format!(
                            "{at}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. \
                             Each `tool_result` block must have a corresponding `tool_use` block \
                             in the previous message."
                        ));
                    }
                    answered.push(id);
                }
                (kind, _) => {
                    return Some(format!("{at}: unexpected {kind:?} block in a {role} turn"));
                }
            }
        }
        if role == "user"
            && let Some(missing) = calls.iter().find(|id| !answered.contains(id))
        {
            return Some(format!(
                "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately \
                 after: {missing}"
            ));
        }
        calls = made;
    }
    for (i, tool) in request["tools"].as_array().into_iter().flatten().enumerate() {
        if tool["name"].as_str().is_none_or(str::is_empty) || !tool["input_schema"].is_object() {
            return Some(format!("tools.{i}: a tool needs a name and an input_schema object"));
        }
    }
    None
}

/// The stop reason for one of [`plan`]'s finish reasons.
fn anthropic_stop_reason(finish: &str) -> &'static str {
    match finish {
        "tool_calls" => "tool_use",
        "length" => "max_tokens",
        _ => "end_turn",
    }
}

fn anthropic_stream(out: &mut TcpStream, script: &Script, model: &str) -> std::io::Result<()> {
    write!(
        out,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n"
    )?;
    let (pieces, calls, finish, finished) = plan(script);
    let mut send = |event: Value| -> std::io::Result<()> {
        let kind = event["type"].as_str().unwrap_or_default();
        write!(out, "event: {kind}\ndata: {event}\n\n")?;
        out.flush()
    };
    let usage = json!({"input_tokens": 6, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 4, "output_tokens": 1});
    send(
        json!({"type": "message_start", "message": {"id": "msg_scripted", "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage}}),
    )?;
    send(json!({"type": "ping"}))?;
    let mut index = 0;
    if !pieces.is_empty() {
        send(
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        )?;
        for piece in &pieces {
            send(
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}),
            )?;
        }
    }
    if !finished {
        if matches!(script, Script::FailMidStream(_)) {
            send(
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            )?;
        }
        return out.shutdown(std::net::Shutdown::Both);
    }
    if !pieces.is_empty() {
        send(json!({"type": "content_block_stop", "index": index}))?;
        index += 1;
    }
    for (n, (name, args)) in calls.iter().enumerate() {
        send(
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": format!("toolu_{n}"), "name": name, "input": {}}}),
        )?;
        let arguments = args.to_string();
        let (first, second) = halves(&arguments);
        for fragment in [first, second] {
            send(
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": fragment}}),
            )?;
        }
        send(json!({"type": "content_block_stop", "index": index}))?;
        index += 1;
    }
    let output_tokens = pieces.len() + calls.len();
    send(
        json!({"type": "message_delta", "delta": {"stop_reason": anthropic_stop_reason(finish), "stop_sequence": null}, "usage": {"output_tokens": output_tokens}}),
    )?;
    send(json!({"type": "message_stop"}))
}

fn anthropic_whole(out: &mut TcpStream, script: &Script, model: &str) -> std::io::Result<()> {
    let (pieces, calls, finish, finished) = plan(script);
    if !finished {
        write!(
            out,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{{\"id\":\"msg_scripted\",\"content\":"
        )?;
        return out.shutdown(std::net::Shutdown::Both);
    }
    let text: String = pieces.concat();
    let mut content: Vec<Value> = Vec::new();
    if !text.is_empty() {
        content.push(json!({"type": "text", "text": text}));
    }
    for (n, (name, args)) in calls.iter().enumerate() {
        content.push(
            json!({"type": "tool_use", "id": format!("toolu_{n}"), "name": name, "input": args}),
        );
    }
    let usage = json!({"input_tokens": 6, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 4, "output_tokens": pieces.len() + calls.len()});
    let body = json!({"id": "msg_scripted", "type": "message", "role": "assistant", "model": model, "content": content, "stop_reason": anthropic_stop_reason(finish), "stop_sequence": null, "usage": usage}).to_string();
    write!(
        out,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}
