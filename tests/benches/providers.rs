//! The provider benchmark: how long `Registry::probe_all` takes with every local endpoint
//! dead, with one that accepts and never answers, and with one live; how much time the
//! assistant adds to the first streamed piece of an answer over a direct request to the same
//! server; and a 2,000-piece streamed answer relayed to 50 viewers, checked for loss.
//!
//! Run it with `scripts/bench-providers`, which builds `stt-assistant` first and writes the
//! figures into `docs/PERFORMANCE.md`. By hand:
//!
//! ```text
//! cargo build --release -p stt-assistant
//! cargo bench -p stt-tests --bench providers                                  # print only
//! STT_BENCH_WRITE=docs/PERFORMANCE.md cargo bench -p stt-tests --bench providers
//! ```
//!
//! How it measures:
//! - **probe.** `Registry::probe_all` in this process, on a runtime shaped like the
//!   assistant's (multi-thread, one worker), one registry reused as the assistant reuses its
//!   own. The local providers (`ollama`, `lmstudio`, `llamacpp`, `custom`) are pointed by
//!   their `endpoint` overrides at ports nothing listens on (`local_urls` empty); in the
//!   second scene `ollama`'s is a listener that accepts and never answers, in the third
//!   `llamacpp`'s is a live server. CLIs are looked up in an empty directory, and the keyed
//!   APIs find no key (the script unsets them), so the figure is the local probes' and not
//!   what this machine has installed. Each run is checked: nothing but the live server may
//!   be live, and the silent listener must end in the probe's timeout.
//! - **first piece.** A chat server in the scripted server's OpenAI shape ([`QuickServer`]:
//!   the same short answer to every request, one word per SSE chunk; it blocks in `accept`
//!   where the scripted server polls every 5 ms). *Direct*: a hand-written HTTP/1.1 client
//!   POSTs the body the assistant itself sent, timed from before `connect` to the first
//!   `data:` chunk with content. *Through the assistant*: the release `stt-assistant`
//!   (config: `[llm].endpoint` = that server, every other local provider on a dead port, no
//!   periodic probe), a `chat_send` with `stt_bus::request` from a current-thread runtime,
//!   as `stt-ctl` sends it, timed from before the request to the first `partial` assistant
//!   `chat_message` parsed by a viewer subscribed in this process. The two alternate
//!   (direct, assistant, direct, …) after a warm-up; `/new` before every assistant turn
//!   keeps the conversation at one turn, so every request is the same. A `status` round
//!   trip to the same assistant is timed beside them.
//! - **2,000 pieces to 50 viewers.** A second `stt-assistant`, its model the tests' scripted
//!   server (`stt_testkit::llm_server`); 50 viewers subscribe (`viewer: true`, 50 tasks on
//!   one runtime in this process); the scripted server answers one `chat_send` with 2,000
//!   words, one per SSE chunk (a piece is one streamed token). Every viewer must get 2,000
//!   partial pieces whose concatenation is the whole text, then the whole message. The same
//!   script fetched by the direct client gives the server's own pace.
//!
//! Knobs: `STT_BENCH_PROBES` (runs per scene, default 20), `STT_BENCH_TURNS` (turns each way,
//! default 100), `STT_BENCH_RELAYS` (2,000-piece rounds, default 3).

// A benchmark's job is to print its figures, and a setup that fails should stop it loudly:
// printing, unwrap and expect are the point here, unlike in the code these lints guard.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;

use stt_bus::{Connection, Service};
use stt_llm::registry::{
    Id, Kind, LOCAL_PROBE, NO_TLS, Override, Probed, Registry, Settings, Status,
};
use stt_proto::{AssistantEvent, ChatMessage, ChatRole, ErrorCode, Request};
use stt_testkit::Sandbox;
use stt_testkit::llm_server::{LlmServer, Script};
use stt_testkit::perf::{Stats, env_num};

/// The providers probed over HTTP on this machine.
const LOCAL: [Id; 4] = [Id::Ollama, Id::LmStudio, Id::LlamaCpp, Id::Custom];
/// The local provider whose endpoint accepts and never answers in the second scene.
const SILENT: Id = Id::Ollama;
/// The local provider whose endpoint is a live chat server in the third scene.
const LIVE: Id = Id::LlamaCpp;
/// Probe runs left out of the figures, turns too.
const WARMUP: u64 = 5;
/// The typed turn, and the answer the chat servers give it.
const QUESTION: &str = "what is the capital of Peru";
const ANSWER: &str = "Lima is the capital of Peru, on the Pacific coast.";
/// Viewers of the long answer, and its length in pieces (words).
const VIEWERS: usize = 50;
const PIECES: usize = 2000;
/// The targets from the issue.
const PROBE_TARGET_MS: f64 = 250.0;
const ADDED_TARGET_MS: f64 = 5.0;
/// How long anything may take before the benchmark gives up on it.
const PATIENCE: Duration = Duration::from_secs(30);

