//! The real thing in a real terminal: `stt-daemon up --with-tui` runs in tmux on a spoken
//! command (a WAV, which `up` plays once the assistant is first armed) against the scripted
//! model. A person's keys arm the command (`a`), run it (Enter) and quit (`q`); the screen
//! shows the transcript, the tool's call and result and the answer; and once `q` is
//! pressed `up` exits 0 with none of its processes left. And a real person's recording,
//! played at real time, shows its words on the open line (live partials) before its final
//! replaces them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use stt_testkit::llm_server::{LlmServer, Script};
use stt_testkit::procs::{self, left_behind};
use stt_testkit::speech::{Format, Line, Part, Speech};
use stt_testkit::tmux::{Tmux, panel};
use stt_testkit::{Sandbox, expect_within};

/// For anything that loads a model or transcribes (whisper in a debug build, the machine
/// shared with other tests).
use stt_testkit::DEADLINE;

/// What is said; once the model has called `get_datetime` for it, the answer is the time
/// template's ("It's 12:34.").
const SAID: &str = "what time is it";

/// The spoken command at 16 kHz: half a second of silence, the words, then a second and a
/// half of silence, over the VAD's hangover, so the segment ends while the file plays.
fn command_wav() -> PathBuf {
    let speech = Speech::new(Path::new(env!("CARGO_TARGET_TMPDIR")).join("speech"));
    let said = Line { text: SAID, voice: "en-us" };
    speech.clip(&[Part::Silence(0.5), Part::Say(said), Part::Silence(1.5)], Format::wav(16_000, 1))
}

/// The model calls `get_datetime` for the command.
fn scripted_model() -> LlmServer {
    let llm = LlmServer::start();
    llm.respond_with(|_: &Value| Script::ToolCalls(vec![("get_datetime".into(), json!({}))]));
    llm
}

/// Whether `text` holds the spoken command, in whatever case and punctuation whisper
/// wrote it, across rows where a panel wraps it.
fn says_the_command(text: &str) -> bool {
    let words = stt_testkit::speech::words(text).join(" ");
    words.contains(SAID)
}

/// Whether `text` is exactly the spoken command (case and punctuation aside): once, nothing
/// added.
fn is_the_command(text: &str) -> bool {
    stt_testkit::speech::words(text).join(" ") == SAID
}

/// Presses Enter until the command runs. Until its last segment is finished the assistant
/// answers `not_ready`, and a person presses again: once per refusal on screen, ten times at
/// most.
fn execute(tmux: &Tmux) {
    tmux.send("Enter");
    let mut presses = 1;
    expect_within("Enter runs the command", DEADLINE, || {
        let screen = tmux.screen();
        if screen.contains("command: ") || screen.contains("EXECUTING") {
            return Ok(());
        }
        let refused = screen.matches("error (not_ready)").count();
        if refused >= presses && presses < 10 {
            tmux.send("Enter");
            presses += 1;
        }
        Err(tmux.seen(&screen))
    });
}

/// Waits until none of `pids`, their children or their process groups is alive.
fn expect_nothing_left(pids: &[i32]) {
    expect_within("no process of up's left", Duration::from_secs(10), || {
        let left = left_behind(pids);
        if left.is_empty() { Ok(()) } else { Err(format!("{left:?}")) }
    });
}

