//! `stt-ctl` as scripts and hotkeys use it: the real binary against a real control socket
//! served by a test server that records what it receives.

// Test helpers outside #[test] functions may panic: a panic is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use stt_proto::{Mode, Request, Status, TimerInfo};
use stt_testkit::fake::{FakeAssistant, Served};
use stt_testkit::{Output, Sandbox, msg};

/// Where the fake roster says spk_0002's sample is, under the data directory.
const SAMPLE: &str = "speakers/spk_0002.wav";

/// A fake assistant with an armed command, a timer, one named speaker and one with a
/// sample, served on the sandbox's control socket.
struct TestServer {
    sandbox: Sandbox,
    served: Served<FakeAssistant>,
}

impl TestServer {
    fn start() -> Self {
        let sandbox = Sandbox::new();
        let status = Status {
            mode: Mode::CommandArmed,
            llm_endpoint: "http://localhost:9931/v1/chat/completions".into(),
            inference_queue: 2,
            inference_busy: true,
            command_buffer: "turn on the lights".into(),
            command_edited: true,
            timers: vec![TimerInfo {
                id: 1_764_581_534_000_001,
                label: "tea".into(),
                remaining_s: 42.4,
            }],
            ..msg::status()
        };
        // spk_0002 has a sample, where the daemon would keep it (relative to the data dir).
        let sample = stt_proto::Speaker {
            sample_path: Some(SAMPLE.into()),
            ..msg::speaker("spk_0002", None)
        };
        let wav = sandbox.root().join("data/stt").join(SAMPLE);
        std::fs::create_dir_all(wav.parent().unwrap()).unwrap();
        std::fs::write(&wav, b"RIFF").unwrap();
        let roster = msg::roster(vec![msg::speaker("spk_0001", Some("Efren")), sample]);
        let served = Served::start(&sandbox.assistant_socket(), FakeAssistant::new(status, roster));
        Self { sandbox, served }
    }

    fn ctl(&self, args: &[&str]) -> Output {
        self.sandbox.run("stt-ctl", args)
    }

    fn take_seen(&self) -> Vec<Request> {
        self.served.handler.take_seen()
    }
}

#[track_caller]
fn check(server: &TestServer, args: &[&str], request: Request, stdout_has: &str) {
    let out = server.ctl(args);
    assert_eq!(out.code, Some(0), "{args:?}: {out:?}");
    assert!(
        out.stdout.contains(stdout_has),
        "{args:?}: stdout {:?} lacks {stdout_has:?}",
        out.stdout
    );
    assert_eq!(server.take_seen(), vec![request], "{args:?} must send exactly one message");
}

#[test]
fn every_verb_sends_its_message_and_prints_the_reply() {
    let s = TestServer::start();
    check(&s, &["command-start"], Request::CommandStart, "armed");
    check(&s, &["command-execute"], Request::CommandExecute { wait_ms: None }, "executing");
    check(&s, &["command-cancel"], Request::CommandCancel, "cancelled");
    check(
        &s,
        &["command-edit", "--text", "turn on the lights"],
        Request::CommandEdit { text: "turn on the lights".into() },
        "replaced",
    );
    check(&s, &["chat-toggle"], Request::ChatToggle, "chat");
    check(&s, &["clear"], Request::Clear, "cleared");
    check(&s, &["voice-toggle"], Request::VoiceToggle, "voice on");
    check(&s, &["status"], Request::Status, "\"turn on the lights\" (edited)");
    check(&s, &["speaker-list"], Request::SpeakerList, "spk_0001  Efren");
    check(
        &s,
        &["speaker-name", "spk_0001", "Efren"],
        Request::SpeakerName { speaker_id: "spk_0001".into(), name: "Efren".into() },
        "named",
    );
    check(
        &s,
        &["speaker-forget", "spk_0002"],
        Request::SpeakerForget { speaker_id: "spk_0002".into() },
        "spk_0002 forgotten",
    );
    check(&s, &["confirm"], Request::Confirm { call_id: None }, "confirmed");
    check(
        &s,
        &["deny", "--call-id", "call_3"],
        Request::Deny { call_id: Some("call_3".into()) },
        "denied",
    );
    check(
        &s,
        &["timer-cancel", "1764581534000001"],
        Request::TimerCancel { timer_id: 1_764_581_534_000_001 },
        "timer cancelled",
    );
}

#[test]
fn status_for_a_person_shows_every_field() {
    let s = TestServer::start();
    let out = s.ctl(&["status"]);
    for needle in [
        "mode:       command_armed",
        "stt:        healthy",
        "llm:        llamacpp · http://localhost:9931/v1/chat/completions (answering)",
        "inference:  2 queued, busy",
        "viewers:    1",
        "timer:      tea in 42 s (id 1764581534000001)",
        "voice:      off",
    ] {
        assert!(out.stdout.contains(needle), "{:?} lacks {needle:?}", out.stdout);
    }
}

