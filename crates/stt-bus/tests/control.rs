//! The assistant's control socket spoken to in raw NDJSON over a real Unix socket.

// Helpers outside #[test] fns are test code too (clippy.toml allows expect in tests).
#![allow(clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use tokio::time::Instant;

use common::{Assistant, Raw, STATUS, wait_until, within};
use stt_bus::Publisher;
use stt_proto::{AssistantEvent, AssistantHeartbeat, Mode};

fn temp_socket() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("stt-assistant.sock");
    (dir, path)
}

/// Connects and reads the server's hello, which must come first.
async fn connect(server: &Assistant) -> Raw {
    let mut client = Raw::connect(&server.path).await;
    client.expect_hello("stt-assistant").await;
    client
}

/// Sends `status` and expects its reply next; returns the reply's echo of the connection.
async fn status(client: &mut Raw) -> String {
    client.send(STATUS).await;
    let reply = client.expect_type("status").await;
    reply["llm_endpoint"].as_str().expect("the test handler's echo").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_line_gets_its_error_and_the_connection_stays_usable() {
    let (_dir, path) = temp_socket();
    let server = Assistant::start(&path, None);
    let mut client = connect(&server).await;

    // Before any hello of ours the handler sees no peer; after it, it does.
    assert!(status(&mut client).await.ends_with("peer=-"));
    client.send(b"{\"type\":\"hello\",\"protocol_version\":3,\"peer\":\"raw-test\",\"version\":\"0\"}\n").await;
    let ack = client.expect_type("ack").await;
    assert_eq!((ack["command"].as_str(), ack["ok"].as_bool()), (Some("hello"), Some(true)));
    assert!(status(&mut client).await.ends_with("peer=raw-test"));

    let cases: &[(&[u8], &str)] = &[
        (b"{\n", "bad_json"),
        (b"not json at all\n", "bad_json"),
        (b"{\"type\":\"status\xff\"}\n", "bad_json"),
        (b"\xc3\x28\xa0\xa1\n", "bad_json"),
        (b"{\"type\":\"fly\"}\n", "unknown_type"),
        (b"{\"type\":\"command_edit\"}\n", "bad_message"),
        (b"{\"type\":\"command_edit\",\"text\":3}\n", "bad_message"),
        (b"[1,2]\n", "bad_message"),
        (b"{}\n", "bad_message"),
        (b"{\"type\":5}\n", "bad_message"),
    ];
    for (line, code) in cases {
        client.send(line).await;
        let message = client.expect_error(code).await;
        assert!(!message.is_empty());
        status(&mut client).await;
    }
    let message = {
        client.send(b"{\"type\":\"fly\"}\n").await;
        client.expect_error("unknown_type").await
    };
    assert!(message.contains("'fly'") && message.contains("status"), "{message}");

    // The handler's own replies: an ack, and an error that echoes the request.
    client.send(b"{\"type\":\"command_start\"}\n").await;
    assert_eq!(client.expect_type("ack").await["command"], "command_start");
    client
        .send(b"{\"type\":\"speaker_name\",\"speaker_id\":\"spk_0042\",\"name\":\"Ann\"}\n")
        .await;
    let message = client.expect_error("unknown_speaker").await;
    assert!(message.contains("spk_0042") && message.contains("Ann"), "{message}");
    status(&mut client).await;

    // Only good requests other than hello and subscribe reached the handler.
    let seen = server.handler.seen();
    let statuses = seen.iter().filter(|k| *k == "status").count();
    assert_eq!(statuses, 2 + cases.len() + 1, "{seen:?}");
    assert!(seen.iter().all(|k| ["status", "command_start", "speaker_name"].contains(&k.as_str())));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_lines_get_exactly_one_reply_each_in_order() {
    let (_dir, path) = temp_socket();
    let server = Assistant::start(&path, None);
    let mut client = connect(&server).await;

    // (line, the reply's type, and its code or command)
    let script: &[(&str, &str, &str)] = &[
        (
            "{\"type\":\"hello\",\"protocol_version\":3,\"peer\":\"pipe\",\"version\":\"0\"}",
            "ack",
            "hello",
        ),
        ("{\"type\":\"status\"}", "status", ""),
        ("{\"type\":\"command_start\"}", "ack", "command_start"),
        ("{", "error", "bad_json"),
        ("{\"type\":\"status\"}", "status", ""),
        ("{\"type\":\"fly\"}", "error", "unknown_type"),
        ("{\"type\":\"command_edit\"}", "error", "bad_message"),
        ("{\"type\":\"command_edit\",\"text\":\"hi\"}", "ack", "command_edit"),
        (
            "{\"type\":\"speaker_name\",\"speaker_id\":\"x\",\"name\":\"y\"}",
            "error",
            "unknown_speaker",
        ),
        ("{\"type\":\"subscribe\"}", "ack", "subscribe"),
        ("{\"type\":\"clear\"}", "error", "not_implemented"),
        ("{\"type\":\"status\",\"from_the_future\":[1,2]}\r", "status", ""),
        ("   ", "", ""), // blank: ignored, no reply
        ("", "", ""),    // empty: ignored, no reply
        ("{\"type\":\"command_start\"}", "ack", "command_start"),
    ];
    let mut bytes = Vec::new();
    for _ in 0..20 {
        for (line, _, _) in script {
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
        }
    }
    bytes.extend_from_slice(STATUS); // the sentinel: nothing may come between
    client.send(&bytes).await;
    for round in 0..20 {
        for (line, kind, detail) in script.iter().filter(|(_, kind, _)| !kind.is_empty()) {
            let reply = client.json().await;
            assert_eq!(reply["type"], *kind, "round {round}, reply to {line}: {reply}");
            match *kind {
                "ack" => assert_eq!(reply["command"], *detail, "{reply}"),
                "error" => assert_eq!(reply["code"], *detail, "{reply}"),
                _ => {}
            }
        }
    }
    assert!(client.expect_type("status").await["llm_endpoint"].as_str().is_some());
    server.stop().await;
    // Nothing was left over after the sentinel.
    client.expect_eof().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_over_the_default_1_mib_limit_is_too_long_and_costs_nothing_else() {
    let (_dir, path) = temp_socket();
    let server = Assistant::start(&path, None);
    let mut client = connect(&server).await;
    let limit = stt_proto::MAX_LINE_BYTES;
    assert_eq!(limit, 1 << 20);

    // A command_edit of exactly `len` bytes, without its newline.
    let edit = |len: usize| {
        let frame = "{\"type\":\"command_edit\",\"text\":\"\"}".len();
        format!("{{\"type\":\"command_edit\",\"text\":\"{}\"}}", "a".repeat(len - frame))
            .into_bytes()
    };

    let mut two_mib = edit(2 << 20);
    two_mib.push(b'\n');
    client.send(&two_mib).await;
    let message = client.expect_error("too_long").await;
    assert!(message.contains("a line of 2097152 bytes"), "{message}");
    assert!(message.contains("1048576-byte limit"), "{message}");
    status(&mut client).await;

    // Exactly at the limit is fine, with `\n` or `\r\n`; one byte over is not.
    for (len, ending, reply) in
        [(limit, &b"\n"[..], "ack"), (limit, &b"\r\n"[..], "ack"), (limit + 1, &b"\n"[..], "error")]
    {
        let mut line = edit(len);
        line.extend_from_slice(ending);
        client.send(&line).await;
        let value = client.expect_type(reply).await;
        if reply == "error" {
            assert_eq!(value["code"], "too_long", "{value}");
        }
        status(&mut client).await;
    }
    let seen = server.handler.seen();
    let edits: Vec<_> = seen.iter().filter(|k| k.starts_with("command_edit")).collect();
    let text_len = limit - "{\"type\":\"command_edit\",\"text\":\"\"}".len();
    assert_eq!(edits, [&format!("command_edit:{text_len}"), &format!("command_edit:{text_len}")]);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_smaller_line_limit_is_honoured() {
    let (_dir, path) = temp_socket();
    let server = Assistant::start(&path, Some(64));
    let mut client = connect(&server).await;
    let padded = |len: usize| {
        // `{"type":"status","p":"…"}` of exactly `len` bytes.
        let frame = "{\"type\":\"status\",\"p\":\"\"}".len();
        let mut line =
            format!("{{\"type\":\"status\",\"p\":\"{}\"}}", "x".repeat(len - frame)).into_bytes();
        line.push(b'\n');
        line
    };
    client.send(&padded(64)).await;
    client.expect_type("status").await;
    client.send(&padded(65)).await;
    let message = client.expect_error("too_long").await;
    assert!(message.contains("65 bytes") && message.contains("64-byte"), "{message}");
    // Over-long lines split across many writes are discarded as they arrive.
    for chunk in padded(100_000).chunks(4096) {
        client.send(chunk).await;
    }
    client.expect_error("too_long").await;
    status(&mut client).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hello_of_another_version_gets_version_mismatch_and_the_connection_closes() {
    let (_dir, path) = temp_socket();
    let server = Assistant::start(&path, None);

    for (theirs, older) in
        [(99, "stt-assistant is older than future-ctl"), (0, "future-ctl is older")]
    {
        let mut client = connect(&server).await;
        let hello = format!(
            "{{\"type\":\"hello\",\"protocol_version\":{theirs},\"peer\":\"future-ctl\",\"version\":\"9.0.0\"}}\n"
        );
        client.send(hello.as_bytes()).await;
        let message = client.expect_error("version_mismatch").await;
        for needle in [
            &format!("v{theirs}") as &str,
            &format!("v{}", stt_proto::PROTOCOL_VERSION),
            older,
            "install both from the same build",
            "stt-daemon up",
        ] {
            assert!(message.contains(needle), "{message:?} lacks {needle:?}");
        }
        client.expect_eof().await;
    }
    assert!(server.handler.seen().is_empty());

    // The server itself carries on.
    let mut client = connect(&server).await;
    status(&mut client).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_subscribed_connection_a_reply_names_its_request_and_an_event_does_not() {
    let (_dir, path) = temp_socket();
    let server = Assistant::start(&path, None);
    let mut client = connect(&server).await;
    client.send(b"{\"type\":\"subscribe\",\"viewer\":true,\"id\":1}\n").await;
    let ack = client.expect_type("ack").await;
    assert_eq!(
        (ack["command"].as_str(), ack["in_reply_to"].as_u64()),
        (Some("subscribe"), Some(1))
    );

    // An error published for everyone, and the error that answers this client's request: they
    // may come in either order, and only the reply names the request.
    let broadcast = stt_proto::ErrorMsg::new(stt_proto::ErrorCode::LlmError, "the model is gone");
    server.publisher.publish(&AssistantEvent::Error(broadcast));
    client.send(b"{\"type\":\"fly\",\"id\":\"req-7\"}\n").await;
    let mut errors = [client.expect_type("error").await, client.expect_type("error").await];
    errors.sort_by_key(|e| e["code"].as_str().map(str::to_owned));
    let [event, reply] = errors;
    assert_eq!(event["code"], "llm_error");
    assert!(event.get("in_reply_to").is_none(), "{event}");
    assert_eq!(reply["code"], "unknown_type");
    assert_eq!(reply["in_reply_to"], "req-7");
    // The handler's own replies carry it too; a request without an id gets none.
    client.send(b"{\"type\":\"command_start\",\"id\":2}\n").await;
    assert_eq!(client.expect_type("ack").await["in_reply_to"], 2);
    client.send(b"{\"type\":\"command_start\"}\n").await;
    assert!(client.expect_type("ack").await.get("in_reply_to").is_none());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribers_get_an_ack_then_events_and_viewers_are_counted() {
    let (_dir, path) = temp_socket();
    let server = Assistant::start(&path, None);

    let mut viewer = connect(&server).await;
    viewer.send(b"{\"type\":\"subscribe\",\"viewer\":true}\n").await;
    assert_eq!(viewer.expect_type("ack").await["command"], "subscribe");
    assert_eq!(server.viewers(), 1);
    // Subscribing again changes nothing.
    viewer.send(b"{\"type\":\"subscribe\",\"viewer\":true}\n").await;
    viewer.expect_type("ack").await;
    assert_eq!(server.viewers(), 1);

    let mut watcher = connect(&server).await;
    watcher.send(b"{\"type\":\"subscribe\"}\n").await;
    watcher.expect_type("ack").await;
    assert_eq!(server.viewers(), 1, "a subscriber without viewer:true counted as a viewer");

    // A connection that never subscribed gets replies only.
    let mut oneshot = connect(&server).await;
    assert_eq!(server.publisher.subscribers(), 2);

    let events = [
        AssistantEvent::Mode { mode: Mode::CommandArmed },
        AssistantEvent::CommandText { text: "what time is it".into(), edited: false },
        AssistantEvent::Heartbeat(AssistantHeartbeat {
            seq: 1,
            mode: Mode::CommandArmed,
            stt_healthy: true,
            daemon_backlog: 0,
            inference_queue: 0,
            inference_busy: false,
            stt_remote: None,
            wake: None,
            speaking: false,
        }),
    ];
    for event in &events {
        assert_eq!(server.publisher.publish(event), 2);
    }
    for client in [&mut viewer, &mut watcher] {
        for event in &events {
            let line = client.line().await.expect("an event");
            assert_eq!(stt_proto::parse::<AssistantEvent>(&line).as_ref(), Ok(event));
        }
        // Requests still get their replies on a subscribed connection.
        status(client).await;
    }
    status(&mut oneshot).await;

    drop(viewer);
    wait_until("the viewer is uncounted", || server.viewers() == 0).await;
    wait_until("the viewer is unsubscribed", || server.publisher.subscribers() == 1).await;
    drop(watcher);
    wait_until("the watcher is unsubscribed", || server.publisher.subscribers() == 0).await;
    assert_eq!(server.viewers(), 0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_socket_is_private_and_removed_at_shutdown_even_with_a_stalled_subscriber() {
    let (_dir, path) = temp_socket();
    let server = Assistant::start_with(&path, None, Publisher::new(64));
    let mode = std::fs::metadata(&path).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "socket mode {mode:o}");

    let mut idle = connect(&server).await;
    // A subscriber that stops reading, with far more queued for it than its socket holds.
    let mut stalled = connect(&server).await;
    stalled.send(b"{\"type\":\"subscribe\",\"viewer\":true}\n").await;
    stalled.expect_type("ack").await;
    let big = AssistantEvent::CommandText { text: "x".repeat(64 << 10), edited: false };
    for _ in 0..64 {
        server.publisher.publish(&big);
    }
    // The server has started writing to it (4 MiB, far more than its socket buffers hold).
    stalled.expect_type("command_text").await;
    // Not needed for correctness: only gives the server time to get stuck in that write,
    // so that shutdown has to cut it short.
    tokio::time::sleep(Duration::from_millis(100)).await;
    status(&mut idle).await;

    let started = Instant::now();
    server.shutdown.cancel();
    within("serve to return", server.task).await.expect("serve");
    let took = started.elapsed();
    assert!(!path.exists(), "the socket file outlived the server");
    assert!(took < Duration::from_secs(3), "shutdown waited {took:?} on a stalled subscriber");
    idle.expect_eof().await;
    assert_eq!(server.viewers.load(std::sync::atomic::Ordering::SeqCst), 0);
}