fn main() -> ExitCode {
    let probes = env_num("STT_BENCH_PROBES", 20);
    let turns = env_num("STT_BENCH_TURNS", 100);
    let relays = env_num("STT_BENCH_RELAYS", 3);
    let assistant_bin = stt_testkit::bin("stt-assistant");
    if !assistant_bin.is_file() {
        eprintln!(
            "bench-providers: {} is missing: run `cargo build --release -p stt-assistant` first \
             (or use scripts/bench-providers)",
            assistant_bin.display()
        );
        return ExitCode::from(2);
    }
    let keys: Vec<&str> = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ZAI_API_KEY"]
        .into_iter()
        .filter(|k| std::env::var(k).is_ok_and(|v| !v.trim().is_empty()))
        .collect();
    if !keys.is_empty() {
        eprintln!(
            "bench-providers: {} set: the keyed APIs would count as live; unset them (as \
             scripts/bench-providers does)",
            keys.join(", ")
        );
        return ExitCode::from(2);
    }
    let quick = QuickServer::start();
    let probe_runs = probe_bench(&quick.url, probes);

    let client =
        tokio::runtime::Builder::new_current_thread().enable_all().build().expect("client runtime");
    let viewers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(std::thread::available_parallelism().map_or(2, |p| p.get().min(4)))
        .enable_all()
        .build()
        .expect("viewer runtime");

    let llm = LlmServer::start();
    llm.respond_with(|_| Script::Text(ANSWER.to_owned()));
    let sandbox = Sandbox::new();
    let mut assistant = Assistant::start(&sandbox, &assistant_bin, &quick.url);
    assistant.wait_ready(&client);
    eprintln!("bench-providers: first piece, {turns} turns each way…");
    let first = first_piece_bench(&client, &viewers, &assistant, &quick, &llm, turns);
    assistant.stop();

    // The long answer comes from the tests' scripted server, whose accept poll does not
    // matter to a burst measured from its first piece.
    let sandbox = Sandbox::new();
    let mut assistant = Assistant::start(&sandbox, &assistant_bin, &llm.url());
    assistant.wait_ready(&client);
    let long: String = (0..PIECES).map(|i| format!("w{i}")).collect::<Vec<_>>().join(" ");
    // The direct client sends what the first assistant sent; this one's requests are alike.
    let body = quick.body();
    let mut rounds = Vec::new();
    for round in 0..relays {
        eprintln!("bench-providers: {PIECES} pieces to {VIEWERS} viewers, round {}…", round + 1);
        rounds.push(relay_round(&client, &viewers, &assistant, &llm, &body, &long));
    }
    assistant.stop();
    drop(viewers);

    let report = Report { probes: probe_runs, probe_runs: probes, first, rounds };
    let section = report.markdown();
    println!("{section}");
    if let Ok(target) = std::env::var("STT_BENCH_WRITE") {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root");
        let path = root.join(target);
        stt_testkit::perf::write_section(&path, START, END, &section)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        eprintln!("bench-providers: wrote {}", path.display());
    }
    let sound = report.probes.iter().all(|p| p.problems.is_empty())
        && report.rounds.iter().all(RelayRound::lossless);
    if sound {
        ExitCode::SUCCESS
    } else {
        eprintln!("bench-providers: a probe found the wrong thing, or pieces were lost; see above");
        ExitCode::FAILURE
    }
}

// ---------------------------------------------------------------------------------------
// Shared bits.

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A loopback port nothing listens on (connections are refused).
fn dead_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A chat URL on [`dead_port`].
fn dead_url() -> String {
    format!("http://127.0.0.1:{}/v1/chat/completions", dead_port())
}

fn wait_for<T>(what: &str, probe: impl FnMut() -> Option<T>) -> T {
    stt_testkit::wait_for(what, PATIENCE, probe)
}

// ---------------------------------------------------------------------------------------
// A chat server that answers at once.

/// A chat server in the scripted server's OpenAI shape (a `GET` lists one model, a `POST`
/// streams [`ANSWER`] one word per SSE chunk, each written and flushed on its own, then the
/// finish chunk and `[DONE]`), for the latency figures. The scripted server polls its
/// listener every 5 ms when idle, and requests sent back to back fall into step with that
/// poll: every one then waits most of the 5 ms for `accept`, a wait that hides whatever
/// either side spends in less. This one blocks in `accept`.
#[derive(Debug)]
struct QuickServer {
    /// The chat completions URL.
    url: String,
    /// The last `POST` body received.
    last_body: Arc<Mutex<Vec<u8>>>,
}

impl QuickServer {
    /// Starts on a free loopback port; it lives as long as the process.
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the quick server");
        let url = format!(
            "http://{}/v1/chat/completions",
            listener.local_addr().expect("quick server address")
        );
        let last_body = Arc::<Mutex<Vec<u8>>>::default();
        let record = Arc::clone(&last_body);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let record = Arc::clone(&record);
                std::thread::spawn(move || {
                    let _ = answer(stream, &record);
                });
            }
        });
        Self { url, last_body }
    }

    /// The last chat request's body (the assistant's, once it has sent one).
    fn body(&self) -> Vec<u8> {
        let body = self.last_body.lock().expect("the body lock").clone();
        assert!(!body.is_empty(), "the quick server has had no chat request yet");
        body
    }
}

