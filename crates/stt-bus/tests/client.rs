//! The client side against real servers: one-shot requests and reconnecting subscriptions.

// Helpers outside #[test] fns are test code too (clippy.toml allows expect in tests).
#![allow(clippy::expect_used)]

mod common;

use std::fmt::Debug;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use common::{Assistant, DEADLINE, Daemon, heartbeat, wait_until};
use stt_bus::{Backoff, BusError, Link, Subscription, request};
use stt_proto::{AssistantEvent, DaemonEvent, ErrorCode, Message, Mode, Request};

fn temp_socket() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("stt-assistant.sock");
    (dir, path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_returns_the_direct_reply() {
    let (_dir, path) = temp_socket();
    let server = Assistant::start(&path, None);

    let reply = request(&path, "test-ctl", &Request::Status, DEADLINE).await.expect("status").event;
    let AssistantEvent::Status(status) = reply else { panic!("not a status: {reply:?}") };
    // The request's hello went first, so the handler knew the peer.
    assert!(status.llm_endpoint.ends_with("peer=test-ctl"), "{}", status.llm_endpoint);

    let reply =
        request(&path, "test-ctl", &Request::CommandStart, DEADLINE).await.expect("ack").event;
    assert!(
        matches!(&reply, AssistantEvent::Ack(ack) if ack.command == "command_start" && ack.ok),
        "{reply:?}"
    );

    // A refusal is a reply, not a failure of the connection.
    let name = Request::SpeakerName { speaker_id: "spk_0009".into(), name: "Bo".into() };
    let reply = request(&path, "test-ctl", &name, DEADLINE).await.expect("a reply").event;
    let AssistantEvent::Error(err) = reply else { panic!("not an error: {reply:?}") };
    assert_eq!(err.code, ErrorCode::UnknownSpeaker);
    assert!(err.message.contains("spk_0009"), "{err}");

    // Events published meanwhile never reach a connection that did not subscribe.
    server.publisher.publish(&AssistantEvent::Mode { mode: Mode::Chat });
    let reply = request(&path, "test-ctl", &Request::Status, DEADLINE).await.expect("status").event;
    assert!(matches!(reply, AssistantEvent::Status(_)), "{reply:?}");

    assert_eq!(server.handler.seen(), ["status", "command_start", "speaker_name", "status"]);
    server.stop().await;

    let err = request(&path, "test-ctl", &Request::Status, DEADLINE).await.expect_err("stopped");
    assert!(matches!(err, BusError::NotRunning { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_times_out_on_a_server_that_never_answers() {
    let (_dir, path) = temp_socket();
    // Listening, so the connection is made, but never accepting or answering.
    let _listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
    let timeout = Duration::from_millis(200);
    let err = request(&path, "test-ctl", &Request::Status, timeout).await.expect_err("a timeout");
    assert!(matches!(err, BusError::Timeout { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_stops_at_a_server_of_another_protocol_version() {
    let (_dir, path) = temp_socket();
    let listener = tokio::net::UnixListener::bind(&path).expect("bind");
    let server = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.expect("accept");
        let hello = b"{\"type\":\"hello\",\"protocol_version\":99,\"peer\":\"stt-assistant\",\"version\":\"9\"}\n";
        stream.write_all(hello).await.expect("write");
        stream
    });
    let err = request(&path, "test-ctl", &Request::Status, DEADLINE).await.expect_err("mismatch");
    let BusError::Protocol(msg) = &err else { panic!("not a protocol error: {err}") };
    assert_eq!(msg.code, ErrorCode::VersionMismatch, "{err}");
    assert!(msg.message.contains("test-ctl is older than stt-assistant"), "{err}");
    drop(server.await);
}

/// A subscription driven in a task of its own, so a test can wait on what it says with a
/// deadline and also check that it says nothing.
struct Links<M> {
    rx: mpsc::UnboundedReceiver<Link<M>>,
    task: JoinHandle<()>,
    seen: Vec<String>,
}

impl<M: Message + Debug + Send + 'static> Links<M> {
    fn drive(mut sub: Subscription<M>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            loop {
                let link = sub.next().await;
                if tx.send(link).is_err() {
                    break;
                }
            }
        });
        Self { rx, task, seen: Vec::new() }
    }

    async fn next(&mut self) -> Link<M> {
        match tokio::time::timeout(DEADLINE, self.rx.recv()).await {
            Ok(Some(link)) => {
                self.seen.push(format!("{link:?}"));
                link
            }
            Ok(None) => panic!("the subscription task ended; seen so far: {:#?}", self.seen),
            Err(_) => panic!("nothing on the link for {DEADLINE:?}; seen so far: {:#?}", self.seen),
        }
    }

    /// The next event, skipping the `ack` of the subscription's own `subscribe`.
    async fn event(&mut self) -> M {
        loop {
            match self.next().await {
                Link::Event(event) => {
                    let any: &dyn std::any::Any = &event;
                    if let Some(AssistantEvent::Ack(ack)) = any.downcast_ref::<AssistantEvent>()
                        && ack.command == "subscribe"
                    {
                        continue;
                    }
                    return event;
                }
                other => panic!("expected an event, got {other:?}; seen: {:#?}", self.seen),
            }
        }
    }

    async fn down(&mut self) -> String {
        match self.next().await {
            Link::Down(why) => why,
            other => panic!("expected Down, got {other:?}; seen: {:#?}", self.seen),
        }
    }

    async fn up(&mut self) -> stt_proto::Hello {
        match self.next().await {
            Link::Up(hello) => hello,
            other => panic!("expected Up, got {other:?}; seen: {:#?}", self.seen),
        }
    }

    /// While the other side stays down, several retries pass without a second `Down`.
    async fn stays_quiet_while_retrying(&mut self) {
        // Not needed for correctness: lets the 10–100 ms backoff retry a few times.
        tokio::time::sleep(Duration::from_millis(300)).await;
        if let Ok(link) = self.rx.try_recv() {
            panic!("said {link:?} again during one outage; seen: {:#?}", self.seen);
        }
    }
}

impl<M> Drop for Links<M> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn fast_backoff() -> Backoff {
    Backoff::new(Duration::from_millis(10), Duration::from_millis(100))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_assistant_subscription_follows_the_server_down_and_up_again() {
    let (_dir, path) = temp_socket();
    let mut links =
        Links::drive(Subscription::assistant(&path, "test-tui", true).with_backoff(fast_backoff()));

    let why = links.down().await;
    assert!(why.contains("stt-assistant is not running"), "{why}");
    links.stays_quiet_while_retrying().await;

    for life in 0..2u64 {
        let server = Assistant::start(&path, None);
        let hello = links.up().await;
        assert_eq!(hello.peer, "stt-assistant");
        // Subscribed (as a viewer) once the server has taken the `subscribe`.
        wait_until("the subscription counts as a viewer", || server.viewers() == 1).await;
        let events = [
            AssistantEvent::Mode { mode: Mode::CommandArmed },
            AssistantEvent::CommandText { text: format!("life {life}"), edited: false },
            AssistantEvent::Mode { mode: Mode::Idle },
        ];
        for event in &events {
            assert_eq!(server.publisher.publish(event), 1);
        }
        for event in &events {
            assert_eq!(&links.event().await, event);
        }

        server.stop().await;
        let why = links.down().await;
        assert!(why.contains("closed the connection"), "{why}");
        links.stays_quiet_while_retrying().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_subscription_follows_the_daemon_and_skips_unknown_types() {
    let mut dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("stt-daemon.sock");
    let mut links = Links::drive(Subscription::daemon(&path, "test").with_backoff(fast_backoff()));

    let why = links.down().await;
    assert!(why.contains("stt-daemon is not running"), "{why}");
    links.stays_quiet_while_retrying().await;

    for life in 0..2u64 {
        let daemon = Daemon::start_in(dir, 64);
        assert_eq!(daemon.path, path);
        assert_eq!(links.up().await.peer, "stt-daemon");
        wait_until("the subscription is attached", || daemon.publisher.subscribers() == 1).await;
        daemon.publisher.publish(&heartbeat(life * 10, 100));
        // Messages from a newer daemon are skipped, not fatal: a type this build does not
        // know, and a known type whose fields it cannot read (twice: one warning).
        daemon.publisher.publish_line(Bytes::from_static(b"{\"type\":\"hologram\",\"x\":1}\n"));
        for _ in 0..2 {
            daemon.publisher.publish_line(Bytes::from_static(
                b"{\"type\":\"speech_start\",\"seg_id\":\"seven\",\"start\":1.0}\n",
            ));
        }
        // A display-only value this build does not know reads as `unknown`.
        daemon.publisher.publish_line(Bytes::from(format!(
            "{{\"type\":\"heartbeat\",\"seq\":{},\"uptime_s\":1.0,\"backlog\":0,\
             \"stt_healthy\":true,\"audio\":\"muted\",\"model\":\"m\"}}\n",
            life * 10 + 1
        )));
        daemon.publisher.publish(&heartbeat(life * 10 + 2, 100));
        for seq in [life * 10, life * 10 + 1, life * 10 + 2] {
            match links.event().await {
                DaemonEvent::Heartbeat(hb) => assert_eq!(hb.seq, seq),
                other => panic!("expected heartbeat {seq}, got {other:?}"),
            }
        }
        dir = daemon.stop().await;
        let why = links.down().await;
        assert!(why.contains("stt-daemon closed the connection"), "{why}");
        links.stays_quiet_while_retrying().await;
    }
}
