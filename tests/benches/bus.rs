//! The bus benchmark: how long an event takes from `Publisher::publish` in the daemon to a
//! parsed message in a subscriber, with 1, 10 and 50 subscribers at 1000 events/s of about
//! 300 bytes each; the same through the real `stt-assistant` to 50 viewers (daemon →
//! assistant → viewer); how long one control round trip takes; and how long the whole
//! `stt-ctl status` command takes, from spawn to exit.
//!
//! Run it with `scripts/bench-bus`, which builds `stt-ctl` first and writes the figures into
//! `docs/PERFORMANCE.md`. By hand:
//!
//! ```text
//! cargo build --release -p stt-ctl -p stt-assistant
//! cargo bench -p stt-tests --bench bus                                  # print only
//! STT_BENCH_WRITE=docs/PERFORMANCE.md cargo bench -p stt-tests --bench bus
//! ```
//!
//! How it measures:
//! - **publish → receive.** This process serves a real `BoundSocket` with
//!   `publish_server::serve` on a runtime shaped like the daemon's (multi-thread, one
//!   worker). The subscribers live in a second process, this same executable started again
//!   with `STT_BENCH_ROLE=subscribers`: it opens N connections with `stt_bus::Connection`
//!   and reads each with `recv::<DaemonEvent>()`, as a real client does. Every event is a
//!   `transcript` whose `start` carries the publisher's `CLOCK_MONOTONIC` at publish time (a
//!   clock both processes share); the subscriber takes the clock again once the event is
//!   parsed. Each subscriber checks it got every `seg_id` in order, and no error.
//! - **daemon → assistant → viewer.** The release `stt-assistant` (model off) follows the
//!   same publisher and relays each transcript to 50 viewers in the second process
//!   (`STT_BENCH_ROLE=viewers`), which subscribe with `viewer: true` and time each relay as
//!   above: the `start` field survives the relay untouched.
//! - **ctl round trip.** A `ControlServer` with a small handler answering `status`, on a
//!   runtime shaped like the assistant's; `stt_bus::request` from a current-thread runtime
//!   on another thread, as `stt-ctl` does it: connect, hello + request, hello, ack, reply.
//! - **whole `stt-ctl status`.** The release `stt-ctl` binary with `--socket PATH status`
//!   against the same server, timed from spawn to exit. `/bin/true` timed the same way is
//!   the floor any command pays for fork, exec and exit on this machine.
//!
//! Knobs: `STT_BENCH_SECONDS` (per subscriber count, default 5), `STT_BENCH_CTL_ITERS`
//! (default 2000), `STT_BENCH_SPAWNS` (default 300).

// A benchmark's job is to print its figures, and a setup that fails should stop it loudly:
// printing, unwrap and expect are the point here, unlike in the code these lints guard.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::time::{ClockId, clock_gettime};
use serde_json::{Value, json};
use tokio::runtime::Runtime;
use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;

use stt_bus::{BoundSocket, Connection, ControlServer, Publisher, Service};
use stt_proto::{
    AssistantEvent, DaemonEvent, Hello, Request, SegmentDone, SpeakerStatus, Transcript,
    encode_line,
};
use stt_testkit::fake::FakeAssistant;
use stt_testkit::msg;
use stt_testkit::perf::{Stats, env_num};

const ROLE: &str = "STT_BENCH_ROLE";
const SOCKET: &str = "STT_BENCH_SOCKET";
const SUBSCRIBERS: &str = "STT_BENCH_N";
const EVENTS: &str = "STT_BENCH_EVENTS";
const WARMUP: &str = "STT_BENCH_WARMUP";

/// Subscriber counts measured, at [`RATE`] events per second.
const COUNTS: [usize; 3] = [1, 10, 50];
/// Viewers of the assistant in the relay run.
const RELAY_VIEWERS: usize = 50;
const RATE: u64 = 1000;
/// Bytes per event line, newline included (about).
const LINE_BYTES: usize = 300;
/// Events at the start of each run that are checked for loss but left out of the latency
/// figures, while connections and caches settle.
const WARMUP_EVENTS: u64 = 200;
/// The targets from the issue.
const TARGET_MS: f64 = 1.5;

