//! Dictation through the real binaries into a real X server (Xvfb with a plain text window,
//! `stt_testkit::x11`, the real `xdotool`) and a real Wayland compositor (sway, headless,
//! with a foot terminal, `stt_testkit::wayland`, the real `wtype`), the real assistant; the
//! window's file says exactly what was typed. ydotool, dotool and the clipboard (which need
//! uinput or a desktop's clipboard) are checked against fakes on a PATH of their own in
//! `stt-dictate`'s unit tests.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use stt_dictate::replay as shown;
use stt_proto::{AssistantEvent, DaemonEvent, ErrorCode};
use stt_testkit::daemon::HandWrittenDaemon;
use stt_testkit::viewer::{events, status, watch_attached};
use stt_testkit::x11::Display;
use stt_testkit::{DEADLINE, Sandbox, expect_within, msg, real_speech, wait_for};

/// The assistant, its model off, following a daemon the test writes, typing into `display`.
fn assistant_typing_into(
    sandbox: &Sandbox,
    display: Option<&Display>,
) -> (HandWrittenDaemon, stt_testkit::Proc) {
    let env: Vec<(&str, &str)> = display.map(|d| vec![("DISPLAY", d.name())]).unwrap_or_default();
    assistant_with(sandbox, &env)
}

/// The assistant, its model off, following a daemon the test writes, with `env`.
fn assistant_with(
    sandbox: &Sandbox,
    env: &[(&str, &str)],
) -> (HandWrittenDaemon, stt_testkit::Proc) {
    std::fs::write(sandbox.config_file(), "[llm]\nenabled = false\n").unwrap();
    let daemon = HandWrittenDaemon::start(&sandbox.daemon_socket());
    let assistant = sandbox.spawn_with_env("stt-assistant", &[], env);
    wait_for("the assistant to follow the daemon", DEADLINE, || {
        (daemon.subscribers() > 0).then_some(())
    });
    (daemon, assistant)
}

fn ctl(sandbox: &Sandbox, verb: &str) {
    let out = sandbox.run("stt-ctl", &[verb]);
    assert_eq!(out.code, Some(0), "{verb}: {}{}", out.stdout, out.stderr);
}

/// Waits until the window shows `want` (and not more), or fails showing what it has.
fn until_shown(display: &Display, want: &str, assistant: &stt_testkit::Proc) {
    until_typed(|| display.typed(), want, assistant);
}

fn until_typed(typed: impl Fn() -> String, want: &str, assistant: &stt_testkit::Proc) {
    expect_within("the dictated text in the window", DEADLINE, || {
        let typed = typed();
        if typed == want {
            Ok(())
        } else {
            Err(format!("typed {typed:?}, want {want:?}\n{}", assistant.log()))
        }
    });
}

#[test]
fn dictated_phrases_are_typed_into_an_x_window_with_the_spoken_commands_done() {
    let display = Display::start();
    let sandbox = Sandbox::new();
    let (daemon, assistant) = assistant_typing_into(&sandbox, Some(&display));
    let said = [
        "Dear Sam,",
        "new paragraph",
        "thanks for the letter full stop",
        "I will call on Friday.",
        "Scratch that.",
        "I will write on Monday.",
        "New line.",
        "Best, Efren.",
    ];
    ctl(&sandbox, "dictate-start");
    assert_eq!(status(&sandbox)["mode"], "dictate");
    for (seg, text) in (1..).zip(said) {
        daemon.publish(&DaemonEvent::Transcript(msg::transcript(seg, text)));
    }
    let want = "Dear Sam,\n\nThanks for the letter. I will write on Monday.\nBest, Efren.";
    assert_eq!(shown(&said), want, "the rules as the test reads them");
    until_shown(&display, want, &assistant);

    // Off: what is said is not typed; on again, a new dictation begins.
    ctl(&sandbox, "dictate-toggle");
    assert_eq!(status(&sandbox)["mode"], "idle");
    daemon.publish(&DaemonEvent::Transcript(msg::transcript(20, "Not for the window.")));
    ctl(&sandbox, "dictate-toggle");
    daemon.publish(&DaemonEvent::Transcript(msg::transcript(21, "Typed.")));
    until_shown(&display, &format!("{want}Typed."), &assistant);
    ctl(&sandbox, "dictate-stop");

    // The audit log says when it was on and how much it typed, never what.
    let audit = expect_within("two dictations in the audit log", DEADLINE, || {
        let text = audit_log(&sandbox.root().join("data/stt/audit"));
        if text.matches("\"action\":\"off\"").count() == 2 { Ok(text) } else { Err(text) }
    });
    assert_eq!(audit.matches("\"mode\":\"dictate\",\"action\":\"on\"").count(), 2, "{audit}");
    assert!(audit.contains("\"phrases\":8,\"chars\":"), "{audit}");
    for words in ["Sam", "Monday", "Typed", "Friday"] {
        assert!(!audit.contains(words), "the audit log holds what was said: {audit}");
        assert!(!assistant.log().contains(words), "the log holds what was said");
    }
}

