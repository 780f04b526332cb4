//! `[daemon].asr = "remote"` through the real binaries: the daemon sends each segment of a
//! person's recording to a real whisper.cpp `whisper-server` (built by
//! scripts/fetch-whisper-server), and, against small scripted servers, a dead, a hanging and
//! a failing server: the local model takes over at once and says why, or (with no fallback)
//! the error names the fix.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use stt_proto::{AssistantEvent, ErrorCode};
use stt_testkit::viewer::{Seen, events, watch_attached};
use stt_testkit::{DEADLINE, Proc, Sandbox, expect_within, real_speech, wait_for};

/// The recording the tests send, with a second of silence around it, as a WAV file.
fn recording(sandbox: &Sandbox) -> (real_speech::Clip, String) {
    let clip = real_speech::test_set()
        .into_iter()
        .filter(|c| c.text.split_whitespace().count() >= 6)
        .min_by(|a, b| a.id.cmp(&b.id))
        .expect("a recording of a sentence");
    let wav = sandbox.root().join("said.wav");
    real_speech::session(std::slice::from_ref(&clip), 1.0, &wav);
    (clip, wav.to_string_lossy().into_owned())
}

/// The daemon with `daemon_config` reading `wav`, the assistant following it, and a viewer.
fn stack(sandbox: &Sandbox, daemon_config: &str, wav: &str) -> (Proc, Proc, Seen) {
    std::fs::write(
        sandbox.config_file(),
        format!("[llm]\nenabled = false\n[daemon]\n{daemon_config}"),
    )
    .unwrap();
    let assistant = sandbox.spawn("stt-assistant", &[]);
    let seen = watch_attached(sandbox, DEADLINE);
    let daemon = sandbox.spawn("stt-daemon", &["--input", wav, "--stay", "--wait-for-subscriber"]);
    (daemon, assistant, seen)
}

/// The texts of the transcripts seen so far.
fn transcripts(seen: &Seen) -> Vec<String> {
    events(seen)
        .into_iter()
        .filter_map(|e| match e {
            AssistantEvent::Transcript(t) => Some(t.text),
            _ => None,
        })
        .collect()
}

fn stt_errors(seen: &Seen) -> Vec<String> {
    events(seen)
        .into_iter()
        .filter_map(|e| match e {
            AssistantEvent::Error(e) if e.code == ErrorCode::Stt => Some(e.message),
            _ => None,
        })
        .collect()
}

/// Waits until the transcripts hold the sentence said; them joined.
fn heard(seen: &Seen, clip: &real_speech::Clip, daemon: &Proc) -> String {
    expect_within("the recording transcribed", DEADLINE, || {
        let text = transcripts(seen).join(" ");
        if !text.is_empty() && real_speech::spoken_wer(&clip.text, &text) < 0.5 {
            Ok(text)
        } else {
            Err(format!(
                "{text:?} for {:?}; errors {:?}\n{}",
                clip.text,
                stt_errors(seen),
                daemon.log()
            ))
        }
    })
}

/// A port nothing listens on.
fn dead_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A server that answers every request with `status` and `body`, or, with `status` 0,
/// takes the request and never answers.
fn scripted(status: u16, body: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut got = Vec::new();
                let mut buf = [0; 65_536];
                while !got.ends_with(b"--\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                if status == 0 {
                    std::thread::sleep(Duration::from_secs(60));
                    return;
                }
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    port
}

fn url(port: u16) -> String {
    format!("http://127.0.0.1:{port}/v1/audio/transcriptions")
}

/// Where scripts/fetch-whisper-server installs the server.
fn whisper_server() -> Option<PathBuf> {
    Some(stt_testkit::cache_dir()?.join("whisper/whisper-server")).filter(|p| p.is_file())
}