fn main() -> ExitCode {
    match std::env::var(ROLE).as_deref() {
        Ok("subscribers") => {
            subscribers_main(Service::DAEMON);
            return ExitCode::SUCCESS;
        }
        Ok("viewers") => {
            subscribers_main(Service::ASSISTANT);
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    bench_main()
}

// ---------------------------------------------------------------------------------------
// Shared bits.

/// `CLOCK_MONOTONIC` in seconds: one clock for every process on the machine, so a time
/// taken in one process can be subtracted from a time taken in another.
fn mono_s() -> f64 {
    let ts = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC");
    ts.tv_sec() as f64 + ts.tv_nsec() as f64 * 1e-9
}

/// A daemon transcript event whose `start` is the moment it is published.
fn transcript(seg_id: u64, text: &str, sent: f64) -> DaemonEvent {
    DaemonEvent::Transcript(Transcript {
        seg_id,
        text: text.to_owned(),
        language: "en".to_owned(),
        start: sent,
        end: sent + 2.48,
        duration: 2.48,
        speaker_id: Some("spk_0001".to_owned()),
        speaker_status: SpeakerStatus::Matched,
        speaker: Some("Efren".to_owned()),
        speaker_score: Some(0.87),
    })
}

/// Text that makes a transcript line about [`LINE_BYTES`] long.
fn padded_text() -> String {
    let overhead = encode_line(&transcript(1234, "", mono_s())).len();
    "so the plan for tomorrow is to move the meeting to three and send the notes before lunch "
        .chars()
        .cycle()
        .take(LINE_BYTES.saturating_sub(overhead))
        .collect()
}

// ---------------------------------------------------------------------------------------
// The subscriber process.

/// What one subscriber saw.
#[derive(Debug, Default)]
struct Seen {
    received: u64,
    /// Events whose `seg_id` was not the one after the previous.
    out_of_order: u64,
    /// Whether the end marker arrived.
    done: bool,
    problems: Vec<String>,
    /// Publish → parsed, in µs, for events past the warm-up.
    latencies_us: Vec<f64>,
}

/// The subscriber process: `n` connections to `service`'s socket, each reading every event
/// (for the assistant, as a subscribed viewer).
fn subscribers_main(service: Service) {
    let socket = PathBuf::from(std::env::var(SOCKET).expect(SOCKET));
    let n = env_num(SUBSCRIBERS, 1) as usize;
    let events = env_num(EVENTS, 1000);
    let warmup = env_num(WARMUP, 0);
    let workers = std::thread::available_parallelism().map_or(2, |p| p.get().min(4));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("subscriber runtime");
    let deadline = Duration::from_secs(events / RATE + 30);
    let seen: Vec<Seen> = runtime.block_on(async move {
        let mut conns = Vec::with_capacity(n);
        for _ in 0..n {
            let mut conn = Connection::open(&socket, service, "stt-bench")
                .await
                .unwrap_or_else(|e| panic!("subscriber cannot connect: {e}"));
            if service == Service::ASSISTANT {
                subscribe_as_viewer(&mut conn).await;
            }
            conns.push(conn);
        }
        let tasks: Vec<_> = conns
            .into_iter()
            .map(|conn| {
                if service == Service::ASSISTANT {
                    tokio::spawn(follow::<AssistantEvent>(conn, events, warmup))
                } else {
                    tokio::spawn(follow::<DaemonEvent>(conn, events, warmup))
                }
            })
            .collect();
        println!("ready");
        std::io::stdout().flush().expect("stdout");
        let mut seen = Vec::with_capacity(n);
        for task in tasks {
            match tokio::time::timeout(deadline, task).await {
                Ok(Ok(s)) => seen.push(s),
                Ok(Err(e)) => panic!("subscriber task failed: {e}"),
                Err(_) => seen.push(Seen {
                    problems: vec![format!("no end marker within {deadline:?}")],
                    ..Seen::default()
                }),
            }
        }
        seen
    });

    let complete = seen
        .iter()
        .filter(|s| s.received == events && s.out_of_order == 0 && s.done && s.problems.is_empty())
        .count();
    let min_received = seen.iter().map(|s| s.received).min().unwrap_or(0);
    let problems: Vec<String> = seen
        .iter()
        .enumerate()
        .filter(|(_, s)| s.received != events || s.out_of_order != 0 || !s.problems.is_empty())
        .take(10)
        .map(|(i, s)| {
            format!(
                "subscriber {i}: {} of {events} events, {} out of order, end marker {}, {:?}",
                s.received,
                s.out_of_order,
                if s.done { "seen" } else { "missing" },
                s.problems
            )
        })
        .collect();
    let all: Vec<f64> = seen.into_iter().flat_map(|s| s.latencies_us).collect();
    let report = json!({
        "subscribers": n,
        "complete": complete,
        "min_received": min_received,
        "problems": problems,
        "latency_us": Stats::of(all).to_json(),
    });
    println!("{report}");
}

/// `subscribe{viewer: true}`, and its ack.
async fn subscribe_as_viewer(conn: &mut Connection) {
    conn.send(&Request::Subscribe { viewer: true }).await.expect("send subscribe");
    loop {
        match conn.recv::<AssistantEvent>().await {
            Ok(Some(AssistantEvent::Ack(ack))) if ack.command == "subscribe" => return,
            Ok(Some(AssistantEvent::Error(e))) => panic!("subscribe refused: {e}"),
            Ok(Some(_)) => {}
            other => panic!("no ack to subscribe: {other:?}"),
        }
    }
}

/// What the subscriber makes of one message.
enum Item {
    /// A timed transcript: its `seg_id` and the publisher's clock at publish time.
    Timed(u64, f64),
    Problem(String),
    Other,
}

/// The events a subscriber reads: the daemon's, or the assistant's relay of them.
trait Timed: stt_proto::Message {
    fn item(self) -> Item;
}

impl Timed for DaemonEvent {
    fn item(self) -> Item {
        match self {
            Self::Transcript(t) => Item::Timed(t.seg_id, t.start),
            Self::Error(e) => Item::Problem(e.to_string()),
            _ => Item::Other,
        }
    }
}

impl Timed for AssistantEvent {
    fn item(self) -> Item {
        match self {
            Self::Transcript(t) => Item::Timed(t.seg_id, t.start),
            Self::Error(e) => Item::Problem(e.to_string()),
            _ => Item::Other,
        }
    }
}

/// Reads until the end marker: the transcript with `seg_id == events`.
async fn follow<M: Timed>(mut conn: Connection, events: u64, warmup: u64) -> Seen {
    let mut seen = Seen { latencies_us: Vec::with_capacity(events as usize), ..Seen::default() };
    let mut next = 0u64;
    loop {
        match conn.recv::<M>().await.map(|m| m.map(Timed::item)) {
            Ok(Some(Item::Timed(seg_id, _))) if seg_id == events => {
                seen.done = true;
                break;
            }
            Ok(Some(Item::Timed(seg_id, sent))) => {
                let now = mono_s();
                if seg_id != next {
                    seen.out_of_order += 1;
                }
                next = seg_id + 1;
                seen.received += 1;
                if seg_id >= warmup {
                    seen.latencies_us.push((now - sent) * 1e6);
                }
            }
            Ok(Some(Item::Problem(p))) => seen.problems.push(p),
            Ok(Some(Item::Other)) => {}
            Ok(None) => {
                seen.problems.push("the server closed the connection".to_owned());
                break;
            }
            Err(e) => {
                seen.problems.push(e.to_string());
                break;
            }
        }
    }
    seen
}

// ---------------------------------------------------------------------------------------
// The benchmark process.

/// One publish → receive run.
#[derive(Debug)]
struct BusRun {
    subscribers: usize,
    events: u64,
    /// Events per second actually published.
    rate: f64,
    /// Subscribers that got every event, in order, and the end marker, with no error.
    complete: usize,
    problems: Vec<String>,
    /// Publish → parsed, in ms.
    latency: Stats,
}

impl BusRun {
    fn lossless(&self) -> bool {
        self.complete == self.subscribers && self.problems.is_empty()
    }
}

/// A runtime shaped like the daemon's and the assistant's: multi-thread, one worker.
fn service_runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime")
}

fn wait_for(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    stt_testkit::wait_for(what, within, || done().then_some(()));
}

/// Who reads the events in a run.
#[derive(Debug, Clone, Copy)]
enum Readers<'a> {
    /// Subscribers on the daemon socket itself.
    Daemon,
    /// Viewers of a real `stt-assistant` (serving `socket`) that follows the daemon socket
    /// and relays every transcript.
    Assistant { socket: &'a Path },
}

fn bus_run(
    daemon: &Runtime,
    publisher: &Publisher,
    socket: &Path,
    readers: Readers<'_>,
    subscribers: usize,
    events: u64,
    text: &str,
) -> BusRun {
    // A subscriber that left is noticed when a write to it fails, so keep publishing (as the
    // daemon's heartbeat does) until the previous run's are gone; the assistant stays.
    let (role, socket, daemon_subscribers) = match readers {
        Readers::Daemon => ("subscribers", socket, subscribers),
        Readers::Assistant { socket } => ("viewers", socket, 1),
    };
    let others = daemon_subscribers - if role == "subscribers" { subscribers } else { 0 };
    wait_for("the previous subscribers to leave", Duration::from_secs(10), || {
        publisher.publish(&DaemonEvent::SegmentDone(SegmentDone { seg_id: u64::MAX }));
        publisher.subscribers() == others
    });
    let mut child = Command::new(std::env::current_exe().expect("current_exe"))
        .env(ROLE, role)
        .env(SOCKET, socket)
        .env(SUBSCRIBERS, subscribers.to_string())
        .env(EVENTS, events.to_string())
        .env(WARMUP, WARMUP_EVENTS.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("cannot start the subscriber process");
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, lines) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let ready = lines.recv_timeout(Duration::from_secs(30));
    assert_eq!(ready.as_deref(), Ok("ready"), "the subscriber process did not get ready");
    wait_for("every subscriber to attach", Duration::from_secs(10), || match readers {
        Readers::Daemon => publisher.subscribers() == subscribers,
        Readers::Assistant { socket } => viewers(daemon, socket) == subscribers,
    });

    let publisher = publisher.clone();
    let text = text.to_owned();
    let (elapsed, short) = daemon.block_on(async move {
        let publishing = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / RATE));
            tick.set_missed_tick_behavior(MissedTickBehavior::Burst);
            let mut short = 0u64;
            let started = Instant::now();
            for seg_id in 0..events {
                tick.tick().await;
                let reached = publisher.publish(&transcript(seg_id, &text, mono_s()));
                if reached != daemon_subscribers {
                    short += 1;
                }
            }
            let elapsed = started.elapsed();
            publisher.publish(&transcript(events, "end", mono_s()));
            (elapsed, short)
        });
        publishing.await.expect("the publishing task failed")
    });

    let report = lines
        .recv_timeout(Duration::from_secs(events / RATE + 60))
        .expect("no report from the subscriber process");
    let status = child.wait().expect("wait for the subscriber process");
    let _ = reader.join();
    assert!(status.success(), "the subscriber process failed: {status}");
    let report: Value = serde_json::from_str(&report).expect("the subscriber report is JSON");

    let mut problems: Vec<String> = report["problems"]
        .as_array()
        .map(|a| a.iter().filter_map(|p| p.as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    if short > 0 {
        problems
            .push(format!("{short} events reached fewer than {daemon_subscribers} subscribers"));
    }
    BusRun {
        subscribers,
        events,
        rate: events as f64 / elapsed.as_secs_f64(),
        complete: report["complete"].as_u64().unwrap_or(0) as usize,
        problems,
        latency: Stats::from_json(&report["latency_us"]).scaled(1000.0),
    }
}

/// The assistant's viewer count, from `status`.
fn viewers(runtime: &Runtime, socket: &Path) -> usize {
    let reply = runtime.block_on(stt_bus::request(
        socket,
        "stt-bench",
        &Request::Status,
        Duration::from_secs(3),
    ));
    match reply.map(|r| r.event) {
        Ok(AssistantEvent::Status(s)) => s.viewers as usize,
        _ => usize::MAX,
    }
}

/// The relay's assistant: stopped (SIGTERM, then waited for) when dropped, so a run that
/// panics leaves no assistant behind holding the binary.
struct Relay(std::process::Child);

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.0.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = self.0.wait();
    }
}

