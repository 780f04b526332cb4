//! The bus between separate processes. The parent tests re-run this test binary with
//! `--exact child_…` and an environment variable, which turns the matching `child_…` test
//! into a subscriber (or a socket owner) in a process of its own; without the variable
//! those tests return at once.

// Helpers outside #[test] fns are test code too (clippy.toml allows expect in tests).
#![allow(clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use tokio::time::Instant;

use common::{Daemon, Raw, wait_until, within};
use stt_bus::{BoundSocket, BusError};
use stt_proto::{DaemonEvent, SegmentDone};

const SOCKET_ENV: &str = "STT_BUS_CHILD_SOCKET";
const COUNT_ENV: &str = "STT_BUS_CHILD_COUNT";
const HOLD_ENV: &str = "STT_BUS_CHILD_HOLD";

/// Child: subscribes to the daemon socket in `$STT_BUS_CHILD_SOCKET`, reads
/// `$STT_BUS_CHILD_COUNT` segment_done events and checks their order.
#[test]
#[ignore = "half of a test: its parent runs it in a child process"]
fn child_subscriber() {
    let Some(path) = std::env::var_os(SOCKET_ENV) else { return };
    let count: u64 = std::env::var(COUNT_ENV).expect("count").parse().expect("a number");
    let stream = std::os::unix::net::UnixStream::connect(&path).expect("connect");
    // Never hang forever if the parent is gone.
    stream.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    let mut next_line = |what: &str| -> Vec<u8> {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).expect("read");
        assert!(n > 0, "EOF before {what}");
        line.pop();
        line.clone()
    };
    match stt_proto::parse::<DaemonEvent>(&next_line("the hello")) {
        Ok(DaemonEvent::Hello(hello)) => assert_eq!(hello.peer, "stt-daemon"),
        other => panic!("expected the hello first, got {other:?}"),
    }
    for n in 0..count {
        match stt_proto::parse::<DaemonEvent>(&next_line("the last event")) {
            Ok(DaemonEvent::SegmentDone(done)) => assert_eq!(done.seg_id, n, "out of order"),
            other => panic!("event {n}: expected segment_done, got {other:?}"),
        }
    }
    println!("\nCHILD_OK {count}");
}

/// Child: binds the socket in `$STT_BUS_CHILD_HOLD` and holds it until stdin closes (or it
/// is killed), or reports why it could not.
#[tokio::test]
#[ignore = "half of a test: its parent runs it in a child process"]
async fn child_holder() {
    let Some(path) = std::env::var_os(HOLD_ENV) else { return };
    match BoundSocket::bind(std::path::Path::new(&path), "stt-daemon") {
        Ok(socket) => {
            println!("\nCHILD_BOUND");
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
            drop(socket);
        }
        Err(BusError::AlreadyRunning { .. }) => println!("\nCHILD_ALREADY_RUNNING"),
        Err(e) => println!("\nCHILD_BIND_ERROR {e}"),
    }
}

/// This test binary, re-run as the child test `test`.
fn child(test: &str) -> Command {
    let mut command = Command::new(std::env::current_exe().expect("the test binary"));
    command
        .args(["--exact", test, "--ignored", "--nocapture", "--test-threads=1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Children that are killed if the test fails before they exit.
struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for child in &mut self.0 {
            if matches!(child.try_wait(), Ok(None)) {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// Everything a child wrote, once it exited.
fn output_of(child: &mut Child) -> String {
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out);
    }
    if let Some(mut stderr) = child.stderr.take() {
        let _ = stderr.read_to_string(&mut out);
    }
    out
}

/// Reads a child's stdout until a line that starts with `CHILD_`; returns that line.
async fn child_says(stdout: ChildStdout) -> (String, BufReader<ChildStdout>) {
    let read = tokio::task::spawn_blocking(move || {
        let mut reader = BufReader::new(stdout);
        let mut seen = String::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).expect("read the child's stdout") == 0 {
                panic!("the child ended without a CHILD_ line; it wrote:\n{seen}");
            }
            if line.starts_with("CHILD_") {
                return (line.trim().to_owned(), reader);
            }
            seen.push_str(&line);
        }
    });
    within("the child to report", read).await.expect("the child's reader")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_reach_subscribers_in_other_processes() {
    const CHILDREN: usize = 3;
    const EVENTS: u64 = 1000;
    let daemon = Daemon::start(EVENTS as usize + 64);
    let mut children = Children(Vec::new());
    for _ in 0..CHILDREN {
        let spawned = child("child_subscriber")
            .env(SOCKET_ENV, &daemon.path)
            .env(COUNT_ENV, EVENTS.to_string())
            .spawn()
            .expect("spawn a child subscriber");
        children.0.push(spawned);
    }

    wait_until("all children subscribed", || daemon.publisher.subscribers() == CHILDREN).await;
    for seg_id in 0..EVENTS {
        let reached = daemon.publisher.publish(&DaemonEvent::SegmentDone(SegmentDone { seg_id }));
        assert_eq!(reached, CHILDREN, "event {seg_id}");
    }

    let deadline = Instant::now() + common::DEADLINE;
    for (i, child) in children.0.iter_mut().enumerate() {
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for a child") {
                break status;
            }
            assert!(Instant::now() < deadline, "child {i} did not finish in time");
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        let output = output_of(child);
        assert!(status.success(), "child {i} failed ({status}):\n{output}");
        let expected = format!("CHILD_OK {EVENTS}");
        assert!(
            output.lines().any(|line| line.trim() == expected),
            "child {i} did not say {expected:?}:\n{output}"
        );
    }
    // A closed peer is noticed when a write to it fails (a half-closed one may still be
    // reading), so keep publishing, as the daemon's heartbeat does, until all are detached.
    wait_until("the children are detached", || {
        daemon.publisher.publish(&stt_proto::DaemonEvent::SegmentDone(stt_proto::SegmentDone {
            seg_id: u64::MAX,
        }));
        daemon.publisher.subscribers() == 0
    })
    .await;
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_process_owns_the_socket_and_a_killed_owners_socket_is_replaced() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("stt-daemon.sock");

    // Another process owns the path.
    let mut owner =
        child("child_holder").env(HOLD_ENV, &path).stdin(Stdio::piped()).spawn().expect("spawn");
    let stdout = owner.stdout.take().expect("stdout");
    let mut children = Children(vec![owner]);
    let (said, _rest) = child_says(stdout).await;
    assert_eq!(said, "CHILD_BOUND");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&path).expect("the child's socket").permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
    let err = BoundSocket::bind(&path, "stt-daemon").expect_err("the path is taken");
    assert!(matches!(err, BusError::AlreadyRunning { .. }), "{err}");

    // It crashes: its socket file stays behind, stale, and the next owner replaces it.
    let mut owner = children.0.pop().expect("the owner");
    owner.kill().expect("kill the owner");
    owner.wait().expect("reap the owner");
    assert!(path.exists(), "a killed process cannot remove its socket file");
    let daemon = Daemon::start_in(dir, 16);
    let mut client = Raw::connect(&daemon.path).await;
    client.expect_hello("stt-daemon").await;

    // And now a third process is refused.
    let mut third = child("child_holder").env(HOLD_ENV, &path).spawn().expect("spawn");
    let stdout = third.stdout.take().expect("stdout");
    children.0.push(third);
    let (said, _rest) = child_says(stdout).await;
    assert_eq!(said, "CHILD_ALREADY_RUNNING");

    daemon.stop().await;
    client.expect_eof().await;
    assert!(!path.exists());
}
