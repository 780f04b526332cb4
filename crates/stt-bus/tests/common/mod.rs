//! Helpers shared by the integration tests: raw NDJSON clients on real Unix sockets,
//! servers started in temp dirs, a small control handler, and waits with deadlines.

#![allow(dead_code)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use stt_bus::{BoundSocket, ConnInfo, ControlServer, Handler, Publisher};
use stt_proto::{
    Ack, AssistantEvent, AudioState, DaemonEvent, DaemonHeartbeat, ErrorCode, ErrorMsg, Hello,
    Mode, Request, Status,
};

/// How long any single wait may take before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// Polls `cond` until it holds; fails naming `what` after [`DEADLINE`].
pub async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out after {DEADLINE:?} waiting until {what}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Awaits `fut`, failing with `what` after [`DEADLINE`].
pub async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(DEADLINE, fut).await {
        Ok(value) => value,
        Err(_) => panic!("timed out after {DEADLINE:?}: {what}"),
    }
}

/// A client that speaks raw bytes, reading one NDJSON line at a time.
#[derive(Debug)]
pub struct Raw {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    /// What the last read returned, for failure messages.
    last: String,
}

impl Raw {
    pub async fn connect(path: &Path) -> Self {
        let stream = within("connecting", UnixStream::connect(path))
            .await
            .unwrap_or_else(|e| panic!("cannot connect to {}: {e}", path.display()));
        let (read, writer) = stream.into_split();
        Self { reader: BufReader::new(read), writer, last: String::new() }
    }

    pub async fn send(&mut self, bytes: &[u8]) {
        within("writing", self.writer.write_all(bytes)).await.expect("write to the server");
    }

    /// The next line without its newline; `None` at EOF.
    pub async fn line(&mut self) -> Option<Vec<u8>> {
        let mut buf = Vec::new();
        let what = format!("reading a line (the last one read was {:?})", self.last);
        let n = within(&what, self.reader.read_until(b'\n', &mut buf))
            .await
            .unwrap_or_else(|e| panic!("read failed after {:?}: {e}", self.last));
        if n == 0 {
            return None;
        }
        assert_eq!(buf.pop(), Some(b'\n'), "a line without its newline: {buf:?}");
        self.last = String::from_utf8_lossy(&buf).into_owned();
        Some(buf)
    }

    /// The next line as JSON; fails at EOF.
    pub async fn json(&mut self) -> Value {
        let after = self.last.clone();
        let line = self
            .line()
            .await
            .unwrap_or_else(|| panic!("the server closed the connection after {after:?}"));
        serde_json::from_slice(&line)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&line)))
    }

    /// The next line as JSON, which must have this `type`.
    pub async fn expect_type(&mut self, kind: &str) -> Value {
        let value = self.json().await;
        assert_eq!(value["type"], kind, "expected a {kind}, got {value}");
        value
    }

    /// The next line must be `error` with this code; returns its message.
    pub async fn expect_error(&mut self, code: &str) -> String {
        let value = self.expect_type("error").await;
        assert_eq!(value["code"], code, "{value}");
        value["message"].as_str().expect("an error has a string message").to_owned()
    }

    /// The server's hello, which must come first.
    pub async fn expect_hello(&mut self, peer: &str) -> Value {
        let value = self.expect_type("hello").await;
        assert_eq!(value["protocol_version"], stt_proto::PROTOCOL_VERSION, "{value}");
        assert_eq!(value["peer"], peer, "{value}");
        assert!(value["version"].is_string(), "{value}");
        value
    }

    /// The server closed the connection cleanly: nothing more to read, then EOF.
    pub async fn expect_eof(&mut self) {
        let mut rest = Vec::new();
        let what = format!("EOF (the last line read was {:?})", self.last);
        within(&what, self.reader.read_to_end(&mut rest))
            .await
            .unwrap_or_else(|e| panic!("expected EOF after {:?}, got {e}", self.last));
        assert!(
            rest.is_empty(),
            "expected EOF after {:?}, got {:?}",
            self.last,
            String::from_utf8_lossy(&rest)
        );
    }

    pub fn into_parts(self) -> (BufReader<OwnedReadHalf>, OwnedWriteHalf) {
        (self.reader, self.writer)
    }
}

/// A daemon-like publish server on a socket in a temp dir.
#[derive(Debug)]
pub struct Daemon {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
    pub publisher: Publisher,
    pub shutdown: CancellationToken,
    pub task: JoinHandle<()>,
}

impl Daemon {
    pub fn start(queue_len: usize) -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        Self::start_in(dir, queue_len)
    }

    pub fn start_in(dir: tempfile::TempDir, queue_len: usize) -> Self {
        let path = dir.path().join("stt-daemon.sock");
        let socket = BoundSocket::bind(&path, "stt-daemon").expect("bind the daemon socket");
        let publisher = Publisher::new(queue_len);
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(stt_bus::publish_server::serve(
            socket,
            publisher.clone(),
            Hello::new("stt-daemon"),
            shutdown.clone(),
        ));
        Self { dir, path, publisher, shutdown, task }
    }

    /// Cancels and waits for `serve` to return; gives the temp dir back.
    pub async fn stop(self) -> tempfile::TempDir {
        self.shutdown.cancel();
        within("the publish server to shut down", self.task).await.expect("serve panicked");
        self.dir
    }
}