#[test]
fn json_prints_the_raw_reply_line() {
    let s = TestServer::start();
    let out = s.ctl(&["--json", "command-start"]);
    assert_eq!(out.code, Some(0));
    assert_eq!(out.stdout, "{\"type\":\"ack\",\"command\":\"command_start\",\"ok\":true}\n");
    let out = s.ctl(&["status", "--json"]);
    let value: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(value["type"], "status");
    assert_eq!(value["command_buffer"], "turn on the lights");
}

#[test]
fn an_error_reply_exits_1_with_the_assistants_message() {
    let s = TestServer::start();
    let out = s.ctl(&["speaker-name", "spk_9999", "Nobody"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert_eq!(out.stdout, "");
    assert!(out.stderr.contains("no speaker 'spk_9999'"), "{}", out.stderr);
    assert!(out.stderr.contains("(unknown_speaker)"), "{}", out.stderr);
    // With --json the error line goes to stdout, for scripts, and the status is still 1.
    let out = s.ctl(&["--json", "speaker-name", "spk_9999", "Nobody"]);
    assert_eq!(out.code, Some(1));
    assert!(out.stdout.starts_with("{\"type\":\"error\",\"code\":\"unknown_speaker\""));
}

#[test]
fn usage_errors_exit_2_and_send_nothing() {
    let s = TestServer::start();
    for args in [&["fly"][..], &["command-edit"], &["speaker-name", "spk_0001"], &[]] {
        let out = s.ctl(args);
        assert_eq!(out.code, Some(2), "{args:?}: {out:?}");
        assert!(!out.stderr.is_empty(), "{args:?} must explain itself");
    }
    assert_eq!(s.take_seen(), vec![]);
}

#[test]
fn nothing_listening_exits_3_and_says_how_to_start_it() {
    let sandbox = Sandbox::new();
    let out = sandbox.run("stt-ctl", &["status"]);
    assert_eq!(out.code, Some(3), "{out:?}");
    let path = sandbox.assistant_socket();
    assert_eq!(
        out.stderr,
        format!(
            "stt-ctl: stt-assistant is not running (nothing listens on '{}'): start it with \
             `stt-daemon up`\n",
            path.display()
        )
    );
}

#[test]
fn a_server_that_never_answers_times_out_with_exit_3() {
    let sandbox = Sandbox::new();
    let path: PathBuf = sandbox.assistant_socket();
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let out = sandbox.run("stt-ctl", &["--timeout-ms", "300", "status"]);
    drop(listener);
    assert_eq!(out.code, Some(3), "{out:?}");
    assert!(out.stderr.contains("did not answer within 300ms"), "{}", out.stderr);
}

#[test]
fn a_newer_assistant_is_reported_with_the_fix() {
    let sandbox = Sandbox::new();
    let path = sandbox.assistant_socket();
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let server = std::thread::spawn(move || {
        use std::io::Write;
        let (mut stream, _) = listener.accept().unwrap();
        stream
            .write_all(b"{\"type\":\"hello\",\"protocol_version\":99,\"peer\":\"stt-assistant\",\"version\":\"9.0.0\"}\n")
            .unwrap();
    });
    let out = sandbox.run("stt-ctl", &["status"]);
    server.join().unwrap();
    assert_eq!(out.code, Some(1), "{out:?}");
    let told = format!(
        "stt-assistant speaks protocol v99, this stt-ctl speaks v{}",
        stt_proto::PROTOCOL_VERSION
    );
    assert!(out.stderr.contains(&told), "{}", out.stderr);
    assert!(out.stderr.contains("restart"), "{}", out.stderr);
}

#[test]
fn completions_and_default_config_are_printed_locally() {
    let sandbox = Sandbox::new();
    for (shell, needle) in
        [("bash", "complete -F"), ("zsh", "#compdef stt-ctl"), ("fish", "complete -c stt-ctl")]
    {
        let out = sandbox.run("stt-ctl", &["completions", shell]);
        assert_eq!(out.code, Some(0), "{shell}: {out:?}");
        assert!(out.stdout.contains(needle), "{shell} completion lacks {needle:?}");
        assert!(out.stdout.contains("command-execute"), "{shell} completion lacks the verbs");
    }
    let out = sandbox.run("stt-ctl", &["config-default"]);
    assert_eq!(out.code, Some(0));
    for section in
        ["[daemon]", "[assistant]", "[llm]", "[triage]", "[speakers]", "[memory]", "[tui]"]
    {
        assert!(out.stdout.contains(section), "default config lacks {section}");
    }
}

#[test]
fn the_socket_can_come_from_the_config_file() {
    let s = TestServer::start();
    let other = Sandbox::new();
    std::fs::write(
        other.config_file(),
        format!("[assistant]\nsocket = \"{}\"\n", s.sandbox.assistant_socket().display()),
    )
    .unwrap();
    let out = other.run("stt-ctl", &["status"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let out = other.run("stt-ctl", &["--config", "/nonexistent/stt.toml", "status"]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("/nonexistent/stt.toml"), "{}", out.stderr);
}

#[test]
fn a_merge_prints_the_name_of_the_speaker_that_stays() {
    let s = TestServer::start();
    let out = s.ctl(&["speaker-merge", "spk_0002", "spk_0001"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stdout, "spk_0002 merged into spk_0001 (Efren)\n");
    // The merge, then the roster, for the name.
    let merge = Request::SpeakerMerge { speaker_id: "spk_0002".into(), into: "spk_0001".into() };
    assert_eq!(s.take_seen(), vec![merge.clone(), Request::SpeakerList]);
    // Scripts get the one reply line and nothing more is asked.
    let out = s.ctl(&["--json", "speaker-merge", "spk_0002", "spk_0001"]);
    assert_eq!(out.stdout, "{\"type\":\"ack\",\"command\":\"speaker_merge\",\"ok\":true}\n");
    assert_eq!(s.take_seen(), vec![merge]);
    let out = s.ctl(&["speaker-merge", "spk_0009", "spk_0001"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("no speaker 'spk_0009'"), "{}", out.stderr);
}

/// `stt-ctl ARGS` with only `bin` on its PATH (the fake players there, or none).
fn ctl_with_path(s: &TestServer, bin: &std::path::Path, args: &[&str]) -> Output {
    let out = s.sandbox.command("stt-ctl").env("PATH", bin).args(args).output().unwrap();
    Output {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A fake player `name` in `bin` that runs `body` (a shell script).
fn player(bin: &std::path::Path, name: &str, body: &str) {
    std::fs::create_dir_all(bin).unwrap();
    let path = bin.join(name);
    stt_testkit::write_program(&path, &format!("#!/bin/sh\n{body}\n"));
}

#[test]
fn speaker_play_plays_or_prints_the_sample_and_says_why_not() {
    let s = TestServer::start();
    let wav = s.sandbox.root().join("data/stt").join(SAMPLE);
    let bin = s.sandbox.root().join("bin");
    std::fs::create_dir_all(&bin).unwrap();

    // --print: the path, for any player.
    let out = ctl_with_path(&s, &bin, &["speaker-play", "spk_0002", "--print"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stdout, format!("{}\n", wav.display()));
    assert_eq!(s.take_seen(), vec![Request::SpeakerList], "it asks only the roster");

    // No player on PATH: the path all the same, and what to install.
    let out = ctl_with_path(&s, &bin, &["speaker-play", "spk_0002"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stdout, format!("{}\n", wav.display()));
    assert!(out.stderr.contains("no player found"), "{}", out.stderr);

    // The first player found plays the file, and is waited for.
    player(&bin, "aplay", "exit 1");
    player(&bin, "paplay", "printf '%s\\n' \"$@\" > \"$0.args\"");
    let out = ctl_with_path(&s, &bin, &["speaker-play", "spk_0002"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(out.stdout.contains("spk_0002 (unnamed): played"), "{}", out.stdout);
    let args = std::fs::read_to_string(bin.join("paplay.args")).unwrap();
    assert_eq!(args, format!("{}\n", wav.display()));

    // A player that fails: its words, and the way around it.
    player(&bin, "pw-play", "echo 'no sink found' >&2; exit 3");
    let out = ctl_with_path(&s, &bin, &["speaker-play", "spk_0002"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    for needle in ["pw-play could not play", "no sink found", "--print"] {
        assert!(out.stderr.contains(needle), "{:?} lacks {needle:?}", out.stderr);
    }

    // No sample, or no such speaker: refused as the assistant refuses.
    let out = ctl_with_path(&s, &bin, &["speaker-play", "spk_0001"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("spk_0001 has no sample yet"), "{}", out.stderr);
    let out = ctl_with_path(&s, &bin, &["speaker-play", "spk_9999"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains("no speaker 'spk_9999': `stt-ctl speaker-list` shows the ids")
            && out.stderr.contains("(unknown_speaker)"),
        "{}",
        out.stderr
    );
    let out = ctl_with_path(&s, &bin, &["--json", "speaker-play", "spk_9999"]);
    assert!(out.stdout.starts_with("{\"type\":\"error\",\"code\":\"unknown_speaker\""), "{out:?}");
}
