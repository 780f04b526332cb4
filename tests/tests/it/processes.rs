//! The real daemon, assistant, ctl and dump as separate processes over real sockets in a
//! temporary runtime directory.

// Test helpers outside #[test] functions may panic: a panic is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;

use nix::sys::signal::Signal;
use stt_testkit::{Sandbox, expect_within};

use stt_testkit::DEADLINE;

/// `stt-ctl status` output, once it exits 0 and contains `needle`.
fn status_with(sandbox: &Sandbox, needle: &str) -> String {
    expect_within(&format!("status saying {needle:?}"), DEADLINE, || {
        let out = sandbox.run("stt-ctl", &["status"]);
        if out.code == Some(0) && out.stdout.contains(needle) {
            Ok(out.stdout)
        } else {
            Err(format!("{out:?}"))
        }
    })
}

fn socket_up(path: &std::path::Path) -> Result<(), String> {
    std::os::unix::net::UnixStream::connect(path)
        .map(drop)
        .map_err(|e| format!("{}: {e}", path.display()))
}

#[test]
fn the_assistant_follows_the_daemon_through_a_restart() {
    let sandbox = Sandbox::new();
    let mut daemon = sandbox.spawn("stt-daemon", &[]);
    let _assistant = sandbox.spawn("stt-assistant", &[]);

    // Connected: the daemon's heartbeat says its whisper worker is up (there is no
    // microphone here, so its audio is retrying, which is not STT's health).
    status_with(&sandbox, "stt:        healthy");

    assert!(daemon.signal_and_wait(Signal::SIGTERM).success(), "{}", daemon.log());
    status_with(&sandbox, "not connected to stt-daemon");

    let _daemon = sandbox.spawn("stt-daemon", &[]);
    status_with(&sandbox, "stt:        healthy");
}

#[test]
fn sockets_are_private_single_instance_and_removed_on_exit() {
    let sandbox = Sandbox::new();
    let mut daemon = sandbox.spawn("stt-daemon", &[]);
    let mut assistant = sandbox.spawn("stt-assistant", &[]);
    for path in [sandbox.daemon_socket(), sandbox.assistant_socket()] {
        expect_within("the socket answers", DEADLINE, || socket_up(&path));
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", path.display());
    }

    for (name, path) in
        [("stt-daemon", sandbox.daemon_socket()), ("stt-assistant", sandbox.assistant_socket())]
    {
        let second = sandbox.run(name, &[]);
        assert_eq!(second.code, Some(1), "{second:?}");
        assert!(
            second.stderr.contains(&format!("{name} is already running")),
            "{name}: {}",
            second.stderr
        );
        socket_up(&path).expect("the first instance still serves after the refusal");
    }

    assert!(daemon.signal_and_wait(Signal::SIGTERM).success(), "{}", daemon.log());
    assert!(assistant.signal_and_wait(Signal::SIGINT).success(), "{}", assistant.log());
    assert!(!sandbox.daemon_socket().exists(), "daemon socket left behind");
    assert!(!sandbox.assistant_socket().exists(), "assistant socket left behind");
}

#[test]
fn a_stale_socket_left_by_a_crash_is_replaced() {
    let sandbox = Sandbox::new();
    let mut daemon = sandbox.spawn("stt-daemon", &[]);
    expect_within("the daemon socket answers", DEADLINE, || socket_up(&sandbox.daemon_socket()));
    // SIGKILL: no chance to clean up, so the socket file stays with nothing behind it.
    daemon.signal_and_wait(Signal::SIGKILL);
    assert!(sandbox.daemon_socket().exists());
    assert!(socket_up(&sandbox.daemon_socket()).is_err());

    let _daemon = sandbox.spawn("stt-daemon", &[]);
    expect_within("the new daemon answers", DEADLINE, || socket_up(&sandbox.daemon_socket()));
}