/// The release `stt-assistant`, started to follow `daemon_socket` and serve `socket`, with
/// the model off (nothing here is a command) and its data under `dir`.
fn start_assistant(dir: &Path, daemon_socket: &Path, socket: &Path) -> Relay {
    let binary = stt_testkit::bin("stt-assistant");
    let config = dir.join("assistant.toml");
    std::fs::write(&config, "[llm]\nenabled = false\n[assistant]\naudit = false\n")
        .expect("write the assistant config");
    Command::new(&binary)
        .arg("--config")
        .arg(&config)
        .arg("--socket")
        .arg(socket)
        .arg("--daemon-socket")
        .arg(daemon_socket)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("STT_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .map(Relay)
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()))
}

/// `stt_bus::request(status)` from a current-thread runtime, `iters` times; ms.
fn ctl_round_trips(socket: &Path, iters: u64) -> Stats {
    let client =
        tokio::runtime::Builder::new_current_thread().enable_all().build().expect("client runtime");
    let warmup = (iters / 10).max(10);
    let mut samples = Vec::with_capacity(iters as usize);
    for i in 0..warmup + iters {
        let started = Instant::now();
        let reply = client
            .block_on(stt_bus::request(socket, "stt-ctl", &Request::Status, Duration::from_secs(3)))
            .unwrap_or_else(|e| panic!("status request failed: {e}"));
        let took = started.elapsed();
        assert!(matches!(reply.event, AssistantEvent::Status(_)), "not a status: {reply:?}");
        if i >= warmup {
            samples.push(took.as_secs_f64() * 1e3);
        }
    }
    Stats::of(samples)
}