/// Answers one request on `stream`, as [`QuickServer`] says.
fn answer(stream: TcpStream, record: &Mutex<Vec<u8>>) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let get = line.starts_with("GET ");
    let mut length = 0usize;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 || line.trim_end().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut out = stream;
    if get {
        let body = r#"{"object":"list","data":[{"id":"scripted","object":"model"}]}"#;
        return write!(
            out,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n{body}",
            body.len()
        );
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    *record.lock().expect("the body lock") = body;
    write!(
        out,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
         connection: close\r\n\r\n"
    )?;
    let mut send = |chunk: Value| -> std::io::Result<()> {
        write!(out, "data: {chunk}\n\n")?;
        out.flush()
    };
    send(serde_json::json!({"choices": [{"index": 0, "delta": {"role": "assistant"}}]}))?;
    for piece in ANSWER.split_inclusive(' ') {
        send(serde_json::json!(
            {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]}
        ))?;
    }
    send(serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))?;
    write!(out, "data: [DONE]\n\n")?;
    out.flush()
}

// ---------------------------------------------------------------------------------------
// Probes.

/// What the local providers' endpoints are in one set of probe runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scene {
    /// Every one refuses the connection.
    Refused,
    /// [`SILENT`]'s accepts the connection and never answers.
    Silent,
    /// [`LIVE`]'s is a live chat server.
    Live,
}

impl Scene {
    fn label(self) -> String {
        match self {
            Self::Refused => "every local endpoint refuses".to_owned(),
            Self::Silent => format!("`{SILENT}` accepts, never answers; the rest refuse"),
            Self::Live => format!("`{LIVE}` live; the rest refuse"),
        }
    }
}

#[derive(Debug)]
struct ProbeRun {
    scene: Scene,
    /// The whole `probe_all`, in ms.
    took: Stats,
    /// What the last run found, provider by provider, in a few words.
    found: String,
    /// What a run found that the scene does not allow.
    problems: Vec<String>,
}

fn probe_bench(live_url: &str, runs: u64) -> Vec<ProbeRun> {
    let local: Vec<Id> = Id::ALL.into_iter().filter(|id| id.kind() == Kind::Local).collect();
    assert_eq!(local, LOCAL, "the local providers changed: update LOCAL");
    // Accepts every connection and holds it, never reading or answering; it lives as long
    // as the process.
    let silent = TcpListener::bind("127.0.0.1:0").expect("bind the silent listener");
    let silent_url =
        format!("http://{}/v1/chat/completions", silent.local_addr().expect("silent address"));
    std::thread::spawn(move || {
        let mut held = Vec::new();
        while let Ok((stream, _)) = silent.accept() {
            held.push(stream);
        }
    });
    let no_clis = tempfile::tempdir().expect("an empty directory for PATH");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("probe runtime");
    let dead: HashMap<Id, String> = LOCAL.into_iter().map(|id| (id, dead_url())).collect();
    [Scene::Refused, Scene::Silent, Scene::Live]
        .into_iter()
        .map(|scene| {
            eprintln!("bench-providers: probe_all, {}, {runs} runs…", scene.label());
            let mut urls = dead.clone();
            match scene {
                Scene::Refused => {}
                Scene::Silent => {
                    urls.insert(SILENT, silent_url.clone());
                }
                Scene::Live => {
                    urls.insert(LIVE, live_url.to_owned());
                }
            }
            let overrides = urls
                .into_iter()
                .map(|(id, endpoint)| (id, Override { endpoint, ..Override::default() }))
                .collect();
            let registry = Registry::new(Settings {
                overrides,
                local_urls: Vec::new(),
                connect_timeout: Duration::from_secs(5),
                idle_timeout: Duration::from_secs(120),
                path: Some(no_clis.path().as_os_str().to_owned()),
                ..Settings::default()
            });
            let mut samples = Vec::with_capacity(runs as usize);
            let mut problems = Vec::new();
            let mut found = Vec::new();
            for i in 0..WARMUP + runs {
                let started = Instant::now();
                found = runtime.block_on(registry.probe_all());
                let took = started.elapsed();
                for problem in wrong_finds(scene, &found) {
                    if !problems.contains(&problem) {
                        problems.push(problem);
                    }
                }
                if i >= WARMUP {
                    samples.push(ms(took));
                }
            }
            ProbeRun { scene, took: Stats::of(samples), found: summary(&found), problems }
        })
        .collect()
}

/// What `found` says that `scene` does not allow: anything live but the live server, a
/// silent endpoint that did not end in the timeout.
fn wrong_finds(scene: Scene, found: &[Probed]) -> Vec<String> {
    let mut wrong = Vec::new();
    for p in found {
        let should_live = scene == Scene::Live && p.id == LIVE;
        if should_live != (p.status == Status::Live) {
            wrong.push(format!("{} is {} ({}) {}", p.id, p.status.as_str(), p.target, p.detail));
        }
        let timed_out = p.detail.starts_with("no answer");
        if LOCAL.contains(&p.id) && !should_live {
            let silent = scene == Scene::Silent && p.id == SILENT;
            if silent != timed_out {
                wrong.push(format!("{}: {}", p.id, p.detail));
            }
        }
    }
    wrong
}

/// `found` in a few words: each status and who has it.
fn summary(found: &[Probed]) -> String {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for p in found {
        let status = if p.detail.starts_with("no answer") {
            format!("{} (timed out)", p.status.as_str())
        } else if p.detail == NO_TLS {
            format!("{} (this build has no TLS)", p.status.as_str())
        } else {
            p.status.as_str().to_owned()
        };
        match groups.iter_mut().find(|(s, _)| *s == status) {
            Some((_, ids)) => ids.push(p.id.to_string()),
            None => groups.push((status, vec![p.id.to_string()])),
        }
    }
    groups.iter().map(|(s, ids)| format!("{s}: {}", ids.join(", "))).collect::<Vec<_>>().join("; ")
}