#[test]
fn the_dump_prints_events_as_json_lines_and_exits_0() {
    let sandbox = Sandbox::new();
    let _daemon = sandbox.spawn("stt-daemon", &[]);
    let _assistant = sandbox.spawn("stt-assistant", &[]);
    expect_within("the assistant answers", DEADLINE, || socket_up(&sandbox.assistant_socket()));

    let out = sandbox.run("stt-tui", &["--dump", "3"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let heartbeats: Vec<serde_json::Value> = out
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}")))
        .filter(|v: &serde_json::Value| v["type"] == "heartbeat")
        .collect();
    assert!(heartbeats.len() >= 2, "expected heartbeats in 3 s: {}", out.stdout);
    let seqs: Vec<u64> = heartbeats.iter().map(|v| v["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "heartbeats out of order: {seqs:?}");
}

#[test]
fn a_bad_config_names_the_key_and_line_and_exits_1() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.config_file(),
        "[daemon]\nthreads = 2\n\n[assistant]\nrequir_viewer = true\n",
    )
    .unwrap();
    for name in ["stt-daemon", "stt-assistant", "stt-tui"] {
        let out = sandbox.run(name, &[]);
        assert_eq!(out.code, Some(1), "{name}: {out:?}");
        assert!(out.stderr.contains(":5:"), "{name} must name the line: {}", out.stderr);
        assert!(out.stderr.contains("assistant.requir_viewer"), "{name}: {}", out.stderr);
        assert!(
            out.stderr.contains("require_viewer"),
            "{name} should suggest the fix: {}",
            out.stderr
        );
    }
}

#[test]
fn the_tui_without_a_terminal_points_to_the_dump() {
    let sandbox = Sandbox::new();
    let out = sandbox.run("stt-tui", &[]);
    assert_eq!(out.code, Some(1));
    assert!(out.stderr.contains("needs a terminal"), "{}", out.stderr);
    assert!(out.stderr.contains("--dump"), "{}", out.stderr);
}

use stt_testkit::daemon::HandWrittenDaemon;

#[test]
fn a_newer_daemons_lines_do_not_stop_the_assistant_relaying_transcripts() {
    use stt_proto::AssistantEvent;
    use stt_testkit::viewer::{events, status, watch_attached};

    let sandbox = Sandbox::new();
    let daemon = HandWrittenDaemon::start(&sandbox.daemon_socket());
    let assistant = sandbox.spawn("stt-assistant", &[]);
    let seen = watch_attached(&sandbox, DEADLINE);
    expect_within("the assistant follows the daemon", DEADLINE, || {
        if daemon.subscribers() == 1 { Ok(()) } else { Err(assistant.log()) }
    });
    let newer = [
        // A display-only value this build does not know.
        r#"{"type":"heartbeat","seq":1,"uptime_s":1.0,"backlog":0,"stt_healthy":true,"audio":"muted","model":"ggml-tiny.en-q8_0.bin"}"#,
        // A type it does not know at all.
        r#"{"type":"hologram","seg_id":7}"#,
        // A known type whose fields it cannot read, twice.
        r#"{"type":"speech_start","seg_id":"seven","start":1.0}"#,
        r#"{"type":"speech_start","seg_id":"seven","start":1.0}"#,
        r#"{"type":"transcript","seg_id":7,"text":"hello from a newer daemon","language":"en","start":1.0,"end":2.0,"duration":1.0,"speaker_id":null,"speaker_status":"voiceprint_pending","speaker":null,"speaker_score":null}"#,
    ];
    for line in newer {
        daemon.line(line);
    }
    expect_within("the viewer gets the transcript", DEADLINE, || {
        let relayed = events(&seen).iter().any(
            |e| matches!(e, AssistantEvent::Transcript(t) if t.text == "hello from a newer daemon"),
        );
        if relayed { Ok(()) } else { Err(format!("{:?}\n{}", events(&seen), assistant.log())) }
    });
    // The heartbeat counted: speech recognition is healthy, and the link never dropped.
    assert_eq!(status(&sandbox)["stt_healthy"], true, "{}", assistant.log());
    let log = assistant.log();
    assert!(!log.contains("link down"), "{log}");
    assert_eq!(log.matches("skipping 'speech_start' messages").count(), 1, "{log}");
}

#[test]
fn clear_forgets_the_conversation_the_next_chat_turn_is_sent_with() {
    use stt_testkit::llm_server::Script;
    use stt_testkit::viewer::{events, watch_attached};

    let sandbox = Sandbox::new();
    let llm = stt_testkit::viewer::scripted_model(&sandbox, "");
    llm.respond_with(|_| Script::Text("Hello.".into()));
    let daemon = HandWrittenDaemon::start(&sandbox.daemon_socket());
    let assistant = sandbox.spawn("stt-assistant", &[]);
    let seen = watch_attached(&sandbox, DEADLINE);
    expect_within("the assistant follows the daemon", DEADLINE, || {
        if daemon.subscribers() == 1 { Ok(()) } else { Err(assistant.log()) }
    });
    assert_eq!(sandbox.run("stt-ctl", &["chat-toggle"]).code, Some(0));
    let say = |seg_id: u64, text: &str| {
        daemon.line(&format!(
            r#"{{"type":"transcript","seg_id":{seg_id},"text":"{text}","language":"en","start":1.0,"end":2.0,"duration":1.0,"speaker_id":null,"speaker_status":"none","speaker":null,"speaker_score":null}}"#
        ));
    };
    let answers = || {
        events(&seen)
            .iter()
            .filter(|e| matches!(e, stt_proto::AssistantEvent::ChatMessage(m) if m.text == "Hello." && !m.partial))
            .count()
    };
    say(1, "my name is Ana");
    expect_within("the first answer", DEADLINE, || {
        if answers() == 1 { Ok(()) } else { Err(assistant.log()) }
    });
    assert_eq!(sandbox.run("stt-ctl", &["clear"]).code, Some(0));
    say(2, "what is my name");
    expect_within("the second answer", DEADLINE, || {
        if answers() == 2 { Ok(()) } else { Err(assistant.log()) }
    });
    // The turn after `clear` went to the model without the turns before it: only the system
    // prompt and (memory's tree being on) the summary the model wrote of them come before it.
    let last = llm
        .requests()
        .into_iter()
        .find(|r| {
            let messages = r["messages"].as_array().unwrap();
            let content = messages.last().unwrap()["content"].as_str().unwrap_or_default();
            content.ends_with("what is my name")
        })
        .unwrap();
    let messages = last["messages"].as_array().unwrap();
    let turns: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] != "system")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(turns.len(), 1, "{messages:?}");
    // `clear` starts a new conversation, not a blank memory: what was said before comes back
    // only as memory's reminder, word for word and marked as earlier.
    let system: String = messages
        .iter()
        .filter(|m| m["role"] == "system")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(!system.contains("Ana"), "{system}");
    let turn = turns[0].strip_prefix("(Memory: Earlier (").unwrap_or(turns[0]);
    let (reminder, said) = turn.split_once(")\n\n").unwrap_or(("", turn));
    assert!(reminder.is_empty() || reminder.contains("\"my name is Ana\""), "{turn}");
    assert!(!said.contains("Ana"), "{turn}");
}
