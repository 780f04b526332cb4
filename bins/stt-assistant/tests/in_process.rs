//! The assistant's loop served in this process ([`stt_assistant::serve`]) under tokio's
//! paused clock: the rules that depend on time (a held `command_execute` and its deadline, a
//! daemon whose heartbeats stop) are checked in virtual time, so a test of seconds of waiting
//! takes none. The daemon is a real publish-only socket served here; requests go over the
//! real control socket.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use stt_assistant::{Settings, serve};
use stt_bus::{BoundSocket, Publisher};
use stt_proto::{
    AssistantEvent, AudioState, DaemonEvent, DaemonHeartbeat, ErrorCode, Hello, Mode, Request,
    SpeechStart, Status,
};
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
    async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
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

        let mut config = stt_config::Config::default();
        config.llm.enabled = false;
        let mut settings = Settings::from_config(&config).unwrap();
        settings.names_file = dir.path().join("speaker-names.json");
        settings.edits_file = dir.path().join("speaker-edits.json");
        settings.audit_dir = None;
        // Memory would open the user's own database: these rules do not need it.
        settings.memory = None;
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
        self.daemon.publish(&DaemonEvent::Heartbeat(DaemonHeartbeat {
            seq,
            uptime_s: seq as f64,
            backlog: 0,
            stt_healthy: true,
            audio: AudioState::Capturing,
            model: "ggml-tiny.en-q8_0.bin".into(),
        }));
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

async fn ask(control: &Path, request: &Request) -> AssistantEvent {
    stt_bus::request(control, "test", request, Duration::from_secs(60)).await.unwrap().event
}

#[tokio::test(start_paused = true)]
async fn a_held_execute_waits_out_its_deadline_and_silence_from_the_daemon_makes_stt_unhealthy() {
    let served = Served::start().await;
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