/// Runs `command` `times` times (after a few unmeasured runs), checking each run with
/// `check`; wall time from spawn to exit, in ms.
fn spawn_times(mut command: Command, times: u64, check: impl Fn(&std::process::Output)) -> Stats {
    command.stdin(Stdio::null());
    let mut samples = Vec::with_capacity(times as usize);
    for i in 0..times + 20 {
        let started = Instant::now();
        let output = command.output().unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
        let took = started.elapsed();
        check(&output);
        if i >= 20 {
            samples.push(took.as_secs_f64() * 1e3);
        }
    }
    Stats::of(samples)
}

/// `$STT_BENCH_CTL` (scripts/bench-bus points it at the statically linked build people
/// install), else `target/release/stt-ctl`, next to this benchmark's
/// `target/release/deps/bus-…`.
fn stt_ctl_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("STT_BENCH_CTL").filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    stt_testkit::bin("stt-ctl")
}

fn bench_main() -> ExitCode {
    let seconds = env_num("STT_BENCH_SECONDS", 5);
    let ctl_iters = env_num("STT_BENCH_CTL_ITERS", 2000);
    let spawns = env_num("STT_BENCH_SPAWNS", 300);
    let stt_ctl = stt_ctl_binary();
    if !stt_ctl.is_file() {
        eprintln!(
            "bench-bus: {} is missing: run `cargo build --release -p stt-ctl` first \
             (or use scripts/bench-bus)",
            stt_ctl.display()
        );
        return ExitCode::from(2);
    }
    let dir = tempfile::Builder::new().prefix("stt-bench-").tempdir().expect("temp dir");
    let shutdown = CancellationToken::new();

    // The daemon side: a real socket, the real publish server.
    let daemon = service_runtime();
    let daemon_socket = dir.path().join("stt-daemon.sock");
    let publisher = Publisher::default();
    {
        let _entered = daemon.enter();
        let bound =
            BoundSocket::bind(&daemon_socket, "stt-daemon").expect("bind the daemon socket");
        daemon.spawn(stt_bus::publish_server::serve(
            bound,
            publisher.clone(),
            Hello::new("stt-daemon"),
            shutdown.clone(),
        ));
    }
    let text = padded_text();
    let line_bytes = encode_line(&transcript(1234, &text, mono_s())).len();
    let events = seconds * RATE;
    let mut runs = Vec::new();
    for n in COUNTS {
        eprintln!("bench-bus: publish → receive, {n} subscribers, {events} events…");
        let readers = Readers::Daemon;
        runs.push(bus_run(&daemon, &publisher, &daemon_socket, readers, n, events, &text));
    }

    // Through the real assistant: daemon → assistant → viewers.
    let relay_socket = dir.path().join("relay.sock");
    let relay = start_assistant(dir.path(), &daemon_socket, &relay_socket);
    wait_for("the assistant to follow the daemon", Duration::from_secs(30), || {
        // Publishing is what notices the last run's subscribers are gone.
        publisher.publish(&DaemonEvent::SegmentDone(SegmentDone { seg_id: u64::MAX }));
        publisher.subscribers() == 1 && viewers(&daemon, &relay_socket) == 0
    });
    eprintln!("bench-bus: daemon → assistant → {RELAY_VIEWERS} viewers, {events} events…");
    let readers = Readers::Assistant { socket: &relay_socket };
    let relayed =
        bus_run(&daemon, &publisher, &daemon_socket, readers, RELAY_VIEWERS, events, &text);
    drop(relay);

    // The assistant side: the real control server with a stand-in handler.
    let assistant = service_runtime();
    let ctl_socket = dir.path().join("stt-assistant.sock");
    {
        let _entered = assistant.enter();
        let bound =
            BoundSocket::bind(&ctl_socket, "stt-assistant").expect("bind the control socket");
        let server = ControlServer::new(
            Arc::new(FakeAssistant::new(msg::status(), msg::roster(Vec::new()))),
            Publisher::default(),
        );
        assistant.spawn(server.serve(bound, shutdown.clone()));
    }
    eprintln!("bench-bus: ctl round trip, {ctl_iters} requests…");
    let ctl = ctl_round_trips(&ctl_socket, ctl_iters);

    eprintln!("bench-bus: `stt-ctl status`, {spawns} runs…");
    let mut command = Command::new(&stt_ctl);
    command.arg("--socket").arg(&ctl_socket).arg("status");
    let whole = spawn_times(command, spawns, |out| {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("mode:") && stdout.contains("stt:"),
            "stt-ctl status failed: {}\n{stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    });
    let true_bin = if Path::new("/bin/true").exists() { "/bin/true" } else { "true" };
    let floor = spawn_times(Command::new(true_bin), spawns, |out| {
        assert!(out.status.success(), "{true_bin} failed");
    });

    shutdown.cancel();
    drop(daemon);
    drop(assistant);

    let report = Report { runs, relayed, ctl, whole, floor, line_bytes, events, true_bin };
    let section = report.markdown();
    println!("{section}");
    if let Ok(target) = std::env::var("STT_BENCH_WRITE") {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root");
        let path = root.join(target);
        stt_testkit::perf::write_section(&path, START, END, &section)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        eprintln!("bench-bus: wrote {}", path.display());
    }
    if report.runs.iter().chain([&report.relayed]).all(BusRun::lossless) {
        ExitCode::SUCCESS
    } else {
        eprintln!("bench-bus: events were lost or reordered; see the problems above");
        ExitCode::FAILURE
    }
}

// ---------------------------------------------------------------------------------------
// The report.

#[derive(Debug)]
struct Report {
    runs: Vec<BusRun>,
    /// Through the real assistant, to [`RELAY_VIEWERS`] viewers.
    relayed: BusRun,
    ctl: Stats,
    whole: Stats,
    floor: Stats,
    line_bytes: usize,
    events: u64,
    true_bin: &'static str,
}

const START: &str = "<!-- bench-bus:start -->";
const END: &str = "<!-- bench-bus:end -->";

impl Report {
    fn markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "{START}");
        let _ = writeln!(s, "## Bus latency (`scripts/bench-bus`)\n");
        let _ = writeln!(
            s,
            "Measured {} on {}, release build. Reproduce with `scripts/bench-bus` (it runs \
             `cargo build --release -p stt-ctl -p stt-assistant`, then \
             `STT_BENCH_WRITE=docs/PERFORMANCE.md cargo bench -p stt-tests --bench bus`, which \
             rewrites this section); the benchmark is `tests/benches/bus.rs`.\n",
            stt_testkit::perf::today(),
            stt_testkit::perf::machine()
        );
        let _ = writeln!(
            s,
            "- **publish → receive**: the real publish server on a daemon-shaped runtime \
             (multi-thread, one worker); the subscribers in a second process, each reading \
             with `stt_bus::Connection`; {} events per run at {RATE}/s, each a `transcript` \
             line of {} bytes. Latency is from just before `Publisher::publish` to the parsed \
             message in the subscriber, on `CLOCK_MONOTONIC`, over every subscriber and every \
             event after the first {WARMUP_EVENTS}. Every subscriber must get every event, in \
             order.",
            self.events, self.line_bytes
        );
        let _ = writeln!(
            s,
            "- **daemon → assistant → viewer**: the same publisher, followed by the release \
             `stt-assistant` (model off), whose {RELAY_VIEWERS} viewers (`subscribe` with \
             `viewer: true`, in the second process) read its relay of each transcript. \
             Latency is from the daemon's publish to the parsed relay in the viewer: two \
             socket hops, the assistant's parse, speaker resolution and re-encode."
        );
        let _ = writeln!(
            s,
            "- **ctl round trip**: `stt_bus::request(status)` against the real `ControlServer` \
             (assistant-shaped runtime, a stand-in handler): connect, hello + request, hello, \
             ack, reply."
        );
        let _ = writeln!(
            s,
            "- **whole `stt-ctl status`**: the release binary ({}) with `--socket PATH status` \
             against that server, from spawn to exit. `{}` timed the same way is the floor \
             any process pays for fork, exec and exit here.\n",
            std::env::var("STT_BENCH_CTL_KIND").unwrap_or_else(|_| "dynamically linked".into()),
            self.true_bin
        );
        let _ = writeln!(
            s,
            "| measurement | p50 ms | p99 ms | max ms | mean ms | samples | delivery |"
        );
        let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---|");
        for run in &self.runs {
            let delivery = if run.lossless() {
                format!("all {} events to all, in order", run.events)
            } else {
                format!("**LOSS**: {} of {} subscribers complete", run.complete, run.subscribers)
            };
            row(
                &mut s,
                &format!(
                    "publish → receive, {} subscriber{} ({:.0} events/s)",
                    run.subscribers,
                    if run.subscribers == 1 { "" } else { "s" },
                    run.rate
                ),
                run.latency,
                &delivery,
            );
        }
        let relayed = &self.relayed;
        row(
            &mut s,
            &format!(
                "daemon → assistant → viewer, {} viewers ({:.0} events/s)",
                relayed.subscribers, relayed.rate
            ),
            relayed.latency,
            &if relayed.lossless() {
                format!("all {} events to all, in order", relayed.events)
            } else {
                format!(
                    "**LOSS**: {} of {} viewers complete",
                    relayed.complete, relayed.subscribers
                )
            },
        );
        row(&mut s, "ctl round trip (`stt_bus::request`, status)", self.ctl, "");
        row(&mut s, "whole `stt-ctl status`, spawn → exit", self.whole, "");
        row(&mut s, &format!("floor: `{}`, spawn → exit", self.true_bin), self.floor, "");
        let _ = writeln!(s);
        for run in self.runs.iter().chain([&self.relayed]).filter(|r| !r.problems.is_empty()) {
            let _ = writeln!(s, "Problems with {} subscribers:\n", run.subscribers);
            for p in &run.problems {
                let _ = writeln!(s, "- {p}");
            }
            let _ = writeln!(s);
        }

        let _ = writeln!(s, "Targets:\n");
        if let Some(run) = self.runs.iter().max_by_key(|r| r.subscribers) {
            let met = run.lossless() && run.latency.p99 <= TARGET_MS;
            let _ = writeln!(
                s,
                "- publish → receive p99 ≤ {TARGET_MS} ms with {} subscribers, no loss: **{}** \
                 (p99 {:.3} ms, max {:.3} ms; {}).",
                run.subscribers,
                if met { "met" } else { "not met" },
                run.latency.p99,
                run.latency.max,
                if run.lossless() { "no loss, no reordering" } else { "events lost" }
            );
        }
        let met = relayed.lossless() && relayed.latency.p99 <= TARGET_MS;
        let _ = writeln!(
            s,
            "- daemon → assistant → viewer p99 ≤ {TARGET_MS} ms with {} viewers at {RATE} \
             events/s, no loss: **{}** (p99 {:.3} ms, max {:.3} ms; {}).",
            relayed.subscribers,
            if met { "met" } else { "not met" },
            relayed.latency.p99,
            relayed.latency.max,
            if relayed.lossless() { "no loss, no reordering" } else { "events lost" }
        );
        let verdict = if self.whole.p99 <= TARGET_MS {
            "met"
        } else if self.whole.p50 <= TARGET_MS {
            "met at the median, not at p99"
        } else {
            "not met"
        };
        let _ = writeln!(
            s,
            "- whole `stt-ctl status` ≤ {TARGET_MS} ms: **{verdict}** (p50 {:.3} ms, p99 {:.3} \
             ms; of which the ctl round trip is p50 {:.3} ms and spawning any process, p50 \
             {:.3} ms).",
            self.whole.p50, self.whole.p99, self.ctl.p50, self.floor.p50
        );
        let _ = writeln!(s, "{END}");
        s
    }
}

fn row(s: &mut String, what: &str, st: Stats, delivery: &str) {
    let _ = writeln!(
        s,
        "| {what} | {:.3} | {:.3} | {:.3} | {:.3} | {} | {delivery} |",
        st.p50, st.p99, st.max, st.mean, st.n
    );
}