#[test]
#[allow(clippy::print_stderr, reason = "the skip is reported where cargo test shows it")]
fn the_daemon_transcribes_on_a_real_whisper_server_and_says_audio_leaves() {
    let Some(server) = whisper_server() else {
        assert!(
            std::env::var_os("STT_TEST_STRICT").is_none(),
            "whisper-server is not installed: run scripts/fetch-whisper-server (scripts/setup does)"
        );
        eprintln!("skipped: whisper-server is not installed (scripts/fetch-whisper-server)");
        return;
    };
    let _turn = crate::one_at_a_time();
    let sandbox = Sandbox::new();
    let port = dead_port();
    let model = stt_testkit::models_dir().join("ggml-tiny.en-q8_0.bin");
    let model = model.to_string_lossy().into_owned();
    let port_arg = port.to_string();
    let whisper = sandbox.spawn_program(
        "whisper-server",
        &server,
        &[
            "-m",
            &model,
            "--host",
            "127.0.0.1",
            "--port",
            &port_arg,
            "-t",
            "1",
            "--inference-path",
            "/v1/audio/transcriptions",
        ],
    );
    wait_for("whisper-server to listen", DEADLINE, || {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok().map(drop)
    });
    let (clip, wav) = recording(&sandbox);
    // No fallback: what is heard, the server heard.
    let config = format!(
        "asr = \"remote\"\nremote_url = \"{}\"\nremote_fallback = \"none\"\nremote_timeout_ms = 20000\n",
        url(port)
    );
    let (daemon, _assistant, seen) = stack(&sandbox, &config, &wav);
    let text = heard(&seen, &clip, &daemon);
    eprintln!("{:?} heard by whisper-server as {text:?}", clip.text);
    assert!(
        whisper.log().contains("segment.wav"),
        "whisper-server had no request:\n{}",
        whisper.log()
    );
    assert!(stt_errors(&seen).is_empty(), "{:?}", stt_errors(&seen));
    // Viewers are told where audio goes.
    let told = expect_within("the heartbeat's remote", DEADLINE, || {
        events(&seen)
            .into_iter()
            .find_map(|e| match e {
                AssistantEvent::Heartbeat(b) => b.stt_remote,
                _ => None,
            })
            .ok_or_else(|| "no heartbeat said where audio goes".to_owned())
    });
    assert_eq!(told, format!("127.0.0.1:{port}"));
}

#[test]
fn a_dead_or_hanging_server_falls_back_to_the_local_model_and_says_why() {
    let _turn = crate::one_at_a_time();
    for (what, port, says) in [
        ("dead", dead_port(), "nothing answers"),
        ("hanging", scripted(0, ""), "did not answer within 1500 ms"),
    ] {
        let sandbox = Sandbox::new();
        let (clip, wav) = recording(&sandbox);
        let config = format!("asr = \"remote\"\nremote_url = \"{}\"\n", url(port));
        let (daemon, _assistant, seen) = stack(&sandbox, &config, &wav);
        let started = Instant::now();
        let text = heard(&seen, &clip, &daemon);
        let errors = stt_errors(&seen);
        assert!(
            errors
                .iter()
                .any(|e| e.contains(says) && e.contains("transcribed on this machine instead")),
            "{what}: {errors:?}"
        );
        // How long the fallback took: the end of speech to the transcript, as a viewer saw them.
        let seen_at = |stop: bool| {
            seen.lock().unwrap().iter().find_map(|(at, e)| match e {
                AssistantEvent::SpeechStop(_) if stop => Some(*at),
                AssistantEvent::Transcript(_) if !stop => Some(*at),
                _ => None,
            })
        };
        let took = seen_at(false).zip(seen_at(true)).map(|(t, s)| t.saturating_duration_since(s));
        eprintln!(
            "{what} server: {text:?}; end of speech → transcript {} ms ({} ms after the daemon started)",
            took.map_or(0, |d| d.as_millis()),
            started.elapsed().as_millis()
        );
    }
}

#[test]
fn without_a_fallback_a_failing_server_is_an_error_that_names_the_fix() {
    let _turn = crate::one_at_a_time();
    for (status, body, says) in [
        (500, r#"{"error":{"message":"model not loaded"}}"#, "answered 500: model not loaded"),
        (401, r#"{"error":{"message":"bad key"}}"#, "remote_key"),
    ] {
        let sandbox = Sandbox::new();
        let (_clip, wav) = recording(&sandbox);
        let config = format!(
            "asr = \"remote\"\nremote_url = \"{}\"\nremote_fallback = \"none\"\n",
            url(scripted(status, body))
        );
        let (daemon, _assistant, seen) = stack(&sandbox, &config, &wav);
        let error = expect_within("the error", DEADLINE, || {
            stt_errors(&seen).into_iter().find(|e| e.contains(says)).ok_or_else(|| daemon.log())
        });
        assert!(error.contains("could not be transcribed"), "{error}");
        assert!(transcripts(&seen).is_empty(), "{:?}", transcripts(&seen));
    }
    // A key named but not set stops the daemon at start, naming the variable.
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.config_file(),
        format!("[daemon]\nasr = \"remote\"\nremote_url = \"{}\"\nremote_key = \"env:STT_TEST_NO_SUCH_KEY\"\n", url(dead_port())),
    )
    .unwrap();
    let out = sandbox.run("stt-daemon", &["--input", "/nonexistent.wav"]);
    assert_ne!(out.code, Some(0));
    assert!(out.stderr.contains("STT_TEST_NO_SUCH_KEY, which is not set"), "{}", out.stderr);
}