// ---------------------------------------------------------------------------------------
// The assistant, and talking to it.

/// The release `stt-assistant` in a sandbox, its model the server at a given URL.
#[derive(Debug)]
struct Assistant {
    child: Child,
    socket: PathBuf,
    log: PathBuf,
}

impl Assistant {
    fn start(sandbox: &Sandbox, binary: &Path, model_url: &str) -> Self {
        // Every other local provider on a dead port, so whatever runs on this machine is left
        // alone; no periodic probe, so none lands in the middle of a turn.
        let port = dead_port();
        let dead = format!("http://127.0.0.1:{port}/v1/chat/completions");
        let config = format!(
            "[llm]\nendpoint = \"{model_url}\"\nprobe_interval_s = 0\nlocal_port = {port}\n\
             [llm.providers.ollama]\nendpoint = \"{dead}\"\n\
             [llm.providers.lmstudio]\nendpoint = \"{dead}\"\n\
             [llm.providers.llamacpp]\nendpoint = \"{dead}\"\n"
        );
        std::fs::write(sandbox.config_file(), config).expect("write the assistant config");
        let socket = sandbox.assistant_socket();
        let log = sandbox.root().join("stt-assistant.log");
        let stderr = std::fs::File::create(&log).expect("the assistant's log file");
        let root = sandbox.root();
        let mut command = Command::new(binary);
        command
            .arg("--config")
            .arg(sandbox.config_file())
            .arg("--socket")
            .arg(&socket)
            .arg("--daemon-socket")
            .arg(sandbox.daemon_socket())
            .env_remove("XDG_RUNTIME_DIR")
            .env_remove("STT_DATA_DIR")
            .env_remove("STT_STATE_DIR")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("STT_LLAMA_SERVER")
            .env("STT_RUNTIME_DIR", sandbox.runtime_dir())
            .env("XDG_CONFIG_HOME", root.join("config"))
            .env("XDG_DATA_HOME", root.join("data"))
            .env("XDG_STATE_HOME", root.join("state"))
            .env("HOME", root)
            .env("PATH", "/usr/bin:/bin")
            .env("STT_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        for key in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ZAI_API_KEY"] {
            command.env_remove(key);
        }
        let child =
            command.spawn().unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        Self { child, socket, log }
    }