/// A daemon heartbeat whose `model` pads the encoded line to about `len` bytes.
pub fn heartbeat(seq: u64, len: usize) -> DaemonEvent {
    // The line without `model`'s text, for a five-digit `seq`.
    let base = 126;
    DaemonEvent::Heartbeat(DaemonHeartbeat {
        seq,
        uptime_s: seq as f64,
        backlog: 0,
        stt_healthy: true,
        audio: AudioState::Capturing,
        model: "m".repeat(len.saturating_sub(base).max(1)),
        remote: None,
        wake: None,
    })
}

/// Reads one daemon event line and returns its heartbeat `seq`; fails on anything else.
pub fn heartbeat_seq(line: &[u8]) -> u64 {
    match stt_proto::parse::<DaemonEvent>(line) {
        Ok(DaemonEvent::Heartbeat(hb)) => hb.seq,
        other => {
            panic!("expected a heartbeat, got {other:?} from {:?}", String::from_utf8_lossy(line))
        }
    }
}

/// A control handler that answers a few requests and records what reached it.
#[derive(Debug, Default)]
pub struct TestHandler {
    /// `kind` of each request handled, with `command_edit`'s text length appended.
    pub seen: Mutex<Vec<String>>,
}

impl TestHandler {
    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().expect("not poisoned").clone()
    }
}

impl Handler for TestHandler {
    async fn handle(&self, conn: &ConnInfo, request: Request) -> AssistantEvent {
        let mut record = request.kind().to_owned();
        if let Request::CommandEdit { text } = &request {
            record = format!("{record}:{}", text.len());
        }
        self.seen.lock().expect("not poisoned").push(record);
        match request {
            Request::Status => AssistantEvent::Status(Status {
                mode: Mode::Idle,
                stt_healthy: true,
                stt_detail: String::new(),
                llm_enabled: false,
                // Echo what the server knows about the connection, for the tests to check.
                llm_endpoint: format!(
                    "conn={} peer={}",
                    conn.id,
                    conn.peer.as_deref().unwrap_or("-")
                ),
                llm_reachable: None,
                llm_provider: Some("llamacpp".into()),
                llm_model: String::new(),
                inference_queue: 0,
                inference_busy: false,
                viewers: 0,
                command_buffer: String::new(),
                command_edited: false,
                version: "test".into(),
                timers: Vec::new(),
                chat: None,
                voice: false,
                lanes: Vec::new(),
            }),
            Request::CommandStart | Request::CommandEdit { .. } => {
                AssistantEvent::Ack(Ack { command: request.kind().into(), ok: true })
            }
            Request::SpeakerName { speaker_id, name } => AssistantEvent::Error(ErrorMsg::new(
                ErrorCode::UnknownSpeaker,
                format!("no speaker '{speaker_id}' to name '{name}'; see speaker_list"),
            )),
            other => AssistantEvent::Error(ErrorMsg::new(
                ErrorCode::NotImplemented,
                format!("the test handler does not serve {}", other.kind()),
            )),
        }
    }
}

/// An assistant-like control server on a socket in a temp dir.
#[derive(Debug)]
pub struct Assistant {
    pub path: PathBuf,
    pub publisher: Publisher,
    pub handler: Arc<TestHandler>,
    pub viewers: Arc<std::sync::atomic::AtomicUsize>,
    pub shutdown: CancellationToken,
    pub task: JoinHandle<()>,
}

impl Assistant {
    pub fn start(path: &Path, max_line: Option<usize>) -> Self {
        Self::start_with(path, max_line, Publisher::default())
    }

    pub fn start_with(path: &Path, max_line: Option<usize>, publisher: Publisher) -> Self {
        let socket = BoundSocket::bind(path, "stt-assistant").expect("bind the control socket");
        let handler = Arc::new(TestHandler::default());
        let mut server = ControlServer::new(Arc::clone(&handler), publisher.clone());
        if let Some(max) = max_line {
            server = server.with_max_line(max);
        }
        let viewers = server.viewers();
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(server.serve(socket, shutdown.clone()));
        Self { path: path.to_owned(), publisher, handler, viewers, shutdown, task }
    }

    pub fn viewers(&self) -> usize {
        self.viewers.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Cancels and waits for `serve` to return.
    pub async fn stop(self) {
        self.shutdown.cancel();
        within("the control server to shut down", self.task).await.expect("serve panicked");
    }
}

/// `{"type":"status"}\n`
pub const STATUS: &[u8] = b"{\"type\":\"status\"}\n";
