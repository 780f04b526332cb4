//! A scripted OpenAI-compatible chat completions server: the one stand-in the tests allow.
//!
//! Each request takes the next [`Script`] from the queue and is answered with it, streamed
//! as server-sent events when the request asks for `stream: true`, as one JSON body
//! otherwise. Every request body is recorded for assertions. With the queue empty, the
//! server asks the responder set with [`LlmServer::respond_with`], if any, and otherwise
//! answers 500 "no scripted reply left", so an unexpected call is visible.

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
}

/// Chooses a reply from the request, for when the queue of scripts is empty.
type Responder = Box<dyn Fn(&Value) -> Script + Send + Sync>;

#[derive(Default)]
struct Shared {
    scripts: Mutex<VecDeque<Script>>,
    responder: Mutex<Option<Responder>>,
    requests: Mutex<Vec<Value>>,
    /// `GET …/models` requests answered (the assistant's reachability probes).
    probes: AtomicUsize,
    stop: AtomicBool,
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
        let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind: {e}"));
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

    /// Queues the reply to the next request.
    pub fn push(&self, script: Script) {
        lock(&self.shared.scripts).push_back(script);
    }

    /// Answers every request the queue does not cover with `responder(request body)`.
    pub fn respond_with(&self, responder: impl Fn(&Value) -> Script + Send + Sync + 'static) {
        *lock(&self.shared.responder) = Some(Box::new(responder));
    }

    /// Every request body received so far.
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.shared.requests).clone()
    }

    /// How many `GET …/models` probes the server has answered.
    pub fn probes(&self) -> usize {
        self.shared.probes.load(Ordering::SeqCst)
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
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
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
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        if request_line.is_empty() {
            request_line = line.clone();
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    if request_line.starts_with("GET ") {
        // A reachability probe (or a client listing models): not a scripted exchange.
        shared.probes.fetch_add(1, Ordering::SeqCst);
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
    let script = lock(&shared.scripts)
        .pop_front()
        .or_else(|| lock(&shared.responder).as_ref().map(|respond| respond(&request)));
    let mut out = stream;
    match script {
        None => respond_status(&mut out, 500, "no scripted reply left"),
        Some(Script::Status(code, text)) => respond_status(&mut out, code, &text),
        Some(Script::Hang) => {
            while !shared.stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(())
        }
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
        Script::DropMidStream(text) => (words(text), vec![], "stop", false),
        Script::Status(..) | Script::Hang => (vec![], vec![], "stop", true),
    }
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
        let (first, second) = arguments.split_at(arguments.len() / 2);
        send(
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": index, "id": format!("call_{index}"), "type": "function", "function": {"name": name, "arguments": first}}]}}]}),
        )?;
        send(
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": index, "function": {"arguments": second}}]}}]}),
        )?;
    }
    if !finished {
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