    /// Waits until it serves its socket with the configured endpoint as its model.
    fn wait_ready(&mut self, client: &Runtime) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(s) = self.status(client)
                && s.llm_provider.as_deref() == Some("custom")
            {
                return;
            }
            if Instant::now() > deadline || matches!(self.child.try_wait(), Ok(Some(_))) {
                panic!("stt-assistant did not get ready; its log:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn request(&self, client: &Runtime, request: &Request) -> AssistantEvent {
        client
            .block_on(stt_bus::request(&self.socket, "stt-bench", request, PATIENCE))
            .unwrap_or_else(|e| panic!("{request:?} failed: {e}\n{}", self.log()))
            .event
    }

    fn status(&self, client: &Runtime) -> Option<stt_proto::Status> {
        let reply = client.block_on(stt_bus::request(
            &self.socket,
            "stt-bench",
            &Request::Status,
            Duration::from_secs(3),
        ));
        match reply.map(|r| r.event) {
            Ok(AssistantEvent::Status(s)) => Some(s),
            _ => None,
        }
    }

    /// `chat_send`; panics unless it is accepted.
    fn send(&self, client: &Runtime, text: &str) {
        let reply = self.request(client, &Request::ChatSend { text: text.into() });
        assert!(matches!(reply, AssistantEvent::Ack(_)), "chat_send refused: {reply:?}");
    }

    /// `/new`, then waits until no job runs or waits: the next turn starts on an empty
    /// conversation and an idle lane.
    fn fresh(&self, client: &Runtime) {
        let reply = self.request(client, &Request::ChatCommand { line: "/new".into() });
        assert!(!matches!(reply, AssistantEvent::Error(_)), "/new failed: {reply:?}");
        wait_for("the assistant to be idle", || {
            self.status(client).filter(|s| !s.inference_busy && s.inference_queue == 0)
        });
    }

    fn viewers(&self, client: &Runtime) -> usize {
        self.status(client).map_or(usize::MAX, |s| s.viewers as usize)
    }

    fn stop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(10);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Assistant {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A connection subscribed as a viewer, its ack read.
async fn viewer(socket: &Path) -> Connection {
    let mut conn = Connection::open(socket, Service::ASSISTANT, "stt-bench")
        .await
        .unwrap_or_else(|e| panic!("a viewer cannot connect: {e}"));
    conn.send(&Request::Subscribe { viewer: true }).await.expect("send subscribe");
    loop {
        match conn.recv::<AssistantEvent>().await {
            Ok(Some(AssistantEvent::Ack(ack))) if ack.command == "subscribe" => return conn,
            Ok(Some(AssistantEvent::Error(e))) => panic!("subscribe refused: {e}"),
            Ok(Some(_)) => {}
            other => panic!("no ack to subscribe: {other:?}"),
        }
    }
}

/// An assistant line of the chat, as it arrived.
fn assistant_line(event: AssistantEvent) -> Option<ChatMessage> {
    match event {
        AssistantEvent::ChatMessage(m) if m.role == ChatRole::Assistant => Some(m),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------
// Direct requests to a chat server.

/// What a direct streamed request saw.
#[derive(Debug)]
struct Direct {
    /// From before `connect` to the first chunk with content.
    first: Duration,
    /// From the first chunk with content to the last.
    first_to_last: Duration,
    pieces: usize,
    text: String,
}

/// POSTs `body` to the chat URL `url` (`http://host:port/path`) by hand, as plainly as
/// HTTP/1.1 allows, and reads the SSE stream to its end.
fn direct(url: &str, body: &[u8]) -> Direct {
    let rest = url.strip_prefix("http://").expect("an http:// URL");
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n\
         accept: text/event-stream\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);

    let started = Instant::now();
    let mut stream = TcpStream::connect(host).unwrap_or_else(|e| panic!("connect {host}: {e}"));
    stream.set_nodelay(true).expect("nodelay");
    stream.write_all(&request).expect("write the request");
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).expect("the status line");
    assert!(line.starts_with("HTTP/1.1 200"), "the chat server said {line:?}");
    let mut first: Option<Instant> = None;
    let mut last = started;
    let mut pieces = 0;
    let mut text = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).expect("read the stream") == 0 {
            break;
        }
        let Some(data) = line.trim_end().strip_prefix("data: ") else { continue };
        if data == "[DONE]" {
            break;
        }
        let chunk: Value = serde_json::from_str(data).expect("a JSON chunk");
        if let Some(piece) = chunk["choices"][0]["delta"]["content"].as_str()
            && !piece.is_empty()
        {
            let now = Instant::now();
            first.get_or_insert(now);
            last = now;
            pieces += 1;
            text.push_str(piece);
        }
    }
    let first = first.expect("no content in the stream");
    Direct { first: first - started, first_to_last: last - first, pieces, text }
}

// ---------------------------------------------------------------------------------------
// First piece: direct against through the assistant.

#[derive(Debug)]
struct FirstPiece {
    direct: Stats,
    /// Direct POSTs to the tests' scripted server, back to back.
    scripted: Stats,
    assistant: Stats,
    /// A `status` round trip to the same assistant.
    status: Stats,
    /// The request body both send, in bytes.
    body_bytes: usize,
}

fn first_piece_bench(
    client: &Runtime,
    viewers: &Runtime,
    assistant: &Assistant,
    server: &QuickServer,
    scripted: &LlmServer,
    turns: u64,
) -> FirstPiece {
    let (tx, events) = mpsc::channel::<(Instant, AssistantEvent)>();
    let socket = assistant.socket.clone();
    let watcher: JoinHandle<()> = viewers.spawn(async move {
        let mut conn = viewer(&socket).await;
        while let Ok(Some(event)) = conn.recv::<AssistantEvent>().await {
            if tx.send((Instant::now(), event)).is_err() {
                break;
            }
        }
    });
    wait_for("the viewer to attach", || (assistant.viewers(client) == 1).then_some(()));

    // One turn through the assistant gives the body the direct client sends.
    let turn = |sent: Instant| -> Duration {
        assistant.send(client, QUESTION);
        let mut first = None;
        loop {
            let (at, event) =
                events.recv_timeout(PATIENCE).expect("the answer did not reach the viewer");
            let Some(line) = assistant_line(event) else { continue };
            if line.partial {
                first.get_or_insert(at);
            } else {
                assert_eq!(line.text, ANSWER, "the viewer's whole answer");
                return first.expect("no partial piece before the whole answer") - sent;
            }
        }
    };
    assistant.fresh(client);
    turn(Instant::now());
    let body = server.body();

    let (mut d, mut a, mut s) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..WARMUP + turns {
        let direct = direct(&server.url, &body);
        assert_eq!(direct.text, ANSWER, "the direct answer");

        assistant.fresh(client);
        let started = Instant::now();
        assistant.status(client).expect("status");
        let status = started.elapsed();
        while events.try_recv().is_ok() {}
        let through = turn(Instant::now());
        if i >= WARMUP {
            d.push(ms(direct.first));
            a.push(ms(through));
            s.push(ms(status));
        }
    }
    watcher.abort();
    wait_for("the viewer to leave", || (assistant.viewers(client) == 0).then_some(()));

    // What the same direct request costs against the tests' scripted server.
    let mut p = Vec::new();
    for i in 0..WARMUP + turns {
        let direct = direct(&scripted.url(), &body);
        assert_eq!(direct.text, ANSWER, "the scripted server's answer");
        if i >= WARMUP {
            p.push(ms(direct.first));
        }
    }
    FirstPiece {
        direct: Stats::of(d),
        scripted: Stats::of(p),
        assistant: Stats::of(a),
        status: Stats::of(s),
        body_bytes: body.len(),
    }
}

// ---------------------------------------------------------------------------------------
// 2,000 pieces to 50 viewers.

/// What one viewer of the long answer got.
#[derive(Debug, Default)]
struct Relayed {
    pieces: usize,
    /// The partial pieces, concatenated.
    text: String,
    /// The whole message that ends the answer.
    whole: Option<String>,
    first: Option<Instant>,
    last: Option<Instant>,
    problems: Vec<String>,
}

impl Relayed {
    fn complete(&self, long: &str) -> bool {
        self.pieces == PIECES
            && self.text == long
            && self.whole.as_deref() == Some(long)
            && self.problems.is_empty()
    }
}

/// Reads until the whole answer (or an error that ends the connection).
async fn follow(mut conn: Connection) -> Relayed {
    let mut seen = Relayed::default();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let next = tokio::time::timeout_at(deadline, conn.recv::<AssistantEvent>()).await;
        match next {
            Err(_) => {
                seen.problems.push(format!("no whole answer within {PATIENCE:?}"));
                break;
            }
            Ok(Ok(Some(AssistantEvent::Error(e)))) => {
                let dropped = e.code == ErrorCode::Lagged;
                seen.problems.push(e.to_string());
                if dropped {
                    break;
                }
            }
            Ok(Ok(Some(event))) => {
                let Some(line) = assistant_line(event) else { continue };
                if line.partial {
                    let now = Instant::now();
                    seen.first.get_or_insert(now);
                    seen.last = Some(now);
                    seen.pieces += 1;
                    seen.text.push_str(&line.text);
                } else {
                    if line.stopped {
                        seen.problems.push("the answer was marked stopped".to_owned());
                    }
                    seen.whole = Some(line.text);
                    break;
                }
            }
            Ok(Ok(None)) => {
                seen.problems.push("the assistant closed the connection".to_owned());
                break;
            }
            Ok(Err(e)) => {
                seen.problems.push(e.to_string());
                break;
            }
        }
    }
    seen
}

