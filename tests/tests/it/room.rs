//! The voice in a room ([`stt_testkit::room`]): the assistant speaks through cpal's default
//! output into a private PulseAudio server, and the daemon listens through cpal's default
//! input to the same air, as a laptop with its speakers up would. Chat is on, so anything
//! the daemon hears that is taken for a person becomes a chat turn.
//!
//! - The voice alone: its replies come back as echo, and none is a turn or a barge-in.
//! - A person asking over a reply still streaming, in the echo-cancelled room (their speech
//!   starting is enough) and in the plain room (the room grows louder than the voice heard
//!   back alone: `stt_assistant::talk`): the voice stops, the reply job is cancelled and
//!   kept as far as it came, and the question is answered.
//!
//! Each prints its figures; `STT_ROOM_REPLIES=20 STT_ROOM_QUESTIONS=10` gives the counts in
//! docs/PERFORMANCE.md ("The voice in a room").

#![allow(
    clippy::unwrap_used,
    clippy::print_stderr,
    reason = "tests, which print their figures where cargo test shows them"
)]

use std::time::{Duration, Instant};

use stt_proto::{AssistantEvent, ChatRole};
use stt_testkit::llm_server::{LlmServer, Script};
use stt_testkit::room::Room;
use stt_testkit::viewer::{Seen, answered, watch_attached};
use stt_testkit::{DEADLINE, Proc, Sandbox, expect_within};

/// What the assistant says, one reply each (plain words: see voice.rs).
const REPLIES: [&str; 5] = [
    "The kettle is on, and the tea will be ready soon. I turned off the lights in the kitchen.",
    "Your meeting with the design team moved to Thursday morning. Bring the new drawings.",
    "It is raining outside, so take an umbrella. The bus leaves from the corner.",
    "I set a timer for the pasta. The sauce needs another stir before it is done.",
    "The library closes early today. Your books are due back at the end of the week.",
];

/// What the person asks over a reply.
const QUESTION: &str = "What time is it in Tokyo right now?";

/// The stack in the room: the scripted model, the assistant with its voice on the room's
/// speakers, the daemon on the room's microphone, a viewer, and chat on.
struct Stack {
    // Dropped first: the sound server stops before the processes using it.
    room: Room,
    _daemon: Proc,
    assistant: Proc,
    llm: LlmServer,
    seen: Seen,
    sandbox: Sandbox,
}

/// `STT_ROOM_LOG=FILE` keeps the assistant's debug log of the last stack there (a failed
/// run's too: what it judged of each segment, and why the voice stopped), and the daemon's
/// in FILE.daemon.
impl Drop for Stack {
    fn drop(&mut self) {
        if let Some(path) = std::env::var_os("STT_ROOM_LOG") {
            let _ = std::fs::write(&path, self.assistant.log());
            let mut daemon = path;
            daemon.push(".daemon");
            let _ = std::fs::write(daemon, self._daemon.log());
        }
    }
}

/// How far down the voice reaches the microphone, in dB: `STT_ROOM_ECHO_DB`, or `plain` in
/// the plain room (-6: laptop speakers near the microphone) and 18 dB down behind the
/// canceller (PulseAudio's WebRTC canceller lets a louder echo through in bursts that whisper
/// hears as words: docs/PERFORMANCE.md, "The voice in a room").
fn echo_db(echo_cancelled: bool) -> f64 {
    let default = if echo_cancelled { -18.0 } else { -6.0 };
    std::env::var("STT_ROOM_ECHO_DB").ok().and_then(|db| db.parse().ok()).unwrap_or(default)
}