#[test]
fn on_wayland_wtype_types_into_the_focused_window() {
    let display = stt_testkit::wayland::Display::start();
    let sandbox = Sandbox::new();
    let socket = display.socket().to_string_lossy().into_owned();
    let (daemon, assistant) = assistant_with(&sandbox, &[("WAYLAND_DISPLAY", &socket)]);
    let said = [
        "Ask Zoë about the café,",
        "comma",
        "then call Siobhan.",
        "Scratch that.",
        "New line.",
        "Done.",
    ];
    ctl(&sandbox, "dictate-start");
    for (seg, text) in (1..).zip(said) {
        daemon.publish(&DaemonEvent::Transcript(msg::transcript(seg, text)));
    }
    let want = shown(&said);
    assert_eq!(want, "Ask Zoë about the café,\nDone.");
    until_typed(|| display.typed(), &want, &assistant);
    assert!(assistant.log().contains("method=\"wtype\" session=Wayland"), "{}", assistant.log());
}

#[test]
fn without_a_desktop_session_dictation_says_what_is_missing_and_keeps_going() {
    let sandbox = Sandbox::new();
    let (daemon, assistant) = assistant_typing_into(&sandbox, None);
    let seen = watch_attached(&sandbox, DEADLINE);
    let failures = || -> Vec<String> {
        events(&seen)
            .into_iter()
            .filter_map(|e| match e {
                AssistantEvent::Error(e) if e.code == ErrorCode::DictateFailed => Some(e.message),
                _ => None,
            })
            .collect()
    };
    // Said as the dictation starts, before a word is said into it.
    ctl(&sandbox, "dictate-start");
    let error =
        expect_within("the error", DEADLINE, || failures().pop().ok_or_else(|| assistant.log()));
    assert!(error.contains("neither WAYLAND_DISPLAY nor DISPLAY"), "{error:?}");
    assert_eq!(status(&sandbox)["mode"], "dictate", "dictation stays on");
    // A command waits until dictation is off, and says so.
    let out = sandbox.run("stt-ctl", &["command-start"]);
    assert_ne!(out.code, Some(0));
    assert!(out.stderr.contains("dictate-stop"), "{}", out.stderr);
    // A phrase that cannot be typed for the same reason is not told again.
    daemon.publish(&DaemonEvent::Transcript(msg::transcript(1, "Hello there.")));
    // The daemon's socket and the control socket are not ordered against each other: the
    // stop waits until the assistant has taken the phrase (its viewers see it relayed).
    expect_within("the phrase relayed", DEADLINE, || {
        let relayed = events(&seen)
            .iter()
            .any(|e| matches!(e, AssistantEvent::Transcript(t) if t.text == "Hello there."));
        if relayed { Ok(()) } else { Err(assistant.log()) }
    });
    ctl(&sandbox, "dictate-stop");
    expect_within("the dictation's end in the audit log", DEADLINE, || {
        let text = audit_log(&sandbox.root().join("data/stt/audit"));
        if text.contains("\"phrases\":1,") { Ok(()) } else { Err(text) }
    });
    assert_eq!(failures().len(), 1, "{:?}", failures());
}

/// A recording of a person, read by the real daemon at real time, is typed into the window
/// exactly as its transcripts say.
#[test]
fn a_real_recordings_transcript_is_typed_into_an_x_window() {
    let _turn = crate::one_at_a_time();
    let display = Display::start();
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.config_file(), "[llm]\nenabled = false\n").unwrap();
    let assistant = sandbox.spawn_with_env("stt-assistant", &[], &[("DISPLAY", display.name())]);
    let seen = watch_attached(&sandbox, DEADLINE);
    ctl(&sandbox, "dictate-start");
    // A sentence of ten words or so.
    let clips = real_speech::test_set();
    let clip = clips
        .iter()
        .filter(|c| (8..=14).contains(&c.text.split_whitespace().count()))
        .min_by(|a, b| a.id.cmp(&b.id))
        .expect("a recording of a sentence");
    let wav = sandbox.root().join("said.wav");
    real_speech::session(std::slice::from_ref(clip), 1.0, &wav);
    let wav = wav.to_string_lossy().into_owned();
    let daemon = sandbox.spawn("stt-daemon", &["--input", &wav, "--stay", "--wait-for-subscriber"]);

    // Until the window shows every transcript so far, and they hold the sentence said.
    let (typed, wer) = expect_within("the recording typed", DEADLINE, || {
        let said: Vec<String> = events(&seen)
            .into_iter()
            .filter_map(|e| match e {
                AssistantEvent::Transcript(t) => Some(t.text.trim().to_owned()),
                _ => None,
            })
            .collect();
        let said: Vec<&str> = said.iter().map(String::as_str).collect();
        let want = shown(&said);
        let typed = display.typed();
        let wer = real_speech::spoken_wer(&clip.text, &typed);
        if !said.is_empty() && typed == want && wer < 0.5 {
            Ok((typed, wer))
        } else {
            Err(format!(
                "typed {typed:?}, the transcripts {said:?}\n{}\n{}",
                daemon.log(),
                assistant.log()
            ))
        }
    });
    eprintln!("{:?} typed as {typed:?} (WER {wer:.2})", clip.text);
}

fn audit_log(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        text.push_str(&std::fs::read_to_string(entry.path()).unwrap_or_default());
    }
    text
}