#[test]
fn a_spoken_command_runs_from_the_tui_in_tmux_and_q_stops_everything() {
    let sandbox = Sandbox::new();
    let llm = scripted_model();
    let config = sandbox.config_file();
    // The model's path: "what time is it" is answered without it by default.
    let settings = format!(
        "[llm]\nendpoint = \"{}\"\nrequest_timeout_s = 20\n[intents]\nenabled = false\n",
        llm.url()
    );
    std::fs::write(&config, settings).unwrap();
    let log = sandbox.root().join("up.log");
    let mut command = sandbox.command("stt-daemon");
    command.args(["up", "--with-tui", "--input"]).arg(command_wav());
    command.arg("--config").arg(&config).arg("--log").arg(&log);
    let tmux = Tmux::start(&command, 120, 40).showing(&log);
    let up = expect_within("up starts in tmux", DEADLINE, || {
        tmux.pid().ok_or_else(|| tmux.seen(&tmux.screen()))
    });

    tmux.wait_for("the TUI connected, idle", DEADLINE, |s| {
        s.contains("● connected to stt-assistant") && s.contains("mode idle")
    });
    let children = expect_within("up's daemon, assistant and TUI", DEADLINE, || {
        let children = procs::children(up);
        let mut names: Vec<&str> = children.iter().map(|c| c.comm.as_str()).collect();
        names.sort_unstable();
        if names == ["stt-assistant", "stt-daemon", "stt-tui"] {
            Ok(children.iter().map(|c| c.pid).collect::<Vec<_>>())
        } else {
            Err(format!("{children:?}"))
        }
    });

    // Arming plays the file into the command: the words reach the transcripts and the
    // command buffer, which waits for Enter.
    tmux.send("a");
    tmux.wait_for("the spoken command in the command buffer, still armed", DEADLINE, |s| {
        let buffer = panel(s, "command buffer").is_some_and(|text| is_the_command(&text));
        let transcript = panel(s, "transcripts").is_some_and(|text| says_the_command(&text));
        s.contains("COMMAND ARMED") && buffer && transcript
    });

    execute(&tmux);
    let screen = tmux.wait_for("the tool's call and result, and the answer", DEADLINE, |s| {
        s.contains("→ get_datetime {}")
            && s.contains("← get_datetime:")
            && s.contains("assistant: It's ")
            && s.contains("mode idle")
    });
    let output = panel(&screen, "conversation / command output").unwrap_or_default();
    let command = output.lines().find(|l| l.starts_with("command: ")).unwrap_or_default();
    let command = command.trim_start_matches("command: ");
    assert!(is_the_command(command), "{}", tmux.seen(&screen));
    // Refusals while the segment was unfinished are expected; nothing else went wrong.
    let errors = output.lines().filter(|l| l.starts_with("error") && !l.contains("not_ready"));
    assert_eq!(errors.count(), 0, "{}", tmux.seen(&screen));
    // The call, and no second request for the answer: the template told it.
    let requests = llm.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");

    tmux.send("q");
    let status = expect_within("up exits once the TUI quits", DEADLINE, || {
        tmux.exit_status().ok_or_else(|| tmux.seen(&tmux.screen()))
    });
    assert_eq!(status, 0, "{}", tmux.seen(&tmux.screen()));
    let mut pids = children;
    pids.push(up);
    expect_nothing_left(&pids);
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(log.contains("[up] stopped"), "{log}");
    assert!(!sandbox.daemon_socket().exists(), "the daemon did not clean up:\n{log}");
    assert!(!sandbox.assistant_socket().exists(), "the assistant did not clean up:\n{log}");
}

#[test]
fn a_real_recording_shows_its_words_on_the_open_line_before_its_final() {
    // The longest recording of a person in the test set, played at real time.
    let clip = stt_testkit::real_speech::test_set()
        .into_iter()
        .max_by(|a, b| a.speech_s.total_cmp(&b.speech_s))
        .expect("the real-speech test set has clips");
    let sandbox = Sandbox::new();
    let out = sandbox.root().join("real.wav");
    stt_testkit::real_speech::session(std::slice::from_ref(&clip), 1.0, &out);
    let config = sandbox.config_file();
    std::fs::write(&config, "[llm]\nenabled = false\nlocal_server = false\n").unwrap();
    let log = sandbox.root().join("up.log");
    let mut command = sandbox.command("stt-daemon");
    command.args(["up", "--with-tui", "--play-at-once", "--input"]).arg(&out);
    command.arg("--config").arg(&config).arg("--log").arg(&log);
    let tmux = Tmux::start(&command, 120, 40).showing(&log);

    // While the person speaks: the open line, "… " and the words so far.
    let screen = tmux.wait_for("words on the open line while the recording plays", DEADLINE, |s| {
        panel(s, "transcripts").is_some_and(|text| {
            text.lines()
                .any(|l| l.trim_start().starts_with("… ") && l.split_whitespace().count() > 2)
        })
    });
    let open = panel(&screen, "transcripts").unwrap_or_default();
    // Then the final replaces it.
    let said = stt_testkit::real_speech::spoken_words(&clip.text);
    let screen = tmux.wait_for("the final in place of the open line", DEADLINE, |s| {
        panel(s, "transcripts").is_some_and(|text| {
            !text.lines().any(|l| l.trim_start().starts_with("… "))
                && said.iter().filter(|w| stt_testkit::speech::words(&text).contains(w)).count() * 2
                    >= said.len()
        })
    });
    eprintln!(
        "open line while speaking:\n{open}\nthen:\n{}",
        panel(&screen, "transcripts").unwrap_or_default()
    );
    tmux.send("q");
}
