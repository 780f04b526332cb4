//! The assistant's loop served in this process ([`stt_assistant::serve`]) under tokio's
//! paused clock: the rules that depend on time (a held `command_execute` and its deadline, a
//! daemon whose heartbeats stop, a dream stopped by speech going on after the quiet) are
//! checked in virtual time, so a test of seconds of waiting takes none. The daemon is a real
//! publish-only socket served here; requests go over the real control socket; every file
//! (memory, the session, speaker names) is under a temporary directory.
//!
//! The scripted model answers on a thread of its own, in real time, while the clock here
//! moves on whenever the loop waits: the model's timeouts are an hour, and the waits that
//! span a request allow minutes of virtual time, so a slow real answer is never a timeout.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use stt_assistant::{Settings, serve};
use stt_bus::{BoundSocket, Publisher};
use stt_config::{Config, Env};
use stt_proto::{
    AssistantEvent, AudioState, DaemonEvent, DaemonHeartbeat, ErrorCode, Hello, MemoryRequest,
    Mode, Request, SpeechStart, Status,
};
use stt_testkit::llm_server::{LlmServer, Script};
use tokio_util::sync::CancellationToken;

/// How often a wait looks again, in virtual time (costs nothing real).
const POLL: Duration = Duration::from_millis(50);

/// A daemon that publishes what the test tells it, and the assistant following it.
struct Served {
    _dir: tempfile::TempDir,
    control: PathBuf,
    daemon: Publisher,
    shutdown: CancellationToken,
    assistant: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Served {
    /// The assistant with `config`, its XDG directories under a temporary one.
    async fn start(config: &Config) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let env = Env::from_vars(
            [("HOME", ""), ("XDG_DATA_HOME", "data"), ("XDG_STATE_HOME", "state")]
                .map(|(name, sub)| (name, root.join(sub).into_os_string())),
        );
        let shutdown = CancellationToken::new();
        let daemon = Publisher::default();
        let daemon_path = dir.path().join("stt-daemon.sock");
        let bound = BoundSocket::bind(&daemon_path, "stt-daemon").unwrap();
        tokio::spawn(stt_bus::publish_server::serve(
            bound,
            daemon.clone(),
            Hello::new("stt-daemon"),
            shutdown.clone(),
        ));

        let settings = Settings::from_config(config, &env).unwrap();
        assert!(settings.session_file.starts_with(&root), "{:?}", settings.session_file);
        let control = dir.path().join("stt-assistant.sock");
        let socket = BoundSocket::bind(&control, "stt-assistant").unwrap();
        let assistant = tokio::spawn(serve(socket, daemon_path, settings, shutdown.clone()));
        // The assistant follows the daemon once it has subscribed.
        tokio::time::timeout(Duration::from_secs(30), async {
            while daemon.subscribers() == 0 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the assistant subscribes to the daemon");
        Self { _dir: dir, control, daemon, shutdown, assistant }
    }

    fn beat(&self, seq: u64) {
        self.daemon.publish(&heartbeat(seq));
    }

    /// Beats every second from now on, as the real daemon does (in virtual time: waits on
    /// the scripted model's real answers move the clock by whole seconds).
    fn keep_beating(&self) {
        let daemon = self.daemon.clone();
        tokio::spawn(async move {
            let mut seq = 0;
            loop {
                seq += 1;
                daemon.publish(&heartbeat(seq));
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
    }

    async fn status(&self) -> Status {
        match ask(&self.control, &Request::Status).await {
            AssistantEvent::Status(status) => status,
            other => panic!("not a status: {other:?}"),
        }
    }

    /// Waits (in virtual time, up to `within`) until `status` says `what`. Under the paused
    /// clock time moves only while every task waits on a timer, so the wait sleeps between
    /// looks: a loop of requests alone would hold the clock still.
    async fn until(&self, what: &str, within: Duration, holds: impl Fn(&Status) -> bool) -> Status {
        tokio::time::timeout(within, async {
            loop {
                let status = self.status().await;
                if holds(&status) {
                    return status;
                }
                // Virtual time: the clock moves only when the test lets it.
                tokio::time::sleep(POLL).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("status never said {what}"))
    }

    async fn stop(self) {
        self.shutdown.cancel();
        self.assistant.await.unwrap().unwrap();
    }
}

fn heartbeat(seq: u64) -> DaemonEvent {
    DaemonEvent::Heartbeat(DaemonHeartbeat {
        seq,
        uptime_s: seq as f64,
        backlog: 0,
        stt_healthy: true,
        audio: AudioState::Capturing,
        model: "ggml-tiny.en-q8_0.bin".into(),
    })
}

async fn ask(control: &Path, request: &Request) -> AssistantEvent {
    stt_bus::request(control, "test", request, Duration::from_secs(60)).await.unwrap().event
}

#[tokio::test(start_paused = true)]
async fn a_held_execute_waits_out_its_deadline_and_silence_from_the_daemon_makes_stt_unhealthy() {
    let mut config = Config::default();
    config.llm.enabled = false;
    config.memory.enabled = false;
    let served = Served::start(&config).await;
    served.beat(1);
    served.until("STT is healthy", Duration::from_secs(2), |s| s.stt_healthy).await;
    let armed = ask(&served.control, &Request::CommandStart).await;
    assert!(matches!(armed, AssistantEvent::Ack(_)), "{armed:?}");
    // Speech opens and never closes: a held execute waits its whole deadline, then is
    // refused with the reason.
    served.daemon.publish(&DaemonEvent::SpeechStart(SpeechStart { seg_id: 1, start: 0.0 }));
    tokio::time::timeout(Duration::from_secs(2), async {
        loop {
            let refused = ask(&served.control, &Request::CommandExecute { wait_ms: None }).await;
            if matches!(&refused, AssistantEvent::Error(e) if e.message.contains("still open")) {
                return;
            }
            tokio::time::sleep(POLL).await;
        }
    })
    .await
    .expect("the assistant hears the speech start");
    assert_eq!(served.status().await.mode, Mode::CommandArmed);
    let started = tokio::time::Instant::now();
    let held = ask(&served.control, &Request::CommandExecute { wait_ms: Some(2_500) }).await;
    let waited = started.elapsed();
    match held {
        AssistantEvent::Error(e) => {
            assert_eq!(e.code, ErrorCode::NotReady, "{e:?}");
            assert!(e.message.contains("speech is still open (segment 1)"), "{e:?}");
        }
        other => panic!("a held execute with speech open was answered {other:?}"),
    }
    assert!(waited >= Duration::from_millis(2_500), "answered after {waited:?} of its 2.5 s");
    // No heartbeat since the first, 2.5 s ago: past [assistant].stt_stale_after_ms (3 s by
    // default) STT reads unhealthy, saying why.
    let status =
        served.until("STT is unhealthy", Duration::from_secs(10), |s| !s.stt_healthy).await;
    assert!(status.stt_detail.contains("heartbeat"), "{status:?}");
    assert!(started.elapsed() >= Duration::from_millis(2_500), "{:?}", started.elapsed());
    // A heartbeat brings it back at once.
    served.beat(2);
    served.until("STT is healthy again", Duration::from_secs(2), |s| s.stt_healthy).await;
    served.stop().await;
}

/// A dream holds the model; someone starts speaking: the dream stops at once (the model is
/// free), is wanted again, and goes on only after the quiet a stopped dream waits for (30 s),
/// in virtual time.
#[tokio::test(start_paused = true)]
async fn speech_stops_a_dream_which_goes_on_after_the_quiet() {
    let server = LlmServer::start();
    let mut config = Config::default();
    config.llm.endpoint = server.url();
    config.llm.model = "scripted".into();
    // No timeout may fire while the scripted model answers in real time (see the top).
    config.llm.connect_timeout_s = 3600;
    config.llm.request_timeout_s = 3600;
    config.memory.embedding_model = PathBuf::new();
    config.memory.tree = false;
    // Dreams only when asked.
    config.memory.dream_idle_s = 0;
    let served = Served::start(&config).await;
    served.keep_beating();
    let long = Duration::from_secs(600);
    served.until("the model answers", long, |s| s.llm_reachable == Some(true)).await;

    // A command leaves a conversation for a dream to read.
    server.push(Script::Text("The lights are on.".into()));
    for request in [
        Request::CommandStart,
        Request::CommandEdit { text: "turn on the lights".into() },
        Request::CommandExecute { wait_ms: None },
    ] {
        let reply = ask(&served.control, &request).await;
        assert!(matches!(reply, AssistantEvent::Ack(_)), "{request:?}: {reply:?}");
    }
    served.until("the command is done", long, |s| s.mode == Mode::Idle && !s.inference_busy).await;
    assert_eq!(server.requests().len(), 1);

    // The dream's first request hangs: the dream holds the model.
    server.push(Script::Hang);
    let started = ask(&served.control, &Request::Memory(MemoryRequest::Dream)).await;
    match &started {
        AssistantEvent::MemoryOutput { text, .. } => assert!(text.contains("a dream started")),
        other => panic!("memory dream answered {other:?}"),
    }
    served.until("the dream holds the model", long, |s| s.inference_busy).await;
    stt_testkit::until("the dream's request", long, || server.requests().len() == 2).await;

    // Someone speaks (nobody armed a command): the dream gives the model back.
    served.daemon.publish(&DaemonEvent::SpeechStart(SpeechStart { seg_id: 1, start: 0.0 }));
    let stopped = tokio::time::Instant::now();
    served.until("the dream stopped", long, |s| !s.inference_busy).await;
    let stopped_after = stopped.elapsed();

    // It waits for the quiet: with the model free, nothing runs for a while…
    server.respond_with(|_| Script::Text("Nothing to keep.".into()));
    tokio::time::sleep(Duration::from_secs(20).saturating_sub(stopped_after)).await;
    assert_eq!(server.requests().len(), 2, "the stopped dream went on before the quiet");
    assert!(!served.status().await.inference_busy);
    // …then it goes on by itself.
    stt_testkit::until("the dream going on", long, || server.requests().len() >= 3).await;
    assert!(stopped.elapsed() >= Duration::from_secs(29), "went on after {:?}", stopped.elapsed());
    served.until("the resumed dream is over", long, |s| !s.inference_busy).await;
    let dreams =
        ask(&served.control, &Request::Memory(MemoryRequest::Dreams { limit: None })).await;
    match dreams {
        AssistantEvent::MemoryOutput { text, .. } => {
            // Newest first: the one that went on, then the one speech stopped.
            let dreams: Vec<&str> = text.lines().filter(|l| l.starts_with("dream ")).collect();
            assert_eq!(dreams.len(), 2, "{text}");
            assert!(dreams[0].contains("(asked, done)"), "{text}");
            assert!(dreams[1].contains("(asked, interrupted)"), "{text}");
        }
        other => panic!("memory dreams answered {other:?}"),
    }
    served.stop().await;
}