fn stack(echo_cancelled: bool) -> Option<Stack> {
    if !crate::voice::have_voice() {
        return None;
    }
    let sandbox = Sandbox::new();
    let room = Room::start(sandbox.root(), echo_cancelled, echo_db(echo_cancelled))?;
    let llm = LlmServer::start();
    std::fs::write(
        sandbox.config_file(),
        format!("[llm]\nendpoint = \"{}\"\n[voice]\nenabled = true\n", llm.url()),
    )
    .unwrap();
    let [(key, value)] = room.env();
    let env = [(key, value.as_str())];
    let assistant = sandbox.spawn_with_env(
        "stt-assistant",
        &[],
        &[env[0], ("STT_LOG", "debug"), ("OPENAI_API_KEY", ""), ("ANTHROPIC_API_KEY", "")],
    );
    let level = if std::env::var_os("STT_ROOM_LOG").is_some() { "debug" } else { "info" };
    let daemon = sandbox.spawn_with_env("stt-daemon", &[], &[env[0], ("STT_LOG", level)]);
    let seen = watch_attached(&sandbox, DEADLINE);
    expect_within("the daemon listens to the room", DEADLINE, || {
        let log = daemon.log();
        if log.contains("capturing audio from") { Ok(()) } else { Err(log) }
    });
    let out = sandbox.run("stt-ctl", &["chat-toggle"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    Some(Stack { _daemon: daemon, assistant, llm, seen, sandbox, room })
}

/// Lines of the assistant's log with `what` in them.
fn logged(assistant: &Proc, what: &str) -> usize {
    assistant.log().lines().filter(|l| l.contains(what)).count()
}

/// Chat lines a person said (spoken turns: typed ones come from `chat_send`).
fn user_lines(seen: &Seen) -> Vec<String> {
    stt_testkit::viewer::events(seen)
        .into_iter()
        .filter_map(|e| match e {
            AssistantEvent::ChatMessage(m) if m.role == ChatRole::User => Some(m.text),
            _ => None,
        })
        .collect()
}

/// The words the viewer was shown, partials and finals, for failure messages.
fn heard(seen: &Seen) -> Vec<String> {
    stt_testkit::viewer::events(seen)
        .into_iter()
        .filter_map(|e| match e {
            AssistantEvent::TranscriptPartial(p) => {
                Some(format!("partial {}: {}", p.seg_id, p.text))
            }
            AssistantEvent::Transcript(t) => Some(format!("final {}: {}", t.seg_id, t.text)),
            _ => None,
        })
        .collect()
}

/// Waits until the room is quiet again: every segment the daemon opened has its transcript,
/// and the last came at least a second ago (the voice's last words have had time to come
/// back and be judged).
fn quiet(seen: &Seen) {
    expect_within("the room is quiet", DEADLINE, || {
        let events = seen.lock().unwrap().clone();
        let starts = events.iter().filter(|(_, e)| matches!(e, AssistantEvent::SpeechStart(_)));
        let finals: Vec<Instant> = events
            .iter()
            .filter(|(_, e)| matches!(e, AssistantEvent::Transcript(_)))
            .map(|(at, _)| *at)
            .collect();
        let last = events
            .iter()
            .filter(|(_, e)| matches!(e, AssistantEvent::SpeechStart(_)))
            .map(|(at, _)| *at)
            .chain(finals.iter().copied())
            .max();
        let settled = last.is_some_and(|at| at.elapsed() > Duration::from_secs(1));
        if starts.count() == finals.len() && settled {
            Ok(())
        } else {
            Err(format!("{} starts, {} finals", events.len(), finals.len()))
        }
    });
}

fn replies_wanted() -> usize {
    std::env::var("STT_ROOM_REPLIES").ok().and_then(|n| n.parse().ok()).unwrap_or(3)
}

#[test]
fn the_voice_heard_back_in_the_room_is_echo_not_a_turn_or_a_barge_in() {
    let _turn = crate::one_at_a_time();
    let Some(stack) = stack(false) else { return };
    let n = replies_wanted();
    for i in 0..n {
        let reply = REPLIES[i % REPLIES.len()];
        let echoes = logged(&stack.assistant, "echo: ");
        stack.llm.push(Script::Text(reply.into()));
        let out = stack.sandbox.run("stt-ctl", &["chat-send", &format!("question {i}")]);
        assert_eq!(out.code, Some(0), "{out:?}");
        answered(&stack.seen, reply, DEADLINE);
        // The daemon heard the reply (else the test proves nothing), and judged it echo.
        expect_within("the reply comes back as echo", DEADLINE, || {
            let now = logged(&stack.assistant, "echo: ");
            if now > echoes {
                Ok(())
            } else {
                Err(format!("{:#?}\n{}", heard(&stack.seen), stack.assistant.log()))
            }
        });
        quiet(&stack.seen);
    }
    let echoes = logged(&stack.assistant, "echo: the segment was the voice's own");
    let barge_ins = logged(&stack.assistant, "barge-in:");
    let typed = user_lines(&stack.seen);
    let turns = typed.len() - n;
    eprintln!(
        "room, the voice {} dB down: {n} replies spoken and heard back: {echoes} echo segments, \
         {barge_ins} barge-ins, {turns} echo turns",
        echo_db(false).abs()
    );
    assert_eq!(barge_ins, 0, "the voice stopped for itself: {:#?}", heard(&stack.seen));
    assert_eq!(turns, 0, "the voice's words became turns: {typed:?}");
    assert_eq!(stack.llm.requests().len(), n, "a request for anything but the typed questions");
    drop(stack);
}

#[test]
fn with_the_echo_cancelled_a_person_starting_to_speak_stops_the_reply() {
    let _turn = crate::one_at_a_time();
    asked_over_a_reply(true);
}

#[test]
fn in_a_plain_room_a_person_speaking_over_the_reply_stops_it() {
    let _turn = crate::one_at_a_time();
    asked_over_a_reply(false);
}

/// A question in another voice, two seconds into a reply that is still streaming.
fn asked_over_a_reply(echo_cancelled: bool) {
    let Some(stack) = stack(echo_cancelled) else { return };
    let room = format!(
        "{}, the voice {} dB down",
        if echo_cancelled { "echo-cancelled room" } else { "room" },
        echo_db(echo_cancelled).abs()
    );
    let question =
        stt_testkit::viewer::speak_as(stack.sandbox.root(), "question", "en-us+f3", QUESTION);
    // Where the words begin in the clip: `speak_as` pads a second of silence.
    let onset_in_clip = Duration::from_secs(1);
    // The model is still writing when the person speaks: it stalls after these sentences.
    let long = "The kettle is on, and the tea will be ready soon. I turned off the lights in \
                the kitchen, so the house is quiet now. Your meeting with the design team moved \
                to Thursday morning. It is raining outside, so take an umbrella. The library \
                closes early today, and your books are due back at the end of";
    let (mut took, mut wers, mut lost) = (Vec::new(), Vec::new(), 0);
    for trial in 0..questions_wanted() {
        let before = stack.seen.lock().unwrap().len();
        let (said, barges) =
            (logged(&stack.assistant, "voice: said"), logged(&stack.assistant, "barge-in:"));
        let answer = format!("It is noon in Tokyo, answer {trial}.");
        stack.llm.push(Script::Stall(long.into()));
        stack.llm.push(Script::Text(answer.clone()));
        let out = stack.sandbox.run("stt-ctl", &["chat-send", "tell me the news"]);
        assert_eq!(out.code, Some(0), "{out:?}");
        // The voice has spoken a while: a sentence of this reply is said, and the reply began
        // streaming three seconds ago.
        expect_within("the voice has spoken a while", DEADLINE, || {
            let spoke = logged(&stack.assistant, "voice: said") > said;
            match streaming_since(&stack.seen, before) {
                Some(since) if spoke && since >= Duration::from_secs(3) => Ok(()),
                _ => Err(stack.assistant.log()),
            }
        });
        let onset = stack.room.say(&question, 100) + onset_in_clip;
        let stopped = expect_within("the voice stops for the person", DEADLINE, || {
            if logged(&stack.assistant, "barge-in:") > barges {
                Ok(Instant::now())
            } else {
                Err(stack.assistant.log())
            }
        });
        took.push(stopped.saturating_duration_since(onset).as_millis());

        // The reply job was cancelled (the model's stream dropped), kept as far as it came.
        expect_within("the reply is stopped", DEADLINE, || {
            let events = stt_testkit::viewer::events(&stack.seen);
            let stopped = events.iter().skip(before).any(|e| {
                matches!(e, AssistantEvent::ChatMessage(m) if m.role == ChatRole::Assistant && m.stopped)
            });
            if stopped && stack.llm.disconnects() == trial + 1 {
                Ok(())
            } else {
                Err(format!("{events:?}"))
            }
        });
        // The question is a turn and answered; or, in the plain room, whisper wrote only the
        // voice's words of the segment both were in, and the person is told to say it again
        // (which they do, typed here).
        let outcome = expect_within("the question answered, or the person told", DEADLINE, || {
            let events = stt_testkit::viewer::events(&stack.seen);
            let new = &events[before.min(events.len())..];
            if new.iter().any(|e| matches!(e, AssistantEvent::ChatMessage(m) if m.text == answer && !m.partial)) {
                Ok(true)
            } else if new.iter().any(|e| matches!(e, AssistantEvent::Error(e) if e.message.contains("only its own words were heard"))) {
                Ok(false)
            } else {
                Err(format!("{events:?}"))
            }
        });
        let asked = user_lines(&stack.seen);
        let words = heard(&stack.seen);
        if !outcome {
            assert!(
                !echo_cancelled,
                "behind the canceller the question is its own segment: {words:#?}"
            );
            lost += 1;
            let out = stack.sandbox.run("stt-ctl", &["chat-send", QUESTION]);
            assert_eq!(out.code, Some(0), "{out:?}");
            answered(&stack.seen, &answer, DEADLINE);
            assert_eq!(asked.len(), 2 * trial + 1, "a turn of the voice's words: {asked:?}");
            continue;
        }
        let spoken = asked.last().unwrap().to_lowercase();
        // The question is a turn of its own, without the voice's words. How well whisper
        // heard it is the canceller's doing as much as whisper's (its first syllables overlap
        // the voice): measured, not held to a figure here.
        assert!(
            asked.len() == 2 * (trial + 1) && !spoken.trim().is_empty(),
            "no turn for the question: {asked:?}: {words:#?}"
        );
        assert!(!spoken.contains("kettle") && !spoken.contains("kitchen"), "echo kept: {asked:?}");
        wers.push(stt_testkit::speech::wer(QUESTION, &spoken));
    }
    let mut sorted = took.clone();
    sorted.sort_unstable();
    wers.sort_by(f64::total_cmp);
    eprintln!(
        "{room}: the question's onset → the voice stopped, median {} ms of {} ({took:?} ms; \
         {} by loudness, {} by a speech start, {} by words); the question heard {} times, lost \
         to the voice (and the person told) {lost} times; its WER when heard, median {:.0}% \
         ({:?})",
        sorted[sorted.len() / 2],
        took.len(),
        logged(&stack.assistant, "the room grew louder"),
        logged(&stack.assistant, "speech began while the voice spoke"),
        logged(&stack.assistant, "words that are not the voice's"),
        wers.len(),
        wers.get(wers.len() / 2).map_or(f64::NAN, |w| w * 100.0),
        wers.iter().map(|w| (w * 100.0).round()).collect::<Vec<_>>(),
    );
    drop(stack);
}

/// How long since the reply after event `after` began streaming, if it has.
fn streaming_since(seen: &Seen, after: usize) -> Option<Duration> {
    let events = seen.lock().unwrap().clone();
    events
        .iter()
        .skip(after)
        .find(|(_, e)| matches!(e, AssistantEvent::ChatMessage(m) if m.role == ChatRole::Assistant))
        .map(|(at, _)| at.elapsed())
}

/// Questions asked over replies: `STT_ROOM_QUESTIONS`, 1 unless told.
fn questions_wanted() -> usize {
    std::env::var("STT_ROOM_QUESTIONS").ok().and_then(|n| n.parse().ok()).unwrap_or(1)
}