#[derive(Debug)]
struct RelayRound {
    /// Viewers that got every piece, in order, and the whole answer, with no error.
    complete: usize,
    /// What went wrong, viewer by viewer (at most ten).
    problems: Vec<String>,
    /// The first piece at the first viewer → the last piece at the slowest, ms.
    spread: f64,
    /// Each viewer's own first → last piece, ms.
    per_viewer: Stats,
    /// `chat_send` → the last piece at the slowest viewer, ms.
    send_to_last: f64,
    /// The same script fetched directly: first → last piece, ms.
    direct: f64,
}

impl RelayRound {
    fn lossless(&self) -> bool {
        self.complete == VIEWERS && self.problems.is_empty()
    }
}

fn relay_round(
    client: &Runtime,
    viewers: &Runtime,
    assistant: &Assistant,
    llm: &LlmServer,
    body: &[u8],
    long: &str,
) -> RelayRound {
    // The server's own pace with this script, to a client that does nothing else.
    llm.push(Script::Text(long.to_owned()));
    let direct = direct(&llm.url(), body);
    assert!(direct.pieces == PIECES && direct.text == long, "the direct long answer");

    assistant.fresh(client);
    let tasks: Vec<JoinHandle<Relayed>> = (0..VIEWERS)
        .map(|_| {
            let socket = assistant.socket.clone();
            viewers.spawn(async move { follow(viewer(&socket).await).await })
        })
        .collect();
    wait_for("every viewer to attach", || (assistant.viewers(client) == VIEWERS).then_some(()));
    llm.push(Script::Text(long.to_owned()));
    let sent = Instant::now();
    assistant.send(client, QUESTION);
    let seen: Vec<Relayed> = viewers.block_on(async {
        let mut seen = Vec::with_capacity(tasks.len());
        for task in tasks {
            seen.push(task.await.expect("a viewer task failed"));
        }
        seen
    });
    wait_for("the viewers to leave", || (assistant.viewers(client) == 0).then_some(()));

    let complete = seen.iter().filter(|s| s.complete(long)).count();
    let problems: Vec<String> = seen
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.complete(long))
        .take(10)
        .map(|(i, s)| {
            format!(
                "viewer {i}: {} of {PIECES} pieces, text {}, whole answer {}, {:?}",
                s.pieces,
                if s.text == long { "intact" } else { "differs" },
                match &s.whole {
                    Some(w) if w == long => "intact",
                    Some(_) => "differs",
                    None => "missing",
                },
                s.problems
            )
        })
        .collect();
    let first = seen.iter().filter_map(|s| s.first).min();
    let last = seen.iter().filter_map(|s| s.last).max();
    let spans = seen.iter().filter_map(|s| Some(ms(s.last? - s.first?))).collect();
    RelayRound {
        complete,
        problems,
        spread: first.zip(last).map_or(f64::NAN, |(f, l)| ms(l - f)),
        per_viewer: Stats::of(spans),
        send_to_last: last.map_or(f64::NAN, |l| ms(l - sent)),
        direct: ms(direct.first_to_last),
    }
}

// ---------------------------------------------------------------------------------------
// The report.

#[derive(Debug)]
struct Report {
    probes: Vec<ProbeRun>,
    probe_runs: u64,
    first: FirstPiece,
    rounds: Vec<RelayRound>,
}

const START: &str = "<!-- bench-providers:start -->";
const END: &str = "<!-- bench-providers:end -->";

impl Report {
    fn probe(&self, scene: Scene) -> Option<&ProbeRun> {
        self.probes.iter().find(|p| p.scene == scene)
    }

    fn markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "{START}");
        let _ = writeln!(s, "## Providers (`scripts/bench-providers`)\n");
        let _ = writeln!(
            s,
            "Measured {} on {}, release build. Reproduce with `scripts/bench-providers` (it \
             runs `cargo build --release -p stt-assistant`, then `STT_BENCH_WRITE=docs/\
             PERFORMANCE.md cargo bench -p stt-tests --bench providers` with no API key in its \
             environment, which rewrites this section); the benchmark is \
             `tests/benches/providers.rs`.\n",
            stt_testkit::perf::today(),
            stt_testkit::perf::machine()
        );
        let _ = writeln!(
            s,
            "- **probe**: `Registry::probe_all` in process, on an assistant-shaped runtime \
             (multi-thread, one worker), {} runs per scene after {WARMUP} unmeasured. The \
             local providers ({}) are pointed at loopback ports nothing listens on; in the \
             second scene `{SILENT}`'s is a listener that accepts the connection and never \
             answers (the {} ms `LOCAL_PROBE` timeout), in the third `{LIVE}`'s is the chat \
             server of the first-piece figures below. CLIs are looked up in an empty directory and no API key is set, \
             so nothing else on the machine counts; every run is checked for that.",
            self.probe_runs,
            LOCAL.map(|id| format!("`{id}`")).join(", "),
            LOCAL_PROBE.as_millis()
        );
        let _ = writeln!(
            s,
            "- **first piece**: a chat server in the scripted server's OpenAI shape, in the \
             benchmark, answers {:?} ({} pieces, one word per SSE chunk, each written on its \
             own). It blocks in `accept`: the scripted server (`stt_testkit::llm_server`) \
             polls for connections every 5 ms, and requests sent back to back fall into step \
             with the poll, so each waits most of 5 ms for it (the table's direct POSTs to \
             it, back to back), which would hide whatever either side spends in less. *Direct*: a hand-written HTTP/1.1 client POSTs the \
             assistant's own request body ({} bytes), from before `connect` to the first \
             `data:` chunk with content. *Through the assistant*: the release `stt-assistant` \
             with `[llm].endpoint` = that server; `chat_send` with `stt_bus::request` \
             (connect, hello, request, ack: what `stt-ctl chat-send` does, without its \
             process start), from before the request to the first `partial` assistant \
             `chat_message` parsed by a viewer subscribed in this process. The two alternate, \
             {} turns each after {WARMUP} unmeasured; `/new` before every assistant turn \
             keeps the conversation at one turn, so both send the same body.",
            ANSWER,
            ANSWER.split_inclusive(' ').count(),
            self.first.body_bytes,
            self.first.direct.n
        );
        let _ = writeln!(
            s,
            "- **{PIECES} pieces to {VIEWERS} viewers**: a second `stt-assistant`, its model \
             the scripted server; {VIEWERS} viewers (`subscribe` with `viewer: true`, \
             {VIEWERS} tasks on one runtime in this process) and one `chat_send` whose answer \
             is {PIECES} words, one SSE chunk each, written by the scripted server as fast as \
             it can. Every viewer must get {PIECES} `partial` \
             pieces whose concatenation is the whole text, then the whole message; a viewer \
             the assistant drops for falling behind gets a `lagged` error. The same script \
             fetched by the direct client is the server's own pace. {} rounds.\n",
            self.rounds.len()
        );

        let _ = writeln!(s, "| measurement | p50 ms | p95 ms | max ms | mean ms | samples |");
        let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|");
        for run in &self.probes {
            row(&mut s, &format!("`probe_all`, {}", run.scene.label()), run.took);
        }
        row(&mut s, "first piece, direct POST to the chat server", self.first.direct);
        row(
            &mut s,
            "first piece, `chat_send` → viewer, through the assistant",
            self.first.assistant,
        );
        row(&mut s, "`status` round trip to the same assistant", self.first.status);
        row(
            &mut s,
            "first piece, direct POST to the tests' scripted server, back to back",
            self.first.scripted,
        );
        let _ = writeln!(s);
        let _ = writeln!(s, "What the last probe of each scene found:\n");
        for run in &self.probes {
            let _ = writeln!(s, "- {}: {}.", run.scene.label(), run.found);
            for p in &run.problems {
                let _ = writeln!(s, "  - **unexpected**: {p}");
            }
        }
        let _ = writeln!(s);

        let _ = writeln!(
            s,
            "| round | direct: first → last piece ms | first piece at the first viewer → \
             last piece at the slowest ms | per viewer first → last, p50 / max ms | \
             `chat_send` → last piece at the slowest ms | delivery |"
        );
        let _ = writeln!(s, "|---:|---:|---:|---:|---:|---|");
        for (i, r) in self.rounds.iter().enumerate() {
            let delivery = if r.lossless() {
                format!("all {PIECES} pieces to all {VIEWERS} viewers, in order")
            } else {
                format!("**LOSS**: {} of {VIEWERS} viewers complete", r.complete)
            };
            let _ = writeln!(
                s,
                "| {} | {:.1} | {:.1} | {:.1} / {:.1} | {:.1} | {delivery} |",
                i + 1,
                r.direct,
                r.spread,
                r.per_viewer.p50,
                r.per_viewer.max,
                r.send_to_last
            );
        }
        let _ = writeln!(s);
        for (i, r) in self.rounds.iter().enumerate().filter(|(_, r)| !r.problems.is_empty()) {
            let _ = writeln!(s, "Problems in round {}:\n", i + 1);
            for p in &r.problems {
                let _ = writeln!(s, "- {p}");
            }
            let _ = writeln!(s);
        }

        let _ = writeln!(s, "Targets:\n");
        let dead: Vec<&ProbeRun> = self.probes.iter().filter(|p| p.scene != Scene::Live).collect();
        let worst = dead.iter().map(|p| p.took.max).fold(0.0, f64::max);
        let _ = writeln!(
            s,
            "- the whole probe ≤ {PROBE_TARGET_MS} ms with every endpoint dead (refusing, or \
             silent): **{}** ({}).",
            if worst <= PROBE_TARGET_MS { "met" } else { "not met" },
            dead.iter()
                .map(|p| format!(
                    "{}: p50 {:.1} ms, max {:.1} ms",
                    match p.scene {
                        Scene::Silent => "one silent",
                        _ => "all refusing",
                    },
                    p.took.p50,
                    p.took.max
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
        let added = self.first.assistant.p50 - self.first.direct.p50;
        let _ = writeln!(
            s,
            "- first-piece latency added by the assistant ≤ {ADDED_TARGET_MS} ms: **{}** \
             (medians {:.3} ms through the assistant against {:.3} ms direct: {added:+.3} ms; \
             p95 {:.3} against {:.3} ms).",
            if added <= ADDED_TARGET_MS { "met" } else { "not met" },
            self.first.assistant.p50,
            self.first.direct.p50,
            self.first.assistant.p95,
            self.first.direct.p95
        );
        let lossless = self.rounds.iter().all(RelayRound::lossless);
        let _ = writeln!(
            s,
            "- a {PIECES}-token streamed answer relayed to {VIEWERS} viewers without loss: \
             **{}** ({} of {} rounds lossless).\n",
            if lossless && !self.rounds.is_empty() { "met" } else { "not met" },
            self.rounds.iter().filter(|r| r.lossless()).count(),
            self.rounds.len()
        );
        let _ = writeln!(s, "{}", self.reading());
        let _ = writeln!(s, "{END}");
        s
    }

    /// A paragraph reading the figures.
    fn reading(&self) -> String {
        let p50 = |scene| self.probe(scene).map_or(f64::NAN, |p| p.took.p50);
        let mut r = format!(
            "Reading: a refused connection costs next to nothing, so with every local endpoint \
             refusing the whole probe takes {:.1} ms (p50); `probe_all` waits for its slowest \
             provider, so one endpoint that accepts and never answers holds it for the whole \
             {} ms timeout ({:.1} ms p50), which is what the target has to cover. A live \
             server answers in {:.1} ms (p50). ",
            p50(Scene::Refused),
            LOCAL_PROBE.as_millis(),
            p50(Scene::Silent),
            p50(Scene::Live)
        );
        let added = self.first.assistant.p50 - self.first.direct.p50;
        let _ = write!(
            r,
            "Through the assistant the first piece reaches a viewer {added:.2} ms after a \
             direct request sees it (medians); the control round trip alone (connect, hello, \
             `status`, reply) is {:.2} ms of that, the rest is the assistant's loop and job, \
             its HTTP client (reqwest, against the bare client here) and the relay to the \
             viewer. ",
            self.first.status.p50
        );
        if let Some(slowest) = self.rounds.iter().max_by(|a, b| a.spread.total_cmp(&b.spread)) {
            let range = |f: fn(&RelayRound) -> f64| {
                let lo = self.rounds.iter().map(f).fold(f64::INFINITY, f64::min);
                let hi = self.rounds.iter().map(f).fold(f64::NEG_INFINITY, f64::max);
                if (hi - lo).abs() < 0.05 {
                    format!("{lo:.1}")
                } else {
                    format!("{lo:.1}–{hi:.1}")
                }
            };
            let median =
                |f: fn(&RelayRound) -> f64| Stats::of(self.rounds.iter().map(f).collect()).p50;
            let (pace, spread) = (median(|r| r.direct), median(|r| r.spread));
            let _ = write!(
                r,
                "The {PIECES}-piece answer is a burst, not a model's pace: the scripted server \
                 takes {} ms to write it to a bare client, and through the assistant the \
                 slowest of {VIEWERS} viewers had its last piece {} ms after the first viewer \
                 had its first (at the slowest round, {:.1}k pieces/s to each viewer, \
                 {:.2}M events/s written to the viewers in all), ",
                range(|r| r.direct),
                range(|r| r.spread),
                PIECES as f64 / slowest.spread,
                (PIECES * VIEWERS) as f64 / slowest.spread / 1e3
            );
            if spread <= pace * 1.2 {
                let _ = write!(r, "so the relay keeps about the server's own pace");
            } else {
                let _ = write!(
                    r,
                    "so the relay is slower than the server's own pace ({spread:.1} ms against \
                     {pace:.1} ms, medians of the rounds)"
                );
            }
            if self.rounds.iter().all(RelayRound::lossless) {
                let _ = write!(
                    r,
                    ", and no viewer fell the {} events behind that get it dropped.",
                    stt_bus::publisher::DEFAULT_QUEUE_LEN
                );
            } else {
                let _ = write!(r, "; viewers were dropped or lost pieces: see the problems above.");
            }
        }
        r
    }
}

fn row(s: &mut String, what: &str, st: Stats) {
    let _ = writeln!(
        s,
        "| {what} | {:.3} | {:.3} | {:.3} | {:.3} | {} |",
        st.p50, st.p95, st.max, st.mean, st.n
    );
}
